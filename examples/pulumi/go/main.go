// Command uae-ml-platform declares a residency-checked ML platform in the
// UAE with the mlplatform Pulumi provider: a GPU training cluster and a
// feature store, under one Platform component. `pulumi preview` fails before
// any write if anything would be placed outside the jurisdiction.
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/mlplatform/mlplatform/pulumi/sdk/go/mlplatform"
)

func main() {
	pulumi.Run(run)
}

func run(ctx *pulumi.Context) error {
	cfg := config.New(ctx, "")
	// Jurisdiction AE requires customer-managed keys by default.
	key := pulumi.String(cfg.Require("kmsKeyArn"))
	platform, err := mlplatform.NewPlatform(ctx, "uae", &mlplatform.PlatformArgs{
		// Defaults: p5en.48xlarge, 2 nodes in mec1-az1, the Deep Learning Base NVIDIA driver AMI.
		Training: &mlplatform.PlatformTrainingArgs{
			NodeCount: pulumi.Int(2),
			KmsKeyArn: key,
		},
		Features: &mlplatform.PlatformFeaturesArgs{
			OfflineStoreS3Uri: pulumi.Sprintf("s3://%s/features", cfg.Require("offlineStoreBucket")),
			RoleArn:           pulumi.String(cfg.Require("featureStoreRoleArn")),
			KmsKeyArn:         key,
			Features: mlplatform.FeatureDefinitionArray{
				mlplatform.FeatureDefinitionArgs{Name: pulumi.String("age"), Type: pulumi.String("Integral")},
				mlplatform.FeatureDefinitionArgs{Name: pulumi.String("risk_score"), Type: pulumi.String("Fractional")},
			},
			TtlDays: pulumi.Int(30),
		},
		Tags: pulumi.StringMap{"team": pulumi.String("ml")},
	})
	if err != nil {
		return err
	}

	// A residency guard for what another provider creates (here: the
	// bucket the feature store writes to).
	if _, err := mlplatform.NewResidencyGuard(ctx, "data-bucket", &mlplatform.ResidencyGuardArgs{
		S3Uris: pulumi.StringArray{pulumi.Sprintf("s3://%s", cfg.Require("offlineStoreBucket"))},
	}); err != nil {
		return err
	}

	ctx.Export("clusterNodeIds", platform.ClusterNodeIds)
	ctx.Export("featureGroupArn", platform.FeatureGroupArn)
	ctx.Export("validationSummary", platform.ValidationSummary)
	return nil
}
