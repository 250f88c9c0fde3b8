package platform

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

func node(index int, id, hash, state string, launched int) cloud.GPUNode {
	return cloud.GPUNode{Index: index, InstanceID: id, SpecHash: hash, State: state, InstanceType: "p5en.48xlarge", LaunchTime: time.Unix(int64(launched), 0)}
}

func ids(ns []cloud.GPUNode) string {
	var out []string
	for _, n := range ns {
		out = append(out, n.InstanceID)
	}
	return strings.Join(out, ",")
}

func TestPlanNodes(t *testing.T) {
	const h = "new"
	for _, tc := range []struct {
		name                       string
		nodes                      []cloud.GPUNode
		count                      int
		batch                      int
		keep, remove, launch, roll string
	}{
		{name: "create", count: 4, launch: "[0 1 2 3]"},
		{name: "converged", count: 2, nodes: []cloud.GPUNode{node(0, "a", h, "running", 1), node(1, "b", h, "running", 1)}, keep: "a,b"},
		{name: "scale out keeps nodes", count: 4, nodes: []cloud.GPUNode{node(0, "a", h, "running", 1), node(1, "b", h, "running", 1)}, keep: "a,b", launch: "[2 3]"},
		{name: "scale in from the top", count: 1, nodes: []cloud.GPUNode{node(0, "a", h, "running", 1), node(1, "b", h, "running", 1), node(2, "c", h, "running", 1), node(3, "d", h, "running", 1)}, keep: "a", remove: "d,c,b"},
		{name: "repair a lost node", count: 3, nodes: []cloud.GPUNode{node(0, "a", h, "running", 1), node(2, "c", h, "running", 1), node(1, "dead", h, "terminated", 1)}, keep: "a,c", launch: "[1]"},
		{name: "roll stale nodes in batches", count: 3, batch: 2, nodes: []cloud.GPUNode{node(0, "a", "old", "running", 1), node(1, "b", "old", "running", 1), node(2, "c", "old", "running", 1)}, roll: "a,b|c"},
		{name: "launch-first duplicate: fresh wins, stale goes", count: 1, nodes: []cloud.GPUNode{node(0, "old", "old", "running", 1), node(0, "fresh", h, "running", 2)}, keep: "fresh", remove: "old"},
		{name: "duplicate of equals: the older stays", count: 1, nodes: []cloud.GPUNode{node(0, "second", h, "running", 2), node(0, "first", h, "running", 1)}, keep: "first", remove: "second"},
		{name: "unknown index is removed", count: 1, nodes: []cloud.GPUNode{node(0, "a", h, "running", 1), node(-1, "stray", h, "running", 1)}, keep: "a", remove: "stray"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanNodes(tc.nodes, tc.count, h, "p5en.48xlarge", Rollout{BatchSize: tc.batch})
			launch := ""
			if len(p.Launch) > 0 {
				launch = fmt.Sprint(p.Launch)
			}
			var rolls []string
			for _, b := range p.Roll {
				rolls = append(rolls, ids(b))
			}
			got := []string{ids(p.Keep), ids(p.Remove), launch, strings.Join(rolls, "|")}
			want := []string{tc.keep, tc.remove, tc.launch, tc.roll}
			if !slices.Equal(got, want) {
				t.Errorf("keep, remove, launch, roll = %q, want %q", got, want)
			}
			if p.Converged() != (tc.remove == "" && tc.launch == "" && tc.roll == "") {
				t.Errorf("Converged() = %v", p.Converged())
			}
		})
	}
}

func TestPlanNodesInstanceTypeDrift(t *testing.T) {
	n := node(0, "a", "h", "running", 1)
	n.InstanceType = "g6.xlarge" // changed outside Terraform
	p := PlanNodes([]cloud.GPUNode{n}, 1, "h", "p5en.48xlarge", Rollout{})
	if len(p.Roll) != 1 {
		t.Errorf("a node of another type must roll, plan %+v", p)
	}
}

