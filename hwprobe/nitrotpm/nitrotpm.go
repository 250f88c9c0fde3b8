// Package nitrotpm asks the NitroTPM of an EC2 instance for an attestation
// document: a COSE_Sign1 signed by the Nitro hypervisor under AWS's Nitro
// PKI, carrying the instance's module id, its NitroTPM PCRs and the nonce
// and user data the caller gave (hwprobe/attest verifies it).
//
// The request goes through the Linux TPM device as AWS's nitro-tpm-attest
// makes it: the NSM request (CBOR) is written to an NV index defined for
// the purpose, AWS's vendor command TPM2_CC 0x20000001 is sent over that
// index in an HMAC session salted with the endorsement key, and the NSM
// response is read back from the index, which is then undefined. The TPM
// commands are encoded here by hand (wire.go), as pure functions.
//
// The tests run the whole exchange against a fake TPM written from the
// TPM 2.0 specification (attest_test.go); no NitroTPM was available to
// run it against a real device, so agreement with the real NitroTPM is
// not tested here.
package nitrotpm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Transport sends one TPM command and returns its response.
type Transport interface {
	Send(cmd []byte) ([]byte, error)
}

var (
	// ErrNoDevice means the machine has no TPM device.
	ErrNoDevice = errors.New("no TPM device")
	// ErrRefused means the TPM or the NSM behind it refused the
	// attestation request: this TPM is not a NitroTPM, or the NitroTPM
	// will not attest.
	ErrRefused = errors.New("the TPM refused the NitroTPM attestation request")
)

// DevicePaths are the TPM devices tried, in order: the kernel's resource
// manager first, the raw device second.
func DevicePaths() []string { return []string{"/dev/tpmrm0", "/dev/tpm0"} }

// Find returns the first of DevicePaths that exists; stat is os.Stat
// outside tests.
func Find(stat func(string) (fs.FileInfo, error)) (string, error) {
	paths := DevicePaths()
	for _, p := range paths {
		if _, err := stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (%s and %s absent)", ErrNoDevice, paths[0], paths[1])
}

// Device is an open TPM character device.
type Device struct{ f *os.File }

// OpenDevice opens the TPM character device at path.
func OpenDevice(path string) (*Device, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open TPM: %w", err)
	}
	return &Device{f: f}, nil
}

// maxResponse bounds one response read from the device.
const maxResponse = 64 << 10

// Send writes the command whole and reads the whole response: the Linux
// TPM driver answers a read with the response of the last command.
func (d *Device) Send(cmd []byte) ([]byte, error) {
	if _, err := d.f.Write(cmd); err != nil {
		return nil, fmt.Errorf("write TPM command: %w", err)
	}
	b := make([]byte, maxResponse)
	n, err := d.f.Read(b)
	if err != nil {
		return nil, fmt.Errorf("read TPM response: %w", err)
	}
	return b[:n], nil
}

// Close closes the device; with /dev/tpmrm0 the kernel then flushes any
// object or session this process left loaded.
func (d *Device) Close() error { return d.f.Close() }

// Attester requests attestation documents from the TPM at Path, opening
// the device for each request.
type Attester struct{ Path string }

// NewAttester finds the machine's TPM device (ErrNoDevice when there is
// none). It does not tell whether the TPM is a NitroTPM: the first
// request does (ErrRefused).
func NewAttester() (*Attester, error) {
	p, err := Find(os.Stat)
	if err != nil {
		return nil, err
	}
	return &Attester{Path: p}, nil
}

// Attest returns a NitroTPM attestation document carrying nonce and
// userData (at most 1024 bytes each).
func (a *Attester) Attest(ctx context.Context, nonce, userData []byte) ([]byte, error) {
	d, err := OpenDevice(a.Path)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return Attest(ctx, d, nonce, userData)
}

// Attest requests a NitroTPM attestation document carrying nonce and
// userData through t.
func Attest(ctx context.Context, t Transport, nonce, userData []byte) ([]byte, error) {
	return request(ctx, t, rand.Reader, nonce, userData)
}

// bufferSize is the message buffer's size: a document without the
// optional fields is almost 5 KiB, and each of them is at most 1 KiB.
const bufferSize = 8192

// nvDefineTries bounds the search for a free NV index.
const nvDefineTries = 256

// exchange is one request: the TPM and what to clean up.
type exchange struct {
	ctx     context.Context
	t       Transport
	cleanup []func() error
}

// do sends cmd unless ctx ended.
func (x *exchange) do(cmd []byte) ([]byte, error) {
	if err := x.ctx.Err(); err != nil {
		return nil, err
	}
	return x.t.Send(cmd)
}

// finish runs the cleanups, last first, and joins their errors to err.
func (x *exchange) finish(err error) error {
	for i := len(x.cleanup) - 1; i >= 0; i-- {
		if cerr := x.cleanup[i](); cerr != nil {
			err = errors.Join(err, fmt.Errorf("clean up: %w", cerr))
		}
	}
	return err
}

