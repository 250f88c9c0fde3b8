package cloud_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// TestValidationHookMoto drives a validated footprint's lifecycle hook and
// instance replacement through moto's Auto Scaling: the hook given at
// creation and ensured (created, left alone when equal, changed), an
// instance replaced with the desired capacity kept, the hook deleted (twice:
// a hook already gone is not an error).
func TestValidationHookMoto(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fx := startMotoFootprint(ctx, t, "mlplatform-cpu-hooked")
	as := fx.AS
	hook := cloud.ValidationHook(600)
	g := cloud.FootprintGroup{Name: "mlplatform-cpu-hooked", LaunchTemplateID: fx.LaunchTemplateID, LaunchTemplateVersion: "1",
		InstanceTypes: []string{"c7i.large"}, Min: 0, Max: 3, Desired: 2, SubnetIDs: fx.SubnetIDs[:1], Hook: &hook}
	if err := cloud.CreateFootprintGroup(ctx, as, g); err != nil {
		t.Fatal(err)
	}
	// moto takes no hook at creation: the ensure that follows puts it.
	if err := cloud.EnsureValidationHook(ctx, as, g.Name, hook); err != nil {
		t.Fatal(err)
	}
	got, err := cloud.FindValidationHook(ctx, as, g.Name)
	if err != nil || *got != hook {
		t.Fatalf("hook %+v (%v), want %+v", got, err, hook)
	}
	longer := cloud.ValidationHook(1800)
	if err := cloud.EnsureValidationHook(ctx, as, g.Name, longer); err != nil {
		t.Fatal(err)
	}
	if got, err := cloud.FindValidationHook(ctx, as, g.Name); err != nil || got.HeartbeatSecs != 1800 {
		t.Fatalf("hook after a longer timeout %+v (%v)", got, err)
	}

	before, err := cloud.FindFootprintGroup(ctx, as, g.Name)
	if err != nil || len(before.Instances) != 2 {
		t.Fatalf("group %+v (%v), want 2 instances", before, err)
	}
	victim := before.Instances[0].ID
	if err := cloud.ReplaceGroupInstance(ctx, as, victim); err != nil {
		t.Fatal(err)
	}
	after, err := cloud.FindFootprintGroup(ctx, as, g.Name)
	if err != nil {
		t.Fatal(err)
	}
	if after.Desired != 2 || len(after.Instances) != 2 {
		t.Fatalf("after the replacement: desired %d, %d instances, want 2 and 2", after.Desired, len(after.Instances))
	}
	for _, in := range after.Instances {
		if in.ID == victim {
			t.Fatalf("the replaced instance %s is still in the group", victim)
		}
	}

	for range 2 {
		if err := cloud.DeleteValidationHook(ctx, as, g.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cloud.FindValidationHook(ctx, as, g.Name); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("hook after delete: %v, want ErrNotFound", err)
	}
}
