package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// qmlp is an mlp quantized for int8 inference the way ONNX Runtime runs a
// dynamically quantized network (onnxruntime.quantization.quantize_dynamic
// with per_channel: DynamicQuantizeLinear, MatMulInteger, then the scales
// and the bias in fp32):
//   - weights: int8, symmetric (zero point 0), one scale per output
//     channel: max |W[:, j]| / 127, rounded half to even, in [-127, 127];
//   - activations: uint8, asymmetric, one scale and zero point per tensor
//     (the whole batch x width input of a layer), computed at run time as
//     ONNX's DynamicQuantizeLinear does: the range [min(x, 0), max(x, 0)]
//     over 255 steps, the zero point round(-min/scale), x/scale rounded
//     half to even plus the zero point, saturated to [0, 255];
//   - each layer: acc = xq * Wq (int32, the int8 GEMM, exact), then
//     y = float32(acc - zp * colsum(Wq)) * (scale_x * scale_w[j]) + b[j],
//     ReLU between layers, the last layer linear, fp32 out.
//
// With VNNI, batches of up to 4 take the int8 GEMV on the packed weights
// (a band of output panels per worker, as the fp32 network's GEMV);
// larger ones, and every batch on AVX2's kernel, the int8 GEMM with the
// weights packed once. On AVX2's kernel (u8 x s8 pairs summed into int16
// with saturation) the weights are quantized to [-64, 64], as
// quantize_dynamic's reduce_range does for such CPUs.
type qmlp struct {
	dims   []int
	b      [][]float32 // biases, fp32
	ws     [][]float32 // weight scale per output channel
	colsum [][]int32   // per output column, the sum of its int8 weights
	packed []*packedB
	g      *gemm
	team   *team
	// qmax bounds the quantized weights: maxQuant, or i8PairsB for an
	// engine whose kernel sums pairs into int16 (ONNX Runtime's
	// reduce_range for such CPUs).
	qmax int
	// gemvBand, when set (i8gemvFor), runs the batches of up to 4;
	// else every batch takes the engine's GEMM.
	gemvBand func(kq int, x []uint8, b []float32, stride, panels int, y []int32) bool

	batch int
	xq    []uint8     // the quantized input of a layer, batch rows of inPad bytes
	acc   []int32     // int32 products, batch rows of outPad
	act   [][]float32 // act[l+1]: layer l's output
}

// maxQuant bounds the quantized weights: symmetric, so -128 is not used.
const maxQuant = 127

// i8gemvFor is the int8 GEMV for the packed panels of the engine kernel
// kern, or nil where none runs: VNNI's on 32-column panels, AVX2's on the
// pair-summing kernel's 16-column panels.
func i8gemvFor(kern sgemmKernel) func(kq int, x []uint8, b []float32, stride, panels int, y []int32) bool {
	switch {
	case hasVNNI() && kern.nr == 32:
		return i8gemvBand
	case kern.pairs && kern.nr == 16: // AVX2's kernel: listed only where AVX2 runs
		// Batch 1 on the GEMM computes a 6-row tile for one row: on 2
		// vCPUs of Zen 3, 3 interleaved runs, the GEMV ran the quick
		// network's batch-1 p50 in 0.052-0.059 ms against the GEMM's
		// 0.123-0.140 (2026-11-28).
		return i8gemvBand16
	}
	return nil
}

// quantizeMLP quantizes m's weights for the int8 engine g.
func quantizeMLP(m *mlp, g *gemm) *qmlp {
	q := &qmlp{dims: m.dims, g: g, qmax: maxQuant, gemvBand: i8gemvFor(g.kern)}
	if g.kern.pairs {
		q.qmax = i8PairsB
	}
	qmax := float32(q.qmax)
	for l := 0; l < m.layers(); l++ {
		in, out := m.dims[l], m.dims[l+1]
		w := m.w[l]
		scale := make([]float32, out)
		for i := 0; i < in; i++ {
			for j, v := range w[i*out : (i+1)*out] {
				scale[j] = max(scale[j], float32(math.Abs(float64(v))))
			}
		}
		for j := range scale {
			scale[j] /= qmax
			if scale[j] == 0 {
				scale[j] = 1
			}
		}
		wq := make([]int8, in*out)
		colsum := make([]int32, out)
		for i := 0; i < in; i++ {
			for j, v := range w[i*out : (i+1)*out] {
				r := math.RoundToEven(float64(v / scale[j]))
				wq[i*out+j] = int8(min(max(r, -float64(qmax)), float64(qmax)))
				colsum[j] += int32(wq[i*out+j])
			}
		}
		q.b = append(q.b, m.b[l])
		q.ws = append(q.ws, scale)
		q.colsum = append(q.colsum, colsum)
		q.packed = append(q.packed, g.PackB8(in, out, wq, out))
	}
	return q
}

