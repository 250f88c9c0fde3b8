package attest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/mlplatform/mlplatform/hwprobe/attest"
	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
)

func newSigner(t testing.TB, opts attesttest.Options) *attesttest.Signer {
	t.Helper()
	s, err := attesttest.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sign(t testing.TB, s *attesttest.Signer, d attesttest.Document) []byte {
	t.Helper()
	b, err := s.Sign(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sign1 is a COSE_Sign1 for re-encoding altered documents in tests.
type sign1 struct {
	_           struct{} `cbor:",toarray"`
	Protected   []byte
	Unprotected cbor.RawMessage
	Payload     []byte
	Signature   []byte
}

func decodeSign1(t *testing.T, b []byte) sign1 {
	t.Helper()
	var m sign1
	if err := cbor.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encodeSign1(t *testing.T, m sign1) []byte {
	t.Helper()
	b, err := cbor.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flip changes one byte of the first occurrence of field's value in b,
// keeping the CBOR well-formed.
func flip(t *testing.T, b, value []byte) []byte {
	t.Helper()
	i := bytes.Index(b, value)
	if i < 0 {
		t.Fatalf("value %x not in document", value)
	}
	out := bytes.Clone(b)
	out[i] ^= 0x01
	return out
}

func pcrs(fill byte) map[int][]byte {
	m := make(map[int][]byte)
	for i := range 24 {
		m[i] = bytes.Repeat([]byte{fill + byte(i)}, 48)
	}
	return m
}

func TestVerify(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newSigner(t, attesttest.Options{NotBefore: t0, ModuleID: "i-0abc1234def567890-tpm0000000000000000"})
	other := newSigner(t, attesttest.Options{NotBefore: t0})
	report := sha256.Sum256([]byte(`{"node":"gpu-3","ok":true}`))
	nonce := []byte("challenge-of-apply-42-0123456789")
	good := attesttest.Document{Timestamp: t0.Add(time.Hour), PCRs: pcrs(0x10), UserData: report[:], Nonce: nonce}
	doc := sign(t, s, good)

	// An ES256 protected header over the same payload and signature.
	es256 := decodeSign1(t, doc)
	es256.Protected = []byte{0xa1, 0x01, 0x26}
	// A signature over a payload that is not an attestation document.
	notMap, err := s.SignPayload([]byte{0x83, 0x01, 0x02, 0x03})
	if err != nil {
		t.Fatal(err)
	}
	enclave := good
	enclave.Enclave = true
	wrongPCR := pcrs(0x10)
	wrongPCR[7] = bytes.Repeat([]byte{0xee}, 48)

	base := func() attest.VerifyOptions {
		return attest.VerifyOptions{Roots: s.Roots(), Nonce: nonce, UserData: report[:]}
	}
	with := func(f func(*attest.VerifyOptions)) attest.VerifyOptions {
		o := base()
		f(&o)
		return o
	}

	tests := []struct {
		name    string
		doc     []byte
		opts    attest.VerifyOptions
		wantErr error  // nil means verified
		wantMsg string // in the error
	}{
		{"valid", doc, base(), nil, ""},
		{"valid, tagged 18", append([]byte{0xd2}, doc...), base(), nil, ""},
		{"valid, every expectation", doc, with(func(o *attest.VerifyOptions) {
			o.NitroTPM, o.InstanceID, o.PCRs = true, "i-0abc1234def567890", map[int][]byte{0: pcrs(0x10)[0], 7: pcrs(0x10)[7]}
		}), nil, ""},
		{"valid, no expectations", doc, attest.VerifyOptions{Roots: s.Roots()}, nil, ""},
		{"valid at an explicit time", doc, with(func(o *attest.VerifyOptions) { o.Now = t0.Add(2 * time.Hour) }), nil, ""},
		{"tampered payload", flip(t, doc, report[:]), base(), attest.ErrSignature, "signature"},
		{"tampered signature", flip(t, doc, doc[len(doc)-8:]), base(), attest.ErrSignature, "signature"},
		{"unknown root", doc, attest.VerifyOptions{Roots: other.Roots()}, attest.ErrChain, "unknown authority"},
		{"another signer's document", sign(t, other, good), base(), attest.ErrChain, ""},
		{"no roots", doc, attest.VerifyOptions{}, attest.ErrNoRoots, ""},
		{"wrong nonce", doc, with(func(o *attest.VerifyOptions) { o.Nonce = []byte("challenge-of-apply-43") }), attest.ErrNonce, "nonce does not match: got 32 bytes"},
		{"nonce expected, none in document", sign(t, s, attesttest.Document{Timestamp: t0.Add(time.Hour), UserData: report[:]}), base(), attest.ErrNonce, "got none"},
		{"wrong user data", doc, with(func(o *attest.VerifyOptions) { o.UserData = make([]byte, 32) }), attest.ErrUserData, "user data does not match"},
		{"pcr mismatch", doc, with(func(o *attest.VerifyOptions) { o.PCRs = map[int][]byte{7: wrongPCR[7]} }), attest.ErrPCR, "PCR 7 does not match"},
		{"pcr missing", doc, with(func(o *attest.VerifyOptions) { o.PCRs = map[int][]byte{30: wrongPCR[7]} }), attest.ErrPCR, "no PCR 30"},
		{"expired leaf at timestamp", sign(t, s, attesttest.Document{Timestamp: t0.Add(4 * time.Hour), Nonce: nonce, UserData: report[:]}), base(), attest.ErrExpired, "signing certificate"},
		{"leaf not yet valid at timestamp", sign(t, s, attesttest.Document{Timestamp: t0.Add(-time.Minute), Nonce: nonce, UserData: report[:]}), base(), attest.ErrExpired, ""},
		{"expired at an explicit time", doc, with(func(o *attest.VerifyOptions) { o.Now = t0.Add(5 * time.Hour) }), attest.ErrExpired, ""},
		{"wrong alg", encodeSign1(t, es256), base(), attest.ErrAlgorithm, "ES256"},
		{"enclave document where NitroTPM is required", sign(t, s, enclave), with(func(o *attest.VerifyOptions) { o.NitroTPM = true }), attest.ErrKind, "Nitro Enclave"},
		{"another instance", doc, with(func(o *attest.VerifyOptions) { o.InstanceID = "i-0fff1234def567890" }), attest.ErrInstance, "want instance i-0fff1234def567890"},
		{"signed payload that is not a document", notMap, base(), attest.ErrMalformed, "payload"},
		{"truncated", doc[:len(doc)/2], base(), attest.ErrMalformed, ""},
		{"garbage", []byte("not an attestation document"), base(), attest.ErrMalformed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := attest.Verify(tt.doc, tt.opts)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if !bytes.Equal(d.Nonce, nonce) || !bytes.Equal(d.UserData, report[:]) || !d.NitroTPM || len(d.PCRs) != 24 {
					t.Errorf("document = %+v", d)
				}
				return
			}
			t.Log(err)
			if d != nil {
				t.Errorf("document returned with error %v", err)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify error = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Verify error = %q, want it to say %q", err, tt.wantMsg)
			}
			for _, sentinel := range []error{attest.ErrMalformed, attest.ErrNoRoots, attest.ErrAlgorithm, attest.ErrExpired, attest.ErrChain,
				attest.ErrSignature, attest.ErrKind, attest.ErrInstance, attest.ErrNonce, attest.ErrUserData, attest.ErrPCR} {
				if sentinel != tt.wantErr && errors.Is(err, sentinel) {
					t.Errorf("Verify error %q also matches %v", err, sentinel)
				}
			}
		})
	}
}

func TestVerify_pcrError(t *testing.T) {
	s := newSigner(t, attesttest.Options{})
	doc := sign(t, s, attesttest.Document{PCRs: pcrs(0)})
	want := bytes.Repeat([]byte{0xab}, 48)
	_, err := attest.Verify(doc, attest.VerifyOptions{Roots: s.Roots(), PCRs: map[int][]byte{4: want}})
	var pe *attest.PCRError
	if !errors.As(err, &pe) || pe.Index != 4 || !bytes.Equal(pe.Want, want) || !bytes.Equal(pe.Got, pcrs(0)[4]) {
		t.Fatalf("Verify error = %#v", err)
	}
}

// TestVerify_expiredIntermediate: an issuer out of its validity is named,
// not reported as an unknown authority.
func TestVerify_expiredIntermediate(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newSigner(t, attesttest.Options{NotBefore: t0, IntermediateLifetime: time.Hour})
	doc := sign(t, s, attesttest.Document{Timestamp: t0.Add(2 * time.Hour)})
	_, err := attest.Verify(doc, attest.VerifyOptions{Roots: s.Roots()})
	if !errors.Is(err, attest.ErrExpired) || !strings.Contains(err.Error(), "CA bundle certificate 1") {
		t.Fatalf("Verify error = %v, want ErrExpired naming CA bundle certificate 1", err)
	}
	if _, err := attest.Verify(sign(t, s, attesttest.Document{Timestamp: t0.Add(30 * time.Minute)}), attest.VerifyOptions{Roots: s.Roots()}); err != nil {
		t.Fatalf("within the intermediate's validity: %v", err)
	}
}

func TestParse(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newSigner(t, attesttest.Options{NotBefore: t0})
	doc := sign(t, s, attesttest.Document{Timestamp: t0.Add(time.Hour), PublicKey: []byte{1, 2, 3}, Nonce: []byte{4}, Enclave: true})
	d, err := attest.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	if d.ModuleID != attesttest.DefaultModuleID || d.InstanceID() != "i-0123456789abcdef0" || d.Digest != "SHA384" ||
		!d.Timestamp.Equal(t0.Add(time.Hour)) || d.NitroTPM || len(d.PCRs) != 16 || len(d.PCRs[15]) != 48 ||
		!bytes.Equal(d.PublicKey, []byte{1, 2, 3}) || d.UserData != nil || !bytes.Equal(d.Nonce, []byte{4}) ||
		d.Algorithm != attest.AlgorithmES384 || !d.Certificate.Equal(s.Leaf) || len(d.CABundle) != 2 || !d.CABundle[0].Equal(s.Root) {
		t.Errorf("Parse = %+v", d)
	}
}

// TestParse_malformed: each departure from AWS's format is refused with
// ErrMalformed naming the field, never a panic.
func TestParse_malformed(t *testing.T) {
	s := newSigner(t, attesttest.Options{})
	valid, err := s.Payload(attesttest.Document{})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := cbor.Unmarshal(valid, &fields); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		m := make(map[string]any, len(fields))
		for k, v := range fields {
			m[k] = v
		}
		f(m)
		b, err := cbor.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := s.SignPayload(b)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	tests := []struct {
		name string
		doc  []byte
		want string
	}{
		{"empty", nil, "empty input"},
		{"too large", make([]byte, attest.MaxDocumentSize+1), "more than"},
		{"cbor map, not COSE", []byte{0xa0}, "cose"},
		{"other tag", []byte{0xd8, 0x62, 0x84, 0x40, 0xa0, 0x40, 0x40}, "cose"},
		{"trailing bytes", append(sign(t, s, attesttest.Document{}), 0x00), "cose"},
		{"detached payload", []byte{0x84, 0x44, 0xa1, 0x01, 0x38, 0x22, 0xa0, 0xf6, 0x41, 0x00}, "cose"},
		{"no module_id", edit(func(m map[string]any) { delete(m, "module_id") }), "module_id: missing"},
		{"module_id not text", edit(func(m map[string]any) { m["module_id"] = []byte("i-1") }), "module_id: CBOR major type 2"},
		{"digest not SHA384", edit(func(m map[string]any) { m["digest"] = "SHA256" }), "digest"},
		{"negative timestamp", edit(func(m map[string]any) { m["timestamp"] = -1 }), "timestamp"},
		{"zero timestamp", edit(func(m map[string]any) { m["timestamp"] = 0 }), "timestamp"},
		{"no pcrs", edit(func(m map[string]any) { delete(m, "nitrotpm_pcrs") }), "pcrs: missing"},
		{"both pcr maps", edit(func(m map[string]any) { m["pcrs"] = m["nitrotpm_pcrs"] }), "both"},
		{"empty pcrs", edit(func(m map[string]any) { m["nitrotpm_pcrs"] = map[int][]byte{} }), "empty"},
		{"pcr index 32", edit(func(m map[string]any) { m["nitrotpm_pcrs"] = map[int][]byte{32: make([]byte, 48)} }), "index 32"},
		{"pcr of 20 bytes", edit(func(m map[string]any) { m["nitrotpm_pcrs"] = map[int][]byte{0: make([]byte, 20)} }), "20 bytes"},
		{"pcr as array", edit(func(m map[string]any) { m["nitrotpm_pcrs"] = map[int][]int{0: {1, 2}} }), "major type 4"},
		{"certificate not DER", edit(func(m map[string]any) { m["certificate"] = []byte("nope") }), "certificate"},
		{"empty certificate", edit(func(m map[string]any) { m["certificate"] = []byte{} }), "certificate: empty"},
		{"no cabundle", edit(func(m map[string]any) { delete(m, "cabundle") }), "cabundle: missing"},
		{"empty cabundle", edit(func(m map[string]any) { m["cabundle"] = [][]byte{} }), "cabundle: empty"},
		{"cabundle entry not DER", edit(func(m map[string]any) { m["cabundle"] = [][]byte{[]byte("x")} }), "cabundle[0]"},
		{"nonce too long", edit(func(m map[string]any) { m["nonce"] = make([]byte, 1025) }), "nonce: 1025 bytes"},
		{"user_data not bytes", edit(func(m map[string]any) { m["user_data"] = "text" }), "user_data: CBOR major type 3"},
		{"duplicate key", dupKey(t, s, valid), "duplicate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := attest.Parse(tt.doc)
			if !errors.Is(err, attest.ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse = %v, %v; want ErrMalformed saying %q", d, err, tt.want)
			}
		})
	}
}

// dupKey is the payload with its nonce entry written twice (the map's
// count raised by one), signed.
func dupKey(t *testing.T, s *attesttest.Signer, payload []byte) []byte {
	t.Helper()
	if payload[0] < 0xa1 || payload[0] > 0xb6 { // a map of 1 to 22 pairs
		t.Fatalf("payload starts %x", payload[0])
	}
	dup := append([]byte{payload[0] + 1}, payload[1:]...)
	dup = append(dup, 0x65, 'n', 'o', 'n', 'c', 'e', 0xf6)
	doc, err := s.SignPayload(dup)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestInstanceID(t *testing.T) {
	for module, want := range map[string]string{
		"i-01cfb383223e42522-tpm0000000000000000": "i-01cfb383223e42522",
		"i-0a22e5c5f24d22174-enc0191cceb4289903f": "i-0a22e5c5f24d22174",
		"i-12345678-tpm0":                         "i-12345678",
		"i-01CFB383223E42522-tpm0":                "",
		"i-123-tpm0":                              "",
		"x-01cfb383223e42522-tpm0":                "",
		"i-01cfb383223e42522":                     "",
		"":                                        "",
	} {
		if got := (&attest.Document{ModuleID: module}).InstanceID(); got != want {
			t.Errorf("InstanceID(%q) = %q, want %q", module, got, want)
		}
	}
}

func TestAWSRoots(t *testing.T) {
	pool, err := attest.AWSRoots()
	if err != nil {
		t.Fatal(err)
	}
	s := newSigner(t, attesttest.Options{})
	_, err = attest.Verify(sign(t, s, attesttest.Document{}), attest.VerifyOptions{Roots: pool})
	if !errors.Is(err, attest.ErrChain) {
		t.Fatalf("a test document under AWS's root: %v, want ErrChain", err)
	}
}

// genuine is a real document AWS signed, from a public repository
// (testdata/README.md).
type genuine struct {
	name      string
	doc       []byte
	at        time.Time
	nitroTPM  bool
	module    string
	nonce     []byte
	pcrLength int
}

func readGenuine(t testing.TB) []genuine {
	t.Helper()
	b64, err := os.ReadFile("testdata/nitro-enclave.b64")
	if err != nil {
		t.Fatal(err)
	}
	enclave, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b64)))
	if err != nil {
		t.Fatal(err)
	}
	hx, err := os.ReadFile("testdata/nitrotpm.hex")
	if err != nil {
		t.Fatal(err)
	}
	tpm, err := hex.DecodeString(strings.TrimSpace(string(hx)))
	if err != nil {
		t.Fatal(err)
	}
	tpmNonce, _ := hex.DecodeString("230af3f7c0ec43ccf99a4cab47ac61469a36ea74b1e79740fdf8ccfc8f56161a")
	return []genuine{
		{name: "nitro enclave", doc: enclave, module: "i-0a22e5c5f24d22174-enc0191cceb4289903f", pcrLength: 48,
			at: time.Date(2024, time.September, 7, 14, 37, 39, 545000000, time.UTC)},
		{name: "nitrotpm", doc: tpm, nitroTPM: true, module: "i-01cfb383223e42522-tpm0000000000000000", nonce: tpmNonce, pcrLength: 48},
	}
}

