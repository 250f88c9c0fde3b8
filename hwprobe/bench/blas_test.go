package bench

import (
	"context"
	"strconv"
	"testing"
)

func TestBLASBackendAbsent(t *testing.T) {
	r := blasSgemmResult(context.Background(), []string{"libdoes-not-exist-hwprobe.so"}, 64, 1, func(int) cpuPeak { return cpuPeak{} })
	if r.Ran || r.Reason == "" || r.Name != "cpu_sgemm_blas" {
		t.Fatalf("absent BLAS: got %+v, want not run with a reason", r)
	}
}

func TestBLASBackendHost(t *testing.T) {
	if !dynamicLoading {
		t.Skip("no run-time loading on this platform")
	}
	asked := 0
	peakFor := func(threads int) cpuPeak {
		asked = threads
		return cpuPeak{Cores: threads, ClockGHz: 1, FMAUnits: 2, VectorBits: 256, ClockSource: "estimated"}
	}
	r := blasSgemmResult(context.Background(), DefaultBLASLibraries(), 96, 2, peakFor)
	if !r.Ran {
		t.Skipf("no host BLAS: %s", r.Reason)
	}
	// The library's figure is judged against the peak of its own pool.
	if asked < 1 || r.Params["library_threads"] != strconv.Itoa(asked) || r.Params["peak_cores"] != strconv.Itoa(asked) {
		t.Errorf("peak asked for %d threads; params %v", asked, r.Params)
	}
	if r.Backend == "openblas" && r.Params["library_threads_source"] != "library" {
		t.Errorf("OpenBLAS pool size not read from the library: %v", r.Params)
	}
	if r.Value <= 0 || r.Backend == "" {
		t.Fatalf("host BLAS result %+v", r)
	}
	t.Logf("%s (%s): %.1f GFLOP/s at n=96", r.Backend, r.Params["library"], r.Value)
}
