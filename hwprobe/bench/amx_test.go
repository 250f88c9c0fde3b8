package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// amxKernelOrSkip returns the AMX kernel, or skips: the AMX tests run only
// on a CPU with AMX whose kernel grants tile data (Sapphire Rapids and
// later Xeons, Linux 5.16 or later).
func amxKernelOrSkip(t *testing.T, get func() (sgemmKernel, error)) sgemmKernel {
	t.Helper()
	k, err := get()
	if err != nil {
		t.Skipf("AMX kernel does not run here: %v", err)
	}
	return k
}

// packATiles puts element (i, p) of each panel where a tile load reads
// it: chunk p/64 (in bytes of k), row i of the panel, byte p%64; rows past
// the block are zero. Pure: runs on every host.
func TestPackATiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range []struct{ mb, kb, ld, mr int }{{32, 64, 64, 32}, {70, 192, 200, 32}, {5, 128, 129, 32}, {33, 64, 70, 32}} {
		a := make([]byte, s.mb*s.ld)
		for i := range a {
			a[i] = byte(1 + r.IntN(255)) // no zeros: a zero read where padding belongs shows
		}
		panels := (s.mb + s.mr - 1) / s.mr
		dst := make([]float32, panels*s.mr*s.kb/4)
		for i := range dst {
			dst[i] = math.Float32frombits(0xdeadbeef)
		}
		packATiles(dst, a, s.ld, s.mb, s.kb, s.mr)
		out := bytesOfFloat(dst)
		for pi := 0; pi < panels; pi++ {
			base := pi * s.mr * s.kb
			for i := 0; i < s.mr; i++ {
				for p := 0; p < s.kb; p++ {
					got := out[base+(p/64*s.mr+i)*64+p%64]
					want := byte(0)
					if row := pi*s.mr + i; row < s.mb {
						want = a[row*s.ld+p]
					}
					if got != want {
						t.Fatalf("%+v: panel %d row %d k byte %d = %d, want %d", s, pi, i, p, got, want)
					}
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("packATiles took a k that is not a multiple of 64 bytes")
		}
	}()
	packATiles(make([]float32, 32*16), make([]byte, 32*40), 40, 32, 40, 32)
}

func bytesOfFloat(s []float32) []byte {
	out := make([]byte, 4*len(s))
	for i, v := range s {
		b := math.Float32bits(v)
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	return out
}

// The AMX blocking follows the caches and keeps every block a whole number
// of tiles.
func TestAMXBlocking(t *testing.T) {
	for _, c := range []caches{
		{L1D: 48 << 10, L2: 2 << 20, L3: 300 << 20}, // Sapphire/Emerald Rapids
		{L1D: 48 << 10, L2: 2 << 20, L3: 105 << 20},
		{L1D: 32 << 10, L2: 1 << 20},
		{},
	} {
		for _, elem := range []int{1, 2} {
			mc, kc, nc := amxBlocking(c, elem)
			if kc*elem%64 != 0 || mc%32 != 0 || nc%32 != 0 || kc <= 0 || mc <= 0 || nc <= 0 {
				t.Errorf("%+v elem %d: mc %d kc %d nc %d not whole tiles", c, elem, mc, kc, nc)
			}
			if l2 := max(c.L2, 256<<10); int64(kc*elem*32) > l2/8 && kc*elem > 512 {
				t.Errorf("%+v elem %d: B micro-panel %d bytes over an eighth of L2", c, elem, kc*elem*32)
			}
			if l2 := max(c.L2, 256<<10); int64(mc*kc*elem) > l2/2 {
				t.Errorf("%+v elem %d: A block %d bytes over half of L2", c, elem, mc*kc*elem)
			}
		}
	}
	if mc, kc, _ := amxBlocking(caches{L1D: 48 << 10, L2: 2 << 20}, 2); kc != 4096 || mc != 128 {
		t.Errorf("bf16 blocking for a 2 MiB L2: mc %d kc %d, want 128 and 4096 (256 KiB micro-panels, a 1 MiB A block)", mc, kc)
	}
}

// The AMX-BF16 engine against float64: products of bf16 values are exact
// in fp32, so only fp32 accumulation error remains. Shapes leave partial
// row and column tiles, several k, row and column blocks; one, three and
// sixteen threads (the shared and the column split).
func TestAMXBF16Gemm(t *testing.T) {
	kern := amxKernelOrSkip(t, amxBF16Kernel)
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct{ m, n, k int }{{1, 1, 32}, {31, 33, 64}, {32, 32, 32}, {100, 70, 640}, {700, 45, 1024}, {64, 1024, 1024}, {257, 300, 2048}} {
		for _, threads := range []int{1, 3, 16} {
			for _, small := range []bool{false, true} {
				t.Run(fmt.Sprintf("t%d/%dx%dx%d/small=%v", threads, s.m, s.n, s.k, small), func(t *testing.T) {
					lda, ldb, ldc := s.k+3, s.n+1, s.n+5
					a16 := toBF16Slice(randMat(r, s.m*lda))
					b16 := toBF16Slice(randMat(r, s.k*ldb))
					c := randMat(r, s.m*ldc) // overwritten: beta is 0
					want := refGemm(false, false, s.m, s.n, s.k, 1, fromBF16Slice(a16), lda, fromBF16Slice(b16), ldb, 0, c, ldc)
					g := newGemmAMX(kern, false, threads, caches{L1D: 48 << 10, L2: 2 << 20, L3: 300 << 20})
					if small {
						g.kc, g.mc, g.nc = 64, 2*kern.mr, 3*kern.nr
					}
					g.Bgemm(s.m, s.n, s.k, a16, lda, b16, ldb, c, ldc)
					bound := 1e-5 * math.Sqrt(float64(s.k)+1) * math.Max(1, math.Sqrt(float64(s.k))/4)
					for i := 0; i < s.m; i++ {
						for j := 0; j < s.n; j++ {
							if d := math.Abs(float64(c[i*ldc+j]) - want[i*s.n+j]); d > bound {
								t.Fatalf("C[%d,%d] = %g, want %g", i, j, c[i*ldc+j], want[i*s.n+j])
							}
						}
					}
				})
			}
		}
	}
}

// The AMX-INT8 engine equals the scalar product exactly, per call and
// with B packed once (PackB8), with odd and even leading dimensions.
func TestAMXI8GemmExact(t *testing.T) {
	kern := amxKernelOrSkip(t, amxI8Kernel)
	r := rand.New(rand.NewPCG(9, 9))
	for _, s := range []struct{ m, n, k int }{{1, 1, 64}, {31, 33, 64}, {32, 32, 128}, {200, 70, 640}, {700, 45, 1024}, {64, 1024, 1024}, {257, 300, 4096}} {
		for _, threads := range []int{1, 3, 16} {
			for _, small := range []bool{false, true} {
				t.Run(fmt.Sprintf("t%d/%dx%dx%d/small=%v", threads, s.m, s.n, s.k, small), func(t *testing.T) {
					g := newGemmAMX(kern, true, threads, caches{L1D: 48 << 10, L2: 2 << 20, L3: 300 << 20})
					if small {
						g.kc, g.mc, g.nc = 128, 2*kern.mr, 3*kern.nr
					}
					checkI8Engine(t, g, s.m, s.n, s.k, r)
				})
			}
		}
	}
}

// An AMX engine refuses a k its tiles cannot cover, rather than
// computing a wrong product. Pure: the check runs before any kernel.
func TestAMXEngineRefusesPartialK(t *testing.T) {
	kern := sgemmKernel{name: "amx-under-test", mr: 32, nr: 32, tileK: 64, fn: func(int, *float32, *float32, *float32, int) {
		t.Fatal("the kernel ran")
	}}
	g := newGemmAMX(kern, true, 1, caches{})
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "multiple of 64") {
			t.Errorf("I8gemm with k=100 on an AMX engine: recovered %v, want a panic naming the multiple", r)
		}
	}()
	g.I8gemm(32, 32, 100, make([]uint8, 32*100), 100, make([]int8, 100*32), 32, make([]int32, 32*32), 32)
}

