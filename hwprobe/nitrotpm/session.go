package nitrotpm

import (
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"io"
)

// The HMAC session that authorizes the NSM request (TPM 2.0 Library,
// Part 1, 19.6): salted with the EK, SHA-512.

const (
	digestSize = sha512.Size
	saltSize   = sha256.Size // the EK's name algorithm
)

// encryptSalt encrypts the session salt to the EK: RSA-OAEP with the
// EK's name algorithm (SHA-256) and the label "SECRET" (Part 1, B.10.2).
func encryptSalt(rnd io.Reader, ek *rsa.PublicKey, salt []byte) ([]byte, error) {
	b, err := rsa.EncryptOAEP(sha256.New(), rnd, ek, salt, []byte("SECRET\x00"))
	if err != nil {
		return nil, fmt.Errorf("encrypt session salt: %w", err)
	}
	return b, nil
}

// kdfa is KDFa with HMAC-SHA512 for one block of output (bits <= 512),
// Part 1, 11.4.10.2.
func kdfa(key []byte, label string, contextU, contextV []byte, bits uint32) []byte {
	m := hmac.New(sha512.New, key)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], 1)
	m.Write(n[:])
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write(contextU)
	m.Write(contextV)
	binary.BigEndian.PutUint32(n[:], bits)
	m.Write(n[:])
	return m.Sum(nil)[:bits/8]
}

// sessionKey is a salted, unbound session's key (Part 1, 19.6.11).
func sessionKey(salt, nonceTPM, nonceCaller []byte) []byte {
	return kdfa(salt, "ATH", nonceTPM, nonceCaller, 8*digestSize)
}

// cpHash is the command parameter hash of the NSM request: its code and
// the index's name, twice (authorization handle and index); no
// parameters (Part 1, 18.7).
func nsmCPHash(indexName []byte) []byte {
	h := sha512.New()
	var cc [4]byte
	binary.BigEndian.PutUint32(cc[:], ccNSMRequest)
	h.Write(cc[:])
	h.Write(indexName)
	h.Write(indexName)
	return h.Sum(nil)
}

// authHMAC is the session HMAC of a command (Part 1, 19.6.5): keyed with
// the session key and the entity's authorization value.
func authHMAC(sessionKey, authValue, cpHash, nonceCaller, nonceTPM []byte, attrs uint8) []byte {
	key := append(append([]byte{}, sessionKey...), authValue...)
	m := hmac.New(sha512.New, key)
	m.Write(cpHash)
	m.Write(nonceCaller)
	m.Write(nonceTPM)
	m.Write([]byte{attrs})
	return m.Sum(nil)
}

// randomAuth is an index authorization value of digestSize random bytes,
// the last one not zero: a TPM drops trailing zeros from an authorization
// value, and both sides of the HMAC must key it the same.
func randomAuth(rnd io.Reader) ([]byte, error) {
	b := make([]byte, digestSize)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return nil, err
	}
	b[len(b)-1] |= 1
	return b, nil
}

func randomBytes(rnd io.Reader, n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := io.ReadFull(rnd, b)
	return b, err
}
