package pulumi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

// The Pulumi front end of the serving endpoint under the faults of
// mlplatform_serving_endpoint: the behaviour is the core's, these check that
// the front end passes it on.

func servingInputs(image string) property.Map {
	return property.NewMap(map[string]property.Value{
		"name": property.New("fraud"),
		"model": property.New(property.NewMap(map[string]property.Value{
			"image":            property.New(image),
			"modelDataUri":     property.New("s3://uae-models/fraud/model.tar.gz"),
			"executionRoleArn": property.New("arn:aws:iam::123456789012:role/serving"),
		})),
		"variants": property.New([]property.Value{property.New(property.NewMap(map[string]property.Value{
			"name":                 property.New("primary"),
			"instanceType":         property.New("ml.m5.large"),
			"initialInstanceCount": property.New(1.0),
		}))}),
		"tags": property.New(property.NewMap(map[string]property.Value{"team": property.New("fraud")})),
	})
}

const (
	svTestImage  = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:1"
	svTestImage2 = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:2"
)

// Every create call's answer lost: the endpoint is created once and
// adopted by its token. An update whose UpdateEndpoint answer is lost
// completes. The endpoint then deleted outside: the refresh drops it, with
// the config and model recorded for it.
func TestServingEndpoint_lostAnswersAndDisappears(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-models")
	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("ServingEndpoint", "fraud")
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: servingInputs(svTestImage)})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	for _, action := range []string{"CreateModel", "CreateEndpointConfig", "CreateEndpoint"} {
		t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: action, LoseResponse: true, Times: 1}))
	}
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create with its answers lost: %v", err)
	}
	if got := created.Properties.Get("status").AsString(); got != "InService" {
		t.Fatalf("status %q", got)
	}
	// The lost create and the SDK's retry, told the name is taken.
	if n := len(h.Shim.Calls("sagemaker", "CreateEndpoint")); n != 2 {
		t.Fatalf("%d CreateEndpoint calls, want the lost one and its retry", n)
	}
	if cs := h.SageMakerEndpoints.Configs(acctest.Region); len(cs) != 1 || cs[0] != created.Properties.Get("endpointConfigName").AsString() {
		t.Fatalf("configs %v, want the endpoint's one", cs)
	}

	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "UpdateEndpoint", LoseResponse: true, Times: 1}))
	check2, err := s.Check(p.CheckRequest{Urn: u, State: check.Inputs, Inputs: servingInputs(svTestImage2)})
	if err != nil || len(check2.Failures) > 0 {
		t.Fatalf("check of the update: %v %+v", err, check2.Failures)
	}
	updated, err := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, OldInputs: check.Inputs, Inputs: check2.Inputs})
	if err != nil {
		t.Fatalf("update with its answer lost: %v", err)
	}
	if got := updated.Properties.Get("lastDeploymentOutcome").AsString(); got != "Updated" {
		t.Fatalf("last deployment %q, want Updated", got)
	}
	if cs := h.SageMakerEndpoints.Configs(acctest.Region); len(cs) != 1 || cs[0] != updated.Properties.Get("endpointConfigName").AsString() {
		t.Fatalf("configs %v, want only the new one", cs)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SageMaker.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String("fraud")}); err != nil {
		t.Fatal(err)
	}
	_, _ = c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("fraud")}) // Deleting, then gone
	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: check2.Inputs})
	if err != nil || read.ID != "" {
		t.Fatalf("refresh of an endpoint deleted outside: id %q, %v; want it dropped", read.ID, err)
	}
	if cs := h.SageMakerEndpoints.Configs(acctest.Region); len(cs) != 0 {
		t.Errorf("configs %v left after the endpoint disappeared", cs)
	}
	ms, err := c.SageMaker.ListModels(ctx, &sagemaker.ListModelsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms.Models) != 0 {
		t.Errorf("%d models left after the endpoint disappeared", len(ms.Models))
	}
}

