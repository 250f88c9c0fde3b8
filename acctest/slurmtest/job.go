package slurmtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// A Job is a job that runs until the test releases it: each of its tasks
// waits for a file the test creates (the nodes run on this host). A test
// that needs a job still running when an apply returns holds one, instead
// of a `sleep` whose length a slow host could outrun.
type Job struct {
	c       *Cluster
	release string
	done    chan error
	once    sync.Once
}

var jobSeq atomic.Int64

// jobLimit ends a job nobody released, so that no test hangs on it; the
// job then exits 3 and Done reports it.
const jobLimit = 3 * time.Minute

// releaseLimit releases a job whose awaited moment (ReleaseOnceLooked,
// ReleaseOnceLeaving) did not come: a step that should have waited for it
// then finds it ended late, or its check finds it running.
const releaseLimit = 2 * time.Minute

// HoldJob starts srun with args (partition, nodes) and a command that runs
// until Release, and returns at once; Done reports srun's end.
func (c *Cluster) HoldJob(args ...string) *Job {
	c.t.Helper()
	dir := filepath.Join(c.Dir, "jobs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatalf("held job: %v", err)
	}
	j := &Job{c: c, release: filepath.Join(dir, fmt.Sprintf("release-%d", jobSeq.Add(1))), done: make(chan error, 1)}
	ticks := int(jobLimit / (100 * time.Millisecond))
	script := fmt.Sprintf(`i=0; while [ ! -e %q ]; do i=$((i+1)); if [ $i -gt %d ]; then echo "held job: never released" >&2; exit 3; fi; sleep 0.1; done`, j.release, ticks)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), jobLimit+time.Minute)
		defer cancel()
		_, err := c.Srun(ctx, append(append([]string{}, args...), "sh", "-c", script)...)
		j.done <- err
	}()
	c.t.Cleanup(j.Release)
	return j
}

// Release lets the job's tasks end (exit 0). It may be called more than
// once.
func (j *Job) Release() {
	j.once.Do(func() {
		if err := os.WriteFile(j.release, nil, 0o644); err != nil {
			panic(fmt.Sprintf("held job: release: %v", err))
		}
	})
}

// ReleaseOnceLooked releases the job once the left markers (see
// hwprobe/slurm's LeftMarkerDir) were listed n times from now on through
// shim: the apply or approver that lists them waits for a node to leave.
func (j *Job) ReleaseOnceLooked(shim *acctest.Shim, n int32) {
	looks := leftMarkerLooks(shim)
	j.releaseWhen(func() bool { return looks.Load() >= n })
}

// ReleaseOnceLeaving releases the job once node is drained for leaving
// (reason "hwprobe: leaving: ...") or gone from Slurm: a destroy or
// scale-in asked it to leave and waits for its jobs.
func (j *Job) ReleaseOnceLeaving(node string) {
	j.releaseWhen(func() bool {
		n, err := j.c.ShowNode(node)
		return err != nil || DrainedBy("hwprobe: leaving: ")(n)
	})
}

// releaseWhen releases the job, from a goroutine, once cond holds (polled
// every 200 ms) or releaseLimit has passed, whichever is first. cond must
// not call t.Fatal.
func (j *Job) releaseWhen(cond func() bool) {
	go func() {
		deadline := time.Now().Add(releaseLimit)
		for !cond() && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		j.Release()
	}()
}

// Done receives srun's result once, when the job ended.
func (j *Job) Done() <-chan error { return j.done }

// leftMarkerLooks counts, from now on, the listings of left markers that
// reach shim: a provider or approver waiting for nodes to leave Slurm
// makes one each time it looks.
func leftMarkerLooks(shim *acctest.Shim) *atomic.Int32 {
	var n atomic.Int32
	shim.OnCall("s3", "ListObjectsV2", func(r *acctest.Request) {
		if strings.Contains(r.Form.Get("prefix"), slurm.LeftMarkerDir) {
			n.Add(1)
		}
	})
	return &n
}
