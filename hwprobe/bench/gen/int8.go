package main

import "fmt"

// i8AVX512 is the int8 14x32 tile over k quads (AVX512-VNNI): the packed
// B panel holds, per k quad, 32 columns of four signed bytes (the quad's
// four k of one column in one dword: two zmm); the packed A panel holds,
// per k quad, 14 rows of four unsigned bytes (one dword each), broadcast
// to every lane. VPDPBUSD multiplies the broadcast u8 quad by each
// column's s8 quad and adds the four products to the column's int32
// accumulator: 64 multiply-adds per instruction, without saturation (the
// non-S form), so the int32 sums are exact.
//
// i8Kernel8x32 is the same over the first 8 rows of the 14-row panel, for
// the last, partial row tile of a product (an MLP batch of 64 is four
// whole tiles and 8 rows): 16 accumulators, enough to cover VPDPBUSD's
// latency, and 8/14 of the whole tile's work.
func i8AVX512(a *asm) {
	for _, rows := range []int{mr512, i8PartRows} {
		name, l := fmt.Sprintf("i8Kernel%dx32", rows), fmt.Sprintf("i%d", rows)
		// The loop runs over k quads, k rounded up.
		pre := func() {
			a.f("ADDQ $3, CX")
			a.f("SHRQ $2, CX")
		}
		step := func(off int) {
			a.f("VMOVDQU32 %d(BX), Z28", off*4*nr512)
			a.f("VMOVDQU32 %d(BX), Z29", off*4*nr512+64)
			for r := 0; r < rows; r++ {
				z := 30 + r%2
				a.f("VPBROADCASTD %d(AX), Z%d", off*4*mr512+4*r, z)
				// Go operand order: VPDPBUSD src2(s8), src1(u8), dst.
				a.f("VPDPBUSD Z28, Z%d, Z%d", z, 2*r)
				a.f("VPDPBUSD Z29, Z%d, Z%d", z, 2*r+1)
			}
		}
		if rows == mr512 {
			tile512Rows(a, name, l, rows, 2, pre, step, true)
			continue
		}
		// The partial tile is computed into a scratch tile and added:
		// only the adding form.
		tile512Form(a, name, l, rows, 2, pre, step, false, true)
	}
}

// i8PartRows are the rows of the int8 partial-tile kernel.
const i8PartRows = 8

// packB8AVX512 writes packB8x32, which packs one k quad of row-major s8 B
// (rows src, src+ld, src+2ld, src+3ld) across whole 32-column panels:
// for each panel, 32 dwords holding the column's four bytes (row 0 in the
// low byte), the panels stride bytes apart in dst; the rows are read in
// order.
func packB8AVX512(a *asm) {
	fmt.Fprintf(&a.Buffer, "\n// func packB8x32(dst *float32, src *int8, ld, panels, stride int)\nTEXT ·packB8x32(SB), NOSPLIT, $0-40\n")
	a.f("MOVQ dst+0(FP), DI")
	a.f("MOVQ src+8(FP), SI")
	a.f("MOVQ ld+16(FP), R8")
	a.f("MOVQ panels+24(FP), CX")
	a.f("MOVQ stride+32(FP), R10")
	a.f("LEAQ (SI)(R8*2), R11")
	a.f("ADDQ R8, R11") // row 3
	a.f("TESTQ CX, CX")
	a.f("JZ packB8done")
	a.label("packB8loop")
	a.f("VPMOVZXBD (SI), Z0")
	a.f("VPMOVZXBD 16(SI), Z1")
	a.f("VPMOVZXBD (SI)(R8*1), Z2")
	a.f("VPMOVZXBD 16(SI)(R8*1), Z3")
	a.f("VPMOVZXBD (SI)(R8*2), Z4")
	a.f("VPMOVZXBD 16(SI)(R8*2), Z5")
	a.f("VPMOVZXBD (R11), Z6")
	a.f("VPMOVZXBD 16(R11), Z7")
	for i, sh := range []int{8, 16, 24} {
		a.f("VPSLLD $%d, Z%d, Z%d", sh, 2+2*i, 2+2*i)
		a.f("VPSLLD $%d, Z%d, Z%d", sh, 3+2*i, 3+2*i)
	}
	for _, z := range []int{2, 4, 6} {
		a.f("VPORD Z%d, Z0, Z0", z)
		a.f("VPORD Z%d, Z1, Z1", z+1)
	}
	a.f("VMOVDQU32 Z0, (DI)")
	a.f("VMOVDQU32 Z1, 64(DI)")
	a.f("ADDQ $32, SI")
	a.f("ADDQ $32, R11")
	a.f("ADDQ R10, DI")
	a.f("DECQ CX")
	a.f("JNZ packB8loop")
	a.label("packB8done")
	a.f("VZEROUPPER")
	a.f("RET")
}

