package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func refI8(m, n, k int, a []uint8, lda int, b []int8, ldb int) []int32 {
	out := make([]int32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s int32
			for p := 0; p < k; p++ {
				s += int32(a[i*lda+p]) * int32(b[p*ldb+j])
			}
			out[i*n+j] = s
		}
	}
	return out
}

func i8KernelOrSkip(t *testing.T) sgemmKernel {
	t.Helper()
	k, ok := i8Kernel()
	if !ok {
		t.Skip("this host lacks avx512_vnni and avx2 (or is not amd64): no int8 kernel runs here")
	}
	return k
}

// The int8 engine's product equals the scalar one exactly, for shapes
// that leave partial tiles (of up to 8 rows: the 8-row kernel; of 13: the
// whole one), partial k quads, odd leading dimensions and
// several k, row and column blocks, on one, three and sixteen threads, with B
// packed per call and once (PackB8).
func TestI8gemmExact(t *testing.T) {
	i8KernelOrSkip(t)
	for _, kern := range i8Kernels() {
		t.Run(kern.name, func(t *testing.T) { testI8gemmExact(t, kern) })
	}
}

func testI8gemmExact(t *testing.T, kern sgemmKernel) {
	sizes := []struct{ m, n, k int }{
		{1, 1, 1}, {1, 32, 4}, {14, 32, 64}, {13, 31, 7}, {15, 33, 257}, {29, 65, 300},
		{3, 300, 261}, {64, 1024, 1024}, {200, 70, 130}, {700, 45, 133}, {680, 96, 70},
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, threads := range []int{1, 3, 16} {
		for _, s := range sizes {
			for _, small := range []bool{false, true} {
				name := fmt.Sprintf("t%d/%dx%dx%d/small=%v", threads, s.m, s.n, s.k, small)
				t.Run(name, func(t *testing.T) {
					g := newGemmI8(kern, threads, caches{L1D: 48 << 10, L2: 1 << 20, L3: 32 << 20})
					if small {
						g.kc, g.mc, g.nc = 64, 2*kern.mr, 3*kern.nr // several blocks
					}
					checkI8Engine(t, g, s.m, s.n, s.k, r)
				})
			}
		}
	}
}

// checkI8Engine compares the engine's products with the scalar one for
// equality, with odd and even leading dimensions (extra columns), per call
// (I8gemm) and with B packed once (PackB8, I8gemmPacked).
func checkI8Engine(t *testing.T, g *gemm, m, n, k int, r *rand.Rand) {
	t.Helper()
	for _, ld := range []int{0, 1, 3} {
		lda, ldb, ldc := k+ld, n+ld, n+2*ld
		a, b := randU8(r, m*lda), randS8For(g.kern, r, k*ldb)
		want := refI8(m, n, k, a, lda, b, ldb)
		check := func(how string, c []int32) {
			t.Helper()
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					if got := c[i*ldc+j]; got != want[i*n+j] {
						t.Fatalf("%s ld+%d: C[%d,%d] = %d, want %d", how, ld, i, j, got, want[i*n+j])
					}
				}
			}
		}
		c := make([]int32, m*ldc)
		for i := range c {
			c[i] = 12345 // overwritten: C = A*B
		}
		g.I8gemm(m, n, k, a, lda, b, ldb, c, ldc)
		check("I8gemm", c)
		pb := g.PackB8(k, n, b, ldb)
		c2 := make([]int32, m*ldc)
		for i := range c2 {
			c2[i] = -777 // overwritten too
		}
		g.I8gemmPacked(m, a, lda, pb, c2, ldc)
		check("I8gemmPacked", c2)
	}
}

// The assembly B packers of every int8 kernel the host runs write what
// the Go one does.
func TestI8PackB8MatchesGo(t *testing.T) {
	i8KernelOrSkip(t)
	r := rand.New(rand.NewPCG(4, 5))
	for _, kern := range i8Kernels() {
		if kern.packQuad == nil {
			t.Errorf("%s: no assembly B packer", kern.name)
			continue
		}
		nr := kern.nr
		for _, s := range []struct{ kb, nb, ld int }{{64, 64, 64}, {67, 70, 70}, {5, 96, 99}, {130, 33, 40}, {8, 16, 16}, {12, 48, 301}} {
			b := randS8(r, s.kb*s.ld)
			kq := (s.kb + 3) / 4
			n := (s.nb + nr - 1) / nr * nr * kq
			fast, slow := make([]float32, n), make([]float32, n)
			packB8(fast, b, s.ld, s.kb, s.nb, nr, kern.packQuad)
			packB8(slow, b, s.ld, s.kb, s.nb, nr, nil)
			if !equalBits(fast, slow) {
				t.Errorf("%s packB8 %+v: the assembly packer differs from Go", kern.name, s)
			}
		}
	}
}

