package bench

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The loader is asked for sonames first, as a program linked against CUDA
// asks it: the unversioned development link, which only a toolkit install
// has, comes last, so it cannot take the toolkit's copy over the runtime
// libraries on LD_LIBRARY_PATH.
func TestDefaultCUDALibrariesSonamesFirst(t *testing.T) {
	d := DefaultCUDALibraries()
	for _, list := range [][]string{d.Cudart, d.CublasLt, d.NCCL} {
		for i, n := range list {
			unversioned := strings.HasSuffix(n, ".so")
			if unversioned && i != len(list)-1 {
				t.Errorf("%v: the unversioned %s comes before a soname", list, n)
			}
		}
		if !strings.HasSuffix(list[len(list)-1], ".so") {
			t.Errorf("%v: no unversioned fallback last", list)
		}
	}
	if d.Cudart[0] != "libcudart.so.13" || d.CublasLt[0] != "libcublasLt.so.13" {
		t.Errorf("newest CUDA not first: %v %v", d.Cudart, d.CublasLt)
	}
}

func TestPathInMaps(t *testing.T) {
	maps := "" +
		"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/hwprobe\n" +
		"7f0a1c000000-7f0a1c021000 rw-p 00000000 00:00 0 \n" +
		"7f0a20000000-7f0a24000000 r-xp 00010000 fd:01 99 /opt/torch/.venv/lib/nvidia/cu13/lib/libcublasLt.so.13\n" +
		"7f0a30000000-7f0a30100000 r-xp 00000000 fd:01 77 /opt/my libs/libcudart.so.13 (deleted)\n" +
		"7fff00000000-7fff00021000 rw-p 00000000 00:00 0                          [stack]"
	tests := []struct {
		addr uint64
		want string
	}{
		{0x00400000, "/usr/bin/hwprobe"},
		{0x00451fff, "/usr/bin/hwprobe"},
		{0x00452000, ""},
		{0x7f0a1c000100, ""}, // anonymous
		{0x7f0a22000000, "/opt/torch/.venv/lib/nvidia/cu13/lib/libcublasLt.so.13"},
		{0x7f0a30000010, "/opt/my libs/libcudart.so.13"},
		{0x7fff00000010, ""}, // [stack]
	}
	for _, tt := range tests {
		if got := pathInMaps(maps, tt.addr); got != tt.want {
			t.Errorf("pathInMaps(%#x) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}

// Every GPU result names the library file the loader chose and the version
// the library reports, so a figure can be traced to the cuBLAS, CUDA
// runtime or NCCL that produced it.
func TestGPUResultsNameLibraryFileAndVersion(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("run-time loading with 16-argument calls is not available on this platform")
	}
	dir := t.TempDir()
	cudart := buildStub(t, dir, "libcudart.so", "-DROLE_CUDART")
	lt := buildStub(t, dir, "libcublasLt.so", "-DROLE_LT")
	nc := buildStub(t, dir, "libnccl.so", "-DROLE_NCCL")
	rs := gpuResults(context.Background(), tinyGPUConfig(), CUDALibraries{Cudart: []string{cudart}, CublasLt: []string{lt}, NCCL: []string{nc}}, allGPU())
	want := map[string][2]string{ // library, version
		"gpu_gemm_bf16": {lt, "13.1.0"}, "gpu_gemm_fp8": {lt, "13.1.0"}, "gpu_mlp_train": {lt, "13.1.0"},
		"gpu_hbm_d2d": {cudart, "13.0"}, "gpu_h2d": {cudart, "13.0"}, "gpu_nvlink_p2p": {cudart, "13.0"},
		"gpu_nccl_allreduce_busbw": {nc, "2.28.9"},
	}
	seen := map[string]bool{}
	for _, r := range rs {
		w, ok := want[r.Name]
		if !ok {
			continue
		}
		seen[r.Name] = true
		if !r.Ran {
			t.Errorf("%s did not run: %s", r.Name, r.Reason)
			continue
		}
		if r.Params["library"] != w[0] || r.Params["library_version"] != w[1] {
			t.Errorf("%s: library %q version %q, want %q %q", r.Name, r.Params["library"], r.Params["library_version"], w[0], w[1])
		}
		if runtime.GOOS == "linux" {
			real, _ := filepath.EvalSymlinks(w[0])
			if got := r.Params["library_path"]; got != w[0] && got != real {
				t.Errorf("%s: library_path %q, want %q", r.Name, got, w[0])
			}
		}
	}
	for n := range want {
		if !seen[n] {
			t.Errorf("no %s result", n)
		}
	}
}

// A CUDA runtime newer than the driver loads but cannot run
// (cudaErrorInsufficientDriver): the next one is used, and where none is
// left the reason says the driver is too old.
func TestGPURuntimeNewerThanDriverPassedOver(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("run-time loading with 16-argument calls is not available on this platform")
	}
	dir := t.TempDir()
	tooNew := buildStub(t, dir, "libcudart-too-new.so", "-DROLE_CUDART", "-DTOO_NEW")
	good := buildStub(t, dir, "libcudart.so", "-DROLE_CUDART")
	sel := map[string]bool{"gpu_hbm_d2d": true}
	rs := gpuResults(context.Background(), tinyGPUConfig(), CUDALibraries{Cudart: []string{tooNew, filepath.Join(dir, "absent.so"), good}}, sel)
	if len(rs) != 2 {
		t.Fatalf("got %d results, want one per stub device: %+v", len(rs), rs)
	}
	for _, r := range rs {
		if !r.Ran || r.Params["library"] != good {
			t.Errorf("%s on %s: ran=%v library=%q reason=%q, want run on %s", r.Name, r.Device, r.Ran, r.Params["library"], r.Reason, good)
		}
	}
	rs = gpuResults(context.Background(), tinyGPUConfig(), CUDALibraries{Cudart: []string{tooNew, filepath.Join(dir, "absent.so")}}, sel)
	if len(rs) != 1 || rs[0].Ran || !strings.Contains(rs[0].Reason, "driver is older than every CUDA runtime found ("+tooNew+" 14.2)") {
		t.Errorf("only a too-new runtime: %+v", rs)
	}
}

// CUDA's current device belongs to the host thread: every CUDA call of a
// run comes from one thread, or a goroutine moved to another thread after
// cudaSetDevice allocates and copies on whatever device that thread has.
// Other goroutines keep every processor busy while the stub's cudaSetDevice
// sleeps, so an unlocked goroutine is moved.
func TestGPUCallsStayOnOneThread(t *testing.T) {
	if !dynamicLoading || !canCall16 {
		t.Skip("run-time loading with 16-argument calls is not available on this platform")
	}
	dir := t.TempDir()
	cudart := buildStub(t, dir, "libcudart-threads.so", "-DROLE_CUDART", "-DTHREAD_CHECK")
	lt := buildStub(t, dir, "libcublasLt.so", "-DROLE_LT")
	nc := buildStub(t, dir, "libnccl.so", "-DROLE_NCCL")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	stop := make(chan struct{})
	defer close(stop)
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	cfg := tinyGPUConfig()
	cfg.gpuReps = 20
	rs := gpuResults(context.Background(), cfg, CUDALibraries{Cudart: []string{cudart}, CublasLt: []string{lt}, NCCL: []string{nc}}, allGPU())
	for _, r := range rs {
		if !r.Ran {
			t.Errorf("%s on %s did not run: %s", r.Name, r.Device, r.Reason)
		}
	}
	h, _, err := dlopenFirst([]string{cudart})
	if err != nil {
		t.Fatal(err)
	}
	var switches func() int32
	if err := bindSymbols(h, cudart, map[string]any{"stub_thread_switches": &switches}); err != nil {
		t.Fatal(err)
	}
	if n := switches(); n != 0 {
		t.Errorf("CUDA calls moved between host threads %d times", n)
	}
}
