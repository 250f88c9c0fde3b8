package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refGemm is the float64 reference: C = alpha*op(A)*op(B) + beta*C.
func refGemm(transA, transB bool, m, n, k int, alpha float64, a []float32, lda int, b []float32, ldb int, beta float64, c []float32, ldc int) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			out[i*n+j] = refEntry(transA, transB, i, j, k, alpha, a, lda, b, ldb, beta, c, ldc)
		}
	}
	return out
}

// refEntry is entry (i, j) of refGemm's result.
func refEntry(transA, transB bool, i, j, k int, alpha float64, a []float32, lda int, b []float32, ldb int, beta float64, c []float32, ldc int) float64 {
	var s float64
	for p := 0; p < k; p++ {
		ai, bi := i*lda+p, p*ldb+j
		if transA {
			ai = p*lda + i
		}
		if transB {
			bi = j*ldb + p
		}
		s += float64(a[ai]) * float64(b[bi])
	}
	return alpha*s + beta*float64(c[i*ldc+j])
}

func TestGemmAgainstFloat64(t *testing.T) {
	sizes := []struct {
		m, n, k        int
		transA, transB bool
		alpha, beta    float32
	}{
		{1, 1, 1, false, false, 1, 0},
		{13, 31, 7, false, false, 1, 0},
		{15, 33, 257, false, false, 1, 0},
		{29, 65, 300, false, false, 0.5, 1},
		{100, 45, 513, true, false, 1, 0.25},
		{37, 70, 129, false, true, 2, 0},
		{61, 97, 33, true, true, 1, -1},
		{200, 7, 20, false, false, 1, 0},
		{3, 300, 260, false, false, 1, 0},
		{150, 100, 200, false, false, 0.5, 1},
		{700, 45, 130, false, false, 0.5, 0}, // rows shared between 3 threads
		{680, 33, 70, false, true, 1, 0.5},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, kc := range kernelsUnderTest(t, true) {
		for _, threads := range []int{1, 3} {
			for _, s := range sizes {
				name := fmt.Sprintf("%s/t%d/%dx%dx%d/ta=%v,tb=%v", kc.kern.name, threads, s.m, s.n, s.k, s.transA, s.transB)
				t.Run(name, func(t *testing.T) {
					lda, ldb, ldc := s.k+3, s.n+1, s.n+5
					if s.transA {
						lda = s.m + 2
					}
					if s.transB {
						ldb = s.k + 4
					}
					rowsA, rowsB := s.m, s.k
					if s.transA {
						rowsA = s.k
					}
					if s.transB {
						rowsB = s.n
					}
					a := randMat(r, rowsA*lda)
					b := randMat(r, rowsB*ldb)
					c := randMat(r, s.m*ldc)
					want := refGemm(s.transA, s.transB, s.m, s.n, s.k, float64(s.alpha), a, lda, b, ldb, float64(s.beta), c, ldc)
					g := newGemm(kc.kern, kc.bf16, threads)
					g.kc, g.mc, g.nc = 64, 2*kc.kern.mr, 3*kc.kern.nr // force several blocks
					g.Sgemm(s.transA, s.transB, s.m, s.n, s.k, s.alpha, a, lda, b, ldb, s.beta, c, ldc)
					// Relative error against the magnitude of the sum of |terms|.
					bound := kc.tol * math.Sqrt(float64(s.k)+1) * math.Max(1, math.Abs(float64(s.alpha)))
					for i := 0; i < s.m; i++ {
						for j := 0; j < s.n; j++ {
							got := float64(c[i*ldc+j])
							if d := math.Abs(got - want[i*s.n+j]); d > bound*math.Max(1, math.Sqrt(float64(s.k))/4) {
								t.Fatalf("C[%d,%d] = %g, want %g (|diff| %g > %g)", i, j, got, want[i*s.n+j], d, bound)
							}
						}
					}
				})
			}
		}
	}
}

func BenchmarkSgemm(b *testing.B) {
	for _, kc := range hostKernels(true) {
		for _, n := range []int{512, 1024, 2048} {
			b.Run(fmt.Sprintf("%s/n=%d", kc.kern.name, n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				x, y, z := randMat(r, n*n), randMat(r, n*n), make([]float32, n*n)
				g := newGemm(kc.kern, kc.bf16, 0)
				g.Sgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n)
				b.ResetTimer()
				for range b.N {
					g.Sgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n)
				}
				b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestBgemmAgainstFloat64 checks the bf16-input GEMM: products of bf16
// values are exact in fp32, so only fp32 accumulation error remains.
func TestBgemmAgainstFloat64(t *testing.T) {
	kern := bf16KernelUnderTest(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct{ m, n, k int }{{1, 1, 1}, {13, 31, 7}, {15, 33, 257}, {29, 65, 300}, {100, 45, 513}, {3, 300, 131}, {460, 70, 131}} {
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("t%d/%dx%dx%d", threads, s.m, s.n, s.k), func(t *testing.T) {
				g := newGemm(kern, true, threads)
				g.kc, g.mc, g.nc = 64, 2*kern.mr, 3*kern.nr
				bound := 1e-5 * math.Sqrt(float64(s.k)+1) * math.Max(1, math.Sqrt(float64(s.k))/4)
				bgemmMatches(t, g, r, s.m, s.n, s.k, bound)
			})
		}
	}
}

// TestBgemmWidened checks the bf16-input GEMM of a CPU without bf16
// instructions: every fp32 kernel this host runs (the portable one on
// every host) multiplies bf16 inputs widened as they are packed, with
// blocks small enough that every edge and k block is crossed.
func TestBgemmWidened(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, kc := range kernelsUnderTest(t, false) {
		kern := kc.kern
		for _, s := range []struct{ m, n, k int }{{1, 1, 1}, {6, 16, 64}, {13, 31, 7}, {15, 33, 257}, {29, 65, 300}, {100, 45, 513}, {460, 70, 131}} {
			for _, threads := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/t%d/%dx%dx%d", kern.name, threads, s.m, s.n, s.k), func(t *testing.T) {
					g := newGemm(kern, false, threads)
					g.kc, g.mc, g.nc = 64, 2*kern.mr, 3*kern.nr
					g.shareTiles = 1 // the shared-B split too, at these sizes
					bgemmMatches(t, g, r, s.m, s.n, s.k, kc.tol*math.Sqrt(float64(s.k)+1))
				})
			}
		}
	}
}

