package provider_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/kubetest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// EKS join against real parts: a real kube-apiserver (Node and RBAC
// authorization, NodeRestriction), etcd and kube-scheduler; moto's EKS
// (its DescribeCluster pointed at that apiserver by the shim); the gate's
// EKS token checked by the apiserver's token webhook, which replays it to
// STS (moto behind a front that checks presigned signatures) and maps the
// role it names, as EKS's authenticator does.

const (
	eksCluster = "ml-prod"
	gateRole   = "arn:aws:iam::123456789012:role/mlplatform-gate"
	gateUser   = "mlplatform:gate"
)

// eksEnv is one test's Kubernetes cluster and the provider's way to it.
type eksEnv struct {
	h        *acctest.Harness
	nodeRole string // the role of instance profile eks-nodes
	cp       *kubetest.ControlPlane
	webhook  *kubetest.TokenWebhook
	sts      *kubetest.MotoSTS
	admin    *kubernetes.Clientset
	// onJoin, when set, runs once a node registered (tainted), before
	// hwprobe publishes: a test looks at the cluster then.
	onJoin func(j acctest.KubeJoin) error
}

// eksSetup starts the control plane with the token webhook, gives the
// gate's role what the gate needs (list and patch Nodes, list pods and
// evict them), and creates the
// EKS cluster in moto, its API the control plane's.
func eksSetup(t *testing.T, h *acctest.Harness) *eksEnv {
	t.Helper()
	e := &eksEnv{h: h, sts: kubetest.StartMotoSTS(t, h.URL)}
	e.webhook = kubetest.StartTokenWebhook(t, e.sts.URL, func(arn string) (string, []string, bool) {
		if arn == gateRole {
			return gateUser, nil, true
		}
		return "", nil, false
	})
	e.webhook.SetClusterID(eksCluster)
	e.cp = kubetest.Start(t, kubetest.WithTokenWebhook(e.webhook))
	var err error
	if e.admin, err = kubernetes.NewForConfig(e.cp.Admin()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "mlplatform-gate"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
			{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}}}}
	if _, err := e.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mlplatform-gate"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "mlplatform-gate"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: gateUser}}}
	if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.CreateEKSCluster(ctx, eksCluster); err != nil {
		t.Fatal(err)
	}
	if e.nodeRole, err = h.CreateInstanceProfile(ctx, "eks-nodes"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(acctest.RegisterEKSAPIServer(h.Shim, eksCluster, e.cp.Endpoint(), e.cp.CACert()))
	return e
}

// JoinNode registers the node as its kubelet would from its NodeConfig,
// once the NodeConfig is shown to name this cluster's API and CA.
func (e *eksEnv) JoinNode(_ context.Context, j acctest.KubeJoin) (path string, err error) {
	nc := j.NodeConfig
	ca, err := base64.StdEncoding.DecodeString(nc.CertificateAuthority)
	if err != nil || !bytes.Equal(ca, e.cp.CACert()) || nc.Endpoint != e.cp.Endpoint() || nc.ClusterName != eksCluster {
		return "", fmt.Errorf("the NodeConfig names cluster %q at %q (CA readable: %v), not %s at %s", nc.ClusterName, nc.Endpoint, err == nil, eksCluster, e.cp.Endpoint())
	}
	var taints []corev1.Taint
	for _, tt := range nc.Taints {
		taints = append(taints, corev1.Taint{Key: tt.Key, Value: tt.Value, Effect: corev1.TaintEffect(tt.Effect)})
	}
	t := &errT{}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(errTStop); !ok {
				panic(r)
			}
			err = t.err
		}
	}()
	e.cp.RegisterNode(t, kubetest.NodeSpec{Name: j.NodeName, ProviderID: j.ProviderID, Labels: nc.Labels, Taints: taints, GPUs: j.GPUs})
	path = filepath.Join(j.Dir, "kubelet.kubeconfig")
	e.cp.WriteKubeconfig(t, e.cp.NodeConfig(t, j.NodeName), path)
	if e.onJoin != nil {
		if err := e.onJoin(j); err != nil {
			return "", err
		}
	}
	return path, nil
}

// checkEntry checks the nodes' role has an EC2_LINUX access entry owned
// by token, or, for "", none.
func (e *eksEnv) checkEntry(token string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		entry, ok := e.h.EKSAccessEntries(eksCluster)[e.nodeRole]
		switch {
		case token == "" && ok:
			return fmt.Errorf("the access entry of %s is left behind: %+v", e.nodeRole, entry)
		case token == "":
			return nil
		case !ok:
			return fmt.Errorf("no access entry for the nodes' role %s", e.nodeRole)
		case entry.Type != "EC2_LINUX" || entry.Tags["mlplatform:creation-token"] != token:
			return fmt.Errorf("the access entry of %s: type %s, tags %v; want EC2_LINUX owned by %s", e.nodeRole, entry.Type, entry.Tags, token)
		}
		return nil
	}
}

