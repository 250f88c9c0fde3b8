package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// CPUFootprintResourceName is the name of a footprint's Auto Scaling group
// and launch template.
func CPUFootprintResourceName(name string) string { return cloud.FootprintResourceName(name) }

// CPUFootprintPlan is what planning a footprint resolved and found wrong.
// Front ends show Problems and Violations and put the resolved values in
// the planned state.
type CPUFootprintPlan struct {
	// Decision is the chosen type and its cost; Decided is false when an
	// input it needs is known only at apply.
	Decision CPUDecision
	Decided  bool
	// InstanceTypes are what the group launches: the chosen type, or under
	// spot the cheapest qualifying types (MaxSpotInstanceTypes).
	InstanceTypes []string
	// SubnetIDs are the declared subnets, or the default subnet of every
	// allowed zone offering the type; nil when not known at plan.
	SubnetIDs []string
	ImageID   string // the resolved AMI; "" when not known at plan
	// Attested is true when the gate requires NitroTPM-attested reports
	// (planAttestation); imageTPM is the image's TpmSupport.
	Attested bool
	imageTPM string
	// TagsAll are tags over the default tags; nil when not known at plan.
	TagsAll map[string]string
	// Change is set when a prior record was given: what applying does.
	Change     *CPUFootprintChangeSet
	Violations []residency.Violation
	Problems   []Problem
	// Profile and Bootstrap are the validation profile (HCL) and the
	// instances' user data around it; "" without validation or while an
	// input is known only at apply.
	Profile, Bootstrap string
	// Approver is the approver configuration (ApproverConfig, JSON) that
	// decides the launches after apply; "" when Profile is.
	Approver string
	// SlurmControllerConfig is what the Slurm controller needs for the
	// instances (orchestrator.slurm); "" without one or while an input is
	// known only at apply.
	SlurmControllerConfig string
	// eks is what the plan read of orchestrator.eks's cluster; nil
	// without one or when its name is not known yet.
	eks *eksPlan
	// kube is what the plan read of orchestrator.kubernetes's cluster (its
	// kubeconfig, in memory only); nil without it.
	kube *kubePlan

	template cloud.FootprintTemplate
}

// Err is nil when the plan may be applied under policy.
func (p *CPUFootprintPlan) Err(policy *residency.Policy) error {
	g := GPUClusterPlan{Problems: p.Problems, Violations: p.Violations}
	return g.Err(policy)
}

