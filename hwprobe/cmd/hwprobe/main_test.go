//go:build cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/gpu/gputest"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/report"
)

type fakeS3 struct {
	location string
	keys     []string
	owners   []string // ExpectedBucketOwner of each write
}

func (f *fakeS3) GetBucketLocation(context.Context, *s3.GetBucketLocationInput, ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error) {
	return &s3.GetBucketLocationOutput{LocationConstraint: types.BucketLocationConstraint(f.location)}, nil
}

func (f *fakeS3) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	f.keys = append(f.keys, *in.Key)
	f.owners = append(f.owners, aws.ToString(in.ExpectedBucketOwner))
	_, _ = io.Copy(io.Discard, in.Body)
	return &s3.PutObjectOutput{}, nil
}

const healthyProfile = `
name = "p5"
gpu {
  model            = "H100"
  count            = 8
  min_nvlink_links = 18
  mig_enabled      = false
  ecc_enabled      = true
  min_pcie_width   = 16
}
`

const publishProfile = `
host {
  region = "me-central-1"
}
report {
  s3_uri = "s3://reports/hw/"
}
`

func writeProfile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "profile.hcl")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

type result struct {
	code           int
	stdout, stderr string
}

func runCmd(t *testing.T, lib func() gpu.Library, s3 *fakeS3, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb, func(string) string { return "" })
	a.newNVML = lib
	a.newIMDS = func() probe.IMDS { t.Fatal("IMDS used despite --no-imds"); return nil }
	a.newS3 = func(context.Context, string, bool) (report.S3, error) {
		if s3 == nil {
			return nil, errors.New("no s3 in this test")
		}
		return s3, nil
	}
	code := exitStatus(run(context.Background(), args, a), &errb)
	return result{code, out.String(), errb.String()}
}

func healthy() gpu.Library { return gputest.DGXH100() }

func noDriver() gpu.Library { return gputest.NoLibrary() }

