package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// gpuMLP is the MLP of the CPU benchmark built from cuBLASLt bf16 matmuls
// in column-major layout: activations are width x batch, weights in x out.
// Forward matmuls fuse ReLU as an epilogue; the backward pass computes the
// input gradients and fuses the SGD update into the weight-gradient matmul
// (W += -lr * A * dZ^T). No elementwise kernels are loaded, so the output
// gradient is taken as the output itself and ReLU masks are not applied
// backwards: the FLOPs and memory traffic of the matmuls are those of a real
// step, which is what the benchmark measures.
type gpuMLP struct {
	g     *gpuRun
	lt    *cublasLt
	h     uintptr
	dims  []int
	w     []uintptr // bf16 weights, dims[l] x dims[l+1]
	act   []uintptr // bf16 activations, dims[l] x maxBatch
	grad  []uintptr // bf16 gradients, dims[l] x maxBatch
	ws    uintptr
	plans map[matmulShape]*ltPlan
	free  []uintptr
}

const gpuMLPWorkspace = 32 << 20

func (g *gpuRun) newGPUMLP(lt *cublasLt, dims []int, maxBatch int) (*gpuMLP, error) {
	if len(dims) < 2 || maxBatch < 1 {
		return nil, fmt.Errorf("gpu mlp: need at least two layer widths and a batch, got dims %v batch %d", dims, maxBatch)
	}
	m := &gpuMLP{g: g, lt: lt, dims: dims, plans: map[matmulShape]*ltPlan{}}
	rt := g.rt
	r := rand.New(rand.NewPCG(11, 12))
	if err := ltCheck("cublasLtCreate", lt.create(&m.h)); err != nil {
		return nil, err
	}
	var err error
	if m.ws, err = rt.alloc(gpuMLPWorkspace); err != nil {
		m.close()
		return nil, err
	}
	m.free = append(m.free, m.ws)
	for l, d := range dims {
		if l+1 < len(dims) {
			w, err := g.upload(randomBits(r, "bf16", d*dims[l+1], float32(1/math.Sqrt(float64(d)))))
			if err != nil {
				m.close()
				return nil, err
			}
			m.w, m.free = append(m.w, w), append(m.free, w)
		}
		a, err := g.upload(randomBits(r, "bf16", d*maxBatch, 1))
		if err != nil {
			m.close()
			return nil, err
		}
		gr, err := rt.alloc(uint64(2 * d * maxBatch))
		if err != nil {
			m.close()
			return nil, err
		}
		m.act, m.grad, m.free = append(m.act, a), append(m.grad, gr), append(m.free, a, gr)
	}
	return m, nil
}

func (m *gpuMLP) close() {
	for _, p := range m.plans {
		p.close()
	}
	for _, p := range m.free {
		m.g.rt.free(p)
	}
	if m.h != 0 {
		m.lt.destroy(m.h)
	}
}

func (m *gpuMLP) matmul(s matmulShape, a, b, d uintptr, alpha, beta float32) error {
	s.inType, s.outType = cudaR16BF, cudaR16BF
	p, ok := m.plans[s]
	if !ok {
		var err error
		if p, err = m.lt.plan(m.h, s, m.ws, gpuMLPWorkspace); err != nil {
			return fmt.Errorf("planning %dx%dx%d: %w", s.m, s.n, s.k, err)
		}
		m.plans[s] = p
	}
	return p.run(m.h, a, b, d, alpha, beta)
}

func (m *gpuMLP) forward(batch int) error {
	L := len(m.dims) - 1
	for l := 0; l < L; l++ {
		in, out := m.dims[l], m.dims[l+1]
		if err := m.matmul(matmulShape{m: out, n: batch, k: in, transA: true, relu: l+1 < L}, m.w[l], m.act[l], m.act[l+1], 1, 0); err != nil {
			return err
		}
	}
	return nil
}

func (m *gpuMLP) trainStep(batch int, lr float32) error {
	if err := m.forward(batch); err != nil {
		return err
	}
	L := len(m.dims) - 1
	dz := m.act[L] // output gradient stand-in, see gpuMLP
	for l := L - 1; l >= 0; l-- {
		in, out := m.dims[l], m.dims[l+1]
		if l > 0 {
			// dA = W * dZ (in x batch), computed before W is updated.
			if err := m.matmul(matmulShape{m: in, n: batch, k: out}, m.w[l], dz, m.grad[l], 1, 0); err != nil {
				return err
			}
		}
		// W += -lr * A * dZ^T.
		if err := m.matmul(matmulShape{m: in, n: out, k: batch, transB: true}, m.act[l], dz, m.w[l], -lr, 1); err != nil {
			return err
		}
		dz = m.grad[l]
	}
	return nil
}

