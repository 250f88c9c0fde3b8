package pulumi

import (
	"maps"
	"slices"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator input's kubernetes: the nodes join a self-managed
// Kubernetes cluster (kubeadm) tainted, and the gate, with a kubeconfig
// kept in Secrets Manager, lifts the taint of the nodes whose evidence
// passed. The Terraform resources' orchestrator.kubernetes, translated to
// the same core spec.

// OrchestratorKubernetes is the self-managed cluster the nodes join.
type OrchestratorKubernetes struct {
	KubeconfigSecretARN string            `pulumi:"kubeconfigSecretArn"`
	Context             *string           `pulumi:"context,optional"`
	JoinTokenSecretARN  string            `pulumi:"joinTokenSecretArn"`
	Labels              map[string]string `pulumi:"labels,optional"`
}

// orchestratorKubeDoc describes orchestrator.kubernetes: the Terraform
// side's words.
const orchestratorKubeDoc = "Join a self-managed Kubernetes cluster (kubeadm) that runs in the jurisdiction. The preview reads the gate's kubeconfig from `kubeconfigSecretArn` and checks where its server is (rule `kube-server-region`): an IP address must be inside a CIDR block of a VPC of the provider's region, a host name must be an AWS name that names an allowed region (`*.REGION.eks.amazonaws.com`, `*.elb.REGION.amazonaws.com`, `*.REGION.compute.internal`, `ec2-*.REGION.compute.amazonaws.com`); any other server fails the preview before any write. " +
	"The user data gains a kubeadm `JoinConfiguration` (`kubeadm.k8s.io/v1beta4`, written to `" + platform.KubeadmJoinConfigPath + "`; the preview shows it): discovery by bootstrap token against the kubeconfig's server, pinned by `caCertHashes` to its certificate authority, the startup taint `" + platform.EKSStartupTaint + "`, the labels an EKS node gets, and the provider ID `aws:///ZONE/INSTANCE_ID`. " +
	"At boot the node reads the bootstrap token from `joinTokenSecretArn` with its own role and runs `kubeadm join`; the token is never in the user data, the preview or the outputs. Everything after that is as with `eks`: hwprobe sets the Node's `" + platform.EKSConditionType + "` condition with the kubelet's credentials, the gate lifts the taint of each node whose evidence passed, labels and cordons one that failed, and with `onFailure: \"replace\"` drains it and deletes its Node. " +
	"The kubeconfig's user may get, list and patch Nodes (and, to replace failed nodes, delete Nodes, list pods and create evictions). The image needs `kubeadm`, the kubelet and a container runtime, and the AWS CLI. Needs the `validation` input."

// Annotate describes the Kubernetes settings.
func (k *OrchestratorKubernetes) Annotate(a infer.Annotator) {
	a.Describe(&k.KubeconfigSecretARN, "ARN of the Secrets Manager secret (a string) holding the gate's kubeconfig, read at preview and at apply and kept in memory only (never in the outputs or the state). The cluster needs an `https` server and `certificate-authority-data`; the user a `token`, or `client-certificate-data` and `client-key-data`. An `exec` or `auth-provider` user, files, `insecure-skip-tls-verify` and `proxy-url` are refused: the provider runs no command. Residency is checked at preview as for any secret: its region, the regions it is replicated to and its KMS key; the secret must be in the provider's region. The provider's identity needs `secretsmanager:GetSecretValue` on it and `kms:Decrypt` on its key.")
	a.Describe(&k.Context, "The kubeconfig's context to use. Default: its `current-context`.")
	a.Describe(&k.JoinTokenSecretARN, "ARN of the Secrets Manager secret (a string) holding a kubeadm bootstrap token (`[a-z0-9]{6}.[a-z0-9]{16}`, from `kubeadm token create`; give it a lifetime that covers replacements). Only the nodes read it, with their instance profile (`secretsmanager:GetSecretValue`, `kms:Decrypt`); residency is checked at preview as for `kubeconfigSecretArn`.")
	a.Describe(&k.Labels, "Labels the nodes register with, beside the resource's. Keys under `kubernetes.io`, `k8s.io` (kept from kubelets by NodeRestriction) and `mlplatform.io` (the resource's) are refused.")
}

// kubeLabelsPath is orchestrator.kubernetes.labels, the core's path.
const kubeLabelsPath = platform.KubePath + ".labels"

// kubeSpec translates the orchestrator input's kubernetes; nil without
// it. unknown are the core paths not known yet (unknownPaths, before
// eksUnknowns), read as eksSpec reads them.
func kubeSpec(o *Orchestrator, unknown []string) *platform.KubeSpec {
	if slices.Contains(unknown, "orchestrator") {
		return nil // slurmSpec reads an unknown orchestrator
	}
	if slices.Contains(unknown, platform.KubePath) {
		return &platform.KubeSpec{}
	}
	if o == nil || o.Kubernetes == nil {
		return nil
	}
	k := o.Kubernetes
	s := &platform.KubeSpec{KubeconfigSecretARN: k.KubeconfigSecretARN, Context: deref(k.Context), JoinTokenSecretARN: k.JoinTokenSecretARN}
	for _, key := range slices.Sorted(maps.Keys(k.Labels)) {
		if slices.Contains(unknown, kubeLabelsPath+"."+snakeCase(key)) {
			continue
		}
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[key] = k.Labels[key]
	}
	return s
}
