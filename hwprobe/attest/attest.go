// Package attest parses and verifies AWS Nitro attestation documents: the
// evidence the Nitro hypervisor signs for a NitroTPM (nitro-tpm-attest, on
// an EC2 instance) or for a Nitro Enclave (the NSM device), so that a
// report can prove it was produced on a given instance and bound to a given
// challenge.
//
// A document is a COSE_Sign1 (CBOR, tagged 18 or untagged) signed with
// ECDSA P-384 and SHA-384 (COSE alg ES384, -35). Its payload is a CBOR map:
// module_id, digest ("SHA384"), timestamp (milliseconds since the epoch),
// pcrs (Nitro Enclaves) or nitrotpm_pcrs (NitroTPM), certificate (the DER
// certificate whose key signed the document), cabundle (the DER issuing
// certificates, root first) and the optional public_key, user_data and
// nonce. The format and the validation steps are AWS's: "Validate a
// NitroTPM Attestation Document" in the EC2 User Guide and "Verifying the
// root of trust" in the Nitro Enclaves User Guide.
//
// Parse decodes a document without checking anything cryptographic. Verify
// checks the algorithm, the certificate chain to a pinned root, the
// validity of the certificates at the document's time, the COSE signature,
// and then what the caller expects (nonce, user data, PCRs, instance). The
// package is pure: no network, no file system, no AWS SDK; AWS's root
// certificate is embedded (AWSRoots).
//
// A verified document proves that some Nitro system made it, at its
// timestamp, for its module. That it vouches for a given node's report is
// the caller's expectations: VerifyOptions.InstanceID (the node's
// instance), Nonce (this verifier's fresh challenge, against replay) and
// UserData (a digest of the report); anyone can have a genuine document
// made on an instance of their own.
package attest

