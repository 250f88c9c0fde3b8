package pulumi

import (
	"maps"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator input's eks: the nodes join an EKS cluster tainted, and
// the gate lifts the taint of the nodes whose evidence passed. The
// Terraform resources' orchestrator.eks, translated to the same core spec.

// OrchestratorEKS is the EKS cluster the nodes join.
type OrchestratorEKS struct {
	ClusterName       string            `pulumi:"clusterName"`
	Labels            map[string]string `pulumi:"labels,optional"`
	CreateAccessEntry *bool             `pulumi:"createAccessEntry,optional"`
}

// orchestratorEKSDoc describes orchestrator.eks: the Terraform side's words.
const orchestratorEKSDoc = "Join an existing EKS cluster in the jurisdiction (Amazon Linux 2023 EKS images: nodeadm). The preview reads the cluster (`DescribeCluster`: its API endpoint, certificate authority and service CIDR) and checks its residency: the cluster's region and the region its API endpoint names. " +
	"The user data gains a nodeadm `NodeConfig` part that registers each node with the startup taint `" + platform.EKSStartupTaint + "` and the labels `" + platform.EKSLabelCluster + "`, `" + platform.EKSLabelResource + "`, `" + platform.EKSLabelInstance + "`, `" + platform.EKSLabelPlacement + "` and `" + platform.EKSLabelProfile + "`. " +
	"After its report, hwprobe sets the Node's `" + platform.EKSConditionType + "` condition and `" + platform.EKSStatusLabel + "` label with the kubelet's own credentials. " +
	"`clusterName` is the cluster's name or ARN; an ARN outside the jurisdiction fails the preview before any call. The gate calls the cluster's API with an EKS token made from the provider's credentials (as `aws eks get-token` does): it lifts the taint from each node whose evidence passed and labels it `" + platform.GateLabel + "=" + platform.GatePassed + "`; a node that failed keeps the taint, is labelled `" + platform.GateLabel + "=" + platform.GateFailed + "` and cordoned; with `onFailure: \"replace\"` it is drained (Eviction API), its instance replaced and its Node deleted. " +
	"The create or update ends once every node that passed is registered and untainted. The provider's identity needs an access entry that may get, list and patch Nodes (and, to replace failed nodes, delete Nodes, list pods and create evictions); the nodes' role needs an `EC2_LINUX` access entry. Needs the `validation` input."

// Annotate describes the EKS settings.
func (e *OrchestratorEKS) Annotate(a infer.Annotator) {
	a.Describe(&e.ClusterName, "The EKS cluster, in the provider's region.")
	a.Describe(&e.Labels, "Labels the nodes register with, beside the resource's. Keys under `kubernetes.io`, `k8s.io` (kept from kubelets by NodeRestriction) and `mlplatform.io` (the resource's) are refused.")
	a.Describe(&e.CreateAccessEntry, "Create the EKS access entry (`EC2_LINUX`) of the nodes' role, the role of `instanceProfile` (read at preview with IAM `GetInstanceProfile`; `instanceProfile` is then required), before the nodes launch; destroy deletes it once the nodes are gone, only when it carries this resource's creation token. "+
		"An entry the role has already (a cluster sharing the role, or yours) is used as it is, never adopted or deleted; one of another type fails the preview. Default `true`; with `false` you give the role its entry yourself (the preview warns when it has none).")
	a.SetDefault(&e.CreateAccessEntry, true)
}

// eksLabelsPath is orchestrator.eks.labels, the core's path.
const eksLabelsPath = platform.EKSPath + ".labels"

// eksUnknowns rewrites the unknown paths (unknownPaths) for the core as
// the Terraform front end lists them: a label value not known yet
// (orchestrator.eks.labels.<key> or orchestrator.kubernetes.labels.<key>,
// the key snake-cased) makes the labels unknown as a whole,
// orchestrator.eks.labels (orchestrator.kubernetes.labels); the labels
// are checked together at apply.
func eksUnknowns(unknown []string) []string {
	var out []string
	for _, u := range unknown {
		if strings.HasPrefix(u, eksLabelsPath+".") {
			u = eksLabelsPath
		}
		if strings.HasPrefix(u, kubeLabelsPath+".") {
			u = kubeLabelsPath
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// eksSpec translates the orchestrator input's eks; nil without it. unknown
// are the core paths not known yet (unknownPaths, before eksUnknowns): an
// eks object unknown as a whole is EKS whose values are all unknown, as
// the Terraform front end reads it; an orchestrator unknown as a whole is
// slurmSpec's, as there. infer decodes an unknown value as its zero value:
// a label value not known yet is left out, never a label holding "".
func eksSpec(o *Orchestrator, unknown []string) *platform.EKSSpec {
	if slices.Contains(unknown, "orchestrator") {
		return nil // slurmSpec reads an unknown orchestrator
	}
	if slices.Contains(unknown, platform.EKSPath) {
		return &platform.EKSSpec{}
	}
	if o == nil || o.EKS == nil {
		return nil
	}
	s := &platform.EKSSpec{ClusterName: o.EKS.ClusterName, CreateAccessEntry: o.EKS.CreateAccessEntry == nil || *o.EKS.CreateAccessEntry}
	for _, k := range slices.Sorted(maps.Keys(o.EKS.Labels)) {
		if slices.Contains(unknown, eksLabelsPath+"."+snakeCase(k)) {
			continue
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[k] = o.EKS.Labels[k]
	}
	return s
}
