package platform

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func changeRecord() GPUClusterRecord {
	efa := 16
	return GPUClusterRecord{
		Spec: GPUClusterSpec{Name: "train", InstanceType: "p5en.48xlarge", NodeCount: 2, ZoneID: "mec1-az1", Image: "/aws/service/x",
			RootVolume: Volume{SizeGiB: 200}, Tags: map[string]string{"team": "ml"}, MetadataHopLimit: 1},
		Zone: "me-central-1a", ZoneID: "mec1-az1", SubnetID: "subnet-1", ImageID: "ami-old", EFAInterfaces: &efa,
		PlacementGroup: "mlplatform-train", TagsAll: map[string]string{"team": "ml"}, LaunchTemplateID: "lt-1",
	}
}

func changeResolved() GPUClusterResolved {
	efa := 16
	return GPUClusterResolved{ImageID: "ami-old", EFAInterfaces: &efa, PlacementGroup: "mlplatform-train", TagsAll: map[string]string{"team": "ml"}}
}

func paths(cs []Change) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Path)
	}
	return strings.Join(out, ",")
}

func TestPlanGPUClusterChange(t *testing.T) {
	for _, tt := range []struct {
		name                               string
		mod                                func(s *GPUClusterSpec, r *GPUClusterResolved, prior *GPUClusterRecord)
		replace, nodes, template, settings string
	}{
		{name: "no change", mod: func(*GPUClusterSpec, *GPUClusterResolved, *GPUClusterRecord) {}},
		{name: "scale in place", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.NodeCount = 4 }, nodes: "node_count"},
		{name: "new AMI behind the same SSM parameter rolls", mod: func(_ *GPUClusterSpec, r *GPUClusterResolved, _ *GPUClusterRecord) { r.ImageID = "ami-new" }, nodes: "image_id"},
		{name: "image drift read back rolls", mod: func(_ *GPUClusterSpec, _ *GPUClusterResolved, p *GPUClusterRecord) { p.ImageID = "ami-drifted" }, nodes: "image_id"},
		{name: "instance type rolls", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.InstanceType = "p5.48xlarge" }, nodes: "instance_type"},
		{name: "volume rolls", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.RootVolume.SizeGiB = 300 }, nodes: "root_volume"},
		{name: "tags retag", mod: func(s *GPUClusterSpec, r *GPUClusterResolved, _ *GPUClusterRecord) {
			s.Tags = map[string]string{"team": "x"}
			r.TagsAll = s.Tags
		}, template: "tags,tags_all"},
		{name: "rollout is recorded only", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.Rollout.BatchSize = 2 }, settings: "rollout"},
		{name: "vpc_id replaces", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.VPCID = "vpc-2" }, replace: "vpc_id"},
		{name: "name replaces", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.Name = "other" }, replace: "name"},
		{name: "a set placement group replaces", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.PlacementGroup = "shared" }, replace: "placement_group_name"},
		{name: "the own placement group named explicitly is no change", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) {
			s.PlacementGroup = "mlplatform-train"
		}},
		{name: "another zone replaces", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.ZoneID = "mec1-az3" }, replace: "zone_id"},
		{name: "zone unset keeps the resolved one", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.ZoneID = "" }},
		{name: "a subnet set to another replaces", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.SubnetID = "subnet-2" }, replace: "subnet_id"},
		{name: "own placement group deleted outside is recreated in place", mod: func(_ *GPUClusterSpec, _ *GPUClusterResolved, p *GPUClusterRecord) { p.PlacementGroup = "" }, nodes: "placement_group_name"},
		{name: "launch template deleted outside", mod: func(_ *GPUClusterSpec, _ *GPUClusterResolved, p *GPUClusterRecord) { p.LaunchTemplateID = "" }, template: "launch_template_id"},
		{name: "the hop limit changes in place", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.MetadataHopLimit = 2 }, template: "metadata_hop_limit"},
		{name: "the hop limit unset is the default, no change", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.MetadataHopLimit = 0 }},
		// A record made before the setting existed: its nodes run with 2.
		{name: "upgrade: the default changes the hop limit in place, no roll", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, p *GPUClusterRecord) {
			p.Spec.MetadataHopLimit, s.MetadataHopLimit = 0, 1
		}, template: "metadata_hop_limit"},
		{name: "upgrade: hop limit 2 kept is no change", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, p *GPUClusterRecord) {
			p.Spec.MetadataHopLimit, s.MetadataHopLimit = 0, 2
		}},
		{name: "unknown hop limit", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) {
			s.Unknown = []string{"metadata_hop_limit"}
		}, template: "metadata_hop_limit"},
		{name: "unknown vpc_id replaces", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) { s.Unknown = []string{"vpc_id"} }, replace: "vpc_id"},
		{name: "unknown zone_id replaces", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) {
			s.ZoneID = ""
			s.Unknown = []string{"zone_id"}
		}, replace: "zone_id"},
		{name: "unknown image rolls, never reads as absent", mod: func(s *GPUClusterSpec, r *GPUClusterResolved, _ *GPUClusterRecord) {
			s.Image, r.ImageID = "", ""
			s.Unknown = []string{"image"}
		}, nodes: "image"},
		{name: "unknown volume field rolls", mod: func(s *GPUClusterSpec, _ *GPUClusterResolved, _ *GPUClusterRecord) {
			s.Unknown = []string{"root_volume.size_gib"}
		}, nodes: "root_volume"},
		{name: "unknown tag value", mod: func(s *GPUClusterSpec, r *GPUClusterResolved, _ *GPUClusterRecord) {
			s.Unknown = []string{`tags["team"]`}
			r.TagsAll = nil
		}, template: "tags,tags_all"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prior := changeRecord()
			spec := prior.Spec
			spec.Tags = map[string]string{"team": "ml"}
			res := changeResolved()
			tt.mod(&spec, &res, &prior)
			cs := gpuClusterChange(prior, spec, res)
			for _, c := range []struct {
				what      string
				got, want string
			}{{"replace", paths(cs.Replace), tt.replace}, {"nodes", paths(cs.Nodes), tt.nodes}, {"template", paths(cs.Template), tt.template}, {"settings", paths(cs.Settings), tt.settings}} {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q (%+v)", c.what, c.got, c.want, cs)
				}
			}
			if cs.Empty() != (tt.replace+tt.nodes+tt.template+tt.settings == "") {
				t.Errorf("Empty() = %v", cs.Empty())
			}
			for _, c := range slices.Concat(cs.Replace, cs.Nodes, cs.Template, cs.Settings) {
				if c.Reason == "" {
					t.Errorf("%s has no reason", c.Path)
				}
			}
		})
	}
}