// nodes lists the Nodes of the cluster resource name.
func (e *eksEnv) nodes(name string) ([]corev1.Node, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := e.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: platform.EKSLabelCluster + "=" + name})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func hasTaint(n corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

func condition(n corev1.Node, typ string) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if string(n.Status.Conditions[i].Type) == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// asGate has cfg's provider work as the gate's role (assume_role), its
// STS calls through the front that checks presigned signatures.
func (e *eksEnv) asGate(cfg string) string {
	cfg = regexp.MustCompile(`(?m)^(\s*sts\s*=\s*)".*"$`).ReplaceAllString(cfg, `${1}"`+e.sts.URL+`"`)
	return strings.Replace(cfg, "  region = ", "  assume_role = { role_arn = \""+gateRole+"\" }\n  region = ", 1)
}

// eksConfig is a cluster that joins the EKS cluster, the provider working
// as the gate's role (assume_role), its STS calls through the front that
// checks presigned signatures.
func eksConfig(h *acctest.Harness, e *eksEnv, name string, nodes int, key, certPEM, validation string) string {
	cfg := e.asGate(gateConfig(h, name, gpuType, nodes, key, certPEM, "    timeout = \"2m\"\n"+validation))
	return strings.Replace(cfg, "  validation = {", `  instance_profile = "eks-nodes"

  orchestrator = {
    eks = {
      cluster_name = "`+eksCluster+`"
      labels       = { "team.example.com/owner" = "vision" }
    }
  }

  validation = {`, 1)
}

// Healthy nodes join tainted; the gate, with an EKS token for its role,
// lifts the taint of each once its evidence passed, and the apply ends
// with every node schedulable. An ML engineer's pod asking for the 8 GPUs
// of a node, submitted before the apply, stays Pending under the real
// scheduler while the nodes are registered but tainted, and binds once the
// gate lifted the taint.
func TestAccGPUCluster_eksJoin(t *testing.T) {
	kubetest.Require(t)
	const name = "eks-join"
	h, p, key := gateSetup(t, name, healthyGPUs)
	e := eksSetup(t, h)
	p.Kube = e
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "train", Image: "registry.example/train:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resourceQuantity("8")}}}},
			NodeSelector: map[string]string{platform.EKSLabelCluster: name}}}
	if _, err := e.admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var pendingSeen []string
	// A node registers (tainted) while hwprobe validates it, before its
	// report: the gate cannot have lifted its taint.
	e.onJoin = func(j acctest.KubeJoin) error {
		// The scheduler sees a new Node at once; give it time to try.
		time.Sleep(500 * time.Millisecond)
		nodes, err := e.nodes(name)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(nodes, func(n corev1.Node) bool { return !hasTaint(n, platform.EKSTaintKey) }) {
			return nil // another node passed already: the pod may bind there
		}
		got, err := e.admin.CoreV1().Pods("default").Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Spec.NodeName != "" {
			return fmt.Errorf("pod train bound to %s while every Node is tainted", got.Spec.NodeName)
		}
		mu.Lock()
		pendingSeen = append(pendingSeen, j.NodeName)
		mu.Unlock()
		return nil
	}
	joined := func(s *terraform.State) error {
		nodes, err := e.nodes(name)
		if err != nil {
			return err
		}
		if len(nodes) != 2 {
			return fmt.Errorf("%d Nodes labelled %s=%s, want 2", len(nodes), platform.EKSLabelCluster, name)
		}
		for _, n := range nodes {
			if hasTaint(n, platform.EKSTaintKey) {
				return fmt.Errorf("%s still carries %s: %v", n.Name, platform.EKSTaintKey, n.Spec.Taints)
			}
			if n.Spec.Unschedulable {
				return fmt.Errorf("%s is cordoned", n.Name)
			}
			want := map[string]string{platform.GateLabel: platform.GatePassed, platform.EKSStatusLabel: "passed", platform.EKSLabelResource: "gpu-cluster",
				platform.EKSLabelInstance: gpuType, platform.EKSLabelPlacement: "mlplatform-" + name, "team.example.com/owner": "vision"}
			for k, v := range want {
				if n.Labels[k] != v {
					return fmt.Errorf("%s: label %s = %q, want %q (labels %v)", n.Name, k, n.Labels[k], v, n.Labels)
				}
			}
			if c := condition(n, platform.EKSConditionType); c == nil || c.Status != corev1.ConditionTrue {
				return fmt.Errorf("%s: condition %s %+v, want True (hwprobe sets it)", n.Name, platform.EKSConditionType, c)
			}
			if !strings.HasPrefix(n.Spec.ProviderID, "aws:///me-central-1") || !strings.Contains(n.Spec.ProviderID, "/i-") {
				return fmt.Errorf("%s: provider ID %q", n.Name, n.Spec.ProviderID)
			}
		}
		// The gate authenticated as its role, through the webhook.
		var ok bool
		for _, r := range e.webhook.Reviews() {
			if r.Authenticated && r.Username == gateUser && r.CanonicalARN == gateRole {
				ok = true
			}
		}
		if !ok {
			return fmt.Errorf("no EKS token of the gate's role was authenticated: %+v", e.webhook.Reviews())
		}
		// The pod was pending while the registered nodes were tainted,
		// and binds now.
		mu.Lock()
		seen := len(pendingSeen)
		mu.Unlock()
		if seen < 1 {
			return fmt.Errorf("the pod was never seen pending beside the registered, tainted Nodes")
		}
		for {
			got, err := e.admin.CoreV1().Pods("default").Get(ctx, "train", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Spec.NodeName != "" {
				t.Logf("pod train scheduled on %s", got.Spec.NodeName)
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("pod train was not scheduled: %+v", got.Status.Conditions)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             e.checkEntry(""),
		Steps: []resource.TestStep{{
			Config: eksConfig(h, e, name, 2, key, p.Signer.CertPEM, ""),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.#", "2"),
				func(s *terraform.State) error {
					return e.checkEntry(s.RootModule().Resources[gpuClusterResource].Primary.Attributes["creation_token"])(s)
				},
				resource.TestMatchResourceAttr(gpuClusterResource, "validation_bootstrap", regexp.MustCompile(`Content-Type: application/node\.eks\.aws`)),
				joined,
			),
		}},
	})
}