// bgemmMatches runs g.Bgemm on random bf16 A and B (m x k and k x n, odd
// leading dimensions, a C it must overwrite) and fails t where an entry
// of C is further than bound from the float64 product of the same values.
func bgemmMatches(t *testing.T, g *gemm, r *rand.Rand, m, n, k int, bound float64) {
	t.Helper()
	lda, ldb, ldc := k+3, n+1, n+5
	a16 := toBF16Slice(randMat(r, m*lda))
	b16 := toBF16Slice(randMat(r, k*ldb))
	c := randMat(r, m*ldc) // overwritten: beta is 0
	want := refGemm(false, false, m, n, k, 1, fromBF16Slice(a16), lda, fromBF16Slice(b16), ldb, 0, c, ldc)
	g.Bgemm(m, n, k, a16, lda, b16, ldb, c, ldc)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			if d := math.Abs(float64(c[i*ldc+j]) - want[i*n+j]); d > bound {
				t.Fatalf("C[%d,%d] = %g, want %g", i, j, c[i*ldc+j], want[i*n+j])
			}
		}
	}
}

// TestPackWide checks the widening packers value by value against the
// layout packA and packB give fp32 operands: k-major panels, each bf16
// value as the fp32 of its bits shifted up by 16, partial panels padded
// with zeros; 16-column panels of B take the assembly copy where the
// host has AVX2.
func TestPackWide(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, mr := range []int{4, 6, 14} {
		for _, kb := range []int{1, 7, 8, 9, 64, 515} {
			ld, mb := kb+5, 2*mr+3
			a := toBF16Slice(randMat(r, mb*ld))
			got := make([]float32, (mb+mr)*kb)
			for i := range got {
				got[i] = float32(math.NaN()) // every slot is written
			}
			packAWide(got, a, ld, mb, kb, mr)
			for ir := 0; ir < mb; ir += mr {
				for p := 0; p < kb; p++ {
					for i := 0; i < mr; i++ {
						want := float32(0)
						if ir+i < mb {
							want = math.Float32frombits(uint32(a[(ir+i)*ld+p]) << 16)
						}
						if v := got[ir*kb+p*mr+i]; v != want {
							t.Fatalf("packAWide mr=%d kb=%d: row %d k %d = %g, want %g", mr, kb, ir+i, p, v, want)
						}
					}
				}
			}
		}
	}
	for _, nr := range []int{8, 16, 32} {
		for _, kb := range []int{1, 7, 64} {
			ld, nb := 3*nr+9, 2*nr+5
			b := toBF16Slice(randMat(r, kb*ld))
			got := make([]float32, (nb+nr)*kb)
			for i := range got {
				got[i] = float32(math.NaN())
			}
			packBWide(got, b, ld, kb, nb, nr)
			for jr := 0; jr < nb; jr += nr {
				for p := 0; p < kb; p++ {
					for j := 0; j < nr; j++ {
						want := float32(0)
						if jr+j < nb {
							want = math.Float32frombits(uint32(b[p*ld+jr+j]) << 16)
						}
						if v := got[jr*kb+p*nr+j]; v != want {
							t.Fatalf("packBWide nr=%d kb=%d: k %d column %d = %g, want %g", nr, kb, p, jr+j, v, want)
						}
					}
				}
			}
		}
	}
}

