package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
	"unsafe"

	"github.com/klauspost/cpuid/v2"
)

// The int8 GEMM: C (int32) = A (u8) * B (s8), the form of AVX512-VNNI's
// VPDPBUSD (and of oneDNN's gemm_u8s8s32 and ONNX Runtime's quantized
// MatMul on x86). It runs on the blocked engine of gemm.go with k packed in
// quads, as oneDNN and OpenBLAS pack B for VNNI: per k quad, one 32-bit
// word a column holding the column's four k (B) and one word a row (A).
// Integer products are exact, so every benchmark run checks a sample of
// the product for equality with a scalar reference.

// caches are the cache sizes the int8 blocking is chosen from, as the CPU
// reports them.
type caches struct {
	L1D, L2 int64 // per core, bytes
	L3      int64 // the last level, bytes, over all its instances
	Source  string
}

// hostCaches reads the L1D and L2 per core from CPUID and the last level
// from sysfs (CPUID where sysfs has none); a size neither reports is
// assumed and Source says so.
func hostCaches() caches {
	c := caches{L1D: int64(cpuid.CPU.Cache.L1D), L2: int64(cpuid.CPU.Cache.L2), Source: "cpuid"}
	if c.L1D <= 0 {
		c.L1D, c.Source = 32<<10, c.Source+"; L1D unknown, assumed 32 KiB"
	}
	if c.L2 <= 0 {
		c.L2, c.Source = 1<<20, c.Source+"; L2 unknown, assumed 1 MiB"
	}
	var src string
	c.L3, src = lastLevelCache("/sys/devices/system/cpu")
	c.Source += "; last level: " + src
	return c
}

// i8Blocking chooses the int8 engine's block sizes (mr x nr tile) from the
// caches, with the proportions the fp32 and bf16 engines were tuned to on
// Zen 5 (see newGemm), here derived rather than fixed:
//   - kq, the k quads of a block: the B micro-panel (kq x nr words) an
//     eighth of L2, so that it and the A block share L2 with room for C
//     (1024 quads, 4096 k, at 1 MiB of L2 and nr 32; 2048 at 2 MiB);
//   - mc: the packed A block (mc x kq words) a quarter of L2;
//   - nc: the packed B block (kq x nc words) a quarter of the last-level
//     cache (the host shares it).
//
// Each is kept to the tile's multiples and to sane bounds.
func i8Blocking(c caches, mr, nr int) (mc, kq, nc int) {
	l2 := max(c.L2, 256<<10)
	kq = int(l2/8/int64(4*nr)) &^ 15
	kq = min(max(kq, 64), 4096)
	mc = min(max(mr, int(l2/4/int64(4*kq))/mr*mr), 36*mr)
	l3 := c.L3
	if l3 <= 0 {
		l3 = 8 * l2
	}
	nc = int(l3/4/int64(4*kq)) / nr * nr
	nc = min(max(nc, nr), 8192/nr*nr)
	return mc, kq, nc
}

// newGemmI8 is the int8 engine for the kernel of i8Kernel.
func newGemmI8(kern sgemmKernel, threads int, c caches) *gemm {
	g := newGemm(kern, false, threads)
	g.quad = true
	var kq int
	if kern.nr <= 16 {
		// AVX2's 6x16 kernel: sized as the fp32 AVX2 kernel is, in
		// words (a word holds one fp32 k, or one int8 quad). On 2 vCPUs
		// of Zen 3 at n=4096, three interleaved runs each: 254-298
		// GOP/s with fp32Blocking's earlier sizes (the B micro-panel half
		// of L1D), against 240-282 with i8Blocking's (an eighth of L2:
		// 1024 quads, a 64 KiB panel). Its present sizes (512 quads, mc
		// 84, nc 1024) ran 0.98-1.00x those at n=2048 and 1.02-1.05x at
		// n=4096 (TestI8Sweep, best of 9, two sweeps, 2026-11-28).
		g.mc, kq, g.nc = fp32Blocking(c, kern.mr, kern.nr)
	} else {
		g.mc, kq, g.nc = i8Blocking(c, kern.mr, kern.nr)
	}
	g.kc = 4 * kq
	return g
}

