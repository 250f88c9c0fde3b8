package slurmtest_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/slurmtest"
	"github.com/mlplatform/mlplatform/hwprobe/schema"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// healthProfile is the nodes' declared hardware: the test build of hwprobe
// plays it (a fixed machine description for the CPU, go-nvml's mock DGX
// H100 for the GPUs), so the test, never this host, decides pass or fail.
const healthProfile = `name = "slurm-health-check"
cpu {
  vendor   = "AuthenticAMD"
  features = ["avx512f"]
}
gpu {
  model = "H100"
  count = 2
}
`

const (
	healthy = "dgxh100;gpus=2"
	oneGPU  = "dgxh100;gpus=1" // a GPU fell off the bus: gpu.count fails
)

// healthNode is what one node's hwprobe plays, and the generation of that
// setting: the test waits for a health-check run of a generation, which
// began after the setting was written.
type healthNodes struct {
	t    *testing.T
	dir  string
	gens map[string]int
}

func (h *healthNodes) set(node, nvml string) int {
	h.t.Helper()
	h.gens[node]++
	gen := h.gens[node]
	env := fmt.Sprintf("GEN=%d\nHWPROBE_MACHINE=%s\nHWPROBE_NVML_MOCK='%s'\n", gen, acctest.MachineZen5, nvml)
	tmp := filepath.Join(h.dir, "env", node+".tmp")
	if err := os.WriteFile(tmp, []byte(env), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.dir, "env", node)); err != nil {
		h.t.Fatal(err)
	}
	return gen
}

var runEnd = regexp.MustCompile(`(?m)^=== gen (\d+) exit (\d+) ms (\d+)$`)

