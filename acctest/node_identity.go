package acctest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// NodeSigner is the tests' stand-in for AWS's identity-document signer: a
// test key and a self-signed certificate. The provider under test is told
// to trust CertPEM (trusted_certificates), so identity documents the
// harness signs verify exactly as AWS-signed ones do against AWS's
// certificate. It is test code: it signs nothing outside tests.
type NodeSigner struct {
	Key     *rsa.PrivateKey
	Cert    *x509.Certificate
	CertPEM string
}

// NewNodeSigner makes a fresh test key and certificate.
func NewNodeSigner() (*NodeSigner, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{Organization: []string{"mlplatform test identity signer"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &NodeSigner{Key: key, Cert: cert, CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))}, nil
}

// IdentityDocument is an instance identity document as IMDS serves it.
type IdentityDocument struct {
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

// JSON is the document's text.
func (d IdentityDocument) JSON() []byte {
	if d.Version == "" {
		d.Version = "2017-09-30"
	}
	if d.Architecture == "" {
		d.Architecture = "x86_64"
	}
	b, _ := json.MarshalIndent(d, "", "  ")
	return b
}

type cmsAlgorithm struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type cmsEncapContent struct {
	ContentType asn1.ObjectIdentifier
	Content     []byte `asn1:"explicit,tag:0"`
}

type cmsIssuerAndSerial struct {
	Issuer asn1.RawValue
	Serial *big.Int
}

type cmsSignerInfo struct {
	Version            int
	IssuerAndSerial    cmsIssuerAndSerial
	DigestAlgorithm    cmsAlgorithm
	SignatureAlgorithm cmsAlgorithm
	Signature          []byte
}

type cmsSignedData struct {
	Version          int
	DigestAlgorithms []cmsAlgorithm `asn1:"set"`
	Content          cmsEncapContent
	SignerInfos      []cmsSignerInfo `asn1:"set"`
}

type cmsContentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     cmsSignedData `asn1:"explicit,tag:0"`
}

// Sign returns the rsa2048 signature of doc as IMDS serves it: a CMS
// SignedData (SHA-256 with RSA, no signed attributes, the document
// attached), DER, base64.
func (s *NodeSigner) Sign(doc []byte) (string, error) {
	sum := sha256.Sum256(doc)
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.Key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	null := asn1.RawValue{Tag: asn1.TagNull}
	sha := cmsAlgorithm{Algorithm: asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}, Parameters: null}
	ci := cmsContentInfo{
		ContentType: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 2},
		Content: cmsSignedData{
			Version:          1,
			DigestAlgorithms: []cmsAlgorithm{sha},
			Content:          cmsEncapContent{ContentType: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}, Content: doc},
			SignerInfos: []cmsSignerInfo{{
				Version:            1,
				IssuerAndSerial:    cmsIssuerAndSerial{Issuer: asn1.RawValue{FullBytes: s.Cert.RawIssuer}, Serial: s.Cert.SerialNumber},
				DigestAlgorithm:    sha,
				SignatureAlgorithm: cmsAlgorithm{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}, Parameters: null},
				Signature:          sig,
			}},
		},
	}
	der, err := asn1.Marshal(ci)
	if err != nil {
		return "", fmt.Errorf("encode signature: %w", err)
	}
	return base64.StdEncoding.EncodeToString(der), nil
}
