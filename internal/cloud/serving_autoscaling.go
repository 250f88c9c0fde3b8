package cloud

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/smithy-go"
)

// ServingScalingAPI is the part of the Application Auto Scaling API the
// serving endpoint verbs use. AppAutoScalingClient (the handle on *applicationautoscaling.Client) implements it.
type ServingScalingAPI interface {
	RegisterScalableTarget(ctx context.Context, in *applicationautoscaling.RegisterScalableTargetInput, opts ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error)
	DeregisterScalableTarget(ctx context.Context, in *applicationautoscaling.DeregisterScalableTargetInput, opts ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeregisterScalableTargetOutput, error)
	DescribeScalableTargets(ctx context.Context, in *applicationautoscaling.DescribeScalableTargetsInput, opts ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error)
	PutScalingPolicy(ctx context.Context, in *applicationautoscaling.PutScalingPolicyInput, opts ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScalingPolicyOutput, error)
	DescribeScalingPolicies(ctx context.Context, in *applicationautoscaling.DescribeScalingPoliciesInput, opts ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalingPoliciesOutput, error)
	DeleteScalingPolicy(ctx context.Context, in *applicationautoscaling.DeleteScalingPolicyInput, opts ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeleteScalingPolicyOutput, error)
	PutScheduledAction(ctx context.Context, in *applicationautoscaling.PutScheduledActionInput, opts ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScheduledActionOutput, error)
	DescribeScheduledActions(ctx context.Context, in *applicationautoscaling.DescribeScheduledActionsInput, opts ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScheduledActionsOutput, error)
	DeleteScheduledAction(ctx context.Context, in *applicationautoscaling.DeleteScheduledActionInput, opts ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeleteScheduledActionOutput, error)
}

// Application Auto Scaling names of a SageMaker variant.
const (
	ServingScalingDimension = "sagemaker:variant:DesiredInstanceCount"
	ServingScalingMetric    = "SageMakerVariantInvocationsPerInstance"
	// ServingScalingPolicyName is the target-tracking policy this provider
	// puts on each variant it scales.
	ServingScalingPolicyName = "mlplatform-invocations-per-instance"
)

// ServingScaling is one variant's scalable target and its target-tracking
// policy on invocations per instance.
type ServingScaling struct {
	Variant           string
	Min, Max          int32
	TargetInvocations float64 // 0 when no policy of this provider is found
	ScaleInCooldown   int32
	ScaleOutCooldown  int32
}

// ServingScalingResourceID is the Application Auto Scaling resource id of a
// variant.
func ServingScalingResourceID(endpoint, variant string) string {
	return "endpoint/" + endpoint + "/variant/" + variant
}

// isScalingNotFound: Application Auto Scaling answers ObjectNotFound, and
// some emulators a ValidationException "No scalable target/scaling policy
// found".
func isScalingNotFound(err error) bool {
	var nf *aastypes.ObjectNotFoundException
	if errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "ObjectNotFoundException" ||
		(ae.ErrorCode() == "ValidationException" && strings.Contains(ae.ErrorMessage(), "No scal")))
}

// FindServingScaling returns the scalable targets of the endpoint's variants
// with this provider's policy on each, by variant name.
func FindServingScaling(ctx context.Context, api ServingScalingAPI, endpoint string) (map[string]ServingScaling, error) {
	prefix := ServingScalingResourceID(endpoint, "")
	out := map[string]ServingScaling{}
	var tok *string
	for {
		page, err := api.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{
			ServiceNamespace:  aastypes.ServiceNamespaceSagemaker,
			ScalableDimension: aastypes.ScalableDimension(ServingScalingDimension),
			NextToken:         tok,
		})
		if err != nil {
			return nil, fmt.Errorf("describing scalable targets of endpoint %s: %w", endpoint, err)
		}
		for _, t := range page.ScalableTargets {
			id := aws.ToString(t.ResourceId)
			if !strings.HasPrefix(id, prefix) {
				continue
			}
			v := strings.TrimPrefix(id, prefix)
			out[v] = ServingScaling{Variant: v, Min: aws.ToInt32(t.MinCapacity), Max: aws.ToInt32(t.MaxCapacity)}
		}
		if aws.ToString(page.NextToken) == "" || aws.ToString(page.NextToken) == aws.ToString(tok) {
			break
		}
		tok = page.NextToken
	}
	for _, v := range sortedScalingKeys(out) {
		s := out[v]
		pol, err := api.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{
			ServiceNamespace:  aastypes.ServiceNamespaceSagemaker,
			ResourceId:        aws.String(ServingScalingResourceID(endpoint, v)),
			ScalableDimension: aastypes.ScalableDimension(ServingScalingDimension),
			PolicyNames:       []string{ServingScalingPolicyName},
		})
		if err != nil {
			return nil, fmt.Errorf("describing scaling policies of variant %s of endpoint %s: %w", v, endpoint, err)
		}
		for _, p := range pol.ScalingPolicies {
			c := p.TargetTrackingScalingPolicyConfiguration
			if aws.ToString(p.PolicyName) != ServingScalingPolicyName || aws.ToString(p.ResourceId) != ServingScalingResourceID(endpoint, v) || c == nil {
				continue
			}
			s.TargetInvocations = aws.ToFloat64(c.TargetValue)
			s.ScaleInCooldown, s.ScaleOutCooldown = aws.ToInt32(c.ScaleInCooldown), aws.ToInt32(c.ScaleOutCooldown)
		}
		out[v] = s
	}
	return out, nil
}

