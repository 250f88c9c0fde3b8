package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// Defaults of a CPU footprint's long operations: Terraform's `timeouts`
// block defaults and Pulumi's deadlines when no custom timeout is set.
const (
	CPUFootprintCreateTimeout = 20 * time.Minute
	// CPUFootprintUpdateTimeout covers an instance refresh that replaces
	// every instance of the group.
	CPUFootprintUpdateTimeout = 60 * time.Minute
	CPUFootprintDeleteTimeout = 30 * time.Minute
)

// CPUFootprintOptions tune the long-running verbs. The zero value is ready.
type CPUFootprintOptions struct {
	// Progress hears what a long operation is doing (front ends log it).
	// How the waits poll (group gone, instance refresh, the validation
	// gate) is the environment's (Env.Polling).
	Progress func(msg string)
}

func (o CPUFootprintOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(format, args...))
	}
}

// CPUFootprint is what exists of a footprint.
type CPUFootprint struct {
	Name string
	// GroupName is the Auto Scaling group's name; "" when the group does
	// not exist (deleted outside, or a create interrupted before it).
	GroupName string
	GroupARN  string
	// LaunchTemplateID is "" when the template does not exist.
	LaunchTemplateID      string
	LaunchTemplateVersion int64 // latest
	// GroupTemplateVersion is the template version the group launches.
	GroupTemplateVersion int64
	CreationToken        string
	InstanceTypes        []string
	Spot                 bool
	OnDemandBase         int
	Size                 GroupSize
	SubnetIDs            []string
	// Tags are the group's tags less the system ones (mlplatform:, aws:).
	Tags             map[string]string
	ScheduledActions []ScheduledAction
	Instances        []CPUInstance
	// Deleting is set while the group's deletion is in progress.
	Deleting bool
	// MetadataHopLimit is what the launch template's latest version gives
	// the instances; 0 when there is no template.
	MetadataHopLimit int
	// Applied is what the create or update that returned this footprint
	// decided and resolved (the type, its cost, subnets, image, tags); nil
	// from Find.
	Applied *CPUFootprintPlan
	// Validation is what the validation gate found per instance, when it
	// ran; ValidationWarning is set when instances failed and on_failure is
	// warn.
	Validation        []NodeVerdict
	ValidationWarning string
	// Drained are the instances in service that hwprobe's health check
	// drained in Slurm since the gate passed them (ReadCPUFootprintHealth);
	// a refresh reports them.
	Drained []HwprobeDrained
}

// CPUInstance is one instance of a footprint's group.
type CPUInstance struct {
	ID             string
	InstanceType   string
	ZoneName       string
	LifecycleState string
	Health         string
}

func cpuFootprintFromCloud(f *cloud.Footprint) *CPUFootprint {
	if f == nil {
		return nil
	}
	out := &CPUFootprint{Name: f.Name, LaunchTemplateID: f.LaunchTemplateID, LaunchTemplateVersion: f.LaunchTemplateVersion,
		GroupTemplateVersion: f.GroupVersion(), CreationToken: f.CreationToken, MetadataHopLimit: int(f.MetadataHopLimit)}
	if g := f.Group; g != nil {
		out.GroupName, out.GroupARN, out.Deleting = g.Name, g.ARN, g.Status != ""
		out.InstanceTypes, out.Spot, out.OnDemandBase = slices.Clone(g.InstanceTypes), g.Spot, int(g.OnDemandBase)
		out.Size = GroupSize{Min: int(g.Min), Max: int(g.Max), Desired: int(g.Desired)}
		out.SubnetIDs = slices.Sorted(slices.Values(g.SubnetIDs))
		out.Tags = map[string]string{}
		for k, v := range g.Tags {
			if !strings.HasPrefix(k, cloud.ReservedTagPrefix) && !strings.HasPrefix(k, "aws:") {
				out.Tags[k] = v
			}
		}
		for _, in := range g.Instances {
			out.Instances = append(out.Instances, CPUInstance(in))
		}
	}
	for _, a := range f.ScheduledActions {
		out.ScheduledActions = append(out.ScheduledActions, ScheduledAction{Name: a.Name, Recurrence: a.Recurrence, TimeZone: a.TimeZone,
			Min: intPtr(a.Min), Max: intPtr(a.Max), Desired: intPtr(a.Desired)})
	}
	return out
}

