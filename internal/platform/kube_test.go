package platform

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

func TestEKSValidate(t *testing.T) {
	good := EKSSpec{ClusterName: "ml-prod", Labels: map[string]string{"team.example.com/owner": "vision", "tier": "gpu"}}
	base := GPUClusterSpec{Name: "train", InstanceType: "p5en.48xlarge", NodeCount: 2, Image: "ami-0123456789abcdef0", Validation: &ValidationSpec{}}
	paths := func(s GPUClusterSpec) []string {
		var out []string
		for _, p := range ValidateGPUCluster(s, s.Unknown) {
			if strings.HasPrefix(p.Path, "orchestrator") {
				out = append(out, p.Path)
			}
		}
		return out
	}
	s := base
	s.EKS = &good
	if got := paths(s); len(got) > 0 {
		t.Fatalf("a good block: %v", got)
	}
	for _, tc := range []struct {
		name string
		edit func(*EKSSpec, *GPUClusterSpec)
		want []string
	}{
		{"empty name", func(x *EKSSpec, _ *GPUClusterSpec) { x.ClusterName = "" }, []string{"orchestrator.eks.cluster_name"}},
		{"bad name", func(x *EKSSpec, _ *GPUClusterSpec) { x.ClusterName = "ml prod" }, []string{"orchestrator.eks.cluster_name"}},
		{"kubernetes.io label", func(x *EKSSpec, _ *GPUClusterSpec) {
			x.Labels = map[string]string{"node-role.kubernetes.io/gpu": ""}
		}, []string{`orchestrator.eks.labels["node-role.kubernetes.io/gpu"]`}},
		{"k8s.io label", func(x *EKSSpec, _ *GPUClusterSpec) { x.Labels = map[string]string{"k8s.io/x": "y"} }, []string{`orchestrator.eks.labels["k8s.io/x"]`}},
		{"our label", func(x *EKSSpec, _ *GPUClusterSpec) {
			x.Labels = map[string]string{kube.LabelCluster: "other"}
		}, []string{`orchestrator.eks.labels["mlplatform.io/cluster"]`}},
		{"bad value", func(x *EKSSpec, _ *GPUClusterSpec) { x.Labels = map[string]string{"tier": "gpu nodes"} }, []string{`orchestrator.eks.labels["tier"]`}},
		{"long value", func(x *EKSSpec, _ *GPUClusterSpec) {
			x.Labels = map[string]string{"tier": strings.Repeat("a", 64)}
		}, []string{`orchestrator.eks.labels["tier"]`}},
		{"bad key", func(x *EKSSpec, _ *GPUClusterSpec) { x.Labels = map[string]string{"-tier": "a"} }, []string{`orchestrator.eks.labels["-tier"]`}},
		{"no validation", func(_ *EKSSpec, c *GPUClusterSpec) { c.Validation = nil }, []string{"orchestrator.eks"}},
		{"and Slurm", func(_ *EKSSpec, c *GPUClusterSpec) {
			c.Slurm = &SlurmSpec{Controllers: []string{"ctl"}, MungeKeySecretARN: testSecret}
		}, []string{"orchestrator"}},
		// Unknown values are checked at apply, never refused at plan.
		{"unknown name", func(x *EKSSpec, c *GPUClusterSpec) {
			x.ClusterName = ""
			c.Unknown = []string{"orchestrator.eks.cluster_name"}
		}, nil},
		{"unknown labels", func(x *EKSSpec, c *GPUClusterSpec) {
			x.Labels = map[string]string{"k8s.io/x": ""}
			c.Unknown = []string{"orchestrator.eks.labels"}
		}, nil},
		{"unknown block", func(x *EKSSpec, c *GPUClusterSpec) {
			*x = EKSSpec{}
			c.Unknown = []string{"orchestrator.eks"}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			x := good
			tc.edit(&x, &s)
			s.EKS = &x
			if got := paths(s); !slices.Equal(got, tc.want) {
				t.Errorf("problems at %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEKSEndpointRegion(t *testing.T) {
	for _, tc := range []struct {
		endpoint, region string
		ok               bool
	}{
		{"https://0123456789ABCDEF0123456789ABCDEF.gr7.me-central-1.eks.amazonaws.com", "me-central-1", true},
		{"https://0123456789ABCDEF0123456789ABCDEF.yl4.eu-west-1.eks.amazonaws.com/", "eu-west-1", true},
		{"https://ABC.sk1.cn-north-1.eks.amazonaws.com.cn", "cn-north-1", true},
		{"https://127.0.0.1:6443", "", false},           // an emulator's: the URL does not say
		{"https://k8s.internal.example:443", "", false}, // a private name
		{"https://eks.amazonaws.com", "", false},
		{"not a url", "", false},
	} {
		r, ok := eksEndpointRegion(tc.endpoint)
		if r != tc.region || ok != tc.ok {
			t.Errorf("%s: %q %v, want %q %v", tc.endpoint, r, ok, tc.region, tc.ok)
		}
	}
}

// TestEKSNodeConfig reads the rendered NodeConfig back as YAML, as nodeadm
// does: the cluster as DescribeCluster gave it, the startup taint, and
// every label in one --node-labels flag.
func TestEKSNodeConfig(t *testing.T) {
	ca := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	c := cloud.EKSCluster{Name: "ml-prod", Endpoint: "https://ABC.gr7.me-central-1.eks.amazonaws.com", CertificateAuthority: ca, ServiceCIDR: "10.100.0.0/16"}
	labels := EKSNodeLabels(&EKSSpec{Labels: map[string]string{"team.example.com/owner": "vision"}}, "gpu-cluster", "train", "p5en.48xlarge", "mlplatform-train", "profile text")
	want := map[string]string{kube.LabelResource: "gpu-cluster", kube.LabelCluster: "train", "mlplatform.io/instance-type": "p5en.48xlarge",
		kube.LabelPlacementGroup: "mlplatform-train", "team.example.com/owner": "vision"}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, labels[k], v)
		}
	}
	if d := labels[kube.LabelProfileDigest]; len(d) != 12 {
		t.Errorf("profile digest %q", d)
	}
	text := EKSNodeConfig(c, labels)
	var nc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Cluster struct {
				Name, APIServerEndpoint, CertificateAuthority, CIDR string
			} `json:"cluster"`
			Kubelet struct {
				Config struct {
					RegisterWithTaints []struct{ Key, Value, Effect string } `json:"registerWithTaints"`
				} `json:"config"`
				Flags []string `json:"flags"`
			} `json:"kubelet"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict([]byte(text), &nc, yaml.DisallowUnknownFields); err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if nc.APIVersion != "node.eks.aws/v1alpha1" || nc.Kind != "NodeConfig" {
		t.Errorf("apiVersion %q kind %q", nc.APIVersion, nc.Kind)
	}
	cl := nc.Spec.Cluster
	if cl.Name != c.Name || cl.APIServerEndpoint != c.Endpoint || cl.CertificateAuthority != ca || cl.CIDR != c.ServiceCIDR {
		t.Errorf("cluster %+v", cl)
	}
	if tt := nc.Spec.Kubelet.Config.RegisterWithTaints; len(tt) != 1 || tt[0].Key != kube.TaintKey || tt[0].Value != kube.TaintValuePending || tt[0].Effect != kube.TaintEffect {
		t.Errorf("taints %+v", tt)
	}
	if f := nc.Spec.Kubelet.Flags; len(f) != 1 || !strings.HasPrefix(f[0], "--node-labels=") {
		t.Fatalf("flags %v", f)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(strings.TrimPrefix(nc.Spec.Kubelet.Flags[0], "--node-labels="), ",") {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	if len(got) != len(labels) {
		t.Errorf("labels %v, want %v", got, labels)
	}
	for k, v := range labels {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q", k, got[k], v)
		}
	}

	// In the bootstrap: a part of its own, read back; the script
	// publishes to the Node after the report.
	ud, err := Bootstrap(BootstrapInput{Profile: "version = 1\n", Region: "me-central-1", EKSNodeConfig: text})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ud, "Content-Type: application/node.eks.aws") {
		t.Errorf("no NodeConfig part:\n%s", ud)
	}
	parts, err := ParseBootstrap(ud)
	if err != nil {
		t.Fatal(err)
	}
	if parts.EKSNodeConfig != text {
		t.Errorf("NodeConfig read back:\n%s\nwant\n%s", parts.EKSNodeConfig, text)
	}
	pub := strings.Index(parts.Script, "kube publish")
	if rep := strings.Index(parts.Script, "report publish"); pub < 0 || pub < rep {
		t.Errorf("the script publishes to the Node at %d, the report at %d:\n%s", pub, rep, parts.Script)
	}
	plain, err := Bootstrap(BootstrapInput{Profile: "version = 1\n", Region: "me-central-1"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain, "node.eks.aws") || strings.Contains(plain, "kube publish") {
		t.Errorf("a node that joins no EKS cluster gets the EKS parts")
	}
}

func TestKubeNodeInstanceID(t *testing.T) {
	for id, want := range map[string]string{
		"aws:///me-central-1a/i-0123456789abcdef0": "i-0123456789abcdef0",
		"aws:///i-0123456789abcdef0":               "i-0123456789abcdef0",
		"kind://docker/kind/kind-control-plane":    "",
		"":                                         "",
	} {
		if got := (cloud.KubeNode{ProviderID: id}).InstanceID(); got != want {
			t.Errorf("%q: %q, want %q", id, got, want)
		}
	}
}

func TestParseEKSNodeConfig(t *testing.T) {
	c := cloud.EKSCluster{Name: "ml-prod", Endpoint: "https://ABC.gr7.me-central-1.eks.amazonaws.com", CertificateAuthority: "Q0E=", ServiceCIDR: "10.100.0.0/16"}
	labels := map[string]string{"a.example/x": "1", kube.LabelCluster: "train"}
	got, err := ParseEKSNodeConfig(EKSNodeConfig(c, labels))
	if err != nil {
		t.Fatal(err)
	}
	if got.ClusterName != c.Name || got.Endpoint != c.Endpoint || got.CertificateAuthority != c.CertificateAuthority || got.ServiceCIDR != c.ServiceCIDR {
		t.Errorf("cluster %+v", got)
	}
	if len(got.Taints) != 1 || got.Taints[0] != (cloud.KubeTaint{Key: kube.TaintKey, Value: kube.TaintValuePending, Effect: kube.TaintEffect}) {
		t.Errorf("taints %+v", got.Taints)
	}
	if len(got.Labels) != 2 || got.Labels["a.example/x"] != "1" || got.Labels[kube.LabelCluster] != "train" {
		t.Errorf("labels %v", got.Labels)
	}
	for _, bad := range []string{"", "kind: Pod\n", "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [\"--node-labels=novalue\"]\n", ":"} {
		if _, err := ParseEKSNodeConfig(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzParseEKSNodeConfig: any text parses or fails cleanly, and a
// NodeConfig rendered from what was parsed parses to the same parts.
func FuzzParseEKSNodeConfig(f *testing.F) {
	f.Add(EKSNodeConfig(cloud.EKSCluster{Name: "a", Endpoint: "https://x", CertificateAuthority: "Q0E=", ServiceCIDR: "10.0.0.0/16"}, map[string]string{"k": "v"}))
	f.Add("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n")
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseEKSNodeConfig(text)
		if err != nil {
			return
		}
		for k, v := range p.Labels {
			if strings.ContainsAny(k+v, ",=") {
				return // not what EKSNodeConfig renders: labels are validated first
			}
		}
		again, err := ParseEKSNodeConfig(EKSNodeConfig(cloud.EKSCluster{Name: p.ClusterName, Endpoint: p.Endpoint, CertificateAuthority: p.CertificateAuthority, ServiceCIDR: p.ServiceCIDR}, p.Labels))
		if err != nil {
			t.Fatalf("rendered from %+v: %v", p, err)
		}
		if again.ClusterName != p.ClusterName || again.Endpoint != p.Endpoint || len(again.Labels) != len(p.Labels) {
			t.Fatalf("round trip %+v -> %+v", p, again)
		}
	})
}
