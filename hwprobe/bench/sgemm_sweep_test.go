package bench

import (
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSgemmSweep times the fp32 engine over blockings, interleaved, for
// choosing sgemmBlocking's rules on a host. It runs only with
// HWPROBE_SGEMM_SWEEP set (a list of n, e.g. "2048,4096") and prints; it
// asserts nothing beyond correctness.
func TestSgemmSweep(t *testing.T) {
	sizes := os.Getenv("HWPROBE_SGEMM_SWEEP")
	if sizes == "" {
		t.Skip("set HWPROBE_SGEMM_SWEEP=2048,4096 to time fp32 blockings")
	}
	kern := bestSgemmKernel()
	cs := hostCaches()
	t.Logf("kernel %s, caches: %s", kern.name, cacheString(cs))
	blks := sweepBlocks("HWPROBE_SGEMM_BLOCKS", []blk{{66, 1024, 2048}, {144, 256, 4080}, {240, 256, 4080}, {96, 384, 4080}, {72, 512, 4080}, {144, 384, 2048}})
	for _, f := range strings.Split(sizes, ",") {
		n, _ := strconv.Atoi(f)
		r := rand.New(rand.NewPCG(1, 2))
		x, y, z := randMat(r, n*n), randMat(r, n*n), make([]float32, n*n)
		best := make([]float64, len(blks))
		for range 3 {
			for i, b := range blks {
				g := newGemm(kern, false, 0)
				g.mc, g.kc, g.nc = b.mc, b.kc, b.nc
				call := func() { g.Sgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n) }
				call()
				for range 3 {
					t0 := time.Now()
					call()
					best[i] = max(best[i], 2*float64(n)*float64(n)*float64(n)/time.Since(t0).Seconds()/1e9)
				}
			}
		}
		for i, b := range blks {
			t.Logf("SWEEP n=%d mc=%d kc=%d nc=%d: %.1f GFLOP/s", n, b.mc, b.kc, b.nc, best[i])
		}
		if err := checkGemmSample(x, y, z, n, 1e-4); err != nil {
			t.Errorf("n=%d: %v", n, err)
		}
	}
}

// TestI8Sweep times the int8 engine (the host's int8 kernel) over
// blockings, interleaved, as TestSgemmSweep does for fp32. It runs only
// with HWPROBE_I8_SWEEP set (a list of n) and takes HWPROBE_I8_BLOCKS
// ("mc,kc,nc ...", kc in k values) in place of its defaults.
func TestI8Sweep(t *testing.T) {
	sizes := os.Getenv("HWPROBE_I8_SWEEP")
	if sizes == "" {
		t.Skip("set HWPROBE_I8_SWEEP=2048,4096 to time int8 blockings")
	}
	kern, ok := i8Kernel()
	if !ok {
		t.Skip("no int8 kernel on this host")
	}
	cs := hostCaches()
	g0 := newGemmI8(kern, 0, cs)
	t.Logf("kernel %s, caches: %s; the engine's blocking: mc %d kc %d nc %d", kern.name, cacheString(cs), g0.mc, g0.kc, g0.nc)
	blks := sweepBlocks("HWPROBE_I8_BLOCKS", []blk{{g0.mc, g0.kc, g0.nc}, {60, 1024, 4096}, {120, 1024, 4096}, {120, 2048, 4096}, {240, 512, 4096}})
	for _, f := range strings.Split(sizes, ",") {
		n, _ := strconv.Atoi(f)
		r := rand.New(rand.NewPCG(1, 2))
		a, b, c := randU8(r, n*n), randS8For(kern, r, n*n), make([]int32, n*n)
		best := make([]float64, len(blks))
		for range 3 {
			for i, bl := range blks {
				g := newGemmI8(kern, 0, cs)
				g.mc, g.kc, g.nc = bl.mc, bl.kc, bl.nc
				g.I8gemm(n, n, n, a, n, b, n, c, n)
				for range 3 {
					t0 := time.Now()
					g.I8gemm(n, n, n, a, n, b, n, c, n)
					best[i] = max(best[i], 2*float64(n)*float64(n)*float64(n)/time.Since(t0).Seconds()/1e9)
				}
			}
		}
		for i, bl := range blks {
			t.Logf("SWEEP int8 n=%d mc=%d kc=%d nc=%d: %.1f GOP/s", n, bl.mc, bl.kc, bl.nc, best[i])
		}
		if err := checkI8Sample(a, b, c, n, n, n); err != nil {
			t.Errorf("n=%d: %v", n, err)
		}
	}
}

// blk is one blocking a sweep times.
type blk struct{ mc, kc, nc int }

// sweepBlocks reads the blockings of a sweep from the environment variable
// env ("mc,kc,nc ..."), or gives def.
func sweepBlocks(env string, def []blk) []blk {
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	var blks []blk
	for _, f := range strings.Fields(s) {
		p := strings.Split(f, ",")
		mc, _ := strconv.Atoi(p[0])
		kc, _ := strconv.Atoi(p[1])
		nc, _ := strconv.Atoi(p[2])
		blks = append(blks, blk{mc, kc, nc})
	}
	return blks
}
