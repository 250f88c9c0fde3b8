package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/mlplatform/mlplatform/acctest"
)

// The fixtures' fixed names.
const (
	uaeBucket  = "conformance-uae"
	euBucket   = "conformance-eu"
	role       = "arn:aws:iam::123456789012:role/feature-store"
	imageParam = "/mlplatform/conformance/gpu-ami"
	// amazonLinux is the public SSM parameter moto answers with an AMI.
	amazonLinux = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
)

// fixtures are what the scenarios reference, made with the harness's
// fixture clients (their calls are not the front ends' writes).
type fixtures struct {
	amiA, amiB string // two x86_64 AMIs; imageParam names amiA at first
	vpcID      string // the default VPC
	// defaultSubnets are the default subnet of each zone id.
	defaultSubnets map[string]string
	// defaultGroup is the default VPC's default security group.
	defaultGroup string
	// nodes are the instance ids a check remembered (rememberNodes), for a
	// later step to find the same ones.
	nodes []string
	key   string // a customer managed key in the region
	// secrets are the ARNs of the secrets an out-of-band step made, by
	// name.
	secrets map[string]string
}

func newFixtures(t *testing.T, h *acctest.Harness) *fixtures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	for region, name := range map[string]string{acctest.Region: uaeBucket, "eu-west-1": euBucket} {
		rc, err := h.Clients(ctx, region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rc.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name),
			CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}}); err != nil {
			t.Fatalf("creating bucket %s in %s: %v", name, region, err)
		}
	}
	f := &fixtures{}
	p, err := c.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(amazonLinux)})
	if err != nil {
		t.Fatalf("reading %s: %v", amazonLinux, err)
	}
	f.amiA = aws.ToString(p.Parameter.Value)
	imgs, err := c.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("architecture"), Values: []string{"x86_64"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range imgs.Images {
		if id := aws.ToString(im.ImageId); id != f.amiA && im.RootDeviceType == ec2types.DeviceTypeEbs {
			f.amiB = id
			break
		}
	}
	if f.amiB == "" {
		t.Fatal("the emulator offers no second x86_64 EBS AMI")
	}
	if _, err := c.SSM.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(imageParam), Value: aws.String(f.amiA), Type: ssmtypes.ParameterTypeString}); err != nil {
		t.Fatal(err)
	}
	vpcs, err := c.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) == 0 {
		t.Fatalf("finding the default VPC: %v", err)
	}
	f.vpcID = aws.ToString(vpcs.Vpcs[0].VpcId)
	if f.defaultSubnets, err = defaultSubnetsByZone(ctx, acctest.EC2(c)); err != nil {
		t.Fatalf("finding the default subnets: %v", err)
	}
	sgs, err := acctest.EC2(c).DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{f.vpcID}}, {Name: aws.String("group-name"), Values: []string{"default"}}}})
	if err != nil || len(sgs.SecurityGroups) == 0 {
		t.Fatalf("finding the default security group: %v", err)
	}
	f.defaultGroup = aws.ToString(sgs.SecurityGroups[0].GroupId)
	k, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("conformance key")})
	if err != nil {
		t.Fatalf("creating a key: %v", err)
	}
	f.key = aws.ToString(k.KeyMetadata.Arn)
	h.Shim.ResetLog()
	return f
}

// liveNodes returns the running or pending instances of a GPU cluster.
func liveNodes(ctx context.Context, h *acctest.Harness, cluster string) ([]ec2types.Instance, error) {
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return nil, err
	}
	out, err := c.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:mlplatform:cluster"), Values: []string{cluster}},
		{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
	}})
	if err != nil {
		return nil, err
	}
	var nodes []ec2types.Instance
	for _, r := range out.Reservations {
		nodes = append(nodes, r.Instances...)
	}
	return nodes, nil
}

// wantNodes checks the cluster has n live nodes, all in zoneID and on image
// when those are set.
func wantNodes(cluster string, n int, zoneID, image string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
		nodes, err := liveNodes(ctx, h, cluster)
		if err != nil {
			return err
		}
		if len(nodes) != n {
			return fmt.Errorf("%d live nodes in EC2, want %d", len(nodes), n)
		}
		if image == "amiB" {
			image = f.amiB
		}
		for _, nd := range nodes {
			if image != "" && aws.ToString(nd.ImageId) != image {
				return fmt.Errorf("node %s runs %s, want %s", aws.ToString(nd.InstanceId), aws.ToString(nd.ImageId), image)
			}
			if zoneID != "" && nd.Placement != nil && aws.ToString(nd.Placement.AvailabilityZoneId) != "" && aws.ToString(nd.Placement.AvailabilityZoneId) != zoneID {
				return fmt.Errorf("node %s is in %s, want %s", aws.ToString(nd.InstanceId), aws.ToString(nd.Placement.AvailabilityZoneId), zoneID)
			}
		}
		return nil
	}
}

// terminateOneNode terminates a node of the cluster outside the front end.
func terminateOneNode(cluster string) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		ctx := context.Background()
		nodes, err := liveNodes(ctx, h, cluster)
		if err != nil || len(nodes) == 0 {
			t.Fatalf("no node of %s to terminate: %v", cluster, err)
		}
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(nodes[len(nodes)-1].InstanceId)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// pointImageAtB makes the SSM parameter name the second AMI: a new image
// published behind the same name.
func pointImageAtB(t *testing.T, h *acctest.Harness, f *fixtures) {
	t.Helper()
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SSM.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(imageParam), Value: aws.String(f.amiB), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
}

// deleteFeatureGroup deletes the group outside the front end.
func deleteFeatureGroup(name string) func(*testing.T, *acctest.Harness, *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		ctx := context.Background()
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SageMaker.DeleteFeatureGroup(ctx, &sagemaker.DeleteFeatureGroupInput{FeatureGroupName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		// The shim deletes at once or after a while; wait until it is gone.
		for range 50 {
			if _, err := c.SageMaker.DescribeFeatureGroup(ctx, &sagemaker.DescribeFeatureGroupInput{FeatureGroupName: aws.String(name)}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("feature group %s still exists after its deletion", name)
	}
}

// sageMakerCalls checks the front end's SageMaker calls of the step: each
// action in want was called that many times.
func sageMakerCalls(want map[string]int) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(_ context.Context, h *acctest.Harness, _ *fixtures) error {
		for action, n := range want {
			got := 0
			for _, c := range h.Shim.Calls("sagemaker", action) {
				if !c.Fixture {
					got++
				}
			}
			if got != n {
				return fmt.Errorf("%d %s calls, want %d", got, action, n)
			}
		}
		return nil
	}
}