// i8GemvPanels are the widths, in packed 32-column panels, of the int8
// GEMV kernels; bench.i8gemv covers a band with the widest that fit.
var i8GemvPanels = []int{4, 1}

// gemvPrologue writes the head of an int8 GEMV kernel name(kq int, x
// *uint8, b *float32, stride int, y *int32): kq in CX, x in AX, the first
// panel in BX, stride in R8, y in DX, and the fourth panel in R9.
func gemvPrologue(a *asm, name string) {
	fmt.Fprintf(&a.Buffer, "\n// func %s(kq int, x *uint8, b *float32, stride int, y *int32)\nTEXT ·%s(SB), NOSPLIT, $0-40\n", name, name)
	a.f("MOVQ kq+0(FP), CX")
	a.f("MOVQ x+8(FP), AX")
	a.f("MOVQ b+16(FP), BX")
	a.f("MOVQ stride+24(FP), R8")
	a.f("MOVQ y+32(FP), DX")
	a.f("LEAQ (BX)(R8*2), R9")
	a.f("ADDQ R8, R9") // panel 3
}

// wordOnes sets every 16-bit word of Yy to 1, through the register gpr:
// VPMADDWD against it sums AVX2's int16 pair sums into int32.
func wordOnes(a *asm, gpr string, y int) {
	a.f("MOVL $0x00010001, %s", gpr)
	a.f("MOVQ %s, X%d", gpr, y)
	a.f("VPBROADCASTD X%d, Y%d", y, y)
}

// i8GemvAVX512 writes i8gemvP<p>(kq int, x *uint8, b *float32, stride int, y *int32):
// y[0:32p] += the product of the kq k quads of u8 x (4kq bytes) and p
// packed int8 B panels (the GEMM's layout: per k quad 32 dwords), the
// panels stride bytes apart. The 32p sums stay in registers for all k;
// two sets of them take alternate quads, so that each waits on a
// VPDPBUSD at most every other quad.
func i8GemvAVX512(a *asm, p int) {
	name := fmt.Sprintf("i8gemvP%d", p)
	gemvPrologue(a, name)
	accs := 2 * p
	for z := 0; z < 2*accs; z++ {
		a.f("VPXORD Z%d, Z%d, Z%d", z, z, z)
	}
	panel := func(q, half int) string { return gemvPanel(q, 64*half) }
	quad := func(set, disp int) {
		z := 31 - set
		a.f("VPBROADCASTD %d(AX), Z%d", 4*disp, z)
		for q := 0; q < p; q++ {
			for h := 0; h < 2; h++ {
				// The B operand from memory: each byte of B is used once.
				a.f("VPDPBUSD %s, Z%d, Z%d", shift(panel(q, h), 128*disp), z, set*accs+2*q+h)
			}
		}
	}
	a.f("MOVQ CX, R10")
	a.f("SHRQ $1, CX")
	a.f("JZ %sodd", name)
	a.label(name + "loop")
	quad(0, 0)
	quad(1, 1)
	a.f("ADDQ $8, AX")
	a.f("ADDQ $256, BX")
	a.f("ADDQ $256, R9")
	a.f("DECQ CX")
	a.f("JNZ %sloop", name)
	a.label(name + "odd")
	a.f("ANDQ $1, R10")
	a.f("JZ %ssum", name)
	quad(0, 0)
	a.label(name + "sum")
	for j := 0; j < accs; j++ {
		a.f("VPADDD Z%d, Z%d, Z%d", accs+j, j, j)
		a.f("VPADDD %d(DX), Z%d, Z%d", 64*j, j, j)
		a.f("VMOVDQU32 Z%d, %d(DX)", j, 64*j)
	}
	a.f("VZEROUPPER")
	a.f("RET")
}

