package pulumi

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/mapper"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// PlatformArgs declares a residency-checked ML platform: a feature store
// and, when asked for, a GPU training cluster (a serving endpoint and a CPU
// footprint join when those resources exist). Every default it fills in is
// the core's (platform.DefaultPlatform), the same as the uae-ml-platform
// module's.
type PlatformArgs struct {
	Training           *PlatformTraining `pulumi:"training,optional"`
	Features           PlatformFeatures  `pulumi:"features"`
	DataClassification *string           `pulumi:"dataClassification,optional"`
	AllowAuditMode     *bool             `pulumi:"allowAuditMode,optional"`
	Tags               map[string]string `pulumi:"tags,optional"`
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
	UserData         *string  `pulumi:"userData,optional" provider:"secret"`
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
	TableFormat                 *string             `pulumi:"tableFormat,optional"`
	AllowDestructiveChanges     *bool               `pulumi:"allowDestructiveChanges,optional"`
}

// Platform is the component: its children are parented to it.
type Platform struct {
	pulumi.ResourceState

	// No output is tagged optional: the Pulumi SDK names a component's
	// outputs by the whole tag (NewConstructResult), so "x,optional" would
	// reach the program as an output named "x,optional" and x would be nil.
	// The cluster outputs are null without training all the same.

	ClusterName       pulumi.StringPtrOutput   `pulumi:"clusterName"`
	ClusterNodeIDs    pulumi.StringArrayOutput `pulumi:"clusterNodeIds"`
	ClusterPrivateIPs pulumi.StringArrayOutput `pulumi:"clusterPrivateIps"`
	ClusterZoneID     pulumi.StringPtrOutput   `pulumi:"clusterZoneId"`
	FeatureGroupName  pulumi.StringOutput      `pulumi:"featureGroupName"`
	FeatureGroupARN   pulumi.StringOutput      `pulumi:"featureGroupArn"`
	EndpointName      pulumi.StringPtrOutput   `pulumi:"endpointName"`
	ValidationSummary pulumi.StringOutput      `pulumi:"validationSummary"`
}

// Annotate describes the component.
func (c *Platform) Annotate(a infer.Annotator) {
	a.Describe(c, "One declaration of a residency-checked ML platform, with defaults for the UAE (me-central-1), the same as the "+
		"`uae-ml-platform` Terraform module's: a SageMaker feature store and, with `training`, a GPU training cluster, parented to the "+
		"component. Every child runs the provider's residency and validation checks, so a preview that would place anything outside the "+
		"jurisdiction fails before any write; the component itself refuses a provider whose residency jurisdiction is not `"+
		platform.PlatformJurisdiction+"`, or whose mode is `audit` unless `allowAuditMode`.")
	a.Describe(&c.ClusterName, "Name of the training cluster (`<name>-training`); null without `training`.")
	a.Describe(&c.ClusterNodeIDs, "Instance ids of the training nodes, by node index; null without `training`.")
	a.Describe(&c.ClusterPrivateIPs, "Private IPv4 addresses of the training nodes, by node index; null without `training`.")
	a.Describe(&c.ClusterZoneID, "Zone id the training nodes run in; null without `training`.")
	a.Describe(&c.FeatureGroupName, "Name of the feature group (`<name>-features`).")
	a.Describe(&c.FeatureGroupARN, "ARN of the feature group.")
	a.Describe(&c.EndpointName, "Name of the serving endpoint; unset until the platform has one.")
	a.Describe(&c.ValidationSummary, "What was checked, in words: the residency verdict of the training cluster and the feature store (in `audit` mode, the number of violations and the rules they break; never compliant when a check could not run), the state of the training nodes, or that the platform has no training cluster.")
}

