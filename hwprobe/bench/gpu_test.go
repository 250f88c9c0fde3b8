package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildStub compiles testdata/cuda_stub.c, a test double of the CUDA
// libraries, into a shared library with the given role macro.
func buildStub(t *testing.T, dir, name string, defines ...string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not found: cannot build the CUDA stub libraries")
	}
	out := filepath.Join(dir, name)
	args := append([]string{"-shared", "-fPIC", "-O1", "-o", out, filepath.Join("testdata", "cuda_stub.c")}, defines...)
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("building stub %s: %v\n%s", name, err, b)
	}
	return out
}

func tinyGPUConfig() config {
	return config{quick: true, threads: 1, gpuGemmN: 64, gpuReps: 2, gpuCopySize: 1 << 16, latencyReps: 5,
		gpuMLPDims: []int{32, 64, 32}, gpuMLPBatch: 16}
}

func allGPU() map[string]bool {
	sel := map[string]bool{}
	for _, n := range gpuNames() {
		sel[n] = true
	}
	return sel
}

func TestGPUAbsentLibraries(t *testing.T) {
	libs := CUDALibraries{Cudart: []string{"libcudart-absent-hwprobe.so"}}
	rs := gpuResults(context.Background(), tinyGPUConfig(), libs, allGPU())
	if len(rs) != len(gpuNames()) {
		t.Fatalf("got %d results, want %d", len(rs), len(gpuNames()))
	}
	for _, r := range rs {
		if r.Ran || !strings.Contains(r.Reason, "loading CUDA runtime") {
			t.Errorf("%s: want not run with a loading reason, got ran=%v reason=%q", r.Name, r.Ran, r.Reason)
		}
	}
}

func TestGPUStubLibraries(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("run-time loading with 16-argument calls is not available on this platform")
	}
	dir := t.TempDir()
	libs := CUDALibraries{
		Cudart:   []string{buildStub(t, dir, "libcudart.so", "-DROLE_CUDART")},
		CublasLt: []string{buildStub(t, dir, "libcublasLt.so", "-DROLE_LT")},
		NCCL:     []string{buildStub(t, dir, "libnccl.so", "-DROLE_NCCL")},
	}
	rs := gpuResults(context.Background(), tinyGPUConfig(), libs, allGPU())
	got := map[string]int{}
	for _, r := range rs {
		if !r.Ran {
			t.Errorf("%s on %s did not run against the stub: %s", r.Name, r.Device, r.Reason)
			continue
		}
		got[r.Name]++
		if r.Value <= 0 || r.Params["gpu_name"] != "Stub GPU (test double)" || r.Peak != 0 {
			t.Errorf("%s: unexpected result %+v", r.Name, r)
		}
	}
	// Two stub devices: per-device results twice, peers in a ring of two,
	// one all-reduce, the MLP on gpu0.
	want := map[string]int{
		"gpu_gemm_bf16": 2, "gpu_gemm_fp16": 2, "gpu_gemm_fp8": 2, "gpu_hbm_d2d": 2, "gpu_h2d": 2, "gpu_d2h": 2,
		"gpu_nvlink_p2p": 1, "gpu_nccl_allreduce_busbw": 1,
		"gpu_mlp_train": 1, "gpu_mlp_infer_p50": 1, "gpu_mlp_infer_p90": 1, "gpu_mlp_infer_p99": 1, "gpu_mlp_infer_throughput": 1,
	}
	for n, c := range want {
		if got[n] != c {
			t.Errorf("%s: %d results ran, want %d", n, got[n], c)
		}
	}
}

func TestGPUStubMissingSymbols(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("run-time loading with 16-argument calls is not available on this platform")
	}
	dir := t.TempDir()
	tests := []struct {
		name       string
		libs       func() CUDALibraries
		check      string // a result name that must not run
		reasonPart string
	}{
		{"cudart without cudaMemcpyPeer", func() CUDALibraries {
			return CUDALibraries{Cudart: []string{buildStub(t, dir, "libcudart-partial.so", "-DROLE_CUDART", "-DOMIT_SYMBOL")}}
		}, "gpu_hbm_d2d", "resolving cudaMemcpyPeer"},
		{"cublasLt without cublasLtMatmul", func() CUDALibraries {
			return CUDALibraries{
				Cudart:   []string{buildStub(t, dir, "libcudart.so", "-DROLE_CUDART")},
				CublasLt: []string{buildStub(t, dir, "libcublasLt-partial.so", "-DROLE_LT", "-DOMIT_SYMBOL")},
				NCCL:     []string{filepath.Join(dir, "absent-libnccl.so")},
			}
		}, "gpu_gemm_bf16", "resolving cublasLtMatmul"},
		{"nccl absent", func() CUDALibraries {
			return CUDALibraries{
				Cudart: []string{buildStub(t, dir, "libcudart.so", "-DROLE_CUDART")},
				NCCL:   []string{filepath.Join(dir, "absent-libnccl.so")},
			}
		}, "gpu_nccl_allreduce_busbw", "loading NCCL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := gpuResults(context.Background(), tinyGPUConfig(), tt.libs(), allGPU())
			found := false
			for _, r := range rs {
				if r.Name != tt.check {
					continue
				}
				found = true
				if r.Ran || !strings.Contains(r.Reason, tt.reasonPart) {
					t.Errorf("%s: ran=%v reason=%q, want not run with %q", r.Name, r.Ran, r.Reason, tt.reasonPart)
				}
			}
			if !found {
				t.Fatalf("no %s result", tt.check)
			}
		})
	}
}

