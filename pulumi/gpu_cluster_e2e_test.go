package pulumi

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/pulumitest"
	"github.com/mlplatform/mlplatform/pulumi/sdk/go/mlplatform"
)

// TestGpuCluster_e2eImageRollAndReplace drives a GpuCluster through the real
// Pulumi engine: when the SSM parameter behind `image` moves to a new AMI,
// preview shows an in-place update and up rolls the node onto it; setting
// vpcId previews a replacement. Skipped without the Pulumi CLI.
func TestGpuCluster_e2eImageRollAndReplace(t *testing.T) {
	cli := pulumitest.CLI(t)
	h := acctest.ParallelEmulator(t)
	pluginDir := pulumitest.BuildPlugin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	images, err := c.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil || len(images.Images) < 2 {
		t.Fatalf("describing images: %v", err)
	}
	amiA, amiB := aws.ToString(images.Images[0].ImageId), aws.ToString(images.Images[1].ImageId)
	key := createKey(t, h, acctest.Region) // jurisdiction AE requires customer managed keys by default
	vpcs, err := c.EC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("is-default"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) == 0 {
		t.Fatalf("default VPC: %v", err)
	}
	const param = "/mlplatform-test/e2e-gpu-image"
	putImage := func(ami string) {
		t.Helper()
		if _, err := c.SSM.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(param), Value: aws.String(ami), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatalf("putting %s: %v", param, err)
		}
	}
	putImage(amiA)

	vpcID := ""
	program := func(pctx *pulumi.Context) error {
		eps := h.Endpoints()
		prov, err := mlplatform.NewProvider(pctx, "uae", &mlplatform.ProviderArgs{
			Region: pulumi.String(acctest.Region),
			Endpoints: &mlplatform.EndpointsArgs{
				Ec2: pulumi.String(eps["ec2"]), S3: pulumi.String(eps["s3"]), Kms: pulumi.String(eps["kms"]),
				Sagemaker: pulumi.String(eps["sagemaker"]), Ssm: pulumi.String(eps["ssm"]), Sts: pulumi.String(eps["sts"]),
				Autoscaling: pulumi.String(eps["autoscaling"]), Applicationautoscaling: pulumi.String(eps["applicationautoscaling"]),
				Cloudwatch: pulumi.String(eps["cloudwatch"]),
			},
			Residency: &mlplatform.ResidencyConfigArgs{Jurisdiction: pulumi.String("AE")},
		})
		if err != nil {
			return err
		}
		args := &mlplatform.GpuClusterArgs{
			Name: pulumi.String("roll"), InstanceType: pulumi.String("p5en.48xlarge"), NodeCount: pulumi.Int(1),
			ZoneId: pulumi.String("mec1-az1"), Image: pulumi.String(param),
			RootVolume:    &mlplatform.GpuRootVolumeArgs{SizeGib: pulumi.Int(200)},
			KmsKeyArn:     pulumi.String(key),
			CapacityRetry: &mlplatform.GpuCapacityRetryArgs{Attempts: pulumi.Int(2), InitialDelay: pulumi.String("10ms")},
		}
		if vpcID != "" {
			args.VpcId = pulumi.String(vpcID)
		}
		gc, err := mlplatform.NewGpuCluster(pctx, "roll", args, pulumi.Providers(prov))
		if err != nil {
			return err
		}
		pctx.Export("imageId", gc.ImageId)
		pctx.Export("nodeIds", gc.NodeIds)
		return nil
	}

	e := pulumitest.NewEngine(t, cli, pluginDir)
	backend := strings.TrimPrefix(e.Env["PULUMI_BACKEND_URL"], "file://")
	stack, err := auto.UpsertStackInlineSource(ctx, "dev", "mlplatform-gpu-e2e", program,
		auto.Pulumi(e.Cmd), auto.PulumiHome(e.Home), auto.EnvVars(e.Env), auto.SecretsProvider("passphrase"),
		auto.Project(workspace.Project{Name: "mlplatform-gpu-e2e", Runtime: workspace.NewProjectRuntimeInfo("go", nil), Backend: &workspace.ProjectBackend{URL: "file://" + backend}}))
	if err != nil {
		t.Fatalf("creating stack: %v", err)
	}
	var out strings.Builder
	up, err := stack.Up(ctx, optup.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out.String())
	}
	t.Cleanup(func() {
		if _, err := stack.Destroy(context.Background(), optdestroy.ProgressStreams(&out)); err != nil {
			t.Errorf("destroy: %v\n%s", err, out.String())
		}
	})
	if got, _ := up.Outputs["imageId"].Value.(string); got != amiA {
		t.Fatalf("imageId = %q, want %s", got, amiA)
	}
	before, _ := up.Outputs["nodeIds"].Value.([]any)

	if _, err := stack.Preview(ctx, optpreview.ExpectNoChanges(), optpreview.ProgressStreams(&out)); err != nil {
		t.Fatalf("preview without a change shows changes: %v\n%s", err, out.String())
	}

	// A new AMI behind the same parameter: an in-place update that rolls.
	putImage(amiB)
	pre, err := stack.Preview(ctx, optpreview.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("preview: %v\n%s", err, out.String())
	}
	if pre.ChangeSummary[apitype.OpUpdate] != 1 || pre.ChangeSummary[apitype.OpReplace] != 0 {
		t.Errorf("preview after the parameter moved = %v, want one update", pre.ChangeSummary)
	}
	up, err = stack.Up(ctx, optup.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("up after the parameter moved: %v\n%s", err, out.String())
	}
	after, _ := up.Outputs["nodeIds"].Value.([]any)
	if got, _ := up.Outputs["imageId"].Value.(string); got != amiB || len(after) != 1 || slices.Equal(after, before) {
		t.Errorf("after up: imageId %q (want %s), nodes %v (were %v): want the node rolled onto the new image", got, amiB, after, before)
	}

	// vpcId set: a replacement, deleted first.
	vpcID = aws.ToString(vpcs.Vpcs[0].VpcId)
	pre, err = stack.Preview(ctx, optpreview.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("preview with vpcId: %v\n%s", err, out.String())
	}
	if pre.ChangeSummary[apitype.OpReplace] != 1 {
		t.Errorf("preview with vpcId = %v, want one replace", pre.ChangeSummary)
	}
}