// waitRun waits for a health-check run of node at generation gen or later
// to end, and returns its output and exit status.
func (h *healthNodes) waitRun(node string, gen int, timeout time.Duration) (string, int) {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(filepath.Join(h.dir, "runs", node+".log"))
		start := 0
		for _, m := range runEnd.FindAllSubmatchIndex(b, -1) {
			g, _ := strconv.Atoi(string(b[m[2]:m[3]]))
			if g >= gen {
				rc, _ := strconv.Atoi(string(b[m[4]:m[5]]))
				ms, _ := strconv.Atoi(string(b[m[6]:m[7]]))
				out := string(b[start:m[0]])
				h.t.Logf("%s health check, generation %d, exit %d, %d ms:\n%s", node, g, rc, ms, out)
				return out, rc
			}
			start = m[1] + 1
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: no health-check run of generation %d within %s; runs so far:\n%s", node, gen, timeout, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSlurmHealthCheck runs hwprobe's Slurm health check as the
// HealthCheckProgram of real slurmd daemons (Debian's Slurm 22.05, a
// controller and two nodes on this host): a failing node is drained at
// slurmd's first run, before it registers; a healthy node stays idle; a
// drained node that passes again is resumed; an administrator's drain and
// a node down for another reason are never resumed, and an
// administrator's reason is never replaced.
func TestSlurmHealthCheck(t *testing.T) {
	start := time.Now()
	_, hwprobe := daemonTest(t)
	dir, err := os.MkdirTemp("", "slurm-health-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, sub := range []string{"env", "runs", "reports"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	profile := filepath.Join(dir, "profile.hcl")
	if err := os.WriteFile(profile, []byte(healthProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	// slurmd runs HealthCheckProgram with no arguments and no environment
	// but SLURMD_NODENAME: the script gives hwprobe its flags and the
	// hardware the node plays, and not --slurm-conf, --scontrol or --node
	// (hwprobe finds them from the slurmd that ran it). It records each
	// run's output, exit status and duration.
	script := filepath.Join(dir, "health-check")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(`#!/bin/sh
set -a
. "%[1]s/env/$SLURMD_NODENAME"
set +a
t0=$(date +%%s%%N)
%[2]q slurm health-check --profile %[3]q --report "%[1]s/reports/$SLURMD_NODENAME.json" >"%[1]s/runs/$SLURMD_NODENAME.out" 2>&1
rc=$?
t1=$(date +%%s%%N)
{ cat "%[1]s/runs/$SLURMD_NODENAME.out"; echo "=== gen $GEN exit $rc ms $(( (t1 - t0) / 1000000 ))"; } >>"%[1]s/runs/$SLURMD_NODENAME.log"
exit $rc
`, dir, hwprobe, profile)), 0o755); err != nil {
		t.Fatal(err)
	}
	const interval = 2 // seconds
	wait := 20 * time.Second
	c := slurmtest.Start(t, slurmtest.Options{
		Nodes:               []slurmtest.Node{{Name: "n1", GPUs: 2}, {Name: "n2", GPUs: 2}},
		HealthCheckProgram:  script,
		HealthCheckInterval: interval,
	})
	h := &healthNodes{t: t, dir: dir, gens: map[string]int{}}
	drainedBy := func(prefix string) func(slurm.Node) bool {
		return func(n slurm.Node) bool { return n.State.Drained() && strings.HasPrefix(n.Reason, prefix) }
	}
	inService := func(n slurm.Node) bool { return n.State.Base == "IDLE" && len(n.State.Flags) == 0 }

	// n1 has lost a GPU when its slurmd starts; n2 is healthy.
	h.set("n1", oneGPU)
	h.set("n2", healthy)
	c.StartNode("n1")
	c.StartNode("n2")

	t.Run("first run before registration drains a failing node", func(t *testing.T) {
		out, rc := h.waitRun("n1", 1, wait)
		if rc != 1 {
			t.Errorf("exit %d, want 1", rc)
		}
		for _, want := range []string{"fail: gpu.count: found 1 GPUs, profile expects 2", "node n1, config " + c.Conf, "UNKNOWN (not registered yet)", "drained"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q", want)
			}
		}
		n := c.WaitNode("n1", wait, "registered and drained", func(n slurm.Node) bool {
			return n.State.Registered() && drainedBy("hwprobe: gpu.count")(n)
		})
		if n.Reason != "hwprobe: gpu.count: found 1 GPUs, profile expects 2" {
			t.Errorf("reason %q", n.Reason)
		}
	})
	t.Run("healthy node stays idle", func(t *testing.T) {
		out, rc := h.waitRun("n2", 1, wait)
		if rc != 0 || !strings.Contains(out, "hwprobe health check: pass") {
			t.Errorf("exit %d", rc)
		}
		c.WaitNode("n2", wait, "idle", inService)
		gen := h.set("n2", healthy)
		h.waitRun("n2", gen, wait)
		if n, err := c.ShowNode("n2"); err != nil || !inService(n) {
			t.Errorf("n2: %s %q %v", n.State, n.Reason, err)
		}
	})
	t.Run("passing again resumes the node", func(t *testing.T) {
		gen := h.set("n1", healthy)
		out, rc := h.waitRun("n1", gen, wait)
		if rc != 0 || !strings.Contains(out, "resumed") {
			t.Errorf("exit %d", rc)
		}
		c.WaitNode("n1", wait, "idle", inService)
	})
	t.Run("an administrator's drain is never resumed nor its reason replaced", func(t *testing.T) {
		if _, err := c.Scontrol("update", "nodename=n2", "state=drain", "reason=maintenance"); err != nil {
			t.Fatal(err)
		}
		gen := h.set("n2", healthy)
		out, rc := h.waitRun("n2", gen, wait)
		if rc != 0 || !strings.Contains(out, "drained by someone else (maintenance): left drained") {
			t.Errorf("exit %d", rc)
		}
		gen = h.set("n2", oneGPU)
		out, rc = h.waitRun("n2", gen, wait)
		if rc != 1 || !strings.Contains(out, "their reason kept") {
			t.Errorf("exit %d", rc)
		}
		n, err := c.ShowNode("n2")
		if err != nil || !n.State.Drained() || n.Reason != "maintenance" {
			t.Errorf("n2: %s %q %v, want drained for maintenance", n.State, n.Reason, err)
		}
	})
	t.Run("a node down for another reason is left down", func(t *testing.T) {
		if _, err := c.Scontrol("update", "nodename=n1", "state=down", "reason=hardware swap"); err != nil {
			t.Fatal(err)
		}
		gen := h.set("n1", healthy)
		if out, rc := h.waitRun("n1", gen, wait); rc != 0 || !strings.Contains(out, "left to Slurm") {
			t.Errorf("exit %d", rc)
		}
		gen = h.set("n1", oneGPU)
		if out, rc := h.waitRun("n1", gen, wait); rc != 1 || !strings.Contains(out, "left down, reason kept") {
			t.Errorf("exit %d", rc)
		}
		n, err := c.ShowNode("n1")
		if err != nil || !n.State.Down() || n.State.Drained() || n.Reason != "hardware swap" {
			t.Errorf("n1: %s %q %v, want down for hardware swap", n.State, n.Reason, err)
		}
	})
	t.Run("a dry run outside slurmd changes nothing", func(t *testing.T) {
		gen := h.set("n2", healthy)
		if _, err := c.Scontrol("update", "nodename=n2", "state=resume"); err != nil {
			t.Fatal(err)
		}
		h.waitRun("n2", gen, wait)
		c.WaitNode("n2", wait, "idle", inService)
		// Run by hand, not by slurmd: the configuration and the node come
		// from the flags.
		cmd := exec.Command(hwprobe, "slurm", "health-check", "--profile", profile, "--slurm-conf", c.Conf, "--node", "n2", "--dry-run")
		cmd.Env = append(os.Environ(), "HWPROBE_MACHINE="+acctest.MachineZen5, "HWPROBE_NVML_MOCK="+oneGPU)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "(--slurm-conf): IDLE: failed; drained (dry run: would drain)") {
			t.Errorf("%v\n%s", err, out)
		}
		if n, err := c.ShowNode("n2"); err != nil || !inService(n) {
			t.Errorf("n2: %s %q %v", n.State, n.Reason, err)
		}
	})
	t.Run("each run writes its report", func(t *testing.T) {
		set, err := schema.Compile()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"n1", "n2"} {
			b, err := os.ReadFile(filepath.Join(dir, "reports", n+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := set.Validate(schema.Report, b); err != nil {
				t.Errorf("%s: %v", n, err)
			}
		}
	})
	t.Logf("Slurm health check test: %s", time.Since(start).Round(100*time.Millisecond))
}
