package conformance

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/mlplatform/mlplatform/acctest"
)

// cpuInputs is a CPU footprint of one c7i.large (sizes 1/2/1) on the
// default subnets, changed by over.
func cpuInputs(name string, over map[string]any) func(*fixtures) map[string]any {
	return func(*fixtures) map[string]any {
		return merge(map[string]any{
			"name":             name,
			"instance_type":    "c7i.large",
			"min_size":         1,
			"max_size":         2,
			"desired_capacity": 1,
			"root_volume":      map[string]any{"size_gib": 20},
			"tags":             map[string]any{"team": "smb"},
		}, over)
	}
}

// offHours scales a footprint to zero from 20:00 to 07:00 on working days.
var offHours = blocks{{"name": "off-hours", "recurrence": "0 20 * * 1-5", "duration": "11h", "min_size": 0, "max_size": 0, "desired_capacity": 0}}

// withSubnetIn sets subnet_ids to the default subnet of zoneID, known at
// plan or, wrapped, only at apply.
func withSubnetIn(base func(*fixtures) map[string]any, zoneID string, atApply bool) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		in := base(f)
		var id any = f.defaultSubnets[zoneID]
		if atApply {
			id = unknown{id}
		}
		in["subnet_ids"] = []any{id}
		return in
	}
}

