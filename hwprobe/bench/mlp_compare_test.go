package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// legacyMLP runs an mlp's inference as forward did before the GEMM shared
// its packed A between the threads and the GEMV chose its workers from the
// layer's shape (up to commit f11cf29): the bias copied into z, then the
// GEMV on at most out/256 workers of a team of its own, or the column
// split of the packed product with a goroutine per part, each packing all
// of A; the bias and activation afterwards on one thread. Kept in the
// tests only, to time the two in one process (TestMLPCompare).
type legacyMLP struct {
	m    *mlp
	team *team
}

func (o *legacyMLP) close() {
	if o.team != nil {
		o.team.close()
	}
}

func (o *legacyMLP) forward(x []float32, batch int) []float32 {
	m := o.m
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
			o.gemv(m.a[l], m.w[l], z, batch, in, out)
		case m.packed != nil:
			legacyRun(m.g, batch, out, in, packers{a: m.g.packerA(m.a[l], in, false, 1), packed: m.packed[l].panels(m.g)}, 1, z, out)
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

func (o *legacyMLP) gemv(x, w, y []float32, batch, in, out int) {
	t := min(o.m.g.threads, max(1, out/256))
	if o.team == nil || o.team.n < t {
		o.close()
		o.team = newTeam(t, 200*time.Microsecond)
	}
	o.team.runN(t, func(p int) {
		j0, j1 := out*p/t&^63, out*(p+1)/t&^63
		if p == t-1 {
			j1 = out
		}
		for s := 0; s < batch; s++ {
			gemvAdd(x[s*in:(s+1)*in], w[j0:], out, y[s*out+j0:s*out+j1])
		}
	})
}

// legacyRun is gemm.run as it was: the shared B for many rows, else the
// column (or row) split, each thread packing its own A.
func legacyRun(g *gemm, m, n, k int, pk packers, beta float32, c []float32, ldc int) {
	t := g.threads
	tilesM := (m + g.kern.mr - 1) / g.kern.mr
	share := g.shareTiles
	if share <= 0 {
		share = 16
	}
	if t > 1 && tilesM >= share*t && k > 0 {
		g.runShared(m, n, k, pk, beta, c, ldc)
		return
	}
	type part struct{ i0, i1, j0, j1 int }
	var parts []part
	if tilesN := (n + g.kern.nr - 1) / g.kern.nr; tilesN >= 2*t || tilesN >= tilesM {
		t = min(t, tilesN)
		for w := 0; w < t; w++ {
			parts = append(parts, part{0, m, min(n, tilesN*w/t*g.kern.nr), min(n, tilesN*(w+1)/t*g.kern.nr)})
		}
	} else {
		t = min(t, tilesM)
		for w := 0; w < t; w++ {
			parts = append(parts, part{min(m, tilesM*w/t*g.kern.mr), min(m, tilesM*(w+1)/t*g.kern.mr), 0, n})
		}
	}
	for len(g.work) < len(parts) {
		g.work = append(g.work, gemmWork{})
	}
	var wg sync.WaitGroup
	for w, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.block(&g.work[w], p.i0, p.j0, p.i1-p.i0, p.j1-p.j0, k, pk, beta, c[p.i0*ldc+p.j0:], ldc)
		}()
	}
	wg.Wait()
}

// TestMLPCompare times the MLP inference of the benchmark (gobench's
// quick network, 1024 x 3 layers, packed weights) as it was
// (legacyMLP) and as it is, in turns in one process: per round and
// thread count, batch-1 p50 latency over 200 passes and batch-64
// throughput (best and median of 10 batches), old and new in turns
// (the first of a round alternates). Only with
// HWPROBE_MLP_COMPARE set, to the number of rounds;
// HWPROBE_MLP_COMPARE_THREADS lists the thread counts (default "1,2").
func TestMLPCompare(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("HWPROBE_MLP_COMPARE"))
	if rounds < 1 {
		t.Skip("set HWPROBE_MLP_COMPARE to a number of rounds to time the MLP inference, old against new")
	}
	threadList := os.Getenv("HWPROBE_MLP_COMPARE_THREADS")
	if threadList == "" {
		threadList = "1,2"
	}
	dims := []int{1024, 1024, 1024, 1024}
	kern := bestSgemmKernel()
	r := rand.New(rand.NewPCG(3, 4))
	x1, x64 := randMat(r, dims[0]), randMat(r, 64*dims[0])
	for _, ts := range strings.Split(threadList, ",") {
		threads, err := strconv.Atoi(ts)
		if err != nil || threads < 1 {
			t.Fatalf("bad thread count %q", ts)
		}
		oldM := newMLP(dims, newGemm(kern, false, threads), 1)
		oldM.prepack()
		old := &legacyMLP{m: oldM}
		cur := newMLP(dims, newGemm(kern, false, threads), 1)
		cur.prepack()
		for _, b := range []struct {
			x     []float32
			batch int
		}{{x1, 1}, {x64, 64}} {
			want := append([]float32(nil), old.forward(b.x, b.batch)...)
			got := cur.forward(b.x, b.batch)
			if e := relL2(got, want, cur.b[len(cur.b)-1]); e > 1e-5 {
				t.Fatalf("threads %d batch %d: new output %.3g from the old (relative L2)", threads, b.batch, e)
			}
		}
		impls := []struct {
			name    string
			forward func([]float32, int) []float32
		}{{"old", old.forward}, {"new", cur.forward}}
		for round := 1; round <= rounds; round++ {
			for i := range impls {
				im := impls[(i+round-1)%len(impls)] // old first in odd rounds, new first in even ones
				for range 20 {
					im.forward(x1, 1)
				}
				lat := make([]float64, 200)
				for i := range lat {
					t0 := time.Now()
					im.forward(x1, 1)
					lat[i] = time.Since(t0).Seconds() * 1e3
				}
				im.forward(x64, 64)
				thr := make([]float64, 10)
				for i := range thr {
					t0 := time.Now()
					im.forward(x64, 64)
					thr[i] = 64 / time.Since(t0).Seconds()
				}
				slices.Sort(thr)
				fmt.Printf("MLPCOMPARE threads=%d round=%d impl=%s kernel=%s p50_ms=%.4f p99_ms=%.4f thr64_best=%.0f thr64_median=%.0f\n",
					threads, round, im.name, kern.name, percentile(lat, 50), percentile(lat, 99), thr[len(thr)-1], thr[len(thr)/2])
			}
		}
		old.close()
		oldM.close()
		cur.close()
	}
}
