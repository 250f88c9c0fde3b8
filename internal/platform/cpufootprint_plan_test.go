package platform

import (
	"slices"
	"testing"
	"time"
)

func TestPlanCPUFootprintChange(t *testing.T) {
	zero := 0
	base := CPUFootprintSpec{Name: "fp", InstanceType: "c7i.large", Size: GroupSize{Min: 1, Max: 3, Desired: 2}, Tags: map[string]string{"team": "a"}, MetadataHopLimit: 1}
	prior := CPUFootprintRecord{Spec: base, Decision: CPUDecision{InstanceType: "c7i.large"}, InstanceTypes: []string{"c7i.large"},
		SubnetIDs: []string{"subnet-b", "subnet-a"}, ImageID: "ami-1", TagsAll: map[string]string{"team": "a"}, GroupName: "mlplatform-cpu-fp", LaunchTemplateID: "lt-1"}
	plan := func(mut func(*CPUFootprintPlan)) *CPUFootprintPlan {
		p := &CPUFootprintPlan{Decided: true, Decision: CPUDecision{InstanceType: "c7i.large"}, InstanceTypes: []string{"c7i.large"},
			SubnetIDs: []string{"subnet-a", "subnet-b"}, ImageID: "ami-1", TagsAll: map[string]string{"team": "a"}}
		if mut != nil {
			mut(p)
		}
		return p
	}
	paths := func(items []Change) []string {
		var out []string
		for _, c := range items {
			out = append(out, c.Path)
		}
		return out
	}
	for _, tc := range []struct {
		name                   string
		spec                   func(*CPUFootprintSpec)
		plan                   func(*CPUFootprintPlan)
		prior                  func(*CPUFootprintRecord)
		replace, roll, inPlace []string
		repair                 []string
	}{
		{name: "no change (subnet order aside)"},
		{name: "new name replaces", spec: func(s *CPUFootprintSpec) { s.Name = "fp2" }, replace: []string{"name"}},
		{name: "type rolls", plan: func(p *CPUFootprintPlan) {
			p.Decision.InstanceType, p.InstanceTypes = "m7i.large", []string{"m7i.large"}
		},
			roll: []string{"instance_type"}, inPlace: []string{"capacity_type"}},
		{name: "type decided at apply rolls", plan: func(p *CPUFootprintPlan) { p.Decided, p.InstanceTypes = false, []string{"c7i.large"} }, roll: []string{"instance_type"}},
		{name: "new AMI rolls", plan: func(p *CPUFootprintPlan) { p.ImageID = "ami-2" }, roll: []string{"image"}},
		{name: "user data rolls", spec: func(s *CPUFootprintSpec) { s.UserData = "#!/bin/sh" }, roll: []string{"user_data"}},
		{name: "sizes in place", spec: func(s *CPUFootprintSpec) { s.Size.Max = 4 }, inPlace: []string{"desired_capacity"}},
		{name: "schedule in place", spec: func(s *CPUFootprintSpec) {
			s.Schedules = []Schedule{{Name: "n", Recurrence: "0 20 * * 1-5", Duration: time.Hour, Desired: &zero}}
		}, inPlace: []string{"schedule"}},
		{name: "spot in place", spec: func(s *CPUFootprintSpec) { s.CapacityType = CapacitySpotMixed }, inPlace: []string{"capacity_type"}},
		{name: "tags in place", plan: func(p *CPUFootprintPlan) { p.TagsAll = map[string]string{"team": "b"} }, inPlace: []string{"tags"}},
		{name: "tags unknown in place", plan: func(p *CPUFootprintPlan) { p.TagsAll = nil }, inPlace: []string{"tags"}},
		{name: "hop limit in place, no roll", spec: func(s *CPUFootprintSpec) { s.MetadataHopLimit = 2 }, inPlace: []string{"metadata_hop_limit"}},
		{name: "hop limit unset is the default", spec: func(s *CPUFootprintSpec) { s.MetadataHopLimit = 0 }},
		{name: "upgrade: a record made before the setting ran with 2", prior: func(r *CPUFootprintRecord) { r.Spec.MetadataHopLimit = 0 }, inPlace: []string{"metadata_hop_limit"}},
		{name: "upgrade: hop limit 2 kept is no change", spec: func(s *CPUFootprintSpec) { s.MetadataHopLimit = 2 }, prior: func(r *CPUFootprintRecord) { r.Spec.MetadataHopLimit = 0 }},
		{name: "group deleted outside is repaired", prior: func(r *CPUFootprintRecord) { r.GroupName = "" }, repair: []string{"asg_name"}},
		{name: "template deleted outside is repaired", prior: func(r *CPUFootprintRecord) { r.LaunchTemplateID = "" }, repair: []string{"launch_template_id"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			if tc.spec != nil {
				tc.spec(&s)
			}
			pr := prior
			if tc.prior != nil {
				tc.prior(&pr)
			}
			c := cpuFootprintChange(pr, s, plan(tc.plan))
			for _, x := range []struct {
				what      string
				got, want []string
			}{{"replace", paths(c.Replace), tc.replace}, {"roll", paths(c.Roll), tc.roll}, {"in place", paths(c.InPlace), tc.inPlace}, {"repair", paths(c.Repair), tc.repair}} {
				if !slices.Equal(x.got, x.want) {
					t.Errorf("%s = %v, want %v", x.what, x.got, x.want)
				}
			}
		})
	}
}

