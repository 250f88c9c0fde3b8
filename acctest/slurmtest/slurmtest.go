// Package slurmtest starts a real Slurm cluster on this host for tests:
// munged (as user munge, on a socket of its own), slurmctld, and one slurmd
// per node, each on its own loopback address (127.0.0.2, 127.0.0.3, ...)
// with its own host name and a private /etc/hosts (unshare -um and a bind
// mount: the host's file is untouched), GPUs as character devices made by
// mknod (Slurm refuses plain files as gres). It runs Debian 12's slurmctld,
// slurmd, slurm-client and munge packages (Slurm 22.05) as root, without
// systemd. Nothing is faked: the tests talk to the daemons with scontrol.
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// Programs the cluster runs, found in PATH or at Debian's paths.
var programs = map[string]string{
	"munged":    "/usr/sbin/munged",
	"slurmctld": "/usr/sbin/slurmctld",
	"slurmd":    "/usr/sbin/slurmd",
	"scontrol":  "/usr/bin/scontrol",
	"unshare":   "/usr/bin/unshare",
}

// InstallHint is how to install what the cluster needs.
const InstallHint = "apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge (Debian 12), as root"

// Missing says why no cluster can start on this host, or "".
func Missing() string {
	var why []string
	for name, def := range programs {
		if _, err := lookPath(name, def); err != nil {
			why = append(why, name)
		}
	}
	slices.Sort(why)
	if len(why) > 0 {
		return "Slurm is not installed (" + strings.Join(why, ", ") + " not found): " + InstallHint
	}
	if os.Geteuid() != 0 {
		return "the Slurm daemons, mknod and unshare need root"
	}
	if _, err := user.Lookup("munge"); err != nil {
		return "no munge user (the munge package makes it): " + InstallHint
	}
	return ""
}

// Require skips t when no cluster can start here and CI is not set, and
// fails it when CI is set: CI installs Slurm (.ci/run).
func Require(t testing.TB) {
	t.Helper()
	why := Missing()
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("CI: %s", why)
		return
	}
	t.Skipf("skipping: %s", why)
}

func lookPath(name, def string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if _, err := os.Stat(def); err != nil {
		return "", err
	}
	return def, nil
}

// Node is one configured node.
type Node struct {
	Name string
	GPUs int // gres gpu count, each a character device
}

// Options describe the cluster.
type Options struct {
	Nodes []Node
	// HealthCheckProgram and HealthCheckInterval (seconds) go to slurm.conf.
	HealthCheckProgram  string
	HealthCheckInterval int
	// Extra lines for slurm.conf.
	Extra []string
	// Dynamic makes a controller for dynamic nodes (slurmd -Z) that fetch
	// their configuration from it (configless), as the platform's nodes
	// join: no node is configured, and JoinNode starts each one. Its
	// configuration takes the platform's slurm_controller_config
	// (AddConfig) as an administrator would.
	Dynamic bool
}

// Cluster is a running controller and its nodes.
type Cluster struct {
	t     testing.TB
	Dir   string // everything the cluster writes
	Conf  string // slurm.conf
	nodes map[string]*node
	mu    sync.Mutex
	procs []*proc
	// Controller is slurmctld's address, HOST:PORT.
	Controller string
	// MungeKey is the cluster's munge key.
	MungeKey []byte
	dynamic  bool
	joined   map[string]*joinedNode
	nextAddr int
}

