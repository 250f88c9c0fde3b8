package nitrotpm

import (
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// The NSM request and response, CBOR as AWS's NSM API (serde's externally
// tagged enums): {"Attestation": {"user_data", "nonce", "public_key"}}
// and {"Attestation": {"document"}} or {"Error": "<code>"}.

type nsmAttestation struct {
	UserData  []byte `cbor:"user_data"`
	Nonce     []byte `cbor:"nonce"`
	PublicKey []byte `cbor:"public_key"` // nil: written as null
}

type nsmAttestationRequest struct {
	Attestation nsmAttestation `cbor:"Attestation"`
}

// maxOptional is the NSM's limit on each of nonce, user data and public
// key.
const maxOptional = 1024

// encodeNSMRequest is an attestation request for nonce and userData.
func encodeNSMRequest(nonce, userData []byte) ([]byte, error) {
	if len(nonce) > maxOptional || len(userData) > maxOptional {
		return nil, fmt.Errorf("nonce (%d bytes) and user data (%d bytes) must each be at most %d bytes", len(nonce), len(userData), maxOptional)
	}
	return cbor.Marshal(nsmAttestationRequest{Attestation: nsmAttestation{UserData: userData, Nonce: nonce}})
}

// NSMError is an error the NSM answered instead of a document, such as
// InvalidArgument.
type NSMError struct{ Code string }

func (e *NSMError) Error() string { return "NSM error response: " + e.Code }

// parseNSMResponse reads the first CBOR item of the message buffer (the
// bytes after it are the rest of the buffer) and returns the attestation
// document.
func parseNSMResponse(b []byte) ([]byte, error) {
	var resp map[string]cbor.RawMessage
	if _, err := cbor.UnmarshalFirst(b, &resp); err != nil {
		return nil, fmt.Errorf("NSM response: %w", err)
	}
	if raw, ok := resp["Error"]; ok {
		var code string
		if err := cbor.Unmarshal(raw, &code); err != nil {
			return nil, fmt.Errorf("NSM error response: %w", err)
		}
		return nil, &NSMError{Code: code}
	}
	raw, ok := resp["Attestation"]
	if !ok || len(resp) != 1 {
		keys := make([]string, 0, len(resp))
		for k := range resp {
			keys = append(keys, k)
		}
		return nil, fmt.Errorf("NSM response: not an attestation (keys %q)", keys)
	}
	var att struct {
		Document []byte `cbor:"document"`
	}
	if err := cbor.Unmarshal(raw, &att); err != nil {
		return nil, fmt.Errorf("NSM attestation response: %w", err)
	}
	if len(att.Document) == 0 {
		return nil, errors.New("NSM attestation response: no document")
	}
	return att.Document, nil
}
