package platform

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// ResidencyVerdict is the residency verdict of a composition (the Pulumi
// Platform component): every violation of its parts, in any mode, and what
// could not be checked. Compliant only when both are empty: a check that
// could not run is never a pass.
type ResidencyVerdict struct {
	Policy     string // the policy in words
	Mode       residency.Mode
	Violations []residency.Violation // paths prefixed with the part: training.zone_id
	Unchecked  []string              // what could not be checked, and why
}

// Compliant reports whether every part was checked and none broke a rule.
func (v ResidencyVerdict) Compliant() bool { return len(v.Violations) == 0 && len(v.Unchecked) == 0 }

// Rules lists the distinct rules broken, sorted.
func (v ResidencyVerdict) Rules() []string {
	var out []string
	for _, x := range v.Violations {
		if !slices.Contains(out, x.Rule) {
			out = append(out, x.Rule)
		}
	}
	slices.Sort(out)
	return out
}

// String says the verdict in one sentence, for a summary output.
func (v ResidencyVerdict) String() string {
	var b strings.Builder
	switch {
	case len(v.Violations) > 0:
		paths := make([]string, 0, len(v.Violations))
		for _, x := range v.Violations {
			if !slices.Contains(paths, x.Path) {
				paths = append(paths, x.Path)
			}
		}
		noun := "violations"
		if len(v.Violations) == 1 {
			noun = "violation"
		}
		fmt.Fprintf(&b, "NOT compliant with %s: %d residency %s in %s mode (rules: %s; at %s)",
			v.Policy, len(v.Violations), noun, v.Mode, strings.Join(v.Rules(), ", "), strings.Join(paths, ", "))
	case len(v.Unchecked) > 0:
		fmt.Fprintf(&b, "residency NOT verified against %s", v.Policy)
	default:
		return "compliant with " + v.Policy
	}
	if len(v.Unchecked) > 0 {
		fmt.Fprintf(&b, "; not checked: %s", strings.Join(v.Unchecked, "; "))
	}
	return b.String()
}

// UncheckedVerdict is the verdict when no check could run at all.
func UncheckedVerdict(why string) ResidencyVerdict {
	return ResidencyVerdict{Policy: "the provider's residency policy", Unchecked: []string{why}}
}

// PolicyText is the environment's residency policy in words.
func (e *Env) PolicyText() string {
	p := e.Policy
	return fmt.Sprintf("residency %s (%s, %s mode): allowed regions %s", p.Jurisdiction.Code, p.Jurisdiction.Name, p.Mode, strings.Join(p.AllowedRegions, ", "))
}

// CheckPlatformResidency runs the residency checks of a platform's parts,
// all values known, exactly as each part's own plan runs them: the training
// cluster's (planGPUCluster) and the feature store's
// (CheckFeatureStoreResidency). In audit mode the parts only warn, so this
// verdict is where their violations are counted.
func (e *Env) CheckPlatformResidency(ctx context.Context, cluster *GPUClusterSpec, store *FeatureStoreSpec) ResidencyVerdict {
	v := ResidencyVerdict{Policy: e.PolicyText(), Mode: e.Policy.Mode}
	add := func(part string, vs []residency.Violation) {
		for _, x := range vs {
			x.Path = part + "." + x.Path
			v.Violations = append(v.Violations, x)
		}
	}
	if cluster != nil {
		plan, err := e.planGPUCluster(ctx, *cluster)
		if err != nil {
			v.Unchecked = append(v.Unchecked, fmt.Sprintf("training cluster %s: %v", cluster.Name, err))
		} else {
			add("training", plan.Violations)
		}
	}
	if store != nil {
		vs, err := e.CheckFeatureStoreResidency(ctx, *store, nil)
		if err != nil {
			v.Unchecked = append(v.Unchecked, fmt.Sprintf("feature store %s: %v", store.Name, err))
		} else {
			add("features", vs)
		}
	}
	return v
}
