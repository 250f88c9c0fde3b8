package platform

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// Kubernetes (self-managed, kubeadm): a GPU cluster's or a CPU footprint's
// nodes join a Kubernetes cluster outside EKS that runs in the
// jurisdiction. The gate reaches the cluster's API with a kubeconfig kept
// in Secrets Manager, read at plan and at apply, held in memory only; the
// nodes join with `kubeadm join` and a bootstrap token they fetch from a
// second secret with their own role. The rendered kubeadm
// JoinConfiguration (no token in it) is in the user data the plan shows:
// it registers each node with the startup taint and the labels an EKS node
// gets. Everything after registration (hwprobe on the node, the gate)
// is EKS's.

// KubePath is the orchestrator block's path.
const KubePath = "orchestrator.kubernetes"

// KubeadmJoinConfigPath is where the bootstrap writes the rendered
// JoinConfiguration on the node; KubeadmKubeletKubeconfig is the kubelet's
// kubeconfig kubeadm writes, which hwprobe uses.
const (
	KubeadmJoinConfigPath    = "/etc/mlplatform/kubeadm-join.yaml"
	KubeadmKubeletKubeconfig = "/etc/kubernetes/kubelet.conf"
	// KubeadmTokenSecretPath holds the ARN of the secret the node reads
	// its bootstrap token from.
	KubeadmTokenSecretPath = "/etc/mlplatform/kubeadm-join-token-secret-arn"
	// KubeadmProviderID is the provider ID the rendered configuration
	// gives the kubelet; the bootstrap fills in ZONE and INSTANCE_ID from
	// the instance metadata (the gate finds a node's Node by it).
	KubeadmProviderID = "aws:///ZONE/INSTANCE_ID"
)

// KubeSpec is orchestrator.kubernetes: the self-managed cluster the nodes
// join.
type KubeSpec struct {
	// KubeconfigSecretARN is the Secrets Manager secret holding the
	// gate's kubeconfig; residency-checked (region, replicas, KMS key).
	KubeconfigSecretARN string
	// Context is the kubeconfig's context to use; "" for its
	// current-context.
	Context string
	// JoinTokenSecretARN is the Secrets Manager secret holding a kubeadm
	// bootstrap token, which the nodes read; residency-checked as the
	// kubeconfig's.
	JoinTokenSecretARN string
	// Labels are added to the ones the resource sets.
	Labels map[string]string
}

// kubeKnownFunc: an attribute of the block is unknown when it, the block
// or orchestrator is.
func kubeKnownFunc(known func(string) bool) func(string) bool {
	return func(p string) bool { return known("orchestrator") && known(KubePath) && known(p) }
}

// validate checks what needs no AWS call. other tells whether the resource
// names another orchestrator too.
func (s *KubeSpec) validate(outer func(string) bool, validation, other bool) []Problem {
	known := kubeKnownFunc(outer)
	var ps []Problem
	add := func(path, summary, detail string) {
		ps = append(ps, Problem{Path: path, Summary: summary, Detail: detail})
	}
	if !validation {
		add(KubePath, "Kubernetes needs the validation block", "nodes register with the startup taint "+EKSStartupTaint+", which the gate lifts once a node's evidence passed; the gate comes with the validation block. Add validation { } (its defaults run the hardware checks).")
	}
	if other {
		add("orchestrator", "Two orchestrators", "a node joins one scheduler: keep one of orchestrator.slurm, orchestrator.eks and orchestrator.kubernetes.")
	}
	for _, a := range []struct{ attr, value, what string }{
		{"kubeconfig_secret_arn", s.KubeconfigSecretARN, "the gate's kubeconfig"},
		{"join_token_secret_arn", s.JoinTokenSecretARN, "the kubeadm bootstrap token"},
	} {
		if !known(KubePath + "." + a.attr) {
			continue
		}
		if r, err := residency.ParseARN(a.value); err != nil || r.Service != "secretsmanager" || !strings.HasPrefix(r.Resource, "secret:") {
			add(KubePath+"."+a.attr, "Invalid secret ARN", fmt.Sprintf("%q: give the ARN of the Secrets Manager secret that holds %s (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME).", a.value, a.what))
		}
	}
	if known(KubePath + ".labels") {
		for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
			if err := validNodeLabel(k, s.Labels[k]); err != nil {
				add(fmt.Sprintf("%s.labels[%q]", KubePath, k), "Invalid node label", err.Error()+".")
			}
		}
	}
	return ps
}

