package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
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

// asmGemv is a set of assembly GEMV kernels, as gemvAdd runs them, and why
// it cannot run on this host ("" where it can).
type asmGemv struct {
	name    string
	fn      func(x, w []float32, ldw int, y []float32)
	missing string
}

// TestGemvAdd checks gemvAdd against float64 sums for widths that take
// every kernel, the two-set kernels with odd and even row counts, the
// scalar tail, and a leading dimension wider than the band; y's existing
// values are kept, and no element past the band is written. The scalar
// loop is checked on every host, gemvAdd as this host runs it, and each
// assembly set where the host has its instructions (reported as skipped
// elsewhere).
func TestGemvAdd(t *testing.T) {
	impls := append([]asmGemv{{"scalar", gemvAddGeneric, ""}, {"host", gemvAdd, ""}}, asmGemvs()...)
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			if impl.missing != "" {
				t.Skipf("assembly GEMV kernels %s not tested: %s", impl.name, impl.missing)
			}
			r := rand.New(rand.NewPCG(5, 6))
			for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 33, 64, 100, 112, 113, 200, 448, 449, 512, 720, 1024} {
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

// forwardBatchFloat64 is the network's forward pass in float64 for a batch.
func forwardBatchFloat64(m *mlp, x []float32, batch int) []float64 {
	var out []float64
	in := m.dims[0]
	for s := 0; s < batch; s++ {
		out = append(out, m.forwardFloat64(x[s*in:(s+1)*in])...)
	}
	return out
}

// TestMLPForwardAgainstFloat64: the forward pass against float64, for
// batch 1 and 2-4 (the GEMV: bands of columns, and row slices with their
// sum for the narrow layer), odd batches and 64 (the GEMM: the shared A
// of packed weights, its k over two blocks for the first layer, the row
// split for the narrow layer), on packed weights and not, on 1, 3 and 16
// threads (more than this host's cores, on most hosts), and on 16 with
// GOMAXPROCS 16 (16 bands and 16 threads' ranges of panels, whatever the
// host). Every output is checked, so one wrong band or panel of columns
// fails.
func TestMLPForwardAgainstFloat64(t *testing.T) {
	dims := []int{1100, 1024, 96, 77, 10}
	if bands, slices := gemvSplit(1024, 96, 16); bands != 1 || slices < 2 {
		t.Fatalf("gemvSplit(1024, 96, 16) = %d bands, %d slices: the narrow layer no longer splits its rows", bands, slices)
	}
	r := rand.New(rand.NewPCG(8, 8))
	batches := []int{1, 2, 3, 4, 5, 7, 64, 65}
	xs, wants := map[int][]float32{}, map[int][]float64{}
	// Weights at the scale that keeps the activations' variance from
	// layer to layer (the benchmark's He-style scale shrinks them about
	// 30-fold a layer, and the last bias would hide an error in the first
	// layers).
	ref := newMLP(dims, newGemm(sgemmKernels()[0], false, 1), 11)
	for l, w := range ref.w {
		s := float32(math.Sqrt(6*float64(dims[l])) / 2)
		for i := range w {
			w[i] *= s
		}
	}
	for _, b := range batches {
		xs[b] = randMat(r, b*dims[0])
		wants[b] = forwardBatchFloat64(ref, xs[b], b)
	}
	for _, kern := range sgemmKernels() {
		// procs: GOMAXPROCS for the case (0: as it is); at 16 the team
		// has 16 workers even on a host with fewer cores.
		for _, tp := range []struct{ threads, procs int }{{1, 0}, {3, 0}, {16, 0}, {16, 16}} {
			for _, packed := range []bool{false, true} {
				threads := tp.threads
				t.Run(fmt.Sprintf("%s/t%d/procs=%d/packed=%v", kern.name, threads, tp.procs, packed), func(t *testing.T) {
					if tp.procs > 0 {
						defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tp.procs))
					}
					m := newMLP(dims, newGemm(kern, false, threads), 11)
					defer m.close()
					for l := range m.w {
						copy(m.w[l], ref.w[l])
					}
					if packed {
						m.prepack()
					}
					for round := range 2 { // the second on reused buffers and a warm team
						for _, b := range batches {
							got := m.forward(xs[b], b)
							want := wants[b]
							var rms float64
							for _, v := range want {
								rms += v * v
							}
							rms = math.Sqrt(rms / float64(len(want)))
							for i, v := range want {
								if d := math.Abs(float64(got[i]) - v); !(d <= 1e-5*(math.Abs(v)+rms)) {
									t.Fatalf("round %d batch %d: output %d (sample %d) = %g, float64 %g", round, b, i, i/dims[len(dims)-1], got[i], v)
								}
							}
						}
					}
				})
			}
		}
	}
}

