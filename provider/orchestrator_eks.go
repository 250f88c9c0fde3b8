package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator block's eks: the nodes join an EKS cluster tainted,
// and the gate lifts the taint of the nodes whose evidence passed.

type eksModel struct {
	ClusterName       types.String `tfsdk:"cluster_name"`
	Labels            types.Map    `tfsdk:"labels"`
	CreateAccessEntry types.Bool   `tfsdk:"create_access_entry"`
}

var eksType = map[string]attr.Type{"cluster_name": types.StringType, "labels": types.MapType{ElemType: types.StringType}, "create_access_entry": types.BoolType}

// eksSchema is orchestrator.eks.
func eksSchema() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Join an existing EKS cluster in the jurisdiction (Amazon Linux 2023 EKS images: nodeadm). The plan reads the cluster (`DescribeCluster`: its API endpoint, certificate authority and service CIDR) and checks its residency: the cluster's region and the region its API endpoint names. " +
			"The user data gains a nodeadm `NodeConfig` part that registers each node with the startup taint `" + platform.EKSStartupTaint + "` and the labels `" + platform.EKSLabelCluster + "`, `" + platform.EKSLabelResource + "`, `" + platform.EKSLabelInstance + "`, `" + platform.EKSLabelPlacement + "` and `" + platform.EKSLabelProfile + "`. " +
			"After its report, hwprobe sets the Node's `" + platform.EKSConditionType + "` condition and `" + platform.EKSStatusLabel + "` label with the kubelet's own credentials. " +
			"`cluster_name` is the cluster's name or ARN; an ARN outside the jurisdiction fails the plan before any call. The gate calls the cluster's API with an EKS token made from the provider's credentials (as `aws eks get-token` does): it lifts the taint from each node whose evidence passed and labels it `" + platform.GateLabel + "=" + platform.GatePassed + "`; a node that failed keeps the taint, is labelled `" + platform.GateLabel + "=" + platform.GateFailed + "` and cordoned; with `on_failure = \"replace\"` it is drained (Eviction API), its instance replaced and its Node deleted. " +
			"The apply ends once every node that passed is registered and untainted. The provider's identity needs an access entry that may get, list and patch Nodes (and, to replace failed nodes, delete Nodes, list pods and create evictions); the nodes' role needs an `EC2_LINUX` access entry. Needs the `validation` block.",
		Attributes: map[string]schema.Attribute{
			"cluster_name": schema.StringAttribute{Required: true, MarkdownDescription: "The EKS cluster, in the provider's region."},
			"labels": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Labels the nodes register with, beside the resource's. Keys under `kubernetes.io`, `k8s.io` (kept from kubelets by NodeRestriction) and `mlplatform.io` (the resource's) are refused."},
			"create_access_entry": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Create the EKS access entry (`EC2_LINUX`) of the nodes' role, the role of `instance_profile` (read at plan with IAM `GetInstanceProfile`; `instance_profile` is then required), before the nodes launch; destroy deletes it once the nodes are gone, only when it carries this resource's creation token. " +
					"An entry the role has already (a cluster sharing the role, or yours) is used as it is, never adopted or deleted; one of another type fails the plan. Default `true`; with `false` you give the role its entry yourself (the plan warns when it has none)."},
		},
	}
}

// eksSpecFrom translates orchestrator.eks; nil without it. Unknown values
// are listed in *unknown under orchestrator.eks.
func eksSpecFrom(ctx context.Context, o types.Object, unknown *[]string, diags *diag.Diagnostics) *platform.EKSSpec {
	if o.IsNull() || o.IsUnknown() {
		return nil // slurmSpecFrom lists an unknown orchestrator
	}
	e, ok := o.Attributes()["eks"].(types.Object)
	if !ok || e.IsNull() {
		return nil
	}
	if e.IsUnknown() {
		*unknown = append(*unknown, platform.EKSPath)
		return &platform.EKSSpec{}
	}
	var m eksModel
	diags.Append(e.As(ctx, &m, gpuObjectAs)...)
	s := &platform.EKSSpec{ClusterName: m.ClusterName.ValueString(), CreateAccessEntry: m.CreateAccessEntry.IsNull() || m.CreateAccessEntry.ValueBool()}
	if m.CreateAccessEntry.IsUnknown() {
		*unknown = append(*unknown, platform.EKSPath+".create_access_entry")
	}
	if m.ClusterName.IsUnknown() {
		*unknown = append(*unknown, platform.EKSPath+".cluster_name")
	}
	s.Labels = nodeLabelsFrom(m.Labels, platform.EKSPath+".labels", unknown)
	return s
}

// nodeLabelsFrom translates the labels of an orchestrator block (eks,
// kubernetes); nil when unset. An unknown map, or a value unknown in it, is
// listed once in *unknown under path.
func nodeLabelsFrom(l types.Map, path string, unknown *[]string) map[string]string {
	if l.IsUnknown() {
		*unknown = append(*unknown, path)
		return nil
	}
	var out map[string]string
	listed := false
	for k, v := range l.Elements() {
		sv, _ := v.(types.String)
		if sv.IsUnknown() {
			if !listed {
				*unknown, listed = append(*unknown, path), true
			}
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = sv.ValueString()
	}
	return out
}
