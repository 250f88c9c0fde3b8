// One handle per AWS SDK client, forwarding the operations this module
// calls; add an operation here when a call needs it.

package cloud

// The AWS SDK clients, each behind a handle that holds the client as an
// unsafe.Pointer and forwards only the operations this module calls.
//
// Why: the plugins link go-plugin's net/rpc (html/template) and reflect's
// method iterators, so the linker keeps every exported method of every type
// reflection could reach. A *ec2.Client in an interface, or in a field of a
// type in one, keeps all of EC2's 800 operations (19 MB of the provider).
// An unsafe.Pointer names no type: only the operations called here are
// linked. TestSDKHandlesForward checks that every handle method has the
// client method's signature; an operation missing here is a compile error
// where it is called.

import (
	"context"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"unsafe"
)

// EC2Client is a handle on a *ec2.Client (see above).
type EC2Client struct{ p unsafe.Pointer }

// NewEC2Client wraps c.
func NewEC2Client(c *ec2.Client) EC2Client { return EC2Client{unsafe.Pointer(c)} }

func (h EC2Client) c() *ec2.Client { return (*ec2.Client)(h.p) }

// EC2SDK is the client h wraps, for a call no handle forwards (tests).
// A function, not a method: a method returning it would link every
// operation again.
func EC2SDK(h EC2Client) *ec2.Client { return h.c() }

// Options are the client's options.
func (h EC2Client) Options() ec2.Options { return h.c().Options() }

func (h EC2Client) CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, o ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	return h.c().CreateLaunchTemplate(ctx, in, o...)
}

func (h EC2Client) CreateLaunchTemplateVersion(ctx context.Context, in *ec2.CreateLaunchTemplateVersionInput, o ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateVersionOutput, error) {
	return h.c().CreateLaunchTemplateVersion(ctx, in, o...)
}

func (h EC2Client) CreatePlacementGroup(ctx context.Context, in *ec2.CreatePlacementGroupInput, o ...func(*ec2.Options)) (*ec2.CreatePlacementGroupOutput, error) {
	return h.c().CreatePlacementGroup(ctx, in, o...)
}

func (h EC2Client) CreateSubnet(ctx context.Context, in *ec2.CreateSubnetInput, o ...func(*ec2.Options)) (*ec2.CreateSubnetOutput, error) {
	return h.c().CreateSubnet(ctx, in, o...)
}

func (h EC2Client) CreateTags(ctx context.Context, in *ec2.CreateTagsInput, o ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	return h.c().CreateTags(ctx, in, o...)
}

func (h EC2Client) CreateVpc(ctx context.Context, in *ec2.CreateVpcInput, o ...func(*ec2.Options)) (*ec2.CreateVpcOutput, error) {
	return h.c().CreateVpc(ctx, in, o...)
}

func (h EC2Client) DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, o ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	return h.c().DeleteLaunchTemplate(ctx, in, o...)
}

func (h EC2Client) DeletePlacementGroup(ctx context.Context, in *ec2.DeletePlacementGroupInput, o ...func(*ec2.Options)) (*ec2.DeletePlacementGroupOutput, error) {
	return h.c().DeletePlacementGroup(ctx, in, o...)
}

func (h EC2Client) DeleteTags(ctx context.Context, in *ec2.DeleteTagsInput, o ...func(*ec2.Options)) (*ec2.DeleteTagsOutput, error) {
	return h.c().DeleteTags(ctx, in, o...)
}

func (h EC2Client) DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, o ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error) {
	return h.c().DescribeAvailabilityZones(ctx, in, o...)
}

func (h EC2Client) DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, o ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error) {
	return h.c().DescribeCapacityReservations(ctx, in, o...)
}

func (h EC2Client) DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, o ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	return h.c().DescribeImages(ctx, in, o...)
}

func (h EC2Client) DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, o ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	return h.c().DescribeInstanceTypeOfferings(ctx, in, o...)
}

func (h EC2Client) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, o ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	return h.c().DescribeInstanceTypes(ctx, in, o...)
}

func (h EC2Client) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, o ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return h.c().DescribeInstances(ctx, in, o...)
}