// shift adds d to the displacement of a memory operand "off(...)".
func shift(mem string, d int) string {
	var off int
	var rest string
	fmt.Sscanf(mem, "%d%s", &off, &rest)
	return fmt.Sprintf("%d%s", off+d, rest)
}

// vnniRate writes func vnniRate512(n int): n iterations of 2 x 24
// independent VPDPBUSD on zmm registers, nothing else (fmaRate's loop with
// the int8 dot product): its rate over fmaRate512's is the host's int8
// VNNI rate per fp32 FMA rate.
func vnniRate(a *asm) {
	const accs = 24
	fmt.Fprintf(&a.Buffer, "\n// func vnniRate512(n int)\nTEXT ·vnniRate512(SB), NOSPLIT, $0-8\n")
	a.f("MOVQ n+0(FP), CX")
	for r := 0; r <= accs+1; r++ {
		a.f("VPXORD Z%d, Z%d, Z%d", r, r, r)
	}
	a.f("TESTQ CX, CX")
	a.f("JZ vnniRate512done")
	a.label("vnniRate512loop")
	for range 2 {
		for r := 0; r < accs; r++ {
			a.f("VPDPBUSD Z%d, Z%d, Z%d", accs, accs+1, r)
		}
	}
	a.f("DECQ CX")
	a.f("JNZ vnniRate512loop")
	a.label("vnniRate512done")
	a.f("VZEROUPPER")
	a.f("RET")
}

// quantAVX512 writes the element-wise kernels of the int8 MLP, over n
// values, n a multiple of 16:
//
// quantU8(dst *uint8, x *float32, n int, scale float32, zp int32):
// dst = saturate_u8(round(x/scale) + zp), rounding to nearest even (the
// MXCSR default that VCVTPS2DQ uses), as ONNX's QuantizeLinear and ONNX
// Runtime's kernel (a division, not a reciprocal) do.
//
// minMaxF32(x *float32, n int, mm *float32): lanes mm[0:16] = min and
// mm[16:32] = max of their own values and x's, per lane.
//
// dequantRow(y *float32, acc, cs *int32, ws, b *float32, n int, s float32, zp int32, relu int, mm *float32):
// y = float32(acc - zp*cs) * (s*ws) + b, then max(y, 0) when relu is
// not 0, and the running per-lane range of y in mm as minMaxF32 keeps it.
func quantAVX512(a *asm) { quantKernelsAt(a, vec512) }

// i8AVX2 writes i8Kernel6x16, the int8 (u8 x s8 -> s32) kernel of hosts
// with AVX2 but no VNNI: a 6 x 16 tile of int32 sums (12 registers) over
// k quads, A and B packed as for the VNNI kernel (one word a quad). Each
// quad step multiplies A's broadcast quad by B's two registers of quads
// with VPMADDUBSW (u8 x s8 pairs summed into int16, SATURATING), widens
// the pair sums to int32 with VPMADDWD against ones, and adds them. The
// product is exact only while every pair sum a0*b0 + a1*b1 fits int16:
// for u8 A, B in [-64, 64] (7-bit weights, as ONNX Runtime's reduce_range
// quantizes for such hosts). B is read from memory by each row's
// multiply; Y12 holds the broadcast, Y13 and Y14 the products, Y15 ones.
// The C tile's rows are prefetched first, so that its update does not
// wait on them. i8Kernel6x16Set stores its sums over the tile instead of
// adding them (the first k block of a product): C need not be cleared
// first, nor read. The Ahead forms prefetch B bAhead bytes ahead, for
// weights packed before the product (as the fp32 ones); i8Kernel4x16
// takes a last row tile of 4 rows or fewer. At batch 64 of the quick
// int8 MLP on 2 vCPUs of Zen 3 (in one process, 40 interleaved bursts of
// 10 passes, four times), the two together ran 1.02-1.05x the 6-row
// kernel without prefetch (median burst), the 4-row kernel alone
// 1.01-1.03x, the prefetch alone 0.99-1.02x.
func i8AVX2(a *asm) {
	i8AVX2Form(a, "i8Kernel6x16", "i6", mr256, false, 0)
	i8AVX2Form(a, "i8Kernel6x16Set", "i6set", mr256, true, 0)
	i8AVX2Form(a, "i8Kernel6x16Ahead", "i6a", mr256, false, bAhead)
	i8AVX2Form(a, "i8Kernel6x16SetAhead", "i6seta", mr256, true, bAhead)
	i8AVX2Form(a, "i8Kernel4x16", "i4", 4, false, 0)
}

