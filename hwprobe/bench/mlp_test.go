package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

// perturb names one parameter to shift by delta in lossFloat64.
type perturb struct {
	layer int
	bias  bool
	index int
	delta float64
}

// lossFloat64 recomputes the MLP loss in float64 from the weights, with one
// parameter shifted by p.delta (in float64, so the shift can be tiny).
func lossFloat64(m *mlp, x, y []float32, batch int, p perturb) float64 {
	act := make([]float64, len(x))
	for i, v := range x {
		act[i] = float64(v)
	}
	for l := 0; l < m.layers(); l++ {
		in, out := m.dims[l], m.dims[l+1]
		next := make([]float64, batch*out)
		for s := 0; s < batch; s++ {
			for j := 0; j < out; j++ {
				v := float64(m.b[l][j])
				if p.layer == l && p.bias && p.index == j {
					v += p.delta
				}
				for i := 0; i < in; i++ {
					w := float64(m.w[l][i*out+j])
					if p.layer == l && !p.bias && p.index == i*out+j {
						w += p.delta
					}
					v += act[s*in+i] * w
				}
				if l+1 < m.layers() {
					v = math.Max(v, 0)
				}
				next[s*out+j] = v
			}
		}
		act = next
	}
	var s float64
	for i, v := range act {
		e := v - float64(y[i])
		s += 0.5 * e * e
	}
	return s / float64(batch)
}

func TestMLPGradientNumerical(t *testing.T) {
	tests := []struct {
		name  string
		dims  []int
		batch int
	}{
		{"3 layers", []int{5, 7, 6, 3}, 4},
		{"wide", []int{17, 40, 33, 9}, 9},
		{"one layer", []int{8, 5}, 3},
	}
	kerns := kernelsUnderTest(t, false)
	for _, tt := range tests {
		for _, kc := range kerns {
			kern := kc.kern
			t.Run(tt.name+"/"+kern.name, func(t *testing.T) {
				m := newMLP(tt.dims, newGemm(kern, false, 2), 3)
				r := rand.New(rand.NewPCG(5, 6))
				x := randMat(r, tt.batch*tt.dims[0])
				y := randMat(r, tt.batch*tt.dims[len(tt.dims)-1])
				m.forward(x, tt.batch)
				got := m.loss(y)
				if want := lossFloat64(m, x, y, tt.batch, perturb{layer: -1}); math.Abs(got-want) > 1e-4*math.Max(1, want) {
					t.Fatalf("loss = %g, float64 reference %g", got, want)
				}
				m.backward()
				const eps = 1e-6
				for l := range m.w {
					for _, params := range []struct {
						g    []float32
						bias bool
					}{{m.gw[l], false}, {m.gb[l], true}} {
						for i := 0; i < len(params.g); i += 1 + len(params.g)/13 {
							lp := lossFloat64(m, x, y, tt.batch, perturb{l, params.bias, i, eps})
							lm := lossFloat64(m, x, y, tt.batch, perturb{l, params.bias, i, -eps})
							num := (lp - lm) / (2 * eps)
							ana := float64(params.g[i])
							if math.Abs(num-ana) > 1e-3*math.Max(1e-2, math.Abs(num)) {
								t.Errorf("layer %d bias=%v [%d]: analytic %g, numerical %g", l, params.bias, i, ana, num)
							}
						}
					}
				}
			})
		}
	}
}

func TestMLPTrainingReducesLoss(t *testing.T) {
	kern := sgemmKernels()[0]
	m := newMLP([]int{32, 64, 64, 8}, newGemm(kern, false, 2), 1)
	r := rand.New(rand.NewPCG(1, 1))
	x := randMat(r, 64*32)
	y := randMat(r, 64*8)
	first := m.trainStep(x, y, 64, 0.05)
	var last float64
	for range 50 {
		last = m.trainStep(x, y, 64, 0.05)
	}
	if !(last < first) {
		t.Fatalf("loss went from %g to %g", first, last)
	}
}

