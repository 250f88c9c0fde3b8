package slurm

import (
	"reflect"
	"strings"
	"testing"
)

const joinJSON = `{"controllers":["10.0.0.10:6817","ctl-2"],"munge_key_secret_arn":"arn:aws:secretsmanager:me-central-1:123456789012:secret:munge-AbCdEf","region":"me-central-1","node_name_prefix":"train-a","node_name":"index","index_tag":"mlplatform:node-indices","conf":"Gres=gpu:h100:8 Feature=mlplatform,h100 RealMemory=1900000"}`

func TestParseJoinConfig(t *testing.T) {
	c, err := ParseJoinConfig([]byte(joinJSON))
	if err != nil {
		t.Fatal(err)
	}
	name, err := c.NodeNameOf("i-0abc", 2, "4-5,9")
	if err != nil || name != "train-a-9" {
		t.Fatalf("NodeNameOf = %q, %v; want train-a-9", name, err)
	}
	if _, err := c.NodeNameOf("i-0abc", 3, "4-5,9"); err == nil {
		t.Error("a launch index past the tag's entries was accepted")
	}
	want := []string{"-Z", "--conf-server", "10.0.0.10:6817,ctl-2", "-N", "train-a-9", "--conf", "Gres=gpu:h100:8 Feature=mlplatform,h100 RealMemory=1900000"}
	if got := c.SlurmdArgs(name); !reflect.DeepEqual(got, want) {
		t.Errorf("SlurmdArgs = %q", got)
	}
	c.NodeName = NameByInstance
	if name, _ := c.NodeNameOf("i-0abc", 0, ""); name != "train-a-i-0abc" {
		t.Errorf("by instance: %q", name)
	}
	for _, bad := range []struct{ from, to string }{
		{`"10.0.0.10:6817",`, `"10.0.0.10:99999",`},
		{`"ctl-2"`, `"ctl 2"`},
		{`secretsmanager`, `secretsmanager"x":"y`},
		{`"node_name":"index"`, `"node_name":"byname"`},
		{`"node_name_prefix":"train-a"`, `"node_name_prefix":"train/a"`},
		{`RealMemory=1900000`, `RealMemory=1$(reboot)`},
		{`"index_tag":"mlplatform:node-indices",`, `"extra":1,`},
	} {
		in := strings.Replace(joinJSON, bad.from, bad.to, 1)
		if in == joinJSON {
			t.Fatalf("mutation %q not applied", bad.from)
		}
		if _, err := ParseJoinConfig([]byte(in)); err == nil {
			t.Errorf("accepted %s", in)
		}
	}
}

// FuzzParseJoinConfig: a configuration that parses yields slurmd arguments
// whose --conf carries no shell or line syntax, and names nodes within the
// name syntax.
func FuzzParseJoinConfig(f *testing.F) {
	f.Add(joinJSON, "i-0abc", 1, "0-3")
	f.Fuzz(func(t *testing.T, in, id string, launch int, tag string) {
		c, err := ParseJoinConfig([]byte(in))
		if err != nil {
			return
		}
		name, err := c.NodeNameOf(id, launch, tag)
		if err != nil {
			return
		}
		if !slurmName.MatchString(name) {
			t.Fatalf("node name %q", name)
		}
		args := c.SlurmdArgs(name)
		if strings.ContainsAny(args[len(args)-1], "\"'\n`$\\") {
			t.Fatalf("conf %q", args[len(args)-1])
		}
	})
}