// i8AVX2Form writes one int8 kernel over the first rows rows of the
// 6-row panel of A and 16 columns: set stores the sums over C instead of
// adding them; ahead, when not 0, prefetches B that many bytes ahead of
// the k quad (the Ahead forms: B packed before the product, streaming
// from L3 or memory).
func i8AVX2Form(a *asm, name, l string, rows int, set bool, ahead int) {
	const mr, cols = mr256, 16
	kernelPrologue(a, name)
	for r := 0; r < 2*rows; r++ {
		a.f("VPXOR Y%d, Y%d, Y%d", r, r, r)
	}
	if !set {
		prefetchC(a, rows, 1, "PREFETCHT0")
	}
	wordOnes(a, "R9", 15)
	a.f("ADDQ $3, CX")
	a.f("SHRQ $2, CX")
	step := func(off int) {
		for r := 0; r < rows; r++ {
			a.f("VPBROADCASTD %d(AX), Y12", off*4*mr+4*r)
			// Go operand order: VPMADDUBSW src2(s8), src1(u8), dst.
			a.f("VPMADDUBSW %d(BX), Y12, Y13", off*4*cols)
			a.f("VPMADDUBSW %d(BX), Y12, Y14", off*4*cols+32)
			a.f("VPMADDWD Y15, Y13, Y13")
			a.f("VPMADDWD Y15, Y14, Y14")
			a.f("VPADDD Y13, Y%d, Y%d", 2*r, 2*r)
			a.f("VPADDD Y14, Y%d, Y%d", 2*r+1, 2*r+1)
		}
	}
	a.f("MOVQ CX, R10")
	a.f("SHRQ $1, R10")
	a.f("ANDQ $1, CX")
	a.f("TESTQ R10, R10")
	a.f("JZ %stail", l)
	a.label(l + "loop")
	for u := range 2 {
		if ahead > 0 {
			a.f("PREFETCHT0 %d(BX)", ahead+64*u)
		}
		step(u)
	}
	a.f("ADDQ $%d, AX", 2*4*mr)
	a.f("ADDQ $%d, BX", 2*4*cols)
	a.f("DECQ R10")
	a.f("JNZ %sloop", l)
	a.label(l + "tail")
	a.f("TESTQ CX, CX")
	a.f("JZ %sstore", l)
	step(0)
	a.label(l + "store")
	for r := 0; r < rows; r++ {
		if !set {
			a.f("VPADDD (DX), Y%d, Y%d", 2*r, 2*r)
			a.f("VPADDD 32(DX), Y%d, Y%d", 2*r+1, 2*r+1)
		}
		a.f("VMOVDQU Y%d, (DX)", 2*r)
		a.f("VMOVDQU Y%d, 32(DX)", 2*r+1)
		a.f("ADDQ R8, DX")
	}
	a.f("VZEROUPPER")
	a.f("RET")
}

// quantAVX2 writes quantU8256, minMaxF32256 and dequantRow256, the AVX2
// forms of quantAVX512's kernels over groups of 8 values (n a multiple of
// 8; mm holds 8 minimums then 8 maximums). AVX2 has no saturating
// down-convert to bytes: the int32 values, already at least 0, are packed
// to int16 and then to u8 with saturation (VPACKSSDW, VPACKUSWB).
func quantAVX2(a *asm) { quantKernelsAt(a, vec256) }

