package cloud

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// FindGPUClusterAPI is what FindGPUCluster needs.
type FindGPUClusterAPI interface {
	DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
}

// FindGPUCluster reads everything of cluster name: its launch template, its
// nodes (one DescribeInstances filtered on the cluster tag, paginated at
// 1000 instances a page) and its placement group. A refresh therefore costs
// three calls up to 1000 nodes, whatever the node count. It returns
// ErrNotFound when neither the launch template nor any live node exists.
func FindGPUCluster(ctx context.Context, api FindGPUClusterAPI, name string) (*GPUCluster, error) {
	c := &GPUCluster{Name: name}
	lt, err := findLaunchTemplate(ctx, api, GPUClusterResourceName(name))
	switch {
	case err == nil:
		c.LaunchTemplateID = aws.ToString(lt.LaunchTemplateId)
		c.LaunchTemplateVersion = aws.ToInt64(lt.LatestVersionNumber)
		c.LaunchTemplateTags = ec2TagMap(lt.Tags, func(t types.Tag) (string, string) { return aws.ToString(t.Key), aws.ToString(t.Value) })
		c.LaunchSeq, _ = strconv.ParseInt(c.LaunchTemplateTags[TagLaunchSeq], 10, 64)
		c.PlacementGroupName = c.LaunchTemplateTags[TagPlacementGroup]
		c.PlacementGroupOwned = c.LaunchTemplateTags[TagPlacementGroupOwned] == "true"
		c.CreationToken = c.LaunchTemplateTags[TagCreationToken]
	case err != ErrNotFound:
		return nil, err
	}
	if c.Nodes, c.Gone, err = FindGPUNodes(ctx, api, name); err != nil {
		return nil, err
	}
	probeOwned := c.LaunchTemplateID == ""
	if probeOwned {
		// Without the template's tags, look for the group the cluster would
		// own, so that it is not orphaned.
		c.PlacementGroupName = GPUClusterResourceName(name)
	}
	if c.PlacementGroupName != "" {
		pg, err := FindPlacementGroup(ctx, api, c.PlacementGroupName)
		switch {
		case err == nil:
			c.PlacementGroupState = string(pg.State)
			if probeOwned {
				tags := ec2TagMap(pg.Tags, func(t types.Tag) (string, string) { return aws.ToString(t.Key), aws.ToString(t.Value) })
				if tags[TagCluster] == name {
					c.PlacementGroupOwned = true
					c.CreationToken = tags[TagCreationToken]
				}
			}
		case err != ErrNotFound:
			return nil, err
		}
	}
	if c.LaunchTemplateID == "" && len(c.Nodes) == 0 && !(c.PlacementGroupOwned && c.PlacementGroupState != "") {
		return nil, ErrNotFound
	}
	if c.CreationToken == "" && c.LaunchTemplateID == "" {
		for _, n := range c.Nodes {
			if n.CreationToken != "" {
				c.CreationToken = n.CreationToken
				break
			}
		}
	}
	return c, nil
}

func findLaunchTemplate(ctx context.Context, api interface {
	DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
}, ltName string) (*types.LaunchTemplate, error) {
	out, err := api.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{ltName}})
	if err != nil {
		if apiErrorCode(err) == "InvalidLaunchTemplateName.NotFoundException" || apiErrorCode(err) == "InvalidLaunchTemplateId.NotFound" {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("describing launch template %s: %w", ltName, err)
	}
	if len(out.LaunchTemplates) == 0 {
		return nil, ErrNotFound
	}
	return &out.LaunchTemplates[0], nil
}

// FindPlacementGroup finds a placement group by name.
func FindPlacementGroup(ctx context.Context, api interface {
	DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
}, name string) (*types.PlacementGroup, error) {
	out, err := api.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{name}})
	if err != nil {
		if apiErrorCode(err) == "InvalidPlacementGroup.Unknown" {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("describing placement group %s: %w", name, err)
	}
	for _, pg := range out.PlacementGroups {
		if aws.ToString(pg.GroupName) == name && pg.State != types.PlacementGroupStateDeleted {
			return &pg, nil
		}
	}
	return nil, ErrNotFound
}