// I8gemm computes C = A*B for row-major u8 A (m x k), s8 B (k x n) and
// int32 C, exactly (int32 sums wrap; with k up to 65536 they cannot
// overflow: 255*128*65536 < 2^31). It needs an int8 engine. On an engine
// whose kernel sums pairs into int16 (kern.pairs: AVX2's) it is exact
// only for B in [-i8PairsB, i8PairsB]; beyond, pair sums saturate.
func (g *gemm) I8gemm(m, n, k int, a []uint8, lda int, b []int8, ldb int, c []int32, ldc int) {
	if !g.quad {
		panic("bench: I8gemm on a non-int8 engine")
	}
	g.checkTileK(k)
	g.run(m, n, k, packers{a: g.packerA8(a, lda), b: g.packerB8(b, ldb)}, 0, asFloat32(c), ldc)
}

func (g *gemm) packerA8(a []uint8, lda int) func(dst []float32, i, p, mb, kb int) {
	mr := g.kern.mr
	if g.kern.tileK > 0 {
		return func(dst []float32, i, p, mb, kb int) { packATiles(dst, bytesOf(a[i*lda+p:]), lda, mb, kb, mr) }
	}
	return func(dst []float32, i, p, mb, kb int) { packA8(dst, a[i*lda+p:], lda, mb, kb, mr, g.kern.packRows8) }
}

func (g *gemm) packerB8(b []int8, ldb int) func(dst []float32, p, j, kb, nb int) {
	nr := g.kern.nr
	return func(dst []float32, p, j, kb, nb int) { packB8(dst, b[p*ldb+j:], ldb, kb, nb, nr, g.kern.packQuad) }
}

// PackB8 packs s8 B (k x n, row-major, leading dimension ldb) once for
// I8gemmPacked, as PackB does for fp32: the weights of a quantized
// network are packed when it is loaded.
func (g *gemm) PackB8(k, n int, b []int8, ldb int) *packedB {
	kc, nr := min(g.kc, max(k, 1)), g.kern.nr
	pb := &packedB{k: k, n: n, kc: kc, nr: nr}
	pack := g.packerB8(b, ldb)
	panels := (n + nr - 1) / nr
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		blk := make([]float32, panels*nr*g.packedK(kb))
		pack(blk, pc, 0, kb, n)
		pb.blocks = append(pb.blocks, blk)
	}
	return pb
}

// I8gemmPacked is I8gemm with B packed by PackB8 on this engine.
func (g *gemm) I8gemmPacked(m int, a []uint8, lda int, b *packedB, c []int32, ldc int) {
	if !g.quad || b.kc != min(g.kc, max(b.k, 1)) || b.nr != g.kern.nr {
		panic("bench: B packed by another engine")
	}
	g.checkTileK(b.k)
	g.run(m, b.n, b.k, packers{a: g.packerA8(a, lda), packed: b.panels(g)}, 0, asFloat32(c), ldc)
}

// asFloat32 views int32 C as the engine's float32 slice (bits unchanged:
// the int8 engine only copies and integer-adds them).
func asFloat32(c []int32) []float32 {
	if len(c) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&c[0])), len(c))
}

func asInt32(c []float32) []int32 {
	if len(c) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&c[0])), len(c))
}

// addInt32 adds the int32 bits of src into dst.
func addInt32(dst, src []float32) {
	d, s := asInt32(dst), asInt32(src)
	for j := range d {
		d[j] += s[j]
	}
}

// quadWord is up to four bytes (k order, the first in the low byte) as one
// little-endian word, zero-padded.
func quadWord[T uint8 | int8](b []T) uint32 {
	var w uint32
	for i := 0; i < 4 && i < len(b); i++ {
		w |= uint32(uint8(b[i])) << (8 * i)
	}
	return w
}

// packA8 packs an mb x kb block of row-major u8 A (rows ld bytes apart)
// into panels of mr rows: per k quad, one word per row (zero-padded past
// kb and past the last row). rows, when set, packs the full panels.
func packA8(dst []float32, a []uint8, ld, mb, kb, mr int, rows func(dst []float32, src []uint8, ld, kb int)) {
	kq := (kb + 3) / 4
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*kq : ir*kq+mr*kq]
		h := min(mr, mb-ir)
		if rows != nil && h == mr {
			rows(panel, a[ir*ld:], ld, kb)
			continue
		}
		if h < mr {
			clear(panel)
		}
		for i := 0; i < h; i++ {
			row := a[(ir+i)*ld : (ir+i)*ld+kb]
			p := 0
			for ; 4*p+4 <= kb; p++ {
				panel[p*mr+i] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*p:]))
			}
			if p < kq {
				panel[p*mr+i] = math.Float32frombits(quadWord(row[4*p:]))
			}
		}
	}
}

