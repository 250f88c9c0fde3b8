package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The CPU footprint's validation block and its computed attributes: the
// GPU cluster's block (same attributes, same translation), described for
// a footprint.

// cpuFootprintValidationSchema is the validation block, the profile, the
// bootstrap and the per-instance results.
func cpuFootprintValidationSchema() map[string]schema.Attribute {
	attrs := gpuValidationSchema()
	v := attrs["validation"].(schema.SingleNestedAttribute)
	v.MarkdownDescription = "The validation gate: every instance runs hwprobe at boot against the profile rendered from the chosen type (its vCPUs, memory and CPU features from the instance catalog, and the benchmarks below) " +
		"and publishes a signed report in-region; apply succeeds only when the group's instances have reported and passed. The group also gets an Auto Scaling lifecycle hook (`" + platform.FootprintValidationHookName + "`, `EC2_INSTANCE_LAUNCHING`, heartbeat = `timeout`, default result `ABANDON`): " +
		"every instance it launches waits in `Pending:Wait` until the gate decides: at apply the provider's gate completes each instance's lifecycle action, `CONTINUE` when it passed and `ABANDON` when it failed; after apply (scale-out, schedules, replacements) `mlplatform approve` does, run in the region with `validation_approver`. No instance completes its own action (the node policy denies it), so no instance serves before the gate accepted its evidence. " +
		"With this block a spot footprint launches only the chosen type (one profile). Without it instances are not validated."
	in := v.Attributes
	set := func(name, desc string) {
		switch a := in[name].(type) {
		case schema.StringAttribute:
			a.MarkdownDescription = desc
			in[name] = a
		case schema.Int64Attribute:
			a.MarkdownDescription = desc
			in[name] = a
		case schema.ListAttribute:
			a.MarkdownDescription = desc
			in[name] = a
		}
	}
	set("timeout", fmt.Sprintf("How long to wait for every instance's report, e.g. `20m` (default %s), at most %s: it is also the lifecycle hook's heartbeat. On timeout apply fails naming the instances that never reported; the end of their console output is in the provider's log, not in the error.", platform.DefaultValidationTimeout, platform.MaxFootprintValidationTimeout))
	set("on_failure", "What a failing instance does: `fail` (default: apply fails naming instance, check, expected and actual; the footprint is tainted), `warn` (apply succeeds with a warning, and the lifecycle hook lets failing instances serve), `replace` (the instance's launch is abandoned, or an instance in service terminated through Auto Scaling, the desired capacity kept, and the gate waits for its replacement's report, up to `max_replacements`). After apply, `mlplatform approve` abandons a failing instance unless `on_failure` is `warn`.")
	set("max_replacements", fmt.Sprintf("Instances `replace` may replace in one apply, 0 to %d. Default %d.", platform.MaxValidationReplacements, platform.DefaultValidationMaxReplacements))
	set("checks", "Profile sections to check: `host` (region, zone, type), `cpu` (vCPUs, memory), `cpu_features` (ISA features). Default: all.")
	set("reports_s3_uri", "In-region S3 prefix the instances publish their reports to (`s3://bucket/prefix/`); each footprint writes under `<name>/`. Checked by residency at plan. The instance profile must allow `s3:PutObject` under its own instance id there, and must not allow `autoscaling:CompleteLifecycleAction`.")
	attrs["validation"] = v
	attrs["validation_profile"] = schema.StringAttribute{Computed: true, MarkdownDescription: "The hwprobe profile (HCL) every instance is validated against, rendered from the chosen type; known at plan when its inputs are."}
	attrs["validation_bootstrap"] = schema.StringAttribute{Computed: true, Sensitive: true,
		MarkdownDescription: "The instances' user data with the validation bootstrap: cloud-init MIME multipart with `user_data` first, then the profile, then the script that gets hwprobe, validates, publishes its report and answers the gate's challenges. It never completes the instance's lifecycle action: no node approves itself."}
	attrs["validation_approver"] = schema.StringAttribute{Computed: true,
		MarkdownDescription: "The approver configuration (JSON: region, residency policy, profile and validation settings) of `mlplatform approve`, which decides the launches after apply (scale-outs, schedules, replacements) with the gate's own checks: run it in the region with this value, e.g. `terraform output -raw approver > approver.json && mlplatform approve --watch --config approver.json`. Without an approver, instances launched after apply are abandoned when `timeout` runs out. Known at plan when the profile is."}
	res := attrs["validation_results"].(schema.ListNestedAttribute)
	res.MarkdownDescription = "What the gate found per instance at the last apply, in the order the instances were seen."
	idx := res.NestedObject.Attributes["index"].(schema.Int64Attribute)
	idx.MarkdownDescription = "Position of the instance in the order the gate saw them."
	res.NestedObject.Attributes["index"] = idx
	attrs["validation_results"] = res
	return attrs
}

