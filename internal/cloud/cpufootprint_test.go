package cloud

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/smithy-go"
)

// existsAPI is a test double: moto overwrites a group created twice, where
// EC2 Auto Scaling answers AlreadyExists.
type existsAPI struct{ FootprintGroupAPI }

func (existsAPI) CreateAutoScalingGroup(context.Context, *autoscaling.CreateAutoScalingGroupInput, ...func(*autoscaling.Options)) (*autoscaling.CreateAutoScalingGroupOutput, error) {
	return nil, &smithy.GenericAPIError{Code: "AlreadyExists", Message: "AutoScalingGroup by this name already exists - A group with the name fp already exists"}
}

func TestCreateFootprintGroupExists(t *testing.T) {
	err := CreateFootprintGroup(context.Background(), existsAPI{}, FootprintGroup{Name: "fp", InstanceTypes: []string{"c7i.large"}})
	if !errors.Is(err, ErrGroupExists) {
		t.Fatalf("err = %v, want ErrGroupExists", err)
	}
}

func TestMixedInstances(t *testing.T) {
	if mixedInstances(FootprintGroup{InstanceTypes: []string{"c7i.large"}}) != nil {
		t.Error("one On-Demand type needs no mixed instances policy")
	}
	p := mixedInstances(FootprintGroup{InstanceTypes: []string{"c7i.large", "m7i.large"}, Spot: true, OnDemandBase: 1})
	if p == nil || len(p.LaunchTemplate.Overrides) != 2 || *p.InstancesDistribution.OnDemandPercentageAboveBaseCapacity != 0 || *p.InstancesDistribution.OnDemandBaseCapacity != 1 {
		t.Errorf("spot policy %+v", p)
	}
	od := mixedInstances(FootprintGroup{InstanceTypes: []string{"c7i.large", "m7i.large"}})
	if od == nil || *od.InstancesDistribution.OnDemandPercentageAboveBaseCapacity != 100 || *od.InstancesDistribution.OnDemandAllocationStrategy != "prioritized" {
		t.Errorf("On-Demand policy %+v", od)
	}
}