// An endpoint of the name made outside the provider fails Check of a create
// on name with "import it", with no write; Check of an update (old inputs)
// does not look.
func TestServingEndpoint_checkRefusesForeign(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-models")
	s := newServer(t, h, awsManagedKeys(nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SageMaker.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{EndpointConfigName: aws.String("theirs"),
		ProductionVariants: []smtypes.ProductionVariant{{VariantName: aws.String("a"), ModelName: aws.String("m"), InstanceType: "ml.m5.large", InitialInstanceCount: aws.Int32(1)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SageMaker.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String("fraud"), EndpointConfigName: aws.String("theirs")}); err != nil {
		t.Fatal(err)
	}
	h.Shim.ResetLog()
	u := urn("ServingEndpoint", "fraud")
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: servingInputs(svTestImage)})
	if err != nil {
		t.Fatal(err)
	}
	if len(check.Failures) != 1 || check.Failures[0].Property != "name" || !strings.Contains(check.Failures[0].Reason, "already exists") || !strings.Contains(check.Failures[0].Reason, "import it") {
		t.Fatalf("failures = %+v, want one on name saying to import it", check.Failures)
	}
	assertNoWrites(t, h)
	if n := len(h.Shim.Calls("sagemaker", "DescribeEndpoint")); n != 1 {
		t.Errorf("%d DescribeEndpoint calls for one planned create, want 1", n)
	}
	h.Shim.ResetLog()
	upd, err := s.Check(p.CheckRequest{Urn: u, State: servingInputs(svTestImage), Inputs: servingInputs(svTestImage2)})
	if err != nil || len(upd.Failures) != 0 {
		t.Fatalf("check of an update: %v %+v", err, upd.Failures)
	}
	if n := len(h.Shim.Calls("sagemaker", "DescribeEndpoint")); n != 0 {
		t.Errorf("check of an update described the endpoint %d times", n)
	}
}

// The endpoint's network under faults: a throttled subnet lookup is retried
// and Check passes; a security group lookup that fails fails Check (never
// a pass on a check that did not run); at create, a subnet lookup that fails
// fails the create before any write; a CreateModel whose answer is lost
// makes one model, in the VPC and network-isolated, adopted by its name.
func TestServingEndpoint_networkFaults(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-models")
	s := newServer(t, h, awsManagedKeys(nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := h.Network(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u := urn("ServingEndpoint", "fraud")
	inputs := servingNetworkInputs(ids(n.Subnets["mec1-az1"]), ids(n.SecurityGroup), nil)

	h.Shim.Throttle("ec2", "DescribeSubnets", 1)
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check with a throttled subnet lookup: %v %+v", err, check.Failures)
	}
	h.Shim.InjectError("ec2", "DescribeSecurityGroups", "UnauthorizedOperation", "not authorized (injected)", 1)
	if _, err := s.Check(p.CheckRequest{Urn: u, Inputs: inputs}); err == nil || !strings.Contains(err.Error(), "security groups") {
		t.Fatalf("check with a failed security group lookup: %v, want an error", err)
	}

	h.Shim.ResetLog()
	h.Shim.InjectError("ec2", "DescribeSubnets", "UnauthorizedOperation", "not authorized (injected)", 1)
	if _, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs}); err == nil || !strings.Contains(err.Error(), "subnets") {
		t.Fatalf("create with a failed subnet lookup: %v, want an error", err)
	}
	assertNoWrites(t, h)

	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "CreateModel", LoseResponse: true, Times: 1}))
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create with the CreateModel answer lost: %v", err)
	}
	if n, err := countModels(ctx, h); err != nil || n != 1 {
		t.Fatalf("%d models (%v), want one", n, err)
	}
	m, err := h.ServingModel(ctx, "fraud")
	if err != nil {
		t.Fatal(err)
	}
	if m.ModelName == nil || *m.ModelName != created.Properties.Get("modelName").AsString() || !aws.ToBool(m.EnableNetworkIsolation) ||
		m.VpcConfig == nil || len(m.VpcConfig.Subnets) != 1 || m.VpcConfig.Subnets[0] != n.Subnets["mec1-az1"] {
		t.Fatalf("model served %+v, want the recorded one, isolated, in %s", m, n.Subnets["mec1-az1"])
	}
}

func countModels(ctx context.Context, h *acctest.Harness) (int, error) {
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return 0, err
	}
	ms, err := c.SageMaker.ListModels(ctx, &sagemaker.ListModelsInput{})
	if err != nil {
		return 0, err
	}
	return len(ms.Models), nil
}