// FindGPUNodes lists the nodes of cluster name, live and gone, with one
// filtered, paginated DescribeInstances. When two live nodes claim the same
// index (a launch-first roll in progress), both are returned; the planner
// decides which one stays.
func FindGPUNodes(ctx context.Context, api interface {
	DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}, name string) (live, gone []GPUNode, err error) {
	in := &ec2.DescribeInstancesInput{
		Filters:    []types.Filter{{Name: aws.String("tag:" + TagCluster), Values: []string{name}}},
		MaxResults: aws.Int32(1000),
	}
	p := ec2.NewDescribeInstancesPaginator(api, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("describing nodes of GPU cluster %s: %w", name, err)
		}
		for _, r := range out.Reservations {
			for _, inst := range r.Instances {
				n := nodeFromInstance(inst)
				if n.Live() {
					live = append(live, n)
				} else {
					gone = append(gone, n)
				}
			}
		}
	}
	sortNodes(live)
	sortNodes(gone)
	return live, gone, nil
}

func sortNodes(ns []GPUNode) {
	sort.SliceStable(ns, func(i, j int) bool {
		if ns[i].Index != ns[j].Index {
			return ns[i].Index < ns[j].Index
		}
		if !ns[i].LaunchTime.Equal(ns[j].LaunchTime) {
			return ns[i].LaunchTime.Before(ns[j].LaunchTime)
		}
		return ns[i].InstanceID < ns[j].InstanceID
	})
}

// nodeFromInstance reads a node from an instance; its index is the entry of
// the node-indices tag at the instance's AmiLaunchIndex.
func nodeFromInstance(inst types.Instance) GPUNode {
	tags := ec2TagMap(inst.Tags, func(t types.Tag) (string, string) { return aws.ToString(t.Key), aws.ToString(t.Value) })
	n := GPUNode{
		Index:         -1,
		InstanceID:    aws.ToString(inst.InstanceId),
		InstanceType:  string(inst.InstanceType),
		ImageID:       aws.ToString(inst.ImageId),
		PrivateIP:     aws.ToString(inst.PrivateIpAddress),
		SubnetID:      aws.ToString(inst.SubnetId),
		SpecHash:      tags[TagSpecHash],
		ZoneID:        tags[TagZoneID],
		Tags:          tags,
		CreationToken: tags[TagCreationToken],
		LaunchTime:    aws.ToTime(inst.LaunchTime),
	}
	if inst.State != nil {
		n.State = string(inst.State.Name)
	}
	if inst.StateReason != nil {
		n.StateReason = aws.ToString(inst.StateReason.Message)
	}
	if inst.Placement != nil {
		n.Zone = aws.ToString(inst.Placement.AvailabilityZone)
		if id := aws.ToString(inst.Placement.AvailabilityZoneId); id != "" {
			n.ZoneID = id
		}
	}
	if inst.CapacityReservationId != nil {
		n.CapacityReservationID = aws.ToString(inst.CapacityReservationId)
	}
	if m := inst.MetadataOptions; m != nil {
		n.MetadataHopLimit = aws.ToInt32(m.HttpPutResponseHopLimit)
	}
	for _, ni := range inst.NetworkInterfaces {
		if aws.ToString(ni.InterfaceType) == string(types.NetworkInterfaceTypeEfa) {
			n.EFAInterfaces++
		}
		if ni.Attachment != nil && aws.ToInt32(ni.Attachment.DeviceIndex) == 0 && aws.ToInt32(ni.Attachment.NetworkCardIndex) == 0 {
			for _, g := range ni.Groups {
				n.SecurityGroupIDs = append(n.SecurityGroupIDs, aws.ToString(g.GroupId))
			}
		}
	}
	for _, bd := range inst.BlockDeviceMappings {
		if bd.Ebs != nil && bd.Ebs.VolumeId != nil {
			n.VolumeIDs = append(n.VolumeIDs, aws.ToString(bd.Ebs.VolumeId))
		}
	}
	if idx, err := ParseIndices(tags[TagNodeIndices]); err == nil {
		if li := int(aws.ToInt32(inst.AmiLaunchIndex)); li >= 0 && li < len(idx) {
			n.Index = idx[li]
		}
	}
	return n
}

