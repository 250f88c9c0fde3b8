package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// GPUClusterPlan is what planning a GPU cluster resolved and found wrong.
// Front ends show Problems and Violations, and put the resolved values in
// the planned state.
type GPUClusterPlan struct {
	Zone, ZoneID  string   // the zone the cluster is placed in (first choice)
	FallbackZones []string // further zone ids to try on capacity errors (zone_fallback)
	SubnetID      string   // the subnet in ZoneID, when resolved
	ImageID       string   // the resolved AMI, when Image is known
	// Attested is true when the gate requires NitroTPM-attested reports
	// (planAttestation); imageTPM is the image's TpmSupport.
	Attested      bool
	imageTPM      string
	EFAInterfaces int // per node
	Type          GPUTypeInfo
	Template      cloud.NodeTemplate // complete when every value is known
	// PlacementGroup is the declared group, else the cluster's own; "" when
	// the name is not known yet.
	PlacementGroup string
	// TagsAll are the tags every node carries; nil when not known at plan.
	TagsAll map[string]string
	// Profile and Bootstrap are the hwprobe profile every node is validated
	// against and the user data that runs it (the validation block); ""
	// without one or when an input is not known yet.
	Profile, Bootstrap string
	// SlurmControllerConfig is what the Slurm controller needs for the
	// nodes (orchestrator.slurm); "" without one or when an input is not
	// known yet.
	SlurmControllerConfig string
	// eks is what the plan read of orchestrator.eks's cluster; nil
	// without one or when its name is not known yet.
	eks *eksPlan
	// kube is what the plan read of orchestrator.kubernetes's cluster (its
	// kubeconfig, in memory only); nil without it.
	kube *kubePlan
	// Change is set by PlanGPUCluster: what applying the spec over
	// the recorded cluster does.
	Change     *GPUClusterChangeSet
	Violations []residency.Violation
	Problems   []Problem

	allowedOffered []string // allowed zone ids offering the type
}