func cpuFootprintScenarios() []scenario {
	return []scenario{
		{
			name: "cpu_footprint/lifecycle", kind: cpuFootprint, resource: "conf-cpu", residency: awsManagedKeys,
			steps: []step{
				{name: "create from requirements", inputs: cpuInputs("conf-cpu", map[string]any{"instance_type": nil, "requirements": map[string]any{"min_vcpus": 2, "cpu_features": []any{"avx512f"}}}),
					want: created, check: wantGroup("mlplatform-cpu-conf-cpu", 1, 2, 1, 0)},
				{name: "sizes change in place", inputs: cpuInputs("conf-cpu", map[string]any{"instance_type": nil, "requirements": map[string]any{"min_vcpus": 2, "cpu_features": []any{"avx512f"}}, "max_size": 3, "desired_capacity": 2}),
					want: updated, check: wantGroup("mlplatform-cpu-conf-cpu", 1, 3, 2, 0)},
				{name: "explicit type rolls in place", inputs: cpuInputs("conf-cpu", map[string]any{"instance_type": "m7i.large", "max_size": 3, "desired_capacity": 2}),
					want: updated, check: wantTemplateType("mlplatform-cpu-conf-cpu", "m7i.large")},
				{name: "schedule added in place", inputs: cpuInputs("conf-cpu", map[string]any{"instance_type": "m7i.large", "max_size": 3, "desired_capacity": 2, "schedule": offHours}),
					want: updated, check: wantGroup("mlplatform-cpu-conf-cpu", 1, 3, 2, 2)},
				{name: "new name replaces", inputs: cpuInputs("conf-cpu-2", map[string]any{"instance_type": "m7i.large", "max_size": 3, "desired_capacity": 2}),
					want: replaced, check: wantGroup("mlplatform-cpu-conf-cpu-2", 1, 3, 2, 0)},
			},
		},
		{
			name: "cpu_footprint/selection", kind: cpuFootprint, resource: "conf-cpu-sel", residency: awsManagedKeys,
			steps: []step{
				{name: "AMX required: a type with AMX, never a cheaper one without", inputs: cpuInputs("conf-cpu-sel", map[string]any{"instance_type": nil,
					"requirements": map[string]any{"min_vcpus": 2, "cpu_features": []any{"amx_tile", "amx_bf16"}}}),
					want: created, check: wantTemplateTypeLike("mlplatform-cpu-conf-cpu-sel", `^[cmr][78]i(-flex)?\.`)},
				{name: "arm64 required: a Graviton type, rolled in place", inputs: cpuInputs("conf-cpu-sel", map[string]any{"instance_type": nil,
					"requirements": map[string]any{"min_vcpus": 4, "architecture": "arm64"}}),
					want: updated, check: wantTemplateTypeLike("mlplatform-cpu-conf-cpu-sel", `^[a-z]+[0-9]+g[a-z]*\.`)},
				{name: "spot above an on-demand base, in place", inputs: cpuInputs("conf-cpu-sel", map[string]any{"instance_type": nil,
					"requirements": map[string]any{"min_vcpus": 4, "architecture": "arm64"}, "capacity_type": "spot", "on_demand_base": 1}),
					want: updated, check: wantSpot("mlplatform-cpu-conf-cpu-sel", 1, 5)},
			},
		},
		{
			name: "cpu_footprint/schedule", kind: cpuFootprint, resource: "conf-cpu-sch", residency: awsManagedKeys,
			steps: []step{
				{name: "create with a scale-to-zero schedule", inputs: cpuInputs("conf-cpu-sch", map[string]any{"schedule": offHours}), want: created, check: wantGroup("mlplatform-cpu-conf-cpu-sch", 1, 2, 1, 2)},
				{name: "the schedule scaled the group to zero: not drift", outOfBand: scaleGroup("mlplatform-cpu-conf-cpu-sch", 0), inputs: cpuInputs("conf-cpu-sch", map[string]any{"schedule": offHours}),
					want: noChange, noWrites: true, check: wantGroup("mlplatform-cpu-conf-cpu-sch", 0, 0, 0, 2)},
				{name: "its end action deleted outside: drift, made again in place", outOfBand: deleteScheduledAction("mlplatform-cpu-conf-cpu-sch", "off-hours-end"),
					inputs: cpuInputs("conf-cpu-sch", map[string]any{"schedule": offHours}), want: updated,
					check: wantRecurrences("mlplatform-cpu-conf-cpu-sch", map[string]string{"off-hours": "0 20 * * 1-5 0", "off-hours-end": "0 7 * * 2-6 1"})},
			},
		},
		{
			name: "cpu_footprint/refusals", kind: cpuFootprint, resource: "conf-cpu-ref", residency: awsManagedKeys,
			steps: []step{
				{name: "no type meets the requirements: refused with the nearest candidates, zero writes",
					inputs: cpuInputs("conf-cpu-ref", map[string]any{"instance_type": nil, "requirements": map[string]any{"min_vcpus": 2, "architecture": "arm64", "cpu_features": []any{"amx_tile"}}}),
					want:   refused, messages: []string{"No instance type meets the requirements", "amx_tile"}, noWrites: true},
				{name: "subnet in an excluded zone refused, zero writes", residency: excludeAz3, inputs: withSubnetIn(cpuInputs("conf-cpu-ref", nil), "mec1-az3", false),
					want: refused, messages: []string{"zone-excluded", "mec1-az3"}, noWrites: true},
				{name: "audit mode: created with a warning", residency: auditNoAz3, inputs: withSubnetIn(cpuInputs("conf-cpu-ref", nil), "mec1-az3", false),
					want: created, warnings: []string{"zone-excluded"}, check: wantGroup("mlplatform-cpu-conf-cpu-ref", 1, 2, 1, 0)},
			},
		},
		{
			name: "cpu_footprint/unknown", kind: cpuFootprint, resource: "conf-cpu-unk", residency: awsManagedKeys,
			steps: []step{
				{name: "subnet in an excluded zone known only at apply: refused at apply, zero writes", residency: excludeAz3, inputs: withSubnetIn(cpuInputs("conf-cpu-unk", nil), "mec1-az3", true),
					want: refused, refusedAtApply: true, messages: []string{"zone-excluded", "mec1-az3"}, noWrites: true},
				{name: "subnet known only at apply: created", residency: excludeAz3, inputs: withSubnetIn(cpuInputs("conf-cpu-unk", nil), "mec1-az1", true),
					want: created, check: wantGroup("mlplatform-cpu-conf-cpu-unk", 1, 2, 1, 0)},
				{name: "tag value known only at apply: updated in place", residency: excludeAz3, inputs: withSubnetIn(cpuInputs("conf-cpu-unk", map[string]any{"tags": map[string]any{"team": unknown{"ops"}}}), "mec1-az1", false),
					want: updated, check: wantGroupTag("mlplatform-cpu-conf-cpu-unk", "team", "ops")},
				{name: "schedule duration known only at apply: its action and its end action, the end at 07:00", residency: excludeAz3,
					inputs: withSubnetIn(cpuInputs("conf-cpu-unk", map[string]any{"tags": map[string]any{"team": "ops"}, "schedule": blocks{{"name": "off-hours",
						"recurrence": "0 20 * * 1-5", "duration": unknown{"11h"}, "min_size": 0, "max_size": 0, "desired_capacity": 0}}}), "mec1-az1", false),
					want: updated, check: wantRecurrences("mlplatform-cpu-conf-cpu-unk", map[string]string{"off-hours": "0 20 * * 1-5 0", "off-hours-end": "0 7 * * 2-6 1"})},
			},
		},
		{
			name: "cpu_footprint/import_and_drift", kind: cpuFootprint, resource: "conf-cpu-imp", residency: awsManagedKeys,
			steps: []step{
				{name: "create", inputs: importCPU, want: created},
				{name: "import", inputs: importCPU, importID: "conf-cpu-imp", want: imported},
				{name: "group deleted outside: made again", outOfBand: deleteGroup("mlplatform-cpu-conf-cpu-imp"), inputs: importCPU, want: updated, check: wantGroup("mlplatform-cpu-conf-cpu-imp", 1, 2, 1, 0)},
			},
		},
	}
}

