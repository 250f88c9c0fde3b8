package platform

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// fakeServing is a fake SageMaker for the serving verbs: models, configs and
// endpoints in memory, endpoint statuses scripted by the test, and a log of
// every call in order.
type fakeServing struct {
	mu        sync.Mutex
	calls     []string
	models    map[string]*sagemaker.CreateModelInput
	configs   map[string]*sagemaker.CreateEndpointConfigInput
	endpoints map[string]*fakeEndpoint
	tags      map[string]map[string]string
	// statuses the next describes of an endpoint report, in order; the last
	// one repeats. Empty: InService.
	statuses []string
	// rollback makes UpdateEndpoint end back on the old config, Failed
	// reason given.
	rollback string
	// deletePolls is how many describes a deleted endpoint stays Deleting.
	deletePolls int
}

type fakeEndpoint struct {
	arn, config, prevConfig string
	deleting                int
	updating                bool
	reason                  string
}

func newFakeServing() *fakeServing {
	return &fakeServing{models: map[string]*sagemaker.CreateModelInput{}, configs: map[string]*sagemaker.CreateEndpointConfigInput{},
		endpoints: map[string]*fakeEndpoint{}, tags: map[string]map[string]string{}}
}

func notFound(what string) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: "Could not find " + what}
}

func (f *fakeServing) log(s string) {
	f.calls = append(f.calls, s)
}

func (f *fakeServing) CreateModel(_ context.Context, in *sagemaker.CreateModelInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("CreateModel " + *in.ModelName)
	f.models[*in.ModelName] = in
	f.tags["arn:model/"+*in.ModelName] = fakeTags(in.Tags)
	return &sagemaker.CreateModelOutput{ModelArn: aws.String("arn:model/" + *in.ModelName)}, nil
}

func (f *fakeServing) DescribeModel(_ context.Context, in *sagemaker.DescribeModelInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeModelOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.models[*in.ModelName]
	if !ok {
		return nil, notFound("model")
	}
	return &sagemaker.DescribeModelOutput{ModelName: m.ModelName, ModelArn: aws.String("arn:model/" + *m.ModelName), ExecutionRoleArn: m.ExecutionRoleArn, PrimaryContainer: m.PrimaryContainer,
		VpcConfig: m.VpcConfig, EnableNetworkIsolation: m.EnableNetworkIsolation}, nil
}

func (f *fakeServing) DeleteModel(_ context.Context, in *sagemaker.DeleteModelInput, _ ...func(*sagemaker.Options)) (*sagemaker.DeleteModelOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("DeleteModel " + *in.ModelName)
	if _, ok := f.models[*in.ModelName]; !ok {
		return nil, notFound("model")
	}
	delete(f.models, *in.ModelName)
	return &sagemaker.DeleteModelOutput{}, nil
}

func (f *fakeServing) CreateEndpointConfig(_ context.Context, in *sagemaker.CreateEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("CreateEndpointConfig " + *in.EndpointConfigName)
	f.configs[*in.EndpointConfigName] = in
	f.tags["arn:endpoint-config/"+*in.EndpointConfigName] = fakeTags(in.Tags)
	return &sagemaker.CreateEndpointConfigOutput{EndpointConfigArn: aws.String("arn:endpoint-config/" + *in.EndpointConfigName)}, nil
}

func (f *fakeServing) DescribeEndpointConfig(_ context.Context, in *sagemaker.DescribeEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.configs[*in.EndpointConfigName]
	if !ok {
		return nil, notFound("endpoint config")
	}
	return &sagemaker.DescribeEndpointConfigOutput{EndpointConfigName: c.EndpointConfigName, EndpointConfigArn: aws.String("arn:endpoint-config/" + *c.EndpointConfigName), ProductionVariants: c.ProductionVariants, KmsKeyId: c.KmsKeyId}, nil
}

func (f *fakeServing) DeleteEndpointConfig(_ context.Context, in *sagemaker.DeleteEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointConfigOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("DeleteEndpointConfig " + *in.EndpointConfigName)
	for n, e := range f.endpoints {
		if e.config == *in.EndpointConfigName {
			return nil, fmt.Errorf("config %s in use by endpoint %s", *in.EndpointConfigName, n)
		}
	}
	delete(f.configs, *in.EndpointConfigName)
	return &sagemaker.DeleteEndpointConfigOutput{}, nil
}

