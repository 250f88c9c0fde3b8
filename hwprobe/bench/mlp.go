package bench

import (
	"math/rand/v2"
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
	team *team // batch-1 GEMV workers, made on first use; close releases them
	// packed holds the weights packed for the GEMM (prepack), for
	// inference; step, which changes the weights, drops it.
	packed []*packedB

	// Per-batch buffers: z[l] pre-activations, a[l] activations (a[0] is the input).
	batch int
	a, z  [][]float32
	dz    [][]float32
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
func (m *mlp) forward(x []float32, batch int) []float32 {
	m.ensure(batch)
	m.a[0] = x
	for l := 0; l < m.layers(); l++ {
		in, out := m.dims[l], m.dims[l+1]
		z := m.z[l+1]
		for i := 0; i < batch; i++ {
			copy(z[i*out:(i+1)*out], m.b[l])
		}
		switch {
		case batch <= 4:
			m.gemv(m.a[l], m.w[l], z, batch, in, out)
		case m.packed != nil:
			m.g.SgemmPacked(false, batch, 1, m.a[l], in, m.packed[l], 1, z, out)
		default:
			m.g.Sgemm(false, false, batch, out, in, 1, m.a[l], in, m.w[l], out, 1, z, out)
		}
		act := m.a[l+1]
		if l+1 == m.layers() {
			copy(act, z)
			continue
		}
		for i, v := range z {
			act[i] = max(v, 0)
		}
	}
	return m.a[m.layers()]
}

// gemv adds x*W into y for tiny batches: each worker of the team owns a
// band of output columns and runs gemvAdd on it per sample, the band's
// sums in registers across all rows of W, so its weights are read once per
// sample.
func (m *mlp) gemv(x, w, y []float32, batch, in, out int) {
	t := min(m.g.threads, max(1, out/256))
	if m.team == nil || m.team.n < t {
		m.close()
		m.team = newTeam(t, 200*time.Microsecond)
	}
	m.team.runN(t, func(p int) {
		j0, j1 := out*p/t&^63, out*(p+1)/t&^63
		if p == t-1 {
			j1 = out
		}
		for s := 0; s < batch; s++ {
			gemvAdd(x[s*in:(s+1)*in], w[j0:], out, y[s*out+j0:s*out+j1])
		}
	})
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

// close releases the GEMV team's workers.
func (m *mlp) close() {
	if m.team != nil {
		m.team.close()
		m.team = nil
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
