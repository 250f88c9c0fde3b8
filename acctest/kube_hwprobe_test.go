package acctest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mlplatform/mlplatform/acctest/kubetest"
	"github.com/mlplatform/mlplatform/hwprobe/gpu"
	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/hwprobe/kube/node"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
)

// kubeReport writes a validation report of a DGX H100 node with checks, as
// hwprobe validate --report writes it at boot.
func kubeReport(t *testing.T, checks ...validate.Check) string {
	t.Helper()
	inv := &probe.Inventory{Schema: probe.SchemaVersion, GPU: gpu.Section{Available: true, Count: 8}}
	for i := range 8 {
		inv.GPU.GPUs = append(inv.GPU.GPUs, gpu.GPU{Index: i, Name: "NVIDIA H100 80GB HBM3", MemoryBytes: 81559 << 20})
	}
	res := validate.Summarize("p5", checks)
	b, err := json.Marshal(report.New(inv, &res, report.Options{Version: "test", ProfileName: "p5", ProfileSource: []byte("gpu {}\n"), Now: time.Now()}))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKubeHwprobe plays a GPU node of an EKS cluster against a real
// kube-apiserver (Node and RBAC authorization, NodeRestriction admission):
// the node registers with the startup taint, then the real hwprobe binary
// publishes its boot report with the kubelet's own credentials (a client
// certificate system:node:gpu-0, its name taken from it). It proves that
// the condition HwprobeValidated is set through the status subresource
// with the right status and reason, its transition time moving only with
// its status; that the kubelet's Ready condition and the provider's labels
// survive; that the label is set; that the startup taint is still there
// after a pass (only the provider's gate lifts it); that the NFD feature
// file holds GFD's labels; and that the same identity cannot touch another
// Node.
func TestKubeHwprobe(t *testing.T) {
	kubetest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := BuildHwprobe(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cp := kubetest.Start(t, kubetest.WithoutScheduler())
	pending := corev1.Taint{Key: kube.TaintKey, Value: kube.TaintValuePending, Effect: corev1.TaintEffect(kube.TaintEffect)}
	for _, name := range []string{"gpu-0", "gpu-1"} {
		cp.RegisterNode(t, kubetest.NodeSpec{
			Name:       name,
			ProviderID: "aws:///me-central-1a/i-0" + name,
			Labels:     map[string]string{kube.LabelCluster: "train-a", kube.LabelResource: "mlplatform_gpu_cluster.train"},
			Taints:     []corev1.Taint{pending},
			GPUs:       8,
		})
	}
	kubeconfig := filepath.Join(t.TempDir(), "var", "lib", "kubelet", "kubeconfig")
	cp.WriteKubeconfig(t, cp.NodeConfig(t, "gpu-0"), kubeconfig)
	admin, err := kubernetes.NewForConfig(cp.Admin())
	if err != nil {
		t.Fatal(err)
	}
	features := filepath.Join(t.TempDir(), "features.d")

	publish := func(t *testing.T, report string, extra ...string) (int, string) {
		t.Helper()
		args := append([]string{"kube", "publish", "--kubeconfig", kubeconfig, "--report", report, "--features-dir", features}, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, out.String()
		case errors.As(err, &exit):
			return exit.ExitCode(), out.String()
		}
		t.Fatalf("hwprobe %v: %v\n%s", args, err, out.String())
		return 0, ""
	}
	getNode := func(t *testing.T, name string) *corev1.Node {
		t.Helper()
		n, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	condition := func(n *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == typ {
				return &n.Status.Conditions[i]
			}
		}
		return nil
	}
	// checkNode checks gpu-0 as the API server holds it, and returns the
	// condition.
	checkNode := func(t *testing.T, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		t.Helper()
		n := getNode(t, "gpu-0")
		c := condition(n, kube.ConditionType)
		if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) {
			t.Fatalf("condition %+v, want %s %s %q", c, status, reason, message)
		}
		if r := condition(n, corev1.NodeReady); r == nil || r.Status != corev1.ConditionTrue || r.Reason != "KubeletReady" {
			t.Errorf("the kubelet's Ready condition: %+v", n.Status.Conditions)
		}
		if len(n.Status.Conditions) != 5 {
			t.Errorf("%d conditions, want the kubelet's 4 and hwprobe's: %+v", len(n.Status.Conditions), n.Status.Conditions)
		}
		want := kube.StatusFailed
		if status == corev1.ConditionTrue {
			want = kube.StatusPassed
		}
		if n.Labels[kube.LabelStatus] != want || n.Labels[kube.LabelCluster] != "train-a" || n.Labels[corev1.LabelHostname] != "gpu-0" {
			t.Errorf("labels %v", n.Labels)
		}
		if !slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.MatchTaint(&pending) && tt.Value == kube.TaintValuePending }) {
			t.Errorf("the startup taint is gone: %+v", n.Spec.Taints)
		}
		if !slices.ContainsFunc(n.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
			return m.Manager == node.FieldManager && m.Subresource == "status"
		}) {
			t.Errorf("no status field manager %q: %+v", node.FieldManager, n.ManagedFields)
		}
		return *c
	}
	checkFeatures := func(t *testing.T, status string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(features, kube.FeaturesFile))
		if err != nil {
			t.Fatal(err)
		}
		labels, expiry, err := kube.ParseFeatures(b)
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		want := map[string]string{kube.LabelStatus: status, kube.LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", kube.LabelGPUCount: "8", kube.LabelGPUMemory: "81559"}
		for k, v := range want {
			if labels[k] != v {
				t.Errorf("feature file: %s=%q, want %q\n%s", k, labels[k], v, b)
			}
		}
		if time.Until(expiry) < 23*time.Hour {
			t.Errorf("feature file expires at %s", expiry)
		}
	}

	pass := validate.Check{ID: "gpu.count", Status: validate.Pass, Expected: "8", Observed: "8"}
	failed := kubeReport(t, pass, validate.Check{ID: "gpu.nvlink", Subject: "gpu3", Status: validate.Fail, Reason: "17 of 18 links active"})
	passed := kubeReport(t, pass, validate.Check{ID: "bench.gpu_gemm_bf16", Subject: "gpu0", Status: validate.Pass})

	var first corev1.NodeCondition
	t.Run("failed", func(t *testing.T) {
		code, out := publish(t, failed)
		if code != 0 || !strings.Contains(out, "node gpu-0 (from client certificate)") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		first = checkNode(t, corev1.ConditionFalse, kube.ReasonCheckFailed, "gpu.nvlink gpu3: 17 of 18 links active")
		checkFeatures(t, kube.StatusFailed)
	})
	time.Sleep(1100 * time.Millisecond) // condition times are to the second
	var second corev1.NodeCondition
	t.Run("passed", func(t *testing.T) {
		code, out := publish(t, passed)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		second = checkNode(t, corev1.ConditionTrue, kube.ReasonChecksPassed, "2 of 2 checks passed")
		if !second.LastTransitionTime.After(first.LastTransitionTime.Time) {
			t.Errorf("transition %s, want after %s: the status changed", second.LastTransitionTime, first.LastTransitionTime)
		}
		checkFeatures(t, kube.StatusPassed)
	})
	time.Sleep(1100 * time.Millisecond)
	t.Run("passed again", func(t *testing.T) {
		code, out := publish(t, passed)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		c := checkNode(t, corev1.ConditionTrue, kube.ReasonChecksPassed, "")
		if !c.LastTransitionTime.Equal(&second.LastTransitionTime) || !c.LastHeartbeatTime.After(second.LastHeartbeatTime.Time) {
			t.Errorf("transition %s heartbeat %s, want %s and after %s", c.LastTransitionTime, c.LastHeartbeatTime, second.LastTransitionTime, second.LastHeartbeatTime)
		}
	})
	t.Run("another node", func(t *testing.T) {
		before := getNode(t, "gpu-1")
		code, out := publish(t, failed, "--node-name", "gpu-1")
		if code != 2 || !strings.Contains(out, "forbidden") || !strings.Contains(out, "may read and change only their own Node") {
			t.Fatalf("exit %d, want 2 and a clear refusal:\n%s", code, out)
		}
		after := getNode(t, "gpu-1")
		if condition(after, kube.ConditionType) != nil || after.Labels[kube.LabelStatus] != "" || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("gpu-1 changed: %+v", after)
		}
		t.Logf("refused:\n%s", out)
	})
	// An EKS node's kubelet has no client certificate (an IAM token): its
	// name is the user the API server sees, through a SelfSubjectReview,
	// which the node's identity may ask for.
	t.Run("self review", func(t *testing.T) {
		c, err := node.Connect(kubeconfig, "hwprobe/acctest")
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Reviews.Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if name, err := kube.NodeNameFromUser(r.Status.UserInfo.Username); name != "gpu-0" || err != nil {
			t.Errorf("review %+v: %q, %v", r.Status.UserInfo, name, err)
		}
	})
}
