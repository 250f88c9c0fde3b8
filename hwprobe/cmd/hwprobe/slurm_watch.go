package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// leaveRequestPath is where the provider's leave request appears in the
// instance metadata.
const leaveRequestPath = "tags/instance/" + slurm.LeaveRequestTag

// requestedLeaveReason is the drain reason of a leave the provider asked
// for.
const requestedLeaveReason = "requested by mlplatform (scale-in, replacement or a failed node)"

func watchCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "slurm watch", "--profile FILE.hcl [--config FILE] [--once] [flags]", `
Leave Slurm when the provider asks, before it terminates the instance (a
scale-in, a replacement, a node the validation gate failed): a daemon,
meant for the systemd unit `+slurm.WatchUnitName+` that hwprobe slurm join
installs. Every --interval it reads the instance tag `+slurm.LeaveRequestTag+`
from the instance metadata service (IMDSv2; instance tags in metadata must
be enabled), and, when the tag is absent, the instance's Auto Scaling
target lifecycle state (`+slurm.TargetLifecycleStatePath+`): "Terminated"
while a CPU footprint's group holds the instance in Terminating:Wait for
a scale-in, an instance refresh or a replacement is a request too
("`+slurm.AutoScalingLeaveRequest+`"). When there is a request:

  1. The node is drained with the reason "hwprobe: leaving: `+requestedLeaveReason+`",
     so that no new job lands on it.
  2. While jobs still run on it, nothing more: they end as they would
     (the provider waits, within the resource's timeout).
  3. Once it is idle, slurmd is stopped (--stop-command), so that it cannot
     register again, and the node is deleted from Slurm (or set down when
     the controller refuses).
  4. A marker is written to the profile's report destination,
     `+slurm.LeftMarkerDir+`INSTANCE-ID.json, under the same rules as
     reports (the profile's region, SSE-KMS, written once): the provider
     terminates the instance when it reads it (for Auto Scaling, the
     apply or mlplatform approve completes the terminate action; the
     node policy lets no node complete its own).

The node's name and the controllers come from the join configuration
(--config) and the instance metadata, as for slurm leave.

Exit codes: 0 stopped by a signal, or with --once the node left (marker
written); 1 with --once, jobs still run on the drained node; 2 it could
not run, or with --once there is no request.`,
		"hwprobe slurm watch --profile /etc/mlplatform/hwprobe/profile.hcl")
	profilePath := fset.String("profile", "", "profile `file` (HCL): the region and the marker's destination (required)")
	configPath := fset.String("config", slurm.JoinConfigPath, "join configuration `file` (JSON): the node's name and the controllers")
	nodeName := fset.String("node", "", "Slurm node `name` (default: from the join configuration and the instance metadata)")
	slurmConf := fset.String("slurm-conf", "", "slurm.conf `file` for scontrol (default: found as slurm leave finds it)")
	scontrolPath := fset.String("scontrol", "", "scontrol `program` (default: PATH, then /usr/bin, /usr/local/bin, /opt/slurm/bin)")
	stopCommand := fset.String("stop-command", "systemctl stop slurmd", "`command` that stops this node's slurmd (split on spaces, run without a shell)")
	interval := fset.Duration("interval", 10*time.Second, "how often to read the request tag and the node's state")
	once := fset.Bool("once", false, "take one step of the current request and exit (see exit codes)")
	if done, err := parse(a, fset, args); done {
		return err
	}
	fail := func(err error) error { return cannotRun(fmt.Errorf("slurm watch: %w", err)) }
	switch {
	case *profilePath == "":
		return fail(errors.New("--profile is required"))
	case *interval <= 0:
		return fail(fmt.Errorf("--interval must be positive, not %s", *interval))
	case len(strings.Fields(*stopCommand)) == 0:
		return fail(errors.New("--stop-command is empty"))
	}
	p, _, err := loadProfile(*profilePath)
	if err != nil {
		return err
	}
	t, err := reportTarget("slurm watch", p, "", "")
	if err != nil {
		return err
	}
	cfg, err := readJoinConfig(*configPath)
	if err != nil {
		return fail(err)
	}
	w := &watcher{a: a, imds: a.newIMDS(), target: t, stop: strings.Fields(*stopCommand)}
	stepCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	node, err := slurm.ReadNode(stepCtx, w.imds, cfg)
	cancel()
	if err != nil {
		return fail(err)
	}
	w.instanceID, w.name = node.InstanceID, node.Name
	if *nodeName != "" {
		w.name = *nodeName
	}
	exists := a.fileExists
	conf, err := slurm.LeaveConfig(*slurmConf, exists, func() ([]string, error) { return cfg.Controllers, nil })
	if err != nil {
		return fail(err)
	}
	w.sc = slurm.Scontrol{Path: *scontrolPath, Config: conf}
	if w.sc.Path == "" {
		if w.sc.Path, err = findScontrol(nil, exists); err != nil {
			return fail(errors.New(strings.TrimPrefix(err.Error(), "slurm: ")))
		}
	}
	if w.s3, err = a.reportS3(ctx, t.Region); err != nil {
		return fail(err)
	}
	if *once {
		return w.step(ctx, true)
	}
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	for {
		if err := w.step(ctx, false); err != nil {
			w.logf("%v", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// watcher takes the node out of Slurm on the provider's request.
type watcher struct {
	a                *app
	imds             probe.IMDS
	s3               report.S3
	target           report.Target
	sc               slurm.Scontrol
	stop             []string
	name, instanceID string
	done             string // the request the node left for
	said             string
}

func (w *watcher) logf(format string, args ...any) {
	fmt.Fprintf(w.a.stderr, "hwprobe: slurm watch: "+format+"\n", args...)
}

// say logs msg unless it was the last thing said.
func (w *watcher) say(msg string) {
	if msg != w.said {
		w.said = msg
		w.logf("%s", msg)
	}
}

// step takes one step of the current request, each Slurm and S3 call
// bounded. With once, its result is the command's.
func (w *watcher) step(ctx context.Context, once bool) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := w.request(ctx)
	if err != nil {
		return err
	}
	if req == "" {
		if once {
			return cannotRun(errors.New("slurm watch: no leave request (instance tag " + slurm.LeaveRequestTag + ", or Auto Scaling terminating the instance)"))
		}
		return nil
	}
	if req == w.done {
		return nil
	}
	out, done, err := slurm.RequestedLeave(ctx, w.sc, w.name, slurm.LeaveReason(requestedLeaveReason), w.stopSlurmd)
	if err != nil {
		return cannotRun(fmt.Errorf("slurm watch: node %s, request %s: %w", w.name, req, err))
	}
	if !done {
		w.say(fmt.Sprintf("node %s (%s), request %s: %s", w.name, out.State, req, out.Why))
		if once {
			return exitError{code: exitFailed, err: fmt.Errorf("slurm watch: node %s (%s): %s", w.name, out.State, out.Why)}
		}
		return nil
	}
	body, err := json.MarshalIndent(slurm.LeftMarker{Node: w.name, InstanceID: w.instanceID, Request: req, Result: out.Result, Why: out.Why, LeftAt: w.a.now().UTC()}, "", "  ")
	if err != nil {
		return cannotRun(err)
	}
	uri, err := report.PublishObject(ctx, w.s3, w.target, slurm.LeftMarkerDir+w.instanceID+".json", "application/json", body)
	if err != nil && !errors.Is(err, report.ErrReportExists) {
		return cannotRun(fmt.Errorf("slurm watch: node %s %s; writing the marker: %w", w.name, out.Result, err))
	}
	w.done = req
	fmt.Fprintf(w.a.stdout, "slurm watch: node %s, request %s: %s (%s): %s\n", w.name, req, out.Result, out.Why, orDefault(uri, "marker written already"))
	return nil
}

// request reads the current leave request: the provider's tag, else Auto
// Scaling's target lifecycle state; "" when there is none. A malformed
// tag is said once and ignored.
func (w *watcher) request(ctx context.Context) (string, error) {
	tag, err := imdsText(ctx, w.imds, leaveRequestPath)
	if err == nil {
		req, perr := slurm.ParseLeaveRequest(tag)
		if perr != nil {
			w.say(perr.Error() + ": ignored")
			return "", nil
		}
		return req, nil
	}
	if !strings.HasSuffix(err.Error(), "not found") {
		return "", cannotRun(fmt.Errorf("slurm watch: %w", err))
	}
	state, err := imdsText(ctx, w.imds, slurm.TargetLifecycleStatePath)
	if err != nil {
		if strings.HasSuffix(err.Error(), "not found") {
			return "", nil // not in an Auto Scaling group
		}
		return "", cannotRun(fmt.Errorf("slurm watch: %w", err))
	}
	req, _ := slurm.LifecycleLeaveRequest(state)
	return req, nil
}

// stopSlurmd runs the stop command.
func (w *watcher) stopSlurmd(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, w.stop[0], w.stop[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(w.stop, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
