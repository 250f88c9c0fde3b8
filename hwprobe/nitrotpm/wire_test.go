package nitrotpm

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Commands byte for byte, as the TPM 2.0 Library Part 3 lays them out.
func TestCommandEncoding(t *testing.T) {
	auth := bytes.Repeat([]byte{0xaa}, 4)
	for _, tt := range []struct {
		name string
		got  []byte
		want string
	}{
		{"FlushContext", flushContext(0x80000001), "8001 0000000e 00000165 80000001"},
		{"GetCapability NV_BUFFER_MAX", getNVBufferMax(), "8001 00000016 0000017a 00000006 0000012c 00000001"},
		{"NV_ReadPublic", nvReadPublic(0x01000002), "8001 0000000e 00000169 01000002"},
		{"NV_DefineSpace", nvDefineSpace(0x01000002, 8192, auth),
			"8002 00000031 0000012a 40000001 00000009 40000009 0000 00 0000" +
				" 0004 aaaaaaaa" + // auth
				" 000e 01000002 000d 00040004 0000 2000"}, // TPMS_NV_PUBLIC: index, SHA512, AUTHREAD|AUTHWRITE, no policy, 8192
		{"NV_UndefineSpace", nvUndefineSpace(0x01000002), "8002 0000001f 00000122 40000001 01000002 00000009 40000009 0000 00 0000"},
		{"NV_Write", nvWrite(0x01000002, auth, []byte{1, 2, 3}, 16),
			"8002 0000002a 00000137 01000002 01000002 0000000d 40000009 0000 00 0004 aaaaaaaa 0003 010203 0010"},
		{"NV_Read", nvRead(0x01000002, auth, 512, 1024),
			"8002 00000027 0000014e 01000002 01000002 0000000d 40000009 0000 00 0004 aaaaaaaa 0200 0400"},
		{"StartAuthSession", startAuthSession(0x80000001, []byte{1, 2}, []byte{3}),
			"8001 0000001e 00000176 80000001 40000007 0002 0102 0001 03 00 0010 000d"},
		{"NSM request", nsmRequest(0x01000002, sessionAuth(0x02000001, []byte{9}, sessionContinue, []byte{7, 7})),
			"8002 00000022 20000001 01000002 01000002 0000000c 02000001 0001 09 01 0002 0707"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if want := unhex(t, tt.want); !bytes.Equal(tt.got, want) {
				t.Errorf("\n got %x\nwant %x", tt.got, want)
			}
		})
	}
}

// The EK template is the TCG EK Credential Profile's RSA 2048 template
// L-1, and CreatePrimary carries it with an empty sensitive area.
func TestCreatePrimaryEK(t *testing.T) {
	want := "0001 000b 000300b2 0020 837197674484b3f81a90cc8d46a5d724fd52d76e06520b64f2a1da1b331469aa" +
		" 0006 0080 0043 0010 0800 00000000 0100" + strings.Repeat("00", 256)
	if got := ekTemplate(); !bytes.Equal(got, unhex(t, want)) {
		t.Errorf("template %x", got)
	}
	cmd := createPrimaryEK()
	head := "8002 00000000 00000131 4000000b 00000009 40000009 0000 00 0000 0004 0000 0000"
	h := unhex(t, head)
	copy(h[2:6], cmd[2:6])
	if !bytes.HasPrefix(cmd, h) || !bytes.HasSuffix(cmd, unhex(t, "0000 00000000")) || len(cmd) != len(h)+2+len(ekTemplate())+6 {
		t.Errorf("CreatePrimary %x", cmd)
	}
}

// The NSM request is serde's externally tagged CBOR, the absent public
// key a null.
func TestEncodeNSMRequest(t *testing.T) {
	got, err := encodeNSMRequest([]byte{1, 2}, []byte{3})
	if err != nil {
		t.Fatal(err)
	}
	want := "a1 6b 4174746573746174696f6e" + // {"Attestation":
		" a3 69 757365725f64617461 41 03" + // "user_data": h'03'
		" 65 6e6f6e6365 42 0102" + // "nonce": h'0102'
		" 6a 7075626c69635f6b6579 f6" // "public_key": null}
	if !bytes.Equal(got, unhex(t, want)) {
		t.Errorf("got %x", got)
	}
}

