package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/mlplatform/mlplatform/hwprobe/attest"
	"github.com/mlplatform/mlplatform/hwprobe/attest/attesttest"
	"github.com/mlplatform/mlplatform/hwprobe/nitrotpm"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/report"
)

const (
	serveInstance = "i-0123456789abcdef0"
	challengeA    = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	challengeB    = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// tagIMDS is a test double of the instance metadata service (IMDSv2)
// serving the instance id and, when set, the challenge tag.
type tagIMDS struct {
	mu   sync.Mutex
	tag  *string
	gets int // reads of the tag
}

func (m *tagIMDS) set(v *string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tag = v
}

func (m *tagIMDS) reads() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gets
}

func (m *tagIMDS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
		w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
		_, _ = io.WriteString(w, "token-1")
		return
	}
	if r.Header.Get("X-Aws-Ec2-Metadata-Token") != "token-1" {
		http.Error(w, "no token", http.StatusUnauthorized)
		return
	}
	switch r.URL.Path {
	case "/latest/meta-data/instance-id":
		_, _ = io.WriteString(w, serveInstance)
	case "/latest/meta-data/tags/instance/" + report.ChallengeTag:
		m.gets++
		if m.tag == nil {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, *m.tag)
	default:
		http.NotFound(w, r)
	}
}

func startIMDS(t *testing.T, tag *string) *tagIMDS {
	t.Helper()
	m := &tagIMDS{tag: tag}
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	return m
}

// objectStore is a fake S3 bucket in me-central-1 that keeps the objects
// in the order written, refuses a key written already as S3 does a
// conditional write, and fails the next failPuts writes.
type objectStore struct {
	mu       sync.Mutex
	keys     []string
	objects  map[string]*s3.PutObjectInput
	bodies   map[string][]byte
	failPuts int
}

func newStore() *objectStore {
	return &objectStore{objects: map[string]*s3.PutObjectInput{}, bodies: map[string][]byte{}}
}

func (o *objectStore) GetBucketLocation(context.Context, *s3.GetBucketLocationInput, ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error) {
	return &s3.GetBucketLocationOutput{LocationConstraint: types.BucketLocationConstraint("me-central-1")}, nil
}

func (o *objectStore) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := aws.ToString(in.Key)
	if o.failPuts > 0 {
		o.failPuts--
		return nil, &smithy.GenericAPIError{Code: "SlowDown", Message: "Please reduce your request rate."}
	}
	if _, ok := o.objects[key]; ok && aws.ToString(in.IfNoneMatch) == "*" {
		return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"}
	}
	b, _ := io.ReadAll(in.Body)
	o.keys = append(o.keys, key)
	o.objects[key] = in
	o.bodies[key] = b
	return &s3.PutObjectOutput{}, nil
}

func (o *objectStore) written() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.keys)
}

func (o *objectStore) body(key string) []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bodies[key]
}

// syncBuffer is an io.Writer the daemon writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// signerAttester attests with a test signer for serveInstance.
type signerAttester struct{ s *attesttest.Signer }

func (a signerAttester) Attest(_ context.Context, nonce, userData []byte) ([]byte, error) {
	return a.s.Sign(attesttest.Document{ModuleID: serveInstance + "-tpm0000000000000000", Nonce: nonce, UserData: userData})
}

// attesterFunc attests with a function.
type attesterFunc func(ctx context.Context, nonce, userData []byte) ([]byte, error)

func (f attesterFunc) Attest(ctx context.Context, nonce, userData []byte) ([]byte, error) {
	return f(ctx, nonce, userData)
}

