package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// team runs a job on n goroutines at once, the caller being one of them,
// for fork-joins too short to pay a goroutine's wake-up each: between
// jobs its workers spin for up to spin before they park, as OpenMP's
// threads do. Batch-1 inference runs one short GEMV per layer, back to
// back; with a goroutine per worker and layer, waking the workers cost
// 30-50 us of a 160 us forward pass on a 2-vCPU Zen 5 host.
// A team is used by one goroutine at a time; close releases its workers.
type team struct {
	n    int
	spin time.Duration
	job  func(w int)
	gen  atomic.Uint64 // bumped by each run, and by close
	left atomic.Int64  // workers still on the current job
	stop atomic.Bool
	mu   sync.Mutex
	cond *sync.Cond
}

func newTeam(n int, spin time.Duration) *team {
	t := &team{n: max(1, n), spin: spin}
	t.cond = sync.NewCond(&t.mu)
	for w := 1; w < t.n; w++ {
		go t.worker(w)
	}
	return t
}

// run calls job(w) for w in [0, n) at once and returns when all have
// returned.
func (t *team) run(job func(w int)) {
	if t.n == 1 {
		job(0)
		return
	}
	t.job = job
	t.left.Store(int64(t.n - 1))
	t.mu.Lock()
	t.gen.Add(1)
	t.cond.Broadcast()
	t.mu.Unlock()
	job(0)
	for i := 0; t.left.Load() > 0; i++ {
		if i%64 == 63 {
			runtime.Gosched()
		}
	}
}

// close stops the workers once they are idle.
func (t *team) close() {
	t.stop.Store(true)
	t.mu.Lock()
	t.gen.Add(1)
	t.cond.Broadcast()
	t.mu.Unlock()
}

func (t *team) worker(w int) {
	var seen uint64 // gen before the first run: a worker that starts late still sees it
	for {
		for i, t0 := 0, time.Now(); t.gen.Load() == seen; i++ {
			if i%64 == 63 {
				if time.Since(t0) > t.spin {
					t.mu.Lock()
					for t.gen.Load() == seen {
						t.cond.Wait()
					}
					t.mu.Unlock()
					break
				}
				runtime.Gosched()
			}
		}
		if t.stop.Load() {
			return
		}
		seen = t.gen.Load()
		t.job(w)
		t.left.Add(-1)
	}
}