// vecWidth is one vector width of the element-wise kernels: the names'
// suffix, the register letter, the bytes a register holds, the highest
// register (the kernels' constants count down from it: scale, zero
// point, zero, then the range's maximums and minimums), and the integer
// zeroing and move instructions.
type vecWidth struct {
	suffix, reg    string
	bytes, top     int
	zero, moveInts string
}

var (
	vec512 = vecWidth{"", "Z", 64, 31, "VPXORD", "VMOVDQU32"}
	vec256 = vecWidth{"256", "Y", 32, 15, "VPXOR", "VMOVDQU"}
)

// quantKernelsAt writes quantU8, minMaxF32 and dequantRow at width v.
func quantKernelsAt(a *asm, v vecWidth) {
	r := func(n int) string { return fmt.Sprintf("%s%d", v.reg, n) }
	scale, zp, zero, lo, hi := r(v.top), r(v.top-1), r(v.top-2), r(v.top-4), r(v.top-3)
	shift := log2(v.bytes / 4)
	bcastZP := func(off int) {
		a.f("MOVL zp+%d(FP), AX", off)
		if v.reg == "Z" {
			a.f("VPBROADCASTD AX, %s", zp)
			return
		}
		a.f("MOVQ AX, X%d", v.top-1)
		a.f("VPBROADCASTD X%d, %s", v.top-1, zp)
	}

	name := "quantU8" + v.suffix
	fmt.Fprintf(&a.Buffer, "\n// func %s(dst *uint8, x *float32, n int, scale float32, zp int32)\nTEXT ·%s(SB), NOSPLIT, $0-32\n", name, name)
	a.f("MOVQ dst+0(FP), DI")
	a.f("MOVQ x+8(FP), SI")
	a.f("MOVQ n+16(FP), CX")
	a.f("VBROADCASTSS scale+24(FP), %s", scale)
	bcastZP(28)
	a.f("%s %s, %s, %s", v.zero, zero, zero, zero)
	a.f("SHRQ $%d, CX", shift)
	a.f("JZ %sdone", name)
	a.label(name + "loop")
	a.f("VMOVUPS (SI), %s", r(0))
	a.f("VDIVPS %s, %s, %s", scale, r(0), r(0))
	a.f("VCVTPS2DQ %s, %s", r(0), r(0))
	a.f("VPADDD %s, %s, %s", zp, r(0), r(0))
	a.f("VPMAXSD %s, %s, %s", zero, r(0), r(0))
	if v.reg == "Z" {
		a.f("VPMOVUSDB Z0, X1")
		a.f("VMOVDQU X1, (DI)")
	} else {
		a.f("VEXTRACTI128 $1, Y0, X1")
		a.f("VPACKSSDW X1, X0, X0")
		a.f("VPACKUSWB X0, X0, X0")
		a.f("MOVQ X0, (DI)")
	}
	a.f("ADDQ $%d, SI", v.bytes)
	a.f("ADDQ $%d, DI", v.bytes/4)
	a.f("DECQ CX")
	a.f("JNZ %sloop", name)
	a.label(name + "done")
	a.f("VZEROUPPER")
	a.f("RET")

	name = "minMaxF32" + v.suffix
	fmt.Fprintf(&a.Buffer, "\n// func %s(x *float32, n int, mm *float32)\nTEXT ·%s(SB), NOSPLIT, $0-24\n", name, name)
	a.f("MOVQ x+0(FP), SI")
	a.f("MOVQ n+8(FP), CX")
	a.f("MOVQ mm+16(FP), DX")
	a.f("VMOVUPS (DX), %s", lo)
	a.f("VMOVUPS %d(DX), %s", v.bytes, hi)
	a.f("SHRQ $%d, CX", shift)
	a.f("JZ %sdone", name)
	a.label(name + "loop")
	a.f("VMOVUPS (SI), %s", r(0))
	a.f("VMINPS %s, %s, %s", r(0), lo, lo)
	a.f("VMAXPS %s, %s, %s", r(0), hi, hi)
	a.f("ADDQ $%d, SI", v.bytes)
	a.f("DECQ CX")
	a.f("JNZ %sloop", name)
	a.label(name + "done")
	a.f("VMOVUPS %s, (DX)", lo)
	a.f("VMOVUPS %s, %d(DX)", hi, v.bytes)
	a.f("VZEROUPPER")
	a.f("RET")

	name = "dequantRow" + v.suffix
	fmt.Fprintf(&a.Buffer, "\n// func %s(y *float32, acc, cs *int32, ws, b *float32, n int, s float32, zp int32, relu int, mm *float32)\nTEXT ·%s(SB), NOSPLIT, $0-72\n", name, name)
	a.f("MOVQ y+0(FP), DI")
	a.f("MOVQ acc+8(FP), SI")
	a.f("MOVQ cs+16(FP), R8")
	a.f("MOVQ ws+24(FP), R9")
	a.f("MOVQ b+32(FP), R10")
	a.f("MOVQ n+40(FP), CX")
	a.f("VBROADCASTSS s+48(FP), %s", scale)
	bcastZP(52)
	a.f("MOVQ relu+56(FP), R11")
	a.f("MOVQ mm+64(FP), DX")
	a.f("VMOVUPS (DX), %s", lo)
	a.f("VMOVUPS %d(DX), %s", v.bytes, hi)
	a.f("%s %s, %s, %s", v.zero, zero, zero, zero)
	a.f("SHRQ $%d, CX", shift)
	a.f("JZ %sdone", name)
	a.label(name + "loop")
	a.f("VPMULLD (R8), %s, %s", zp, r(1))
	a.f("%s (SI), %s", v.moveInts, r(0))
	a.f("VPSUBD %s, %s, %s", r(1), r(0), r(0))
	a.f("VCVTDQ2PS %s, %s", r(0), r(0))
	a.f("VMULPS (R9), %s, %s", scale, r(2))
	a.f("VMULPS %s, %s, %s", r(2), r(0), r(0))
	a.f("VADDPS (R10), %s, %s", r(0), r(0))
	a.f("TESTQ R11, R11")
	a.f("JZ %snorelu", name)
	a.f("VMAXPS %s, %s, %s", zero, r(0), r(0))
	a.label(name + "norelu")
	a.f("VMOVUPS %s, (DI)", r(0))
	a.f("VMINPS %s, %s, %s", r(0), lo, lo)
	a.f("VMAXPS %s, %s, %s", r(0), hi, hi)
	for _, rr := range []string{"DI", "SI", "R8", "R9", "R10"} {
		a.f("ADDQ $%d, %s", v.bytes, rr)
	}
	a.f("DECQ CX")
	a.f("JNZ %sloop", name)
	a.label(name + "done")
	a.f("VMOVUPS %s, (DX)", lo)
	a.f("VMOVUPS %s, %d(DX)", hi, v.bytes)
	a.f("VZEROUPPER")
	a.f("RET")
}

