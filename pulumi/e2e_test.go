package pulumi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optrefresh"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/pulumitest"
	"github.com/mlplatform/mlplatform/pulumi/sdk/go/mlplatform"
)

// assertEngineWording checks a failed preview's output words a residency
// violation on one of paths (with its value) as Terraform does (message,
// rule, fix), and never as the engine's `property P value {<nil>}` for a
// nested property.
func assertEngineWording(t *testing.T, out string, pathValues ...string) {
	t.Helper()
	for _, want := range []string{"residency violation: s3-bucket-region", "Rule: s3-bucket-region (enforce mode).", "Fix: "} {
		if !strings.Contains(out, want) {
			t.Errorf("preview output lacks %q", want)
		}
	}
	found := false
	for i := 0; i+1 < len(pathValues); i += 2 {
		found = found || strings.Contains(out, fmt.Sprintf("%s = %q", pathValues[i], pathValues[i+1]))
	}
	if !found {
		t.Errorf("preview output names none of the properties and values %q", pathValues)
	}
	if strings.Contains(out, "{<nil>}") {
		t.Errorf("preview output shows a nil property value")
	}
}

// e2eProgram is the Platform as a Pulumi program: an explicit provider at
// the emulator, and the component with the offline store in bucket, its
// volumes and stores encrypted with key (a customer managed key, which
// jurisdiction AE requires by default).
func e2eProgram(h *acctest.Harness, key string, bucket *string, extraFeatures *[]string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		eps := h.Endpoints()
		prov, err := mlplatform.NewProvider(ctx, "uae", &mlplatform.ProviderArgs{
			Region: pulumi.String(acctest.Region),
			Endpoints: &mlplatform.EndpointsArgs{
				Ec2: pulumi.String(eps["ec2"]), S3: pulumi.String(eps["s3"]), Kms: pulumi.String(eps["kms"]),
				Sagemaker: pulumi.String(eps["sagemaker"]), Ssm: pulumi.String(eps["ssm"]), Sts: pulumi.String(eps["sts"]),
				Autoscaling: pulumi.String(eps["autoscaling"]), Applicationautoscaling: pulumi.String(eps["applicationautoscaling"]),
				Cloudwatch: pulumi.String(eps["cloudwatch"]),
			},
			Residency:   &mlplatform.ResidencyConfigArgs{Jurisdiction: pulumi.String("AE"), ExcludedZoneIds: pulumi.StringArray{pulumi.String("mec1-az2")}},
			DefaultTags: pulumi.StringMap{"owner": pulumi.String("ml-platform")},
		})
		if err != nil {
			return err
		}
		features := mlplatform.FeatureDefinitionArray{mlplatform.FeatureDefinitionArgs{Name: pulumi.String("age"), Type: pulumi.String("Integral")}}
		for _, f := range *extraFeatures {
			features = append(features, mlplatform.FeatureDefinitionArgs{Name: pulumi.String(f), Type: pulumi.String("Fractional")})
		}
		p, err := mlplatform.NewPlatform(ctx, "uae", &mlplatform.PlatformArgs{
			Training: &mlplatform.PlatformTrainingArgs{NodeCount: pulumi.Int(2), KmsKeyArn: pulumi.String(key)},
			Features: &mlplatform.PlatformFeaturesArgs{
				OfflineStoreS3Uri: pulumi.String("s3://" + *bucket + "/features"),
				KmsKeyArn:         pulumi.String(key),
				RoleArn:           pulumi.String(testRole),
				Features:          features,
				TtlDays:           pulumi.Int(30),
			},
			Tags: pulumi.StringMap{"team": pulumi.String("ml")},
		}, pulumi.Providers(prov))
		if err != nil {
			return err
		}
		ctx.Export("clusterNodeIds", p.ClusterNodeIds)
		ctx.Export("featureGroupArn", p.FeatureGroupArn)
		ctx.Export("validationSummary", p.ValidationSummary)
		return nil
	}
}

