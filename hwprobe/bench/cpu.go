package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// bestSgemmKernel is the fastest fp32 micro-kernel this host supports.
func bestSgemmKernel() sgemmKernel { return sgemmKernels()[0] }

// builtinGemmResult times the built-in GEMM on an n x n x n product after
// one warm-up call, and checks a sample of the product against float64.
// The fp32 benchmark multiplies fp32 matrices; the bf16 one multiplies
// bfloat16 matrices (as a model stores them) with fp32 accumulation and an
// fp32 result.
func builtinGemmResult(ctx context.Context, cfg config, bf16 bool, peak cpuPeak) Result {
	name, kern, peakG := "cpu_sgemm", bestSgemmKernel(), peak.GFLOPS32()
	n := cfg.gemmN
	var amxErr error
	basis := peak.BF16Basis
	widened := false
	if bf16 {
		// The AMX kernel where it runs, judged against the tile units'
		// rate; else the AVX-512 one, judged against VDPBF16PS's; else
		// the fp32 kernel on widened inputs, judged against the fp32
		// rate. On a CPU with AMX the amx param says why AMX did not run.
		name = "cpu_bf16_gemm"
		var amxK sgemmKernel
		amxK, amxErr = amxFor(amxBF16Kernel, n)
		vecK, vecOK := bf16Kernel()
		kern, widened = pickBF16Kernel(amxK, amxErr, vecK, vecOK, kern)
		switch {
		case kern.tileK > 0:
			peakG, basis = peak.GFLOPSBF16AMX(), peak.AMXBasis
		case widened:
			peakG, basis = peak.GFLOPS32(), "bf16 widened to fp32: the fp32 FMA rate"
		default:
			peakG = peak.GFLOPSBF16()
		}
	}
	var g *gemm
	var cs caches
	if kern.tileK > 0 {
		cs = hostCaches()
		g = newGemmAMX(kern, false, cfg.threads, cs)
	} else {
		g = newGemm(kern, bf16 && !widened, cfg.threads)
	}
	r := rand.New(rand.NewPCG(1, 2))
	x, y, z := randMat(r, n*n), randMat(r, n*n), make([]float32, n*n)
	call := func() { g.Sgemm(false, false, n, n, n, 1, x, n, y, n, 0, z, n) }
	if bf16 {
		x16, y16 := toBF16Slice(x), toBF16Slice(y)
		x, y = fromBF16Slice(x16), fromBF16Slice(y16) // the values the product uses
		call = func() { g.Bgemm(n, n, n, x16, n, y16, n, z, n) }
	}
	call()
	if err := checkGemmSample(x, y, z, n, 1e-4); err != nil {
		return notRun(name, "cpu", fmt.Sprintf("built-in %s kernel gave a wrong product: %v", kern.name, err))
	}
	flops := 2 * float64(n) * float64(n) * float64(n)
	var rates []float64
	for range cfg.gemmReps {
		if err := ctx.Err(); err != nil {
			return notRun(name, "cpu", err.Error())
		}
		t0 := time.Now()
		call()
		rates = append(rates, flops/time.Since(t0).Seconds()/1e9)
	}
	p := mergeParams(peak.params(), map[string]string{
		"n": strconv.Itoa(n), "threads": strconv.Itoa(g.threads),
		"mr": strconv.Itoa(kern.mr), "nr": strconv.Itoa(kern.nr),
		"mc": strconv.Itoa(g.mc), "kc": strconv.Itoa(g.kc), "nc": strconv.Itoa(g.nc),
	})
	if kern.tileK > 0 || (!g.bf16 && kern.nr <= 16) { // newGemm's cache-derived engines
		if kern.tileK == 0 {
			cs = hostCaches()
		}
		p["blocking"] = "from the caches: " + cacheString(cs)
	}
	if bf16 {
		p["peak_bf16_basis"] = basis
		p["inputs"], p["accumulate"] = "bf16", "fp32"
		if widened {
			p["compute"] = "fp32: no bf16 dot-product instructions (avx512_bf16 or amx_bf16) on this CPU, so the bf16 inputs are widened to fp32 as they are packed"
		}
		if amxErr != nil {
			if note := amxNote(currentCPU(), amxErr); note != "" {
				p["amx"] = note
			}
		}
	}
	return measured(name, kern.name, "GFLOP/s", rates, peakG, p)
}

// pickBF16Kernel chooses the kernel of cpu_bf16_gemm: the AMX kernel
// where it runs (amxErr nil), else the AVX-512 bf16 kernel where the CPU
// has it (vecOK), else the fp32 kernel (fp32) on inputs widened from
// bf16 (widened true).
func pickBF16Kernel(amx sgemmKernel, amxErr error, vec sgemmKernel, vecOK bool, fp32 sgemmKernel) (kern sgemmKernel, widened bool) {
	switch {
	case amxErr == nil:
		return amx, false
	case vecOK:
		return vec, false
	}
	return fp32, true
}

func toBF16Slice(s []float32) []uint16 {
	out := make([]uint16, len(s))
	for i, v := range s {
		out[i] = uint16(toBF16(v))
	}
	return out
}

func fromBF16Slice(s []uint16) []float32 {
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = fromBF16(uint32(v))
	}
	return out
}

