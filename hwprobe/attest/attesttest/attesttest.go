// Package attesttest is a test double of the AWS Nitro attestation PKI. It
// makes genuine COSE_Sign1 attestation documents, in the format the Nitro
// hypervisor writes (untagged COSE_Sign1, ES384, the payload map AWS
// specifies), signed under a throwaway P-384 test root instead of AWS's.
// attest.Verify verifies them with the same code as AWS's documents when
// the test root is in VerifyOptions.Roots (Signer.Roots), and refuses them
// with AWS's roots.
//
// It exists for tests (of attest, of the validation gate, of hwprobe); no
// production code path may trust its root.
package attesttest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/veraison/go-cose"
)

// Options shape the test PKI.
type Options struct {
	// NotBefore is when every certificate becomes valid; zero means an
	// hour ago.
	NotBefore time.Time
	// LeafLifetime is how long the signing certificate is valid from
	// NotBefore; zero means 3 hours, as AWS's.
	LeafLifetime time.Duration
	// IntermediateLifetime is how long the intermediate CA is valid from
	// NotBefore; zero means 30 years, as the root.
	IntermediateLifetime time.Duration
	// ModuleID names the module in the certificates and, by default, the
	// documents; zero means "i-0123456789abcdef0-tpm0000000000000000".
	ModuleID string
}

// DefaultModuleID is the module id of documents when Options.ModuleID and
// Document.ModuleID are empty: a NitroTPM of instance i-0123456789abcdef0.
const DefaultModuleID = "i-0123456789abcdef0-tpm0000000000000000"

// Signer holds a test root CA, an intermediate CA and a signing (leaf)
// certificate, P-384 all three, and signs documents with the leaf's key.
type Signer struct {
	Root, Intermediate, Leaf *x509.Certificate

	leafKey  *ecdsa.PrivateKey
	moduleID string
}

// New makes a fresh test PKI.
func New(opts Options) (*Signer, error) {
	if opts.NotBefore.IsZero() {
		opts.NotBefore = time.Now().Add(-time.Hour)
	}
	if opts.LeafLifetime == 0 {
		opts.LeafLifetime = 3 * time.Hour
	}
	if opts.ModuleID == "" {
		opts.ModuleID = DefaultModuleID
	}
	caUntil := opts.NotBefore.AddDate(30, 0, 0)
	interUntil := caUntil
	if opts.IntermediateLifetime != 0 {
		interUntil = opts.NotBefore.Add(opts.IntermediateLifetime)
	}
	root, rootKey, err := issue(nil, nil, pkix.Name{Organization: []string{"hwprobe attesttest"}, CommonName: "test.nitro-enclaves root"},
		opts.NotBefore, caUntil, true)
	if err != nil {
		return nil, fmt.Errorf("test root: %w", err)
	}
	inter, interKey, err := issue(root, rootKey, pkix.Name{Organization: []string{"hwprobe attesttest"}, CommonName: "test.nitro-enclaves intermediate"},
		opts.NotBefore, interUntil, true)
	if err != nil {
		return nil, fmt.Errorf("test intermediate: %w", err)
	}
	leaf, leafKey, err := issue(inter, interKey, pkix.Name{Organization: []string{"hwprobe attesttest"}, CommonName: opts.ModuleID + ".test"},
		opts.NotBefore, opts.NotBefore.Add(opts.LeafLifetime), false)
	if err != nil {
		return nil, fmt.Errorf("test signing certificate: %w", err)
	}
	return &Signer{Root: root, Intermediate: inter, Leaf: leaf, leafKey: leafKey, moduleID: opts.ModuleID}, nil
}

// issue makes a P-384 certificate signed by parent (self-signed when parent
// is nil).
func issue(parent *x509.Certificate, parentKey *ecdsa.PrivateKey, subject pkix.Name, from, to time.Time, ca bool) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               subject,
		NotBefore:             from,
		NotAfter:              to,
		BasicConstraintsValid: true,
		IsCA:                  ca,
		KeyUsage:              x509.KeyUsageDigitalSignature,
	}
	if ca {
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return c, key, nil
}

// Roots is a pool holding only the test root, for attest.VerifyOptions.
func (s *Signer) Roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Root)
	return p
}

