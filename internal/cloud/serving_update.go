package cloud

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// UpdateServingEndpoint starts moving the endpoint to configName with the
// blue/green deployment d (nil: SageMaker's default, all at once). The
// endpoint is Updating until WaitServingEndpoint sees it settle; whether the
// new config serves is known only then, from the endpoint's config name.
func UpdateServingEndpoint(ctx context.Context, api ServingAPI, name, configName string, d *ServingDeploymentConfig) error {
	in := &sagemaker.UpdateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String(configName)}
	if d != nil {
		in.DeploymentConfig = sdkDeployment(d)
	}
	if _, err := api.UpdateEndpoint(ctx, in); err != nil {
		if isServingNotFound(err) {
			return fmt.Errorf("updating endpoint %s: %w", name, ErrNotFound)
		}
		return fmt.Errorf("updating endpoint %s: %w", name, err)
	}
	return nil
}

func sdkDeployment(d *ServingDeploymentConfig) *types.DeploymentConfig {
	routing := &types.TrafficRoutingConfig{Type: types.TrafficRoutingConfigType(d.TrafficRouting), WaitIntervalInSeconds: aws.Int32(d.WaitSeconds)}
	size := &types.CapacitySize{Type: types.CapacitySizeType(d.SizeType), Value: aws.Int32(d.SizeValue)}
	switch d.TrafficRouting {
	case "CANARY":
		routing.CanarySize = size
	case "LINEAR":
		routing.LinearStepSize = size
	}
	bg := &types.BlueGreenUpdatePolicy{TrafficRoutingConfiguration: routing, TerminationWaitInSeconds: aws.Int32(d.TerminationWaitSeconds)}
	if d.MaxExecutionSeconds > 0 {
		bg.MaximumExecutionTimeoutInSeconds = aws.Int32(d.MaxExecutionSeconds)
	}
	out := &types.DeploymentConfig{BlueGreenUpdatePolicy: bg}
	if len(d.RollbackAlarms) > 0 {
		rb := &types.AutoRollbackConfig{}
		for _, a := range d.RollbackAlarms {
			rb.Alarms = append(rb.Alarms, types.Alarm{AlarmName: aws.String(a)})
		}
		out.AutoRollbackConfiguration = rb
	}
	return out
}

// SetServingTags makes the tags of arn exactly want, except the keys in
// keep, which are never removed.
func SetServingTags(ctx context.Context, api ServingAPI, arn string, want map[string]string, keep []string) error {
	have, err := servingTags(ctx, api, arn)
	if err != nil {
		return fmt.Errorf("listing tags of %s: %w", arn, err)
	}
	var remove []string
	for k := range have {
		if _, wanted := want[k]; !wanted && !slices.Contains(keep, k) {
			remove = append(remove, k)
		}
	}
	sort.Strings(remove)
	if len(remove) > 0 {
		if _, err := api.DeleteTags(ctx, &sagemaker.DeleteTagsInput{ResourceArn: aws.String(arn), TagKeys: remove}); err != nil {
			return fmt.Errorf("removing tags of %s: %w", arn, err)
		}
	}
	add := map[string]string{}
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			add[k] = v
		}
	}
	if len(add) > 0 {
		if _, err := api.AddTags(ctx, &sagemaker.AddTagsInput{ResourceArn: aws.String(arn), Tags: sdkTags(add)}); err != nil {
			return fmt.Errorf("tagging %s: %w", arn, err)
		}
	}
	return nil
}
