// Command mlplatform is the platform's command line. `mlplatform review`
// reads a plan (`terraform show -json` or `pulumi preview --json`) and
// writes an offline pull-request review: cost, GPUs, residency, destructive
// changes and the validation gate. Its logic lives in internal/review.
// `mlplatform approve` decides a validated CPU footprint's launches after
// apply with the gate of internal/platform (approve.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/mlplatform/mlplatform/internal/review"
)

func main() {
	if err := run(); err != nil {
		var ee *review.ExitError
		if errors.As(err, &ee) {
			os.Exit(ee.Code)
		}
		fmt.Fprintln(os.Stderr, "mlplatform:", err)
		os.Exit(review.ExitBadInput)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "approve" {
		return approveCommand(ctx, args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	if len(args) > 1 && args[0] == "help" && args[1] == "approve" {
		return approveCommand(ctx, []string{"--help"}, os.Stdin, os.Stdout, os.Stderr)
	}
	return review.Main(ctx, args, os.Stdin, os.Stdout, os.Stderr)
}