// A node whose evidence fails keeps the taint, is labelled failed and
// cordoned; the one that passed is schedulable; the apply fails naming
// the node.
func TestAccGPUCluster_eksFailedNode(t *testing.T) {
	kubetest.Require(t)
	const name = "eks-fail"
	h, p, key := gateSetup(t, name, nvlinkDown)
	e := eksSetup(t, h)
	p.Kube = e
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      eksConfig(h, e, name, 2, key, p.Signer.CertPEM, ""),
			ExpectError: regexp.MustCompile(`(?s)1\s+of\s+2\s+nodes\s+failed.*node\s+1\s+\(i-[0-9a-f]+\):\s+gpu\.nvlink\s+gpu3`),
		}, {
			// The failed create tainted the cluster: the next plan
			// replaces it.
			RefreshState:       true,
			ExpectNonEmptyPlan: true,
			Check: func(*terraform.State) error {
				nodes, err := e.nodes(name)
				if err != nil {
					return err
				}
				var passed, failed int
				for _, n := range nodes {
					switch n.Labels[platform.GateLabel] {
					case platform.GatePassed:
						passed++
						if hasTaint(n, platform.EKSTaintKey) || n.Spec.Unschedulable {
							return fmt.Errorf("%s passed but is tainted or cordoned", n.Name)
						}
					case platform.GateFailed:
						failed++
						if !hasTaint(n, platform.EKSTaintKey) || !n.Spec.Unschedulable {
							return fmt.Errorf("%s failed but is not tainted and cordoned: %v, unschedulable %v", n.Name, n.Spec.Taints, n.Spec.Unschedulable)
						}
						if c := condition(n, platform.EKSConditionType); c == nil || c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "gpu.nvlink") {
							return fmt.Errorf("%s: condition %+v, want False naming gpu.nvlink", n.Name, c)
						}
					}
				}
				if passed != 1 || failed != 1 {
					return fmt.Errorf("%d passed, %d failed Nodes, want 1 and 1", passed, failed)
				}
				return nil
			},
		}},
	})
}

// resourceQuantity parses a quantity ("8").
func resourceQuantity(s string) resourceapi.Quantity { return resourceapi.MustParse(s) }

// errT is the testing.TB a node's registration reports to from the node
// player's goroutine: its error ends the registration (a panic JoinNode
// recovers) instead of failing a test from outside the test's goroutine.
type errT struct {
	testing.TB
	err error
}

// errTStop is errT's panic.
type errTStop struct{}

func (e *errT) Helper()                   {}
func (e *errT) Cleanup(func())            {}
func (e *errT) Logf(string, ...any)       {}
func (e *errT) Fatal(args ...any)         { e.fail(fmt.Sprint(args...)) }
func (e *errT) Fatalf(f string, a ...any) { e.fail(fmt.Sprintf(f, a...)) }
func (e *errT) Errorf(f string, a ...any) { e.fail(fmt.Sprintf(f, a...)) }
func (e *errT) Error(args ...any)         { e.fail(fmt.Sprint(args...)) }
func (e *errT) fail(msg string) {
	e.err = fmt.Errorf("%s", msg)
	panic(errTStop{})
}