func (f *fakeServing) CreateEndpoint(_ context.Context, in *sagemaker.CreateEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("CreateEndpoint " + *in.EndpointName)
	arn := "arn:endpoint/" + *in.EndpointName
	f.endpoints[*in.EndpointName] = &fakeEndpoint{arn: arn, config: *in.EndpointConfigName}
	f.tags[arn] = fakeTags(in.Tags)
	return &sagemaker.CreateEndpointOutput{EndpointArn: aws.String(arn)}, nil
}

func (f *fakeServing) DescribeEndpoint(_ context.Context, in *sagemaker.DescribeEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.endpoints[*in.EndpointName]
	if !ok {
		return nil, notFound("endpoint")
	}
	status := "InService"
	if len(f.statuses) > 0 {
		status = f.statuses[0]
		if len(f.statuses) > 1 {
			f.statuses = f.statuses[1:]
		}
	}
	if e.deleting > 0 {
		e.deleting--
		status = "Deleting"
		if e.deleting == 0 {
			delete(f.endpoints, *in.EndpointName)
		}
	} else if e.updating {
		e.updating = false
		status = "Updating"
		if f.rollback != "" {
			e.config, e.reason = e.prevConfig, f.rollback
		}
	}
	return &sagemaker.DescribeEndpointOutput{EndpointName: in.EndpointName, EndpointArn: aws.String(e.arn), EndpointStatus: types.EndpointStatus(status),
		EndpointConfigName: aws.String(e.config), FailureReason: aws.String(e.reason)}, nil
}

func (f *fakeServing) UpdateEndpoint(_ context.Context, in *sagemaker.UpdateEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("UpdateEndpoint " + *in.EndpointConfigName)
	e := f.endpoints[*in.EndpointName]
	e.prevConfig, e.config, e.updating = e.config, *in.EndpointConfigName, true
	return &sagemaker.UpdateEndpointOutput{}, nil
}

func (f *fakeServing) DeleteEndpoint(_ context.Context, in *sagemaker.DeleteEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("DeleteEndpoint " + *in.EndpointName)
	e, ok := f.endpoints[*in.EndpointName]
	if !ok {
		return nil, notFound("endpoint")
	}
	e.deleting = f.deletePolls + 1
	return &sagemaker.DeleteEndpointOutput{}, nil
}