func intPtr(p *int32) *int {
	if p == nil {
		return nil
	}
	v := int(*p)
	return &v
}

func int32Ptr(p *int) *int32 {
	if p == nil {
		return nil
	}
	v := int32(*p)
	return &v
}

// FindCPUFootprint reads footprint name: its launch template, Auto Scaling
// group and scheduled actions. A footprint of which neither the group nor
// the template exists is ErrNotFound. owner is the creation token the
// caller recorded: a footprint carrying another is a *NotOursError (the one
// the caller made is gone); an empty owner (an import) finds any.
func (e *Env) FindCPUFootprint(ctx context.Context, name, owner string) (*CPUFootprint, error) {
	f, err := cloud.FindFootprint(ctx, e.Clients.EC2, e.Clients.AutoScaling, name)
	if err != nil {
		return nil, err
	}
	if err := checkOwner("CPU footprint", name, owner, f.CreationToken); err != nil {
		return nil, err
	}
	return cpuFootprintFromCloud(f), nil
}

// cpuFootprintParts names what a footprint of that name holds, for a
// refusal.
func cpuFootprintParts(f *CPUFootprint) []string {
	var what []string
	if f.GroupName != "" {
		what = append(what, "Auto Scaling group "+f.GroupName)
	}
	if f.LaunchTemplateID != "" {
		what = append(what, "launch template "+f.LaunchTemplateID)
	}
	return what
}

// CreateCPUFootprint creates the footprint: the type decided (fail closed:
// every check of the plan runs again with every value known), its launch
// template, its Auto Scaling group and the group's scheduled actions. A
// footprint of that name that spec.CreationToken does not own is a
// *NotOursError. Without a token one is made; the template and
// the group (and so every instance) carry it. On error it returns what
// exists with a *PartialError, read with a fresh bounded context, so that
// the caller records it and nothing is orphaned; it returns nil only when
// nothing was written.
func (e *Env) CreateCPUFootprint(ctx context.Context, spec CPUFootprintSpec, o CPUFootprintOptions) (*CPUFootprint, error) {
	f, err := e.FindCPUFootprint(ctx, spec.Name, "")
	switch {
	case err == nil && (spec.CreationToken == "" || f.CreationToken != spec.CreationToken):
		return nil, &NotOursError{Kind: "CPU footprint", Name: spec.Name, Parts: cpuFootprintParts(f)}
	case err != nil && !errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("creating CPU footprint %s: %w", spec.Name, err)
	}
	if spec.CreationToken == "" {
		spec.CreationToken = NewCreationToken()
	}
	return e.convergeCPUFootprint(ctx, nil, spec, o)
}

// UpdateCPUFootprint converges the footprint recorded as prior on spec:
// a new launch template version when the template changes, the group's
// types, capacity, subnets and sizes (with schedules, only when the
// declared sizes changed: the scheduled actions own them otherwise), its tags
// and scheduled actions, a group or template deleted outside made again,
// and, when what an instance is changed, an instance refresh that it waits
// for (min_healthy_percentage kept in service). A footprint carrying
// another creation token is an *OwnershipError. Like
// CreateCPUFootprint it returns what exists alongside any error.
func (e *Env) UpdateCPUFootprint(ctx context.Context, prior CPUFootprintRecord, spec CPUFootprintSpec, o CPUFootprintOptions) (*CPUFootprint, error) {
	spec.CreationToken = prior.CreationToken
	return e.convergeCPUFootprint(ctx, &prior, spec, o)
}

