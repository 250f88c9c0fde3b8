package provider_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mlplatform/mlplatform/acctest"
)

func TestMain(m *testing.M) { acctest.Main(m) }

// createBucket makes a fixture bucket in region through the harness (its
// calls are marked as fixture calls and left out of Shim.Writes).
func createBucket(t *testing.T, h *acctest.Harness, name, region string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
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

// checkNoWrites fails the test when the provider made any AWS write call.
func checkNoWrites(t *testing.T, h *acctest.Harness) {
	t.Helper()
	if w := h.Shim.Writes(); len(w) > 0 {
		var b strings.Builder
		for _, c := range w {
			b.WriteString("  " + c.String() + "\n")
		}
		t.Fatalf("expected zero AWS write calls, the provider made %d:\n%s", len(w), b.String())
	}
}

func TestAccProvider_regionOutsideJurisdiction(t *testing.T) {
	h := acctest.Setup(t)
	cfg := strings.Replace(h.ProviderConfig(""), `region = "me-central-1"`, `region = "eu-west-1"`, 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      cfg + `data "mlplatform_residency" "this" {}`,
			ExpectError: regexp.MustCompile(`(?s)region "eu-west-1" is outside jurisdiction AE.*allowed regions: me-central-1`),
		}},
	})
	checkNoWrites(t, h)
}

func TestAccProvider_badResidencySettings(t *testing.T) {
	h := acctest.Setup(t)
	for name, tc := range map[string]struct {
		extra string
		want  string
	}{
		"unknown jurisdiction":   {`jurisdiction = "ZZ"`, `unknown jurisdiction "ZZ"`},
		"unknown mode":           {`mode = "warn"`, `(?s)residency.*mode.*value must be one of`},
		"allowed region outside": {`allowed_regions = ["us-east-1"]`, `region "us-east-1" is outside jurisdiction AE`},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := h.ProviderConfig(tc.extra)
			if strings.Contains(tc.extra, "jurisdiction") {
				cfg = strings.Replace(cfg, "    jurisdiction = \"AE\"\n", "", 1)
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
				Steps: []resource.TestStep{{
					Config:      cfg + `data "mlplatform_residency" "this" {}`,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}

// Plain http is refused except to loopback, and a host that is not AWS's
// needs allow_custom_endpoints, at configure, on the attribute, before any
// call; the harness's loopback emulator needs neither.
func TestAccProvider_endpointTransport(t *testing.T) {
	h := acctest.Setup(t)
	s3Line := regexp.MustCompile(`(?m)^(\s*s3\s*=\s*)"[^"]*"$`)
	for name, tc := range map[string]struct {
		s3, extra string
		want      string // "" = plans
	}{
		"plain http":                 {s3: "http://collector.example.net", want: `(?s)endpoints\.s3.*plain\s+http.*Use\s+https`},
		"plain http even if allowed": {s3: "http://collector.example.net", extra: "allow_custom_endpoints = true", want: `plain\s+http`},
		"custom host":                {s3: "https://collector.example.net", want: `(?s)not\s+an\s+AWS\s+endpoint\s+of\s+s3.*allow_custom_endpoints\s+=\s+true`},
		"custom host allowed":        {s3: "https://collector.example.net", extra: "allow_custom_endpoints = true"},
		"AWS endpoint":               {s3: "https://s3.me-central-1.amazonaws.com"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := s3Line.ReplaceAllString(h.ProviderConfig(""), `${1}"`+tc.s3+`"`)
			if !strings.Contains(cfg, tc.s3) {
				t.Fatalf("no s3 endpoint in the harness's provider block:\n%s", cfg)
			}
			cfg = strings.Replace(cfg, "  region = ", "  "+tc.extra+"\n  region = ", 1)
			step := resource.TestStep{Config: cfg + `data "mlplatform_residency" "this" {}`, PlanOnly: true}
			if tc.want != "" {
				step.ExpectError = regexp.MustCompile(tc.want)
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
				Steps:                    []resource.TestStep{step},
			})
		})
	}
	checkNoWrites(t, h)
}