func (q *qmlp) layers() int { return len(q.dims) - 1 }

func (q *qmlp) forwardOpsPerSample() float64 {
	var f float64
	for l := 0; l < q.layers(); l++ {
		f += 2 * float64(q.dims[l]) * float64(q.dims[l+1])
	}
	return f
}

// pad rounds n up to a whole number of 32-column panels (and so of k
// quads).
func pad(n int) int { return (n + 31) / 32 * 32 }

func (q *qmlp) ensure(batch int) {
	if q.batch == batch {
		return
	}
	q.batch = batch
	widest := 0
	for _, d := range q.dims {
		widest = max(widest, pad(d))
	}
	q.xq = make([]uint8, batch*widest)
	q.acc = make([]int32, batch*widest)
	q.act = make([][]float32, len(q.dims))
	for l, d := range q.dims {
		if l > 0 {
			q.act[l] = make([]float32, batch*d)
		}
	}
}

// quantParams are DynamicQuantizeLinear's scale and zero point for a
// tensor whose values lie in [lo, hi]: the range [min(lo, 0), max(hi, 0)]
// over 255 steps, the zero point round(-min/scale) in [0, 255]. A tensor
// of zeros has scale 0 and quantizes to zeros.
func quantParams(lo, hi float32) (scale float32, zp int32) {
	lo, hi = min(lo, 0), max(hi, 0)
	scale = (hi - lo) / 255
	if scale == 0 {
		return 0, 0
	}
	return scale, int32(min(max(roundHalfEven(-lo/scale), 0), 255))
}

// roundHalfEven rounds a float32 of magnitude below 2^22 to the nearest
// integer, ties to even, as the FPU's default rounding does: adding and
// subtracting 1.5 * 2^23 leaves no fraction bits. (The explicit
// conversion keeps the sum rounded to float32.)
func roundHalfEven(v float32) float32 {
	const magic = 1.5 * (1 << 23)
	if v >= 1<<22 || v <= -(1<<22) {
		return float32(math.RoundToEven(float64(v)))
	}
	return float32(v+magic) - magic
}

// quantizeRows quantizes rows of x (width w) into dst (rows ld bytes
// apart, the padding zeroed) with the given scale and zero point:
// round(x/scale) + zp, ties to even, saturated to [0, 255].
func quantizeRows(dst []uint8, ld int, x []float32, rows, w int, scale float32, zp int32) {
	if scale == 0 {
		for i := 0; i < rows; i++ {
			clear(dst[i*ld : i*ld+w])
		}
		return
	}
	for i := 0; i < rows; i++ {
		d := dst[i*ld : (i+1)*ld]
		quantizeSpan(d[:w], x[i*w:(i+1)*w], scale, zp)
		clear(d[w:])
	}
}

// quantizeSpanGeneric is quantizeSpan in Go.
func quantizeSpanGeneric(dst []uint8, x []float32, scale float32, zp int32) {
	z := float32(zp)
	for j, v := range x {
		r := roundHalfEven(v/scale) + z
		dst[j] = uint8(min(max(r, 0), 255))
	}
}

