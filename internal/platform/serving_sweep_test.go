package platform

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// An update cut off by its timeout while SageMaker still deploys leaves
// both configs and models (either may end up serving). Once the endpoint
// serves the new config, the next read finds the old config and model,
// proves by the creation token that this resource made them, and deletes
// them; a config and model of the same name pattern that do not carry the
// token (made by someone else) stay.
func TestServingReadSweepsAfterTimedOutUpdate(t *testing.T) {
	f, ep := createdFake(t)
	// Someone else's config and model under a name of the same pattern.
	for _, n := range []string{"fraud-0badc0de", "fraud-1badc0de"} {
		if _, err := f.CreateModel(context.Background(), &sagemaker.CreateModelInput{ModelName: aws.String(n),
			Tags: []types.Tag{{Key: aws.String(ServingEndpointTokenTag), Value: aws.String("another")}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.CreateEndpointConfig(context.Background(), &sagemaker.CreateEndpointConfigInput{EndpointConfigName: aws.String("fraud-0badc0de"),
		ProductionVariants: []types.ProductionVariant{{VariantName: aws.String("a"), ModelName: aws.String("fraud-0badc0de")}}}); err != nil {
		t.Fatal(err)
	}
	s := servingSpec()
	s.Model.Image = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:2"
	prior := ServingEndpointPrior{Spec: servingSpec(), ConfigName: ep.ConfigName, ModelName: ep.ModelName}
	f.statuses = []string{"InService", "Updating"} // the update outlasts its wait
	w := ServingWait{Timeout: 30 * time.Millisecond, polling: PollingEvery(5 * time.Millisecond)}
	if _, err := updateServing(context.Background(), f, nil, prior, s, nil, w); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("update err = %v, want the wait's timeout", err)
	}
	if len(f.configs) != 3 || len(f.models) != 4 {
		t.Fatalf("after the cut-off update: %d configs, %d models; want both of ours kept (and the other's)", len(f.configs), len(f.models))
	}
	// Still updating: a read deletes nothing.
	got, err := readServing(context.Background(), f, nil, "fraud", prior)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.configs[ep.ConfigName]; !ok || got.Status != "Updating" {
		t.Fatalf("a read while updating (%s) deleted the old config", got.Status)
	}
	f.statuses = nil // SageMaker finishes the deployment
	got, err = readServing(context.Background(), f, nil, "fraud", prior)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConfigName == ep.ConfigName || len(got.Warnings) > 0 {
		t.Fatalf("read: config %s, warnings %v", got.ConfigName, got.Warnings)
	}
	if _, ok := f.configs[ep.ConfigName]; ok {
		t.Error("the old config, unused and ours, was kept")
	}
	if _, ok := f.models[ep.ModelName]; ok {
		t.Error("the old model, unused and ours, was kept")
	}
	if _, ok := f.configs[got.ConfigName]; !ok {
		t.Error("the serving config was deleted")
	}
	if _, ok := f.models[got.ModelName]; !ok {
		t.Error("the serving model was deleted")
	}
	for _, n := range []string{"fraud-0badc0de", "fraud-1badc0de"} {
		if _, ok := f.models[n]; !ok {
			t.Errorf("model %s, not ours, was deleted", n)
		}
	}
	if _, ok := f.configs["fraud-0badc0de"]; !ok {
		t.Error("a config not ours was deleted")
	}
	// A second read has nothing left to do.
	before := len(f.callLog())
	if _, err := readServing(context.Background(), f, nil, "fraud", ServingEndpointPrior{ConfigName: got.ConfigName}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.callLog()) - before; n != 0 {
		t.Errorf("a read of a settled endpoint wrote %d times", n)
	}
}

// An update that rolled back after its wait was cut off leaves the new
// config and model unused: the next update finds and deletes them before
// it deploys again.
func TestServingUpdateSweepsRolledBackLeftovers(t *testing.T) {
	f, ep := createdFake(t)
	// The leftovers of the cut-off update, tagged with the endpoint's token.
	tags := []types.Tag{{Key: aws.String(ServingEndpointTokenTag), Value: aws.String("tok")}}
	if _, err := f.CreateModel(context.Background(), &sagemaker.CreateModelInput{ModelName: aws.String("fraud-deadbeef"), Tags: tags}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateEndpointConfig(context.Background(), &sagemaker.CreateEndpointConfigInput{EndpointConfigName: aws.String("fraud-deadbeef"), Tags: tags,
		ProductionVariants: []types.ProductionVariant{{VariantName: aws.String("primary"), ModelName: aws.String("fraud-deadbeef")}}}); err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	s := servingSpec()
	s.Model.Image = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:3"
	got, err := updateServing(context.Background(), f, nil, ServingEndpointPrior{Spec: servingSpec(), ConfigName: ep.ConfigName, ModelName: ep.ModelName}, s, nil, fastWait)
	if err != nil {
		t.Fatal(err)
	}
	calls := f.callLog()
	if i, j := slices.Index(calls, "DeleteEndpointConfig fraud-deadbeef"), slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, "UpdateEndpoint") }); i < 0 || i > j {
		t.Errorf("calls %v: want the leftover config deleted before the deployment", calls)
	}
	if len(f.configs) != 1 || len(f.models) != 1 || f.configs[got.ConfigName] == nil {
		t.Errorf("configs %v, models %v: want only the new pair", slices.Collect(maps.Keys(f.configs)), slices.Collect(maps.Keys(f.models)))
	}
}

// Delete removes the leftovers too, once the endpoint is gone.
func TestServingDeleteSweepsLeftovers(t *testing.T) {
	f, ep := createdFake(t)
	tags := []types.Tag{{Key: aws.String(ServingEndpointTokenTag), Value: aws.String("tok")}}
	if _, err := f.CreateModel(context.Background(), &sagemaker.CreateModelInput{ModelName: aws.String("fraud-deadbeef"), Tags: tags}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateModel(context.Background(), &sagemaker.CreateModelInput{ModelName: aws.String("fraud-feedface")}); err != nil {
		t.Fatal(err)
	}
	if err := deleteServing(context.Background(), f, nil, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName}, fastWait); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.models["fraud-deadbeef"]; ok {
		t.Error("an owned leftover model survived the delete")
	}
	if _, ok := f.models["fraud-feedface"]; !ok {
		t.Error("a model without the token was deleted")
	}
}

// An endpoint deleted outside: the read says not found, and the config and
// model recorded for it (they carry the token) are deleted with it.
func TestServingReadDisappearedDropsRecorded(t *testing.T) {
	f, ep := createdFake(t)
	delete(f.endpoints, "fraud")
	_, err := readServing(context.Background(), f, nil, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if len(f.configs)+len(f.models) != 0 {
		t.Errorf("configs %v, models %v left", slices.Collect(maps.Keys(f.configs)), slices.Collect(maps.Keys(f.models)))
	}
}

// A planned create of a name an endpoint made outside the provider (no
// token) already has is refused on the name with the fix; no write. A free
// name passes, and so does an endpoint with a token (this resource's own,
// tainted: the apply replaces it, or refuses another's).
func TestServingCheckCreateRefusesExisting(t *testing.T) {
	f := newFakeServing()
	if errs, err := checkServingCreate(context.Background(), f, "fraud"); err != nil || len(errs) != 0 {
		t.Fatalf("free name: %v, %v", errs, err)
	}
	if _, err := f.CreateEndpoint(context.Background(), &sagemaker.CreateEndpointInput{EndpointName: aws.String("fraud"), EndpointConfigName: aws.String("theirs")}); err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	errs, err := checkServingCreate(context.Background(), f, "fraud")
	if err != nil || len(errs) != 1 || errs[0].Path != "name" {
		t.Fatalf("errs = %v, err = %v; want one error on name", errs, err)
	}
	for _, w := range []string{"already exists", "made outside this provider", "import it", "choose another name"} {
		if !strings.Contains(errs[0].Detail, w) {
			t.Errorf("message %q lacks %q", errs[0].Detail, w)
		}
	}
	if calls := f.callLog(); len(calls) != 0 {
		t.Errorf("writes: %v", calls)
	}
	f.tags["arn:endpoint/fraud"][ServingEndpointTokenTag] = "someone"
	if errs, err := checkServingCreate(context.Background(), f, "fraud"); len(errs) != 0 || err != nil {
		t.Errorf("endpoint with a token: %v, %v; want it left to the apply", errs, err)
	}
}

// Data capture on a serverless endpoint is refused on data_capture:
// SageMaker serverless endpoints do not capture.
func TestServingValidateCaptureOnServerless(t *testing.T) {
	s := servingSpec()
	s.Variants = []ServingVariant{{Name: "small", Serverless: &ServingServerless{MemoryMB: 2048, MaxConcurrency: 5}}}
	s.DataCapture = &ServingDataCapture{Enabled: true, SamplingPercentage: 10, DestinationS3URI: "s3://capture/fraud"}
	errs := ValidateServingEndpoint(s, nil)
	if len(errs) != 1 || errs[0].Path != "data_capture" || !strings.Contains(errs[0].Detail, "serverless") {
		t.Fatalf("errs = %v", errs)
	}
	s.DataCapture.Enabled = false
	if errs := ValidateServingEndpoint(s, nil); len(errs) != 0 {
		t.Errorf("capture disabled: %v", errs)
	}
}