func (f *fakeServing) ListTags(_ context.Context, in *sagemaker.ListTagsInput, _ ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []types.Tag
	for k, v := range f.tags[*in.ResourceArn] {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return &sagemaker.ListTagsOutput{Tags: out}, nil
}

func (f *fakeServing) AddTags(_ context.Context, in *sagemaker.AddTagsInput, _ ...func(*sagemaker.Options)) (*sagemaker.AddTagsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range in.Tags {
		f.tags[*in.ResourceArn][*x.Key] = *x.Value
	}
	return &sagemaker.AddTagsOutput{}, nil
}

func (f *fakeServing) DeleteTags(_ context.Context, in *sagemaker.DeleteTagsInput, _ ...func(*sagemaker.Options)) (*sagemaker.DeleteTagsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range in.TagKeys {
		delete(f.tags[*in.ResourceArn], k)
	}
	return &sagemaker.DeleteTagsOutput{}, nil
}

func fakeTags(in []types.Tag) map[string]string {
	t := map[string]string{}
	for _, x := range in {
		t[*x.Key] = *x.Value
	}
	return t
}

func (f *fakeServing) ListEndpointConfigs(_ context.Context, in *sagemaker.ListEndpointConfigsInput, _ ...func(*sagemaker.Options)) (*sagemaker.ListEndpointConfigsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &sagemaker.ListEndpointConfigsOutput{}
	for _, n := range slices.Sorted(maps.Keys(f.configs)) {
		if strings.Contains(n, aws.ToString(in.NameContains)) {
			out.EndpointConfigs = append(out.EndpointConfigs, types.EndpointConfigSummary{EndpointConfigName: aws.String(n), EndpointConfigArn: aws.String("arn:endpoint-config/" + n)})
		}
	}
	return out, nil
}

func (f *fakeServing) ListModels(_ context.Context, in *sagemaker.ListModelsInput, _ ...func(*sagemaker.Options)) (*sagemaker.ListModelsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &sagemaker.ListModelsOutput{}
	for _, n := range slices.Sorted(maps.Keys(f.models)) {
		if strings.Contains(n, aws.ToString(in.NameContains)) {
			out.Models = append(out.Models, types.ModelSummary{ModelName: aws.String(n), ModelArn: aws.String("arn:model/" + n)})
		}
	}
	return out, nil
}

func (f *fakeServing) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

var _ cloud.ServingAPI = (*fakeServing)(nil)

func servingSpec() ServingEndpointSpec {
	return ServingEndpointSpec{
		Name: "fraud",
		Model: ServingModel{
			Image:            "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:1",
			ModelDataURI:     "s3://models/fraud/model.tar.gz",
			ExecutionRoleARN: "arn:aws:iam::123456789012:role/serving",
		},
		Variants: []ServingVariant{{Name: "primary", InstanceType: "ml.m5.large", InitialInstanceCount: 1}},
	}
}

var fastWait = ServingWait{Timeout: 5 * time.Second, polling: PollingEvery(time.Millisecond)}

func TestServingCreateWaitsForInService(t *testing.T) {
	f := newFakeServing()
	f.statuses = []string{"Creating", "Creating", "InService"}
	var seen []string
	w := fastWait
	w.Progress = func(state string, _ time.Duration) { seen = append(seen, state) }
	ep, err := createServing(context.Background(), f, nil, servingSpec(), map[string]string{"team": "risk"}, "tok", w)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Status != "InService" || ep.LastDeployment != DeploymentCreated || ep.CreationToken != "tok" || !strings.HasPrefix(ep.ConfigName, "fraud-") {
		t.Errorf("endpoint = %+v", ep)
	}
	if !slices.Equal(seen, []string{"Creating", "Creating", "InService"}) {
		t.Errorf("progress = %v", seen)
	}
	if ep.Spec.Tags["team"] != "risk" || ep.Spec.Tags[ServingEndpointTokenTag] != "" {
		t.Errorf("tags = %v (the token is not a user tag)", ep.Spec.Tags)
	}
}

// A wait that runs out of time fails with the state last seen and the limit,
// and the endpoint is still returned so that the caller records it.
func TestServingCreateWaitTimeout(t *testing.T) {
	f := newFakeServing()
	f.statuses = []string{"Creating"}
	w := ServingWait{Timeout: 50 * time.Millisecond, polling: PollingEvery(5 * time.Millisecond)}
	ep, err := createServing(context.Background(), f, nil, servingSpec(), nil, "tok", w)
	if err == nil || !strings.Contains(err.Error(), "still Creating") || !strings.Contains(err.Error(), "timeout 50ms") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if ep == nil || ep.ARN != "arn:endpoint/fraud" || ep.CreationToken != "tok" {
		t.Fatalf("endpoint after timeout = %+v; want it recorded", ep)
	}
}

func TestServingCreateFailedCarriesReason(t *testing.T) {
	f := newFakeServing()
	f.statuses = []string{"Creating", "Failed"}
	ep, err := createServing(context.Background(), f, nil, servingSpec(), nil, "tok", fastWait)
	if err == nil || !strings.Contains(err.Error(), "is Failed") {
		t.Fatalf("err = %v", err)
	}
	if ep == nil {
		t.Fatal("a failed endpoint must be returned for the caller to record")
	}
}

func createdFake(t *testing.T) (*fakeServing, *ServingEndpoint) {
	t.Helper()
	f := newFakeServing()
	ep, err := createServing(context.Background(), f, nil, servingSpec(), nil, "tok", fastWait)
	if err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	return f, ep
}

func TestServingUpdateBlueGreen(t *testing.T) {
	f, ep := createdFake(t)
	s := servingSpec()
	s.Model.Image = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:2"
	got, err := updateServing(context.Background(), f, nil, ServingEndpointPrior{Spec: servingSpec(), ConfigName: ep.ConfigName, ModelName: ep.ModelName}, s, nil, fastWait)
	if err != nil {
		t.Fatal(err)
	}
	if got.ConfigName == ep.ConfigName || got.LastDeployment != DeploymentUpdated || got.Spec.Model.Image != s.Model.Image {
		t.Errorf("after update: %+v", got)
	}
	calls := f.callLog()
	// The old config and model go only after the new config serves.
	iUpdate := slices.Index(calls, "UpdateEndpoint "+got.ConfigName)
	iDelCfg := slices.Index(calls, "DeleteEndpointConfig "+ep.ConfigName)
	iDelModel := slices.Index(calls, "DeleteModel "+ep.ModelName)
	if iUpdate < 0 || iDelCfg < iUpdate || iDelModel < iDelCfg {
		t.Errorf("calls = %v; want UpdateEndpoint, then the old config, then the old model deleted", calls)
	}
	if _, ok := f.configs[ep.ConfigName]; ok {
		t.Error("old config still there")
	}
}

// SageMaker rolls the update back: the endpoint is InService again, on its
// old config. The update fails with SageMaker's reason, the old config and
// model stay, the new ones (which nothing serves) are deleted.
func TestServingUpdateRolledBack(t *testing.T) {
	f, ep := createdFake(t)
	f.rollback = "alarm fraud-p99 went to ALARM during the canary"
	s := servingSpec()
	s.Variants[0].InstanceType = "ml.g6.xlarge"
	got, err := updateServing(context.Background(), f, nil, ServingEndpointPrior{Spec: servingSpec(), ConfigName: ep.ConfigName, ModelName: ep.ModelName}, s, nil, fastWait)
	if !errors.Is(err, ErrServingRolledBack) || !strings.Contains(err.Error(), f.rollback) {
		t.Fatalf("err = %v; want ErrServingRolledBack with SageMaker's reason", err)
	}
	if got == nil || got.ConfigName != ep.ConfigName || got.LastDeployment != DeploymentRolledBack || got.Spec.Variants[0].InstanceType != "ml.m5.large" {
		t.Fatalf("after rollback: %+v", got)
	}
	if _, ok := f.configs[ep.ConfigName]; !ok {
		t.Error("the old config, which serves, was deleted")
	}
	if _, ok := f.models[ep.ModelName]; !ok {
		t.Error("the old model, which serves, was deleted")
	}
	if len(f.configs) != 1 || len(f.models) != 1 {
		t.Errorf("configs %d, models %d left; want the new ones deleted", len(f.configs), len(f.models))
	}
}

// Tags alone change in place: no new config, no UpdateEndpoint.
func TestServingUpdateTagsOnly(t *testing.T) {
	f, ep := createdFake(t)
	s := servingSpec()
	got, err := updateServing(context.Background(), f, nil, ServingEndpointPrior{Spec: servingSpec(), ConfigName: ep.ConfigName}, s, map[string]string{"team": "fraud"}, fastWait)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range f.callLog() {
		if strings.HasPrefix(c, "Create") || strings.HasPrefix(c, "UpdateEndpoint") {
			t.Errorf("call %s for a tag change", c)
		}
	}
	if got.Spec.Tags["team"] != "fraud" || got.CreationToken != "tok" {
		t.Errorf("tags = %v, token %q", got.Spec.Tags, got.CreationToken)
	}
}

func TestServingDeleteOrder(t *testing.T) {
	f, ep := createdFake(t)
	f.deletePolls = 2
	if err := deleteServing(context.Background(), f, nil, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName}, fastWait); err != nil {
		t.Fatal(err)
	}
	want := []string{"DeleteEndpoint fraud", "DeleteEndpointConfig " + ep.ConfigName, "DeleteModel " + ep.ModelName}
	if got := f.callLog(); !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	if len(f.endpoints)+len(f.configs)+len(f.models) != 0 {
		t.Error("something is left")
	}
	// Again: everything is gone already, which is no error.
	if err := deleteServing(context.Background(), f, nil, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName}, fastWait); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func TestServingDeleteWaitTimeout(t *testing.T) {
	f, ep := createdFake(t)
	f.deletePolls = 1 << 20
	w := ServingWait{Timeout: 30 * time.Millisecond, polling: PollingEvery(5 * time.Millisecond)}
	err := deleteServing(context.Background(), f, nil, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName}, w)
	if err == nil || !strings.Contains(err.Error(), "still Deleting") {
		t.Fatalf("err = %v", err)
	}
	// The config and model are not deleted while the endpoint may use them.
	if len(f.configs) != 1 || len(f.models) != 1 {
		t.Errorf("configs %d, models %d; want both kept while the endpoint is being deleted", len(f.configs), len(f.models))
	}
}
