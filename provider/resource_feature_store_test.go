package provider_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
)

const (
	featureStoreName   = "mlplatform_feature_store.this"
	featureStoreBucket = "uae-feature-store"
	featureStoreRole   = "arn:aws:iam::123456789012:role/feature-store"
)

// Feature lists used across steps.
const (
	fsFeatures = `
    { name = "customer_id", type = "String" },
    { name = "event_time", type = "Fractional" },
    { name = "age", type = "Integral" },`
	fsFeaturesPlusScore = fsFeatures + `
    { name = "risk_score", type = "Fractional" },`
	fsFeaturesNoAge = `
    { name = "customer_id", type = "String" },
    { name = "event_time", type = "Fractional" },`
	fsFeaturesAgeAsString = `
    { name = "customer_id", type = "String" },
    { name = "event_time", type = "Fractional" },
    { name = "age", type = "String" },`
)

// featureStoreConfig is a feature group with an online store (TTL) and an
// offline store (always: moto-era configurations carry one) encrypted with
// key. extra goes inside the resource block.
func featureStoreConfig(h *acctest.Harness, key, features, ttlDays, extra string) string {
	return h.ProviderConfig("require_customer_managed_keys = true") + fmt.Sprintf(`
resource "mlplatform_feature_store" "this" {
  name                           = "customers"
  description                    = "Customer risk features"
  record_identifier_feature_name = "customer_id"
  event_time_feature_name        = "event_time"
  features = [%s
  ]
  online_store = {
    enabled     = true
    kms_key_arn = %q
    ttl         = { unit = "Days", value = %s }
  }
  offline_store = {
    s3_uri      = "s3://%s/customers"
    kms_key_arn = %q
  }
  role_arn = %q
  tags     = { team = "risk" }
%s
}
`, features, key, ttlDays, featureStoreBucket, key, featureStoreRole, extra)
}

// featureStoreFixtures makes the in-region bucket and the team's key.
func featureStoreFixtures(t *testing.T, h *acctest.Harness) string {
	t.Helper()
	createBucket(t, h, featureStoreBucket, acctest.Region)
	return createKey(t, h, acctest.Region)
}

func sageMakerCalls(h *acctest.Harness, action string) int {
	n := 0
	for _, c := range h.Shim.Calls("sagemaker", action) {
		if !c.Fixture {
			n++
		}
	}
	return n
}

func TestAccFeatureStore_basic(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFeatureStoreGone(h, "customers"),
		Steps: []resource.TestStep{{
			Config: featureStoreConfig(h, key, fsFeatures, "30", ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(featureStoreName, plancheck.ResourceActionCreate),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(featureStoreName, "id", "customers"),
				resource.TestCheckResourceAttr(featureStoreName, "arn", "arn:aws:sagemaker:me-central-1:123456789012:feature-group/customers"),
				resource.TestCheckResourceAttr(featureStoreName, "status", "Created"),
				resource.TestCheckResourceAttr(featureStoreName, "features.#", "3"),
				resource.TestCheckTypeSetElemNestedAttrs(featureStoreName, "features.*", map[string]string{"name": "age", "type": "Integral"}),
				resource.TestCheckResourceAttr(featureStoreName, "online_store.ttl.value", "30"),
				resource.TestCheckResourceAttr(featureStoreName, "offline_store.kms_key_arn", key),
				resource.TestCheckResourceAttr(featureStoreName, "offline_store_database_name", "sagemaker_featurestore"),
				resource.TestMatchResourceAttr(featureStoreName, "offline_store_table_name", regexp.MustCompile(`^customers_\d+$`)),
				resource.TestMatchResourceAttr(featureStoreName, "offline_store_resolved_s3_uri", regexp.MustCompile(`^s3://uae-feature-store/customers/`)),
				resource.TestCheckResourceAttrSet(featureStoreName, "creation_time"),
				resource.TestCheckResourceAttr(featureStoreName, "tags_all.team", "risk"),
				resource.TestCheckResourceAttr(featureStoreName, "throughput.mode", "OnDemand"),
				resource.TestCheckResourceAttr(featureStoreName, "allow_destructive_changes", "false"),
				func(*terraform.State) error {
					// Create waited: the group was Creating on the first describe.
					if n := sageMakerCalls(h, "DescribeFeatureGroup"); n < 2 {
						return fmt.Errorf("create polled DescribeFeatureGroup %d times, want at least 2", n)
					}
					return nil
				},
			),
		}},
	})
}

