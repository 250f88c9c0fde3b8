//go:build cgo

package validate

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/mlplatform/mlplatform/hwprobe/bench"
	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/gpu/gputest"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/probe/machine"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
)

func ptr[T any](v T) *T { return &v }

func h100Profile() *profile.Profile {
	return &profile.Profile{Name: "p5", GPU: &profile.GPU{
		Model: "H100", Count: 8, MinMemoryGiB: 79, MinNVLinkLinks: 18,
		MIGEnabled: ptr(false), ECCEnabled: ptr(true), MinPCIeGen: 5, MinPCIeWidth: 16,
	}}
}

// probeWith probes a fixed machine description (a 2-vCPU Zen 5) with lib
// as its NVML: the inventory is the same whatever machine runs the test.
func probeWith(t *testing.T, lib gpu.Library) *probe.Inventory {
	t.Helper()
	d, err := machine.Builtin(machine.Zen5)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := probe.Probe(context.Background(), probe.Config{FS: d.FS(), CPUID: d.CPUID(), NVML: lib})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func find(r Result, id, subject string) (Check, bool) {
	for _, c := range r.Checks {
		if c.ID == id && c.Subject == subject {
			return c, true
		}
	}
	return Check{}, false
}

// TestValidateGPU runs the probe against go-nvml mock servers with one
// fault each and checks the verdict and what it names.
func TestValidateGPU(t *testing.T) {
	tests := []struct {
		name       string
		lib        func() gpu.Library
		wantExit   int
		wantCheck  string // id and subject of the check that must not pass
		wantSubj   string
		wantStatus Status
		wantReason []string
	}{
		{name: "all healthy", lib: func() gpu.Library { return gputest.DGXH100() }, wantExit: ExitPass},
		{
			name: "one gpu missing",
			lib: func() gpu.Library {
				s := gputest.DGXH100()
				gputest.RemoveGPU(s, 7)
				return s
			},
			wantExit: ExitFail, wantCheck: "gpu.count", wantStatus: Fail, wantReason: []string{"found 7 GPUs", "expects 8"},
		},
		{
			name: "nvlink link down on one gpu",
			lib: func() gpu.Library {
				s := gputest.DGXH100()
				gputest.Device(s, 3).GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
					switch {
					case link >= gputest.H100Links:
						return 0, nvml.ERROR_INVALID_ARGUMENT
					case link == 11:
						return nvml.FEATURE_DISABLED, nvml.SUCCESS
					}
					return nvml.FEATURE_ENABLED, nvml.SUCCESS
				}
				return s
			},
			wantExit: ExitFail, wantCheck: "gpu.nvlink", wantSubj: "gpu3", wantStatus: Fail, wantReason: []string{"gpu3", "17 of 18", "link 11"},
		},
		{
			name: "ecc uncorrected errors",
			lib: func() gpu.Library {
				s := gputest.DGXH100()
				gputest.Device(s, 5).GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
					return 2, nvml.SUCCESS
				}
				return s
			},
			wantExit: ExitFail, wantCheck: "gpu.uncorrected_errors", wantSubj: "gpu5", wantStatus: Fail, wantReason: []string{"2 volatile uncorrected ECC errors"},
		},
		{
			name: "row remap pending",
			lib: func() gpu.Library {
				s := gputest.DGXH100()
				gputest.Device(s, 1).GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 1, true, false, nvml.SUCCESS }
				return s
			},
			wantExit: ExitFail, wantCheck: "gpu.uncorrected_errors", wantSubj: "gpu1", wantStatus: Fail, wantReason: []string{"remapping pending"},
		},
		{
			name: "mig enabled when not expected",
			lib: func() gpu.Library {
				s := gputest.DGXH100()
				gputest.Device(s, 0).MigMode = nvml.DEVICE_MIG_ENABLE
				return s
			},
			wantExit: ExitFail, wantCheck: "gpu.mig", wantSubj: "gpu0", wantStatus: Fail, wantReason: []string{"MIG enabled", "expects disabled"},
		},
		{
			name: "pcie degraded to x8",
			lib: func() gpu.Library {
				s := gputest.DGXH100()
				gputest.Device(s, 6).GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 8, nvml.SUCCESS }
				return s
			},
			wantExit: ExitFail, wantCheck: "gpu.pcie_width", wantSubj: "gpu6", wantStatus: Fail, wantReason: []string{"degraded to x8"},
		},
		{
			name:     "wrong model",
			lib:      func() gpu.Library { return gputest.DGXA100() },
			wantExit: ExitFail, wantCheck: "gpu.model", wantSubj: "gpu0", wantStatus: Fail, wantReason: []string{"A100"},
		},
		{
			name: "gpu lost",
			lib: func() gpu.Library {
				s := gputest.DGXH100()
				gputest.Device(s, 2).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
				return s
			},
			wantExit: ExitFail, wantCheck: "gpu.health", wantSubj: "gpu2", wantStatus: Fail, wantReason: []string{"GPU_IS_LOST"},
		},
		{
			name:     "nvml library absent",
			lib:      func() gpu.Library { return gputest.NoLibrary() },
			wantExit: ExitCannotRun, wantCheck: "gpu.count", wantStatus: NotRun, wantReason: []string{"NVML library not found"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Validate(context.Background(), h100Profile(), probeWith(t, tt.lib()), nil)
			if r.Exit != tt.wantExit {
				var buf bytes.Buffer
				_ = WriteTable(&buf, r)
				t.Fatalf("exit = %d, want %d\n%s", r.Exit, tt.wantExit, buf.String())
			}
			if tt.wantCheck == "" {
				if r.Summary.Pass == 0 || r.Summary.Fail+r.Summary.NotRun != 0 {
					t.Errorf("summary = %+v", r.Summary)
				}
				return
			}
			c, ok := find(r, tt.wantCheck, tt.wantSubj)
			if !ok || c.Status != tt.wantStatus {
				t.Fatalf("check %s %s = %+v (found %v)", tt.wantCheck, tt.wantSubj, c, ok)
			}
			for _, w := range tt.wantReason {
				if !strings.Contains(c.Reason, w) {
					t.Errorf("reason %q lacks %q", c.Reason, w)
				}
			}
			// Only the faulty GPU fails its per-GPU check.
			if tt.wantSubj != "" {
				for _, o := range r.Checks {
					if o.ID == tt.wantCheck && o.Subject != tt.wantSubj && o.Status != Pass && tt.wantCheck != "gpu.model" {
						t.Errorf("healthy %s: %+v", o.Subject, o)
					}
				}
			}
		})
	}
}

