package attesttest

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// SignerEnvVar names the file (MarshalPEM's) whose signer a test build of
// hwprobe (tag hwprobe_nvmlmock) uses in place of the NitroTPM. Release
// builds ignore it.
const SignerEnvVar = "HWPROBE_NITROTPM_TEST_SIGNER"

// MarshalPEM saves the signer for another process (a test build of
// hwprobe): the root, intermediate and signing certificates, in that
// order, then the signing key as an EC PRIVATE KEY block. It holds a
// private key: a test's temporary file, nothing more.
func (s *Signer) MarshalPEM() ([]byte, error) {
	key, err := x509.MarshalECPrivateKey(s.leafKey)
	if err != nil {
		return nil, fmt.Errorf("test signing key: %w", err)
	}
	var out []byte
	for _, c := range []*x509.Certificate{s.Root, s.Intermediate, s.Leaf} {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: key})...), nil
}

// LoadPEM reads a signer MarshalPEM saved. Its module id is the one it was
// made with.
func LoadPEM(b []byte) (*Signer, error) {
	var certs []*x509.Certificate
	var key *ecdsa.PrivateKey
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		switch blk.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("test signer: certificate %d: %w", len(certs), err)
			}
			certs = append(certs, c)
		case "EC PRIVATE KEY":
			k, err := x509.ParseECPrivateKey(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("test signer: key: %w", err)
			}
			key = k
		default:
			return nil, fmt.Errorf("test signer: unexpected PEM block %q", blk.Type)
		}
	}
	if len(certs) != 3 || key == nil {
		return nil, fmt.Errorf("test signer: %d certificates and %v key, want root, intermediate, signing certificate and its key", len(certs), key != nil)
	}
	leaf := certs[2]
	if pub, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, errors.New("test signer: the key is not the signing certificate's")
	}
	return &Signer{Root: certs[0], Intermediate: certs[1], Leaf: leaf, leafKey: key,
		moduleID: strings.TrimSuffix(leaf.Subject.CommonName, ".test")}, nil
}
