package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// Where a node's Slurm pieces live (the defaults of slurm join's flags).
const (
	mungeKeyPath       = "/etc/munge/munge.key"
	slurmdEnvFiles     = "/etc/sysconfig/slurmd,/etc/default/slurmd"
	systemdUnitDir     = "/etc/systemd/system"
	healthCheckLinkDir = "/usr/local/sbin"
)

// slurmdCandidates are where slurmd is looked for after PATH (slurmd's
// systemd unit gives its own path; the join only checks it is installed).
var slurmdCandidates = []string{"/usr/sbin/slurmd", "/usr/local/sbin/slurmd", "/opt/slurm/sbin/slurmd"}

func joinCmd(ctx context.Context, a *app, args []string) error {
	fset := newFlags(a, "slurm join", "[--config FILE] [--no-start | --dry-run] [flags]", `
Join this node to a Slurm cluster as a dynamic node (slurmd -Z), configless:
slurmd fetches slurm.conf and gres.conf from the controller. The node's
bootstrap runs it once, from the join configuration the platform rendered
(JSON, --config: controllers, the munge key's secret, how the node is named,
slurmd's --conf with its Gres, Feature and RealMemory).

  1. Names the node from the instance metadata service (IMDSv2): PREFIX-N,
     N the entry at its ami-launch-index of the ranges in its index tag
     (instance metadata tags must be enabled), or PREFIX-INSTANCEID.
  2. Reads the munge key from Secrets Manager (SecretBinary, or base64
     SecretString; 32 to 1024 bytes) and writes it to --munge-key
     atomically, mode 0400, owned by --munge-user when that user exists.
  3. Links --health-check-link to this hwprobe, for slurm.conf's
     HealthCheckProgram (it runs "hwprobe slurm health-check").
  4. Sets SLURMD_OPTIONS in slurmd's environment files (--slurmd-env, each
     where its directory exists), lets slurmd.service start without a local
     slurm.conf (a drop-in under --systemd-dir), restarts munge, enables
     and restarts slurmd (systemctl).
  5. Installs and starts `+slurm.LeaveUnitName+` under --systemd-dir:
     at shutdown, before slurmd and munge stop, it runs "hwprobe slurm
     leave --config FILE", which drains the node and deletes it from Slurm.
     When the node's profile (--profile) exists, also `+slurm.WatchUnitName+`:
     "hwprobe slurm watch", which leaves Slurm when the provider asks
     before a scale-in or a replacement, once the node's jobs have ended.
  6. Waits for the node to register (it registers drained: State=DRAIN in
     its --conf) and runs its first health check ("hwprobe slurm
     health-check --first"): resumed when it passes, kept drained with
     hwprobe's reason when it fails (--first-check=false: not run).

--no-start does 1 to 3 and prints {"node_name": ..., "slurmd_args": [...]}
for a caller that starts slurmd itself. --dry-run reads the configuration
and the instance metadata and prints what would be done: it reads no
secret and writes nothing.

Exit codes: 0 joined (or printed); 2 it could not: a bad configuration, no
slurmd or systemctl, an instance metadata or Secrets Manager error.`,
		"hwprobe slurm join --config /etc/mlplatform/slurm/join.json")
	configPath := fset.String("config", slurm.JoinConfigPath, "join configuration `file` (JSON)")
	mungeKey := fset.String("munge-key", mungeKeyPath, "write the munge key to this `file`")
	mungeUser := fset.String("munge-user", "munge", "the munge key's owner, a `user` name (when that user exists; empty: not changed)")
	envFiles := fset.String("slurmd-env", slurmdEnvFiles, "slurmd's environment `files`, comma-separated: SLURMD_OPTIONS is set in each whose directory exists")
	unitDir := fset.String("systemd-dir", systemdUnitDir, "systemd unit `directory` for slurmd.service's drop-in and "+slurm.LeaveUnitName+" (skipped when it does not exist)")
	link := fset.String("health-check-link", filepath.Join(healthCheckLinkDir, healthCheckName), "symbolic `link` to this hwprobe for HealthCheckProgram (empty: none)")
	slurmdFlag := fset.String("slurmd", "", "slurmd `program` that must be installed (default: PATH, then "+strings.Join(slurmdCandidates, ", ")+")")
	systemctlFlag := fset.String("systemctl", "", "systemctl `program` (default: from PATH)")
	profilePath := fset.String("profile", nodeProfilePath, "the node's profile `file`, for "+slurm.WatchUnitName+" (skipped when it does not exist)")
	noStart := fset.Bool("no-start", false, "write the munge key and the link, print the node name and slurmd's arguments as JSON; no systemd")
	firstCheck := fset.Bool("first-check", true, "after starting slurmd, wait for the node to register (drained) and run its first health check, which resumes it when it passes")
	registerWait := fset.Duration("register-wait", 90*time.Second, "how long to wait for the node to register")
	dryRun := fset.Bool("dry-run", false, "print what would be done; read no secret, write nothing")
	timeout := fset.Duration("timeout", 2*time.Minute, "give up after this long")
	if done, err := parse(a, fset, args); done {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	fail := func(err error) error { return cannotRun(fmt.Errorf("slurm join: %w", err)) }

	cfg, err := readJoinConfig(*configPath)
	if err != nil {
		return fail(err)
	}

	var systemctl string
	if !*noStart {
		if err := findSlurmd(*slurmdFlag); err != nil {
			return fail(err)
		}
		if systemctl, err = lookProgram(*systemctlFlag, "systemctl"); err != nil {
			return fail(fmt.Errorf("%w: slurmd is started through systemd (or give --no-start and start it yourself)", err))
		}
	}

	node, err := slurm.ReadNode(ctx, a.newIMDS(), cfg)
	if err != nil {
		return fail(err)
	}
	slurmdArgs := cfg.SlurmdArgs(node.Name)
	quoted, err := slurm.QuoteArgs(slurmdArgs)
	if err != nil {
		return fail(err)
	}
	var envPaths []string
	for _, p := range strings.Split(*envFiles, ",") {
		if p = strings.TrimSpace(p); p != "" && isDir(filepath.Dir(p)) {
			envPaths = append(envPaths, p)
		}
	}
	dropIn, leaveUnit, watchUnit := "", "", ""
	if isDir(*unitDir) {
		dropIn = filepath.Join(*unitDir, slurm.SlurmdDropInName)
		if !*noStart {
			leaveUnit = filepath.Join(*unitDir, slurm.LeaveUnitName)
			if a.fileExists(*profilePath) {
				watchUnit = filepath.Join(*unitDir, slurm.WatchUnitName)
			}
		}
	}
	self := ""
	if *link != "" || leaveUnit != "" {
		if self, err = os.Executable(); err != nil {
			return fail(fmt.Errorf("this program's path: %w", err))
		}
	}
	exe := ""
	if *link != "" {
		exe = self
	}
	unitText, watchText := "", ""
	if leaveUnit != "" {
		abs, err := filepath.Abs(*configPath)
		if err != nil {
			return fail(fmt.Errorf("leave unit: %w", err))
		}
		if unitText, err = slurm.LeaveUnit(self, abs); err != nil {
			return fail(err)
		}
		if watchUnit != "" {
			prof, err := filepath.Abs(*profilePath)
			if err != nil {
				return fail(fmt.Errorf("watch unit: %w", err))
			}
			if watchText, err = slurm.WatchUnit(self, abs, prof); err != nil {
				return fail(err)
			}
		}
	}

	if *dryRun {
		w := a.stdout
		fmt.Fprintf(w, "node %s (instance %s): dry run, nothing read from Secrets Manager, nothing written\n", node.Name, node.InstanceID)
		fmt.Fprintf(w, "would write the munge key from %s to %s (mode 0400, owner %s)\n", cfg.MungeKeySecretARN, *mungeKey, orDefault(*mungeUser, "unchanged"))
		if exe != "" {
			fmt.Fprintf(w, "would link %s -> %s\n", *link, exe)
		}
		if !*noStart {
			for _, p := range envPaths {
				fmt.Fprintf(w, "would set in %s: %s=\"%s\"\n", p, slurm.SlurmdOptionsVar, quoted)
			}
			if dropIn != "" {
				fmt.Fprintf(w, "would write %s (slurmd.service starts without a local slurm.conf)\n", dropIn)
			}
			if leaveUnit != "" {
				fmt.Fprintf(w, "would write %s (the node leaves Slurm at shutdown: hwprobe slurm leave)\n", leaveUnit)
			}
			if watchUnit != "" {
				fmt.Fprintf(w, "would write %s (the node leaves Slurm when the provider asks: hwprobe slurm watch)\n", watchUnit)
			}
			fmt.Fprintf(w, "would run: %s\n", stepsText(systemctlSteps(dropIn != "", leaveUnit != "", watchUnit != "")))
		}
		fmt.Fprintf(w, "slurmd %s\n", quoted)
		return nil
	}

	secrets, err := a.newSecrets(ctx, cfg.Region)
	if err != nil {
		return fail(err)
	}
	key, err := slurm.FetchMungeKey(ctx, secrets, cfg.MungeKeySecretARN)
	if err != nil {
		return fail(err)
	}
	owner, err := lookupOwner(*mungeUser)
	if err != nil {
		fmt.Fprintf(a.stderr, "hwprobe: slurm join: %v: the munge key stays owned by %d\n", err, os.Geteuid())
	}
	if err := os.MkdirAll(filepath.Dir(*mungeKey), 0o700); err != nil {
		return fail(fmt.Errorf("munge key: %w", err))
	}
	if err := slurm.WriteFileAtomic(*mungeKey, key, 0o400, owner); err != nil {
		return fail(fmt.Errorf("munge key: %w", err))
	}
	if exe != "" {
		if err := os.MkdirAll(filepath.Dir(*link), 0o755); err != nil {
			return fail(fmt.Errorf("health check link: %w", err))
		}
		if err := slurm.SymlinkAtomic(exe, *link); err != nil {
			return fail(fmt.Errorf("health check %w", err))
		}
	}

	a.writeJoinedMarker(ctx, *profilePath, node)

	if *noStart {
		b, err := json.Marshal(struct {
			NodeName   string   `json:"node_name"`
			SlurmdArgs []string `json:"slurmd_args"`
		}{node.Name, slurmdArgs})
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(a.stdout, "%s\n", b)
		return nil
	}

	for _, p := range envPaths {
		old, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("slurmd options: %w", err))
		}
		b, err := slurm.SetSlurmdOptions(old, slurmdArgs)
		if err != nil {
			return fail(err)
		}
		if err := slurm.WriteFileAtomic(p, b, 0o644, nil); err != nil {
			return fail(fmt.Errorf("slurmd options: %w", err))
		}
	}
	if dropIn != "" {
		if err := os.MkdirAll(filepath.Dir(dropIn), 0o755); err != nil {
			return fail(fmt.Errorf("slurmd unit drop-in: %w", err))
		}
		if err := slurm.WriteFileAtomic(dropIn, []byte(slurm.SlurmdDropIn), 0o644, nil); err != nil {
			return fail(fmt.Errorf("slurmd unit drop-in: %w", err))
		}
	}
	if leaveUnit != "" {
		if err := slurm.WriteFileAtomic(leaveUnit, []byte(unitText), 0o644, nil); err != nil {
			return fail(fmt.Errorf("leave unit: %w", err))
		}
	}
	if watchUnit != "" {
		if err := slurm.WriteFileAtomic(watchUnit, []byte(watchText), 0o644, nil); err != nil {
			return fail(fmt.Errorf("watch unit: %w", err))
		}
	}
	for _, step := range systemctlSteps(dropIn != "", leaveUnit != "", watchUnit != "") {
		out, err := exec.CommandContext(ctx, systemctl, step...).CombinedOutput()
		if err != nil {
			return fail(fmt.Errorf("%s: %w%s", stepsText([][]string{step}), err, lastLine(out)))
		}
	}
	fmt.Fprintf(a.stdout, "node %s (instance %s) joins %s: slurmd %s\n", node.Name, node.InstanceID, strings.Join(cfg.Controllers, ","), quoted)
	if !*firstCheck {
		return nil
	}
	return firstHealthCheck(ctx, a, node.Name, *registerWait)
}

