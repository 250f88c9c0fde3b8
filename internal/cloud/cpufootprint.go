package cloud

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
)

// FootprintGroupAPI is what a CPU footprint needs of EC2 Auto Scaling.
type FootprintGroupAPI interface {
	CreateAutoScalingGroup(context.Context, *autoscaling.CreateAutoScalingGroupInput, ...func(*autoscaling.Options)) (*autoscaling.CreateAutoScalingGroupOutput, error)
	UpdateAutoScalingGroup(context.Context, *autoscaling.UpdateAutoScalingGroupInput, ...func(*autoscaling.Options)) (*autoscaling.UpdateAutoScalingGroupOutput, error)
	DescribeAutoScalingGroups(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	DeleteAutoScalingGroup(context.Context, *autoscaling.DeleteAutoScalingGroupInput, ...func(*autoscaling.Options)) (*autoscaling.DeleteAutoScalingGroupOutput, error)
	PutScheduledUpdateGroupAction(context.Context, *autoscaling.PutScheduledUpdateGroupActionInput, ...func(*autoscaling.Options)) (*autoscaling.PutScheduledUpdateGroupActionOutput, error)
	DescribeScheduledActions(context.Context, *autoscaling.DescribeScheduledActionsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeScheduledActionsOutput, error)
	DeleteScheduledAction(context.Context, *autoscaling.DeleteScheduledActionInput, ...func(*autoscaling.Options)) (*autoscaling.DeleteScheduledActionOutput, error)
	CreateOrUpdateTags(context.Context, *autoscaling.CreateOrUpdateTagsInput, ...func(*autoscaling.Options)) (*autoscaling.CreateOrUpdateTagsOutput, error)
	DeleteTags(context.Context, *autoscaling.DeleteTagsInput, ...func(*autoscaling.Options)) (*autoscaling.DeleteTagsOutput, error)
}

// FootprintGroup is a CPU footprint's Auto Scaling group as declared
// (FootprintGroupSpec) or as found.
type FootprintGroup struct {
	Name                  string
	LaunchTemplateID      string
	LaunchTemplateVersion string
	// InstanceTypes are the types the group launches, preferred first. One
	// type and no spot: the group names the template's type; otherwise a
	// mixed instances policy lists them (cheapest first: lowest-price spot
	// allocation, prioritized On-Demand).
	InstanceTypes []string
	Spot          bool
	OnDemandBase  int32
	Min, Max      int32
	Desired       int32
	SubnetIDs     []string
	Tags          map[string]string // propagated to instances at launch
	// Hook, when set, is given to the group at creation, so that its
	// first instances wait for validation too (see EnsureValidationHook).
	Hook *LifecycleHook

	// Found only.
	ARN       string
	Status    string // non-empty while a delete is in progress
	Instances []FootprintInstance
}

// FootprintInstance is one instance of a group.
type FootprintInstance struct {
	ID             string
	InstanceType   string
	ZoneName       string
	LifecycleState string
	Health         string
}

// ErrGroupExists says a group of that name exists already; the caller
// decides, from its creation token, whether it is its own.
var ErrGroupExists = errors.New("auto scaling group exists")

// CreateFootprintGroup creates the group. Auto Scaling has no client token:
// a lost response is recovered by FindFootprintGroup and the creation token
// the caller tags the group with.
func CreateFootprintGroup(ctx context.Context, api FootprintGroupAPI, g FootprintGroup) error {
	in := &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String(g.Name),
		MinSize:              aws.Int32(g.Min),
		MaxSize:              aws.Int32(g.Max),
		DesiredCapacity:      aws.Int32(g.Desired),
		VPCZoneIdentifier:    aws.String(strings.Join(g.SubnetIDs, ",")),
		Tags:                 groupTags(g.Name, g.Tags),
	}
	if mip := mixedInstances(g); mip != nil {
		in.MixedInstancesPolicy = mip
	} else {
		in.LaunchTemplate = templateSpec(g)
	}
	if g.Hook != nil {
		in.LifecycleHookSpecificationList = []astypes.LifecycleHookSpecification{hookSpec(*g.Hook)}
	}
	_, err := api.CreateAutoScalingGroup(ctx, in)
	if apiErrorCode(err) == "AlreadyExists" {
		return ErrGroupExists
	}
	if err != nil {
		return fmt.Errorf("creating auto scaling group %s: %w", g.Name, err)
	}
	return nil
}

