package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

// Where the platform's validation bootstrap leaves the profile and the
// boot report on a node (internal/platform's BootstrapProfilePath and
// report path; hwprobe may not import the platform).
const (
	nodeProfilePath = "/etc/mlplatform/hwprobe/profile.hcl"
	nodeReportPath  = "/var/lib/mlplatform/hwprobe/report.json"
)

// healthCheckName is the name under which hwprobe runs `slurm
// health-check` with its defaults: slurmd runs HealthCheckProgram without
// arguments, so a symbolic link of this name to hwprobe is a
// HealthCheckProgram.
const healthCheckName = "hwprobe-slurm-health-check"

// commandArgs returns the arguments hwprobe runs with: those given, or,
// when called as healthCheckName, the health check with them.
func commandArgs(argv0 string, args []string) []string {
	if filepath.Base(argv0) == healthCheckName {
		return append([]string{"slurm", "health-check"}, args...)
	}
	return args
}

func slurmCmd(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "health-check":
			return healthCheckCmd(ctx, a, args[1:])
		case "join":
			return joinCmd(ctx, a, args[1:])
		case "leave":
			return leaveCmd(ctx, a, args[1:])
		case "watch":
			return watchCmd(ctx, a, args[1:])
		}
	}
	fset := newFlags(a, "slurm", "join|leave|watch|health-check [flags]", `
Work with Slurm.

Subcommands:
  join          join the node to a Slurm cluster as a dynamic node
                (configless slurmd -Z): its name from the instance
                metadata, the munge key from Secrets Manager, slurmd's
                options, then munge and slurmd started through systemd
  leave         take the node out of Slurm as its instance shuts down:
                drain it ("hwprobe: leaving: ..."), then delete it, or set
                it down when jobs still run on it
  watch         leave when the provider asks (instance tag
                `+slurm.LeaveRequestTag+`), before a scale-in or replacement
                terminates the instance: drain, wait for the jobs to end,
                stop slurmd, delete the node, write a marker for the
                provider
  health-check  slurmd's HealthCheckProgram: check the node quickly, drain
                it in Slurm when it fails (reason "hwprobe: CHECK: ..."),
                resume it when it passes again and hwprobe drained it`,
		"hwprobe slurm health-check --profile /etc/mlplatform/hwprobe/profile.hcl")
	if done, err := parse(a, fset, args); done {
		return err
	}
	return cannotRun(errors.New(`slurm: missing subcommand (try "hwprobe slurm join --help", "hwprobe slurm leave --help", "hwprobe slurm watch --help" or "hwprobe slurm health-check --help")`))
}

// healthCheckDefaultTimeout keeps a run well under the 60 s after which
// slurmd kills its HealthCheckProgram.
const healthCheckDefaultTimeout = 45 * time.Second

func healthCheckCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "slurm health-check", "[--profile FILE] [--boot-report FILE] [--report FILE] [flags]", `
slurmd's HealthCheckProgram. It runs at slurmd's start, before the node
registers, and every HealthCheckInterval after, and must end within 60 s
(slurmd kills it then), so it runs no benchmark: those ran at boot
(hwprobe validate). It probes what can change while a node runs (CPU and
memory, GPUs through NVML: count, health, NVLink, ECC and row remapping,
PCIe, temperature, XID events for --xid-window, EFA) and checks it against
the profile; it skips the host block (the identity and placement checked at
boot do not change) and the benchmarks. With --boot-report it also requires
that the boot validation, against this same profile, passed.

Then, in Slurm (scontrol show node, scontrol update):
  - a node that failed is drained with the reason "hwprobe: CHECK: DETAIL",
    unless it is drained already or down for another reason;
  - a node that passed is resumed when, and only when, its drain reason is
    one hwprobe wrote: an administrator's drain (any other reason) and a
    node down for another reason are never touched;
  - a node the controller does not know yet (a dynamic node before it
    registered) is left for the next run.

When it drains or resumes the node and the profile has a report block, it
writes a marker of that change, `+slurm.HealthMarkerDir+`INSTANCE-ID/TIME.STATE.json,
to the report destination as reports are written (the profile's region
and KMS key, written once; at most 10 s, a failed write is logged). The
provider's refresh reads the newest marker of each node: a node drained by
hwprobe is drift, which apply repairs by replacing it when the cluster's
validation says on_failure = "replace".

slurmd passes only SLURMD_NODENAME (no PATH, no SLURM_CONF), so hwprobe
finds the configuration itself: --slurm-conf, SLURM_CONF, the slurmd that
ran it (its -f, its SLURM_CONF, a configless slurmd's cached copy under
/run/slurm/conf or its --conf-server), then /etc/slurm/slurm.conf; and
scontrol in PATH, beside that slurmd, then /usr/bin, /usr/local/bin,
/opt/slurm/bin.

slurmd runs HealthCheckProgram without arguments: point it at a script
that runs this command with its flags, or at a symbolic link to hwprobe
named hwprobe-slurm-health-check, which runs it with the defaults.

Exit codes: 0 the node passed; 1 it failed (drained, or left drained);
2 hwprobe could not check it or could not reach Slurm.`,
		"hwprobe slurm health-check --profile /etc/mlplatform/hwprobe/profile.hcl --boot-report /var/lib/mlplatform/hwprobe/report.json")
	profilePath := fset.String("profile", nodeProfilePath, "profile `file` (HCL) the node was validated against")
	bootReport := fset.String("boot-report", "", "the boot validation's report `file` (hwprobe validate --report): it must have passed, for this profile; unset: not checked")
	reportPath := fset.String("report", "", "also write this run's JSON report (inventory and checks) to this `file`")
	nodeName := fset.String("node", "", "Slurm node `name` (default: $SLURMD_NODENAME, then the -N of the slurmd that ran hwprobe, then the short host name)")
	slurmConf := fset.String("slurm-conf", "", "slurm.conf `file` for scontrol (default: found as described above)")
	scontrolPath := fset.String("scontrol", "", "scontrol `program` (default: found as described above)")
	xidWindow := fset.Duration("xid-window", 5*time.Second, "listen for GPU XID events this long, at most the profile's xid_seconds (0: no XID check)")
	timeout := fset.Duration("timeout", healthCheckDefaultTimeout, "give up after this long, Slurm calls included (slurmd kills the program at 60s)")
	dryRun := fset.Bool("dry-run", false, "check and say what would be done in Slurm; change nothing")
	first := fset.Bool("first", false, "the node's first check after it registered drained by its join (State=DRAIN, no reason): that drain is hwprobe's own, resumed when the node passes (hwprobe slurm join runs this)")
	if done, err := parse(a, fset, args); done {
		return err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	res, rep, perr := healthCheck(ctx, a, *profilePath, *bootReport, *xidWindow)
	failure := ""
	switch {
	case perr != nil:
		failure = slurm.Reason("profile", perr.Error())
		fmt.Fprintf(a.stdout, "hwprobe health check: could not run: %v\n", perr)
	default:
		failure = drainReason(res)
		verdict := "pass"
		if failure != "" {
			verdict = "fail: " + strings.TrimPrefix(failure, slurm.ReasonPrefix+" ")
		}
		fmt.Fprintf(a.stdout, "hwprobe health check: %s (%d checks: %d passed, %d failed, %d not run; %d ms)\n",
			verdict, len(res.Checks), res.Summary.Pass, res.Summary.Fail, res.Summary.NotRun+res.Summary.OptionalNotRun, time.Since(start).Milliseconds())
		if *reportPath != "" {
			if err := writeReport(*reportPath, rep); err != nil {
				return cannotRun(err)
			}
		}
	}

	done, err := slurmStep(ctx, a, *nodeName, *slurmConf, *scontrolPath, failure, *dryRun, *first)
	if err != nil {
		return cannotRun(err)
	}
	if done.Action == slurm.Drain || done.Action == slurm.Resume {
		// Tell the provider (its refresh reads the newest marker of each
		// node); a marker that cannot be written costs only that.
		if err := publishHealthMarker(ctx, a, *profilePath, done); err != nil {
			fmt.Fprintf(a.stderr, "hwprobe: slurm health-check: the node was %sd, but its health marker was not written: %v\n", done.Action, err)
		}
	}
	switch {
	case perr != nil:
		return exitError{code: exitCannotRun}
	case failure != "":
		return exitError{code: exitFailed}
	}
	return nil
}

