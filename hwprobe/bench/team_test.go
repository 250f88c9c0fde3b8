package bench

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestTeam runs back-to-back jobs (workers still spinning) and jobs after
// a pause (workers parked), checks each worker ran each job exactly once
// and that run returned only after all of them, and that close ends the
// workers.
func TestTeam(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, spin := range []time.Duration{0, time.Millisecond} {
		tm := newTeam(3, spin)
		var ran [3]atomic.Int64
		for job := 1; job <= 200; job++ {
			tm.run(func(w int) {
				if job%50 == 0 {
					time.Sleep(time.Millisecond) // some workers finish late
				}
				ran[w].Add(1)
			})
			for w := range ran {
				if got := ran[w].Load(); got != int64(job) {
					t.Fatalf("spin %v, after job %d: worker %d ran %d jobs", spin, job, w, got)
				}
			}
			if job%40 == 0 {
				time.Sleep(3 * time.Millisecond) // past the spin: the workers park
			}
		}
		tm.close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after close, %d before", n, before)
	}
}

// runN runs the job on its first k workers only, each once, returns after
// them, and a worker left out of one job runs the next that needs it: a
// worker never takes one job's count for another's.
func TestTeamRunN(t *testing.T) {
	tm := newTeam(6, time.Millisecond)
	defer tm.close()
	var ran [6]atomic.Int64
	want := [6]int64{}
	for job := 1; job <= 300; job++ {
		k := 1 + job%6
		tm.runN(k, func(w int) {
			if job%37 == 0 {
				time.Sleep(200 * time.Microsecond)
			}
			ran[w].Add(1)
		})
		for w := range k {
			want[w]++
		}
		for w := range ran {
			if got := ran[w].Load(); got != want[w] {
				t.Fatalf("after job %d (k=%d): worker %d ran %d jobs, want %d", job, k, w, got, want[w])
			}
		}
		if job%50 == 0 {
			time.Sleep(3 * time.Millisecond) // past the spin: the workers park
		}
	}
}
