package slurm

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
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

// FuzzMungeKey: a secret's value gives a key of 32 to 1024 bytes or an
// error that names the secret and never shows the value.
func FuzzMungeKey(f *testing.F) {
	f.Add([]byte(nil), "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldC0=", false)
	f.Add(bytes.Repeat([]byte{0}, 32), "", true)
	f.Add([]byte("short"), "", true)
	f.Add([]byte(nil), "not base64 at all, really not", false)
	f.Fuzz(func(t *testing.T, bin []byte, text string, binary bool) {
		const arn = "arn:aws:secretsmanager:me-central-1:1:secret:m"
		var key []byte
		var err error
		if binary {
			key, err = MungeKey(arn, bin, nil)
		} else {
			key, err = MungeKey(arn, nil, &text)
		}
		if err != nil {
			if !strings.Contains(err.Error(), arn) {
				t.Fatalf("error %q does not name the secret", err)
			}
			if len(text) >= 8 && strings.Contains(err.Error(), text) || len(bin) >= 8 && strings.Contains(err.Error(), string(bin)) {
				t.Fatalf("error %q shows the value", err)
			}
			return
		}
		if len(key) < MinMungeKey || len(key) > MaxMungeKey {
			t.Fatalf("%d-byte key accepted", len(key))
		}
	})
}

// FuzzQuoteArgs: quoted arguments read back, as systemd splits them, as
// the same arguments.
func FuzzQuoteArgs(f *testing.F) {
	f.Add("-N", "train-3", "Gres=gpu:h100:8 Feature=a,b RealMemory=1")
	f.Add("a b", "", "x'y")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		args := []string{a, b, c}
		q, err := QuoteArgs(args)
		if err != nil {
			return
		}
		if strings.ContainsAny(q, "\"\\$`\n") {
			t.Fatalf("%q", q)
		}
		if got := splitSystemd(q); !reflect.DeepEqual(got, args) {
			t.Fatalf("%q reads as %q", q, got)
		}
	})
}

// FuzzParseHealthMarker: a marker that parses has a valid instance id, a
// known state and a time, names a key HealthMarkerInstance reads back, and
// encodes to a marker that parses to itself.
func FuzzParseHealthMarker(f *testing.F) {
	f.Add([]byte(`{"node":"train-1","instance_id":"i-0123456789abcdef0","state":"drained","reason":"hwprobe: gpu.count: expected 8, observed 7","at":"2026-11-27T10:00:00.123Z"}`))
	f.Add([]byte(`{"node":"train-1","instance_id":"i-01234567","state":"resumed","at":"2026-11-27T10:00:00Z"}`))
	f.Add([]byte(`{"instance_id":"i-0123456789abcdef0","state":"drained","reason":"maintenance","at":"2026-11-27T10:00:00Z"}`))
	f.Add([]byte(`{"instance_id":"x","state":"odd","at":"2026-11-27T10:00:00Z","extra":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseHealthMarker(b)
		if err != nil {
			return
		}
		if m.State != HealthDrained && m.State != HealthResumed || m.At.IsZero() {
			t.Fatalf("parsed %+v", m)
		}
		if id, state, ok := HealthMarkerInstance(strings.TrimPrefix(HealthMarkerKey(m), HealthMarkerDir)); !ok || id != m.InstanceID || state != m.State {
			t.Fatalf("key %q reads back as %q %q, %v", HealthMarkerKey(m), id, state, ok)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := ParseHealthMarker(again)
		if err != nil || m2.InstanceID != m.InstanceID || m2.State != m.State || m2.Reason != m.Reason || !m2.At.Equal(m.At) {
			t.Fatalf("round trip: %+v, %v; want %+v", m2, err, m)
		}
	})
}