// packRows8x6 packs a 6 x kb panel of row-major u8 A (rows ld bytes
// apart) for AVX2's int8 kernel: per k quad, one word per row, the six
// rows' words of a quad written together; whole groups of 8 quads by
// register transposes (packA8x6Rows), where there is assembly.
func packRows8x6(dst []float32, src []uint8, ld, kb int) {
	const mr = 6
	if kb == 0 {
		return
	}
	kq, whole := (kb+3)/4, kb/4
	var rows [mr][]uint8
	for i := range rows {
		rows[i] = src[i*ld : i*ld+kb]
	}
	dst = dst[:mr*kq]
	r0, r1, r2, r3, r4, r5 := rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]
	for p := packA8x6Rows(dst, src, ld, kb); p < whole; p++ {
		o := 4 * p
		d := (*[mr]float32)(dst[mr*p:])
		d[0] = math.Float32frombits(binary.LittleEndian.Uint32(r0[o:]))
		d[1] = math.Float32frombits(binary.LittleEndian.Uint32(r1[o:]))
		d[2] = math.Float32frombits(binary.LittleEndian.Uint32(r2[o:]))
		d[3] = math.Float32frombits(binary.LittleEndian.Uint32(r3[o:]))
		d[4] = math.Float32frombits(binary.LittleEndian.Uint32(r4[o:]))
		d[5] = math.Float32frombits(binary.LittleEndian.Uint32(r5[o:]))
	}
	for p := whole; p < kq; p++ {
		for i := range rows {
			dst[mr*p+i] = math.Float32frombits(quadWord(rows[i][4*p:]))
		}
	}
}

// packB8 packs a kb x nb block of row-major s8 B (rows ld bytes apart)
// into panels of nr columns: per k quad, one word per column holding its
// four k (zero-padded past kb and past the last column). quad, when set
// (nr 32 or 16), packs the whole quads of the whole panels a quad at a
// time, reading B's rows in order.
func packB8(dst []float32, b []int8, ld, kb, nb, nr int, quad func(dst []float32, src []int8, ld, panels, stride int)) {
	kq := (kb + 3) / 4
	start, whole := 0, 0
	if quad != nil && (nr == 32 || nr == 16) {
		whole = kb / 4
		panels := nb / nr
		for p := 0; p < whole && panels > 0; p++ {
			quad(dst[p*nr:], b[4*p*ld:], ld, panels, nr*kq)
		}
		start = panels * nr
	}
	for jr := 0; jr < nb; jr += nr {
		panel := dst[jr*kq : jr*kq+nr*kq]
		w := min(nr, nb-jr)
		p0 := 0
		if jr < start {
			p0 = whole // the whole quads are packed
		}
		for p := p0; p < kq; p++ {
			d := panel[p*nr : p*nr+nr]
			for j := 0; j < w; j++ {
				var v uint32
				for q := 0; q < 4 && 4*p+q < kb; q++ {
					v |= uint32(uint8(b[(4*p+q)*ld+jr+j])) << (8 * q)
				}
				d[j] = math.Float32frombits(v)
			}
			clear(d[w:])
		}
	}
}

// checkI8Sample compares entries of c = a*b (m x k times k x n, row-major)
// with scalar int64 dot products, for equality: the corners, the edges of
// the last row and column tiles, and a spread of points inside.
func checkI8Sample(a []uint8, b []int8, c []int32, m, n, k int) error {
	pts := [][2]int{{0, 0}, {m - 1, n - 1}, {m - 1, 0}, {0, n - 1}, {m / 3, n / 2}, {m / 2, n / 3}}
	r := rand.New(rand.NewPCG(uint64(m), uint64(n)))
	for range 26 {
		pts = append(pts, [2]int{r.IntN(m), r.IntN(n)})
	}
	for _, ij := range pts {
		i, j := ij[0], ij[1]
		var s int64
		for p := 0; p < k; p++ {
			s += int64(a[i*k+p]) * int64(b[p*n+j])
		}
		if int64(c[i*n+j]) != s {
			return fmt.Errorf("entry (%d,%d) = %d, want %d", i, j, c[i*n+j], s)
		}
	}
	return nil
}

// randU8 and randS8 fill n values over the types' whole ranges.
func randU8(r *rand.Rand, n int) []uint8 {
	s := make([]uint8, n)
	for i := range s {
		s[i] = uint8(r.Uint32())
	}
	return s
}

func randS8(r *rand.Rand, n int) []int8 {
	s := make([]int8, n)
	for i := range s {
		s[i] = int8(r.Uint32())
	}
	return s
}

// i8PairsB bounds B for an int8 kernel that sums pairs into int16 (the
// kernel's pairs flag): 255*64*2 = 32640 fits int16, 255*65*2 does not.
const i8PairsB = 64

