package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/smithy-go"
)

// ServingListAPI is the part of the SageMaker API that finds the endpoint
// configs and models left over by an interrupted update.
type ServingListAPI interface {
	ListEndpointConfigs(ctx context.Context, in *sagemaker.ListEndpointConfigsInput, opts ...func(*sagemaker.Options)) (*sagemaker.ListEndpointConfigsOutput, error)
	ListModels(ctx context.Context, in *sagemaker.ListModelsInput, opts ...func(*sagemaker.Options)) (*sagemaker.ListModelsOutput, error)
	ListTags(ctx context.Context, in *sagemaker.ListTagsInput, opts ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error)
}

// ServingNamed is an endpoint config or a model by name and ARN.
type ServingNamed struct {
	Name, ARN string
}

// maxServingListPages bounds a listing: 100 names a page.
const maxServingListPages = 50

// ListServingEndpointConfigs lists the endpoint configs whose names start
// with prefix (SageMaker filters by substring; the prefix is checked here).
func ListServingEndpointConfigs(ctx context.Context, api ServingListAPI, prefix string) ([]ServingNamed, error) {
	var out []ServingNamed
	var tok *string
	for range maxServingListPages {
		page, err := api.ListEndpointConfigs(ctx, &sagemaker.ListEndpointConfigsInput{NameContains: aws.String(prefix), NextToken: tok, MaxResults: aws.Int32(100)})
		if err != nil {
			return nil, fmt.Errorf("listing endpoint configs %s*: %w", prefix, err)
		}
		for _, c := range page.EndpointConfigs {
			if n := aws.ToString(c.EndpointConfigName); strings.HasPrefix(n, prefix) {
				out = append(out, ServingNamed{Name: n, ARN: aws.ToString(c.EndpointConfigArn)})
			}
		}
		if aws.ToString(page.NextToken) == "" || aws.ToString(page.NextToken) == aws.ToString(tok) {
			break
		}
		tok = page.NextToken
	}
	return out, nil
}

// ListServingModels lists the models whose names start with prefix.
func ListServingModels(ctx context.Context, api ServingListAPI, prefix string) ([]ServingNamed, error) {
	var out []ServingNamed
	var tok *string
	for range maxServingListPages {
		page, err := api.ListModels(ctx, &sagemaker.ListModelsInput{NameContains: aws.String(prefix), NextToken: tok, MaxResults: aws.Int32(100)})
		if err != nil {
			return nil, fmt.Errorf("listing models %s*: %w", prefix, err)
		}
		for _, m := range page.Models {
			if n := aws.ToString(m.ModelName); strings.HasPrefix(n, prefix) {
				out = append(out, ServingNamed{Name: n, ARN: aws.ToString(m.ModelArn)})
			}
		}
		if aws.ToString(page.NextToken) == "" || aws.ToString(page.NextToken) == aws.ToString(tok) {
			break
		}
		tok = page.NextToken
	}
	return out, nil
}

// ServingTags lists the tags of a SageMaker model, endpoint config or
// endpoint. A missing one is ErrNotFound.
func ServingTags(ctx context.Context, api ServingListAPI, arn string) (map[string]string, error) {
	tags := map[string]string{}
	var tok *string
	for range maxServingListPages {
		page, err := api.ListTags(ctx, &sagemaker.ListTagsInput{ResourceArn: aws.String(arn), NextToken: tok})
		if err != nil {
			if isServingNotFound(err) {
				return nil, fmt.Errorf("%s: %w", arn, ErrNotFound)
			}
			return nil, fmt.Errorf("listing tags of %s: %w", arn, err)
		}
		for _, t := range page.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		if aws.ToString(page.NextToken) == "" || aws.ToString(page.NextToken) == aws.ToString(tok) {
			break
		}
		tok = page.NextToken
	}
	return tags, nil
}

// IsRefused reports whether err is an answer of the service refusing the
// call (a client fault: validation, access, a name taken): the call had no
// effect. A throttling error, a server fault, a transport error or a lost
// answer are not: such a call may have taken effect.
func IsRefused(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorFault() != smithy.FaultClient {
		return false
	}
	return !isThrottle(ae.ErrorCode())
}

func isThrottle(code string) bool {
	switch code {
	case "ThrottlingException", "Throttling", "RequestLimitExceeded", "TooManyRequestsException", "LimitExceededException":
		return true
	}
	return false
}