// residencyRefs: both secrets (their region, replicas and key).
func (s *KubeSpec) residencyRefs(outer func(string) bool) []residency.Ref {
	known := kubeKnownFunc(outer)
	var refs []residency.Ref
	for _, a := range []struct{ attr, value string }{{"kubeconfig_secret_arn", s.KubeconfigSecretARN}, {"join_token_secret_arn", s.JoinTokenSecretARN}} {
		if known(KubePath + "." + a.attr) {
			refs = append(refs, residency.Ref{Path: KubePath + "." + a.attr, Kind: residency.KindSecret, Value: a.value, Required: true})
		}
	}
	return refs
}

// kubePlan is what the plan learned of the cluster: the kubeconfig (in
// memory only), the API server's endpoint and its CA's public key hashes.
type kubePlan struct {
	Kubeconfig cloud.Kubeconfig
	// Endpoint is HOST:PORT, kubeadm's apiServerEndpoint.
	Endpoint string
	// CAHashes are kubeadm's caCertHashes: sha256:HEX of each CA
	// certificate's SubjectPublicKeyInfo.
	CAHashes []string
}

// planKubeTimeout bounds the plan's reads of the kubeconfig's secret.
const planKubeTimeout = 30 * time.Second

// planKube reads the kubeconfig and checks where its server is. violated
// are the residency engine's violations: under enforce, a secret that
// broke a rule is not read (the plan fails anyway); under audit it is, and
// the plan goes on with its warnings, as it does for the server's.
func (e *Env) planKube(ctx context.Context, s *KubeSpec, known func(string) bool, violated []residency.Violation) (*kubePlan, []Problem, []residency.Violation, error) {
	path := KubePath + ".kubeconfig_secret_arn"
	if !kubeKnownFunc(known)(path) || !kubeKnownFunc(known)(KubePath+".context") {
		return nil, nil, nil, nil
	}
	if e.Policy.Mode != residency.ModeAudit && slices.ContainsFunc(violated, func(v residency.Violation) bool { return v.Path == path }) {
		return nil, nil, nil, nil
	}
	a, err := residency.ParseARN(s.KubeconfigSecretARN)
	if err != nil || a.Service != "secretsmanager" {
		return nil, nil, nil, nil // validate said so
	}
	if a.Region != "" && a.Region != e.Region() {
		return nil, []Problem{{Path: path, Summary: "Kubeconfig secret in another region", Detail: fmt.Sprintf("the secret is in %s; the provider reads it in its own region, %s: keep the gate's kubeconfig there.", a.Region, e.Region())}}, nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, planKubeTimeout)
	defer cancel()
	data, err := cloud.GetSecretValue(rctx, e.Clients.SecretsManager(), s.KubeconfigSecretARN)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		return nil, []Problem{{Path: path, Summary: "Kubeconfig secret not found", Detail: fmt.Sprintf("%s does not exist, or has no current value: create it and put the gate's kubeconfig in it.", s.KubeconfigSecretARN)}}, nil, nil
	case err != nil:
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	kc, err := cloud.ParseKubeconfig(data, s.Context)
	var ke *cloud.KubeconfigError
	switch {
	case errors.As(err, &ke):
		p, summary := path, "Unusable kubeconfig"
		if ke.Unsupported {
			summary = "Kubeconfig not supported"
		}
		if s.Context != "" && strings.Contains(ke.Msg, "no context") {
			p = KubePath + ".context"
		}
		return nil, []Problem{{Path: p, Summary: summary, Detail: "the kubeconfig in " + s.KubeconfigSecretARN + ": " + ke.Msg + "."}}, nil, nil
	case err != nil:
		return nil, nil, nil, err
	}
	hashes, err := KubeCACertHashes(kc.Access.CAPEM)
	if err != nil {
		return nil, []Problem{{Path: path, Summary: "Unusable kubeconfig", Detail: "the kubeconfig in " + s.KubeconfigSecretARN + ": certificate-authority-data: " + err.Error() + "."}}, nil, nil
	}
	loc, err := ClassifyKubeServer(kc.Access.Endpoint)
	if err != nil {
		return nil, []Problem{{Path: path, Summary: "Unusable kubeconfig", Detail: "the kubeconfig in " + s.KubeconfigSecretARN + ": " + err.Error() + "."}}, nil, nil
	}
	kp := &kubePlan{Kubeconfig: kc, Endpoint: loc.Endpoint(), CAHashes: hashes}
	v, err := e.kubeServerResidency(ctx, path, kc.Access.Endpoint, loc)
	if err != nil {
		return nil, nil, nil, err
	}
	if v != nil {
		// Under enforce the plan fails on it; under audit it warns.
		return kp, nil, []residency.Violation{*v}, nil
	}
	return kp, nil, nil, nil
}