// footprintValidationSpec translates the block as the GPU cluster's is
// translated; nil without one.
func footprintValidationSpec(ctx context.Context, o types.Object, s *platform.CPUFootprintSpec, diags *diag.Diagnostics) *platform.ValidationSpec {
	var g platform.GPUClusterSpec
	v := gpuValidationSpec(ctx, o, &g, diags)
	s.Unknown = append(s.Unknown, g.Unknown...)
	s.InputProblems = append(s.InputProblems, g.InputProblems...)
	return v
}

// planFootprintValidationAttrs sets the computed validation attributes of
// the plan.
func planFootprintValidationAttrs(plan, state *cpuFootprintModel, p *platform.CPUFootprintPlan, hasState, changed bool) {
	var prior types.List
	if hasState {
		prior = state.ValidationResults
	}
	planGateAttrs(!plan.Validation.IsNull(), &plan.ValidationProfile, &plan.ValidationBootstrap, &plan.ValidationResults,
		p.Profile, p.Bootstrap, prior, hasState && !changed)
	switch {
	case plan.Validation.IsNull():
		plan.ValidationApprover = types.StringNull()
	case p.Approver == "":
		plan.ValidationApprover = types.StringUnknown()
	default:
		plan.ValidationApprover = types.StringValue(p.Approver)
	}
}

// setFootprintValidation records the profile, bootstrap and what the gate
// found after an apply.
func setFootprintValidation(ctx context.Context, m *cpuFootprintModel, f *platform.CPUFootprint, diags *diag.Diagnostics) {
	if m.Validation.IsNull() {
		m.ValidationProfile, m.ValidationBootstrap, m.ValidationApprover = types.StringNull(), types.StringNull(), types.StringNull()
		m.ValidationResults = types.ListNull(gpuValidationResultType)
		return
	}
	var prof, boot, appr string
	if f != nil && f.Applied != nil {
		prof, boot, appr = f.Applied.Profile, f.Applied.Bootstrap, f.Applied.Approver
	}
	fill := func(v *types.String, s string) {
		switch {
		case s != "":
			*v = types.StringValue(s)
		case v.IsUnknown():
			*v = types.StringNull()
		}
	}
	fill(&m.ValidationProfile, prof)
	fill(&m.ValidationBootstrap, boot)
	fill(&m.ValidationApprover, appr)
	if !m.ValidationResults.IsUnknown() {
		return // the plan kept the last results: nothing the gate checks changed
	}
	if f == nil || f.Validation == nil {
		m.ValidationResults = types.ListValueMust(gpuValidationResultType, []attr.Value{})
		return
	}
	m.ValidationResults = verdictList(ctx, f.Validation, diags)
}

// verdictList is the gate's verdicts as validation_results.
func verdictList(ctx context.Context, vs []platform.NodeVerdict, diags *diag.Diagnostics) types.List {
	out := []attr.Value{}
	for _, v := range vs {
		fails, d := types.ListValueFrom(ctx, types.StringType, nonNil(v.Failures))
		diags.Append(d...)
		gen := ""
		if !v.GeneratedAt.IsZero() {
			gen = v.GeneratedAt.UTC().Format(time.RFC3339)
		}
		obj, d := types.ObjectValue(gpuValidationResultType.AttrTypes, map[string]attr.Value{
			"index": types.Int64Value(int64(v.Index)), "instance_id": types.StringValue(v.InstanceID), "status": types.StringValue(v.Status),
			"summary": types.StringValue(v.Summary), "failures": fails, "attested_region": types.StringValue(v.AttestedRegion),
			"attested_zone_id": types.StringValue(v.AttestedZoneID), "report_key": types.StringValue(v.ReportKey), "generated_at": types.StringValue(gen),
		})
		diags.Append(d...)
		out = append(out, obj)
	}
	l, d := types.ListValue(gpuValidationResultType, out)
	diags.Append(d...)
	return l
}
