package pulumi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// Diff is the core's change set, as Terraform's plan: a new AMI behind the
// same SSM parameter rolls the nodes, vpcId replaces (also when it is not
// known yet), and a change of nothing is no change.
func TestGpuCluster_diffFromCore(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	images, err := c.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil || len(images.Images) < 2 {
		t.Fatalf("describing images: %v (%d)", err, len(images.Images))
	}
	amiA, amiB := aws.ToString(images.Images[0].ImageId), aws.ToString(images.Images[1].ImageId)
	const param = "/mlplatform-test/gpu-image"
	putImage := func(ami string) {
		t.Helper()
		if _, err := c.SSM.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(param), Value: aws.String(ami), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatalf("putting %s: %v", param, err)
		}
	}
	putImage(amiA)

	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("GpuCluster", "diff")
	inputs := gpuClusterInputs("diff", 1, map[string]property.Value{"image": property.New(param)})
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = s.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}) })
	if got := created.Properties.Get("imageId").AsString(); got != amiA {
		t.Fatalf("imageId = %q, want %s", got, amiA)
	}
	diff := func(in property.Map) p.DiffResponse {
		t.Helper()
		d, err := s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, OldInputs: check.Inputs, Inputs: in})
		if err != nil {
			t.Fatalf("diff: %v", err)
		}
		return d
	}

	if d := diff(check.Inputs); d.HasChanges {
		t.Errorf("diff of the same inputs = %+v, want none", d.DetailedDiff)
	}

	// The parameter now names another AMI: the same inputs roll the nodes.
	putImage(amiB)
	d := diff(check.Inputs)
	if !d.HasChanges || d.DetailedDiff["imageId"].Kind != p.Update {
		t.Errorf("diff after the SSM parameter moved = %+v, want imageId update", d)
	}
	for k, pd := range d.DetailedDiff {
		if pd.Kind == p.UpdateReplace {
			t.Errorf("%s replaces; a new image rolls the nodes in place", k)
		}
	}
	putImage(amiA)

	// vpcId replaces, known or not; the cluster name is unique, so the old
	// one goes first.
	for name, v := range map[string]property.Value{"known": property.New("vpc-0123456789abcdef0"), "unknown": property.New(property.Computed)} {
		d := diff(check.Inputs.Set("vpcId", v))
		if d.DetailedDiff["vpcId"].Kind != p.UpdateReplace || !d.DeleteBeforeReplace || !d.HasChanges {
			t.Errorf("%s vpcId: diff = %+v, want vpcId update&replace, delete before replace", name, d)
		}
	}
	// An unknown node count is a change to be known, not an absent value.
	d = diff(check.Inputs.Set("nodeCount", property.New(property.Computed)))
	if d.DetailedDiff["nodeCount"].Kind != p.Update {
		t.Errorf("unknown nodeCount: diff = %+v, want nodeCount update", d)
	}
	// A set placement group of another name replaces.
	d = diff(check.Inputs.Set("placementGroupName", property.New("shared")))
	if d.DetailedDiff["placementGroupName"].Kind != p.UpdateReplace {
		t.Errorf("placementGroupName: diff = %+v, want update&replace", d)
	}
}

// The core's limits reject attempts: 1000 at check, on the property, in the
// words Terraform uses.
func TestGpuCluster_checkAttempts(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	s := newServer(t, h, awsManagedKeys(nil))
	in := gpuClusterInputs("lim", 1, map[string]property.Value{"capacityRetry": property.New(property.NewMap(map[string]property.Value{"attempts": property.New(1000.0)}))})
	check, err := s.Check(p.CheckRequest{Urn: urn("GpuCluster", "lim"), Inputs: in})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	found := false
	for _, f := range check.Failures {
		found = found || (f.Property == "capacityRetry.attempts" && strings.Contains(f.Reason, "capacity_retry.attempts = 1000: use 1 to 20"))
	}
	if !found {
		t.Errorf("failures = %+v, want one on capacityRetry.attempts", check.Failures)
	}
	assertNoWrites(t, h)
}

// A create, update or delete without a custom timeout runs under the core's
// default deadline, never without one.
func TestGpuCluster_defaultDeadline(t *testing.T) {
	for op, want := range map[platform.Operation]time.Duration{platform.OpCreate: 60 * time.Minute, platform.OpUpdate: 60 * time.Minute, platform.OpDelete: 30 * time.Minute} {
		ctx, cancel := gpuClusterDeadline(context.Background(), op)
		dl, ok := ctx.Deadline()
		cancel()
		if left := time.Until(dl); !ok || left > want || left < want-time.Minute {
			t.Errorf("%s: deadline in %v (set %v), want %v", op, left, ok, want)
		}
	}
	// A custom timeout of the program wins.
	ctx, cancel := gpuClusterDeadline(withCustomTimeout(context.Background(), 90), platform.OpCreate)
	defer cancel()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > 90*time.Second || time.Until(dl) < 80*time.Second {
		t.Errorf("custom 90s: deadline in %v (set %v)", time.Until(dl), ok)
	}
}
