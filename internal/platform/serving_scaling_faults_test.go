package platform

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/smithy-go"
)

// fakeScaling is a test double of Application Auto Scaling for the fault
// cases moto cannot script: targets and policies in memory, calls logged
// into the SageMaker fake's log (one order across both services), and
// per-operation faults: "fail" (refused, nothing done) or "lose" (done, the
// answer lost).
type fakeScaling struct {
	sm       *fakeServing
	targets  map[string][2]int32
	policies map[string]aastypes.TargetTrackingScalingPolicyConfiguration
	faults   map[string]string
	// scheduled: resource id -> action name -> action (see
	// serving_schedule_test.go); like moto, deregistering keeps them.
	scheduled map[string]map[string]aastypes.ScheduledAction
}

func newFakeScaling(sm *fakeServing) *fakeScaling {
	return &fakeScaling{sm: sm, targets: map[string][2]int32{}, policies: map[string]aastypes.TargetTrackingScalingPolicyConfiguration{}, faults: map[string]string{}}
}

var errThrottled = &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}

// fault logs op and says whether to act, and what to answer.
func (f *fakeScaling) fault(op string) (act bool, err error) {
	f.sm.mu.Lock()
	f.sm.log("aas:" + op)
	f.sm.mu.Unlock()
	switch f.faults[op] {
	case "fail":
		delete(f.faults, op)
		return false, errThrottled
	case "lose":
		delete(f.faults, op)
		return true, errors.New("read tcp: connection reset by peer")
	}
	return true, nil
}

func (f *fakeScaling) RegisterScalableTarget(_ context.Context, in *applicationautoscaling.RegisterScalableTargetInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error) {
	act, err := f.fault("RegisterScalableTarget")
	if act {
		f.targets[aws.ToString(in.ResourceId)] = [2]int32{aws.ToInt32(in.MinCapacity), aws.ToInt32(in.MaxCapacity)}
	}
	return &applicationautoscaling.RegisterScalableTargetOutput{}, err
}

func (f *fakeScaling) DeregisterScalableTarget(_ context.Context, in *applicationautoscaling.DeregisterScalableTargetInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeregisterScalableTargetOutput, error) {
	act, err := f.fault("DeregisterScalableTarget")
	if act {
		if _, ok := f.targets[aws.ToString(in.ResourceId)]; !ok && err == nil {
			return nil, &aastypes.ObjectNotFoundException{Message: aws.String("No scalable target found")}
		}
		delete(f.targets, aws.ToString(in.ResourceId))
		delete(f.policies, aws.ToString(in.ResourceId))
	}
	return &applicationautoscaling.DeregisterScalableTargetOutput{}, err
}

func (f *fakeScaling) DescribeScalableTargets(_ context.Context, _ *applicationautoscaling.DescribeScalableTargetsInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error) {
	out := &applicationautoscaling.DescribeScalableTargetsOutput{}
	for id, mm := range f.targets {
		out.ScalableTargets = append(out.ScalableTargets, aastypes.ScalableTarget{ResourceId: aws.String(id), MinCapacity: aws.Int32(mm[0]), MaxCapacity: aws.Int32(mm[1])})
	}
	return out, nil
}

func (f *fakeScaling) PutScalingPolicy(_ context.Context, in *applicationautoscaling.PutScalingPolicyInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScalingPolicyOutput, error) {
	act, err := f.fault("PutScalingPolicy")
	if act {
		f.policies[aws.ToString(in.ResourceId)] = *in.TargetTrackingScalingPolicyConfiguration
	}
	return &applicationautoscaling.PutScalingPolicyOutput{}, err
}

func (f *fakeScaling) DescribeScalingPolicies(_ context.Context, in *applicationautoscaling.DescribeScalingPoliciesInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalingPoliciesOutput, error) {
	out := &applicationautoscaling.DescribeScalingPoliciesOutput{}
	if c, ok := f.policies[aws.ToString(in.ResourceId)]; ok {
		c := c
		out.ScalingPolicies = append(out.ScalingPolicies, aastypes.ScalingPolicy{PolicyName: aws.String("mlplatform-invocations-per-instance"), ResourceId: in.ResourceId, TargetTrackingScalingPolicyConfiguration: &c})
	}
	return out, nil
}

func (f *fakeScaling) DeleteScalingPolicy(_ context.Context, in *applicationautoscaling.DeleteScalingPolicyInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeleteScalingPolicyOutput, error) {
	act, err := f.fault("DeleteScalingPolicy")
	if act {
		if _, ok := f.policies[aws.ToString(in.ResourceId)]; !ok && err == nil {
			return nil, &aastypes.ObjectNotFoundException{Message: aws.String("No scaling policy found")}
		}
		delete(f.policies, aws.ToString(in.ResourceId))
	}
	return &applicationautoscaling.DeleteScalingPolicyOutput{}, err
}