// packB8AVX2 writes packB8x16, packB8x32's 16-column form for AVX2's
// int8 kernel: for each panel, the 16 columns of one k quad as 16 dwords
// (row 0 in the low byte), by byte and word interleaves of the four rows'
// 16 bytes.
func packB8AVX2(a *asm) {
	fmt.Fprintf(&a.Buffer, "\n// func packB8x16(dst *float32, src *int8, ld, panels, stride int)\nTEXT ·packB8x16(SB), NOSPLIT, $0-40\n")
	a.f("MOVQ dst+0(FP), DI")
	a.f("MOVQ src+8(FP), SI")
	a.f("MOVQ ld+16(FP), R8")
	a.f("MOVQ panels+24(FP), CX")
	a.f("MOVQ stride+32(FP), R10")
	a.f("LEAQ (SI)(R8*2), R11")
	a.f("ADDQ R8, R11") // row 3
	a.f("TESTQ CX, CX")
	a.f("JZ packB8x16done")
	a.label("packB8x16loop")
	a.f("VMOVDQU (SI), X0")
	a.f("VMOVDQU (SI)(R8*1), X1")
	a.f("VMOVDQU (SI)(R8*2), X2")
	a.f("VMOVDQU (R11), X3")
	// Go operand order: VPUNPCKLBW src2, src1, dst (src1's bytes first).
	a.f("VPUNPCKLBW X1, X0, X4") // columns 0-7: row 0, row 1
	a.f("VPUNPCKHBW X1, X0, X5") // columns 8-15
	a.f("VPUNPCKLBW X3, X2, X6") // columns 0-7: row 2, row 3
	a.f("VPUNPCKHBW X3, X2, X7")
	a.f("VPUNPCKLWD X6, X4, X0") // columns 0-3: rows 0-3
	a.f("VPUNPCKHWD X6, X4, X1") // 4-7
	a.f("VPUNPCKLWD X7, X5, X2") // 8-11
	a.f("VPUNPCKHWD X7, X5, X3") // 12-15
	a.f("VMOVDQU X0, (DI)")
	a.f("VMOVDQU X1, 16(DI)")
	a.f("VMOVDQU X2, 32(DI)")
	a.f("VMOVDQU X3, 48(DI)")
	a.f("ADDQ $16, SI")
	a.f("ADDQ $16, R11")
	a.f("ADDQ R10, DI")
	a.f("DECQ CX")
	a.f("JNZ packB8x16loop")
	a.label("packB8x16done")
	a.f("RET")
}

