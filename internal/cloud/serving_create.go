package cloud

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// CreateServingModel creates a model with one container and returns its
// ARN. A model of the name that exists already is ErrServingExists.
func CreateServingModel(ctx context.Context, api ServingAPI, c ServingModelConfig) (string, error) {
	in := &sagemaker.CreateModelInput{
		ModelName:        aws.String(c.Name),
		ExecutionRoleArn: aws.String(c.RoleARN),
		PrimaryContainer: &types.ContainerDefinition{Image: aws.String(c.Image)},
		Tags:             sdkTags(c.Tags),
		// Always sent, false included: what the model is never rests on
		// SageMaker's default.
		EnableNetworkIsolation: aws.Bool(c.NetworkIsolation),
	}
	if len(c.SubnetIDs) > 0 || len(c.SecurityGroupIDs) > 0 {
		in.VpcConfig = &types.VpcConfig{Subnets: slices.Clone(c.SubnetIDs), SecurityGroupIds: slices.Clone(c.SecurityGroupIDs)}
	}
	if c.ModelDataURI != "" {
		in.PrimaryContainer.ModelDataUrl = aws.String(c.ModelDataURI)
	}
	if len(c.Environment) > 0 {
		in.PrimaryContainer.Environment = maps.Clone(c.Environment)
	}
	out, err := api.CreateModel(ctx, in)
	if err != nil {
		if isServingExists(err) {
			return "", fmt.Errorf("creating model %s: %w: %w", c.Name, ErrServingExists, err)
		}
		return "", fmt.Errorf("creating model %s: %w", c.Name, err)
	}
	return aws.ToString(out.ModelArn), nil
}

// CreateServingEndpointConfig creates an endpoint config and returns its
// ARN. A config of the name that exists already is ErrServingExists.
func CreateServingEndpointConfig(ctx context.Context, api ServingAPI, c ServingEndpointConfigSpec) (string, error) {
	in := &sagemaker.CreateEndpointConfigInput{
		EndpointConfigName: aws.String(c.Name),
		ProductionVariants: sdkVariants(c.Variants),
		Tags:               sdkTags(c.Tags),
	}
	if c.KMSKeyID != "" {
		in.KmsKeyId = aws.String(c.KMSKeyID)
	}
	if d := c.DataCapture; d != nil {
		dc := &types.DataCaptureConfig{
			EnableCapture:             aws.Bool(d.Enabled),
			InitialSamplingPercentage: aws.Int32(d.SamplingPercentage),
			DestinationS3Uri:          aws.String(d.DestinationS3URI),
		}
		if d.KMSKeyID != "" {
			dc.KmsKeyId = aws.String(d.KMSKeyID)
		}
		for _, m := range d.CaptureModes {
			dc.CaptureOptions = append(dc.CaptureOptions, types.CaptureOption{CaptureMode: types.CaptureMode(m)})
		}
		in.DataCaptureConfig = dc
	}
	out, err := api.CreateEndpointConfig(ctx, in)
	if err != nil {
		if isServingExists(err) {
			return "", fmt.Errorf("creating endpoint config %s: %w: %w", c.Name, ErrServingExists, err)
		}
		return "", fmt.Errorf("creating endpoint config %s: %w", c.Name, err)
	}
	return aws.ToString(out.EndpointConfigArn), nil
}

func sdkVariants(vs []ServingVariantConfig) []types.ProductionVariant {
	out := make([]types.ProductionVariant, 0, len(vs))
	for _, v := range vs {
		pv := types.ProductionVariant{
			VariantName:          aws.String(v.Name),
			ModelName:            aws.String(v.ModelName),
			InitialVariantWeight: aws.Float32(v.Weight),
		}
		if v.MemoryMB > 0 {
			pv.ServerlessConfig = &types.ProductionVariantServerlessConfig{MemorySizeInMB: aws.Int32(v.MemoryMB), MaxConcurrency: aws.Int32(v.MaxConcurrency)}
		} else {
			pv.InstanceType = types.ProductionVariantInstanceType(v.InstanceType)
			pv.InitialInstanceCount = aws.Int32(v.InitialCount)
		}
		out = append(out, pv)
	}
	return out
}

// CreateServingEndpoint starts creating an endpoint and returns its ARN. An
// endpoint of the name that exists already is ErrServingExists. The
// endpoint is Creating until WaitServingEndpoint sees it settle.
func CreateServingEndpoint(ctx context.Context, api ServingAPI, name, configName string, tags map[string]string) (string, error) {
	out, err := api.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{
		EndpointName:       aws.String(name),
		EndpointConfigName: aws.String(configName),
		Tags:               sdkTags(tags),
	})
	if err != nil {
		if isServingExists(err) {
			return "", fmt.Errorf("creating endpoint %s: %w: %w", name, ErrServingExists, err)
		}
		return "", fmt.Errorf("creating endpoint %s: %w", name, err)
	}
	return aws.ToString(out.EndpointArn), nil
}
