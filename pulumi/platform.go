package pulumi

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/mapper"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// UAE defaults of the Platform component.
const (
	DefaultTrainingInstanceType = "p5en.48xlarge" // offered in me-central-1 (H200)
	DefaultTrainingNodeCount    = 2
	DefaultTrainingZoneID       = "mec1-az1"
	DefaultTrainingImage        = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
	DefaultRootVolumeGiB        = 200
	DefaultRecordIdentifier     = "record_id"
	DefaultEventTime            = "event_time"
)

// PlatformArgs declares a residency-checked ML platform: a training cluster
// and a feature store (a serving endpoint and a CPU footprint join when those
// resources exist).
type PlatformArgs struct {
	Training *PlatformTraining `pulumi:"training,optional"`
	Features PlatformFeatures  `pulumi:"features"`
	Tags     map[string]string `pulumi:"tags,optional"`
}

// PlatformTraining is the training cluster, with UAE defaults.
type PlatformTraining struct {
	InstanceType     *string  `pulumi:"instanceType,optional"`
	NodeCount        *int     `pulumi:"nodeCount,optional"`
	ZoneID           *string  `pulumi:"zoneId,optional"`
	Image            *string  `pulumi:"image,optional"`
	SubnetID         *string  `pulumi:"subnetId,optional"`
	SecurityGroupIDs []string `pulumi:"securityGroupIds,optional"`
	InstanceProfile  *string  `pulumi:"instanceProfile,optional"`
	KMSKeyARN        *string  `pulumi:"kmsKeyArn,optional"`
	RootVolumeGiB    *int     `pulumi:"rootVolumeGib,optional"`
	UserData         *string  `pulumi:"userData,optional"`
}

// PlatformFeatures is the feature store.
type PlatformFeatures struct {
	OfflineStoreS3URI           string              `pulumi:"offlineStoreS3Uri"`
	RoleARN                     string              `pulumi:"roleArn"`
	RecordIdentifierFeatureName *string             `pulumi:"recordIdentifierFeatureName,optional"`
	EventTimeFeatureName        *string             `pulumi:"eventTimeFeatureName,optional"`
	Features                    []FeatureDefinition `pulumi:"features,optional"`
	OnlineStore                 *bool               `pulumi:"onlineStore,optional"`
	KMSKeyARN                   *string             `pulumi:"kmsKeyArn,optional"`
	TTLDays                     *int                `pulumi:"ttlDays,optional"`
	AllowDestructiveChanges     *bool               `pulumi:"allowDestructiveChanges,optional"`
}

// Platform is the component: its children are parented to it.
type Platform struct {
	pulumi.ResourceState

	ClusterName       pulumi.StringOutput      `pulumi:"clusterName"`
	ClusterNodeIDs    pulumi.StringArrayOutput `pulumi:"clusterNodeIds"`
	ClusterPrivateIPs pulumi.StringArrayOutput `pulumi:"clusterPrivateIps"`
	ClusterZoneID     pulumi.StringOutput      `pulumi:"clusterZoneId"`
	FeatureGroupName  pulumi.StringOutput      `pulumi:"featureGroupName"`
	FeatureGroupARN   pulumi.StringOutput      `pulumi:"featureGroupArn"`
	EndpointName      pulumi.StringPtrOutput   `pulumi:"endpointName,optional"`
	ValidationSummary pulumi.StringOutput      `pulumi:"validationSummary"`
}

