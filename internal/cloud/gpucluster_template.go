package cloud

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Capacity types of a GPU cluster.
const (
	CapacityOnDemand            = "on_demand"
	CapacityCapacityReservation = "capacity_reservation"
	CapacityCapacityBlock       = "capacity_block"
	CapacitySpot                = "spot"
)

// CapacityTypes lists the capacity types in documentation order.
func CapacityTypes() []string {
	return []string{CapacityOnDemand, CapacityCapacityReservation, CapacityCapacityBlock, CapacitySpot}
}

// Capacity says what capacity nodes launch into.
type Capacity struct {
	Type          string // one of CapacityTypes(); empty means on_demand
	ReservationID string // cr-...: the capacity reservation or capacity block
	SpotMaxPrice  string // USD per hour; empty: the on-demand price
}

// Volume is an EBS volume of every node. Volumes are always encrypted.
type Volume struct {
	DeviceName string // empty for the root volume: the image's root device
	SizeGiB    int32
	Type       string // gp3 (default), gp2, io1, io2
	IOPS       int32
	Throughput int32 // MiB/s, gp3 only
}

// NodeTemplate is how every node of a cluster is launched: what the launch
// template holds. Where a node goes (subnet, zone, network interfaces) is
// given per launch, so that zone fallback needs no new template version.
type NodeTemplate struct {
	InstanceType    string
	ImageID         string
	RootDeviceName  string // of the image, e.g. /dev/xvda or /dev/sda1
	InstanceProfile string // name or ARN; empty for none
	KMSKeyID        string // ARN of the key for every volume; empty: the account's default EBS key
	RootVolume      Volume
	DataVolumes     []Volume
	UserData        string // plain text; encoded here
	Capacity        Capacity
	PlacementGroup  string
	Tags            map[string]string // on instances and volumes
	// MetadataHopLimit is the instance metadata service's PUT response hop
	// limit (IMDSv2); 0 means DefaultMetadataHopLimit. It changes in place
	// (ModifyInstanceMetadataOptions on the running nodes), so it is left out
	// of NodeHash and is part of TemplateHash.
	MetadataHopLimit int32 `json:"-"`
}

// IMDS hop limits. With 1, the token's response does not survive the hop
// from the node into a container's network namespace (a bridge or overlay
// network), so containers cannot reach the node role's credentials or its
// identity document; 2 lets them. LegacyMetadataHopLimit is what every node
// template held before the limit could be set: a template with it hashes
// as one made then.
const (
	DefaultMetadataHopLimit int32 = 1
	LegacyMetadataHopLimit  int32 = 2
	MaxMetadataHopLimit     int32 = 64
)

// HopLimit is the template's metadata hop limit, the default for 0.
func (t NodeTemplate) HopLimit() int32 {
	if t.MetadataHopLimit <= 0 {
		return DefaultMetadataHopLimit
	}
	return t.MetadataHopLimit
}