func TestCallC16ArgumentOrder(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("16-argument calls are not available on this platform")
	}
	lib := buildStub(t, t.TempDir(), "libcall16.so", "-DROLE_CALL16")
	h, _, err := dlopenFirst([]string{lib})
	if err != nil {
		t.Fatal(err)
	}
	defer dlclose(h)
	fn := symbolAddr(h, "hwprobe_sum16")
	args := make([]uintptr, 16)
	var want uintptr
	for i := range args {
		args[i] = uintptr(100 + i*i)
		want += args[i] * uintptr(i+1)
	}
	if got := callC(fn, args...); got != want {
		t.Fatalf("hwprobe_sum16 = %d, want %d", got, want)
	}
}

func TestGPUPeakTable(t *testing.T) {
	tests := []struct {
		name     string
		wantBF16 float64
		wantHBM  float64
		known    bool
	}{
		{"NVIDIA H100 80GB HBM3", 989, 3350, true},
		{"NVIDIA H200", 989, 4800, true},
		{"NVIDIA A100-SXM4-40GB", 312, 1555, true},
		{"NVIDIA L4", 121, 300, true},
		{"NVIDIA L40", 181, 864, true},       // once got the L4 figures (substring match)
		{"NVIDIA H100 NVL", 835, 3900, true}, // once got the SXM figures
		{"NVIDIA H100 PCIe", 756, 2000, true},
		{"NVIDIA A10G", 0, 600, true},
		{"Stub GPU (test double)", 0, 0, false},
	}
	for _, tt := range tests {
		p, ok := gpuPeakFor(tt.name)
		if ok != tt.known || p.BF16 != tt.wantBF16 || p.HBM != tt.wantHBM {
			t.Errorf("gpuPeakFor(%q) = %+v, %v", tt.name, p, ok)
		}
	}
}

// stubLibs builds the three CUDA test doubles.
func stubLibs(t *testing.T) CUDALibraries {
	t.Helper()
	dir := t.TempDir()
	return CUDALibraries{
		Cudart:   []string{buildStub(t, dir, "libcudart.so", "-DROLE_CUDART")},
		CublasLt: []string{buildStub(t, dir, "libcublasLt.so", "-DROLE_LT")},
		NCCL:     []string{buildStub(t, dir, "libnccl.so", "-DROLE_NCCL")},
	}
}

// TestGPUMLPRealDefaults runs the GPU MLP with the configuration Run builds
// (quick and full), not a test's own: newConfig once left the MLP dims empty
// and trainStep indexed act[-1].
func TestGPUMLPRealDefaults(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("run-time loading with 16-argument calls is not available on this platform")
	}
	libs := stubLibs(t)
	for _, quick := range []bool{true, false} {
		cfg := newConfig(Options{Quick: quick, Reps: 1})
		cfg.latencyReps = 3
		if len(cfg.gpuMLPDims) < 2 || cfg.gpuMLPBatch < 1 {
			t.Fatalf("quick=%v: newConfig leaves the GPU MLP unsized: dims %v batch %d", quick, cfg.gpuMLPDims, cfg.gpuMLPBatch)
		}
		if !quick {
			continue // the full sizes allocate gigabytes of stub memory: sized, not run
		}
		sel := map[string]bool{}
		for _, n := range gpuMLPNames() {
			sel[n] = true
		}
		rs := gpuResults(context.Background(), cfg, libs, sel)
		if len(rs) != len(gpuMLPNames()) {
			t.Fatalf("quick=%v: %d results, want %d", quick, len(rs), len(gpuMLPNames()))
		}
		for _, r := range rs {
			if !r.Ran || r.Value <= 0 {
				t.Errorf("quick=%v: %s did not run: %s", quick, r.Name, r.Reason)
			}
		}
	}
}

