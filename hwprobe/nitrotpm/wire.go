package nitrotpm

import (
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
)

// TPM 2.0 constants (TPM 2.0 Library, Part 2: Structures) for the few
// commands an attestation request needs.
const (
	stNoSessions uint16 = 0x8001
	stSessions   uint16 = 0x8002

	ccNVUndefineSpace  uint32 = 0x00000122
	ccNVDefineSpace    uint32 = 0x0000012A
	ccCreatePrimary    uint32 = 0x00000131
	ccNVWrite          uint32 = 0x00000137
	ccNVRead           uint32 = 0x0000014E
	ccFlushContext     uint32 = 0x00000165
	ccNVReadPublic     uint32 = 0x00000169
	ccStartAuthSession uint32 = 0x00000176
	ccGetCapability    uint32 = 0x0000017A
	// ccNSMRequest is AWS's vendor command: the Nitro hypervisor reads an
	// NSM request from the NV index given and writes its response there.
	ccNSMRequest uint32 = 0x20000001

	rhOwner       uint32 = 0x40000001
	rhNull        uint32 = 0x40000007
	rsPW          uint32 = 0x40000009 // the password session
	rhEndorsement uint32 = 0x4000000B

	algRSA    uint16 = 0x0001
	algAES    uint16 = 0x0006
	algSHA256 uint16 = 0x000B
	algSHA512 uint16 = 0x000D
	algNull   uint16 = 0x0010
	algCFB    uint16 = 0x0043

	seHMAC uint8 = 0x00

	capTPMProperties uint32 = 0x00000006
	ptNVBufferMax    uint32 = 0x0000012C

	nvAuthWrite uint32 = 1 << 2
	nvAuthRead  uint32 = 1 << 18

	nvIndexFirst uint32 = 0x01000000
	nvIndexLast  uint32 = 0x01FFFFFF

	rcSuccess     uint32 = 0x000
	rcCommandCode uint32 = 0x143 // the TPM does not know the command
	rcNVDefined   uint32 = 0x14C // the NV index is defined already

	sessionContinue uint8 = 0x01 // TPMA_SESSION continueSession

	headerSize = 10
)

// ResponseError is a TPM's non-zero response code to a command.
type ResponseError struct {
	Command uint32
	Code    uint32
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("TPM2_%s: response code %#x", commandName(e.Command), e.Code)
}

func commandName(cc uint32) string {
	switch cc {
	case ccNVUndefineSpace:
		return "NV_UndefineSpace"
	case ccNVDefineSpace:
		return "NV_DefineSpace"
	case ccCreatePrimary:
		return "CreatePrimary"
	case ccNVWrite:
		return "NV_Write"
	case ccNVRead:
		return "NV_Read"
	case ccFlushContext:
		return "FlushContext"
	case ccNVReadPublic:
		return "NV_ReadPublic"
	case ccStartAuthSession:
		return "StartAuthSession"
	case ccGetCapability:
		return "GetCapability"
	case ccNSMRequest:
		return "AWS_NSM_REQUEST"
	}
	return fmt.Sprintf("%#08x", cc)
}

// errMalformed means a response does not have the TPM 2.0 shape.
var errMalformed = errors.New("malformed TPM response")

// buf builds a command.
type buf []byte

func (b buf) u8(v uint8) buf     { return append(b, v) }
func (b buf) u16(v uint16) buf   { return binary.BigEndian.AppendUint16(b, v) }
func (b buf) u32(v uint32) buf   { return binary.BigEndian.AppendUint32(b, v) }
func (b buf) tpm2b(v []byte) buf { return append(b.u16(uint16(len(v))), v...) }

// command is a whole command: header (tag, size, code), the handles, the
// authorization area when there is one (tag TPM_ST_SESSIONS), then the
// parameters.
func command(cc uint32, handles []uint32, auth []byte, params []byte) []byte {
	tag := stNoSessions
	if auth != nil {
		tag = stSessions
	}
	b := buf(nil).u16(tag).u32(0).u32(cc)
	for _, h := range handles {
		b = b.u32(h)
	}
	if auth != nil {
		b = b.u32(uint32(len(auth)))
		b = append(b, auth...)
	}
	b = append(b, params...)
	binary.BigEndian.PutUint32(b[2:6], uint32(len(b)))
	return b
}

