package cloud

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"
)

// ServingAPI is the part of the SageMaker API the serving endpoint verbs use.
// SageMakerClient (the handle on *sagemaker.Client) implements it.
type ServingAPI interface {
	CreateModel(ctx context.Context, in *sagemaker.CreateModelInput, opts ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error)
	DescribeModel(ctx context.Context, in *sagemaker.DescribeModelInput, opts ...func(*sagemaker.Options)) (*sagemaker.DescribeModelOutput, error)
	DeleteModel(ctx context.Context, in *sagemaker.DeleteModelInput, opts ...func(*sagemaker.Options)) (*sagemaker.DeleteModelOutput, error)
	CreateEndpointConfig(ctx context.Context, in *sagemaker.CreateEndpointConfigInput, opts ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error)
	DescribeEndpointConfig(ctx context.Context, in *sagemaker.DescribeEndpointConfigInput, opts ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error)
	DeleteEndpointConfig(ctx context.Context, in *sagemaker.DeleteEndpointConfigInput, opts ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointConfigOutput, error)
	CreateEndpoint(ctx context.Context, in *sagemaker.CreateEndpointInput, opts ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointOutput, error)
	DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, opts ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
	UpdateEndpoint(ctx context.Context, in *sagemaker.UpdateEndpointInput, opts ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointOutput, error)
	DeleteEndpoint(ctx context.Context, in *sagemaker.DeleteEndpointInput, opts ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointOutput, error)
	ListTags(ctx context.Context, in *sagemaker.ListTagsInput, opts ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error)
	AddTags(ctx context.Context, in *sagemaker.AddTagsInput, opts ...func(*sagemaker.Options)) (*sagemaker.AddTagsOutput, error)
	DeleteTags(ctx context.Context, in *sagemaker.DeleteTagsInput, opts ...func(*sagemaker.Options)) (*sagemaker.DeleteTagsOutput, error)
	ListEndpointConfigs(ctx context.Context, in *sagemaker.ListEndpointConfigsInput, opts ...func(*sagemaker.Options)) (*sagemaker.ListEndpointConfigsOutput, error)
	ListModels(ctx context.Context, in *sagemaker.ListModelsInput, opts ...func(*sagemaker.Options)) (*sagemaker.ListModelsOutput, error)
}

// Endpoint statuses of SageMaker.
const (
	EndpointCreating       = "Creating"
	EndpointInService      = "InService"
	EndpointUpdating       = "Updating"
	EndpointSystemUpdating = "SystemUpdating"
	EndpointRollingBack    = "RollingBack"
	EndpointDeleting       = "Deleting"
	EndpointFailed         = "Failed"
	EndpointOutOfService   = "OutOfService"
	EndpointUpdateRollback = "UpdateRollbackFailed"
)

// ErrServingExists is wrapped when a model, endpoint config or endpoint of
// the name exists already.
var ErrServingExists = errors.New("already exists")

// ServingModelConfig is a SageMaker model with one container.
type ServingModelConfig struct {
	Name         string
	Image        string
	ModelDataURI string
	Environment  map[string]string
	RoleARN      string
	Tags         map[string]string
	// SubnetIDs and SecurityGroupIDs are the model's VpcConfig: the
	// container's network interfaces go in these subnets with these
	// groups. None: SageMaker's own network.
	SubnetIDs        []string
	SecurityGroupIDs []string
	// NetworkIsolation is EnableNetworkIsolation: the container can make
	// no network call in or out.
	NetworkIsolation bool
}

// ServingVariantConfig is one production variant of an endpoint config:
// instances (InstanceType, InitialCount) or serverless (MemoryMB).
type ServingVariantConfig struct {
	Name           string
	ModelName      string
	InstanceType   string
	InitialCount   int32
	Weight         float32
	MemoryMB       int32 // serverless when > 0
	MaxConcurrency int32
}

