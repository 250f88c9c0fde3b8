// Package node is hwprobe's side of a Kubernetes node: with the kubelet's
// own credentials it sets the HwprobeValidated condition and the status
// label on its own Node (the Node authorizer and the NodeRestriction
// admission let a kubelet change its own Node and no other), and it writes
// the Node Feature Discovery feature file. What it writes is defined in
// the pure package hwprobe/kube, which the provider's gate shares.
package node

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
)

// Nodes is what hwprobe asks of the API server's Node API: its own Node,
// read and patched (corev1client.NodeInterface has both).
type Nodes interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Node, error)
}

// Reviews asks the API server who the caller is
// (authnv1client.SelfSubjectReviewInterface).
type Reviews interface {
	Create(ctx context.Context, r *authnv1.SelfSubjectReview, opts metav1.CreateOptions) (*authnv1.SelfSubjectReview, error)
}

// Client is the API server, reached with the kubelet's credentials.
type Client struct {
	Config  *rest.Config
	Nodes   Nodes
	Reviews Reviews
}

// FieldManager names hwprobe in the Node's managed fields.
const FieldManager = "hwprobe"

// Connect loads a kubeconfig (the kubelet's: kube.DefaultKubeconfig) and
// makes the clients hwprobe uses.
func Connect(kubeconfig, userAgent string) (*Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = userAgent
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	authn, err := authnv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return &Client{Config: cfg, Nodes: core.Nodes(), Reviews: authn.SelfSubjectReviews()}, nil
}

// ErrNoClientCert: the credentials hold no client certificate (a token or
// an exec plugin, as EKS's kubelet uses).
var ErrNoClientCert = errors.New("no client certificate in the kubeconfig")

// NodeName is the name of the Node the credentials belong to: the common
// name of the client certificate (system:node:NAME), else, for
// credentials without one (EKS nodes authenticate with IAM tokens), the
// user the API server sees (SelfSubjectReview). It says which it used.
func (c *Client) NodeName(ctx context.Context) (name, source string, err error) {
	name, err = CertNodeName(c.Config)
	if err == nil {
		return name, "client certificate", nil
	}
	if !errors.Is(err, ErrNoClientCert) {
		return "", "", err
	}
	r, err := c.Reviews.Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", "", fmt.Errorf("node name: %w; %w (give --node-name)", ErrNoClientCert, err)
	}
	name, err = kube.NodeNameFromUser(r.Status.UserInfo.Username)
	if err != nil {
		return "", "", fmt.Errorf("node name from the API server's review: %w", err)
	}
	return name, "the API server's review of the credentials", nil
}

// CertNodeName is the node name in the common name of cfg's client
// certificate (system:node:NAME), from its data or its file.
func CertNodeName(cfg *rest.Config) (string, error) {
	data, src := cfg.TLSClientConfig.CertData, "client certificate data"
	if len(data) == 0 && cfg.TLSClientConfig.CertFile != "" {
		src = cfg.TLSClientConfig.CertFile
		var err error
		if data, err = os.ReadFile(src); err != nil {
			return "", fmt.Errorf("node name: %w", err)
		}
	}
	if len(data) == 0 {
		return "", ErrNoClientCert
	}
	name, err := nodeNameFromPEM(data)
	if err != nil {
		return "", fmt.Errorf("node name from %s: %w", src, err)
	}
	return name, nil
}

// nodeNameFromPEM reads the first certificate of PEM data (a kubelet's
// kubelet-client-current.pem holds its key too).
func nodeNameFromPEM(data []byte) (string, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return "", errors.New("no PEM certificate")
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return "", err
		}
		return kube.NodeNameFromUser(cert.Subject.CommonName)
	}
}

// Condition is the HwprobeValidated condition for v at now, given the
// Node's conditions: the heartbeat is now; the transition time is kept
// while the status stays what it was.
func Condition(conditions []corev1.NodeCondition, v kube.Verdict, now time.Time) corev1.NodeCondition {
	c := corev1.NodeCondition{
		Type:               kube.ConditionType,
		Status:             corev1.ConditionStatus(v.ConditionStatus()),
		Reason:             v.Reason,
		Message:            v.Message,
		LastHeartbeatTime:  metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now),
	}
	for _, old := range conditions {
		if old.Type == kube.ConditionType && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	return c
}

// conditionPatch is a strategic-merge patch of the Node's status that sets
// c and leaves every other condition as it is (conditions merge on type).
func conditionPatch(c corev1.NodeCondition) ([]byte, error) {
	return json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{c}}})
}

// SetCondition sets the HwprobeValidated condition of the Node name
// through its status subresource, and returns the condition set.
func SetCondition(ctx context.Context, nodes Nodes, name string, v kube.Verdict, now time.Time) (corev1.NodeCondition, error) {
	n, err := nodes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return corev1.NodeCondition{}, apiError(name, "read", err)
	}
	c := Condition(n.Status.Conditions, v, now)
	patch, err := conditionPatch(c)
	if err != nil {
		return corev1.NodeCondition{}, err
	}
	if _, err := nodes.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}, "status"); err != nil {
		return corev1.NodeCondition{}, apiError(name, "set condition "+kube.ConditionType+" of", err)
	}
	return c, nil
}

// SetStatusLabel sets the label kube.LabelStatus of the Node name to
// status (a kubelet may label its own Node outside the kubernetes.io
// namespaces), touching no other label and never its taints.
func SetStatusLabel(ctx context.Context, nodes Nodes, name, status string) error {
	if !kube.ValidLabelValue(status) {
		return fmt.Errorf("node %s: label %s: %q is not a valid label value", name, kube.LabelStatus, status)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{kube.LabelStatus: status}}})
	if err != nil {
		return err
	}
	if _, err := nodes.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return apiError(name, "label", err)
	}
	return nil
}

// apiError wraps an API error once, with a hint when the credentials may
// not touch the Node.
func apiError(name, verb string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s node %s: %w (the kubelet's credentials may read and change only their own Node: is %s this node's name?)", verb, name, err, name)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s node %s: %w (has the kubelet registered the node?)", verb, name, err)
	}
	return fmt.Errorf("%s node %s: %w", verb, name, err)
}

// WriteFeatures replaces the feature file kube.FeaturesFile in dir with
// features (from kube.Features), atomically: NFD's worker, which skips
// hidden files, reads the old file or the new one, never a part. It
// creates dir when NFD has not.
func WriteFeatures(dir string, features []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("features: %w", err)
	}
	path := filepath.Join(dir, kube.FeaturesFile)
	if err := slurm.WriteFileAtomic(path, features, 0o644, nil); err != nil {
		return "", fmt.Errorf("features: %w", err)
	}
	return path, nil
}