// i8GemvAVX2 writes i8gemvY<p>, i8GemvAVX512's form for AVX2's pair-summing
// int8 kernel (16-column panels, 64 bytes a k quad):
// y[0:16p] += the product of the kq k quads of u8 x (4kq bytes) and p
// packed panels, stride bytes apart. Each quad multiplies with VPMADDUBSW
// (u8 x s8 pairs into int16: B in [-64, 64], as the GEMM) and widens with
// VPMADDWD against ones; the 2p sums stay in registers for all k.
func i8GemvAVX2(a *asm, p int) {
	name := fmt.Sprintf("i8gemvY%d", p)
	gemvPrologue(a, name)
	accs := 2 * p
	for z := 0; z < accs; z++ {
		a.f("VPXOR Y%d, Y%d, Y%d", z, z, z)
	}
	wordOnes(a, "R10", 14)
	panel := func(q, half int) string { return gemvPanel(q, 32*half) }
	a.f("TESTQ CX, CX")
	a.f("JZ %ssum", name)
	a.label(name + "loop")
	a.f("VPBROADCASTD (AX), Y15")
	for q := 0; q < p; q++ {
		for h := 0; h < 2; h++ {
			t := 8 + (2*q+h)%6
			// Go operand order: VPMADDUBSW src2(s8), src1(u8), dst.
			a.f("VPMADDUBSW %s, Y15, Y%d", panel(q, h), t)
			a.f("VPMADDWD Y14, Y%d, Y%d", t, t)
			a.f("VPADDD Y%d, Y%d, Y%d", t, 2*q+h, 2*q+h)
		}
	}
	a.f("ADDQ $4, AX")
	a.f("ADDQ $64, BX")
	a.f("ADDQ $64, R9")
	a.f("DECQ CX")
	a.f("JNZ %sloop", name)
	a.label(name + "sum")
	for j := 0; j < accs; j++ {
		a.f("VPADDD %d(DX), Y%d, Y%d", 32*j, j, j)
		a.f("VMOVDQU Y%d, %d(DX)", j, 32*j)
	}
	a.f("VZEROUPPER")
	a.f("RET")
}

// gemvPanel is the memory operand at byte off of panel q (0 to 3) of the
// GEMV kernels: panels 0 to 2 at BX, R8 bytes apart, panel 3 at R9.
func gemvPanel(q, off int) string {
	switch q {
	case 0:
		return fmt.Sprintf("%d(BX)", off)
	case 1:
		return fmt.Sprintf("%d(BX)(R8*1)", off)
	case 2:
		return fmt.Sprintf("%d(BX)(R8*2)", off)
	default:
		return fmt.Sprintf("%d(R9)", off)
	}
}