// NodeHash fingerprints what a node is (tags and the metadata hop limit
// left out): nodes whose hash differs from the desired one are rolled.
// Tags and the hop limit change in place.
func (t NodeTemplate) NodeHash() string {
	c := t
	c.Tags = nil
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// NodeHash fingerprints a node: its template's NodeHash and how it is
// attached to the network (security groups, EFA interface count).
func NodeHash(t NodeTemplate, securityGroupIDs []string, efa int) string {
	sgs := slices.Clone(securityGroupIDs)
	slices.Sort(sgs)
	sum := sha256.Sum256([]byte(t.NodeHash() + "\x00" + strings.Join(sgs, ",") + "\x00" + strconv.Itoa(efa)))
	return hex.EncodeToString(sum[:8])
}

// TemplateHash fingerprints the whole template, tags included: a change
// makes a new launch template version.
func (t NodeTemplate) TemplateHash() string {
	keys := slices.Sorted(maps.Keys(t.Tags))
	var b strings.Builder
	b.WriteString(t.NodeHash())
	if h := t.HopLimit(); h != LegacyMetadataHopLimit {
		// Templates made before the hop limit could be set held 2 and
		// hashed without it.
		b.WriteString("\x00imds-hop-limit=" + strconv.Itoa(int(h)))
	}
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + t.Tags[k])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

func ec2TagList(m map[string]string) []types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func ebs(v Volume, kmsKeyID string) *types.LaunchTemplateEbsBlockDeviceRequest {
	e := &types.LaunchTemplateEbsBlockDeviceRequest{
		DeleteOnTermination: aws.Bool(true),
		Encrypted:           aws.Bool(true),
	}
	if v.SizeGiB > 0 {
		e.VolumeSize = aws.Int32(v.SizeGiB)
	}
	typ := v.Type
	if typ == "" {
		typ = "gp3"
	}
	e.VolumeType = types.VolumeType(typ)
	if v.IOPS > 0 {
		e.Iops = aws.Int32(v.IOPS)
	}
	if v.Throughput > 0 {
		e.Throughput = aws.Int32(v.Throughput)
	}
	if kmsKeyID != "" {
		e.KmsKeyId = aws.String(kmsKeyID)
	}
	return e
}

// instanceMetadataOptions are the template's metadata options as
// RunInstances takes them: given on every launch too, so that a launch
// template version made outside cannot loosen them.
func (t NodeTemplate) instanceMetadataOptions() *types.InstanceMetadataOptionsRequest {
	return &types.InstanceMetadataOptionsRequest{
		HttpTokens:              types.HttpTokensStateRequired,
		HttpEndpoint:            types.InstanceMetadataEndpointStateEnabled,
		HttpPutResponseHopLimit: aws.Int32(t.HopLimit()),
		InstanceMetadataTags:    types.InstanceMetadataTagsStateEnabled,
	}
}

// SetMetadataHopLimitAPI is what SetMetadataHopLimit needs.
type SetMetadataHopLimitAPI interface {
	ModifyInstanceMetadataOptions(ctx context.Context, in *ec2.ModifyInstanceMetadataOptionsInput, opts ...func(*ec2.Options)) (*ec2.ModifyInstanceMetadataOptionsOutput, error)
}

// SetMetadataHopLimit sets the metadata hop limit of running instances in
// place (no reboot); the other metadata options stay as they are. An
// instance already gone is skipped.
func SetMetadataHopLimit(ctx context.Context, api SetMetadataHopLimitAPI, instanceIDs []string, limit int32) error {
	for _, id := range instanceIDs {
		_, err := api.ModifyInstanceMetadataOptions(ctx, &ec2.ModifyInstanceMetadataOptionsInput{InstanceId: aws.String(id), HttpPutResponseHopLimit: aws.Int32(limit)})
		if err != nil && apiErrorCode(err) != "InvalidInstanceID.NotFound" {
			return fmt.Errorf("setting the metadata hop limit of %s to %d: %w", id, limit, err)
		}
	}
	return nil
}

// DataVolumeDevice is the device name of the i-th data volume when none is
// given: /dev/sdf, /dev/sdg, ...
func DataVolumeDevice(i int) string { return "/dev/sd" + string(rune('f'+i)) }

// launchTemplateData renders the template. clusterTags are the system tags
// every instance and volume carries besides t.Tags.
func (t NodeTemplate) launchTemplateData(clusterTags map[string]string) *types.RequestLaunchTemplateData {
	tags := maps.Clone(t.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	maps.Copy(tags, clusterTags)
	d := &types.RequestLaunchTemplateData{
		InstanceType: types.InstanceType(t.InstanceType),
		ImageId:      aws.String(t.ImageID),
		MetadataOptions: &types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpTokens:              types.LaunchTemplateHttpTokensStateRequired,
			HttpEndpoint:            types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
			HttpPutResponseHopLimit: aws.Int32(t.HopLimit()),
			// The validation gate's challenge reaches the node as an
			// instance tag, read from the metadata service.
			InstanceMetadataTags: types.LaunchTemplateInstanceMetadataTagsStateEnabled,
		},
		TagSpecifications: []types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: types.ResourceTypeInstance, Tags: ec2TagList(tags)},
			{ResourceType: types.ResourceTypeVolume, Tags: ec2TagList(tags)},
		},
	}
	root := t.RootDeviceName
	if root == "" {
		root = "/dev/xvda"
	}
	d.BlockDeviceMappings = append(d.BlockDeviceMappings, types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(root), Ebs: ebs(t.RootVolume, t.KMSKeyID)})
	for i, v := range t.DataVolumes {
		dev := v.DeviceName
		if dev == "" {
			dev = DataVolumeDevice(i)
		}
		d.BlockDeviceMappings = append(d.BlockDeviceMappings, types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(dev), Ebs: ebs(v, t.KMSKeyID)})
	}
	if p := t.InstanceProfile; p != "" {
		if strings.HasPrefix(p, "arn:") {
			d.IamInstanceProfile = &types.LaunchTemplateIamInstanceProfileSpecificationRequest{Arn: aws.String(p)}
		} else {
			d.IamInstanceProfile = &types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(p)}
		}
	}
	if t.UserData != "" {
		d.UserData = aws.String(base64.StdEncoding.EncodeToString([]byte(t.UserData)))
	}
	if t.PlacementGroup != "" {
		d.Placement = &types.LaunchTemplatePlacementRequest{GroupName: aws.String(t.PlacementGroup)}
	}
	target := func() *types.LaunchTemplateCapacityReservationSpecificationRequest {
		return &types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationTarget: &types.CapacityReservationTarget{CapacityReservationId: aws.String(t.Capacity.ReservationID)},
		}
	}
	switch t.Capacity.Type {
	case CapacityCapacityReservation:
		d.CapacityReservationSpecification = target()
	case CapacityCapacityBlock:
		d.CapacityReservationSpecification = target()
		d.InstanceMarketOptions = &types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: types.MarketTypeCapacityBlock}
	case CapacitySpot:
		so := &types.LaunchTemplateSpotMarketOptionsRequest{
			SpotInstanceType:             types.SpotInstanceTypeOneTime,
			InstanceInterruptionBehavior: types.InstanceInterruptionBehaviorTerminate,
		}
		if t.Capacity.SpotMaxPrice != "" {
			so.MaxPrice = aws.String(t.Capacity.SpotMaxPrice)
		}
		d.InstanceMarketOptions = &types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: types.MarketTypeSpot, SpotOptions: so}
	}
	return d
}