// minMaxSpanGeneric is minMaxSpan in Go.
func minMaxSpanGeneric(x []float32, lo, hi float32) (float32, float32) {
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// dequantSpanGeneric is dequantSpan in Go.
func dequantSpanGeneric(y []float32, acc, cs []int32, ws, b []float32, s float32, zp int32, relu bool, lo, hi float32) (float32, float32) {
	for j, v := range acc {
		z := float32(v-zp*cs[j])*(s*ws[j]) + b[j]
		if relu {
			z = max(z, 0)
		}
		y[j] = z
		lo, hi = min(lo, z), max(hi, z)
	}
	return lo, hi
}

// dynamicQuantize quantizes x (rows of width w) into dst (rows ld bytes
// apart, the padding zero) as ONNX's DynamicQuantizeLinear does, and
// returns the scale and zero point.
func dynamicQuantize(dst []uint8, ld int, x []float32, rows, w int) (scale float32, zp int32) {
	lo, hi := minMaxSpan(x[:rows*w], 0, 0)
	scale, zp = quantParams(lo, hi)
	quantizeRows(dst, ld, x, rows, w, scale, zp)
	return scale, zp
}

// parallelRows runs f on rows [r0, r1) shares, share w on its own
// goroutine for w > 0, for batches of at least parallelRowsMin rows; a
// smaller batch runs on this goroutine alone. Not on the GEMV team: its
// workers spin for a while after each job, beside the GEMM's goroutines.
// Measured interleaved on 2 vCPUs of Zen 4 (load average 5-6), batch 64:
// medians of 1.22-1.44 ms a forward pass this way, 1.37-1.79 ms with the
// element-wise steps split on the team. Quantizing a 64 x 1024 tensor
// takes about 10 us on one core.
func (q *qmlp) parallelRows(rows int, f func(w, r0, r1 int)) {
	minRows := parallelRowsMin
	if hostQuantKernels.w == 0 {
		minRows = parallelRowsMinGo
	}
	t := min(q.g.threads, rows/minRows)
	if t <= 1 {
		f(0, 0, rows)
		return
	}
	spread(t, func(w int) { f(w, rows*w/t, rows*(w+1)/t) })
}

// parallelRowsMin is the batch from which the element-wise steps are
// split between threads.
const parallelRowsMin = 256

// parallelRowsMinGo is parallelRowsMin where the element-wise steps are
// Go loops (no AVX-512 or AVX2 kernels: about ten times slower). Measured
// interleaved on 2 vCPUs of Zen 3 with the Go loops, batch 64: 15.1-16.9k
// samples/s on one goroutine, 17.5-20.0k split from 16 rows.
const parallelRowsMinGo = 16

// quantKernels are the int8 MLP's element-wise kernels of one vector
// width, over groups of w values (a power of 2); mm holds w minimums then
// w maximums. The zero value has none: Go loops run.
type quantKernels struct {
	name    string
	w       int
	quant   func(dst *uint8, x *float32, n int, scale float32, zp int32)
	minMax  func(x *float32, n int, mm *float32)
	dequant func(y *float32, acc, cs *int32, ws, b *float32, n int, s float32, zp int32, relu int, mm *float32)
}

// teamOf returns the team, with at least t workers: the GEMV's, and the
// batch GEMM's (gemm.team).
func (q *qmlp) teamOf(t int) *team {
	if q.team == nil || q.team.n < t {
		q.close()
		q.team = newTeam(max(t, q.g.threads), 200*time.Microsecond)
		q.g.team = q.team
	}
	return q.team
}

// forward runs the quantized network on x (batch x dims[0]) and returns its
// fp32 output. The element-wise steps run on the GEMM's threads by rows:
// each layer's output is dequantized (with the bias and ReLU) and its
// range taken in one pass, then quantized for the next layer.
func (q *qmlp) forward(x []float32, batch int) []float32 {
	q.ensure(batch)
	small := batch <= 4 && q.gemvBand != nil
	in0 := q.dims[0]
	ldx := in0
	if small {
		ldx = pad(in0)
	}
	lo, hi := make([]float32, q.g.threads), make([]float32, q.g.threads)
	q.parallelRows(batch, func(w, r0, r1 int) {
		lo[w], hi[w] = minMaxSpan(x[r0*in0:r1*in0], 0, 0)
	})
	s, zp := quantParams(slices.Min(lo), slices.Max(hi))
	q.parallelRows(batch, func(_, r0, r1 int) {
		quantizeRows(q.xq[r0*ldx:], ldx, x[r0*in0:], r1-r0, in0, s, zp)
	})
	var y []float32
	for l := 0; l < q.layers(); l++ {
		in, out := q.dims[l], q.dims[l+1]
		lda := out
		if small {
			lda = pad(out)
		}
		if small {
			q.gemv(batch, l, ldx, lda)
		} else {
			// On the team: measured interleaved on 2 vCPUs of Zen 4,
			// batch 64, medians of 606-670 us a forward pass, against
			// 696-780 with a goroutine per part.
			q.teamOf(q.g.threads)
			q.g.I8gemmPacked(batch, q.xq, ldx, q.packed[l], q.acc, lda)
		}
		_ = in
		y = q.act[l+1]
		ws, b, cs := q.ws[l], q.b[l], q.colsum[l]
		relu := l+1 < q.layers()
		clear(lo)
		clear(hi)
		q.parallelRows(batch, func(w, r0, r1 int) {
			l, h := float32(0), float32(0)
			for i := r0; i < r1; i++ {
				l, h = dequantSpan(y[i*out:(i+1)*out], q.acc[i*lda:i*lda+out], cs, ws, b, s, zp, relu, l, h)
			}
			lo[w], hi[w] = l, h
		})
		if !relu {
			break
		}
		ldx = out
		if small {
			ldx = pad(out)
		}
		s, zp = quantParams(slices.Min(lo), slices.Max(hi))
		q.parallelRows(batch, func(_, r0, r1 int) {
			quantizeRows(q.xq[r0*ldx:], ldx, y[r0*out:], r1-r0, out, s, zp)
		})
	}
	return y
}

// gemv multiplies the batch (at most 4) quantized rows of q.xq (ldx bytes
// apart) by layer l's packed weights into q.acc (rows lda apart): the team
// splits the output panels, each worker running the int8 GEMV kernels on
// its band across every k block.
func (q *qmlp) gemv(batch, l, ldx, lda int) {
	pb := q.packed[l]
	panels := (pb.n + pb.nr - 1) / pb.nr
	t := min(q.g.threads, max(1, pb.n/256), panels)
	q.teamOf(t).runN(t, func(w int) {
		p0, p1 := panels*w/t, panels*(w+1)/t
		for s := 0; s < batch; s++ {
			y := q.acc[s*lda+p0*pb.nr : s*lda+p1*pb.nr]
			clear(y)
			for bi, blk := range pb.blocks {
				pc := bi * pb.kc
				kq := (min(pb.kc, pb.k-pc) + 3) / 4
				stride := pb.nr * kq
				if !q.gemvBand(kq, q.xq[s*ldx+pc:s*ldx+pc+4*kq], blk[p0*stride:], stride, p1-p0, y) {
					panic("bench: the int8 GEMV kernel cannot run on this CPU")
				}
			}
		}
	})
}

func (q *qmlp) close() {
	if q.team != nil {
		q.team.close()
		q.team = nil
		q.g.team = nil
	}
}

// int8MLPTolerance bounds the quantized network's error against the fp32
// one: the relative L2 norm ||y_int8 - y_fp32|| / ||y_fp32 - b|| over a
// batch, where b is the last layer's bias: the error over the part of the
// output the products make (the bias, added in fp32 by both, would hide
// a wrong product where it dominates). Measured on the benchmark's
// network (three 1024-wide layers), 8-bit activations per tensor and
// weights per channel give 0.4-0.5% (0.7-1% on small odd widths); 5% is
// well above that and far below what a wrong product or
// a wrong scale gives (the order of 100%).
const int8MLPTolerance = 0.05

// relL2 is ||got - want|| / ||want - bias|| (bias repeated over the rows;
// nil for none).
func relL2(got, want, bias []float32) float64 {
	var d, n float64
	for i, w := range want {
		e := float64(got[i]) - float64(w)
		d += e * e
		if len(bias) > 0 {
			w -= bias[i%len(bias)]
		}
		n += float64(w) * float64(w)
	}
	if n == 0 {
		return math.Sqrt(d)
	}
	return math.Sqrt(d / n)
}

// cpuMLPInt8Results quantizes the MLP (the fp32 benchmark's network, as
// initialised) and runs its inference benchmarks: batch-1 latency
// percentiles and large-batch throughput. Every run checks the quantized
// output of both batch sizes against the fp32 network's within
// int8MLPTolerance.
func cpuMLPInt8Results(ctx context.Context, cfg config, peak cpuPeak) []Result {
	names := []string{"cpu_mlp_int8_infer_p50", "cpu_mlp_int8_infer_p90", "cpu_mlp_int8_infer_p99", "cpu_mlp_int8_infer_throughput"}
	fail := func(reason string) []Result {
		out := make([]Result, len(names))
		for i, n := range names {
			out[i] = notRun(n, "cpu", reason)
		}
		return out
	}
	// Batch 1 runs the VNNI matrix-vector kernels; the batch GEMM runs
	// AMX-INT8 where it runs and every layer's width is a whole number of
	// tiles, else the VNNI kernel. Without VNNI, both run AVX2's kernel.
	vnni, ok := i8Kernel()
	if !ok {
		return fail("no int8 instructions (avx512_vnni or avx2) on this CPU")
	}
	cs := hostCaches()
	kern, amxErr := amxFor(amxI8Kernel, cfg.mlpDims[:len(cfg.mlpDims)-1]...)
	var eng *gemm
	peakOps, basis := peak.GOPSInt8AMX(), peak.AMXBasis
	if amxErr == nil {
		eng = newGemmAMX(kern, true, cfg.threads, cs)
	} else {
		kern, eng = vnni, newGemmI8(vnni, cfg.threads, cs)
		peakOps, basis = peak.GOPSInt8(), peak.Int8Basis
	}
	ref := newMLP(cfg.mlpDims, newGemm(bestSgemmKernel(), false, cfg.threads), 1)
	defer ref.close()
	q := quantizeMLP(ref, eng)
	defer q.close()
	backend1 := kern.name
	if q.gemvBand != nil {
		backend1 = vnni.name + "-gemv" // i8Kernel's GEMV (i8gemvFor), also beside AMX
	}
	r := rand.New(rand.NewPCG(3, 4))
	in := cfg.mlpDims[0]
	check := func(x []float32, batch int) (float64, error) {
		want := append([]float32(nil), ref.forward(x, batch)...)
		e := relL2(q.forward(x, batch), want, q.b[len(q.b)-1])
		if !(e <= int8MLPTolerance) {
			return e, fmt.Errorf("the int8 network's output (batch %d) is %.3g from the fp32 network's (relative L2, over the output less the last bias), above the tolerance %g", batch, e, int8MLPTolerance)
		}
		return e, nil
	}
	base := map[string]string{
		"dims": fmt.Sprint(cfg.mlpDims), "threads": strconv.Itoa(cfg.threads), "activation": "relu",
		"quantization": fmt.Sprintf("weights int8 symmetric per output channel in [-%d, %d]; activations uint8 asymmetric per tensor, dynamic (ONNX DynamicQuantizeLinear); int32 accumulation, fp32 scales, bias and output", q.qmax, q.qmax),
		"tolerance":    fmt.Sprintf("relative L2 error against the fp32 network (over its output less the last layer's bias) <= %g, checked every run", int8MLPTolerance),
	}
	if amxErr != nil {
		if note := amxNote(currentCPU(), amxErr); note != "" {
			base["amx"] = note
		}
	}

	// Batch-1 latency.
	x1 := randMat(r, in)
	e1, err := check(x1, 1)
	if err != nil {
		return fail(err.Error())
	}
	for range 20 {
		q.forward(x1, 1)
	}
	lat := make([]float64, 0, cfg.latencyReps)
	for range cfg.latencyReps {
		if err := ctx.Err(); err != nil {
			return fail(err.Error())
		}
		t0 := time.Now()
		q.forward(x1, 1)
		lat = append(lat, time.Since(t0).Seconds()*1e3)
	}
	s := summarize(lat)
	var out []Result
	for _, p := range []struct {
		name string
		pct  float64
	}{{names[0], 50}, {names[1], 90}, {names[2], 99}} {
		out = append(out, Result{
			Name: p.name, Device: "cpu", Backend: backend1, Ran: true,
			Value: percentile(lat, p.pct), Unit: "ms", HigherIsBetter: false,
			Reps: len(lat), Spread: s.spread(),
			Params: mergeParams(base, map[string]string{"batch": "1", "warmup": "20", "peak_note": "no peak for latency", "error_vs_fp32": ftoa(e1)}),
		})
	}

	// Throughput at a large batch.
	Bi := cfg.inferBatch
	xi := randMat(r, Bi*in)
	ei, err := check(xi, Bi)
	if err != nil {
		return fail(err.Error())
	}
	var thr []float64
	for range cfg.throughputReps {
		if err := ctx.Err(); err != nil {
			return fail(err.Error())
		}
		t0 := time.Now()
		q.forward(xi, Bi)
		thr = append(thr, float64(Bi)/time.Since(t0).Seconds())
	}
	ops := q.forwardOpsPerSample()
	ip := mergeParams(base, peak.params(), map[string]string{
		"batch": strconv.Itoa(Bi), "ops_per_sample": ftoa(ops), "weights": "quantized and packed once, before timing",
		"error_vs_fp32": ftoa(ei), "peak_int8_basis": basis, "blocking": "from the caches: " + cacheString(cs),
	})
	out = append(out, measured(names[3], kern.name, "samples/s", thr, peakOps*1e9/ops, ip))
	return out
}