// With on_failure = "replace", a node whose evidence fails keeps its
// taint, is labelled failed, cordoned and drained (a pod that tolerates
// the taint is evicted) before its instance is replaced; the replacement
// registers tainted and is untainted once proven.
func TestAccGPUCluster_eksReplace(t *testing.T) {
	kubetest.Require(t)
	const name = "eks-replace"
	h, p, key := gateSetup(t, name, nvlinkDown)
	e := eksSetup(t, h)
	p.Kube = e
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A workload that tolerates the startup taint (a monitoring agent),
	// bound to each node as it registers.
	e.onJoin = func(j acctest.KubeJoin) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + j.InstanceID, Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: j.NodeName, Containers: []corev1.Container{{Name: "agent", Image: "registry.example/agent:1"}},
				Tolerations: []corev1.Toleration{{Key: platform.EKSTaintKey, Operator: corev1.TolerationOpExists}}}}
		_, err := e.admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: eksConfig(h, e, name, 2, key, p.Signer.CertPEM, `    on_failure = "replace"`),
			Check: func(s *terraform.State) error {
				nodes, err := e.nodes(name)
				if err != nil {
					return err
				}
				// The replaced instance's Node is gone (the gate deleted
				// it after the termination); the two that remain passed.
				live := map[string]bool{}
				for _, n := range nodes {
					if n.Labels[platform.GateLabel] != platform.GatePassed || hasTaint(n, platform.EKSTaintKey) || n.Spec.Unschedulable {
						return fmt.Errorf("Node %s: label %q, taints %v, unschedulable %v; want passed and schedulable", n.Name, n.Labels[platform.GateLabel], n.Spec.Taints, n.Spec.Unschedulable)
					}
					live[strings.TrimPrefix(n.Spec.ProviderID[strings.LastIndexByte(n.Spec.ProviderID, '/'):], "/")] = true
				}
				if len(nodes) != 2 {
					return fmt.Errorf("%d Nodes, want the 2 of the cluster's live instances", len(nodes))
				}
				pods, err := e.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
				if err != nil {
					return err
				}
				// Three agents were bound: two on live instances, kept; one
				// on the replaced instance, evicted before it went.
				evicted, kept := 0, 0
				for _, pd := range pods.Items {
					id := strings.TrimPrefix(pd.Name, "agent-")
					switch {
					case live[id] && pd.DeletionTimestamp == nil:
						kept++
					case !live[id] && pd.DeletionTimestamp != nil:
						evicted++
					default:
						return fmt.Errorf("agent pod %s (instance live %v) deleting %v", pd.Name, live[id], pd.DeletionTimestamp != nil)
					}
				}
				if kept != 2 || evicted != 1 {
					return fmt.Errorf("%d agents kept and %d evicted, want 2 and 1", kept, evicted)
				}
				return nil
			},
		}},
	})
}

// An EKS cluster outside the jurisdiction is refused at plan with zero
// writes: named by an ARN in another region (no call is made), or found
// in the provider's region but serving its API from another region.
func TestAccGPUCluster_eksOutsideJurisdiction(t *testing.T) {
	h := acctest.Setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	key := createKey(t, h, acctest.Region)
	if err := h.CreateEKSCluster(ctx, "ml-eu-api"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(acctest.RegisterEKSAPIServer(h.Shim, "ml-eu-api", "https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com", []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")))
	cfg := func(cluster string) string {
		return strings.Replace(gateConfig(h, "eks-outside", gpuType, 1, key, "", ""), "  validation = {", `  orchestrator = {
    eks = {
      cluster_name        = "`+cluster+`"
      create_access_entry = false
    }
  }

  validation = {`, 1)
	}
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      cfg("arn:aws:eks:eu-west-1:123456789012:cluster/ml-eu"),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Residency\s+violation:\s+arn-region.*orchestrator\.eks\.cluster_name.*eu-west-1,\s+outside\s+jurisdiction\s+AE`),
		}, {
			Config:      cfg("ml-eu-api"),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Residency\s+violation:\s+region-allowed.*orchestrator\.eks\.cluster_name.*API\s+endpoint.*eu-west-1,\s+outside\s+jurisdiction\s+AE`),
		}},
	})
	checkNoWrites(t, h)
	for _, c := range h.Shim.Calls("eks", "DescribeCluster") {
		if strings.Contains(c.Path, "ml-eu") && !strings.Contains(c.Path, "ml-eu-api") {
			t.Errorf("the cluster named by an ARN outside the jurisdiction was described: %s", c)
		}
	}
}
