package node

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/hwprobe/kube/node/nodetest"
)

var (
	t0     = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	passed = kube.Verdict{Passed: true, Reason: kube.ReasonChecksPassed, Message: "12 checks passed"}
	failed = kube.Verdict{Reason: kube.ReasonCheckFailed, Message: "gpu.count: found 7 GPUs, profile expects 8"}
)

func registered(name string) *nodetest.Nodes {
	return nodetest.New(&corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kube.LabelCluster: "train-a", "kubernetes.io/hostname": name}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: kube.TaintKey, Value: kube.TaintValuePending, Effect: corev1.TaintEffect(kube.TaintEffect)}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
		}},
	})
}

func TestCondition(t *testing.T) {
	now := t0.Add(time.Minute)
	old := func(status corev1.ConditionStatus) []corev1.NodeCondition {
		return []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))},
			{Type: kube.ConditionType, Status: status, LastHeartbeatTime: metav1.NewTime(t0), LastTransitionTime: metav1.NewTime(t0)},
		}
	}
	for _, tt := range []struct {
		name       string
		conditions []corev1.NodeCondition
		v          kube.Verdict
		status     corev1.ConditionStatus
		transition time.Time
	}{
		{"first", nil, passed, corev1.ConditionTrue, now},
		{"first, among the kubelet's", old(corev1.ConditionTrue)[:1], failed, corev1.ConditionFalse, now},
		{"same status: transition kept", old(corev1.ConditionTrue), passed, corev1.ConditionTrue, t0},
		{"same status, another reason: transition kept", old(corev1.ConditionFalse), kube.Verdict{Reason: kube.ReasonCheckNotRun}, corev1.ConditionFalse, t0},
		{"status changed", old(corev1.ConditionTrue), failed, corev1.ConditionFalse, now},
		{"from Unknown", old(corev1.ConditionUnknown), passed, corev1.ConditionTrue, now},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := Condition(tt.conditions, tt.v, now)
			if c.Type != kube.ConditionType || c.Status != tt.status || c.Reason != tt.v.Reason || c.Message != tt.v.Message {
				t.Errorf("condition %+v", c)
			}
			if !c.LastHeartbeatTime.Time.Equal(now) || !c.LastTransitionTime.Time.Equal(tt.transition) {
				t.Errorf("heartbeat %s, transition %s; want %s, %s", c.LastHeartbeatTime, c.LastTransitionTime, now, tt.transition)
			}
		})
	}
}