// SetSizes says which of a group's sizes an update sets; the others are
// left to the group (a schedule owns them).
type SetSizes struct{ Min, Max, Desired bool }

// AllSizes sets min, max and desired.
func AllSizes() SetSizes { return SetSizes{Min: true, Max: true, Desired: true} }

// UpdateFootprintGroup sets the group's template, types, subnets and the
// sizes set names.
func UpdateFootprintGroup(ctx context.Context, api FootprintGroupAPI, g FootprintGroup, set SetSizes) error {
	in := &autoscaling.UpdateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String(g.Name),
		VPCZoneIdentifier:    aws.String(strings.Join(g.SubnetIDs, ",")),
	}
	if set.Min {
		in.MinSize = aws.Int32(g.Min)
	}
	if set.Max {
		in.MaxSize = aws.Int32(g.Max)
	}
	if set.Desired {
		in.DesiredCapacity = aws.Int32(g.Desired)
	}
	if mip := mixedInstances(g); mip != nil {
		in.MixedInstancesPolicy = mip
	} else {
		in.LaunchTemplate = templateSpec(g)
	}
	if _, err := api.UpdateAutoScalingGroup(ctx, in); err != nil {
		if isGroupNotFound(err) {
			return ErrNotFound
		}
		return fmt.Errorf("updating auto scaling group %s: %w", g.Name, err)
	}
	return nil
}

// SetFootprintGroupTags makes the group's tags (propagated at launch) tags,
// removing those of old that tags no longer has.
func SetFootprintGroupTags(ctx context.Context, api FootprintGroupAPI, name string, tags, old map[string]string) error {
	if len(tags) > 0 {
		if _, err := api.CreateOrUpdateTags(ctx, &autoscaling.CreateOrUpdateTagsInput{Tags: groupTags(name, tags)}); err != nil {
			return fmt.Errorf("tagging auto scaling group %s: %w", name, err)
		}
	}
	var gone []astypes.Tag
	for _, k := range sortedKeys(old) {
		if _, keep := tags[k]; !keep {
			gone = append(gone, astypes.Tag{Key: aws.String(k), ResourceId: aws.String(name), ResourceType: aws.String("auto-scaling-group")})
		}
	}
	if len(gone) > 0 {
		if _, err := api.DeleteTags(ctx, &autoscaling.DeleteTagsInput{Tags: gone}); err != nil {
			return fmt.Errorf("untagging auto scaling group %s: %w", name, err)
		}
	}
	return nil
}

func templateSpec(g FootprintGroup) *astypes.LaunchTemplateSpecification {
	v := g.LaunchTemplateVersion
	if v == "" {
		v = "$Latest"
	}
	return &astypes.LaunchTemplateSpecification{LaunchTemplateId: aws.String(g.LaunchTemplateID), Version: aws.String(v)}
}

func mixedInstances(g FootprintGroup) *astypes.MixedInstancesPolicy {
	if !g.Spot && len(g.InstanceTypes) <= 1 {
		return nil
	}
	var overrides []astypes.LaunchTemplateOverrides
	for _, t := range g.InstanceTypes {
		overrides = append(overrides, astypes.LaunchTemplateOverrides{InstanceType: aws.String(t)})
	}
	dist := &astypes.InstancesDistribution{
		OnDemandAllocationStrategy:          aws.String("prioritized"),
		OnDemandBaseCapacity:                aws.Int32(g.OnDemandBase),
		OnDemandPercentageAboveBaseCapacity: aws.Int32(100),
	}
	if g.Spot {
		dist.OnDemandPercentageAboveBaseCapacity = aws.Int32(0)
		dist.SpotAllocationStrategy = aws.String("price-capacity-optimized")
	}
	return &astypes.MixedInstancesPolicy{
		LaunchTemplate:        &astypes.LaunchTemplate{LaunchTemplateSpecification: templateSpec(g), Overrides: overrides},
		InstancesDistribution: dist,
	}
}

