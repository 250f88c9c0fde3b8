package slurmtest_test

import (
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/slurmtest"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// TestSlurmLeave runs `hwprobe slurm leave` against real Slurm daemons
// (Debian's Slurm 22.05: a configless controller and two dynamic nodes
// joined as the platform's nodes join): an idle node is drained and
// deleted, so that scontrol no longer lists it; a node that runs a job
// cannot be deleted, and is set down with hwprobe's reason (exit 1); a
// node the controller does not know is left alone (exit 0).
func TestSlurmLeave(t *testing.T) {
	start := time.Now()
	ctx, hwprobe := daemonTest(t)
	c := slurmtest.Start(t, slurmtest.Options{Dynamic: true})
	if err := c.AddConfig("Nodeset=t Feature=t\nPartitionName=p Nodes=t State=UP\n"); err != nil {
		t.Fatal(err)
	}
	// The munge key as hwprobe slurm join writes it: the munge user's, 0400.
	u, err := user.Lookup("munge")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	key := filepath.Join(t.TempDir(), "munge.key")
	if err := os.WriteFile(key, c.MungeKey, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(key, uid, gid); err != nil {
		t.Fatal(err)
	}
	join := func(name string) {
		t.Helper()
		err := c.JoinNode(ctx, acctest.SlurmJoin{
			InstanceID:   "i-" + name,
			NodeName:     name,
			SlurmdArgs:   []string{"-Z", "--conf-server", c.Controller, "-N", name, "--conf", "Feature=t"},
			MungeKeyFile: key,
			Hwprobe:      hwprobe,
			Profile:      "/nonexistent/profile.hcl", // no HealthCheckProgram configured
			BootReport:   "/nonexistent/report.json",
		})
		if err != nil {
			t.Fatal(err)
		}
		c.WaitNode(name, 30*time.Second, "idle", slurmtest.InService)
	}
	leave := func(node string, extra ...string) (string, int, time.Duration) {
		t.Helper()
		t0 := time.Now()
		cmd := exec.CommandContext(ctx, hwprobe, append([]string{"slurm", "leave", "--node", node, "--slurm-conf", c.Conf}, extra...)...)
		out, err := cmd.CombinedOutput()
		d := time.Since(t0)
		var exit *exec.ExitError
		switch {
		case err == nil:
			return string(out), 0, d
		case errors.As(err, &exit):
			return string(out), exit.ExitCode(), d
		}
		t.Fatalf("hwprobe slurm leave: %v\n%s", err, out)
		return "", 0, 0
	}
	listed := func(name string) bool {
		t.Helper()
		ns, err := c.Nodes()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range ns {
			if n.Name == name {
				return true
			}
		}
		return false
	}

	join("t-0")
	join("t-1")

	t.Run("an idle node is drained and deleted", func(t *testing.T) {
		out, rc, d := leave("t-0")
		t.Logf("leave t-0: exit %d in %s:\n%s", rc, d.Round(time.Millisecond), out)
		if rc != 0 || !strings.Contains(out, "drained and deleted: left Slurm") || !strings.Contains(out, `"hwprobe: leaving: instance shutting down"`) {
			t.Errorf("exit %d", rc)
		}
		if listed("t-0") {
			t.Error("scontrol show nodes still lists t-0")
		}
		if _, err := c.ShowNode("t-0"); err == nil || !strings.Contains(err.Error(), "Node t-0 not found") {
			t.Errorf("show node t-0: %v", err)
		}
	})
	t.Run("a node not in Slurm is left alone", func(t *testing.T) {
		out, rc, _ := leave("t-0")
		if rc != 0 || !strings.Contains(out, "not in Slurm: nothing to do") {
			t.Errorf("exit %d:\n%s", rc, out)
		}
	})
	t.Run("a node with a running job is set down", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, sbatchPath(), "--parsable", "-p", "p", "-w", "t-1", "-o", "/dev/null", "--wrap", "sleep 120")
		cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch: %v: %s", err, b)
		}
		job := strings.TrimSpace(string(b))
		c.WaitNode("t-1", 30*time.Second, "running the job", func(n slurm.Node) bool {
			return n.State.Base == "ALLOCATED" || n.State.Base == "MIXED"
		})
		out, rc, d := leave("t-1", "--reason", "test shutdown")
		t.Logf("leave t-1 (job %s running): exit %d in %s:\n%s", job, rc, d.Round(time.Millisecond), out)
		if rc != 1 || !strings.Contains(out, "jobs still run on it") || !strings.Contains(out, "marked down") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("exit %d, want 1 and one line saying the node was marked down", rc)
		}
		n, err := c.ShowNode("t-1")
		if err != nil || !n.State.Down() || n.Reason != "hwprobe: leaving: test shutdown" {
			t.Errorf("t-1: %s %q %v, want down with hwprobe's reason", n.State, n.Reason, err)
		}
	})
	t.Run("a dry run changes nothing", func(t *testing.T) {
		join("t-2")
		out, rc, _ := leave("t-2", "--dry-run")
		if rc != 0 || !strings.Contains(out, "dry run: would drain it") {
			t.Errorf("exit %d:\n%s", rc, out)
		}
		if n, err := c.ShowNode("t-2"); err != nil || !slurmtest.InService(n) {
			t.Errorf("t-2: %s %q %v", n.State, n.Reason, err)
		}
	})
	t.Run("a node whose slurmd stopped first is deleted", func(t *testing.T) {
		c.StopNode("t-2")
		out, rc, _ := leave("t-2")
		if rc != 0 || !strings.Contains(out, "drained and deleted: left Slurm") {
			t.Errorf("exit %d:\n%s", rc, out)
		}
		if listed("t-2") {
			t.Error("scontrol show nodes still lists t-2")
		}
	})
	t.Logf("Slurm leave test: %s", time.Since(start).Round(100*time.Millisecond))
}

func sbatchPath() string {
	if p, err := exec.LookPath("sbatch"); err == nil {
		return p
	}
	return "/usr/bin/sbatch"
}
