package slurm

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// fakeLeave answers Leave's calls from a script and records them.
type fakeLeave struct {
	node                 *Node // nil: not found
	show, drain, del, dn error
	calls                []string
}

func (f *fakeLeave) ShowNode(_ context.Context, name string) (Node, error) {
	f.calls = append(f.calls, "show "+name)
	if f.show != nil {
		return Node{}, f.show
	}
	if f.node == nil {
		return Node{}, fmt.Errorf("%s: %w", name, ErrNodeNotFound)
	}
	return *f.node, nil
}

func (f *fakeLeave) Drain(_ context.Context, name, reason string) error {
	f.calls = append(f.calls, "drain "+name+" "+reason)
	return f.drain
}

func (f *fakeLeave) Delete(_ context.Context, name string) error {
	f.calls = append(f.calls, "delete "+name)
	return f.del
}

func (f *fakeLeave) Down(_ context.Context, name, reason string) error {
	f.calls = append(f.calls, "down "+name+" "+reason)
	return f.dn
}

// scontrolErr is how Scontrol reports scontrol's failures.
func scontrolErr(args, msg string) error {
	return fmt.Errorf("scontrol %s: exit status 1: %s", args, msg)
}

func TestLeave(t *testing.T) {
	const reason = "hwprobe: leaving: instance shutting down"
	node := func(state, why string) *Node { return &Node{Name: "t-0", State: ParseState(state), Reason: why} }
	busy := scontrolErr("delete nodename=t-0", "scontrol: error: failed to delete nodes t-0 delete_node nodename=t-0: Requested nodes are busy")
	unreachable := scontrolErr("delete nodename=t-0", "slurm_delete_node error: Unable to contact slurm controller (connect failure)")
	tests := []struct {
		name    string
		f       fakeLeave
		result  LeaveResult
		why     string // in Why, or in the error
		wantErr bool
		calls   []string
	}{
		{name: "not in Slurm", f: fakeLeave{}, result: NotInSlurm, why: "does not know",
			calls: []string{"show t-0"}},
		{name: "idle", f: fakeLeave{node: node("IDLE+DYNAMIC_NORM", "")}, result: Left, why: "drained and deleted",
			calls: []string{"show t-0", "drain t-0 " + reason, "delete t-0"}},
		{name: "drained by an administrator: the instance goes anyway", f: fakeLeave{node: node("IDLE+DRAIN+DYNAMIC_NORM", "maintenance")}, result: Left, why: "drained and deleted",
			calls: []string{"show t-0", "drain t-0 " + reason, "delete t-0"}},
		{name: "down, not responding", f: fakeLeave{node: node("DOWN+NOT_RESPONDING+DYNAMIC_NORM", "Not responding")}, result: Left, why: "drained and deleted",
			calls: []string{"show t-0", "drain t-0 " + reason, "delete t-0"}},
		{name: "a second run: drained already by the leave", f: fakeLeave{node: node("IDLE+DRAIN+DYNAMIC_NORM", reason)}, result: Left, why: "drained already and deleted",
			calls: []string{"show t-0", "delete t-0"}},
		{name: "jobs still run: marked down", f: fakeLeave{node: node("MIXED+DYNAMIC_NORM", ""), del: busy}, result: MarkedDown, why: "drained; not deleted (jobs still run on it: " + busy.Error() + "): marked down",
			calls: []string{"show t-0", "drain t-0 " + reason, "delete t-0", "down t-0 " + reason}},
		{name: "not a dynamic node: marked down", f: fakeLeave{node: node("IDLE", ""), del: scontrolErr("delete nodename=t-0", "Invalid node state specified")}, result: MarkedDown, why: "not deleted (the controller refused: ",
			calls: []string{"show t-0", "drain t-0 " + reason, "delete t-0", "down t-0 " + reason}},
		{name: "deleted meanwhile", f: fakeLeave{node: node("IDLE+DYNAMIC_NORM", ""), del: scontrolErr("delete nodename=t-0", "delete_node nodename=t-0: Invalid node name specified")}, result: Left, why: "deleted meanwhile",
			calls: []string{"show t-0", "drain t-0 " + reason, "delete t-0"}},
		{name: "controller unreachable", f: fakeLeave{show: scontrolErr("show node t-0", "slurm_load_node error: Unable to contact slurm controller (connect failure)")}, wantErr: true, why: "Unable to contact",
			calls: []string{"show t-0"}},
		{name: "drain refused", f: fakeLeave{node: node("IDLE+DYNAMIC_NORM", ""), drain: scontrolErr("update", "Invalid node state specified")}, wantErr: true, why: "drain: scontrol update",
			calls: []string{"show t-0", "drain t-0 " + reason}},
		{name: "controller gone before the delete", f: fakeLeave{node: node("IDLE+DYNAMIC_NORM", ""), del: unreachable}, wantErr: true, why: "drained; delete: ",
			calls: []string{"show t-0", "drain t-0 " + reason, "delete t-0"}},
		{name: "delete timed out", f: fakeLeave{node: node("IDLE+DYNAMIC_NORM", ""), del: errors.New("scontrol delete nodename=t-0: no answer within 10s")}, wantErr: true, why: "no answer within",
			calls: []string{"show t-0", "drain t-0 " + reason, "delete t-0"}},
		{name: "down refused too", f: fakeLeave{node: node("MIXED+DYNAMIC_NORM", ""), del: busy, dn: unreachable}, wantErr: true, why: "not deleted (jobs still run on it: ",
			calls: []string{"show t-0", "drain t-0 " + reason, "delete t-0", "down t-0 " + reason}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Leave(context.Background(), &tt.f, "t-0", reason)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v, want error %v", err, tt.wantErr)
			}
			got := out.Why
			if err != nil {
				got = err.Error()
			} else if out.Result != tt.result {
				t.Errorf("result %q, want %q", out.Result, tt.result)
			}
			if !strings.Contains(got, tt.why) || strings.Contains(got, "\n") {
				t.Errorf("%q: want one line with %q", got, tt.why)
			}
			if !reflect.DeepEqual(tt.f.calls, tt.calls) {
				t.Errorf("calls\n%q\nwant\n%q", tt.f.calls, tt.calls)
			}
			if tt.f.node != nil && out.State != tt.f.node.State.String() {
				t.Errorf("state %q", out.State)
			}
		})
	}
	if _, err := Leave(context.Background(), &fakeLeave{}, "t-0", "maintenance"); err == nil {
		t.Error("a reason without hwprobe's prefix was taken")
	}
}

