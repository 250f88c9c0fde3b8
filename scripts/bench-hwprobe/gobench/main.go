// Command gobench prints hwprobe's built-in sgemm and STREAM triad figures
// in the line format of the C reference drivers, for
// scripts/bench-hwprobe.sh:
//
//	sgemm n=<n> gflops=<best> median=<median> reps=<r> backend=<kernel>
//	triad n=<elements> mbps=<best> median=<median> reps=<r>
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
	triad := fs.Bool("triad", true, "run the STREAM triad")
	reps := fs.Int("reps", 5, "timed repetitions")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, s := range strings.Split(*sizes, ",") {
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return fmt.Errorf("bad size %q", s)
		}
		r, err := one(ctx, bench.Options{Only: []string{"cpu_sgemm"}, GemmN: n, Reps: *reps})
		if err != nil {
			return err
		}
		fmt.Printf("sgemm n=%d gflops=%s median=%.2f reps=%d backend=%s\n", n, r.Params["best"], r.Value, r.Reps, r.Backend)
	}
	if *triad {
		r, err := one(ctx, bench.Options{Only: []string{"cpu_stream_triad"}, Reps: *reps * 2})
		if err != nil {
			return err
		}
		fmt.Printf("triad n=%s mbps=%s median=%.0f reps=%d\n", r.Params["elements"], r.Params["best"], r.Value, r.Reps)
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