func TestValidateNoGPUsExpected(t *testing.T) {
	p := &profile.Profile{GPU: &profile.GPU{Count: 0}}
	r := Validate(context.Background(), p, probeWith(t, gputest.NoLibrary()), nil)
	if r.Exit != ExitPass {
		t.Errorf("result = %+v", r)
	}
}

func TestValidateOptionalNotRun(t *testing.T) {
	p := h100Profile()
	p.OptionalChecks = []string{"gpu.*"}
	r := Validate(context.Background(), p, probeWith(t, gputest.NoLibrary()), nil)
	if r.Exit != ExitPass || r.Summary.OptionalNotRun == 0 || r.Summary.Pass != 0 {
		t.Errorf("summary %+v exit %d", r.Summary, r.Exit)
	}
}

func TestValidateXID(t *testing.T) {
	p := &profile.Profile{GPU: &profile.GPU{Count: 8, XIDSeconds: 1}}
	inv := probeWith(t, gputest.DGXH100())
	if r := Validate(context.Background(), p, inv, nil); r.Exit != ExitCannotRun {
		t.Errorf("xid not watched: exit %d", r.Exit)
	}
	inv.GPU.XID = &gpu.XIDWatch{WindowSeconds: 1, WatchedSeconds: 1, Events: []gpu.XIDEvent{{GPU: 4, XID: 79}}}
	r := Validate(context.Background(), p, inv, nil)
	c, _ := find(r, "gpu.xid", "")
	if r.Exit != ExitFail || !strings.Contains(c.Reason, "gpu4 XID 79") {
		t.Errorf("xid check = %+v", c)
	}
}

