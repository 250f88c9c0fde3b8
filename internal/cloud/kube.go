package cloud

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// The Kubernetes API of a cluster the nodes join: the gate lists the
// resource's Nodes, lifts the startup taint from those whose evidence
// passed, and labels and cordons those that failed. Through client-go's
// dynamic client (no typed API groups linked).

// KubeNode is what the gate reads of a Node.
type KubeNode struct {
	Name string
	// ProviderID is aws:///ZONE/INSTANCE-ID on EC2.
	ProviderID    string
	Labels        map[string]string
	Taints        []KubeTaint
	Unschedulable bool
	// Conditions by type: status ("True", "False", "Unknown") and message.
	Conditions map[string]KubeCondition
	// ResourceVersion is what an update must match.
	ResourceVersion string
}

// KubeTaint is one taint of a Node.
type KubeTaint struct{ Key, Value, Effect string }

// KubeCondition is one condition of a Node.
type KubeCondition struct{ Status, Reason, Message string }

// InstanceID is the EC2 instance of the Node's provider ID, "" when it is
// not one.
func (n KubeNode) InstanceID() string {
	rest, ok := strings.CutPrefix(n.ProviderID, "aws://")
	if !ok {
		return ""
	}
	id := rest[strings.LastIndexByte(rest, '/')+1:]
	if !strings.HasPrefix(id, "i-") {
		return ""
	}
	return id
}

// HasTaint reports whether the Node carries a taint with key.
func (n KubeNode) HasTaint(key string) bool {
	for _, t := range n.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// KubeAccess is how to reach a cluster's API: its URL, the CA that signs
// its serving certificate (PEM), and a bearer token or a client
// certificate and key (PEM).
type KubeAccess struct {
	Endpoint string
	CAPEM    []byte
	Token    string
	// CertPEM and KeyPEM are a client certificate and its key (a
	// kubeconfig's client-certificate-data and client-key-data).
	CertPEM, KeyPEM []byte
	// ServerName, when set, is the name the serving certificate must
	// carry (a kubeconfig's tls-server-name).
	ServerName string
	// Timeout bounds every call (default 30 s).
	Timeout time.Duration
}

// KubeNodes reads and changes a cluster's Nodes.
type KubeNodes struct {
	client dynamic.NamespaceableResourceInterface
	pods   dynamic.NamespaceableResourceInterface
}

var nodesResource = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// NewKubeNodes makes the client; it calls nothing.
func NewKubeNodes(a KubeAccess) (*KubeNodes, error) {
	if a.Timeout <= 0 {
		a.Timeout = 30 * time.Second
	}
	cfg := &rest.Config{Host: a.Endpoint, BearerToken: a.Token, Timeout: a.Timeout, UserAgent: "mlplatform",
		TLSClientConfig: rest.TLSClientConfig{CAData: a.CAPEM, CertData: a.CertPEM, KeyData: a.KeyPEM, ServerName: a.ServerName}, QPS: 20, Burst: 40}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("the Kubernetes API at %s: %w", a.Endpoint, err)
	}
	return &KubeNodes{client: c.Resource(nodesResource), pods: c.Resource(podsResource)}, nil
}

// DecodeEKSCertificateAuthority turns EKS's certificate authority data
// (base64 of PEM) into PEM.
func DecodeEKSCertificateAuthority(data string) ([]byte, error) {
	pem, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return nil, fmt.Errorf("the cluster's certificate authority is not base64: %w", err)
	}
	return pem, nil
}

// List returns the Nodes that match the label selector.
func (k *KubeNodes) List(ctx context.Context, selector string) ([]KubeNode, error) {
	l, err := k.client.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing Nodes (%s): %w", selector, err)
	}
	out := make([]KubeNode, 0, len(l.Items))
	for i := range l.Items {
		out = append(out, kubeNodeFrom(&l.Items[i]))
	}
	return out, nil
}

