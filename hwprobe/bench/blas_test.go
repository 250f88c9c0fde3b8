package bench

import (
	"context"
	"testing"
)

func TestBLASBackendAbsent(t *testing.T) {
	r := blasSgemmResult(context.Background(), []string{"libdoes-not-exist-hwprobe.so"}, 64, 1, cpuPeak{})
	if r.Ran || r.Reason == "" || r.Name != "cpu_sgemm_blas" {
		t.Fatalf("absent BLAS: got %+v, want not run with a reason", r)
	}
}

func TestBLASBackendHost(t *testing.T) {
	if !dynamicLoading {
		t.Skip("no run-time loading on this platform")
	}
	r := blasSgemmResult(context.Background(), DefaultBLASLibraries(), 96, 2, cpuPeak{})
	if !r.Ran {
		t.Skipf("no host BLAS: %s", r.Reason)
	}
	if r.Value <= 0 || r.Backend == "" {
		t.Fatalf("host BLAS result %+v", r)
	}
	t.Logf("%s (%s): %.1f GFLOP/s at n=96", r.Backend, r.Params["library"], r.Value)
}