// FindGPUClusterTemplateAPI is what FindGPUClusterTemplate needs.
type FindGPUClusterTemplateAPI interface {
	DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
}

// FindGPUClusterTemplate reads a launch template version back into the node
// template it was made from (for import). Tags are the instance tags less the
// system ones.
func FindGPUClusterTemplate(ctx context.Context, api FindGPUClusterTemplateAPI, launchTemplateID string, version int64) (NodeTemplate, error) {
	out, err := api.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
		LaunchTemplateId: aws.String(launchTemplateID), Versions: []string{strconv.FormatInt(version, 10)},
	})
	if err != nil {
		return NodeTemplate{}, fmt.Errorf("describing launch template %s version %d: %w", launchTemplateID, version, err)
	}
	if len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
		return NodeTemplate{}, ErrNotFound
	}
	d := out.LaunchTemplateVersions[0].LaunchTemplateData
	t := NodeTemplate{InstanceType: string(d.InstanceType), ImageID: aws.ToString(d.ImageId)}
	if d.IamInstanceProfile != nil {
		t.InstanceProfile = aws.ToString(d.IamInstanceProfile.Arn)
		if t.InstanceProfile == "" {
			t.InstanceProfile = aws.ToString(d.IamInstanceProfile.Name)
		}
	}
	if d.UserData != nil {
		if b, err := base64.StdEncoding.DecodeString(aws.ToString(d.UserData)); err == nil {
			t.UserData = string(b)
		}
	}
	if d.Placement != nil {
		t.PlacementGroup = aws.ToString(d.Placement.GroupName)
	}
	if m := d.MetadataOptions; m != nil {
		t.MetadataHopLimit = aws.ToInt32(m.HttpPutResponseHopLimit)
	}
	for i, bd := range d.BlockDeviceMappings {
		if bd.Ebs == nil {
			continue
		}
		v := Volume{DeviceName: aws.ToString(bd.DeviceName), SizeGiB: aws.ToInt32(bd.Ebs.VolumeSize), Type: string(bd.Ebs.VolumeType), IOPS: aws.ToInt32(bd.Ebs.Iops), Throughput: aws.ToInt32(bd.Ebs.Throughput)}
		if k := aws.ToString(bd.Ebs.KmsKeyId); k != "" {
			t.KMSKeyID = k
		}
		if i == 0 {
			t.RootDeviceName = v.DeviceName
			v.DeviceName = ""
			t.RootVolume = v
			continue
		}
		t.DataVolumes = append(t.DataVolumes, v)
	}
	if m := d.InstanceMarketOptions; m != nil {
		switch m.MarketType {
		case types.MarketTypeSpot:
			t.Capacity.Type = CapacitySpot
			if m.SpotOptions != nil {
				t.Capacity.SpotMaxPrice = aws.ToString(m.SpotOptions.MaxPrice)
			}
		case types.MarketTypeCapacityBlock:
			t.Capacity.Type = CapacityCapacityBlock
		}
	}
	if c := d.CapacityReservationSpecification; c != nil && c.CapacityReservationTarget != nil {
		t.Capacity.ReservationID = aws.ToString(c.CapacityReservationTarget.CapacityReservationId)
		if t.Capacity.Type == "" {
			t.Capacity.Type = CapacityCapacityReservation
		}
	}
	if t.Capacity.Type == "" {
		t.Capacity.Type = CapacityOnDemand
	}
	for _, ts := range d.TagSpecifications {
		if ts.ResourceType != types.ResourceTypeInstance {
			continue
		}
		t.Tags = map[string]string{}
		for _, tag := range ts.Tags {
			k := aws.ToString(tag.Key)
			if strings.HasPrefix(k, "mlplatform:") || strings.HasPrefix(k, "aws:") {
				continue
			}
			t.Tags[k] = aws.ToString(tag.Value)
		}
	}
	return t, nil
}