func (h EC2Client) DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, o ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	return h.c().DescribeLaunchTemplateVersions(ctx, in, o...)
}

func (h EC2Client) DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, o ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	return h.c().DescribeLaunchTemplates(ctx, in, o...)
}

func (h EC2Client) DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, o ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error) {
	return h.c().DescribePlacementGroups(ctx, in, o...)
}

func (h EC2Client) DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, o ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	return h.c().DescribeSecurityGroups(ctx, in, o...)
}

func (h EC2Client) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, o ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	return h.c().DescribeSubnets(ctx, in, o...)
}

func (h EC2Client) DescribeVpcs(ctx context.Context, in *ec2.DescribeVpcsInput, o ...func(*ec2.Options)) (*ec2.DescribeVpcsOutput, error) {
	return h.c().DescribeVpcs(ctx, in, o...)
}

func (h EC2Client) GetConsoleOutput(ctx context.Context, in *ec2.GetConsoleOutputInput, o ...func(*ec2.Options)) (*ec2.GetConsoleOutputOutput, error) {
	return h.c().GetConsoleOutput(ctx, in, o...)
}

func (h EC2Client) ModifyInstanceMetadataOptions(ctx context.Context, in *ec2.ModifyInstanceMetadataOptionsInput, o ...func(*ec2.Options)) (*ec2.ModifyInstanceMetadataOptionsOutput, error) {
	return h.c().ModifyInstanceMetadataOptions(ctx, in, o...)
}

func (h EC2Client) ModifyLaunchTemplate(ctx context.Context, in *ec2.ModifyLaunchTemplateInput, o ...func(*ec2.Options)) (*ec2.ModifyLaunchTemplateOutput, error) {
	return h.c().ModifyLaunchTemplate(ctx, in, o...)
}

func (h EC2Client) RunInstances(ctx context.Context, in *ec2.RunInstancesInput, o ...func(*ec2.Options)) (*ec2.RunInstancesOutput, error) {
	return h.c().RunInstances(ctx, in, o...)
}

func (h EC2Client) TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, o ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	return h.c().TerminateInstances(ctx, in, o...)
}

// S3Client is a handle on a *s3.Client (see above).
type S3Client struct{ p unsafe.Pointer }

// NewS3Client wraps c.
func NewS3Client(c *s3.Client) S3Client { return S3Client{unsafe.Pointer(c)} }

func (h S3Client) c() *s3.Client { return (*s3.Client)(h.p) }

// S3SDK is the client h wraps, for a call no handle forwards (tests).
// A function, not a method: a method returning it would link every
// operation again.
func S3SDK(h S3Client) *s3.Client { return h.c() }

// Options are the client's options.
func (h S3Client) Options() s3.Options { return h.c().Options() }

func (h S3Client) CreateBucket(ctx context.Context, in *s3.CreateBucketInput, o ...func(*s3.Options)) (*s3.CreateBucketOutput, error) {
	return h.c().CreateBucket(ctx, in, o...)
}

func (h S3Client) GetBucketLocation(ctx context.Context, in *s3.GetBucketLocationInput, o ...func(*s3.Options)) (*s3.GetBucketLocationOutput, error) {
	return h.c().GetBucketLocation(ctx, in, o...)
}

func (h S3Client) GetBucketReplication(ctx context.Context, in *s3.GetBucketReplicationInput, o ...func(*s3.Options)) (*s3.GetBucketReplicationOutput, error) {
	return h.c().GetBucketReplication(ctx, in, o...)
}

func (h S3Client) GetObject(ctx context.Context, in *s3.GetObjectInput, o ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return h.c().GetObject(ctx, in, o...)
}

func (h S3Client) ListBuckets(ctx context.Context, in *s3.ListBucketsInput, o ...func(*s3.Options)) (*s3.ListBucketsOutput, error) {
	return h.c().ListBuckets(ctx, in, o...)
}

func (h S3Client) ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, o ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	return h.c().ListObjectsV2(ctx, in, o...)
}

