package bench

import (
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// sgemmKernel is one micro-kernel: it adds the product of a packed mr x k
// panel of A and a packed k x nr panel of B into the mr x nr tile of C at c
// (row-major, leading dimension ldc).
type sgemmKernel struct {
	name   string
	mr, nr int
	fn     func(k int, a, b, c *float32, ldc int)
}

// gemm is a BLIS-style blocked GEMM for row-major float32 matrices: B is
// packed into kc x nr panels that stay in L1, A into mc x kc blocks of mr-row
// panels that stay in L2, and the columns of C are split across threads.
// bf16 engines round the packed operands to bfloat16 and accumulate in fp32.
// A gemm reuses its packing buffers and is not safe for concurrent use.
type gemm struct {
	kern       sgemmKernel
	bf16       bool
	mc, kc, nc int
	threads    int
	work       []gemmWork
}

type gemmWork struct {
	packA, packB, tile []float32
}

func newGemm(kern sgemmKernel, bf16 bool, threads int) *gemm {
	if threads < 1 {
		threads = runtime.GOMAXPROCS(0)
	}
	g := &gemm{kern: kern, bf16: bf16, threads: threads, kc: 256, nc: 4096}
	// About 384 KiB of packed A per block: half of a typical 1-2 MiB L2.
	g.mc = max(kern.mr, (384<<10)/(4*g.kc)/kern.mr*kern.mr)
	return g
}

// op describes one operand: element (i, j) of the logical matrix is
// data[i*rs+j*cs].
type op struct {
	data   []float32
	rs, cs int
}

func rowMajor(data []float32, ld int, trans bool) op {
	if trans {
		return op{data, 1, ld}
	}
	return op{data, ld, 1}
}

// Sgemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices,
// where op(A) is m x k and op(B) is k x n.
func (g *gemm) Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	A, B := rowMajor(a, lda, transA), rowMajor(b, ldb, transB)
	// Split the larger dimension in whole tiles across threads.
	t := g.threads
	type part struct{ i0, i1, j0, j1 int }
	parts := make([]part, 0, t)
	if tilesN := (n + g.kern.nr - 1) / g.kern.nr; tilesN >= 2*t || tilesN >= (m+g.kern.mr-1)/g.kern.mr {
		t = min(t, tilesN)
		for w := 0; w < t; w++ {
			parts = append(parts, part{0, m, min(n, tilesN*w/t*g.kern.nr), min(n, tilesN*(w+1)/t*g.kern.nr)})
		}
	} else {
		tilesM := (m + g.kern.mr - 1) / g.kern.mr
		t = min(t, tilesM)
		for w := 0; w < t; w++ {
			parts = append(parts, part{min(m, tilesM*w/t*g.kern.mr), min(m, tilesM*(w+1)/t*g.kern.mr), 0, n})
		}
	}
	for len(g.work) < len(parts) {
		g.work = append(g.work, gemmWork{})
	}
	if len(parts) == 1 {
		p := parts[0]
		g.block(&g.work[0], p.i1-p.i0, p.j1-p.j0, k, alpha, A.at(p.i0, 0), B.at(0, p.j0), beta, c[p.i0*ldc+p.j0:], ldc)
		return
	}
	var wg sync.WaitGroup
	for w, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.block(&g.work[w], p.i1-p.i0, p.j1-p.j0, k, alpha, A.at(p.i0, 0), B.at(0, p.j0), beta, c[p.i0*ldc+p.j0:], ldc)
		}()
	}
	wg.Wait()
}

func (o op) at(i, j int) op { return op{o.data[i*o.rs+j*o.cs:], o.rs, o.cs} }

func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// block runs the serial blocked algorithm on one thread's share of C.
func (g *gemm) block(w *gemmWork, m, n, k int, alpha float32, A, B op, beta float32, c []float32, ldc int) {
	mr, nr := g.kern.mr, g.kern.nr
	scaleC(m, n, beta, c, ldc)
	if k == 0 {
		return
	}
	kc := min(g.kc, k)
	nc := min(g.nc, (n+nr-1)/nr*nr)
	mc := min(g.mc, (m+mr-1)/mr*mr)
	w.packB = grow(w.packB, kc*nc)
	w.packA = grow(w.packA, kc*mc)
	w.tile = grow(w.tile, mr*nr)
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			kp := kb // packed k steps
			if g.bf16 {
				kp = (kb + 1) / 2
				packBbf16(w.packB, B.at(pc, jc), kb, nb, nr)
			} else {
				packB(w.packB, B.at(pc, jc), kb, nb, nr)
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				if g.bf16 {
					packAbf16(w.packA, A.at(ic, pc), mb, kb, mr, alpha)
				} else {
					packA(w.packA, A.at(ic, pc), mb, kb, mr, alpha)
				}
				for jr := 0; jr < nb; jr += nr {
					bp := &w.packB[jr/nr*nr*kp]
					for ir := 0; ir < mb; ir += mr {
						ap := &w.packA[ir/mr*mr*kp]
						ci := (ic+ir)*ldc + jc + jr
						if ir+mr <= mb && jr+nr <= nb {
							g.kern.fn(kb, ap, bp, &c[ci], ldc)
							continue
						}
						clear(w.tile)
						g.kern.fn(kb, ap, bp, &w.tile[0], nr)
						for i := 0; i < min(mr, mb-ir); i++ {
							row := c[ci+i*ldc:]
							for j := 0; j < min(nr, nb-jr); j++ {
								row[j] += w.tile[i*nr+j]
							}
						}
					}
				}
			}
		}
	}
}