func TestRollSteps(t *testing.T) {
	stale := []cloud.GPUNode{node(0, "a", "old", "running", 1), node(1, "b", "old", "running", 1), node(2, "c", "old", "running", 1)}
	for _, tc := range []struct {
		r    Rollout
		want string
	}{
		{Rollout{}, "terminate a, launch [0]; terminate b, launch [1]; terminate c, launch [2]"},
		{Rollout{Strategy: RolloutTerminateFirst, BatchSize: 2}, "terminate a,b, launch [0 1]; terminate c, launch [2]"},
		{Rollout{Strategy: RolloutLaunchFirst, BatchSize: 3}, "launch [0 1 2], terminate a,b,c"},
	} {
		var steps []string
		for _, s := range RollSteps(PlanNodes(stale, 3, "new", "", tc.r), tc.r) {
			if s.LaunchFirst {
				steps = append(steps, fmt.Sprintf("launch %v, terminate %s", s.Launch, ids(s.Terminate)))
			} else {
				steps = append(steps, fmt.Sprintf("terminate %s, launch %v", ids(s.Terminate), s.Launch))
			}
		}
		if got := strings.Join(steps, "; "); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.r, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	one := 1
	base := GPUClusterSpec{Name: "train", InstanceType: "p5en.48xlarge", NodeCount: 4, Image: "ami-1"}
	for _, tc := range []struct {
		name string
		mod  func(*GPUClusterSpec)
		path string // "" means valid
	}{
		{"valid", func(*GPUClusterSpec) {}, ""},
		{"bad name", func(s *GPUClusterSpec) { s.Name = "-x" }, "name"},
		{"zero nodes", func(s *GPUClusterSpec) { s.NodeCount = 0 }, "node_count"},
		{"too many nodes", func(s *GPUClusterSpec) { s.NodeCount = MaxGPUClusterNodes + 1 }, "node_count"},
		{"unknown count waits", func(s *GPUClusterSpec) { s.NodeCount = 0; s.Unknown = []string{"node_count"} }, ""},
		{"block without id", func(s *GPUClusterSpec) { s.Capacity.Type = cloud.CapacityCapacityBlock }, "capacity.reservation_id"},
		{"on demand with id", func(s *GPUClusterSpec) { s.Capacity.ReservationID = "cr-0123456789abcdef0" }, "capacity.reservation_id"},
		{"malformed id", func(s *GPUClusterSpec) {
			s.Capacity = Capacity{Type: cloud.CapacityCapacityReservation, ReservationID: "res-1"}
		}, "capacity.reservation_id"},
		{"spot price without spot", func(s *GPUClusterSpec) { s.Capacity.SpotMaxPrice = "10" }, "capacity.spot_max_price"},
		{"fallback with a block", func(s *GPUClusterSpec) {
			s.ZoneFallback = true
			s.Capacity = Capacity{Type: cloud.CapacityCapacityBlock, ReservationID: "cr-0123456789abcdef0"}
		}, "zone_fallback"},
		{"fallback with a subnet", func(s *GPUClusterSpec) { s.ZoneFallback = true; s.SubnetID = "subnet-1" }, "zone_fallback"},
		{"subnet and vpc", func(s *GPUClusterSpec) { s.SubnetID = "subnet-1"; s.VPCID = "vpc-1" }, "vpc_id"},
		{"rollout strategy", func(s *GPUClusterSpec) { s.Rollout.Strategy = "yolo" }, "rollout.strategy"},
		{"too many efa", func(s *GPUClusterSpec) { n := 33; s.EFAInterfaces = &n }, "efa_interfaces"},
		{"efa ok", func(s *GPUClusterSpec) { s.EFAInterfaces = &one }, ""},
		{"duplicate devices", func(s *GPUClusterSpec) {
			s.DataVolumes = []Volume{{SizeGiB: 10}, {DeviceName: "/dev/sdf", SizeGiB: 10}}
		}, "data_volumes[1].device_name"},
		{"user data too large", func(s *GPUClusterSpec) { s.UserData = strings.Repeat("x", 17*1024) }, "user_data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.mod(&s)
			ps := ValidateGPUCluster(s, s.Unknown)
			if tc.path == "" {
				if len(ps) > 0 {
					t.Errorf("want valid, got %+v", ps)
				}
				return
			}
			if len(ps) != 1 || ps[0].Path != tc.path || ps[0].Detail == "" {
				t.Errorf("want one problem at %s, got %+v", tc.path, ps)
			}
		})
	}
}

// tableCatalog is a GPUTypeCatalog from a table, as moto's me-central-1 data.
type tableCatalog map[string]struct {
	info  GPUTypeInfo
	zones []string
}