// NetworkInterfaces are the interfaces of one node: with efa > 0, the first
// EFA at device index 0 on network card 0, then one EFA at device index 1 on
// each further network card, as AWS documents for p4d, p5 and p5en; with
// efa == 0, one ordinary interface.
func NetworkInterfaces(efa int, subnetID string, securityGroupIDs []string) []types.InstanceNetworkInterfaceSpecification {
	ni := func(device, card int32, typ string) types.InstanceNetworkInterfaceSpecification {
		s := types.InstanceNetworkInterfaceSpecification{
			DeviceIndex:         aws.Int32(device),
			NetworkCardIndex:    aws.Int32(card),
			SubnetId:            aws.String(subnetID),
			DeleteOnTermination: aws.Bool(true),
			Groups:              slices.Clone(securityGroupIDs),
		}
		if typ != "" {
			s.InterfaceType = aws.String(typ)
		}
		return s
	}
	if efa <= 0 {
		return []types.InstanceNetworkInterfaceSpecification{ni(0, 0, "")}
	}
	out := []types.InstanceNetworkInterfaceSpecification{ni(0, 0, string(types.NetworkInterfaceTypeEfa))}
	for card := 1; card < efa; card++ {
		out = append(out, ni(1, int32(card), string(types.NetworkInterfaceTypeEfa)))
	}
	return out
}

