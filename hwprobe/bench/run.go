package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
)

// Options configure a benchmark run.
type Options struct {
	// Quick runs small sizes and few repetitions: under 20 s on a 2-vCPU host.
	Quick bool
	// Only selects benchmarks by name; an entry ending in '*' selects every
	// name with that prefix ("cpu_stream_*", "gpu_*"). Empty selects all.
	Only []string
	// Progress receives one line per benchmark group as it starts and ends;
	// nil is silent.
	Progress io.Writer
	// Threads is the number of CPU threads; 0 means runtime.GOMAXPROCS(0).
	Threads int
	// GemmN is the CPU GEMM size n (n x n x n); 0 means 2048 quick, 4096 full.
	GemmN int
	// Reps overrides the number of timed repetitions; 0 keeps the defaults.
	Reps int
	// InferBatch overrides the batch of cpu_mlp_infer_throughput; 0 keeps
	// the default.
	InferBatch int
	// BLASLibraries are tried for cpu_sgemm_blas; nil means
	// DefaultBLASLibraries(), an empty non-nil slice skips the backend.
	BLASLibraries []string
	// CUDA names the CUDA libraries to load; zero fields take the defaults.
	CUDA CUDALibraries
}

// Names lists every benchmark name, in the order Run reports them.
func Names() []string { return profile.BenchmarkNames() }

// selection resolves Options.Only against Names.
func selection(only []string) (map[string]bool, error) {
	sel, all := map[string]bool{}, Names()
	if len(only) == 0 {
		for _, n := range all {
			sel[n] = true
		}
		return sel, nil
	}
	for _, o := range only {
		o = strings.TrimSpace(o)
		if o == "" {
			continue
		}
		matched := false
		for _, n := range all {
			if n == o || (strings.HasSuffix(o, "*") && strings.HasPrefix(n, strings.TrimSuffix(o, "*"))) {
				sel[n], matched = true, true
			}
		}
		if !matched {
			return nil, fmt.Errorf("unknown benchmark %q (known: %s)", o, strings.Join(all, ", "))
		}
	}
	return sel, nil
}

// group is a set of benchmarks measured together.
type group struct {
	title string
	names []string
	run   func(ctx context.Context) []Result
}

// Run measures the selected benchmarks and returns their results in Names
// order. A benchmark that cannot run on this host is returned with Ran false
// and a Reason; the error is reserved for bad options and cancellation.
func Run(ctx context.Context, opts Options) ([]Result, error) {
	sel, err := selection(opts.Only)
	if err != nil {
		return nil, err
	}
	cfg := newConfig(opts)
	// The peak of a thread count is timed once a run (a vector FMA load
	// of about 100 ms on every core it counts): the built-in GEMMs and the
	// host BLAS, when it runs as many threads, are judged against the same
	// one.
	peaks := map[int]cpuPeak{}
	peakFor := func(threads int) cpuPeak {
		cores := min(threads, currentCPU().Cores) // the cores the peak counts
		p, ok := peaks[cores]
		if !ok {
			p = detectCPUPeak(cores)
			peaks[cores] = p
		}
		return p
	}
	cpuPeakOnce := func() cpuPeak { return peakFor(cfg.threads) }
	var sgemmGFLOPS float64 // measured cpu_sgemm, for the MLP's efficiency
	groups := []group{
		{"CPU sgemm (built-in)", []string{"cpu_sgemm"}, func(ctx context.Context) []Result {
			r := builtinGemmResult(ctx, cfg, false, cpuPeakOnce())
			if r.Ran {
				sgemmGFLOPS = r.Value
			}
			return []Result{r}
		}},
		{"CPU sgemm (host BLAS)", []string{"cpu_sgemm_blas"}, func(ctx context.Context) []Result {
			if opts.BLASLibraries != nil && len(opts.BLASLibraries) == 0 {
				return []Result{notRun("cpu_sgemm_blas", "cpu", "host BLAS backend disabled")}
			}
			libs := opts.BLASLibraries
			if libs == nil {
				libs = DefaultBLASLibraries()
			}
			return []Result{blasSgemmResult(ctx, libs, cfg.gemmN, cfg.gemmReps, peakFor)}
		}},
		{"CPU bf16 GEMM", []string{"cpu_bf16_gemm"}, func(ctx context.Context) []Result {
			return []Result{builtinGemmResult(ctx, cfg, true, cpuPeakOnce())}
		}},
		{"CPU int8 GEMM", []string{"cpu_int8_gemm"}, func(ctx context.Context) []Result {
			return []Result{int8GemmResult(ctx, cfg, cpuPeakOnce())}
		}},
		{"CPU STREAM", []string{"cpu_stream_copy", "cpu_stream_scale", "cpu_stream_add", "cpu_stream_triad"}, func(ctx context.Context) []Result {
			return cpuStreamResults(ctx, cfg)
		}},
		{"CPU MLP", []string{"cpu_mlp_train", "cpu_mlp_infer_p50", "cpu_mlp_infer_p90", "cpu_mlp_infer_p99", "cpu_mlp_infer_throughput"}, func(ctx context.Context) []Result {
			return cpuMLPResults(ctx, cfg, cpuPeakOnce(), sgemmGFLOPS)
		}},
		{"CPU int8 MLP", []string{"cpu_mlp_int8_infer_p50", "cpu_mlp_int8_infer_p90", "cpu_mlp_int8_infer_p99", "cpu_mlp_int8_infer_throughput"}, func(ctx context.Context) []Result {
			return cpuMLPInt8Results(ctx, cfg, cpuPeakOnce())
		}},
		{"GPU", gpuNames(), func(ctx context.Context) []Result {
			return gpuResults(ctx, cfg, opts.CUDA, sel)
		}},
	}
	var out []Result
	for _, g := range groups {
		var want []string
		for _, n := range g.names {
			if sel[n] {
				want = append(want, n)
			}
		}
		if len(want) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("bench: %w", err)
		}
		progress(opts.Progress, "%-24s running...\n", g.title)
		t0 := time.Now()
		rs := guarded(want, "", func() []Result { return g.run(ctx) })
		ran := 0
		for _, r := range rs {
			if slices.Contains(want, r.Name) {
				out = append(out, r)
				if r.Ran {
					ran++
				}
			}
		}
		progress(opts.Progress, "%-24s %d/%d ran in %.1fs\n", g.title, ran, len(want), time.Since(t0).Seconds())
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("bench: %w", err)
	}
	return out, nil
}

