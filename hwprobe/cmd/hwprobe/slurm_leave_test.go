package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

func runLeave(t *testing.T, args ...string) joinResult {
	t.Helper()
	return runLeaveIn(t, nil, args...)
}

// runLeaveIn runs the command in an app that sees only the files exists
// says exist (nil: the real file system).
func runLeaveIn(t *testing.T, exists func(string) bool, args ...string) joinResult {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb, os.Getenv)
	a.exists = exists
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run(ctx, append([]string{"slurm", "leave"}, args...), a)
	return joinResult{code: exitStatus(err, &errb), stdout: out.String(), stderr: errb.String()}
}

// scontrolStandIn writes a stand-in for scontrol into dir: it records each
// call with the configuration it was given, answers `show node` from the
// file dir/node (none: "Node NAME not found"), and refuses `delete` as
// slurmctld refuses a node with jobs when dir/busy exists. The real
// scontrol against real daemons is in acctest/slurmtest's TestSlurmLeave.
func scontrolStandIn(t *testing.T, dir string) (prog, calls string) {
	t.Helper()
	calls = filepath.Join(dir, "calls")
	prog = filepath.Join(dir, "scontrol")
	script := `#!/bin/sh
d=` + dir + `
echo "$* [SLURM_CONF=$SLURM_CONF SLURM_CONF_SERVER=$SLURM_CONF_SERVER]" >> "$d/calls"
case "$1" in
show)
  if [ -e "$d/node" ]; then cat "$d/node"; else echo "Node $3 not found" >&2; exit 1; fi ;;
delete)
  if [ -e "$d/busy" ]; then echo "scontrol: error: failed to delete nodes t-1" >&2; echo "delete_node $2: Requested nodes are busy" >&2; exit 1; fi ;;
esac
`
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, calls
}

const leaveNode = `NodeName=%s Arch=x86_64 CoresPerSocket=1
   State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
`