func (h S3Client) PutBucketReplication(ctx context.Context, in *s3.PutBucketReplicationInput, o ...func(*s3.Options)) (*s3.PutBucketReplicationOutput, error) {
	return h.c().PutBucketReplication(ctx, in, o...)
}

func (h S3Client) PutBucketVersioning(ctx context.Context, in *s3.PutBucketVersioningInput, o ...func(*s3.Options)) (*s3.PutBucketVersioningOutput, error) {
	return h.c().PutBucketVersioning(ctx, in, o...)
}

func (h S3Client) PutObject(ctx context.Context, in *s3.PutObjectInput, o ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return h.c().PutObject(ctx, in, o...)
}

// KMSClient is a handle on a *kms.Client (see above).
type KMSClient struct{ p unsafe.Pointer }

// NewKMSClient wraps c.
func NewKMSClient(c *kms.Client) KMSClient { return KMSClient{unsafe.Pointer(c)} }

func (h KMSClient) c() *kms.Client { return (*kms.Client)(h.p) }

// KMSSDK is the client h wraps, for a call no handle forwards (tests).
// A function, not a method: a method returning it would link every
// operation again.
func KMSSDK(h KMSClient) *kms.Client { return h.c() }

// Options are the client's options.
func (h KMSClient) Options() kms.Options { return h.c().Options() }

func (h KMSClient) CreateAlias(ctx context.Context, in *kms.CreateAliasInput, o ...func(*kms.Options)) (*kms.CreateAliasOutput, error) {
	return h.c().CreateAlias(ctx, in, o...)
}

func (h KMSClient) CreateKey(ctx context.Context, in *kms.CreateKeyInput, o ...func(*kms.Options)) (*kms.CreateKeyOutput, error) {
	return h.c().CreateKey(ctx, in, o...)
}

func (h KMSClient) DescribeKey(ctx context.Context, in *kms.DescribeKeyInput, o ...func(*kms.Options)) (*kms.DescribeKeyOutput, error) {
	return h.c().DescribeKey(ctx, in, o...)
}

func (h KMSClient) ReplicateKey(ctx context.Context, in *kms.ReplicateKeyInput, o ...func(*kms.Options)) (*kms.ReplicateKeyOutput, error) {
	return h.c().ReplicateKey(ctx, in, o...)
}

// SageMakerClient is a handle on a *sagemaker.Client (see above).
type SageMakerClient struct{ p unsafe.Pointer }

// NewSageMakerClient wraps c.
func NewSageMakerClient(c *sagemaker.Client) SageMakerClient {
	return SageMakerClient{unsafe.Pointer(c)}
}

func (h SageMakerClient) c() *sagemaker.Client { return (*sagemaker.Client)(h.p) }

// SageMakerSDK is the client h wraps, for a call no handle forwards (tests).
// A function, not a method: a method returning it would link every
// operation again.
func SageMakerSDK(h SageMakerClient) *sagemaker.Client { return h.c() }

// Options are the client's options.
func (h SageMakerClient) Options() sagemaker.Options { return h.c().Options() }

func (h SageMakerClient) AddTags(ctx context.Context, in *sagemaker.AddTagsInput, o ...func(*sagemaker.Options)) (*sagemaker.AddTagsOutput, error) {
	return h.c().AddTags(ctx, in, o...)
}

func (h SageMakerClient) CreateEndpoint(ctx context.Context, in *sagemaker.CreateEndpointInput, o ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointOutput, error) {
	return h.c().CreateEndpoint(ctx, in, o...)
}

func (h SageMakerClient) CreateEndpointConfig(ctx context.Context, in *sagemaker.CreateEndpointConfigInput, o ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error) {
	return h.c().CreateEndpointConfig(ctx, in, o...)
}

func (h SageMakerClient) CreateFeatureGroup(ctx context.Context, in *sagemaker.CreateFeatureGroupInput, o ...func(*sagemaker.Options)) (*sagemaker.CreateFeatureGroupOutput, error) {
	return h.c().CreateFeatureGroup(ctx, in, o...)
}

func (h SageMakerClient) CreateModel(ctx context.Context, in *sagemaker.CreateModelInput, o ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error) {
	return h.c().CreateModel(ctx, in, o...)
}

