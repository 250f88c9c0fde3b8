package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A requested leave drains the node, waits while its jobs run, then stops
// slurmd and deletes the node; each step can run again.
func TestRequestedLeave(t *testing.T) {
	const reason = "hwprobe: leaving: requested by mlplatform (scale-in or replacement)"
	node := func(state, why string) *Node { return &Node{Name: "t-3", State: ParseState(state), Reason: why} }
	busy := scontrolErr("delete nodename=t-3", "Requested nodes are busy")
	gone := scontrolErr("delete nodename=t-3", "Invalid node name specified")
	unreachable := scontrolErr("delete nodename=t-3", "Unable to contact slurm controller (connect failure)")
	stopErr := errors.New("systemctl: exit status 5")
	tests := []struct {
		name    string
		f       fakeLeave
		stop    error
		result  LeaveResult
		done    bool
		stopped bool
		calls   []string
		wantErr string
	}{
		{"not in Slurm", fakeLeave{}, nil, NotInSlurm, true, false, []string{"show t-3"}, ""},
		{"idle: drained, stopped, deleted", fakeLeave{node: node("IDLE", "")}, nil, Left, true, true,
			[]string{"show t-3", "drain t-3 " + reason, "show t-3", "delete t-3"}, ""},
		{"jobs running: drained, waiting", fakeLeave{node: node("MIXED", "")}, nil, "", false, false,
			[]string{"show t-3", "drain t-3 " + reason, "show t-3"}, ""},
		{"still draining on the next step: not drained again", fakeLeave{node: node("ALLOCATED+DRAIN", reason)}, nil, "", false, false,
			[]string{"show t-3"}, ""},
		{"completing", fakeLeave{node: node("IDLE+COMPLETING+DRAIN", reason)}, nil, "", false, false, []string{"show t-3"}, ""},
		{"an administrator's drain is replaced by the leave's", fakeLeave{node: node("IDLE+DRAIN", "maintenance")}, nil, Left, true, true,
			[]string{"show t-3", "drain t-3 " + reason, "show t-3", "delete t-3"}, ""},
		{"drained and idle: stopped, deleted", fakeLeave{node: node("IDLE+DRAIN", reason)}, nil, Left, true, true,
			[]string{"show t-3", "delete t-3"}, ""},
		{"deleted meanwhile", fakeLeave{node: node("IDLE+DRAIN", reason), del: gone}, nil, Left, true, true, []string{"show t-3", "delete t-3"}, ""},
		{"delete refused after the stop: down", fakeLeave{node: node("IDLE+DRAIN", reason), del: busy}, nil, MarkedDown, true, true,
			[]string{"show t-3", "delete t-3", "down t-3 " + reason}, ""},
		{"controller unreachable at the delete", fakeLeave{node: node("IDLE+DRAIN", reason), del: unreachable}, nil, "", false, true,
			[]string{"show t-3", "delete t-3"}, "Unable to contact"},
		{"slurmd does not stop: not deleted", fakeLeave{node: node("IDLE+DRAIN", reason)}, stopErr, "", false, true,
			[]string{"show t-3"}, "stopping slurmd"},
		{"controller unreachable", fakeLeave{show: unreachable}, nil, "", false, false, []string{"show t-3"}, "Unable to contact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stopped := false
			out, done, err := RequestedLeave(context.Background(), &tt.f, "t-3", reason, func(context.Context) error { stopped = true; return tt.stop })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if out.Result != tt.result || done != tt.done || stopped != tt.stopped || !reflect.DeepEqual(tt.f.calls, tt.calls) {
				t.Errorf("result %q done %v stopped %v calls %q; want %q %v %v %q", out.Result, done, stopped, tt.f.calls, tt.result, tt.done, tt.stopped, tt.calls)
			}
		})
	}
	if _, _, err := RequestedLeave(context.Background(), &fakeLeave{}, "t-3", "not ours", nil); err == nil {
		t.Error("a reason without the hwprobe prefix was accepted")
	}
}

func TestLeaveRequestAndMarker(t *testing.T) {
	for _, ok := range []string{"0123abcd", "a", strings.Repeat("f", 64), "req-1"} {
		if _, err := ParseLeaveRequest(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("f", 65), "ABC", "a b", "a/b"} {
		if _, err := ParseLeaveRequest(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := LeftMarkerKey("reports/train-a/", "i-0abc"); got != "reports/train-a/slurm-left/i-0abc.json" {
		t.Errorf("key %q", got)
	}
	m := LeftMarker{Node: "train-a-3", InstanceID: "i-0abc", Request: "0123", Result: Left, LeftAt: time.Date(2026, 11, 27, 14, 0, 0, 0, time.UTC)}
	b, _ := json.Marshal(m)
	if got, err := ParseLeftMarker(b); err != nil || got != m {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{`{}`, `{"instance_id":"i-1","request":"r","result":"waiting"}`, `[`, `{"instance_id":"i-1","result":"left"}`} {
		if _, err := ParseLeftMarker([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// FuzzParseLeftMarker: a marker either parses with an instance, a request
// and a result that means out of Slurm, or is refused.
func FuzzParseLeftMarker(f *testing.F) {
	f.Add(`{"node":"n-1","instance_id":"i-1","request":"ab","result":"left","left_at":"2026-11-27T14:00:00Z"}`)
	f.Add(`{"instance_id":"i-1","request":"ab","result":"marked down"}`)
	f.Add(`{"result":"left"}`)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseLeftMarker([]byte(s))
		if err != nil {
			return
		}
		if m.InstanceID == "" || m.Request == "" || (m.Result != Left && m.Result != NotInSlurm && m.Result != MarkedDown) {
			t.Fatalf("accepted %+v", m)
		}
	})
}

// FuzzParseLeaveRequest: an accepted request id is 1 to 64 of [0-9a-z-].
func FuzzParseLeaveRequest(f *testing.F) {
	for _, s := range []string{"0123abcd", "", "A", "req-1 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseLeaveRequest(s)
		if err != nil {
			return
		}
		if id == "" || len(id) > 64 || strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyz-") != "" {
			t.Fatalf("accepted %q", id)
		}
	})
}

// FuzzParseJoinedMarker: a joined marker either names an instance or is
// refused.
func FuzzParseJoinedMarker(f *testing.F) {
	f.Add(`{"node":"n-1","instance_id":"i-1","joined_at":"2026-11-27T14:00:00Z"}`)
	f.Add(`{"node":"n-1"}`)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseJoinedMarker([]byte(s))
		if err == nil && m.InstanceID == "" {
			t.Fatalf("accepted %+v", m)
		}
	})
}
