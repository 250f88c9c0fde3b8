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
	// SlurmLeaveHookName is the hook of a footprint that joins Slurm:
	// Auto Scaling holds an instance it terminates (a scale-in, an
	// instance refresh, a replacement) in Terminating:Wait while the
	// node leaves Slurm, its jobs ending first.
	SlurmLeaveHookName = "mlplatform-slurm-leave"
	// LifecycleLaunching and LifecycleTerminating are the transitions
	// the hooks hold.
	LifecycleLaunching   = "autoscaling:EC2_INSTANCE_LAUNCHING"
	LifecycleTerminating = "autoscaling:EC2_INSTANCE_TERMINATING"
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

// LifecycleHook is a group's hook as declared or found.
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

// TagSlurmMarkers is the group tag that says where its nodes' Slurm
// markers are (the footprint's reports prefix), so that a destroy, which
// knows only the footprint's name, waits for its nodes to leave Slurm.
const TagSlurmMarkers = "mlplatform:slurm-markers"

// ScaleFootprintGroupToZero sets the group's minimum and desired capacity
// to 0: Auto Scaling terminates every instance, through the group's
// terminate hook.
func ScaleFootprintGroupToZero(ctx context.Context, api FootprintGroupAPI, name string) error {
	_, err := api.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(name), MinSize: aws.Int32(0), DesiredCapacity: aws.Int32(0)})
	if err != nil {
		return fmt.Errorf("scaling auto scaling group %s to 0: %w", name, err)
	}
	return nil
}

// SlurmLeaveHook is the hook of a footprint whose nodes leave Slurm
// before Auto Scaling terminates them: EC2_INSTANCE_TERMINATING, the
// longest heartbeat Auto Scaling takes (a node's jobs may hold it that
// long), then CONTINUE: the instance terminates all the same, and its
// leave unit takes it out of Slurm at shutdown.
func SlurmLeaveHook() LifecycleHook {
	return LifecycleHook{Name: SlurmLeaveHookName, Transition: LifecycleTerminating, HeartbeatSecs: MaxHookHeartbeat, DefaultResult: LifecycleContinue}
}

// hookSpec is the hook as CreateAutoScalingGroup takes it, so that the
// group's first instances wait too.
func hookSpec(h LifecycleHook) astypes.LifecycleHookSpecification {
	return astypes.LifecycleHookSpecification{LifecycleHookName: aws.String(h.Name), LifecycleTransition: aws.String(h.Transition),
		HeartbeatTimeout: aws.Int32(h.HeartbeatSecs), DefaultResult: aws.String(h.DefaultResult)}
}

// FindValidationHook reads the footprint's validation hook on group;
// ErrNotFound when the group has none (or the group does not exist).
func FindValidationHook(ctx context.Context, api LifecycleHookAPI, group string) (*LifecycleHook, error) {
	return FindHook(ctx, api, group, ValidationHookName)
}

// FindHook reads group's hook name; ErrNotFound when the group has none
// of that name (or the group does not exist).
func FindHook(ctx context.Context, api LifecycleHookAPI, group, name string) (*LifecycleHook, error) {
	out, err := api.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(group), LifecycleHookNames: []string{name}})
	if isGroupNotFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("reading lifecycle hook %s of %s: %w", name, group, err)
	}
	for _, h := range out.LifecycleHooks {
		if aws.ToString(h.LifecycleHookName) == name {
			return &LifecycleHook{Name: name, Transition: aws.ToString(h.LifecycleTransition),
				HeartbeatSecs: aws.ToInt32(h.HeartbeatTimeout), DefaultResult: aws.ToString(h.DefaultResult)}, nil
		}
	}
	return nil, ErrNotFound
}

// EnsureValidationHook makes group's hook want (see EnsureHook).
func EnsureValidationHook(ctx context.Context, api LifecycleHookAPI, group string, want LifecycleHook) error {
	return EnsureHook(ctx, api, group, want)
}