// kubeServerResidency is rule kube-server-region: the server is an
// address of a VPC of the provider's region, or an AWS host name that
// names an allowed region.
func (e *Env) kubeServerResidency(ctx context.Context, path, server string, loc KubeServerLocation) (*residency.Violation, error) {
	fix := "run the cluster's API server in " + strings.Join(e.Policy.AllowedRegions, ", ") + " and give its address there: an IP address of a VPC of " + e.Region() + ", or an AWS name that names the region (its load balancer's *.elb." + e.Region() + ".amazonaws.com, an instance's *." + e.Region() + ".compute.internal)"
	v := func(msg string) *residency.Violation {
		return &residency.Violation{Path: path, Value: server, Rule: residency.RuleKubeServerRegion, Msg: msg, Fix: fix}
	}
	switch {
	case loc.Addr.IsValid():
		vpcs, err := cloud.VPCPrefixes(ctx, e.Clients.EC2)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for _, p := range vpcs {
			if p.Prefix.Contains(loc.Addr) {
				return nil, nil
			}
		}
		return v(fmt.Sprintf("the kubeconfig's server %s is not an address of any VPC of %s: it cannot be shown to be in jurisdiction %s, and the gate would send it its credentials", loc.Addr, e.Region(), e.Policy.Jurisdiction.Code)), nil
	case loc.Region != "" && !e.Policy.RegionAllowed(loc.Region):
		return v(fmt.Sprintf("the kubeconfig's server %s is in %s, outside jurisdiction %s: the gate and every node would call it", loc.Host, loc.Region, e.Policy.Jurisdiction.Code)), nil
	case loc.Region == "":
		return v(fmt.Sprintf("the kubeconfig's server %s names no AWS region: it cannot be shown to be in jurisdiction %s, and the gate would send it its credentials", loc.Host, e.Policy.Jurisdiction.Code)), nil
	}
	return nil, nil
}

// KubeServerLocation is what a server URL's host tells of where it is:
// an IP address (Addr), or the AWS region its AWS host name names
// (Region); neither for any other name.
type KubeServerLocation struct {
	Host, Port string
	Addr       netip.Addr
	Region     string
}

// Endpoint is HOST:PORT, kubeadm's apiServerEndpoint.
func (l KubeServerLocation) Endpoint() string { return net.JoinHostPort(l.Host, l.Port) }

// ClassifyKubeServer reads a kubeconfig server URL (https://HOST[:PORT]):
// an IP literal, or an AWS host name that names its region: an EKS
// endpoint (*.REGION.eks.amazonaws.com), a load balancer
// (*.elb.REGION.amazonaws.com, *.REGION.elb.amazonaws.com), an instance's
// private (*.REGION.compute.internal, *.ec2.internal in us-east-1) or
// public (ec2-*.REGION.compute.amazonaws.com) name. Any other name has no
// region.
func ClassifyKubeServer(server string) (KubeServerLocation, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Opaque != "" {
		return KubeServerLocation{}, fmt.Errorf("server %q: want https://HOST[:PORT]", server)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	port := u.Port()
	if port == "" {
		port = "443"
	}
	loc := KubeServerLocation{Host: host, Port: port}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return KubeServerLocation{}, fmt.Errorf("server %q: an address with a zone is local to one machine", server)
		}
		loc.Addr = a.Unmap()
		return loc, nil
	}
	labels := strings.Split(host, ".")
	n := len(labels)
	at := func(i int) string {
		if i < 0 || i >= n {
			return ""
		}
		return labels[i]
	}
	suffix := func(s ...string) bool {
		if n <= len(s) {
			return false
		}
		return slices.Equal(labels[n-len(s):], s)
	}
	region := func(s string) string {
		if residency.ValidRegion(s) {
			return s
		}
		return ""
	}
	switch {
	case suffix("eks", "amazonaws", "com"):
		loc.Region = region(at(n - 4))
	case suffix("elb", "amazonaws", "com"): // NAME-ID.REGION.elb.amazonaws.com
		loc.Region = region(at(n - 4))
	case n >= 5 && at(n-4) == "elb" && suffix("amazonaws", "com"): // NAME-ID.elb.REGION.amazonaws.com
		loc.Region = region(at(n - 3))
	case suffix("compute", "internal"):
		loc.Region = region(at(n - 3))
	case suffix("ec2", "internal"):
		loc.Region = "us-east-1"
	case suffix("compute", "amazonaws", "com") && strings.HasPrefix(labels[0], "ec2-"):
		loc.Region = region(at(n - 4))
	case suffix("compute-1", "amazonaws", "com") && strings.HasPrefix(labels[0], "ec2-"):
		loc.Region = "us-east-1"
	}
	return loc, nil
}

