package provider_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/kubetest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// Kubernetes outside EKS (orchestrator.kubernetes) against real parts: a
// real kube-apiserver (Node and RBAC authorization, NodeRestriction,
// bootstrap token authentication), etcd and kube-scheduler. The gate's
// kubeconfig (a client certificate the apiserver trusts, bound to the
// gate's ClusterRole) and a kubeadm bootstrap token are Secrets Manager
// secrets in the emulator. The apiserver listens on 127.0.0.1: the test
// gives the region a VPC whose CIDR holds it.

const (
	kubeGateUser = "mlplatform:gate"
	kubeTokenID  = "mlpkub"
)

// kubeEnv is one test's self-managed cluster and its secrets.
type kubeEnv struct {
	cp    *kubetest.ControlPlane
	admin *kubernetes.Clientset
	// kubeconfig is the gate's kubeconfig; token the bootstrap token.
	kubeconfig, token string
	// kubeconfigSecret and tokenSecret are their secrets' ARNs.
	kubeconfigSecret, tokenSecret string
	onJoin                        func(j acctest.KubeJoin) error
	mu                            sync.Mutex
	joined                        []string // the nodes whose kubeadm discovery and token checked out
}

// createSecretString stores value as a Secrets Manager secret encrypted
// with kmsKey in region, and returns its ARN.
func createSecretString(t *testing.T, h *acctest.Harness, region, name, value, kmsKey string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, region)
	if err != nil {
		t.Fatal(err)
	}
	in := &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)}
	if kmsKey != "" {
		in.KmsKeyId = aws.String(kmsKey)
	}
	out, err := acctest.SecretsManager(c).CreateSecret(ctx, in)
	if err != nil {
		t.Fatalf("creating secret %s: %v", name, err)
	}
	return aws.ToString(out.ARN)
}

// createVPC gives the region a VPC of cidr.
func createVPC(t *testing.T, h *acctest.Harness, cidr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EC2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String(cidr)}); err != nil {
		t.Fatalf("creating VPC %s: %v", cidr, err)
	}
}

