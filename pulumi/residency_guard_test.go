package pulumi

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

// createBucket creates a fixture bucket in region.
func createBucket(t *testing.T, h *acctest.Harness, region, name string) {
	t.Helper()
	ctx := context.Background()
	c, err := h.Clients(ctx, region)
	if err != nil {
		t.Fatal(err)
	}
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if region != "us-east-1" {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(region)}
	}
	if _, err := c.S3.CreateBucket(ctx, in); err != nil {
		t.Fatalf("creating fixture bucket %s in %s: %v", name, region, err)
	}
}

// createKey creates a customer managed key in region and returns its ARN:
// jurisdiction AE requires one by default wherever data is stored.
func createKey(t *testing.T, h *acctest.Harness, region string) string {
	t.Helper()
	ctx := context.Background()
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

func TestResidencyGuard_lifecycle(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-data")
	createBucket(t, h, "eu-west-1", "eu-data")
	s := newServer(t, h, nil)

	integrationLifecycle := func(inputs property.Map) p.CreateResponse {
		t.Helper()
		check, err := s.Check(p.CheckRequest{Urn: urn("ResidencyGuard", "g"), Inputs: inputs})
		if err != nil || len(check.Failures) > 0 {
			t.Fatalf("check: %v %v", err, check.Failures)
		}
		if _, err := s.Create(p.CreateRequest{Urn: urn("ResidencyGuard", "g"), Properties: check.Inputs, DryRun: true}); err != nil {
			t.Fatalf("preview create: %v", err)
		}
		resp, err := s.Create(p.CreateRequest{Urn: urn("ResidencyGuard", "g"), Properties: check.Inputs})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return resp
	}

	created := integrationLifecycle(property.NewMap(map[string]property.Value{
		"regions": strings_(acctest.Region),
		"s3Uris":  strings_("s3://uae-data/features/"),
		"zoneIds": strings_("mec1-az1"),
		"arns":    strings_("arn:aws:iam::123456789012:role/ml"),
	}))
	if !strings.HasPrefix(created.ID, "guard-") {
		t.Errorf("id = %q, want guard-...", created.ID)
	}
	if !created.Properties.Get("compliant").AsBool() {
		t.Errorf("compliant = false, want true: %v", created.Properties)
	}
	if n := len(created.Properties.Get("report").AsArray().AsSlice()); n != 4 {
		t.Errorf("report has %d entries, want 4", n)
	}

	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: urn("ResidencyGuard", "g"), Properties: created.Properties})
	if err != nil || read.ID != created.ID {
		t.Fatalf("read: id %q, %v", read.ID, err)
	}

	// A bucket outside the jurisdiction fails Check on its property, before
	// anything is written.
	check, err := s.Check(p.CheckRequest{Urn: urn("ResidencyGuard", "bad"), Inputs: property.NewMap(map[string]property.Value{
		"s3Uris": strings_("s3://uae-data/ok", "s3://eu-data/raw/"),
	})})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if len(check.Failures) != 1 || check.Failures[0].Property != "s3Uris[1]" || !strings.Contains(check.Failures[0].Reason, "s3-bucket-region") {
		t.Fatalf("check failures = %+v, want one s3-bucket-region failure on s3Uris[1]", check.Failures)
	}
	assertNoWrites(t, h)

	if err := s.Delete(p.DeleteRequest{ID: created.ID, Urn: urn("ResidencyGuard", "g"), Properties: created.Properties}); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

func TestResidencyGuard_auditMode(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, "eu-west-1", "eu-data")
	s := newServer(t, h, map[string]property.Value{"mode": property.New("audit")})

	inputs := property.NewMap(map[string]property.Value{"s3Uris": strings_("s3://eu-data/raw/"), "zoneIds": strings_("use1-az1")})
	check, err := s.Check(p.CheckRequest{Urn: urn("ResidencyGuard", "g"), Inputs: inputs})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("audit check: %v %v (want no failures, only warnings)", err, check.Failures)
	}
	resp, err := s.Create(p.CreateRequest{Urn: urn("ResidencyGuard", "g"), Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if resp.Properties.Get("compliant").AsBool() {
		t.Errorf("compliant = true, want false in audit mode with a violation")
	}
	var verdicts []string
	for _, e := range resp.Properties.Get("report").AsArray().All {
		verdicts = append(verdicts, e.AsMap().Get("verdict").AsString()+":"+e.AsMap().Get("rule").AsString())
	}
	if got := strings.Join(verdicts, ","); !strings.Contains(got, "violation:s3-bucket-region") || !strings.Contains(got, "violation:zone") {
		t.Errorf("verdicts = %v", verdicts)
	}
}

func TestConfig_invalidResidency(t *testing.T) {
	s := newUnconfigured(t)
	resp, err := s.CheckConfig(p.CheckRequest{Urn: urn("Provider", "p"), Inputs: property.NewMap(map[string]property.Value{
		"region":    property.New("eu-west-1"),
		"residency": property.New(property.NewMap(map[string]property.Value{"jurisdiction": property.New("AE")})),
	})})
	if err != nil {
		t.Fatalf("check config: %v", err)
	}
	if len(resp.Failures) != 1 || resp.Failures[0].Property != "region" {
		t.Fatalf("failures = %+v, want one on region", resp.Failures)
	}
	resp, err = s.CheckConfig(p.CheckRequest{Urn: urn("Provider", "p"), Inputs: property.NewMap(map[string]property.Value{
		"residency": property.New(property.NewMap(map[string]property.Value{"excludedZoneIds": strings_("me-central-1b")})),
	})})
	if err != nil {
		t.Fatalf("check config: %v", err)
	}
	if len(resp.Failures) != 1 || resp.Failures[0].Property != "residency.excludedZoneIds[0]" {
		t.Fatalf("failures = %+v, want one on residency.excludedZoneIds[0]", resp.Failures)
	}
}