func TestParseResponse(t *testing.T) {
	for _, tt := range []struct {
		name     string
		in       string
		handles  int
		params   string
		err      string
		code     uint32
		malforms bool
	}{
		{name: "no sessions", in: "8001 00000010 00000000 80000001 0002", handles: 1, params: "0002"},
		{name: "sessions", in: "8002 00000019 00000000 80000001 00000002 abcd 0000 00 0000", handles: 1, params: "abcd"},
		{name: "error", in: "8001 0000000a 00000143", err: "response code 0x143", code: 0x143},
		{name: "short", in: "8001 0000", err: "4 bytes", malforms: true},
		{name: "size lies", in: "8001 00000020 00000000", err: "size field 32", malforms: true},
		{name: "bad tag", in: "c4c4 0000000a 00000000", err: "tag 0xc4c4", malforms: true},
		{name: "missing handle", in: "8001 0000000c 00000000 8000", handles: 1, err: "truncated", malforms: true},
		{name: "parameter size past the end", in: "8002 00000010 00000000 000000ff abcd", err: "truncated", malforms: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseResponse(ccCreatePrimary, unhex(t, tt.in), tt.handles)
			if tt.err != "" {
				var re *ResponseError
				if err == nil || !strings.Contains(err.Error(), tt.err) || errors.Is(err, errMalformed) != tt.malforms ||
					(tt.code != 0) != (errors.As(err, &re) && re.Code == tt.code) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || len(r.handles) != tt.handles || !bytes.Equal(r.params, unhex(t, tt.params)) {
				t.Fatalf("parseResponse = %+v, %v", r, err)
			}
		})
	}
}

func TestParseNVBufferMax(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		err  bool
	}{
		{in: "8001 0000001b 00000000 00 00000006 00000001 0000012c 00000400", want: 1024},
		{in: "8001 00000013 00000000 00 00000006 00000000", want: 0},
		{in: "8001 0000001b 00000000 00 00000006 00000001 0000012d 00000400", want: 0},
		{in: "8001 00000013 00000000 00 00000005 00000000", err: true},
		{in: "8001 00000017 00000000 00 00000006 00000001 0000", err: true},
	} {
		got, err := parseNVBufferMax(unhex(t, tt.in))
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("%s: %d, %v", tt.in, got, err)
		}
	}
}