type node struct {
	Node
	addr string
	port int
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts munged and slurmctld with a configuration for opts.Nodes;
// StartNode starts each node's slurmd. Everything stops when t ends; the
// daemons' logs are printed when t failed.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	Require(t)
	// munged, as user munge, must reach its socket: every folder above it
	// must let others through (0711), which t.TempDir's folders do not.
	dir, err := os.MkdirTemp("", "slurmtest-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, Dir: dir, Conf: filepath.Join(dir, "etc", "slurm.conf"), nodes: map[string]*node{}}
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			c.dumpLogs()
		}
		_ = os.RemoveAll(dir)
	})
	for _, sub := range []string{"etc", "state", "spool", "log", "dev", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	socket := c.startMunge()
	ctlPort := freePort(t, "127.0.0.1")
	c.Controller = fmt.Sprintf("127.0.0.1:%d", ctlPort)
	c.dynamic, c.joined, c.nextAddr = opts.Dynamic, map[string]*joinedNode{}, len(opts.Nodes)+2
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	var conf, gres strings.Builder
	fmt.Fprintf(&conf, `ClusterName=slurmtest
SlurmctldHost=%s(127.0.0.1)
SlurmctldPort=%d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%s
StateSaveLocation=%s
SlurmdSpoolDir=%s%s
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd-%%n.pid
SlurmctldLogFile=%s/slurmctld.log
SlurmdLogFile=%s/slurmd-%%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
GresTypes=gpu
ReturnToService=1
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
CommunicationParameters=NoInAddrAny
`, host, ctlPort, socket, c.path("state"), c.path("spool"), spoolSuffix(opts.Dynamic), c.path("run"), c.path("run"), c.path("log"), c.path("log"))
	if opts.Dynamic {
		// A dynamic node learns its spool folder from the configuration it
		// fetched, before it knows its name (%n is not expanded there):
		// each node's namespace has a spool folder of its own at this
		// path. config_overrides: this host's 2 CPUs and 24 GiB play
		// nodes declared with the memory of a p5en (their RealMemory comes
		// from the profile), so the controller takes the declared
		// resources as they are.
		fmt.Fprintf(&conf, "SlurmctldParameters=enable_configless\nMaxNodeCount=64\nSlurmdParameters=config_overrides\nSlurmdPort=%d\n", freePort(t, "127.0.0.1"))
	}
	if opts.HealthCheckProgram != "" {
		fmt.Fprintf(&conf, "HealthCheckProgram=%s\nHealthCheckInterval=%d\nHealthCheckNodeState=ANY\n", opts.HealthCheckProgram, max(opts.HealthCheckInterval, 1))
	}
	for _, l := range opts.Extra {
		conf.WriteString(l + "\n")
	}
	minor := 0
	for i, n := range opts.Nodes {
		addr := fmt.Sprintf("127.0.0.%d", i+2)
		nd := &node{Node: n, addr: addr, port: freePort(t, addr)}
		c.nodes[n.Name] = nd
		line := fmt.Sprintf("NodeName=%s NodeAddr=%s NodeHostname=%s Port=%d CPUs=1 RealMemory=100 State=UNKNOWN", n.Name, addr, n.Name, nd.port)
		if n.GPUs > 0 {
			line += fmt.Sprintf(" Gres=gpu:%d", n.GPUs)
			var files []string
			for range n.GPUs {
				// NVIDIA's major number; Slurm only needs a character device.
				f := c.path("dev", fmt.Sprintf("nvidia%d", minor))
				if err := syscall.Mknod(f, syscall.S_IFCHR|0o666, int(195<<8|minor)); err != nil {
					t.Fatalf("mknod %s: %v", f, err)
				}
				files = append(files, f)
				minor++
			}
			fmt.Fprintf(&gres, "NodeName=%s Name=gpu File=%s\n", n.Name, strings.Join(files, ","))
		}
		conf.WriteString(line + "\n")
	}
	if opts.Dynamic {
		// slurmctld needs a partition to start; the nodes' own come with
		// their controller configuration (AddConfig).
		conf.WriteString("PartitionName=empty State=UP\n")
	} else {
		conf.WriteString("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n")
	}
	c.write(c.Conf, conf.String())
	c.write(c.path("etc", "gres.conf"), gres.String())
	c.start("slurmctld", nil, nil, program(t, "slurmctld"), "-D", "-f", c.Conf)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c.Scontrol("ping")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slurmctld did not answer: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return c
}

// spoolSuffix: a folder per node name for configured nodes; one path,
// private to each node's namespace, for dynamic ones.
func spoolSuffix(dynamic bool) string {
	if dynamic {
		return ""
	}
	return "/%n"
}