// Adding a feature (and changing the TTL) is an update in place: the same
// group, ARN and creation time, and UpdateFeatureGroup rather than a delete.
func TestAccFeatureStore_addFeatureInPlace(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	sameARN := statecheck.CompareValue(compare.ValuesSame())
	sameCreation := statecheck.CompareValue(compare.ValuesSame())
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFeatureStoreGone(h, "customers"),
		Steps: []resource.TestStep{
			{
				Config: featureStoreConfig(h, key, fsFeatures, "30", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					sameARN.AddStateValue(featureStoreName, tfjsonpath.New("arn")),
					sameCreation.AddStateValue(featureStoreName, tfjsonpath.New("creation_time")),
				},
			},
			{
				Config: featureStoreConfig(h, key, fsFeaturesPlusScore, "60", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(featureStoreName, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					sameARN.AddStateValue(featureStoreName, tfjsonpath.New("arn")),
					sameCreation.AddStateValue(featureStoreName, tfjsonpath.New("creation_time")),
					statecheck.ExpectKnownValue(featureStoreName, tfjsonpath.New("features"), knownvalue.SetPartial([]knownvalue.Check{
						knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact("risk_score")}),
					})),
					statecheck.ExpectKnownValue(featureStoreName, tfjsonpath.New("online_store").AtMapKey("ttl").AtMapKey("value"), knownvalue.Int64Exact(60)),
				},
				Check: func(*terraform.State) error {
					if n := sageMakerCalls(h, "DeleteFeatureGroup"); n != 0 {
						return fmt.Errorf("adding a feature deleted the group (%d DeleteFeatureGroup calls)", n)
					}
					if n := sageMakerCalls(h, "CreateFeatureGroup"); n != 1 {
						return fmt.Errorf("%d CreateFeatureGroup calls, want 1", n)
					}
					if n := sageMakerCalls(h, "UpdateFeatureGroup"); n != 2 {
						return fmt.Errorf("%d UpdateFeatureGroup calls, want 2 (the addition, then the TTL)", n)
					}
					return nil
				},
			},
			{
				// Reordering the features is no change at all: features is a set,
				// so the plan is empty (it was a rename/retype diff of a list).
				Config: featureStoreConfig(h, key, strings.Replace(fsFeaturesPlusScore, `
    { name = "age", type = "Integral" },`, "", 1)+`
    { name = "age", type = "Integral" },`, "60", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(featureStoreName, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					sameCreation.AddStateValue(featureStoreName, tfjsonpath.New("creation_time")),
				},
				Check: func(*terraform.State) error {
					if n := sageMakerCalls(h, "UpdateFeatureGroup") + sageMakerCalls(h, "DeleteFeatureGroup") + sageMakerCalls(h, "CreateFeatureGroup"); n != 3 {
						return fmt.Errorf("reordering made feature group calls (%d in all, want the 3 of before)", n)
					}
					return nil
				},
			},
		},
	})
}

// Removing or retyping a feature, or moving the offline store, is refused at
// plan without allow_destructive_changes, and nothing is written.
func TestAccFeatureStore_destructiveRefused(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	createBucket(t, h, "uae-feature-store-2", acctest.Region)
	words := func(s string) string { return strings.Join(strings.Fields(regexp.QuoteMeta(s)), `\s+`) }
	refusal := func(attr, what string) *regexp.Regexp {
		return regexp.MustCompile(`(?s)Destructive change to feature store \(customers\).*` + attr + `.*` + words(what) +
			`.*` + words("the data in the offline store table for removed or retyped features will be lost") +
			`.*` + words("set allow_destructive_changes = true"))
	}
	var writesAfterCreate int
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFeatureStoreGone(h, "customers"),
		Steps: []resource.TestStep{
			{
				Config: featureStoreConfig(h, key, fsFeatures, "30", ""),
				Check: func(*terraform.State) error {
					writesAfterCreate = len(h.Shim.Writes())
					return nil
				},
			},
			{
				Config:      featureStoreConfig(h, key, fsFeaturesNoAge, "30", ""),
				ExpectError: refusal(`features: `, `feature "age" (Integral) is removed`),
			},
			{
				Config:      featureStoreConfig(h, key, fsFeaturesAgeAsString, "30", ""),
				ExpectError: refusal(`features: `, `feature "age" changes type from Integral to String`),
			},
			{
				Config:      strings.Replace(featureStoreConfig(h, key, fsFeatures, "30", ""), "s3://"+featureStoreBucket+"/", "s3://uae-feature-store-2/", 1),
				ExpectError: refusal(`offline_store\.s3_uri: `, `the offline store moves`),
			},
			{
				Config: featureStoreConfig(h, key, fsFeatures, "30", ""),
				Check: func(*terraform.State) error {
					if n := len(h.Shim.Writes()); n != writesAfterCreate {
						return fmt.Errorf("refused plans made %d write calls", n-writesAfterCreate)
					}
					return nil
				},
			},
		},
	})
}