// sessionAuth is one command authorization (TPMS_AUTH_COMMAND).
func sessionAuth(handle uint32, nonce []byte, attrs uint8, hmac []byte) []byte {
	return buf(nil).u32(handle).tpm2b(nonce).u8(attrs).tpm2b(hmac)
}

// passwordAuth authorizes with a password (the empty one for a hierarchy
// without one).
func passwordAuth(password []byte) []byte { return sessionAuth(rsPW, nil, 0, password) }

// response is a parsed response: its handles and its parameter area.
type response struct {
	handles []uint32
	params  []byte
}

// parseResponse checks a response to command cc, which returns nHandles
// handles, and splits it. A non-zero response code is a *ResponseError.
// With tag TPM_ST_SESSIONS the parameters are sized (parameterSize) and
// the response authorizations that follow them are not read.
func parseResponse(cc uint32, b []byte, nHandles int) (response, error) {
	if len(b) < headerSize {
		return response{}, fmt.Errorf("TPM2_%s: %w: %d bytes", commandName(cc), errMalformed, len(b))
	}
	tag := binary.BigEndian.Uint16(b)
	size := binary.BigEndian.Uint32(b[2:])
	rc := binary.BigEndian.Uint32(b[6:])
	if uint64(size) != uint64(len(b)) {
		return response{}, fmt.Errorf("TPM2_%s: %w: size field %d, %d bytes read", commandName(cc), errMalformed, size, len(b))
	}
	if rc != rcSuccess {
		return response{}, &ResponseError{Command: cc, Code: rc}
	}
	if tag != stNoSessions && tag != stSessions {
		return response{}, fmt.Errorf("TPM2_%s: %w: tag %#x", commandName(cc), errMalformed, tag)
	}
	r := reader{b: b[headerSize:]}
	var out response
	for range nHandles {
		out.handles = append(out.handles, r.u32())
	}
	if tag == stSessions {
		n := r.u32()
		out.params = r.bytes(int(n))
	} else {
		out.params = r.rest()
	}
	if r.err {
		return response{}, fmt.Errorf("TPM2_%s: %w: truncated", commandName(cc), errMalformed)
	}
	return out, nil
}

