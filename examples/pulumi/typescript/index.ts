// A residency-checked ML platform in the UAE with the mlplatform Pulumi
// provider: a GPU training cluster and a feature store under one Platform
// component, and a ResidencyGuard for a bucket another provider owns.
// `pulumi preview` fails before any write if anything would be placed
// outside the jurisdiction.
import * as pulumi from "@pulumi/pulumi";
import * as mlplatform from "@mlplatform/pulumi";

const cfg = new pulumi.Config();
const bucket = cfg.require("offlineStoreBucket");
// Jurisdiction AE requires customer-managed keys by default.
const key = cfg.require("kmsKeyArn");

const platform = new mlplatform.Platform("uae", {
    // Defaults: p5en.48xlarge, 2 nodes in mec1-az1, the Deep Learning Base NVIDIA driver AMI.
    training: { nodeCount: 2, kmsKeyArn: key },
    features: {
        offlineStoreS3Uri: `s3://${bucket}/features`,
        roleArn: cfg.require("featureStoreRoleArn"),
        kmsKeyArn: key,
        features: [
            { name: "age", type: "Integral" },
            { name: "risk_score", type: "Fractional" },
        ],
        ttlDays: 30,
    },
    tags: { team: "ml" },
});

// A residency guard for what another provider creates (here: the bucket the
// feature store writes to).
new mlplatform.ResidencyGuard("data-bucket", {
    s3Uris: [`s3://${bucket}`],
});

export const clusterNodeIds = platform.clusterNodeIds;
export const featureGroupArn = platform.featureGroupArn;
export const validationSummary = platform.validationSummary;