// healthCheck probes and validates the node against the health profile
// (the profile without its host block and benchmarks), and checks the
// boot report when one is named.
func healthCheck(ctx context.Context, a *app, profilePath, bootReport string, xidWindow time.Duration) (validate.Result, report.Report, error) {
	p, src, err := loadProfile(profilePath)
	if err != nil {
		var e exitError
		if errors.As(err, &e) && e.err != nil {
			err = e.err
		}
		return validate.Result{}, report.Report{}, err
	}
	hp := *p
	hp.Host, hp.Benchmarks = nil, nil
	cfg := probe.Config{FS: a.fs, CPUID: a.cpuid, Now: a.now}
	if p.GPU != nil {
		g := *p.GPU
		hp.GPU = &g
		window := time.Duration(g.XIDSeconds) * time.Second
		window = min(window, xidWindow)
		if window <= 0 {
			g.XIDSeconds = 0 // no XID check in the health check
		}
		cfg.NVML, cfg.XIDWindow = a.newNVML(), window
	}
	inv, err := probe.Probe(ctx, cfg)
	if err != nil {
		return validate.Result{}, report.Report{}, fmt.Errorf("probe: %w", err)
	}
	res := validate.Validate(ctx, &hp, inv, nil)
	if bootReport != "" {
		res = validate.Summarize(res.Profile, append(res.Checks, bootCheck(bootReport, src)))
	}
	rep := report.New(inv, &res, report.Options{Version: version(), ProfileName: p.Name, ProfileRegion: p.Region(), ProfileSource: src, Now: a.now()})
	return res, rep, nil
}

// bootCheck is boot.validation: the boot report exists, is for this
// profile, and its validation passed.
func bootCheck(path string, profileSource []byte) validate.Check {
	c := validate.Check{ID: "boot.validation", Expected: "passed, for this profile"}
	b, err := os.ReadFile(path)
	if err != nil {
		c.Status, c.Reason = validate.NotRun, "no boot report: "+err.Error()
		return c
	}
	var rep report.Report
	if err := json.Unmarshal(b, &rep); err != nil || rep.Schema != report.SchemaVersion {
		c.Status, c.Reason = validate.NotRun, fmt.Sprintf("%s is not a %s report", path, report.SchemaVersion)
		return c
	}
	sum := sha256.Sum256(profileSource)
	if rep.Profile == nil || rep.Profile.SHA256 != hex.EncodeToString(sum[:]) {
		c.Status, c.Reason = validate.NotRun, "the boot report is for another profile: validate the node against this one"
		return c
	}
	if rep.Validation == nil {
		c.Status, c.Reason = validate.NotRun, "the boot report has no validation"
		return c
	}
	c.Observed = fmt.Sprintf("exit %d at %s", rep.Validation.Exit, rep.GeneratedAt.UTC().Format(time.RFC3339))
	if rep.Validation.Exit == validate.ExitPass {
		c.Status = validate.Pass
		return c
	}
	c.Status, c.Reason = validate.Fail, "boot validation did not pass"
	for _, bc := range rep.Validation.Checks {
		if bc.Status == validate.Fail || (bc.Status == validate.NotRun && !bc.Optional) {
			c.Reason = fmt.Sprintf("boot validation: %s %s", bc.Name(), bc.Status)
			break
		}
	}
	return c
}

// drainReason is the reason to drain with, from the first failed check,
// else the first required check that did not run; "" when the node passed.
func drainReason(res validate.Result) string {
	for _, want := range []validate.Status{validate.Fail, validate.NotRun} {
		for _, c := range res.Checks {
			if c.Status != want || (want == validate.NotRun && c.Optional) {
				continue
			}
			detail := c.Reason
			if want == validate.NotRun {
				detail = "not run: " + detail
			}
			return slurm.Reason(c.Name(), detail)
		}
	}
	return ""
}

// stepDone is what slurmStep did to the node: an Action (Nothing in a dry
// run), on which node, and the drain's reason.
type stepDone struct {
	Action       slurm.Action
	Node, Reason string
}

