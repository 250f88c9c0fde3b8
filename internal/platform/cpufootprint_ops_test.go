package platform_test

import (
	"context"

	"errors"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// TestDecideCPUFootprint decides against the emulator's live offerings in
// me-central-1, with a zone excluded by residency.
func TestDecideCPUFootprint(t *testing.T) {
	h := acctest.SetupEmulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := platform.Open(ctx, platform.Config{Region: acctest.Region, Endpoints: h.Endpoints(),
		Residency: residency.PolicyConfig{Jurisdiction: "AE", ExcludedZoneIDs: []string{"mec1-az2"}}})
	if err != nil {
		t.Fatal(err)
	}
	spec := platform.CPUFootprintSpec{
		Name:         "smb",
		Requirements: platform.CPURequirements{MinVCPUs: 2, CPUFeatures: []string{"amx_tile"}},
		CapacityType: platform.CapacityOnDemandOnly,
		Size:         platform.GroupSize{Min: 0, Max: 2, Desired: 1},
	}
	d, ok, err := env.DecideCPUFootprint(ctx, spec)
	if err != nil || !ok {
		t.Fatalf("decide: %v, %v", ok, err)
	}
	if !strings.HasPrefix(d.InstanceType, "c7i.") && !strings.HasPrefix(d.InstanceType, "m7i.") {
		t.Errorf("chose %s: want a type with AMX (%s)", d.InstanceType, d.Reason)
	}
	for _, z := range d.ZoneIDs {
		if z == "mec1-az2" {
			t.Errorf("zones %v include the excluded mec1-az2", d.ZoneIDs)
		}
	}
	if len(d.ZoneIDs) == 0 || d.MonthlyAtDesired <= 0 {
		t.Errorf("decision %+v", d)
	}

	// An unknown requirement: decided at apply, not rejected.
	spec.Unknown = []string{"requirements.cpu_features"}
	if _, ok, err := env.DecideCPUFootprint(ctx, spec); ok || err != nil {
		t.Errorf("unknown requirement: ok %v, err %v; want decided later", ok, err)
	}

	// Bad input: the attribute path, before any AWS call.
	spec.Unknown = nil
	spec.Size = platform.GroupSize{Min: 3, Max: 2, Desired: 2}
	_, _, err = env.DecideCPUFootprint(ctx, spec)
	var pe *platform.RefusedError
	if !errors.As(err, &pe) || pe.Problems[0].Path != "min_size" {
		t.Errorf("err = %v, want a problem at min_size", err)
	}
}

// TestCPUFootprintLifecycle drives the core verbs against the emulator:
// create (type decided, launch template, group, scheduled actions), a
// re-create refused, an in-place update, a type change rolled by instance
// refresh, a read-back where a schedule's sizes are not drift, delete.
func TestCPUFootprintLifecycle(t *testing.T) {
	h := acctest.SetupEmulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := platform.Open(ctx, platform.Config{Region: acctest.Region, Endpoints: h.Endpoints(),
		Residency: residency.PolicyConfig{Jurisdiction: "AE", ExcludedZoneIDs: []string{"mec1-az2"}, RequireCustomerManagedKeys: awsManagedKeys()}, DefaultTags: map[string]string{"owner": "ml"},
		Polling: platform.PollingEvery(10 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	zero := 0
	spec := platform.CPUFootprintSpec{
		Name:         "smb",
		InstanceType: "c7i.large",
		Size:         platform.GroupSize{Min: 1, Max: 3, Desired: 2},
		Image:        "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
		Tags:         map[string]string{"team": "a"},
		RootVolume:   platform.Volume{SizeGiB: 20},
		Schedules:    []platform.Schedule{{Name: "nights", Recurrence: "0 20 * * 1-5", Duration: 11 * time.Hour, Min: &zero, Max: &zero, Desired: &zero}},
	}
	p, err := env.PlanCPUFootprint(ctx, nil, spec)
	if err != nil || p.Err(env.Policy) != nil {
		t.Fatalf("plan: %v %v", err, p.Err(env.Policy))
	}
	if len(p.SubnetIDs) != 2 || p.ImageID == "" || p.Decision.InstanceType != "c7i.large" {
		t.Fatalf("plan resolved subnets %v image %q type %q", p.SubnetIDs, p.ImageID, p.Decision.InstanceType)
	}
	f, err := env.CreateCPUFootprint(ctx, spec, platform.CPUFootprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.GroupName != "mlplatform-cpu-smb" || f.LaunchTemplateID == "" || f.CreationToken == "" || len(f.Instances) != 2 || len(f.ScheduledActions) != 2 {
		t.Fatalf("created %+v", f)
	}
	if f.Tags["team"] != "a" || f.Tags["owner"] != "ml" {
		t.Errorf("group tags %v", f.Tags)
	}
	var ee *platform.NotOursError
	if _, err := env.CreateCPUFootprint(ctx, spec, platform.CPUFootprintOptions{}); !errors.As(err, &ee) {
		t.Errorf("second create: %v, want a NotOursError", err)
	}
	rec := platform.RecordCPUFootprint(f, platform.CPUFootprintRecord{Spec: spec, Decision: p.Decision, InstanceTypes: p.InstanceTypes, SubnetIDs: p.SubnetIDs, ImageID: p.ImageID, TagsAll: p.TagsAll})
	rec.Spec.CreationToken = f.CreationToken

	// The schedule fired (as Auto Scaling would): not drift.
	if _, err := env.Clients.AutoScaling.UpdateAutoScalingGroup(ctx, scaleToZero(f.GroupName)); err != nil {
		t.Fatal(err)
	}
	found, err := env.FindCPUFootprint(ctx, "smb", "")
	if err != nil {
		t.Fatal(err)
	}
	rb := platform.ReadBackCPUFootprint(found, rec)
	if rb.Spec.Size != spec.Size || len(rb.Spec.Schedules) != 1 {
		t.Errorf("read back sizes %+v schedules %d: a schedule's sizes are not drift", rb.Spec.Size, len(rb.Spec.Schedules))
	}
	p2, _ := env.PlanCPUFootprint(ctx, &rb, spec)
	if !p2.Change.Empty() {
		t.Errorf("plan after the schedule fired: %+v, want no change", p2.Change)
	}

	// The window ends.
	if _, err := env.Clients.AutoScaling.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(f.GroupName),
		MinSize: aws.Int32(1), MaxSize: aws.Int32(3), DesiredCapacity: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}

	// A type change rolls the instances, keeping 50% in service.
	spec.InstanceType, spec.MinHealthyPercentage = "m7i.large", 50
	spec.Size.Desired = 1
	p3, _ := env.PlanCPUFootprint(ctx, &rb, spec)
	if len(p3.Change.Roll) != 1 || p3.Change.Roll[0].Path != "instance_type" || len(p3.Change.Replace) != 0 {
		t.Errorf("type change plan %+v", p3.Change)
	}
	f, err = env.UpdateCPUFootprint(ctx, rb, spec, platform.CPUFootprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Refreshes.Started(); len(got) != 1 || got[0] != "mlplatform-cpu-smb:50" {
		t.Errorf("refreshes %v", got)
	}
	for _, in := range f.Instances {
		if in.InstanceType != "m7i.large" {
			t.Errorf("instance %s is %s after the roll", in.ID, in.InstanceType)
		}
	}
	if f.Size != spec.Size {
		t.Errorf("sizes after update %+v: a declared change of sizes is set, want %+v", f.Size, spec.Size)
	}

	// Another owner's token: nothing deleted.
	if err := env.DeleteCPUFootprint(ctx, "smb", "someone-else", platform.CPUFootprintOptions{}); err == nil {
		t.Error("delete with another token succeeded")
	}
	if err := env.DeleteCPUFootprint(ctx, "smb", f.CreationToken, platform.CPUFootprintOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.FindCPUFootprint(ctx, "smb", ""); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("find after delete: %v", err)
	}
}

func scaleToZero(group string) *autoscaling.UpdateAutoScalingGroupInput {
	return &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(group), MinSize: aws.Int32(0), MaxSize: aws.Int32(0), DesiredCapacity: aws.Int32(0)}
}

// awsManagedKeys is require_customer_managed_keys = false, for the tests
// that are not about keys: jurisdiction AE requires customer managed keys by
// default.
func awsManagedKeys() *bool {
	b := false
	return &b
}