// KubeCACertHashes are kubeadm's caCertHashes of a CA bundle (PEM):
// "sha256:" and the hex SHA-256 of each certificate's
// SubjectPublicKeyInfo, as kubeadm's pubkeypin computes them.
func KubeCACertHashes(caPEM []byte) ([]string, error) {
	var out []string
	rest := caPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("a certificate does not parse: %w", err)
		}
		sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
		if h := "sha256:" + hex.EncodeToString(sum[:]); !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return out, nil
}

// KubeNodeLabels are the labels a resource's nodes register with in a
// self-managed cluster: EKSNodeLabels's, with the block's labels.
func KubeNodeLabels(s *KubeSpec, resource, name, instanceType, placementGroup, profileText string) map[string]string {
	return EKSNodeLabels(&EKSSpec{Labels: s.Labels}, resource, name, instanceType, placementGroup, profileText)
}

// KubeadmJoinConfig is the nodes' kubeadm JoinConfiguration
// (kubeadm.k8s.io/v1beta4): discovery by bootstrap token against the
// API server, pinned to its CA's public keys; the startup taint; the
// labels and the provider ID (KubeadmProviderID, filled in at boot) as
// kubelet flags. It carries no token: the bootstrap adds the one it reads
// from the secret to a copy only root can read, and removes it after the
// join.
func KubeadmJoinConfig(kp *kubePlan, labels map[string]string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	b.WriteString("apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ndiscovery:\n  bootstrapToken:\n")
	fmt.Fprintf(&b, "    apiServerEndpoint: %s\n    caCertHashes:\n", q(kp.Endpoint))
	for _, h := range kp.CAHashes {
		fmt.Fprintf(&b, "      - %s\n", q(h))
	}
	b.WriteString("nodeRegistration:\n  taints:\n")
	fmt.Fprintf(&b, "    - key: %s\n      value: %s\n      effect: %s\n", q(kube.TaintKey), q(kube.TaintValuePending), q(kube.TaintEffect))
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		kv = append(kv, k+"="+labels[k])
	}
	b.WriteString("  kubeletExtraArgs:\n")
	fmt.Fprintf(&b, "    - name: \"node-labels\"\n      value: %s\n", q(strings.Join(kv, ",")))
	fmt.Fprintf(&b, "    - name: \"provider-id\"\n      value: %s\n", q(KubeadmProviderID))
	return b.String()
}

// KubeadmJoinParts is what a JoinConfiguration says.
type KubeadmJoinParts struct {
	APIServerEndpoint string
	CACertHashes      []string
	Taints            []cloud.KubeTaint
	Labels            map[string]string
	ProviderID        string
	// Token is the bootstrap token, when the configuration carries one
	// (the copy the bootstrap completes; never the rendered one).
	Token string
}

// bootstrapTokenRE is a kubeadm bootstrap token: ID.SECRET.
var bootstrapTokenRE = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

// ValidBootstrapToken checks a kubeadm bootstrap token's form; its error
// does not repeat the token.
func ValidBootstrapToken(t string) error {
	if !bootstrapTokenRE.MatchString(t) {
		return errors.New("not a kubeadm bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})")
	}
	return nil
}

