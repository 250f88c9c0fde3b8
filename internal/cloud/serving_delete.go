package cloud

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
)

// DeleteServingEndpoint starts deleting an endpoint. One already gone is not
// an error; WaitServingEndpointDeleted sees it go.
func DeleteServingEndpoint(ctx context.Context, api ServingAPI, name string) error {
	if _, err := api.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)}); err != nil && !isServingNotFound(err) {
		return fmt.Errorf("deleting endpoint %s: %w", name, err)
	}
	return nil
}

// DeleteServingEndpointConfig deletes an endpoint config; one already gone is
// not an error.
func DeleteServingEndpointConfig(ctx context.Context, api ServingAPI, name string) error {
	if _, err := api.DeleteEndpointConfig(ctx, &sagemaker.DeleteEndpointConfigInput{EndpointConfigName: aws.String(name)}); err != nil && !isServingNotFound(err) {
		return fmt.Errorf("deleting endpoint config %s: %w", name, err)
	}
	return nil
}

// DeleteServingModel deletes a model; one already gone is not an error.
func DeleteServingModel(ctx context.Context, api ServingAPI, name string) error {
	if _, err := api.DeleteModel(ctx, &sagemaker.DeleteModelInput{ModelName: aws.String(name)}); err != nil && !isServingNotFound(err) {
		return fmt.Errorf("deleting model %s: %w", name, err)
	}
	return nil
}