// EnsureHook makes group's hook want.Name want: nothing is written when
// it is already so. PutLifecycleHook creates or updates, so a retry after
// a lost answer writes the same hook again.
func EnsureHook(ctx context.Context, api LifecycleHookAPI, group string, want LifecycleHook) error {
	cur, err := FindHook(ctx, api, group, want.Name)
	if err == nil && *cur == want {
		return nil
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return PutHook(ctx, api, group, want)
}

// PutHook writes hook h on group (created or updated), without reading
// it first: for a caller that read it already (FindHook).
func PutHook(ctx context.Context, api LifecycleHookAPI, group string, h LifecycleHook) error {
	_, err := api.PutLifecycleHook(ctx, &autoscaling.PutLifecycleHookInput{AutoScalingGroupName: aws.String(group), LifecycleHookName: aws.String(h.Name),
		LifecycleTransition: aws.String(h.Transition), HeartbeatTimeout: aws.Int32(h.HeartbeatSecs), DefaultResult: aws.String(h.DefaultResult)})
	if err != nil {
		return fmt.Errorf("putting lifecycle hook %s on %s: %w", h.Name, group, err)
	}
	return nil
}

// DeleteValidationHook removes the footprint's validation hook from group
// (see DeleteHook).
func DeleteValidationHook(ctx context.Context, api LifecycleHookAPI, group string) error {
	return DeleteHook(ctx, api, group, ValidationHookName)
}

// DeleteHook removes hook name from group; a hook or group already gone
// is not an error. Only the footprint's own hooks are ever named.
func DeleteHook(ctx context.Context, api LifecycleHookAPI, group, name string) error {
	if _, err := FindHook(ctx, api, group, name); errors.Is(err, ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	_, err := api.DeleteLifecycleHook(ctx, &autoscaling.DeleteLifecycleHookInput{AutoScalingGroupName: aws.String(group), LifecycleHookName: aws.String(name)})
	if err != nil && !isGroupNotFound(err) && apiErrorCode(err) != "ResourceNotFound" {
		return fmt.Errorf("deleting lifecycle hook %s of %s: %w", name, group, err)
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

// LifecycleActionAPI completes a lifecycle action.
type LifecycleActionAPI interface {
	CompleteLifecycleAction(context.Context, *autoscaling.CompleteLifecycleActionInput, ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error)
}

// ErrNoLifecycleAction is CompleteLaunch's (and CompleteSlurmLeave's)
// answer for an instance that has no such action waiting: it was completed already (a retry after a
// lost answer, or another approver), or its heartbeat ran out.
var ErrNoLifecycleAction = errors.New("no lifecycle action waiting")

// LifecycleWaiting is the state of an instance its group holds until its
// launch action is completed; LifecycleTerminatingWait, until its
// terminate action is.
const (
	LifecycleWaiting         = "Pending:Wait"
	LifecycleTerminatingWait = "Terminating:Wait"
)

// CompleteLaunch completes instance id's launch action on group with
// result (LifecycleContinue or LifecycleAbandon): the group puts it in
// service, or terminates it and launches another.
func CompleteLaunch(ctx context.Context, api LifecycleActionAPI, group, id, result string) error {
	return completeAction(ctx, api, group, ValidationHookName, "launch", id, result)
}

// CompleteSlurmLeave completes instance id's terminate action on group
// (the SlurmLeaveHookName hook): Auto Scaling terminates it now.
func CompleteSlurmLeave(ctx context.Context, api LifecycleActionAPI, group, id string) error {
	return completeAction(ctx, api, group, SlurmLeaveHookName, "terminate", id, LifecycleContinue)
}

func completeAction(ctx context.Context, api LifecycleActionAPI, group, hook, what, id, result string) error {
	_, err := api.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(group),
		LifecycleHookName: aws.String(hook), InstanceId: aws.String(id), LifecycleActionResult: aws.String(result)})
	if err != nil && apiErrorCode(err) == "ValidationError" && strings.Contains(err.Error(), "No active Lifecycle Action") {
		return fmt.Errorf("completing the %s of %s in %s (%s): %w", what, id, group, result, ErrNoLifecycleAction)
	}
	if err != nil {
		return fmt.Errorf("completing the %s of %s in %s (%s): %w", what, id, group, result, err)
	}
	return nil
}