func (h SageMakerClient) DeleteEndpoint(ctx context.Context, in *sagemaker.DeleteEndpointInput, o ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointOutput, error) {
	return h.c().DeleteEndpoint(ctx, in, o...)
}

func (h SageMakerClient) DeleteEndpointConfig(ctx context.Context, in *sagemaker.DeleteEndpointConfigInput, o ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointConfigOutput, error) {
	return h.c().DeleteEndpointConfig(ctx, in, o...)
}

func (h SageMakerClient) DeleteFeatureGroup(ctx context.Context, in *sagemaker.DeleteFeatureGroupInput, o ...func(*sagemaker.Options)) (*sagemaker.DeleteFeatureGroupOutput, error) {
	return h.c().DeleteFeatureGroup(ctx, in, o...)
}

func (h SageMakerClient) DeleteModel(ctx context.Context, in *sagemaker.DeleteModelInput, o ...func(*sagemaker.Options)) (*sagemaker.DeleteModelOutput, error) {
	return h.c().DeleteModel(ctx, in, o...)
}

func (h SageMakerClient) DeleteTags(ctx context.Context, in *sagemaker.DeleteTagsInput, o ...func(*sagemaker.Options)) (*sagemaker.DeleteTagsOutput, error) {
	return h.c().DeleteTags(ctx, in, o...)
}

func (h SageMakerClient) DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, o ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
	return h.c().DescribeEndpoint(ctx, in, o...)
}

func (h SageMakerClient) DescribeEndpointConfig(ctx context.Context, in *sagemaker.DescribeEndpointConfigInput, o ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error) {
	return h.c().DescribeEndpointConfig(ctx, in, o...)
}

func (h SageMakerClient) DescribeFeatureGroup(ctx context.Context, in *sagemaker.DescribeFeatureGroupInput, o ...func(*sagemaker.Options)) (*sagemaker.DescribeFeatureGroupOutput, error) {
	return h.c().DescribeFeatureGroup(ctx, in, o...)
}

func (h SageMakerClient) DescribeModel(ctx context.Context, in *sagemaker.DescribeModelInput, o ...func(*sagemaker.Options)) (*sagemaker.DescribeModelOutput, error) {
	return h.c().DescribeModel(ctx, in, o...)
}

func (h SageMakerClient) ListEndpointConfigs(ctx context.Context, in *sagemaker.ListEndpointConfigsInput, o ...func(*sagemaker.Options)) (*sagemaker.ListEndpointConfigsOutput, error) {
	return h.c().ListEndpointConfigs(ctx, in, o...)
}

func (h SageMakerClient) ListFeatureGroups(ctx context.Context, in *sagemaker.ListFeatureGroupsInput, o ...func(*sagemaker.Options)) (*sagemaker.ListFeatureGroupsOutput, error) {
	return h.c().ListFeatureGroups(ctx, in, o...)
}

func (h SageMakerClient) ListModels(ctx context.Context, in *sagemaker.ListModelsInput, o ...func(*sagemaker.Options)) (*sagemaker.ListModelsOutput, error) {
	return h.c().ListModels(ctx, in, o...)
}

func (h SageMakerClient) ListTags(ctx context.Context, in *sagemaker.ListTagsInput, o ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error) {
	return h.c().ListTags(ctx, in, o...)
}

func (h SageMakerClient) UpdateEndpoint(ctx context.Context, in *sagemaker.UpdateEndpointInput, o ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointOutput, error) {
	return h.c().UpdateEndpoint(ctx, in, o...)
}

func (h SageMakerClient) UpdateFeatureGroup(ctx context.Context, in *sagemaker.UpdateFeatureGroupInput, o ...func(*sagemaker.Options)) (*sagemaker.UpdateFeatureGroupOutput, error) {
	return h.c().UpdateFeatureGroup(ctx, in, o...)
}

// SSMClient is a handle on a *ssm.Client (see above).
type SSMClient struct{ p unsafe.Pointer }

// NewSSMClient wraps c.
func NewSSMClient(c *ssm.Client) SSMClient { return SSMClient{unsafe.Pointer(c)} }

