package attest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	_ "embed" // AWS's root certificate
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/veraison/go-cose"
)

// Each way a document can fail verification, for errors.Is. Every error
// Verify returns matches exactly one of these or ErrMalformed, and says
// what did not match.
var (
	// ErrNoRoots means VerifyOptions.Roots is nil: nothing is trusted.
	ErrNoRoots = errors.New("no trusted root for attestation documents")
	// ErrAlgorithm means the document is not signed with ES384.
	ErrAlgorithm = errors.New("attestation is not signed with ES384")
	// ErrExpired means a certificate of the chain is not valid at the time
	// of verification (the document's timestamp unless VerifyOptions.Now).
	ErrExpired = errors.New("attestation certificate is outside its validity period")
	// ErrChain means the signing certificate does not chain through the
	// CA bundle to a trusted root.
	ErrChain = errors.New("attestation certificate does not chain to a trusted root")
	// ErrSignature means the COSE signature does not verify with the
	// signing certificate's key: the document was altered or forged.
	ErrSignature = errors.New("attestation signature does not verify")
	// ErrKind means a NitroTPM document was required and this one is a
	// Nitro Enclave's.
	ErrKind = errors.New("attestation is not a NitroTPM document")
	// ErrInstance means the document was made on another instance.
	ErrInstance = errors.New("attestation is from another instance")
	// ErrNonce means the nonce differs from the expected challenge.
	ErrNonce = errors.New("attestation nonce does not match")
	// ErrUserData means the user data differs from what was expected.
	ErrUserData = errors.New("attestation user data does not match")
	// ErrPCR means an expected PCR is missing or differs (a *PCRError).
	ErrPCR = errors.New("attestation PCR does not match")
)

// PCRError says which PCR did not match. It matches ErrPCR.
type PCRError struct {
	Index     int
	Want, Got []byte // Got is nil when the document lacks the PCR
}

func (e *PCRError) Error() string {
	if e.Got == nil {
		return fmt.Sprintf("attestation PCR %d does not match: the document has no PCR %d", e.Index, e.Index)
	}
	return fmt.Sprintf("attestation PCR %d does not match: got %s, want %s", e.Index, short(e.Got), short(e.Want))
}

// Is makes errors.Is(err, ErrPCR) true.
func (e *PCRError) Is(target error) bool { return target == ErrPCR }

// VerifyOptions are the trust anchors and the caller's expectations.
type VerifyOptions struct {
	// Roots are the trusted root certificates; required. AWSRoots gives
	// AWS's; tests use attesttest's. The CA bundle in the document is
	// never trusted by itself.
	Roots *x509.CertPool
	// Now is when every certificate of the chain must be valid. Zero means
	// at the document's timestamp, so a document stays verifiable after
	// its short-lived certificate expires; its freshness then comes from
	// Nonce.
	Now time.Time
	// NitroTPM requires a NitroTPM document (nitrotpm_pcrs), refusing a
	// Nitro Enclave's.
	NitroTPM bool
	// InstanceID, when set, is the EC2 instance the document must come
	// from (its module id names it).
	InstanceID string
	// Nonce, when not nil, must equal the document's nonce exactly: the
	// verifier's challenge.
	Nonce []byte
	// UserData, when not nil, must equal the document's user data exactly
	// (for example the SHA-256 of the report the document vouches for).
	UserData []byte
	// PCRs lists PCR values the document must carry, by index; PCRs not
	// listed are not checked.
	PCRs map[int][]byte
}

// Verify parses b and checks, in this order: the COSE algorithm (ES384),
// the validity of the signing certificate at the verification time, its
// chain through the CA bundle to opts.Roots, the COSE signature with its
// key, and then the caller's expectations (kind, instance, nonce, user
// data, PCRs). It returns the document only when every check passes.
func Verify(b []byte, opts VerifyOptions) (*Document, error) {
	if opts.Roots == nil {
		return nil, ErrNoRoots
	}
	d, msg, err := parse(b)
	if err != nil {
		return nil, err
	}
	if d.Algorithm != AlgorithmES384 {
		return nil, fmt.Errorf("%w: the protected header names %v", ErrAlgorithm, cose.Algorithm(d.Algorithm))
	}
	at := opts.Now
	if at.IsZero() {
		at = d.Timestamp
	}
	if err := verifyChain(d, opts.Roots, at); err != nil {
		return nil, err
	}
	if err := verifySignature(msg, d.Certificate); err != nil {
		return nil, err
	}
	if err := checkExpectations(d, opts); err != nil {
		return nil, err
	}
	return d, nil
}

// verifyChain checks the signing certificate's validity at `at` and its
// chain through the CA bundle to roots (x509 checks every certificate of
// the chain at `at`).
func verifyChain(d *Document, roots *x509.CertPool, at time.Time) error {
	if c := d.Certificate; !validAt(c, at) {
		return expired("the signing certificate", c, at)
	}
	err := chain(d, roots, at)
	if err == nil {
		return nil
	}
	var invalid x509.CertificateInvalidError
	timeOnly := errors.As(err, &invalid) && invalid.Reason == x509.Expired
	if !timeOnly {
		// An issuer out of its validity may be reported as an unknown
		// authority: it is a matter of time when the chain holds at a
		// moment every certificate is valid.
		t, ok := commonValidity(d)
		timeOnly = ok && chain(d, roots, t) == nil
	}
	if !timeOnly {
		return fmt.Errorf("%w: %w", ErrChain, err)
	}
	for i, c := range d.CABundle {
		if !validAt(c, at) {
			return expired(fmt.Sprintf("CA bundle certificate %d", i), c, at)
		}
	}
	return fmt.Errorf("%w: %w", ErrExpired, err)
}

