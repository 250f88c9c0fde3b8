package pulumi

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The CPU footprint's validation gate: the GPU cluster's block (GpuValidation,
// the same translation), its profile and per-instance results as outputs.

// footprintValidationSpec translates the block; nil without one.
func footprintValidationSpec(v *GpuValidation, s *platform.CPUFootprintSpec) *platform.ValidationSpec {
	var g platform.GPUClusterSpec
	out := v.validationSpec(&g)
	s.InputProblems = append(s.InputProblems, g.InputProblems...)
	return out
}

// footprintValidationOutputs are the gate's outputs of a footprint: the
// profile the instances run, what the gate found, and the approver's
// configuration.
func footprintValidationOutputs(f *platform.CPUFootprint) (*string, []GpuValidationResult, *string) {
	if f == nil {
		return nil, nil, nil
	}
	c := &platform.GPUCluster{Validation: f.Validation}
	var approver *string
	if f.Applied != nil {
		c.ValidationProfile = f.Applied.Profile
		if f.Applied.Approver != "" {
			approver = ptr(f.Applied.Approver)
		}
	}
	prof, res := validationOutputs(c)
	return prof, res, approver
}

// warnFootprintValidation logs a warn result.
func warnFootprintValidation(ctx context.Context, f *platform.CPUFootprint) {
	if f != nil && f.ValidationWarning != "" {
		p.GetLogger(ctx).Warning(f.ValidationWarning)
	}
}

// footprintSlurmConfig is what the footprint's apply rendered for the
// Slurm controller; nil without orchestrator.slurm.
func footprintSlurmConfig(f *platform.CPUFootprint) *string {
	if f == nil || f.Applied == nil {
		return nil
	}
	return optString(f.Applied.SlurmControllerConfig)
}
