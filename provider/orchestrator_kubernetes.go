package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator block's kubernetes: the nodes join a self-managed
// Kubernetes cluster (kubeadm) tainted, and the gate, with a kubeconfig
// kept in Secrets Manager, lifts the taint of the nodes whose evidence
// passed.

type kubeModel struct {
	KubeconfigSecretARN types.String `tfsdk:"kubeconfig_secret_arn"`
	Context             types.String `tfsdk:"context"`
	JoinTokenSecretARN  types.String `tfsdk:"join_token_secret_arn"`
	Labels              types.Map    `tfsdk:"labels"`
}

var kubeType = map[string]attr.Type{"kubeconfig_secret_arn": types.StringType, "context": types.StringType,
	"join_token_secret_arn": types.StringType, "labels": types.MapType{ElemType: types.StringType}}

// kubeSchemaDoc describes orchestrator.kubernetes (the Pulumi side uses the
// same words).
const kubeSchemaDoc = "Join a self-managed Kubernetes cluster (kubeadm) that runs in the jurisdiction. The plan reads the gate's kubeconfig from `kubeconfig_secret_arn` and checks where its server is (rule `kube-server-region`): an IP address must be inside a CIDR block of a VPC of the provider's region, a host name must be an AWS name that names an allowed region (`*.REGION.eks.amazonaws.com`, `*.elb.REGION.amazonaws.com`, `*.REGION.compute.internal`, `ec2-*.REGION.compute.amazonaws.com`); any other server fails the plan before any write. " +
	"The user data gains a kubeadm `JoinConfiguration` (`kubeadm.k8s.io/v1beta4`, written to `" + platform.KubeadmJoinConfigPath + "`; the plan shows it): discovery by bootstrap token against the kubeconfig's server, pinned by `caCertHashes` to its certificate authority, the startup taint `" + platform.EKSStartupTaint + "`, the labels an EKS node gets, and the provider ID `aws:///ZONE/INSTANCE_ID`. " +
	"At boot the node reads the bootstrap token from `join_token_secret_arn` with its own role and runs `kubeadm join`; the token is never in the user data, the plan or the state. Everything after that is as with `eks`: hwprobe sets the Node's `" + platform.EKSConditionType + "` condition with the kubelet's credentials, the gate lifts the taint of each node whose evidence passed, labels and cordons one that failed, and with `on_failure = \"replace\"` drains it and deletes its Node. " +
	"The kubeconfig's user may get, list and patch Nodes (and, to replace failed nodes, delete Nodes, list pods and create evictions). The image needs `kubeadm`, the kubelet and a container runtime, and the AWS CLI. Needs the `validation` block."

// kubeSchema is orchestrator.kubernetes.
func kubeSchema() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional:            true,
		MarkdownDescription: kubeSchemaDoc,
		Attributes: map[string]schema.Attribute{
			"kubeconfig_secret_arn": schema.StringAttribute{Required: true,
				MarkdownDescription: "ARN of the Secrets Manager secret (a string) holding the gate's kubeconfig, read at plan and at apply and kept in memory only (never in state or plan). The cluster needs an `https` server and `certificate-authority-data`; the user a `token`, or `client-certificate-data` and `client-key-data`. An `exec` or `auth-provider` user, files, `insecure-skip-tls-verify` and `proxy-url` are refused: the provider runs no command. Residency is checked at plan as for any secret: its region, the regions it is replicated to and its KMS key; the secret must be in the provider's region. The provider's identity needs `secretsmanager:GetSecretValue` on it and `kms:Decrypt` on its key."},
			"context": schema.StringAttribute{Optional: true,
				MarkdownDescription: "The kubeconfig's context to use. Default: its `current-context`."},
			"join_token_secret_arn": schema.StringAttribute{Required: true,
				MarkdownDescription: "ARN of the Secrets Manager secret (a string) holding a kubeadm bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`, from `kubeadm token create`; give it a lifetime that covers replacements). Only the nodes read it, with their instance profile (`secretsmanager:GetSecretValue`, `kms:Decrypt`); residency is checked at plan as for `kubeconfig_secret_arn`."},
			"labels": schema.MapAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Labels the nodes register with, beside the resource's. Keys under `kubernetes.io`, `k8s.io` (kept from kubelets by NodeRestriction) and `mlplatform.io` (the resource's) are refused."},
		},
	}
}

// kubeSpecFrom translates orchestrator.kubernetes; nil without it.
// Unknown values are listed in *unknown under orchestrator.kubernetes.
func kubeSpecFrom(ctx context.Context, o types.Object, unknown *[]string, diags *diag.Diagnostics) *platform.KubeSpec {
	if o.IsNull() || o.IsUnknown() {
		return nil // slurmSpecFrom lists an unknown orchestrator
	}
	k, ok := o.Attributes()["kubernetes"].(types.Object)
	if !ok || k.IsNull() {
		return nil
	}
	if k.IsUnknown() {
		*unknown = append(*unknown, platform.KubePath)
		return &platform.KubeSpec{}
	}
	var m kubeModel
	diags.Append(k.As(ctx, &m, gpuObjectAs)...)
	str := func(p string, v types.String) string {
		if v.IsUnknown() {
			*unknown = append(*unknown, platform.KubePath+"."+p)
		}
		return v.ValueString()
	}
	s := &platform.KubeSpec{
		KubeconfigSecretARN: str("kubeconfig_secret_arn", m.KubeconfigSecretARN),
		Context:             str("context", m.Context),
		JoinTokenSecretARN:  str("join_token_secret_arn", m.JoinTokenSecretARN),
	}
	s.Labels = nodeLabelsFrom(m.Labels, platform.KubePath+".labels", unknown)
	return s
}