// With allow_destructive_changes the group is deleted, waited for, and
// created again without the removed feature.
func TestAccFeatureStore_destructiveAllowed(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	allow := "  allow_destructive_changes = true"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFeatureStoreGone(h, "customers"),
		Steps: []resource.TestStep{
			{
				Config: featureStoreConfig(h, key, fsFeatures, "30", allow),
			},
			{
				Config: featureStoreConfig(h, key, fsFeaturesAgeAsString, "30", allow),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(featureStoreName, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(featureStoreName, "features.#", "3"),
					resource.TestCheckTypeSetElemNestedAttrs(featureStoreName, "features.*", map[string]string{"name": "age", "type": "String"}),
					resource.TestCheckResourceAttr(featureStoreName, "status", "Created"),
					func(*terraform.State) error {
						if d, c := sageMakerCalls(h, "DeleteFeatureGroup"), sageMakerCalls(h, "CreateFeatureGroup"); d != 1 || c != 2 {
							return fmt.Errorf("%d deletes and %d creates, want 1 and 2", d, c)
						}
						// The delete was waited for: the group was seen Deleting and then gone
						// before it was created again (the shim refuses a create while Deleting).
						return nil
					},
				),
			},
			{
				Config: featureStoreConfig(h, key, fsFeaturesNoAge, "30", allow),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(featureStoreName, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.TestCheckResourceAttr(featureStoreName, "features.#", "2"),
			},
		},
	})
}

func TestAccFeatureStore_import(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFeatureStoreGone(h, "customers"),
		Steps: []resource.TestStep{
			{Config: featureStoreConfig(h, key, fsFeatures, "30", "")},
			{
				ResourceName:            featureStoreName,
				ImportState:             true,
				ImportStateId:           "customers",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts", "allow_destructive_changes"},
			},
		},
	})
}

// A group deleted outside Terraform leaves the state on refresh and is
// planned for creation again.
func TestAccFeatureStore_disappears(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: featureStoreConfig(h, key, fsFeatures, "30", ""),
			Check: func(*terraform.State) error {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c, err := h.Clients(ctx, acctest.Region)
				if err != nil {
					return err
				}
				if _, err := c.SageMaker.DeleteFeatureGroup(ctx, &sagemaker.DeleteFeatureGroupInput{FeatureGroupName: aws.String("customers")}); err != nil {
					return fmt.Errorf("deleting the feature group behind Terraform's back: %w", err)
				}
				return nil
			},
			ExpectNonEmptyPlan: true,
		}},
	})
}

// The offline store's bucket lies in eu-west-1: the plan fails naming the
// attribute and the bucket's region, and no write call is made.
func TestAccFeatureStore_offlineStoreOutsideJurisdiction(t *testing.T) {
	h := acctest.Setup(t)
	key := createKey(t, h, acctest.Region)
	createBucket(t, h, "eu-feature-store", "eu-west-1")
	h.Shim.ResetLog()
	cfg := strings.Replace(featureStoreConfig(h, key, fsFeatures, "30", ""), "s3://"+featureStoreBucket+"/", "s3://eu-feature-store/", 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      cfg,
			ExpectError: regexp.MustCompile(`(?s)Residency violation: s3-bucket-region.*offline_store.s3_uri.*eu-feature-store.*eu-west-1`),
		}},
	})
	checkNoWrites(t, h)
	if n := len(h.Shim.Calls("s3", "GetBucketLocation")); n == 0 {
		t.Fatal("the plan never asked where the bucket is (no GetBucketLocation call)")
	}
}

