package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// pendingTaint is the startup taint GPU and CPU nodes join with.
var pendingTaint = corev1.Taint{Key: "mlplatform.io/hwprobe", Value: "pending", Effect: corev1.TaintEffectNoSchedule}

func clientset(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// wantForbidden fails t unless err is the apiserver's 403 and its message
// says why.
func wantForbidden(t *testing.T, what string, err error, because string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: allowed, want 403 Forbidden", what)
	case !apierrors.IsForbidden(err):
		t.Errorf("%s: %v, want 403 Forbidden", what, err)
	case !strings.Contains(err.Error(), because):
		t.Errorf("%s: %v, want 403 Forbidden saying %q", what, err, because)
	default:
		t.Logf("%s: refused as expected: %v", what, err)
	}
}

func TestMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBE_BIN_DIR", dir)
	if got := BinDir(); got != dir {
		t.Fatalf("BinDir() = %q with KUBE_BIN_DIR set, want %q", got, dir)
	}
	why := Missing()
	for _, want := range []string{dir, "etcd, kube-apiserver, kube-scheduler", "scripts/kube-bins.sh"} {
		if !strings.Contains(why, want) {
			t.Errorf("Missing() = %q, want it to say %q", why, want)
		}
	}
	for _, b := range binaries {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if why := Missing(); why != "" {
		t.Errorf("Missing() = %q with every binary there, want \"\"", why)
	}
	if err := os.Chmod(filepath.Join(dir, "etcd"), 0o644); err != nil {
		t.Fatal(err)
	}
	if why := Missing(); !strings.Contains(why, "(etcd not found)") {
		t.Errorf("Missing() = %q with etcd not executable, want it to name etcd", why)
	}
}

