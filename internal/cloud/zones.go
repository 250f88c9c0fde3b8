package cloud

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// Zone is an availability zone of the configured region.
type Zone struct {
	Name  string // me-central-1a
	ID    string // mec1-az1
	State string // available, impaired, unavailable
}

// ZonesAPI is the EC2 call FindZones needs.
type ZonesAPI interface {
	DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, opts ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
}

// FindZones lists the availability zones of the client's region, sorted by id.
func FindZones(ctx context.Context, api ZonesAPI) ([]Zone, error) {
	out, err := api.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return nil, fmt.Errorf("describing availability zones: %w", err)
	}
	zones := make([]Zone, 0, len(out.AvailabilityZones))
	for _, z := range out.AvailabilityZones {
		zones = append(zones, Zone{Name: aws.ToString(z.ZoneName), ID: aws.ToString(z.ZoneId), State: string(z.State)})
	}
	sort.Slice(zones, func(i, j int) bool { return zones[i].ID < zones[j].ID })
	return zones, nil
}
