package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"time"
)

// DefaultBLASLibraries are the host BLAS libraries tried, in order, for the
// cpu_sgemm_blas backend.
func DefaultBLASLibraries() []string {
	return []string{"libopenblas.so.0", "libopenblas.so", "libmkl_rt.so.2", "libmkl_rt.so", "libblis.so.4", "libblis.so", "libblas.so.3"}
}

const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
)

// hostBLAS is a cblas_sgemm loaded at run time.
type hostBLAS struct {
	handle uintptr
	lib    string
	kind   string // openblas, mkl, blis or blas
	sgemm  func(order, transA, transB, m, n, k int32, alpha float32, a *float32, lda int32, b *float32, ldb int32, beta float32, c *float32, ldc int32)
	// threads is the size of the library's own thread pool, 0 when the
	// library does not say.
	threads int
}

func loadHostBLAS(names []string) (*hostBLAS, error) {
	h, lib, err := dlopenFirst(names)
	if err != nil {
		return nil, fmt.Errorf("loading BLAS: %w", err)
	}
	b := &hostBLAS{handle: h, lib: lib}
	if err := bindSymbols(h, lib, map[string]any{"cblas_sgemm": &b.sgemm}); err != nil {
		dlclose(h)
		return nil, err
	}
	switch {
	case hasSymbol(h, "openblas_get_config"):
		b.kind = "openblas"
		b.threads = poolSize(h, lib, "openblas_get_num_threads")
	case hasSymbol(h, "MKL_Get_Version"), hasSymbol(h, "mkl_get_version"):
		b.kind = "mkl"
		b.threads = poolSize(h, lib, "MKL_Get_Max_Threads")
	case hasSymbol(h, "bli_info_get_version_str"):
		b.kind = "blis"
		b.threads = poolSize(h, lib, "bli_thread_get_num_threads")
	default:
		b.kind = "blas"
	}
	return b, nil
}

// poolSize calls a library's int-returning thread-count function, or
// returns 0 when it has none.
func poolSize(h uintptr, lib, symbol string) int {
	if !hasSymbol(h, symbol) {
		return 0
	}
	var f func() int32
	if err := bindSymbols(h, lib, map[string]any{symbol: &f}); err != nil {
		return 0
	}
	return int(f())
}

// blasSgemmResult times the host BLAS on an n x n x n sgemm. Libraries keep
// their own thread pools and the library's default thread count is used, so
// the result is judged against the peak of that many cores (peakFor), not
// of hwprobe's thread count; a library that does not say is assumed to use
// every online CPU.
func blasSgemmResult(ctx context.Context, names []string, n, reps int, peakFor func(threads int) cpuPeak) Result {
	const name = "cpu_sgemm_blas"
	b, err := loadHostBLAS(names)
	if err != nil {
		return notRun(name, "cpu", err.Error())
	}
	defer dlclose(b.handle)
	threads, threadsSource := b.threads, "library"
	if threads <= 0 {
		threads, threadsSource = runtime.NumCPU(), "assumed: every online CPU"
	}
	peak := peakFor(threads)
	r := rand.New(rand.NewPCG(1, 2))
	x, y, z := randMat(r, n*n), randMat(r, n*n), make([]float32, n*n)
	call := func() {
		b.sgemm(cblasRowMajor, cblasNoTrans, cblasNoTrans, int32(n), int32(n), int32(n), 1, &x[0], int32(n), &y[0], int32(n), 0, &z[0], int32(n))
	}
	call()
	if err := checkSgemmSample(x, y, z, n); err != nil {
		return notRun(name, "cpu", fmt.Sprintf("%s returned a wrong product: %v", b.lib, err))
	}
	flops := 2 * float64(n) * float64(n) * float64(n)
	var rates []float64
	for range reps {
		if ctx.Err() != nil {
			return notRun(name, "cpu", ctx.Err().Error())
		}
		t0 := time.Now()
		call()
		rates = append(rates, flops/time.Since(t0).Seconds()/1e9)
	}
	return measured(name, b.kind, "GFLOP/s", rates, peak.GFLOPS32(),
		mergeParams(peak.params(), map[string]string{"n": strconv.Itoa(n), "library": b.lib,
			"library_threads": strconv.Itoa(threads), "library_threads_source": threadsSource}))
}

// randMat returns n uniform values in [-1, 1).
func randMat(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.Float64()*2 - 1)
	}
	return s
}

// checkSgemmSample compares a few entries of z = x*y (n x n) with float64
// dot products: a fast sanity check for a benchmark run, not a full test.
func checkSgemmSample(x, y, z []float32, n int) error {
	return checkGemmSample(x, y, z, n, 1e-4)
}

func checkGemmSample(x, y, z []float32, n int, tol float64) error {
	for _, ij := range [][2]int{{0, 0}, {n - 1, n - 1}, {n / 3, n / 2}, {n - 1, 0}} {
		i, j := ij[0], ij[1]
		var s, mag float64
		for p := 0; p < n; p++ {
			t := float64(x[i*n+p]) * float64(y[p*n+j])
			s += t
			mag += max(t, -t)
		}
		if d := float64(z[i*n+j]) - s; d > tol*mag || -d > tol*mag {
			return fmt.Errorf("entry (%d,%d) = %g, want %g", i, j, z[i*n+j], s)
		}
	}
	return nil
}