// Annotate describes the inputs.
func (a *PlatformArgs) Annotate(an infer.Annotator) {
	d := platform.DefaultPlatform()
	an.Describe(&a.Training, "The GPU training cluster: give it (`{}` takes every default) to create one. Left out, the platform has none: "+
		"GPU capacity in me-central-1 is scarce and costly, and nobody gets a GPU cluster by surprise (the module's `training_enabled = "+
		strconv.FormatBool(d.TrainingEnabled)+"`). Defaults: "+strconv.Itoa(d.TrainingNodeCount)+" `"+d.TrainingInstanceType+"` nodes in `"+
		d.TrainingZoneID+"`, the Deep Learning Base OSS NVIDIA driver AMI (Ubuntu 22.04), a "+strconv.Itoa(d.TrainingRootVolumeGiB)+" GiB root volume.")
	an.Describe(&a.Features, "The feature store.")
	an.Describe(&a.DataClassification, "The `"+platform.PlatformTagDataClassification+"` tag of every child: "+
		strings.Join(platform.PlatformDataClassifications(), ", ")+". Default: the tag's value in `tags` when it has one, else `"+d.DataClassification+"`.")
	an.Describe(&a.AllowAuditMode, "Accept a provider whose residency mode is `audit` (violations warn instead of failing). Default "+
		strconv.FormatBool(d.AllowAuditMode)+": the component refuses unless the mode is `enforce`.")
	an.Describe(&a.Tags, "Tags of every child, over the provider's defaultTags. The component adds `"+platform.PlatformTagPlatform+
		"` (its name) and `"+platform.PlatformTagDataClassification+"` (`dataClassification`).")
}

// Annotate describes the training inputs.
func (t *PlatformTraining) Annotate(a infer.Annotator) {
	d := platform.DefaultPlatform()
	a.Describe(&t.InstanceType, "GPU instance type. Default `"+d.TrainingInstanceType+"`.")
	a.Describe(&t.NodeCount, "Number of nodes. Default "+strconv.Itoa(d.TrainingNodeCount)+".")
	a.Describe(&t.ZoneID, "Availability zone id. Default `"+d.TrainingZoneID+"` unless `subnetId` is given.")
	a.Describe(&t.Image, "AMI id or SSM parameter name. Default `"+d.TrainingImage+"` (the Deep Learning Base OSS NVIDIA driver AMI, Ubuntu 22.04: NVIDIA driver, Fabric Manager and EFA).")
	a.Describe(&t.SubnetID, "Subnet of the nodes. Default: the zone's default subnet.")
	a.Describe(&t.SecurityGroupIDs, "Security groups of the nodes.")
	a.Describe(&t.InstanceProfile, "IAM instance profile of the nodes.")
	a.Describe(&t.KMSKeyARN, "KMS key of the volumes; it must lie inside the jurisdiction.")
	a.Describe(&t.RootVolumeGiB, "Root volume size in GiB. Default "+strconv.Itoa(d.TrainingRootVolumeGiB)+".")
	a.Describe(&t.UserData, "User data run at boot. User data is no place for secrets: anyone allowed ec2:DescribeInstanceAttribute or ec2:DescribeLaunchTemplateVersions can read it, and so can every process on the instance through the metadata service. Keep secrets in AWS Secrets Manager in the jurisdiction and have the script read them at boot with the instance role (aws secretsmanager get-secret-value). A secret in the Pulumi state.")
}

// Annotate describes the feature store inputs.
func (f *PlatformFeatures) Annotate(a infer.Annotator) {
	d := platform.DefaultPlatform()
	a.Describe(&f.OfflineStoreS3URI, "S3 location of the offline store; the bucket must lie inside the jurisdiction.")
	a.Describe(&f.RoleARN, "IAM role SageMaker writes the offline store with.")
	a.Describe(&f.RecordIdentifierFeatureName, "Record identifier feature (String). Default `"+d.RecordIdentifier+"`, added to the features when missing.")
	a.Describe(&f.EventTimeFeatureName, "Event time feature (Fractional). Default `"+d.EventTime+"`, added to the features when missing.")
	a.Describe(&f.Features, "Further features. Adding one is an in-place update.")
	a.Describe(&f.OnlineStore, "Whether the group has an online store. Default "+strconv.FormatBool(d.OnlineStore)+".")
	a.Describe(&f.KMSKeyARN, "KMS key of both stores; it must lie inside the jurisdiction.")
	a.Describe(&f.TTLDays, "Online store TTL in days. Default: none.")
	a.Describe(&f.TableFormat, "Table format of the offline store: "+strings.Join(platform.TableFormats(), " or ")+". Default `"+d.OfflineTableFormat+
		"`. Changing it replaces the feature group (refused without `allowDestructiveChanges`): a group created with `Glue` keeps it by setting it here.")
	a.Describe(&f.AllowDestructiveChanges, "Allow changes that replace the feature group. Default "+strconv.FormatBool(d.AllowDestructiveChanges)+".")
}

