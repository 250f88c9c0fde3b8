package nitrotpm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mlplatform/mlplatform/hwprobe/attest"
	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
)

var testEK = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })

func fake(t *testing.T) *fakeTPM {
	t.Helper()
	k, err := testEK()
	if err != nil {
		t.Fatal(err)
	}
	return newFakeTPM(t, k)
}

// clean says whether the exchange left nothing behind in the TPM.
func (f *fakeTPM) clean() bool { return len(f.nv) == 0 && len(f.objects) == 0 && len(f.sessions) == 0 }

// The whole exchange against the fake NitroTPM: the document it returns
// verifies with the nonce and user data asked for, the NV index another
// process holds is skipped, the request crosses several NV writes, and
// nothing is left in the TPM.
func TestAttest(t *testing.T) {
	signer, err := attesttest.New(attesttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := fake(t)
	f.bufMax = 64 // several writes and reads
	f.taken[nvIndexFirst] = true
	f.sign = func(nonce, user []byte) []byte {
		doc, err := signer.Sign(attesttest.Document{Nonce: nonce, UserData: user})
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	nonce := bytes.Repeat([]byte{0xab}, 32)
	sum := sha256.Sum256([]byte("report"))
	doc, err := Attest(context.Background(), f, nonce, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attest.Verify(doc, attest.VerifyOptions{Roots: signer.Roots(), NitroTPM: true, Nonce: nonce, UserData: sum[:]}); err != nil {
		t.Fatal(err)
	}
	want, _ := encodeNSMRequest(nonce, sum[:])
	if !bytes.Equal(f.requested, want) {
		t.Errorf("the NSM request read by the TPM is %x, want %x", f.requested, want)
	}
	if !f.clean() {
		t.Errorf("left in the TPM: nv %v objects %v sessions %v", f.nv, f.objects, f.sessions)
	}
	if n := countOf(f.commands, ccNVWrite); n < 2 {
		t.Errorf("%d NV writes, want the request in several", n)
	}
}

func countOf(s []uint32, v uint32) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

func TestAttestRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(*fakeTPM)
		want string
	}{
		{"not a NitroTPM", func(f *fakeTPM) { f.noVendor = true }, "TPM2_AWS_NSM_REQUEST: response code 0x143"},
		{"NSM error", func(f *fakeTPM) {}, "NSM error response: InvalidArgument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := fake(t)
			tt.set(f)
			_, err := Attest(context.Background(), f, []byte("n"), []byte("u"))
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrRefused with %q", err, tt.want)
			}
			if !f.clean() {
				t.Error("the refused exchange left objects in the TPM")
			}
		})
	}
}

// A context that ends stops the exchange before its next command; what
// was created is still flushed and undefined.
func TestAttestContextEnds(t *testing.T) {
	f := fake(t)
	ctx, cancel := context.WithCancel(context.Background())
	tr := transportFunc(func(cmd []byte) ([]byte, error) {
		b, err := f.Send(cmd)
		if f.commands[len(f.commands)-1] == ccNVDefineSpace {
			cancel()
		}
		return b, err
	})
	if _, err := Attest(ctx, tr, []byte("n"), []byte("u")); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if !f.clean() || slices.Contains(f.commands, ccNVWrite) {
		t.Errorf("commands %x; left nv %v objects %v", f.commands, f.nv, f.objects)
	}
}

type transportFunc func([]byte) ([]byte, error)

func (fn transportFunc) Send(cmd []byte) ([]byte, error) { return fn(cmd) }

func TestAttestTooLarge(t *testing.T) {
	f := fake(t)
	if _, err := Attest(context.Background(), f, make([]byte, 1025), nil); err == nil || len(f.commands) != 0 {
		t.Fatalf("err = %v after %d commands", err, len(f.commands))
	}
}

func TestFind(t *testing.T) {
	present := func(names ...string) func(string) (fs.FileInfo, error) {
		return func(p string) (fs.FileInfo, error) {
			if slices.Contains(names, p) {
				return nil, nil
			}
			return nil, errors.New("absent")
		}
	}
	if p, err := Find(present("/dev/tpm0", "/dev/tpmrm0")); p != "/dev/tpmrm0" || err != nil {
		t.Errorf("Find = %q, %v; want the resource manager first", p, err)
	}
	if p, err := Find(present("/dev/tpm0")); p != "/dev/tpm0" || err != nil {
		t.Errorf("Find = %q, %v", p, err)
	}
	if _, err := Find(present()); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "/dev/tpmrm0") {
		t.Errorf("Find = %v", err)
	}
}
