package slurmtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/slurmtest"
)

// daemonTest starts a test against real Slurm daemons: skipped without
// TF_ACC, and without Slurm where CI is not set (slurmtest.Require). It
// returns a context bounded to 5 minutes and the test build of hwprobe.
func daemonTest(t *testing.T) (context.Context, string) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 to run it against real Slurm daemons (make test)")
	}
	slurmtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	hwprobe, err := acctest.BuildHwprobe(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ctx, hwprobe
}
