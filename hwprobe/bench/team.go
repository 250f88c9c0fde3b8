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
	// gen is the job's sequence number (bits 16 and up, bumped by each
	// run and by close) and how many workers run it (the low 16 bits): a
	// worker reads both at once, so one not needed for a job cannot take
	// the count of the next.
	gen  atomic.Uint64
	left latch // workers still on the current job
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
func (t *team) run(job func(w int)) { t.runN(t.n, job) }

// runN calls job(w) for w in [0, k) at once (k at most n) and returns when
// they have returned; the other workers are not waited for. A job of a
// few workers' worth (a narrow layer's GEMV) then does not wait for every
// worker of a large team to be scheduled.
func (t *team) runN(k int, job func(w int)) {
	k = min(max(k, 1), t.n, 0xffff)
	if k == 1 {
		job(0)
		return
	}
	t.job = job
	t.left.n.Store(int64(k - 1))
	t.mu.Lock()
	t.gen.Store((t.gen.Load()>>16+1)<<16 | uint64(k))
	t.cond.Broadcast()
	t.mu.Unlock()
	job(0)
	t.left.wait()
}

// spinYield is how many polls a spinning goroutine makes between
// runtime.Gosched calls: rarely, as a guard for a team larger than
// GOMAXPROCS. A Gosched does not give the thread to the OS; it puts the
// goroutine on the scheduler's global run queue, under its lock, and 15
// workers doing that every 64 polls on a 16-core Xeon made the int8 MLP's
// batch-1 pass 0.22-0.25 ms (0.12-0.14 every 1024 polls, 0.018-0.025
// without; ONNX Runtime 0.083-0.18 in the same run).
const spinYield = 1 << 16

// close stops the workers once they are idle.
func (t *team) close() {
	t.stop.Store(true)
	t.mu.Lock()
	t.gen.Store((t.gen.Load()>>16 + 1) << 16)
	t.cond.Broadcast()
	t.mu.Unlock()
}

func (t *team) worker(w int) {
	var seen uint64 // gen before the first run: a worker that starts late still sees it
	for {
		for i, t0 := 0, time.Now(); t.gen.Load() == seen; i++ {
			if i%spinYield == spinYield-1 {
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
		if w < int(seen&0xffff) {
			t.job(w)
			t.left.done()
		}
	}
}

// latch is a count of pieces of work that goroutines wait to see done:
// they spin for up to latchSpin, then block until the last piece is done.
// A worker of a team that loses its core to another process (a shared
// host) then leaves the waiting one's core to it, instead of the waiting
// one spinning through its time slice. Set n before the work starts.
type latch struct {
	n       atomic.Int64
	mu      sync.Mutex
	cond    sync.Cond
	waiters int // blocked in wait, under mu
}

// latchSpin is how long a latch's waiter spins before it blocks: far
// longer than the threads of a job normally finish apart (a few
// microseconds; on a 16-core Xeon the AMX int8 layers of a batch-64
// pass came apart by more than 50 us often enough that a 50 us spin
// blocked most passes), far shorter than the time slice of a thread that
// lost its core (milliseconds).
const latchSpin = 500 * time.Microsecond

// done marks one piece done. The last one wakes a blocked waiter and
// yields to it: the Go scheduler puts the woken goroutine next in line on
// this goroutine's P, which a team worker would otherwise keep spinning
// (its next yield is spinYield polls away) while an idle P is woken to
// steal it. Measured on a 16-core Xeon (AMX), batch-64 int8 MLP, 5
// interleaved rounds: medians of 91K samples/s without the yield (3 of 5
// runs under 100K), 183-191K with it (none under 148K).
func (l *latch) done() {
	if l.n.Add(-1) == 0 {
		l.mu.Lock()
		woke := l.waiters > 0
		if woke {
			l.cond.Broadcast()
		}
		l.mu.Unlock()
		if woke {
			runtime.Gosched()
		}
	}
}

// wait returns once every piece is done.
func (l *latch) wait() {
	var t0 time.Time
	for i := 0; l.n.Load() > 0; i++ {
		if i%256 != 255 {
			continue
		}
		if t0.IsZero() {
			t0 = time.Now()
			continue
		}
		if time.Since(t0) < latchSpin {
			continue
		}
		l.mu.Lock()
		if l.cond.L == nil {
			l.cond.L = &l.mu
		}
		l.waiters++
		for l.n.Load() > 0 {
			l.cond.Wait()
		}
		l.waiters--
		l.mu.Unlock()
		return
	}
}

// spread runs job(w) for w in [0, t): 1 to t-1 on goroutines of their
// own, 0 on the caller's, and returns when all are done. For work that
// has no team, or more threads than its team's workers.
func spread(t int, job func(w int)) {
	var wg sync.WaitGroup
	for w := 1; w < t; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			job(w)
		}()
	}
	job(0)
	wg.Wait()
}