// send sends cmd (even once ctx ended: a cleanup) and checks the
// response code of command cc.
func (x *exchange) send(cc uint32, cmd []byte) error {
	b, err := x.t.Send(cmd)
	if err != nil {
		return err
	}
	_, err = parseResponse(cc, b, 0)
	return err
}

func request(ctx context.Context, t Transport, rnd io.Reader, nonce, userData []byte) (doc []byte, err error) {
	req, err := encodeNSMRequest(nonce, userData)
	if err != nil {
		return nil, fmt.Errorf("nitrotpm: %w", err)
	}
	x := &exchange{ctx: ctx, t: t}
	defer func() {
		if err = x.finish(err); err != nil {
			doc, err = nil, fmt.Errorf("nitrotpm: %w", err)
		}
	}()

	chunk, err := nvChunk(x)
	if err != nil {
		return nil, err
	}
	b, err := x.do(createPrimaryEK())
	if err != nil {
		return nil, err
	}
	ek, ekPub, err := parseCreatePrimary(b)
	if err != nil {
		return nil, err
	}
	x.cleanup = append(x.cleanup, func() error { return x.send(ccFlushContext, flushContext(ek)) })

	auth, err := randomAuth(rnd)
	if err != nil {
		return nil, err
	}
	index, err := defineBuffer(x, auth)
	if err != nil {
		return nil, err
	}
	x.cleanup = append(x.cleanup, func() error { return x.send(ccNVUndefineSpace, nvUndefineSpace(index)) })
	for off := 0; off < len(req); off += chunk {
		end := min(off+chunk, len(req))
		if b, err = x.do(nvWrite(index, auth, req[off:end], uint16(off))); err != nil {
			return nil, err
		}
		if _, err = parseResponse(ccNVWrite, b, 0); err != nil {
			return nil, err
		}
	}
	if b, err = x.do(nvReadPublic(index)); err != nil {
		return nil, err
	}
	name, err := parseNVReadPublic(b)
	if err != nil {
		return nil, err
	}

	salt, err := randomBytes(rnd, saltSize)
	if err != nil {
		return nil, err
	}
	encSalt, err := encryptSalt(rnd, ekPub, salt)
	if err != nil {
		return nil, err
	}
	startNonce, err := randomBytes(rnd, digestSize)
	if err != nil {
		return nil, err
	}
	if b, err = x.do(startAuthSession(ek, startNonce, encSalt)); err != nil {
		return nil, err
	}
	session, nonceTPM, err := parseStartAuthSession(b)
	if err != nil {
		return nil, err
	}
	x.cleanup = append(x.cleanup, func() error { return x.send(ccFlushContext, flushContext(session)) })

	key := sessionKey(salt, nonceTPM, startNonce)
	nonceCaller, err := randomBytes(rnd, digestSize)
	if err != nil {
		return nil, err
	}
	mac := authHMAC(key, auth, nsmCPHash(name), nonceCaller, nonceTPM, sessionContinue)
	if b, err = x.do(nsmRequest(index, sessionAuth(session, nonceCaller, sessionContinue, mac))); err != nil {
		return nil, err
	}
	if _, err = parseResponse(ccNSMRequest, b, 0); err != nil {
		var re *ResponseError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return nil, err
	}

	out := make([]byte, 0, bufferSize)
	for off := 0; off < bufferSize; off += chunk {
		n := min(chunk, bufferSize-off)
		if b, err = x.do(nvRead(index, auth, uint16(n), uint16(off))); err != nil {
			return nil, err
		}
		data, err := parseNVRead(b)
		if err != nil {
			return nil, err
		}
		if len(data) != n {
			return nil, fmt.Errorf("TPM2_NV_Read: %w: %d bytes, asked %d", errMalformed, len(data), n)
		}
		out = append(out, data...)
	}
	doc, err = parseNSMResponse(out)
	var ne *NSMError
	if errors.As(err, &ne) {
		return nil, fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return doc, err
}

// nvChunk is how many bytes one NV_Read or NV_Write carries: the TPM's
// TPM_PT_NV_BUFFER_MAX, or 512 when it does not say.
func nvChunk(x *exchange) (int, error) {
	b, err := x.do(getNVBufferMax())
	if err != nil {
		return 0, err
	}
	n, err := parseNVBufferMax(b)
	var re *ResponseError
	switch {
	case errors.As(err, &re):
		n = 0
	case err != nil:
		return 0, err
	}
	if n <= 0 {
		return 512, nil
	}
	return min(n, 4096), nil
}

// defineBuffer defines the message buffer at the first free ordinary NV
// index; defining it is what reserves it, so an index another process
// took in between is skipped.
func defineBuffer(x *exchange, auth []byte) (uint32, error) {
	for index := nvIndexFirst; index < nvIndexFirst+nvDefineTries && index <= nvIndexLast; index++ {
		b, err := x.do(nvDefineSpace(index, bufferSize, auth))
		if err != nil {
			return 0, err
		}
		_, err = parseResponse(ccNVDefineSpace, b, 0)
		var re *ResponseError
		if errors.As(err, &re) && re.Code == rcNVDefined {
			continue
		}
		return index, err
	}
	return 0, fmt.Errorf("no free NV index among the first %d", nvDefineTries)
}