// planCPUFootprint runs every plan-time check of a footprint before
// anything is written: the static checks, the type decision among the
// offerings of the zones residency allows, residency (subnets' zones, KMS
// key, image, instance profile, tags), the subnets and the image. Values
// not known yet (spec.Unknown) are checked at apply. An error is returned
// only when the checks themselves could not run.
func (e *Env) planCPUFootprint(ctx context.Context, spec CPUFootprintSpec) (*CPUFootprintPlan, error) {
	p := &CPUFootprintPlan{}
	d, ok, err := e.DecideCPUFootprint(ctx, spec)
	var pe *RefusedError
	switch {
	case errors.As(err, &pe):
		p.Problems = append(p.Problems, pe.Problems...)
	case err != nil:
		return nil, err
	default:
		p.Decision, p.Decided = d, ok
	}
	if ok {
		p.InstanceTypes = []string{d.InstanceType}
		if spec.capacityType() == CapacitySpotMixed && len(d.Candidates) > 1 {
			p.InstanceTypes = slices.Clone(d.Candidates[:min(len(d.Candidates), MaxSpotInstanceTypes)])
		}
	}

	var refs []residency.Ref
	if spec.known("kms_key_arn") {
		refs = append(refs, residency.KeyRef("kms_key_arn", spec.KMSKeyARN))
	}
	if spec.known("image") && spec.Image != "" {
		refs = append(refs, residency.Ref{Path: "image", Kind: residency.KindImage, Value: spec.Image})
	}
	if spec.Validation != nil {
		refs = append(refs, spec.Validation.ResidencyRefs("validation", spec.Known)...)
	}
	if spec.Slurm != nil {
		refs = append(refs, spec.Slurm.residencyRefs(spec.Known)...)
	}
	if spec.Kube != nil {
		refs = append(refs, spec.Kube.residencyRefs(spec.Known)...)
	}
	if strings.HasPrefix(spec.InstanceProfile, "arn:") && spec.known("instance_profile") {
		refs = append(refs, residency.Ref{Path: "instance_profile", Kind: residency.KindARN, Value: spec.InstanceProfile})
	}
	if spec.known("subnet_ids") && len(spec.SubnetIDs) > 0 {
		found, zones, ps, err := e.lookupSubnets(ctx, "subnet_ids", spec.SubnetIDs, func(string) bool { return true },
			"set subnet_ids to subnets of this region, or leave it unset for the default subnet of every allowed zone")
		if err != nil {
			return nil, err
		}
		p.Problems = append(p.Problems, ps...)
		refs = append(refs, zones...)
		for i, sn := range found {
			if sn != nil && ok && !slices.Contains(d.ZoneIDs, sn.ZoneID) && e.Policy.ZoneIDAllowed(sn.ZoneID) {
				p.Problems = append(p.Problems, Problem{Path: fmt.Sprintf("subnet_ids[%d]", i), Summary: "Instance type not offered in the subnet's zone",
					Detail: fmt.Sprintf("%s is in %s, which does not offer %s; allowed zones that do: %s.", spec.SubnetIDs[i], sn.ZoneID, d.InstanceType, strings.Join(d.ZoneIDs, ", "))})
			}
		}
		p.SubnetIDs = slices.Clone(spec.SubnetIDs)
	}
	tagsPath := ""
	checkTags := spec.Tags
	if spec.known("tags") {
		tagsPath = "tags"
		unknown := spec.unknownTagKeys()
		p.Problems = append(p.Problems, TagProblems("tags", e.MergeTags(spec.Tags), unknown, MaxFootprintTags)...)
		if len(unknown) > 0 {
			checkTags = maps.Clone(spec.Tags)
			for _, k := range unknown {
				checkTags[k] = UnknownValue
			}
		}
	}
	vs, err := e.CheckResidency(ctx, refs, checkTags, tagsPath)
	if err != nil {
		return nil, err
	}
	p.Violations = vs
	if spec.EKS != nil {
		ek, ps, evs, err := e.planEKSJoin(ctx, spec.EKS, spec.InstanceProfile, spec.CreationToken, spec.Known)
		if err != nil {
			return nil, err
		}
		p.eks, p.Problems, p.Violations = ek, append(p.Problems, ps...), append(p.Violations, evs...)
	}
	if spec.Kube != nil {
		kp, ps, kvs, err := e.planKube(ctx, spec.Kube, spec.Known, vs)
		if err != nil {
			return nil, err
		}
		p.kube, p.Problems, p.Violations = kp, append(p.Problems, ps...), append(p.Violations, kvs...)
	}

	if ok && spec.known("subnet_ids") && len(spec.SubnetIDs) == 0 {
		var missing []string
		for _, z := range d.ZoneIDs {
			sn, err := cloud.FindSubnetInZone(ctx, e.Clients.EC2, z, "")
			switch {
			case errors.Is(err, cloud.ErrNotFound):
				missing = append(missing, z)
			case err != nil:
				return nil, err
			default:
				p.SubnetIDs = append(p.SubnetIDs, sn.ID)
			}
		}
		slices.Sort(p.SubnetIDs)
		if len(p.SubnetIDs) == 0 {
			p.Problems = append(p.Problems, Problem{Path: "subnet_ids", Summary: "No default subnet",
				Detail: fmt.Sprintf("none of the allowed zones offering %s (%s) has a default subnet: set subnet_ids.", d.InstanceType, strings.Join(missing, ", "))})
		}
	}

	var rootDevice string
	image := spec.Image
	if image == "" && ok {
		image = DefaultFootprintImage(d.Architecture)
	}
	if image != "" && spec.known("image") && !slices.ContainsFunc(p.Problems, func(pr Problem) bool { return pr.Path == "image" }) {
		im, err := cloud.ResolveImage(ctx, e.Clients.EC2, e.Clients.SSM, image)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			p.Problems = append(p.Problems, Problem{Path: "image", Summary: "Image not found", Detail: fmt.Sprintf("%s: %v: use an AMI id of this region (ami-...) or an SSM parameter that holds one.", image, err)})
		case err != nil:
			return nil, err
		default:
			p.ImageID, rootDevice, p.imageTPM = im.ID, im.RootDeviceName, im.TPMSupport
		}
	}
	p.TagsAll = e.PlannedTagsAll(spec.Tags, spec.known("tags") && len(spec.unknownTagKeys()) == 0)
	p.template = cloud.FootprintTemplate{
		Node: cloud.NodeTemplate{
			InstanceType: d.InstanceType, ImageID: p.ImageID, RootDeviceName: rootDevice,
			InstanceProfile: spec.InstanceProfile, KMSKeyID: spec.KMSKeyARN,
			RootVolume: cloud.Volume(spec.RootVolume), DataVolumes: volumesToCloud(spec.DataVolumes),
			UserData: spec.UserData, Tags: e.MergeTags(spec.Tags),
			MetadataHopLimit: int32(DesiredMetadataHopLimit(spec.MetadataHopLimit)),
		},
		SecurityGroupIDs: slices.Sorted(slices.Values(spec.SecurityGroupIDs)),
	}
	if err := e.planFootprintValidation(ctx, spec, p); err != nil {
		return nil, err
	}
	return p, nil
}

