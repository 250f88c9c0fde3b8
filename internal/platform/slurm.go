package platform

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// Slurm: a GPU cluster's or a CPU footprint's nodes join an existing Slurm
// cluster as dynamic nodes (slurmd -Z), configless: each node asks the
// controller for slurm.conf and gres.conf, and registers with the gres,
// features and memory of the declared profile. The bootstrap carries the
// join configuration (slurm.JoinConfig); `hwprobe slurm join` acts on it
// on the node. hwprobe is the nodes' HealthCheckProgram.

// SlurmPath is the orchestrator block's path.
const SlurmPath = "orchestrator.slurm"

// SlurmHealthCheckProgram is where `hwprobe slurm join` links hwprobe under
// the name that runs its health check: slurm.conf's HealthCheckProgram.
const SlurmHealthCheckProgram = "/usr/local/sbin/hwprobe-slurm-health-check"

// SlurmHealthCheckInterval is the health check interval the controller
// configuration proposes, in seconds.
const SlurmHealthCheckInterval = 300

// SlurmSpec is orchestrator.slurm: the Slurm cluster the nodes join.
type SlurmSpec struct {
	// Controllers are slurmctld's addresses, HOST or HOST:PORT, primary
	// first.
	Controllers []string
	// MungeKeySecretARN is the Secrets Manager secret holding the munge
	// key; residency-checked (region, replicas, KMS key).
	MungeKeySecretARN string
	// Partition, when set, is the partition the controller configuration
	// puts the nodes in.
	Partition string
	// Features are added to the ones derived from the profile.
	Features []string
	// NodeNamePrefix begins every node's Slurm name; empty means the
	// resource's name made a Slurm name.
	NodeNamePrefix string
}

// slurmKnown reports whether every value of orchestrator.slurm is known.
func slurmKnown(unknown []string) bool {
	return !slices.ContainsFunc(unknown, func(u string) bool { return u == "orchestrator" || strings.HasPrefix(u, "orchestrator.") })
}

// slurmKnownFunc is known for the block's attributes: an attribute is
// unknown too when the block, or orchestrator, is.
func slurmKnownFunc(known func(string) bool) func(string) bool {
	return func(p string) bool { return known("orchestrator") && known(SlurmPath) && known(p) }
}

var notSlurmName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// slurmSafe makes s a Slurm name: runs of other characters become '-'.
func slurmSafe(s string) string {
	return strings.Trim(notSlurmName.ReplaceAllString(s, "-"), "-")
}

// prefix is the node name prefix, given or made from the resource's name.
func (s *SlurmSpec) prefix(resourceName string) string {
	if s.NodeNamePrefix != "" {
		return s.NodeNamePrefix
	}
	p := slurmSafe(resourceName)
	if len(p) > 40 {
		p = p[:40]
	}
	return p
}

// validate checks what needs no AWS call. validation tells whether the
// resource has a validation block: hwprobe, which the join and the health
// check run, comes with it.
func (s *SlurmSpec) validate(outer func(string) bool, validation bool) []Problem {
	known := slurmKnownFunc(outer)
	var ps []Problem
	add := func(path, summary, detail string) {
		ps = append(ps, Problem{Path: SlurmPath + "." + path, Summary: summary, Detail: detail})
	}
	if !validation {
		ps = append(ps, Problem{Path: SlurmPath, Summary: "Slurm needs the validation block",
			Detail: "hwprobe joins the node to Slurm and is its health check; it comes with the validation block. Add validation { } (its defaults run the hardware checks)."})
	}
	if known(SlurmPath + ".controllers") {
		if len(s.Controllers) == 0 || len(s.Controllers) > 8 {
			add("controllers", "Invalid controllers", "give 1 to 8 slurmctld addresses, HOST or HOST:PORT, the primary first.")
		}
		for i, c := range s.Controllers {
			if err := slurm.ValidController(c); err != nil {
				add(fmt.Sprintf("controllers[%d]", i), "Invalid controller address", err.Error()+".")
			}
		}
	}
	if known(SlurmPath+".munge_key_secret_arn") && !strings.HasPrefix(s.MungeKeySecretARN, "arn:") {
		add("munge_key_secret_arn", "Invalid secret ARN", fmt.Sprintf("%q: give the ARN of the Secrets Manager secret that holds the cluster's munge key (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME).", s.MungeKeySecretARN))
	}
	if s.Partition != "" && known(SlurmPath+".partition") {
		if err := slurm.ValidName(s.Partition); err != nil {
			add("partition", "Invalid partition name", err.Error()+".")
		}
	}
	if known(SlurmPath + ".features") {
		for i, f := range s.Features {
			if err := slurm.ValidName(f); err != nil {
				add(fmt.Sprintf("features[%d]", i), "Invalid feature", err.Error()+".")
			}
		}
	}
	if s.NodeNamePrefix != "" && known(SlurmPath+".node_name_prefix") {
		if err := slurm.ValidName(s.NodeNamePrefix); err != nil || len(s.NodeNamePrefix) > 40 {
			add("node_name_prefix", "Invalid node name prefix", fmt.Sprintf("%q: 1 to 40 letters, digits, '_', '.' or '-'.", s.NodeNamePrefix))
		}
	}
	return ps
}

// residencyRefs: the munge key's secret (its region, replicas and key).
func (s *SlurmSpec) residencyRefs(outer func(string) bool) []residency.Ref {
	if known := slurmKnownFunc(outer); !known(SlurmPath + ".munge_key_secret_arn") {
		return nil
	}
	return []residency.Ref{{Path: SlurmPath + ".munge_key_secret_arn", Kind: residency.KindSecret, Value: s.MungeKeySecretARN, Required: true}}
}

