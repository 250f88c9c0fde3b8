package nitrotpm

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

// fakeTPM plays a NitroTPM from the TPM 2.0 specification, independently
// of the client's encoders where it can: it decodes each command field by
// field, checks the authorizations (the index's password, the salted
// session's HMAC over the index's name), and answers the NSM request by
// writing an attestation document from sign into the index. It is what
// the tests have instead of a real NitroTPM.
type fakeTPM struct {
	t         *testing.T
	ek        *rsa.PrivateKey
	bufMax    uint32
	noVendor  bool                            // answer the vendor command as a TPM without it
	sign      func(nonce, user []byte) []byte // nil: answer an NSM error
	taken     map[uint32]bool                 // NV indices defined by someone else
	nv        map[uint32]*fakeNV
	objects   map[uint32]bool
	sessions  map[uint32]*fakeSession
	next      uint32
	commands  []uint32
	requested []byte // the NSM request read by the vendor command
}

type fakeNV struct {
	auth    []byte
	attrs   uint32
	data    []byte
	written bool
}

type fakeSession struct{ key, nonceTPM []byte }

func newFakeTPM(t *testing.T, ek *rsa.PrivateKey) *fakeTPM {
	return &fakeTPM{t: t, ek: ek, bufMax: 512, taken: map[uint32]bool{}, nv: map[uint32]*fakeNV{},
		objects: map[uint32]bool{}, sessions: map[uint32]*fakeSession{}, next: 1}
}

func rsp(rc uint32, handles []uint32, params []byte, sessions bool) []byte {
	tag := stNoSessions
	if sessions {
		tag = stSessions
	}
	b := buf(nil).u16(tag).u32(0).u32(rc)
	if rc == 0 {
		for _, h := range handles {
			b = b.u32(h)
		}
		if sessions {
			b = b.u32(uint32(len(params)))
			b = append(b, params...)
			b = append(b, buf(nil).tpm2b(nil).u8(0).tpm2b(nil)...) // one response auth (unchecked by the client)
		} else {
			b = append(b, params...)
		}
	}
	binary.BigEndian.PutUint32(b[2:], uint32(len(b)))
	return b
}

// nvName is the name of an index: SHA-512 of its TPMS_NV_PUBLIC, with
// TPMA_NV_WRITTEN once written.
func (n *fakeNV) public(index uint32) []byte {
	attrs := n.attrs
	if n.written {
		attrs |= 1 << 29
	}
	return buf(nil).u32(index).u16(algSHA512).u32(attrs).tpm2b(nil).u16(uint16(len(n.data)))
}

func (n *fakeNV) name(index uint32) []byte {
	h := sha512.Sum512(n.public(index))
	return append(buf(nil).u16(algSHA512), h[:]...)
}

