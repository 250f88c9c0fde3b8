"""A residency-checked ML platform in the UAE with the mlplatform Pulumi
provider: a GPU training cluster and a feature store under one Platform
component, and a ResidencyGuard for a bucket another provider owns.
`pulumi preview` fails before any write if anything would be placed outside
the jurisdiction."""

import pulumi
import pulumi_mlplatform as mlplatform

cfg = pulumi.Config()
bucket = cfg.require("offlineStoreBucket")
# Jurisdiction AE requires customer-managed keys by default.
key = cfg.require("kmsKeyArn")

platform = mlplatform.Platform(
    "uae",
    # Defaults: p5en.48xlarge, 2 nodes in mec1-az1, the Deep Learning Base NVIDIA driver AMI.
    training=mlplatform.PlatformTrainingArgs(node_count=2, kms_key_arn=key),
    features=mlplatform.PlatformFeaturesArgs(
        offline_store_s3_uri=f"s3://{bucket}/features",
        role_arn=cfg.require("featureStoreRoleArn"),
        kms_key_arn=key,
        features=[
            mlplatform.FeatureDefinitionArgs(name="age", type="Integral"),
            mlplatform.FeatureDefinitionArgs(name="risk_score", type="Fractional"),
        ],
        ttl_days=30,
    ),
    tags={"team": "ml"},
)

# A residency guard for what another provider creates (here: the bucket the
# feature store writes to).
mlplatform.ResidencyGuard("data-bucket", s3_uris=[f"s3://{bucket}"])

pulumi.export("clusterNodeIds", platform.cluster_node_ids)
pulumi.export("featureGroupArn", platform.feature_group_arn)
pulumi.export("validationSummary", platform.validation_summary)