// checkFeatureStoreGone is a CheckDestroy: the group must be gone (deleted
// and waited for).
func checkFeatureStoreGone(h *acctest.Harness, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		out, err := c.SageMaker.ListFeatureGroups(ctx, &sagemaker.ListFeatureGroupsInput{NameContains: aws.String(name)})
		if err != nil {
			return fmt.Errorf("listing feature groups: %w", err)
		}
		if len(out.FeatureGroupSummaries) > 0 {
			return fmt.Errorf("feature group %s still exists (%s)", name, out.FeatureGroupSummaries[0].FeatureGroupStatus)
		}
		return nil
	}
}

// The documentation examples apply as written (with the fixture key and
// bucket in place of the placeholders), so they cannot drift from the schema.
func TestAccFeatureStore_examples(t *testing.T) {
	t.Run("resource", func(t *testing.T) {
		h := acctest.Setup(t)
		key := featureStoreFixtures(t, h)
		example := readExample(t, "../examples/resources/mlplatform_feature_store/resource.tf")
		example = regexp.MustCompile(`arn:aws:kms:me-central-1:123456789012:key/[0-9a-f-]+`).ReplaceAllString(example, key)
		resource.Test(t, resource.TestCase{
			PreCheck:                 func() { acctest.PreCheck(t) },
			ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
			CheckDestroy:             checkFeatureStoreGone(h, "customers"),
			Steps: []resource.TestStep{{
				Config: h.ProviderConfig("require_customer_managed_keys = true") + example,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("mlplatform_feature_store.customers", "status", "Created"),
					resource.TestCheckResourceAttr("mlplatform_feature_store.customers", "offline_store.table_format", "Iceberg"),
				),
			}},
		})
	})
	t.Run("complete", func(t *testing.T) {
		// The example's provider block has no endpoints: the harness's
		// AWS_ENDPOINT_URL routes its calls, so it runs alone.
		h := acctest.SetupSerial(t)
		key := featureStoreFixtures(t, h)
		example := readExample(t, "../examples/feature-store/main.tf")
		// The test serves the provider in process: drop the registry source,
		// and let the endpoint environment of the harness route the calls.
		example = regexp.MustCompile(`(?s)\nterraform \{.*?\n\}\n`).ReplaceAllString(example, "\n")
		resource.Test(t, resource.TestCase{
			PreCheck:                 func() { acctest.PreCheck(t) },
			ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
			CheckDestroy:             checkFeatureStoreGone(h, "customers"),
			Steps: []resource.TestStep{{
				Config: example,
				ConfigVariables: config.Variables{
					"kms_key_arn":    config.StringVariable(key),
					"offline_bucket": config.StringVariable(featureStoreBucket),
					"role_arn":       config.StringVariable(featureStoreRole),
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("mlplatform_feature_store.customers", "features.#", "5"),
					resource.TestCheckResourceAttr("mlplatform_feature_store.customers", "tags_all.owner", "ml-platform"),
					resource.TestCheckOutput("feature_group_arn", "arn:aws:sagemaker:me-central-1:123456789012:feature-group/customers"),
					resource.TestMatchOutput("offline_store_table", regexp.MustCompile(`^sagemaker_featurestore\.customers_\d+$`)),
				),
			}},
		})
	})
}

func readExample(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A group that is created but cannot be seen becoming ready is recorded (and
// so tainted and later deleted), never orphaned; the diagnostic carries the
// cause.
func TestAccFeatureStore_createNotReady(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	// Armed after the create, so that the plan's own lookup is not harmed.
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{
		Action: "DescribeFeatureGroup", Armed: acctest.AfterCall(h.Shim, "CreateFeatureGroup"), Times: 1,
		Code: "AccessDeniedException", Message: "not authorized to perform sagemaker:DescribeFeatureGroup",
	}))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		// Destroying the tainted resource deletes the group.
		CheckDestroy: checkFeatureStoreGone(h, "customers"),
		Steps: []resource.TestStep{{
			Config:      featureStoreConfig(h, key, fsFeatures, "30", ""),
			ExpectError: regexp.MustCompile(`(?s)creating feature store \(customers\).*was\s+created.*was\s+not\s+seen\s+ready.*not\s+authorized\s+to\s+perform\s+sagemaker:DescribeFeatureGroup`),
		}},
	})
}