// TestValidateXIDIncomplete: a watch cut short (its context ended early) is
// not run, never a pass; one that saw a critical XID before it ended still
// fails.
func TestValidateXIDIncomplete(t *testing.T) {
	p := &profile.Profile{GPU: &profile.GPU{Count: 8, XIDSeconds: 5}}
	inv := probeWith(t, gputest.DGXH100())
	tests := []struct {
		name string
		w    gpu.XIDWatch
		want Status
	}{
		{"complete and clean", gpu.XIDWatch{WindowSeconds: 5, WatchedSeconds: 5.01, Events: []gpu.XIDEvent{}}, Pass},
		{"cut short, no events", gpu.XIDWatch{WindowSeconds: 5, WatchedSeconds: 0.4, Events: []gpu.XIDEvent{}}, NotRun},
		{"old report without watched time", gpu.XIDWatch{WindowSeconds: 5, Events: []gpu.XIDEvent{}}, NotRun},
		{"cut short with an error", gpu.XIDWatch{WindowSeconds: 5, WatchedSeconds: 0.4, Error: "xid watch ended after 0.4s of 5.0s: context canceled"}, NotRun},
		{"cut short after an XID", gpu.XIDWatch{WindowSeconds: 5, WatchedSeconds: 0.4, Events: []gpu.XIDEvent{{GPU: 1, XID: 48}}}, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.w
			inv.GPU.XID = &w
			r := Validate(context.Background(), p, inv, nil)
			c, ok := find(r, "gpu.xid", "")
			if !ok || c.Status != tt.want {
				t.Errorf("gpu.xid = %+v, want %s", c, tt.want)
			}
		})
	}
}

// TestValidateBenchIncomplete: a result marked as run but with no
// repetitions or no finite value is not run, never a pass.
func TestValidateBenchIncomplete(t *testing.T) {
	p := &profile.Profile{Benchmarks: []profile.Benchmark{{Name: "cpu_sgemm"}, {Name: "cpu_stream_triad"}, {Name: "cpu_mlp_train"}}}
	b := fakeBencher{results: []bench.Result{
		{Name: "cpu_sgemm", Device: "cpu", Ran: true, Unit: "GFLOP/s"},
		{Name: "cpu_stream_triad", Device: "cpu", Ran: true, Reps: 3, Value: math.NaN(), Unit: "MB/s"},
		{Name: "cpu_mlp_train", Device: "cpu", Ran: true, Reps: 3, Value: 10, Unit: "samples/s"},
	}}
	r := Validate(context.Background(), p, &probe.Inventory{}, b)
	want := map[string]Status{"bench.cpu_sgemm cpu": NotRun, "bench.cpu_stream_triad cpu": NotRun, "bench.cpu_mlp_train cpu": Pass}
	for _, c := range r.Checks {
		if want[c.Name()] != c.Status {
			t.Errorf("%s = %s (%s)", c.Name(), c.Status, c.Reason)
		}
	}
	if r.Exit != ExitCannotRun {
		t.Errorf("exit %d, want %d", r.Exit, ExitCannotRun)
	}
}

func TestValidateHostCPUAndEFA(t *testing.T) {
	inv := &probe.Inventory{
		Host: probe.Host{OnEC2: true, Region: "me-central-1", ZoneID: "mec1-az2", InstanceType: "c7i.4xlarge",
			Identity: &probe.Identity{VerifyError: "no trusted AWS certificate for this region"}},
		CPU:     probe.CPU{Vendor: "GenuineIntel", Cores: 8, Threads: 16, MemoryBytes: 32 << 30, Features: []string{"avx2", "avx512f"}, FeatureMismatches: []string{"amx_tile (only cpuid)"}},
		Network: probe.Network{EFACount: 1, EFAActivePorts: 1},
		Collectors: []probe.Run{{Name: probe.CollectorHost, Ran: true}, {Name: probe.CollectorCPU, Ran: true},
			{Name: probe.CollectorGPU, Ran: true}, {Name: probe.CollectorNetwork, Ran: true}},
	}
	p := &profile.Profile{
		Host: &profile.Host{Region: "me-central-1", ZoneIDs: []string{"mec1-az1", "mec1-az3"}, InstanceType: "c7i.4xlarge"},
		CPU:  &profile.CPU{Vendor: "genuineintel", MinCores: 8, MinThreads: 32, MinMemoryGiB: 30, Features: []string{"avx512f", "amx_tile"}},
		EFA:  &profile.EFA{Count: 2},
	}
	r := Validate(context.Background(), p, inv, nil)
	want := map[string]Status{
		"host.region": Pass, "host.zone_id": Fail, "host.instance_type": Pass, "host.identity_verified": NotRun,
		"cpu.vendor": Pass, "cpu.cores": Pass, "cpu.threads": Fail, "cpu.memory": Pass,
		"cpu.feature avx512f": Pass, "cpu.feature amx_tile": Fail, "efa.count": Fail,
	}
	for _, c := range r.Checks {
		if w, ok := want[c.Name()]; !ok || w != c.Status {
			t.Errorf("%s = %s (%s), want %s", c.Name(), c.Status, c.Reason, w)
		}
		delete(want, c.Name())
	}
	if len(want) != 0 {
		t.Errorf("missing checks %v", want)
	}
	if c, _ := find(r, "cpu.feature", "amx_tile"); !strings.Contains(c.Reason, "only cpuid") {
		t.Errorf("amx reason %q", c.Reason)
	}
	if r.Exit != ExitFail {
		t.Errorf("exit = %d", r.Exit)
	}

	// Off EC2 every host check is not run, never passed.
	inv.Host = probe.Host{Reason: "not on EC2: instance metadata unreachable"}
	r = Validate(context.Background(), &profile.Profile{Host: p.Host}, inv, nil)
	if r.Exit != ExitCannotRun || r.Summary.Pass != 0 {
		t.Errorf("off EC2: %+v", r.Summary)
	}
}