// Err is nil when the plan may be applied under policy: no problem that is
// an error, and no violation unless the policy audits.
func (p *GPUClusterPlan) Err(policy *residency.Policy) error {
	var errs []Problem
	for _, pr := range p.Problems {
		if !pr.Warning {
			errs = append(errs, pr)
		}
	}
	if policy.Enforcing() {
		for _, v := range p.Violations {
			errs = append(errs, Problem{Path: v.Path, Summary: "residency violation: " + v.Rule, Detail: v.Msg + ". Fix: " + v.Fix})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &RefusedError{Problems: errs}
}

// GPUClusterOptions tune the long-running verbs. The zero value is ready.
type GPUClusterOptions struct {
	// Progress hears what a long operation is doing (front ends log it).
	Progress func(msg string)
	// Sleep replaces the capacity backoff's timer (tests). How the waits
	// poll is the environment's (Env.Polling).
	Sleep func(ctx context.Context, d time.Duration) error
}

func (o GPUClusterOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// gpuTypes returns the catalog as the cluster's checks see it, loaded for
// the cluster's instance type.
func (e *Env) gpuTypes(ctx context.Context, name string) (GPUTypeCatalog, error) {
	return e.gpuTypesFor(ctx, name)
}

// planGPUCluster runs every plan-time check of a GPU cluster before anything
// is written: the static checks, residency (zone, KMS key, instance profile,
// tags), the instance type (offered in the zone, a GPU type, EFA and cluster
// placement supported), the capacity reservation, the subnet and the image.
// Values not known yet (spec.Unknown) are checked at apply. An error is
// returned only when the checks themselves could not run.
func (e *Env) planGPUCluster(ctx context.Context, spec GPUClusterSpec) (*GPUClusterPlan, error) {
	p := &GPUClusterPlan{Problems: ValidateGPUCluster(spec, spec.Unknown)}
	add := func(path, summary, detail string) {
		p.Problems = append(p.Problems, Problem{Path: path, Summary: summary, Detail: detail})
	}
	region := e.Region()

	zones, err := e.Zones(ctx)
	if err != nil {
		return nil, err
	}
	zoneName := map[string]string{}
	zoneByName := map[string]string{}
	for _, z := range zones {
		zoneName[z.ID], zoneByName[z.Name] = z.Name, z.ID
	}
	allowedZone := func(id string) bool {
		r, err := residency.ParseZoneID(id)
		return err == nil && e.Policy.RegionAllowed(r) && e.Policy.ZoneIDAllowed(id)
	}

	// Residency of what the spec names directly.
	var refs []residency.Ref
	if spec.ZoneID != "" && spec.Known("zone_id") {
		refs = append(refs, residency.Ref{Path: "zone_id", Kind: residency.KindZoneID, Value: spec.ZoneID})
	}
	if spec.Zone != "" && spec.Known("zone") {
		refs = append(refs, residency.Ref{Path: "zone", Kind: residency.KindZone, Value: spec.Zone})
	}
	if spec.Known("kms_key_arn") {
		refs = append(refs, residency.KeyRef("kms_key_arn", spec.KMSKeyARN))
	}
	if spec.Known("image") {
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
	if strings.HasPrefix(spec.InstanceProfile, "arn:") && spec.Known("instance_profile") {
		refs = append(refs, residency.Ref{Path: "instance_profile", Kind: residency.KindARN, Value: spec.InstanceProfile})
	}
	tagsPath := ""
	checkTags := spec.Tags
	if spec.Known("tags") {
		tagsPath = "tags"
		p.Problems = append(p.Problems, TagProblems("tags", e.MergeTags(spec.Tags), spec.unknownTagKeys(), MaxGPUClusterTags)...)
		// A tag whose value is not known yet is present: the required-tag
		// rule sees a placeholder.
		if unknown := spec.unknownTagKeys(); len(unknown) > 0 {
			checkTags = maps.Clone(spec.Tags)
			for _, k := range unknown {
				checkTags[k] = UnknownValue
			}
		}
	}

	// Where the cluster goes: zone_id, zone, the subnet's zone, the
	// reservation's zone, else the first allowed zone offering the type.
	zoneKnown := spec.Known("zone_id") && spec.Known("zone") && spec.Known("subnet_id") && spec.Known("capacity.reservation_id")
	if spec.ZoneID != "" {
		p.ZoneID = spec.ZoneID
		if _, ok := zoneName[spec.ZoneID]; !ok && spec.Known("zone_id") {
			if _, perr := residency.ParseZoneID(spec.ZoneID); perr == nil && e.Policy.RegionAllowed(mustRegion(spec.ZoneID)) {
				add("zone_id", "Unknown zone", fmt.Sprintf("%s is not a zone of %s; zones there: %s.", spec.ZoneID, region, strings.Join(slices.Sorted(maps.Keys(zoneName)), ", ")))
			}
		}
	}
	if spec.Zone != "" && spec.Known("zone") {
		id, ok := zoneByName[spec.Zone]
		switch {
		case !ok:
			if r, perr := residency.ParseZoneName(spec.Zone); perr == nil && e.Policy.RegionAllowed(r) {
				add("zone", "Unknown zone", fmt.Sprintf("%s is not a zone of %s; zones there: %s.", spec.Zone, region, strings.Join(slices.Sorted(maps.Keys(zoneByName)), ", ")))
			}
		case p.ZoneID != "" && p.ZoneID != id:
			add("zone", "zone and zone_id disagree", fmt.Sprintf("zone %s is %s in this account, not %s: set only one of them.", spec.Zone, id, p.ZoneID))
		default:
			p.ZoneID = id
		}
	}
	if spec.SubnetID != "" && spec.Known("subnet_id") {
		sn, err := cloud.FindSubnet(ctx, e.Clients.EC2, spec.SubnetID)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			add("subnet_id", "Subnet not found", fmt.Sprintf("%s does not exist in %s: set subnet_id to a subnet of this region, or leave it unset for the zone's default subnet.", spec.SubnetID, region))
		case err != nil:
			return nil, err
		case p.ZoneID != "" && sn.ZoneID != p.ZoneID:
			add("subnet_id", "Subnet in another zone", fmt.Sprintf("%s is in %s, the cluster in %s: choose a subnet in %s, or leave the zone unset to follow the subnet.", sn.ID, sn.ZoneID, p.ZoneID, p.ZoneID))
		default:
			p.SubnetID = sn.ID
			if p.ZoneID == "" {
				p.ZoneID = sn.ZoneID
				refs = append(refs, residency.Ref{Path: "subnet_id", Kind: residency.KindZoneID, Value: sn.ZoneID})
			}
		}
	}
	if id := spec.Capacity.ReservationID; id != "" && spec.Known("capacity.reservation_id") && reservationIDRE().MatchString(id) {
		r, err := cloud.FindCapacityReservation(ctx, e.Clients.EC2, id)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			add("capacity.reservation_id", "Capacity reservation not found", fmt.Sprintf("%s does not exist in %s (or belongs to another account): check the id.", id, region))
		case err != nil:
			return nil, err
		default:
			p.Problems = append(p.Problems, spec.checkReservation(r, p.ZoneID)...)
			if p.ZoneID == "" && r.ZoneID != "" {
				p.ZoneID = r.ZoneID
				refs = append(refs, residency.Ref{Path: "capacity.reservation_id", Kind: residency.KindZoneID, Value: r.ZoneID})
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
	zoneViolated := false
	for _, v := range vs {
		if !strings.HasPrefix(v.Path, "tags") && v.Path != "kms_key_arn" && v.Path != "instance_profile" {
			zoneViolated = true
		}
	}

	if spec.Known("instance_type") {
		cat, err := e.gpuTypes(ctx, spec.InstanceType)
		if err != nil {
			return nil, err
		}
		offered := cat.OfferedZoneIDs(spec.InstanceType)
		if p.ZoneID == "" && zoneKnown {
			var pr *Problem
			if p.ZoneID, p.SubnetID, pr, err = e.compliantZone(ctx, spec, offered, zoneName, allowedZone); err != nil {
				return nil, err
			}
			if pr != nil {
				p.Problems = append(p.Problems, *pr)
			}
		}
		checkZone := p.ZoneID
		if zoneViolated || !zoneKnown {
			checkZone = ""
		}
		info, efa, ps := spec.checkType(cat, region, checkZone, allowedZone)
		p.Type, p.EFAInterfaces = info, efa
		p.Problems = append(p.Problems, ps...)
		for _, z := range offered {
			if allowedZone(z) {
				p.allowedOffered = append(p.allowedOffered, z)
			}
		}
		if spec.ZoneFallback {
			for _, z := range offered {
				if z != p.ZoneID && allowedZone(z) {
					p.FallbackZones = append(p.FallbackZones, z)
				}
			}
		}
	}
	p.Zone = zoneName[p.ZoneID]

	if p.SubnetID == "" && p.ZoneID != "" && !zoneViolated && zoneKnown && spec.Known("vpc_id") {
		sn, err := cloud.FindSubnetInZone(ctx, e.Clients.EC2, p.ZoneID, spec.VPCID)
		switch {
		case errors.Is(err, cloud.ErrNotFound) && spec.VPCID != "":
			add("vpc_id", "No subnet in zone", fmt.Sprintf("%s has no subnet in %s: create one, or set subnet_id.", spec.VPCID, p.ZoneID))
		case errors.Is(err, cloud.ErrNotFound):
			add(spec.zonePath(), "No default subnet", fmt.Sprintf("%s has no default subnet: set subnet_id, or vpc_id to pick a subnet of that VPC.", p.ZoneID))
		case err != nil:
			return nil, err
		default:
			p.SubnetID = sn.ID
		}
	}

	if spec.Image != "" && spec.Known("image") {
		im, err := cloud.ResolveImage(ctx, e.Clients.EC2, e.Clients.SSM, spec.Image)
		switch {
		case errors.Is(err, cloud.ErrNotFound):
			fix := "use an AMI id of this region (ami-...) or an SSM parameter that holds one"
			add("image", "Image not found", fmt.Sprintf("%s: %v: %s.", spec.Image, err, fix))
		case err != nil:
			return nil, err
		default:
			p.ImageID, p.imageTPM = im.ID, im.TPMSupport
			p.Template.RootDeviceName = im.RootDeviceName
		}
	}

	pg := spec.PlacementGroup
	if pg == "" {
		pg = cloud.GPUClusterResourceName(spec.Name)
	}
	p.Template = cloud.NodeTemplate{
		InstanceType:    spec.InstanceType,
		ImageID:         p.ImageID,
		RootDeviceName:  p.Template.RootDeviceName,
		InstanceProfile: spec.InstanceProfile,
		KMSKeyID:        spec.KMSKeyARN,
		RootVolume:      cloud.Volume(spec.RootVolume),
		DataVolumes:     volumesToCloud(spec.DataVolumes),
		UserData:        spec.UserData,
		Capacity:        cloud.Capacity(spec.Capacity),
		PlacementGroup:  pg,
		Tags:            e.MergeTags(spec.Tags),
		// Validated: 0 (the default) or 1 to MaxMetadataHopLimit.
		MetadataHopLimit: int32(DesiredMetadataHopLimit(spec.MetadataHopLimit)),
	}
	if p.Template.Capacity.Type == "" {
		p.Template.Capacity.Type = cloud.CapacityOnDemand
	}
	if tag := spec.EKS.recordedEntry(p.eks); tag != "" {
		p.Template.Tags = maps.Clone(p.Template.Tags)
		if p.Template.Tags == nil {
			p.Template.Tags = map[string]string{}
		}
		p.Template.Tags[TagEKSAccessEntry] = tag
	}
	if spec.Known("name") && spec.Known("placement_group_name") {
		p.PlacementGroup = pg
	}
	p.TagsAll = e.PlannedTagsAll(spec.Tags, spec.Known("tags") && len(spec.unknownTagKeys()) == 0)
	if err := e.planValidation(ctx, spec, p); err != nil {
		return nil, err
	}
	return p, nil
}

func mustRegion(zoneID string) string {
	r, _ := residency.ParseZoneID(zoneID)
	return r
}

// CapacityExhaustedError is a launch that found no capacity in any zone it
// was allowed to try.
type CapacityExhaustedError struct {
	InstanceType string
	Nodes        int
	Tried        []*cloud.CapacityError
	// Untried are allowed zones offering the type that zone_fallback = false
	// kept out.
	Untried []string
	// PinnedZone is set when the cluster's existing nodes keep it in that
	// zone (a cluster placement group cannot span zones), so no fallback
	// was possible whatever zone_fallback says.
	PinnedZone string
	// Elsewhere are the other allowed zones offering the type (for the
	// pinned case's hint).
	Elsewhere []string
}

func (e *CapacityExhaustedError) Error() string {
	var tried []string
	for _, t := range e.Tried {
		tried = append(tried, fmt.Sprintf("%s (%d attempts: %v)", t.ZoneID, t.Attempts, t.Err))
	}
	s := fmt.Sprintf("no capacity for %d x %s; tried %s", e.Nodes, e.InstanceType, strings.Join(tried, "; "))
	switch {
	case e.PinnedZone != "":
		s += fmt.Sprintf(". The cluster's nodes run in %s and a cluster placement group cannot span zones, so no other zone was tried", e.PinnedZone)
		if len(e.Elsewhere) > 0 {
			s += fmt.Sprintf(" (%s also offer the type)", strings.Join(e.Elsewhere, ", "))
		}
		s += ": retry later, use a capacity reservation or capacity block, or recreate the cluster elsewhere"
	case len(e.Untried) > 0:
		s += fmt.Sprintf(". zone_fallback is false, so no other zone was tried: set zone_fallback = true to also try %s (inside the jurisdiction)", strings.Join(e.Untried, ", "))
	default:
		s += ". No other allowed zone offers the type: retry later, use a capacity reservation or capacity block, or choose another type"
	}
	return s
}

// gpuClusterParts names what a cluster of that name holds, for a refusal.
func gpuClusterParts(c *GPUCluster) []string {
	var what []string
	if c.LaunchTemplateID != "" {
		what = append(what, "launch template "+c.LaunchTemplateID)
	}
	if n := len(c.Nodes); n > 0 {
		what = append(what, fmt.Sprintf("%d nodes", n))
	}
	if c.PlacementGroupOwned && c.PlacementGroupState != "" {
		what = append(what, "placement group "+c.PlacementGroupName)
	}
	return what
}

// CreateGPUCluster creates the cluster: its placement group (unless an
// existing one is named), its launch template, and its nodes, then waits
// until they run. A cluster of that name that spec.CreationToken does not
// own is a *NotOursError: it is never adopted. Without a token one is made;
// every resource of the cluster carries it. On error it returns what exists
// with a *PartialError, so that the caller records it (a partial cluster
// stays in state, never orphaned); the cluster is nil only when nothing was
// created.
func (e *Env) CreateGPUCluster(ctx context.Context, spec GPUClusterSpec, o GPUClusterOptions) (*GPUCluster, error) {
	c, err := cloud.FindGPUCluster(ctx, e.Clients.EC2, spec.Name)
	switch {
	case err == nil && (spec.CreationToken == "" || c.CreationToken != spec.CreationToken):
		return nil, &NotOursError{Kind: "GPU cluster", Name: spec.Name, Parts: gpuClusterParts(gpuClusterFromCloud(c))}
	case errors.Is(err, cloud.ErrNotFound):
		c = nil
	case err != nil:
		return nil, err
	}
	if spec.CreationToken == "" {
		spec.CreationToken = NewCreationToken()
	}
	// c is ours (a retry after a partial create) or nil: the converge
	// starts from it instead of finding it again.
	c, plan, err := e.convergeGPUCluster(ctx, spec, o, c)
	if err != nil {
		return gpuClusterFromCloud(c), err
	}
	return e.gateAfterConverge(ctx, spec, plan, c, o)
}

// UpdateGPUCluster converges an existing cluster on spec: scale in (highest
// indices first), scale out or repair lost nodes, roll nodes whose launch
// configuration changed (Rollout), recreate a deleted launch template or
// placement group, and retag. Like CreateGPUCluster it returns what exists
// alongside any error.
func (e *Env) UpdateGPUCluster(ctx context.Context, spec GPUClusterSpec, o GPUClusterOptions) (*GPUCluster, error) {
	cur, err := cloud.FindGPUCluster(ctx, e.Clients.EC2, spec.Name)
	switch {
	case errors.Is(err, cloud.ErrNotFound):
		cur = nil // deleted outside: the converge makes it again
	case err != nil:
		return nil, err
	}
	c, plan, err := e.convergeGPUCluster(ctx, spec, o, cur)
	if err != nil {
		return gpuClusterFromCloud(c), err
	}
	return e.gateAfterConverge(ctx, spec, plan, c, o)
}

// FindGPUCluster reads cluster name (three EC2 calls up to 1000 nodes).
// A cluster that does not exist is ErrNotFound. owner is the creation token
// the caller recorded: a cluster carrying another is a *NotOursError (the
// one the caller made is gone); an empty owner (an import) finds any.
func (e *Env) FindGPUCluster(ctx context.Context, name, owner string) (*GPUCluster, error) {
	c, err := cloud.FindGPUCluster(ctx, e.Clients.EC2, name)
	if err != nil {
		return gpuClusterFromCloud(c), err
	}
	if err := checkOwner("GPU cluster", name, owner, c.CreationToken); err != nil {
		return nil, err
	}
	return gpuClusterFromCloud(c), nil
}

// findGPUClusterTemplate reads back the node template of a cluster's latest
// launch template version, for import.
func (e *Env) findGPUClusterTemplate(ctx context.Context, c *GPUCluster) (cloud.NodeTemplate, error) {
	if c.LaunchTemplateID == "" {
		return cloud.NodeTemplate{}, cloud.ErrNotFound
	}
	return cloud.FindGPUClusterTemplate(ctx, e.Clients.EC2, c.LaunchTemplateID, c.LaunchTemplateVersion)
}

// DeleteGPUCluster terminates every node, found by tag whatever state
// recorded, and waits until they are gone, then deletes the placement group
// it owns and the launch template. recorded is the cluster as the caller's
// state records it: its Name, and its CreationToken, the owner (empty when
// none was recorded): a cluster carrying another token belongs to another
// configuration and is not touched. With recorded.Slurm and reports
// (recorded.Validation), the nodes leave Slurm first, as a scale-in's do:
// each is drained and its jobs end before its instance is terminated,
// within ctx (a *SlurmLeaveTimeoutError names the nodes that held it).
func (e *Env) DeleteGPUCluster(ctx context.Context, recorded GPUClusterSpec, o GPUClusterOptions) error {
	name, owner := recorded.Name, recorded.CreationToken
	o.progress("deleting GPU cluster %s", name)
	w := cloud.NodeWaitOptions{Poll: e.polling().Nodes}
	w.Progress = func(ready, total int, _ []string) {
		o.progress("GPU cluster %s: %d of %d nodes terminated", name, ready, total)
	}
	return cloud.DeleteGPUCluster(ctx, e.Clients.EC2, name, owner, w, cloud.DeleteGPUClusterHooks{
		BeforeTerminate: func(ctx context.Context, _ *cloud.GPUCluster, nodes []cloud.GPUNode) error {
			return e.slurmLeave(ctx, recorded, nodes, o)
		},
		AfterNodes: func(ctx context.Context, c *cloud.GPUCluster) error {
			token := owner
			if token == "" {
				token = c.CreationToken
			}
			return e.deleteAccessEntry(ctx, "GPU cluster "+name, c.LaunchTemplateTags[TagEKSAccessEntry], token, o.progress)
		},
	})
}

// tracker remembers what a converge created, for the record after a
// failure: RunInstances' answer is kept even when nothing can be read back.
type tracker struct {
	pgReady  bool            // the placement group exists (or is not owned)
	ltID     string          // the launch template, once ensured
	hash     string          // the node hash of the declared template
	launched []cloud.GPUNode // every node RunInstances returned
	inFlight []int           // the indices of a launch that ended without a definite answer
}

// convergeGPUCluster brings cluster cur (nil when none exists) to spec,
// after planning it again with every value known (fail closed).
func (e *Env) convergeGPUCluster(ctx context.Context, spec GPUClusterSpec, o GPUClusterOptions, cur *cloud.GPUCluster) (*cloud.GPUCluster, *GPUClusterPlan, error) {
	spec.Unknown = nil
	// Check again at apply, with every value known: fail closed.
	plan, err := e.planGPUCluster(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	if err := plan.Err(e.Policy); err != nil {
		return nil, nil, err
	}
	api := e.Clients.EC2
	owned := spec.PlacementGroup == ""
	tmpl := plan.Template
	tr := &tracker{pgReady: !owned}
	var oldTags map[string]string
	if c := cur; c != nil {
		if spec.CreationToken != "" && c.CreationToken != "" && c.CreationToken != spec.CreationToken {
			return nil, nil, &cloud.OwnershipError{Resource: "GPU cluster " + spec.Name, Token: c.CreationToken}
		}
		oldTags = c.LaunchTemplateTags
		if c.LaunchTemplateID == "" {
			// The template was deleted outside: retag what it tagged.
			oldTags = map[string]string{}
		}
	}
	if owned {
		pgTags := map[string]string{cloud.TagCluster: spec.Name}
		if spec.CreationToken != "" {
			pgTags[cloud.TagCreationToken] = spec.CreationToken
		}
		if err := cloud.EnsurePlacementGroup(ctx, api, tmpl.PlacementGroup, pgTags); err != nil {
			c, err := e.partial(ctx, spec, tr, err)
			return c, plan, err
		}
		tr.pgReady = true
	}
	ref, err := cloud.EnsureLaunchTemplate(ctx, api, spec.Name, tmpl, owned, spec.CreationToken)
	if err != nil {
		c, err := e.partial(ctx, spec, tr, err)
		return c, plan, err
	}
	tr.ltID = ref.ID
	// The nodes' access entry before the nodes; the launch template
	// records it first, so that a destroy finds it whatever happens next.
	entryTags := map[string]string{cloud.TagCluster: spec.Name, cloud.TagCreationToken: spec.CreationToken}
	if err := e.ensureAccessEntry(ctx, "GPU cluster "+spec.Name, spec.EKS, plan.eks, entryTags, spec.CreationToken, o.progress); err != nil {
		c, err := e.partial(ctx, spec, tr, err)
		return c, plan, err
	}
	if err := e.reconcileNodes(ctx, spec, plan, ref, o, tr); err != nil {
		c, err := e.partial(ctx, spec, tr, err)
		return c, plan, err
	}
	c, err := cloud.FindGPUCluster(ctx, api, spec.Name)
	if err != nil {
		c, err := e.partial(ctx, spec, tr, err)
		return c, plan, err
	}
	if oldTags != nil {
		if err := retagNodes(ctx, api, c, tmpl.Tags, oldTags, spec.CreationToken); err != nil {
			c, err := e.partial(ctx, spec, tr, err)
			return c, plan, err
		}
	}
	if err := setNodesHopLimit(ctx, api, c.Nodes, tmpl.HopLimit()); err != nil {
		c, err := e.partial(ctx, spec, tr, err)
		return c, plan, err
	}
	// An entry an earlier apply created for another role or cluster (the
	// instance profile or orchestrator.eks changed): its nodes are gone.
	if cur != nil {
		if old := cur.LaunchTemplateTags[TagEKSAccessEntry]; old != "" && old != tmpl.Tags[TagEKSAccessEntry] {
			if err := e.deleteAccessEntry(ctx, "GPU cluster "+spec.Name, old, spec.CreationToken, o.progress); err != nil {
				c, err := e.partial(ctx, spec, tr, err)
				return c, plan, err
			}
		}
	}
	return c, plan, nil
}

// setNodesHopLimit gives the running nodes whose metadata hop limit differs
// (launched before it changed, or changed outside) the template's, in
// place, and notes it on nodes.
func setNodesHopLimit(ctx context.Context, api cloud.SetMetadataHopLimitAPI, nodes []cloud.GPUNode, limit int32) error {
	var ids []string
	for _, n := range nodes {
		if n.Live() && n.MetadataHopLimit != limit {
			ids = append(ids, n.InstanceID)
		}
	}
	if err := cloud.SetMetadataHopLimit(ctx, api, ids, limit); err != nil {
		return err
	}
	for i := range nodes {
		if nodes[i].Live() {
			nodes[i].MetadataHopLimit = limit
		}
	}
	return nil
}

// partial returns what exists of the cluster together with cause, as a
// *PartialError. It reads with a fresh context bounded by RecordTimeout,
// since ctx may be the cancelled or expired one that caused the failure.
// When nothing can be read, it returns what the calls made so far returned
// (the launch template, the nodes RunInstances answered with). It returns a
// nil cluster only when nothing exists.
func (e *Env) partial(ctx context.Context, spec GPUClusterSpec, tr *tracker, cause error) (*cloud.GPUCluster, error) {
	rctx, cancel := recordContext(ctx, RecordTimeout)
	defer cancel()
	api := e.Clients.EC2
	c, err := cloud.FindGPUCluster(rctx, api, spec.Name)
	// A launch whose answer was lost may still be under way at EC2, or its
	// nodes may take a moment to list: read again, a bounded number of
	// times, while any of its indices is missing.
	w := landingRecheckNodes().Start()
	for i := 0; len(tr.inFlight) > 0 && i < 3 && (errors.Is(err, cloud.ErrNotFound) || (err == nil && !listsIndices(c, tr.inFlight))); i++ {
		if w.Next(rctx) != nil {
			break
		}
		c, err = cloud.FindGPUCluster(rctx, api, spec.Name)
	}
	switch {
	case err == nil:
		for _, n := range tr.launched {
			if n.Live() && !slices.ContainsFunc(c.Nodes, func(m cloud.GPUNode) bool { return m.InstanceID == n.InstanceID }) {
				c.Nodes = append(c.Nodes, n) // not listed yet
			}
		}
	case errors.Is(err, cloud.ErrNotFound) && tr.ltID == "" && len(tr.launched) == 0:
		return nil, cause
	default:
		c = &cloud.GPUCluster{Name: spec.Name, LaunchTemplateID: tr.ltID, CreationToken: spec.CreationToken}
		for _, n := range tr.launched {
			if n.Live() {
				c.Nodes = append(c.Nodes, n)
			}
		}
		if spec.PlacementGroup == "" && tr.pgReady {
			c.PlacementGroupName, c.PlacementGroupOwned, c.PlacementGroupState = cloud.GPUClusterResourceName(spec.Name), true, "available"
		}
		cause = fmt.Errorf("%w; reading the cluster back failed too (%v): recorded the %d nodes the launch returned", cause, err, len(c.Nodes))
	}
	return c, &PartialError{Err: cause, Complete: complete(c, spec, tr)}
}

// listsIndices reports whether c lists a live node for every index.
func listsIndices(c *cloud.GPUCluster, indices []int) bool {
	for _, i := range indices {
		if !slices.ContainsFunc(c.Nodes, func(n cloud.GPUNode) bool { return n.Index == i && n.Live() }) {
			return false
		}
	}
	return true
}

// complete reports whether c is the whole declared cluster: template and
// placement group in place, node_count nodes with indices 0..n-1, each
// running or starting from the declared node template.
func complete(c *cloud.GPUCluster, spec GPUClusterSpec, tr *tracker) bool {
	if c.LaunchTemplateID == "" || tr.hash == "" || len(c.Nodes) != spec.NodeCount {
		return false
	}
	if spec.PlacementGroup == "" && c.PlacementGroupState == "" && !tr.pgReady {
		return false
	}
	seen := map[int]bool{}
	for _, n := range c.Nodes {
		if (n.State != "running" && n.State != "pending") || n.Index < 0 || n.Index >= spec.NodeCount || seen[n.Index] || n.SpecHash != tr.hash {
			return false
		}
		seen[n.Index] = true
	}
	return true
}

// retagNodes gives the nodes and their volumes the template's tags (and the
// owner's creation token), and removes the user tags the template no longer
// has. Only nodes whose tags differ are tagged: a node retagged or untagged
// outside is repaired, a node in step costs no call.
func retagNodes(ctx context.Context, api cloud.TagGPUClusterAPI, c *cloud.GPUCluster, tags, oldTags map[string]string, owner string) error {
	want := maps.Clone(tags)
	if want == nil {
		want = map[string]string{}
	}
	if owner != "" {
		want[cloud.TagCreationToken] = owner
	}
	system := func(k string) bool {
		return strings.HasPrefix(k, cloud.ReservedTagPrefix) || strings.HasPrefix(k, "aws:")
	}
	var ids []string
	removeSet := map[string]bool{}
	for _, n := range c.Nodes {
		stale := false
		for k, v := range want {
			if n.Tags[k] != v {
				stale = true
			}
		}
		for k := range n.Tags {
			_, keep := want[k]
			if _, had := oldTags[k]; had && !keep && !system(k) {
				stale, removeSet[k] = true, true
			}
		}
		if stale || n.Tags == nil {
			ids = append(ids, n.InstanceID)
			ids = append(ids, n.VolumeIDs...)
		}
	}
	for k := range oldTags {
		if _, keep := want[k]; !keep && !system(k) {
			removeSet[k] = true
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return cloud.TagGPUCluster(ctx, api, ids, want, slices.Sorted(maps.Keys(removeSet)))
}

// reconcileNodes brings the nodes in line with the plan: remove, launch,
// roll.
func (e *Env) reconcileNodes(ctx context.Context, spec GPUClusterSpec, plan *GPUClusterPlan, ref cloud.LaunchTemplateRef, o GPUClusterOptions, tr *tracker) error {
	api := e.Clients.EC2
	hash := cloud.NodeHash(plan.Template, spec.SecurityGroupIDs, plan.EFAInterfaces)
	tr.hash = hash
	live, _, err := cloud.FindGPUNodes(ctx, api, spec.Name)
	if err != nil {
		return err
	}
	if replacesDrained(spec) {
		// Nodes hwprobe's health check drained in Slurm since they were
		// validated: replaced (they leave Slurm first, their jobs end),
		// as on_failure = "replace" says.
		drained, err := e.slurmDrained(ctx, spec, live)
		if err != nil {
			return err
		}
		if len(drained) > 0 {
			var nodes []cloud.GPUNode
			var idx []int
			for _, d := range drained {
				idx = append(idx, d.Index)
				if i := slices.IndexFunc(live, func(n cloud.GPUNode) bool { return n.InstanceID == d.InstanceID }); i >= 0 {
					nodes = append(nodes, live[i])
				}
			}
			o.progress("GPU cluster %s: nodes %s were drained in Slurm by hwprobe's health check (%s): replacing them", spec.Name, cloud.FormatIndices(idx), drained[0].Reason)
			if err := e.terminate(ctx, spec, nodes, o); err != nil {
				return err
			}
			if live, _, err = cloud.FindGPUNodes(ctx, api, spec.Name); err != nil {
				return err
			}
		}
	}
	np := PlanNodes(live, spec.NodeCount, hash, spec.InstanceType, spec.Rollout)
	o.progress("GPU cluster %s: %d nodes to keep, %d to launch, %d to remove, %d batches to roll", spec.Name, len(np.Keep), len(np.Launch), len(np.Remove), len(np.Roll))

	if err := e.terminate(ctx, spec, np.Remove, o); err != nil {
		return err
	}
	// The cluster stays in the zone of the nodes it keeps (one cluster
	// placement group cannot span zones); a cluster without nodes may fall
	// back to other zones.
	target := launchTarget{zoneID: plan.ZoneID, subnetID: plan.SubnetID, fallback: plan.FallbackZones}
	if existing := append(slices.Clone(np.Keep), flatten(np.Roll)...); len(existing) > 0 {
		target.fallback = nil
		if n := existing[0]; n.ZoneID != "" && n.ZoneID != plan.ZoneID {
			target = launchTarget{zoneID: n.ZoneID, subnetID: n.SubnetID}
		}
		target.pinned = true
	}
	launchCtx := launchContext{spec: spec, plan: plan, ref: ref, hash: hash, o: o, tr: tr}
	if len(np.Launch) > 0 {
		ref, err = e.launch(ctx, &launchCtx, &target, np.Launch)
		if err != nil {
			return err
		}
		launchCtx.ref = ref
	}
	for i, step := range RollSteps(np, spec.Rollout) {
		o.progress("GPU cluster %s: rolling batch %d of %d (nodes %s, %s)", spec.Name, i+1, len(np.Roll), cloud.FormatIndices(step.Launch), strategyName(step.LaunchFirst))
		if !step.LaunchFirst {
			if err := e.terminate(ctx, spec, step.Terminate, o); err != nil {
				return err
			}
		}
		target.fallback, target.pinned = nil, true
		if launchCtx.ref, err = e.launch(ctx, &launchCtx, &target, step.Launch); err != nil {
			return err
		}
		if step.LaunchFirst {
			if err := e.terminate(ctx, spec, step.Terminate, o); err != nil {
				return err
			}
		}
	}
	return nil
}

func strategyName(launchFirst bool) string {
	if launchFirst {
		return RolloutLaunchFirst
	}
	return RolloutTerminateFirst
}

func flatten(bs [][]cloud.GPUNode) []cloud.GPUNode {
	var out []cloud.GPUNode
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

type launchTarget struct {
	zoneID, subnetID string
	fallback         []string
	pinned           bool // existing nodes keep the cluster in zoneID
}

type launchContext struct {
	spec GPUClusterSpec
	plan *GPUClusterPlan
	ref  cloud.LaunchTemplateRef
	hash string
	o    GPUClusterOptions
	tr   *tracker
}

// terminate terminates nodes and waits until they are gone; with Slurm,
// once they have left it (slurmLeave).
func (e *Env) terminate(ctx context.Context, spec GPUClusterSpec, nodes []cloud.GPUNode, o GPUClusterOptions) error {
	if len(nodes) == 0 {
		return nil
	}
	name := spec.Name
	if err := e.slurmLeave(ctx, spec, nodes, o); err != nil {
		return err
	}
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		ids = append(ids, n.InstanceID)
	}
	o.progress("GPU cluster %s: terminating %d nodes", name, len(ids))
	if err := cloud.TerminateGPUNodes(ctx, e.Clients.EC2, ids); err != nil {
		return err
	}
	w := cloud.NodeWaitOptions{Poll: e.polling().Nodes}
	w.Progress = func(ready, total int, _ []string) {
		o.progress("GPU cluster %s: %d of %d nodes terminated", name, ready, total)
	}
	return cloud.WaitGPUNodesTerminated(ctx, e.Clients.EC2, ids, w)
}

// launch launches indices in the target zone, falling back to the target's
// other zones on capacity errors, and waits until the nodes run. It moves
// target to the zone that had capacity and returns the template reference
// with its launch sequence moved on.
func (e *Env) launch(ctx context.Context, lc *launchContext, target *launchTarget, indices []int) (cloud.LaunchTemplateRef, error) {
	spec, o := lc.spec, lc.o
	api := e.Clients.EC2
	zones := append([]string{target.zoneID}, target.fallback...)
	exhausted := &CapacityExhaustedError{InstanceType: spec.InstanceType, Nodes: len(indices)}
	switch {
	case target.pinned:
		exhausted.PinnedZone, exhausted.Elsewhere = target.zoneID, lc.offeredElsewhere(target.zoneID)
	case !spec.ZoneFallback:
		exhausted.Untried = lc.offeredElsewhere(target.zoneID)
	}
	ref := lc.ref
	for i, zoneID := range zones {
		subnetID := target.subnetID
		if i > 0 || subnetID == "" {
			sn, err := cloud.FindSubnetInZone(ctx, api, zoneID, spec.VPCID)
			if err != nil {
				return ref, fmt.Errorf("finding a subnet in %s: %w", zoneID, err)
			}
			subnetID = sn.ID
		}
		o.progress("GPU cluster %s: launching %d x %s in %s (nodes %s)", spec.Name, len(indices), spec.InstanceType, zoneID, cloud.FormatIndices(indices))
		b := cloud.Backoff{Attempts: cmp.Or(spec.CapacityRetry.Attempts, DefaultCapacityRetryAttempts), Initial: cmp.Or(spec.CapacityRetry.InitialDelay, DefaultCapacityRetryDelay), Sleep: o.Sleep,
			OnRetry: func(attempt int, wait time.Duration, err error) {
				o.progress("GPU cluster %s: no capacity in %s (attempt %d): retrying in %s", spec.Name, zoneID, attempt, wait)
			}}
		nodes, seq, err := cloud.LaunchGPUNodes(ctx, api, cloud.Launch{
			Cluster: spec.Name, Template: ref, Indices: indices, SubnetID: subnetID, ZoneID: zoneID,
			SecurityGroupIDs: spec.SecurityGroupIDs, EFAInterfaces: lc.plan.EFAInterfaces, SpecHash: lc.hash, Tags: lc.plan.Template.Tags,
			CreationToken: spec.CreationToken, MetadataHopLimit: lc.plan.Template.HopLimit(),
		}, b)
		ref.Seq = seq
		lc.tr.launched = append(lc.tr.launched, nodes...)
		var ce *cloud.CapacityError
		capacity := errors.As(err, &ce)
		lc.tr.inFlight = nil
		if err != nil && len(nodes) == 0 && !capacity {
			lc.tr.inFlight = indices
		}
		if capacity && len(nodes) == 0 {
			exhausted.Tried = append(exhausted.Tried, ce)
			continue
		}
		if err != nil {
			return ref, err
		}
		*target = launchTarget{zoneID: zoneID, subnetID: subnetID, pinned: true}
		ids := make([]string, 0, len(nodes))
		for _, n := range nodes {
			ids = append(ids, n.InstanceID)
		}
		w := cloud.NodeWaitOptions{Poll: e.polling().Nodes}
		w.Progress = func(ready, total int, _ []string) {
			o.progress("GPU cluster %s: %d of %d new nodes running", spec.Name, ready, total)
		}
		if _, err := cloud.WaitGPUNodesRunning(ctx, api, ids, w); err != nil {
			return ref, err
		}
		return ref, nil
	}
	return ref, exhausted
}

// offeredElsewhere lists the allowed zones other than zoneID offering the
// type, for the hint to turn zone_fallback on.
func (lc *launchContext) offeredElsewhere(zoneID string) []string {
	var out []string
	for _, z := range lc.plan.allowedOffered {
		if z != zoneID {
			out = append(out, z)
		}
	}
	return out
}
