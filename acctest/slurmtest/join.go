package slurmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// joinedNode is a dynamic node JoinNode started.
type joinedNode struct {
	name, addr, dir string
	seq             int  // joins of this name so far: a replacement rejoins under its node's name
	left            bool // LeaveNode ran
}

var _ acctest.SlurmJoiner = (*Cluster)(nil)

// AddConfig adds a resource's slurm_controller_config to the controller
// (its slurm.conf lines to slurm.conf, its gres.conf lines to gres.conf)
// and has slurmctld read it again, as an administrator does.
func (c *Cluster) AddConfig(controllerConfig string) error {
	var conf, gres strings.Builder
	target := &conf
	for _, line := range strings.Split(controllerConfig, "\n") {
		if strings.HasPrefix(line, "# gres.conf") {
			target = &gres
			continue
		}
		if line, _, _ = strings.Cut(line, "#"); strings.TrimSpace(line) == "" {
			continue
		}
		// One configless controller already, with its own MaxNodeCount:
		// keep the controller's settings, add the nodes' lines.
		key, _, _ := strings.Cut(line, "=")
		if target == &conf && (key == "SlurmctldParameters" || key == "MaxNodeCount") {
			continue
		}
		target.WriteString(strings.TrimSpace(line) + "\n")
	}
	for _, f := range []struct{ path, add string }{{c.Conf, conf.String()}, {c.path("etc", "gres.conf"), gres.String()}} {
		old, err := os.ReadFile(f.path)
		if err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := os.WriteFile(f.path, append(old, f.add...), 0o644); err != nil {
			return err
		}
	}
	_, err := c.Scontrol("reconfigure")
	return err
}