// ensureLaunchTemplate makes launch template name hold data: it creates the
// template (tagged ltTags), or adds a version and makes it the default when
// the template's hash tag (TagTemplateHash) differs from hash, or does
// nothing. tokenKey makes the create's client token unique to its owner
// (the cluster or footprint name). A template carrying another creation
// token than owner is an *OwnershipError. Shared by the GPU cluster and the
// CPU footprint.
func ensureLaunchTemplate(ctx context.Context, api EnsureLaunchTemplateAPI, name, tokenKey, hash string, data *types.RequestLaunchTemplateData, ltTags map[string]string, owner string) (LaunchTemplateRef, error) {
	lt, err := findLaunchTemplate(ctx, api, name)
	if errors.Is(err, ErrNotFound) {
		out, err := api.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: data,
			VersionDescription: aws.String("mlplatform " + hash),
			ClientToken:        aws.String("mlp-lt-" + hash + "-" + tokenKey),
			TagSpecifications:  []types.TagSpecification{{ResourceType: types.ResourceTypeLaunchTemplate, Tags: ec2TagList(ltTags)}},
		})
		switch {
		case err == nil:
			return LaunchTemplateRef{ID: aws.ToString(out.LaunchTemplate.LaunchTemplateId), Version: aws.ToInt64(out.LaunchTemplate.LatestVersionNumber), Changed: true}, nil
		case apiErrorCode(err) == "InvalidLaunchTemplateName.AlreadyExistsException":
			// A retry of a create whose response was lost: read it back,
			// and check below that it is ours.
			lt, err = findLaunchTemplate(ctx, api, name)
			if err != nil {
				return LaunchTemplateRef{}, fmt.Errorf("reading back launch template %s: %w", name, err)
			}
		default:
			return LaunchTemplateRef{}, fmt.Errorf("creating launch template %s: %w", name, err)
		}
	} else if err != nil {
		return LaunchTemplateRef{}, err
	}
	id := aws.ToString(lt.LaunchTemplateId)
	tags := ec2TagMap(lt.Tags, func(t types.Tag) (string, string) { return aws.ToString(t.Key), aws.ToString(t.Value) })
	if tok := tags[TagCreationToken]; tok != "" && owner != "" && tok != owner {
		return LaunchTemplateRef{}, &OwnershipError{Resource: "launch template " + name, Token: tok}
	}
	ref := LaunchTemplateRef{ID: id, Version: aws.ToInt64(lt.LatestVersionNumber)}
	ref.Seq, _ = strconv.ParseInt(tags[TagLaunchSeq], 10, 64)
	if tags[TagCreationToken] == "" && owner != "" {
		// A template made before tokens, or imported: it is ours from now.
		if _, err := api.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2TagList(map[string]string{TagCreationToken: owner})}); err != nil {
			return LaunchTemplateRef{}, fmt.Errorf("tagging launch template %s: %w", name, err)
		}
	}
	if tags[TagTemplateHash] == hash {
		return ref, nil
	}
	v, err := api.CreateLaunchTemplateVersion(ctx, &ec2.CreateLaunchTemplateVersionInput{
		LaunchTemplateId:   aws.String(id),
		LaunchTemplateData: data,
		VersionDescription: aws.String("mlplatform " + hash),
		ClientToken:        aws.String("mlp-ltv-" + hash + "-" + id),
	})
	if err != nil {
		return LaunchTemplateRef{}, fmt.Errorf("creating version of launch template %s: %w", name, err)
	}
	ref.Version = aws.ToInt64(v.LaunchTemplateVersion.VersionNumber)
	ref.Changed = true
	if _, err := api.ModifyLaunchTemplate(ctx, &ec2.ModifyLaunchTemplateInput{
		LaunchTemplateId: aws.String(id), DefaultVersion: aws.String(strconv.FormatInt(ref.Version, 10)),
	}); err != nil {
		return LaunchTemplateRef{}, fmt.Errorf("setting default version of launch template %s: %w", name, err)
	}
	if _, err := api.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2TagList(ltTags)}); err != nil {
		return LaunchTemplateRef{}, fmt.Errorf("tagging launch template %s: %w", name, err)
	}
	return ref, nil
}
