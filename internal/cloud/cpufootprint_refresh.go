package cloud

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
)

// FootprintRefreshAPI is what an instance refresh needs of EC2 Auto Scaling.
type FootprintRefreshAPI interface {
	StartInstanceRefresh(context.Context, *autoscaling.StartInstanceRefreshInput, ...func(*autoscaling.Options)) (*autoscaling.StartInstanceRefreshOutput, error)
	DescribeInstanceRefreshes(context.Context, *autoscaling.DescribeInstanceRefreshesInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeInstanceRefreshesOutput, error)
}

// ErrRefreshFailed is a refresh that ended Failed, Cancelled or
// RollbackSuccessful.
var ErrRefreshFailed = errors.New("instance refresh did not complete")

// Refresh is a group's instance refresh.
type Refresh struct {
	ID     string
	Status string // Pending, InProgress, Successful, Failed, Cancelling, Cancelled, ...
	Reason string
}

func (r Refresh) active() bool {
	switch r.Status {
	case "Pending", "InProgress", "Cancelling", "RollbackInProgress", "Baking":
		return true
	}
	return false
}

// StartFootprintRefresh replaces the group's instances that do not match
// launch template version (SkipMatching), keeping minHealthy percent of
// the group in service. A refresh of the group already running (an earlier
// apply interrupted, or this call retried after a lost answer) is waited
// for first, so that at most one runs; since it may have started before the
// group's template changed, a new one follows it, and skips every instance
// already matching.
func StartFootprintRefresh(ctx context.Context, api FootprintRefreshAPI, group, launchTemplateID string, version int64, minHealthy int32, p Poll) (string, error) {
	in := &autoscaling.StartInstanceRefreshInput{
		AutoScalingGroupName: aws.String(group),
		Strategy:             astypes.RefreshStrategyRolling,
		DesiredConfiguration: &astypes.DesiredConfiguration{LaunchTemplate: &astypes.LaunchTemplateSpecification{
			LaunchTemplateId: aws.String(launchTemplateID), Version: aws.String(strconv.FormatInt(version, 10)),
		}},
		Preferences: &astypes.RefreshPreferences{MinHealthyPercentage: aws.Int32(minHealthy), SkipMatching: aws.Bool(true)},
	}
	for attempt := 0; ; attempt++ {
		out, err := api.StartInstanceRefresh(ctx, in)
		if err == nil {
			return aws.ToString(out.InstanceRefreshId), nil
		}
		if apiErrorCode(err) != "InstanceRefreshInProgress" || attempt > 0 {
			if isGroupNotFound(err) {
				return "", ErrNotFound
			}
			return "", fmt.Errorf("starting instance refresh of %s: %w", group, err)
		}
		cur, ferr := FindActiveRefresh(ctx, api, group)
		if ferr != nil {
			return "", ferr
		}
		if cur.ID != "" {
			if err := WaitFootprintRefresh(ctx, api, group, cur.ID, p); err != nil && !errors.Is(err, ErrRefreshFailed) {
				return "", err
			}
		}
	}
}

// FindActiveRefresh returns the group's refresh in progress, or a Refresh
// with no ID when none is.
func FindActiveRefresh(ctx context.Context, api FootprintRefreshAPI, group string) (Refresh, error) {
	out, err := api.DescribeInstanceRefreshes(ctx, &autoscaling.DescribeInstanceRefreshesInput{AutoScalingGroupName: aws.String(group)})
	if err != nil {
		return Refresh{}, fmt.Errorf("reading instance refreshes of %s: %w", group, err)
	}
	for _, r := range out.InstanceRefreshes {
		rr := Refresh{ID: aws.ToString(r.InstanceRefreshId), Status: string(r.Status), Reason: aws.ToString(r.StatusReason)}
		if rr.active() {
			return rr, nil
		}
	}
	return Refresh{}, nil
}

// WaitFootprintRefresh polls the refresh until it ends: nil when it
// succeeded, ErrRefreshFailed (wrapped, with AWS's reason) when it failed or
// was cancelled, ctx's error when ctx ends first. Zero fields of p take
// DefaultPolling().AutoScaling.
func WaitFootprintRefresh(ctx context.Context, api FootprintRefreshAPI, group, id string, p Poll) error {
	return WaitFootprintRefreshEach(ctx, api, group, id, p, nil)
}

// WaitFootprintRefreshEach is WaitFootprintRefresh calling each (when
// not nil) at every poll while the refresh runs: what the refresh waits
// for, such as a terminate action only the caller completes.
func WaitFootprintRefreshEach(ctx context.Context, api FootprintRefreshAPI, group, id string, p Poll, each func(context.Context)) error {
	for w := p.Or(DefaultPolling().AutoScaling).Start(); ; {
		out, err := api.DescribeInstanceRefreshes(ctx, &autoscaling.DescribeInstanceRefreshesInput{AutoScalingGroupName: aws.String(group), InstanceRefreshIds: []string{id}})
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("waiting for instance refresh %s of %s: %w", id, group, ctx.Err())
		}
		if err == nil {
			if len(out.InstanceRefreshes) == 0 {
				return fmt.Errorf("instance refresh %s of %s: %w", id, group, ErrNotFound)
			}
			r := out.InstanceRefreshes[0]
			switch r.Status {
			case astypes.InstanceRefreshStatusSuccessful:
				return nil
			case astypes.InstanceRefreshStatusFailed, astypes.InstanceRefreshStatusCancelled, astypes.InstanceRefreshStatusRollbackSuccessful, astypes.InstanceRefreshStatusRollbackFailed:
				return fmt.Errorf("instance refresh %s of %s: %w: %s (%s)", id, group, ErrRefreshFailed, r.Status, aws.ToString(r.StatusReason))
			}
		}
		if each != nil {
			each(ctx)
		}
		if err := w.Next(ctx); err != nil {
			return fmt.Errorf("waiting for instance refresh %s of %s: %w", id, group, err)
		}
	}
}