func scaledSpec(target float64) ServingEndpointSpec {
	s := servingSpec()
	s.Variants[0].Autoscaling = &ServingAutoscaling{Min: 1, Max: 4, TargetInvocations: target, ScaleInCooldownSeconds: 300, ScaleOutCooldownSeconds: 300}
	return s
}

const fakeScalingID = "endpoint/fraud/variant/primary"

// Autoscaling is registered only once the endpoint is in service.
func TestServingScalingCreateAfterInService(t *testing.T) {
	f := newFakeServing()
	as := newFakeScaling(f)
	ep, err := createServing(context.Background(), f, as, scaledSpec(100), nil, "tok", fastWait)
	if err != nil {
		t.Fatal(err)
	}
	create, reg := slices.IndexFunc(f.calls, hasPrefix("CreateEndpoint ")), slices.IndexFunc(f.calls, hasPrefix("aas:RegisterScalableTarget"))
	if create < 0 || reg < create {
		t.Fatalf("calls %v: RegisterScalableTarget must follow CreateEndpoint", f.calls)
	}
	if a := ep.Spec.Variants[0].Autoscaling; a == nil || a.TargetInvocations != 100 || a.Max != 4 {
		t.Fatalf("read back %+v", a)
	}
}

// A throttled (refused) policy call fails the create after the endpoint is
// in service: the endpoint is returned for the record, and the next apply
// (an update to the same spec) registers what is missing.
func TestServingScalingCreateFailedRecordedAndHealed(t *testing.T) {
	f := newFakeServing()
	as := newFakeScaling(f)
	as.faults["PutScalingPolicy"] = "fail"
	ep, err := createServing(context.Background(), f, as, scaledSpec(100), nil, "tok", fastWait)
	if err == nil || !strings.Contains(err.Error(), "autoscaling was not set") || !errors.Is(err, errThrottled) {
		t.Fatalf("err = %v", err)
	}
	if ep == nil || ep.ARN == "" {
		t.Fatal("the endpoint in service must be returned for the caller to record")
	}
	if _, ok := as.policies[fakeScalingID]; ok {
		t.Fatal("policy present after a refused call")
	}
	if _, err := updateServing(context.Background(), f, as, ServingEndpointPrior{Spec: scaledSpec(100), ConfigName: ep.ConfigName, ModelName: ep.ModelName}, scaledSpec(100), nil, fastWait); err != nil {
		t.Fatal(err)
	}
	if c, ok := as.policies[fakeScalingID]; !ok || aws.ToFloat64(c.TargetValue) != 100 {
		t.Fatalf("policy after the next apply: %+v", as.policies)
	}
}

// A policy change whose answer is lost took effect: the next apply finds it
// in place and calls nothing.
func TestServingScalingLostResponse(t *testing.T) {
	f := newFakeServing()
	as := newFakeScaling(f)
	ep, err := createServing(context.Background(), f, as, scaledSpec(100), nil, "tok", fastWait)
	if err != nil {
		t.Fatal(err)
	}
	prior := ServingEndpointPrior{Spec: scaledSpec(100), ConfigName: ep.ConfigName, ModelName: ep.ModelName}
	as.faults["PutScalingPolicy"] = "lose"
	if _, err := updateServing(context.Background(), f, as, prior, scaledSpec(250), nil, fastWait); err == nil {
		t.Fatal("a lost answer must fail the apply")
	}
	f.calls = nil
	got, err := updateServing(context.Background(), f, as, prior, scaledSpec(250), nil, fastWait)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(f.calls, hasPrefix("aas:")) || slices.ContainsFunc(f.calls, hasPrefix("UpdateEndpoint")) {
		t.Fatalf("calls after the lost answer: %v, want no writes", f.calls)
	}
	if a := got.Spec.Variants[0].Autoscaling; a == nil || a.TargetInvocations != 250 {
		t.Fatalf("read back %+v", a)
	}
}

// Delete deregisters before it deletes the endpoint; a target already gone
// is not an error.
func TestServingScalingDeleteDeregistersFirst(t *testing.T) {
	f := newFakeServing()
	as := newFakeScaling(f)
	ep, err := createServing(context.Background(), f, as, scaledSpec(100), nil, "tok", fastWait)
	if err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	as.faults["DeregisterScalableTarget"] = "lose"
	if err := deleteServing(context.Background(), f, as, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName}, fastWait); err == nil {
		t.Fatal("a lost deregister answer must fail the delete before the endpoint goes")
	}
	if slices.ContainsFunc(f.calls, hasPrefix("DeleteEndpoint ")) {
		t.Fatalf("calls %v: the endpoint was deleted although deregistering failed", f.calls)
	}
	f.calls = nil
	if err := deleteServing(context.Background(), f, as, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName}, fastWait); err != nil {
		t.Fatal(err)
	}
	if len(as.targets) != 0 || len(as.policies) != 0 || !slices.ContainsFunc(f.calls, hasPrefix("DeleteEndpoint ")) {
		t.Fatalf("after delete: targets %v policies %v calls %v", as.targets, as.policies, f.calls)
	}
}

func hasPrefix(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) }
}
