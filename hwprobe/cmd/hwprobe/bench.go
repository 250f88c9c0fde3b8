package main

// This file is the seam between the hwprobe command and the benchmark
// engine (package hwprobe/bench). The benchmark implementation replaces the
// whole file; it must keep this surface:
//
//	func newBencher() validate.Bencher
//	    what `hwprobe validate` runs the profile's benchmark blocks with;
//	    nil leaves every benchmark check not run.
//	func benchCmd(ctx context.Context, a *app, args []string) error
//	    the `hwprobe bench` subcommand, registered in commands(); return
//	    exitError{code: N} for exit code N, nil for 0.

import (
	"context"
	"fmt"

	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

func newBencher() validate.Bencher { return nil }

func benchCmd(_ context.Context, a *app, args []string) error {
	for _, arg := range args {
		if arg == "-h" || arg == "-help" || arg == "--help" {
			fmt.Fprintln(a.stdout, "Usage:\n  hwprobe bench\n\nRun training and inference benchmarks (not built yet).\n\nExit codes: 0 success, 2 could not run.\n\nExample:\n  hwprobe bench")
			return nil
		}
	}
	fmt.Fprintln(a.stderr, "hwprobe bench: not built yet")
	return exitError{code: exitCannotRun}
}