func scaleC(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// packB copies the kb x nb block of B into panels of nr columns, each stored
// k-major (nr values per k step) and zero-padded to a whole panel.
func packB(dst []float32, B op, kb, nb, nr int) {
	for jr := 0; jr < nb; jr += nr {
		panel := dst[jr*kb : jr*kb+nr*kb]
		w := min(nr, nb-jr)
		if B.cs == 1 && w == nr {
			for p := 0; p < kb; p++ {
				copy(panel[p*nr:p*nr+nr], B.data[p*B.rs+jr:])
			}
			continue
		}
		for p := 0; p < kb; p++ {
			d := panel[p*nr : p*nr+nr]
			for j := 0; j < w; j++ {
				d[j] = B.data[p*B.rs+(jr+j)*B.cs]
			}
			clear(d[w:])
		}
	}
}

// packA copies alpha times the mb x kb block of A into panels of mr rows,
// each stored k-major (mr values per k step) and zero-padded.
func packA(dst []float32, A op, mb, kb, mr int, alpha float32) {
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*kb : ir*kb+mr*kb]
		h := min(mr, mb-ir)
		if A.rs == 1 && h == mr && alpha == 1 {
			for p := 0; p < kb; p++ {
				copy(panel[p*mr:p*mr+mr], A.data[p*A.cs+ir:])
			}
			continue
		}
		if A.rs == 1 && h == mr {
			for p := 0; p < kb; p++ {
				src := A.data[p*A.cs+ir : p*A.cs+ir+mr]
				d := panel[p*mr : p*mr+mr]
				for i, v := range src {
					d[i] = alpha * v
				}
			}
			continue
		}
		if h < mr {
			clear(panel)
		}
		for i := 0; i < h; i++ {
			row := A.data[(ir+i)*A.rs:]
			if A.cs == 1 {
				row = row[:kb]
				if alpha == 1 {
					for p, v := range row {
						panel[p*mr+i] = v
					}
					continue
				}
				for p, v := range row {
					panel[p*mr+i] = alpha * v
				}
				continue
			}
			for p := 0; p < kb; p++ {
				panel[p*mr+i] = alpha * row[p*A.cs]
			}
		}
	}
}

// toBF16 rounds to the nearest bfloat16, ties to even.
func toBF16(f float32) uint32 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return 0x7fc0 // NaN
	}
	return (u + 0x7fff + (u>>16)&1) >> 16
}

func fromBF16(h uint32) float32 { return math.Float32frombits(h << 16) }

func pairBF16(lo, hi float32) float32 { return math.Float32frombits(toBF16(lo) | toBF16(hi)<<16) }

// packBbf16 packs B for the bf16 kernel: per k pair, nr words each holding
// the two bf16 values of one column (k even in the low half).
func packBbf16(dst []float32, B op, kb, nb, nr int) {
	kp := (kb + 1) / 2
	for jr := 0; jr < nb; jr += nr {
		panel := dst[jr*kp : jr*kp+nr*kp]
		w := min(nr, nb-jr)
		for p := 0; p < kp; p++ {
			d := panel[p*nr : p*nr+nr]
			r0 := B.data[2*p*B.rs:]
			for j := 0; j < w; j++ {
				var hi float32
				if 2*p+1 < kb {
					hi = r0[B.rs+(jr+j)*B.cs]
				}
				d[j] = pairBF16(r0[(jr+j)*B.cs], hi)
			}
			clear(d[w:])
		}
	}
}

// packAbf16 packs alpha*A for the bf16 kernel: per k pair, mr words each
// holding the two bf16 values of one row.
func packAbf16(dst []float32, A op, mb, kb, mr int, alpha float32) {
	kp := (kb + 1) / 2
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*kp : ir*kp+mr*kp]
		h := min(mr, mb-ir)
		if h < mr {
			clear(panel)
		}
		for i := 0; i < h; i++ {
			row := A.data[(ir+i)*A.rs:]
			for p := 0; p < kp; p++ {
				var hi float32
				if 2*p+1 < kb {
					hi = alpha * row[(2*p+1)*A.cs]
				}
				panel[p*mr+i] = pairBF16(alpha*row[2*p*A.cs], hi)
			}
		}
	}
}

// genericSgemmKernel is the portable 4x8 fallback written in Go.
func genericSgemmKernel() sgemmKernel {
	const mr, nr = 4, 8
	return sgemmKernel{name: "builtin-go", mr: mr, nr: nr, fn: func(k int, a, b, c *float32, ldc int) {
		as := unsafe.Slice(a, mr*k)
		bs := unsafe.Slice(b, nr*k)
		var acc [mr][nr]float32
		for p := 0; p < k; p++ {
			bp := bs[p*nr : p*nr+nr]
			ap := as[p*mr : p*mr+mr]
			for i := range mr {
				ai := ap[i]
				for j := range nr {
					acc[i][j] += ai * bp[j]
				}
			}
		}
		cs := unsafe.Slice(c, (mr-1)*ldc+nr)
		for i := range mr {
			for j := range nr {
				cs[i*ldc+j] += acc[i][j]
			}
		}
	}}
}