// slurmStep finds the node, its Slurm configuration and scontrol, and
// drains or resumes the node as slurm.Decide says.
func slurmStep(ctx context.Context, a *app, nodeFlag, confFlag, scontrolFlag, failure string, dryRun, first bool) (stepDone, error) {
	d, err := slurm.FindSlurmd(os.DirFS("/proc"), os.Getpid())
	if err != nil {
		fmt.Fprintf(a.stderr, "hwprobe: looking for the slurmd that ran hwprobe: %v\n", err)
	}
	if d != nil && d.Exe == "" {
		d.Exe, _ = os.Readlink("/proc/" + strconv.Itoa(d.PID) + "/exe")
	}
	name := nodeFlag
	if name == "" {
		name = a.getenv("SLURMD_NODENAME")
	}
	if name == "" && d != nil {
		name = d.Args.NodeName
	}
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return stepDone{}, fmt.Errorf("slurm: node name: %w", err)
		}
		name, _, _ = strings.Cut(h, ".")
	}
	exists := func(f string) bool { _, err := os.Stat(f); return err == nil }
	sc := slurm.Scontrol{Path: scontrolFlag, Config: slurm.ResolveConfig(confFlag, a.getenv, d, exists)}
	if sc.Path == "" {
		sc.Path, err = findScontrol(d, exists)
		if err != nil {
			return stepDone{}, err
		}
	}
	conf := sc.Config.File
	if conf == "" {
		conf = sc.Config.Server
	}
	where := fmt.Sprintf("slurm: node %s, config %s (%s)", name, orDefault(conf, "-"), sc.Config.Source)
	n, err := sc.ShowNode(ctx, name)
	var node *slurm.Node
	switch {
	case errors.Is(err, slurm.ErrNodeNotFound):
		err = nil // a dynamic node before it registered: Decide says what follows
	case err != nil:
		return stepDone{}, fmt.Errorf("%s: %w", where, err)
	default:
		node = &n
		where += ": " + n.State.String()
		if !n.State.Registered() {
			where += " (not registered yet)"
		}
	}
	dec := slurm.Decide(node, failure)
	if first {
		dec = slurm.DecideFirst(node, failure)
	}
	if dryRun && dec.Action != slurm.Nothing {
		fmt.Fprintf(a.stdout, "%s: %s (dry run: would %s)\n", where, dec.Why, dec.Action)
		return stepDone{Action: slurm.Nothing, Node: name}, nil
	}
	switch dec.Action {
	case slurm.Drain:
		err = sc.Drain(ctx, name, dec.Reason)
	case slurm.Resume:
		err = sc.Resume(ctx, name)
	}
	if err != nil {
		return stepDone{}, fmt.Errorf("%s: %s: %w", where, dec.Action, err)
	}
	fmt.Fprintf(a.stdout, "%s: %s\n", where, dec.Why)
	return stepDone{Action: dec.Action, Node: name, Reason: dec.Reason}, nil
}

// healthMarkerTimeout bounds the marker's write: the health check must end
// well within slurmd's 60 seconds.
const healthMarkerTimeout = 10 * time.Second

// publishHealthMarker writes the marker of what the health check did
// (slurm.HealthMarkerDir) to the profile's report destination, as reports
// are written (the profile's region, its KMS key, written once). A profile
// without a report block has nowhere to write: nothing is written.
func publishHealthMarker(ctx context.Context, a *app, profilePath string, done stepDone) error {
	p, _, err := loadProfile(profilePath)
	if err != nil || p.Report == nil {
		return nil // the check said why already; no destination
	}
	t, err := reportTarget("slurm health-check", p, "", "")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, healthMarkerTimeout)
	defer cancel()
	id, err := imdsText(ctx, a.newIMDS(), "instance-id")
	if err != nil {
		return fmt.Errorf("the instance id: %w", err)
	}
	m := slurm.HealthMarker{Node: done.Node, InstanceID: id, State: slurm.HealthResumed, At: a.now().UTC()}
	if done.Action == slurm.Drain {
		m.State, m.Reason = slurm.HealthDrained, done.Reason
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	client, err := a.reportS3(ctx, t.Region)
	if err != nil {
		return err
	}
	uri, err := report.PublishObject(ctx, client, t, slurm.HealthMarkerKey(m), "application/json", body)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "slurm health-check: %s marker written: %s\n", m.State, uri)
	return nil
}

func findScontrol(d *slurm.Slurmd, exists func(string) bool) (string, error) {
	if p, err := exec.LookPath("scontrol"); err == nil {
		return p, nil
	}
	c := slurm.ScontrolCandidates(d)
	for _, p := range c {
		if exists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("slurm: scontrol not found in PATH nor in %s (give --scontrol)", strings.Join(c, ", "))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