// TestNodeRestriction proves, against the real Node authorizer and
// NodeRestriction admission, what a kubelet's identity may do to Nodes:
// what hwprobe relies on (register itself with its taint, label its own
// Node, set its own condition HwprobeValidated) and what the gate must do
// instead (remove the taint: only the cluster's credentials may).
func TestNodeRestriction(t *testing.T) {
	cp := Start(t, WithoutScheduler())
	ctx := testContext(t, 2*time.Minute)
	admin := clientset(t, cp.Admin())
	cp.RegisterNode(t, NodeSpec{
		Name:       "gpu-a",
		ProviderID: "aws:///me-central-1a/i-0aaaaaaaaaaaaaaaa",
		Labels:     map[string]string{"mlplatform.io/pool": "gpu", "node.kubernetes.io/instance-type": "p5en.48xlarge"},
		Taints:     []corev1.Taint{pendingTaint},
		GPUs:       8,
	})
	cp.RegisterNode(t, NodeSpec{Name: "gpu-b", Taints: []corev1.Taint{pendingTaint}, GPUs: 8})
	// gpu-a's client reads a kubeconfig as its kubelet's, written by
	// WriteKubeconfig.
	kubeconfig := filepath.Join(t.TempDir(), "var", "lib", "kubelet", "kubeconfig")
	cp.WriteKubeconfig(t, cp.NodeConfig(t, "gpu-a"), kubeconfig)
	if fi, err := os.Stat(kubeconfig); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig: %v, mode %v, want 0600", err, fi.Mode().Perm())
	}
	fromFile, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	nodeA := clientset(t, fromFile)

	t.Run("registered as a kubelet registers", func(t *testing.T) {
		n, err := admin.CoreV1().Nodes().Get(ctx, "gpu-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != pendingTaint.Key || n.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("taints = %v, want [%v]", n.Spec.Taints, pendingTaint)
		}
		if n.Spec.ProviderID != "aws:///me-central-1a/i-0aaaaaaaaaaaaaaaa" || n.Labels["mlplatform.io/pool"] != "gpu" || n.Labels[corev1.LabelHostname] != "gpu-a" {
			t.Errorf("providerID %q, labels %v: not as registered", n.Spec.ProviderID, n.Labels)
		}
		if q := n.Status.Allocatable[GPUResource]; q.Cmp(resource.MustParse("8")) != 0 {
			t.Errorf("allocatable %s = %s, want 8", GPUResource, q.String())
		}
		if !nodeCondition(n, corev1.NodeReady, corev1.ConditionTrue) {
			t.Errorf("conditions = %v, want Ready=True", n.Status.Conditions)
		}
	})

	t.Run("a node may label its own Node", func(t *testing.T) {
		patch := `{"metadata":{"labels":{"mlplatform.io/hwprobe":"passed","mlplatform.io/gpu-model":"H200"}}}`
		n, err := nodeA.CoreV1().Nodes().Patch(ctx, "gpu-a", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("labelling its own Node: %v", err)
		}
		if n.Labels["mlplatform.io/hwprobe"] != "passed" {
			t.Errorf("labels = %v", n.Labels)
		}
	})

	t.Run("a node may set its own condition HwprobeValidated", func(t *testing.T) {
		now := metav1.Now().UTC().Format(time.RFC3339)
		patch := `{"status":{"conditions":[{"type":"HwprobeValidated","status":"True","reason":"ProfileMatched",` +
			`"message":"8x H200 as declared","lastHeartbeatTime":"` + now + `","lastTransitionTime":"` + now + `"}]}}`
		_, err := nodeA.CoreV1().Nodes().Patch(ctx, "gpu-a", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatalf("patching its own status: %v", err)
		}
		n, err := admin.CoreV1().Nodes().Get(ctx, "gpu-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Conditions merge by type: Ready stays beside the new one.
		if !nodeCondition(n, "HwprobeValidated", corev1.ConditionTrue) || !nodeCondition(n, corev1.NodeReady, corev1.ConditionTrue) {
			t.Errorf("conditions = %v, want HwprobeValidated=True beside Ready=True", n.Status.Conditions)
		}
	})

	t.Run("a node may not remove or change its own taints", func(t *testing.T) {
		remove := `[{"op":"test","path":"/spec/taints/0/key","value":"mlplatform.io/hwprobe"},{"op":"remove","path":"/spec/taints"}]`
		_, err := nodeA.CoreV1().Nodes().Patch(ctx, "gpu-a", types.JSONPatchType, []byte(remove), metav1.PatchOptions{})
		wantForbidden(t, "gpu-a removing its taints", err, `node "gpu-a" is not allowed to modify taints`)

		change := `[{"op":"replace","path":"/spec/taints/0/value","value":"passed"}]`
		_, err = nodeA.CoreV1().Nodes().Patch(ctx, "gpu-a", types.JSONPatchType, []byte(change), metav1.PatchOptions{})
		wantForbidden(t, "gpu-a changing its taint's value", err, `node "gpu-a" is not allowed to modify taints`)

		n, err := nodeA.CoreV1().Nodes().Get(ctx, "gpu-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.Taints = nil
		_, err = nodeA.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		wantForbidden(t, "gpu-a updating its Node without taints", err, `node "gpu-a" is not allowed to modify taints`)
	})

	t.Run("a node may not set labels of the node-restriction prefix", func(t *testing.T) {
		patch := `{"metadata":{"labels":{"node-restriction.kubernetes.io/validated":"true"}}}`
		_, err := nodeA.CoreV1().Nodes().Patch(ctx, "gpu-a", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		wantForbidden(t, "gpu-a setting a node-restriction.kubernetes.io/ label", err, "is not allowed to modify labels: node-restriction.kubernetes.io/validated")
	})

	t.Run("a node may not touch another Node", func(t *testing.T) {
		label := `{"metadata":{"labels":{"mlplatform.io/hwprobe":"passed"}}}`
		_, err := nodeA.CoreV1().Nodes().Patch(ctx, "gpu-b", types.MergePatchType, []byte(label), metav1.PatchOptions{})
		wantForbidden(t, "gpu-a labelling gpu-b", err, `node "gpu-a" is not allowed to modify node "gpu-b"`)

		cond := `{"status":{"conditions":[{"type":"HwprobeValidated","status":"True","reason":"Forged"}]}}`
		_, err = nodeA.CoreV1().Nodes().Patch(ctx, "gpu-b", types.StrategicMergePatchType, []byte(cond), metav1.PatchOptions{}, "status")
		wantForbidden(t, "gpu-a setting gpu-b's condition", err, `node "gpu-a" is not allowed to modify node "gpu-b"`)

		untaint := `[{"op":"remove","path":"/spec/taints"}]`
		_, err = nodeA.CoreV1().Nodes().Patch(ctx, "gpu-b", types.JSONPatchType, []byte(untaint), metav1.PatchOptions{})
		wantForbidden(t, "gpu-a removing gpu-b's taints", err, `node "gpu-a" is not allowed to modify node "gpu-b"`)

		// The Node authorizer, before admission, refuses kubelets any delete.
		err = nodeA.CoreV1().Nodes().Delete(ctx, "gpu-b", metav1.DeleteOptions{})
		wantForbidden(t, "gpu-a deleting gpu-b", err, `User "system:node:gpu-a" cannot delete resource "nodes"`)

		// Since 1.34 (AuthorizeNodeWithSelectors) a node may not even read
		// another Node, nor list Nodes but its own.
		_, err = nodeA.CoreV1().Nodes().Get(ctx, "gpu-b", metav1.GetOptions{})
		wantForbidden(t, "gpu-a reading gpu-b", err, "node 'gpu-a' cannot read 'gpu-b', only its own Node object")
		_, err = nodeA.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		wantForbidden(t, "gpu-a listing every Node", err, `cannot list resource "nodes"`)
		own, err := nodeA.CoreV1().Nodes().List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=gpu-a"})
		if err != nil || len(own.Items) != 1 {
			t.Errorf("gpu-a listing its own Node by field selector: %v", err)
		}

		_, err = nodeA.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-c"}}, metav1.CreateOptions{})
		wantForbidden(t, "gpu-a registering gpu-c", err, `node "gpu-a" is not allowed to modify node "gpu-c"`)

		b, err := admin.CoreV1().Nodes().Get(ctx, "gpu-b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b.Labels["mlplatform.io/hwprobe"] != "" || nodeCondition(b, "HwprobeValidated", corev1.ConditionTrue) || len(b.Spec.Taints) != 1 {
			t.Errorf("gpu-b changed: labels %v, conditions %v, taints %v", b.Labels, b.Status.Conditions, b.Spec.Taints)
		}
	})

	t.Run("the admin may remove the taint", func(t *testing.T) {
		remove := `[{"op":"test","path":"/spec/taints/0/key","value":"mlplatform.io/hwprobe"},{"op":"remove","path":"/spec/taints/0"}]`
		n, err := admin.CoreV1().Nodes().Patch(ctx, "gpu-a", types.JSONPatchType, []byte(remove), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("admin removing gpu-a's taint: %v", err)
		}
		if len(n.Spec.Taints) != 0 {
			t.Errorf("taints = %v after removal", n.Spec.Taints)
		}
	})
}

func nodeCondition(n *corev1.Node, typ corev1.NodeConditionType, status corev1.ConditionStatus) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c.Status == status
		}
	}
	return false
}

