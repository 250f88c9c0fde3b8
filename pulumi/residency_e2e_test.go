package pulumi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/pulumitest"
	"github.com/mlplatform/mlplatform/pulumi/sdk/go/mlplatform"
)

// TestE2E_residencyMatrix drives a part of the residency matrix through the
// real Pulumi engine (CLI, local backend, inline program): each violating
// program fails `pulumi preview` with its rule and writes nothing; the
// compliant one previews cleanly. The full matrix runs through Check in
// TestResidencyMatrix.
func TestE2E_residencyMatrix(t *testing.T) {
	cli := pulumitest.CLI(t)
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "name")
	createBucket(t, h, acctest.Region, "uae-data")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	mrk, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{MultiRegion: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KMS.ReplicateKey(ctx, &kms.ReplicateKeyInput{KeyId: mrk.KeyMetadata.KeyId, ReplicaRegion: aws.String("eu-west-1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.KMS.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String("alias/training"), TargetKeyId: mrk.KeyMetadata.KeyId}); err != nil {
		t.Fatal(err)
	}
	pluginDir := pulumitest.BuildPlugin(t)

	eng := pulumitest.NewEngine(t, cli, pluginDir)

	// The program under test: a provider with the case's residency settings
	// and the case's resources.
	var current func(ctx *pulumi.Context, prov pulumi.ProviderResource) error
	var cmk pulumi.BoolPtrInput // nil: the jurisdiction's default
	program := func(ctx *pulumi.Context) error {
		eps := h.Endpoints()
		prov, err := mlplatform.NewProvider(ctx, "uae", &mlplatform.ProviderArgs{
			Region: pulumi.String(acctest.Region),
			Endpoints: &mlplatform.EndpointsArgs{
				Ec2: pulumi.String(eps["ec2"]), S3: pulumi.String(eps["s3"]), Kms: pulumi.String(eps["kms"]),
				Sagemaker: pulumi.String(eps["sagemaker"]), Ssm: pulumi.String(eps["ssm"]), Sts: pulumi.String(eps["sts"]),
				Autoscaling: pulumi.String(eps["autoscaling"]), Applicationautoscaling: pulumi.String(eps["applicationautoscaling"]),
				Cloudwatch: pulumi.String(eps["cloudwatch"]),
			},
			Residency: &mlplatform.ResidencyConfigArgs{Jurisdiction: pulumi.String("AE"), RequireCustomerManagedKeys: cmk},
		})
		if err != nil {
			return err
		}
		return current(ctx, prov)
	}
	stack := eng.InlineStack(ctx, t, "mlplatform-residency", "dev", program)

	guard := func(args *mlplatform.ResidencyGuardArgs) func(*pulumi.Context, pulumi.ProviderResource) error {
		return func(ctx *pulumi.Context, prov pulumi.ProviderResource) error {
			_, err := mlplatform.NewResidencyGuard(ctx, "g", args, pulumi.Provider(prov))
			return err
		}
	}
	gpu := func(kmsKey pulumi.StringPtrInput) func(*pulumi.Context, pulumi.ProviderResource) error {
		return func(ctx *pulumi.Context, prov pulumi.ProviderResource) error {
			_, err := mlplatform.NewGpuCluster(ctx, "c", &mlplatform.GpuClusterArgs{
				InstanceType: pulumi.String("p5en.48xlarge"), NodeCount: pulumi.Int(2), ZoneId: pulumi.String("mec1-az1"),
				Image: pulumi.String(testImage), KmsKeyArn: kmsKey,
			}, pulumi.Provider(prov))
			return err
		}
	}
	cases := []struct {
		name    string
		cmk     bool // require customer managed keys; false: accept AWS managed ones
		dflt    bool // leave requireCustomerManagedKeys unset: the jurisdiction's default
		program func(*pulumi.Context, pulumi.ProviderResource) error
		want    []string // in the preview's failure; nil: compliant
	}{
		{name: "aws-cn bucket", program: guard(&mlplatform.ResidencyGuardArgs{S3Uris: pulumi.StringArray{pulumi.String("arn:aws-cn:s3:::name")}}), want: []string{"partition", "s3Uris[0]"}},
		{name: "alias to a multi-region key with a replica outside", program: guard(&mlplatform.ResidencyGuardArgs{Arns: pulumi.StringArray{pulumi.String("arn:aws:kms:me-central-1:123456789012:alias/training")}}), want: []string{"kms-key-region", "eu-west-1"}},
		{name: "empty string in a guard list", program: guard(&mlplatform.ResidencyGuardArgs{Regions: pulumi.StringArray{pulumi.String("")}}), want: []string{"blank-value", "regions[0]"}},
		{name: "GPU cluster without a key, customer managed keys required", cmk: true, program: gpu(nil), want: []string{"kms-customer-managed", "kmsKeyArn"}},
		// Jurisdiction AE requires customer managed keys by default: the
		// failure names the property, the rule and the opt-out.
		{name: "GPU cluster without a key, under the AE default", dflt: true, program: gpu(nil), want: []string{"kms-customer-managed", "kmsKeyArn",
			"jurisdiction AE requires customer managed keys by default", "residency.requireCustomerManagedKeys = false"}},
		{name: "compliant guard", program: guard(&mlplatform.ResidencyGuardArgs{S3Uris: pulumi.StringArray{pulumi.String("https://uae-data.s3.me-central-1.amazonaws.com/x")}, Regions: pulumi.StringArray{pulumi.String("me-central-1")}})},
	}
	for _, tc := range cases {
		current, cmk = tc.program, pulumi.Bool(tc.cmk)
		if tc.dflt {
			cmk = nil
		}
		h.Shim.ResetLog()
		var out strings.Builder
		_, err := stack.Preview(ctx, optpreview.ProgressStreams(&out), optpreview.ErrorProgressStreams(&out))
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: preview failed: %v\n%s", tc.name, err, out.String())
			}
		} else {
			msg := ""
			if err != nil {
				msg = err.Error() + out.String()
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(msg, w) {
					t.Errorf("%s: preview = %v, want a failure naming %q\n%s", tc.name, err, w, out.String())
					break
				}
			}
		}
		assertNoWrites(t, h)
	}
}