func groupTags(name string, tags map[string]string) []astypes.Tag {
	var out []astypes.Tag
	for _, k := range sortedKeys(tags) {
		out = append(out, astypes.Tag{
			Key: aws.String(k), Value: aws.String(tags[k]),
			ResourceId: aws.String(name), ResourceType: aws.String("auto-scaling-group"),
			PropagateAtLaunch: aws.Bool(true),
		})
	}
	return out
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func isGroupNotFound(err error) bool {
	if err == nil {
		return false
	}
	c := apiErrorCode(err)
	return c == "ResourceNotFound" || c == "ValidationError" && strings.Contains(err.Error(), "not found")
}

// FindFootprintGroup reads the group; ErrNotFound when it does not exist.
func FindFootprintGroup(ctx context.Context, api FootprintGroupAPI, name string) (*FootprintGroup, error) {
	out, err := api.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
	if err != nil {
		return nil, fmt.Errorf("reading auto scaling group %s: %w", name, err)
	}
	for _, g := range out.AutoScalingGroups {
		if aws.ToString(g.AutoScalingGroupName) == name {
			return footprintGroupFrom(g), nil
		}
	}
	return nil, ErrNotFound
}

func footprintGroupFrom(g astypes.AutoScalingGroup) *FootprintGroup {
	f := &FootprintGroup{
		Name:    aws.ToString(g.AutoScalingGroupName),
		ARN:     aws.ToString(g.AutoScalingGroupARN),
		Status:  aws.ToString(g.Status),
		Min:     aws.ToInt32(g.MinSize),
		Max:     aws.ToInt32(g.MaxSize),
		Desired: aws.ToInt32(g.DesiredCapacity),
		Tags:    map[string]string{},
	}
	if s := aws.ToString(g.VPCZoneIdentifier); s != "" {
		f.SubnetIDs = strings.Split(s, ",")
	}
	lt := g.LaunchTemplate
	if mip := g.MixedInstancesPolicy; mip != nil {
		if mip.LaunchTemplate != nil {
			lt = mip.LaunchTemplate.LaunchTemplateSpecification
			for _, o := range mip.LaunchTemplate.Overrides {
				f.InstanceTypes = append(f.InstanceTypes, aws.ToString(o.InstanceType))
			}
		}
		if d := mip.InstancesDistribution; d != nil {
			f.OnDemandBase = aws.ToInt32(d.OnDemandBaseCapacity)
			f.Spot = d.OnDemandPercentageAboveBaseCapacity != nil && *d.OnDemandPercentageAboveBaseCapacity < 100
		}
	}
	if lt != nil {
		f.LaunchTemplateID = aws.ToString(lt.LaunchTemplateId)
		f.LaunchTemplateVersion = aws.ToString(lt.Version)
	}
	for _, t := range g.Tags {
		f.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	for _, in := range g.Instances {
		f.Instances = append(f.Instances, FootprintInstance{
			ID: aws.ToString(in.InstanceId), InstanceType: aws.ToString(in.InstanceType),
			ZoneName: aws.ToString(in.AvailabilityZone), LifecycleState: string(in.LifecycleState),
			Health: aws.ToString(in.HealthStatus),
		})
	}
	sort.Slice(f.Instances, func(i, j int) bool { return f.Instances[i].ID < f.Instances[j].ID })
	return f
}

// DeleteFootprintGroup deletes the group and terminates its instances.
// A group already gone is not an error.
func DeleteFootprintGroup(ctx context.Context, api FootprintGroupAPI, name string) error {
	_, err := api.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String(name), ForceDelete: aws.Bool(true)})
	if err != nil && !isGroupNotFound(err) {
		return fmt.Errorf("deleting auto scaling group %s: %w", name, err)
	}
	return nil
}

