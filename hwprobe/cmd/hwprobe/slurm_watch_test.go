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

// TestSlurmWatchOnce: one step of a requested leave, with a scontrol
// stand-in, the node's metadata holding the request, and an S3 stand-in:
// no request is exit 2; a node whose jobs run is drained and exit 1, its
// slurmd left running; an idle node is drained, its slurmd stopped, it is
// deleted, and its marker written (exit 0); a node not in Slurm gets its
// marker at once. The real scontrol, against real daemons, is in the
// provider's TestAccGPUCluster_slurmJoin.
func TestSlurmWatchOnce(t *testing.T) {
	const req = "0123456789abcdef"
	drain := "update nodename=train-9 state=drain reason=hwprobe: leaving: " + requestedLeaveReason
	for _, tt := range []struct {
		name    string
		node    string // scontrol show node's State; "" not found
		request bool
		// lifecycle is the instance's Auto Scaling target lifecycle
		// state in its metadata; "" absent (not in a group).
		lifecycle string
		code      int
		out       string
		stopped   bool
		marker    slurm.LeaveResult
		calls     []string
	}{
		{name: "no request", node: "IDLE", code: exitCannotRun, out: "no leave request"},
		{name: "jobs running", node: "MIXED", request: true, code: exitFailed, out: "drained; waiting for its jobs to end",
			calls: []string{"show node train-9", drain, "show node train-9"}},
		{name: "idle", node: "IDLE", request: true, code: exitOK, out: "slurm watch: node train-9, request " + req + ": left", stopped: true, marker: slurm.Left,
			calls: []string{"show node train-9", drain, "show node train-9", "delete nodename=train-9"}},
		{name: "not in Slurm", request: true, code: exitOK, out: "not in Slurm", marker: slurm.NotInSlurm, calls: []string{"show node train-9"}},
		{name: "in service in its group", node: "IDLE", lifecycle: "InService", code: exitCannotRun, out: "no leave request"},
		{name: "auto scaling terminates it, jobs running", node: "MIXED", lifecycle: "Terminated", code: exitFailed, out: "drained; waiting for its jobs to end",
			calls: []string{"show node train-9", drain, "show node train-9"}},
		{name: "auto scaling terminates it, idle", node: "IDLE", lifecycle: "Terminated\n", code: exitOK, out: "request " + slurm.AutoScalingLeaveRequest + ": left", stopped: true, marker: slurm.Left,
			calls: []string{"show node train-9", drain, "show node train-9", "delete nodename=train-9"}},
		{name: "the provider's request first", node: "IDLE", request: true, lifecycle: "Terminated", code: exitOK, out: "request " + req + ": left", stopped: true, marker: slurm.Left,
			calls: []string{"show node train-9", drain, "show node train-9", "delete nodename=train-9"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			prog, calls := scontrolStandIn(t, dir)
			if tt.node != "" {
				answer := strings.ReplaceAll(strings.ReplaceAll(leaveNode, "NodeName=%s", "NodeName=train-9"), "State=%s", "State="+tt.node)
				if err := os.WriteFile(filepath.Join(dir, "node"), []byte(answer), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			md := gpuNodeMetadata()
			if tt.request {
				md["tags/instance/"+slurm.LeaveRequestTag] = req
			}
			if tt.lifecycle != "" {
				md[slurm.TargetLifecycleStatePath] = tt.lifecycle
			}
			startJoinIMDS(t, md)
			prof, _ := serveFiles(t)
			store := newStore()
			var out, errb bytes.Buffer
			a := serveApp(store, nil, &out, &errb)
			stopped := filepath.Join(dir, "stopped")
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := run(ctx, []string{"slurm", "watch", "--once", "--profile", prof, "--config", joinConfig(t, t.TempDir(), nil),
				"--scontrol", prog, "--slurm-conf", "/etc/slurm/test.conf", "--stop-command", "touch " + stopped}, a)
			code := exitStatus(err, &errb)
			if code != tt.code || !strings.Contains(out.String()+errb.String(), tt.out) {
				t.Fatalf("exit %d (want %d), output %q %q: want %q", code, tt.code, out.String(), errb.String(), tt.out)
			}
			if _, err := os.Stat(stopped); (err == nil) != tt.stopped {
				t.Errorf("slurmd stopped: %v, want %v", err == nil, tt.stopped)
			}
			b, _ := os.ReadFile(calls)
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if l != "" {
					got = append(got, strings.TrimSpace(l[:strings.Index(l, " [")]))
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.calls, "|") {
				t.Errorf("scontrol calls %q, want %q", got, tt.calls)
			}
			key := "hw/" + slurm.LeftMarkerDir + "i-0abc.json"
			body, ok := store.bodies[key]
			if tt.marker == "" {
				if ok || len(store.bodies) > 0 {
					t.Errorf("a marker was written: %v", store.keys)
				}
				return
			}
			if !ok {
				t.Fatalf("no marker at %s: %v", key, store.keys)
			}
			m, err := slurm.ParseLeftMarker(body)
			wantReq := req
			if !tt.request {
				wantReq = slurm.AutoScalingLeaveRequest
			}
			if err != nil || m.Result != tt.marker || m.Request != wantReq || m.InstanceID != "i-0abc" || m.Node != "train-9" {
				t.Errorf("marker %+v (%v)", m, err)
			}
		})
	}
}

// The join writes the node's joined marker under the profile's report
// destination, so that a scale-in waits for it; without a profile it
// writes nothing, and a failed write is said, not fatal.
func TestWriteJoinedMarker(t *testing.T) {
	prof, _ := serveFiles(t)
	store := newStore()
	var out, errb bytes.Buffer
	a := serveApp(store, nil, &out, &errb)
	node := slurm.NodeIdentity{InstanceID: "i-0abc", Name: "train-9"}
	a.writeJoinedMarker(context.Background(), filepath.Join(t.TempDir(), "none.hcl"), node)
	if len(store.written()) != 0 {
		t.Fatalf("written without a profile: %v", store.written())
	}
	a.writeJoinedMarker(context.Background(), prof, node)
	a.writeJoinedMarker(context.Background(), prof, node) // again: written once, no complaint
	m, err := slurm.ParseJoinedMarker(store.body("hw/" + slurm.JoinedMarkerDir + "i-0abc.json"))
	if err != nil || m.Node != "train-9" || m.InstanceID != "i-0abc" || errb.Len() != 0 {
		t.Fatalf("marker %+v (%v), stderr %q", m, err, errb.String())
	}
	store.failPuts = 100
	a.writeJoinedMarker(context.Background(), prof, slurm.NodeIdentity{InstanceID: "i-0def", Name: "train-10"})
	if !strings.Contains(errb.String(), "a scale-in will not wait for this node's jobs") {
		t.Errorf("a failed write was not said: %q", errb.String())
	}
}

// The daemon (no --once): it drains the node at the first step, waits
// while the node's jobs run, leaves once it is idle, writes the marker
// once, then does nothing more for that request; a signal stops it (exit
// 0).
func TestSlurmWatchDaemon(t *testing.T) {
	const req = "feedc0de"
	dir := t.TempDir()
	prog, calls := scontrolStandIn(t, dir)
	node := func(state string) {
		answer := strings.ReplaceAll(strings.ReplaceAll(leaveNode, "NodeName=%s", "NodeName=train-9"), "State=%s", "State="+state)
		if err := os.WriteFile(filepath.Join(dir, "node"), []byte(answer), 0o644); err != nil {
			t.Error(err)
		}
	}
	node("MIXED")
	md := gpuNodeMetadata()
	md["tags/instance/"+slurm.LeaveRequestTag] = req
	startJoinIMDS(t, md)
	prof, _ := serveFiles(t)
	store := newStore()
	var out, errb syncBuffer
	a := serveApp(store, nil, &out, &errb)
	stopped := filepath.Join(dir, "stopped")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		err := run(ctx, []string{"slurm", "watch", "--interval", "20ms", "--profile", prof, "--config", joinConfig(t, t.TempDir(), nil),
			"--scontrol", prog, "--slurm-conf", "/etc/slurm/test.conf", "--stop-command", "touch " + stopped}, a)
		done <- exitStatus(err, &errb)
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("never %s; stderr %q", what, errb.String())
			}
		}
	}
	waitFor("waiting for the jobs", func() bool { return strings.Contains(errb.String(), "drained; waiting for its jobs to end") })
	if _, err := os.Stat(stopped); err == nil || len(store.written()) != 0 {
		t.Fatalf("slurmd stopped or a marker written while jobs run: %v", store.written())
	}
	node("IDLE+DRAIN")
	key := "hw/" + slurm.LeftMarkerDir + "i-0abc.json"
	waitFor("leaving", func() bool { return len(store.body(key)) > 0 })
	b, _ := os.ReadFile(calls)
	before := strings.Count(string(b), "\n")
	time.Sleep(200 * time.Millisecond) // ten more intervals: nothing more for this request
	b, _ = os.ReadFile(calls)
	if after := strings.Count(string(b), "\n"); after != before || len(store.written()) != 1 {
		t.Errorf("after leaving: %d scontrol calls became %d, %d objects written", before, after, len(store.written()))
	}
	if m, err := slurm.ParseLeftMarker(store.body(key)); err != nil || m.Result != slurm.Left || m.Request != req {
		t.Errorf("marker %+v (%v)", m, err)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("stopped by a signal: exit %d, want 0", code)
	}
}
