package slurmtest

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skipf and Fatalf instead of
// ending the test.
type recorder struct {
	testing.TB
	skipped, fatal string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Skipf(f string, args ...any)  { r.skipped = fmt.Sprintf(f, args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.fatal = fmt.Sprintf(f, args...) }

// TestRequireWithoutSlurm: without Slurm a test is skipped with the reason
// and the install command, unless CI is set: then it fails.
func TestRequireWithoutSlurm(t *testing.T) {
	saved := programs
	t.Cleanup(func() { programs = saved })
	programs = map[string]string{"slurmctld": "/nonexistent/slurmctld", "scontrol": "/nonexistent/scontrol"}
	t.Setenv("PATH", t.TempDir())

	t.Setenv("CI", "")
	r := &recorder{TB: t}
	Require(r)
	if !strings.Contains(r.skipped, "Slurm is not installed (") || !strings.Contains(r.skipped, "apt-get install") || r.fatal != "" {
		t.Errorf("without CI: skipped %q, fatal %q", r.skipped, r.fatal)
	}
	t.Setenv("CI", "true")
	r = &recorder{TB: t}
	Require(r)
	if !strings.Contains(r.fatal, "CI: Slurm is not installed") || r.skipped != "" {
		t.Errorf("with CI: skipped %q, fatal %q", r.skipped, r.fatal)
	}
}
