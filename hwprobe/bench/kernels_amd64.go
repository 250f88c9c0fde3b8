//go:build amd64 && !purego

package bench

//go:generate go run ./gen -o kernels_amd64.s

import (
	"math"
	"slices"
	"unsafe"

	"github.com/klauspost/cpuid/v2"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
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
func sgemmKernel6x16Set(k int, a, b, c *float32, ldc int)

//go:noescape
func sgemmKernel4x16(k int, a, b, c *float32, ldc int)

//go:noescape
func sgemmKernel6x16Ahead(k int, a, b, c *float32, ldc int)

//go:noescape
func sgemmKernel6x16SetAhead(k int, a, b, c *float32, ldc int)

//go:noescape
func streamCopy(dst, src *float64, n int)

//go:noescape
func streamScale(dst, src *float64, n int, s float64)

//go:noescape
func streamAdd(dst, x, y *float64, n int)

//go:noescape
func streamTriad(dst, x, y *float64, n int, s float64)

//go:noescape
func streamCopy256(dst, src *float64, n int)

//go:noescape
func streamScale256(dst, src *float64, n int, s float64)

//go:noescape
func streamAdd256(dst, x, y *float64, n int)

//go:noescape
func streamTriad256(dst, x, y *float64, n int, s float64)

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
func sgemvY14(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func sgemvY8(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func sgemvY4(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func sgemvY2(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func sgemvY1(k int, x, w *float32, ldw int, y *float32)

//go:noescape
func fmaRate512(n int)

//go:noescape
func fmaRate256(n int)

// The host's vector extensions, read from CPUID once: the element-wise
// kernels ask for every row of every layer (the lookups took 18% of the
// fp32 MLP's batch-64 time on 2 vCPUs of Zen 3).
var (
	cpuAVX512  = cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL, cpuid.AVX512DQ)
	cpuAVX2FMA = cpuid.CPU.Supports(cpuid.AVX2, cpuid.FMA3)
	cpuAVX2    = cpuid.CPU.Supports(cpuid.AVX2)
)

func hasAVX512() bool { return cpuAVX512 }

func hasAVX2FMA() bool { return cpuAVX2FMA }

// hasAVX2 reports 256-bit integer vectors (AVX2).
func hasAVX2() bool { return cpuAVX2 }

// sgemmKernels lists the fp32 micro-kernels this host can run, fastest first.
func sgemmKernels() []sgemmKernel {
	var ks []sgemmKernel
	if hasAVX512() {
		ks = append(ks, sgemmKernel{name: "builtin-avx512", mr: 14, nr: 32, fn: sgemmKernel14x32, set: sgemmKernel14x32Set, packRows: packRows14})
	}
	if hasAVX2FMA() {
		ks = append(ks, sgemmKernel{name: "builtin-avx2", mr: 6, nr: 16, fn: sgemmKernel6x16, set: sgemmKernel6x16Set,
			fnFar: sgemmKernel6x16Ahead, setFar: sgemmKernel6x16SetAhead, part: sgemmKernel4x16, partRows: 4})
	}
	return append(ks, genericSgemmKernel())
}

// bf16Kernel returns the bf16 micro-kernel, or ok false without avx512_bf16.
func bf16Kernel() (sgemmKernel, bool) {
	if !hasAVX512() || !cpuid.CPU.Supports(cpuid.AVX512BF16) {
		return sgemmKernel{}, false
	}
	return sgemmKernel{name: profile.BackendAVX512BF16, mr: 14, nr: 32, fn: bf16Kernel14x32, set: bf16Kernel14x32Set,
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

// streamKernels returns the assembly STREAM kernels: on 512-bit registers
// with AVX-512, on 256-bit ones with AVX2 and FMA (both with non-temporal
// stores), else the Go loops.
func streamKernels() (streamImpl, bool) {
	switch {
	case hasAVX512():
		return streamAVX512Kernels(), true
	case hasAVX2FMA():
		return streamAVX2Kernels(), true
	}
	return genericStream(), false
}

// streamAVX512Kernels are the STREAM kernels on 512-bit registers.
func streamAVX512Kernels() streamImpl {
	return streamImpl{
		name: "avx512-nt", align: 32,
		copy:  func(d, s []float64) { streamCopy(&d[0], &s[0], len(d)) },
		scale: func(d, s []float64, q float64) { streamScale(&d[0], &s[0], len(d), q) },
		add:   func(d, x, y []float64) { streamAdd(&d[0], &x[0], &y[0], len(d)) },
		triad: func(d, x, y []float64, q float64) { streamTriad(&d[0], &x[0], &y[0], len(d), q) },
	}
}

// streamAVX2Kernels are the STREAM kernels on 256-bit registers (AVX).
func streamAVX2Kernels() streamImpl {
	return streamImpl{
		name: "avx2-nt", align: 32,
		copy:  func(d, s []float64) { streamCopy256(&d[0], &s[0], len(d)) },
		scale: func(d, s []float64, q float64) { streamScale256(&d[0], &s[0], len(d), q) },
		add:   func(d, x, y []float64) { streamAdd256(&d[0], &x[0], &y[0], len(d)) },
		triad: func(d, x, y []float64, q float64) { streamTriad256(&d[0], &x[0], &y[0], len(d), q) },
	}
}

// gemvKernel is a GEMV kernel and the columns it covers.
type gemvKernel struct {
	cols int
	fn   func(k int, x, w *float32, ldw int, y *float32)
}

// gemvKernels are the AVX-512 GEMV kernels by width in 16-column registers,
// widest first (gen's gemvWidths).
var gemvKernels = []gemvKernel{{28 * 16, sgemvN28}, {16 * 16, sgemvN16}, {8 * 16, sgemvN8}, {4 * 16, sgemvN4}, {2 * 16, sgemvN2}, {16, sgemvN1}}

// gemvKernelsAVX2 are the AVX2 ones, in 8-column registers (gen's
// gemvWidthsAVX2), for hosts without AVX-512.
var gemvKernelsAVX2 = []gemvKernel{{14 * 8, sgemvY14}, {8 * 8, sgemvY8}, {4 * 8, sgemvY4}, {2 * 8, sgemvY2}, {8, sgemvY1}}

// gemvAdd adds x (k values) times the k x len(y) row-major block of W at w
// (rows ldw apart) into y: the assembly kernels keep a band of up to 448
// sums (AVX-512; 112 with AVX2) in registers across all k rows; columns
// past the last multiple of the narrowest kernel, and hosts with neither,
// take the scalar loop.
func gemvAdd(x, w []float32, ldw int, y []float32) {
	switch {
	case hasAVX512():
		gemvAddWith(gemvKernels, x, w, ldw, y)
	case hasAVX2FMA():
		gemvAddWith(gemvKernelsAVX2, x, w, ldw, y)
	default:
		gemvAddGeneric(x, w, ldw, y)
	}
}

// gemvAddWith is gemvAdd with the kernels ks, widest first.
func gemvAddWith(ks []gemvKernel, x, w []float32, ldw int, y []float32) {
	k, n := len(x), len(y)
	if k == 0 || n == 0 {
		return
	}
	_ = w[(k-1)*ldw+n-1]
	j := 0
	for _, g := range ks {
		for ; n-j >= g.cols; j += g.cols {
			g.fn(k, &x[0], &w[j], ldw, &y[j])
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

//go:noescape
func i8Kernel14x32(k int, a, b, c *float32, ldc int)

//go:noescape
func i8Kernel14x32Set(k int, a, b, c *float32, ldc int)

//go:noescape
func i8Kernel8x32(k int, a, b, c *float32, ldc int)

//go:noescape
func i8Kernel6x16(k int, a, b, c *float32, ldc int)

//go:noescape
func i8Kernel6x16Set(k int, a, b, c *float32, ldc int)

//go:noescape
func i8Kernel6x16Ahead(k int, a, b, c *float32, ldc int)

//go:noescape
func i8Kernel6x16SetAhead(k int, a, b, c *float32, ldc int)

//go:noescape
func i8Kernel4x16(k int, a, b, c *float32, ldc int)

//go:noescape
func packB8x32(dst *float32, src *int8, ld, panels, stride int)

//go:noescape
func i8gemvP4(kq int, x *uint8, b *float32, stride int, y *int32)

//go:noescape
func i8gemvP1(kq int, x *uint8, b *float32, stride int, y *int32)

//go:noescape
func vnniRate512(n int)

// hasVNNI reports AVX-512 with the int8 dot product (avx512_vnni).
func hasVNNI() bool { return cpuVNNI }

// cpuVNNI is read once, as cpuAVX512 is: the int8 GEMV asks per call.
var cpuVNNI = cpuAVX512 && cpuid.CPU.Supports(cpuid.AVX512VNNI)

// i8Kernel returns the int8 (u8 x s8 -> s32) micro-kernel: AVX512-VNNI's,
// else AVX2's (whose products are exact only for B in [-i8PairsB,
// i8PairsB]: its pairs flag), or ok false without either. It reads words
// of four k (one quad a word), as the bf16 kernel reads pairs; C is int32.
func i8Kernel() (sgemmKernel, bool) {
	ks := i8Kernels()
	if len(ks) == 0 {
		return sgemmKernel{}, false
	}
	return ks[0], true
}

// i8Kernels are the int8 kernels this host runs, the fastest first.
func i8Kernels() []sgemmKernel {
	var ks []sgemmKernel
	if hasVNNI() {
		ks = append(ks, sgemmKernel{name: profile.BackendAVX512VNNI, mr: 14, nr: 32, fn: i8Kernel14x32, set: i8Kernel14x32Set,
			packRows8: packRows8x14, packQuad: packQuad32, part: i8Kernel8x32, partRows: 8})
	}
	if hasAVX2() {
		ks = append(ks, sgemmKernel{name: "builtin-avx2-int8", mr: 6, nr: 16, fn: i8Kernel6x16, set: i8Kernel6x16Set,
			fnFar: i8Kernel6x16Ahead, setFar: i8Kernel6x16SetAhead, part: i8Kernel4x16, partRows: 4, pairs: true, packRows8: packRows8x6, packQuad: packQuad16})
	}
	return ks
}

// packRows8x14 packs a 14 x kb panel of row-major u8 A (rows ld bytes
// apart) for the int8 kernel: per k quad, one word per row. The whole
// quads go through packA14w, whose 32-bit words are here four bytes (its
// row offsets are in 2-byte units, so ld must be even); a last partial
// quad, and odd ld, are packed in Go.
func packRows8x14(dst []float32, src []uint8, ld, kb int) {
	const mr = 14
	if kb == 0 {
		return
	}
	kq := (kb + 3) / 4
	_ = dst[mr*kq-1]
	_ = src[(mr-1)*ld+kb-1]
	whole := kb / 4
	if ld%2 != 0 || (mr-1)*ld/2 > math.MaxInt32 {
		whole = 0
	}
	if whole > 0 {
		var idx [16]int32
		for i := range mr {
			idx[i] = int32(i * ld / 2)
		}
		packA14w(&dst[0], (*uint16)(unsafe.Pointer(&src[0])), &idx[0], whole, ld)
	}
	for i := range mr {
		row := src[i*ld : i*ld+kb]
		for p := whole; p < kq; p++ {
			dst[p*mr+i] = math.Float32frombits(quadWord(row[4*p:]))
		}
	}
}

//go:noescape
func packB8x16(dst *float32, src *int8, ld, panels, stride int)

//go:noescape
func packPanel16(dst, src *float32, ld, kb int)

// packPanel16Rows copies kb rows of 16 floats of B (rows ld apart) into
// the contiguous panel dst with AVX moves, or reports false without AVX2.
func packPanel16Rows(dst, src []float32, ld, kb int) bool {
	if !hasAVX2FMA() {
		return false
	}
	if kb == 0 {
		return true
	}
	_ = dst[16*kb-1]
	_ = src[(kb-1)*ld+15]
	packPanel16(&dst[0], &src[0], ld, kb)
	return true
}

//go:noescape
func packPanel16w(dst *float32, src *uint16, ld, kb int)

// packPanel16wRows widens kb rows of 16 bfloat16 values of B (rows ld
// apart) into the contiguous fp32 panel dst with AVX2, or reports false
// without it.
func packPanel16wRows(dst []float32, src []uint16, ld, kb int) bool {
	if !hasAVX2FMA() {
		return false
	}
	if kb == 0 {
		return true
	}
	_ = dst[16*kb-1]
	_ = src[(kb-1)*ld+15]
	packPanel16w(&dst[0], &src[0], ld, kb)
	return true
}

//go:noescape
func packA6x8(dst, src *float32, ld, kb8 int)

// packA6Rows packs the whole groups of 8 k steps of a 6 x kb panel of
// row-major A (rows ld apart) with AVX2 and returns how many k steps it
// packed (0 without AVX2): packA6 packs the rest.
func packA6Rows(dst, a []float32, ld, kb int) int {
	kb8 := kb / 8
	if !hasAVX2FMA() || kb8 == 0 {
		return 0
	}
	_ = dst[6*8*kb8-1]
	_ = a[5*ld+8*kb8-1]
	packA6x8(&dst[0], &a[0], ld, kb8)
	return 8 * kb8
}

//go:noescape
func packA6x8q(dst *float32, src *uint8, ld, kb8 int)

// packA8x6Rows packs the whole groups of 8 k quads (32 k) of a 6 x kb
// panel of row-major u8 A (rows ld bytes apart) with AVX2, a quad a word,
// and returns how many quads it packed (0 without AVX2): packRows8x6
// packs the rest.
func packA8x6Rows(dst []float32, a []uint8, ld, kb int) int {
	kq8 := kb / 32
	if !hasAVX2FMA() || kq8 == 0 {
		return 0
	}
	_ = dst[6*8*kq8-1]
	_ = a[5*ld+32*kq8-1]
	packA6x8q(&dst[0], &a[0], ld, kq8)
	return 8 * kq8
}

//go:noescape
func packA6x8w(dst *float32, src *uint16, ld, kb8 int)

// packA6WideRows is packA6Rows from bf16 rows, each value widened to fp32.
func packA6WideRows(dst []float32, a []uint16, ld, kb int) int {
	kb8 := kb / 8
	if !hasAVX2FMA() || kb8 == 0 {
		return 0
	}
	_ = dst[6*8*kb8-1]
	_ = a[5*ld+8*kb8-1]
	packA6x8w(&dst[0], &a[0], ld, kb8)
	return 8 * kb8
}

// packQuad16 is packQuad32 for 16-column panels (AVX2's int8 kernel).
func packQuad16(dst []float32, src []int8, ld, panels, stride int) {
	if panels == 0 {
		return
	}
	_ = dst[(panels-1)*stride+15]
	_ = src[3*ld+panels*16-1]
	packB8x16(&dst[0], &src[0], ld, panels, 4*stride)
}

// packQuad32 packs one k quad of row-major s8 B (rows ld bytes apart, src
// holding them) across panels whole 32-column panels, the panels stride
// words apart in dst.
func packQuad32(dst []float32, src []int8, ld, panels, stride int) {
	if panels == 0 {
		return
	}
	_ = dst[(panels-1)*stride+31]
	_ = src[3*ld+panels*32-1]
	packB8x32(&dst[0], &src[0], ld, panels, 4*stride)
}

// i8gemvBand adds the product of the kq k quads of u8 x and panels packed
// int8 B panels (the first at b, the next stride words on) into y (32 per
// panel): four panels a call while they last. False without VNNI.
func i8gemvBand(kq int, x []uint8, b []float32, stride, panels int, y []int32) bool {
	return hasVNNI() && i8gemvPanels(kq, x, b, stride, panels, y, 32, i8gemvP4, i8gemvP1)
}

//go:noescape
func i8gemvY4(kq int, x *uint8, b *float32, stride int, y *int32)

//go:noescape
func i8gemvY1(kq int, x *uint8, b *float32, stride int, y *int32)

// i8gemvBand16 is i8gemvBand for AVX2's pair-summing kernel: 16-column
// panels (16 sums each), B in [-i8PairsB, i8PairsB]; false without AVX2.
func i8gemvBand16(kq int, x []uint8, b []float32, stride, panels int, y []int32) bool {
	return hasAVX2() && i8gemvPanels(kq, x, b, stride, panels, y, 16, i8gemvY4, i8gemvY1)
}

// i8gemvPanels runs a GEMV kernel pair over panels nr columns wide: four
// panels a call (k4) while they last, then one (k1).
func i8gemvPanels(kq int, x []uint8, b []float32, stride, panels int, y []int32, nr int, k4, k1 func(kq int, x *uint8, b *float32, stride int, y *int32)) bool {
	if kq == 0 || panels == 0 {
		return false
	}
	_ = x[4*kq-1]
	_ = b[(panels-1)*stride+nr*kq-1]
	_ = y[nr*panels-1]
	p := 0
	for ; panels-p >= 4; p += 4 {
		k4(kq, &x[0], &b[p*stride], 4*stride, &y[nr*p])
	}
	for ; p < panels; p++ {
		k1(kq, &x[0], &b[p*stride], 4*stride, &y[nr*p])
	}
	return true
}

// vnniLoop is fmaLoop's int8 counterpart: run(n) executes n iterations of
// ops int8 operations (multiplies and adds) each, in 512-bit VPDPBUSD.
func vnniLoop() (run func(n int), ops float64, ok bool) {
	if !hasVNNI() {
		return nil, 0, false
	}
	return vnniRate512, 2 * 24 * 64 * 2, true
}

//go:noescape
func quantU8(dst *uint8, x *float32, n int, scale float32, zp int32)

//go:noescape
func minMaxF32(x *float32, n int, mm *float32)

//go:noescape
func dequantRow(y *float32, acc, cs *int32, ws, b *float32, n int, s float32, zp int32, relu int, mm *float32)

//go:noescape
func biasActRow(z, act, b *float32, n int, relu int)

//go:noescape
func biasActRow256(z, act, b *float32, n int, relu int)

//go:noescape
func quantU8256(dst *uint8, x *float32, n int, scale float32, zp int32)

//go:noescape
func minMaxF32256(x *float32, n int, mm *float32)

//go:noescape
func dequantRow256(y *float32, acc, cs *int32, ws, b *float32, n int, s float32, zp int32, relu int, mm *float32)

var (
	quantAVX512Kernels = quantKernels{"avx512", 16, quantU8, minMaxF32, dequantRow}
	quantAVX2Kernels   = quantKernels{"avx2", 8, quantU8256, minMaxF32256, dequantRow256}
)

// quantKernelSets are the element-wise kernel sets this host runs, the
// widest first (the one quantizeSpan, minMaxSpan and dequantSpan use).
func quantKernelSets() []quantKernels {
	var ks []quantKernels
	if hasAVX512() {
		ks = append(ks, quantAVX512Kernels)
	}
	if hasAVX2() {
		ks = append(ks, quantAVX2Kernels)
	}
	return ks
}

// hostQuantKernels is the host's widest set (w 0: none, Go loops).
var hostQuantKernels = func() quantKernels {
	if ks := quantKernelSets(); len(ks) > 0 {
		return ks[0]
	}
	return quantKernels{}
}()

// quantizeSpan quantizes x into dst (saturate_u8(round(x/scale) + zp)):
// the host's kernel for whole groups, Go for the rest.
func quantizeSpan(dst []uint8, x []float32, scale float32, zp int32) {
	quantizeSpanWith(hostQuantKernels, dst, x, scale, zp)
}

func quantizeSpanWith(k quantKernels, dst []uint8, x []float32, scale float32, zp int32) {
	head := 0
	if k.w > 0 && scale != 0 {
		head = len(x) &^ (k.w - 1)
		if head > 0 {
			_ = dst[head-1]
			k.quant(&dst[0], &x[0], head, scale, zp)
		}
	}
	quantizeSpanGeneric(dst[head:len(x)], x[head:], scale, zp)
}

// minMaxSpan extends [lo, hi] over x.
func minMaxSpan(x []float32, lo, hi float32) (float32, float32) {
	return minMaxSpanWith(hostQuantKernels, x, lo, hi)
}

func minMaxSpanWith(k quantKernels, x []float32, lo, hi float32) (float32, float32) {
	head := 0
	if k.w > 0 && len(x) >= k.w {
		head = len(x) &^ (k.w - 1)
		var mm [32]float32
		for i := range k.w {
			mm[i], mm[k.w+i] = lo, hi
		}
		k.minMax(&x[0], head, &mm[0])
		lo, hi = slices.Min(mm[:k.w]), slices.Max(mm[k.w:2*k.w])
	}
	return minMaxSpanGeneric(x[head:], lo, hi)
}

// dequantSpan writes y = float32(acc - zp*cs) * (s*ws) + b (then the ReLU)
// and extends [lo, hi] over y.
func dequantSpan(y []float32, acc, cs []int32, ws, b []float32, s float32, zp int32, relu bool, lo, hi float32) (float32, float32) {
	return dequantSpanWith(hostQuantKernels, y, acc, cs, ws, b, s, zp, relu, lo, hi)
}

func dequantSpanWith(k quantKernels, y []float32, acc, cs []int32, ws, b []float32, s float32, zp int32, relu bool, lo, hi float32) (float32, float32) {
	n, head := len(y), 0
	if k.w > 0 && n >= k.w {
		head = n &^ (k.w - 1)
		_, _, _, _ = acc[head-1], cs[head-1], ws[head-1], b[head-1]
		var mm [32]float32
		for i := range k.w {
			mm[i], mm[k.w+i] = lo, hi
		}
		r := 0
		if relu {
			r = 1
		}
		k.dequant(&y[0], &acc[0], &cs[0], &ws[0], &b[0], head, s, zp, r, &mm[0])
		lo, hi = slices.Min(mm[:k.w]), slices.Max(mm[k.w:2*k.w])
	}
	return dequantSpanGeneric(y[head:], acc[head:n], cs[head:n], ws[head:n], b[head:n], s, zp, relu, lo, hi)
}

// biasActSpan adds b to z and writes the activation of z into act (the
// ReLU, or z itself): the AVX-512 kernel for whole 16-value groups (the
// AVX2 one for 8-value groups on hosts without AVX-512), Go for the rest.
func biasActSpan(z, act, b []float32, relu bool) {
	switch {
	case hasAVX512():
		biasActSpanWith(biasActRow, 16, z, act, b, relu)
	case hasAVX2FMA():
		biasActSpanWith(biasActRow256, 8, z, act, b, relu)
	default:
		biasActSpanGeneric(z, act[:len(z)], b[:len(z)], relu)
	}
}

// biasActSpanWith is biasActSpan with the kernel fn over groups of w
// values (a power of 2).
func biasActSpanWith(fn func(z, act, b *float32, n int, relu int), w int, z, act, b []float32, relu bool) {
	n, head := len(z), 0
	if n >= w {
		head = n &^ (w - 1)
		_, _ = act[head-1], b[head-1]
		r := 0
		if relu {
			r = 1
		}
		fn(&z[0], &act[0], &b[0], head, r)
	}
	biasActSpanGeneric(z[head:], act[head:n], b[head:n], relu)
}
