// Package validate compares a node's inventory with its declared profile
// and turns each declared expectation into a check that passed, failed or
// did not run. A check that did not run never counts as passed unless the
// profile marks it optional.
package validate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/bench"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
)

// Status is the outcome of one check.
type Status string

// Check outcomes.
const (
	Pass   Status = "pass"
	Fail   Status = "fail"
	NotRun Status = "not-run"
)

// Exit codes of `hwprobe validate`.
const (
	ExitPass      = 0 // every check passed (optional checks may not have run)
	ExitFail      = 1 // a check failed
	ExitCannotRun = 2 // a required check could not run, or hwprobe itself could not
)

// Check is one expectation and what was found.
type Check struct {
	ID       string `json:"id"`                // e.g. "gpu.nvlink"; see docs/guides/hwprobe.md
	Subject  string `json:"subject,omitempty"` // e.g. "gpu3", "avx512f", "cpu" (benchmark device)
	Status   Status `json:"status"`
	Expected string `json:"expected,omitempty"`
	Observed string `json:"observed,omitempty"`
	Reason   string `json:"reason,omitempty"` // why it failed or did not run
	Optional bool   `json:"optional,omitempty"`
}

// Name is the check id and subject, as shown in reports.
func (c Check) Name() string {
	if c.Subject == "" {
		return c.ID
	}
	return c.ID + " " + c.Subject
}

// Summary counts checks by outcome.
type Summary struct {
	Pass           int `json:"pass"`
	Fail           int `json:"fail"`
	NotRun         int `json:"not_run"`          // required checks that did not run
	OptionalNotRun int `json:"optional_not_run"` // optional checks that did not run
}

// Result is the outcome of a validation.
type Result struct {
	Profile string  `json:"profile,omitempty"`
	Checks  []Check `json:"checks"`
	Summary Summary `json:"summary"`
	Exit    int     `json:"exit_code"`
}

// Bencher runs the named benchmarks. The bench package provides one; a nil
// Bencher leaves every benchmark check not run.
type Bencher interface {
	Run(ctx context.Context, names []string) ([]bench.Result, error)
}

// Validate checks inv against p, running p's benchmarks through b.
func Validate(ctx context.Context, p *profile.Profile, inv *probe.Inventory, b Bencher) Result {
	v := &validator{p: p, inv: inv}
	if p.Host != nil {
		v.host(p.Host)
	}
	if p.CPU != nil {
		v.cpu(p.CPU)
	}
	if p.GPU != nil {
		v.gpu(p.GPU)
	}
	if p.EFA != nil {
		v.efa(p.EFA)
	}
	if len(p.Benchmarks) > 0 {
		v.benchmarks(ctx, p.Benchmarks, b)
	}
	return finish(p.Name, v.checks)
}

// Summarize counts checks and sets the exit code, as Validate does: for a
// caller that adds checks of its own (the Slurm health check's
// boot.validation) to a Validate result.
func Summarize(name string, checks []Check) Result { return finish(name, checks) }

func finish(name string, checks []Check) Result {
	r := Result{Profile: name, Checks: checks}
	if r.Checks == nil {
		r.Checks = []Check{}
	}
	for _, c := range r.Checks {
		switch {
		case c.Status == Pass:
			r.Summary.Pass++
		case c.Status == Fail:
			r.Summary.Fail++
		case c.Optional:
			r.Summary.OptionalNotRun++
		default:
			r.Summary.NotRun++
		}
	}
	switch {
	case r.Summary.Fail > 0:
		r.Exit = ExitFail
	case r.Summary.NotRun > 0:
		r.Exit = ExitCannotRun
	default:
		r.Exit = ExitPass
	}
	return r
}

type validator struct {
	p      *profile.Profile
	inv    *probe.Inventory
	checks []Check
}

func (v *validator) add(c Check) {
	c.Optional = c.Optional || v.p.IsOptional(c.ID)
	v.checks = append(v.checks, c)
}

// expect adds a pass or fail check.
func (v *validator) expect(ok bool, id, subject, expected, observed, failReason string) {
	c := Check{ID: id, Subject: subject, Status: Pass, Expected: expected, Observed: observed}
	if !ok {
		c.Status, c.Reason = Fail, failReason
	}
	v.add(c)
}

func (v *validator) notRun(id, subject, expected, reason string) {
	v.add(Check{ID: id, Subject: subject, Status: NotRun, Expected: expected, Reason: reason})
}

// collectorProblem says why a collector's section cannot be trusted, or "".
func (v *validator) collectorProblem(name string) string {
	r, ok := v.inv.Collector(name)
	switch {
	case !ok:
		return name + " collector missing from the inventory"
	case !r.Ran:
		return name + " collector did not run: " + r.Skipped
	case r.Error != "":
		return name + " collector failed: " + r.Error
	}
	return ""
}