// DeleteCPUFootprint deletes the group (its instances terminated with it)
// and waits until it is gone, then deletes the launch template. owner is the
// creation token the caller recorded (empty when none was): a footprint
// carrying another token belongs to another configuration and is not
// touched. A footprint already gone is not an error.
func (e *Env) DeleteCPUFootprint(ctx context.Context, name, owner string, o CPUFootprintOptions) error {
	f, err := cloud.FindFootprint(ctx, e.Clients.EC2, e.Clients.AutoScaling, name)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting CPU footprint %s: %w", name, err)
	}
	if owner != "" && f.CreationToken != "" && f.CreationToken != owner {
		return &cloud.OwnershipError{Resource: "CPU footprint " + name, Token: f.CreationToken}
	}
	if f.Group != nil {
		o.progress("CPU footprint %s: deleting Auto Scaling group %s and its %d instances", name, f.Group.Name, len(f.Group.Instances))
		// Auto Scaling deletes a group's scheduled actions with it; they are
		// removed first all the same, so that none outlives the group where
		// a service (or an emulator) keeps them.
		if err := cloud.SyncScheduledActions(ctx, e.Clients.AutoScaling, f.Group.Name, nil); err != nil {
			return err
		}
		// Its nodes leave Slurm first, their jobs ending.
		if err := e.deleteSlurmLeaves(ctx, name, f.Group, o); err != nil {
			return err
		}
		// Its lifecycle hooks too (an emulator keeps them).
		if err := cloud.DeleteValidationHook(ctx, e.Clients.AutoScaling, f.Group.Name); err != nil {
			return err
		}
		if err := cloud.DeleteHook(ctx, e.Clients.AutoScaling, f.Group.Name, cloud.SlurmLeaveHookName); err != nil {
			return err
		}
		if err := cloud.DeleteFootprintGroup(ctx, e.Clients.AutoScaling, f.Group.Name); err != nil {
			return err
		}
		if err := cloud.WaitFootprintGroupGone(ctx, e.Clients.AutoScaling, f.Group.Name, e.polling().AutoScaling); err != nil {
			return err
		}
	}
	// The instances are gone: their access entry, when it is ours.
	token := owner
	if token == "" {
		token = f.CreationToken
	}
	if err := e.deleteAccessEntry(ctx, "CPU footprint "+name, f.LaunchTemplateTags[TagEKSAccessEntry], token, o.progress); err != nil {
		return err
	}
	if f.LaunchTemplateID != "" {
		if err := cloud.DeleteFootprintTemplate(ctx, e.Clients.EC2, f.LaunchTemplateID); err != nil {
			return err
		}
	}
	return nil
}

// cpuTracker remembers what a converge wrote, for the record after a
// failure.
type cpuTracker struct {
	wrote bool   // a write call was made (it may land after a failure)
	ltID  string // the launch template, once ensured
	token string // the creation token the writes carry
}

