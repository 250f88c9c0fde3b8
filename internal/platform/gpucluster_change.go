package platform

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Defaults of a GPU cluster's long operations: Terraform's `timeouts` block
// defaults and Pulumi's deadlines when no custom timeout is set.
const (
	GPUClusterCreateTimeout = 60 * time.Minute
	GPUClusterUpdateTimeout = 60 * time.Minute
	GPUClusterDeleteTimeout = 30 * time.Minute
)

// Capacity retry budget: launch attempts per zone and the first wait.
const (
	DefaultCapacityRetryAttempts = 4
	MaxCapacityRetryAttempts     = 20
	DefaultCapacityRetryDelay    = 10 * time.Second
)

// Operation names a long GPU cluster verb, for its timeout.
type Operation string

// The operations that have a deadline.
const (
	OpCreate Operation = "create"
	OpUpdate Operation = "update"
	OpDelete Operation = "delete"
)

// GPUClusterTimeout is the default deadline of op; a timeout the user set
// wins, as each front end's timeout rule says.
func GPUClusterTimeout(op Operation) time.Duration {
	switch op {
	case OpCreate:
		return GPUClusterCreateTimeout
	case OpUpdate:
		return GPUClusterUpdateTimeout
	}
	return GPUClusterDeleteTimeout
}

// ParseTimeout reads a timeout the user wrote (path such as timeouts.create).
func ParseTimeout(path, s string) (time.Duration, *Problem) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, &Problem{Path: path, Summary: "Invalid timeout", Detail: fmt.Sprintf("%q: write a duration such as 30m.", s)}
	}
	return d, TimeoutProblem(path, d)
}

// CapacityRetryInput is capacity_retry as the user wrote it; nil is unset.
type CapacityRetryInput struct {
	Attempts     *int64
	InitialDelay *string
}

// CapacityRetryFromInput parses and checks capacity_retry: attempts 1 to
// MaxCapacityRetryAttempts, initial_delay a duration up to
// MaxCapacityRetryDelay. Unset values keep their defaults (zero).
func CapacityRetryFromInput(in CapacityRetryInput) (CapacityRetry, []Problem) {
	var r CapacityRetry
	var ps []Problem
	if a := in.Attempts; a != nil {
		if *a < 1 || *a > MaxCapacityRetryAttempts {
			ps = append(ps, Problem{Path: "capacity_retry.attempts", Summary: "Value out of range",
				Detail: fmt.Sprintf("capacity_retry.attempts = %d: use 1 to %d.", *a, MaxCapacityRetryAttempts)})
		} else {
			r.Attempts = int(*a)
		}
	}
	if d := in.InitialDelay; d != nil && *d != "" {
		dur, err := time.ParseDuration(*d)
		if err != nil {
			ps = append(ps, Problem{Path: "capacity_retry.initial_delay", Summary: "Invalid duration",
				Detail: fmt.Sprintf("capacity_retry.initial_delay = %q: write a duration such as 10s or 1m.", *d)})
		}
		r.InitialDelay = dur
	}
	return r, ps
}

// RolloutFromInput checks rollout as the user wrote it; a nil batch size is
// unset (one node at a time).
func RolloutFromInput(strategy string, batchSize *int64) (Rollout, []Problem) {
	r := Rollout{Strategy: strategy}
	var ps []Problem
	if b := batchSize; b != nil {
		if *b < 1 || *b > MaxGPUClusterNodes {
			ps = append(ps, Problem{Path: "rollout.batch_size", Summary: "Value out of range",
				Detail: fmt.Sprintf("rollout.batch_size = %d: use 1 to %d nodes replaced at a time.", *b, MaxGPUClusterNodes)})
		} else {
			r.BatchSize = int(*b)
		}
	}
	return r, ps
}

// GPUClusterRecord is a cluster as a front end recorded it (Terraform state,
// Pulumi state) or as a refresh read it back: the declared spec, what
// planning resolved, and what exists.
type GPUClusterRecord struct {
	// Spec is declared. Terraform records the resolved zone, zone_id,
	// subnet_id, efa_interfaces and placement_group_name in it.
	Spec GPUClusterSpec
	// Resolved values: where the cluster is, the AMI, EFA per node (nil when
	// not recorded), the placement group ("" when the cluster's own group
	// was deleted outside).
	Zone, ZoneID, SubnetID string
	ImageID                string
	EFAInterfaces          *int
	PlacementGroup         string
	// TagsAll are the tags on every node: Tags over the default tags.
	TagsAll map[string]string

	// What exists.
	LaunchTemplateID      string
	LaunchTemplateVersion int64
	PlacementZoneID       string // where the nodes run: ZoneID, or the zone fallback chose
	CreationToken         string
	Nodes                 []GPUNode
}