type fakeBencher struct {
	results []bench.Result
	err     error
}

func (f fakeBencher) Run(context.Context, []string) ([]bench.Result, error) { return f.results, f.err }

func TestValidateBenchmarks(t *testing.T) {
	p := &profile.Profile{Benchmarks: []profile.Benchmark{
		{Name: "cpu_sgemm", Min: ptr(100.0), MinEfficiency: ptr(0.5)},
		{Name: "gpu_mlp_infer_p99", Max: ptr(20.0)},
		{Name: "gpu_nccl_allreduce_busbw", Optional: true},
		{Name: "gpu_gemm_bf16"},
	}}
	inv := &probe.Inventory{}
	tests := []struct {
		name string
		b    Bencher
		want map[string]Status
		exit int
	}{
		{"no bencher", nil, map[string]Status{"bench.cpu_sgemm": NotRun, "bench.gpu_mlp_infer_p99": NotRun, "bench.gpu_nccl_allreduce_busbw": NotRun, "bench.gpu_gemm_bf16": NotRun}, ExitCannotRun},
		{"bencher error", fakeBencher{err: errors.New("cuda missing")}, map[string]Status{"bench.cpu_sgemm": NotRun, "bench.gpu_mlp_infer_p99": NotRun, "bench.gpu_nccl_allreduce_busbw": NotRun, "bench.gpu_gemm_bf16": NotRun}, ExitCannotRun},
		{"results", fakeBencher{results: []bench.Result{
			{Name: "cpu_sgemm", Device: "cpu", Ran: true, Reps: 3, Value: 180, Unit: "GFLOP/s", Peak: 400, Efficiency: 0.45},
			{Name: "gpu_mlp_infer_p99", Device: "gpu0", Ran: true, Reps: 3, Value: 12, Unit: "ms"},
			{Name: "gpu_mlp_infer_p99", Device: "gpu1", Ran: true, Reps: 3, Value: 31, Unit: "ms"},
			{Name: "gpu_nccl_allreduce_busbw", Device: "gpu:all", Ran: false, Reason: "libnccl not found"},
			{Name: "gpu_gemm_bf16", Device: "gpu0", Ran: true, Reps: 3, Value: 700, Unit: "TFLOP/s"},
		}}, map[string]Status{"bench.cpu_sgemm cpu": Fail, "bench.gpu_mlp_infer_p99 gpu0": Pass, "bench.gpu_mlp_infer_p99 gpu1": Fail,
			"bench.gpu_nccl_allreduce_busbw gpu:all": NotRun, "bench.gpu_gemm_bf16 gpu0": Pass}, ExitFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Validate(context.Background(), p, inv, tt.b)
			if r.Exit != tt.exit || len(r.Checks) != len(tt.want) {
				t.Fatalf("exit %d checks %+v", r.Exit, r.Checks)
			}
			for _, c := range r.Checks {
				if tt.want[c.Name()] != c.Status {
					t.Errorf("%s = %s (%s)", c.Name(), c.Status, c.Reason)
				}
				if c.ID == "bench.gpu_nccl_allreduce_busbw" && !c.Optional {
					t.Errorf("optional benchmark not marked optional")
				}
			}
		})
	}
}