// ServingDataCaptureConfig is an endpoint config's data capture.
type ServingDataCaptureConfig struct {
	Enabled            bool
	SamplingPercentage int32
	DestinationS3URI   string
	KMSKeyID           string
	CaptureModes       []string // Input, Output
}

// ServingEndpointConfigSpec is an endpoint config.
type ServingEndpointConfigSpec struct {
	Name        string
	Variants    []ServingVariantConfig
	DataCapture *ServingDataCaptureConfig
	KMSKeyID    string
	Tags        map[string]string
}

// ServingDeploymentConfig is the blue/green deployment of UpdateEndpoint.
type ServingDeploymentConfig struct {
	TrafficRouting         string // ALL_AT_ONCE, CANARY, LINEAR
	SizeType               string // CAPACITY_PERCENT, INSTANCE_COUNT (canary and linear)
	SizeValue              int32
	WaitSeconds            int32
	TerminationWaitSeconds int32
	MaxExecutionSeconds    int32
	RollbackAlarms         []string
}

// ServingVariantState is a variant as the endpoint runs it.
type ServingVariantState struct {
	Name         string
	CurrentCount int32
	DesiredCount int32
	Weight       float32
	Serverless   bool
}

// ServingEndpointInfo is an endpoint as DescribeEndpoint and ListTags give it.
type ServingEndpointInfo struct {
	Name          string
	ARN           string
	Status        string
	FailureReason string
	ConfigName    string
	Variants      []ServingVariantState
	Tags          map[string]string
	CreationTime  time.Time
}

// ServingEndpointConfigInfo is an endpoint config as described.
type ServingEndpointConfigInfo struct {
	ServingEndpointConfigSpec
	ARN string
}

// ServingModelInfo is a model as described.
type ServingModelInfo struct {
	ServingModelConfig
	ARN string
}

// isServingNotFound reports whether err says the thing does not exist:
// SageMaker answers a missing model, config or endpoint with a
// ValidationException "Could not find ...".
func isServingNotFound(err error) bool {
	if isFeatureStoreNotFound(err) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" && strings.Contains(ae.ErrorMessage(), "Could not find")
}

// isServingExists reports whether err says the name is taken.
func isServingExists(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	m := strings.ToLower(ae.ErrorMessage())
	return ae.ErrorCode() == "ResourceInUse" || strings.Contains(m, "already existing") || strings.Contains(m, "already exists")
}

func servingTags(ctx context.Context, api ServingAPI, arn string) (map[string]string, error) {
	tags := map[string]string{}
	var tok *string
	for {
		page, err := api.ListTags(ctx, &sagemaker.ListTagsInput{ResourceArn: aws.String(arn), NextToken: tok})
		if err != nil {
			return nil, err
		}
		for _, t := range page.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		if aws.ToString(page.NextToken) == "" || aws.ToString(page.NextToken) == aws.ToString(tok) {
			return tags, nil
		}
		tok = page.NextToken
	}
}