// The A packers of every int8 kernel the host runs (assembly for VNNI's
// 14 rows; for AVX2's 6, assembly for whole groups of 32 k and Go for the
// rest) write what the generic one does.
func TestI8PackersMatchGo(t *testing.T) {
	i8KernelOrSkip(t)
	r := rand.New(rand.NewPCG(4, 4))
	for _, kern := range i8Kernels() {
		if kern.packRows8 == nil {
			t.Errorf("%s: no A packer", kern.name)
			continue
		}
		mr := kern.mr
		for _, s := range []struct{ rows, kb, ld int }{{mr, 64, 64}, {mr, 67, 70}, {mr, 130, 131}, {2*mr + 2, 200, 202}, {mr, 3, 4}, {mr, 9, 9}, {mr, 32, 33}, {mr, 31, 32}, {mr, 95, 97}, {mr, 2048, 2051}} {
			a := randU8(r, s.rows*s.ld)
			kq := (s.kb + 3) / 4
			n := (s.rows + mr - 1) / mr * mr * kq
			fast, slow := make([]float32, n), make([]float32, n)
			packA8(fast, a, s.ld, s.rows, s.kb, mr, kern.packRows8)
			packA8(slow, a, s.ld, s.rows, s.kb, mr, nil)
			if !equalBits(fast, slow) {
				t.Errorf("%s packA8 %+v: the packer differs from the generic one", kern.name, s)
			}
		}
	}
}