// cpuStreamResults sizes the arrays at four times the last-level cache (at
// least 16M elements) and runs the STREAM kernels.
func cpuStreamResults(ctx context.Context, cfg config) []Result {
	names := []string{"cpu_stream_copy", "cpu_stream_scale", "cpu_stream_add", "cpu_stream_triad"}
	llc, src := lastLevelCache("/sys/devices/system/cpu")
	elements := max(int(4*llc/8), 16<<20)
	impl, _ := streamKernels()
	rs, err := streamResults(ctx, streamConfig{elements: elements, reps: cfg.streamReps, threads: cfg.threads}, impl,
		map[string]string{"llc_bytes": strconv.FormatInt(llc, 10), "llc_source": src})
	if err != nil {
		out := make([]Result, len(names))
		for i, n := range names {
			out[i] = notRun(n, "cpu", err.Error())
		}
		return out
	}
	return rs
}

// cpuMLPResults trains and runs the MLP on synthetic data: samples/s of a
// full SGD step, batch-1 latency percentiles and large-batch throughput.
// sgemmGFLOPS, when measured, gives the step's efficiency against GEMM.
// The inference output of both batch sizes is checked against float64
// (checkOutput) before timing; a wrong one leaves the inference rows not
// run.
func cpuMLPResults(ctx context.Context, cfg config, peak cpuPeak, sgemmGFLOPS float64) []Result {
	names := []string{"cpu_mlp_train", "cpu_mlp_infer_p50", "cpu_mlp_infer_p90", "cpu_mlp_infer_p99", "cpu_mlp_infer_throughput"}
	fail := func(err error) []Result {
		out := make([]Result, len(names))
		for i, n := range names {
			out[i] = notRun(n, "cpu", err.Error())
		}
		return out
	}
	kern := bestSgemmKernel()
	m := newMLP(cfg.mlpDims, newGemm(kern, false, cfg.threads), 1)
	defer m.close()
	r := rand.New(rand.NewPCG(3, 4))
	in, outW := cfg.mlpDims[0], cfg.mlpDims[len(cfg.mlpDims)-1]
	base := map[string]string{"dims": fmt.Sprint(cfg.mlpDims), "threads": strconv.Itoa(cfg.threads), "activation": "relu", "loss": "mse", "optimizer": "sgd"}

	// Training.
	B := cfg.trainBatch
	x, y := randMat(r, B*in), randMat(r, B*outW)
	m.trainStep(x, y, B, 1e-3) // warm-up
	var trainRates []float64
	for range cfg.trainReps {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		t0 := time.Now()
		m.trainStep(x, y, B, 1e-3)
		trainRates = append(trainRates, float64(B)/time.Since(t0).Seconds())
	}
	flopsTrain := m.trainFlopsPerSample()
	tp := mergeParams(base, peak.params(), map[string]string{"batch": strconv.Itoa(B), "flops_per_sample": ftoa(flopsTrain)})
	train := measured("cpu_mlp_train", kern.name, "samples/s", trainRates, peak.GFLOPS32()*1e9/flopsTrain, tp)
	train.Params["gflops"] = ftoa(train.Value * flopsTrain / 1e9)
	if sgemmGFLOPS > 0 {
		train.Params["efficiency_vs_sgemm"] = ftoa(train.Value * flopsTrain / 1e9 / sgemmGFLOPS)
	}

	// Inference: the weights are packed once, as a serving engine does
	// when it loads the network.
	m.prepack()

	// Inference rows not run: their output is wrong.
	wrong := func(err error) []Result {
		out := []Result{train}
		for _, n := range names[1:] {
			out = append(out, notRun(n, "cpu", err.Error()))
		}
		return out
	}

	// Batch-1 latency (single stream).
	x1 := randMat(r, in)
	if err := m.checkOutput(x1, 1, m.forward(x1, 1), 0); err != nil {
		return wrong(err)
	}
	for range 20 {
		m.forward(x1, 1)
	}
	lat := make([]float64, 0, cfg.latencyReps)
	for range cfg.latencyReps {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		t0 := time.Now()
		m.forward(x1, 1)
		lat = append(lat, time.Since(t0).Seconds()*1e3)
	}
	s := summarize(lat)
	var out []Result
	out = append(out, train)
	for _, p := range []struct {
		name string
		pct  float64
	}{{"cpu_mlp_infer_p50", 50}, {"cpu_mlp_infer_p90", 90}, {"cpu_mlp_infer_p99", 99}} {
		out = append(out, Result{
			Name: p.name, Device: "cpu", Backend: kern.name + "-gemv", Ran: true,
			Value: percentile(lat, p.pct), Unit: "ms", HigherIsBetter: false,
			Reps: len(lat), Spread: s.spread(),
			Params: mergeParams(base, map[string]string{"batch": "1", "warmup": "20", "peak_note": "no peak for latency"}),
		})
	}

	// Offline throughput at a large batch.
	Bi := cfg.inferBatch
	xi := randMat(r, Bi*in)
	if err := m.checkOutput(xi, Bi, m.forward(xi, Bi), 0, Bi/2, Bi-1); err != nil {
		return wrong(err)
	}
	var thr []float64
	for range cfg.throughputReps {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		t0 := time.Now()
		m.forward(xi, Bi)
		thr = append(thr, float64(Bi)/time.Since(t0).Seconds())
	}
	flopsInf := m.forwardFlopsPerSample()
	ip := mergeParams(base, peak.params(), map[string]string{"batch": strconv.Itoa(Bi), "flops_per_sample": ftoa(flopsInf), "weights": "packed once, before timing"})
	out = append(out, measured("cpu_mlp_infer_throughput", kern.name, "samples/s", thr, peak.GFLOPS32()*1e9/flopsInf, ip))
	return out
}
