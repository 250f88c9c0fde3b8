package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    options
		wantErr error
	}{
		{name: "defaults", want: options{machine: "host"}},
		{name: "all", args: []string{"--port", "4566", "--ready-file", "/tmp/x", "--quiet", "--moto-log"},
			want: options{port: 4566, readyFile: "/tmp/x", quiet: true, motoLog: true, machine: "host"}},
		{name: "node stand-in", args: []string{"--play-nodes", "demo-train, other", "--hwprobe", "/bin/hwprobe", "--signer-cert", "cert.pem"},
			want: options{playNodes: "demo-train, other", hwprobe: "/bin/hwprobe", signerCert: "cert.pem", machine: "host"}},
		{name: "node stand-in on a fixed machine", args: []string{"--play-nodes", "demo-train", "--machine", "zen5"},
			want: options{playNodes: "demo-train", machine: "zen5"}},
		{name: "unknown machine", args: []string{"--play-nodes", "demo-train", "--machine", "pentium"}, wantErr: errAny},
		{name: "machine without play-nodes", args: []string{"--machine", "zen5"}, wantErr: errAny},
		{name: "signer cert without play-nodes", args: []string{"--signer-cert", "cert.pem"}, wantErr: errAny},
		{name: "hwprobe without play-nodes", args: []string{"--hwprobe", "/bin/hwprobe"}, wantErr: errAny},
		{name: "play-nodes without a name", args: []string{"--play-nodes", " , "}, wantErr: errAny},
		{name: "help", args: []string{"--help"}, wantErr: flag.ErrHelp},
		{name: "bad port", args: []string{"--port", "70000"}, wantErr: errAny},
		{name: "extra args", args: []string{"serve"}, wantErr: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := parseFlags(tt.args, &stderr)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("error: %v", err)
			case tt.wantErr == errAny && err == nil, tt.wantErr != nil && tt.wantErr != errAny && !errors.Is(err, tt.wantErr):
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			case tt.wantErr == nil && got != tt.want:
				t.Errorf("options = %+v, want %+v", got, tt.want)
			}
			if tt.name == "help" && !strings.Contains(stderr.String(), "--ready-file") && !strings.Contains(stderr.String(), "-ready-file") {
				t.Errorf("help does not describe the flags:\n%s", stderr.String())
			}
		})
	}
}

var errAny = errors.New("any error")

func TestClusters(t *testing.T) {
	got := options{playNodes: " demo-train,,other , "}.clusters()
	if want := []string{"demo-train", "other"}; !slices.Equal(got, want) {
		t.Errorf("clusters = %q, want %q", got, want)
	}
	if got := (options{}).clusters(); len(got) != 0 {
		t.Errorf("clusters of no flag = %q, want none", got)
	}
}

// lockedBuffer is a bytes.Buffer safe for the shim's concurrent Observe.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRun(t *testing.T) {
	if _, err := exec.LookPath("moto_server"); err != nil && os.Getenv("MOTO_SERVER") == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("moto_server not found on PATH")
		}
		t.Skip("skipping: moto_server not found on PATH: pip install 'moto[server]'")
	}
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--ready-file", ready}, &stdout, &stderr) }()

	var url string
	deadline := time.Now().Add(60 * time.Second)
	for url == "" {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready file after 60s; stderr:\n%s", stderr.String())
		}
		if b, err := os.ReadFile(ready); err == nil {
			url = strings.TrimSpace(string(b))
		}
		time.Sleep(50 * time.Millisecond)
	}

	resp, err := http.Get(url + "/shim/log")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /shim/log: %s", resp.Status)
	}
	for _, want := range []string{
		"export AWS_ENDPOINT_URL=" + url,
		"export AWS_REGION=me-central-1",
		`provider "mlplatform" {`,
		`jurisdiction = "AE"`,
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	if !regexp.MustCompile(`\n\s+ec2 +=\s"` + regexp.QuoteMeta(url) + `"\n`).MatchString(stdout.String()) {
		t.Errorf("output lacks the ec2 endpoint %s:\n%s", url, stdout.String())
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
	if _, err := os.Stat(ready); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ready file left behind: %v", err)
	}
	if _, err := http.Get(url + "/shim/health"); err == nil {
		t.Error("shim still answers after stop")
	}
}

// The node stand-in starts with the emulator: the test signer's
// certificate is written before the ready file, and stderr says what it
// stands in for. (Playing a node end to end is make demo's act 3 and the
// provider's TestAccGPUCluster_validation* tests.)
func TestRunPlayNodes(t *testing.T) {
	if _, err := exec.LookPath("moto_server"); err != nil && os.Getenv("MOTO_SERVER") == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("moto_server not found on PATH")
		}
		t.Skip("skipping: moto_server not found on PATH: pip install 'moto[server]'")
	}
	// The stand-in sets the emulator's AWS environment in the process:
	// restore it after the test.
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ENDPOINT_URL", "AWS_EC2_METADATA_DISABLED", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"} {
		t.Setenv(k, os.Getenv(k))
	}
	dir := t.TempDir()
	ready, cert := filepath.Join(dir, "ready"), filepath.Join(dir, "signer.pem")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--quiet", "--ready-file", ready, "--play-nodes", "demo-train", "--hwprobe", filepath.Join(dir, "hwprobe"), "--signer-cert", cert}, &stdout, &stderr)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v\n%s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ready file after 60s; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	raw, err := os.ReadFile(cert)
	if err != nil {
		t.Fatalf("signer certificate: %v", err)
	}
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("signer certificate is not a PEM certificate:\n%s", raw)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Subject.Organization; len(got) != 1 || !strings.Contains(got[0], "test") {
		t.Errorf("certificate subject %v does not say it is a test signer", got)
	}
	if !strings.Contains(stderr.String(), "standing in for the nodes of demo-train (test code") {
		t.Errorf("stderr does not say what the stand-in plays:\n%s", stderr.String())
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
}
