package platform_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/cloud"
	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// TestCPUFootprintSlurmLeaveDelete: the destroy of a footprint that joins
// Slurm, against the emulator and the harness's lifecycle double (which
// holds the instances a scale-in removes in Terminating:Wait). The test
// writes the markers the nodes would write (no Slurm here; the real
// daemons run in the provider's TestAccCPUFootprint_slurmJoin). Both
// instances joined: the delete scales the group to 0 and waits.
//   - Timed out: a FootprintLeaveTimeoutError naming both instances, the
//     group and its instances kept, held.
//   - One node left; interrupted: the error names the other one only, and
//     the one that left was let go.
//   - The other left: the delete finishes, nothing is left.
func TestCPUFootprintSlurmLeaveDelete(t *testing.T) {
	h := acctest.SetupEmulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, remove := acctest.RegisterAutoScalingLifecycle(h.Shim)
	t.Cleanup(remove)
	fix, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	d.Terminate = func(ctx context.Context, id string) error {
		_, err := fix.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		return err
	}
	if _, err := fix.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("leave-fp"),
		CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(acctest.Region)}}); err != nil {
		t.Fatal(err)
	}
	k, err := fix.KMS.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	key := aws.ToString(k.KeyMetadata.Arn)
	sec, err := acctest.SecretsManager(fix).CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("munge-leave-fp"), SecretString: aws.String(strings.Repeat("k", 32))})
	if err != nil {
		t.Fatal(err)
	}
	env, err := platform.Open(ctx, platform.Config{Region: acctest.Region, Endpoints: h.Endpoints(),
		Residency: residency.PolicyConfig{Jurisdiction: "AE", RequireCustomerManagedKeys: awsManagedKeys()},
		Polling:   platform.PollingEvery(10 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	spec := platform.CPUFootprintSpec{
		Name: "leave-fp", InstanceType: "c7i.large", Size: platform.GroupSize{Min: 0, Max: 2, Desired: 2},
		Image:      "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64",
		RootVolume: platform.Volume{SizeGiB: 20},
		Validation: &platform.ValidationSpec{Wait: false, ReportsS3URI: "s3://leave-fp/r/", ReportsKMSKeyARN: key},
		Slurm:      &platform.SlurmSpec{Controllers: []string{"slurmctld.internal"}, MungeKeySecretARN: aws.ToString(sec.ARN)},
	}
	f, err := env.CreateCPUFootprint(ctx, spec, platform.CPUFootprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Instances) != 2 {
		t.Fatalf("created %d instances, want 2", len(f.Instances))
	}
	// The validation hook holds them at launch: the gate's part, played.
	var ids []string
	for _, in := range f.Instances {
		ids = append(ids, in.ID)
		if _, err := fix.AutoScaling.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(f.GroupName),
			LifecycleHookName: aws.String(cloud.ValidationHookName), InstanceId: aws.String(in.ID), LifecycleActionResult: aws.String("CONTINUE")}); err != nil {
			t.Fatal(err)
		}
	}
	marker := func(dir, id, body string) {
		if _, err := fix.S3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("leave-fp"), Key: aws.String("r/leave-fp/" + dir + id + ".json"), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	left := func(id string) {
		marker("slurm-left/", id, fmt.Sprintf(`{"node":"leave-fp-%s","instance_id":%q,"request":"autoscaling-terminating","result":"left","left_at":"2026-11-27T10:00:00Z"}`, id, id))
	}
	for _, id := range ids {
		marker("slurm-joined/", id, fmt.Sprintf(`{"node":"leave-fp-%s","instance_id":%q,"joined_at":"2026-11-27T09:00:00Z"}`, id, id))
	}
	held := func() []string {
		var out []string
		for _, id := range ids {
			if d.Terminating(id) {
				out = append(out, id)
			}
		}
		return out
	}

	// Timed out: both nodes still run their jobs.
	tctx, tcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	err = env.DeleteCPUFootprint(tctx, spec.Name, f.CreationToken, platform.CPUFootprintOptions{})
	tcancel()
	var le *platform.FootprintLeaveTimeoutError
	if !errors.As(err, &le) || !slices.Equal(slices.Sorted(slices.Values(le.Instances)), slices.Sorted(slices.Values(ids))) {
		t.Fatalf("delete timed out: %v, want a FootprintLeaveTimeoutError naming %v", err, ids)
	}
	if got := held(); len(got) != 2 {
		t.Fatalf("held after the timed-out delete: %v, want both", got)
	}
	if _, err := env.FindCPUFootprint(ctx, spec.Name, f.CreationToken); err != nil {
		t.Fatalf("the group after the timed-out delete: %v, want it kept", err)
	}

	// One left; the delete is interrupted while it waits for the other.
	left(ids[0])
	ictx, icancel := context.WithCancel(ctx)
	time.AfterFunc(500*time.Millisecond, icancel)
	err = env.DeleteCPUFootprint(ictx, spec.Name, f.CreationToken, platform.CPUFootprintOptions{})
	if !errors.As(err, &le) || !slices.Equal(le.Instances, ids[1:]) || !errors.Is(err, context.Canceled) {
		t.Fatalf("delete interrupted: %v, want a FootprintLeaveTimeoutError naming %s", err, ids[1])
	}
	if got := held(); !slices.Equal(got, ids[1:]) {
		t.Fatalf("held after the interrupted delete: %v, want only %s (%s left Slurm and was let go)", got, ids[1], ids[0])
	}

	// The other left: the delete finishes.
	left(ids[1])
	if err := env.DeleteCPUFootprint(ctx, spec.Name, f.CreationToken, platform.CPUFootprintOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := env.FindCPUFootprint(ctx, spec.Name, ""); !errors.Is(err, platform.ErrNotFound) {
		t.Errorf("find after delete: %v", err)
	}
	var ends int
	for _, c := range d.Completions() {
		if c.Hook == cloud.SlurmLeaveHookName {
			ends++
		}
	}
	if ends != 2 || len(held()) != 0 {
		t.Errorf("terminate actions completed %d, held %v: want both let go", ends, held())
	}
}
