package attest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/attest"
	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
)

// FuzzParse: Parse never panics, refuses with ErrMalformed, and what it
// accepts has the shape AWS specifies. (Verify's own checks are
// cryptographic and milliseconds long; TestVerify covers them.) The
// genuine seeds are 5 to 8 KiB, so minimizing a new input takes long on a
// busy machine: -fuzzminimizetime=2s keeps a short run fuzzing.
func FuzzParse(f *testing.F) {
	s := newSigner(f, attesttest.Options{})
	doc := sign(f, s, attesttest.Document{UserData: []byte("report digest"), Nonce: []byte("nonce")})
	f.Add(doc)
	f.Add(append([]byte{0xd2}, doc...))
	f.Add(sign(f, s, attesttest.Document{Enclave: true, PublicKey: []byte{1}}))
	f.Add([]byte{0x84, 0x44, 0xa1, 0x01, 0x38, 0x22, 0xa0, 0x41, 0xa0, 0x41, 0x00})
	f.Add([]byte{})
	for _, g := range readGenuine(f) {
		f.Add(g.doc)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := attest.Parse(b)
		if err != nil {
			if !errors.Is(err, attest.ErrMalformed) {
				t.Fatalf("Parse error %v is not ErrMalformed", err)
			}
			return
		}
		if d.ModuleID == "" || d.Digest != "SHA384" || d.Timestamp.Before(time.UnixMilli(1)) ||
			d.Certificate == nil || len(d.CABundle) == 0 || len(d.PCRs) == 0 {
			t.Fatalf("Parse accepted %+v", d)
		}
		for i, v := range d.PCRs {
			if i < 0 || i > attest.MaxPCRIndex || (len(v) != 32 && len(v) != 48 && len(v) != 64) {
				t.Fatalf("Parse accepted PCR %d of %d bytes", i, len(v))
			}
		}
		if len(d.UserData) > attest.MaxUserDataSize || len(d.Nonce) > attest.MaxUserDataSize || len(d.PublicKey) > attest.MaxUserDataSize {
			t.Fatalf("Parse accepted oversized optional fields")
		}
	})
}