// A benchmark that requires a backend fails a figure from another kernel,
// however high, and says why the other kernel ran (the amx param).
func TestValidateBenchmarkBackend(t *testing.T) {
	p := &profile.Profile{Benchmarks: []profile.Benchmark{{Name: "cpu_bf16_gemm", MinEfficiency: ptr(0.02), Backend: "builtin-amx-bf16"}}}
	for _, tt := range []struct {
		name   string
		r      bench.Result
		want   Status
		reason string
	}{
		{"amx ran", bench.Result{Name: "cpu_bf16_gemm", Device: "cpu", Backend: "builtin-amx-bf16", Ran: true, Reps: 5, Value: 4000, Unit: "GFLOP/s", Peak: 42000, Efficiency: 0.095}, Pass, ""},
		{"amx below the floor", bench.Result{Name: "cpu_bf16_gemm", Device: "cpu", Backend: "builtin-amx-bf16", Ran: true, Reps: 5, Value: 400, Unit: "GFLOP/s", Peak: 42000, Efficiency: 0.0095}, Fail, "below 2%"},
		{"avx-512 instead", bench.Result{Name: "cpu_bf16_gemm", Device: "cpu", Backend: "builtin-avx512-bf16", Ran: true, Reps: 5, Value: 1000, Unit: "GFLOP/s", Peak: 1100, Efficiency: 0.9,
			Params: map[string]string{"amx": "AMX present but not used (the kernel refused AMX tile data)"}}, Fail, "ran on builtin-avx512-bf16, not builtin-amx-bf16: AMX present but not used (the kernel refused"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := Validate(context.Background(), p, &probe.Inventory{}, fakeBencher{results: []bench.Result{tt.r}})
			if len(r.Checks) != 1 {
				t.Fatalf("checks %+v", r.Checks)
			}
			c := r.Checks[0]
			if c.Status != tt.want || !strings.Contains(c.Reason, tt.reason) || !strings.Contains(c.Expected, "on builtin-amx-bf16") {
				t.Errorf("%s: %s (%q), expected %q", c.Name(), c.Status, c.Reason, c.Expected)
			}
		})
	}
}

func TestWriteFormats(t *testing.T) {
	s := gputest.DGXH100()
	gputest.Device(s, 3).GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 8, nvml.SUCCESS }
	p := h100Profile()
	p.Benchmarks = []profile.Benchmark{{Name: "gpu_gemm_bf16", Optional: true}, {Name: "cpu_sgemm"}}
	r := Validate(context.Background(), p, probeWith(t, s), nil)

	tests := []struct {
		format string
		want   []string
	}{
		{"table", []string{"STATUS", "FAIL  ", "gpu.pcie_width gpu3", "degraded to x8", "NOT-RUN (optional)", "FAIL: "}},
		{"json", []string{`"exit_code": 1`, `"status": "fail"`, `"id": "gpu.pcie_width"`}},
		{"junit", []string{"<testsuites>", `failures="1"`, `errors="1"`, `skipped="1"`, "<failure message=", "<error message=\"not run: "}},
		{"prometheus", []string{`hwprobe_check{check="gpu.pcie_width",subject="gpu3",status="fail",optional="false"} 1`, `hwprobe_checks{status="fail"} 1`, "hwprobe_validate_exit_code 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteResult(&buf, r, tt.format); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("%s output lacks %q:\n%s", tt.format, w, buf.String())
				}
			}
			if tt.format == "junit" {
				var v junitSuites
				if err := xml.Unmarshal(buf.Bytes(), &v); err != nil {
					t.Errorf("junit does not parse: %v", err)
				}
			}
		})
	}
	if err := WriteResult(&bytes.Buffer{}, r, "yaml"); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestPromLabel(t *testing.T) {
	if got := promLabel("a\"b\\c\nd"); got != `"a\"b\\c\nd"` {
		t.Errorf("promLabel = %s", got)
	}
}
