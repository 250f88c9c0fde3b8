//go:build amd64 && !purego

package bench

//go:generate go run ./gen -o kernels_amd64.s

import (
	"math"

	"github.com/klauspost/cpuid/v2"
)

//go:noescape
func sgemmKernel14x32(k int, a, b, c *float32, ldc int)

//go:noescape
func bf16Kernel14x32(k int, a, b, c *float32, ldc int)

//go:noescape
func sgemmKernel14x32Set(k int, a, b, c *float32, ldc int)

//go:noescape
func bf16Kernel14x32Set(k int, a, b, c *float32, ldc int)

//go:noescape
func sgemmKernel6x16(k int, a, b, c *float32, ldc int)

//go:noescape
func streamCopy(dst, src *float64, n int)

//go:noescape
func streamScale(dst, src *float64, n int, s float64)

//go:noescape
func streamAdd(dst, x, y *float64, n int)

//go:noescape
func streamTriad(dst, x, y *float64, n int, s float64)

//go:noescape
func saxpy64(y, x *float32, n int, alpha float32)

//go:noescape
func sgemvN28(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func sgemvN16(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func sgemvN8(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func sgemvN4(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func sgemvN2(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func sgemvN1(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func fmaRate512(n int)

//go:noescape
func fmaRate256(n int)

func hasAVX512() bool {
	return cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512DQ)
}

func hasAVX2FMA() bool { return cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3) }

// sgemmKernels lists the fp32 micro-kernels this host can run, fastest first.
func sgemmKernels() []sgemmKernel {
	var ks []sgemmKernel
	if hasAVX512() {
		ks = append(ks, sgemmKernel{name: "builtin-avx512", mr: 14, nr: 32, fn: sgemmKernel14x32, set: sgemmKernel14x32Set, packRows: packRows14})
	}
	if hasAVX2FMA() {
		ks = append(ks, sgemmKernel{name: "builtin-avx2", mr: 6, nr: 16, fn: sgemmKernel6x16})
	}
	return append(ks, genericSgemmKernel())
}

// bf16Kernel returns the bf16 micro-kernel, or ok false without avx512_bf16.
func bf16Kernel() (sgemmKernel, bool) {
	if !hasAVX512() || !cpuid.CPU.Supports(cpuid.AVX512BF16) {
		return sgemmKernel{}, false
	}
	return sgemmKernel{name: "builtin-avx512-bf16", mr: 14, nr: 32, fn: bf16Kernel14x32, set: bf16Kernel14x32Set,
		packRows16: packRows16x14, packPair: packPair32}, true
}

// fmaLoop returns the widest vector FMA rate loop this host can run: run(n)
// executes n iterations of flops fp32 FLOPs each, in bits-wide FMAs.
func fmaLoop() (run func(n int), flops float64, bits int, ok bool) {
	switch {
	case hasAVX512():
		return fmaRate512, 2 * 24 * 16 * 2, 512, true
	case hasAVX2FMA():
		return fmaRate256, 2 * 12 * 8 * 2, 256, true
	}
	return nil, 0, 0, false
}

// streamKernels returns the assembly STREAM kernels when AVX-512 is present.
func streamKernels() (streamImpl, bool) {
	if !hasAVX512() {
		return genericStream(), false
	}
	return streamImpl{
		name: "avx512-nt", align: 32,
		copy:  func(d, s []float64) { streamCopy(&d[0], &s[0], len(d)) },
		scale: func(d, s []float64, q float64) { streamScale(&d[0], &s[0], len(d), q) },
		add:   func(d, x, y []float64) { streamAdd(&d[0], &x[0], &y[0], len(d)) },
		triad: func(d, x, y []float64, q float64) { streamTriad(&d[0], &x[0], &y[0], len(d), q) },
	}, true
}

// gemvKernels are the AVX-512 GEMV kernels by width in 16-column registers,
// widest first (gen's gemvWidths).
var gemvKernels = []struct {
	cols int
	fn   func(k int, x, w *float32, ldw int, y *float32)
}{{28 * 16, sgemvN28}, {16 * 16, sgemvN16}, {8 * 16, sgemvN8}, {4 * 16, sgemvN4}, {2 * 16, sgemvN2}, {16, sgemvN1}}

// gemvAdd adds x (k values) times the k x len(y) row-major block of W at w
// (rows ldw apart) into y: the AVX-512 kernels keep a band of up to 448
// sums in registers across all k rows; columns past the last multiple of
// 16, and hosts without AVX-512, take the scalar loop.
func gemvAdd(x, w []float32, ldw int, y []float32) {
	k, n := len(x), len(y)
	if k == 0 || n == 0 {
		return
	}
	_ = w[(k-1)*ldw+n-1]
	j := 0
	if hasAVX512() {
		for _, g := range gemvKernels {
			for ; n-j >= g.cols; j += g.cols {
				g.fn(k, &x[0], &w[j], ldw, &y[j])
			}
		}
	}
	gemvAddGeneric(x, w[j:], ldw, y[j:])
}

// saxpy computes y += alpha*x.
func saxpy(y, x []float32, alpha float32) {
	n := len(y)
	head := 0
	if hasAVX512() && n >= 64 {
		head = n &^ 63
		saxpy64(&y[0], &x[0], head, alpha)
	}
	for i := head; i < n; i++ {
		y[i] += alpha * x[i]
	}
}

//go:noescape
func packA14(dst, src *float32, idx *int32, kb, ld int, alpha float32)

// packRows14 packs alpha times a 14 x kb panel of row-major A (rows ld
// apart) into dst with one gather per k step; it falls back to the scalar
// loop when the row offsets do not fit the gather's 32-bit indices.
func packRows14(dst, src []float32, ld, kb int, alpha float32) {
	const mr = 14
	if kb == 0 {
		return
	}
	_ = dst[mr*kb-1]
	_ = src[(mr-1)*ld+kb-1]
	if (mr-1)*ld > math.MaxInt32/4 {
		for i := range mr {
			for p, v := range src[i*ld : i*ld+kb] {
				dst[p*mr+i] = alpha * v
			}
		}
		return
	}
	var idx [16]int32
	for i := range mr {
		idx[i] = int32(i * ld)
	}
	packA14(&dst[0], &src[0], &idx[0], kb, 4*ld, alpha)
}

//go:noescape
func packA14w(dst *float32, src *uint16, idx *int32, kb, ld int)

//go:noescape
func packB16x32(dst *float32, lo, hi *uint16, panels, stride int)

// packRows16x14 packs a 14 x kb panel of row-major bf16 A (rows ld apart)
// for the bf16 kernel with one gather per k pair; an odd last k is packed
// alone (high half zero). It falls back to the scalar loop when the row
// offsets do not fit the gather's 32-bit indices.
func packRows16x14(dst []float32, src []uint16, ld, kb int) {
	const mr = 14
	if kb == 0 {
		return
	}
	kp := (kb + 1) / 2
	_ = dst[mr*kp-1]
	_ = src[(mr-1)*ld+kb-1]
	whole := kb / 2
	if (mr-1)*ld > math.MaxInt32 {
		whole = 0
	}
	if whole > 0 {
		var idx [16]int32
		for i := range mr {
			idx[i] = int32(i * ld)
		}
		packA14w(&dst[0], &src[0], &idx[0], whole, 2*ld)
	}
	for i := range mr {
		row := src[i*ld : i*ld+kb]
		for p := whole; p < kp; p++ {
			w := uint32(row[2*p])
			if 2*p+1 < kb {
				w |= uint32(row[2*p+1]) << 16
			}
			dst[p*mr+i] = math.Float32frombits(w)
		}
	}
}

// packPair32 packs one k pair (rows lo and hi) of row-major bf16 B across
// panels whole 32-column panels, the panels stride words apart in dst.
func packPair32(dst []float32, lo, hi []uint16, panels, stride int) {
	if panels == 0 {
		return
	}
	_ = dst[(panels-1)*stride+31]
	_ = lo[panels*32-1]
	_ = hi[panels*32-1]
	packB16x32(&dst[0], &lo[0], &hi[0], panels, 4*stride)
}