// NewPlatform constructs the Platform component and its children.
func NewPlatform(ctx *pulumi.Context, name string, args PlatformArgs, opts ...pulumi.ResourceOption) (*Platform, error) {
	tags, err := args.tags(name)
	if err != nil {
		return nil, err
	}
	env, envErr := envFrom(ctx.Context())
	if envErr == nil && env.Policy != nil {
		if err := platform.CheckPlatformPolicy(*env.Policy, or(args.AllowAuditMode, platform.DefaultPlatform().AllowAuditMode)); err != nil {
			return nil, err
		}
	}

	comp := &Platform{}
	if err := ctx.RegisterComponentResource(p.GetTypeToken(ctx), name, comp, opts...); err != nil {
		return nil, err
	}
	parent := pulumi.Parent(comp)

	clusterArgs, training := args.clusterArgs(name, tags)
	storeArgs := args.featureStoreArgs(name, tags)
	var verdict platform.ResidencyVerdict
	if envErr != nil {
		verdict = platform.UncheckedVerdict(envErr.Error())
	} else {
		verdict = platformVerdict(ctx, env, clusterArgs, storeArgs)
	}
	store := &featureStoreChild{}
	if err := registerChild(ctx, "FeatureStore", name+"-features", storeArgs, store, parent); err != nil {
		return nil, err
	}
	comp.FeatureGroupName = store.Name
	comp.FeatureGroupARN = store.ARN
	// No serving endpoint yet: a known null.
	comp.EndpointName = store.Name.ApplyT(func(string) *string { return nil }).(pulumi.StringPtrOutput)

	if training {
		cluster := &gpuClusterChild{}
		if err := registerChild(ctx, "GpuCluster", name+"-training", *clusterArgs, cluster, parent); err != nil {
			return nil, err
		}
		comp.ClusterName = cluster.Name.ToStringPtrOutput()
		comp.ClusterNodeIDs = cluster.NodeIDs
		comp.ClusterPrivateIPs = cluster.PrivateIPs
		comp.ClusterZoneID = cluster.PlacementZoneID.ToStringPtrOutput()
		comp.ValidationSummary = pulumi.All(cluster.Name, cluster.Nodes, store.Name, store.Status).ApplyT(func(v []any) string {
			nodes, _ := v[1].([]any)
			return platformSummary(verdict, v[0].(string), nodes, v[2].(string), v[3].(string))
		}).(pulumi.StringOutput)
	} else {
		// No training cluster: known nulls.
		comp.ClusterName = comp.EndpointName
		comp.ClusterZoneID = comp.EndpointName
		comp.ClusterNodeIDs = store.Name.ApplyT(func(string) []string { return nil }).(pulumi.StringArrayOutput)
		comp.ClusterPrivateIPs = comp.ClusterNodeIDs
		comp.ValidationSummary = pulumi.All(store.Name, store.Status).ApplyT(func(v []any) string {
			return platformSummary(verdict, "", nil, v[0].(string), v[1].(string))
		}).(pulumi.StringOutput)
	}

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
// warn: this verdict is where their violations are counted. cluster is nil
// when the platform has no training cluster.
func platformVerdict(ctx *pulumi.Context, env *platform.Env, cluster *GpuClusterArgs, store FeatureStoreArgs) platform.ResidencyVerdict {
	var clusterSpec *platform.GPUClusterSpec
	if cluster != nil {
		s := cluster.spec(nil)
		clusterSpec = &s
	}
	storeSpec := store.spec()
	return env.CheckPlatformResidency(ctx.Context(), clusterSpec, &storeSpec)
}

// platformSummary says what was checked and what runs, in words: the
// residency verdict first, as it is (never "compliant" when a part broke a
// rule or could not be checked). cluster is "" when the platform has no
// training cluster.
func platformSummary(verdict platform.ResidencyVerdict, cluster string, nodes []any, store, status string) string {
	training := "no training cluster (no `training` input)"
	if cluster != "" {
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
		training = fmt.Sprintf("training cluster %s: %d of %d nodes running in %s", cluster, running, len(nodes), strings.Join(zl, ", "))
	}
	return fmt.Sprintf("%s; %s; feature store %s: %s; "+
		"hwprobe validation: not configured (no reports gate this platform)", verdict, training, store, status)
}

// tags are the tags of every child: Tags, with the platform's name as the
// platform tag and the data classification (the input, else the one in
// Tags, else the default).
func (a PlatformArgs) tags(name string) (map[string]string, error) {
	class, given := a.Tags[platform.PlatformTagDataClassification]
	if a.DataClassification != nil {
		class, given = *a.DataClassification, true
		if err := platform.CheckPlatformDataClassification(class); err != nil {
			return nil, fmt.Errorf("dataClassification: %w", err)
		}
	}
	if !given {
		class = platform.DefaultPlatform().DataClassification
	}
	tags := maps.Clone(a.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[platform.PlatformTagDataClassification] = class
	tags[platform.PlatformTagPlatform] = name
	return tags, nil
}

// clusterArgs are the training cluster's inputs, the core's defaults filled
// in, and whether the platform has one: with a training input, else as the
// core's default says.
func (a PlatformArgs) clusterArgs(name string, tags map[string]string) (*GpuClusterArgs, bool) {
	d := platform.DefaultPlatform()
	t := PlatformTraining{}
	if a.Training != nil {
		t = *a.Training
	} else if !d.TrainingEnabled {
		return nil, false
	}
	c := GpuClusterArgs{
		Name:             ptr(name + "-training"),
		InstanceType:     or(t.InstanceType, d.TrainingInstanceType),
		NodeCount:        or(t.NodeCount, d.TrainingNodeCount),
		Image:            or(t.Image, d.TrainingImage),
		SubnetID:         t.SubnetID,
		SecurityGroupIDs: t.SecurityGroupIDs,
		InstanceProfile:  t.InstanceProfile,
		KMSKeyARN:        t.KMSKeyARN,
		RootVolume:       &GpuRootVolume{SizeGiB: ptr(or(t.RootVolumeGiB, d.TrainingRootVolumeGiB))},
		UserData:         t.UserData,
		Tags:             tags,
	}
	if t.SubnetID == nil {
		c.ZoneID = ptr(or(t.ZoneID, d.TrainingZoneID))
	} else {
		c.ZoneID = t.ZoneID
	}
	return &c, true
}

// featureStoreArgs are the feature store's inputs, the core's defaults
// filled in: the record identifier and event time features come first when
// not declared.
func (a PlatformArgs) featureStoreArgs(name string, tags map[string]string) FeatureStoreArgs {
	d := platform.DefaultPlatform()
	f := a.Features
	rid, evt := or(f.RecordIdentifierFeatureName, d.RecordIdentifier), or(f.EventTimeFeatureName, d.EventTime)
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
		feats = append(feats, FeatureDefinition{Name: rid, Type: platform.FeatureTypeString})
	}
	if !has(evt) {
		feats = append(feats, FeatureDefinition{Name: evt, Type: platform.FeatureTypeFractional})
	}
	feats = append(feats, f.Features...)
	s := FeatureStoreArgs{
		Name:                        ptr(name + "-features"),
		RecordIdentifierFeatureName: rid,
		EventTimeFeatureName:        evt,
		Features:                    feats,
		OfflineStore:                &OfflineStore{S3URI: f.OfflineStoreS3URI, KMSKeyARN: f.KMSKeyARN, TableFormat: ptr(or(f.TableFormat, d.OfflineTableFormat))},
		RoleARN:                     ptr(f.RoleARN),
		Tags:                        tags,
		AllowDestructiveChanges:     ptr(or(f.AllowDestructiveChanges, d.AllowDestructiveChanges)),
	}
	if or(f.OnlineStore, d.OnlineStore) {
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
