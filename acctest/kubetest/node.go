package kubetest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// GPUResource is the extended resource NVIDIA's device plugin advertises.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// NodeSpec is a node as its kubelet registers it.
type NodeSpec struct {
	Name string
	// ProviderID is spec.providerID, aws:///ZONE/INSTANCE-ID on EKS.
	ProviderID string
	// Labels are set at registration, as kubelet's --node-labels. The
	// labels kubelet always sets (kubernetes.io/hostname, kubernetes.io/os,
	// kubernetes.io/arch) are added where Labels lacks them.
	Labels map[string]string
	// Taints are set at registration, as kubelet's --register-with-taints.
	Taints []corev1.Taint
	// GPUs is the node's nvidia.com/gpu capacity (none when 0).
	GPUs int
}

// NodeCapacity is what RegisterNode reports for every node, besides GPUs.
var NodeCapacity = corev1.ResourceList{
	corev1.ResourceCPU:              resource.MustParse("8"),
	corev1.ResourceMemory:           resource.MustParse("32Gi"),
	corev1.ResourcePods:             resource.MustParse("110"),
	corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
}

// RegisterNode registers a node as its kubelet does, with the node's own
// identity (NodeConfig): it creates the Node object (NodeRestriction lets a
// node create its own Node with the labels and taints it chooses), then
// posts its status through the status subresource: Ready=True, capacity and
// allocatable (NodeCapacity, and nvidia.com/gpu when GPUs > 0), addresses
// and node info. With the admin's credentials it then removes the taint
// node.kubernetes.io/not-ready that the apiserver adds to every new Node, as
// the node lifecycle controller does once the node is Ready; the taints of
// n stay. No kubelet runs: Pods bound to the node stay Pending.
func (c *ControlPlane) RegisterNode(t testing.TB, n NodeSpec) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.NodeConfig(t, n.Name))
	if err != nil {
		t.Fatalf("client of node %s: %v", n.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	labels := map[string]string{
		corev1.LabelHostname:   n.Name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: runtime.GOARCH,
	}
	for k, v := range n.Labels {
		labels[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
		Spec:       corev1.NodeSpec{ProviderID: n.ProviderID, Taints: n.Taints},
	}
	node, err = cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("node %s registering itself: %v", n.Name, err)
	}

	capacity := NodeCapacity.DeepCopy()
	if n.GPUs > 0 {
		capacity[GPUResource] = resource.MustParse(strconv.Itoa(n.GPUs))
	}
	now := metav1.Now()
	node.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity.DeepCopy(),
		Phase:       corev1.NodeRunning,
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
		},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "127.0.0.1"},
			{Type: corev1.NodeHostName, Address: n.Name},
		},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion:          Version,
			OperatingSystem:         "linux",
			Architecture:            runtime.GOARCH,
			ContainerRuntimeVersion: "containerd://1.7.27",
		},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node %s posting its status: %v", n.Name, err)
	}
	if err := c.untaintNotReady(ctx, n.Name); err != nil {
		t.Fatal(err)
	}
}

// untaintNotReady removes the taint node.kubernetes.io/not-ready:NoSchedule
// that the apiserver's TaintNodesByCondition admission puts on every new
// Node, as kube-controller-manager's node lifecycle controller does once
// the node is Ready (no controller manager runs here).
func (c *ControlPlane) untaintNotReady(ctx context.Context, name string) error {
	cs, err := kubernetes.NewForConfig(c.Admin())
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	for {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("node %s: removing the not-ready taint: %w", name, err)
		}
		kept := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
			return t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule
		})
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		_, err = cs.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) {
			return fmt.Errorf("node %s: removing the not-ready taint: %w", name, err)
		}
	}
}