// JoinNode starts a joining node's munged and slurmd, as its systemd would
// after `hwprobe slurm join`: munged with the key the node fetched (a wrong
// key and the node never registers), slurmd with the arguments hwprobe
// decided, in a mount and UTS namespace of the node's own: its host name,
// /etc/hosts, /run/munge (its munged), its slurmd spool, /run/slurm, a /dev
// with its GPUs as character devices, and /usr/local/sbin holding the
// health check program slurm.conf names: hwprobe's health check with the
// node's machine description and GPUs.
//
// One thing is not as on EC2. Every connection from one loopback address
// to another leaves from 127.0.0.1, so the controller records each dynamic
// node at 127.0.0.1; once the node registered, its address is set to its
// own (scontrol update nodeaddr), where its slurmd listens.
func (c *Cluster) JoinNode(ctx context.Context, j acctest.SlurmJoin) error {
	if !c.dynamic {
		return fmt.Errorf("JoinNode: the cluster is not for dynamic nodes (Options.Dynamic)")
	}
	c.mu.Lock()
	seq := 0
	if prev, ok := c.joined[j.NodeName]; ok {
		if !prev.left {
			c.mu.Unlock()
			return fmt.Errorf("node %s joined already", j.NodeName)
		}
		seq = prev.seq + 1
	}
	addr := fmt.Sprintf("127.0.0.%d", c.nextAddr)
	c.nextAddr++
	n := &joinedNode{name: j.NodeName, addr: addr, dir: c.path("nodes", j.NodeName, strconv.Itoa(seq)), seq: seq}
	c.joined[j.NodeName] = n
	c.mu.Unlock()

	for _, sub := range []string{"munge", "spool", "run-slurm", "sbin", "health"} {
		if err := os.MkdirAll(filepath.Join(n.dir, sub), 0o755); err != nil {
			return err
		}
	}
	// The node's munged, with the key hwprobe wrote.
	u, err := user.Lookup("munge")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	mungeDir := filepath.Join(n.dir, "munge")
	if err := os.Chown(mungeDir, uid, gid); err != nil {
		return err
	}
	if err := os.Chmod(mungeDir, 0o711); err != nil {
		return err
	}
	for _, d := range []string{c.path("nodes"), c.path("nodes", j.NodeName), n.dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	logFile := c.path("log", "munged-"+j.NodeName+".log")
	if err := os.WriteFile(logFile, nil, 0o640); err != nil {
		return err
	}
	if err := os.Chown(logFile, uid, gid); err != nil {
		return err
	}
	// Socket munge.socket.2, munged's default (a configless slurmd asks
	// for its configuration before it reads AuthInfo), and munge.socket,
	// the name the controller's AuthInfo gives.
	// hwprobe wrote the key for munged: owned by the munge user, 0400. It
	// lies in the test's temporary folder, which munged cannot enter: the
	// node's munged reads a copy in its own.
	fi, err := os.Stat(j.MungeKeyFile)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid || fi.Mode().Perm() != 0o400 {
		return fmt.Errorf("node %s: hwprobe wrote the munge key with mode %v, owner %v: want 0400, the munge user", j.NodeName, fi.Mode().Perm(), fi.Sys())
	}
	key, err := os.ReadFile(j.MungeKeyFile)
	if err != nil {
		return err
	}
	keyFile := filepath.Join(mungeDir, "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		return err
	}
	if err := os.Chown(keyFile, uid, gid); err != nil {
		return err
	}
	cred := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	c.start("munged-"+j.NodeName, cred, nil, program(c.t, "munged"), "-F", "--socket="+filepath.Join(mungeDir, "munge.socket.2"), "--key-file="+keyFile,
		"--pid-file="+filepath.Join(mungeDir, "munged.pid"), "--log-file="+logFile, "--seed-file="+filepath.Join(mungeDir, "seed"))
	if err := waitFile(filepath.Join(mungeDir, "munge.socket.2"), 10*time.Second); err != nil {
		return fmt.Errorf("node %s: munged: %w", j.NodeName, err)
	}
	if err := os.Symlink("munge.socket.2", filepath.Join(mungeDir, "munge.socket")); err != nil {
		return err
	}

	// The health check program slurm.conf names, on the node.
	var env strings.Builder
	for _, kv := range j.Env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HWPROBE_") || strings.HasPrefix(k, "AWS_") || k == "PATH" || k == "HOME" {
			fmt.Fprintf(&env, "export %s=%s\n", k, shellQuote(v))
		}
	}
	if err := os.WriteFile(filepath.Join(n.dir, "node.env"), []byte(env.String()), 0o644); err != nil {
		return err
	}
	health := fmt.Sprintf(`#!/bin/sh
. %[1]s/node.env
%[2]s slurm health-check --profile %[3]s --boot-report %[4]s >%[1]s/health/last.out 2>&1
rc=$?
{ cat %[1]s/health/last.out; echo "=== exit $rc"; } >>%[1]s/health/runs.log
exit $rc
`, shellQuote(n.dir), shellQuote(j.Hwprobe), shellQuote(j.Profile), shellQuote(j.BootReport))
	if err := os.WriteFile(filepath.Join(n.dir, "sbin", "hwprobe-slurm-health-check"), []byte(health), 0o755); err != nil {
		return err
	}

	host, _ := os.Hostname()
	hosts := filepath.Join(n.dir, "hosts")
	if err := os.WriteFile(hosts, []byte(fmt.Sprintf("127.0.0.1 localhost %s\n%s %s\n", host, addr, j.NodeName)), 0o644); err != nil {
		return err
	}
	for _, d := range []string{"/run/munge", "/run/slurm", "/usr/local/sbin"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	script := `set -e
d=$1 cluster=$2 name=$3 gpus=$4
shift 4
mount --bind "$d/hosts" /etc/hosts
mount --bind "$d/munge" /run/munge
mount --bind "$d/munge" "$cluster/munge"
mount --bind "$d/spool" "$cluster/spool"
mount --bind "$d/run-slurm" /run/slurm
mount --bind "$d/sbin" /usr/local/sbin
mount -t tmpfs -o mode=755 nodedev /dev
mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5; mknod -m 666 /dev/random c 1 8; mknod -m 666 /dev/urandom c 1 9
i=0; while [ "$i" -lt "$gpus" ]; do mknod -m 666 "/dev/nvidia$i" c 195 "$i"; i=$((i+1)); done
hostname "$name"
exec "$@"
`
	args := append([]string{"-um", "/bin/sh", "-c", script, "sh", n.dir, c.Dir, j.NodeName, strconv.Itoa(j.GPUs), program(c.t, "slurmd"), "-D"}, j.SlurmdArgs...)
	c.start("slurmd-"+j.NodeName, nil, nil, program(c.t, "unshare"), args...)

	// Registered (at 127.0.0.1, see above): give it its own address.
	deadline := time.Now().Add(30 * time.Second)
	for {
		nd, err := c.ShowNode(j.NodeName)
		if err == nil && nd.State.Registered() {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s did not register within 30s (%v)", j.NodeName, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if _, err := c.Scontrol("update", "nodename="+j.NodeName, "nodeaddr="+addr); err != nil {
		return err
	}
	if !strings.Contains(strings.Join(j.SlurmdArgs, " "), "State=DRAIN") {
		return nil // registered in service: no first check to run
	}
	// The node registered drained (State=DRAIN in its --conf). What
	// `hwprobe slurm join` does next on a node: its first health check,
	// which resumes it when it passes. Run here with the node's
	// environment, its profile and boot report, against the controller's
	// configuration (the node reads its configless copy).
	cmd := exec.CommandContext(ctx, j.Hwprobe, "slurm", "health-check", "--first", "--node", j.NodeName, "--slurm-conf", c.Conf,
		"--profile", j.Profile, "--boot-report", j.BootReport)
	cmd.Env = j.Env
	out, err := cmd.CombinedOutput()
	rc := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		rc = ee.ExitCode()
	case err != nil:
		return fmt.Errorf("node %s: first health check: %w", j.NodeName, err)
	}
	f, err := os.OpenFile(filepath.Join(n.dir, "health", "runs.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%s=== exit %d\n", out, rc)
	if rc == 2 {
		return fmt.Errorf("node %s: first health check could not run:\n%s", j.NodeName, out)
	}
	return err
}

// HealthRuns is what the node's health checks printed so far (its
// replacements' too, in order), each run
// ending in a line "=== exit N".
func (c *Cluster) HealthRuns(node string) string {
	c.mu.Lock()
	n, ok := c.joined[node]
	c.mu.Unlock()
	if !ok {
		return ""
	}
	var all []byte
	for seq := 0; seq <= n.seq; seq++ {
		b, _ := os.ReadFile(c.path("nodes", node, strconv.Itoa(seq), "health", "runs.log"))
		all = append(all, b...)
	}
	return string(all)
}

// Srun runs srun against the cluster and returns its output, within ctx's
// deadline, else 30 seconds.
func (c *Cluster) Srun(ctx context.Context, args ...string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, srunPath(), args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("srun %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

func srunPath() string {
	if p, err := exec.LookPath("srun"); err == nil {
		return p
	}
	return "/usr/bin/srun"
}

// Nodes lists the nodes the controller knows (scontrol show nodes).
func (c *Cluster) Nodes() ([]slurm.Node, error) {
	out, err := c.Scontrol("show", "nodes")
	if err != nil {
		return nil, err
	}
	var ns []slurm.Node
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		if !strings.HasPrefix(strings.TrimSpace(block), "NodeName=") {
			continue
		}
		n, err := slurm.ParseNode(block)
		if err != nil {
			return nil, err
		}
		ns = append(ns, n)
	}
	return ns, nil
}

func waitFile(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within %s", path, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// SetNodeEnv sets one variable of a joined node's health check
// environment (its machine description, its GPUs): the node's hardware
// changes under its running slurmd.
func (c *Cluster) SetNodeEnv(node, key, value string) error {
	c.mu.Lock()
	n, ok := c.joined[node]
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("node %s never joined", node)
	}
	p := filepath.Join(n.dir, "node.env")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasPrefix(line, "export "+key+"=") {
			out.WriteString(line + "\n")
		}
	}
	fmt.Fprintf(&out, "export %s=%s\n", key, shellQuote(value))
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(out.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// InService: idle, with no flag but a dynamic node's own.
func InService(n slurm.Node) bool {
	return n.State.Base == "IDLE" && !slices.ContainsFunc(n.State.Flags, func(f string) bool { return f != "DYNAMIC_NORM" })
}

// DrainedBy: drained with a reason that begins with prefix.
func DrainedBy(prefix string) func(slurm.Node) bool {
	return func(n slurm.Node) bool { return n.State.Drained() && strings.HasPrefix(n.Reason, prefix) }
}

// Busy holds for a node that runs jobs (allocated, mixed, completing).
func Busy(n slurm.Node) bool { return n.State.Busy() }

// LeaveNode shuts a joined node down as its instance's shutdown does: its
// leave unit runs `hwprobe slurm leave` (with the node's metadata service
// and join configuration; the controller's configuration, which the node
// reads from its configless cache), then its slurmd and munged stop.
func (c *Cluster) LeaveNode(ctx context.Context, l acctest.SlurmLeave) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.Hwprobe, "slurm", "leave", "--config", l.JoinConfig, "--slurm-conf", c.Conf)
	cmd.Env = l.Env
	out, err := cmd.CombinedOutput()
	c.t.Logf("slurmtest: %s leaves: hwprobe slurm leave: %v\n%s", l.NodeName, err, out)
	c.stopNode(l.NodeName)
	if err != nil {
		return fmt.Errorf("hwprobe slurm leave: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// WatchNode runs the node's `hwprobe slurm watch --once`, as its watch
// unit does at each interval, against this controller. Its stop command
// stops the node's slurmd as systemctl would: a SIGTERM to the process
// the cluster started (the node's namespaces exec slurmd in place). Exit
// 0 is done (the node left, its munged stops too), 1 jobs still run.
func (c *Cluster) WatchNode(ctx context.Context, w acctest.SlurmWatch) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c.mu.Lock()
	pid := 0
	for _, p := range c.procs {
		if p.name == "slurmd-"+w.NodeName && p.cmd.Process != nil {
			pid = p.cmd.Process.Pid
		}
	}
	c.mu.Unlock()
	if pid == 0 {
		return false, fmt.Errorf("node %s: no slurmd started", w.NodeName)
	}
	cmd := exec.CommandContext(ctx, w.Hwprobe, "slurm", "watch", "--once", "--profile", w.Profile, "--config", w.JoinConfig,
		"--slurm-conf", c.Conf, "--stop-command", fmt.Sprintf("kill -TERM %d", pid))
	cmd.Env = w.Env
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil {
		return false, fmt.Errorf("hwprobe slurm watch: %w", err)
	}
	code := cmd.ProcessState.ExitCode()
	c.t.Logf("slurmtest: %s: hwprobe slurm watch --once: exit %d\n%s", w.NodeName, code, out)
	switch {
	case code == 1:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("exit %d: %w: %s", code, err, strings.TrimSpace(string(out)))
	}
	c.stopNode(w.NodeName)
	return true, nil
}

// stopNode marks a joined node as left and stops its slurmd and munged, as
// its instance's shutdown does.
func (c *Cluster) stopNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.joined[name]; ok {
		n.left = true
	}
	for _, p := range c.procs {
		if p.name == "slurmd-"+name || p.name == "munged-"+name {
			stopProc(p)
		}
	}
}
