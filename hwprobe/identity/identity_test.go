package identity

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
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