func TestCommands(t *testing.T) {
	good := writeProfile(t, healthyProfile)
	bad := writeProfile(t, "gpu {\n  count = 8\n  colour = \"green\"\n}\n")
	missing := func() gpu.Library {
		s := gputest.DGXH100()
		gputest.RemoveGPU(s, 0)
		return s
	}
	tests := []struct {
		name   string
		lib    func() gpu.Library
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "no command", args: nil, code: 2, stderr: []string{"Commands:"}},
		{name: "help", args: []string{"help"}, code: 0, stdout: []string{"probe", "validate", "report", "bench", "Exit codes"}},
		{name: "help validate", args: []string{"help", "validate"}, code: 0, stdout: []string{"--profile", "Example:"}},
		{name: "unknown", args: []string{"frobnicate"}, code: 2, stderr: []string{`unknown command "frobnicate"`}},
		{name: "bad flag", args: []string{"probe", "--nope"}, code: 2, stderr: []string{"flag provided but not defined", "Usage:"}},
		{name: "probe", lib: healthy, args: []string{"probe", "--no-imds"}, code: 0, stdout: []string{`"schema": "hwprobe.mlplatform.io/inventory/v1"`, `"count": 8`}},
		{name: "probe no driver", lib: noDriver, args: []string{"probe", "--no-imds"}, code: 0, stdout: []string{`"library_missing": true`}},
		{name: "validate healthy", lib: healthy, args: []string{"validate", "--no-imds", "--profile", good}, code: 0, stdout: []string{"PASS", "gpu.nvlink gpu7"}},
		{name: "validate gpu missing", lib: missing, args: []string{"validate", "--no-imds", "--profile", good}, code: 1, stdout: []string{"found 7 GPUs, profile expects 8"}},
		{name: "validate no nvml", lib: noDriver, args: []string{"validate", "--no-imds", "--profile", good}, code: 2, stdout: []string{"NOT-RUN", "NVML library not found"}},
		{name: "validate json", lib: healthy, args: []string{"validate", "--no-imds", "--profile", good, "--format", "json"}, code: 0, stdout: []string{`"exit_code": 0`}},
		{name: "validate junit", lib: missing, args: []string{"validate", "--no-imds", "--profile", good, "--format", "junit"}, code: 1, stdout: []string{"<testsuites>"}},
		{name: "validate prometheus", lib: healthy, args: []string{"validate", "--no-imds", "--profile", good, "--format", "prometheus"}, code: 0, stdout: []string{"hwprobe_validate_exit_code 0"}},
		{name: "validate bad format", lib: healthy, args: []string{"validate", "--profile", good, "--format", "yaml"}, code: 2, stderr: []string{"unknown format"}},
		{name: "validate bad profile", lib: healthy, args: []string{"validate", "--no-imds", "--profile", bad}, code: 2, stderr: []string{"profile.hcl:3:3", "Unsupported argument", "colour"}},
		{name: "validate no profile", args: []string{"validate"}, code: 2, stderr: []string{"--profile is required"}},
		{name: "validate missing file", args: []string{"validate", "--profile", "/nonexistent.hcl"}, code: 2, stderr: []string{"nonexistent.hcl"}},
		{name: "report no subcommand", args: []string{"report"}, code: 2, stderr: []string{"missing subcommand"}},
		{name: "version", args: []string{"version"}, code: 0, stdout: []string{"hwprobe "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCmd(t, tt.lib, nil, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.stdout {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

func TestHelpEverywhere(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"probe", "--help"}, {"validate", "--help"}, {"report", "--help"},
		{"report", "publish", "--help"}, {"bench", "--help"}, {"version", "-h"},
	} {
		r := runCmd(t, nil, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Usage") || !strings.Contains(r.stdout, "Exit codes") {
			t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		if len(args) > 1 && !strings.Contains(r.stdout, "Example") {
			t.Errorf("%v: no example", args)
		}
	}
}

func TestReportPublish(t *testing.T) {
	prof := writeProfile(t, publishProfile)
	noRegion := writeProfile(t, "report {\n  s3_uri = \"s3://reports/\"\n}\n")

	// validate --report, then publish that file.
	repFile := filepath.Join(t.TempDir(), "report.json")
	if r := runCmd(t, healthy, nil, "validate", "--no-imds", "--profile", prof, "--report", repFile); r.code != 2 {
		// host.* checks cannot run off EC2: exit 2, but the report is written.
		t.Fatalf("validate exit %d: %s", r.code, r.stderr)
	}
	var rep report.Report
	if b, err := os.ReadFile(repFile); err != nil || json.Unmarshal(b, &rep) != nil || rep.Profile == nil {
		t.Fatalf("report file: %v %+v", err, rep)
	}

	tests := []struct {
		name     string
		location string
		args     []string
		code     int
		want     string
	}{
		{"validate now", "me-central-1", []string{"--profile", prof, "--no-imds"}, 0, "s3://reports/hw/"},
		{"from file", "me-central-1", []string{"--profile", prof, "--report", repFile}, 0, "s3://reports/hw/"},
		{"override destination", "me-central-1", []string{"--profile", prof, "--report", repFile, "--to", "s3://other/x.json"}, 0, "s3://other/x.json"},
		{"bucket elsewhere", "eu-west-1", []string{"--profile", prof, "--report", repFile}, 2, "outside the profile's region"},
		{"kms elsewhere", "me-central-1", []string{"--profile", prof, "--report", repFile, "--kms-key", "arn:aws:kms:eu-west-1:111122223333:key/k"}, 2, "outside the profile's region"},
		{"no region", "me-central-1", []string{"--profile", noRegion, "--report", repFile}, 2, "no host.region"},
		{"not a report", "me-central-1", []string{"--profile", prof, "--report", prof}, 2, "is not a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeS3{location: tt.location}
			r := runCmd(t, healthy, f, append([]string{"report", "publish"}, tt.args...)...)
			if r.code != tt.code || !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Fatalf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", r.code, tt.code, tt.want, r.stdout, r.stderr)
			}
			if (tt.code == 0) != (len(f.keys) == 1) {
				t.Errorf("objects written: %v", f.keys)
			}
		})
	}
}

// TestPublishExpectsTheNodesAccount: on EC2 the bucket must belong to the
// account of the node's identity document (S3's ExpectedBucketOwner).
func TestPublishExpectsTheNodesAccount(t *testing.T) {
	prof := writeProfile(t, publishProfile)
	for _, tt := range []struct {
		name string
		host probe.Host
		want string
	}{
		{"on EC2", probe.Host{OnEC2: true, Region: "me-central-1", InstanceID: "i-1", AccountID: "111122223333"}, "111122223333"},
		{"off EC2", probe.Host{}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := json.Marshal(report.Report{Schema: report.SchemaVersion, Inventory: &probe.Inventory{Host: tt.host}})
			file := filepath.Join(t.TempDir(), "r.json")
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			f := &fakeS3{location: "me-central-1"}
			r := runCmd(t, nil, f, "report", "publish", "--profile", prof, "--report", file)
			if r.code != 0 || len(f.owners) != 1 || f.owners[0] != tt.want {
				t.Errorf("exit %d, expected bucket owners %q, want %q: %s", r.code, f.owners, tt.want, r.stderr)
			}
		})
	}
}

func TestPublishRefusesNodeInAnotherRegion(t *testing.T) {
	prof := writeProfile(t, publishProfile)
	rep := report.Report{Schema: report.SchemaVersion, Inventory: &probe.Inventory{Host: probe.Host{OnEC2: true, Region: "eu-west-1"}}}
	b, _ := json.Marshal(rep)
	file := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fakeS3{location: "me-central-1"}
	r := runCmd(t, nil, f, "report", "publish", "--profile", prof, "--report", file)
	if r.code != 2 || !strings.Contains(r.stderr, "refusing to publish across regions") || len(f.keys) != 0 {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}