// Annotate describes the component.
func (c *Platform) Annotate(a infer.Annotator) {
	a.Describe(c, "One declaration of a residency-checked ML platform, with defaults for the UAE (me-central-1): a GPU training cluster "+
		"and a SageMaker feature store, parented to the component. Every child runs the provider's residency and validation checks, so a "+
		"preview that would place anything outside the jurisdiction fails before any write.")
	a.Describe(&c.ClusterName, "Name of the training cluster.")
	a.Describe(&c.ClusterNodeIDs, "Instance ids of the training nodes, by node index.")
	a.Describe(&c.ClusterPrivateIPs, "Private IPv4 addresses of the training nodes, by node index.")
	a.Describe(&c.ClusterZoneID, "Zone id the training nodes run in.")
	a.Describe(&c.FeatureGroupName, "Name of the feature group.")
	a.Describe(&c.FeatureGroupARN, "ARN of the feature group.")
	a.Describe(&c.EndpointName, "Name of the serving endpoint; unset until the platform has one.")
	a.Describe(&c.ValidationSummary, "What was checked, in words: the residency verdict of the training cluster and the feature store (in `audit` mode, the number of violations and the rules they break; never compliant when a check could not run) and the state of the training nodes.")
}

// Annotate describes the inputs.
func (a *PlatformArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Training, "The training cluster. Defaults: "+DefaultTrainingInstanceType+", 2 nodes in "+DefaultTrainingZoneID+", Amazon Linux 2023.")
	an.Describe(&a.Features, "The feature store.")
	an.Describe(&a.Tags, "Tags of every child, over the provider's defaultTags.")
}

// Annotate describes the training inputs.
func (t *PlatformTraining) Annotate(a infer.Annotator) {
	a.Describe(&t.InstanceType, "GPU instance type. Default `"+DefaultTrainingInstanceType+"`.")
	a.Describe(&t.NodeCount, "Number of nodes. Default 2.")
	a.Describe(&t.ZoneID, "Availability zone id. Default `"+DefaultTrainingZoneID+"`.")
	a.Describe(&t.Image, "AMI id or SSM parameter name. Default: the latest Amazon Linux 2023.")
	a.Describe(&t.SubnetID, "Subnet of the nodes. Default: the zone's default subnet.")
	a.Describe(&t.SecurityGroupIDs, "Security groups of the nodes.")
	a.Describe(&t.InstanceProfile, "IAM instance profile of the nodes.")
	a.Describe(&t.KMSKeyARN, "KMS key of the volumes; it must lie inside the jurisdiction.")
	a.Describe(&t.RootVolumeGiB, "Root volume size in GiB. Default 200.")
	a.Describe(&t.UserData, "User data run at boot.")
}

// Annotate describes the feature store inputs.
func (f *PlatformFeatures) Annotate(a infer.Annotator) {
	a.Describe(&f.OfflineStoreS3URI, "S3 location of the offline store; the bucket must lie inside the jurisdiction.")
	a.Describe(&f.RoleARN, "IAM role SageMaker writes the offline store with.")
	a.Describe(&f.RecordIdentifierFeatureName, "Record identifier feature (String). Default `"+DefaultRecordIdentifier+"`, added to the features when missing.")
	a.Describe(&f.EventTimeFeatureName, "Event time feature (Fractional). Default `"+DefaultEventTime+"`, added to the features when missing.")
	a.Describe(&f.Features, "Further features. Adding one is an in-place update.")
	a.Describe(&f.OnlineStore, "Whether the group has an online store. Default true.")
	a.Describe(&f.KMSKeyARN, "KMS key of both stores; it must lie inside the jurisdiction.")
	a.Describe(&f.TTLDays, "Online store TTL in days. Default: none.")
	a.Describe(&f.AllowDestructiveChanges, "Allow changes that replace the feature group. Default false.")
}