func sortedScalingKeys(m map[string]ServingScaling) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// PutServingScaling registers the variant as a scalable target (min, max)
// and puts the target-tracking policy on invocations per instance. Both
// calls replace what is there, so a retry or a change is the same call.
func PutServingScaling(ctx context.Context, api ServingScalingAPI, endpoint string, s ServingScaling) error {
	id := ServingScalingResourceID(endpoint, s.Variant)
	if _, err := api.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace:  aastypes.ServiceNamespaceSagemaker,
		ResourceId:        aws.String(id),
		ScalableDimension: aastypes.ScalableDimension(ServingScalingDimension),
		MinCapacity:       aws.Int32(s.Min),
		MaxCapacity:       aws.Int32(s.Max),
	}); err != nil {
		return fmt.Errorf("registering %s as a scalable target: %w", id, err)
	}
	if _, err := api.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
		PolicyName:        aws.String(ServingScalingPolicyName),
		ServiceNamespace:  aastypes.ServiceNamespaceSagemaker,
		ResourceId:        aws.String(id),
		ScalableDimension: aastypes.ScalableDimension(ServingScalingDimension),
		PolicyType:        aastypes.PolicyTypeTargetTrackingScaling,
		TargetTrackingScalingPolicyConfiguration: &aastypes.TargetTrackingScalingPolicyConfiguration{
			TargetValue:                   aws.Float64(s.TargetInvocations),
			PredefinedMetricSpecification: &aastypes.PredefinedMetricSpecification{PredefinedMetricType: aastypes.MetricType(ServingScalingMetric)},
			ScaleInCooldown:               aws.Int32(s.ScaleInCooldown),
			ScaleOutCooldown:              aws.Int32(s.ScaleOutCooldown),
		},
	}); err != nil {
		return fmt.Errorf("putting scaling policy on %s: %w", id, err)
	}
	return nil
}

// DeleteServingScaling deletes this provider's policy of the variant and
// deregisters it as a scalable target, its scheduled actions first (AWS
// deletes them with the target, some emulators do not). What is already
// gone is not an error.
func DeleteServingScaling(ctx context.Context, api ServingScalingAPI, endpoint, variant string) error {
	id := ServingScalingResourceID(endpoint, variant)
	if err := SyncServingScheduledActions(ctx, api, endpoint, variant, nil); err != nil {
		return err
	}
	if _, err := api.DeleteScalingPolicy(ctx, &applicationautoscaling.DeleteScalingPolicyInput{
		PolicyName:        aws.String(ServingScalingPolicyName),
		ServiceNamespace:  aastypes.ServiceNamespaceSagemaker,
		ResourceId:        aws.String(id),
		ScalableDimension: aastypes.ScalableDimension(ServingScalingDimension),
	}); err != nil && !isScalingNotFound(err) {
		return fmt.Errorf("deleting scaling policy of %s: %w", id, err)
	}
	if _, err := api.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{
		ServiceNamespace:  aastypes.ServiceNamespaceSagemaker,
		ResourceId:        aws.String(id),
		ScalableDimension: aastypes.ScalableDimension(ServingScalingDimension),
	}); err != nil && !isScalingNotFound(err) {
		return fmt.Errorf("deregistering scalable target %s: %w", id, err)
	}
	return nil
}
