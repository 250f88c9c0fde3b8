package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
)

// A validated footprint's group holds every instance it launches in
// Pending:Wait until hwprobe on the instance completes the launch lifecycle
// action: CONTINUE when the node passed its profile, ABANDON when it
// failed (Auto Scaling then terminates it and launches another). No answer
// within the heartbeat timeout is ABANDON.

// Lifecycle hook settings of a validated footprint.
const (
	// ValidationHookName is the footprint's own hook: the only one it
	// writes or deletes.
	ValidationHookName = "mlplatform-validation"
	// LifecycleLaunching is the transition the hook holds.
	LifecycleLaunching = "autoscaling:EC2_INSTANCE_LAUNCHING"
	// LifecycleAbandon and LifecycleContinue are the action results.
	LifecycleAbandon  = "ABANDON"
	LifecycleContinue = "CONTINUE"
	// MinHookHeartbeat and MaxHookHeartbeat bound a hook's heartbeat
	// timeout, in seconds, as Auto Scaling does.
	MinHookHeartbeat = 30
	MaxHookHeartbeat = 7200
)

// LifecycleHookAPI is what the footprint's hook needs of EC2 Auto Scaling.
type LifecycleHookAPI interface {
	PutLifecycleHook(context.Context, *autoscaling.PutLifecycleHookInput, ...func(*autoscaling.Options)) (*autoscaling.PutLifecycleHookOutput, error)
	DescribeLifecycleHooks(context.Context, *autoscaling.DescribeLifecycleHooksInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeLifecycleHooksOutput, error)
	DeleteLifecycleHook(context.Context, *autoscaling.DeleteLifecycleHookInput, ...func(*autoscaling.Options)) (*autoscaling.DeleteLifecycleHookOutput, error)
}

// LifecycleHook is a group's launch hook as declared or found.
type LifecycleHook struct {
	Name          string
	Transition    string
	HeartbeatSecs int32
	DefaultResult string
}

// ValidationHook is the hook of a footprint validated within heartbeat
// seconds (clamped to what Auto Scaling accepts).
func ValidationHook(heartbeatSecs int) LifecycleHook {
	return LifecycleHook{Name: ValidationHookName, Transition: LifecycleLaunching,
		HeartbeatSecs: int32(min(max(heartbeatSecs, MinHookHeartbeat), MaxHookHeartbeat)), DefaultResult: LifecycleAbandon}
}

// hookSpec is the hook as CreateAutoScalingGroup takes it, so that the
// group's first instances wait too.
func hookSpec(h LifecycleHook) astypes.LifecycleHookSpecification {
	return astypes.LifecycleHookSpecification{LifecycleHookName: aws.String(h.Name), LifecycleTransition: aws.String(h.Transition),
		HeartbeatTimeout: aws.Int32(h.HeartbeatSecs), DefaultResult: aws.String(h.DefaultResult)}
}

// FindValidationHook reads the footprint's hook on group; ErrNotFound when
// the group has none (or the group does not exist).
func FindValidationHook(ctx context.Context, api LifecycleHookAPI, group string) (*LifecycleHook, error) {
	out, err := api.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(group), LifecycleHookNames: []string{ValidationHookName}})
	if isGroupNotFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading lifecycle hook of %s: %w", group, err)
	}
	for _, h := range out.LifecycleHooks {
		if aws.ToString(h.LifecycleHookName) == ValidationHookName {
			return &LifecycleHook{Name: ValidationHookName, Transition: aws.ToString(h.LifecycleTransition),
				HeartbeatSecs: aws.ToInt32(h.HeartbeatTimeout), DefaultResult: aws.ToString(h.DefaultResult)}, nil
		}
	}
	return nil, ErrNotFound
}

// EnsureValidationHook makes group's hook want: nothing is written when it
// is already so. PutLifecycleHook creates or updates, so a retry after a
// lost answer writes the same hook again.
func EnsureValidationHook(ctx context.Context, api LifecycleHookAPI, group string, want LifecycleHook) error {
	cur, err := FindValidationHook(ctx, api, group)
	if err == nil && *cur == want {
		return nil
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	_, err = api.PutLifecycleHook(ctx, &autoscaling.PutLifecycleHookInput{AutoScalingGroupName: aws.String(group), LifecycleHookName: aws.String(want.Name),
		LifecycleTransition: aws.String(want.Transition), HeartbeatTimeout: aws.Int32(want.HeartbeatSecs), DefaultResult: aws.String(want.DefaultResult)})
	if err != nil {
		return fmt.Errorf("putting lifecycle hook %s on %s: %w", want.Name, group, err)
	}
	return nil
}

// DeleteValidationHook removes the footprint's hook from group; a hook or
// group already gone is not an error.
func DeleteValidationHook(ctx context.Context, api LifecycleHookAPI, group string) error {
	if _, err := FindValidationHook(ctx, api, group); errors.Is(err, ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	_, err := api.DeleteLifecycleHook(ctx, &autoscaling.DeleteLifecycleHookInput{AutoScalingGroupName: aws.String(group), LifecycleHookName: aws.String(ValidationHookName)})
	if err != nil && !isGroupNotFound(err) && apiErrorCode(err) != "ResourceNotFound" {
		return fmt.Errorf("deleting lifecycle hook %s of %s: %w", ValidationHookName, group, err)
	}
	return nil
}

// InstanceTerminateAPI terminates one instance of a group.
type InstanceTerminateAPI interface {
	TerminateInstanceInAutoScalingGroup(context.Context, *autoscaling.TerminateInstanceInAutoScalingGroupInput, ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error)
}

// ReplaceGroupInstance terminates instance id through Auto Scaling without
// lowering the desired capacity: the group launches its replacement. An
// instance already gone from the group is not an error.
func ReplaceGroupInstance(ctx context.Context, api InstanceTerminateAPI, id string) error {
	_, err := api.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(id), ShouldDecrementDesiredCapacity: aws.Bool(false)})
	if err != nil && apiErrorCode(err) != "ValidationError" {
		return fmt.Errorf("terminating instance %s in its auto scaling group: %w", id, err)
	}
	return nil
}

// LifecycleActionAPI completes a launch lifecycle action.
type LifecycleActionAPI interface {
	CompleteLifecycleAction(context.Context, *autoscaling.CompleteLifecycleActionInput, ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error)
}

// ErrNoLifecycleAction is CompleteLaunch's answer for an instance that
// has no launch action waiting: it was completed already (a retry after a
// lost answer, or another approver), or its heartbeat ran out.
var ErrNoLifecycleAction = errors.New("no lifecycle action waiting")

// LifecycleWaiting is the state of an instance its group holds until its
// launch action is completed.
const LifecycleWaiting = "Pending:Wait"

// CompleteLaunch completes instance id's launch action on group with
// result (LifecycleContinue or LifecycleAbandon): the group puts it in
// service, or terminates it and launches another.
func CompleteLaunch(ctx context.Context, api LifecycleActionAPI, group, id, result string) error {
	_, err := api.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(group),
		LifecycleHookName: aws.String(ValidationHookName), InstanceId: aws.String(id), LifecycleActionResult: aws.String(result)})
	if err != nil && apiErrorCode(err) == "ValidationError" && strings.Contains(err.Error(), "No active Lifecycle Action") {
		return fmt.Errorf("completing the launch of %s in %s (%s): %w", id, group, result, ErrNoLifecycleAction)
	}
	if err != nil {
		return fmt.Errorf("completing the launch of %s in %s (%s): %w", id, group, result, err)
	}
	return nil
}