// NewPlatform constructs the Platform component and its children.
func NewPlatform(ctx *pulumi.Context, name string, args PlatformArgs, opts ...pulumi.ResourceOption) (*Platform, error) {
	comp := &Platform{}
	if err := ctx.RegisterComponentResource(p.GetTypeToken(ctx), name, comp, opts...); err != nil {
		return nil, err
	}
	parent := pulumi.Parent(comp)

	clusterArgs, storeArgs := args.clusterArgs(name), args.featureStoreArgs(name)
	verdict := platformVerdict(ctx, clusterArgs, storeArgs)
	cluster := &gpuClusterChild{}
	if err := registerChild(ctx, "GpuCluster", name+"-training", clusterArgs, cluster, parent); err != nil {
		return nil, err
	}
	store := &featureStoreChild{}
	if err := registerChild(ctx, "FeatureStore", name+"-features", storeArgs, store, parent); err != nil {
		return nil, err
	}

	comp.ClusterName = cluster.Name
	comp.ClusterNodeIDs = cluster.NodeIDs
	comp.ClusterPrivateIPs = cluster.PrivateIPs
	comp.ClusterZoneID = cluster.PlacementZoneID
	comp.FeatureGroupName = store.Name
	comp.FeatureGroupARN = store.ARN
	// No serving endpoint yet: a known null.
	comp.EndpointName = store.Name.ApplyT(func(string) *string { return nil }).(pulumi.StringPtrOutput)

	comp.ValidationSummary = pulumi.All(cluster.Name, cluster.Nodes, store.Name, store.Status).ApplyT(func(v []any) string {
		nodes, _ := v[1].([]any)
		return platformSummary(verdict, v[0].(string), nodes, v[2].(string), v[3].(string))
	}).(pulumi.StringOutput)

	if err := ctx.RegisterResourceOutputs(comp, pulumi.Map{
		"clusterName": comp.ClusterName, "clusterNodeIds": comp.ClusterNodeIDs, "clusterPrivateIps": comp.ClusterPrivateIPs,
		"clusterZoneId": comp.ClusterZoneID, "featureGroupName": comp.FeatureGroupName, "featureGroupArn": comp.FeatureGroupARN,
		"validationSummary": comp.ValidationSummary, "endpointName": comp.EndpointName,
	}); err != nil {
		return nil, err
	}
	return comp, nil
}

// platformVerdict is the core's residency verdict of the platform's parts,
// checked as their own previews check them. In audit mode the parts only
// warn: this verdict is where their violations are counted.
func platformVerdict(ctx *pulumi.Context, cluster GpuClusterArgs, store FeatureStoreArgs) platform.ResidencyVerdict {
	env, err := envFrom(ctx.Context())
	if err != nil {
		return platform.UncheckedVerdict(err.Error())
	}
	clusterSpec := cluster.spec(nil)
	storeSpec := store.spec()
	return env.CheckPlatformResidency(ctx.Context(), &clusterSpec, &storeSpec)
}

// platformSummary says what was checked and what runs, in words: the
// residency verdict first, as it is (never "compliant" when a part broke a
// rule or could not be checked).
func platformSummary(verdict platform.ResidencyVerdict, cluster string, nodes []any, store, status string) string {
	running := 0
	zones := map[string]bool{}
	for _, n := range nodes {
		m, _ := n.(map[string]any)
		if m["state"] == "running" {
			running++
		}
		if z, ok := m["zoneId"].(string); ok {
			zones[z] = true
		}
	}
	zl := slices.Sorted(maps.Keys(zones))
	return fmt.Sprintf("%s; training cluster %s: %d of %d nodes running in %s; feature store %s: %s; "+
		"hwprobe validation: not configured (no reports gate this platform)", verdict, cluster, running, len(nodes), strings.Join(zl, ", "), store, status)
}