func (h SSMClient) c() *ssm.Client { return (*ssm.Client)(h.p) }

// SSMSDK is the client h wraps, for a call no handle forwards (tests).
// A function, not a method: a method returning it would link every
// operation again.
func SSMSDK(h SSMClient) *ssm.Client { return h.c() }

// Options are the client's options.
func (h SSMClient) Options() ssm.Options { return h.c().Options() }

func (h SSMClient) GetParameter(ctx context.Context, in *ssm.GetParameterInput, o ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	return h.c().GetParameter(ctx, in, o...)
}

func (h SSMClient) PutParameter(ctx context.Context, in *ssm.PutParameterInput, o ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	return h.c().PutParameter(ctx, in, o...)
}

// STSClient is a handle on a *sts.Client (see above).
type STSClient struct{ p unsafe.Pointer }

// NewSTSClient wraps c.
func NewSTSClient(c *sts.Client) STSClient { return STSClient{unsafe.Pointer(c)} }

func (h STSClient) c() *sts.Client { return (*sts.Client)(h.p) }

// STSSDK is the client h wraps, for a call no handle forwards (tests).
// A function, not a method: a method returning it would link every
// operation again.
func STSSDK(h STSClient) *sts.Client { return h.c() }

// Options are the client's options.
func (h STSClient) Options() sts.Options { return h.c().Options() }

func (h STSClient) GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, o ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	return h.c().GetCallerIdentity(ctx, in, o...)
}

// AutoScalingClient is a handle on a *autoscaling.Client (see above).
type AutoScalingClient struct{ p unsafe.Pointer }

// NewAutoScalingClient wraps c.
func NewAutoScalingClient(c *autoscaling.Client) AutoScalingClient {
	return AutoScalingClient{unsafe.Pointer(c)}
}

func (h AutoScalingClient) c() *autoscaling.Client { return (*autoscaling.Client)(h.p) }

// AutoScalingSDK is the client h wraps, for a call no handle forwards (tests).
// A function, not a method: a method returning it would link every
// operation again.
func AutoScalingSDK(h AutoScalingClient) *autoscaling.Client { return h.c() }

// Options are the client's options.
func (h AutoScalingClient) Options() autoscaling.Options { return h.c().Options() }

func (h AutoScalingClient) CompleteLifecycleAction(ctx context.Context, in *autoscaling.CompleteLifecycleActionInput, o ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error) {
	return h.c().CompleteLifecycleAction(ctx, in, o...)
}

func (h AutoScalingClient) CreateAutoScalingGroup(ctx context.Context, in *autoscaling.CreateAutoScalingGroupInput, o ...func(*autoscaling.Options)) (*autoscaling.CreateAutoScalingGroupOutput, error) {
	return h.c().CreateAutoScalingGroup(ctx, in, o...)
}

func (h AutoScalingClient) CreateOrUpdateTags(ctx context.Context, in *autoscaling.CreateOrUpdateTagsInput, o ...func(*autoscaling.Options)) (*autoscaling.CreateOrUpdateTagsOutput, error) {
	return h.c().CreateOrUpdateTags(ctx, in, o...)
}

func (h AutoScalingClient) DeleteAutoScalingGroup(ctx context.Context, in *autoscaling.DeleteAutoScalingGroupInput, o ...func(*autoscaling.Options)) (*autoscaling.DeleteAutoScalingGroupOutput, error) {
	return h.c().DeleteAutoScalingGroup(ctx, in, o...)
}

func (h AutoScalingClient) DeleteLifecycleHook(ctx context.Context, in *autoscaling.DeleteLifecycleHookInput, o ...func(*autoscaling.Options)) (*autoscaling.DeleteLifecycleHookOutput, error) {
	return h.c().DeleteLifecycleHook(ctx, in, o...)
}

func (h AutoScalingClient) DeleteScheduledAction(ctx context.Context, in *autoscaling.DeleteScheduledActionInput, o ...func(*autoscaling.Options)) (*autoscaling.DeleteScheduledActionOutput, error) {
	return h.c().DeleteScheduledAction(ctx, in, o...)
}