// TestVerify_genuineAWS verifies real documents signed by AWS's Nitro PKI
// with the embedded root, at their own timestamps.
func TestVerify_genuineAWS(t *testing.T) {
	roots, err := attest.AWSRoots()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range readGenuine(t) {
		t.Run(g.name, func(t *testing.T) {
			d, err := attest.Verify(g.doc, attest.VerifyOptions{Roots: roots, NitroTPM: g.nitroTPM, InstanceID: g.module[:19], Nonce: g.nonce})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if d.ModuleID != g.module || d.NitroTPM != g.nitroTPM || len(d.CABundle) != 4 || len(d.PCRs[0]) != g.pcrLength {
				t.Errorf("document = %+v", d)
			}
			if !g.at.IsZero() && !d.Timestamp.Equal(g.at) {
				t.Errorf("timestamp = %s, want %s", d.Timestamp, g.at)
			}
			if fp := sha256.Sum256(d.CABundle[0].Raw); strings.ToUpper(hex.EncodeToString(fp[:])) != attest.AWSRootFingerprint {
				t.Errorf("cabundle[0] is not AWS's root")
			}
			// One bit changed in the signed payload: the signature fails.
			if _, err := attest.Verify(flip(t, g.doc, []byte(g.module)), attest.VerifyOptions{Roots: roots}); !errors.Is(err, attest.ErrSignature) {
				t.Errorf("tampered module id: %v, want ErrSignature", err)
			}
			// Not under a test root.
			s := newSigner(t, attesttest.Options{})
			if _, err := attest.Verify(g.doc, attest.VerifyOptions{Roots: s.Roots()}); !errors.Is(err, attest.ErrChain) {
				t.Errorf("under a test root: %v, want ErrChain", err)
			}
			// Years later, checked at that time, its certificates have expired.
			if _, err := attest.Verify(g.doc, attest.VerifyOptions{Roots: roots, Now: d.Timestamp.AddDate(1, 0, 0)}); !errors.Is(err, attest.ErrExpired) {
				t.Errorf("a year later: %v, want ErrExpired", err)
			}
		})
	}
}