import (
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// Limits of the format (AWS's CDDL) and of this parser.
const (
	// MaxDocumentSize bounds the input: a genuine document is 5 to 8 KiB.
	MaxDocumentSize = 64 << 10
	// MaxCertSize is the largest DER certificate the format allows.
	MaxCertSize = 1024
	// MaxUserDataSize is the largest public_key, user_data or nonce.
	MaxUserDataSize = 1024
	// MaxPCRIndex is the highest PCR index the format allows.
	MaxPCRIndex = 31
	// MaxCABundle bounds the number of issuing certificates (AWS sends 4).
	MaxCABundle = 16
)

// AlgorithmES384 is the COSE algorithm every Nitro document is signed
// with: ECDSA on P-384 with SHA-384.
const AlgorithmES384 = int64(cose.AlgorithmES384)

// ErrMalformed means the input is not a well-formed attestation document:
// not CBOR, not a COSE_Sign1, a field missing or of the wrong type or size.
var ErrMalformed = errors.New("malformed attestation document")

// Document is a decoded attestation document. From Parse, nothing in it is
// verified; from Verify, all of it is signed by the certificate that chains
// to the trusted root.
type Document struct {
	// ModuleID is the issuing Nitro module: for NitroTPM
	// "i-0123456789abcdef0-tpm0000000000000000", for an enclave
	// "i-0123456789abcdef0-enc0123456789abcdef".
	ModuleID string
	// Digest is the PCRs' hash function; always "SHA384".
	Digest string
	// Timestamp is when the Nitro hypervisor made the document (UTC,
	// millisecond precision).
	Timestamp time.Time
	// PCRs maps a PCR index (0 to 31) to its value (32, 48 or 64 bytes).
	PCRs map[int][]byte
	// NitroTPM is true when the PCRs are NitroTPM's (nitrotpm_pcrs), false
	// when they are a Nitro Enclave's (pcrs).
	NitroTPM bool
	// Certificate is the certificate whose key signed the document.
	Certificate *x509.Certificate
	// CABundle is the issuing certificates, root first.
	CABundle []*x509.Certificate
	// PublicKey, UserData and Nonce are the optional fields the requester
	// chose (nil when absent or null).
	PublicKey []byte
	UserData  []byte
	Nonce     []byte
	// Algorithm is the COSE algorithm of the protected header (Verify
	// requires AlgorithmES384).
	Algorithm int64
}

// InstanceID is the EC2 instance id that ModuleID starts with
// ("i-0123456789abcdef0"), or "" when it does not start with one.
func (d *Document) InstanceID() string {
	id, _, ok := strings.Cut(d.ModuleID, "-tpm")
	if !ok {
		id, _, ok = strings.Cut(d.ModuleID, "-enc")
	}
	if !ok || !ValidInstanceID(id) {
		return ""
	}
	return id
}

// ValidInstanceID reports whether s is an EC2 instance id: i- and 8 or 17
// lowercase hex digits.
func ValidInstanceID(s string) bool {
	hexPart, ok := strings.CutPrefix(s, "i-")
	if !ok || (len(hexPart) != 8 && len(hexPart) != 17) {
		return false
	}
	for _, r := range hexPart {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// Parse decodes an attestation document (the COSE_Sign1 bytes, tagged or
// untagged) and checks that it has the shape AWS specifies. It verifies
// nothing: use Verify for evidence.
func Parse(b []byte) (*Document, error) {
	d, _, err := parse(b)
	return d, err
}

// parse is Parse that also returns the COSE message, for Verify.
func parse(b []byte) (*Document, *cose.Sign1Message, error) {
	msg, err := decodeSign1(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: cose: %w", ErrMalformed, err)
	}
	alg, err := msg.Headers.Protected.Algorithm()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: cose protected header: %w", ErrMalformed, err)
	}
	d, err := parsePayload(msg.Payload)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	d.Algorithm = int64(alg)
	return d, msg, nil
}

// decodeSign1 reads a COSE_Sign1, with or without tag 18 (AWS sends it
// untagged), with an attached payload.
func decodeSign1(b []byte) (*cose.Sign1Message, error) {
	if len(b) == 0 {
		return nil, errors.New("empty input")
	}
	if len(b) > MaxDocumentSize {
		return nil, fmt.Errorf("%d bytes, more than %d", len(b), MaxDocumentSize)
	}
	var msg cose.Sign1Message
	if b[0] == 0xd2 { // tag 18
		if err := msg.UnmarshalCBOR(b); err != nil {
			return nil, err
		}
	} else {
		var u cose.UntaggedSign1Message
		if err := u.UnmarshalCBOR(b); err != nil {
			return nil, err
		}
		msg = cose.Sign1Message(u)
	}
	if len(msg.Payload) == 0 {
		return nil, errors.New("no payload")
	}
	return &msg, nil
}

// payloadDecoder decodes the payload map strictly: no duplicate keys, no
// tags, bounded sizes. Indefinite lengths are allowed: the Nitro
// hypervisor encodes the payload map with one.
func payloadDecoder() (cbor.DecMode, error) {
	return cbor.DecOptions{
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		TagsMd:           cbor.TagsForbidden,
		MaxNestedLevels:  4,
		MaxArrayElements: MaxCABundle,
		MaxMapPairs:      64,
		UTF8:             cbor.UTF8RejectInvalid,
	}.DecMode()
}

// CBOR major types.
const (
	majorUint  = 0
	majorBytes = 2
	majorText  = 3
	majorArray = 4
	majorMap   = 5
)

// cborNull is the encoding of null, which the Nitro hypervisor writes for
// an absent optional field.
const cborNull = 0xf6

func major(raw cbor.RawMessage) int { return int(raw[0] >> 5) }

func parsePayload(p []byte) (*Document, error) {
	dm, err := payloadDecoder()
	if err != nil {
		return nil, err
	}
	var m map[string]cbor.RawMessage
	if err := dm.Unmarshal(p, &m); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	f := fields{dm: dm, m: m}
	d := &Document{}
	if d.ModuleID, err = f.text("module_id"); err != nil {
		return nil, err
	}
	if d.Digest, err = f.text("digest"); err != nil {
		return nil, err
	}
	if d.Digest != "SHA384" {
		return nil, fmt.Errorf("digest: %q, want SHA384", d.Digest)
	}
	ms, err := f.uint("timestamp")
	if err != nil {
		return nil, err
	}
	if ms == 0 || ms > math.MaxInt64 {
		return nil, fmt.Errorf("timestamp: %d out of range", ms)
	}
	d.Timestamp = time.UnixMilli(int64(ms)).UTC()
	_, enclave := m["pcrs"]
	_, tpm := m["nitrotpm_pcrs"]
	switch {
	case enclave && tpm:
		return nil, errors.New("both pcrs and nitrotpm_pcrs")
	case tpm:
		d.NitroTPM = true
		d.PCRs, err = f.pcrs("nitrotpm_pcrs")
	default:
		d.PCRs, err = f.pcrs("pcrs")
	}
	if err != nil {
		return nil, err
	}
	der, err := f.bytes("certificate", true, MaxCertSize)
	if err != nil {
		return nil, err
	}
	if d.Certificate, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	if d.CABundle, err = f.cabundle("cabundle"); err != nil {
		return nil, err
	}
	if d.PublicKey, err = f.bytes("public_key", false, MaxUserDataSize); err != nil {
		return nil, err
	}
	if d.UserData, err = f.bytes("user_data", false, MaxUserDataSize); err != nil {
		return nil, err
	}
	if d.Nonce, err = f.bytes("nonce", false, MaxUserDataSize); err != nil {
		return nil, err
	}
	return d, nil
}

// fields reads typed values out of the payload map.
type fields struct {
	dm cbor.DecMode
	m  map[string]cbor.RawMessage
}

func (f fields) get(name string, want int) (cbor.RawMessage, error) {
	raw, ok := f.m[name]
	if !ok {
		return nil, fmt.Errorf("%s: missing", name)
	}
	if major(raw) != want {
		return nil, fmt.Errorf("%s: CBOR major type %d, want %d", name, major(raw), want)
	}
	return raw, nil
}

func (f fields) text(name string) (string, error) {
	raw, err := f.get(name, majorText)
	if err != nil {
		return "", err
	}
	var s string
	if err := f.dm.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if s == "" {
		return "", fmt.Errorf("%s: empty", name)
	}
	return s, nil
}

func (f fields) uint(name string) (uint64, error) {
	raw, err := f.get(name, majorUint)
	if err != nil {
		return 0, err
	}
	var v uint64
	if err := f.dm.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// bytes reads a byte string of at most max bytes. An optional field may be
// absent or null (nil); a required one must be present and non-empty.
func (f fields) bytes(name string, required bool, max int) ([]byte, error) {
	raw, ok := f.m[name]
	if !required && (!ok || raw[0] == cborNull) {
		return nil, nil
	}
	if _, err := f.get(name, majorBytes); err != nil {
		return nil, err
	}
	return decodeBytes(f.dm, name, raw, required, max)
}

func decodeBytes(dm cbor.DecMode, name string, raw cbor.RawMessage, required bool, max int) ([]byte, error) {
	if major(raw) != majorBytes {
		return nil, fmt.Errorf("%s: CBOR major type %d, want %d", name, major(raw), majorBytes)
	}
	var b []byte
	if err := dm.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > max {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", name, len(b), max)
	}
	if required && len(b) == 0 {
		return nil, fmt.Errorf("%s: empty", name)
	}
	return b, nil
}

func (f fields) pcrs(name string) (map[int][]byte, error) {
	raw, err := f.get(name, majorMap)
	if err != nil {
		return nil, err
	}
	var m map[uint64]cbor.RawMessage
	if err := f.dm.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%s: empty", name)
	}
	out := make(map[int][]byte, len(m))
	for i, v := range m {
		if i > MaxPCRIndex {
			return nil, fmt.Errorf("%s: index %d, more than %d", name, i, MaxPCRIndex)
		}
		b, err := decodeBytes(f.dm, fmt.Sprintf("%s[%d]", name, i), v, true, 64)
		if err != nil {
			return nil, err
		}
		if n := len(b); n != 32 && n != 48 && n != 64 {
			return nil, fmt.Errorf("%s[%d]: %d bytes, want 32, 48 or 64", name, i, n)
		}
		out[int(i)] = b
	}
	return out, nil
}

func (f fields) cabundle(name string) ([]*x509.Certificate, error) {
	raw, err := f.get(name, majorArray)
	if err != nil {
		return nil, err
	}
	var items []cbor.RawMessage
	if err := f.dm.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: empty", name)
	}
	certs := make([]*x509.Certificate, 0, len(items))
	for i, item := range items {
		field := fmt.Sprintf("%s[%d]", name, i)
		der, err := decodeBytes(f.dm, field, item, true, MaxCertSize)
		if err != nil {
			return nil, err
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		certs = append(certs, c)
	}
	return certs, nil
}
