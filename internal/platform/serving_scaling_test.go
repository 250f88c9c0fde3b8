package platform

import (
	"reflect"
	"slices"
	"testing"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

func scaledEndpoint() *ServingEndpoint {
	return &ServingEndpoint{
		Spec: ServingEndpointSpec{Name: "fraud", Variants: []ServingVariant{
			{Name: "a", InstanceType: "ml.m5.large", InitialInstanceCount: 3}, // runs 3, config says 1
			{Name: "b", InstanceType: "ml.m5.large", InitialInstanceCount: 5}, // not scaled: running count stays
		}},
		configCounts: map[string]int64{"a": 1, "b": 2},
	}
}

// A variant scaled by autoscaling reads back its config's count and the
// registered bounds; a variant without autoscaling keeps the running count.
func TestFoldServingScaling(t *testing.T) {
	ep := scaledEndpoint()
	foldServingScaling(ep, map[string]cloud.ServingScaling{"a": {Variant: "a", Min: 1, Max: 4, TargetInvocations: 70, ScaleInCooldown: 300, ScaleOutCooldown: 60}})
	a, b := ep.Spec.Variants[0], ep.Spec.Variants[1]
	if a.InitialInstanceCount != 1 || a.Autoscaling == nil || !reflect.DeepEqual(*a.Autoscaling, ServingAutoscaling{Min: 1, Max: 4, TargetInvocations: 70, ScaleInCooldownSeconds: 300, ScaleOutCooldownSeconds: 60}) {
		t.Fatalf("scaled variant read back as %+v %+v", a, a.Autoscaling)
	}
	if b.InitialInstanceCount != 5 || b.Autoscaling != nil {
		t.Fatalf("unscaled variant read back as %+v", b)
	}
}

// The read-back shows a target changed outside as a change.
func TestReadBackServingScalingDrift(t *testing.T) {
	ep := scaledEndpoint()
	foldServingScaling(ep, map[string]cloud.ServingScaling{"a": {Variant: "a", Min: 1, Max: 4, TargetInvocations: 999}})
	declared := ServingEndpointSpec{Name: "fraud", Variants: []ServingVariant{
		{Name: "a", InstanceType: "ml.m5.large", InitialInstanceCount: 1, Autoscaling: &ServingAutoscaling{Min: 1, Max: 4, TargetInvocations: 70}},
		{Name: "b", InstanceType: "ml.m5.large", InitialInstanceCount: 2},
	}}
	rb := ReadBackServingEndpointOf(ep, declared, "", nil)
	if got := rb.Spec.Variants[0].Autoscaling; got == nil || got.TargetInvocations != 999 {
		t.Fatalf("target changed outside read back as %+v", got)
	}
	if rb.Spec.Variants[0].InitialInstanceCount != 1 {
		t.Fatalf("scaled variant's count read back as %d, want the config's 1", rb.Spec.Variants[0].InitialInstanceCount)
	}
}

// An update sees a count changed by autoscaling as no change of config, and
// deregisters first only the variants whose instance type changes or that go.
func TestServingScalingUpdateRules(t *testing.T) {
	cur := scaledEndpoint()
	want := ServingEndpointSpec{Name: "fraud", Variants: []ServingVariant{
		{Name: "a", InstanceType: "ml.m5.large", InitialInstanceCount: 1, Autoscaling: &ServingAutoscaling{Min: 1, Max: 4, TargetInvocations: 70}},
		{Name: "b", InstanceType: "ml.m5.large", InitialInstanceCount: 5},
	}}
	countsOwnedByScaling(cur, want)
	if p := PlanServingEndpoint(cur.Spec, want, nil); p.NewConfig() {
		t.Fatalf("count changed by autoscaling deploys a new config: %+v", p.Config)
	}
	have := map[string]cloud.ServingScaling{"a": {Variant: "a"}, "b": {Variant: "b"}, "c": {Variant: "c"}}
	next := ServingEndpointSpec{Name: "fraud", Variants: []ServingVariant{
		{Name: "a", InstanceType: "ml.c5.large", InitialInstanceCount: 1},
		{Name: "b", InstanceType: "ml.m5.large", InitialInstanceCount: 5},
	}}
	if got := scalingBlockedByUpdate(cur.Spec, next, have); !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("deregistered before the update: %v, want [a c]", got)
	}
}