func TestMLPGemvMatchesGemm(t *testing.T) {
	kern := sgemmKernels()[0]
	m := newMLP([]int{100, 300, 130}, newGemm(kern, false, 2), 1)
	defer m.close()
	r := rand.New(rand.NewPCG(2, 2))
	x := randMat(r, 2*100)
	small := append([]float32(nil), m.forward(x, 2)...) // gemv path
	// The same two samples padded into a batch of 8 take the GEMM path.
	xb := append(append([]float32(nil), x...), make([]float32, 6*100)...)
	big := m.forward(xb, 8)
	for i, v := range small {
		if math.Abs(float64(v-big[i])) > 1e-4 {
			t.Fatalf("output %d: gemv %g, gemm %g", i, v, big[i])
		}
	}
}

// TestGemvAdd checks gemvAdd against float64 sums for widths that take
// every kernel, the two-set kernels with odd and even row counts, the
// scalar tail, and a leading dimension wider than the band; y's existing
// values are kept, and no element past the band is written. The scalar
// loop is checked on every host; the AVX-512 kernels, which gemvAdd takes
// only where the host has AVX-512, are reported as skipped elsewhere.
func TestGemvAdd(t *testing.T) {
	for _, impl := range []struct {
		name    string
		fn      func(x, w []float32, ldw int, y []float32)
		missing string
	}{{"scalar", gemvAddGeneric, ""}, {"assembly", gemvAdd, asmMissing()}} {
		t.Run(impl.name, func(t *testing.T) {
			if impl.missing != "" {
				t.Skipf("assembly GEMV kernels not tested: %s", impl.missing)
			}
			r := rand.New(rand.NewPCG(5, 6))
			for _, n := range []int{1, 15, 16, 17, 33, 64, 100, 448, 449, 512, 720, 1024} {
				for _, k := range []int{1, 2, 7, 64, 129} {
					ldw := n + 24
					x, w := randMat(r, k), randMat(r, k*ldw)
					y := randMat(r, n+8)
					want := make([]float64, len(y))
					for j := range y {
						want[j] = float64(y[j])
						if j < n {
							for i := range k {
								want[j] += float64(x[i]) * float64(w[i*ldw+j])
							}
						}
					}
					impl.fn(x, w, ldw, y[:n])
					for j := range y {
						if d := math.Abs(float64(y[j]) - want[j]); d > 1e-4*(1+math.Abs(want[j])) {
							t.Fatalf("n=%d k=%d: y[%d] = %g, want %g", n, k, j, y[j], want[j])
						}
					}
				}
			}
		})
	}
}

// TestMLPPrepack: inference on packed weights gives the outputs of the
// unpacked network exactly, and a training step, which changes the
// weights, drops the packed copy (a later forward sees the new weights).
func TestMLPPrepack(t *testing.T) {
	kern := sgemmKernels()[0]
	m := newMLP([]int{100, 300, 130}, newGemm(kern, false, 2), 1)
	defer m.close()
	r := rand.New(rand.NewPCG(4, 4))
	x, y := randMat(r, 64*100), randMat(r, 64*130)
	forward := func() []float32 { return append([]float32(nil), m.forward(x, 64)...) }
	plain := forward()
	m.prepack()
	packed := forward()
	sameOutputs(t, "before a step", packed, plain)
	m.trainStep(x, y, 64, 0.05)
	if m.packed != nil {
		t.Fatal("the packed weights survived a training step")
	}
	trained := forward()
	m.prepack()
	again := forward()
	sameOutputs(t, "after a step", again, trained)
	if trained[0] == plain[0] && trained[1] == plain[1] {
		t.Fatal("the training step changed nothing")
	}
}

// sameOutputs fails at the first output on packed weights that is not the
// unpacked network's exactly.
func sameOutputs(t *testing.T, when string, packed, plain []float32) {
	t.Helper()
	for i := range plain {
		if packed[i] != plain[i] {
			t.Fatalf("%s, output %d: %g packed, %g unpacked", when, i, packed[i], plain[i])
		}
	}
}
