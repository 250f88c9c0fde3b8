package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mlplatform/mlplatform/acctest"
)

func createKey(t *testing.T, h *acctest.Harness, region string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, region)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("acceptance test key")})
	if err != nil {
		t.Fatalf("creating fixture key in %s: %v", region, err)
	}
	return aws.ToString(out.KeyMetadata.Arn)
}

func TestAccResidencyGuard_basic(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "uae-training-data", "me-central-1")
	key := createKey(t, h, "me-central-1")
	const name = "mlplatform_residency_guard.this"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config: h.ProviderConfig("require_customer_managed_keys = true") + fmt.Sprintf(`
resource "mlplatform_residency_guard" "this" {
  regions        = ["me-central-1"]
  zone_ids       = ["mec1-az1"]
  kms_key_arns   = [%q]
  s3_uris        = ["s3://uae-training-data/features/"]
  ecr_image_uris = ["123456789012.dkr.ecr.me-central-1.amazonaws.com/train:1.0"]
  arns           = ["arn:aws:iam::123456789012:role/sagemaker", "arn:aws:sagemaker:me-central-1:123456789012:feature-group/clicks"]
}`, key),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(name, "compliant", "true"),
					resource.TestCheckResourceAttr(name, "report.#", "7"),
					resource.TestCheckResourceAttrSet(name, "id"),
					resource.TestCheckTypeSetElemNestedAttrs(name, "report.*", map[string]string{
						"path": "s3_uris[0]", "kind": "s3_uri", "verdict": "pass",
					}),
				),
			},
			{
				// In place: a new value is checked and the guard updated.
				Config: h.ProviderConfig("require_customer_managed_keys = true") + `
resource "mlplatform_residency_guard" "this" {
  regions = ["me-central-1"]
}`,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(name, "compliant", "true"),
					resource.TestCheckResourceAttr(name, "report.#", "1"),
				),
			},
		},
	})
	// The guard owns nothing in AWS: it never writes.
	checkNoWrites(t, h)
}

// Each case fails at plan with a message naming the attribute, the value,
// the rule and the fix; the shim's log shows no write call.
func TestAccResidencyGuard_rejectedAtPlan(t *testing.T) {
	cases := []struct {
		name   string
		config string
		want   string
	}{
		{
			name:   "kms key in eu-west-1",
			config: `kms_key_arns = ["arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"]`,
			want:   `(?s)Residency violation: kms-key-region.*kms_key_arns\[0\].*eu-west-1.*Fix:`,
		},
		{
			name:   "bucket in eu-west-1",
			config: `s3_uris = ["s3://eu-training-data/raw/"]`,
			want:   `(?s)Residency violation: s3-bucket-region.*s3_uris\[0\].*eu-west-1.*Fix:`,
		},
		{
			name:   "ecr image in us-east-1",
			config: `ecr_image_uris = ["123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1.0"]`,
			want:   `(?s)Residency violation: ecr-image-region.*ecr_image_uris\[0\].*us-east-1.*Fix:`,
		},
		{
			name:   "zone id outside the jurisdiction",
			config: `zone_ids = ["euw1-az1"]`,
			want:   `(?s)Residency violation: zone-allowed.*zone_ids\[0\].*euw1-az1.*Fix:`,
		},
		{
			name:   "excluded zone id",
			config: `zone_ids = ["mec1-az2"]`,
			want:   `(?s)Residency violation: zone-excluded.*zone_ids\[0\].*mec1-az2.*Fix:`,
		},
		{
			name:   "region outside",
			config: `regions = ["us-east-1"]`,
			want:   `(?s)Residency violation: region-allowed.*regions\[0\].*us-east-1.*Fix:`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := acctest.Setup(t)
			createBucket(t, h, "eu-training-data", "eu-west-1")
			resource.Test(t, resource.TestCase{
				PreCheck:                 func() { acctest.PreCheck(t) },
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
				Steps: []resource.TestStep{{
					Config:      h.ProviderConfig(`excluded_zone_ids = ["mec1-az2"]`) + "resource \"mlplatform_residency_guard\" \"this\" {\n  " + tc.config + "\n}\n",
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
			checkNoWrites(t, h)
		})
	}
}

// In audit mode the same violations are warnings: the plan goes on, the
// guard is created and says it does not comply.
func TestAccResidencyGuard_audit(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "eu-training-data", "eu-west-1")
	const name = "mlplatform_residency_guard.this"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig(`mode = "audit"`) + `
resource "mlplatform_residency_guard" "this" {
  kms_key_arns   = ["arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"]
  s3_uris        = ["s3://eu-training-data/raw/"]
  ecr_image_uris = ["123456789012.dkr.ecr.us-east-1.amazonaws.com/train:1.0"]
  zone_ids       = ["euw1-az1"]
}`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(name, "compliant", "false"),
				resource.TestCheckResourceAttr(name, "report.#", "4"),
				resource.TestCheckTypeSetElemNestedAttrs(name, "report.*", map[string]string{"path": "s3_uris[0]", "verdict": "violation", "rule": "s3-bucket-region"}),
				resource.TestCheckTypeSetElemNestedAttrs(name, "report.*", map[string]string{"path": "kms_key_arns[0]", "verdict": "violation", "rule": "kms-key-region"}),
				resource.TestCheckTypeSetElemNestedAttrs(name, "report.*", map[string]string{"path": "ecr_image_uris[0]", "verdict": "violation", "rule": "ecr-image-region"}),
				resource.TestCheckTypeSetElemNestedAttrs(name, "report.*", map[string]string{"path": "zone_ids[0]", "verdict": "violation"}),
			),
		}},
	})
}