func sdkTags(m map[string]string) []types.Tag {
	var out []types.Tag
	for _, k := range sortedTagKeys(m) {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// FindServingEndpoint describes the endpoint name and lists its tags. A
// missing endpoint is ErrNotFound.
func FindServingEndpoint(ctx context.Context, api ServingAPI, name string) (*ServingEndpointInfo, error) {
	out, err := api.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
	if err != nil {
		if isServingNotFound(err) {
			return nil, fmt.Errorf("endpoint %s: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("describing endpoint %s: %w", name, err)
	}
	e := &ServingEndpointInfo{
		Name:          aws.ToString(out.EndpointName),
		ARN:           aws.ToString(out.EndpointArn),
		Status:        string(out.EndpointStatus),
		FailureReason: aws.ToString(out.FailureReason),
		ConfigName:    aws.ToString(out.EndpointConfigName),
		CreationTime:  aws.ToTime(out.CreationTime),
	}
	for _, v := range out.ProductionVariants {
		e.Variants = append(e.Variants, ServingVariantState{
			Name:         aws.ToString(v.VariantName),
			CurrentCount: aws.ToInt32(v.CurrentInstanceCount),
			DesiredCount: aws.ToInt32(v.DesiredInstanceCount),
			Weight:       aws.ToFloat32(v.CurrentWeight),
			Serverless:   v.CurrentServerlessConfig != nil,
		})
	}
	if e.ARN != "" {
		tags, err := servingTags(ctx, api, e.ARN)
		if err != nil {
			if isServingNotFound(err) {
				return nil, fmt.Errorf("endpoint %s: %w", name, ErrNotFound)
			}
			return nil, fmt.Errorf("listing tags of endpoint %s: %w", name, err)
		}
		e.Tags = tags
	}
	return e, nil
}

// FindServingEndpointConfig describes an endpoint config. A missing one is
// ErrNotFound.
func FindServingEndpointConfig(ctx context.Context, api ServingAPI, name string) (*ServingEndpointConfigInfo, error) {
	out, err := api.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: aws.String(name)})
	if err != nil {
		if isServingNotFound(err) {
			return nil, fmt.Errorf("endpoint config %s: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("describing endpoint config %s: %w", name, err)
	}
	c := &ServingEndpointConfigInfo{ARN: aws.ToString(out.EndpointConfigArn)}
	c.Name = aws.ToString(out.EndpointConfigName)
	c.KMSKeyID = aws.ToString(out.KmsKeyId)
	for _, v := range out.ProductionVariants {
		vc := ServingVariantConfig{
			Name:         aws.ToString(v.VariantName),
			ModelName:    aws.ToString(v.ModelName),
			InstanceType: string(v.InstanceType),
			InitialCount: aws.ToInt32(v.InitialInstanceCount),
			Weight:       aws.ToFloat32(v.InitialVariantWeight),
		}
		if s := v.ServerlessConfig; s != nil {
			vc.MemoryMB, vc.MaxConcurrency = aws.ToInt32(s.MemorySizeInMB), aws.ToInt32(s.MaxConcurrency)
		}
		c.Variants = append(c.Variants, vc)
	}
	if d := out.DataCaptureConfig; d != nil {
		dc := &ServingDataCaptureConfig{
			Enabled:            aws.ToBool(d.EnableCapture),
			SamplingPercentage: aws.ToInt32(d.InitialSamplingPercentage),
			DestinationS3URI:   aws.ToString(d.DestinationS3Uri),
			KMSKeyID:           aws.ToString(d.KmsKeyId),
		}
		for _, o := range d.CaptureOptions {
			dc.CaptureModes = append(dc.CaptureModes, string(o.CaptureMode))
		}
		c.DataCapture = dc
	}
	return c, nil
}

// FindServingModel describes a model. A missing one is ErrNotFound.
func FindServingModel(ctx context.Context, api ServingAPI, name string) (*ServingModelInfo, error) {
	out, err := api.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String(name)})
	if err != nil {
		if isServingNotFound(err) {
			return nil, fmt.Errorf("model %s: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("describing model %s: %w", name, err)
	}
	m := &ServingModelInfo{ARN: aws.ToString(out.ModelArn)}
	m.Name = aws.ToString(out.ModelName)
	m.RoleARN = aws.ToString(out.ExecutionRoleArn)
	m.NetworkIsolation = aws.ToBool(out.EnableNetworkIsolation)
	if v := out.VpcConfig; v != nil && (len(v.Subnets) > 0 || len(v.SecurityGroupIds) > 0) {
		// An empty VpcConfig (some emulators answer one) is none.
		m.SubnetIDs, m.SecurityGroupIDs = slices.Clone(v.Subnets), slices.Clone(v.SecurityGroupIds)
	}
	c := out.PrimaryContainer
	if c == nil && len(out.Containers) > 0 {
		c = &out.Containers[0]
	}
	if c != nil {
		m.Image = aws.ToString(c.Image)
		m.ModelDataURI = aws.ToString(c.ModelDataUrl)
		if len(c.Environment) > 0 {
			m.Environment = maps.Clone(c.Environment)
		}
	}
	return m, nil
}
