// Command mlplatform is the platform's command line. `mlplatform review`
// reads a plan (`terraform show -json` or `pulumi preview --json`) and
// writes an offline pull-request review: cost, GPUs, residency, destructive
// changes and the validation gate. Its logic lives in internal/review.
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
	return review.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}
