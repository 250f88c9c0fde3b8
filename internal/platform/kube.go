package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/mlplatform/mlplatform/hwprobe/kube"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// Kubernetes (EKS): a GPU cluster's nodes join an existing EKS cluster in
// the jurisdiction. nodeadm registers each node with the startup taint
// mlplatform.io/hwprobe=pending:NoSchedule and the resource's labels, from
// a NodeConfig part of the user data the plan shows; hwprobe labels its
// Node and sets its HwprobeValidated condition with the kubelet's own
// credentials; the gate, calling the cluster's API with an EKS token made
// from the provider's credentials, lifts the taint from every node whose
// evidence passed, and labels and cordons those that failed.

// EKSPath is the orchestrator block's path.
const EKSPath = "orchestrator.eks"

// GateLabel is the label the gate sets on a Node it judged: GatePassed or
// GateFailed. Its prefix is one NodeRestriction keeps from kubelets: no
// node can label itself passed.
const (
	GateLabel  = "node-restriction.kubernetes.io/mlplatform-gate"
	GatePassed = "passed"
	GateFailed = "failed"
	// labelInstanceType is the node's instance type, as the resource
	// declared it.
	labelInstanceType = "mlplatform.io/instance-type"
)

// Names the front ends' documentation cites (hwprobe/kube's).
const (
	EKSStartupTaint   = kube.TaintKey + "=" + kube.TaintValuePending + ":" + kube.TaintEffect
	EKSTaintKey       = kube.TaintKey
	EKSConditionType  = kube.ConditionType
	EKSStatusLabel    = kube.LabelStatus
	EKSLabelCluster   = kube.LabelCluster
	EKSLabelResource  = kube.LabelResource
	EKSLabelPlacement = kube.LabelPlacementGroup
	EKSLabelProfile   = kube.LabelProfileDigest
	EKSLabelInstance  = labelInstanceType
)

// EKSSpec is orchestrator.eks: the EKS cluster the nodes join.
type EKSSpec struct {
	// ClusterName is the EKS cluster, in the provider's region: its name,
	// or its ARN (arn:aws:eks:REGION:ACCOUNT:cluster/NAME).
	ClusterName string
	// Labels are added to the ones the resource sets.
	Labels map[string]string
	// CreateAccessEntry has the resource create (and own) the EC2_LINUX
	// access entry of its instance profile's role (kube_access.go).
	CreateAccessEntry bool
}

