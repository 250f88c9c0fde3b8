package provider_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mlplatform/mlplatform/acctest"
)

// quickstartConfig is examples/quickstart with a 2-node GPU cluster: the
// residency and instance-type data sources, a residency guard, a feature
// store and the cluster, both encrypted with key, against the emulator.
func quickstartConfig(h *acctest.Harness, key string) string {
	return h.ProviderConfig(`excluded_zone_ids = ["mec1-az2"]`) + strings.ReplaceAll(`
data "mlplatform_residency" "this" {}

data "mlplatform_instance_types" "gpu" {
  min_gpu_count = 8
  offered_only  = true
}

resource "mlplatform_residency_guard" "data" {
  s3_uris  = ["s3://mlplatform-demo-data/features/"]
  zone_ids = [data.mlplatform_residency.this.allowed_zone_ids[0]]
}

resource "mlplatform_feature_store" "customers" {
  name                           = "customers"
  record_identifier_feature_name = "customer_id"
  event_time_feature_name        = "event_time"
  features = [
    { name = "customer_id", type = "String" },
    { name = "event_time", type = "Fractional" },
    { name = "risk_score", type = "Fractional" },
  ]
  offline_store = { s3_uri = "s3://mlplatform-demo-data/feature-store", kms_key_arn = "KEY" }
  role_arn      = "arn:aws:iam::123456789012:role/sagemaker-feature-store"
  depends_on    = [mlplatform_residency_guard.data]
}

resource "mlplatform_gpu_cluster" "train" {
  name          = "quickstart-train"
  instance_type = "p5en.48xlarge"
  node_count    = 2
  zone_id       = data.mlplatform_residency.this.allowed_zone_ids[0]
  image         = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
  root_volume   = { size_gib = 200 }
  kms_key_arn   = "KEY"
}

output "gpu_types" {
  value = data.mlplatform_instance_types.gpu.names
}
`, "KEY", key)
}

// takeCalls returns the AWS calls logged since the last reset, by
// service.Action, and their total; then it resets the log.
func takeCalls(h *acctest.Harness) (map[string]int, int) {
	counts := map[string]int{}
	n := 0
	for _, c := range h.Shim.Log() {
		if c.Fixture {
			continue
		}
		counts[c.Service+"."+c.Action]++
		n++
	}
	h.Shim.ResetLog()
	return counts, n
}

func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s x%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// TestAccPlanCalls_quickstart counts the AWS calls of plans of the
// quickstart (the shim's request log) and fails when a repeat comes back:
// the zones asked more than once per provider process, the catalog asked
// about a type twice or at all once cached, or a plan past its bound.
//
// A plan-only test step runs two plans, each one provider configuration
// (one Env, as one provider process): the first step's first plan starts
// with an empty catalog cache and its second finds it filled; the second
// step's two plans both find it filled.
func TestAccPlanCalls_quickstart(t *testing.T) {
	h := acctest.SetupSerial(t) // it empties the catalog cache (t.Setenv)
	createBucket(t, h, "mlplatform-demo-data", acctest.Region)
	key := createKey(t, h, acctest.Region)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // an empty catalog cache
	t.Setenv("MLPLATFORM_CATALOG_CACHE", "")

	var first, second map[string]int
	var firstN, secondN int
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				PreConfig:          func() { h.Shim.ResetLog() },
				Config:             quickstartConfig(h, key),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				PreConfig:          func() { first, firstN = takeCalls(h) },
				Config:             quickstartConfig(h, key),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				PreConfig: func() { second, secondN = takeCalls(h) },
				Config:    h.ProviderConfig(""),
			},
		},
	})
	if first == nil || second == nil {
		t.Fatal("the steps did not run: no call counts")
	}
	t.Logf("two plans, the first with an empty catalog cache: %d calls: %s", firstN, formatCounts(first))
	t.Logf("two plans with the catalog cache filled: %d calls: %s", secondN, formatCounts(second))

	// One DescribeAvailabilityZones per plan (per provider process),
	// however many consumers need the zones.
	for name, m := range map[string]map[string]int{"first step": first, "second step": second} {
		if n := m["ec2.DescribeAvailabilityZones"]; n != 2 {
			t.Errorf("%s: DescribeAvailabilityZones x%d in two plans, want 2 (one per provider process)", name, n)
		}
	}
	// Empty cache: the cluster's type and the data source's whole catalog,
	// at most one offerings and one DescribeInstanceTypes call each; the
	// plan after it asks nothing.
	for _, a := range []string{"ec2.DescribeInstanceTypeOfferings", "ec2.DescribeInstanceTypes"} {
		if n := first[a]; n < 1 || n > 2 {
			t.Errorf("first step: %s x%d, want 1 or 2 (the first plan; none in the second)", a, n)
		}
		if n := second[a]; n != 0 {
			t.Errorf("cache filled: %s x%d, want 0", a, n)
		}
	}
	// Beyond the catalog, the plans cost the same.
	catalogCalls := first["ec2.DescribeInstanceTypeOfferings"] + first["ec2.DescribeInstanceTypes"]
	if firstN-catalogCalls != secondN {
		t.Errorf("plans differ beyond the catalog: %d calls in the first step (%d for the catalog), %d in the second", firstN, catalogCalls, secondN)
	}
	if secondN > 2*maxQuickstartPlanCalls {
		t.Errorf("two plans of the quickstart made %d AWS calls, want at most %d each", secondN, maxQuickstartPlanCalls)
	}
	for a, n := range second {
		if n > 2 && !slices.Contains(repeatedPlanCalls, a) {
			t.Errorf("%s x%d in two plans: a repeat within a plan", a, n)
		}
	}
}

