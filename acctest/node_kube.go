package acctest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// KubeJoiner registers a joining node with a real Kubernetes API server
// (acctest/kubetest), as the node's kubelet does from its NodeConfig:
// with the node's own identity (system:node:NAME), the taints and labels
// the NodeConfig names, and its provider ID. It returns the path of a
// kubeconfig with that identity, as the kubelet's
// /var/lib/kubelet/kubeconfig, for hwprobe on the node.
type KubeJoiner interface {
	JoinNode(ctx context.Context, j KubeJoin) (kubeconfig string, err error)
}

// KubeJoin is one node joining a Kubernetes cluster.
type KubeJoin struct {
	InstanceID string
	// NodeName is the Node's name: the instance's private DNS name, as on
	// EKS (ip-10-0-1-23.REGION.compute.internal).
	NodeName string
	// ProviderID is aws:///ZONE/INSTANCE-ID, as the cloud provider sets.
	ProviderID string
	// NodeConfig is what the node's nodeadm read in its user data: the
	// cluster (endpoint, CA), taints and labels.
	NodeConfig platform.EKSNodeConfigParts
	// Kubeadm, for a node that joins a self-managed cluster
	// (orchestrator.kubernetes), is the JoinConfiguration its kubeadm
	// read, with the provider ID the bootstrap fills in and the bootstrap
	// token it read from its secret (BootstrapToken); NodeConfig is then
	// empty.
	Kubeadm        *platform.KubeadmJoinParts
	BootstrapToken string
	// GPUs is how many GPUs the node plays.
	GPUs int
	// Dir is the node's scratch folder (for its kubeconfig).
	Dir string
}

// kubeNodeName is the name EKS gives the Node of an instance: its private
// DNS name.
func kubeNodeName(privateIP string) string {
	return "ip-" + strings.ReplaceAll(privateIP, ".", "-") + "." + Region + ".compute.internal"
}

// registerKube does what nodeadm and the kubelet do at boot on a node
// that joins EKS, beside hwprobe's validation (which takes minutes there):
// the kubelet registers the Node, tainted. It returns the kubeconfig of
// the Node's identity.
func (p *NodePlayer) registerKube(ctx context.Context, pn *playedNode, nodeConfig, dir string) (string, error) {
	nc, err := platform.ParseEKSNodeConfig(nodeConfig)
	if err != nil {
		return "", err
	}
	gpus, err := nvmlMockGPUs(pn.b.NVMLMock)
	if err != nil {
		return "", err
	}
	j := KubeJoin{InstanceID: pn.n.InstanceID, NodeName: kubeNodeName(pn.n.PrivateIP), ProviderID: "aws:///" + pn.n.Zone + "/" + pn.n.InstanceID,
		NodeConfig: nc, GPUs: gpus, Dir: dir}
	kubeconfig, err := p.Kube.JoinNode(ctx, j)
	if err != nil {
		return "", fmt.Errorf("registering Node %s: %w", j.NodeName, err)
	}
	p.Logf("node player: node %d (%s): registered as Node %s", pn.n.Index, pn.n.InstanceID, j.NodeName)
	return kubeconfig, nil
}

// publishKube is the bootstrap's step after the report: `hwprobe kube
// publish` labels the Node and sets its condition with the kubelet's
// credentials. The feature file goes to the node's folder.
func (p *NodePlayer) publishKube(ctx context.Context, pn *playedNode, kubeconfig, dir string) error {
	out, code, err := pn.run(ctx, "kube", "publish", "--kubeconfig", kubeconfig, "--report", pn.report, "--features-dir", filepath.Join(dir, "features.d"))
	if err != nil || code != 0 {
		return fmt.Errorf("hwprobe kube publish exit %d: %v\n%s", code, err, out)
	}
	p.Logf("node player: node %d (%s): published to its Node: %s", pn.n.Index, pn.n.InstanceID, strings.TrimSpace(out))
	return nil
}

// registerKubeadm does what the bootstrap and kubeadm do on a node that
// joins a self-managed cluster: the bootstrap reads the token from the
// secret its configuration names (here with the harness's credentials:
// the emulator does not enforce the instance role) and checks its form;
// kubeadm discovers the cluster (the test checks the endpoint, the CA pins
// and the token against the real API server) and the kubelet registers
// the Node, tainted, with its provider ID. It returns the kubeconfig of
// the Node's identity.
func (p *NodePlayer) registerKubeadm(ctx context.Context, clients *cloud.Clients, pn *playedNode, parts platform.BootstrapParts, dir string) (string, error) {
	jc, err := platform.ParseKubeadmJoinConfig(parts.KubeadmJoinConfig)
	if err != nil {
		return "", err
	}
	if jc.Token != "" {
		return "", fmt.Errorf("the rendered JoinConfiguration carries a token")
	}
	if jc.ProviderID != platform.KubeadmProviderID {
		return "", fmt.Errorf("the JoinConfiguration's provider-id is %q, want %q (filled in at boot)", jc.ProviderID, platform.KubeadmProviderID)
	}
	out, err := SecretsManager(clients).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(parts.KubeadmTokenSecretARN)})
	if err != nil {
		return "", fmt.Errorf("reading the join token from %s: %w", parts.KubeadmTokenSecretARN, err)
	}
	token := aws.ToString(out.SecretString)
	if err := platform.ValidBootstrapToken(token); err != nil {
		return "", fmt.Errorf("the join token secret %s: %w", parts.KubeadmTokenSecretARN, err)
	}
	gpus, err := nvmlMockGPUs(pn.b.NVMLMock)
	if err != nil {
		return "", err
	}
	providerID := strings.NewReplacer("ZONE", pn.n.Zone, "INSTANCE_ID", pn.n.InstanceID).Replace(jc.ProviderID)
	jc.ProviderID = providerID
	j := KubeJoin{InstanceID: pn.n.InstanceID, NodeName: kubeNodeName(pn.n.PrivateIP), ProviderID: providerID,
		NodeConfig: platform.EKSNodeConfigParts{Taints: jc.Taints, Labels: jc.Labels}, Kubeadm: &jc, BootstrapToken: token, GPUs: gpus, Dir: dir}
	kubeconfig, err := p.Kube.JoinNode(ctx, j)
	if err != nil {
		return "", fmt.Errorf("registering Node %s: %w", j.NodeName, err)
	}
	p.Logf("node player: node %d (%s): joined with kubeadm as Node %s", pn.n.Index, pn.n.InstanceID, j.NodeName)
	return kubeconfig, nil
}