var eksClusterNameRE = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$`)

// cluster is the cluster's name, and the region its ARN names ("" for a
// name).
func (s *EKSSpec) cluster() (name, region string, err error) {
	if !strings.HasPrefix(s.ClusterName, "arn:") {
		if !eksClusterNameRE.MatchString(s.ClusterName) {
			return "", "", fmt.Errorf("%q: 1 to 100 letters, digits, '-' or '_', starting with a letter or digit, or the cluster's ARN", s.ClusterName)
		}
		return s.ClusterName, "", nil
	}
	a, err := residency.ParseARN(s.ClusterName)
	name, ok := strings.CutPrefix(a.Resource, "cluster/")
	if err != nil || a.Service != "eks" || !ok || !eksClusterNameRE.MatchString(name) || a.Region == "" {
		return "", "", fmt.Errorf("%q: an EKS cluster's ARN is arn:aws:eks:REGION:ACCOUNT:cluster/NAME", s.ClusterName)
	}
	return name, a.Region, nil
}

// labelNameRE is a label key's name part and a label value's form.
var labelNameRE = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)

// eksKnownFunc: an attribute of the block is unknown when it, the block
// or orchestrator is.
func eksKnownFunc(known func(string) bool) func(string) bool {
	return func(p string) bool { return known("orchestrator") && known(EKSPath) && known(p) }
}

// eksKnown reports whether every value of orchestrator.eks is known.
func eksKnown(unknown []string) bool {
	return !slices.ContainsFunc(unknown, func(u string) bool { return u == "orchestrator" || strings.HasPrefix(u, "orchestrator.") })
}

// validate checks what needs no AWS call.
func (s *EKSSpec) validate(outer func(string) bool, validation, slurm bool) []Problem {
	known := eksKnownFunc(outer)
	var ps []Problem
	add := func(path, summary, detail string) {
		ps = append(ps, Problem{Path: path, Summary: summary, Detail: detail})
	}
	if !validation {
		add(EKSPath, "EKS needs the validation block", "nodes register with the startup taint "+kube.TaintKey+"="+kube.TaintValuePending+":"+kube.TaintEffect+", which the gate lifts once a node's evidence passed; the gate comes with the validation block. Add validation { } (its defaults run the hardware checks).")
	}
	if slurm {
		add("orchestrator", "Two orchestrators", "a node joins one scheduler: keep orchestrator.slurm or orchestrator.eks, not both.")
	}
	if _, _, err := s.cluster(); known(EKSPath+".cluster_name") && err != nil {
		add(EKSPath+".cluster_name", "Invalid EKS cluster name", err.Error()+".")
	}
	if known(EKSPath + ".labels") {
		for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
			path := fmt.Sprintf("%s.labels[%q]", EKSPath, k)
			if err := validNodeLabel(k, s.Labels[k]); err != nil {
				add(path, "Invalid node label", err.Error()+".")
			}
		}
	}
	return ps
}

// validNodeLabel checks a label the kubelet sets at registration: a valid
// key and value, outside the prefixes NodeRestriction keeps from kubelets
// (kubernetes.io, k8s.io) and mlplatform.io (the resource's own).
func validNodeLabel(k, v string) error {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = k, ""
	}
	if name == "" || len(name) > 63 || !labelNameRE.MatchString(name) || hasPrefix && (prefix == "" || len(prefix) > 253) {
		return fmt.Errorf("%q: a label key is [PREFIX/]NAME, NAME 1 to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", k)
	}
	for _, p := range []string{"kubernetes.io", "k8s.io", "mlplatform.io"} {
		if prefix == p || strings.HasSuffix(prefix, "."+p) {
			return fmt.Errorf("%q: the %s prefix is not the user's (NodeRestriction keeps kubernetes.io and k8s.io labels from kubelets; mlplatform.io labels are the resource's own). Use a prefix of your own", k, p)
		}
	}
	if len(v) > 63 || !labelNameRE.MatchString(v) {
		return fmt.Errorf("%q = %q: a label value is at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", k, v)
	}
	return nil
}

// eksPlan is what the plan learned of the cluster.
type eksPlan struct {
	Cluster cloud.EKSCluster
	// NodeRole is the role of the instance profile, and Entry what the
	// plan found of its access entry (accessEntryAbsent, Ours, Shared);
	// "" when not looked up.
	NodeRole, Entry string
}

// recordedEntry is the TagEKSAccessEntry the plan's launch template
// carries: the entry the resource creates or created; "" when it uses
// another's, or creates none.
func (s *EKSSpec) recordedEntry(ek *eksPlan) string {
	if s == nil || !s.CreateAccessEntry || ek == nil || ek.NodeRole == "" || ek.Entry == accessEntryShared {
		return ""
	}
	return accessEntryRef{Cluster: ek.Cluster.Name, Role: ek.NodeRole}.tag()
}

// planEKS reads the cluster and checks its residency: its ARN's region
// and the region its API endpoint names. A cluster that is not ACTIVE
// (or UPDATING) cannot take nodes.
func (e *Env) planEKS(ctx context.Context, s *EKSSpec, known func(string) bool) (*eksPlan, []Problem, []residency.Violation, error) {
	name, arnRegion, err := s.cluster()
	if !eksKnownFunc(known)(EKSPath+".cluster_name") || err != nil {
		return nil, nil, nil, nil
	}
	path := EKSPath + ".cluster_name"
	// A cluster its ARN places outside the jurisdiction is refused
	// before any call; one in another allowed region cannot take nodes
	// launched in this one.
	if arnRegion != "" && !e.Policy.RegionAllowed(arnRegion) {
		return nil, nil, []residency.Violation{{Path: path, Value: s.ClusterName, Rule: residency.RuleARNRegion,
			Msg: fmt.Sprintf("EKS cluster %s is in %s, outside jurisdiction %s: the nodes and the gate would send it the nodes' identities and labels", s.ClusterName, arnRegion, e.Policy.Jurisdiction.Code),
			Fix: "join a cluster in " + strings.Join(e.Policy.AllowedRegions, ", ")}}, nil
	}
	if arnRegion != "" && arnRegion != e.Region() {
		return nil, []Problem{{Path: path, Summary: "EKS cluster in another region", Detail: fmt.Sprintf("%s is in %s; the nodes launch in %s, the provider's region: join a cluster there, or configure a provider for %s.", s.ClusterName, arnRegion, e.Region(), arnRegion)}}, nil, nil
	}
	c, err := cloud.DescribeEKSCluster(ctx, e.Clients.EKS(), name)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		return nil, []Problem{{Path: path, Summary: "EKS cluster not found", Detail: fmt.Sprintf("%q is not an EKS cluster of this account in %s: create it first, or check the name (the provider's region is where it is looked up).", name, e.Region())}}, nil, nil
	case err != nil:
		return nil, nil, nil, err
	}
	var ps []Problem
	if c.Status != "ACTIVE" && c.Status != "UPDATING" {
		ps = append(ps, Problem{Path: path, Summary: "EKS cluster not active", Detail: fmt.Sprintf("%q is %s: nodes can join an ACTIVE cluster only. Wait for it, or choose another.", s.ClusterName, c.Status)})
	}
	if c.Endpoint == "" || c.CertificateAuthority == "" {
		ps = append(ps, Problem{Path: path, Summary: "EKS cluster without an API endpoint", Detail: fmt.Sprintf("%q reports no API endpoint or certificate authority yet: wait until it is ACTIVE.", s.ClusterName)})
	} else if _, err := cloud.DecodeEKSCertificateAuthority(c.CertificateAuthority); err != nil {
		ps = append(ps, Problem{Path: path, Summary: "EKS cluster's certificate authority unreadable", Detail: err.Error()})
	}
	var vs []residency.Violation
	if a, err := residency.ParseARN(c.ARN); err == nil && a.Region != "" && !e.Policy.RegionAllowed(a.Region) {
		vs = append(vs, residency.Violation{Path: path, Value: c.ARN, Rule: residency.RuleARNRegion, Msg: fmt.Sprintf("EKS cluster %s is in %s, outside jurisdiction %s", c.ARN, a.Region, e.Policy.Jurisdiction.Code),
			Fix: "join a cluster in " + strings.Join(e.Policy.AllowedRegions, ", ")})
	}
	if region, ok := eksEndpointRegion(c.Endpoint); ok && !e.Policy.RegionAllowed(region) {
		vs = append(vs, residency.Violation{Path: path, Value: c.Endpoint, Rule: residency.RuleRegionAllowed, Msg: fmt.Sprintf("the cluster's API endpoint %s is in %s, outside jurisdiction %s: the gate and every node would call it", c.Endpoint, region, e.Policy.Jurisdiction.Code),
			Fix: "join a cluster in " + strings.Join(e.Policy.AllowedRegions, ", ")})
	}
	return &eksPlan{Cluster: c}, ps, vs, nil
}

// planEKSJoin is orchestrator.eks at plan, for either resource: the
// cluster (planEKS), then the nodes' role and its access entry
// (planAccessEntry).
func (e *Env) planEKSJoin(ctx context.Context, s *EKSSpec, instanceProfile, token string, known func(string) bool) (*eksPlan, []Problem, []residency.Violation, error) {
	ek, ps, vs, err := e.planEKS(ctx, s, known)
	if err != nil || ek == nil {
		return ek, ps, vs, err
	}
	aps, err := e.planAccessEntry(ctx, s, ek, instanceProfile, token, known)
	return ek, append(ps, aps...), vs, err
}

// eksEndpointRegion is the region an EKS API endpoint's host names
// (ID.LABEL.REGION.eks.amazonaws.com); false for other hosts, whose
// location the URL does not tell (a private name, an emulator).
func eksEndpointRegion(endpoint string) (string, bool) {
	ep, err := residency.ParseEndpoint(strings.TrimSuffix(endpoint, "/"))
	if err != nil || !ep.AWS {
		return "", false
	}
	labels := strings.Split(ep.Host, ".")
	for i := len(labels) - 1; i > 0; i-- {
		if labels[i] == "eks" && residency.ValidRegion(labels[i-1]) {
			return labels[i-1], true
		}
	}
	return "", false
}

// EKSNodeLabels are the labels a resource's nodes register with: the
// resource, its name, the instance type, the placement group and the
// profile's digest (two nodes with one digest were validated against the
// same hardware), then the user's.
func EKSNodeLabels(s *EKSSpec, resource, name, instanceType, placementGroup, profileText string) map[string]string {
	sum := sha256.Sum256([]byte(profileText))
	l := map[string]string{
		kube.LabelResource:      resource,
		kube.LabelCluster:       kube.LabelValue(name),
		labelInstanceType:       kube.LabelValue(instanceType),
		kube.LabelProfileDigest: hex.EncodeToString(sum[:])[:12],
	}
	if placementGroup != "" {
		l[kube.LabelPlacementGroup] = kube.LabelValue(placementGroup)
	}
	maps.Copy(l, s.Labels)
	return l
}

// EKSNodeConfig is nodeadm's NodeConfig for the nodes (the user data part
// application/node.eks.aws on Amazon Linux 2023 EKS images): the cluster
// as DescribeCluster gave it, the startup taint, and the labels.
func EKSNodeConfig(c cloud.EKSCluster, labels map[string]string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	b.WriteString("---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n")
	fmt.Fprintf(&b, "    name: %s\n    apiServerEndpoint: %s\n    certificateAuthority: %s\n", q(c.Name), q(c.Endpoint), q(c.CertificateAuthority))
	if c.ServiceCIDR != "" {
		fmt.Fprintf(&b, "    cidr: %s\n", q(c.ServiceCIDR))
	}
	b.WriteString("  kubelet:\n    config:\n      registerWithTaints:\n")
	fmt.Fprintf(&b, "        - key: %s\n          value: %s\n          effect: %s\n", q(kube.TaintKey), q(kube.TaintValuePending), q(kube.TaintEffect))
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		kv = append(kv, k+"="+labels[k])
	}
	fmt.Fprintf(&b, "    flags:\n      - %s\n", q("--node-labels="+strings.Join(kv, ",")))
	return b.String()
}

// EKSNodeConfigParts is what a NodeConfig EKSNodeConfig rendered says.
type EKSNodeConfigParts struct {
	ClusterName, Endpoint, CertificateAuthority, ServiceCIDR string
	Taints                                                   []cloud.KubeTaint
	Labels                                                   map[string]string
}

// ParseEKSNodeConfig reads a NodeConfig back (what a node, or a test
// playing one, finds in its user data): the cluster, the taints the
// kubelet registers with, and the labels of its --node-labels flag.
func ParseEKSNodeConfig(text string) (EKSNodeConfigParts, error) {
	var nc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Cluster struct {
				Name                 string `json:"name"`
				APIServerEndpoint    string `json:"apiServerEndpoint"`
				CertificateAuthority string `json:"certificateAuthority"`
				CIDR                 string `json:"cidr"`
			} `json:"cluster"`
			Kubelet struct {
				Config struct {
					RegisterWithTaints []struct {
						Key    string `json:"key"`
						Value  string `json:"value"`
						Effect string `json:"effect"`
					} `json:"registerWithTaints"`
				} `json:"config"`
				Flags []string `json:"flags"`
			} `json:"kubelet"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(text), &nc); err != nil {
		return EKSNodeConfigParts{}, fmt.Errorf("NodeConfig: %w", err)
	}
	if nc.APIVersion != "node.eks.aws/v1alpha1" || nc.Kind != "NodeConfig" {
		return EKSNodeConfigParts{}, fmt.Errorf("NodeConfig: apiVersion %q, kind %q: want node.eks.aws/v1alpha1, NodeConfig", nc.APIVersion, nc.Kind)
	}
	c := nc.Spec.Cluster
	out := EKSNodeConfigParts{ClusterName: c.Name, Endpoint: c.APIServerEndpoint, CertificateAuthority: c.CertificateAuthority, ServiceCIDR: c.CIDR, Labels: map[string]string{}}
	for _, t := range nc.Spec.Kubelet.Config.RegisterWithTaints {
		out.Taints = append(out.Taints, cloud.KubeTaint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	for _, f := range nc.Spec.Kubelet.Flags {
		list, ok := strings.CutPrefix(f, "--node-labels=")
		if !ok || list == "" {
			continue
		}
		for _, kv := range strings.Split(list, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return EKSNodeConfigParts{}, fmt.Errorf("NodeConfig: --node-labels: %q is not KEY=VALUE", kv)
			}
			out.Labels[k] = v
		}
	}
	return out, nil
}