// serveFiles writes a profile and a report file of a node on EC2 in
// me-central-1 and returns their paths.
func serveFiles(t *testing.T) (prof, rep string) {
	t.Helper()
	dir := t.TempDir()
	prof = filepath.Join(dir, "profile.hcl")
	if err := os.WriteFile(prof, []byte("host {\n  region = \"me-central-1\"\n}\nreport {\n  s3_uri = \"s3://reports/hw/\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inv := &probe.Inventory{Schema: probe.SchemaVersion, Hostname: "node-a",
		Host: probe.Host{OnEC2: true, Region: "me-central-1", InstanceID: serveInstance, AccountID: "111122223333"}}
	r := report.New(inv, nil, report.Options{Version: "test", Now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	rep = filepath.Join(dir, "report.json")
	if err := os.WriteFile(rep, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return prof, rep
}

// serveApp is an app whose S3 is store, whose attester is att (nil: none,
// for the reason given), and whose clock moves a minute at each reading.
func serveApp(store *objectStore, att attester, stdout, stderr io.Writer) *app {
	a := newApp(stdout, stderr, func(string) string { return "" })
	a.newS3 = func(context.Context, string, bool) (report.S3, error) { return store, nil }
	a.newAttester = func(context.Context) (attester, error) {
		if att == nil {
			return nil, fmt.Errorf("%w (/dev/tpmrm0 and /dev/tpm0 absent)", nitrotpm.ErrNoDevice)
		}
		return att, nil
	}
	var mu sync.Mutex
	clock := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	a.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Minute)
		return clock
	}
	return a
}

func runServe(ctx context.Context, a *app, stderr io.Writer, args ...string) int {
	return exitStatus(run(ctx, append([]string{"report", "serve"}, args...), a), stderr)
}

func ptr(s string) *string { return &s }

// --once answers the tag's challenge: the attestation document first,
// then the report it vouches for, which carries the challenge; the
// document verifies with the challenge as nonce and the SHA-256 of the
// report's bytes, as stored, as user data.
func TestServeOnceAttested(t *testing.T) {
	startIMDS(t, ptr(challengeB+"\n"))
	prof, rep := serveFiles(t)
	signer, err := attesttest.New(attesttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := newStore()
	var stdout, stderr syncBuffer
	a := serveApp(store, signerAttester{signer}, &stdout, &stderr)
	if code := runServe(context.Background(), a, &stderr, "--profile", prof, "--report", rep, "--once"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	const key = "hw/" + serveInstance + "/20260301T100100Z.json"
	if got, want := store.written(), []string{key + ".nitrotpm", key}; !slices.Equal(got, want) {
		t.Fatalf("written %v, want %v", got, want)
	}
	if got := strings.TrimSpace(stdout.String()); got != "s3://reports/"+key {
		t.Errorf("stdout %q", got)
	}
	doc, body := store.body(key+".nitrotpm"), store.body(key)
	var back report.Report
	if err := json.Unmarshal(body, &back); err != nil {
		t.Fatal(err)
	}
	if back.Challenge != challengeB || !back.GeneratedAt.Equal(time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC)) || back.Inventory.Hostname != "node-a" {
		t.Errorf("report: challenge %q at %s", back.Challenge, back.GeneratedAt)
	}
	if want, _ := report.Encode(back); !bytes.Equal(body, want) {
		t.Error("the report is not written as Publish writes it")
	}
	nonce, _ := hex.DecodeString(challengeB)
	sum := sha256.Sum256(body)
	if _, err := attest.Verify(doc, attest.VerifyOptions{Roots: signer.Roots(), NitroTPM: true, InstanceID: serveInstance, Nonce: nonce, UserData: sum[:]}); err != nil {
		t.Fatalf("the attestation does not verify: %v", err)
	}
	for key, in := range map[string]*s3.PutObjectInput{key + ".nitrotpm": store.objects[key+".nitrotpm"], key: store.objects[key]} {
		if in.ServerSideEncryption != types.ServerSideEncryptionAwsKms || aws.ToString(in.IfNoneMatch) != "*" || aws.ToString(in.ExpectedBucketOwner) != "111122223333" {
			t.Errorf("%s: sse %q If-None-Match %v owner %v", key, in.ServerSideEncryption, in.IfNoneMatch, in.ExpectedBucketOwner)
		}
	}
	if ct := aws.ToString(store.objects[key+".nitrotpm"].ContentType); ct != "application/cose" {
		t.Errorf("content type %q", ct)
	}
}

// Without an attester only the report is written, and the reason is
// logged once.
func TestServeOnceUnattested(t *testing.T) {
	for _, tt := range []struct {
		name string
		att  attester
		why  string
	}{
		{"no TPM", nil, "not hardware-attested: no TPM device (/dev/tpmrm0 and /dev/tpm0 absent)"},
		{"TPM refuses", attesterFunc(func(context.Context, []byte, []byte) ([]byte, error) {
			return nil, fmt.Errorf("nitrotpm: %w: TPM2_AWS_NSM_REQUEST: response code 0x143", nitrotpm.ErrRefused)
		}), "not hardware-attested: nitrotpm: the TPM refused the NitroTPM attestation request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			startIMDS(t, ptr(challengeA))
			prof, rep := serveFiles(t)
			store := newStore()
			var stdout, stderr syncBuffer
			a := serveApp(store, tt.att, &stdout, &stderr)
			if code := runServe(context.Background(), a, &stderr, "--profile", prof, "--report", rep, "--once"); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if got := store.written(); len(got) != 1 || !strings.HasSuffix(got[0], ".json") {
				t.Fatalf("written %v, want the report alone", got)
			}
			if strings.Count(stderr.String(), "not hardware-attested") != 1 || !strings.Contains(stderr.String(), tt.why) {
				t.Errorf("stderr:\n%s", stderr.String())
			}
		})
	}
}

func TestServeOnceNoChallenge(t *testing.T) {
	for _, tt := range []struct {
		name string
		tag  *string
		want string
	}{
		{"tag not set", nil, "no challenge to answer: no challenge: instance tag mlplatform-hwprobe-challenge is not set"},
		{"tag not a challenge", ptr("please-attest"), "instance tag mlplatform-hwprobe-challenge ignored: challenge \"please-attest\": 13 characters"},
		{"tag not hex", ptr(strings.Repeat("g", 64)), "not hex"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			startIMDS(t, tt.tag)
			prof, rep := serveFiles(t)
			store := newStore()
			var stdout, stderr syncBuffer
			a := serveApp(store, nil, &stdout, &stderr)
			if code := runServe(context.Background(), a, &stderr, "--profile", prof, "--report", rep, "--once"); code != 2 || !strings.Contains(stderr.String(), tt.want) {
				t.Fatalf("exit %d, want 2 with %q:\n%s", code, tt.want, stderr.String())
			}
			if got := store.written(); len(got) != 0 {
				t.Errorf("written %v", got)
			}
		})
	}
}

func TestServeFlags(t *testing.T) {
	prof, rep := serveFiles(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--report", rep}, "--profile is required"},
		{[]string{"--profile", prof}, "--report is required"},
		{[]string{"--profile", prof, "--report", rep, "--interval", "0s"}, "--interval must be positive"},
		{[]string{"--profile", prof, "--report", prof}, "is not a hwprobe.mlplatform.io/report/v1 report"},
	} {
		var stdout, stderr syncBuffer
		a := serveApp(newStore(), nil, &stdout, &stderr)
		if code := runServe(context.Background(), a, &stderr, tt.args...); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, want 2 with %q:\n%s", tt.args, code, tt.want, stderr.String())
		}
	}
	var stdout, stderr syncBuffer
	a := serveApp(newStore(), nil, &stdout, &stderr)
	if code := runServe(context.Background(), a, &stderr, "--help"); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, w := range []string{"Usage:", "--interval", "--once", report.ChallengeTag, ".nitrotpm", "Exit codes", "Example:"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("--help lacks %q:\n%s", w, stdout.String())
		}
	}
}