// importCPU is a footprint whose every input an import reads back: an
// explicit type, the AMI id itself, explicit subnets.
func importCPU(f *fixtures) map[string]any {
	return map[string]any{
		"name":             "conf-cpu-imp",
		"instance_type":    "c7i.large",
		"min_size":         1,
		"max_size":         2,
		"desired_capacity": 1,
		"image":            f.amiA,
		"root_volume":      map[string]any{"size_gib": 20},
		"subnet_ids":       []any{f.defaultSubnets["mec1-az1"]},
		"tags":             map[string]any{"team": "smb"},
	}
}

func describeGroup(ctx context.Context, h *acctest.Harness, name string) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return nil, err
	}
	return c.AutoScaling.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
}

// wantGroup checks the group's sizes and how many scheduled actions it has.
func wantGroup(name string, minSize, maxSize, desired int32, actions int) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		out, err := describeGroup(ctx, h, name)
		if err != nil {
			return err
		}
		if len(out.AutoScalingGroups) != 1 {
			return fmt.Errorf("%d groups named %s, want 1", len(out.AutoScalingGroups), name)
		}
		g := out.AutoScalingGroups[0]
		if got := [3]int32{aws.ToInt32(g.MinSize), aws.ToInt32(g.MaxSize), aws.ToInt32(g.DesiredCapacity)}; got != [3]int32{minSize, maxSize, desired} {
			return fmt.Errorf("group %s sizes %v, want %v", name, got, [3]int32{minSize, maxSize, desired})
		}
		sa, err := groupScheduledActions(ctx, h, name)
		if err != nil {
			return err
		}
		if len(sa) != actions {
			return fmt.Errorf("group %s has %d scheduled actions, want %d", name, len(sa), actions)
		}
		return nil
	}
}

// groupScheduledActions lists the scheduled actions of group name.
func groupScheduledActions(ctx context.Context, h *acctest.Harness, name string) ([]astypes.ScheduledUpdateGroupAction, error) {
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return nil, err
	}
	sa, err := c.AutoScaling.DescribeScheduledActions(ctx, &autoscaling.DescribeScheduledActionsInput{AutoScalingGroupName: aws.String(name)})
	if err != nil {
		return nil, err
	}
	return sa.ScheduledUpdateGroupActions, nil
}

// wantRecurrences checks the group's scheduled actions: each name's
// recurrence and desired capacity, as "recurrence desired".
func wantRecurrences(name string, want map[string]string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		sa, err := groupScheduledActions(ctx, h, name)
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, a := range sa {
			got[aws.ToString(a.ScheduledActionName)] = fmt.Sprintf("%s %d", aws.ToString(a.Recurrence), aws.ToInt32(a.DesiredCapacity))
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("scheduled actions of %s: %v, want %v", name, got, want)
		}
		return nil
	}
}