// RecordGPUCluster is the record of what a create or update left: the
// declared values as given, what exists from found.
func RecordGPUCluster(found *GPUCluster, declared GPUClusterRecord) GPUClusterRecord {
	r := declared
	if found.CreationToken != "" {
		r.CreationToken = found.CreationToken
	}
	r.LaunchTemplateID, r.LaunchTemplateVersion = found.LaunchTemplateID, found.LaunchTemplateVersion
	if found.PlacementGroupName != "" {
		r.PlacementGroup = found.PlacementGroupName
	}
	r.Nodes = slices.Clone(found.Nodes)
	r.PlacementZoneID = declared.ZoneID
	if len(found.Nodes) > 0 {
		r.PlacementZoneID = found.Nodes[0].ZoneID
	}
	if r.ImageID == "" {
		for _, n := range found.Nodes {
			if n.ImageID != "" {
				r.ImageID = n.ImageID
				break
			}
		}
	}
	return r
}

// ReadBackGPUCluster is a refresh: what exists written into the declared
// shape, so that drift shows in the next plan and its apply repairs it. A
// node lost, stopped or stopping outside lowers node_count; a node of
// another instance type or image shows as instance_type or image_id
// changing; tags changed on a node show as tags_all changing; the cluster's
// own placement group deleted outside reads as unset (planned back). Values
// the user left unset stay unset.
func ReadBackGPUCluster(found *GPUCluster, declared GPUClusterRecord) GPUClusterRecord {
	r := RecordGPUCluster(found, declared)
	d := ReadGPUClusterDrift(found, declared.TagsAll)
	r.Spec.NodeCount = d.NodeCount
	if replacesDrained(declared.Spec) {
		// The nodes hwprobe drained in Slurm count as lost: the next
		// apply replaces them.
		r.Spec.NodeCount -= len(found.Drained)
	}
	if d.TagsAll != nil {
		r.TagsAll = d.TagsAll
	}
	for _, n := range found.Nodes {
		if n.InstanceType != "" && n.InstanceType != declared.Spec.InstanceType {
			r.Spec.InstanceType = n.InstanceType
			break
		}
	}
	for _, n := range found.Nodes {
		if n.ImageID != "" && n.ImageID != declared.ImageID {
			r.ImageID = n.ImageID
			break
		}
	}
	// The hop limit the nodes run with: one changed outside (or a node
	// launched from a template version made outside) shows as drift. Nodes
	// that disagree among themselves record none: no one value is true of
	// them, and any declared value then differs from the record, so the
	// next apply sets it on every node (a record of one node's value would
	// hide the others once the configuration names that value).
	if limit, mixed := nodesHopLimit(found.Nodes); mixed {
		r.Spec.MetadataHopLimit = 0
	} else if limit != 0 && limit != RecordedMetadataHopLimit(declared.Spec.MetadataHopLimit) {
		r.Spec.MetadataHopLimit = limit
	}
	if found.PlacementGroupOwned && found.PlacementGroupState == "" {
		r.PlacementGroup = ""
		if r.Spec.PlacementGroup == GPUClusterResourceName(found.Name) {
			r.Spec.PlacementGroup = ""
		}
	}
	return r
}

// nodesHopLimit is the hop limit the healthy nodes run with (0 when none
// says), and whether they disagree.
func nodesHopLimit(nodes []GPUNode) (limit int, mixed bool) {
	for _, n := range nodes {
		if !healthyNode(n) || n.MetadataHopLimit == 0 {
			continue
		}
		switch h := int(n.MetadataHopLimit); {
		case limit == 0:
			limit = h
		case h != limit:
			return 0, true
		}
	}
	return limit, false
}

// GPUClusterChangeSet is what applying a spec over a record does. A GPU
// cluster has no refused change: what cannot change in place is replaced.
type GPUClusterChangeSet struct {
	// Replace: the cluster is destroyed and created anew.
	Replace []Change
	// Nodes: in place; nodes are scaled, or rolled by the rollout settings.
	Nodes []Change
	// Template: in place; a new launch template version, nodes retagged.
	Template []Change
	// Settings: in place; recorded only (rollout, capacity retry, zone
	// fallback), nothing in AWS changes.
	Settings []Change
}