func (f *fakeTPM) Send(cmd []byte) ([]byte, error) {
	f.t.Helper()
	r := reader{b: cmd}
	tag, size, cc := r.u16(), r.u32(), r.u32()
	if r.err || int(size) != len(cmd) {
		f.t.Fatalf("command of %d bytes says %d", len(cmd), size)
	}
	f.commands = append(f.commands, cc)
	nh := map[uint32]int{ccCreatePrimary: 1, ccNVDefineSpace: 1, ccNVUndefineSpace: 2, ccNVWrite: 2, ccNVRead: 2,
		ccNVReadPublic: 1, ccStartAuthSession: 2, ccFlushContext: 1, ccGetCapability: 0, ccNSMRequest: 2}[cc]
	var hs []uint32
	for range nh {
		hs = append(hs, r.u32())
	}
	var auth reader
	if tag == stSessions {
		auth = reader{b: r.bytes(int(r.u32()))}
	}
	p := reader{b: r.rest()}
	password := func() []byte {
		if h := auth.u32(); h != rsPW {
			f.t.Fatalf("TPM2_%s: session %#x, want the password session", commandName(cc), h)
		}
		auth.tpm2b()
		auth.u8()
		return auth.tpm2b()
	}
	switch cc {
	case ccGetCapability:
		if c, prop := p.u32(), p.u32(); c != capTPMProperties || prop != ptNVBufferMax {
			f.t.Fatalf("GetCapability %#x %#x", c, prop)
		}
		return rsp(0, nil, buf(nil).u8(0).u32(capTPMProperties).u32(1).u32(ptNVBufferMax).u32(f.bufMax), false), nil
	case ccCreatePrimary:
		if hs[0] != rhEndorsement || len(password()) != 0 {
			f.t.Fatalf("CreatePrimary under %#x", hs[0])
		}
		p.tpm2b()
		if tmpl := p.tpm2b(); !bytes.Equal(tmpl, ekTemplate()) {
			f.t.Fatalf("CreatePrimary template %x", tmpl)
		}
		h := 0x80000000 + f.next
		f.next++
		f.objects[h] = true
		n := f.ek.N.Bytes()
		pub := buf(nil).u16(algRSA).u16(algSHA256).u32(0x300b2).tpm2b(ekAuthPolicy[:]).u16(algAES).u16(128).u16(algCFB).u16(algNull).u16(2048).u32(0).tpm2b(n)
		return rsp(0, []uint32{h}, buf(nil).tpm2b(pub).tpm2b(nil).tpm2b(nil).u16(0).u32(0).u16(0).tpm2b(nil), true), nil
	case ccNVDefineSpace:
		if hs[0] != rhOwner || len(password()) != 0 {
			f.t.Fatalf("NV_DefineSpace under %#x", hs[0])
		}
		a := p.tpm2b()
		pub := reader{b: p.tpm2b()}
		index, alg, attrs := pub.u32(), pub.u16(), pub.u32()
		pub.tpm2b()
		sz := pub.u16()
		if alg != algSHA512 || attrs != nvAuthRead|nvAuthWrite || pub.err || a[len(a)-1] == 0 {
			f.t.Fatalf("NV_DefineSpace %#x alg %#x attrs %#x", index, alg, attrs)
		}
		if f.taken[index] || f.nv[index] != nil {
			return rsp(rcNVDefined, nil, nil, true), nil
		}
		f.nv[index] = &fakeNV{auth: a, attrs: attrs, data: make([]byte, sz)}
		return rsp(0, nil, nil, true), nil
	case ccNVUndefineSpace:
		if hs[0] != rhOwner || f.nv[hs[1]] == nil {
			return rsp(0x18b, nil, nil, true), nil
		}
		delete(f.nv, hs[1])
		return rsp(0, nil, nil, true), nil
	case ccNVWrite, ccNVRead:
		n := f.nv[hs[1]]
		if hs[0] != hs[1] || n == nil || !bytes.Equal(password(), n.auth) {
			return rsp(0x9a2, nil, nil, true), nil // TPM_RC_BAD_AUTH
		}
		if cc == ccNVWrite {
			data, off := p.tpm2b(), p.u16()
			if len(data) > int(f.bufMax) || int(off)+len(data) > len(n.data) {
				return rsp(0x1d5, nil, nil, true), nil // TPM_RC_SIZE
			}
			copy(n.data[off:], data)
			n.written = true
			return rsp(0, nil, nil, true), nil
		}
		sz, off := p.u16(), p.u16()
		if !n.written || sz > uint16(f.bufMax) || int(off)+int(sz) > len(n.data) {
			return rsp(0x1d5, nil, nil, true), nil
		}
		return rsp(0, nil, buf(nil).tpm2b(n.data[off:off+sz]), true), nil
	case ccNVReadPublic:
		n := f.nv[hs[0]]
		if n == nil {
			return rsp(0x18b, nil, nil, false), nil
		}
		return rsp(0, nil, buf(nil).tpm2b(n.public(hs[0])).tpm2b(n.name(hs[0])), false), nil
	case ccStartAuthSession:
		nonceCaller, encSalt, typ, sym, hash := p.tpm2b(), p.tpm2b(), p.u8(), p.u16(), p.u16()
		if !f.objects[hs[0]] || hs[1] != rhNull || typ != seHMAC || sym != algNull || hash != algSHA512 || len(nonceCaller) != 64 {
			f.t.Fatalf("StartAuthSession %#x %#x type %d sym %#x hash %#x", hs[0], hs[1], typ, sym, hash)
		}
		salt, err := rsa.DecryptOAEP(sha256.New(), nil, f.ek, encSalt, []byte("SECRET\x00"))
		if err != nil {
			return rsp(0x2a1, nil, nil, false), nil // TPM_RC_VALUE
		}
		nonceTPM := make([]byte, 64)
		_, _ = rand.Read(nonceTPM)
		// KDFa(SHA512, salt, "ATH", nonceTPM, nonceCaller, 512), written
		// out from Part 1, 11.4.10.2.
		m := hmac.New(sha512.New, salt)
		m.Write(append(append(append([]byte{0, 0, 0, 1}, "ATH\x00"...), nonceTPM...), nonceCaller...))
		m.Write([]byte{0, 0, 2, 0})
		h := 0x02000000 + f.next
		f.next++
		f.sessions[h] = &fakeSession{key: m.Sum(nil), nonceTPM: nonceTPM}
		return rsp(0, []uint32{h}, buf(nil).tpm2b(nonceTPM), false), nil
	case ccFlushContext:
		switch {
		case f.objects[hs[0]]:
			delete(f.objects, hs[0])
		case f.sessions[hs[0]] != nil:
			delete(f.sessions, hs[0])
		default:
			return rsp(0x18b, nil, nil, false), nil
		}
		return rsp(0, nil, nil, false), nil
	case ccNSMRequest:
		if f.noVendor {
			return rsp(rcCommandCode, nil, nil, true), nil
		}
		n := f.nv[hs[1]]
		sh := auth.u32()
		s := f.sessions[sh]
		nonceCaller, attrs, mac := auth.tpm2b(), auth.u8(), auth.tpm2b()
		if n == nil || s == nil || hs[0] != hs[1] || auth.err {
			f.t.Fatalf("NSM request over %#x in session %#x", hs[1], sh)
		}
		cp := sha512.New()
		cp.Write(buf(nil).u32(ccNSMRequest))
		cp.Write(n.name(hs[1]))
		cp.Write(n.name(hs[1]))
		m := hmac.New(sha512.New, append(append([]byte{}, s.key...), n.auth...))
		m.Write(cp.Sum(nil))
		m.Write(nonceCaller)
		m.Write(s.nonceTPM)
		m.Write([]byte{attrs})
		if !hmac.Equal(m.Sum(nil), mac) {
			return rsp(0x98e, nil, nil, true), nil // TPM_RC_AUTH_FAIL (session 1)
		}
		var req map[string]map[string]any
		rest, err := cbor.UnmarshalFirst(n.data, &req)
		if err != nil {
			f.t.Fatalf("NSM request: %v", err)
		}
		f.requested = bytes.Clone(n.data[:len(n.data)-len(rest)])
		att := req["Attestation"]
		var out []byte
		if f.sign == nil {
			out, _ = cbor.Marshal(map[string]string{"Error": "InvalidArgument"})
		} else {
			nonce, _ := att["nonce"].([]byte)
			user, _ := att["user_data"].([]byte)
			out, _ = cbor.Marshal(map[string]map[string][]byte{"Attestation": {"document": f.sign(nonce, user)}})
		}
		if len(out) > len(n.data) {
			f.t.Fatalf("response of %d bytes", len(out))
		}
		copy(n.data, out)
		return rsp(0, nil, nil, true), nil
	}
	f.t.Fatalf("unexpected command %#x", cc)
	return nil, fmt.Errorf("unexpected command")
}