func TestReadBackGPUCluster(t *testing.T) {
	declared := changeRecord()
	found := &GPUCluster{Name: "train", LaunchTemplateID: "lt-1", LaunchTemplateVersion: 3, PlacementGroupName: "mlplatform-train", PlacementGroupOwned: true,
		Nodes: []GPUNode{
			{Index: 0, InstanceID: "i-0", State: "running", InstanceType: "p5en.48xlarge", ImageID: "ami-old", ZoneID: "mec1-az1", Tags: map[string]string{"team": "ml"}},
			{Index: 1, InstanceID: "i-1", State: "stopped", InstanceType: "p5en.48xlarge", ImageID: "ami-other", ZoneID: "mec1-az1", Tags: map[string]string{"team": "ml"}},
		}}
	r := ReadBackGPUCluster(found, declared)
	if r.Spec.NodeCount != 1 || r.ImageID != "ami-other" || r.PlacementGroup != "" || r.PlacementZoneID != "mec1-az1" || r.LaunchTemplateVersion != 3 || len(r.Nodes) != 2 {
		t.Errorf("read back = %+v; want 1 healthy node, image drift ami-other, own placement group gone", r)
	}
	if r.TagsAll["team"] != "ml" || r.Spec.Zone != "" || r.Spec.VPCID != "" {
		t.Errorf("unset values must stay unset, tags as declared: %+v", r)
	}
	// The drift plans a roll of the nodes and the group's return.
	cs := gpuClusterChange(r, declared.Spec, changeResolved())
	if got := paths(cs.Nodes); got != "node_count,image_id,placement_group_name" {
		t.Errorf("nodes changes = %q", got)
	}
}

// TestReadBackGPUClusterHopLimit: a hop limit changed outside on every node
// reads back as drift; nodes that disagree record none, so that whatever
// the configuration says (even one node's value) is an in-place change that
// sets every node.
func TestReadBackGPUClusterHopLimit(t *testing.T) {
	declared := changeRecord()
	declared.Spec.MetadataHopLimit = 1
	node := func(i int, hop int32) GPUNode {
		return GPUNode{Index: i, InstanceID: fmt.Sprintf("i-%d", i), State: "running", InstanceType: "p5en.48xlarge", ZoneID: "mec1-az1", MetadataHopLimit: hop}
	}
	for _, tc := range []struct {
		name  string
		hops  []int32
		want  int
		plans []int // desired values that must plan a change
	}{
		{name: "as declared", hops: []int32{1, 1}, want: 1},
		{name: "every node changed outside", hops: []int32{3, 3}, want: 3, plans: []int{1}},
		{name: "nodes disagree", hops: []int32{3, 1}, want: 0, plans: []int{1, 3}},
		{name: "a node that does not say", hops: []int32{0, 1}, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found := &GPUCluster{Name: "train", LaunchTemplateID: "lt-1", LaunchTemplateVersion: 3}
			for i, h := range tc.hops {
				found.Nodes = append(found.Nodes, node(i, h))
			}
			r := ReadBackGPUCluster(found, declared)
			if r.Spec.MetadataHopLimit != tc.want {
				t.Fatalf("recorded hop limit %d, want %d", r.Spec.MetadataHopLimit, tc.want)
			}
			for _, d := range tc.plans {
				spec := declared.Spec
				spec.MetadataHopLimit = d
				if cs := gpuClusterChange(r, spec, changeResolved()); !strings.Contains(paths(cs.Template), MetadataHopLimitPath) || len(cs.Replace) > 0 {
					t.Errorf("metadata_hop_limit = %d over the record: change set %+v, want the hop limit in place", d, cs)
				}
			}
		})
	}
}

