package slurm

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseNode(t *testing.T) {
	tests := []struct {
		file       string
		state      string
		reason     string
		user, when string
		os         string
	}{
		// Captured from Debian's Slurm 22.05.8: a node drained before its
		// slurmd registered, the same node after, and the one-line form.
		{"show-node-unknown-drain.txt", "UNKNOWN+DRAIN", "hwprobe: gpu.count test", "root", "2026-11-27T08:32:55", ""},
		{"show-node-idle-drain.txt", "IDLE+DRAIN", "hwprobe: gpu.count test", "root", "2026-11-27T08:32:55", "Linux 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0"},
		{"show-node-oneliner.txt", "UNKNOWN+DRAIN", "hwprobe: gpu.count test", "root", "2026-11-27T08:32:55", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile("testdata/" + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			n, err := ParseNode(string(b))
			if err != nil {
				t.Fatal(err)
			}
			if n.Name != "n1" || n.State.String() != tt.state || n.Reason != tt.reason || n.ReasonUser != tt.user || n.ReasonTime != tt.when {
				t.Errorf("got name %q state %q reason %q user %q time %q", n.Name, n.State, n.Reason, n.ReasonUser, n.ReasonTime)
			}
			if n.Fields["OS"] != tt.os {
				t.Errorf("OS = %q, want %q", n.Fields["OS"], tt.os)
			}
			if n.Fields["Gres"] != "gpu:2" || n.Fields["NodeAddr"] != "127.0.0.2" || n.Fields["CfgTRES"] != "cpu=1,mem=100M,billing=1" {
				t.Errorf("fields: %v", n.Fields)
			}
			if !n.State.Drained() || !Ours(n.Reason) {
				t.Errorf("drained %v ours %v", n.State.Drained(), Ours(n.Reason))
			}
		})
	}
}

func TestParseNodeReasons(t *testing.T) {
	for in, want := range map[string][3]string{
		"Reason=maintenance [admin@2026-11-27T08:00:00]":                   {"maintenance", "admin", "2026-11-27T08:00:00"},
		"Reason=disk [a] swapped [root@2026-11-27T08:00:00]":               {"disk [a] swapped", "root", "2026-11-27T08:00:00"},
		"Reason=Not responding [slurm@2026-11-27T08:00:00]":                {"Not responding", "slurm", "2026-11-27T08:00:00"},
		"Reason=no suffix here":                                            {"no suffix here", "", ""},
		"Reason=hwprobe: gpu.xid: gpu1 XID 79 [root@2026-11-27T08:00:00] ": {"hwprobe: gpu.xid: gpu1 XID 79", "root", "2026-11-27T08:00:00"},
	} {
		n, err := ParseNode("NodeName=a\n   State=DOWN ThreadsPerCore=1\n   " + in + "\n")
		if err != nil {
			t.Fatal(err)
		}
		if got := [3]string{n.Reason, n.ReasonUser, n.ReasonTime}; got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestParseNodeErrors(t *testing.T) {
	for in, want := range map[string]string{
		"":                         "no NodeName",
		"Node n9 not found":        "no NodeName",
		"NodeName=a Arch=x86_64\n": "no State for node a",
		"NodeName=a\n State=IDLE\nNodeName=b\n State=IDLE": "more than one node",
		"NodeName= State=IDLE":                             "empty NodeName",
	} {
		_, err := ParseNode(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}

func TestParseState(t *testing.T) {
	for in, want := range map[string]State{
		"IDLE":                         {Base: "IDLE"},
		"IDLE+DRAIN":                   {Base: "IDLE", Flags: []string{"DRAIN"}},
		"DOWN*+DRAIN+NOT_RESPONDING":   {Base: "DOWN", Flags: []string{"DRAIN", "NOT_RESPONDING"}},
		"mixed+drain":                  {Base: "MIXED", Flags: []string{"DRAIN"}},
		"ALLOCATED+COMPLETING+DRAIN++": {Base: "ALLOCATED", Flags: []string{"COMPLETING", "DRAIN"}},
	} {
		if got := ParseState(in); !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %+v, want %+v", in, got, want)
		}
	}
	if ParseState("UNKNOWN").Registered() || !ParseState("IDLE+DRAIN").Registered() {
		t.Error("Registered")
	}
	if !ParseState("DRAINED").Drained() || ParseState("DOWN").Drained() || !ParseState("DOWN+DRAIN").Down() {
		t.Error("Drained/Down")
	}
}