func kubeNodeFrom(u *unstructured.Unstructured) KubeNode {
	n := KubeNode{Name: u.GetName(), Labels: u.GetLabels(), ResourceVersion: u.GetResourceVersion(), Conditions: map[string]KubeCondition{}}
	n.ProviderID, _, _ = unstructured.NestedString(u.Object, "spec", "providerID")
	n.Unschedulable, _, _ = unstructured.NestedBool(u.Object, "spec", "unschedulable")
	taints, _, _ := unstructured.NestedSlice(u.Object, "spec", "taints")
	for _, t := range taints {
		m, _ := t.(map[string]any)
		s := func(k string) string { v, _ := m[k].(string); return v }
		n.Taints = append(n.Taints, KubeTaint{Key: s("key"), Value: s("value"), Effect: s("effect")})
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		s := func(k string) string { v, _ := m[k].(string); return v }
		n.Conditions[s("type")] = KubeCondition{Status: s("status"), Reason: s("reason"), Message: s("message")}
	}
	return n
}

// ErrKubeConflict: the Node changed since it was read; read it again.
var ErrKubeConflict = errors.New("the Node changed since it was read")

// RemoveTaint removes every taint with key from the Node n was read as,
// and sets labels: a merge patch that carries the resourceVersion read, so
// that the API server refuses it (ErrKubeConflict) when the Node changed
// since, and a taint added meanwhile is never dropped.
func (k *KubeNodes) RemoveTaint(ctx context.Context, n KubeNode, key string, labels map[string]string) error {
	keep := []map[string]string{}
	for _, t := range n.Taints {
		if t.Key != key {
			m := map[string]string{"key": t.Key, "effect": t.Effect}
			if t.Value != "" {
				m["value"] = t.Value
			}
			keep = append(keep, m)
		}
	}
	var taints any = keep
	if len(keep) == 0 {
		taints = nil
	}
	return k.patch(ctx, n, map[string]any{"taints": taints}, labels, "lifting taint "+key+" from Node "+n.Name)
}

// MarkFailed sets labels on the Node and cordons it (spec.unschedulable):
// what the gate does to a node whose evidence failed. Its taints stay.
func (k *KubeNodes) MarkFailed(ctx context.Context, n KubeNode, labels map[string]string) error {
	return k.patch(ctx, n, map[string]any{"unschedulable": true}, labels, "cordoning Node "+n.Name)
}

// patch merge-patches spec and labels onto the Node as read (its
// resourceVersion: optimistic concurrency).
func (k *KubeNodes) patch(ctx context.Context, n KubeNode, spec map[string]any, labels map[string]string, what string) error {
	meta := map[string]any{"resourceVersion": n.ResourceVersion}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	body, err := json.Marshal(map[string]any{"metadata": meta, "spec": spec})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, err := k.client.Patch(ctx, n.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "mlplatform"}); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("%s: %w", what, ErrKubeConflict)
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// DeleteNode deletes Node name (gone already is success): a replaced
// instance's, whose name its replacement may take (the private DNS name of
// a reused address).
func (k *KubeNodes) DeleteNode(ctx context.Context, name string) error {
	if err := k.client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Node %s: %w", name, err)
	}
	return nil
}

var podsResource = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// ErrDrainBlocked: an eviction was refused (a PodDisruptionBudget).
var ErrDrainBlocked = errors.New("an eviction was refused (PodDisruptionBudget)")

// Drain evicts the pods bound to Node name (the Eviction API, so that
// PodDisruptionBudgets hold), but those of DaemonSets and mirror pods, as
// `kubectl drain` does; the Node should be cordoned first. It returns the
// pods it evicted.
func (k *KubeNodes) Drain(ctx context.Context, name string) ([]string, error) {
	l, err := k.pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of Node %s: %w", name, err)
	}
	var evicted []string
	for _, p := range l.Items {
		if _, mirror := p.GetAnnotations()["kubernetes.io/config.mirror"]; mirror || p.GetDeletionTimestamp() != nil {
			continue
		}
		if slices.ContainsFunc(p.GetOwnerReferences(), func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" }) {
			continue
		}
		ev := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "policy/v1", "kind": "Eviction",
			"metadata": map[string]any{"name": p.GetName(), "namespace": p.GetNamespace()}}}
		_, err := k.pods.Namespace(p.GetNamespace()).Create(ctx, ev, metav1.CreateOptions{}, "eviction")
		switch {
		case apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			return evicted, fmt.Errorf("draining Node %s: pod %s/%s: %w", name, p.GetNamespace(), p.GetName(), ErrDrainBlocked)
		case err != nil:
			return evicted, fmt.Errorf("draining Node %s: evicting pod %s/%s: %w", name, p.GetNamespace(), p.GetName(), err)
		default:
			evicted = append(evicted, p.GetNamespace()+"/"+p.GetName())
		}
	}
	return evicted, nil
}
