package provider_test

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mlplatform/mlplatform/acctest"
)

func TestAccResidencyDataSource_basic(t *testing.T) {
	h := acctest.Setup(t)
	const name = "data.mlplatform_residency.this"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig(`excluded_zone_ids = ["mec1-az2"]`) + `data "mlplatform_residency" "this" {}`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(name, "jurisdiction", "AE"),
				resource.TestCheckResourceAttr(name, "jurisdiction_name", "United Arab Emirates"),
				resource.TestCheckResourceAttr(name, "region", "me-central-1"),
				resource.TestCheckResourceAttr(name, "allowed_regions.#", "1"),
				resource.TestCheckResourceAttr(name, "allowed_regions.0", "me-central-1"),
				resource.TestCheckResourceAttr(name, "mode", "enforce"),
				resource.TestCheckResourceAttr(name, "excluded_zone_ids.0", "mec1-az2"),
				// moto's me-central-1 has three zones; the excluded one is gone.
				resource.TestCheckResourceAttr(name, "allowed_zone_ids.#", "2"),
				resource.TestCheckResourceAttr(name, "allowed_zone_ids.0", "mec1-az1"),
				resource.TestCheckResourceAttr(name, "allowed_zone_ids.1", "mec1-az3"),
				resource.TestCheckResourceAttr(name, "allowed_zone_names.0", "me-central-1a"),
			),
		}},
	})
}

func TestAccInstanceTypesDataSource_gpu(t *testing.T) {
	h := acctest.Setup(t)
	const name = "data.mlplatform_instance_types.h200"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig("") + `
data "mlplatform_instance_types" "h200" {
  gpu_model     = "H200"
  min_gpu_count = 8
  efa           = true
}

data "mlplatform_instance_types" "any_gpu" {
  min_gpu_count = 1
}

data "mlplatform_instance_types" "h100" {
  gpu_model = "H100"
}

data "mlplatform_instance_types" "amx" {
  cpu_features = ["amx_tile", "avx512f"]
  architecture = "x86_64"
}
`,
			Check: resource.ComposeAggregateTestCheckFunc(
				// moto offers p5en.48xlarge in me-central-1 (live offerings).
				resource.TestCheckTypeSetElemAttr(name, "names.*", "p5en.48xlarge"),
				resource.TestCheckTypeSetElemNestedAttrs(name, "instance_types.*", map[string]string{
					"name":              "p5en.48xlarge",
					"gpu_model":         "H200",
					"gpu_count":         "8",
					"efa_supported":     "true",
					"cluster_placement": "true",
					"gpu_interconnect":  "nvlink",
				}),
				resource.TestCheckResourceAttr(name, "catalog_live", "true"),
				resource.TestCheckResourceAttrSet(name, "catalog_as_of"),
				// p5.48xlarge (H100) is not offered in me-central-1.
				resource.TestCheckResourceAttr("data.mlplatform_instance_types.h100", "names.#", "0"),
				resource.TestCheckTypeSetElemAttr("data.mlplatform_instance_types.any_gpu", "names.*", "g5.xlarge"),
				resource.TestCheckTypeSetElemAttr("data.mlplatform_instance_types.amx", "names.*", "c7i.large"),
			),
		}},
	})
}

// explain tells what a reference resolved to and which rules it passed,
// without failing on a violation: an alias whose key has a replica in
// eu-west-1, an in-region bucket URL, and a reference in aws-cn.
func TestAccResidencyDataSource_explain(t *testing.T) {
	h := acctest.Setup(t)
	f := makeResidencyFixtures(t, h)
	const name = "data.mlplatform_residency.why"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig("") + `
data "mlplatform_residency" "why" {
  explain = [
    { kind = "kms_key", value = "` + f.aliasMRK + `" },
    { kind = "s3_uri", value = "https://uae-data.s3.me-central-1.amazonaws.com/features/" },
    { kind = "s3_uri", value = "arn:aws-cn:s3:::name" },
  ]
}`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(name, "explanations.#", "3"),
				resource.TestCheckResourceAttr(name, "explanations.0.compliant", "false"),
				resource.TestCheckTypeSetElemAttr(name, "explanations.0.resolved.*", "resolves to key "+f.mrk),
				resource.TestCheckTypeSetElemAttr(name, "explanations.0.resolved.*", "multi-region key; other regions: eu-west-1"),
				resource.TestCheckTypeSetElemNestedAttrs(name, "explanations.0.rules.*", map[string]string{"rule": "partition", "verdict": "pass"}),
				resource.TestCheckTypeSetElemNestedAttrs(name, "explanations.0.rules.*", map[string]string{"rule": "kms-key-region", "verdict": "violation"}),
				resource.TestCheckResourceAttr(name, "explanations.1.compliant", "true"),
				resource.TestCheckTypeSetElemAttr(name, "explanations.1.resolved.*", "bucket region me-central-1 (GetBucketLocation)"),
				resource.TestCheckTypeSetElemNestedAttrs(name, "explanations.1.rules.*", map[string]string{"rule": "s3-replication", "verdict": "pass"}),
				resource.TestCheckResourceAttr(name, "explanations.2.compliant", "false"),
				resource.TestCheckTypeSetElemNestedAttrs(name, "explanations.2.rules.*", map[string]string{"rule": "partition", "verdict": "violation"}),
			),
		}},
	})
	checkNoWrites(t, h)
}