// TestPackA6 checks the 6-row fp32 packer (its AVX2 groups of 8 k steps
// where the host has AVX2, the rest in Go) value by value: k-major, six
// rows a k step, nothing written past the panel.
func TestPackA6(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, kb := range []int{1, 7, 8, 9, 16, 64, 515} {
		ld := kb + 3
		a := randMat(r, 6*ld)
		got := make([]float32, 6*kb+8)
		for i := range got {
			got[i] = float32(math.NaN())
		}
		packA6(got, a, ld, kb)
		for p := 0; p < kb; p++ {
			for i := 0; i < 6; i++ {
				if v, want := got[6*p+i], a[i*ld+p]; v != want {
					t.Fatalf("kb=%d: row %d k %d = %g, want %g", kb, i, p, v, want)
				}
			}
		}
		for i, v := range got[6*kb:] {
			if !math.IsNaN(float64(v)) {
				t.Fatalf("kb=%d: wrote %g past the panel, at %d", kb, v, 6*kb+i)
			}
		}
	}
}

// TestPickBF16Kernel checks what cpu_bf16_gemm runs, for fixed machines:
// AMX where it runs, else the AVX-512 bf16 kernel, else the fp32 kernel
// on widened inputs.
func TestPickBF16Kernel(t *testing.T) {
	amx := sgemmKernel{name: "amx", tileK: 32}
	vec := sgemmKernel{name: "avx512-bf16"}
	fp32 := sgemmKernel{name: "avx2"}
	refused := errors.New("tile data refused")
	for _, c := range []struct {
		amxErr  error
		vecOK   bool
		want    string
		widened bool
	}{
		{nil, true, "amx", false},
		{refused, true, "avx512-bf16", false},
		{refused, false, "avx2", true},
		{errors.New("no AMX-BF16"), false, "avx2", true},
	} {
		k, w := pickBF16Kernel(amx, c.amxErr, vec, c.vecOK, fp32)
		if k.name != c.want || w != c.widened {
			t.Errorf("amxErr %v, vecOK %v: got %s widened %v, want %s widened %v", c.amxErr, c.vecOK, k.name, w, c.want, c.widened)
		}
	}
}