// wantGroupTag checks a tag of the group.
func wantGroupTag(name, key, value string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		out, err := describeGroup(ctx, h, name)
		if err != nil || len(out.AutoScalingGroups) != 1 {
			return fmt.Errorf("finding group %s: %v", name, err)
		}
		i := slices.IndexFunc(out.AutoScalingGroups[0].Tags, func(t astypes.TagDescription) bool { return aws.ToString(t.Key) == key })
		if i < 0 || aws.ToString(out.AutoScalingGroups[0].Tags[i].Value) != value {
			return fmt.Errorf("group %s tags %v: want %s=%s", name, out.AutoScalingGroups[0].Tags, key, value)
		}
		return nil
	}
}

// wantTemplateType checks the instance type of the launch template version
// the group launches.
func wantTemplateType(name, instanceType string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		out, err := c.EC2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String(name), Versions: []string{"$Latest"}})
		if err != nil {
			return err
		}
		if len(out.LaunchTemplateVersions) != 1 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
			return fmt.Errorf("no latest version of launch template %s", name)
		}
		if got := string(out.LaunchTemplateVersions[0].LaunchTemplateData.InstanceType); got != instanceType {
			return fmt.Errorf("launch template %s launches %s, want %s", name, got, instanceType)
		}
		return nil
	}
}

// wantTemplateTypeLike checks the launch template's type matches pattern.
func wantTemplateTypeLike(name, pattern string) func(context.Context, *acctest.Harness, *fixtures) error {
	re := regexp.MustCompile(pattern)
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		out, err := c.EC2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String(name), Versions: []string{"$Latest"}})
		if err != nil {
			return err
		}
		if len(out.LaunchTemplateVersions) != 1 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
			return fmt.Errorf("no latest version of launch template %s", name)
		}
		if got := string(out.LaunchTemplateVersions[0].LaunchTemplateData.InstanceType); !re.MatchString(got) {
			return fmt.Errorf("launch template %s launches %s, want a type like %s", name, got, pattern)
		}
		return nil
	}
}

// wantSpot checks the group's mixed instances policy: spot above base
// On-Demand instances, drawn from n types.
func wantSpot(name string, base int32, n int) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		out, err := describeGroup(ctx, h, name)
		if err != nil || len(out.AutoScalingGroups) != 1 {
			return fmt.Errorf("finding group %s: %v", name, err)
		}
		mp := out.AutoScalingGroups[0].MixedInstancesPolicy
		if mp == nil || mp.InstancesDistribution == nil || mp.LaunchTemplate == nil {
			return fmt.Errorf("group %s has no mixed instances policy", name)
		}
		d := mp.InstancesDistribution
		if aws.ToInt32(d.OnDemandBaseCapacity) != base || aws.ToInt32(d.OnDemandPercentageAboveBaseCapacity) != 0 || len(mp.LaunchTemplate.Overrides) != n {
			return fmt.Errorf("group %s: on-demand base %d, %d%% above it, %d types; want base %d, 0%%, %d types",
				name, aws.ToInt32(d.OnDemandBaseCapacity), aws.ToInt32(d.OnDemandPercentageAboveBaseCapacity), len(mp.LaunchTemplate.Overrides), base, n)
		}
		return nil
	}
}

// scaleGroup sets the group's sizes outside the front end, as a scheduled
// action does.
func scaleGroup(name string, size int32) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		ctx := context.Background()
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AutoScaling.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(name),
			MinSize: aws.Int32(size), MaxSize: aws.Int32(size), DesiredCapacity: aws.Int32(size)}); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteScheduledAction deletes a scheduled action of the group outside
// the front end.
func deleteScheduledAction(group, action string) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		ctx := context.Background()
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AutoScaling.DeleteScheduledAction(ctx, &autoscaling.DeleteScheduledActionInput{AutoScalingGroupName: aws.String(group),
			ScheduledActionName: aws.String(action)}); err != nil {
			t.Fatal(err)
		}
	}
}

// deleteGroup deletes the group outside the front end (its launch template
// stays).
func deleteGroup(name string) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		ctx := context.Background()
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AutoScaling.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String(name), ForceDelete: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
}

// defaultSubnetsByZone returns the default subnet of each zone id.
func defaultSubnetsByZone(ctx context.Context, c *ec2.Client) (map[string]string, error) {
	out, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, s := range out.Subnets {
		m[aws.ToString(s.AvailabilityZoneId)] = aws.ToString(s.SubnetId)
	}
	return m, nil
}
