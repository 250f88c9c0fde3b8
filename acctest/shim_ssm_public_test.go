package acctest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/platform"
)

const (
	dlamiParameter = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
	al2023x86      = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
)

func ssmClient(endpoint, region string) *ssm.Client {
	return ssm.NewFromConfig(sdkConfig(region), func(o *ssm.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// TestSSMPublicParameters_getParameter: the Deep Learning Base AMI public
// parameter (the product's default training image), which moto alone does
// not have, answers as on AWS with an AMI moto's EC2 describes in the same
// region, and the core resolves it; other names still reach moto.
func TestSSMPublicParameters_getParameter(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)

	if got := platform.DefaultPlatform().TrainingImage; got != dlamiParameter {
		t.Fatalf("the default training image is %q; publish it in ssmPublicParameters", got)
	}
	if _, err := ssmClient(h.Moto.URL, Region).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(dlamiParameter)}); apiCode(err) != "ParameterNotFound" {
		t.Fatalf("moto alone answers %s with %v: is the double still needed?", dlamiParameter, err)
	}

	for _, region := range []string{Region, "us-east-1"} {
		c := ssmClient(h.URL, region)
		al, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(al2023x86)})
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(dlamiParameter)})
		if err != nil {
			t.Fatalf("%s: %v", region, err)
		}
		p := out.Parameter
		wantARN := fmt.Sprintf("arn:aws:ssm:%s::parameter%s", region, dlamiParameter)
		if aws.ToString(p.Name) != dlamiParameter || p.Type != ssmtypes.ParameterTypeString || aws.ToString(p.ARN) != wantARN ||
			p.Version < 1 || aws.ToString(p.DataType) != "text" || p.LastModifiedDate == nil || p.Selector != nil {
			t.Errorf("%s: parameter %+v (name %q, ARN %q), want its own name, String, ARN %s, a version", region, p, aws.ToString(p.Name), aws.ToString(p.ARN), wantARN)
		}
		if v := aws.ToString(p.Value); v != aws.ToString(al.Parameter.Value) || !strings.HasPrefix(v, "ami-") {
			t.Errorf("%s: value %q, want moto's Amazon Linux 2023 AMI %q", region, v, aws.ToString(al.Parameter.Value))
		}

		// The AMI exists in moto's EC2 of that region: the core resolves
		// the parameter to it, as the GPU cluster's plan does.
		e := ec2.NewFromConfig(sdkConfig(region), func(o *ec2.Options) { o.BaseEndpoint = aws.String(h.URL) })
		im, err := cloud.ResolveImage(ctx, e, c, dlamiParameter)
		if err != nil || im.ID != aws.ToString(p.Value) || im.Architecture != "x86_64" || im.RootDeviceName == "" {
			t.Errorf("%s: ResolveImage(%s) = %+v, %v", region, dlamiParameter, im, err)
		}
		if _, err := cloud.ResolveImage(ctx, e, c, "resolve:ssm:"+dlamiParameter); err != nil {
			t.Errorf("%s: ResolveImage(resolve:ssm:...): %v", region, err)
		}

		// A version selector is moto's version of the backing parameter;
		// AWS names the selector in the answer.
		sel := fmt.Sprintf(":%d", p.Version)
		out, err = c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(dlamiParameter + sel)})
		if err != nil || aws.ToString(out.Parameter.Name) != dlamiParameter || aws.ToString(out.Parameter.Selector) != sel {
			t.Errorf("%s: GetParameter(%s%s) = %+v, %v", region, dlamiParameter, sel, out, err)
		}
		_, err = c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(dlamiParameter + ":99999")})
		if apiCode(err) != "ParameterVersionNotFound" || !strings.Contains(err.Error(), dlamiParameter) || strings.Contains(err.Error(), al2023x86) {
			t.Errorf("%s: an unknown version: %v, want ParameterVersionNotFound naming %s", region, err, dlamiParameter)
		}
	}

	// Other names reach moto unchanged.
	c := ssmClient(h.URL, Region)
	if _, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/aws/service/deeplearning/ami/x86_64/not-published/latest/ami-id")}); apiCode(err) != "ParameterNotFound" {
		t.Errorf("an unpublished Deep Learning name: %v, want ParameterNotFound", err)
	}
	if _, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/team/secret"), Value: aws.String("s3cr3t"), Type: ssmtypes.ParameterTypeSecureString}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/team/secret"), WithDecryption: aws.Bool(true)})
	if err != nil || aws.ToString(out.Parameter.Value) != "s3cr3t" || out.Parameter.Type != ssmtypes.ParameterTypeSecureString {
		t.Errorf("a parameter of the account: %+v, %v", out, err)
	}
}

// TestSSMPublicParameters_getParameters: GetParameters answers the published
// parameters beside moto's, names the ones nobody has as invalid, and leaves
// a call without a published name to moto.
func TestSSMPublicParameters_getParameters(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	c := ssmClient(h.URL, Region)
	if _, err := c.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/team/secret"), Value: aws.String("s3cr3t"), Type: ssmtypes.ParameterTypeSecureString}); err != nil {
		t.Fatal(err)
	}
	al, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(al2023x86)})
	if err != nil {
		t.Fatal(err)
	}

	out, err := c.GetParameters(ctx, &ssm.GetParametersInput{
		Names:          []string{dlamiParameter, "/nope", al2023x86, "/team/secret", dlamiParameter + ":99999"},
		WithDecryption: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ssmtypes.Parameter{}
	for _, p := range out.Parameters {
		got[aws.ToString(p.Name)] = p
	}
	if len(got) != 3 {
		t.Errorf("parameters %v, want %s, %s and /team/secret", slices.Sorted(maps.Keys(got)), dlamiParameter, al2023x86)
	}
	dl := got[dlamiParameter]
	if aws.ToString(dl.Value) != aws.ToString(al.Parameter.Value) || dl.Type != ssmtypes.ParameterTypeString ||
		aws.ToString(dl.ARN) != "arn:aws:ssm:"+Region+"::parameter"+dlamiParameter || dl.Version < 1 {
		t.Errorf("%s: %+v (ARN %q)", dlamiParameter, dl, aws.ToString(dl.ARN))
	}
	if aws.ToString(got[al2023x86].Value) != aws.ToString(al.Parameter.Value) {
		t.Errorf("%s: %+v", al2023x86, got[al2023x86])
	}
	if aws.ToString(got["/team/secret"].Value) != "s3cr3t" {
		t.Errorf("/team/secret not decrypted: %+v", got["/team/secret"])
	}
	slices.Sort(out.InvalidParameters)
	if want := []string{dlamiParameter + ":99999", "/nope"}; !slices.Equal(out.InvalidParameters, want) {
		t.Errorf("invalid parameters %q, want %q", out.InvalidParameters, want)
	}

	// Only published names.
	out, err = c.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{dlamiParameter}})
	if err != nil || len(out.Parameters) != 1 || len(out.InvalidParameters) != 0 || aws.ToString(out.Parameters[0].Name) != dlamiParameter {
		t.Errorf("GetParameters(%s) = %+v, %v", dlamiParameter, out, err)
	}
	// No published name: moto's answer.
	out, err = c.GetParameters(ctx, &ssm.GetParametersInput{Names: []string{"/nope", al2023x86}})
	if err != nil || len(out.Parameters) != 1 || !slices.Equal(out.InvalidParameters, []string{"/nope"}) {
		t.Errorf("GetParameters without a published name = %+v, %v", out, err)
	}
}
