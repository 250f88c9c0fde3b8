package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
)

// mlp is a fully connected network with ReLU between layers, a linear last
// layer and a mean-squared-error loss, trained by plain SGD. Weights are
// row-major dims[l] x dims[l+1]; activations are batch x width.
type mlp struct {
	dims []int
	w, b [][]float32
	gw   [][]float32 // weight gradients
	gb   [][]float32
	g    *gemm
	// team runs the batch-1 GEMV and, on packed weights, the GEMM (as
	// g.team); made on first use, close releases its workers.
	team *team
	// packed holds the weights packed for the GEMM (prepack), for
	// inference; step, which changes the weights, drops it.
	packed []*packedB

	// Per-batch buffers: z[l] pre-activations, a[l] activations (a[0] is the input).
	batch   int
	a, z    [][]float32
	dz      [][]float32
	partial []float32 // the GEMV's partial sums of row slices
}

func newMLP(dims []int, g *gemm, seed uint64) *mlp {
	r := rand.New(rand.NewPCG(seed, 7))
	m := &mlp{dims: dims, g: g}
	for l := 0; l+1 < len(dims); l++ {
		in, out := dims[l], dims[l+1]
		w := make([]float32, in*out)
		scale := float32(2) / float32(in) // He-style uniform init
		for i := range w {
			w[i] = (float32(r.Float64())*2 - 1) * scale
		}
		b := make([]float32, out)
		for i := range b {
			b[i] = float32(r.Float64()*0.02 - 0.01)
		}
		m.w, m.b = append(m.w, w), append(m.b, b)
		m.gw, m.gb = append(m.gw, make([]float32, in*out)), append(m.gb, make([]float32, out))
	}
	return m
}

func (m *mlp) layers() int { return len(m.dims) - 1 }

func (m *mlp) ensure(batch int) {
	if m.batch == batch {
		return
	}
	m.batch = batch
	m.a = make([][]float32, len(m.dims))
	m.z = make([][]float32, len(m.dims))
	m.dz = make([][]float32, len(m.dims))
	for l, d := range m.dims {
		if l > 0 {
			m.a[l] = make([]float32, batch*d)
			m.z[l] = make([]float32, batch*d)
			m.dz[l] = make([]float32, batch*d)
		}
	}
}

// flopsPerSample counts the multiply-adds of one forward pass times two.
func (m *mlp) forwardFlopsPerSample() float64 {
	var f float64
	for l := 0; l < m.layers(); l++ {
		f += 2 * float64(m.dims[l]) * float64(m.dims[l+1])
	}
	return f
}

// trainFlopsPerSample: forward, weight gradients, and input gradients for
// every layer but the first.
func (m *mlp) trainFlopsPerSample() float64 {
	f := 2 * m.forwardFlopsPerSample()
	for l := 1; l < m.layers(); l++ {
		f += 2 * float64(m.dims[l]) * float64(m.dims[l+1])
	}
	return f
}

// forward runs the network on x (batch x dims[0]) and returns the output.
// Each layer's products are stored in z (beta 0); on packed weights and
// in the GEMV the bias and the activation follow on the threads that
// computed them, band of columns by band, while the band is in cache
// (biasAct). On one thread, in Go, the element-wise pass over a 64 x 1024
// layer took 50-65 us, as long as the layer's products take on 16 cores;
// with AVX-512, 7 us.
func (m *mlp) forward(x []float32, batch int) []float32 {
	m.ensure(batch)
	m.a[0] = x
	for l := 0; l < m.layers(); l++ {
		in, out := m.dims[l], m.dims[l+1]
		z, act, b := m.z[l+1], m.a[l+1], m.b[l]
		relu := l+1 < m.layers()
		done := func(j0, j1 int) { biasAct(z, act, b, batch, out, j0, j1, relu) }
		switch {
		case batch <= 4:
			m.gemv(l, batch, relu)
		case m.packed != nil:
			// On the team, whose workers spin between the layers.
			m.g.team = m.teamOf()
			m.g.sgemmPacked(false, batch, 1, m.a[l], in, m.packed[l], 0, z, out, done)
		default:
			m.g.Sgemm(false, false, batch, out, in, 1, m.a[l], in, m.w[l], out, 0, z, out)
			done(0, out)
		}
	}
	return m.a[m.layers()]
}

// biasAct adds the bias b to columns [j0, j1) of the rows of z (n wide)
// and writes their activation into act: ReLU, or the value itself (the
// last layer).
func biasAct(z, act, b []float32, rows, n, j0, j1 int, relu bool) {
	for i := 0; i < rows; i++ {
		biasActSpan(z[i*n+j0:i*n+j1], act[i*n+j0:i*n+j1], b[j0:j1], relu)
	}
}

// biasActSpanGeneric is biasActSpan in Go.
func biasActSpanGeneric(z, act, b []float32, relu bool) {
	act, b = act[:len(z)], b[:len(z)]
	for j, v := range z {
		v += b[j]
		z[j] = v
		if relu {
			v = max(v, 0)
		}
		act[j] = v
	}
}