// WaitFootprintGroupGone polls until the group no longer exists, or ctx
// ends. Zero fields of p take DefaultPolling().AutoScaling.
func WaitFootprintGroupGone(ctx context.Context, api FootprintGroupAPI, name string, p Poll) error {
	err := p.Or(DefaultPolling().AutoScaling).Until(ctx, func(ctx context.Context) (bool, error) {
		_, err := FindFootprintGroup(ctx, api, name)
		if errors.Is(err, ErrNotFound) {
			return true, nil
		}
		if err != nil && ctx.Err() != nil {
			return false, ctx.Err()
		}
		return false, nil // there still, or not read this time: look again
	})
	if err != nil {
		return fmt.Errorf("waiting for auto scaling group %s to be deleted: %w", name, err)
	}
	return nil
}

// GroupScheduledAction is one scheduled action of a group.
type GroupScheduledAction struct {
	Name       string
	Recurrence string
	TimeZone   string
	Min, Max   *int32
	Desired    *int32
}

// FindScheduledActions lists the group's scheduled actions, by name.
func FindScheduledActions(ctx context.Context, api FootprintGroupAPI, group string) ([]GroupScheduledAction, error) {
	var out []GroupScheduledAction
	p := autoscaling.NewDescribeScheduledActionsPaginator(api, &autoscaling.DescribeScheduledActionsInput{AutoScalingGroupName: aws.String(group)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading scheduled actions of %s: %w", group, err)
		}
		for _, a := range page.ScheduledUpdateGroupActions {
			out = append(out, GroupScheduledAction{
				Name: aws.ToString(a.ScheduledActionName), Recurrence: aws.ToString(a.Recurrence),
				TimeZone: aws.ToString(a.TimeZone), Min: a.MinSize, Max: a.MaxSize, Desired: a.DesiredCapacity,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SyncScheduledActions makes the group's scheduled actions want: it puts
// every wanted action (a put replaces one of the same name) and deletes the
// others. A group's scheduled actions belong to the footprint that owns the
// group.
func SyncScheduledActions(ctx context.Context, api FootprintGroupAPI, group string, want []GroupScheduledAction) error {
	have, err := FindScheduledActions(ctx, api, group)
	if err != nil {
		return err
	}
	for _, a := range want {
		if i := slices.IndexFunc(have, func(h GroupScheduledAction) bool { return h.Name == a.Name }); i >= 0 && sameAction(have[i], a) {
			continue
		}
		_, err := api.PutScheduledUpdateGroupAction(ctx, &autoscaling.PutScheduledUpdateGroupActionInput{
			AutoScalingGroupName: aws.String(group), ScheduledActionName: aws.String(a.Name),
			Recurrence: aws.String(a.Recurrence), TimeZone: aws.String(a.TimeZone),
			MinSize: a.Min, MaxSize: a.Max, DesiredCapacity: a.Desired,
		})
		if err != nil {
			return fmt.Errorf("scheduling %s on %s: %w", a.Name, group, err)
		}
	}
	for _, h := range have {
		if slices.ContainsFunc(want, func(a GroupScheduledAction) bool { return a.Name == h.Name }) {
			continue
		}
		_, err := api.DeleteScheduledAction(ctx, &autoscaling.DeleteScheduledActionInput{AutoScalingGroupName: aws.String(group), ScheduledActionName: aws.String(h.Name)})
		if err != nil && !isGroupNotFound(err) {
			return fmt.Errorf("removing scheduled action %s of %s: %w", h.Name, group, err)
		}
	}
	return nil
}

func sameAction(a, b GroupScheduledAction) bool {
	eq := func(x, y *int32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Recurrence == b.Recurrence && a.TimeZone == b.TimeZone && eq(a.Min, b.Min) && eq(a.Max, b.Max) && eq(a.Desired, b.Desired)
}
