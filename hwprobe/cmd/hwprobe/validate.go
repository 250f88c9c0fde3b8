package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

func validateCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "validate", "--profile FILE.hcl [flags]", `
Probe the node, compare it with the profile and run the profile's
benchmarks. Every check passes, fails or is not run with a reason; a check
that did not run never counts as passed unless the profile lists it in
optional_checks (or the benchmark says optional = true).

Exit codes: 0 every check passed; 1 a check failed; 2 hwprobe could not
run (bad profile, probe error) or a required check did not run.`,
		"hwprobe validate --profile /etc/hwprobe/profile.hcl --format junit > hwprobe.xml")
	var pf probeFlags
	pf.register(fset)
	profilePath := fset.String("profile", "", "profile `file` (HCL), as the platform rendered it (required)")
	format := fset.String("format", "table", "output format: "+strings.Join(validate.Formats(), ", "))
	reportPath := fset.String("report", "", "also write the full JSON report (inventory, checks, identity) to this `file`")
	if done, err := parse(a, fset, args); done {
		return err
	}
	if *profilePath == "" {
		return cannotRun(errors.New("validate: --profile is required"))
	}
	if !validFormat(*format) {
		return cannotRun(fmt.Errorf("validate: unknown format %q", *format))
	}
	rep, err := validateNode(ctx, a, pf, *profilePath)
	if err != nil {
		return err
	}
	if *reportPath != "" {
		if err := writeReport(*reportPath, rep); err != nil {
			return cannotRun(err)
		}
	}
	if err := validate.WriteResult(a.stdout, *rep.Validation, *format); err != nil {
		return cannotRun(err)
	}
	if rep.Validation.Exit != exitOK {
		return exitError{code: rep.Validation.Exit}
	}
	return nil
}

// loadProfile reads and checks a profile; errors carry HCL diagnostics
// with file, line and column.
func loadProfile(path string) (*profile.Profile, []byte, error) {
	src, err := readFile(path)
	if err != nil {
		return nil, nil, cannotRun(err)
	}
	p, diags := profile.Load(path, src)
	if diags.HasErrors() {
		return nil, nil, cannotRun(fmt.Errorf("invalid profile:\n%s", strings.TrimRight(profile.FormatDiagnostics(path, src, diags), "\n")))
	}
	return p, src, nil
}

// validateNode loads the profile, probes and validates, and returns the
// report.
func validateNode(ctx context.Context, a *app, pf probeFlags, path string) (report.Report, error) {
	p, src, err := loadProfile(path)
	if err != nil {
		return report.Report{}, err
	}
	var xid time.Duration
	if p.GPU != nil {
		xid = time.Duration(p.GPU.XIDSeconds) * time.Second
	}
	cfg, err := pf.config(a, xid)
	if err != nil {
		return report.Report{}, cannotRun(err)
	}
	pctx, cancel := context.WithTimeout(ctx, pf.timeout)
	defer cancel()
	inv, err := probe.Probe(pctx, cfg)
	if err != nil {
		return report.Report{}, cannotRun(fmt.Errorf("probe: %w", err))
	}
	res := validate.Validate(ctx, p, inv, newBencher())
	return report.New(inv, &res, report.Options{
		Version: version(), ProfileName: p.Name, ProfileRegion: p.Region(), ProfileSource: src, Now: a.now(),
	}), nil
}

func validFormat(f string) bool {
	for _, x := range validate.Formats() {
		if f == x {
			return true
		}
	}
	return false
}

func writeReport(path string, r report.Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