// Empty reports whether nothing changes.
func (c *GPUClusterChangeSet) Empty() bool {
	return len(c.Replace)+len(c.Nodes)+len(c.Template)+len(c.Settings) == 0
}

// Paths lists every changed path.
func (c *GPUClusterChangeSet) Paths() []string {
	return changePathsOf(c.Replace, c.Nodes, c.Template, c.Settings)
}

// GPUClusterResolved is what planning resolved for a desired spec.
type GPUClusterResolved struct {
	ImageID        string // "" when the image is unknown or not found
	EFAInterfaces  *int   // nil when the instance type is unknown
	PlacementGroup string // declared, else the cluster's own
	// TagsAll is nil when not known at plan (a tag or default tag unknown).
	TagsAll map[string]string
}

// gpuClusterChange compares a desired spec, with what planning resolved
// for it, with the record: which changes replace the cluster, which roll or
// scale nodes, which only retag. A value not known yet (desired.Unknown)
// is a change to be known at apply, never an absent value.
func gpuClusterChange(prior GPUClusterRecord, desired GPUClusterSpec, res GPUClusterResolved) GPUClusterChangeSet {
	var cs GPUClusterChangeSet
	old := prior.Spec
	unknown := func(path string) bool {
		if !desired.Known(path) {
			return true
		}
		for _, u := range desired.Unknown {
			if strings.HasPrefix(u, path+".") || strings.HasPrefix(u, path+"[") {
				return true
			}
		}
		return false
	}
	add := func(to *[]Change, path string, changed bool, reason string) {
		if unknown(path) {
			*to = append(*to, Change{Path: path, Reason: "known after apply; " + reason})
			return
		}
		if changed {
			*to = append(*to, Change{Path: path, Reason: reason})
		}
	}
	// Replacements: what names the cluster or places it.
	add(&cs.Replace, "name", desired.Name != old.Name, "the name identifies the cluster's launch template, placement group and nodes")
	add(&cs.Replace, "vpc_id", desired.VPCID != old.VPCID, "the cluster's subnet is chosen in this VPC when it is created")
	setAndChanged := func(want, have string) bool { return want != "" && want != have }
	add(&cs.Replace, "zone_id", setAndChanged(desired.ZoneID, prior.ZoneID), fmt.Sprintf("the cluster is placed in one zone (now %s)", prior.ZoneID))
	add(&cs.Replace, "zone", setAndChanged(desired.Zone, prior.Zone), fmt.Sprintf("the cluster is placed in one zone (now %s)", prior.Zone))
	add(&cs.Replace, "subnet_id", setAndChanged(desired.SubnetID, prior.SubnetID), fmt.Sprintf("every node's interfaces are in one subnet (now %s)", prior.SubnetID))
	add(&cs.Replace, "placement_group_name", setAndChanged(desired.PlacementGroup, prior.PlacementGroup), fmt.Sprintf("the nodes run in one placement group (now %s)", prior.PlacementGroup))

	// What a node is: nodes roll (or scale, for node_count).
	const roll = "changes what a node is: the nodes are rolled"
	add(&cs.Nodes, "instance_type", desired.InstanceType != old.InstanceType, roll)
	add(&cs.Nodes, "node_count", desired.NodeCount != old.NodeCount, fmt.Sprintf("scales in place from %d to %d nodes", old.NodeCount, desired.NodeCount))
	add(&cs.Nodes, "image", desired.Image != old.Image, roll)
	if desired.Known("image") && res.ImageID != "" && res.ImageID != prior.ImageID {
		cs.Nodes = append(cs.Nodes, Change{Path: "image_id", Reason: fmt.Sprintf("%s resolves to %s, the nodes run %s: the nodes are rolled", desired.Image, res.ImageID, orNone(prior.ImageID))})
	}
	efa := desired.EFAInterfaces
	if efa == nil || !desired.Known("efa_interfaces") {
		efa = res.EFAInterfaces
	}
	// Not recorded (a front end that keeps no resolved count): the instance
	// type's change already rolls the nodes.
	add(&cs.Nodes, "efa_interfaces", efa != nil && prior.EFAInterfaces != nil && *efa != *prior.EFAInterfaces, roll)
	add(&cs.Nodes, "security_group_ids", !slices.Equal(desired.SecurityGroupIDs, old.SecurityGroupIDs), roll)
	add(&cs.Nodes, "instance_profile", desired.InstanceProfile != old.InstanceProfile, roll)
	add(&cs.Nodes, "kms_key_arn", desired.KMSKeyARN != old.KMSKeyARN, roll)
	add(&cs.Nodes, "root_volume", desired.RootVolume != old.RootVolume, roll)
	add(&cs.Nodes, "data_volumes", !slices.Equal(desired.DataVolumes, old.DataVolumes), roll)
	add(&cs.Nodes, "user_data", desired.UserData != old.UserData, roll)
	add(&cs.Nodes, "capacity", desired.Capacity != old.Capacity, roll)
	add(&cs.Nodes, "validation", !validationRenderEqual(desired.Validation, old.Validation), "changes the profile and bootstrap the nodes run: the nodes are rolled")
	add(&cs.Nodes, SlurmPath, !reflect.DeepEqual(desired.Slurm, old.Slurm), "changes how the nodes join Slurm: the nodes are rolled")
	add(&cs.Nodes, EKSPath, !reflect.DeepEqual(desired.EKS, old.EKS), "changes how the nodes join EKS (their NodeConfig): the nodes are rolled")
	add(&cs.Nodes, KubePath, !reflect.DeepEqual(desired.Kube, old.Kube), "changes how the nodes join Kubernetes (their kubeadm JoinConfiguration): the nodes are rolled")
	if desired.PlacementGroup == "" && desired.Known("placement_group_name") && res.PlacementGroup != "" && prior.PlacementGroup == "" {
		cs.Nodes = append(cs.Nodes, Change{Path: "placement_group_name", Reason: fmt.Sprintf("the cluster's own placement group %s is gone: the apply creates it again", res.PlacementGroup)})
	}

	// Tags and the metadata hop limit: a new launch template version, the
	// nodes changed in place.
	hopChanged, hopReason := metadataHopLimitChange(old.MetadataHopLimit, desired.MetadataHopLimit, "nodes")
	add(&cs.Template, MetadataHopLimitPath, hopChanged, hopReason)
	add(&cs.Template, "tags", !maps.Equal(desired.Tags, old.Tags), "retags the nodes in place")
	if res.TagsAll == nil {
		cs.Template = append(cs.Template, Change{Path: "tags_all", Reason: "known after apply"})
	} else if !maps.Equal(res.TagsAll, prior.TagsAll) {
		cs.Template = append(cs.Template, Change{Path: "tags_all", Reason: "retags the nodes in place"})
	}
	if prior.LaunchTemplateID == "" {
		cs.Template = append(cs.Template, Change{Path: "launch_template_id", Reason: "the launch template is gone: the apply creates it again"})
	}

	// Settings of later operations only.
	add(&cs.Settings, "zone_fallback", desired.ZoneFallback != old.ZoneFallback, "used by later launches")
	add(&cs.Settings, "rollout", desired.Rollout != old.Rollout, "used by later rollouts")
	add(&cs.Settings, "capacity_retry", desired.CapacityRetry != old.CapacityRetry, "used by later launches")
	if validationRenderEqual(desired.Validation, old.Validation) && !reflect.DeepEqual(desired.Validation, old.Validation) {
		cs.Settings = append(cs.Settings, Change{Path: "validation", Reason: "used by later validations"})
	}
	return cs
}

func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}

// PlanGPUCluster is the plan of spec, the one call of a front end's plan
// step: every plan-time check (planGPUCluster; an SSM image is resolved
// anew, so a new AMI behind the same parameter rolls the nodes) and, over a
// recorded cluster (prior not nil), the change set in plan.Change.
func (e *Env) PlanGPUCluster(ctx context.Context, prior *GPUClusterRecord, spec GPUClusterSpec) (*GPUClusterPlan, error) {
	p, err := e.planGPUCluster(ctx, spec)
	if err != nil || prior == nil {
		return p, err
	}
	cs := gpuClusterChange(*prior, spec, p.Resolved(spec))
	p.Change = &cs
	return p, nil
}

// Resolved is what the plan resolved, as gpuClusterChange takes it.
func (p *GPUClusterPlan) Resolved(spec GPUClusterSpec) GPUClusterResolved {
	r := GPUClusterResolved{ImageID: p.ImageID, PlacementGroup: p.PlacementGroup, TagsAll: p.TagsAll}
	if spec.Known("instance_type") {
		efa := p.EFAInterfaces
		r.EFAInterfaces = &efa
	}
	return r
}