func (c tableCatalog) TypeInfo(name string) (GPUTypeInfo, bool) {
	e, ok := c[name]
	return e.info, ok
}
func (c tableCatalog) OfferedZoneIDs(name string) []string { return c[name].zones }
func (c tableCatalog) GPUTypesOffered(zone string) []string {
	var out []string
	for name, e := range c {
		if e.info.GPUs > 0 && len(e.zones) > 0 && (zone == "" || slices.Contains(e.zones, zone)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

func TestCheckType(t *testing.T) {
	cat := tableCatalog{
		"p5en.48xlarge": {GPUTypeInfo{GPUs: 8, EFASupported: true, MaxEFAInterfaces: 16, PlacementStrategies: []string{"cluster"}}, []string{"mec1-az1", "mec1-az3"}},
		"p5.48xlarge":   {GPUTypeInfo{GPUs: 8, EFASupported: true, MaxEFAInterfaces: 32}, nil},
		"g6.xlarge":     {GPUTypeInfo{GPUs: 1, PlacementStrategies: []string{"cluster"}}, []string{"mec1-az1", "mec1-az2"}},
		"c7i.large":     {GPUTypeInfo{PlacementStrategies: []string{"cluster"}}, []string{"mec1-az1"}},
		"t3.micro":      {GPUTypeInfo{GPUs: 1, PlacementStrategies: []string{"spread"}}, []string{"mec1-az1"}},
	}
	allowed := func(z string) bool { return z != "mec1-az3" }
	four, two := 4, 2
	for _, tc := range []struct {
		typ     string
		zone    string
		efa     *int
		want    string // substring of the one problem; "" for none
		wantEFA int
	}{
		{typ: "p5en.48xlarge", zone: "mec1-az1", wantEFA: 16},
		{typ: "p5en.48xlarge", zone: "mec1-az1", efa: &two, wantEFA: 2},
		{typ: "p5.48xlarge", zone: "mec1-az1", want: "p5.48xlarge is not offered in me-central-1; offered GPU types there: g6.xlarge, p5en.48xlarge, t3.micro"},
		{typ: "p5en.48xlarge", zone: "mec1-az2", want: "p5en.48xlarge is not offered in mec1-az2; allowed zones that offer it: mec1-az1", wantEFA: 16},
		{typ: "c7i.large", zone: "mec1-az1", want: "c7i.large has no GPU"},
		{typ: "g6.xlarge", zone: "mec1-az1", efa: &four, want: "g6.xlarge does not support EFA"},
		{typ: "p5en.48xlarge", zone: "mec1-az1", efa: new(int), wantEFA: 0},
		{typ: "t3.micro", zone: "mec1-az1", want: "does not support cluster placement groups"},
		{typ: "nope.large", want: "nope.large is not offered in me-central-1"},
	} {
		t.Run(tc.typ+"/"+tc.zone, func(t *testing.T) {
			s := GPUClusterSpec{Name: "x", InstanceType: tc.typ, ZoneID: tc.zone, EFAInterfaces: tc.efa}
			_, efa, ps := s.checkType(cat, "me-central-1", tc.zone, allowed)
			switch {
			case tc.want == "" && len(ps) > 0:
				t.Errorf("want no problem, got %+v", ps)
			case tc.want != "" && (len(ps) != 1 || !strings.Contains(ps[0].Detail, tc.want)):
				t.Errorf("want one problem with %q, got %+v", tc.want, ps)
			}
			if tc.want == "" && efa != tc.wantEFA {
				t.Errorf("EFA interfaces %d, want %d", efa, tc.wantEFA)
			}
		})
	}
}

func TestCheckReservation(t *testing.T) {
	s := GPUClusterSpec{Name: "x", InstanceType: "p5en.48xlarge", NodeCount: 4, Capacity: Capacity{Type: cloud.CapacityCapacityBlock, ReservationID: "cr-0123456789abcdef0"}}
	block := cloud.CapacityReservation{ID: "cr-0123456789abcdef0", InstanceType: "p5en.48xlarge", ZoneID: "mec1-az1", State: "active", Type: "capacity-block", TotalCount: 4}
	if ps := s.checkReservation(block, "mec1-az1"); len(ps) != 0 {
		t.Errorf("want no problem, got %+v", ps)
	}
	for name, tc := range map[string]struct {
		mod  func(*GPUClusterSpec, *cloud.CapacityReservation)
		want string
	}{
		"more nodes than the block": {func(s *GPUClusterSpec, _ *cloud.CapacityReservation) { s.NodeCount = 8 }, "capacity block (a fixed count)"},
		"another type":              {func(_ *GPUClusterSpec, r *cloud.CapacityReservation) { r.InstanceType = "p5.48xlarge" }, "reserves p5.48xlarge"},
		"another zone":              {func(_ *GPUClusterSpec, r *cloud.CapacityReservation) { r.ZoneID = "mec1-az3" }, "is in mec1-az3"},
		"not a block":               {func(_ *GPUClusterSpec, r *cloud.CapacityReservation) { r.Type = "default" }, "ordinary capacity reservation"},
		"expired":                   {func(_ *GPUClusterSpec, r *cloud.CapacityReservation) { r.State = "expired" }, "is expired"},
	} {
		s2, r2 := s, block
		tc.mod(&s2, &r2)
		ps := s2.checkReservation(r2, "mec1-az1")
		if len(ps) != 1 || !strings.Contains(ps[0].Detail, tc.want) {
			t.Errorf("%s: want one problem with %q, got %+v", name, tc.want, ps)
		}
	}
	r := block
	r.State = "scheduled"
	if ps := s.checkReservation(r, "mec1-az1"); len(ps) != 1 || !ps[0].Warning {
		t.Errorf("a scheduled block is a warning, got %+v", ps)
	}
}

func TestCapacityExhaustedError(t *testing.T) {
	ice := errors.New("InsufficientInstanceCapacity")
	e := &CapacityExhaustedError{InstanceType: "p5en.48xlarge", Nodes: 4,
		Tried: []*cloud.CapacityError{{ZoneID: "mec1-az1", Attempts: 4, Err: ice}}, Untried: []string{"mec1-az3"}}
	for _, want := range []string{"no capacity for 4 x p5en.48xlarge", "tried mec1-az1 (4 attempts", "zone_fallback = true to also try mec1-az3"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("%q lacks %q", e.Error(), want)
		}
	}
}