// TestRunRecoversPanics: a benchmark that panics is reported as failed to
// run; Run neither crashes nor drops the other results.
func TestRunRecoversPanics(t *testing.T) {
	rs := guarded([]string{"gpu_mlp_train", "gpu_mlp_infer_p50"}, "gpu0", func() []Result {
		var act []int
		_ = act[len(act)-1] // the index out of range trainStep once hit
		return nil
	})
	if len(rs) != 2 {
		t.Fatalf("got %d results, want 2", len(rs))
	}
	for _, r := range rs {
		if r.Ran || r.Device != "gpu0" || !strings.Contains(r.Reason, "failed to run: panic") {
			t.Errorf("%s: %+v", r.Name, r)
		}
	}
	ok := guarded([]string{"cpu_sgemm"}, "", func() []Result { return []Result{{Name: "cpu_sgemm", Ran: true, Value: 1}} })
	if len(ok) != 1 || !ok[0].Ran {
		t.Errorf("guarded changed a good result: %+v", ok)
	}
	bad := guarded([]string{"cpu_sgemm"}, "", func() []Result { panic("boom") })
	if bad[0].Device != "cpu" || bad[0].Ran {
		t.Errorf("panic result = %+v", bad[0])
	}
}

// TestGPUMLPEmptyDimsNotRun: an unsized MLP is an error result, not a panic.
func TestGPUMLPEmptyDimsNotRun(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("run-time loading with 16-argument calls is not available on this platform")
	}
	cfg := tinyGPUConfig()
	cfg.gpuMLPDims, cfg.gpuMLPBatch = nil, 0
	sel := map[string]bool{"gpu_mlp_train": true}
	var rs []Result
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("gpuResults panicked: %v", p)
			}
		}()
		rs = gpuResults(context.Background(), cfg, stubLibs(t), sel)
	}()
	if len(rs) == 0 || rs[0].Ran || rs[0].Reason == "" {
		t.Fatalf("want a not-run result with a reason, got %+v", rs)
	}
}

// TestGPUWrongResultsNotPassed: a GPU library that computes a wrong GEMM
// product or a wrong all-reduce sum gives not-run results that say so,
// never figures. The stubs compute correct results unless built with
// WRONG_PRODUCT or WRONG_SUM.
func TestGPUWrongResultsNotPassed(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("run-time loading with 16-argument calls is not available on this platform")
	}
	dir := t.TempDir()
	libs := CUDALibraries{
		Cudart:   []string{buildStub(t, dir, "libcudart.so", "-DROLE_CUDART")},
		CublasLt: []string{buildStub(t, dir, "libcublasLt-wrong.so", "-DROLE_LT", "-DWRONG_PRODUCT")},
		NCCL:     []string{buildStub(t, dir, "libnccl-wrong.so", "-DROLE_NCCL", "-DWRONG_SUM")},
	}
	sel := map[string]bool{"gpu_gemm_bf16": true, "gpu_gemm_fp16": true, "gpu_gemm_fp8": true, "gpu_nccl_allreduce_busbw": true}
	rs := gpuResults(context.Background(), tinyGPUConfig(), libs, sel)
	if len(rs) != 7 {
		t.Fatalf("got %d results, want 7", len(rs))
	}
	for _, r := range rs {
		want := "wrong product"
		if r.Name == "gpu_nccl_allreduce_busbw" {
			want = "wrong sum"
		}
		if r.Ran || !strings.Contains(r.Reason, want) {
			t.Errorf("%s on %s: ran=%v reason=%q, want not run with %q", r.Name, r.Device, r.Ran, r.Reason, want)
		}
	}
}

func TestSmallFloatDecoders(t *testing.T) {
	for _, f := range []float32{0, 1, -1, 0.5, 1.5, -2.75, 65504, 6.1035156e-05} {
		if got := fromFP16(toFP16(f)); got != f {
			t.Errorf("fromFP16(toFP16(%g)) = %g", f, got)
		}
	}
	tests := map[byte]float32{0x38: 1, 0xb8: -1, 0x7e: 448, 0x01: 0.001953125, 0x08: 0.015625, 0x00: 0}
	for b, want := range tests {
		if got := fromE4M3(b); got != want {
			t.Errorf("fromE4M3(%#x) = %g, want %g", b, got, want)
		}
	}
	if v := fromE4M3(0x7f); v == v {
		t.Errorf("fromE4M3(0x7f) = %g, want NaN", v)
	}
}