// Document is what to sign.
type Document struct {
	// ModuleID defaults to the signer's (Options.ModuleID).
	ModuleID string
	// Timestamp is when the document was made; zero means now. Verify
	// checks the certificates at this time by default.
	Timestamp time.Time
	// PCRs are the PCR values (32, 48 or 64 bytes; index 0 to 31); nil
	// means PCRs 0 to 15 of 48 zero bytes.
	PCRs map[int][]byte
	// Enclave writes the PCRs as a Nitro Enclave does (pcrs) instead of as
	// NitroTPM does (nitrotpm_pcrs).
	Enclave bool
	// PublicKey, UserData and Nonce are the optional fields; nil is
	// written as null, as the Nitro hypervisor does.
	PublicKey, UserData, Nonce []byte
}

// payload is the attestation document map, in the order AWS writes it.
type payload struct {
	ModuleID     string          `cbor:"module_id"`
	Digest       string          `cbor:"digest"`
	Timestamp    uint64          `cbor:"timestamp"`
	PCRs         cbor.RawMessage `cbor:"pcrs,omitempty"`
	NitroTPMPCRs cbor.RawMessage `cbor:"nitrotpm_pcrs,omitempty"`
	Certificate  []byte          `cbor:"certificate"`
	CABundle     [][]byte        `cbor:"cabundle"`
	PublicKey    []byte          `cbor:"public_key"`
	UserData     []byte          `cbor:"user_data"`
	Nonce        []byte          `cbor:"nonce"`
}

// Sign makes a signed attestation document (an untagged COSE_Sign1, as
// the Nitro hypervisor returns it).
func (s *Signer) Sign(d Document) ([]byte, error) {
	p, err := s.Payload(d)
	if err != nil {
		return nil, err
	}
	return s.SignPayload(p)
}

// Payload is the CBOR payload Sign signs for d, for tests that alter it
// before SignPayload.
func (s *Signer) Payload(d Document) ([]byte, error) {
	if d.ModuleID == "" {
		d.ModuleID = s.moduleID
	}
	if d.Timestamp.IsZero() {
		d.Timestamp = time.Now()
	}
	if d.Timestamp.UnixMilli() <= 0 {
		return nil, errors.New("timestamp before 1970")
	}
	if d.PCRs == nil {
		d.PCRs = make(map[int][]byte, 16)
		for i := range 16 {
			d.PCRs[i] = make([]byte, 48)
		}
	}
	p := payload{
		ModuleID:    d.ModuleID,
		Digest:      "SHA384",
		Timestamp:   uint64(d.Timestamp.UnixMilli()),
		Certificate: s.Leaf.Raw,
		CABundle:    [][]byte{s.Root.Raw, s.Intermediate.Raw},
		PublicKey:   d.PublicKey,
		UserData:    d.UserData,
		Nonce:       d.Nonce,
	}
	// PCRs in ascending order, as AWS writes them.
	em, err := cbor.EncOptions{Sort: cbor.SortCoreDeterministic}.EncMode()
	if err != nil {
		return nil, err
	}
	pcrs, err := em.Marshal(d.PCRs)
	if err != nil {
		return nil, fmt.Errorf("attestation pcrs: %w", err)
	}
	if d.Enclave {
		p.PCRs = pcrs
	} else {
		p.NitroTPMPCRs = pcrs
	}
	b, err := cbor.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("attestation payload: %w", err)
	}
	return b, nil
}

// SignPayload signs any payload bytes with the leaf's key under the
// protected header {1: -35} (ES384), as the Nitro hypervisor does.
func (s *Signer) SignPayload(p []byte) ([]byte, error) {
	signer, err := cose.NewSigner(cose.AlgorithmES384, s.leafKey)
	if err != nil {
		return nil, err
	}
	headers := cose.Headers{Protected: cose.ProtectedHeader{cose.HeaderLabelAlgorithm: cose.AlgorithmES384}}
	b, err := cose.Sign1Untagged(rand.Reader, signer, headers, p, nil)
	if err != nil {
		return nil, fmt.Errorf("cose sign: %w", err)
	}
	return b, nil
}