func TestGPUClusterInputLimits(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	str := func(s string) *string { return &s }
	for _, tt := range []struct {
		in   CapacityRetryInput
		path string
	}{
		{CapacityRetryInput{Attempts: n(1000)}, "capacity_retry.attempts"},
		{CapacityRetryInput{Attempts: n(0)}, "capacity_retry.attempts"},
		{CapacityRetryInput{InitialDelay: str("soon")}, "capacity_retry.initial_delay"},
		{CapacityRetryInput{Attempts: n(20), InitialDelay: str("10s")}, ""},
		{CapacityRetryInput{}, ""},
	} {
		r, ps := CapacityRetryFromInput(tt.in)
		s := GPUClusterSpec{Name: "x", NodeCount: 1, Image: "ami-0123456789abcdef0", CapacityRetry: r, InputProblems: ps}
		got := ""
		for _, p := range ValidateGPUCluster(s, s.Unknown) {
			got += p.Path
		}
		if got != tt.path {
			t.Errorf("%+v: problems on %q, want %q", tt.in, got, tt.path)
		}
	}
	if _, ps := RolloutFromInput("", n(0)); len(ps) != 1 || ps[0].Path != "rollout.batch_size" {
		t.Errorf("batch_size 0: %+v", ps)
	}
	if GPUClusterTimeout(OpCreate) != 60*time.Minute || GPUClusterTimeout(OpDelete) != 30*time.Minute || GPUClusterTimeout(OpUpdate) != 60*time.Minute {
		t.Error("default timeouts")
	}
	if _, p := ParseTimeout("timeouts.create", "0s"); p == nil || p.Path != "timeouts.create" {
		t.Errorf("0s timeout: %+v", p)
	}
}

// TestPlanGPUClusterChangeHopLimitReason: the plan says why the hop limit
// changes, and that no node is replaced; after an upgrade, that the nodes
// ran with 2 before the setting existed.
func TestPlanGPUClusterChangeHopLimitReason(t *testing.T) {
	prior := changeRecord()
	prior.Spec.MetadataHopLimit = 0
	cs := gpuClusterChange(prior, changeRecord().Spec, changeResolved())
	if len(cs.Template) != 1 || len(cs.Nodes) != 0 {
		t.Fatalf("change set %+v, want the hop limit in place only", cs)
	}
	for _, want := range []string{"launched with hop limit 2 before metadata_hop_limit existed", "the default is now 1", "or run with different hop limits set outside", "to 1 in place on every running node", "no node is replaced"} {
		if !strings.Contains(cs.Template[0].Reason, want) {
			t.Errorf("reason %q does not say %q", cs.Template[0].Reason, want)
		}
	}
}

// TestReadBackDrained: a node hwprobe drained in Slurm counts as lost only
// when the cluster replaces such nodes (Slurm, on_failure = "replace"); the
// plan's warning says what the apply does either way.
func TestReadBackDrained(t *testing.T) {
	found := &GPUCluster{Name: "train", LaunchTemplateID: "lt-1", Nodes: []GPUNode{
		{Index: 0, InstanceID: "i-0", State: "running"}, {Index: 1, InstanceID: "i-1", State: "running"},
	}, Drained: []HwprobeDrained{{Index: 1, InstanceID: "i-1", Reason: "hwprobe: gpu.count: found 7 GPUs, profile expects 8"}}}
	for _, tt := range []struct {
		name      string
		slurm     bool
		onFailure string
		want      int
		says      string
	}{
		{"replace", true, OnFailureReplace, 1, "this apply replaces them"},
		{"fail", true, OnFailureFail, 2, "they are not replaced"},
		{"no Slurm", false, OnFailureReplace, 2, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			declared := GPUClusterRecord{Spec: GPUClusterSpec{Name: "train", NodeCount: 2, Validation: &ValidationSpec{OnFailure: tt.onFailure}}}
			if tt.slurm {
				declared.Spec.Slurm = &SlurmSpec{}
			}
			if got := ReadBackGPUCluster(found, declared).Spec.NodeCount; got != tt.want {
				t.Errorf("node_count read back %d, want %d", got, tt.want)
			}
			if tt.says == "" {
				return
			}
			w := DrainedWarning("train", tt.onFailure, found.Drained)
			if !strings.Contains(w, "drained nodes 1 in Slurm") || !strings.Contains(w, "gpu.count") || !strings.Contains(w, tt.says) {
				t.Errorf("warning %q, want it to name node 1, the check and %q", w, tt.says)
			}
		})
	}
	if w := DrainedWarning("train", OnFailureReplace, nil); w != "" {
		t.Errorf("no drained node: warning %q", w)
	}
}
