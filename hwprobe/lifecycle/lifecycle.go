// Package lifecycle completes a node's Auto Scaling launch lifecycle
// action: the node tells its group, after validating, whether it may serve
// (CONTINUE) or is to be terminated and replaced (ABANDON).
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
)

// Action results.
const (
	Continue = "CONTINUE"
	Abandon  = "ABANDON"
)

// API is the part of the Auto Scaling client Complete uses.
type API interface {
	CompleteLifecycleAction(ctx context.Context, in *autoscaling.CompleteLifecycleActionInput, optFns ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error)
}

// Action is one lifecycle action to complete.
type Action struct {
	Hook       string
	Group      string
	InstanceID string
	Result     string // Continue or Abandon
}

// ParseResult reads a result, in any case.
func ParseResult(s string) (string, error) {
	switch r := strings.ToUpper(strings.TrimSpace(s)); r {
	case Continue, Abandon:
		return r, nil
	}
	return "", fmt.Errorf("lifecycle result %q: use CONTINUE or ABANDON", s)
}

// ResultFor is the result of a validation that exited with code exit
// (0 passed): CONTINUE on a pass, onFail otherwise.
func ResultFor(exit int, onFail string) string {
	if exit == 0 {
		return Continue
	}
	return onFail
}

// Complete completes the action.
func Complete(ctx context.Context, api API, a Action) error {
	switch {
	case a.Hook == "" || a.Group == "":
		return errors.New("complete lifecycle action: hook and group are required")
	case a.InstanceID == "":
		return errors.New("complete lifecycle action: no instance id")
	case a.Result != Continue && a.Result != Abandon:
		return fmt.Errorf("complete lifecycle action: result %q", a.Result)
	}
	_, err := api.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{
		AutoScalingGroupName: aws.String(a.Group), LifecycleHookName: aws.String(a.Hook),
		InstanceId: aws.String(a.InstanceID), LifecycleActionResult: aws.String(a.Result),
	})
	if err != nil {
		return fmt.Errorf("complete lifecycle action %s of %s on %s: %w", a.Hook, a.InstanceID, a.Group, err)
	}
	return nil
}

// NewClient returns an Auto Scaling client for region from the standard
// AWS configuration (AWS_ENDPOINT_URL_AUTO_SCALING or AWS_ENDPOINT_URL
// override the endpoint).
func NewClient(ctx context.Context, region string) (*autoscaling.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
	if err != nil {
		return nil, fmt.Errorf("aws config: %w", err)
	}
	return autoscaling.NewFromConfig(cfg), nil
}
