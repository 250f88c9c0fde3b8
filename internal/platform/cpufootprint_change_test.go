package platform

import (
	"slices"
	"testing"
	"time"
)

// TestPlanCPUFootprintChangeSchedules: schedules are compared by value, not
// by the addresses of their sizes, so an unchanged schedule read back from
// state is no change (a Pulumi Diff would otherwise update on every run).
func TestPlanCPUFootprintChangeSchedules(t *testing.T) {
	sched := func(desired int) []Schedule {
		zero := 0
		return []Schedule{{Name: "off-hours", Recurrence: "0 20 * * 1-5", Duration: 11 * time.Hour, Min: &zero, Max: &zero, Desired: &desired}}
	}
	spec := CPUFootprintSpec{Name: "x", InstanceType: "c7i.large", Size: GroupSize{Min: 1, Max: 2, Desired: 1}, Schedules: sched(0), MetadataHopLimit: 1}
	prior := CPUFootprintRecord{Spec: spec, Decision: CPUDecision{InstanceType: "c7i.large"}, InstanceTypes: []string{"c7i.large"},
		SubnetIDs: []string{"subnet-1"}, ImageID: "ami-1", TagsAll: map[string]string{}, GroupName: "g", LaunchTemplateID: "lt"}
	prior.Spec.Schedules = sched(0)
	plan := &CPUFootprintPlan{Decision: prior.Decision, Decided: true, InstanceTypes: []string{"c7i.large"}, SubnetIDs: []string{"subnet-1"}, ImageID: "ami-1", TagsAll: map[string]string{}}
	if c := cpuFootprintChange(prior, spec, plan); !c.Empty() {
		t.Fatalf("same schedules (other pointers): change %+v, want none", c)
	}
	spec.Schedules = sched(1)
	c := cpuFootprintChange(prior, spec, plan)
	if !slices.ContainsFunc(c.InPlace, func(i Change) bool { return i.Path == "schedule" }) || len(c.Replace)+len(c.Roll) != 0 {
		t.Fatalf("desired 0 -> 1 in a schedule: change %+v, want schedule in place", c)
	}
}
