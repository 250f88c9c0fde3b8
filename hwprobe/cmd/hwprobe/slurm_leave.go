package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// leaveDefaultTimeout keeps a leave well inside the leave unit's
// TimeoutStopSec (60 s).
const leaveDefaultTimeout = 30 * time.Second

func leaveCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "slurm leave", "[--config FILE] [--node NAME] [--slurm-conf FILE] [--reason TEXT] [--dry-run] [flags]", `
Take this node out of Slurm as its instance shuts down, so that no ghost
node is left DOWN "Not responding" in sinfo. The unit hwprobe slurm join
installs, `+slurm.LeaveUnitName+`, runs it at shutdown, before
slurmd and munge stop.

The node's name: --node, else the join configuration (--config) and the
instance metadata, as slurm join names it. The Slurm configuration:
--slurm-conf, else the copy a configless slurmd cached
(`+slurm.RunConfFile+`, then `+slurm.DefaultSpoolConfFile+`),
else the join configuration's controllers (SLURM_CONF_SERVER).

  1. A node the controller does not know is left alone ("not in Slurm").
  2. The node is drained with the reason "hwprobe: leaving: REASON", so
     that no new job lands on it, then deleted (scontrol delete nodename).
  3. When the controller refuses to delete it (jobs still run on it, or it
     is not a dynamic node), it is set DOWN with the same reason: its jobs
     end or are requeued, and sinfo -R says why it went.

--dry-run asks the controller about the node and says what would be done.

Exit codes: 0 the node left Slurm (or was not in it); 1 it could not be
deleted and was set down; 2 Slurm could not be reached, or bad input.`,
		"hwprobe slurm leave --config /etc/mlplatform/slurm/join.json")
	configPath := fset.String("config", slurm.JoinConfigPath, "join configuration `file` (JSON): the node's name and the controllers, when not given otherwise")
	nodeName := fset.String("node", "", "Slurm node `name` (default: from the join configuration and the instance metadata)")
	slurmConf := fset.String("slurm-conf", "", "slurm.conf `file` for scontrol (default: found as described above)")
	scontrolPath := fset.String("scontrol", "", "scontrol `program` (default: PATH, then /usr/bin, /usr/local/bin, /opt/slurm/bin)")
	reason := fset.String("reason", slurm.LeaveReasonDefault, "why the node leaves: its drain reason is \"hwprobe: leaving: `TEXT`\"")
	timeout := fset.Duration("timeout", leaveDefaultTimeout, "give up after this long, Slurm calls included")
	dryRun := fset.Bool("dry-run", false, "ask the controller about the node and say what would be done; change nothing")
	if done, err := parse(a, fset, args); done {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	fail := func(err error) error { return cannotRun(fmt.Errorf("slurm leave: %w", err)) }

	// The join configuration, read when the name or the controllers come
	// from it.
	var joinCfg *slurm.JoinConfig
	join := func() (slurm.JoinConfig, error) {
		if joinCfg != nil {
			return *joinCfg, nil
		}
		cfg, err := readJoinConfig(*configPath)
		if err != nil {
			return slurm.JoinConfig{}, err
		}
		joinCfg = &cfg
		return cfg, nil
	}
	name := *nodeName
	if name == "" {
		cfg, err := join()
		if err != nil {
			return fail(fmt.Errorf("node name (no --node): %w", err))
		}
		node, err := slurm.ReadNode(ctx, a.newIMDS(), cfg)
		if err != nil {
			return fail(err)
		}
		name = node.Name
	}
	exists := a.fileExists
	conf, err := slurm.LeaveConfig(*slurmConf, exists, func() ([]string, error) {
		cfg, err := join()
		return cfg.Controllers, err
	})
	if err != nil {
		return fail(err)
	}
	sc := slurm.Scontrol{Path: *scontrolPath, Config: conf}
	if sc.Path == "" {
		if sc.Path, err = findScontrol(nil, exists); err != nil {
			return fail(errors.New(strings.TrimPrefix(err.Error(), "slurm: ")))
		}
	} else if !exists(sc.Path) {
		return fail(fmt.Errorf("scontrol not found at %s", sc.Path))
	}
	where := fmt.Sprintf("node %s, config %s (%s)", name, orDefault(conf.File, conf.Server), conf.Source)
	leaveReason := slurm.LeaveReason(*reason)

	if *dryRun {
		n, err := sc.ShowNode(ctx, name)
		switch {
		case errors.Is(err, slurm.ErrNodeNotFound):
			fmt.Fprintf(a.stdout, "slurm leave: %s: not in Slurm: nothing to do (dry run)\n", where)
			return nil
		case err != nil:
			return fail(fmt.Errorf("%s: %w", where, err))
		}
		fmt.Fprintf(a.stdout, "slurm leave: %s: %s: dry run: would drain it (reason %q), then delete it, or set it down when the controller refuses\n", where, n.State, leaveReason)
		return nil
	}

	out, err := slurm.Leave(ctx, sc, name, leaveReason)
	if out.State != "" {
		where += ": " + out.State
	}
	if err != nil {
		return fail(fmt.Errorf("%s: %w", where, err))
	}
	if out.Result == slurm.MarkedDown {
		return exitError{code: exitFailed, err: fmt.Errorf("slurm leave: %s: %s (reason %q)", where, out.Why, leaveReason)}
	}
	if out.Result == slurm.NotInSlurm {
		fmt.Fprintf(a.stdout, "slurm leave: %s: not in Slurm: nothing to do\n", where)
		return nil
	}
	fmt.Fprintf(a.stdout, "slurm leave: %s: %s: left Slurm (reason %q)\n", where, out.Why, leaveReason)
	return nil
}
