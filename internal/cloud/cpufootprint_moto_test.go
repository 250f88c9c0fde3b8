package cloud_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// TestFootprintGroupMoto drives a footprint's Auto Scaling group through
// moto's Auto Scaling: create with a mixed instances policy, read back,
// scheduled actions synced, sizes updated without touching desired capacity,
// tags set, delete and wait.
func TestFootprintGroupMoto(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fx := startMotoFootprint(ctx, t, "mlplatform-fp")
	as := fx.AS
	g := cloud.FootprintGroup{
		Name:             "mlplatform-fp",
		LaunchTemplateID: fx.LaunchTemplateID,
		InstanceTypes:    []string{"c7i.large", "m7i.large"},
		Spot:             true,
		OnDemandBase:     1,
		Min:              1, Max: 3, Desired: 2,
		SubnetIDs: fx.SubnetIDs[:2],
		Tags:      map[string]string{"team": "ml", "mlplatform:creation-token": "tok-1"},
	}
	if err := cloud.CreateFootprintGroup(ctx, as, g); err != nil {
		t.Fatal(err)
	}
	// moto 5.2.1 overwrites a group created twice where Auto Scaling
	// answers AlreadyExists: TestCreateFootprintGroupExists covers that.
	got, err := cloud.FindFootprintGroup(ctx, as, g.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got.Min != 1 || got.Max != 3 || got.Desired != 2 || len(got.Instances) != 2 {
		t.Errorf("sizes %d/%d/%d, %d instances", got.Min, got.Max, got.Desired, len(got.Instances))
	}
	if !slices.Equal(got.InstanceTypes, g.InstanceTypes) || !got.Spot || got.OnDemandBase != 1 || got.LaunchTemplateID != g.LaunchTemplateID {
		t.Errorf("mixed instances read back as %+v", got)
	}
	if got.Tags["mlplatform:creation-token"] != "tok-1" || got.Tags["team"] != "ml" || len(got.SubnetIDs) != 2 {
		t.Errorf("tags %v subnets %v", got.Tags, got.SubnetIDs)
	}

	zero, one, three := int32(0), int32(1), int32(3)
	want := []cloud.GroupScheduledAction{
		{Name: "nights", Recurrence: "0 20 * * 1-5", TimeZone: "Asia/Dubai", Min: &zero, Max: &zero, Desired: &zero},
		{Name: "nights-end", Recurrence: "0 7 * * 2-6", TimeZone: "Asia/Dubai", Min: &one, Max: &three, Desired: &one},
	}
	if err := cloud.SyncScheduledActions(ctx, as, g.Name, want); err != nil {
		t.Fatal(err)
	}
	have, err := cloud.FindScheduledActions(ctx, as, g.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(have) != 2 || have[0].Recurrence != "0 20 * * 1-5" || have[1].TimeZone != "Asia/Dubai" || aws.ToInt32(have[1].Max) != 3 {
		t.Fatalf("scheduled actions %+v", have)
	}
	// One action changes, the other goes.
	want = want[:1]
	want[0].Recurrence = "0 21 * * 1-5"
	if err := cloud.SyncScheduledActions(ctx, as, g.Name, want); err != nil {
		t.Fatal(err)
	}
	if have, _ = cloud.FindScheduledActions(ctx, as, g.Name); len(have) != 1 || have[0].Recurrence != "0 21 * * 1-5" {
		t.Fatalf("after sync: %+v", have)
	}

	// Sizes change; desired capacity is left to the schedule.
	g.Max, g.Desired = 4, 3
	if err := cloud.UpdateFootprintGroup(ctx, as, g, cloud.SetSizes{Min: true, Max: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ = cloud.FindFootprintGroup(ctx, as, g.Name); got.Max != 4 || got.Desired != 2 {
		t.Errorf("after update: max %d desired %d, want 4 and 2", got.Max, got.Desired)
	}
	if err := cloud.SetFootprintGroupTags(ctx, as, g.Name, map[string]string{"team": "ml2"}, got.Tags); err != nil {
		t.Fatal(err)
	}
	if got, _ = cloud.FindFootprintGroup(ctx, as, g.Name); len(got.Tags) != 1 || got.Tags["team"] != "ml2" {
		t.Errorf("tags after set: %v", got.Tags)
	}

	if err := cloud.DeleteFootprintGroup(ctx, as, g.Name); err != nil {
		t.Fatal(err)
	}
	if err := cloud.WaitFootprintGroupGone(ctx, as, g.Name, cloud.Poll{Interval: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := cloud.DeleteFootprintGroup(ctx, as, g.Name); err != nil {
		t.Errorf("deleting a deleted group: %v", err)
	}
	if _, err := cloud.FindFootprintGroup(ctx, as, g.Name); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("find after delete: %v", err)
	}
	if err := cloud.UpdateFootprintGroup(ctx, as, g, cloud.AllSizes()); !errors.Is(err, cloud.ErrNotFound) {
		t.Errorf("update after delete: %v, want ErrNotFound", err)
	}
}

// motoFootprint is moto with what a footprint's group needs: clients, a
// launch template for c7i.large on moto's first image, and the default
// VPC's subnets (at least two).
type motoFootprint struct {
	EC2              *ec2.Client
	AS               *autoscaling.Client
	LaunchTemplateID string
	SubnetIDs        []string
}

// startMotoFootprint starts moto (skipping the test when it is not
// installed) and makes the launch template ltName.
func startMotoFootprint(ctx context.Context, t *testing.T, ltName string) motoFootprint {
	t.Helper()
	m, err := acctest.StartMoto(ctx, acctest.MotoOptions{})
	if errors.Is(err, acctest.ErrMotoNotFound) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop() })
	const region = "me-central-1"
	creds := credentials.NewStaticCredentialsProvider("testing", "testing", "")
	fx := motoFootprint{
		EC2: ec2.New(ec2.Options{Region: region, BaseEndpoint: aws.String(m.URL), Credentials: creds}),
		AS:  autoscaling.New(autoscaling.Options{Region: region, BaseEndpoint: aws.String(m.URL), Credentials: creds}),
	}
	imgs, err := fx.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("images: %v", err)
	}
	lt, err := fx.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(ltName),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: imgs.Images[0].ImageId, InstanceType: ec2types.InstanceTypeC7iLarge},
	})
	if err != nil {
		t.Fatal(err)
	}
	fx.LaunchTemplateID = aws.ToString(lt.LaunchTemplate.LaunchTemplateId)
	subnets, err := fx.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil || len(subnets.Subnets) < 2 {
		t.Fatalf("subnets: %v", err)
	}
	for _, sn := range subnets.Subnets {
		fx.SubnetIDs = append(fx.SubnetIDs, aws.ToString(sn.SubnetId))
	}
	return fx
}