// TestSgemmPackedDone: done is called for disjoint column ranges that
// cover C, each once its columns are final in every row, on the shared-A
// split (threads 3 and 16) and the others (1 thread; many rows).
func TestSgemmPackedDone(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	kern := sgemmKernels()[0]
	for _, tc := range []struct{ m, n, k, threads int }{
		{64, 1000, 1500, 3}, {64, 1024, 1024, 16}, {5, 77, 40, 16}, {64, 300, 200, 1}, {700, 100, 64, 3},
	} {
		t.Run(fmt.Sprintf("%dx%dx%d/t%d", tc.m, tc.n, tc.k, tc.threads), func(t *testing.T) {
			// As many Ps as threads, whatever the host: runPackedA runs
			// no more threads than GOMAXPROCS.
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(tc.threads, runtime.GOMAXPROCS(0))))
			g := newGemm(kern, false, tc.threads)
			a, b := randMat(r, tc.m*tc.k), randMat(r, tc.k*tc.n)
			want := make([]float32, tc.m*tc.n)
			g.Sgemm(false, false, tc.m, tc.n, tc.k, 1, a, tc.k, b, tc.n, 0, want, tc.n)
			pb := g.PackB(false, tc.k, tc.n, b, tc.n)
			got := randMat(r, tc.m*tc.n) // overwritten: beta 0
			var mu sync.Mutex
			seen := make([]int, tc.n)
			g.sgemmPacked(false, tc.m, 1, a, tc.k, pb, 0, got, tc.n, func(j0, j1 int) {
				for i := 0; i < tc.m; i++ {
					for j := j0; j < j1; j++ {
						if got[i*tc.n+j] != want[i*tc.n+j] {
							t.Errorf("done(%d, %d): C[%d,%d] = %g, final %g", j0, j1, i, j, got[i*tc.n+j], want[i*tc.n+j])
							return
						}
					}
				}
				mu.Lock()
				for j := j0; j < j1; j++ {
					seen[j]++
				}
				mu.Unlock()
			})
			for j, n := range seen {
				if n != 1 {
					t.Fatalf("column %d reported done %d times", j, n)
				}
			}
		})
	}
}

// asmBiasAct is an assembly bias-and-activation kernel, as biasActSpan
// runs it, and why it cannot run on this host ("" where it can).
type asmBiasAct struct {
	name    string
	fn      func(z, act, b []float32, relu bool)
	missing string
}

// biasActSpan, as this host runs it and with each assembly kernel the
// host has, gives what its Go definition gives, with the ReLU and
// without, on lengths that leave a tail; the elements past the span are
// not written.
func TestBiasActSpan(t *testing.T) {
	for _, impl := range append([]asmBiasAct{{"host", biasActSpan, ""}}, asmBiasActs()...) {
		t.Run(impl.name, func(t *testing.T) {
			if impl.missing != "" {
				t.Skipf("assembly kernel %s not tested: %s", impl.name, impl.missing)
			}
			r := rand.New(rand.NewPCG(7, 7))
			for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 64, 100, 1024} {
				for _, relu := range []bool{false, true} {
					z, b := randMat(r, n+3), randMat(r, n)
					z2 := append([]float32(nil), z...)
					act, act2 := randMat(r, n+3), make([]float32, n+3)
					copy(act2, act)
					impl.fn(z[:n], act[:n], b, relu)
					biasActSpanGeneric(z2[:n], act2[:n], b, relu)
					for i := range z {
						if z[i] != z2[i] || act[i] != act2[i] {
							t.Fatalf("n=%d relu=%v [%d]: z %g act %g, want %g %g", n, relu, i, z[i], act[i], z2[i], act2[i])
						}
					}
				}
			}
		})
	}
}

// checkOutput, the benchmark's check of the inference output against
// float64, passes the network's own output, on packed weights at batch
// 1 and 64 (the rows the benchmark checks), and fails where one layer's
// packed weights, or one band of the output, are wrong.
func TestMLPCheckOutput(t *testing.T) {
	dims := []int{1024, 1024, 1024, 1024}
	m := newMLP(dims, newGemm(bestSgemmKernel(), false, 3), 1)
	defer m.close()
	m.prepack()
	r := rand.New(rand.NewPCG(2, 3))
	x1, x64 := randMat(r, dims[0]), randMat(r, 64*dims[0])
	if err := m.checkOutput(x1, 1, m.forward(x1, 1), 0); err != nil {
		t.Fatal(err)
	}
	if err := m.checkOutput(x64, 64, m.forward(x64, 64), 0, 32, 63); err != nil {
		t.Fatal(err)
	}
	out := append([]float32(nil), m.forward(x1, 1)...)
	for j := 64; j < 128; j++ {
		out[j] += 1e-3
	}
	if err := m.checkOutput(x1, 1, out, 0); err == nil {
		t.Error("an output band off by 1e-3 passed")
	}
	clear(m.packed[0].blocks[0][:32*1024]) // the first panel of the first layer
	if err := m.checkOutput(x64, 64, m.forward(x64, 64), 0, 32, 63); err == nil {
		t.Error("a zeroed panel of the first layer's weights passed")
	} else {
		t.Log(err)
	}
}