func gpuMLPNames() []string {
	return []string{"gpu_mlp_train", "gpu_mlp_infer_p50", "gpu_mlp_infer_p90", "gpu_mlp_infer_p99", "gpu_mlp_infer_throughput"}
}

// mlp runs the GPU MLP benchmarks on one device.
func (g *gpuRun) mlp(lt *cublasLt, d gpuDevice) []Result {
	names := gpuMLPNames()
	fail := func(err error) []Result {
		out := make([]Result, len(names))
		for i, n := range names {
			out[i] = notRun(n, d.label(), err.Error())
		}
		return out
	}
	if d.major < 8 {
		return fail(fmt.Errorf("bf16 matmuls need compute capability 8.0, %s has %d.%d", d.name, d.major, d.minor))
	}
	rt := g.rt
	if err := rt.check("cudaSetDevice", rt.setDevice(int32(d.index))); err != nil {
		return fail(err)
	}
	dims, batch := g.cfg.gpuMLPDims, g.cfg.gpuMLPBatch
	inferBatch := 2 * batch
	m, err := g.newGPUMLP(lt, dims, inferBatch)
	if err != nil {
		return fail(err)
	}
	defer m.close()
	sync := func() error { return rt.check("cudaDeviceSynchronize", rt.deviceSynchronize()) }
	var fwd, train float64
	for l := 0; l+1 < len(dims); l++ {
		fwd += 2 * float64(dims[l]) * float64(dims[l+1])
		if l > 0 {
			train += 2 * float64(dims[l]) * float64(dims[l+1])
		}
	}
	train += 2 * fwd
	base := mergeParams(d.params(), map[string]string{
		"dims": fmt.Sprint(dims), "dtype": "bf16",
		"note": "matmul-only step: ReLU fused forward, no elementwise kernels backward",
	}, lt.lib.params())
	timeIt := func(reps int, f func() error) ([]float64, error) {
		for range 3 {
			if err := f(); err != nil {
				return nil, err
			}
		}
		if err := sync(); err != nil {
			return nil, err
		}
		var secs []float64
		for range reps {
			if err := g.ctx.Err(); err != nil {
				return nil, err
			}
			t0 := time.Now()
			if err := f(); err != nil {
				return nil, err
			}
			if err := sync(); err != nil {
				return nil, err
			}
			secs = append(secs, time.Since(t0).Seconds())
		}
		return secs, nil
	}
	rates := func(secs []float64, per float64) []float64 {
		out := make([]float64, len(secs))
		for i, s := range secs {
			out[i] = per / s
		}
		return out
	}
	var out []Result
	secs, err := timeIt(g.cfg.gpuReps, func() error { return m.trainStep(batch, 1e-4) })
	if err != nil {
		return fail(err)
	}
	peakSamples := 0.0
	if d.peak.BF16 > 0 {
		peakSamples = d.peak.BF16 * 1e12 / train
	}
	tr := measured("gpu_mlp_train", "cublasLt", "samples/s", rates(secs, float64(batch)), peakSamples,
		mergeParams(base, map[string]string{"batch": strconv.Itoa(batch), "flops_per_sample": ftoa(train)}))
	tr.Device = d.label()
	out = append(out, tr)

	lat, err := timeIt(g.cfg.latencyReps, func() error { return m.forward(1) })
	if err != nil {
		return fail(err)
	}
	ms := make([]float64, len(lat))
	for i, s := range lat {
		ms[i] = s * 1e3
	}
	sp := summarize(ms).spread()
	for _, p := range []struct {
		name string
		pct  float64
	}{{"gpu_mlp_infer_p50", 50}, {"gpu_mlp_infer_p90", 90}, {"gpu_mlp_infer_p99", 99}} {
		out = append(out, Result{Name: p.name, Device: d.label(), Backend: "cublasLt", Ran: true,
			Value: percentile(ms, p.pct), Unit: "ms", Reps: len(ms), Spread: sp,
			Params: mergeParams(base, map[string]string{"batch": "1", "peak_note": "no peak for latency"})})
	}

	thr, err := timeIt(g.cfg.gpuReps, func() error { return m.forward(inferBatch) })
	if err != nil {
		return fail(err)
	}
	peakInf := 0.0
	if d.peak.BF16 > 0 {
		peakInf = d.peak.BF16 * 1e12 / fwd
	}
	ti := measured("gpu_mlp_infer_throughput", "cublasLt", "samples/s", rates(thr, float64(inferBatch)), peakInf,
		mergeParams(base, map[string]string{"batch": strconv.Itoa(inferBatch), "flops_per_sample": ftoa(fwd)}))
	ti.Device = d.label()
	return append(out, ti)
}