func (c *Cluster) path(elem ...string) string {
	return filepath.Join(append([]string{c.Dir}, elem...)...)
}

func (c *Cluster) write(name, text string) {
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

func program(t testing.TB, name string) string {
	p, err := lookPath(name, programs[name])
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// startMunge starts munged as user munge with a fresh key and returns its
// socket.
func (c *Cluster) startMunge() string {
	t := c.t
	u, err := user.Lookup("munge")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir := c.path("munge")
	if err := os.Mkdir(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 1024)
	_, _ = rand.Read(key)
	c.MungeKey = key
	keyFile := filepath.Join(dir, "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dir, keyFile} {
		if err := os.Chown(f, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	socket := filepath.Join(dir, "munge.socket")
	cred := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	c.start("munged", cred, nil, program(t, "munged"), "-F", "--socket="+socket, "--key-file="+keyFile,
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--log-file="+c.path("log", "munged.log"), "--seed-file="+filepath.Join(dir, "seed"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(socket); err == nil {
			return socket
		}
		if time.Now().After(deadline) {
			t.Fatal("munged did not create its socket")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartNode starts node name's slurmd in a mount and UTS namespace of its
// own: its host name is the node's, and /etc/hosts (a bind mount) names
// the node at its loopback address. env is added to slurmd's environment.
func (c *Cluster) StartNode(name string, env ...string) {
	t := c.t
	t.Helper()
	n, ok := c.nodes[name]
	if !ok {
		t.Fatalf("no node %s", name)
	}
	host, _ := os.Hostname()
	hosts := c.path("etc", "hosts-"+name)
	c.write(hosts, fmt.Sprintf("127.0.0.1 localhost %s\n%s %s\n", host, n.addr, name))
	script := `mount --bind "$1" /etc/hosts && hostname "$2" && exec "$3" -D -f "$4" -N "$2"`
	c.start("slurmd-"+name, nil, env, program(t, "unshare"), "-um", "/bin/sh", "-c", script, "sh", hosts, name, program(t, "slurmd"), c.Conf)
}

// StopNode stops node name's slurmd.
func (c *Cluster) StopNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.name == "slurmd-"+name {
			stopProc(p)
		}
	}
}

func (c *Cluster) start(name string, cred *syscall.SysProcAttr, env []string, prog string, args ...string) {
	t := c.t
	cmd := exec.Command(prog, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = cred
	out, err := os.Create(c.path("log", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = out.Close(); close(p.done) }()
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
}

// stop ends the daemons, nodes first, then the controller, then munged.
func (c *Cluster) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.procs) - 1; i >= 0; i-- {
		stopProc(c.procs[i])
	}
}

func stopProc(p *proc) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (c *Cluster) dumpLogs() {
	files, _ := filepath.Glob(c.path("log", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		if len(b) > 6000 {
			b = b[len(b)-6000:]
		}
		c.t.Logf("--- %s (tail)\n%s", filepath.Base(f), b)
	}
}

// Scontrol runs scontrol against the cluster.
func (c *Cluster) Scontrol(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, program(c.t, "scontrol"), args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("scontrol %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// ShowNode is what the controller says about node name.
func (c *Cluster) ShowNode(name string) (slurm.Node, error) {
	out, err := c.Scontrol("show", "node", name)
	if err != nil {
		return slurm.Node{}, err
	}
	return slurm.ParseNode(out)
}

// WaitNode waits until ok(node) holds and returns the node, or fails t
// with what it saw last.
func (c *Cluster) WaitNode(name string, timeout time.Duration, what string, ok func(slurm.Node) bool) slurm.Node {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last slurm.Node
	var err error
	for {
		last, err = c.ShowNode(name)
		if err == nil && ok(last) {
			return last
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("node %s: not %s within %s: state %s, reason %q (%v)", name, what, timeout, last.State, last.Reason, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freePort returns a TCP port free on addr now.
func freePort(t testing.TB, addr string) int {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatalf("a free port on %s: %v", addr, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
