package acctest

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// TestModelIsolationDouble: moto alone drops a model's
// EnableNetworkIsolation (it describes every model with false) and answers
// an empty VpcConfig for a model made without one; through the shim a model
// is described with the isolation it was made with and without a
// VpcConfig it was not given, as SageMaker describes it, and a VpcConfig
// given comes back as given. A reset forgets.
func TestModelIsolationDouble(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	client := func(url string) *sagemaker.Client {
		return sagemaker.NewFromConfig(sdkConfig(Region), func(o *sagemaker.Options) { o.BaseEndpoint = aws.String(url) })
	}
	moto, shim := client(h.Moto.URL), client(h.URL)
	vpc := &smtypes.VpcConfig{Subnets: []string{"subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"}, SecurityGroupIds: []string{"sg-0a1b2c3d4e5f60718"}}
	create := func(c *sagemaker.Client, name string, isolated bool, v *smtypes.VpcConfig) {
		t.Helper()
		if _, err := c.CreateModel(ctx, &sagemaker.CreateModelInput{ModelName: aws.String(name), ExecutionRoleArn: aws.String("arn:aws:iam::123456789012:role/r"),
			PrimaryContainer:       &smtypes.ContainerDefinition{Image: aws.String("123456789012.dkr.ecr.me-central-1.amazonaws.com/x:1")},
			EnableNetworkIsolation: aws.Bool(isolated), VpcConfig: v}); err != nil {
			t.Fatal(err)
		}
	}
	describe := func(c *sagemaker.Client, name string) *sagemaker.DescribeModelOutput {
		t.Helper()
		out, err := c.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	create(moto, "direct", true, nil)
	if out := describe(moto, "direct"); aws.ToBool(out.EnableNetworkIsolation) || out.VpcConfig == nil || len(out.VpcConfig.Subnets) != 0 {
		t.Fatalf("moto describes a model made isolated and without a VPC as isolation %v, VpcConfig %+v: is the double still needed?", aws.ToBool(out.EnableNetworkIsolation), out.VpcConfig)
	}

	create(shim, "isolated", true, vpc)
	create(shim, "open", false, nil)
	if out := describe(shim, "isolated"); !aws.ToBool(out.EnableNetworkIsolation) || out.VpcConfig == nil ||
		!slices.Equal(out.VpcConfig.Subnets, vpc.Subnets) || !slices.Equal(out.VpcConfig.SecurityGroupIds, vpc.SecurityGroupIds) {
		t.Errorf("isolated model described as isolation %v, VpcConfig %+v", aws.ToBool(out.EnableNetworkIsolation), out.VpcConfig)
	}
	if out := describe(shim, "open"); aws.ToBool(out.EnableNetworkIsolation) || out.VpcConfig != nil {
		t.Errorf("open model described as isolation %v, VpcConfig %+v", aws.ToBool(out.EnableNetworkIsolation), out.VpcConfig)
	}
	if err := h.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	create(moto, "isolated", false, nil) // the same name, made outside the shim after a reset
	if out := describe(shim, "isolated"); aws.ToBool(out.EnableNetworkIsolation) {
		t.Error("the double kept a model's isolation across a reset")
	}
}