// TestE2E_platform drives the Platform through the real Pulumi engine:
// preview refused on residency before any write, up, an in-place update,
// a clean refresh and destroy, all against the emulator.
func TestE2E_platform(t *testing.T) {
	cli := pulumitest.CLI(t)
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-platform-data")
	createBucket(t, h, "eu-west-1", "eu-platform-data")
	pluginDir := pulumitest.BuildPlugin(t)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	e := pulumitest.NewEngine(t, cli, pluginDir)

	bucket, extra := "eu-platform-data", []string{}
	stack := e.InlineStack(ctx, t, "mlplatform-e2e", "dev", e2eProgram(h, createKey(t, h, acctest.Region), &bucket, &extra))
	var err error

	// 1. The offline store outside the jurisdiction: preview fails with the
	// residency message, and nothing was written.
	h.Shim.ResetLog()
	var out strings.Builder
	_, err = stack.Preview(ctx, optpreview.ProgressStreams(&out), optpreview.ErrorProgressStreams(&out))
	if err == nil {
		t.Fatalf("preview with the offline store in eu-west-1 succeeded; want a residency failure\n%s", out.String())
	}
	if msg := err.Error() + out.String(); !strings.Contains(msg, "s3-bucket-region") || !strings.Contains(msg, "offlineStore.s3Uri") {
		t.Fatalf("preview failed without the residency message: %v\n%s", err, out.String())
	}
	t.Logf("preview output:\n%s", out.String())
	assertEngineWording(t, out.String(), "offlineStore.s3Uri", "s3://eu-platform-data/features")
	assertNoWrites(t, h)

	// 2. In the jurisdiction, up creates the platform.
	bucket = "uae-platform-data"
	up, err := stack.Up(ctx, optup.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out.String())
	}
	nodes, _ := up.Outputs["clusterNodeIds"].Value.([]any)
	if len(nodes) != 2 {
		t.Errorf("clusterNodeIds = %v, want 2 nodes", up.Outputs["clusterNodeIds"].Value)
	}
	arn, _ := up.Outputs["featureGroupArn"].Value.(string)
	if !strings.Contains(arn, "feature-group/uae-features") {
		t.Errorf("featureGroupArn = %q", arn)
	}
	if s, _ := up.Outputs["validationSummary"].Value.(string); !strings.Contains(s, "2 of 2 nodes running in mec1-az1") {
		t.Errorf("validationSummary = %q", s)
	}
	if n := liveNodes(t, h, "uae-training"); n != 2 {
		t.Errorf("%d live nodes after up, want 2", n)
	}

	// 3. A second up with an added feature updates the feature group in place.
	h.Shim.ResetLog()
	extra = []string{"risk_score"}
	up, err = stack.Up(ctx, optup.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("second up: %v\n%s", err, out.String())
	}
	changes := up.Summary.ResourceChanges
	if changes == nil || (*changes)["update"] != 1 || (*changes)["replace"] != 0 || (*changes)["create"] != 0 || (*changes)["delete"] != 0 {
		t.Errorf("second up changes = %v, want exactly one in-place update", changes)
	}
	if n := len(h.Shim.Calls("sagemaker", "UpdateFeatureGroup")); n != 1 {
		t.Errorf("%d UpdateFeatureGroup calls, want 1", n)
	}
	for _, op := range []string{"DeleteFeatureGroup", "CreateFeatureGroup"} {
		if n := len(h.Shim.Calls("sagemaker", op)); n != 0 {
			t.Errorf("%d %s calls in the second up, want 0", n, op)
		}
	}

	// 4. Refresh is clean: nothing changed outside Pulumi.
	ref, err := stack.Refresh(ctx, optrefresh.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("refresh: %v\n%s", err, out.String())
	}
	if c := ref.Summary.ResourceChanges; c != nil {
		for k, n := range *c {
			if k != "same" && n > 0 {
				t.Errorf("refresh changed %d resources (%s): %v", n, k, *c)
			}
		}
	}
	pre, err := stack.Preview(ctx, optpreview.ExpectNoChanges(), optpreview.ProgressStreams(&out))
	if err != nil {
		t.Errorf("preview after refresh shows changes: %v %v\n%s", err, pre.ChangeSummary, out.String())
	}

	// 5. Destroy removes everything.
	if _, err := stack.Destroy(ctx, optdestroy.ProgressStreams(&out)); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out.String())
	}
	if n := liveNodes(t, h, "uae-training"); n != 0 {
		t.Errorf("%d live nodes after destroy, want 0", n)
	}
	assertNothingLeft(t, h)
	if err := stack.Workspace().RemoveStack(ctx, "dev"); err != nil {
		t.Logf("removing stack: %v", err)
	}
}

// assertNothingLeft checks the emulator holds none of the platform's
// resources: the feature group, launch templates, placement groups.
func assertNothingLeft(t *testing.T, h *acctest.Harness) {
	t.Helper()
	ctx := context.Background()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SageMaker.DescribeFeatureGroup(ctx, &sagemaker.DescribeFeatureGroupInput{FeatureGroupName: aws.String("uae-features")})
	if err == nil {
		t.Errorf("feature group uae-features still exists after destroy")
	}
	lts, err := c.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range lts.LaunchTemplates {
		if strings.HasPrefix(aws.ToString(lt.LaunchTemplateName), "mlplatform-") {
			t.Errorf("launch template %s still exists after destroy", aws.ToString(lt.LaunchTemplateName))
		}
	}
	pgs, err := c.EC2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{"mlplatform-uae-training"}}}})
	if err != nil {
		var ae interface{ ErrorCode() string }
		if !errors.As(err, &ae) {
			t.Fatal(err)
		}
	} else {
		for _, pg := range pgs.PlacementGroups {
			if pg.State != ec2types.PlacementGroupStateDeleted {
				t.Errorf("placement group %s still %s after destroy", aws.ToString(pg.GroupName), pg.State)
			}
		}
	}
}
