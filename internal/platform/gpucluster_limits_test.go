package platform

import (
	"errors"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// Defect 5: a number beyond 32 bits is a problem on its path, never
// truncated (4294970296 used to become 3000).
func TestVolumeFromInputNoTruncation(t *testing.T) {
	v, ps := VolumeFromInput("root_volume", VolumeInput{SizeGiB: 200, IOPS: 4294970296, Throughput: 1 << 33})
	if v.IOPS != 0 || v.Throughput != 0 {
		t.Errorf("out-of-range values narrowed to %d, %d", v.IOPS, v.Throughput)
	}
	paths := map[string]bool{}
	for _, p := range ps {
		paths[p.Path] = true
	}
	if !paths["root_volume.iops"] || !paths["root_volume.throughput"] || len(ps) != 2 {
		t.Errorf("problems %+v, want root_volume.iops and root_volume.throughput", ps)
	}
	if _, ps := VolumeFromInput("data_volumes[2]", VolumeInput{SizeGiB: 10, IOPS: 16000, Throughput: 500}); len(ps) != 0 {
		t.Errorf("valid volume: %+v", ps)
	}
}

// Defects 2 and 10: the provider's namespace and AWS's are reserved; keys,
// values and counts are bounded; unknown values are not checked.
func TestTagProblems(t *testing.T) {
	long := strings.Repeat("é", 129)
	tests := []struct {
		tags    map[string]string
		unknown []string
		want    []string // paths
	}{
		{map[string]string{"team": "ml"}, nil, nil},
		{map[string]string{"mlplatform:cluster": "other"}, nil, []string{`tags["mlplatform:cluster"]`}},
		{map[string]string{"MLPlatform:x": "y"}, nil, []string{`tags["MLPlatform:x"]`}},
		{map[string]string{"aws:cloudformation:stack": "y"}, nil, []string{`tags["aws:cloudformation:stack"]`}},
		{map[string]string{long: "y"}, nil, []string{`tags["` + long + `"]`}},
		{map[string]string{"k": strings.Repeat("v", 257)}, nil, []string{`tags["k"]`}},
		{map[string]string{"k": strings.Repeat("é", 256)}, nil, nil}, // characters, not bytes
		{map[string]string{"k": ""}, []string{"k"}, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, p := range TagProblems("tags", tt.tags, tt.unknown, MaxGPUClusterTags) {
			got = append(got, p.Path)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%v: problems at %v, want %v", tt.tags, got, tt.want)
		}
	}
	many := map[string]string{}
	for i := range MaxGPUClusterTags + 1 {
		many[strings.Repeat("k", i+1)] = "v"
	}
	if ps := TagProblems("tags", many, nil, MaxGPUClusterTags); len(ps) != 1 || ps[0].Path != "tags" {
		t.Errorf("%d tags: %+v", len(many), ps)
	}
}

func TestValidateInputs(t *testing.T) {
	base := func() GPUClusterSpec {
		return GPUClusterSpec{Name: "c", InstanceType: "p5en.48xlarge", NodeCount: 1, Image: "ami-0123456789abcdef0"}
	}
	tests := []struct {
		name string
		mod  func(*GPUClusterSpec)
		path string
	}{
		{"empty image", func(s *GPUClusterSpec) { s.Image = "" }, "image"},
		{"junk image", func(s *GPUClusterSpec) { s.Image = "ubuntu" }, "image"},
		{"junk security group", func(s *GPUClusterSpec) { s.SecurityGroupIDs = []string{"default"} }, "security_group_ids"},
		{"junk profile", func(s *GPUClusterSpec) { s.InstanceProfile = "a b" }, "instance_profile"},
		{"junk spot price", func(s *GPUClusterSpec) { s.Capacity = Capacity{Type: "spot", SpotMaxPrice: "-1"} }, "capacity.spot_max_price"},
		{"negative iops", func(s *GPUClusterSpec) { s.DataVolumes = []Volume{{SizeGiB: 1}, {SizeGiB: 1, IOPS: -5}} }, "data_volumes[1]"},
		{"gp2 iops", func(s *GPUClusterSpec) { s.RootVolume = Volume{Type: "gp2", IOPS: 3000} }, "root_volume.iops"},
		{"too many volumes", func(s *GPUClusterSpec) { s.DataVolumes = make([]Volume, 22) }, "data_volumes"},
		{"long delay", func(s *GPUClusterSpec) { s.CapacityRetry.InitialDelay = 1000 * 3600e9 }, "capacity_retry.initial_delay"},
		{"blank placement group", func(s *GPUClusterSpec) { s.PlacementGroup = " " }, "placement_group_name"},
	}
	for _, tt := range tests {
		s := base()
		tt.mod(&s)
		found := false
		for _, p := range s.validateInputs() {
			found = found || p.Path == tt.path
		}
		if !found {
			t.Errorf("%s: no problem at %s: %+v", tt.name, tt.path, s.validateInputs())
		}
	}
	s := base()
	s.SecurityGroupIDs = []string{"default"}
	s.Unknown = []string{"security_group_ids"}
	if ps := s.validateInputs(); len(ps) != 0 {
		t.Errorf("unknown security groups checked at plan: %+v", ps)
	}
}

// Drift: a stopped node is not healthy, a node whose tags differ shows.
func TestReadGPUClusterDrift(t *testing.T) {
	c := &GPUCluster{LaunchTemplateID: "lt-1", PlacementGroupOwned: true, PlacementGroupState: "available", Nodes: []GPUNode{
		{InstanceID: "i-0", State: "running", Tags: map[string]string{"team": "ml", cloud.TagCluster: "c"}},
		{InstanceID: "i-1", State: "stopped", Tags: map[string]string{cloud.TagCluster: "c"}},
	}}
	d := ReadGPUClusterDrift(c, map[string]string{"team": "ml"})
	if d.NodeCount != 1 || d.TagsAll == nil || len(d.TagsAll) != 0 || d.PlacementGroupMissing || d.LaunchTemplateMissing {
		t.Errorf("drift %+v", d)
	}
	c.PlacementGroupState, c.Nodes[1].Tags["team"] = "", "ml"
	if d := ReadGPUClusterDrift(c, map[string]string{"team": "ml"}); d.TagsAll != nil || !d.PlacementGroupMissing {
		t.Errorf("drift %+v", d)
	}
	np := PlanNodes([]cloud.GPUNode{{InstanceID: "i-0", Index: 0, State: "running", SpecHash: "h"}, {InstanceID: "i-1", Index: 1, State: "stopped", SpecHash: "h"}}, 2, "h", "", Rollout{})
	if len(np.Roll) != 1 || np.Roll[0][0].InstanceID != "i-1" {
		t.Errorf("a stopped node is not replaced: %+v", np)
	}
}

// complete decides whether a failed create leaves a whole cluster (not
// tainted) or a partial one (tainted).
func TestCompleteCluster(t *testing.T) {
	spec := GPUClusterSpec{NodeCount: 2}
	tr := &tracker{hash: "h", pgReady: true}
	nodes := func(states ...string) []cloud.GPUNode {
		var out []cloud.GPUNode
		for i, s := range states {
			out = append(out, cloud.GPUNode{Index: i, State: s, SpecHash: "h"})
		}
		return out
	}
	for _, tt := range []struct {
		c    cloud.GPUCluster
		want bool
	}{
		{cloud.GPUCluster{LaunchTemplateID: "lt", Nodes: nodes("running", "pending")}, true},
		{cloud.GPUCluster{LaunchTemplateID: "lt", Nodes: nodes("running")}, false},
		{cloud.GPUCluster{LaunchTemplateID: "lt", Nodes: nodes("running", "terminated")}, false},
		{cloud.GPUCluster{Nodes: nodes("running", "running")}, false},
		{cloud.GPUCluster{LaunchTemplateID: "lt"}, false},
	} {
		if got := complete(&tt.c, spec, tr); got != tt.want {
			t.Errorf("complete(%+v) = %v, want %v", tt.c, got, tt.want)
		}
	}
}

// Defect 12: when existing nodes pin the cluster to its zone, the capacity
// error says so, not that no other zone offers the type.
func TestCapacityExhaustedMessage(t *testing.T) {
	tried := []*cloud.CapacityError{{ZoneID: "mec1-az1", Attempts: 4, Err: errors.New("InsufficientInstanceCapacity")}}
	pinned := (&CapacityExhaustedError{InstanceType: "p5en.48xlarge", Nodes: 1, Tried: tried, PinnedZone: "mec1-az1", Elsewhere: []string{"mec1-az3"}}).Error()
	if strings.Contains(pinned, "No other allowed zone offers") || !strings.Contains(pinned, "cannot span zones") || !strings.Contains(pinned, "mec1-az3") {
		t.Errorf("pinned: %s", pinned)
	}
	off := (&CapacityExhaustedError{InstanceType: "p5en.48xlarge", Nodes: 1, Tried: tried, Untried: []string{"mec1-az3"}}).Error()
	if !strings.Contains(off, "zone_fallback is false") || strings.Contains(off, "No other allowed zone offers") {
		t.Errorf("fallback off: %s", off)
	}
	none := (&CapacityExhaustedError{InstanceType: "p5en.48xlarge", Nodes: 1, Tried: tried}).Error()
	if !strings.Contains(none, "No other allowed zone offers") {
		t.Errorf("no other zone: %s", none)
	}
}
