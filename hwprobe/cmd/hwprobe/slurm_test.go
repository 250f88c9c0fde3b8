//go:build cgo

package main

import (
	"bytes"
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
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
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

// TestHealthCheckMarker: when the health check drains its node, and when it
// resumes a node it drained, it writes a marker of the change under the
// profile's report destination (the provider's refresh reads the newest);
// a pass that changes nothing writes none, nor does a profile without a
// report block; a marker it cannot write is said and changes no exit code.
func TestHealthCheckMarker(t *testing.T) {
	const id = "i-0123456789abcdef0"
	withReport := "host {\n  region = \"me-central-1\"\n}\nreport {\n  s3_uri = \"s3://reports/hw/\"\n}\n" + healthyProfile
	for _, tt := range []struct {
		name, profile, state string
		lib                  func() gpu.Library
		failPuts             int
		code                 int
		want                 string // the marker's state; "" none
		says                 string
	}{
		{name: "drained", profile: withReport, state: "IDLE", lib: noDriver, code: exitFailed, want: slurm.HealthDrained},
		{name: "resumed", profile: withReport, state: "IDLE+DRAIN Reason=hwprobe: gpu.count: lost [root@2026-11-27T10:00:00]", lib: healthy, code: exitOK, want: slurm.HealthResumed},
		{name: "a pass that changes nothing", profile: withReport, state: "IDLE", lib: healthy, code: exitOK},
		{name: "failing for another reason", profile: withReport, state: "IDLE+DRAIN Reason=hwprobe: gpu.count: lost [root@2026-11-27T10:00:00]", lib: noDriver, code: exitFailed, want: slurm.HealthDrained},
		{name: "no report block", profile: healthyProfile, state: "IDLE", lib: noDriver, code: exitFailed},
		{name: "the write fails", profile: withReport, state: "IDLE", lib: noDriver, failPuts: 10, code: exitFailed, says: "its health marker was not written"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			prog, _ := scontrolStandIn(t, dir)
			answer := strings.ReplaceAll(strings.ReplaceAll(leaveNode, "NodeName=%s", "NodeName=train-9"), "State=%s", "State="+tt.state)
			if err := os.WriteFile(filepath.Join(dir, "node"), []byte(answer), 0o644); err != nil {
				t.Fatal(err)
			}
			startJoinIMDS(t, map[string]string{"instance-id": id})
			store := newStore()
			store.failPuts = tt.failPuts
			var out, errb bytes.Buffer
			a := serveApp(store, nil, &out, &errb)
			a.newNVML = tt.lib
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := run(ctx, []string{"slurm", "health-check", "--node", "train-9", "--scontrol", prog, "--slurm-conf", "/etc/slurm/test.conf",
				"--profile", writeProfile(t, tt.profile), "--xid-window", "0"}, a)
			if code := exitStatus(err, &errb); code != tt.code {
				t.Fatalf("exit %d, want %d: %s %s", code, tt.code, out.String(), errb.String())
			}
			if tt.says != "" && !strings.Contains(errb.String(), tt.says) {
				t.Errorf("stderr %q, want %q", errb.String(), tt.says)
			}
			var markers []string
			for k := range store.bodies {
				markers = append(markers, k)
			}
			if tt.want == "" {
				if len(markers) > 0 {
					t.Fatalf("markers written: %v", markers)
				}
				return
			}
			if len(markers) != 1 || !strings.HasPrefix(markers[0], "hw/"+slurm.HealthMarkerDir+id+"/") {
				t.Fatalf("markers %v, want one under hw/%s%s/", markers, slurm.HealthMarkerDir, id)
			}
			m, err := slurm.ParseHealthMarker(store.bodies[markers[0]])
			if err != nil || m.State != tt.want || m.InstanceID != id || m.Node != "train-9" || "hw/"+slurm.HealthMarkerKey(m) != markers[0] {
				t.Fatalf("marker %s: %+v (%v)", markers[0], m, err)
			}
			if tt.want == slurm.HealthDrained && !strings.HasPrefix(m.Reason, "hwprobe: gpu.count") {
				t.Errorf("drain reason %q", m.Reason)
			}
		})
	}
}
