package bench

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mlplatform/mlplatform/hwprobe/schema"
)

// TestGPUResultsMatchSchema checks the GPU results, as `hwprobe bench`
// encodes them, against bench.schema.json. No GPU is needed: the CUDA
// libraries are the test doubles built from testdata/cuda_stub.c (two stub
// devices), so every GPU benchmark runs and reports a figure; the absent
// libraries case gives every GPU benchmark not run.
func TestGPUResultsMatchSchema(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("run-time loading with 16-argument calls is not available on this platform")
	}
	s, err := schema.Compile()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]CUDALibraries{
		"stub libraries":   stubLibs(t),
		"absent libraries": {Cudart: []string{"libcudart-absent-hwprobe.so"}},
	}
	for name, libs := range cases {
		t.Run(name, func(t *testing.T) {
			rs := gpuResults(context.Background(), tinyGPUConfig(), libs, allGPU())
			if len(rs) < len(gpuNames()) {
				t.Fatalf("%d results, want at least %d", len(rs), len(gpuNames()))
			}
			b, err := json.Marshal(struct {
				Results []Result `json:"results"`
			}{rs})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(schema.Bench, b); err != nil {
				t.Errorf("%v\n%s", err, b)
			}
		})
	}
}

// TestInt8ResultsMatchSchema checks the int8 results (GOP/s, the int8 MLP)
// as `hwprobe bench` encodes them, ran or not, against bench.schema.json.
func TestInt8ResultsMatchSchema(t *testing.T) {
	s, err := schema.Compile()
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(Options{Quick: true, GemmN: 128, Reps: 2, Threads: 2, InferBatch: 16})
	cfg.mlpDims, cfg.latencyReps, cfg.throughputReps = []int{64, 64, 64}, 5, 2
	peak := cpuPeakFor(currentCPU(), 2, clockTimers{
		vector: func(int) (float64, int, bool) { return 100, 512, true },
		chain:  func(int) float64 { return 3 },
	})
	rs := append([]Result{int8GemmResult(context.Background(), cfg, peak), notRun("cpu_int8_gemm", "cpu", "no avx512_vnni")},
		cpuMLPInt8Results(context.Background(), cfg, peak)...)
	b, err := json.Marshal(struct {
		Results []Result `json:"results"`
	}{rs})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(schema.Bench, b); err != nil {
		t.Errorf("%v\n%s", err, b)
	}
}
