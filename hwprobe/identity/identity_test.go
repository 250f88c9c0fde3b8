package identity

import (
	"crypto"
	_ "crypto/md5" // the refused digests, to sign test signatures with
	"crypto/rand"
	"crypto/rsa"
	_ "crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"
)

func readFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// otherCert is a freshly generated certificate that signed nothing.
func otherCert(t *testing.T) *x509.Certificate {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{Organization: []string{"not aws"}},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestVerify(t *testing.T) {
	doc := readFile(t, "document.json")
	certs, err := ParseCertificates(readFile(t, "test-cert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	other := otherCert(t)
	withAttrs := readFile(t, "rsa2048-attrs.txt")
	armoured := []byte("-----BEGIN PKCS7-----\n" + string(withAttrs) + "-----END PKCS7-----\n")
	tampered := []byte(strings.Replace(string(doc), "p5en.48xlarge", "p5.48xlarge", 1))

	tests := []struct {
		name    string
		doc     []byte
		sig     []byte
		trusted []*x509.Certificate
		wantErr string // "" means verified
	}{
		{"signed attributes", doc, withAttrs, certs, ""},
		{"no signed attributes, no embedded certs", doc, readFile(t, "rsa2048-noattr.txt"), certs, ""},
		{"pem armour", doc, armoured, certs, ""},
		{"trailing newline on document", append(append([]byte{}, doc...), '\n'), withAttrs, certs, ""},
		{"trusted set with another cert first", doc, withAttrs, []*x509.Certificate{other, certs[0]}, ""},
		{"tampered document", tampered, withAttrs, certs, "differs"},
		{"wrong certificate", doc, withAttrs, []*x509.Certificate{other}, "does not verify"},
		{"no trusted certificate", doc, withAttrs, nil, "no trusted"},
		{"not base64", doc, []byte("!!!"), certs, "base64"},
		{"not pkcs7", doc, []byte("aGVsbG8="), certs, "pkcs7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signer, err := Verify(tt.doc, tt.sig, tt.trusted)
			if tt.wantErr == "" {
				if err != nil || !strings.Contains(signer, "hwprobe test signer") {
					t.Fatalf("Verify = %q, %v", signer, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Verify err = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if _, err := Verify(doc, withAttrs, nil); !errors.Is(err, ErrNoTrustedCert) {
		t.Errorf("no certs: %v", err)
	}
}

func TestParseDocument(t *testing.T) {
	d, err := ParseDocument(readFile(t, "document.json"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Region != "me-central-1" || d.InstanceType != "p5en.48xlarge" || d.AccountID != "111122223333" || d.AvailabilityZone != "me-central-1a" {
		t.Errorf("document = %+v", d)
	}
	for _, bad := range []string{"", "{}", "[1]", `{"instanceId":"i-1"}`} {
		if _, err := ParseDocument([]byte(bad)); err == nil {
			t.Errorf("ParseDocument(%q) accepted", bad)
		}
	}
}

func TestParseCertificates(t *testing.T) {
	if _, err := ParseCertificates([]byte("nothing")); err == nil {
		t.Error("accepted no certificate")
	}
	bad := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})
	if _, err := ParseCertificates(bad); err == nil {
		t.Error("accepted a corrupt certificate")
	}
}

func FuzzVerify(f *testing.F) {
	doc := readFile(f, "document.json")
	certs, err := ParseCertificates(readFile(f, "test-cert.pem"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(readFile(f, "rsa2048-attrs.txt"))
	f.Add(readFile(f, "rsa2048-noattr.txt"))
	f.Add([]byte("MAA="))
	f.Fuzz(func(t *testing.T, sig []byte) {
		_, _ = Verify(doc, sig, certs)
		_, _ = ParseDocument(sig)
	})
}

// signCMS is a CMS SignedData over doc (attached, no signed attributes)
// signed by key with hash, naming digestAlg and sigAlg: what an rsa2048
// signature looks like, with the algorithms the test chooses.
func signCMS(t *testing.T, key *rsa.PrivateKey, cert *x509.Certificate, doc []byte, hash crypto.Hash, digestAlg, sigAlg asn1.ObjectIdentifier) []byte {
	t.Helper()
	h := hash.New()
	h.Write(doc)
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, hash, h.Sum(nil))
	if err != nil {
		t.Fatal(err)
	}
	null := asn1.RawValue{Tag: asn1.TagNull}
	issuerAndSerial, err := asn1.Marshal(struct {
		Issuer asn1.RawValue
		Serial *big.Int
	}{asn1.RawValue{FullBytes: cert.RawIssuer}, cert.SerialNumber})
	if err != nil {
		t.Fatal(err)
	}
	digest := pkix.AlgorithmIdentifier{Algorithm: digestAlg, Parameters: null}
	sd, err := asn1.Marshal(signedDataASN1{
		Version:          1,
		DigestAlgorithms: []pkix.AlgorithmIdentifier{digest},
		Content:          encapContent{ContentType: oidData, Content: doc},
		SignerInfos: []signerInfo{{
			Version:            1,
			IssuerAndSerial:    asn1.RawValue{FullBytes: issuerAndSerial},
			DigestAlgorithm:    digest,
			SignatureAlgorithm: pkix.AlgorithmIdentifier{Algorithm: sigAlg, Parameters: null},
			Signature:          sig,
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	der, err := asn1.Marshal(contentInfo{ContentType: oidSignedData, Content: asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 0, IsCompound: true, Bytes: sd}})
	if err != nil {
		t.Fatal(err)
	}
	return []byte(base64.StdEncoding.EncodeToString(der))
}

// TestVerifyDigests: AWS signs rsa2048 with SHA-256; SHA-384 and SHA-512
// verify too; a signature over SHA-1 or MD5 is refused, naming the digest,
// even though the trusted key made it.
func TestVerifyDigests(t *testing.T) {
	doc := readFile(t, "document.json")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(11), Subject: pkix.Name{Organization: []string{"digest test signer"}},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name      string
		hash      crypto.Hash
		digestAlg asn1.ObjectIdentifier
		sigAlg    asn1.ObjectIdentifier
		wantErr   string // "" means verified
		weak      bool   // the error is ErrWeakDigest
	}{
		{"sha-256, rsaEncryption (as AWS signs)", crypto.SHA256, oidSHA256, oidRSA, "", false},
		{"sha-256, sha256WithRSAEncryption", crypto.SHA256, oidSHA256, oidSHA256WithRSA, "", false},
		{"sha-384", crypto.SHA384, oidSHA384, oidRSA, "", false},
		{"sha-512", crypto.SHA512, oidSHA512, oidSHA512WithRSA, "", false},
		{"sha-1", crypto.SHA1, oidSHA1, oidRSA, "uses SHA-1", true},
		{"sha-1, sha1WithRSAEncryption", crypto.SHA1, oidSHA1, oidSHA1WithRSA, "uses SHA-1", true},
		{"md5", crypto.MD5, oidMD5, oidRSA, "uses MD5", true},
		{"sha-256 digest, sha1WithRSAEncryption", crypto.SHA256, oidSHA256, oidSHA1WithRSA, "uses SHA-1", true},
		{"sha-256 digest, sha512WithRSAEncryption", crypto.SHA256, oidSHA256, oidSHA512WithRSA, "is not RSA with SHA-256", false},
		{"sha-224", crypto.SHA224, asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 4}, oidRSA, "unsupported digest algorithm", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig := signCMS(t, key, cert, doc, tt.hash, tt.digestAlg, tt.sigAlg)
			signer, err := Verify(doc, sig, []*x509.Certificate{cert})
			if tt.wantErr == "" {
				if err != nil || !strings.Contains(signer, "digest test signer") {
					t.Fatalf("Verify = %q, %v", signer, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ErrWeakDigest) != tt.weak {
				t.Fatalf("Verify err = %v, want %q (weak digest %v)", err, tt.wantErr, tt.weak)
			}
			if tt.weak && !strings.Contains(err.Error(), "SHA-256 or stronger") {
				t.Errorf("Verify err = %v: does not say what is required", err)
			}
		})
	}
}
