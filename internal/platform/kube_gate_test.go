package platform

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/mlplatform/mlplatform/acctest/kubetest"
	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// racingNodes is the gate's Kubernetes API on a real kube-apiserver, with
// a race put in: before each of the gate's first patches of a Node,
// someone else changes that Node (a label, as hwprobe's `kube publish`
// on the node sets its own), so the API server refuses the gate's patch,
// made on the Node as the gate read it, with a conflict.
type racingNodes struct {
	*cloud.KubeNodes
	t      *testing.T
	admin  kubernetes.Interface
	mu     sync.Mutex
	raced  map[string]int // per Node, the patches raced so far
	races  int            // how many of each Node's first patches to race
	passes int            // List calls: the gate's passes
}

func (r *racingNodes) List(ctx context.Context, selector string) ([]cloud.KubeNode, error) {
	r.mu.Lock()
	r.passes++
	r.mu.Unlock()
	return r.KubeNodes.List(ctx, selector)
}

func (r *racingNodes) race(ctx context.Context, name string) {
	r.mu.Lock()
	n := r.raced[name]
	if n < r.races {
		r.raced[name] = n + 1
	}
	r.mu.Unlock()
	if n >= r.races {
		return
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{kube.LabelStatus: "race-" + string(rune('a'+n))}}})
	if _, err := r.admin.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		r.t.Errorf("changing Node %s under the gate: %v", name, err)
	}
}

func (r *racingNodes) RemoveTaint(ctx context.Context, n cloud.KubeNode, key string, labels map[string]string) error {
	r.race(ctx, n.Name)
	return r.KubeNodes.RemoveTaint(ctx, n, key, labels)
}

func (r *racingNodes) MarkFailed(ctx context.Context, n cloud.KubeNode, labels map[string]string) error {
	r.race(ctx, n.Name)
	return r.KubeNodes.MarkFailed(ctx, n, labels)
}

// A Node that changes between the gate's read and its patch (the API
// server answers 409) is read again and patched anew: the look that fails
// the gate is its last, and before, a failed node whose Node hwprobe
// patched at that moment stayed uncordoned and unlabelled. Real
// kube-apiserver; the race is put in by the test.
func TestKubeGateJudgedConflicts(t *testing.T) {
	kubetest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp := kubetest.Start(t, kubetest.WithoutScheduler())
	pending := corev1.Taint{Key: kube.TaintKey, Value: kube.TaintValuePending, Effect: corev1.TaintEffect(kube.TaintEffect)}
	ids := []string{"i-0123456789abcdef0", "i-0123456789abcdef1"}
	for i, id := range ids {
		cp.RegisterNode(t, kubetest.NodeSpec{
			Name:       "ip-10-0-0-" + string(rune('1'+i)) + ".me-central-1.compute.internal",
			ProviderID: "aws:///me-central-1a/" + id,
			Labels:     map[string]string{kube.LabelCluster: kube.LabelValue("train")},
			Taints:     []corev1.Taint{pending},
		})
	}
	adminCfg := cp.Admin()
	admin, err := kubernetes.NewForConfig(adminCfg)
	if err != nil {
		t.Fatal(err)
	}
	real, err := cloud.NewKubeNodes(cloud.KubeAccess{Endpoint: cp.Endpoint(), CAPEM: cp.CACert(), CertPEM: adminCfg.CertData, KeyPEM: adminCfg.KeyData})
	if err != nil {
		t.Fatal(err)
	}
	res := GateResult{Nodes: []NodeVerdict{
		{Index: 0, InstanceID: ids[0], Status: NodePass},
		{Index: 1, InstanceID: ids[1], Status: NodeFail},
	}}
	for _, races := range []int{kubeConflictTries, 2} {
		api := &racingNodes{KubeNodes: real, t: t, admin: admin, raced: map[string]int{}, races: races}
		g := &kubeGate{resource: "GPU cluster train", selector: kube.LabelCluster + "=" + kube.LabelValue("train"), progress: t.Logf,
			connect: func(context.Context) (kubeNodesAPI, error) { return api, nil }}
		if err := g.judged(ctx, res); err != nil {
			t.Fatalf("races %d: %v", races, err)
		}
		if races == kubeConflictTries {
			// Every pass raced: the nodes are left for a later look, after
			// kubeConflictTries passes, without an error.
			if api.passes != kubeConflictTries {
				t.Fatalf("%d passes, want %d", api.passes, kubeConflictTries)
			}
			continue
		}
		if api.passes != races+1 {
			t.Errorf("%d passes, want %d (two raced, one that patched)", api.passes, races+1)
		}
		nodes, err := admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			tainted := false
			for _, tn := range n.Spec.Taints {
				tainted = tainted || tn.Key == kube.TaintKey
			}
			switch n.Spec.ProviderID {
			case "aws:///me-central-1a/" + ids[0]:
				if tainted || n.Labels[GateLabel] != GatePassed || n.Spec.Unschedulable {
					t.Errorf("passed Node %s: tainted %v, label %q, unschedulable %v; want untainted, %q, schedulable", n.Name, tainted, n.Labels[GateLabel], n.Spec.Unschedulable, GatePassed)
				}
			case "aws:///me-central-1a/" + ids[1]:
				if !tainted || n.Labels[GateLabel] != GateFailed || !n.Spec.Unschedulable {
					t.Errorf("failed Node %s: tainted %v, label %q, unschedulable %v; want tainted, %q, cordoned", n.Name, tainted, n.Labels[GateLabel], n.Spec.Unschedulable, GateFailed)
				}
			}
			if n.Labels[kube.LabelStatus] != "race-b" {
				t.Errorf("Node %s: the racing change's label is %q: the race did not run, or the gate overwrote it", n.Name, n.Labels[kube.LabelStatus])
			}
		}
	}
}