// randS8For fills n values for B of kern: the type's whole range, or
// [-i8PairsB, i8PairsB] for a kernel that sums pairs into int16.
func randS8For(kern sgemmKernel, r *rand.Rand, n int) []int8 {
	if !kern.pairs {
		return randS8(r, n)
	}
	s := make([]int8, n)
	for i := range s {
		s[i] = int8(r.IntN(2*i8PairsB+1) - i8PairsB)
	}
	return s
}

// bMax is the largest |B| the int8 benchmark feeds kern.
func bMax(kern sgemmKernel) int {
	if kern.pairs {
		return i8PairsB
	}
	return 128
}

// amxNote says, on a CPU with AMX, why a result's figure is not the AMX
// kernel's: why the kernel could not run (the kernel's refusal of tile
// data, a size its tiles cannot cover). Empty without AMX.
func amxNote(h hostCPU, why error) string {
	if !h.AMXBF16 && !h.AMXInt8 {
		return ""
	}
	return fmt.Sprintf("AMX present but not used (%v): this figure is the AVX-512 path's, and its peak is that path's", why)
}

// int8GemmResult times the int8 GEMM on an n x n x n product (u8 random A,
// s8 random B, both over their whole ranges) after one warm-up call, and
// checks a sample of the first and of the last product exactly.
func int8GemmResult(ctx context.Context, cfg config, peak cpuPeak) Result {
	const name = "cpu_int8_gemm"
	n := cfg.gemmN
	cs := hostCaches()
	var g *gemm
	kern, amxErr := amxFor(amxI8Kernel, n)
	peakG, basis := peak.GOPSInt8AMX(), peak.AMXBasis
	if amxErr == nil {
		g = newGemmAMX(kern, true, cfg.threads, cs)
	} else {
		var ok bool
		if kern, ok = i8Kernel(); !ok {
			return notRun(name, "cpu", "no int8 instructions (amx_int8, avx512_vnni or avx2) on this CPU")
		}
		g = newGemmI8(kern, cfg.threads, cs)
		peakG, basis = peak.GOPSInt8(), peak.Int8Basis
	}
	r := rand.New(rand.NewPCG(5, 6))
	a, b, c := randU8(r, n*n), randS8For(kern, r, n*n), make([]int32, n*n)
	call := func() { g.I8gemm(n, n, n, a, n, b, n, c, n) }
	check := func() error {
		if err := checkI8Sample(a, b, c, n, n, n); err != nil {
			return fmt.Errorf("built-in %s kernel gave a wrong product: %w", kern.name, err)
		}
		return nil
	}
	call()
	if err := check(); err != nil {
		return notRun(name, "cpu", err.Error())
	}
	ops := 2 * float64(n) * float64(n) * float64(n)
	var rates []float64
	for range cfg.gemmReps {
		if err := ctx.Err(); err != nil {
			return notRun(name, "cpu", err.Error())
		}
		clear(c)
		t0 := time.Now()
		call()
		rates = append(rates, ops/time.Since(t0).Seconds()/1e9)
	}
	if err := check(); err != nil {
		return notRun(name, "cpu", err.Error())
	}
	p := mergeParams(peak.params(), map[string]string{
		"n": strconv.Itoa(n), "threads": strconv.Itoa(g.threads),
		"mr": strconv.Itoa(kern.mr), "nr": strconv.Itoa(kern.nr),
		"mc": strconv.Itoa(g.mc), "kc": strconv.Itoa(g.kc), "nc": strconv.Itoa(g.nc),
		"blocking": "from the caches: " + cacheString(cs),
		"inputs":   "u8 x s8", "b_max": strconv.Itoa(bMax(kern)), "accumulate": "int32 (exact)", "check": "sample of the first and last product equal to a scalar int64 reference",
		"peak_int8_basis": basis,
	})
	if kern.pairs {
		p["inputs"] = fmt.Sprintf("u8 x s8 in [-%d, %d] (7-bit weights: this kernel's VPMADDUBSW sums u8 x s8 pairs into int16 with saturation; references on such a CPU need the same)", i8PairsB, i8PairsB)
	}
	if amxErr != nil {
		if note := amxNote(currentCPU(), amxErr); note != "" {
			p["amx"] = note
		}
	}
	return measured(name, kern.name, "GOP/s", rates, peakG, p)
}

func cacheString(c caches) string {
	return fmt.Sprintf("L1D %d KiB, L2 %d KiB, last level %d KiB (%s)", c.L1D>>10, c.L2>>10, c.L3>>10, c.Source)
}