// TestSetCondition: the condition is set through the status subresource
// with a strategic-merge patch of that one condition, so the kubelet's
// conditions (Ready) survive; its transition time moves only with its
// status, its heartbeat every time.
func TestSetCondition(t *testing.T) {
	ctx := context.Background()
	f := registered("gpu-0")
	steps := []struct {
		at         time.Time
		v          kube.Verdict
		transition time.Time
	}{
		{t0, failed, t0},
		{t0.Add(time.Minute), failed, t0},
		{t0.Add(2 * time.Minute), passed, t0.Add(2 * time.Minute)},
		{t0.Add(3 * time.Minute), passed, t0.Add(2 * time.Minute)},
	}
	for i, s := range steps {
		c, err := SetCondition(ctx, f, "gpu-0", s.v, s.at)
		if err != nil {
			t.Fatal(err)
		}
		n := f.Node("gpu-0")
		got := nodetest.Condition(n, kube.ConditionType)
		if got == nil || got.Status != corev1.ConditionStatus(s.v.ConditionStatus()) || got.Reason != s.v.Reason || got.Message != s.v.Message {
			t.Fatalf("step %d: condition %+v", i, got)
		}
		if !got.LastTransitionTime.Time.Equal(s.transition) || !got.LastHeartbeatTime.Time.Equal(s.at) || !c.LastTransitionTime.Time.Equal(s.transition) {
			t.Errorf("step %d: transition %s heartbeat %s, want %s %s", i, got.LastTransitionTime, got.LastHeartbeatTime, s.transition, s.at)
		}
		if r := nodetest.Condition(n, corev1.NodeReady); r == nil || r.Status != corev1.ConditionTrue || r.Reason != "KubeletReady" {
			t.Errorf("step %d: Ready lost: %+v", i, n.Status.Conditions)
		}
		if len(n.Status.Conditions) != 3 {
			t.Errorf("step %d: %d conditions: %+v", i, len(n.Status.Conditions), n.Status.Conditions)
		}
		if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != kube.TaintKey {
			t.Errorf("step %d: taints %+v", i, n.Spec.Taints)
		}
	}
	for _, p := range f.Patches() {
		if p.Subresource != "status" || p.Type != types.StrategicMergePatchType || p.FieldManager != FieldManager {
			t.Errorf("patch %+v", p)
		}
		var body struct {
			Status struct {
				Conditions []map[string]any `json:"conditions"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(p.Data), &body); err != nil || len(body.Status.Conditions) != 1 || body.Status.Conditions[0]["type"] != kube.ConditionType {
			t.Errorf("patch body %s (%v): want only the %s condition", p.Data, err, kube.ConditionType)
		}
		if strings.Contains(p.Data, "metadata") || strings.Contains(p.Data, "taints") {
			t.Errorf("patch touches more than the status: %s", p.Data)
		}
	}
}

func TestSetStatusLabel(t *testing.T) {
	ctx := context.Background()
	f := registered("gpu-0")
	for _, s := range []string{kube.StatusFailed, kube.StatusPassed} {
		if err := SetStatusLabel(ctx, f, "gpu-0", s); err != nil {
			t.Fatal(err)
		}
		n := f.Node("gpu-0")
		if n.Labels[kube.LabelStatus] != s || n.Labels[kube.LabelCluster] != "train-a" || n.Labels["kubernetes.io/hostname"] != "gpu-0" {
			t.Errorf("labels %v", n.Labels)
		}
		if len(n.Spec.Taints) != 1 || nodetest.Condition(n, corev1.NodeReady) == nil {
			t.Errorf("node changed beyond its label: %+v", n)
		}
	}
	last := f.Patches()[len(f.Patches())-1]
	if last.Subresource != "" || last.Type != types.MergePatchType || last.Data != `{"metadata":{"labels":{"mlplatform.io/hwprobe.status":"passed"}}}` {
		t.Errorf("patch %+v", last)
	}
	if err := SetStatusLabel(ctx, f, "gpu-0", "not valid!"); err == nil || len(f.Patches()) != 2 {
		t.Errorf("invalid value: %v, %d patches", err, len(f.Patches()))
	}
}

func TestAPIErrors(t *testing.T) {
	ctx := context.Background()
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "other", errors.New(`node "gpu-0" is not allowed to modify node "other"`))
	f := registered("gpu-0")
	f.Err = forbidden
	_, err := SetCondition(ctx, f, "other", failed, t0)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may read and change only their own Node") || !strings.HasPrefix(err.Error(), "read node other: ") {
		t.Errorf("condition: %v", err)
	}
	if err := SetStatusLabel(ctx, f, "other", kube.StatusPassed); !apierrors.IsForbidden(err) || !strings.HasPrefix(err.Error(), "label node other: ") {
		t.Errorf("label: %v", err)
	}
	f.Err = nil
	if _, err := SetCondition(ctx, f, "gpu-9", failed, t0); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "registered") {
		t.Errorf("not found: %v", err)
	}
}

// certPEM is a self-signed client certificate with common name cn, its key
// first when withKey (as the kubelet's kubelet-client-current.pem).
func certPEM(t *testing.T, cn string, withKey bool) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}},
		NotBefore:    t0.Add(-time.Hour),
		NotAfter:     t0.Add(24 * time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	if withKey {
		k, _ := x509.MarshalECPrivateKey(key)
		out = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: k})
	}
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
}

func TestCertNodeName(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "kubelet-client-current.pem")
	if err := os.WriteFile(file, certPEM(t, "system:node:ip-10-0-1-23.me-central-1.compute.internal", true), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		tls  rest.TLSClientConfig
		want string
		err  string
	}{
		{"data", rest.TLSClientConfig{CertData: certPEM(t, "system:node:gpu-0", false)}, "gpu-0", ""},
		{"file with the key first", rest.TLSClientConfig{CertFile: file}, "ip-10-0-1-23.me-central-1.compute.internal", ""},
		{"data before file", rest.TLSClientConfig{CertData: certPEM(t, "system:node:gpu-1", false), CertFile: file}, "gpu-1", ""},
		{"an administrator's certificate", rest.TLSClientConfig{CertData: certPEM(t, "kubernetes-admin", false)}, "", `user "kubernetes-admin" is not a node's identity`},
		{"not PEM", rest.TLSClientConfig{CertData: []byte("junk")}, "", "no PEM certificate"},
		{"missing file", rest.TLSClientConfig{CertFile: filepath.Join(dir, "none.pem")}, "", "none.pem"},
		{"no certificate", rest.TLSClientConfig{}, "", ErrNoClientCert.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CertNodeName(&rest.Config{TLSClientConfig: tt.tls})
			if got != tt.want || (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %q, %v; want %q, %q", got, err, tt.want, tt.err)
			}
		})
	}
}

type fakeReviews struct {
	user string
	err  error
}

func (f fakeReviews) Create(context.Context, *authnv1.SelfSubjectReview, metav1.CreateOptions) (*authnv1.SelfSubjectReview, error) {
	if f.err != nil {
		return nil, f.err
	}
	return &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{Username: f.user}}}, nil
}

