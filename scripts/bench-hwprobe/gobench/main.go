// Command gobench prints hwprobe's built-in sgemm and STREAM triad figures
// in the line format of the C reference drivers, for
// scripts/bench-hwprobe.sh:
//
//	sgemm n=<n> gflops=<best> median=<median> reps=<r> kernel=<kernel> mc=.. kc=.. nc=.. peak=<GFLOP/s> peak_clock=<catalog|estimated> check=ok
//	bf16 n=<n> (the same fields)
//	int8 n=<n> gops=<best> median=<median> (the other fields as sgemm's; GOP/s) b_max=<|B| bound of its inputs>
//	mlp dims=<d> p50_ms=<p50> p99_ms=<p99> thr=<samples/s> batch=<b> kernel=<k> threads=<t> check=ok
//	mlp8 dims=<d> p50_ms=.. p99_ms=.. thr=.. batch=<b> kernel=<k> threads=<t> err=<relative L2 against fp32> check=ok
//	triad n=<elements> mbps=<best> median=<median> reps=<r> check=ok
//
// hwprobe checks every product on a sample before timing; a benchmark that
// could not run (a wrong product included) makes gobench exit 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/bench"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gobench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gobench", flag.ContinueOnError)
	sizes := fs.String("sgemm", "2048,4096", "comma-separated sgemm sizes n (empty: none)")
	bf16 := fs.String("bf16", "", "comma-separated bf16 GEMM sizes n (empty: none)")
	int8 := fs.String("int8", "", "comma-separated int8 GEMM sizes n (empty: none)")
	triad := fs.Bool("triad", true, "run the STREAM triad")
	mlpBatch := fs.Int("mlp", 0, "run the quick MLP inference benchmarks with this throughput batch (0: none)")
	mlp8Batch := fs.Int("mlp8", 0, "run the quick int8 MLP inference benchmarks with this throughput batch (0: none)")
	reps := fs.Int("reps", 5, "timed repetitions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, g := range []struct{ label, name, sizes string }{{"sgemm", "cpu_sgemm", *sizes}, {"bf16", "cpu_bf16_gemm", *bf16}, {"int8", "cpu_int8_gemm", *int8}} {
		for _, s := range strings.Split(g.sizes, ",") {
			if s == "" {
				continue
			}
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				return fmt.Errorf("bad size %q", s)
			}
			r, err := one(ctx, bench.Options{Only: []string{g.name}, GemmN: n, Reps: *reps})
			if err != nil {
				return err
			}
			field := "gflops"
			if g.label == "int8" {
				field = "gops"
			}
			rng := ""
			if g.label == "int8" {
				rng = " b_max=" + r.Params["b_max"]
			}
			kern := r.Backend
			if r.Params["compute"] != "" {
				kern += "+widened-to-fp32" // bf16 on a CPU without bf16 instructions
			}
			fmt.Printf("%s n=%d %s=%s median=%.2f reps=%d kernel=%s mc=%s kc=%s nc=%s peak=%.0f peak_clock=%s%s check=ok\n",
				g.label, n, field, r.Params["best"], r.Value, r.Reps, kern, r.Params["mc"], r.Params["kc"], r.Params["nc"], r.Peak, r.Params["peak_clock_source"], rng)
		}
	}
	if *mlpBatch > 0 {
		rs, err := bench.Run(ctx, bench.Options{Quick: true, Only: []string{"cpu_mlp_infer_p50", "cpu_mlp_infer_p99", "cpu_mlp_infer_throughput"}, InferBatch: *mlpBatch})
		if err != nil {
			return err
		}
		v := map[string]bench.Result{}
		for _, r := range rs {
			if !r.Ran {
				return errors.New(r.Name + " did not run: " + r.Reason)
			}
			v[r.Name] = r
		}
		thr := v["cpu_mlp_infer_throughput"]
		fmt.Printf("mlp dims=%s p50_ms=%.4f p99_ms=%.4f thr=%.1f batch=%d kernel=%s threads=%s check=ok\n",
			strings.Trim(strings.ReplaceAll(thr.Params["dims"], " ", ","), "[]"), v["cpu_mlp_infer_p50"].Value, v["cpu_mlp_infer_p99"].Value,
			thr.Value, *mlpBatch, thr.Backend, thr.Params["threads"])
	}
	if *mlp8Batch > 0 {
		rs, err := bench.Run(ctx, bench.Options{Quick: true, Only: []string{"cpu_mlp_int8_infer_p50", "cpu_mlp_int8_infer_p99", "cpu_mlp_int8_infer_throughput"}, InferBatch: *mlp8Batch})
		if err != nil {
			return err
		}
		v := map[string]bench.Result{}
		for _, r := range rs {
			if !r.Ran {
				return errors.New(r.Name + " did not run: " + r.Reason)
			}
			v[r.Name] = r
		}
		thr := v["cpu_mlp_int8_infer_throughput"]
		fmt.Printf("mlp8 dims=%s p50_ms=%.4f p99_ms=%.4f thr=%.1f batch=%d kernel=%s threads=%s err=%s check=ok\n",
			strings.Trim(strings.ReplaceAll(thr.Params["dims"], " ", ","), "[]"), v["cpu_mlp_int8_infer_p50"].Value, v["cpu_mlp_int8_infer_p99"].Value,
			thr.Value, *mlp8Batch, thr.Backend, thr.Params["threads"], thr.Params["error_vs_fp32"])
	}
	if *triad {
		r, err := one(ctx, bench.Options{Only: []string{"cpu_stream_triad"}, Reps: *reps * 2})
		if err != nil {
			return err
		}
		fmt.Printf("triad n=%s mbps=%s median=%.0f reps=%d kernel=%s check=ok\n", r.Params["elements"], r.Params["best"], r.Value, r.Reps, r.Backend)
	}
	return nil
}

func one(ctx context.Context, o bench.Options) (bench.Result, error) {
	rs, err := bench.Run(ctx, o)
	if err != nil {
		return bench.Result{}, err
	}
	if len(rs) != 1 {
		return bench.Result{}, fmt.Errorf("%d results for %v", len(rs), o.Only)
	}
	if !rs[0].Ran {
		return bench.Result{}, errors.New(rs[0].Name + " did not run: " + rs[0].Reason)
	}
	return rs[0], nil
}