func (h AutoScalingClient) DeleteTags(ctx context.Context, in *autoscaling.DeleteTagsInput, o ...func(*autoscaling.Options)) (*autoscaling.DeleteTagsOutput, error) {
	return h.c().DeleteTags(ctx, in, o...)
}

func (h AutoScalingClient) DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, o ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return h.c().DescribeAutoScalingGroups(ctx, in, o...)
}

func (h AutoScalingClient) DescribeInstanceRefreshes(ctx context.Context, in *autoscaling.DescribeInstanceRefreshesInput, o ...func(*autoscaling.Options)) (*autoscaling.DescribeInstanceRefreshesOutput, error) {
	return h.c().DescribeInstanceRefreshes(ctx, in, o...)
}

func (h AutoScalingClient) DescribeLifecycleHooks(ctx context.Context, in *autoscaling.DescribeLifecycleHooksInput, o ...func(*autoscaling.Options)) (*autoscaling.DescribeLifecycleHooksOutput, error) {
	return h.c().DescribeLifecycleHooks(ctx, in, o...)
}

func (h AutoScalingClient) DescribeScheduledActions(ctx context.Context, in *autoscaling.DescribeScheduledActionsInput, o ...func(*autoscaling.Options)) (*autoscaling.DescribeScheduledActionsOutput, error) {
	return h.c().DescribeScheduledActions(ctx, in, o...)
}

func (h AutoScalingClient) PutLifecycleHook(ctx context.Context, in *autoscaling.PutLifecycleHookInput, o ...func(*autoscaling.Options)) (*autoscaling.PutLifecycleHookOutput, error) {
	return h.c().PutLifecycleHook(ctx, in, o...)
}

func (h AutoScalingClient) PutScheduledUpdateGroupAction(ctx context.Context, in *autoscaling.PutScheduledUpdateGroupActionInput, o ...func(*autoscaling.Options)) (*autoscaling.PutScheduledUpdateGroupActionOutput, error) {
	return h.c().PutScheduledUpdateGroupAction(ctx, in, o...)
}

func (h AutoScalingClient) SetDesiredCapacity(ctx context.Context, in *autoscaling.SetDesiredCapacityInput, o ...func(*autoscaling.Options)) (*autoscaling.SetDesiredCapacityOutput, error) {
	return h.c().SetDesiredCapacity(ctx, in, o...)
}

func (h AutoScalingClient) StartInstanceRefresh(ctx context.Context, in *autoscaling.StartInstanceRefreshInput, o ...func(*autoscaling.Options)) (*autoscaling.StartInstanceRefreshOutput, error) {
	return h.c().StartInstanceRefresh(ctx, in, o...)
}

func (h AutoScalingClient) TerminateInstanceInAutoScalingGroup(ctx context.Context, in *autoscaling.TerminateInstanceInAutoScalingGroupInput, o ...func(*autoscaling.Options)) (*autoscaling.TerminateInstanceInAutoScalingGroupOutput, error) {
	return h.c().TerminateInstanceInAutoScalingGroup(ctx, in, o...)
}

func (h AutoScalingClient) UpdateAutoScalingGroup(ctx context.Context, in *autoscaling.UpdateAutoScalingGroupInput, o ...func(*autoscaling.Options)) (*autoscaling.UpdateAutoScalingGroupOutput, error) {
	return h.c().UpdateAutoScalingGroup(ctx, in, o...)
}

// AppAutoScalingClient is a handle on a *applicationautoscaling.Client (see above).
type AppAutoScalingClient struct{ p unsafe.Pointer }

// NewAppAutoScalingClient wraps c.
func NewAppAutoScalingClient(c *applicationautoscaling.Client) AppAutoScalingClient {
	return AppAutoScalingClient{unsafe.Pointer(c)}
}

func (h AppAutoScalingClient) c() *applicationautoscaling.Client {
	return (*applicationautoscaling.Client)(h.p)
}

// AppAutoScalingSDK is the client h wraps, for a call no handle forwards
// (tests). A function, not a method: a method returning it would link every
// operation again.
func AppAutoScalingSDK(h AppAutoScalingClient) *applicationautoscaling.Client { return h.c() }

