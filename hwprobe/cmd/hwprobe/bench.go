package main

// This file wires the benchmark engine (package hwprobe/bench) into the
// hwprobe command: `hwprobe bench` and the Bencher `hwprobe validate` uses.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mlplatform/mlplatform/hwprobe/bench"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

// bencher runs benchmarks by name for validate.
type bencher struct {
	quick    bool
	progress io.Writer
}

var _ validate.Bencher = bencher{}

func newBencher() validate.Bencher { return bencher{quick: true} }

// Run runs the known names; an unknown name gives a not-run result rather
// than failing the others.
func (b bencher) Run(ctx context.Context, names []string) ([]bench.Result, error) {
	known := bench.Names()
	var run []string
	var unknown []bench.Result
	for _, n := range names {
		if slices.Contains(known, n) {
			run = append(run, n)
			continue
		}
		unknown = append(unknown, bench.Result{Name: n, Reason: "unknown benchmark; known: " + strings.Join(known, ", ")})
	}
	if len(run) == 0 {
		return unknown, nil
	}
	rs, err := bench.Run(ctx, bench.Options{Quick: b.quick, Only: run, Progress: b.progress})
	return append(rs, unknown...), err
}

func benchCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "bench", "[--quick] [--format table|json] [--only name,...]", `
Run the CPU and GPU training and inference benchmarks: GEMM (CPU fp32, bf16
and int8 with the built-in kernels, and the host BLAS when one loads; GPU
bf16, fp16 and fp8 through cuBLASLt), memory bandwidth (CPU STREAM; GPU HBM,
host-to-device and back), NVLink peer and NCCL all-reduce bus bandwidth, an
MLP training step and inference latency and throughput, in fp32 and int8.
Each result carries its efficiency against the peak of this CPU or GPU.

The CPU's bf16 and int8 GEMMs run AMX tiles where the CPU has AMX and Linux
grants the tile state (backend builtin-amx-bf16, builtin-amx-int8, judged
against the tile units' peak); else AVX512_BF16 and AVX512-VNNI, and on a
CPU with AMX the result's amx param says why AMX did not run.

CUDA libraries are loaded at run time; without them the GPU benchmarks are
reported as not run, with the reason. --quick takes under 20 s on a small
CPU host and under a minute on an 8-GPU node. Progress goes to stderr when
it is a terminal.

Benchmarks: `+strings.Join(bench.Names(), ", ")+`.
--only takes names, or prefixes ending in '*' (cpu_*, gpu_gemm_*).`,
		"hwprobe bench --quick --only 'cpu_*' --format json")
	quick := fset.Bool("quick", false, "small sizes and few repetitions")
	format := fset.String("format", "table", "output format: table or json")
	only := fset.String("only", "", "comma-separated benchmark `names` to run (default all)")
	if done, err := parse(a, fset, args); done {
		return err
	}
	if *format != "table" && *format != "json" {
		return cannotRun(fmt.Errorf("bench: unknown format %q", *format))
	}
	opts := bench.Options{Quick: *quick}
	if *only != "" {
		opts.Only = strings.Split(*only, ",")
	}
	if isTerminal(a.stderr) {
		opts.Progress = a.stderr
	}
	rs, err := bench.Run(ctx, opts)
	if err != nil && len(rs) == 0 {
		return cannotRun(err)
	}
	if werr := writeBench(a.stdout, rs, *format); werr != nil {
		return cannotRun(werr)
	}
	if err != nil {
		return cannotRun(err)
	}
	return benchExit(rs, opts.Only != nil)
}

// benchExit is 0 when something ran and, with --only, everything asked for
// ran; otherwise 2 (could not run).
func benchExit(rs []bench.Result, explicit bool) error {
	ran, notRun := 0, 0
	for _, r := range rs {
		if r.Ran {
			ran++
		} else {
			notRun++
		}
	}
	switch {
	case ran == 0:
		return exitError{code: exitCannotRun, err: fmt.Errorf("bench: no benchmark ran")}
	case explicit && notRun > 0:
		return exitError{code: exitCannotRun, err: fmt.Errorf("bench: %d of the requested benchmarks did not run", notRun)}
	}
	return nil
}

func writeBench(w io.Writer, rs []bench.Result, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Results []bench.Result `json:"results"`
		}{rs}); err != nil {
			return fmt.Errorf("encode results: %w", err)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BENCHMARK\tDEVICE\tBACKEND\tVALUE\tUNIT\tOF PEAK\tREPS\tSPREAD\tNOTE")
	for _, r := range rs {
		if !r.Ran {
			fmt.Fprintf(tw, "%s\t%s\t%s\tNOT-RUN\t\t\t\t\t%s\n", r.Name, r.Device, r.Backend, oneLine(r.Reason))
			continue
		}
		eff := "-"
		if r.Peak > 0 {
			eff = fmt.Sprintf("%.0f%%", r.Efficiency*100)
		}
		note := ""
		if n, ok := r.Params["n"]; ok {
			note = "n=" + n
		}
		if b, ok := r.Params["batch"]; ok {
			note = "batch=" + b
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.4g\t%s\t%s\t%d\t%.1f%%\t%s\n", r.Name, r.Device, r.Backend, r.Value, r.Unit, eff, r.Reps, r.Spread*100, note)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// oneLine shortens a reason for the table.
func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
