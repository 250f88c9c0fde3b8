package bench

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// refQuantForward is the quantized network in plain scalar Go: the same
// quantization, the products as int64 sums.
func refQuantForward(q *qmlp, m *mlp, x []float32, batch int) []float32 {
	cur := x
	for l := 0; l < len(q.dims)-1; l++ {
		in, out := q.dims[l], q.dims[l+1]
		xq := make([]uint8, batch*in)
		s, zp := dynamicQuantize(xq, in, cur, batch, in)
		// The weights, quantized again from m as quantizeMLP does.
		y := make([]float32, batch*out)
		for i := 0; i < batch; i++ {
			for j := 0; j < out; j++ {
				var acc int64
				for p := 0; p < in; p++ {
					w := m.w[l][p*out+j] / q.ws[l][j]
					wq := int64(min(max(roundEven(w), -float64(q.qmax)), float64(q.qmax)))
					acc += (int64(xq[i*in+p]) - int64(zp)) * wq
				}
				z := float32(int32(acc))*(s*q.ws[l][j]) + q.b[l][j]
				if l+2 < len(q.dims) {
					z = max(z, 0)
				}
				y[i*out+j] = z
			}
		}
		cur = y
	}
	return cur
}

func roundEven(f float32) float64 {
	v := float64(f)
	r := float64(int64(v))
	if d := v - r; d > 0.5 || (d == 0.5 && int64(r)%2 != 0) {
		r++
	} else if d < -0.5 || (d == -0.5 && int64(r)%2 != 0) {
		r--
	}
	return r
}

// The quantized network equals its scalar definition (up to fp32
// rounding of the scales), on the GEMV path (batch 1 and 3) and the GEMM
// path (batch 9 and 64), on dims that are not multiples of the tile, and
// stays within the stated tolerance of the fp32 network.
func TestInt8MLPForward(t *testing.T) {
	i8KernelOrSkip(t)
	for _, kern := range i8Kernels() {
		t.Run(kern.name, func(t *testing.T) { testInt8MLPForward(t, kern) })
	}
}

func testInt8MLPForward(t *testing.T, kern sgemmKernel) {
	for _, dims := range [][]int{{1024, 1024, 1024, 1024}, {70, 45, 133, 9}} {
		m := newMLP(dims, newGemm(bestSgemmKernel(), false, 2), 1)
		q := quantizeMLP(m, newGemmI8(kern, 2, caches{L2: 1 << 20, L3: 32 << 20}))
		r := rand.New(rand.NewPCG(1, 1))
		for _, batch := range []int{1, 3, 9, 64} {
			x := randMat(r, batch*dims[0])
			got := append([]float32(nil), q.forward(x, batch)...)
			want := refQuantForward(q, m, x, batch)
			if e := relL2(got, want, nil); e > 1e-5 {
				t.Errorf("dims %v batch %d: %.3g from the scalar quantized network", dims, batch, e)
			}
			f := m.forward(x, batch)
			e := relL2(got, f, m.b[len(m.b)-1])
			if e > int8MLPTolerance {
				t.Errorf("dims %v batch %d: %.3g from the fp32 network, above %g", dims, batch, e, int8MLPTolerance)
			}
			t.Logf("dims %v batch %d: relative L2 error against fp32 %.4f", dims, batch, e)
		}
		// A wrong product fails the check: one layer's packed weights
		// zeroed.
		for _, blk := range q.packed[1].blocks {
			clear(blk)
		}
		x := randMat(r, 64*dims[0])
		if e := relL2(q.forward(x, 64), m.forward(x, 64), m.b[len(m.b)-1]); e <= int8MLPTolerance {
			t.Errorf("dims %v: a zeroed layer gives %.3g from fp32, within the tolerance %g: the check would not catch it", dims, e, int8MLPTolerance)
		}
		q.close()
		m.close()
	}
}

func TestDynamicQuantize(t *testing.T) {
	x := []float32{-1, 0, 0.5, 2, 3}
	dst := make([]uint8, 8)
	s, zp := dynamicQuantize(dst, 8, x, 1, 5)
	// range [-1, 3]: scale 4/255, zero point round(255/4) = 64
	if s != float32(4)/255 || zp != 64 || dst[0] != 0 || dst[1] != 64 || dst[4] != 255 || dst[5] != 0 {
		t.Errorf("scale %g zp %d q %v", s, zp, dst)
	}
	pos := []float32{0.5, 1}
	if _, zp := dynamicQuantize(dst, 2, pos, 1, 2); zp != 0 || dst[1] != 255 {
		t.Errorf("non-negative input: zero point %d, q %v; want 0 and 255 for the max", zp, dst[:2])
	}
	if s, zp := dynamicQuantize(dst, 2, []float32{0, 0}, 1, 2); s != 0 || zp != 0 || dst[0] != 0 {
		t.Errorf("all zero: scale %g zp %d", s, zp)
	}
}