// Options are the client's options.
func (h AppAutoScalingClient) Options() applicationautoscaling.Options { return h.c().Options() }

func (h AppAutoScalingClient) DeleteScalingPolicy(ctx context.Context, in *applicationautoscaling.DeleteScalingPolicyInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeleteScalingPolicyOutput, error) {
	return h.c().DeleteScalingPolicy(ctx, in, o...)
}

func (h AppAutoScalingClient) DeleteScheduledAction(ctx context.Context, in *applicationautoscaling.DeleteScheduledActionInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeleteScheduledActionOutput, error) {
	return h.c().DeleteScheduledAction(ctx, in, o...)
}

func (h AppAutoScalingClient) DeregisterScalableTarget(ctx context.Context, in *applicationautoscaling.DeregisterScalableTargetInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeregisterScalableTargetOutput, error) {
	return h.c().DeregisterScalableTarget(ctx, in, o...)
}

func (h AppAutoScalingClient) DescribeScalableTargets(ctx context.Context, in *applicationautoscaling.DescribeScalableTargetsInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error) {
	return h.c().DescribeScalableTargets(ctx, in, o...)
}

func (h AppAutoScalingClient) DescribeScalingPolicies(ctx context.Context, in *applicationautoscaling.DescribeScalingPoliciesInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalingPoliciesOutput, error) {
	return h.c().DescribeScalingPolicies(ctx, in, o...)
}

func (h AppAutoScalingClient) DescribeScheduledActions(ctx context.Context, in *applicationautoscaling.DescribeScheduledActionsInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScheduledActionsOutput, error) {
	return h.c().DescribeScheduledActions(ctx, in, o...)
}

func (h AppAutoScalingClient) PutScalingPolicy(ctx context.Context, in *applicationautoscaling.PutScalingPolicyInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScalingPolicyOutput, error) {
	return h.c().PutScalingPolicy(ctx, in, o...)
}

func (h AppAutoScalingClient) PutScheduledAction(ctx context.Context, in *applicationautoscaling.PutScheduledActionInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScheduledActionOutput, error) {
	return h.c().PutScheduledAction(ctx, in, o...)
}

func (h AppAutoScalingClient) RegisterScalableTarget(ctx context.Context, in *applicationautoscaling.RegisterScalableTargetInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error) {
	return h.c().RegisterScalableTarget(ctx, in, o...)
}

// CloudWatchClient is a handle on a *cloudwatch.Client (see above).
type CloudWatchClient struct{ p unsafe.Pointer }

// NewCloudWatchClient wraps c.
func NewCloudWatchClient(c *cloudwatch.Client) CloudWatchClient {
	return CloudWatchClient{unsafe.Pointer(c)}
}

func (h CloudWatchClient) c() *cloudwatch.Client { return (*cloudwatch.Client)(h.p) }

// CloudWatchSDK is the client h wraps, for a call no handle forwards (tests).
// A function, not a method: a method returning it would link every
// operation again.
func CloudWatchSDK(h CloudWatchClient) *cloudwatch.Client { return h.c() }

// Options are the client's options.
func (h CloudWatchClient) Options() cloudwatch.Options { return h.c().Options() }

func (h CloudWatchClient) DeleteAlarms(ctx context.Context, in *cloudwatch.DeleteAlarmsInput, o ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error) {
	return h.c().DeleteAlarms(ctx, in, o...)
}

func (h CloudWatchClient) DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, o ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
	return h.c().DescribeAlarms(ctx, in, o...)
}

func (h CloudWatchClient) ListTagsForResource(ctx context.Context, in *cloudwatch.ListTagsForResourceInput, o ...func(*cloudwatch.Options)) (*cloudwatch.ListTagsForResourceOutput, error) {
	return h.c().ListTagsForResource(ctx, in, o...)
}

func (h CloudWatchClient) PutMetricAlarm(ctx context.Context, in *cloudwatch.PutMetricAlarmInput, o ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error) {
	return h.c().PutMetricAlarm(ctx, in, o...)
}

