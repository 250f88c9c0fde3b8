package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/klauspost/cpuid/v2"
)

// workers is a fixed set of goroutines, each locked to its own OS thread,
// that run one function per worker and wait for all of them.
type workers struct {
	jobs []chan func()
	wg   sync.WaitGroup
}

func newWorkers(n int) *workers {
	w := &workers{jobs: make([]chan func(), n)}
	for i := range w.jobs {
		ch := make(chan func())
		w.jobs[i] = ch
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for f := range ch {
				f()
				w.wg.Done()
			}
		}()
	}
	return w
}

// run calls f(i) on worker i for every worker and waits.
func (w *workers) run(f func(i int)) {
	w.wg.Add(len(w.jobs))
	for i, ch := range w.jobs {
		ch <- func() { f(i) }
	}
	w.wg.Wait()
}

func (w *workers) close() {
	for _, ch := range w.jobs {
		close(ch)
	}
}

// alignedFloat64 returns n float64s starting on a 64-byte boundary.
func alignedFloat64(n int) []float64 {
	s := make([]float64, n+8)
	off := int(uintptr(unsafe.Pointer(&s[0]))%64) / 8
	if off != 0 {
		off = 8 - off
	}
	return s[off : off+n]
}

// lastLevelCache returns the total last-level cache in bytes and where the
// figure came from: sysfs (summed over distinct cache instances) or CPUID.
func lastLevelCache(sysfs string) (int64, string) {
	if total, err := sysfsLLC(sysfs); err == nil && total > 0 {
		return total, "sysfs"
	}
	if l3 := cpuid.CPU.Cache.L3; l3 > 0 {
		return int64(l3), "cpuid"
	}
	return 64 << 20, "unknown; assumed 64 MiB"
}

// sysfsLLC sums the highest-level cache over its distinct instances.
func sysfsLLC(root string) (int64, error) {
	cpus, err := filepath.Glob(filepath.Join(root, "cpu[0-9]*", "cache", "index[0-9]*"))
	if err != nil || len(cpus) == 0 {
		return 0, fmt.Errorf("reading caches: none under %s", root)
	}
	best, seen, total := 0, map[string]bool{}, int64(0)
	type entry struct {
		level int
		id    string
		size  int64
	}
	var es []entry
	for _, dir := range cpus {
		lv, err1 := os.ReadFile(filepath.Join(dir, "level"))
		sz, err2 := os.ReadFile(filepath.Join(dir, "size"))
		sh, err3 := os.ReadFile(filepath.Join(dir, "shared_cpu_list"))
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		level, err := strconv.Atoi(strings.TrimSpace(string(lv)))
		if err != nil {
			continue
		}
		size, err := parseCacheSize(string(sz))
		if err != nil {
			continue
		}
		es = append(es, entry{level, strings.TrimSpace(string(sh)), size})
		best = max(best, level)
	}
	for _, e := range es {
		if e.level == best && !seen[e.id] {
			seen[e.id] = true
			total += e.size
		}
	}
	if total == 0 {
		return 0, fmt.Errorf("reading caches: no sizes under %s", root)
	}
	return total, nil
}

// parseCacheSize parses sysfs cache sizes such as "32768K" or "1M".
func parseCacheSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > 1<<40/mult {
		return 0, fmt.Errorf("parsing cache size %q", s)
	}
	return v * mult, nil
}

// streamConfig sizes a STREAM run.
type streamConfig struct {
	elements int // per array
	reps     int
	threads  int
}

// streamResults runs copy, scale, add and triad over three arrays with one
// locked worker per thread, each worker on its own contiguous slice (first
// touched by that worker), and reports MB/s with MB = 10^6 bytes.
func streamResults(ctx context.Context, cfg streamConfig, impl streamImpl, params map[string]string) ([]Result, error) {
	t := max(1, cfg.threads)
	chunk := (cfg.elements/t + 31) &^ 31
	n := chunk * t
	a, b, c := alignedFloat64(n), alignedFloat64(n), alignedFloat64(n)
	w := newWorkers(t)
	defer w.close()
	part := func(s []float64, i int) []float64 { return s[i*chunk : (i+1)*chunk] }
	w.run(func(i int) {
		pa, pb, pc := part(a, i), part(b, i), part(c, i)
		for j := range pa {
			pa[j], pb[j], pc[j] = 1, 2, 0
		}
	})
	const q = 3.0
	kernels := []struct {
		name  string
		bytes int
		run   func(i int)
	}{
		{"cpu_stream_copy", 16, func(i int) { impl.copy(part(c, i), part(a, i)) }},
		{"cpu_stream_scale", 16, func(i int) { impl.scale(part(b, i), part(c, i), q) }},
		{"cpu_stream_add", 24, func(i int) { impl.add(part(c, i), part(a, i), part(b, i)) }},
		{"cpu_stream_triad", 24, func(i int) { impl.triad(part(a, i), part(b, i), part(c, i), q) }},
	}
	rates := make([][]float64, len(kernels))
	// STREAM order: each repetition runs the four kernels in turn; the first
	// repetition is a warm-up.
	for rep := 0; rep <= cfg.reps; rep++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("stream: %w", err)
		}
		for k, kern := range kernels {
			t0 := time.Now()
			w.run(kern.run)
			el := time.Since(t0).Seconds()
			if rep > 0 {
				rates[k] = append(rates[k], float64(kern.bytes)*float64(n)/el/1e6)
			}
		}
	}
	if err := checkStream(a, b, c, q); err != nil {
		return nil, err
	}
	out := make([]Result, len(kernels))
	for k, kern := range kernels {
		p := mergeParams(params, map[string]string{
			"array_bytes": strconv.Itoa(n * 8), "elements": strconv.Itoa(n),
			"threads": strconv.Itoa(t), "bytes_per_element": strconv.Itoa(kern.bytes),
			"kernel": impl.name,
		})
		out[k] = measured(kern.name, "builtin-"+impl.name, "MB/s", rates[k], 0, p)
		out[k].Params["peak_note"] = "memory peak unknown: channel count and speed are not discoverable from the guest"
	}
	return out, nil
}

// checkStream verifies the arrays after a repetition: with p the previous
// a, copy gives c = p, scale b = q*p, add c = p + b and triad a = b + q*c.
func checkStream(a, b, c []float64, q float64) error {
	for _, i := range []int{0, len(a) / 2, len(a) - 1} {
		p := b[i] / q
		if want := b[i] + q*c[i]; !closeTo(a[i], want) {
			return fmt.Errorf("stream: triad check at %d: got %g, want %g", i, a[i], want)
		}
		if want := p + b[i]; !closeTo(c[i], want) {
			return fmt.Errorf("stream: add check at %d: got %g, want %g", i, c[i], want)
		}
	}
	return nil
}

func closeTo(x, y float64) bool {
	d := x - y
	return d <= 1e-12*max(1, x, -x) && -d <= 1e-12*max(1, x, -x)
}
