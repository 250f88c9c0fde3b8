//go:build cgo

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/schema"
)

// imdsV2 is a test double of the EC2 instance metadata service (IMDSv2:
// a token first, then metadata with the token) serving the signed identity
// fixtures of hwprobe/identity/testdata.
func imdsV2(t *testing.T) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "identity", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	paths := map[string]string{
		"/latest/meta-data/instance-id":                    "i-0123456789abcdef0",
		"/latest/meta-data/placement/availability-zone-id": "mec1-az1",
		"/latest/dynamic/instance-identity/document":       read("document.json"),
		"/latest/dynamic/instance-identity/rsa2048":        read("rsa2048-attrs.txt"),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			_, _ = w.Write([]byte("token-1"))
			return
		}
		body, ok := paths[r.URL.Path]
		if !ok || r.Header.Get("X-Aws-Ec2-Metadata-Token") != "token-1" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	// The caller's environment may disable the metadata service (the AWS
	// SDKs' variable); these runs talk to the test double above.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
}

const schemaProfile = `
name = "schema-check"
host {
  region        = "me-central-1"
  zone_ids      = ["mec1-az1"]
  instance_type = "p5en.48xlarge"
}
cpu {
  min_cores = 1
}
gpu {
  model = "H100"
  count = 8
}
`

const schemaBenchProfile = schemaProfile + `
benchmark "cpu_sgemm" {
  min = 1
}
benchmark "gpu_gemm_bf16" {
  min_efficiency = 0.5
  optional       = true
}
`

// TestOutputsMatchSchemas runs hwprobe's commands in process, as a node
// runs them, and validates what they write against the published schemas:
// the CPU is this host's, probed for real, and so are the benchmarks (quick
// sizes); GPUs are go-nvml's DGX H100 mock server and the metadata service
// is the IMDSv2 test double above, both labelled as such.
func TestOutputsMatchSchemas(t *testing.T) {
	imdsV2(t)
	set, err := schema.Compile()
	if err != nil {
		t.Fatal(err)
	}
	cert := filepath.Join("..", "..", "identity", "testdata", "test-cert.pem")
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := write("plain.hcl", schemaProfile)
	withBench := write("bench.hcl", schemaBenchProfile)
	failing := write("failing.hcl", schemaProfile+"efa {\n  count = 16\n}\n")

	tests := []struct {
		name   string
		lib    func() gpu.Library
		args   []string
		code   int
		stdout schema.Name
		report schema.Name // validated too when --report is among args
		want   []string    // the branch of the schema this case exercises
	}{
		{name: "probe cpu only", args: []string{"probe", "--no-imds", "--no-gpu"}, stdout: schema.Inventory},
		{name: "probe on EC2 with GPUs", lib: healthy, args: []string{"probe", "--identity-cert", cert, "--xid-window", "50ms"}, stdout: schema.Inventory,
			want: []string{`"on_ec2": true`, `"verified": true`, `"count": 8`, `"xid": {`}},
		{name: "probe without NVIDIA driver", lib: noDriver, args: []string{"probe", "--no-imds"}, stdout: schema.Inventory,
			want: []string{`"library_missing": true`}},
		{name: "bench", args: []string{"bench", "--quick", "--only", "cpu_sgemm,cpu_stream_triad,gpu_gemm_bf16", "--format", "json"}, code: 2, stdout: schema.Bench,
			want: []string{`"ran": true`, `"ran": false`}},
		{name: "validate pass with benchmarks", lib: healthy, args: []string{"validate", "--identity-cert", cert, "--profile", withBench, "--format", "json", "--report", filepath.Join(dir, "pass.json")}, stdout: schema.Validation, report: schema.Report},
		{name: "validate fail", lib: healthy, args: []string{"validate", "--identity-cert", cert, "--profile", failing, "--format", "json", "--report", filepath.Join(dir, "fail.json")}, code: 1, stdout: schema.Validation, report: schema.Report},
		{name: "validate not run", lib: noDriver, args: []string{"validate", "--no-imds", "--profile", plain, "--format", "json", "--report", filepath.Join(dir, "notrun.json")}, code: 2, stdout: schema.Validation, report: schema.Report},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			// No variable of the caller's environment (HWPROBE_MACHINE,
			// HWPROBE_NVML_MOCK, AWS_*) changes the outcome.
			a := newApp(&out, &errb, func(string) string { return "" })
			if tt.lib != nil {
				a.newNVML = tt.lib
			}
			code := exitStatus(run(context.Background(), tt.args, a), &errb)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out.String(), errb.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %s:\n%s", w, out.String())
				}
			}
			if err := set.Validate(tt.stdout, out.Bytes()); err != nil {
				t.Errorf("stdout: %v\n%s", err, out.String())
			}
			if tt.report == "" {
				return
			}
			path := tt.args[len(tt.args)-1]
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := set.Validate(tt.report, b); err != nil {
				t.Errorf("report: %v\n%s", err, b)
			}
		})
	}
}