func chain(d *Document, roots *x509.CertPool, at time.Time) error {
	inter := x509.NewCertPool()
	for _, c := range d.CABundle {
		inter.AddCert(c)
	}
	_, err := d.Certificate.Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		CurrentTime:   at,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	return err
}

func validAt(c *x509.Certificate, at time.Time) bool {
	return !at.Before(c.NotBefore) && !at.After(c.NotAfter)
}

// commonValidity is a moment when the signing certificate and every
// certificate of the CA bundle are valid, if there is one.
func commonValidity(d *Document) (time.Time, bool) {
	from, to := d.Certificate.NotBefore, d.Certificate.NotAfter
	for _, c := range d.CABundle {
		if c.NotBefore.After(from) {
			from = c.NotBefore
		}
		if c.NotAfter.Before(to) {
			to = c.NotAfter
		}
	}
	return from, !from.After(to)
}

func expired(what string, c *x509.Certificate, at time.Time) error {
	return fmt.Errorf("%w: %s (%s) is valid from %s to %s, checked at %s", ErrExpired, what, c.Subject.CommonName,
		c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339Nano))
}

// verifySignature checks the COSE_Sign1 signature with the signing
// certificate's P-384 key.
func verifySignature(msg *cose.Sign1Message, leaf *x509.Certificate) error {
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P384() {
		return fmt.Errorf("%w: the signing certificate's key is not ECDSA P-384", ErrSignature)
	}
	v, err := cose.NewVerifier(cose.AlgorithmES384, pub)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrSignature, err)
	}
	if err := msg.Verify(nil, v); err != nil {
		return fmt.Errorf("%w: %w", ErrSignature, err)
	}
	return nil
}

func checkExpectations(d *Document, opts VerifyOptions) error {
	if opts.NitroTPM && !d.NitroTPM {
		return fmt.Errorf("%w: module %q carries a Nitro Enclave's PCRs (pcrs), not nitrotpm_pcrs", ErrKind, d.ModuleID)
	}
	if opts.InstanceID != "" && d.InstanceID() != opts.InstanceID {
		return fmt.Errorf("%w: module %q, want instance %s", ErrInstance, d.ModuleID, opts.InstanceID)
	}
	if opts.Nonce != nil && !bytes.Equal(d.Nonce, opts.Nonce) {
		return fmt.Errorf("%w: got %s, want %s", ErrNonce, short(d.Nonce), short(opts.Nonce))
	}
	if opts.UserData != nil && !bytes.Equal(d.UserData, opts.UserData) {
		return fmt.Errorf("%w: got %s, want %s", ErrUserData, short(d.UserData), short(opts.UserData))
	}
	indexes := make([]int, 0, len(opts.PCRs))
	for i := range opts.PCRs {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		want := opts.PCRs[i]
		got, ok := d.PCRs[i]
		if !ok {
			return &PCRError{Index: i, Want: want}
		}
		if !bytes.Equal(got, want) {
			return &PCRError{Index: i, Want: want, Got: got}
		}
	}
	return nil
}

// short renders bytes for an error message: the length and the first 8
// bytes in hex.
func short(b []byte) string {
	switch {
	case b == nil:
		return "none"
	case len(b) <= 8:
		return fmt.Sprintf("%d bytes %s", len(b), hex.EncodeToString(b))
	}
	return fmt.Sprintf("%d bytes %s…", len(b), hex.EncodeToString(b[:8]))
}

// awsRootPEM is AWS_NitroEnclaves_Root-G1 (CN=aws.nitro-enclaves, P-384,
// valid 2019-10-28 to 2049-10-28), root.pem from
// https://aws-nitro-enclaves.amazonaws.com/AWS_NitroEnclaves_Root-G1.zip,
// which signs both Nitro Enclaves and NitroTPM attestation documents.
//
//go:embed aws-nitro-enclaves-root-g1.pem
var awsRootPEM []byte

// AWSRootFingerprint is the SHA-256 fingerprint of AWS's root certificate
// (of its DER), as AWS publishes it.
const AWSRootFingerprint = "641A0321A3E244EFE456463195D606317ED7CDCC3C1756E09893F3C68F79BB5B"

// AWSRoots is a pool holding AWS's Nitro attestation root certificate, for
// VerifyOptions.Roots. It checks the embedded certificate against
// AWSRootFingerprint.
func AWSRoots() (*x509.CertPool, error) {
	block, _ := pem.Decode(awsRootPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("aws nitro root: no PEM certificate embedded")
	}
	sum := sha256.Sum256(block.Bytes)
	if got := strings.ToUpper(hex.EncodeToString(sum[:])); got != AWSRootFingerprint {
		return nil, fmt.Errorf("aws nitro root: fingerprint %s, want %s", got, AWSRootFingerprint)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("aws nitro root: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return pool, nil
}