func (v *validator) host(h *profile.Host) {
	type exp struct {
		id, want string
		set      bool
	}
	want := []exp{
		{"host.region", h.Region, h.Region != ""},
		{"host.zone_id", strings.Join(h.ZoneIDs, " or "), len(h.ZoneIDs) > 0},
		{"host.instance_type", h.InstanceType, h.InstanceType != ""},
	}
	requireIdentity := h.RequireVerifiedIdentity == nil || *h.RequireVerifiedIdentity
	problem := v.collectorProblem(probe.CollectorHost)
	if problem == "" && !v.inv.Host.OnEC2 {
		problem = v.inv.Host.Reason
	}
	if problem != "" {
		for _, e := range want {
			if e.set {
				v.notRun(e.id, "", e.want, problem)
			}
		}
		v.add(Check{ID: "host.identity_verified", Status: NotRun, Expected: "signed by AWS", Reason: problem, Optional: !requireIdentity})
		return
	}
	hi := v.inv.Host
	for _, e := range want {
		if !e.set {
			continue
		}
		var got string
		var ok bool
		switch e.id {
		case "host.region":
			got, ok = hi.Region, hi.Region == h.Region
		case "host.zone_id":
			got, ok = hi.ZoneID, slices.Contains(h.ZoneIDs, hi.ZoneID)
		case "host.instance_type":
			got, ok = hi.InstanceType, hi.InstanceType == h.InstanceType
		}
		v.expect(ok, e.id, "", e.want, got, fmt.Sprintf("node is %s, profile expects %s", orNone(got), e.want))
	}
	c := Check{ID: "host.identity_verified", Expected: "signed by AWS", Optional: !requireIdentity}
	switch id := hi.Identity; {
	case id == nil:
		c.Status, c.Reason = NotRun, "no identity document"
	case id.Verified:
		c.Status, c.Observed = Pass, id.Signer
	case strings.Contains(id.VerifyError, "no trusted"):
		c.Status, c.Reason = NotRun, id.VerifyError+" (give the AWS RSA-2048 certificate with --identity-cert)"
	default:
		c.Status, c.Reason = Fail, id.VerifyError
	}
	v.add(c)
}

func (v *validator) cpu(c *profile.CPU) {
	problem := v.collectorProblem(probe.CollectorCPU)
	ci := v.inv.CPU
	if c.Vendor != "" {
		if problem != "" {
			v.notRun("cpu.vendor", "", c.Vendor, problem)
		} else {
			v.expect(strings.EqualFold(ci.Vendor, c.Vendor), "cpu.vendor", "", c.Vendor, ci.Vendor, "vendor is "+orNone(ci.Vendor))
		}
	}
	atLeast := func(id string, want, got int, what string) {
		if want <= 0 {
			return
		}
		exp := fmt.Sprintf(">= %d", want)
		if problem != "" {
			v.notRun(id, "", exp, problem)
			return
		}
		v.expect(got >= want, id, "", exp, fmt.Sprint(got), fmt.Sprintf("%d %s, profile needs at least %d", got, what, want))
	}
	atLeast("cpu.cores", c.MinCores, ci.Cores, "physical cores")
	atLeast("cpu.threads", c.MinThreads, ci.Threads, "threads")
	if c.MinMemoryGiB > 0 {
		exp := fmt.Sprintf(">= %g GiB", c.MinMemoryGiB)
		gib := float64(ci.MemoryBytes) / (1 << 30)
		if problem != "" {
			v.notRun("cpu.memory", "", exp, problem)
		} else {
			v.expect(gib >= c.MinMemoryGiB, "cpu.memory", "", exp, fmt.Sprintf("%.1f GiB", gib), fmt.Sprintf("%.1f GiB of memory, profile needs %g", gib, c.MinMemoryGiB))
		}
	}
	for _, f := range c.Features {
		if problem != "" {
			v.notRun("cpu.feature", f, "present", problem)
			continue
		}
		ok := slices.Contains(ci.Features, f)
		reason := f + " not available"
		for _, m := range ci.FeatureMismatches {
			if strings.HasPrefix(m, f+" ") {
				reason = f + " not usable: reported " + strings.TrimPrefix(m, f+" ")
			}
		}
		v.expect(ok, "cpu.feature", f, "present", map[bool]string{true: "present", false: "absent"}[ok], reason)
	}
}

func (v *validator) efa(e *profile.EFA) {
	problem := v.collectorProblem(probe.CollectorNetwork)
	n := v.inv.Network
	for _, x := range []struct {
		id        string
		want, got int
		what      string
	}{
		{"efa.count", e.Count, n.EFACount, "EFA devices"},
		{"efa.active_ports", e.MinActivePort, n.EFAActivePorts, "active EFA ports"},
		{"efa.infiniband_count", e.InfiniBand, n.InfiniBandCount, "InfiniBand devices"},
	} {
		if x.want <= 0 {
			continue
		}
		exp := fmt.Sprintf(">= %d", x.want)
		if problem != "" {
			v.notRun(x.id, "", exp, problem)
			continue
		}
		v.expect(x.got >= x.want, x.id, "", exp, fmt.Sprint(x.got), fmt.Sprintf("found %d %s, profile expects %d", x.got, x.what, x.want))
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