func TestParseRSAPublic(t *testing.T) {
	n := append([]byte{0xc5}, bytes.Repeat([]byte{0x11}, 255)...)
	good := buf(nil).u16(algRSA).u16(algSHA256).u32(0x300b2).tpm2b(ekAuthPolicy[:]).u16(algAES).u16(128).u16(algCFB).u16(algNull).u16(2048).u32(0).tpm2b(n)
	pub, err := parseRSAPublic(good)
	if err != nil || pub.E != 65537 || !bytes.Equal(pub.N.Bytes(), n) {
		t.Fatalf("parseRSAPublic = %v, %v", pub, err)
	}
	for name, b := range map[string][]byte{
		"ecc":            buf(nil).u16(0x0023).u16(algSHA256),
		"truncated":      good[:len(good)-10],
		"short modulus":  buf(nil).u16(algRSA).u16(algSHA256).u32(0).tpm2b(nil).u16(algNull).u16(algNull).u16(2048).u32(0).tpm2b(n[:128]),
		"even exponent":  buf(nil).u16(algRSA).u16(algSHA256).u32(0).tpm2b(nil).u16(algNull).u16(algNull).u16(2048).u32(4).tpm2b(n),
		"leading zero":   buf(nil).u16(algRSA).u16(algSHA256).u32(0).tpm2b(nil).u16(algNull).u16(algNull).u16(2048).u32(0).tpm2b(append([]byte{0}, n[1:]...)),
		"tiny key (512)": buf(nil).u16(algRSA).u16(algSHA256).u32(0).tpm2b(nil).u16(algNull).u16(algNull).u16(512).u32(0).tpm2b(n[:64]),
	} {
		if _, err := parseRSAPublic(b); !errors.Is(err, errMalformed) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestParseNVReadPublic(t *testing.T) {
	name := append([]byte{0x00, 0x0d}, bytes.Repeat([]byte{1}, 64)...)
	ok := rsp(0, nil, buf(nil).tpm2b([]byte{1, 2}).tpm2b(name), false)
	if got, err := parseNVReadPublic(ok); err != nil || !bytes.Equal(got, name) {
		t.Fatalf("name %x, %v", got, err)
	}
	sha256Name := rsp(0, nil, buf(nil).tpm2b([]byte{1, 2}).tpm2b(append([]byte{0x00, 0x0b}, make([]byte, 32)...)), false)
	if _, err := parseNVReadPublic(sha256Name); !errors.Is(err, errMalformed) {
		t.Errorf("err = %v", err)
	}
}

func TestParseNSMResponse(t *testing.T) {
	doc, _ := cbor.Marshal(map[string]map[string][]byte{"Attestation": {"document": {0x84, 1, 2}}})
	padded := append(append([]byte{}, doc...), bytes.Repeat([]byte{0xff}, 100)...)
	if got, err := parseNSMResponse(padded); err != nil || !bytes.Equal(got, []byte{0x84, 1, 2}) {
		t.Fatalf("document %x, %v", got, err)
	}
	nsmErr, _ := cbor.Marshal(map[string]string{"Error": "InvalidArgument"})
	other, _ := cbor.Marshal(map[string]any{"DescribePCR": map[string]any{"lock": false}})
	empty, _ := cbor.Marshal(map[string]map[string][]byte{"Attestation": {"document": nil}})
	for name, tt := range map[string]struct {
		in   []byte
		want string
	}{
		"nsm error":  {nsmErr, "NSM error response: InvalidArgument"},
		"other":      {other, `not an attestation (keys ["DescribePCR"])`},
		"empty":      {empty, "no document"},
		"not cbor":   {[]byte{0xff, 0xff}, "NSM response"},
		"zero bytes": {nil, "NSM response"},
	} {
		if _, err := parseNSMResponse(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tt.want)
		}
	}
}

// The session key depends on the order of the nonces, and an index
// authorization never ends in zero. (That sessionKey and authHMAC agree
// with the specification's formulas, written out longhand in the fake
// TPM, is TestAttest's.)
func TestSessionKey(t *testing.T) {
	salt, nt, nc := []byte("salt"), []byte("tpm"), []byte("caller")
	k := sessionKey(salt, nt, nc)
	if len(k) != 64 {
		t.Fatalf("key of %d bytes", len(k))
	}
	if bytes.Equal(k, sessionKey(salt, nc, nt)) {
		t.Error("nonce order does not matter")
	}
	a, err := randomAuth(bytes.NewReader(make([]byte, 64)))
	if err != nil || len(a) != 64 || a[63] == 0 {
		t.Errorf("randomAuth = %x, %v", a, err)
	}
}

// FuzzParseResponses: no response a TPM (or a device playing one) sends
// makes a parser panic or read past the buffer.
func FuzzParseResponses(f *testing.F) {
	f.Add(unhex(f, "8001 00000010 00000000 80000001 0002"))
	f.Add(unhex(f, "8002 00000019 00000000 80000001 00000002 abcd 0000 00 0000"))
	f.Add(unhex(f, "8001 0000001b 00000000 00 00000006 00000001 0000012c 00000400"))
	f.Add(unhex(f, "8001 0000000a 00000143"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseResponse(ccNVRead, b, 0)
		_, _ = parseResponse(ccCreatePrimary, b, 1)
		_, _, _ = parseCreatePrimary(b)
		_, _ = parseNVBufferMax(b)
		_, _ = parseNVRead(b)
		_, _ = parseNVReadPublic(b)
		_, _, _ = parseStartAuthSession(b)
		if len(b) > 10 {
			_, _ = parseRSAPublic(b[10:])
		}
	})
}

// FuzzParseNSMResponse: whatever the message buffer holds, the NSM
// response parser returns a document or an error.
func FuzzParseNSMResponse(f *testing.F) {
	doc, _ := cbor.Marshal(map[string]map[string][]byte{"Attestation": {"document": {0x84, 1, 2}}})
	nsmErr, _ := cbor.Marshal(map[string]string{"Error": "InvalidArgument"})
	f.Add(doc)
	f.Add(nsmErr)
	f.Add([]byte{0xa1})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseNSMResponse(b)
		if err == nil && len(d) == 0 {
			t.Fatal("no error and no document")
		}
	})
}
