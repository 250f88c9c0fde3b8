package slurm

import (
	"os"
	"strings"
	"testing"
)

// FuzzParseNode: any scontrol output either parses into one node with a
// name and a state, or is refused; a parsed reason never keeps
// scontrol's [user@time] suffix and decides consistently.
func FuzzParseNode(f *testing.F) {
	for _, name := range []string{"show-node-unknown-drain.txt", "show-node-idle-drain.txt", "show-node-oneliner.txt"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("NodeName=a\n State=DOWN+DRAIN\n Reason=x [y@z]")
	f.Add("Node n9 not found")
	f.Fuzz(func(t *testing.T, out string) {
		n, err := ParseNode(out)
		if err != nil {
			return
		}
		if n.Name == "" || n.State.Base == "" {
			t.Fatalf("parsed without a name or state: %+v", n)
		}
		if reasonSuffix.MatchString(n.Reason) {
			t.Fatalf("reason %q keeps its suffix", n.Reason)
		}
		for _, r := range []string{"", "hwprobe: x"} {
			d := Decide(&n, r)
			if d.Action == Resume && (r != "" || !Ours(n.Reason) || !n.State.Drained()) {
				t.Fatalf("resumed %+v for %q", n, r)
			}
			if d.Action == Drain && !Ours(d.Reason) {
				t.Fatalf("drain reason %q", d.Reason)
			}
		}
	})
}

// FuzzParseSlurmdArgs: any command line parses without panicking, and a
// value it returns is one of the arguments or a part of one.
func FuzzParseSlurmdArgs(f *testing.F) {
	f.Add("-D\x00-f\x00/etc/slurm.conf\x00-N\x00n1")
	f.Add("-Z\x00--conf-server=ctl:6817\x00--conf\x00Gres=gpu:8")
	f.Add("-Dvf")
	f.Fuzz(func(t *testing.T, cmdline string) {
		argv := strings.Split(cmdline, "\x00")
		a := ParseSlurmdArgs(argv)
		for _, v := range []string{a.ConfFile, a.ConfServer, a.NodeName} {
			if v != "" && !strings.Contains(cmdline, v) {
				t.Fatalf("value %q not in %q", v, argv)
			}
		}
	})
}

// FuzzParseStat: any stat line parses or is refused, never a negative
// parent.
func FuzzParseStat(f *testing.F) {
	f.Add("4242 (sh (odd) name) S 17 4242 4242 0 -1")
	f.Add("1 (init) S 0 1 1")
	f.Fuzz(func(t *testing.T, s string) {
		_, ppid, err := ParseStat([]byte(s))
		if err == nil && ppid < 0 {
			t.Fatalf("ppid %d", ppid)
		}
	})
}