func (e *Env) convergeCPUFootprint(ctx context.Context, prior *CPUFootprintRecord, spec CPUFootprintSpec, o CPUFootprintOptions) (*CPUFootprint, error) {
	spec.Unknown = nil
	// Check again at apply, with every value known: fail closed.
	plan, err := e.planCPUFootprint(ctx, spec)
	if err != nil {
		return nil, err
	}
	if err := plan.Err(e.Policy); err != nil {
		return nil, err
	}
	if !plan.Decided {
		return nil, fmt.Errorf("CPU footprint %s: the instance type could not be decided", spec.Name)
	}
	as := e.Clients.AutoScaling
	tr := &cpuTracker{token: spec.CreationToken}
	cur, err := cloud.FindFootprint(ctx, e.Clients.EC2, as, spec.Name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if cur != nil && cur.CreationToken != "" && cur.CreationToken != spec.CreationToken {
		return nil, &cloud.OwnershipError{Resource: "CPU footprint " + spec.Name, Token: cur.CreationToken}
	}
	tmpl := plan.template
	tmpl.Node.Tags = e.MergeTags(spec.Tags)
	if tag := spec.EKS.recordedEntry(plan.eks); tag != "" {
		tmpl.Node.Tags[TagEKSAccessEntry] = tag
	}
	o.progress("CPU footprint %s: %s (%s)", spec.Name, plan.Decision.InstanceType, plan.Decision.Reason)
	tr.wrote = true
	ref, err := cloud.EnsureFootprintTemplate(ctx, e.Clients.EC2, spec.Name, tmpl, spec.CreationToken)
	if err != nil {
		return e.cpuPartial(ctx, spec.Name, tr, err)
	}
	tr.ltID = ref.ID
	// The instances' access entry before the group launches any; the
	// launch template records it first.
	entryTags := map[string]string{cloud.TagFootprint: spec.Name, cloud.TagCreationToken: spec.CreationToken}
	if err := e.ensureAccessEntry(ctx, "CPU footprint "+spec.Name, spec.EKS, plan.eks, entryTags, spec.CreationToken, o.progress); err != nil {
		return e.cpuPartial(ctx, spec.Name, tr, err)
	}
	tags := e.MergeTags(spec.Tags)
	tags[cloud.TagFootprint] = spec.Name
	tags[cloud.TagCreationToken] = spec.CreationToken
	g := cloud.FootprintGroup{
		Name: CPUFootprintResourceName(spec.Name), LaunchTemplateID: ref.ID, LaunchTemplateVersion: fmt.Sprint(ref.Version),
		InstanceTypes: plan.InstanceTypes, Spot: spec.capacityType() == CapacitySpotMixed, OnDemandBase: int32(spec.OnDemandBase),
		Min: int32(spec.Size.Min), Max: int32(spec.Size.Max), Desired: int32(spec.Size.Desired),
		SubnetIDs: plan.SubnetIDs, Tags: tags,
	}
	if spec.Validation != nil {
		h := FootprintValidationHook(*spec.Validation)
		g.Hook = &h
	}
	if spec.slurmLeaves() {
		if prefix := spec.Validation.ReportsPrefix(spec.Name); len(prefix) <= 256 {
			g.Tags[cloud.TagSlurmMarkers] = prefix
		} else {
			o.progress("CPU footprint %s: its reports prefix is longer than a tag holds (256 characters): a destroy will not wait for its nodes to leave Slurm", spec.Name)
		}
	}
	instanceHash := tmpl.InstanceHash()
	roll := false
	if cur == nil || cur.Group == nil {
		g.Tags[cloud.TagInstanceHash] = instanceHash
		o.progress("CPU footprint %s: creating Auto Scaling group %s (%d/%d/%d)", spec.Name, g.Name, g.Min, g.Max, g.Desired)
		err := cloud.CreateFootprintGroup(ctx, as, g)
		if errors.Is(err, cloud.ErrGroupExists) {
			// A retry of a create whose answer was lost, or another's
			// group made since the lookup: ours only with our token.
			found, ferr := cloud.FindFootprintGroup(ctx, as, g.Name)
			switch {
			case ferr != nil:
				err = fmt.Errorf("reading back auto scaling group %s: %w", g.Name, ferr)
			case found.Tags[cloud.TagCreationToken] != spec.CreationToken:
				return e.cpuPartial(ctx, spec.Name, tr, &cloud.OwnershipError{Resource: "Auto Scaling group " + g.Name, Token: found.Tags[cloud.TagCreationToken]})
			default:
				err = nil
			}
		}
		if err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
		if err := e.syncSlurmLeaveHook(ctx, prior, spec, g.Name, o); err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
	} else {
		// The terminate hook before the sizes: a scale-in this apply
		// makes waits for the nodes to leave Slurm.
		if err := e.syncSlurmLeaveHook(ctx, prior, spec, g.Name, o); err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
		set := cloud.AllSizes()
		if len(spec.Schedules) > 0 && prior != nil && prior.GroupName != "" && prior.Spec.Size == spec.Size {
			// The scheduled actions own the sizes between changes of the
			// declaration: a size a schedule set stays. A declared change
			// sets all three now; the next scheduled action takes over.
			set = cloud.SetSizes{}
		}
		if err := cloud.UpdateFootprintGroup(ctx, as, g, set); err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
		old := cur.Group.Tags
		roll = old[cloud.TagInstanceHash] != instanceHash && len(cur.Group.Instances) > 0
		g.Tags[cloud.TagInstanceHash] = instanceHash
		if roll {
			// Moved on only once the refresh succeeded: an interrupted roll
			// is started again by the next apply.
			g.Tags[cloud.TagInstanceHash] = old[cloud.TagInstanceHash]
		}
		if !maps.Equal(old, g.Tags) {
			if err := cloud.SetFootprintGroupTags(ctx, as, g.Name, g.Tags, old); err != nil {
				return e.cpuPartial(ctx, spec.Name, tr, err)
			}
		}
	}
	if err := e.syncFootprintHook(ctx, prior, spec, g.Name, o); err != nil {
		return e.cpuPartial(ctx, spec.Name, tr, err)
	}
	var want []cloud.GroupScheduledAction
	for _, a := range plan.Decision.ScheduledActions {
		want = append(want, cloud.GroupScheduledAction{Name: a.Name, Recurrence: a.Recurrence, TimeZone: a.TimeZone, Min: int32Ptr(a.Min), Max: int32Ptr(a.Max), Desired: int32Ptr(a.Desired)})
	}
	if err := cloud.SyncScheduledActions(ctx, as, g.Name, want); err != nil {
		return e.cpuPartial(ctx, spec.Name, tr, err)
	}
	if spec.slurmLeaves() && cur != nil && cur.Group != nil {
		if err := e.replaceDrainedInstances(ctx, spec, cur.Group.Instances, o); err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
		// A scale-in (this apply's, or a schedule's) ends once its
		// instances are out of Slurm.
		if err := e.waitSlurmLeaves(ctx, spec.Name, g.Name, spec.Validation.ReportsPrefix(spec.Name), o); err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
	}
	if hop := tmpl.Node.HopLimit(); !roll && cur != nil && cur.Group != nil && len(cur.Group.Instances) > 0 && cur.MetadataHopLimit != hop {
		// The running instances take the template's new hop limit in
		// place; an instance refresh would replace them for nothing.
		ids := make([]string, 0, len(cur.Group.Instances))
		for _, in := range cur.Group.Instances {
			ids = append(ids, in.ID)
		}
		o.progress("CPU footprint %s: setting the metadata hop limit of %d instances to %d", spec.Name, len(ids), hop)
		if err := cloud.SetMetadataHopLimit(ctx, e.Clients.EC2, ids, hop); err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
	}
	if roll {
		o.progress("CPU footprint %s: rolling the instances to launch template version %d (instance refresh, %d%% kept in service)", spec.Name, ref.Version, spec.minHealthy())
		id, err := cloud.StartFootprintRefresh(ctx, as, g.Name, ref.ID, ref.Version, spec.minHealthy(), e.polling().AutoScaling)
		if err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
		var each func(context.Context)
		if spec.slurmLeaves() {
			// The refresh terminates instances through the terminate hook:
			// each is let go once its node left Slurm.
			prefix := spec.Validation.ReportsPrefix(spec.Name)
			each = func(ctx context.Context) {
				if _, _, err := e.slurmLeaveStep(ctx, spec.Name, g.Name, prefix, o); err != nil && ctx.Err() == nil {
					o.progress("CPU footprint %s: letting the refresh's instances go: %v (tried again)", spec.Name, err)
				}
			}
		}
		if err := cloud.WaitFootprintRefreshEach(ctx, as, g.Name, id, e.polling().AutoScaling, each); err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
		if err := cloud.SetFootprintGroupTags(ctx, as, g.Name, map[string]string{cloud.TagInstanceHash: instanceHash}, nil); err != nil {
			return e.cpuPartial(ctx, spec.Name, tr, err)
		}
	}
	// An entry an earlier apply created for another role or cluster: the
	// refresh replaced its instances.
	if cur != nil {
		if old := cur.LaunchTemplateTags[TagEKSAccessEntry]; old != "" && old != tmpl.Node.Tags[TagEKSAccessEntry] {
			if err := e.deleteAccessEntry(ctx, "CPU footprint "+spec.Name, old, spec.CreationToken, o.progress); err != nil {
				return e.cpuPartial(ctx, spec.Name, tr, err)
			}
		}
	}
	f, err := cloud.FindFootprint(ctx, e.Clients.EC2, as, spec.Name)
	if err != nil {
		return e.cpuPartial(ctx, spec.Name, tr, err)
	}
	out := cpuFootprintFromCloud(f)
	out.Applied = plan
	if spec.Validation != nil {
		if err := e.gateCPUFootprint(ctx, spec, plan, out, o); err != nil {
			// The footprint is recorded as it is; a create taints it.
			return out, &PartialError{Err: err}
		}
	}
	return out, nil
}

// cpuPartial returns what exists of the footprint together with cause, as
// a *PartialError, read with a fresh context bounded by RecordTimeout (ctx
// may be the cancelled or expired one that caused the failure). When
// nothing can be read but a write was made, it returns the footprint by
// name, so that the caller records it and a later apply or destroy finds
// what may still land; nil only when nothing was written.
func (e *Env) cpuPartial(ctx context.Context, name string, tr *cpuTracker, cause error) (*CPUFootprint, error) {
	if !tr.wrote {
		return nil, cause
	}
	rctx, cancel := recordContext(ctx, RecordTimeout)
	defer cancel()
	f, err := cloud.FindFootprint(rctx, e.Clients.EC2, e.Clients.AutoScaling, name)
	switch {
	case err == nil:
		out := cpuFootprintFromCloud(f)
		if out.CreationToken == "" {
			out.CreationToken = tr.token
		}
		return out, &PartialError{Err: cause}
	case errors.Is(err, ErrNotFound):
		// A call in flight may still land: recorded by name.
		return &CPUFootprint{Name: name, LaunchTemplateID: tr.ltID, CreationToken: tr.token}, &PartialError{Err: cause}
	default:
		return &CPUFootprint{Name: name, LaunchTemplateID: tr.ltID, CreationToken: tr.token}, &PartialError{Err: fmt.Errorf("%w; reading the footprint back failed too (%v)", cause, err)}
	}
}

// DecideCPUFootprint is what a plan shows for a footprint: its inputs
// checked, then the instance type chosen among those offered in the zones
// residency allows (live offerings; the whole catalog is loaded only when the
// type is to be chosen), and the monthly cost. A spec with unknown inputs
// the decision needs is decided at apply: ok is false, and nothing is
// checked that needs them.
func (e *Env) DecideCPUFootprint(ctx context.Context, s CPUFootprintSpec) (d CPUDecision, ok bool, err error) {
	if ps := ValidateCPUFootprint(s, s.Unknown); len(ps) > 0 {
		return CPUDecision{}, false, &RefusedError{Problems: ps}
	}
	for _, p := range []string{"instance_type", "requirements", "requirements.min_vcpus", "requirements.min_memory_gib",
		"requirements.cpu_features", "requirements.architecture", "requirements.burstable", "requirements.max_hourly_price",
		"min_size", "max_size", "desired_capacity", "schedule"} {
		if !s.known(p) {
			return CPUDecision{}, false, nil
		}
	}
	zones, err := e.AllowedZones(ctx)
	if err != nil {
		return CPUDecision{}, false, fmt.Errorf("deciding CPU footprint (%s): %w", s.Name, err)
	}
	ids := make([]string, 0, len(zones))
	for _, z := range zones {
		ids = append(ids, z.ID)
	}
	cat, err := e.Catalog(ctx)
	if s.InstanceType != "" {
		cat, err = e.CatalogFor(ctx, s.InstanceType)
	}
	if err != nil {
		return CPUDecision{}, false, fmt.Errorf("deciding CPU footprint (%s): %w", s.Name, err)
	}
	d, err = s.Decide(cat, ids)
	if err != nil {
		return CPUDecision{}, false, err
	}
	return d, true, nil
}