// guarded runs f and turns a panic into a not-run result for each of names,
// so that one broken benchmark is reported as failed to run and the others
// (and validate) carry on. device labels the results; "" means "cpu" or
// "gpu" from the name's prefix.
func guarded(names []string, device string, f func() []Result) (out []Result) {
	defer func() {
		if p := recover(); p != nil {
			out = make([]Result, len(names))
			for i, n := range names {
				d := device
				if d == "" {
					d, _, _ = strings.Cut(n, "_")
				}
				out[i] = notRun(n, d, fmt.Sprintf("benchmark failed to run: panic: %v", p))
			}
		}
	}()
	return f()
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// config is Options resolved to sizes.
type config struct {
	quick                          bool
	threads                        int
	gemmN, gemmReps                int
	streamReps                     int
	mlpDims                        []int
	trainBatch, trainReps          int
	inferBatch, latencyReps        int
	throughputReps                 int
	gpuGemmN, gpuReps, gpuCopySize int
	gpuMLPDims                     []int
	gpuMLPBatch                    int
}

func newConfig(o Options) config {
	c := config{quick: o.Quick, threads: o.Threads}
	if c.threads <= 0 {
		c.threads = runtime.GOMAXPROCS(0)
	}
	if o.Quick {
		c.gemmN, c.gemmReps, c.streamReps = 2048, 5, 5
		c.mlpDims = []int{1024, 1024, 1024, 1024}
		c.trainBatch, c.trainReps = 256, 5
		c.inferBatch, c.latencyReps, c.throughputReps = 256, 200, 5
		c.gpuGemmN, c.gpuReps, c.gpuCopySize = 8192, 10, 256<<20
		c.gpuMLPDims, c.gpuMLPBatch = []int{2048, 8192, 8192, 2048}, 512
	} else {
		c.gemmN, c.gemmReps, c.streamReps = 4096, 10, 20
		c.mlpDims = []int{1024, 4096, 4096, 1024}
		c.trainBatch, c.trainReps = 512, 10
		c.inferBatch, c.latencyReps, c.throughputReps = 1024, 1000, 10
		c.gpuGemmN, c.gpuReps, c.gpuCopySize = 16384, 50, 1<<30
		c.gpuMLPDims, c.gpuMLPBatch = []int{4096, 16384, 16384, 4096}, 2048
	}
	if o.GemmN > 0 {
		c.gemmN = o.GemmN
	}
	if o.InferBatch > 0 {
		c.inferBatch = o.InferBatch
	}
	if o.Reps > 0 {
		c.gemmReps, c.streamReps, c.trainReps, c.throughputReps, c.gpuReps = o.Reps, o.Reps, o.Reps, o.Reps, o.Reps
	}
	return c
}
