package cloud_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// TestServingScalingMoto drives a variant's scalable target and its
// target-tracking policy through moto's Application Auto Scaling: register
// and read back, change in place, a second endpoint's targets kept apart,
// delete (twice: gone is not an error).
func TestServingScalingMoto(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := acctest.StartMoto(ctx, acctest.MotoOptions{})
	if errors.Is(err, acctest.ErrMotoNotFound) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	creds := credentials.NewStaticCredentialsProvider("testing", "testing", "")
	api := applicationautoscaling.New(applicationautoscaling.Options{Region: "me-central-1", BaseEndpoint: aws.String(m.URL), Credentials: creds})

	want := cloud.ServingScaling{Variant: "primary", Min: 1, Max: 4, TargetInvocations: 100, ScaleInCooldown: 300, ScaleOutCooldown: 60}
	if err := cloud.PutServingScaling(ctx, api, "fraud", want); err != nil {
		t.Fatal(err)
	}
	other := cloud.ServingScaling{Variant: "primary", Min: 2, Max: 2, TargetInvocations: 5}
	if err := cloud.PutServingScaling(ctx, api, "fraud-canary", other); err != nil {
		t.Fatal(err)
	}
	got, err := cloud.FindServingScaling(ctx, api, "fraud")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["primary"] != want {
		t.Fatalf("read back %+v, want only %+v", got, want)
	}

	want.Max, want.TargetInvocations, want.ScaleInCooldown = 8, 250.5, 600
	if err := cloud.PutServingScaling(ctx, api, "fraud", want); err != nil {
		t.Fatal(err)
	}
	if got, err = cloud.FindServingScaling(ctx, api, "fraud"); err != nil || got["primary"] != want {
		t.Fatalf("after change %+v (%v), want %+v", got, err, want)
	}

	for range 2 {
		if err := cloud.DeleteServingScaling(ctx, api, "fraud", "primary"); err != nil {
			t.Fatal(err)
		}
	}
	if got, err = cloud.FindServingScaling(ctx, api, "fraud"); err != nil || len(got) != 0 {
		t.Fatalf("after delete %+v (%v), want none", got, err)
	}
	pol, err := api.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: "sagemaker", ResourceId: aws.String(cloud.ServingScalingResourceID("fraud", "primary"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pol.ScalingPolicies {
		if aws.ToString(p.ResourceId) == cloud.ServingScalingResourceID("fraud", "primary") {
			t.Fatalf("policy %s left after delete", aws.ToString(p.PolicyName))
		}
	}
	if got, err = cloud.FindServingScaling(ctx, api, "fraud-canary"); err != nil || got["primary"] != other {
		t.Fatalf("other endpoint %+v (%v), want %+v kept", got, err, other)
	}
}