// TestPackRows checks each kernel's fast panel packer against the scalar
// packA, odd and even k, alpha 1 and not.
func TestPackRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, kc := range kernelsUnderTest(t, false) {
		kern := kc.kern
		if kern.packRows == nil {
			continue
		}
		for _, kb := range []int{1, 2, 7, 64, 513} {
			for _, alpha := range []float32{1, -0.5} {
				ld := kb + 3
				a := randMat(r, 3*kern.mr*ld)
				A := rowMajor(a, ld, false).at(1, 2)
				mb := 2*kern.mr + 1 // two full panels and a partial one
				want := make([]float32, (mb+kern.mr)*kb)
				got := make([]float32, len(want))
				packA(want, A, mb, kb, kern.mr, alpha, nil)
				packA(got, A, mb, kb, kern.mr, alpha, kern.packRows)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s kb=%d alpha=%g: packed[%d] = %g, want %g", kern.name, kb, alpha, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestPackBF16Fast checks the bf16 kernel's fast packers against the
// scalar packA16 and packB16: odd and even k, whole and partial panels.
func TestPackBF16Fast(t *testing.T) {
	kern := bf16KernelUnderTest(t)
	if kern.packRows16 == nil || kern.packPair == nil {
		t.Fatalf("the bf16 kernel %s has no fast packers", kern.name)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, kb := range []int{1, 2, 3, 8, 63, 512, 513} {
		ld := kb + 5
		a := toBF16Slice(randMat(r, 3*kern.mr*ld))
		mb := 2*kern.mr + 3
		kp := (kb + 1) / 2
		want := make([]float32, (mb+kern.mr)*kp)
		got := make([]float32, len(want))
		packA16(want, a[ld+1:], ld, mb, kb, kern.mr, nil)
		packA16(got, a[ld+1:], ld, mb, kb, kern.mr, kern.packRows16)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("packA16 kb=%d: word %d = %#x, want %#x", kb, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
		nb := 3*kern.nr + 5
		ldb := nb + 7
		b := toBF16Slice(randMat(r, (kb+1)*ldb))
		want = make([]float32, (nb+kern.nr)*kp)
		got = make([]float32, len(want))
		packB16(want, b[2:], ldb, kb, nb, kern.nr, nil)
		packB16(got, b[2:], ldb, kb, nb, kern.nr, kern.packPair)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("packB16 kb=%d: word %d = %#x, want %#x", kb, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}

// TestGemmSharedCounters covers the shared-B path where the B panels are
// handed out several chunks per block (nc of 20 panels, the last chunk
// partial) and the row blocks outnumber the threads, with beta 0 and not.
func TestGemmSharedCounters(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, kc := range kernelsUnderTest(t, true) {
		t.Run(kc.kern.name, func(t *testing.T) {
			for _, threads := range []int{2, 3} {
				for _, beta := range []float32{0, 0.5} {
					m, n, k := 48*kc.kern.mr+5, 21*kc.kern.nr+3, 150
					lda, ldb, ldc := k+1, n+2, n+3
					a, b, c := randMat(r, m*lda), randMat(r, k*ldb), randMat(r, m*ldc)
					want := refGemm(false, false, m, n, k, 1, a, lda, b, ldb, float64(beta), c, ldc)
					g := newGemm(kc.kern, kc.bf16, threads)
					g.kc, g.mc, g.nc = 64, 3*kc.kern.mr, 20*kc.kern.nr
					g.Sgemm(false, false, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
					bound := kc.tol * math.Sqrt(float64(k)+1) * math.Max(1, math.Sqrt(float64(k))/4)
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							if d := math.Abs(float64(c[i*ldc+j]) - want[i*n+j]); d > bound {
								t.Fatalf("t%d beta=%g: C[%d,%d] = %g, want %g", threads, beta, i, j, c[i*ldc+j], want[i*n+j])
							}
						}
					}
				}
			}
		})
	}
}

// TestSgemmPacked: a product with B packed once (PackB) is bit for bit the
// product Sgemm computes on the same engine, for every kernel, on both
// thread splits (few rows: columns; many rows: the shared path, over two
// column blocks), with k over two k blocks (the last one short), n off the
// panel width, B transposed or not, alpha
// and beta not 1; and the packed B is reused across products.
func TestSgemmPacked(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, kc := range kernelsUnderTest(t, true) {
		for _, tc := range []struct {
			m, n, k int
			transB  bool
		}{{64, 1024, 1024, false}, {5, 77, 40, true}, {500, 200, 1500, false}, {460, 33, 2100, true},
			{64, 1000, 1500, false}, {448, 2080, 1030, true}} {
			t.Run(fmt.Sprintf("%s/bf16=%v/%dx%dx%d/transB=%v", kc.kern.name, kc.bf16, tc.m, tc.n, tc.k, tc.transB), func(t *testing.T) {
				g := newGemm(kc.kern, kc.bf16, 2)
				ldb := tc.n + 3
				if tc.transB {
					ldb = tc.k + 3
				}
				b := randMat(r, max(tc.k, tc.n)*ldb)
				pb := g.PackB(tc.transB, tc.k, tc.n, b, ldb)
				for round := range 2 {
					a := randMat(r, tc.m*tc.k)
					c0 := randMat(r, tc.m*tc.n)
					want, got := append([]float32(nil), c0...), append([]float32(nil), c0...)
					beta := float32(round) * 0.5 // 0, then 0.5
					g.Sgemm(false, tc.transB, tc.m, tc.n, tc.k, 1.5, a, tc.k, b, ldb, beta, want, tc.n)
					g.SgemmPacked(false, tc.m, 1.5, a, tc.k, pb, beta, got, tc.n)
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("round %d: c[%d] = %g packed, %g unpacked", round, i, got[i], want[i])
						}
					}
					// Against float64 at the four corners and 2000 entries
					// drawn at random: a blocking error spoils whole tiles,
					// and the full float64 product of these sizes took
					// seconds per case.
					entries := []int{0, tc.n - 1, (tc.m - 1) * tc.n, tc.m*tc.n - 1}
					for range 2000 {
						entries = append(entries, r.IntN(tc.m*tc.n))
					}
					for _, e := range entries {
						v := refEntry(false, tc.transB, e/tc.n, e%tc.n, tc.k, 1.5, a, tc.k, b, ldb, float64(beta), c0, tc.n)
						if d := math.Abs(float64(got[e]) - v); d > kc.tol*(1+math.Abs(v))*math.Sqrt(float64(tc.k)) {
							t.Fatalf("round %d: c[%d] = %g, float64 %g", round, e, got[e], v)
						}
					}
				}
			})
		}
	}
}

// fp32Blocking's sizes for the caches of known CPUs, and its bounds.
func TestFP32Blocking(t *testing.T) {
	for _, tt := range []struct {
		c          caches
		mc, kc, nc int
	}{
		{caches{L1D: 32 << 10, L2: 512 << 10, L3: 32 << 20}, 84, 512, 1024}, // Zen 3 CCD
		{caches{L1D: 48 << 10, L2: 2 << 20, L3: 105 << 20}, 222, 768, 2240}, // Sapphire Rapids
		{caches{L1D: 32 << 10, L2: 256 << 10, L3: 0}, 42, 512, 512},         // no L3 reported: 8x L2, and the floor of nc
		{caches{}, 84, 256, 512}, // nothing reported: the floors
		{caches{L1D: 1 << 20, L2: 64 << 20, L3: 1 << 30}, 384, 1024, 8192}, // bounded
	} {
		mc, kc, nc := fp32Blocking(tt.c, 6, 16)
		if mc != tt.mc || kc != tt.kc || nc != tt.nc {
			t.Errorf("fp32Blocking(%+v) = mc %d kc %d nc %d, want %d %d %d", tt.c, mc, kc, nc, tt.mc, tt.kc, tt.nc)
		}
		if mc%6 != 0 || nc%16 != 0 {
			t.Errorf("fp32Blocking(%+v): mc %d or nc %d not whole tiles", tt.c, mc, nc)
		}
	}
}

// balancedTiles evens the busiest thread's tiles without growing blocks.
func TestBalancedTiles(t *testing.T) {
	for _, tt := range []struct{ tiles, most, t, want int }{
		{342, 21, 2, 19}, // n=2048 on AVX2: 18 blocks, 9 each (21 made 17: 9 and 8)
		{683, 21, 2, 19}, // n=4096: 36 blocks of 19, 342 tiles each at most (21: 33 blocks, 357)
		{147, 5, 16, 5},  // n=2048 on AVX-512, 16 threads: 30 blocks, 2 each at most
		{10, 5, 2, 5},    // small: two blocks of 5
		{1, 1, 4, 1},     // one tile
		{100, 0, 2, 1},   // a degenerate bound
	} {
		got := balancedTiles(tt.tiles, tt.most, tt.t)
		if got != tt.want {
			t.Errorf("balancedTiles(%d, %d, %d) = %d, want %d", tt.tiles, tt.most, tt.t, got, tt.want)
		}
		if got > max(tt.most, 1) {
			t.Errorf("balancedTiles(%d, %d, %d) = %d, above the bound", tt.tiles, tt.most, tt.t, got)
		}
	}
}

// The AVX 16-column B packer copies what the Go loop does.
func TestPackPanel16(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, s := range []struct{ kb, ld int }{{1, 16}, {7, 16}, {64, 33}, {256, 2048}} {
		src := randMat(r, (s.kb-1)*s.ld+16)
		got, want := make([]float32, 16*s.kb+1), make([]float32, 16*s.kb+1)
		if !packPanel16Rows(got[:16*s.kb], src, s.ld, s.kb) {
			t.Skip("no AVX2 packer on this host or build")
		}
		for p := 0; p < s.kb; p++ {
			copy(want[16*p:16*p+16], src[p*s.ld:])
		}
		if !equalBits(got, want) {
			t.Errorf("kb %d ld %d: the packed panel differs", s.kb, s.ld)
		}
	}
}