// activate writes the activation of z into act: ReLU, or z itself.
func activate(z, act []float32, relu bool) {
	act = act[:len(z)]
	if !relu {
		copy(act, z)
		return
	}
	for j, v := range z {
		act[j] = max(v, 0)
	}
}

// gemvMinWork is the fewest multiply-adds of a batch-1 layer worth a
// worker of their own: 32K, 128 KiB of weights, a few microseconds of
// loads from L2, against about a microsecond to start a spinning worker
// and wait for it.
const gemvMinWork = 32 << 10

// gemvSplit chooses the GEMV's workers for an in x out layer on threads
// (the team's workers): as many as the layer has gemvMinWork for, up to
// threads; split first by bands of output columns (a multiple of 64 wide, so the AVX-512
// kernels cover them whole), then, where the bands are fewer than the
// workers (a narrow layer), by slices of the rows (k), each at least 64
// rows, their partial sums added afterwards. A 1024 x 1024 layer runs 16
// bands of 64 columns on 16 threads: each worker's 256 KiB of weights per
// layer stays in its core's L2 from one pass to the next, where 4 bands
// of 1 MiB each (3 MiB over the three layers) streamed from L3.
func gemvSplit(in, out, threads int) (bands, slices int) {
	t := min(max(threads, 1), max(1, in*out/gemvMinWork))
	bands = min(t, max(1, out/64))
	slices = min(t/bands, max(1, in/64))
	return bands, slices
}

// gemv runs layer l for a tiny batch (rows of m.a[l]) into m.z[l+1] and
// m.a[l+1]: each worker of the team owns a band of output columns (and,
// for a narrow layer, a slice of the rows; gemvSplit) and runs gemvAdd
// on it per sample, the band's sums in registers across all its rows of
// W, so its weights are read once per sample; it then adds the bias and
// writes the activation of its band.
func (m *mlp) gemv(l, batch int, relu bool) {
	in, out := m.dims[l], m.dims[l+1]
	x, w, b, z, act := m.a[l], m.w[l], m.b[l], m.z[l+1], m.a[l+1]
	bands, slices := gemvSplit(in, out, m.teamOf().n)
	if slices > 1 {
		m.partial = grow(m.partial, (slices-1)*batch*out)
	}
	job := func(p int) {
		band, s := p%bands, p/bands
		j0, j1 := out*band/bands&^63, out*(band+1)/bands&^63
		if band == bands-1 {
			j1 = out
		}
		i0, i1 := in*s/slices, in*(s+1)/slices
		for r := 0; r < batch; r++ {
			var y []float32
			if s == 0 {
				y = z[r*out+j0 : r*out+j1]
				copy(y, b[j0:j1])
			} else {
				y = m.partial[((s-1)*batch+r)*out+j0 : ((s-1)*batch+r)*out+j1]
				clear(y)
			}
			gemvAdd(x[r*in+i0:r*in+i1], w[i0*out+j0:], out, y)
			if slices == 1 {
				activate(y, act[r*out+j0:r*out+j1], relu)
			}
		}
	}
	if t := bands * slices; t > 1 {
		m.teamOf().runN(t, job)
	} else {
		job(0)
	}
	if slices == 1 {
		return
	}
	for r := 0; r < batch; r++ {
		y := z[r*out : (r+1)*out]
		for s := 1; s < slices; s++ {
			for j, v := range m.partial[((s-1)*batch+r)*out : ((s-1)*batch+r+1)*out] {
				y[j] += v
			}
		}
		activate(y, act[r*out:(r+1)*out], relu)
	}
}

// teamOf returns the network's team: the GEMV's, and the GEMM's on
// packed weights. It has a worker a thread, up to GOMAXPROCS: its workers
// spin between jobs, and more of them than the Go scheduler runs at once
// would spin in the place of those with work (16 on 2 vCPUs: a batch-1
// pass of 1.6-1.9 ms against 0.4-0.6 with 4).
func (m *mlp) teamOf() *team {
	if m.team == nil {
		m.team = newTeam(min(m.g.threads, runtime.GOMAXPROCS(0)), 200*time.Microsecond)
	}
	return m.team
}

// prepack packs the weights for inference, as an inference engine does
// when it loads a network: forward then multiplies batches by them
// without packing them again.
func (m *mlp) prepack() {
	m.packed = m.packed[:0]
	for l := 0; l < m.layers(); l++ {
		m.packed = append(m.packed, m.g.PackB(false, m.dims[l], m.dims[l+1], m.w[l], m.dims[l+1]))
	}
}

// mlpTolerance bounds the fp32 network's output against float64 on
// checked samples: the relative L2 norm over the output less the last
// bias, as for the int8 network (int8MLPTolerance). fp32 rounding gives
// 1-2e-6 on the full benchmark's network (4096 wide); one panel of 32
// zeroed weights in the first layer gives 0.014 (TestMLPCheckOutput), a
// wrong product the order of 1.
const mlpTolerance = 1e-4

