package platform_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// In audit mode the parts of a platform only warn; the platform's verdict
// counts their violations, with the rules and the parts' paths, and is
// never "compliant". The same declaration inside the jurisdiction is.
func TestCheckPlatformResidency(t *testing.T) {
	h := acctest.SetupEmulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for region, bucket := range map[string]string{acctest.Region: "uae-features", "eu-west-1": "eu-features"} {
		c, err := h.Clients(ctx, region)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.S3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket),
			CreateBucketConfiguration: &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("platform key")})
	if err != nil {
		t.Fatal(err)
	}
	key := aws.ToString(k.KeyMetadata.Arn)
	env, err := platform.Open(ctx, platform.Config{Region: acctest.Region, Endpoints: h.Endpoints(),
		Residency: residency.PolicyConfig{Jurisdiction: "AE", Mode: residency.ModeAudit, ExcludedZoneIDs: []string{"mec1-az2"}}})
	if err != nil {
		t.Fatal(err)
	}
	store := func(bucket string) *platform.FeatureStoreSpec {
		return &platform.FeatureStoreSpec{
			Name: "uae-features", RecordIdentifier: "record_id", EventTime: "event_time",
			Features: []platform.Feature{{Name: "record_id", Type: "String"}, {Name: "event_time", Type: "Fractional"}},
			Offline:  &platform.OfflineStore{S3URI: "s3://" + bucket + "/records", KMSKeyARN: "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"},
			RoleARN:  "arn:aws:iam::123456789012:role/feature-store",
		}
	}
	cluster := func(zoneID string) *platform.GPUClusterSpec {
		return &platform.GPUClusterSpec{Name: "uae-training", InstanceType: "p5en.48xlarge", NodeCount: 1, ZoneID: zoneID,
			Image: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", KMSKeyARN: key}
	}

	v := env.CheckPlatformResidency(ctx, cluster("mec1-az2"), store("eu-features"))
	s := v.String()
	if v.Compliant() || len(v.Unchecked) > 0 || !strings.HasPrefix(s, "NOT compliant") || !strings.Contains(s, "audit mode") ||
		!strings.Contains(s, "s3-bucket-region") || !strings.Contains(s, "kms-key-region") || !strings.Contains(s, "features.offline_store.s3_uri") ||
		!strings.Contains(s, "training.zone_id") {
		t.Fatalf("verdict %q (unchecked %v), want NOT compliant naming the bucket, key and zone rules and paths", s, v.Unchecked)
	}
	if want := len(v.Violations); !strings.Contains(s, " "+strconv.Itoa(want)+" residency violations") {
		t.Errorf("verdict %q does not count its %d violations", s, want)
	}

	ok := store("uae-features")
	ok.Offline.KMSKeyARN = key
	if v := env.CheckPlatformResidency(ctx, cluster("mec1-az1"), ok); !v.Compliant() || !strings.HasPrefix(v.String(), "compliant with residency AE") {
		t.Fatalf("compliant platform: %q %+v", v.String(), v.Violations)
	}
	// Without keys it is not, under jurisdiction AE's default.
	ok.Offline.KMSKeyARN = ""
	if v := env.CheckPlatformResidency(ctx, cluster("mec1-az1"), ok); v.Compliant() || !strings.Contains(v.String(), "kms-customer-managed") {
		t.Fatalf("platform without keys under the AE default: %q", v.String())
	}
	if v := platform.UncheckedVerdict("the provider is not configured"); v.Compliant() || !strings.Contains(v.String(), "NOT verified") {
		t.Fatalf("unchecked verdict %q", v.String())
	}
}