func TestLeaveReason(t *testing.T) {
	for in, want := range map[string]string{
		"":                       "hwprobe: leaving: instance shutting down",
		"  ":                     "hwprobe: leaving: instance shutting down",
		"spot\ninterruption  ":   "hwprobe: leaving: spot interruption",
		strings.Repeat("x", 300): "hwprobe: leaving: " + strings.Repeat("x", MaxReasonLen-len("hwprobe: leaving: ...")) + "...",
	} {
		if got := LeaveReason(in); got != want || !Ours(got) {
			t.Errorf("LeaveReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLeaveConfig(t *testing.T) {
	none := func(string) bool { return false }
	only := func(f string) func(string) bool { return func(p string) bool { return p == f } }
	ctl := func() ([]string, error) { return []string{"ctl-a", "10.0.0.3:6817"}, nil }
	noJoin := func() ([]string, error) {
		return nil, errors.New("read open /etc/mlplatform/slurm/join.json: no such file or directory")
	}
	called := false
	mustNot := func() ([]string, error) { called = true; return nil, nil }
	for _, tt := range []struct {
		name   string
		flag   string
		exists func(string) bool
		ctl    func() ([]string, error)
		want   Config
		err    string
	}{
		{"flag", "/etc/slurm/test.conf", only(RunConfFile), mustNot, Config{File: "/etc/slurm/test.conf", Source: "--slurm-conf"}, ""},
		{"configless cache under /run", "", func(string) bool { return true }, mustNot, Config{File: RunConfFile, Source: "slurmd's configless cache"}, ""},
		{"configless cache in the spool", "", only(DefaultSpoolConfFile), mustNot, Config{File: DefaultSpoolConfFile, Source: "slurmd's configless cache"}, ""},
		{"the join configuration's controllers", "", none, ctl, Config{Server: "ctl-a,10.0.0.3:6817", Source: "the join configuration's controllers"}, ""},
		{"no join configuration", "", none, noJoin, Config{}, "no Slurm configuration (no --slurm-conf, no configless cache at /run/slurm/conf/slurm.conf or /var/spool/slurmd/conf-cache/slurm.conf) and read open /etc/mlplatform/slurm/join.json: no such file or directory"},
		{"no controllers", "", none, func() ([]string, error) { return nil, nil }, Config{}, "no controllers in the join configuration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			called = false
			got, err := LeaveConfig(tt.flag, tt.exists, tt.ctl)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if called {
				t.Error("read the join configuration when it was not needed")
			}
		})
	}
}

func TestClassifyDelete(t *testing.T) {
	for msg, want := range map[string]DeleteRefusal{
		"scontrol delete nodename=t-1: exit status 1: scontrol: error: failed to delete nodes t-1 delete_node nodename=t-1: Requested nodes are busy":    Busy,
		"scontrol delete nodename=t-2: exit status 1: scontrol: error: failed to delete nodes t-2 delete_node nodename=t-2: Invalid node name specified": Gone,
		"scontrol delete nodename=t-2: exit status 1: slurm_delete_node error: Unable to contact slurm controller (connect failure)":                     NoAnswer,
		"scontrol delete nodename=t-2: no answer within 10s": NoAnswer,
		"scontrol delete nodename=n1: exit status 1: scontrol: error: failed to delete nodes n1 delete_node nodename=n1: Invalid node state specified": Refused,
	} {
		if got := ClassifyDelete(errors.New(msg)); got != want {
			t.Errorf("%s: %d, want %d", msg, got, want)
		}
	}
	if ClassifyDelete(fmt.Errorf("x: %w", context.DeadlineExceeded)) != NoAnswer {
		t.Error("deadline")
	}
}

func TestLeaveUnit(t *testing.T) {
	got, err := LeaveUnit("/usr/local/bin/hwprobe", "/etc/mlplatform/slurm/join.json")
	if err != nil {
		t.Fatal(err)
	}
	want := `# Written by hwprobe slurm join: the node leaves Slurm (drained, then
# deleted) when the instance shuts down, before slurmd and munge stop.
[Unit]
Description=Leave the Slurm cluster at shutdown (hwprobe slurm leave)
Wants=network-online.target
After=network-online.target munge.service slurmd.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/usr/local/bin/hwprobe slurm leave --config /etc/mlplatform/slurm/join.json
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
`
	if got != want {
		t.Errorf("unit:\n%s\nwant\n%s", got, want)
	}
	if got, _ := LeaveUnit("/opt/ml platform/hwprobe", "/etc/join.json"); !strings.Contains(got, "ExecStop='/opt/ml platform/hwprobe' slurm leave --config /etc/join.json\n") {
		t.Errorf("a path with a space:\n%s", got)
	}
	for _, bad := range [][2]string{{"hwprobe", "/etc/join.json"}, {"/bin/hwprobe", "join.json"}, {"/bin/hw$probe", "/etc/join.json"}, {"/bin/hwprobe", "/etc/join\n.json"}} {
		if _, err := LeaveUnit(bad[0], bad[1]); err == nil {
			t.Errorf("LeaveUnit(%q, %q): no error", bad[0], bad[1])
		}
	}
}