func (h CloudWatchClient) TagResource(ctx context.Context, in *cloudwatch.TagResourceInput, o ...func(*cloudwatch.Options)) (*cloudwatch.TagResourceOutput, error) {
	return h.c().TagResource(ctx, in, o...)
}

func (h CloudWatchClient) UntagResource(ctx context.Context, in *cloudwatch.UntagResourceInput, o ...func(*cloudwatch.Options)) (*cloudwatch.UntagResourceOutput, error) {
	return h.c().UntagResource(ctx, in, o...)
}

// SecretsManagerClient is a handle on a *secretsmanager.Client (see above).
type SecretsManagerClient struct{ p unsafe.Pointer }

// NewSecretsManagerClient wraps c.
func NewSecretsManagerClient(c *secretsmanager.Client) SecretsManagerClient {
	return SecretsManagerClient{unsafe.Pointer(c)}
}

func (h SecretsManagerClient) c() *secretsmanager.Client { return (*secretsmanager.Client)(h.p) }

// SecretsManagerSDK is the client h wraps, for a call no handle forwards
// (tests). A function, not a method: a method returning it would link every
// operation again.
func SecretsManagerSDK(h SecretsManagerClient) *secretsmanager.Client { return h.c() }

// Options are the client's options.
func (h SecretsManagerClient) Options() secretsmanager.Options { return h.c().Options() }

func (h SecretsManagerClient) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, o ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return h.c().GetSecretValue(ctx, in, o...)
}

func (h SecretsManagerClient) DescribeSecret(ctx context.Context, in *secretsmanager.DescribeSecretInput, o ...func(*secretsmanager.Options)) (*secretsmanager.DescribeSecretOutput, error) {
	return h.c().DescribeSecret(ctx, in, o...)
}

// EKSClient is a handle on a *eks.Client (see above).
type EKSClient struct{ p unsafe.Pointer }

// NewEKSClient wraps c.
func NewEKSClient(c *eks.Client) EKSClient { return EKSClient{unsafe.Pointer(c)} }

func (h EKSClient) c() *eks.Client { return (*eks.Client)(h.p) }

// EKSSDK is the client h wraps, for a call no handle forwards (tests). A
// function, not a method: a method returning it would link every
// operation again.
func EKSSDK(h EKSClient) *eks.Client { return h.c() }

// Options are the client's options.
func (h EKSClient) Options() eks.Options { return h.c().Options() }

func (h EKSClient) DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, o ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	return h.c().DescribeCluster(ctx, in, o...)
}

func (h EKSClient) CreateAccessEntry(ctx context.Context, in *eks.CreateAccessEntryInput, o ...func(*eks.Options)) (*eks.CreateAccessEntryOutput, error) {
	return h.c().CreateAccessEntry(ctx, in, o...)
}

func (h EKSClient) DescribeAccessEntry(ctx context.Context, in *eks.DescribeAccessEntryInput, o ...func(*eks.Options)) (*eks.DescribeAccessEntryOutput, error) {
	return h.c().DescribeAccessEntry(ctx, in, o...)
}

func (h EKSClient) DeleteAccessEntry(ctx context.Context, in *eks.DeleteAccessEntryInput, o ...func(*eks.Options)) (*eks.DeleteAccessEntryOutput, error) {
	return h.c().DeleteAccessEntry(ctx, in, o...)
}

// IAMClient is a handle on a *iam.Client (see above).
type IAMClient struct{ p unsafe.Pointer }

// NewIAMClient wraps c.
func NewIAMClient(c *iam.Client) IAMClient { return IAMClient{unsafe.Pointer(c)} }

func (h IAMClient) c() *iam.Client { return (*iam.Client)(h.p) }

// IAMSDK is the client h wraps, for a call no handle forwards (tests).
func IAMSDK(h IAMClient) *iam.Client { return h.c() }

// Options are the client's options.
func (h IAMClient) Options() iam.Options { return h.c().Options() }

func (h IAMClient) GetInstanceProfile(ctx context.Context, in *iam.GetInstanceProfileInput, o ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error) {
	return h.c().GetInstanceProfile(ctx, in, o...)
}