// CPUFootprintRecord is a footprint as a front end recorded it (Terraform
// state, Pulumi state) or as a refresh read it back: the declared spec, what
// planning decided and resolved, and what exists.
type CPUFootprintRecord struct {
	Spec     CPUFootprintSpec
	Decision CPUDecision
	// InstanceTypes the group launches (see CPUFootprintPlan).
	InstanceTypes []string
	SubnetIDs     []string // resolved
	ImageID       string
	TagsAll       map[string]string

	// What exists: "" when missing (deleted outside).
	GroupName             string
	LaunchTemplateID      string
	LaunchTemplateVersion int64
	CreationToken         string
}

// CPUFootprintChangeSet is what applying a spec over a recorded footprint
// does.
type CPUFootprintChangeSet struct {
	// Replace: a new footprint (only a new name).
	Replace []Change
	// Roll: what an instance is changes (type, image, volumes, user data,
	// security groups, instance profile, key): a new launch template
	// version, and an instance refresh that replaces the running instances
	// keeping min_healthy_percentage in service.
	Roll []Change
	// InPlace: sizes, capacity, schedules, subnets and tags change on the
	// group; nothing is replaced.
	InPlace []Change
	// Repair: the group or launch template was deleted outside and is made
	// again.
	Repair []Change
}

// Empty reports whether nothing changes.
func (c *CPUFootprintChangeSet) Empty() bool {
	return len(c.Replace)+len(c.Roll)+len(c.InPlace)+len(c.Repair) == 0
}

