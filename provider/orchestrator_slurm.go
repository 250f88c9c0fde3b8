package provider

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator block (Slurm) of the GPU cluster and the CPU footprint,
// and its computed slurm_controller_config.

type orchestratorModel struct {
	Slurm types.Object `tfsdk:"slurm"`
	EKS   types.Object `tfsdk:"eks"`
	Kube  types.Object `tfsdk:"kubernetes"`
}

type slurmModel struct {
	Controllers       types.List   `tfsdk:"controllers"`
	MungeKeySecretARN types.String `tfsdk:"munge_key_secret_arn"`
	Partition         types.String `tfsdk:"partition"`
	Features          types.List   `tfsdk:"features"`
	NodeNamePrefix    types.String `tfsdk:"node_name_prefix"`
}

var (
	slurmType = map[string]attr.Type{
		"controllers": types.ListType{ElemType: types.StringType}, "munge_key_secret_arn": types.StringType,
		"partition": types.StringType, "features": types.ListType{ElemType: types.StringType}, "node_name_prefix": types.StringType,
	}
	orchestratorType = map[string]attr.Type{"slurm": types.ObjectType{AttrTypes: slurmType}, "eks": types.ObjectType{AttrTypes: eksType}, "kubernetes": types.ObjectType{AttrTypes: kubeType}}
)

// orchestratorSchema is the orchestrator block and slurm_controller_config.
// names says how the resource names its nodes in Slurm.
func orchestratorSchema(names string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"orchestrator": schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: "The scheduler the nodes join: `slurm`, `eks` or `kubernetes` (one of them). Without this block they join none.",
			Attributes: map[string]schema.Attribute{
				"eks":        eksSchema(),
				"kubernetes": kubeSchema(),
				"slurm": schema.SingleNestedAttribute{
					Optional: true,
					MarkdownDescription: "Join an existing Slurm cluster (22.05 or later) as dynamic nodes (`slurmd -Z`), configless: each node fetches `slurm.conf` and `gres.conf` from the controller. " +
						"After hwprobe validated the node and published its report, `hwprobe slurm join` fetches the munge key, and starts `slurmd` with the gres, features and memory of the validation profile. " + names + " " +
						"hwprobe is the nodes' `HealthCheckProgram` (`" + platform.SlurmHealthCheckProgram + "`): a node that fails its checks is drained with a reason that starts `hwprobe:`. " +
						"A node leaves Slurm before its instance is terminated (a scale-in, a replacement, a destroy): it drains and its jobs end first; a CPU footprint's group gets the lifecycle hook `mlplatform-slurm-leave` for the scale-ins Auto Scaling makes (see the Slurm guide). " +
						"The controller's part is `slurm_controller_config`. Needs the `validation` block. The image must have `slurmd` and `munge`.",
					Attributes: map[string]schema.Attribute{
						"controllers": schema.ListAttribute{ElementType: types.StringType, Required: true,
							MarkdownDescription: "slurmctld addresses, `HOST` or `HOST:PORT` (default port 6817), the primary first: `slurmd --conf-server`."},
						"munge_key_secret_arn": schema.StringAttribute{Required: true,
							MarkdownDescription: "ARN of the Secrets Manager secret that holds the cluster's munge key (binary, or base64 text; 32 to 1024 bytes). Residency is checked at plan: the secret's region, the regions it is replicated to, and the KMS key that encrypts it (customer managed where the policy requires). The nodes' instance profile needs `secretsmanager:GetSecretValue` on it and `kms:Decrypt` on its key."},
						"partition": schema.StringAttribute{Optional: true,
							MarkdownDescription: "Partition the controller configuration puts the nodes in (a `Nodeset` by the resource's feature)."},
						"features": schema.ListAttribute{ElementType: types.StringType, Optional: true,
							MarkdownDescription: "Features added to the ones derived from the profile: `mlplatform`, the node name prefix, the instance type, the GPU model, `efa`, `pg-<placement group>`, `profile-<digest>`."},
						"node_name_prefix": schema.StringAttribute{Optional: true,
							MarkdownDescription: "Begins every node's Slurm name (1 to 40 letters, digits, `_`, `.`, `-`). Default: the resource's name."},
					},
				},
			},
		},
		"slurm_controller_config": schema.StringAttribute{Computed: true,
			MarkdownDescription: "What the Slurm controller needs for these nodes, to add to its `slurm.conf` (configless, `MaxNodeCount`, hwprobe as the health check, the node set and partition) and `gres.conf` (the GPUs' device files by node name). Null without `orchestrator.slurm`; known at plan when its inputs are."},
	}
}

