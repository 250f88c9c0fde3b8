package acctest

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
)

// Network is what the tests of a resource's network settings refer to in
// the emulator's Region: the default VPC with its default subnet in each
// zone and its default security group, and a second VPC with a subnet and a
// security group of its own.
type Network struct {
	VPC           string
	Subnets       map[string]string // zone id -> the default VPC's subnet there
	SecurityGroup string            // the default VPC's default group
	OtherVPC      string
	OtherSubnet   string // in OtherVPC, zone mec1-az1
	OtherGroup    string // of OtherVPC
}

// Network finds the default VPC's subnets and group and makes the second
// VPC, with the fixture clients.
func (h *Harness) Network(ctx context.Context) (*Network, error) {
	c, err := h.Clients(ctx, Region)
	if err != nil {
		return nil, err
	}
	e := EC2(c)
	n := &Network{Subnets: map[string]string{}}
	vpcs, err := e.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) == 0 {
		return nil, fmt.Errorf("finding the default VPC: %v", err)
	}
	n.VPC = aws.ToString(vpcs.Vpcs[0].VpcId)
	sns, err := e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{n.VPC}}}})
	if err != nil {
		return nil, err
	}
	for _, s := range sns.Subnets {
		n.Subnets[aws.ToString(s.AvailabilityZoneId)] = aws.ToString(s.SubnetId)
	}
	sgs, err := e.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{n.VPC}}, {Name: aws.String("group-name"), Values: []string{"default"}}}})
	if err != nil || len(sgs.SecurityGroups) == 0 {
		return nil, fmt.Errorf("finding the default security group: %v", err)
	}
	n.SecurityGroup = aws.ToString(sgs.SecurityGroups[0].GroupId)
	vpc, err := e.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.77.0.0/16")})
	if err != nil {
		return nil, err
	}
	n.OtherVPC = aws.ToString(vpc.Vpc.VpcId)
	sn, err := e.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String("10.77.1.0/24"), AvailabilityZoneId: aws.String("mec1-az1")})
	if err != nil {
		return nil, err
	}
	n.OtherSubnet = aws.ToString(sn.Subnet.SubnetId)
	sg, err := e.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("serving"), Description: aws.String("serving endpoint"), VpcId: vpc.Vpc.VpcId})
	if err != nil {
		return nil, err
	}
	n.OtherGroup = aws.ToString(sg.GroupId)
	return n, nil
}

// ServeOpenModel moves endpoint to a config of its own whose model is the
// one it serves less its network settings (not network-isolated, no VPC):
// a change made outside the provider (the console, another tool), which a
// refresh must show. It waits until the endpoint serves it.
func (h *Harness) ServeOpenModel(ctx context.Context, endpoint string) error {
	c, err := h.Clients(ctx, Region)
	if err != nil {
		return err
	}
	sm := c.SageMaker
	ep, err := sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(endpoint)})
	if err != nil {
		return err
	}
	cfg, err := sm.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: ep.EndpointConfigName})
	if err != nil || len(cfg.ProductionVariants) == 0 {
		return fmt.Errorf("describing the config of %s: %v", endpoint, err)
	}
	m, err := sm.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: cfg.ProductionVariants[0].ModelName})
	if err != nil {
		return err
	}
	model, config := endpoint+"-outside", endpoint+"-outside"
	if _, err := sm.CreateModel(ctx, &sagemaker.CreateModelInput{ModelName: aws.String(model), ExecutionRoleArn: m.ExecutionRoleArn,
		PrimaryContainer: m.PrimaryContainer, EnableNetworkIsolation: aws.Bool(false)}); err != nil {
		return err
	}
	variants := cfg.ProductionVariants
	for i := range variants {
		variants[i].ModelName = aws.String(model)
	}
	if _, err := sm.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{EndpointConfigName: aws.String(config),
		ProductionVariants: variants, KmsKeyId: cfg.KmsKeyId, DataCaptureConfig: cfg.DataCaptureConfig}); err != nil {
		return err
	}
	if _, err := sm.UpdateEndpoint(ctx, &sagemaker.UpdateEndpointInput{EndpointName: aws.String(endpoint), EndpointConfigName: aws.String(config)}); err != nil {
		return err
	}
	for range 20 {
		out, err := sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(endpoint)})
		if err != nil {
			return err
		}
		if out.EndpointStatus == smtypes.EndpointStatusInService && aws.ToString(out.EndpointConfigName) == config {
			return nil
		}
	}
	return fmt.Errorf("endpoint %s does not serve %s after the update", endpoint, config)
}

// ServingModel describes the model endpoint serves now.
func (h *Harness) ServingModel(ctx context.Context, endpoint string) (*sagemaker.DescribeModelOutput, error) {
	c, err := h.Clients(ctx, Region)
	if err != nil {
		return nil, err
	}
	ep, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(endpoint)})
	if err != nil {
		return nil, err
	}
	cfg, err := c.SageMaker.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: ep.EndpointConfigName})
	if err != nil || len(cfg.ProductionVariants) == 0 {
		return nil, fmt.Errorf("describing the config of %s: %v", endpoint, err)
	}
	return c.SageMaker.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: cfg.ProductionVariants[0].ModelName})
}
