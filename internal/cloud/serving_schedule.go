package cloud

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
)

// ServingScheduledActionPrefix starts the name of every scheduled action
// this provider puts on a variant's scalable target; actions named
// otherwise are someone else's and are left alone.
const ServingScheduledActionPrefix = "mlplatform-"

// ServingScheduledAction is one Application Auto Scaling scheduled action
// on a variant's scalable target: at each time Schedule fires (an AWS
// "cron(...)" expression, in TimeZone), the target takes Min and Max (nil
// keeps the current value).
type ServingScheduledAction struct {
	Name     string
	Schedule string
	TimeZone string
	Min, Max *int32
}

// Equal compares two actions by value.
func (a ServingScheduledAction) Equal(b ServingScheduledAction) bool {
	eq := func(x, y *int32) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Name == b.Name && a.Schedule == b.Schedule && a.TimeZone == b.TimeZone && eq(a.Min, b.Min) && eq(a.Max, b.Max)
}

// FindServingScheduledActions returns this provider's scheduled actions on
// the variant's scalable target, by name order.
func FindServingScheduledActions(ctx context.Context, api ServingScalingAPI, endpoint, variant string) ([]ServingScheduledAction, error) {
	id := ServingScalingResourceID(endpoint, variant)
	var out []ServingScheduledAction
	var tok *string
	for {
		page, err := api.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{
			ServiceNamespace:  aastypes.ServiceNamespaceSagemaker,
			ResourceId:        aws.String(id),
			ScalableDimension: aastypes.ScalableDimension(ServingScalingDimension),
			NextToken:         tok,
		})
		if err != nil {
			if isScalingNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("describing scheduled actions of %s: %w", id, err)
		}
		for _, a := range page.ScheduledActions {
			name := aws.ToString(a.ScheduledActionName)
			if aws.ToString(a.ResourceId) != id || !strings.HasPrefix(name, ServingScheduledActionPrefix) {
				continue
			}
			sa := ServingScheduledAction{Name: name, Schedule: aws.ToString(a.Schedule), TimeZone: aws.ToString(a.Timezone)}
			if t := a.ScalableTargetAction; t != nil {
				sa.Min, sa.Max = t.MinCapacity, t.MaxCapacity
			}
			out = append(out, sa)
		}
		if aws.ToString(page.NextToken) == "" || aws.ToString(page.NextToken) == aws.ToString(tok) {
			break
		}
		tok = page.NextToken
	}
	slices.SortFunc(out, func(a, b ServingScheduledAction) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// PutServingScheduledAction puts the action on the variant's scalable
// target. It replaces an action of the same name, so a retry or a change is
// the same call.
func PutServingScheduledAction(ctx context.Context, api ServingScalingAPI, endpoint, variant string, a ServingScheduledAction) error {
	id := ServingScalingResourceID(endpoint, variant)
	in := &applicationautoscaling.PutScheduledActionInput{
		ServiceNamespace:     aastypes.ServiceNamespaceSagemaker,
		ResourceId:           aws.String(id),
		ScalableDimension:    aastypes.ScalableDimension(ServingScalingDimension),
		ScheduledActionName:  aws.String(a.Name),
		Schedule:             aws.String(a.Schedule),
		ScalableTargetAction: &aastypes.ScalableTargetAction{MinCapacity: a.Min, MaxCapacity: a.Max},
	}
	if a.TimeZone != "" {
		in.Timezone = aws.String(a.TimeZone)
	}
	if _, err := api.PutScheduledAction(ctx, in); err != nil {
		return fmt.Errorf("putting scheduled action %s on %s: %w", a.Name, id, err)
	}
	return nil
}

// DeleteServingScheduledAction deletes the named action of the variant's
// scalable target. An action already gone is not an error.
func DeleteServingScheduledAction(ctx context.Context, api ServingScalingAPI, endpoint, variant, name string) error {
	id := ServingScalingResourceID(endpoint, variant)
	if _, err := api.DeleteScheduledAction(ctx, &applicationautoscaling.DeleteScheduledActionInput{
		ServiceNamespace:    aastypes.ServiceNamespaceSagemaker,
		ResourceId:          aws.String(id),
		ScalableDimension:   aastypes.ScalableDimension(ServingScalingDimension),
		ScheduledActionName: aws.String(name),
	}); err != nil && !isScalingNotFound(err) {
		return fmt.Errorf("deleting scheduled action %s of %s: %w", name, id, err)
	}
	return nil
}

// SyncServingScheduledActions makes this provider's scheduled actions on
// the variant's target exactly want: actions not wanted are deleted, and
// wanted ones missing or different are put. Every call is idempotent, so a
// retry after any failure converges.
func SyncServingScheduledActions(ctx context.Context, api ServingScalingAPI, endpoint, variant string, want []ServingScheduledAction) error {
	have, err := FindServingScheduledActions(ctx, api, endpoint, variant)
	if err != nil {
		return err
	}
	for _, h := range have {
		if !slices.ContainsFunc(want, func(w ServingScheduledAction) bool { return w.Name == h.Name }) {
			if err := DeleteServingScheduledAction(ctx, api, endpoint, variant, h.Name); err != nil {
				return err
			}
		}
	}
	for _, w := range want {
		if slices.ContainsFunc(have, w.Equal) {
			continue
		}
		if err := PutServingScheduledAction(ctx, api, endpoint, variant, w); err != nil {
			return err
		}
	}
	return nil
}