// cpuFootprintChange compares a recorded footprint with a planned one
// (its spec and plan) and says what changes in place, what rolls the
// instances, and what replaces the footprint. Values not known yet count as
// changed.
func cpuFootprintChange(prior CPUFootprintRecord, spec CPUFootprintSpec, p *CPUFootprintPlan) *CPUFootprintChangeSet {
	c := &CPUFootprintChangeSet{}
	add := func(list *[]Change, path, format string, args ...any) {
		*list = append(*list, Change{Path: path, Reason: fmt.Sprintf(format, args...)})
	}
	o := prior.Spec
	if !spec.known("name") || o.Name != spec.Name {
		add(&c.Replace, "name", "the name names the Auto Scaling group and launch template: a new footprint is made and the old one deleted")
	}
	newType := p.Decision.InstanceType
	switch {
	case !p.Decided:
		add(&c.Roll, "instance_type", "the instance type is decided at apply; a change rolls the instances")
	case newType != prior.Decision.InstanceType:
		add(&c.Roll, "instance_type", "instance type %s -> %s: the instances roll by instance refresh", prior.Decision.InstanceType, newType)
	}
	if !spec.known("image") || (p.ImageID != "" && p.ImageID != prior.ImageID) {
		add(&c.Roll, "image", "the image changes (%s -> %s): the instances roll", prior.ImageID, cmpOr(p.ImageID, UnknownValue))
	}
	for _, f := range []struct {
		path     string
		old, new any
	}{
		{"security_group_ids", slices.Sorted(slices.Values(o.SecurityGroupIDs)), slices.Sorted(slices.Values(spec.SecurityGroupIDs))},
		{"instance_profile", o.InstanceProfile, spec.InstanceProfile},
		{"kms_key_arn", o.KMSKeyARN, spec.KMSKeyARN},
		{"root_volume", o.RootVolume, spec.RootVolume},
		{"data_volumes", fmt.Sprint(o.DataVolumes), fmt.Sprint(spec.DataVolumes)},
		{"user_data", o.UserData, spec.UserData},
	} {
		if !spec.known(f.path) || fmt.Sprint(f.old) != fmt.Sprint(f.new) {
			add(&c.Roll, f.path, "%s changes: the instances roll", f.path)
		}
	}
	if !spec.validationKnown() || !validationRenderEqual(footprintRendered(o), footprintRendered(spec)) {
		add(&c.Roll, "validation", "the profile and bootstrap the instances run change: the instances roll")
	}
	if !slurmKnown(spec.Unknown) || !reflect.DeepEqual(o.Slurm, spec.Slurm) {
		add(&c.Roll, SlurmPath, "how the instances join Slurm changes: the instances roll")
	}
	if !eksKnown(spec.Unknown) || !reflect.DeepEqual(o.EKS, spec.EKS) {
		add(&c.Roll, EKSPath, "how the instances join EKS (their NodeConfig) changes: the instances roll")
	}
	if !eksKnown(spec.Unknown) || !reflect.DeepEqual(o.Kube, spec.Kube) {
		add(&c.Roll, KubePath, "how the instances join Kubernetes (their kubeadm JoinConfiguration) changes: the instances roll")
	}
	if (o.Validation == nil) != (spec.Validation == nil) || o.Validation != nil && spec.Validation != nil &&
		FootprintValidationHook(*o.Validation) != FootprintValidationHook(*spec.Validation) {
		add(&c.InPlace, "validation", "the group's validation lifecycle hook is added, changed or removed in place")
	}
	if spec.capacityType() != o.capacityType() || spec.OnDemandBase != o.OnDemandBase || !slices.Equal(p.InstanceTypes, prior.InstanceTypes) {
		add(&c.InPlace, "capacity_type", "the group's capacity (%s, on-demand base %d, types %s) changes in place", spec.capacityType(), spec.OnDemandBase, strings.Join(p.InstanceTypes, ", "))
	}
	if spec.Size != o.Size {
		add(&c.InPlace, "desired_capacity", "sizes %d/%d/%d -> %d/%d/%d (min/max/desired) change in place", o.Size.Min, o.Size.Max, o.Size.Desired, spec.Size.Min, spec.Size.Max, spec.Size.Desired)
	}
	if !slices.EqualFunc(o.Schedules, spec.Schedules, sameSchedule) {
		add(&c.InPlace, "schedule", "the scheduled actions change in place")
	}
	if p.SubnetIDs == nil || !slices.Equal(slices.Sorted(slices.Values(p.SubnetIDs)), slices.Sorted(slices.Values(prior.SubnetIDs))) {
		add(&c.InPlace, "subnet_ids", "the group's subnets change in place")
	}
	if changed, reason := metadataHopLimitChange(o.MetadataHopLimit, spec.MetadataHopLimit, "instances"); changed || !spec.known(MetadataHopLimitPath) {
		add(&c.InPlace, MetadataHopLimitPath, "%s", cmpOr(reason, "known after apply; the hop limit changes in place"))
	}
	if p.TagsAll == nil || !maps.Equal(p.TagsAll, prior.TagsAll) {
		add(&c.InPlace, "tags", "tags change in place (the group, its launch template, and instances launched from now on)")
	}
	if prior.GroupName == "" {
		add(&c.Repair, "asg_name", "the Auto Scaling group was deleted outside: it is made again")
	}
	if prior.LaunchTemplateID == "" {
		add(&c.Repair, "launch_template_id", "the launch template was deleted outside: it is made again")
	}
	return c
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// PlanCPUFootprint is the plan of spec, the one call of a front end's plan
// step: every plan-time check (planCPUFootprint) and, over a recorded
// footprint (prior not nil), the change from it in plan.Change.
func (e *Env) PlanCPUFootprint(ctx context.Context, prior *CPUFootprintRecord, spec CPUFootprintSpec) (*CPUFootprintPlan, error) {
	p, err := e.planCPUFootprint(ctx, spec)
	if err != nil {
		return nil, err
	}
	if prior != nil {
		p.Change = cpuFootprintChange(*prior, spec, p)
	}
	return p, nil
}

// RecordCPUFootprint is the record of what a create or update left: the
// declared and planned values as given, what exists from found.
func RecordCPUFootprint(found *CPUFootprint, declared CPUFootprintRecord) CPUFootprintRecord {
	r := declared
	if found == nil {
		return r
	}
	if found.CreationToken != "" {
		r.CreationToken = found.CreationToken
	}
	r.GroupName, r.LaunchTemplateID, r.LaunchTemplateVersion = found.GroupName, found.LaunchTemplateID, found.LaunchTemplateVersion
	if p := found.Applied; p != nil {
		r.Decision, r.InstanceTypes = p.Decision, slices.Clone(p.InstanceTypes)
		r.SubnetIDs, r.ImageID = slices.Clone(p.SubnetIDs), p.ImageID
		if p.TagsAll != nil {
			r.TagsAll = maps.Clone(p.TagsAll)
		}
	}
	return r
}

// ReadBackCPUFootprint is a refresh: what exists written into the declared
// shape, so that drift shows in the next plan and its apply repairs it. The
// group's capacity, types, subnets and tags are read back; its sizes too,
// unless the footprint has schedules: then its scheduled actions own them,
// and a size a schedule set is not drift. A schedule whose scheduled
// actions were changed or deleted outside reads as absent (planned back). A
// group or launch template deleted outside reads as "" (made again).
func ReadBackCPUFootprint(found *CPUFootprint, declared CPUFootprintRecord) CPUFootprintRecord {
	r := RecordCPUFootprint(found, declared)
	if found.GroupName == "" {
		return r
	}
	s := &r.Spec
	if len(s.Schedules) == 0 {
		s.Size = found.Size
	}
	if found.Spot {
		s.CapacityType = CapacitySpotMixed
		s.OnDemandBase = found.OnDemandBase
	} else if declared.Spec.CapacityType != "" || found.OnDemandBase != 0 {
		s.CapacityType = CapacityOnDemandOnly
		s.OnDemandBase = 0
	}
	if len(found.InstanceTypes) > 0 {
		r.InstanceTypes = slices.Clone(found.InstanceTypes)
	}
	sorted := func(xs []string) []string { return slices.Sorted(slices.Values(xs)) }
	if !slices.Equal(sorted(found.SubnetIDs), sorted(declared.SubnetIDs)) {
		// The declared order is kept unless the set changed.
		r.SubnetIDs = slices.Clone(found.SubnetIDs)
		if len(declared.Spec.SubnetIDs) > 0 {
			s.SubnetIDs = slices.Clone(found.SubnetIDs)
		}
	}
	if found.Tags != nil {
		r.TagsAll = maps.Clone(found.Tags)
	}
	if h := found.MetadataHopLimit; h != 0 && h != RecordedMetadataHopLimit(declared.Spec.MetadataHopLimit) {
		// The launch template's latest version (one made outside, say)
		// gives the instances another hop limit.
		s.MetadataHopLimit = h
	}
	want, err := ScheduledActions(declared.Spec.Size, declared.Spec.Schedules)
	if err == nil {
		s.Schedules = slices.DeleteFunc(slices.Clone(s.Schedules), func(sc Schedule) bool {
			for _, a := range want {
				if a.Name != sc.Name && a.Name != sc.Name+"-end" {
					continue
				}
				i := slices.IndexFunc(found.ScheduledActions, func(h ScheduledAction) bool { return h.Name == a.Name })
				if i < 0 || !sameScheduledAction(found.ScheduledActions[i], a) {
					return true
				}
			}
			return false
		})
	}
	return r
}

func sameScheduledAction(a, b ScheduledAction) bool {
	eq := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Recurrence == b.Recurrence && a.TimeZone == b.TimeZone && eq(a.Min, b.Min) && eq(a.Max, b.Max) && eq(a.Desired, b.Desired)
}

// sameSchedule compares schedules by value (their sizes are pointers).
func sameSchedule(a, b Schedule) bool {
	eq := func(x, y *int) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Name == b.Name && a.Recurrence == b.Recurrence && a.TimeZone == b.TimeZone && a.Duration == b.Duration &&
		eq(a.Min, b.Min) && eq(a.Max, b.Max) && eq(a.Desired, b.Desired)
}