// waitFor polls cond until it holds, or fails the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The daemon: nothing while there is no tag; a challenge answered once,
// however often it is read again; a bad tag ignored with a logged line;
// a changed challenge answered again, after a failed write retried at the
// next interval; exit 0 when its context ends.
func TestServeDaemon(t *testing.T) {
	m := startIMDS(t, nil)
	prof, rep := serveFiles(t)
	signer, err := attesttest.New(attesttest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := newStore()
	var stdout, stderr syncBuffer
	a := serveApp(store, signerAttester{signer}, &stdout, &stderr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- runServe(ctx, a, &stderr, "--profile", prof, "--report", rep, "--interval", "10ms") }()

	// reads waits for n more reads of the tag: n intervals.
	reads := func(n int) {
		t.Helper()
		from := m.reads()
		waitFor(t, fmt.Sprintf("%d reads of the tag", n), func() bool { return m.reads() >= from+n })
	}
	reports := func() (n int) {
		for _, k := range store.written() {
			if strings.HasSuffix(k, ".json") {
				n++
			}
		}
		return n
	}

	reads(3)
	if got := store.written(); len(got) != 0 {
		t.Fatalf("written without a challenge: %v", got)
	}
	m.set(ptr(challengeA))
	waitFor(t, "the answer to challenge A", func() bool { return reports() == 1 })
	reads(5)
	if n := reports(); n != 1 {
		t.Fatalf("challenge A answered %d times", n)
	}

	m.set(ptr("not-a-challenge"))
	reads(3)
	if n := reports(); n != 1 || strings.Count(stderr.String(), "ignored: challenge \"not-a-challenge\"") != 1 {
		t.Fatalf("%d reports; the bad tag logged %d times:\n%s", n, strings.Count(stderr.String(), "not-a-challenge"), stderr.String())
	}

	store.mu.Lock()
	store.failPuts = 1
	store.mu.Unlock()
	m.set(ptr(challengeB))
	waitFor(t, "the answer to challenge B", func() bool { return reports() == 2 })
	reads(3)
	if n := reports(); n != 2 {
		t.Fatalf("%d reports, want 2", n)
	}
	if !strings.Contains(stderr.String(), "SlowDown") || !strings.Contains(stderr.String(), "trying again at the next interval") {
		t.Errorf("the failed write is not logged:\n%s", stderr.String())
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after the context ended: %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not stop when its context ended")
	}

	keys := store.written()
	var challenges []string
	for _, k := range keys {
		if !strings.HasSuffix(k, ".json") {
			continue
		}
		var r report.Report
		if err := json.Unmarshal(store.body(k), &r); err != nil {
			t.Fatal(err)
		}
		challenges = append(challenges, r.Challenge)
		if !slices.Contains(keys, k+".nitrotpm") || slices.Index(keys, k+".nitrotpm") > slices.Index(keys, k) {
			t.Errorf("%s has no attestation written before it: %v", k, keys)
		}
		nonce, _ := hex.DecodeString(r.Challenge)
		sum := sha256.Sum256(store.body(k))
		if _, err := attest.Verify(store.body(k+".nitrotpm"), attest.VerifyOptions{Roots: signer.Roots(), NitroTPM: true, Nonce: nonce, UserData: sum[:]}); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	if !slices.Equal(challenges, []string{challengeA, challengeB}) {
		t.Errorf("challenges answered %v", challenges)
	}
}

// An attestation that fails is tried again at the next interval, without
// a report; after maxAttestFailures in a row the node answers unattested.
func TestServeAttestationFails(t *testing.T) {
	startIMDS(t, ptr(challengeA))
	prof, rep := serveFiles(t)
	store := newStore()
	var calls int
	var stdout, stderr syncBuffer
	a := serveApp(store, attesterFunc(func(context.Context, []byte, []byte) ([]byte, error) {
		calls++
		return nil, errors.New("TPM2_CreatePrimary: response code 0x922")
	}), &stdout, &stderr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- runServe(ctx, a, &stderr, "--profile", prof, "--report", rep, "--interval", "10ms") }()
	waitFor(t, "the unattested report", func() bool { return len(store.written()) == 1 })
	cancel()
	<-done
	if calls != maxAttestFailures || !strings.Contains(stderr.String(), "not hardware-attested: 3 attestation requests failed in a row, the last: TPM2_CreatePrimary") {
		t.Errorf("%d attestation requests:\n%s", calls, stderr.String())
	}
}