// reader reads a response's fields; a read past the end sets err and
// returns zeros.
type reader struct {
	b   []byte
	err bool
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.err, r.b = true, nil
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8 {
	if v := r.bytes(1); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if v := r.bytes(2); v != nil {
		return binary.BigEndian.Uint16(v)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if v := r.bytes(4); v != nil {
		return binary.BigEndian.Uint32(v)
	}
	return 0
}

func (r *reader) tpm2b() []byte { return r.bytes(int(r.u16())) }

func (r *reader) rest() []byte {
	v := r.b
	r.b = nil
	return v
}

// ekAuthPolicy is PolicySecret(TPM_RH_ENDORSEMENT) with SHA-256: the
// authPolicy of the TCG EK Credential Profile's RSA 2048 template (L-1).
var ekAuthPolicy = [32]byte{
	0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xB3, 0xF8, 0x1A, 0x90, 0xCC, 0x8D, 0x46, 0xA5, 0xD7, 0x24,
	0xFD, 0x52, 0xD7, 0x6E, 0x06, 0x52, 0x0B, 0x64, 0xF2, 0xA1, 0xDA, 0x1B, 0x33, 0x14, 0x69, 0xAA,
}

// ekTemplate is the TCG EK Credential Profile's default RSA 2048 template
// (L-1) as a TPMT_PUBLIC: the endorsement key that salts the session the
// NSM request is authorized in, as AWS's nitro-tpm-attest does.
func ekTemplate() []byte {
	const attrs = 1<<1 | 1<<4 | 1<<5 | 1<<7 | 1<<16 | 1<<17 // fixedTPM fixedParent sensitiveDataOrigin adminWithPolicy restricted decrypt
	return buf(nil).u16(algRSA).u16(algSHA256).u32(attrs).tpm2b(ekAuthPolicy[:]).
		u16(algAES).u16(128).u16(algCFB). // symmetric
		u16(algNull).                     // scheme
		u16(2048).u32(0).                 // key bits, default exponent
		tpm2b(make([]byte, 256))          // unique
}

// createPrimaryEK is TPM2_CreatePrimary of the EK in the endorsement
// hierarchy (empty authorization).
func createPrimaryEK() []byte {
	params := buf(nil).
		tpm2b(buf(nil).tpm2b(nil).tpm2b(nil)). // inSensitive: no userAuth, no data
		tpm2b(ekTemplate()).
		tpm2b(nil). // outsideInfo
		u32(0)      // creationPCR: none
	return command(ccCreatePrimary, []uint32{rhEndorsement}, passwordAuth(nil), params)
}

// parseCreatePrimary returns the key's handle and RSA public key.
func parseCreatePrimary(b []byte) (uint32, *rsa.PublicKey, error) {
	r, err := parseResponse(ccCreatePrimary, b, 1)
	if err != nil {
		return 0, nil, err
	}
	rd := reader{b: r.params}
	pub, err := parseRSAPublic(rd.tpm2b())
	if rd.err {
		return 0, nil, fmt.Errorf("TPM2_CreatePrimary: %w: truncated outPublic", errMalformed)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("TPM2_CreatePrimary: %w", err)
	}
	return r.handles[0], pub, nil
}

// parseRSAPublic reads an RSA TPMT_PUBLIC.
func parseRSAPublic(b []byte) (*rsa.PublicKey, error) {
	r := reader{b: b}
	if typ := r.u16(); typ != algRSA && !r.err {
		return nil, fmt.Errorf("%w: public area of type %#x, want RSA", errMalformed, typ)
	}
	r.u16() // nameAlg
	r.u32() // objectAttributes
	r.tpm2b()
	if sym := r.u16(); sym != algNull {
		r.u16() // key bits
		r.u16() // mode
	}
	if scheme := r.u16(); scheme != algNull {
		r.u16() // hash
	}
	bits := r.u16()
	exp := r.u32()
	n := r.tpm2b()
	if r.err {
		return nil, fmt.Errorf("%w: truncated RSA public area", errMalformed)
	}
	if bits < 1024 || len(n) != int(bits)/8 || n[0] == 0 {
		return nil, fmt.Errorf("%w: RSA modulus of %d bytes for %d bits", errMalformed, len(n), bits)
	}
	if exp == 0 {
		exp = 65537
	}
	if exp > 1<<31-1 || exp%2 == 0 || exp < 3 {
		return nil, fmt.Errorf("%w: RSA exponent %d", errMalformed, exp)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(exp)}, nil
}

// getNVBufferMax is TPM2_GetCapability of TPM_PT_NV_BUFFER_MAX: the most
// bytes one NV_Read or NV_Write carries.
func getNVBufferMax() []byte {
	return command(ccGetCapability, nil, nil, buf(nil).u32(capTPMProperties).u32(ptNVBufferMax).u32(1))
}

// parseNVBufferMax returns TPM_PT_NV_BUFFER_MAX, or 0 when the TPM did
// not report it.
func parseNVBufferMax(b []byte) (int, error) {
	r, err := parseResponse(ccGetCapability, b, 0)
	if err != nil {
		return 0, err
	}
	rd := reader{b: r.params}
	rd.u8() // moreData
	if c := rd.u32(); c != capTPMProperties && !rd.err {
		return 0, fmt.Errorf("TPM2_GetCapability: %w: capability %#x", errMalformed, c)
	}
	n := rd.u32()
	for i := uint32(0); i < n && !rd.err; i++ {
		if p, v := rd.u32(), rd.u32(); p == ptNVBufferMax && !rd.err {
			return int(v), nil
		}
	}
	if rd.err {
		return 0, fmt.Errorf("TPM2_GetCapability: %w: truncated", errMalformed)
	}
	return 0, nil
}

// nvPublic is a TPMS_NV_PUBLIC for the message buffer: SHA-512 names,
// read and written with the index's own authorization.
func nvPublic(index uint32, size uint16) []byte {
	return buf(nil).u32(index).u16(algSHA512).u32(nvAuthRead | nvAuthWrite).tpm2b(nil).u16(size)
}

// nvDefineSpace defines the message buffer under the owner hierarchy
// (empty authorization), with auth as the index's authorization value.
func nvDefineSpace(index uint32, size uint16, auth []byte) []byte {
	return command(ccNVDefineSpace, []uint32{rhOwner}, passwordAuth(nil), buf(nil).tpm2b(auth).tpm2b(nvPublic(index, size)))
}

func nvUndefineSpace(index uint32) []byte {
	return command(ccNVUndefineSpace, []uint32{rhOwner, index}, passwordAuth(nil), nil)
}

func nvWrite(index uint32, auth []byte, data []byte, offset uint16) []byte {
	return command(ccNVWrite, []uint32{index, index}, passwordAuth(auth), buf(nil).tpm2b(data).u16(offset))
}

func nvRead(index uint32, auth []byte, size, offset uint16) []byte {
	return command(ccNVRead, []uint32{index, index}, passwordAuth(auth), buf(nil).u16(size).u16(offset))
}

// parseNVRead returns the data read.
func parseNVRead(b []byte) ([]byte, error) {
	r, err := parseResponse(ccNVRead, b, 0)
	if err != nil {
		return nil, err
	}
	rd := reader{b: r.params}
	data := rd.tpm2b()
	if rd.err {
		return nil, fmt.Errorf("TPM2_NV_Read: %w: truncated", errMalformed)
	}
	return data, nil
}

func nvReadPublic(index uint32) []byte { return command(ccNVReadPublic, []uint32{index}, nil, nil) }

// parseNVReadPublic returns the index's name, which authorizations over it
// hash (it changes once the index is written).
func parseNVReadPublic(b []byte) ([]byte, error) {
	r, err := parseResponse(ccNVReadPublic, b, 0)
	if err != nil {
		return nil, err
	}
	rd := reader{b: r.params}
	rd.tpm2b() // nvPublic
	name := rd.tpm2b()
	if rd.err || len(name) != 2+64 || binary.BigEndian.Uint16(name) != algSHA512 {
		return nil, fmt.Errorf("TPM2_NV_ReadPublic: %w: name %x", errMalformed, name)
	}
	return name, nil
}

// startAuthSession starts an HMAC session with SHA-512, salted by the key
// at saltKey, unbound, without parameter encryption.
func startAuthSession(saltKey uint32, nonceCaller, encryptedSalt []byte) []byte {
	params := buf(nil).tpm2b(nonceCaller).tpm2b(encryptedSalt).u8(seHMAC).u16(algNull).u16(algSHA512)
	return command(ccStartAuthSession, []uint32{saltKey, rhNull}, nil, params)
}

// parseStartAuthSession returns the session handle and the TPM's nonce.
func parseStartAuthSession(b []byte) (uint32, []byte, error) {
	r, err := parseResponse(ccStartAuthSession, b, 1)
	if err != nil {
		return 0, nil, err
	}
	rd := reader{b: r.params}
	nonce := rd.tpm2b()
	if rd.err || len(nonce) < 16 {
		return 0, nil, fmt.Errorf("TPM2_StartAuthSession: %w: nonce of %d bytes", errMalformed, len(nonce))
	}
	return r.handles[0], nonce, nil
}

func flushContext(h uint32) []byte { return command(ccFlushContext, []uint32{h}, nil, nil) }

// nsmRequest is AWS's vendor command: the NSM request in the index, the
// index's own authorization in session auth.
func nsmRequest(index uint32, auth []byte) []byte {
	return command(ccNSMRequest, []uint32{index, index}, auth, nil)
}