func equalBits(x, y []float32) bool {
	a, b := asInt32(x), asInt32(y)
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The int8 GEMV over packed panels equals the scalar product: VNNI's on
// 32-column panels, AVX2's on the pair-summing kernel's 16-column ones
// (B in its range), each where this host has its kernel.
func TestI8gemvBandExact(t *testing.T) {
	i8KernelOrSkip(t)
	for _, kern := range i8Kernels() {
		band := i8gemvFor(kern)
		t.Run(kern.name, func(t *testing.T) {
			if band == nil {
				t.Fatalf("no int8 GEMV for %s, a kernel this host runs", kern.name)
			}
			r := rand.New(rand.NewPCG(2, 8))
			for _, s := range []struct{ k, n int }{{4, 32}, {7, 160}, {1024, 1024}, {33, 96}, {128, 224}, {5, 16}, {64, 80}} {
				g := newGemmI8(kern, 1, caches{L2: 1 << 20, L3: 32 << 20})
				b := randS8For(kern, r, s.k*s.n)
				x := randU8(r, s.k)
				pb := g.PackB8(s.k, s.n, b, s.n)
				kq := (s.k + 3) / 4
				xq := make([]uint8, 4*kq)
				copy(xq, x)
				panels := (s.n + kern.nr - 1) / kern.nr
				y := make([]int32, kern.nr*panels)
				if !band(kq, xq, pb.blocks[0], kern.nr*kq, panels, y) {
					t.Fatalf("the %s GEMV did not run on a host with its kernel", kern.name)
				}
				want := refI8(1, s.n, s.k, x, s.k, b, s.n)
				for j := range want {
					if y[j] != want[j] {
						t.Fatalf("k=%d n=%d: y[%d] = %d, want %d", s.k, s.n, j, y[j], want[j])
					}
				}
			}
		})
	}
}

// The blocking follows the caches the CPU reports.
func TestI8Blocking(t *testing.T) {
	for _, tt := range []struct {
		c          caches
		mc, kq, nc int
	}{
		{caches{L2: 1 << 20, L3: 32 << 20}, 56, 1024, 2048},  // Zen 4/5 CCD
		{caches{L2: 2 << 20, L3: 105 << 20}, 56, 2048, 3360}, // Sapphire Rapids
		{caches{L2: 256 << 10, L3: 0}, 56, 256, 512},         // no L3 reported: 8x L2
		{caches{L2: 0, L3: 0}, 56, 256, 512},                 // nothing reported: the floor
		{caches{L2: 64 << 20, L3: 1 << 30}, 504, 4096, 8192}, // bounded
	} {
		mc, kq, nc := i8Blocking(tt.c, 14, 32)
		if mc != tt.mc || kq != tt.kq || nc != tt.nc {
			t.Errorf("i8Blocking(%+v) = mc %d kq %d nc %d, want %d %d %d", tt.c, mc, kq, nc, tt.mc, tt.kq, tt.nc)
		}
	}
	// A 16-column kernel (AVX2's) is sized as the fp32 AVX2 kernel, in
	// words: on Zen 3's caches, 512 quads (k 2048), 84 rows, 1024 columns.
	avx2 := sgemmKernel{name: "avx2-int8-under-test", mr: 6, nr: 16, pairs: true}
	g := newGemmI8(avx2, 1, caches{L1D: 32 << 10, L2: 512 << 10, L3: 32 << 20})
	if g.mc != 84 || g.kc != 2048 || g.nc != 1024 {
		t.Errorf("16-column int8 kernel on Zen 3 caches: mc %d kc %d nc %d, want 84 2048 1024", g.mc, g.kc, g.nc)
	}
}

// The benchmark runs and reports GOP/s against the peak of the kernel it
// ran (AMX-INT8 where it runs, else VNNI), or says why not.
func TestInt8GemmResult(t *testing.T) {
	cfg := newConfig(Options{Quick: true, GemmN: 256, Reps: 2, Threads: 2})
	peak := cpuPeakFor(currentCPU(), 2, clockTimers{
		vector: func(int) (float64, int, bool) { return 100, 512, true },
		chain:  func(int) float64 { return 3 },
	})
	r := int8GemmResult(context.Background(), cfg, peak)
	if _, ok := i8Kernel(); !ok {
		if r.Ran || !strings.Contains(r.Reason, "avx512_vnni") {
			t.Fatalf("without VNNI: %+v, want not run naming avx512_vnni", r)
		}
		return
	}
	want := peak.GOPSInt8()
	if _, err := amxI8Kernel(); err == nil {
		want = peak.GOPSInt8AMX()
	}
	if !r.Ran || r.Unit != "GOP/s" || r.Value <= 0 || r.Peak != want || r.Params["kc"] == "" || !strings.Contains(r.Params["blocking"], "L2") {
		t.Fatalf("%+v", r)
	}
	t.Logf("int8 n=256: %.1f GOP/s (%.0f%% of %.0f)", r.Value, 100*r.Efficiency, r.Peak)
}

// The int8 peak rests on VPDPBUSD running at the fp32 FMA rate (4x the
// FLOPs in ops): logged here from the two rate loops on this host, not
// judged (the host is shared).
func TestVNNIRateAgainstFMA(t *testing.T) {
	run, ops, ok := vnniLoop()
	frun, flops, _, fok := fmaLoop()
	if !ok || !fok {
		t.Skip("no VNNI rate loop on this host")
	}
	v := timeFMALoop(run, ops, 1)
	f := timeFMALoop(frun, flops, 1)
	t.Logf("one core: VPDPBUSD %.1f GOP/s, VFMADD231PS %.1f GFLOP/s: ratio %.2f (the peak assumes 4)", v, f, v/f)
}

// A kernel that sums pairs into int16 (AVX2's) is exact at the edges of
// the B range it is fed, and saturates beyond it: the bound is real, and
// the benchmark's inputs keep to it.
func TestI8PairsKernelBound(t *testing.T) {
	var kern sgemmKernel
	for _, k := range i8Kernels() {
		if k.pairs {
			kern = k
		}
	}
	if kern.fn == nil {
		t.Skip("this host lacks avx2 (or is not amd64): no pair-summing int8 kernel runs here")
	}
	const m, n, k = 6, 16, 64
	a := make([]uint8, m*k)
	for i := range a {
		a[i] = 255
	}
	for _, tt := range []struct {
		b     int8
		exact bool
	}{{i8PairsB, true}, {-i8PairsB, true}, {127, false}, {-128, false}} {
		b := make([]int8, k*n)
		for i := range b {
			b[i] = tt.b
		}
		g := newGemmI8(kern, 1, caches{L2: 1 << 20, L3: 32 << 20})
		c := make([]int32, m*n)
		g.I8gemm(m, n, k, a, k, b, n, c, n)
		want := int32(255) * int32(tt.b) * k
		if got := c[0]; (got == want) != tt.exact {
			t.Errorf("B all %d: C[0,0] = %d, the exact sum %d; want exact %v", tt.b, got, want, tt.exact)
		}
	}
}