// clusterArgs are the training cluster's inputs, UAE defaults filled in.
func (a PlatformArgs) clusterArgs(name string) GpuClusterArgs {
	t := PlatformTraining{}
	if a.Training != nil {
		t = *a.Training
	}
	c := GpuClusterArgs{
		Name:             ptr(name + "-training"),
		InstanceType:     or(t.InstanceType, DefaultTrainingInstanceType),
		NodeCount:        or(t.NodeCount, DefaultTrainingNodeCount),
		Image:            or(t.Image, DefaultTrainingImage),
		SubnetID:         t.SubnetID,
		SecurityGroupIDs: t.SecurityGroupIDs,
		InstanceProfile:  t.InstanceProfile,
		KMSKeyARN:        t.KMSKeyARN,
		RootVolume:       &GpuRootVolume{SizeGiB: ptr(or(t.RootVolumeGiB, DefaultRootVolumeGiB))},
		UserData:         t.UserData,
		Tags:             a.Tags,
	}
	if t.SubnetID == nil {
		c.ZoneID = ptr(or(t.ZoneID, DefaultTrainingZoneID))
	} else {
		c.ZoneID = t.ZoneID
	}
	return c
}

// featureStoreArgs are the feature store's inputs, defaults filled in: the
// record identifier and event time features come first when not declared.
func (a PlatformArgs) featureStoreArgs(name string) FeatureStoreArgs {
	f := a.Features
	rid, evt := or(f.RecordIdentifierFeatureName, DefaultRecordIdentifier), or(f.EventTimeFeatureName, DefaultEventTime)
	var feats []FeatureDefinition
	has := func(n string) bool {
		for _, x := range f.Features {
			if strings.EqualFold(x.Name, n) {
				return true
			}
		}
		return false
	}
	if !has(rid) {
		feats = append(feats, FeatureDefinition{Name: rid, Type: "String"})
	}
	if !has(evt) {
		feats = append(feats, FeatureDefinition{Name: evt, Type: "Fractional"})
	}
	feats = append(feats, f.Features...)
	s := FeatureStoreArgs{
		Name:                        ptr(name + "-features"),
		RecordIdentifierFeatureName: rid,
		EventTimeFeatureName:        evt,
		Features:                    feats,
		OfflineStore:                &OfflineStore{S3URI: f.OfflineStoreS3URI, KMSKeyARN: f.KMSKeyARN},
		RoleARN:                     ptr(f.RoleARN),
		Tags:                        a.Tags,
		AllowDestructiveChanges:     f.AllowDestructiveChanges,
	}
	if or(f.OnlineStore, true) {
		s.OnlineStore = &OnlineStore{Enabled: true, KMSKeyARN: f.KMSKeyARN}
		if f.TTLDays != nil {
			s.OnlineStore.TTL = &OnlineStoreTtl{Unit: "Days", Value: *f.TTLDays}
		}
	}
	return s
}

// gpuClusterChild is the part of a GpuCluster the component reads.
type gpuClusterChild struct {
	pulumi.CustomResourceState
	Name            pulumi.StringOutput      `pulumi:"name"`
	NodeIDs         pulumi.StringArrayOutput `pulumi:"nodeIds"`
	PrivateIPs      pulumi.StringArrayOutput `pulumi:"privateIps"`
	PlacementZoneID pulumi.StringOutput      `pulumi:"placementZoneId"`
	Nodes           pulumi.ArrayOutput       `pulumi:"nodes"`
}

// featureStoreChild is the part of a FeatureStore the component reads.
type featureStoreChild struct {
	pulumi.CustomResourceState
	Name   pulumi.StringOutput `pulumi:"name"`
	ARN    pulumi.StringOutput `pulumi:"arn"`
	Status pulumi.StringOutput `pulumi:"status"`
}

// registerChild registers one of this provider's resources as a child of
// the component, its inputs taken from args by their pulumi tags.
func registerChild(ctx *pulumi.Context, typ, name string, args any, res pulumi.CustomResource, opts ...pulumi.ResourceOption) error {
	props, err := mapper.Unmap(args)
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", typ, name, err)
	}
	if err := ctx.RegisterResource(Name+":index:"+typ, name, pulumi.ToMap(props), res, opts...); err != nil {
		return fmt.Errorf("registering %s %s: %w", typ, name, err)
	}
	return nil
}

func or[T any](v *T, def T) T {
	if v == nil {
		return def
	}
	return *v
}