func TestReadBackCPUFootprint(t *testing.T) {
	zero := 0
	declared := CPUFootprintRecord{
		Spec:          CPUFootprintSpec{Name: "fp", Size: GroupSize{Min: 1, Max: 3, Desired: 2}, SubnetIDs: []string{"subnet-b", "subnet-a"}},
		InstanceTypes: []string{"c7i.large"}, SubnetIDs: []string{"subnet-b", "subnet-a"}, TagsAll: map[string]string{"team": "a"},
		GroupName: "mlplatform-cpu-fp", LaunchTemplateID: "lt-1",
	}
	found := &CPUFootprint{Name: "fp", GroupName: "mlplatform-cpu-fp", LaunchTemplateID: "lt-1", Size: GroupSize{Min: 0, Max: 0, Desired: 0},
		SubnetIDs: []string{"subnet-a", "subnet-b"}, Tags: map[string]string{"team": "a"}}

	// Without schedules, sizes are drift.
	r := ReadBackCPUFootprint(found, declared)
	if r.Spec.Size != found.Size {
		t.Errorf("sizes %+v, want the group's %+v", r.Spec.Size, found.Size)
	}
	if !slices.Equal(r.Spec.SubnetIDs, declared.Spec.SubnetIDs) {
		t.Errorf("subnets %v: the declared order is kept when the set is the same", r.Spec.SubnetIDs)
	}

	// With schedules, a size the schedule set is not drift; a schedule
	// whose actions are intact stays.
	declared.Spec.Schedules = []Schedule{{Name: "nights", Recurrence: "0 20 * * 1-5", TimeZone: "Asia/Dubai", Duration: 11 * time.Hour, Min: &zero, Max: &zero, Desired: &zero}}
	acts, err := ScheduledActions(declared.Spec.Size, declared.Spec.Schedules)
	if err != nil {
		t.Fatal(err)
	}
	found.ScheduledActions = acts
	r = ReadBackCPUFootprint(found, declared)
	if r.Spec.Size != declared.Spec.Size || len(r.Spec.Schedules) != 1 {
		t.Errorf("with a schedule: sizes %+v, %d schedules; want the declared sizes and the schedule", r.Spec.Size, len(r.Spec.Schedules))
	}

	// An action changed outside: the schedule reads as absent.
	changed := slices.Clone(acts)
	changed[1].Recurrence = "0 9 * * *"
	found.ScheduledActions = changed
	if r = ReadBackCPUFootprint(found, declared); len(r.Spec.Schedules) != 0 {
		t.Errorf("a changed end action: %d schedules, want 0 (planned back)", len(r.Spec.Schedules))
	}

	// Spot read back; tags changed outside.
	found.Spot, found.OnDemandBase, found.Tags = true, 1, map[string]string{"team": "b"}
	r = ReadBackCPUFootprint(found, declared)
	if r.Spec.CapacityType != CapacitySpotMixed || r.Spec.OnDemandBase != 1 || r.TagsAll["team"] != "b" {
		t.Errorf("capacity %q base %d tags %v", r.Spec.CapacityType, r.Spec.OnDemandBase, r.TagsAll)
	}

	// The group deleted outside: recorded as missing.
	r = ReadBackCPUFootprint(&CPUFootprint{Name: "fp", LaunchTemplateID: "lt-1"}, declared)
	if r.GroupName != "" || r.LaunchTemplateID != "lt-1" {
		t.Errorf("group %q template %q", r.GroupName, r.LaunchTemplateID)
	}
}