// maxQuickstartPlanCalls bounds the AWS calls of one plan of the quickstart
// with the catalog cached: the zones, the cluster's image (SSM parameter and
// DescribeImages) and subnet, the bucket's region once, its replication for
// the guard and for the feature store, the feature group's lookup, and the
// key for the feature store and for the cluster.
const maxQuickstartPlanCalls = 10

// repeatedPlanCalls are the calls one plan of the quickstart may make more
// than once: the bucket's replication, asked by the guard and by the feature
// store, and the key, asked by the feature store and by the cluster
// (replication and a multi-region key's replicas can change between checks,
// so neither is remembered).
var repeatedPlanCalls = []string{"s3.GetBucketReplication", "kms.DescribeKey"}

// TestAccPlanCalls_gpuClusterLoadsItsTypeOnly: a configuration whose only
// instance type is the GPU cluster's asks EC2 about that type alone.
func TestAccPlanCalls_gpuClusterLoadsItsTypeOnly(t *testing.T) {
	h := acctest.SetupSerial(t)             // it empties the catalog cache (t.Setenv)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // an empty catalog cache
	t.Setenv("MLPLATFORM_CATALOG_CACHE", "")
	var mu sync.Mutex
	asked := map[string][]string{}
	record := func(r *acctest.Request) {
		mu.Lock()
		defer mu.Unlock()
		for k, vs := range r.Form {
			if strings.HasPrefix(k, "InstanceType.") || (strings.HasPrefix(k, "Filter.") && strings.Contains(k, ".Value.")) {
				asked[r.Action] = append(asked[r.Action], vs...)
			}
		}
	}
	h.Shim.OnCall("ec2", "DescribeInstanceTypes", record)
	h.Shim.OnCall("ec2", "DescribeInstanceTypeOfferings", record)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig(acctest.AWSManagedKeys) + `
resource "mlplatform_gpu_cluster" "train" {
  name          = "lazy"
  instance_type = "p5en.48xlarge"
  node_count    = 2
  zone_id       = "mec1-az1"
  image         = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
  root_volume   = { size_gib = 200 }
}
`,
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}},
	})
	mu.Lock()
	defer mu.Unlock()
	for _, a := range []string{"DescribeInstanceTypeOfferings", "DescribeInstanceTypes"} {
		if got := asked[a]; !slices.Equal(got, []string{"p5en.48xlarge"}) {
			t.Errorf("%s asked about %v, want only p5en.48xlarge, once (two plans, the second from the cache)", a, got)
		}
	}
}