// A value known only at apply is checked before the guard is created: the
// plan passes, the apply fails, and nothing depending on the guard starts.
func TestAccResidencyGuard_unknownAtPlanCheckedAtApply(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "eu-training-data", "eu-west-1")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig("") + `
resource "terraform_data" "bucket" {
  input = "s3://eu-training-data/raw/"
}

resource "mlplatform_residency_guard" "this" {
  s3_uris = [terraform_data.bucket.output]
}

resource "terraform_data" "after_guard" {
  input      = "must never be created"
  depends_on = [mlplatform_residency_guard.this]
}`,
			ExpectError: regexp.MustCompile(`(?s)Residency violation: s3-bucket-region.*eu-west-1`),
		}},
	})
	checkNoWrites(t, h)
}

// A bucket that gains cross-region replication after the guard was created
// is caught on refresh: the guard is planned again and the apply fails.
func TestAccResidencyGuard_replicationDrift(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "uae-training-data", "me-central-1")
	createBucket(t, h, "eu-replica", "eu-west-1")
	cfg := h.ProviderConfig("") + `
resource "mlplatform_residency_guard" "this" {
  s3_uris = ["s3://uae-training-data/"]
}`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{Config: cfg, Check: resource.TestCheckResourceAttr("mlplatform_residency_guard.this", "compliant", "true")},
			{
				PreConfig:   func() { replicate(t, h, "uae-training-data", "eu-replica") },
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)Residency violation: s3-replication.*eu-west-1`),
			},
		},
	})
}

// replicate turns on replication from src to dst (a fixture change made
// outside Terraform).
func replicate(t *testing.T, h *acctest.Harness, src, dst string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, "me-central-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{src, dst} {
		if _, err := c.S3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
			Bucket:                  aws.String(b),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled},
		}); err != nil {
			t.Fatalf("enabling versioning on %s: %v", b, err)
		}
	}
	_, err = c.S3.PutBucketReplication(ctx, &s3.PutBucketReplicationInput{
		Bucket: aws.String(src),
		ReplicationConfiguration: &s3types.ReplicationConfiguration{
			Role: aws.String("arn:aws:iam::123456789012:role/replication"),
			Rules: []s3types.ReplicationRule{{
				ID:                      aws.String("to-eu"),
				Status:                  s3types.ReplicationRuleStatusEnabled,
				Priority:                aws.Int32(1),
				Filter:                  &s3types.ReplicationRuleFilter{Prefix: aws.String("")},
				Destination:             &s3types.Destination{Bucket: aws.String("arn:aws:s3:::" + dst)},
				DeleteMarkerReplication: &s3types.DeleteMarkerReplication{Status: s3types.DeleteMarkerReplicationStatusDisabled},
			}},
		},
	})
	if err != nil {
		t.Fatalf("configuring replication %s -> %s: %v", src, dst, err)
	}
}
