//go:build amd64 && !purego

package bench

import (
	"bufio"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

const avx512Needs = "AVX-512 (F, BW, VL, DQ)"

// kernelCatalog is every GEMM micro-kernel this package has on amd64 and
// the instruction sets each needs. A host lists only those it can run
// (sgemmKernels, bf16Kernel); the tests take the others from here to
// report them as skipped, naming what the host lacks.
func kernelCatalog() []catalogKernel {
	return []catalogKernel{
		{name: "builtin-avx512", needs: avx512Needs, hostHas: hasAVX512},
		{name: "builtin-avx2", needs: "AVX2 and FMA", hostHas: hasAVX2FMA},
		{name: "builtin-go"},
		{name: "builtin-avx512-bf16", bf16: true, needs: avx512Needs + " and AVX512_BF16",
			hostHas: func() bool { return hasAVX512() && cpuid.CPU.Supports(cpuid.AVX512BF16) }},
	}
}

// asmMissing says why this host does not run the package's AVX-512
// assembly besides the GEMM kernels (GEMV, STREAM, packers): "" when it
// does.
// asmStreams are the assembly STREAM kernels, each with why it cannot run
// on this host ("" where it can), in streamKernels' order of preference.
func asmStreams() []asmStream {
	return []asmStream{{"avx512", streamAVX512Kernels(), asmMissing()}, {"avx2", streamAVX2Kernels(), avx2Missing()}}
}

// avx2Missing says why the AVX2 kernels cannot run here ("" where they can).
func avx2Missing() string {
	if hasAVX2FMA() {
		return ""
	}
	return "this host lacks AVX2 and FMA"
}

// asmBiasActs are the assembly bias-and-activation kernels, as
// biasActSpan runs them, each with why it cannot run here.
func asmBiasActs() []asmBiasAct {
	return []asmBiasAct{
		{"avx512", func(z, act, b []float32, relu bool) { biasActSpanWith(biasActRow, 16, z, act, b, relu) }, asmMissing()},
		{"avx2", func(z, act, b []float32, relu bool) { biasActSpanWith(biasActRow256, 8, z, act, b, relu) }, avx2Missing()},
	}
}

// asmGemvs are the assembly GEMV kernel sets, each with why it cannot run
// on this host ("" where it can).
func asmGemvs() []asmGemv {
	avx2 := avx2Missing()
	return []asmGemv{
		{"avx512", func(x, w []float32, ldw int, y []float32) { gemvAddWith(gemvKernels, x, w, ldw, y) }, asmMissing()},
		{"avx2", func(x, w []float32, ldw int, y []float32) { gemvAddWith(gemvKernelsAVX2, x, w, ldw, y) }, avx2},
	}
}

func asmMissing() string {
	if hasAVX512() {
		return ""
	}
	return "this host lacks " + avx512Needs
}

// loopFMAs counts the VFMADD231PS instructions of the loop labelled
// fn+"loop" in TEXT ·fn of kernels_amd64.s and returns their vector width
// in bits (Z registers 512, Y 256).
func loopFMAs(t *testing.T, fn string) (fmas, bits int) {
	t.Helper()
	f, err := os.Open("kernels_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inText, inLoop := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "TEXT "):
			inText = strings.HasPrefix(line, "TEXT ·"+fn+"(SB)")
		case inText && line == fn+"loop:":
			inLoop = true
		case inLoop && strings.HasPrefix(line, "JNZ "+fn+"loop"):
			return fmas, bits
		case inLoop && strings.HasPrefix(line, "VFMADD231PS "):
			ops := strings.Split(strings.TrimPrefix(line, "VFMADD231PS "), ",")
			dst := strings.TrimSpace(ops[len(ops)-1])
			w := map[byte]int{'Z': 512, 'Y': 256, 'X': 128}[dst[0]]
			if bits != 0 && w != bits {
				t.Fatalf("%s: FMAs of %d and %d bits in one loop", fn, bits, w)
			}
			fmas, bits = fmas+1, w
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no loop %sloop ending in JNZ in TEXT ·%s of kernels_amd64.s", fn, fn)
	return 0, 0
}

// TestFMARateLoops checks, without timing anything, the FLOPs the clock
// estimate credits each iteration of a vector FMA rate loop: its FMAs x
// lanes x 2, read from the assembly (a count off by 2x puts an estimated
// peak off by 2x). The loop this host's fmaLoop picks is checked against
// the figure fmaLoop gives; the AVX2 loop, which an AVX-512 host never
// picks, against the figure fmaLoop gives on an AVX2 host. Each loop the
// host can execute is run once; the others are skipped, naming the
// instruction sets the host lacks.
func TestFMARateLoops(t *testing.T) {
	loops := []struct {
		fn    string
		run   func(n int)
		flops float64 // per iteration, as fmaLoop states it for this loop
		bits  int
		needs string
		has   func() bool
	}{
		{"fmaRate512", fmaRate512, 2 * 24 * 16 * 2, 512, "AVX-512F", hasAVX512},
		{"fmaRate256", fmaRate256, 2 * 12 * 8 * 2, 256, "AVX2 and FMA", hasAVX2FMA},
	}
	run, flops, bits, ok := fmaLoop()
	picked := false
	for _, l := range loops {
		t.Run(l.fn, func(t *testing.T) {
			fmas, w := loopFMAs(t, l.fn)
			if w != l.bits || float64(fmas*w/32*2) != l.flops {
				t.Errorf("%s: %d FMAs of %d bits an iteration are %d FLOPs; the rate is computed with %g at %d bits",
					l.fn, fmas, w, fmas*w/32*2, l.flops, l.bits)
			}
			if ok && reflect.ValueOf(run).Pointer() == reflect.ValueOf(l.run).Pointer() {
				picked = true
				if flops != l.flops || bits != l.bits {
					t.Errorf("fmaLoop picks %s with %g FLOPs at %d bits an iteration; the loop does %d at %d", l.fn, flops, bits, fmas*w/32*2, w)
				}
			}
			if !l.has() {
				t.Skipf("%s not run: it needs %s, not all present on this host", l.fn, l.needs)
			}
			l.run(1000) // returns: the loop ends and restores what it must
		})
	}
	if ok && !picked {
		t.Errorf("fmaLoop picks a %d-bit loop that is neither fmaRate512 nor fmaRate256", bits)
	}
}

// asmQuants are the int8 MLP's element-wise kernel sets, each with why it
// cannot run on this host ("" where it can).
func asmQuants() []asmQuant {
	set := func(k quantKernels, missing string) asmQuant {
		return asmQuant{k.name,
			func(dst []uint8, x []float32, scale float32, zp int32) { quantizeSpanWith(k, dst, x, scale, zp) },
			func(x []float32, lo, hi float32) (float32, float32) { return minMaxSpanWith(k, x, lo, hi) },
			func(y []float32, acc, cs []int32, ws, b []float32, s float32, zp int32, relu bool, lo, hi float32) (float32, float32) {
				return dequantSpanWith(k, y, acc, cs, ws, b, s, zp, relu, lo, hi)
			}, missing}
	}
	return []asmQuant{set(quantAVX512Kernels, asmMissing()), set(quantAVX2Kernels, avx2Missing())}
}