// SlurmNode is what the controller learns of a resource's nodes.
type SlurmNode struct {
	// GresType and GPUs: Gres=gpu:TYPE:GPUS; no GPUs for CPU nodes.
	GresType string
	GPUs     int
	// RealMemoryMiB is the memory the profile requires (below the nominal:
	// what the OS sees).
	RealMemoryMiB int
	Features      []string
}

// slurmNodeFromProfile derives the node's gres, memory and features from
// its profile, so that nothing is typed twice: the instance type, GPU
// model, EFA, placement group, and the profile's digest (two nodes with the
// same digest were validated against the same hardware).
func slurmNodeFromProfile(s *SlurmSpec, resourceName, profileText string, prof *profile.Profile, efa int, placementGroup string) SlurmNode {
	n := SlurmNode{}
	sum := sha256.Sum256([]byte(profileText))
	feats := []string{"mlplatform", s.prefix(resourceName)}
	if prof.Host != nil && prof.Host.InstanceType != "" {
		feats = append(feats, slurmSafe(prof.Host.InstanceType))
	}
	if prof.GPU != nil && prof.GPU.Count > 0 {
		n.GresType = strings.ToLower(slurmSafe(prof.GPU.Model))
		n.GPUs = prof.GPU.Count
		if n.GresType != "" {
			feats = append(feats, n.GresType)
		}
	}
	if prof.CPU != nil && prof.CPU.MinMemoryGiB > 0 {
		n.RealMemoryMiB = int(prof.CPU.MinMemoryGiB * 1024)
	}
	if efa > 0 {
		feats = append(feats, "efa")
	}
	if placementGroup != "" {
		feats = append(feats, "pg-"+slurmSafe(placementGroup))
	}
	feats = append(feats, "profile-"+hex.EncodeToString(sum[:])[:12])
	for _, f := range s.Features {
		if !slices.Contains(feats, f) {
			feats = append(feats, f)
		}
	}
	n.Features = feats
	return n
}

// conf is slurmd -Z's --conf for the node.
func (n SlurmNode) conf() string {
	var parts []string
	if n.GPUs > 0 {
		g := "gpu:" + strconv.Itoa(n.GPUs)
		if n.GresType != "" {
			g = "gpu:" + n.GresType + ":" + strconv.Itoa(n.GPUs)
		}
		parts = append(parts, "Gres="+g)
	}
	parts = append(parts, "Feature="+strings.Join(n.Features, ","))
	if n.RealMemoryMiB > 0 {
		parts = append(parts, "RealMemory="+strconv.Itoa(n.RealMemoryMiB))
	}
	// The node registers drained, so that no job lands on it before hwprobe
	// checked it: slurmd's own first health check runs before the node
	// exists in the controller. `hwprobe slurm join` runs the first check
	// once it registered, which resumes it when it passes.
	parts = append(parts, "State=DRAIN")
	return strings.Join(parts, " ")
}

// slurmJoinConfig is the node's join configuration. byIndex names nodes by
// their GPU cluster index, else by instance id.
func slurmJoinConfig(s *SlurmSpec, region, resourceName string, byIndex bool, n SlurmNode) slurm.JoinConfig {
	c := slurm.JoinConfig{Controllers: slices.Clone(s.Controllers), MungeKeySecretARN: s.MungeKeySecretARN, Region: region,
		NodeNamePrefix: s.prefix(resourceName), NodeName: slurm.NameByInstance, Conf: n.conf()}
	if byIndex {
		c.NodeName, c.IndexTag = slurm.NameByIndex, cloud.TagNodeIndices
	}
	return c
}

// SlurmControllerConfig is what the controller needs for a resource's
// nodes, to add to its slurm.conf and gres.conf: configless dynamic nodes,
// hwprobe as the health check, a node set by the resource's feature, the
// partition, and the GPUs' device files by node name (a GPU cluster's names
// are PREFIX-INDEX, so one line covers every index up to maxNodes).
func SlurmControllerConfig(s *SlurmSpec, resourceName string, n SlurmNode, maxNodes int) string {
	p := s.prefix(resourceName)
	var b strings.Builder
	fmt.Fprintf(&b, "# slurm.conf on the controller (Slurm 22.05 or later), for the nodes of %s\n", resourceName)
	b.WriteString("SlurmctldParameters=enable_configless\n")
	fmt.Fprintf(&b, "MaxNodeCount=%d # at least: the dynamic nodes of every resource that joins\n", maxNodes)
	if n.GPUs > 0 {
		b.WriteString("GresTypes=gpu\n")
	}
	fmt.Fprintf(&b, "HealthCheckProgram=%s\nHealthCheckInterval=%d\nHealthCheckNodeState=ANY\n", SlurmHealthCheckProgram, SlurmHealthCheckInterval)
	fmt.Fprintf(&b, "Nodeset=%s Feature=%s\n", p, p)
	if s.Partition != "" {
		fmt.Fprintf(&b, "PartitionName=%s Nodes=%s State=UP\n", s.Partition, p)
	}
	if n.GPUs > 0 {
		fmt.Fprintf(&b, "# gres.conf on the controller\nNodeName=%s-[0-%d] Name=gpu", p, maxNodes-1)
		if n.GresType != "" {
			b.WriteString(" Type=" + n.GresType)
		}
		if n.GPUs == 1 {
			b.WriteString(" File=/dev/nvidia0\n")
		} else {
			fmt.Fprintf(&b, " File=/dev/nvidia[0-%d]\n", n.GPUs-1)
		}
	}
	return b.String()
}
