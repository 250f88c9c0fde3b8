package slurm

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	const fail = "hwprobe: gpu.count: found 1 GPUs, profile expects 2"
	node := func(state, reason string) *Node { return &Node{Name: "n1", State: ParseState(state), Reason: reason} }
	tests := []struct {
		name   string
		n      *Node
		reason string
		want   Action
	}{
		{"healthy idle", node("IDLE", ""), "", Nothing},
		{"healthy, our drain", node("IDLE+DRAIN", "hwprobe: gpu.xid"), "", Resume},
		{"healthy, our drain, draining with jobs", node("MIXED+DRAIN", "hwprobe: gpu.xid"), "", Resume},
		{"healthy, our drain before registration", node("UNKNOWN+DRAIN", "hwprobe: gpu.xid"), "", Resume},
		{"healthy, our drain, down since it stopped answering", node("DOWN+DRAIN+NOT_RESPONDING", "hwprobe: gpu.xid"), "", Resume},
		{"healthy, administrator's drain", node("IDLE+DRAIN", "maintenance"), "", Nothing},
		{"healthy, drain without a reason", node("IDLE+DRAIN", ""), "", Nothing},
		{"healthy, reason that only mentions hwprobe", node("IDLE+DRAIN", "replace hwprobe: later"), "", Nothing},
		{"healthy, down for another reason", node("DOWN", "hardware swap"), "", Nothing},
		{"healthy, down not responding", node("DOWN+NOT_RESPONDING", "Not responding"), "", Nothing},
		{"healthy, unknown to the controller", nil, "", Nothing},
		{"failed, idle", node("IDLE", ""), fail, Drain},
		{"failed, allocated", node("ALLOCATED", ""), fail, Drain},
		{"failed, before registration", node("UNKNOWN", ""), fail, Drain},
		{"failed, down not responding", node("DOWN*", "Not responding"), fail, Drain},
		{"failed, down without a reason", node("DOWN", ""), fail, Drain},
		{"failed, drained by us for the same reason", node("IDLE+DRAIN", fail), fail, Nothing},
		{"failed, drained by us for another check", node("IDLE+DRAIN", "hwprobe: gpu.xid"), fail, Drain},
		{"failed, administrator's drain", node("IDLE+DRAIN", "maintenance"), fail, Nothing},
		{"failed, down for another reason", node("DOWN", "hardware swap"), fail, Nothing},
		{"failed, unknown to the controller", nil, fail, Nothing},
		{"healthy, drained for leaving on request, jobs running", node("MIXED+DRAIN", "hwprobe: leaving: requested by mlplatform (scale-in)"), "", Nothing},
		{"healthy, drained for leaving at shutdown", node("IDLE+DRAIN", "hwprobe: leaving: instance shutting down"), "", Nothing},
		{"failed, drained for leaving", node("IDLE+DRAIN", "hwprobe: leaving: requested by mlplatform"), fail, Nothing},
		{"failed, set down for leaving", node("DOWN", "hwprobe: leaving: instance shutting down"), fail, Nothing},
		{"healthy, our drain of a check named leaving-like", node("IDLE+DRAIN", "hwprobe: leavingx"), "", Resume},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.n, tt.reason)
			if d.Action != tt.want {
				t.Fatalf("action %s (%s), want %s", d.Action, d.Why, tt.want)
			}
			if d.Action == Drain && d.Reason != tt.reason {
				t.Errorf("reason %q, want %q", d.Reason, tt.reason)
			}
			if d.Why == "" {
				t.Error("no explanation")
			}
		})
	}
}

func TestReason(t *testing.T) {
	if got := Reason("gpu.count", "found 1 GPUs,\n profile expects 2"); got != "hwprobe: gpu.count: found 1 GPUs, profile expects 2" {
		t.Errorf("got %q", got)
	}
	if got := Reason("gpu.xid", ""); got != "hwprobe: gpu.xid" {
		t.Errorf("got %q", got)
	}
	long := Reason("gpu.nvlink gpu3", strings.Repeat("é", 300))
	if len(long) > MaxReasonLen || !strings.HasSuffix(long, "...") || !strings.HasPrefix(long, "hwprobe: gpu.nvlink gpu3: é") {
		t.Errorf("long reason %d bytes: %q", len(long), long)
	}
	if !strings.HasPrefix(long, ReasonPrefix) || !Ours(long) {
		t.Error("not ours")
	}
}

func TestDecideFirst(t *testing.T) {
	own := &Node{Name: "n", State: ParseState("IDLE+DRAIN+DYNAMIC_NORM")}
	admin := &Node{Name: "n", State: ParseState("IDLE+DRAIN"), Reason: "maintenance"}
	idle := &Node{Name: "n", State: ParseState("IDLE+DYNAMIC_NORM")}
	for _, tc := range []struct {
		name   string
		n      *Node
		reason string
		want   Action
	}{
		{"registered drained, passed: resumed", own, "", Resume},
		{"registered drained, failed: drained with the reason", own, "hwprobe: gpu.count: x", Drain},
		{"an administrator's drain stays", admin, "", Nothing},
		{"an administrator's drain keeps its reason", admin, "hwprobe: gpu.count: x", Nothing},
		{"idle and passing", idle, "", Nothing},
		{"not registered", nil, "hwprobe: gpu.count: x", Nothing},
	} {
		d := DecideFirst(tc.n, tc.reason)
		if d.Action != tc.want || d.Action == Drain && d.Reason != tc.reason {
			t.Errorf("%s: %+v, want %s", tc.name, d, tc.want)
		}
	}
	// Outside the first check, a reasonless drain is not hwprobe's.
	if d := Decide(own, ""); d.Action != Nothing {
		t.Errorf("Decide resumed a reasonless drain: %+v", d)
	}
}