// TestSlurmLeaveCommand: the node's name and Slurm configuration, the
// calls, what is printed and the exit codes, with a scontrol stand-in.
func TestSlurmLeaveCommand(t *testing.T) {
	reason := "reason=hwprobe: leaving: instance shutting down"
	for _, tt := range []struct {
		name      string
		node      string // scontrol show node's answer; "" not found
		busy      bool
		md        map[string]string // instance metadata; nil: none
		args      []string
		code      int
		out       string // stdout when code is 0, else stderr
		calls     []string
		noJoinCfg bool
	}{
		{name: "idle node, named by --node", node: "IDLE+DYNAMIC_NORM", args: []string{"--node", "train-9", "--slurm-conf", "/etc/slurm/test.conf"}, code: exitOK,
			out:   `slurm leave: node train-9, config /etc/slurm/test.conf (--slurm-conf): IDLE+DYNAMIC_NORM: drained and deleted: left Slurm (reason "hwprobe: leaving: instance shutting down")` + "\n",
			calls: []string{"show node train-9", "update nodename=train-9 state=drain " + reason, "delete nodename=train-9"}},
		{name: "named from the join configuration and the instance metadata", node: "IDLE+DYNAMIC_NORM", md: gpuNodeMetadata(), args: []string{"--slurm-conf", "/etc/slurm/test.conf", "--reason", "spot interruption"}, code: exitOK,
			out:   `slurm leave: node train-9, config /etc/slurm/test.conf (--slurm-conf): IDLE+DYNAMIC_NORM: drained and deleted: left Slurm (reason "hwprobe: leaving: spot interruption")` + "\n",
			calls: []string{"show node train-9", "update nodename=train-9 state=drain reason=hwprobe: leaving: spot interruption", "delete nodename=train-9"}},
		{name: "not in Slurm", args: []string{"--node", "train-9", "--slurm-conf", "/etc/slurm/test.conf"}, code: exitOK,
			out: "slurm leave: node train-9, config /etc/slurm/test.conf (--slurm-conf): not in Slurm: nothing to do\n", calls: []string{"show node train-9"}},
		{name: "jobs still run: set down, exit 1", node: "MIXED+DYNAMIC_NORM", busy: true, args: []string{"--node", "t-1", "--slurm-conf", "/etc/slurm/test.conf"}, code: exitFailed,
			out:   `hwprobe: slurm leave: node t-1, config /etc/slurm/test.conf (--slurm-conf): MIXED+DYNAMIC_NORM: drained; not deleted (jobs still run on it: scontrol delete nodename=t-1: exit status 1: scontrol: error: failed to delete nodes t-1 delete_node nodename=t-1: Requested nodes are busy): marked down (reason "hwprobe: leaving: instance shutting down")` + "\n",
			calls: []string{"show node t-1", "update nodename=t-1 state=drain " + reason, "delete nodename=t-1", "update nodename=t-1 state=down " + reason}},
		{name: "dry run", node: "IDLE+DYNAMIC_NORM", args: []string{"--node", "train-9", "--slurm-conf", "/etc/slurm/test.conf", "--dry-run"}, code: exitOK,
			out:   `slurm leave: node train-9, config /etc/slurm/test.conf (--slurm-conf): IDLE+DYNAMIC_NORM: dry run: would drain it (reason "hwprobe: leaving: instance shutting down"), then delete it, or set it down when the controller refuses` + "\n",
			calls: []string{"show node train-9"}},
		{name: "no instance metadata", md: nil, args: []string{"--slurm-conf", "/etc/slurm/test.conf"}, code: exitCannotRun,
			out: "hwprobe: slurm leave: instance metadata instance-id:"},
		{name: "no join configuration", noJoinCfg: true, args: []string{"--slurm-conf", "/etc/slurm/test.conf"}, code: exitCannotRun,
			out: "hwprobe: slurm leave: node name (no --node): read open "},
		{name: "scontrol fails", node: "garbage", args: []string{"--node", "train-9", "--slurm-conf", "/etc/slurm/test.conf"}, code: exitCannotRun,
			out: "hwprobe: slurm leave: node train-9, config /etc/slurm/test.conf (--slurm-conf): scontrol show node: no NodeName in the output\n", calls: []string{"show node train-9"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			prog, calls := scontrolStandIn(t, dir)
			if tt.node != "" {
				name := "train-9"
				for i, a := range tt.args {
					if a == "--node" {
						name = tt.args[i+1]
					}
				}
				answer := strings.ReplaceAll(strings.ReplaceAll(leaveNode, "NodeName=%s", "NodeName="+name), "State=%s", "State="+tt.node)
				if tt.node == "garbage" {
					answer = "nothing\n"
				}
				if err := os.WriteFile(filepath.Join(dir, "node"), []byte(answer), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.busy {
				if err := os.WriteFile(filepath.Join(dir, "busy"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.md != nil {
				startJoinIMDS(t, tt.md)
			} else {
				t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:1")
			}
			cfg := filepath.Join(dir, "none.json")
			if !tt.noJoinCfg {
				cfg = joinConfig(t, t.TempDir(), nil)
			}
			r := runLeave(t, append([]string{"--config", cfg, "--scontrol", prog}, tt.args...)...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d: %s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			got := r.stdout
			if tt.code != exitOK {
				got = r.stderr
				if strings.Count(strings.TrimSpace(got), "\n") != 0 {
					t.Errorf("stderr is not one line: %q", got)
				}
			}
			if !strings.HasPrefix(got, tt.out) {
				t.Errorf("got\n%s\nwant\n%s", got, tt.out)
			}
			b, _ := os.ReadFile(calls)
			var want strings.Builder
			for _, c := range tt.calls {
				want.WriteString(c + " [SLURM_CONF=/etc/slurm/test.conf SLURM_CONF_SERVER=]\n")
			}
			if string(b) != want.String() {
				t.Errorf("scontrol calls:\n%s\nwant\n%s", b, want.String())
			}
		})
	}

	t.Run("the join configuration's controllers", func(t *testing.T) {
		dir := t.TempDir()
		prog, calls := scontrolStandIn(t, dir)
		// No configless cache, whatever this host has.
		noCache := func(f string) bool {
			if f == slurm.RunConfFile || f == slurm.DefaultSpoolConfFile {
				return false
			}
			_, err := os.Stat(f)
			return err == nil
		}
		r := runLeaveIn(t, noCache, "--config", joinConfig(t, dir, nil), "--scontrol", prog, "--node", "train-9")
		if want := "slurm leave: node train-9, config ctl-a,10.0.0.3:6817 (the join configuration's controllers): not in Slurm: nothing to do\n"; r.code != 0 || r.stdout != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
		}
		if b, _ := os.ReadFile(calls); string(b) != "show node train-9 [SLURM_CONF= SLURM_CONF_SERVER=ctl-a,10.0.0.3:6817]\n" {
			t.Errorf("scontrol calls:\n%s", b)
		}
	})
	t.Run("no scontrol", func(t *testing.T) {
		r := runLeave(t, "--node", "n", "--slurm-conf", "/etc/slurm/test.conf", "--scontrol", filepath.Join(t.TempDir(), "scontrol"))
		if r.code != exitCannotRun || !strings.HasPrefix(r.stderr, "hwprobe: slurm leave: scontrol not found at ") {
			t.Errorf("exit %d: %s", r.code, r.stderr)
		}
	})
	t.Run("a controller that does not answer", func(t *testing.T) {
		dir := t.TempDir()
		prog := filepath.Join(dir, "scontrol")
		if err := os.WriteFile(prog, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := runLeave(t, "--node", "n", "--slurm-conf", "/etc/slurm/test.conf", "--scontrol", prog, "--timeout", "500ms")
		if r.code != exitCannotRun || !strings.Contains(r.stderr, "scontrol show node n: no answer within") || time.Since(start) > 5*time.Second {
			t.Errorf("exit %d after %s: %s", r.code, time.Since(start), r.stderr)
		}
	})
}

func TestSlurmLeaveHelp(t *testing.T) {
	r := runLeave(t, "--help")
	for _, want := range []string{"hwprobe: leaving: REASON", "scontrol delete", "--slurm-conf", "--dry-run", slurm.LeaveUnitName, "Exit codes: 0 the node left Slurm", "Example:\n  hwprobe slurm leave --config /etc/mlplatform/slurm/join.json"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("slurm leave --help: exit %d, lacks %q", r.code, want)
		}
	}
	var out, errb bytes.Buffer
	_ = run(context.Background(), []string{"slurm", "--help"}, newApp(&out, &errb, os.Getenv))
	if !strings.Contains(out.String(), "  leave ") {
		t.Errorf("slurm --help does not list leave:\n%s", out.String())
	}
	out.Reset()
	_ = run(context.Background(), []string{"help"}, newApp(&out, &errb, os.Getenv))
	if !strings.Contains(out.String(), "(slurm leave)") {
		t.Errorf("help does not list slurm leave:\n%s", out.String())
	}
}