// The benchmark runs, checks against fp32 and reports, or says why not.
func TestCPUMLPInt8Results(t *testing.T) {
	cfg := newConfig(Options{Quick: true, Threads: 2, InferBatch: 64})
	cfg.mlpDims, cfg.latencyReps, cfg.throughputReps = []int{256, 256, 256}, 20, 2
	rs := cpuMLPInt8Results(context.Background(), cfg, cpuPeakFor(currentCPU(), 2, clockTimers{
		vector: func(int) (float64, int, bool) { return 100, 512, true },
		chain:  func(int) float64 { return 3 },
	}))
	if len(rs) != 4 {
		t.Fatalf("%d results", len(rs))
	}
	if _, ok := i8Kernel(); !ok {
		for _, r := range rs {
			if r.Ran || !strings.Contains(r.Reason, "avx512_vnni") {
				t.Errorf("without VNNI: %+v", r)
			}
		}
		return
	}
	for _, r := range rs {
		if !r.Ran || r.Value <= 0 || r.Params["error_vs_fp32"] == "" || !strings.Contains(r.Params["quantization"], "per output channel") {
			t.Errorf("%+v", r)
		}
	}
	if thr := rs[3]; thr.Unit != "samples/s" || thr.Peak <= 0 {
		t.Errorf("throughput %+v", thr)
	}
}

// The element-wise kernels (AVX-512 where present) give what their Go
// definitions give, on lengths that leave a tail.
// asmQuant is one set of the int8 MLP's element-wise kernels, with why it
// cannot run on this host ("" where it can).
type asmQuant struct {
	name    string
	quant   func(dst []uint8, x []float32, scale float32, zp int32)
	minMax  func(x []float32, lo, hi float32) (float32, float32)
	dequant func(y []float32, acc, cs []int32, ws, b []float32, s float32, zp int32, relu bool, lo, hi float32) (float32, float32)
	missing string
}

func TestInt8ElementwiseKernels(t *testing.T) {
	for _, impl := range append([]asmQuant{{"host", quantizeSpan, minMaxSpan, dequantSpan, ""}}, asmQuants()...) {
		t.Run(impl.name, func(t *testing.T) {
			if impl.missing != "" {
				t.Skipf("assembly kernels %s not tested: %s", impl.name, impl.missing)
			}
			testInt8Elementwise(t, impl)
		})
	}
}

func testInt8Elementwise(t *testing.T, impl asmQuant) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 100, 1024} {
		x := randMat(r, n)
		for i := range x {
			x[i] *= 3
		}
		x[0] = 0.5 * float32(4) / 255 // a tie: round to even
		s, zp := quantParams(-3, 3)
		got, want := make([]uint8, n), make([]uint8, n)
		impl.quant(got, x, s, zp)
		quantizeSpanGeneric(want, x, s, zp)
		if string(got) != string(want) {
			t.Errorf("n=%d: quantizeSpan %v, want %v", n, got, want)
		}
		// Values past the range saturate at 0 and 255.
		wide := append([]float32(nil), x...)
		for i := range wide {
			wide[i] *= 4
		}
		impl.quant(got, wide, s, zp)
		quantizeSpanGeneric(want, wide, s, zp)
		if string(got) != string(want) {
			t.Errorf("n=%d, 4x the range: quantizeSpan %v, want %v", n, got, want)
		}
		lo, hi := impl.minMax(x, 0, 0)
		wlo, whi := minMaxSpanGeneric(x, 0, 0)
		if lo != wlo || hi != whi {
			t.Errorf("n=%d: minMaxSpan %g %g, want %g %g", n, lo, hi, wlo, whi)
		}
		acc, cs := make([]int32, n), make([]int32, n)
		for i := range acc {
			acc[i], cs[i] = int32(r.Uint32()>>12)-(1<<19), int32(r.IntN(2000))-1000
		}
		ws, b := randMat(r, n), randMat(r, n)
		for _, relu := range []bool{false, true} {
			y, wy := make([]float32, n), make([]float32, n)
			lo, hi := impl.dequant(y, acc, cs, ws, b, 1e-4, 17, relu, 0, 0)
			wlo, whi := dequantSpanGeneric(wy, acc, cs, ws, b, 1e-4, 17, relu, 0, 0)
			if !equalBits(y, wy) || lo != wlo || hi != whi {
				t.Errorf("n=%d relu=%v: dequantSpan differs from Go (range %g %g, want %g %g)", n, relu, lo, hi, wlo, whi)
			}
		}
	}
}
