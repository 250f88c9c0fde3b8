package attesttest_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/hwprobe/attest"
	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
)

// A signer saved and loaded signs documents that verify under the
// original's roots, with the original's module id.
func TestSignerPEMRoundTrip(t *testing.T) {
	s, err := attesttest.New(attesttest.Options{ModuleID: "i-0aaaabbbbccccdddd-tpm0000000000000000"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := attesttest.LoadPEM(b)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.Root.Equal(s.Root) || !loaded.Intermediate.Equal(s.Intermediate) || !loaded.Leaf.Equal(s.Leaf) {
		t.Fatal("certificates differ after the round trip")
	}
	doc, err := loaded.Sign(attesttest.Document{Nonce: []byte("n"), UserData: []byte("u")})
	if err != nil {
		t.Fatal(err)
	}
	d, err := attest.Verify(doc, attest.VerifyOptions{Roots: s.Roots(), NitroTPM: true, InstanceID: "i-0aaaabbbbccccdddd", Nonce: []byte("n"), UserData: []byte("u")})
	if err != nil {
		t.Fatal(err)
	}
	if d.ModuleID != "i-0aaaabbbbccccdddd-tpm0000000000000000" {
		t.Errorf("module id %q", d.ModuleID)
	}
}

func TestLoadPEMRefuses(t *testing.T) {
	a, _ := attesttest.New(attesttest.Options{})
	b, _ := attesttest.New(attesttest.Options{})
	pa, _ := a.MarshalPEM()
	pb, _ := b.MarshalPEM()
	keyAt := bytes.Index(pb, []byte("-----BEGIN EC PRIVATE KEY"))
	certsOnly := pa[:bytes.Index(pa, []byte("-----BEGIN EC PRIVATE KEY"))]
	for _, tt := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "0 certificates"},
		{"no key", certsOnly, "false key"},
		{"another signer's key", append(append([]byte{}, certsOnly...), pb[keyAt:]...), "not the signing certificate's"},
		{"other block", []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"), "unexpected PEM block"},
		{"bad certificate", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "certificate 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := attesttest.LoadPEM(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}