// TestAMXSweep times the AMX engines over blockings and the share
// threshold, for choosing amxBlocking's rules on a CPU with AMX. It runs
// only with HWPROBE_AMX_SWEEP set (a list of n, e.g. "2048,4096") and
// prints; it asserts nothing beyond correctness.
func TestAMXSweep(t *testing.T) {
	sizes := os.Getenv("HWPROBE_AMX_SWEEP")
	if sizes == "" {
		t.Skip("set HWPROBE_AMX_SWEEP=2048,4096 to time AMX blockings")
	}
	bf, err1 := amxBF16Kernel()
	i8, err2 := amxI8Kernel()
	if err1 != nil || err2 != nil {
		t.Skipf("AMX kernels do not run here: %v; %v", err1, err2)
	}
	cs := hostCaches()
	t.Logf("caches: %s", cacheString(cs))
	for _, f := range strings.Split(sizes, ",") {
		n, _ := strconv.Atoi(f)
		r := rand.New(rand.NewPCG(1, 2))
		a16, b16 := toBF16Slice(randMat(r, n*n)), toBF16Slice(randMat(r, n*n))
		c := make([]float32, n*n)
		a8, b8, c8 := randU8(r, n*n), randS8(r, n*n), make([]int32, n*n)
		for _, quad := range []bool{false, true} {
			kern, elem := bf, 2
			if quad {
				kern, elem = i8, 1
			}
			for _, kcBytes := range []int{4096, 8192, 16384} {
				for _, share := range []int{2, 16} {
					g := newGemmAMX(kern, quad, 0, cs)
					g.kc = kcBytes / elem
					g.mc = min(64*32, max(32, int(max(cs.L2, 256<<10)/2/int64(kcBytes))/32*32))
					g.shareTiles = share
					call := func() { g.Bgemm(n, n, n, a16, n, b16, n, c, n) }
					if quad {
						call = func() { g.I8gemm(n, n, n, a8, n, b8, n, c8, n) }
					}
					call()
					best := 0.0
					for range 5 {
						t0 := time.Now()
						call()
						best = max(best, 2*float64(n)*float64(n)*float64(n)/time.Since(t0).Seconds()/1e9)
					}
					t.Logf("SWEEP %s n=%d kc_bytes=%d mc=%d nc=%d share=%d threads=%d: %.0f G/s", kern.name, n, kcBytes, g.mc, g.nc, share, g.threads, best)
				}
			}
		}
		if err := checkI8Sample(a8, b8, c8, n, n, n); err != nil {
			t.Errorf("int8 n=%d: %v", n, err)
		}
	}
}