// TestStartupTaintHoldsPods proves, with the real kube-scheduler, that the
// startup taint keeps work off a node until the taint goes: a Pod without
// tolerations stays unscheduled while the only Node carries
// mlplatform.io/hwprobe=pending:NoSchedule, and is bound to it once the
// admin removes the taint.
func TestStartupTaintHoldsPods(t *testing.T) {
	cp := Start(t)
	ctx := testContext(t, 3*time.Minute)
	admin := clientset(t, cp.Admin())
	cp.RegisterNode(t, NodeSpec{Name: "gpu-0", ProviderID: "aws:///me-central-1a/i-0123456789abcdef0", Taints: []corev1.Taint{pendingTaint}, GPUs: 1})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "train",
			Image:     "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{GPUResource: resource.MustParse("1")}},
		}}},
	}
	if _, err := admin.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler tried and refused: PodScheduled=False, Unschedulable.
	p := waitPod(ctx, t, admin, pod, "the scheduler to refuse it", func(p *corev1.Pod) bool {
		c := podCondition(p, corev1.PodScheduled)
		return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
	})
	if p.Spec.NodeName != "" {
		t.Fatalf("Pod bound to %s while the node is tainted", p.Spec.NodeName)
	}
	// 1.34's message does not name the taint; the binding once it goes
	// shows which it was.
	if c := podCondition(p, corev1.PodScheduled); !strings.Contains(c.Message, "1 node(s) had untolerated taint") {
		t.Errorf("PodScheduled message %q, want the node refused for an untolerated taint", c.Message)
	}
	t.Logf("while tainted: PodScheduled=False: %s", podCondition(p, corev1.PodScheduled).Message)

	remove := `[{"op":"test","path":"/spec/taints/0/key","value":"mlplatform.io/hwprobe"},{"op":"remove","path":"/spec/taints/0"}]`
	if _, err := admin.CoreV1().Nodes().Patch(ctx, "gpu-0", types.JSONPatchType, []byte(remove), metav1.PatchOptions{}); err != nil {
		t.Fatalf("admin removing the taint: %v", err)
	}
	start := time.Now()
	p = waitPod(ctx, t, admin, pod, "the scheduler to bind it", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })
	if p.Spec.NodeName != "gpu-0" {
		t.Errorf("Pod bound to %q, want gpu-0", p.Spec.NodeName)
	}
	t.Logf("bound to %s %s after the taint went", p.Spec.NodeName, time.Since(start).Round(time.Millisecond))
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, pod *corev1.Pod, what string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && done(p) {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; Pod: spec.nodeName %q, conditions %+v (last error: %v)", what, ctx.Err(), p.Spec.NodeName, p.Status.Conditions, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
