package platform_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

func TestMain(m *testing.M) { acctest.Main(m) }

// The context cancellation of Ctrl-C at each step of a feature store's life,
// against the emulator: the call in flight still lands, the client gives up.
// Each time the core records what exists (on a fresh context), the next
// "apply" finishes in place, and the delete leaves nothing: 0 orphans, 1
// create, 0 replacements.

func faultEnv(t *testing.T) (*acctest.Harness, *platform.Env, platform.FeatureStoreSpec) {
	t.Helper()
	h := acctest.SetupEmulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("uae-feature-store"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	env, err := platform.Open(ctx, platform.Config{Region: acctest.Region, Endpoints: h.Endpoints(), Residency: residency.PolicyConfig{Jurisdiction: "AE", RequireCustomerManagedKeys: awsManagedKeys()},
		Polling: platform.PollingEvery(50 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	spec := platform.FeatureStoreSpec{
		Name: "customers", RecordIdentifier: "customer_id", EventTime: "event_time",
		Features: []platform.Feature{{Name: "customer_id", Type: "String"}, {Name: "event_time", Type: "Fractional"}},
		Online:   &platform.OnlineStore{Enabled: true, TTL: &platform.TTL{Unit: "Days", Value: 30}},
		Offline:  &platform.OfflineStore{S3URI: "s3://uae-feature-store/customers"},
		RoleARN:  "arn:aws:iam::123456789012:role/feature-store",
	}
	return h, env, spec
}

// fastWait: the environment polls every 50ms (faultEnv).
var fastWait = platform.FeatureStoreWait{}

// interrupted is a context that the test cancels, as Ctrl-C would, while a
// call is in flight (SageMakerFault.OnCall).
func interrupted(t *testing.T) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, cancel
}

// waitServed waits until the shim has answered n calls of action (the call
// the client gave up on is answered after it lands).
func waitServed(t *testing.T, h *acctest.Harness, action string, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for len(h.Shim.Calls("sagemaker", action)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the shim never answered %s", action)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func assertGone(t *testing.T, h *acctest.Harness, env *platform.Env) {
	t.Helper()
	if err := env.DeleteFeatureStore(context.Background(), "customers", fastWait); err != nil {
		t.Fatalf("delete: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := env.Clients.SageMaker.ListFeatureGroups(ctx, &sagemaker.ListFeatureGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.FeatureGroupSummaries); n != 0 {
		t.Fatalf("%d feature groups left after delete (orphans)", n)
	}
	if n := acctest.CountOK(h.Shim, "CreateFeatureGroup"); n != 1 {
		t.Fatalf("%d groups created, want 1 (no replacement)", n)
	}
}

func TestFeatureStoreFaults_createCancelled(t *testing.T) {
	h, env, spec := faultEnv(t)
	// The create lands after the client gave up.
	ctx, cancel := interrupted(t)
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "CreateFeatureGroup", Times: 1, OnCall: cancel, Delay: 500 * time.Millisecond}))
	fs, _, err := env.CreateFeatureStore(ctx, spec, fastWait)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
	if fs == nil || fs.ARN == "" || fs.CreationToken == "" {
		t.Fatalf("the group created by the interrupted call was not recorded: %+v", fs)
	}
	// The next apply finishes it in place.
	if _, _, err := env.UpdateFeatureStore(context.Background(), fs.Spec, spec, fastWait); err != nil {
		t.Fatalf("finishing: %v", err)
	}
	assertGone(t, h, env)
}

func TestFeatureStoreFaults_waitCancelled(t *testing.T) {
	h, env, spec := faultEnv(t)
	// The group stays Creating while the client waits; Ctrl-C comes on the
	// third look.
	ctx, cancel := interrupted(t)
	looks := 0
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{
		Action: "DescribeFeatureGroup", Armed: acctest.AfterCall(h.Shim, "CreateFeatureGroup"), Times: 20, Statuses: []string{platform.FeatureStoreCreating},
		OnCall: func() {
			if looks++; looks == 3 {
				cancel()
			}
		},
	}))
	fs, _, err := env.CreateFeatureStore(ctx, spec, fastWait)
	if err == nil || fs == nil || fs.Status != platform.FeatureStoreCreating {
		t.Fatalf("interrupted wait: fs %+v, err %v; want the group recorded Creating", fs, err)
	}
	if _, _, err := env.UpdateFeatureStore(context.Background(), fs.Spec, spec, fastWait); err != nil {
		t.Fatalf("finishing: %v", err)
	}
	got, err := env.FindFeatureStore(context.Background(), "customers")
	if err != nil || got.Status != platform.FeatureStoreCreated {
		t.Fatalf("after finishing: %+v %v", got, err)
	}
	assertGone(t, h, env)
}

func TestFeatureStoreFaults_updateCancelled(t *testing.T) {
	h, env, spec := faultEnv(t)
	fs, _, err := env.CreateFeatureStore(context.Background(), spec, fastWait)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := interrupted(t)
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "UpdateFeatureGroup", Times: 1, OnCall: cancel, Delay: 500 * time.Millisecond}))
	plus := spec
	plus.Features = append(append([]platform.Feature{}, spec.Features...), platform.Feature{Name: "risk_score", Type: "Fractional"})
	plus.Online = &platform.OnlineStore{Enabled: true, TTL: &platform.TTL{Unit: "Days", Value: 60}}
	if _, _, err := env.UpdateFeatureStore(ctx, fs.Spec, plus, fastWait); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
	waitServed(t, h, "UpdateFeatureGroup", 1) // the addition lands
	// The next apply plans from the old state and completes the rest.
	got, _, err := env.UpdateFeatureStore(context.Background(), fs.Spec, plus, fastWait)
	if err != nil {
		t.Fatalf("finishing the update: %v", err)
	}
	if len(got.Spec.Features) != 3 || got.Spec.Online.TTL.Value != 60 {
		t.Fatalf("after finishing: %d features, TTL %+v", len(got.Spec.Features), got.Spec.Online.TTL)
	}
	assertGone(t, h, env)
}

func TestFeatureStoreFaults_deleteCancelled(t *testing.T) {
	h, env, spec := faultEnv(t)
	if _, _, err := env.CreateFeatureStore(context.Background(), spec, fastWait); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := interrupted(t)
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "DeleteFeatureGroup", Times: 1, OnCall: cancel, Delay: 500 * time.Millisecond}))
	if err := env.DeleteFeatureStore(ctx, "customers", fastWait); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
	waitServed(t, h, "DeleteFeatureGroup", 1) // the delete lands: the group is Deleting
	// A refresh now waits for the deletion's outcome rather than dropping it.
	if _, err := env.ReadFeatureStore(context.Background(), "customers", 10*time.Second); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("read after the deletion: %v, want not found", err)
	}
	assertGone(t, h, env)
}