// firstHealthCheck waits for the node to register (it registers drained:
// State=DRAIN in its --conf) and runs its first health check, which
// resumes it when it passes and gives the drain hwprobe's reason when it
// fails. slurmd's own first run came before the node existed in the
// controller, and its next one is a HealthCheckInterval away: without this
// a healthy node would wait that long for its first job. The Slurm
// configuration is slurmd's configless copy.
func firstHealthCheck(ctx context.Context, a *app, name string, wait time.Duration) error {
	exists := func(f string) bool { _, err := os.Stat(f); return err == nil }
	deadline := time.Now().Add(wait)
	for {
		cfg := slurm.ResolveConfig("", a.getenv, nil, exists)
		if path, err := findScontrol(nil, exists); err == nil && cfg.File != "" {
			n, err := slurm.Scontrol{Path: path, Config: cfg}.ShowNode(ctx, name)
			if err == nil && n.State.Registered() {
				args := []string{"--first", "--node", name, "--slurm-conf", cfg.File, "--scontrol", path}
				if exists(nodeReportPath) {
					args = append(args, "--boot-report", nodeReportPath)
				}
				err := healthCheckCmd(ctx, a, args)
				var e exitError
				if errors.As(err, &e) && e.code == exitFailed {
					return nil // drained with hwprobe's reason: the node joined, and takes no job
				}
				return err
			}
		}
		if time.Now().After(deadline) {
			return cannotRun(fmt.Errorf("slurm join: node %s did not register within %s: it stays drained until its health check runs", name, wait))
		}
		select {
		case <-ctx.Done():
			return cannotRun(ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// systemctlSteps are the systemctl commands (their arguments) that start
// the node's daemons: munge with the new key, then slurmd with its new
// options, then, with leave, the unit that takes the node out of Slurm
// at shutdown (started after slurmd, it is stopped before it), and with
// watch the daemon that leaves on the provider's request. reload: unit
// files were written.
func systemctlSteps(reload, leave, watch bool) [][]string {
	var s [][]string
	if reload {
		s = append(s, []string{"daemon-reload"})
	}
	s = append(s, []string{"restart", "munge"}, []string{"enable", "slurmd"}, []string{"restart", "slurmd"})
	if leave {
		s = append(s, []string{"enable", "--now", slurm.LeaveUnitName})
	}
	if watch {
		s = append(s, []string{"enable", "--now", slurm.WatchUnitName})
	}
	return s
}

func stepsText(steps [][]string) string {
	var s []string
	for _, st := range steps {
		s = append(s, "systemctl "+strings.Join(st, " "))
	}
	return strings.Join(s, "; ")
}

// findSlurmd checks that slurmd is installed.
func findSlurmd(flag string) error {
	if flag != "" {
		if _, err := os.Stat(flag); err != nil {
			return fmt.Errorf("slurmd not found at %s: the image must have Slurm's slurmd and munge installed", flag)
		}
		return nil
	}
	if _, err := exec.LookPath("slurmd"); err == nil {
		return nil
	}
	for _, p := range slurmdCandidates {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	return fmt.Errorf("slurmd not found in PATH nor in %s: the image must have Slurm's slurmd and munge installed", strings.Join(slurmdCandidates, ", "))
}

func lookProgram(flag, name string) (string, error) {
	if flag != "" {
		if _, err := os.Stat(flag); err != nil {
			return "", fmt.Errorf("%s not found at %s", name, flag)
		}
		return flag, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found in PATH", name)
	}
	return p, nil
}

// lookupOwner is the owner for the munge key: the user's uid and primary
// group; nil, with the reason, when name is empty or no such user exists.
func lookupOwner(name string) (*slurm.Owner, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("no %s user (%v)", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("user %s: uid %q, gid %q are not numbers", name, u.Uid, u.Gid)
	}
	return &slurm.Owner{UID: uid, GID: gid}, nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// lastLine is ": " and the last line of a program's output, or "".
func lastLine(out []byte) string {
	out = bytes.TrimSpace(out)
	if i := bytes.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + string(out)
}

// writeJoinedMarker writes the node's joined marker under its profile's
// report destination (slurm.JoinedMarkerDir), so that the provider waits
// for this node to leave Slurm before it terminates it. Without a profile
// nothing is written. A failed write is said, not fatal: the node joins,
// but a scale-in will not wait for its jobs.
func (a *app) writeJoinedMarker(ctx context.Context, profilePath string, node slurm.NodeIdentity) {
	if !a.fileExists(profilePath) || node.InstanceID == "" {
		return
	}
	err := func() error {
		p, _, err := loadProfile(profilePath)
		if err != nil {
			return err
		}
		t, err := reportTarget("slurm join", p, "", "")
		if err != nil {
			return err
		}
		client, err := a.reportS3(ctx, t.Region)
		if err != nil {
			return err
		}
		body, err := json.MarshalIndent(slurm.JoinedMarker{Node: node.Name, InstanceID: node.InstanceID, JoinedAt: a.now().UTC()}, "", "  ")
		if err != nil {
			return err
		}
		_, err = report.PublishObject(ctx, client, t, slurm.JoinedMarkerDir+node.InstanceID+".json", "application/json", body)
		if errors.Is(err, report.ErrReportExists) {
			return nil
		}
		return err
	}()
	if err != nil {
		fmt.Fprintf(a.stderr, "hwprobe: slurm join: writing the joined marker: %v: a scale-in will not wait for this node's jobs\n", err)
	}
}

// readJoinConfig reads and checks the join configuration at path.
func readJoinConfig(path string) (slurm.JoinConfig, error) {
	raw, err := readFile(path)
	if err != nil {
		return slurm.JoinConfig{}, err
	}
	cfg, err := slurm.ParseJoinConfig(raw)
	if err != nil {
		return slurm.JoinConfig{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}
