// Package identity parses and verifies the EC2 instance identity document
// that IMDSv2 serves, so a report can prove where it was produced.
//
// The signature verified is the RSA-2048 PKCS#7 one
// (/latest/dynamic/instance-identity/rsa2048): a CMS SignedData, DER,
// base64-encoded, that carries the document as its content. It is checked
// against trusted certificates the caller supplies: the RSA-2048 public
// certificate AWS publishes for the region. No certificate is embedded in
// this package: pass AWS's published certificate (PEM) to Verify.
//
// AWS signs the rsa2048 document with SHA-256. A signature whose digest is
// SHA-1 or MD5 is refused (ErrWeakDigest), even when the key verifies it:
// collisions in those digests are practical, so such a signature proves
// nothing about the document. SHA-256, SHA-384 and SHA-512 are accepted.
package identity

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	_ "crypto/sha256" // the CMS digest algorithms accepted
	_ "crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// Document is the instance identity document.
type Document struct {
	AccountID        string `json:"accountId"`
	Architecture     string `json:"architecture"`
	AvailabilityZone string `json:"availabilityZone"`
	ImageID          string `json:"imageId"`
	InstanceID       string `json:"instanceId"`
	InstanceType     string `json:"instanceType"`
	PendingTime      string `json:"pendingTime"`
	PrivateIP        string `json:"privateIp"`
	Region           string `json:"region"`
	Version          string `json:"version"`
}

// ParseDocument decodes the JSON identity document.
func ParseDocument(raw []byte) (Document, error) {
	var d Document
	if err := json.Unmarshal(raw, &d); err != nil {
		return Document{}, fmt.Errorf("identity document: %w", err)
	}
	if d.InstanceID == "" || d.Region == "" {
		return Document{}, errors.New("identity document: no instance id or region")
	}
	return d, nil
}

// ParseCertificates reads every PEM CERTIFICATE block in data.
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// ErrNoTrustedCert means no trusted certificate was given, so the
// signature cannot be checked. It is not a verification failure.
var ErrNoTrustedCert = errors.New("no trusted AWS certificate for this region")

// ErrWeakDigest means the signature uses a digest (SHA-1, MD5) that is
// refused whatever key made it.
var ErrWeakDigest = errors.New("weak digest refused")

// Verify checks that sig (the rsa2048 PKCS#7, base64 with or without PEM
// armour) signs exactly doc with the key of one of trusted. It returns the
// subject of the certificate whose key verified it. Certificates carried
// inside the signature are never trusted.
func Verify(doc, sig []byte, trusted []*x509.Certificate) (string, error) {
	if len(trusted) == 0 {
		return "", ErrNoTrustedCert
	}
	der, err := decodeSignature(sig)
	if err != nil {
		return "", err
	}
	sd, err := parseSignedData(der)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(bytes.TrimSpace(sd.content), bytes.TrimSpace(doc)) {
		return "", errors.New("signed content differs from the identity document")
	}
	signed, hash, err := sd.signedBytes()
	if err != nil {
		return "", err
	}
	h := hash.New()
	h.Write(signed)
	digest := h.Sum(nil)
	for _, c := range trusted {
		pub, ok := c.PublicKey.(*rsa.PublicKey)
		if !ok {
			continue
		}
		if rsa.VerifyPKCS1v15(pub, hash, digest, sd.signer.Signature) == nil {
			return c.Subject.String(), nil
		}
	}
	return "", errors.New("signature does not verify with any trusted certificate")
}

func decodeSignature(sig []byte) ([]byte, error) {
	if b, _ := pem.Decode(sig); b != nil {
		return b.Bytes, nil
	}
	clean := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, string(sig))
	der, err := base64.StdEncoding.DecodeString(clean)
	if err != nil {
		return nil, fmt.Errorf("signature base64: %w", err)
	}
	return der, nil
}

var (
	oidSignedData    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2}
	oidData          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidMessageDigest = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 4}
	oidContentType   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 3}
)

type contentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"explicit,optional,tag:0"`
}

type encapContent struct {
	ContentType asn1.ObjectIdentifier
	Content     []byte `asn1:"explicit,optional,tag:0"`
}

type signedDataASN1 struct {
	Version          int
	DigestAlgorithms []pkix.AlgorithmIdentifier `asn1:"set"`
	Content          encapContent
	Certificates     asn1.RawValue `asn1:"optional,tag:0"`
	CRLs             asn1.RawValue `asn1:"optional,tag:1"`
	SignerInfos      []signerInfo  `asn1:"set"`
}

type signerInfo struct {
	Version            int
	IssuerAndSerial    asn1.RawValue
	DigestAlgorithm    pkix.AlgorithmIdentifier
	SignedAttrs        asn1.RawValue `asn1:"optional,tag:0"`
	SignatureAlgorithm pkix.AlgorithmIdentifier
	Signature          []byte
	UnsignedAttrs      asn1.RawValue `asn1:"optional,tag:1"`
}

type attribute struct {
	Type   asn1.ObjectIdentifier
	Values asn1.RawValue `asn1:"set"`
}

type signedData struct {
	content []byte
	signer  signerInfo
}

// parseSignedData reads a DER CMS SignedData with one signer and the
// content attached.
func parseSignedData(der []byte) (*signedData, error) {
	var ci contentInfo
	rest, err := asn1.Unmarshal(der, &ci)
	if err != nil {
		return nil, fmt.Errorf("pkcs7: %w", err)
	}
	if len(rest) > 0 {
		return nil, errors.New("pkcs7: trailing data")
	}
	if !ci.ContentType.Equal(oidSignedData) {
		return nil, fmt.Errorf("pkcs7: content type %v is not signed data", ci.ContentType)
	}
	var sd signedDataASN1
	if _, err := asn1.Unmarshal(ci.Content.Bytes, &sd); err != nil {
		return nil, fmt.Errorf("pkcs7 signed data: %w", err)
	}
	if !sd.Content.ContentType.Equal(oidData) || len(sd.Content.Content) == 0 {
		return nil, errors.New("pkcs7: no attached data content")
	}
	if len(sd.SignerInfos) != 1 {
		return nil, fmt.Errorf("pkcs7: %d signers, want 1", len(sd.SignerInfos))
	}
	return &signedData{content: sd.Content.Content, signer: sd.SignerInfos[0]}, nil
}

// Digest and signature algorithm identifiers (RFC 5754, RFC 8017).
var (
	oidMD5           = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 5}
	oidSHA1          = asn1.ObjectIdentifier{1, 3, 14, 3, 2, 26}
	oidSHA256        = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}
	oidSHA384        = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}
	oidSHA512        = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}
	oidRSA           = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}
	oidMD5WithRSA    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 4}
	oidSHA1WithRSA   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 5}
	oidSHA256WithRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 11}
	oidSHA384WithRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 12}
	oidSHA512WithRSA = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 13}
)

// weakDigest names the refused digest alg is or uses, or "".
func weakDigest(alg asn1.ObjectIdentifier) string {
	switch {
	case alg.Equal(oidSHA1), alg.Equal(oidSHA1WithRSA):
		return "SHA-1"
	case alg.Equal(oidMD5), alg.Equal(oidMD5WithRSA):
		return "MD5"
	}
	return ""
}

// hashFor is the digest of the signer: SHA-256 or stronger. SHA-1 and MD5
// are refused with ErrWeakDigest, in the digest algorithm or in the
// signature algorithm.
func hashFor(si signerInfo) (crypto.Hash, error) {
	for _, alg := range []asn1.ObjectIdentifier{si.DigestAlgorithm.Algorithm, si.SignatureAlgorithm.Algorithm} {
		if name := weakDigest(alg); name != "" {
			return 0, fmt.Errorf("pkcs7: %w: the signature uses %s (%v); SHA-256 or stronger is required", ErrWeakDigest, name, alg)
		}
	}
	var hash crypto.Hash
	var withRSA asn1.ObjectIdentifier
	switch alg := si.DigestAlgorithm.Algorithm; {
	case alg.Equal(oidSHA256):
		hash, withRSA = crypto.SHA256, oidSHA256WithRSA
	case alg.Equal(oidSHA384):
		hash, withRSA = crypto.SHA384, oidSHA384WithRSA
	case alg.Equal(oidSHA512):
		hash, withRSA = crypto.SHA512, oidSHA512WithRSA
	default:
		return 0, fmt.Errorf("pkcs7: unsupported digest algorithm %v", alg)
	}
	// The signature algorithm is plain RSA or RSA with the same digest.
	if sa := si.SignatureAlgorithm.Algorithm; !sa.Equal(oidRSA) && !sa.Equal(withRSA) {
		return 0, fmt.Errorf("pkcs7: signature algorithm %v is not RSA with %v", sa, hash)
	}
	return hash, nil
}

// signedBytes is what the signature covers: the content itself, or, when
// signed attributes are present, their DER SET after checking that their
// message digest matches the content.
func (sd *signedData) signedBytes() ([]byte, crypto.Hash, error) {
	hash, err := hashFor(sd.signer)
	if err != nil {
		return nil, 0, err
	}
	if len(sd.signer.SignedAttrs.FullBytes) == 0 {
		return sd.content, hash, nil
	}
	var attrs []attribute
	if _, err := asn1.UnmarshalWithParams(sd.signer.SignedAttrs.FullBytes, &attrs, "set,tag:0"); err != nil {
		return nil, 0, fmt.Errorf("pkcs7 signed attributes: %w", err)
	}
	h := hash.New()
	h.Write(sd.content)
	want := h.Sum(nil)
	var digestOK, typeOK bool
	for _, a := range attrs {
		switch {
		case a.Type.Equal(oidMessageDigest):
			var got []byte
			if _, err := asn1.Unmarshal(a.Values.Bytes, &got); err != nil {
				return nil, 0, fmt.Errorf("pkcs7 message digest: %w", err)
			}
			digestOK = bytes.Equal(got, want)
		case a.Type.Equal(oidContentType):
			var ct asn1.ObjectIdentifier
			if _, err := asn1.Unmarshal(a.Values.Bytes, &ct); err == nil {
				typeOK = ct.Equal(oidData)
			}
		}
	}
	if !digestOK || !typeOK {
		return nil, 0, errors.New("pkcs7: signed attributes do not match the content")
	}
	// The signature covers the attributes encoded as a SET, not as [0].
	signed := append([]byte{0x31}, sd.signer.SignedAttrs.FullBytes[1:]...)
	return signed, hash, nil
}