// kubeSetup starts the control plane with bootstrap token authentication,
// gives the gate's identity what the gate needs, makes a bootstrap token,
// and stores the gate's kubeconfig and the token as secrets encrypted
// with key.
func kubeSetup(t *testing.T, h *acctest.Harness, key string) *kubeEnv {
	t.Helper()
	e := &kubeEnv{cp: kubetest.Start(t, kubetest.WithAPIServerFlag("enable-bootstrap-token-auth", "true"))}
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
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: kubeGateUser}}}
	if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gate.kubeconfig")
	e.cp.WriteKubeconfig(t, e.cp.User(t, kubeGateUser), path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e.kubeconfig = string(raw)
	// A bootstrap token as `kubeadm token create` makes it.
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	e.token = kubeTokenID + "." + string(b)
	tok := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + kubeTokenID, Namespace: "kube-system"}, Type: "bootstrap.kubernetes.io/token",
		StringData: map[string]string{"token-id": kubeTokenID, "token-secret": string(b), "usage-bootstrap-authentication": "true", "usage-bootstrap-signing": "true",
			"auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token", "expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}
	if _, err := e.admin.CoreV1().Secrets("kube-system").Create(ctx, tok, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createVPC(t, h, "127.0.0.0/16")
	e.kubeconfigSecret = createSecretString(t, h, acctest.Region, "kube/gate-kubeconfig", e.kubeconfig, key)
	e.tokenSecret = createSecretString(t, h, acctest.Region, "kube/join-token", e.token, key)
	return e
}

// caHash is kubeadm's pin of the CA certificate (PEM): sha256 of its
// SubjectPublicKeyInfo.
func caHash(t testing.TB, caPEM []byte) string {
	t.Helper()
	blk, _ := pem.Decode(caPEM)
	if blk == nil {
		t.Fatal("CA: no PEM")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(c.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// JoinNode does what kubeadm join does with the node's JoinConfiguration,
// checking each step against the real cluster: discovery reaches the
// configuration's apiServerEndpoint, whose CA one of its caCertHashes
// pins; the token the node read from its secret authenticates as the
// bootstrap token (system:bootstrap:ID); then the kubelet registers the
// Node with its own identity, the taints and labels of the configuration
// and the provider ID the bootstrap filled in.
func (e *kubeEnv) JoinNode(ctx context.Context, j acctest.KubeJoin) (path string, err error) {
	jc := j.Kubeadm
	if jc == nil {
		return "", fmt.Errorf("node %s: no JoinConfiguration", j.NodeName)
	}
	if want := strings.TrimPrefix(e.cp.Endpoint(), "https://"); jc.APIServerEndpoint != want {
		return "", fmt.Errorf("the JoinConfiguration's apiServerEndpoint is %q, the API server %q", jc.APIServerEndpoint, want)
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
	if h := caHash(t, e.cp.CACert()); !slices.Contains(jc.CACertHashes, h) {
		return "", fmt.Errorf("the JoinConfiguration's caCertHashes %v do not pin the cluster's CA (%s)", jc.CACertHashes, h)
	}
	c, err := kubernetes.NewForConfig(&rest.Config{Host: e.cp.Endpoint(), BearerToken: j.BootstrapToken, TLSClientConfig: rest.TLSClientConfig{CAData: e.cp.CACert()}})
	if err != nil {
		return "", err
	}
	rv, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("the node's bootstrap token: %w", err)
	}
	if u := rv.Status.UserInfo.Username; u != "system:bootstrap:"+kubeTokenID {
		return "", fmt.Errorf("the node's bootstrap token authenticates as %q", u)
	}
	var taints []corev1.Taint
	for _, tt := range jc.Taints {
		taints = append(taints, corev1.Taint{Key: tt.Key, Value: tt.Value, Effect: corev1.TaintEffect(tt.Effect)})
	}
	e.cp.RegisterNode(t, kubetest.NodeSpec{Name: j.NodeName, ProviderID: jc.ProviderID, Labels: jc.Labels, Taints: taints, GPUs: j.GPUs})
	path = filepath.Join(j.Dir, "kubelet.conf")
	e.cp.WriteKubeconfig(t, e.cp.NodeConfig(t, j.NodeName), path)
	e.mu.Lock()
	e.joined = append(e.joined, j.NodeName)
	e.mu.Unlock()
	if e.onJoin != nil {
		if err := e.onJoin(j); err != nil {
			return "", err
		}
	}
	return path, nil
}

// kubeBlock is orchestrator.kubernetes with the two secrets.
func kubeBlock(kubeconfigSecret, tokenSecret string) string {
	return `  orchestrator = {
    kubernetes = {
      kubeconfig_secret_arn = ` + kubeconfigSecret + `
      join_token_secret_arn = ` + tokenSecret + `
      labels                = { "team.example.com/owner" = "vision" }
    }
  }

  validation = {`
}

// kubeConfig is gateConfig's cluster joining the self-managed cluster;
// the secrets are HCL expressions.
func kubeConfig(h *acctest.Harness, name string, nodes int, key, certPEM, kubeconfigSecret, tokenSecret string) string {
	return strings.Replace(gateConfig(h, name, gpuType, nodes, key, certPEM, "    timeout = \"2m\"\n"), "  validation = {", kubeBlock(kubeconfigSecret, tokenSecret), 1)
}

// Healthy nodes join with kubeadm, tainted; the gate, with the kubeconfig
// from its secret, lifts the taint of each once its evidence passed. A
// pod asking for a node's 8 GPUs stays Pending under the real scheduler
// while the registered nodes are tainted, and binds once the gate lifted
// the taint. Neither the kubeconfig's credentials nor the token are in
// the state.
func TestAccGPUCluster_kubeJoin(t *testing.T) {
	kubetest.Require(t)
	const name = "kube-join"
	h, p, key := gateSetup(t, name, healthyGPUs)
	e := kubeSetup(t, h, key)
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
	nodes := func() ([]corev1.Node, error) {
		l, err := e.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: platform.EKSLabelCluster + "=" + name})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	var pendingSeen int
	e.onJoin = func(j acctest.KubeJoin) error {
		time.Sleep(500 * time.Millisecond) // the scheduler's turn
		ns, err := nodes()
		if err != nil {
			return err
		}
		if slices.ContainsFunc(ns, func(n corev1.Node) bool { return !hasTaint(n, platform.EKSTaintKey) }) {
			return nil // another node passed already
		}
		got, err := e.admin.CoreV1().Pods("default").Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Spec.NodeName != "" {
			return fmt.Errorf("pod train bound to %s while every Node is tainted", got.Spec.NodeName)
		}
		e.mu.Lock()
		pendingSeen++
		e.mu.Unlock()
		return nil
	}
	joined := func(s *terraform.State) error {
		ns, err := nodes()
		if err != nil {
			return err
		}
		if len(ns) != 2 {
			return fmt.Errorf("%d Nodes labelled %s=%s, want 2", len(ns), platform.EKSLabelCluster, name)
		}
		for _, n := range ns {
			if hasTaint(n, platform.EKSTaintKey) || n.Spec.Unschedulable {
				return fmt.Errorf("%s: taints %v, unschedulable %v", n.Name, n.Spec.Taints, n.Spec.Unschedulable)
			}
			want := map[string]string{platform.GateLabel: platform.GatePassed, platform.EKSStatusLabel: "passed", platform.EKSLabelResource: "gpu-cluster",
				platform.EKSLabelInstance: gpuType, platform.EKSLabelPlacement: "mlplatform-" + name, "team.example.com/owner": "vision"}
			for k, v := range want {
				if n.Labels[k] != v {
					return fmt.Errorf("%s: label %s = %q, want %q (labels %v)", n.Name, k, n.Labels[k], v, n.Labels)
				}
			}
			if c := condition(n, platform.EKSConditionType); c == nil || c.Status != corev1.ConditionTrue {
				return fmt.Errorf("%s: condition %s %+v, want True", n.Name, platform.EKSConditionType, c)
			}
			if !strings.HasPrefix(n.Spec.ProviderID, "aws:///me-central-1") || !strings.Contains(n.Spec.ProviderID, "/i-") {
				return fmt.Errorf("%s: provider ID %q", n.Name, n.Spec.ProviderID)
			}
		}
		e.mu.Lock()
		seen, nj := pendingSeen, len(e.joined)
		e.mu.Unlock()
		if nj != 2 || seen < 1 {
			return fmt.Errorf("%d nodes joined through kubeadm discovery and the bootstrap token, the pod seen pending %d times", nj, seen)
		}
		// Nothing secret in the state.
		for _, r := range s.RootModule().Resources {
			for k, v := range r.Primary.Attributes {
				if strings.Contains(v, e.token) || strings.Contains(v, "PRIVATE KEY") || strings.Contains(v, "client-key-data") {
					return fmt.Errorf("the state's %s holds a credential", k)
				}
			}
		}
		for {
			got, err := e.admin.CoreV1().Pods("default").Get(ctx, "train", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Spec.NodeName != "" {
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
		Steps: []resource.TestStep{{
			Config: kubeConfig(h, name, 2, key, p.Signer.CertPEM, fmt.Sprintf("%q", e.kubeconfigSecret), fmt.Sprintf("%q", e.tokenSecret)),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.#", "2"),
				resource.TestMatchResourceAttr(gpuClusterResource, "validation_bootstrap", regexp.MustCompile(`kubeadm\.k8s\.io/v1beta4`)),
				joined,
			),
		}},
	})
	if errs := p.Errs(); len(errs) > 0 {
		t.Fatalf("node player: %v", errs)
	}
}

// With on_failure = "replace" and the kubeconfig's credentials (a client
// certificate), as with EKS's (TestAccGPUCluster_eksReplace): a node whose
// evidence fails is cordoned and drained (a pod that tolerates the taint
// is evicted) before its instance is replaced, its Node deleted; the
// replacement joins with kubeadm and is untainted once proven.
func TestAccGPUCluster_kubeReplace(t *testing.T) {
	kubetest.Require(t)
	const name = "kube-replace"
	h, p, key := gateSetup(t, name, nvlinkDown)
	e := kubeSetup(t, h, key)
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
			Config: strings.Replace(kubeConfig(h, name, 2, key, p.Signer.CertPEM, fmt.Sprintf("%q", e.kubeconfigSecret), fmt.Sprintf("%q", e.tokenSecret)),
				"    timeout = \"2m\"\n", "    timeout = \"2m\"\n    on_failure = \"replace\"\n", 1),
			Check: func(s *terraform.State) error {
				l, err := e.admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: platform.EKSLabelCluster + "=" + name})
				if err != nil {
					return err
				}
				nodes := l.Items
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

// testKubeconfig is a kubeconfig for server, its CA a fresh certificate,
// its user a token (or, with exec, a command).
func testKubeconfig(t *testing.T, server string, exec bool) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	user := "    token: kube-test-token-value\n"
	if exec {
		user = "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: kubelogin\n      args: [get-token]\n"
	}
	return fmt.Sprintf("apiVersion: v1\nkind: Config\ncurrent-context: gate\nclusters:\n- name: c\n  cluster:\n    server: %s\n    certificate-authority-data: %s\ncontexts:\n- name: gate\n  context: {cluster: c, user: gate}\nusers:\n- name: gate\n  user:\n%s",
		server, base64.StdEncoding.EncodeToString(ca), user)
}

// A kubeconfig server the plan cannot place in the jurisdiction (a
// public host name, an address outside every VPC of the region), a
// kubeconfig whose user runs a command, and a kubeconfig secret in
// another region are each refused at plan, with zero writes.
func TestAccGPUCluster_kubeRefusedAtPlan(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	key := createKey(t, h, acctest.Region)
	token := createSecretString(t, h, acctest.Region, "kube/join-token", "abcdef.0123456789abcdef", key)
	public := createSecretString(t, h, acctest.Region, "kube/public", testKubeconfig(t, "https://k8s.example.com:6443", false), key)
	outside := createSecretString(t, h, acctest.Region, "kube/outside", testKubeconfig(t, "https://10.99.0.1:6443", false), key)
	exec := createSecretString(t, h, acctest.Region, "kube/exec", testKubeconfig(t, "https://172.31.0.10:6443", true), key)
	euKey := createKey(t, h, "eu-west-1")
	eu := createSecretString(t, h, "eu-west-1", "kube/eu", testKubeconfig(t, "https://172.31.0.10:6443", false), euKey)
	cfg := func(kubeconfig string) string {
		return strings.Replace(gateConfig(h, "kube-refused", gpuType, 1, key, "", ""), "  validation = {", kubeBlock(fmt.Sprintf("%q", kubeconfig), fmt.Sprintf("%q", token)), 1)
	}
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      cfg(public),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Residency\s+violation:\s+kube-server-region.*orchestrator\.kubernetes\.kubeconfig_secret_arn.*k8s\.example\.com\s+names\s+no\s+AWS\s+region`),
		}, {
			Config:      cfg(outside),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Residency\s+violation:\s+kube-server-region.*orchestrator\.kubernetes\.kubeconfig_secret_arn.*10\.99\.0\.1\s+is\s+not\s+an\s+address\s+of\s+any\s+VPC`),
		}, {
			Config:      cfg(exec),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Kubeconfig\s+not\s+supported.*kube/exec.*runs\s+a\s+command\s+\(exec:\s+kubelogin\)`),
		}, {
			Config:      cfg(eu),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Residency\s+violation:\s+arn-region.*orchestrator\.kubernetes\.kubeconfig_secret_arn`),
		}},
	})
	checkNoWrites(t, h)
	// The secret outside the jurisdiction was never read.
	for _, c := range h.Shim.Calls("secretsmanager", "GetSecretValue") {
		if c.Region == "eu-west-1" {
			t.Errorf("the kubeconfig secret outside the jurisdiction was read: %s", c)
		}
	}
}

// A kubeconfig secret known only at apply (a terraform_data output) plans
// without a word, and is checked at apply before the first write: one
// outside the jurisdiction fails the apply, and nothing is created.
func TestAccGPUCluster_kubeSecretKnownAtApply(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	key := createKey(t, h, acctest.Region)
	token := createSecretString(t, h, acctest.Region, "kube/join-token", "abcdef.0123456789abcdef", key)
	euKey := createKey(t, h, "eu-west-1")
	eu := createSecretString(t, h, "eu-west-1", "kube/eu", testKubeconfig(t, "https://172.31.0.10:6443", false), euKey)
	signer, err := acctest.NewNodeSigner()
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(gateConfig(h, "kube-late", gpuType, 1, key, signer.CertPEM, ""), "  validation = {", kubeBlock("terraform_data.kubeconfig.output", fmt.Sprintf("%q", token)), 1) +
		fmt.Sprintf("\nresource \"terraform_data\" \"kubeconfig\" {\n  input = %q\n}\n", eu)
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      cfg,
			ExpectError: regexp.MustCompile(`(?s)Error running apply.*arn-region.*orchestrator\.kubernetes\.kubeconfig_secret_arn.*eu-west-1`),
		}},
	})
	checkNoWrites(t, h)
}
