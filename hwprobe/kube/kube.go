// Package kube is what a Kubernetes node and the provider's validation gate
// agree on: the startup taint a joining node carries until its evidence
// passed, the labels and the Node condition hwprobe sets on its own Node,
// the labels the provider sets at registration, and the Node Feature
// Discovery (NFD) local feature file hwprobe writes, with labels under
// NVIDIA GPU Feature Discovery's names.
//
// It is pure (no client-go, no k8s.io/api): the provider's core imports
// it, and the provider's binary stays small. The node side, which talks to
// the API server with the kubelet's credentials, is hwprobe/kube/node.
package kube

import (
	"errors"
	"fmt"
	"strings"
)

// The startup taint: nodeadm's NodeConfig registers every node with
// TaintKey=TaintValuePending:TaintEffect; the provider's gate removes it
// from a node whose evidence passed. hwprobe never removes it (the Node
// restriction admission forbids a node to change its own taints anyway).
const (
	TaintKey          = "mlplatform.io/hwprobe"
	TaintValuePending = "pending"
	TaintEffect       = "NoSchedule"
)

// The label hwprobe sets on its own Node, and writes into the NFD feature
// file, with the verdict of the node's validation.
const (
	LabelStatus  = "mlplatform.io/hwprobe.status"
	StatusPassed = "passed"
	StatusFailed = "failed"
)

// Labels the provider sets at registration (nodeadm's NodeConfig,
// kubelet --node-labels).
const (
	LabelCluster        = "mlplatform.io/cluster"
	LabelPlacementGroup = "mlplatform.io/placement-group"
	LabelProfileDigest  = "mlplatform.io/profile-digest"
	LabelResource       = "mlplatform.io/resource"
)

// GPU labels, under NVIDIA GPU Feature Discovery's names and in its forms,
// so that workloads and schedulers written for GFD select hwprobe's nodes
// unchanged.
const (
	LabelGPUProduct = "nvidia.com/gpu.product" // NVML product name, spaces as '-': NVIDIA-H100-80GB-HBM3
	LabelGPUCount   = "nvidia.com/gpu.count"   // GPUs on the node
	LabelGPUMemory  = "nvidia.com/gpu.memory"  // MiB per GPU
)

// The Node condition hwprobe sets on its own Node (status subresource).
const (
	ConditionType = "HwprobeValidated"

	// ConditionTrue and ConditionFalse are a condition's status values
	// (corev1.ConditionTrue and ConditionFalse).
	ConditionTrue  = "True"
	ConditionFalse = "False"
)

// The condition's reasons (CamelCase, as Kubernetes reasons are).
const (
	// ReasonChecksPassed: every required check passed (status True).
	ReasonChecksPassed = "ChecksPassed"
	// ReasonCheckFailed: at least one check failed.
	ReasonCheckFailed = "CheckFailed"
	// ReasonCheckNotRun: no check failed, but a required one could not
	// run; that is never a pass.
	ReasonCheckNotRun = "CheckNotRun"
	// ReasonCannotRun: hwprobe could not check the node at all (an
	// unreadable profile, a failed probe).
	ReasonCannotRun = "CannotRun"
)

// Where NFD's worker reads local feature files, and the name of hwprobe's.
const (
	FeaturesDir  = "/etc/kubernetes/node-feature-discovery/features.d"
	FeaturesFile = "mlplatform-hwprobe"
)

// DefaultKubeconfig is the kubelet's kubeconfig on EKS AL2023 nodes
// (nodeadm): hwprobe acts on its own Node with the kubelet's identity.
const DefaultKubeconfig = "/var/lib/kubelet/kubeconfig"

// NodeUserPrefix starts the user name of a kubelet's identity
// (system:node:NAME, in the group system:nodes).
const NodeUserPrefix = "system:node:"

// Verdict is a node's validation outcome, as its label and condition say
// it.
type Verdict struct {
	Passed  bool
	Reason  string // one of the Reason constants
	Message string // for a failure, the checks that failed
}

// Status is the value of LabelStatus for v.
func (v Verdict) Status() string {
	if v.Passed {
		return StatusPassed
	}
	return StatusFailed
}

// ConditionStatus is the status of the ConditionType condition for v.
func (v Verdict) ConditionStatus() string {
	if v.Passed {
		return ConditionTrue
	}
	return ConditionFalse
}

// NodeNameFromUser returns the node name of a kubelet's user name
// (system:node:NAME), as a client certificate's common name or the API
// server's SelfSubjectReview gives it.
func NodeNameFromUser(user string) (string, error) {
	name, ok := strings.CutPrefix(user, NodeUserPrefix)
	if !ok {
		return "", fmt.Errorf("user %q is not a node's identity (%sNAME)", user, NodeUserPrefix)
	}
	if err := validNodeName(name); err != nil {
		return "", fmt.Errorf("user %q: %w", user, err)
	}
	return name, nil
}

// validNodeName checks a Node name: a DNS subdomain (RFC 1123), as the
// API server requires.
func validNodeName(name string) error {
	switch {
	case name == "":
		return errors.New("empty node name")
	case len(name) > 253:
		return fmt.Errorf("node name of %d characters: at most 253", len(name))
	}
	for _, part := range strings.Split(name, ".") {
		if !dnsLabel(part) {
			return fmt.Errorf("node name %q is not a DNS subdomain (lowercase letters, digits, '-' and '.')", name)
		}
	}
	return nil
}

// dnsLabel: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters.
func dnsLabel(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
