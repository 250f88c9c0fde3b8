package cloud

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// FindSubnetAPI is what FindSubnet needs.
type FindSubnetAPI interface {
	DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
}

// Subnet is a subnet and where it lies.
type Subnet struct {
	ID     string
	VPCID  string
	Zone   string
	ZoneID string
}

// FindSubnet describes one subnet by id.
func FindSubnet(ctx context.Context, api FindSubnetAPI, id string) (Subnet, error) {
	out, err := api.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{id}})
	if apiErrorCode(err) == "InvalidSubnetID.NotFound" {
		return Subnet{}, ErrNotFound
	}
	if err != nil {
		return Subnet{}, fmt.Errorf("describing subnet %s: %w", id, err)
	}
	if len(out.Subnets) == 0 {
		return Subnet{}, ErrNotFound
	}
	return subnetOf(out.Subnets[0]), nil
}

// FindSubnetInZone picks the subnet to launch into in zone id zoneID: with
// vpcID, the subnet of that VPC in the zone with the most free addresses;
// without, the zone's default subnet.
func FindSubnetInZone(ctx context.Context, api FindSubnetAPI, zoneID, vpcID string) (Subnet, error) {
	filters := []types.Filter{{Name: aws.String("availability-zone-id"), Values: []string{zoneID}}}
	if vpcID != "" {
		filters = append(filters, types.Filter{Name: aws.String("vpc-id"), Values: []string{vpcID}})
	} else {
		filters = append(filters, types.Filter{Name: aws.String("default-for-az"), Values: []string{"true"}})
	}
	var best *types.Subnet
	p := ec2.NewDescribeSubnetsPaginator(api, &ec2.DescribeSubnetsInput{Filters: filters})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return Subnet{}, fmt.Errorf("describing subnets in %s: %w", zoneID, err)
		}
		for i := range out.Subnets {
			s := &out.Subnets[i]
			if best == nil || aws.ToInt32(s.AvailableIpAddressCount) > aws.ToInt32(best.AvailableIpAddressCount) {
				best = s
			}
		}
	}
	if best == nil {
		return Subnet{}, ErrNotFound
	}
	return subnetOf(*best), nil
}

func subnetOf(s types.Subnet) Subnet {
	return Subnet{ID: aws.ToString(s.SubnetId), VPCID: aws.ToString(s.VpcId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)}
}

// FindSecurityGroupAPI is what FindSecurityGroup needs.
type FindSecurityGroupAPI interface {
	DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
}

// SecurityGroup is a security group and the VPC it belongs to.
type SecurityGroup struct {
	ID    string
	VPCID string
}

// FindSecurityGroup describes one security group by id. A missing one is
// ErrNotFound.
func FindSecurityGroup(ctx context.Context, api FindSecurityGroupAPI, id string) (SecurityGroup, error) {
	out, err := api.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	if c := apiErrorCode(err); c == "InvalidGroup.NotFound" || c == "InvalidGroupId.NotFound" {
		return SecurityGroup{}, ErrNotFound
	}
	if err != nil {
		return SecurityGroup{}, fmt.Errorf("describing security group %s: %w", id, err)
	}
	if len(out.SecurityGroups) == 0 {
		return SecurityGroup{}, ErrNotFound
	}
	g := out.SecurityGroups[0]
	return SecurityGroup{ID: aws.ToString(g.GroupId), VPCID: aws.ToString(g.VpcId)}, nil
}

// FindCapacityReservationAPI is what FindCapacityReservation needs.
type FindCapacityReservationAPI interface {
	DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, opts ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
}

// CapacityReservation is what the plan checks of a reservation or block.
type CapacityReservation struct {
	ID             string
	InstanceType   string
	Zone           string
	ZoneID         string
	State          string // active, pending, scheduled, expired, cancelled, ...
	Type           string // default or capacity-block
	TotalCount     int
	AvailableCount int
	StartDate      time.Time
	EndDate        time.Time
}

// FindCapacityReservation describes a capacity reservation or capacity block.
func FindCapacityReservation(ctx context.Context, api FindCapacityReservationAPI, id string) (CapacityReservation, error) {
	out, err := api.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if apiErrorCode(err) == "InvalidCapacityReservationId.NotFound" || apiErrorCode(err) == "InvalidCapacityReservationId.Malformed" {
		return CapacityReservation{}, ErrNotFound
	}
	if err != nil {
		return CapacityReservation{}, fmt.Errorf("describing capacity reservation %s: %w", id, err)
	}
	if len(out.CapacityReservations) == 0 {
		return CapacityReservation{}, ErrNotFound
	}
	r := out.CapacityReservations[0]
	return CapacityReservation{
		ID: aws.ToString(r.CapacityReservationId), InstanceType: aws.ToString(r.InstanceType),
		Zone: aws.ToString(r.AvailabilityZone), ZoneID: aws.ToString(r.AvailabilityZoneId),
		State: string(r.State), Type: string(r.ReservationType),
		TotalCount: int(aws.ToInt32(r.TotalInstanceCount)), AvailableCount: int(aws.ToInt32(r.AvailableInstanceCount)),
		StartDate: aws.ToTime(r.StartDate), EndDate: aws.ToTime(r.EndDate),
	}, nil
}

// FindImageAPI is what ResolveImage needs from EC2.
type FindImageAPI interface {
	DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, opts ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
}

// SSMParameterAPI is what ResolveImage needs from SSM.
type SSMParameterAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Image is a resolved machine image.
type Image struct {
	ID             string
	Name           string
	Architecture   string
	RootDeviceName string
	// TPMSupport is "v2.0" when the image's instances get a NitroTPM.
	TPMSupport string
}

// IsSSMImage reports whether image names an SSM parameter rather than an AMI:
// "/aws/service/..." or "resolve:ssm:/...".
func IsSSMImage(image string) bool {
	return strings.HasPrefix(image, "/") || strings.HasPrefix(image, "resolve:ssm:")
}

// ResolveImage turns an AMI id or an SSM parameter name that holds one into
// the image, described in the client's region.
func ResolveImage(ctx context.Context, ec2api FindImageAPI, ssmapi SSMParameterAPI, image string) (Image, error) {
	id := image
	if IsSSMImage(image) {
		name := strings.TrimPrefix(image, "resolve:ssm:")
		out, err := ssmapi.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
		if apiErrorCode(err) == "ParameterNotFound" {
			return Image{}, fmt.Errorf("SSM parameter %s: %w", name, ErrNotFound)
		}
		if err != nil {
			return Image{}, fmt.Errorf("reading SSM parameter %s: %w", name, err)
		}
		if out.Parameter == nil || !strings.HasPrefix(aws.ToString(out.Parameter.Value), "ami-") {
			return Image{}, fmt.Errorf("SSM parameter %s does not hold an AMI id", name)
		}
		id = aws.ToString(out.Parameter.Value)
	}
	out, err := ec2api.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
	if code := apiErrorCode(err); code == "InvalidAMIID.NotFound" || code == "InvalidAMIID.Malformed" {
		return Image{}, fmt.Errorf("image %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Image{}, fmt.Errorf("describing image %s: %w", id, err)
	}
	if len(out.Images) == 0 {
		return Image{}, fmt.Errorf("image %s: %w", id, ErrNotFound)
	}
	im := out.Images[0]
	return Image{ID: id, Name: aws.ToString(im.Name), Architecture: string(im.Architecture), RootDeviceName: aws.ToString(im.RootDeviceName), TPMSupport: string(im.TpmSupport)}, nil
}
