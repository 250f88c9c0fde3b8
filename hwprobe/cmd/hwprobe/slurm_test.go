//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/gpu/gputest"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/schema"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

func TestCommandArgs(t *testing.T) {
	if got := commandArgs("/usr/local/sbin/hwprobe-slurm-health-check", nil); !reflect.DeepEqual(got, []string{"slurm", "health-check"}) {
		t.Errorf("link: %v", got)
	}
	if got := commandArgs("hwprobe-slurm-health-check", []string{"--dry-run"}); !reflect.DeepEqual(got, []string{"slurm", "health-check", "--dry-run"}) {
		t.Errorf("link with flags: %v", got)
	}
	if got := commandArgs("/usr/bin/hwprobe", []string{"probe"}); !reflect.DeepEqual(got, []string{"probe"}) {
		t.Errorf("hwprobe: %v", got)
	}
}

func TestSlurmCommandHelp(t *testing.T) {
	r := runCmd(t, nil, nil, "slurm")
	if r.code != 2 || !strings.Contains(r.stderr, "missing subcommand") {
		t.Errorf("slurm: %+v", r)
	}
	r = runCmd(t, nil, nil, "slurm", "health-check", "--help")
	for _, want := range []string{"HealthCheckProgram", "--boot-report", "hwprobe: CHECK: DETAIL", "SLURMD_NODENAME", "Example:"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("health-check --help: exit %d, lacks %q", r.code, want)
		}
	}
	r = runCmd(t, nil, nil, "help")
	if !strings.Contains(r.stdout, "slurm ") {
		t.Error("help does not list slurm")
	}
}

// TestHealthCheckVerdict runs the health check's probe and checks without
// Slurm: which checks run, and the drain reason each outcome gives.
func TestHealthCheckVerdict(t *testing.T) {
	xidProfile := strings.Replace(healthyProfile, "min_pcie_width   = 16", "min_pcie_width   = 16\n  xid_seconds      = 600", 1)
	withHost := "host {\n  region = \"me-central-1\"\n  instance_type = \"p5.48xlarge\"\n}\nbenchmark \"gpu_gemm_bf16\" {\n  min_efficiency = 0.6\n}\n" + healthyProfile
	missing := func() gpu.Library { s := gputest.DGXH100(); gputest.RemoveGPU(s, 3); return s }
	tests := []struct {
		name, profile string
		lib           func() gpu.Library
		reason        string // "" passes
	}{
		{"healthy", healthyProfile, healthy, ""},
		{"host and benchmarks are not checked", withHost, healthy, ""},
		{"a GPU missing", healthyProfile, missing, "hwprobe: gpu.count: found 7 GPUs, profile expects 8"},
		{"no NVML", healthyProfile, noDriver, "hwprobe: gpu.count: not run: NVML library not found"},
		{"no GPU block: NVML not loaded", "cpu {\n  min_threads = 1\n}\n", func() gpu.Library { panic("NVML loaded") }, ""},
		{"XID watched for the health check's window", xidProfile, healthy, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newApp(os.Stdout, os.Stderr, func(string) string { return "" })
			a.newNVML = tt.lib
			start := time.Now()
			res, rep, err := healthCheck(context.Background(), a, writeProfile(t, tt.profile), "", 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if got := drainReason(res); !strings.HasPrefix(got, tt.reason) || (tt.reason == "") != (got == "") {
				t.Errorf("reason %q, want %q", got, tt.reason)
			}
			for _, c := range res.Checks {
				if strings.HasPrefix(c.ID, "host.") || strings.HasPrefix(c.ID, "bench.") {
					t.Errorf("check %s ran", c.ID)
				}
			}
			if rep.Validation == nil || rep.Inventory == nil || rep.Profile == nil {
				t.Error("report incomplete")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s", d)
			}
			if strings.Contains(tt.profile, "xid_seconds") {
				x := rep.Inventory.GPU.XID
				if x == nil || x.WindowSeconds != 0.05 {
					t.Errorf("xid window %+v, want 0.05 s", x)
				}
			}
		})
	}
}

func TestHealthCheckBootReport(t *testing.T) {
	dir := t.TempDir()
	profile := writeProfile(t, healthyProfile)
	src, _ := os.ReadFile(profile)
	other := []byte("gpu {\n  count = 4\n}\n")
	write := func(name string, exit int, source []byte, checks ...validate.Check) string {
		res := validate.Summarize("p5", checks)
		res.Exit = exit
		rep := report.New(nil, &res, report.Options{ProfileSource: source, Now: time.Now()})
		b, _ := json.Marshal(rep)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notJSON := filepath.Join(dir, "junk.json")
	_ = os.WriteFile(notJSON, []byte("{"), 0o644)
	tests := []struct {
		name, path string
		status     validate.Status
		reason     string
	}{
		{"passed", write("pass.json", 0, src, validate.Check{ID: "gpu.count", Status: validate.Pass}), validate.Pass, ""},
		{"failed at boot", write("fail.json", 1, src, validate.Check{ID: "bench.gpu_gemm_bf16", Subject: "gpu0", Status: validate.Fail}), validate.Fail, "boot validation: bench.gpu_gemm_bf16 gpu0 fail"},
		{"another profile", write("other.json", 0, other), validate.NotRun, "another profile"},
		{"missing", filepath.Join(dir, "none.json"), validate.NotRun, "no boot report"},
		{"not a report", notJSON, validate.NotRun, "is not a hwprobe.mlplatform.io/report/v1 report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := bootCheck(tt.path, src)
			if c.ID != "boot.validation" || c.Status != tt.status || !strings.Contains(c.Reason, tt.reason) {
				t.Errorf("got %+v", c)
			}
			a := newApp(os.Stdout, os.Stderr, func(string) string { return "" })
			a.newNVML = healthy
			res, _, err := healthCheck(context.Background(), a, profile, tt.path, 0)
			if err != nil {
				t.Fatal(err)
			}
			reason := drainReason(res)
			if (tt.status == validate.Pass) != (reason == "") || (reason != "" && !strings.HasPrefix(reason, "hwprobe: boot.validation: ")) {
				t.Errorf("drain reason %q", reason)
			}
		})
	}
}

// TestHealthCheckReportMatchesSchema: the report --report writes, with its
// boot.validation check, is a report as the published schema says.
func TestHealthCheckReportMatchesSchema(t *testing.T) {
	set, err := schema.Compile()
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(os.Stdout, os.Stderr, func(string) string { return "" })
	a.newNVML = healthy
	_, rep, err := healthCheck(context.Background(), a, writeProfile(t, healthyProfile), filepath.Join(t.TempDir(), "none.json"), 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"boot.validation"`) {
		t.Fatalf("no boot.validation check: %s", b)
	}
	if err := set.Validate(schema.Report, b); err != nil {
		t.Errorf("report: %v", err)
	}
}