// ParseKubeadmJoinConfig reads a JoinConfiguration back (what a node, or a
// test playing one, finds in its user data): the discovery endpoint and
// CA pins, the taints and the kubelet's labels and provider ID.
func ParseKubeadmJoinConfig(text string) (KubeadmJoinParts, error) {
	var jc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Discovery  struct {
			BootstrapToken *struct {
				Token             string   `json:"token"`
				APIServerEndpoint string   `json:"apiServerEndpoint"`
				CACertHashes      []string `json:"caCertHashes"`
			} `json:"bootstrapToken"`
			TLSBootstrapToken string `json:"tlsBootstrapToken"`
		} `json:"discovery"`
		NodeRegistration struct {
			Taints []struct {
				Key    string `json:"key"`
				Value  string `json:"value"`
				Effect string `json:"effect"`
			} `json:"taints"`
			KubeletExtraArgs []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"kubeletExtraArgs"`
		} `json:"nodeRegistration"`
	}
	if err := yaml.Unmarshal([]byte(text), &jc); err != nil {
		return KubeadmJoinParts{}, fmt.Errorf("JoinConfiguration: %w", err)
	}
	if jc.APIVersion != "kubeadm.k8s.io/v1beta4" || jc.Kind != "JoinConfiguration" {
		return KubeadmJoinParts{}, fmt.Errorf("JoinConfiguration: apiVersion %q, kind %q: want kubeadm.k8s.io/v1beta4, JoinConfiguration", jc.APIVersion, jc.Kind)
	}
	bt := jc.Discovery.BootstrapToken
	if bt == nil || bt.APIServerEndpoint == "" {
		return KubeadmJoinParts{}, errors.New("JoinConfiguration: no discovery.bootstrapToken.apiServerEndpoint")
	}
	if _, _, err := net.SplitHostPort(bt.APIServerEndpoint); err != nil {
		return KubeadmJoinParts{}, fmt.Errorf("JoinConfiguration: apiServerEndpoint %q is not HOST:PORT", bt.APIServerEndpoint)
	}
	if len(bt.CACertHashes) == 0 {
		return KubeadmJoinParts{}, errors.New("JoinConfiguration: no caCertHashes: discovery would trust any server")
	}
	out := KubeadmJoinParts{APIServerEndpoint: bt.APIServerEndpoint, CACertHashes: bt.CACertHashes, Labels: map[string]string{}, Token: bt.Token}
	if bt.Token != "" && jc.Discovery.TLSBootstrapToken != "" && bt.Token != jc.Discovery.TLSBootstrapToken {
		return KubeadmJoinParts{}, errors.New("JoinConfiguration: discovery and TLS bootstrap tokens differ")
	}
	if out.Token != "" {
		if err := ValidBootstrapToken(out.Token); err != nil {
			return KubeadmJoinParts{}, fmt.Errorf("JoinConfiguration: token: %w", err)
		}
	}
	for _, t := range jc.NodeRegistration.Taints {
		out.Taints = append(out.Taints, cloud.KubeTaint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	for _, a := range jc.NodeRegistration.KubeletExtraArgs {
		switch a.Name {
		case "provider-id":
			out.ProviderID = a.Value
		case "node-labels":
			if a.Value == "" {
				continue
			}
			for _, kv := range strings.Split(a.Value, ",") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return KubeadmJoinParts{}, fmt.Errorf("JoinConfiguration: node-labels: %q is not KEY=VALUE", kv)
				}
				out.Labels[k] = v
			}
		}
	}
	return out, nil
}

// newKubeconfigGate reaches the cluster with the kubeconfig the plan read.
func newKubeconfigGate(resource, name string, kp *kubePlan, progress func(string, ...any)) (*kubeGate, error) {
	if kp == nil {
		return nil, errors.New(KubePath + ": the kubeconfig was not read at plan")
	}
	kc := kp.Kubeconfig
	g := &kubeGate{resource: resource, selector: kube.LabelCluster + "=" + kube.LabelValue(name), progress: progress}
	g.connect = func(context.Context) (kubeNodesAPI, error) { return cloud.NewKubeNodesFromKubeconfig(&kc) }
	return g, nil
}