// checkOutput compares the samples rows of out, the network's output for
// x (batch samples), with the network computed in float64.
func (m *mlp) checkOutput(x []float32, batch int, out []float32, rows ...int) error {
	in, w := m.dims[0], m.dims[m.layers()]
	var got, want []float32
	for _, s := range rows {
		s = min(max(s, 0), batch-1)
		for _, v := range m.forwardFloat64(x[s*in : (s+1)*in]) {
			want = append(want, float32(v))
		}
		got = append(got, out[s*w:(s+1)*w]...)
	}
	if e := relL2(got, want, m.b[m.layers()-1]); !(e <= mlpTolerance) {
		return fmt.Errorf("the network's output (batch %d) is %.3g from float64 (relative L2, over the output less the last bias), above the tolerance %g", batch, e, mlpTolerance)
	}
	return nil
}

// forwardFloat64 is the network's forward pass in float64 for one sample.
func (m *mlp) forwardFloat64(x []float32) []float64 {
	act := make([]float64, len(x))
	for i, v := range x {
		act[i] = float64(v)
	}
	for l := 0; l < m.layers(); l++ {
		in, out := m.dims[l], m.dims[l+1]
		y := make([]float64, out)
		for j := range y {
			y[j] = float64(m.b[l][j])
		}
		for i := 0; i < in; i++ {
			xi := act[i]
			for j, v := range m.w[l][i*out : (i+1)*out] {
				y[j] += xi * float64(v)
			}
		}
		if l+1 < m.layers() {
			for j, v := range y {
				y[j] = math.Max(v, 0)
			}
		}
		act = y
	}
	return act
}

// close releases the team's workers.
func (m *mlp) close() {
	if m.team != nil {
		m.team.close()
		m.team = nil
		m.g.team = nil
	}
}

// gemvAddGeneric is gemvAdd in Go: y[j] += sum over i of x[i]*w[i*ldw+j].
func gemvAddGeneric(x, w []float32, ldw int, y []float32) {
	for i, xi := range x {
		row := w[i*ldw : i*ldw+len(y)]
		for j := range y {
			y[j] += xi * row[j]
		}
	}
}

// loss returns the mean over the batch of 0.5*|out-y|^2 and leaves its
// gradient with respect to the output pre-activation in dz.
func (m *mlp) loss(y []float32) float64 {
	L := m.layers()
	out, d := m.a[L], m.dz[L]
	var s float64
	inv := 1 / float32(m.batch)
	for i := range out {
		e := out[i] - y[i]
		s += 0.5 * float64(e) * float64(e)
		d[i] = e * inv
	}
	return s / float64(m.batch)
}

// backward computes all gradients after forward and loss.
func (m *mlp) backward() {
	B := m.batch
	for l := m.layers() - 1; l >= 0; l-- {
		in, out := m.dims[l], m.dims[l+1]
		dz := m.dz[l+1]
		// dW = a[l]^T * dz (in x out), db = column sums of dz.
		m.g.Sgemm(true, false, in, out, B, 1, m.a[l], in, dz, out, 0, m.gw[l], out)
		gb := m.gb[l]
		clear(gb)
		for i := 0; i < B; i++ {
			row := dz[i*out : (i+1)*out]
			for j, v := range row {
				gb[j] += v
			}
		}
		if l == 0 {
			break
		}
		// da = dz * W^T (B x in), then through the ReLU.
		da := m.dz[l]
		m.g.Sgemm(false, true, B, in, out, 1, dz, out, m.w[l], out, 0, da, in)
		zl := m.z[l]
		for i, v := range zl {
			if v <= 0 {
				da[i] = 0
			}
		}
	}
}

// step applies SGD with learning rate lr.
func (m *mlp) step(lr float32) {
	m.packed = nil
	// Training's products run on a goroutine per part, not on the team:
	// its spinning workers would hold the cores the shared split's
	// goroutines (runShared) wait for.
	m.g.team = nil
	for l := range m.w {
		w, gw := m.w[l], m.gw[l]
		t := max(1, m.g.threads)
		var wg sync.WaitGroup
		for p := 0; p < t; p++ {
			lo, hi := len(w)*p/t, len(w)*(p+1)/t
			wg.Add(1)
			go func() {
				defer wg.Done()
				saxpy(w[lo:hi], gw[lo:hi], -lr)
			}()
		}
		wg.Wait()
		saxpy(m.b[l], m.gb[l], -lr)
	}
}

// trainStep runs forward, loss, backward and update; it returns the loss.
func (m *mlp) trainStep(x, y []float32, batch int, lr float32) float64 {
	m.forward(x, batch)
	loss := m.loss(y)
	m.backward()
	m.step(lr)
	return loss
}
