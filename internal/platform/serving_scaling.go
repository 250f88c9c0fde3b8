package platform

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// servingScalingFor translates a variant's autoscaling.
func servingScalingFor(v ServingVariant) cloud.ServingScaling {
	a := v.Autoscaling
	return cloud.ServingScaling{
		Variant:           v.Name,
		Min:               int32(a.Min),
		Max:               int32(a.Max),
		TargetInvocations: a.TargetInvocations,
		ScaleInCooldown:   int32(a.ScaleInCooldownSeconds),
		ScaleOutCooldown:  int32(a.ScaleOutCooldownSeconds),
	}
}

// scaledVariants are the instance variants of s with autoscaling.
func scaledVariants(s ServingEndpointSpec) []ServingVariant {
	var out []ServingVariant
	for _, v := range s.Variants {
		if v.Autoscaling != nil && v.Serverless == nil {
			out = append(out, v)
		}
	}
	return out
}

// applyServingScaling makes the endpoint's registered autoscaling what s
// declares: each declared variant is registered and its policy put (both
// replace what is there, so a retry after a lost answer is harmless);
// variants in have that s does not scale are deregistered.
func applyServingScaling(ctx context.Context, as cloud.ServingScalingAPI, s ServingEndpointSpec, have map[string]cloud.ServingScaling) error {
	want := scaledVariants(s)
	for _, name := range sortedScalingNames(have) {
		if !slices.ContainsFunc(want, func(v ServingVariant) bool { return v.Name == name }) {
			if err := cloud.DeleteServingScaling(ctx, as, s.Name, name); err != nil {
				return err
			}
		}
	}
	for _, v := range want {
		sc := servingScalingFor(v)
		if h, ok := have[v.Name]; ok && h == sc {
			continue
		}
		if err := cloud.PutServingScaling(ctx, as, s.Name, sc); err != nil {
			return err
		}
	}
	return applyServingSchedules(ctx, as, s)
}

func sortedScalingNames(m map[string]cloud.ServingScaling) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// withServingScaling reads the endpoint's registered autoscaling into ep:
// each scaled variant carries its min, max, target and cooldowns as AWS has
// them (a target changed outside shows as a change), and its count is the
// count its endpoint config declares, not the count it runs: autoscaling
// owns that, so a variant scaled by it is not drift.
func withServingScaling(ctx context.Context, as cloud.ServingScalingAPI, ep *ServingEndpoint) error {
	if ep == nil || as == nil {
		return nil
	}
	have, err := cloud.FindServingScaling(ctx, as, ep.Spec.Name)
	if err != nil {
		return err
	}
	foldServingScaling(ep, have)
	return withServingSchedules(ctx, as, ep, have)
}

func foldServingScaling(ep *ServingEndpoint, have map[string]cloud.ServingScaling) {
	for i := range ep.Spec.Variants {
		v := &ep.Spec.Variants[i]
		sc, ok := have[v.Name]
		if !ok || v.Serverless != nil {
			continue
		}
		v.Autoscaling = &ServingAutoscaling{
			Min:                     int64(sc.Min),
			Max:                     int64(sc.Max),
			TargetInvocations:       sc.TargetInvocations,
			ScaleInCooldownSeconds:  int64(sc.ScaleInCooldown),
			ScaleOutCooldownSeconds: int64(sc.ScaleOutCooldown),
		}
		if n, ok := ep.configCounts[v.Name]; ok {
			v.InitialInstanceCount = n
		}
	}
}

// countsOwnedByScaling sets, in cur, the count of each variant that want
// scales to the count its endpoint config declares, so that a count
// changed by autoscaling does not deploy a new endpoint config.
func countsOwnedByScaling(cur *ServingEndpoint, want ServingEndpointSpec) {
	for i := range cur.Spec.Variants {
		v := &cur.Spec.Variants[i]
		for _, w := range want.Variants {
			if w.Name == v.Name && w.Autoscaling != nil && v.Serverless == nil {
				if n, ok := cur.configCounts[v.Name]; ok {
					v.InitialInstanceCount = n
				}
			}
		}
	}
}

// scalingBlockedByUpdate are the registered variants an update of cur to s
// must deregister before UpdateEndpoint: Application Auto Scaling refuses
// an update that changes the instance type of a scaled variant, and a
// variant that goes away takes its target with it.
func scalingBlockedByUpdate(cur, s ServingEndpointSpec, have map[string]cloud.ServingScaling) []string {
	var out []string
	for _, name := range sortedScalingNames(have) {
		var before, after *ServingVariant
		for i := range cur.Variants {
			if cur.Variants[i].Name == name {
				before = &cur.Variants[i]
			}
		}
		for i := range s.Variants {
			if s.Variants[i].Name == name {
				after = &s.Variants[i]
			}
		}
		if after == nil || after.Serverless != nil || (before != nil && before.InstanceType != after.InstanceType) {
			out = append(out, name)
		}
	}
	return out
}

// deleteAllServingScaling deregisters every scaled variant of the endpoint.
func deleteAllServingScaling(ctx context.Context, as cloud.ServingScalingAPI, endpoint string) error {
	have, err := cloud.FindServingScaling(ctx, as, endpoint)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range sortedScalingNames(have) {
		errs = append(errs, cloud.DeleteServingScaling(ctx, as, endpoint, name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deregistering autoscaling of endpoint %s: %w", endpoint, err)
	}
	return nil
}