// slurmSpecFrom translates the orchestrator block; nil without Slurm.
// Unknown values are listed in *unknown under orchestrator.slurm.
func slurmSpecFrom(ctx context.Context, o types.Object, unknown *[]string, diags *diag.Diagnostics) *platform.SlurmSpec {
	if o.IsNull() {
		return nil
	}
	if o.IsUnknown() {
		*unknown = append(*unknown, "orchestrator")
		return &platform.SlurmSpec{}
	}
	var om orchestratorModel
	diags.Append(o.As(ctx, &om, gpuObjectAs)...)
	if om.Slurm.IsNull() {
		return nil
	}
	if om.Slurm.IsUnknown() {
		*unknown = append(*unknown, platform.SlurmPath)
		return &platform.SlurmSpec{}
	}
	var m slurmModel
	diags.Append(om.Slurm.As(ctx, &m, gpuObjectAs)...)
	s := &platform.SlurmSpec{}
	str := func(p string, v types.String) string {
		if v.IsUnknown() {
			*unknown = append(*unknown, platform.SlurmPath+"."+p)
		}
		return v.ValueString()
	}
	list := func(p string, v types.List, out *[]string) {
		if v.IsUnknown() || slices.ContainsFunc(v.Elements(), attr.Value.IsUnknown) {
			*unknown = append(*unknown, platform.SlurmPath+"."+p)
			return
		}
		if !v.IsNull() {
			diags.Append(v.ElementsAs(ctx, out, false)...)
		}
	}
	list("controllers", m.Controllers, &s.Controllers)
	s.MungeKeySecretARN = str("munge_key_secret_arn", m.MungeKeySecretARN)
	s.Partition = str("partition", m.Partition)
	list("features", m.Features, &s.Features)
	s.NodeNamePrefix = str("node_name_prefix", m.NodeNamePrefix)
	return s
}

// planSlurmControllerConfig is slurm_controller_config at plan: null
// without Slurm, unknown until the plan could render it.
func planSlurmControllerConfig(orchestrator types.Object, rendered string) types.String {
	if !hasSlurm(orchestrator) {
		return types.StringNull()
	}
	if rendered == "" {
		return types.StringUnknown()
	}
	return types.StringValue(rendered)
}

// hasSlurm reports whether the block declares Slurm (unknown counts).
func hasSlurm(o types.Object) bool {
	if o.IsNull() {
		return false
	}
	if o.IsUnknown() {
		return true
	}
	s, ok := o.Attributes()["slurm"]
	return ok && !s.IsNull()
}

// finishSlurmControllerConfig makes it known after an apply.
func finishSlurmControllerConfig(v *types.String, orchestrator types.Object, applied string) {
	switch {
	case !hasSlurm(orchestrator):
		*v = types.StringNull()
	case v.IsUnknown() && applied != "":
		*v = types.StringValue(applied)
	case v.IsUnknown():
		*v = types.StringNull()
	}
}

// appliedSlurmConfig is what an apply rendered; "" without a cluster.
func appliedSlurmConfig(c *platform.GPUCluster) string {
	if c == nil {
		return ""
	}
	return c.SlurmControllerConfig
}

// appliedFootprintSlurmConfig is what a footprint's apply rendered.
func appliedFootprintSlurmConfig(f *platform.CPUFootprint) string {
	if f == nil || f.Applied == nil {
		return ""
	}
	return f.Applied.SlurmControllerConfig
}