// TestNodeName: the certificate's name first; without a certificate (an
// EKS node's IAM token), the user the API server sees.
func TestNodeName(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name         string
		cfg          rest.Config
		reviews      fakeReviews
		want, source string
		err          string
	}{
		{"certificate", rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: certPEM(t, "system:node:gpu-0", false)}}, fakeReviews{user: "system:node:other"}, "gpu-0", "client certificate", ""},
		{"token: the review", rest.Config{BearerToken: "k8s-aws-v1.x"}, fakeReviews{user: "system:node:ip-10-0-1-23.me-central-1.compute.internal"}, "ip-10-0-1-23.me-central-1.compute.internal", "the API server's review of the credentials", ""},
		{"token of another user", rest.Config{BearerToken: "x"}, fakeReviews{user: "system:serviceaccount:kube-system:x"}, "", "", "is not a node's identity"},
		{"review refused", rest.Config{BearerToken: "x"}, fakeReviews{err: errors.New("the server could not find the requested resource")}, "", "", "no client certificate in the kubeconfig; the server could not find the requested resource (give --node-name)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Client{Config: &tt.cfg, Reviews: tt.reviews}
			got, source, err := c.NodeName(ctx)
			if got != tt.want || source != tt.source || (tt.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %q (%s), %v; want %q (%s), %q", got, source, err, tt.want, tt.source, tt.err)
			}
		})
	}
}

// TestConnect: a kubeconfig with a client certificate, as a kubelet's.
func TestConnect(t *testing.T) {
	dir := t.TempDir()
	cert := filepath.Join(dir, "client.pem")
	if err := os.WriteFile(cert, certPEM(t, "system:node:gpu-0", true), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: eks
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: kubelet
  user:
    client-certificate: `+cert+`
    client-key: `+cert+`
contexts:
- name: kubelet
  context: {cluster: eks, user: kubelet}
current-context: kubelet
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(kubeconfig, "hwprobe/test")
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.Host != "https://127.0.0.1:6443" || c.Config.UserAgent != "hwprobe/test" || c.Nodes == nil || c.Reviews == nil {
		t.Errorf("client %+v", c.Config)
	}
	if name, source, err := c.NodeName(context.Background()); name != "gpu-0" || source != "client certificate" || err != nil {
		t.Errorf("node name %q (%s), %v", name, source, err)
	}
	if _, err := Connect(filepath.Join(dir, "none"), "hwprobe/test"); err == nil || !strings.Contains(err.Error(), "kubeconfig "+filepath.Join(dir, "none")) {
		t.Errorf("missing kubeconfig: %v", err)
	}
}

func TestWriteFeatures(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etc", "features.d") // NFD not installed: created
	in := kube.FeatureInput{Status: kube.StatusPassed, GPUProduct: "NVIDIA H100 80GB HBM3", GPUCount: 8, GPUMemoryMiB: 81559}
	for _, status := range []string{kube.StatusFailed, kube.StatusPassed} {
		in.Status = status
		body := kube.Features(in, t0)
		path, err := WriteFeatures(dir, body)
		if err != nil {
			t.Fatal(err)
		}
		if path != filepath.Join(dir, kube.FeaturesFile) {
			t.Errorf("path %s", path)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != string(body) {
			t.Fatalf("content %q (%v)", got, err)
		}
		labels, _, err := kube.ParseFeatures(got)
		if err != nil || labels[kube.LabelStatus] != status {
			t.Errorf("labels %v (%v)", labels, err)
		}
		st, _ := os.Stat(path)
		if st.Mode().Perm() != 0o644 {
			t.Errorf("mode %s", st.Mode())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left in %s: %v", dir, entries)
	}
	blocked := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(blocked, nil, 0o644)
	if _, err := WriteFeatures(filepath.Join(blocked, "features.d"), []byte("a=b\n")); err == nil || !strings.HasPrefix(err.Error(), "features: ") {
		t.Errorf("unwritable dir: %v", err)
	}
}
