package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/mlplatform/mlplatform/acctest"
)

// Faults between the provider and the emulator during create, update and
// delete of a feature store. Each test ends with the destroy of
// terraform-plugin-testing and checks that nothing is left (0 orphans), and
// counts CreateFeatureGroup and DeleteFeatureGroup calls (0 replacements).

// words matches s with any run of whitespace where s has a space (Terraform
// wraps diagnostics).
func words(s string) string { return strings.Join(strings.Fields(regexp.QuoteMeta(s)), `\s+`) }

func expectCalls(h *acctest.Harness, creates, deletes int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if c, d := acctest.CountOK(h.Shim, "CreateFeatureGroup"), acctest.CountOK(h.Shim, "DeleteFeatureGroup"); c != creates || d != deletes {
			return fmt.Errorf("%d feature groups created and %d deleted, want %d and %d", c, d, creates, deletes)
		}
		return nil
	}
}

// The create succeeds at the service but its answer is lost (a 500), after
// two throttling errors: the SDK's retry is told the name is taken, and the
// provider adopts the group because it carries this create's token. Before,
// the apply failed with "already exists" and left the group outside state.
func TestAccFeatureStore_createLostResponse(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	h.Shim.Inject(acctest.Fault{Service: "sagemaker", Action: "CreateFeatureGroup", Code: "ThrottlingException", Message: "Rate exceeded", Times: 1})
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "CreateFeatureGroup", LoseResponse: true, Times: 1}))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFeatureStoreGone(h, "customers"),
		Steps: []resource.TestStep{
			{
				Config: featureStoreConfig(h, key, fsFeatures, "30", ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(featureStoreName, "status", "Created"),
					resource.TestCheckResourceAttr(featureStoreName, "tags_all.%", "1"), // the token tag stays out of the tags
					func(*terraform.State) error {
						if n := len(h.Shim.Calls("sagemaker", "CreateFeatureGroup")); n != 3 {
							return fmt.Errorf("%d CreateFeatureGroup calls, want 3 (throttled, answer lost, retried)", n)
						}
						if n := len(h.Shim.Calls("sagemaker", "DeleteFeatureGroup")); n != 0 {
							return fmt.Errorf("%d DeleteFeatureGroup calls, want 0", n)
						}
						return nil
					},
				),
			},
			{
				// Re-apply: nothing to do.
				Config:             featureStoreConfig(h, key, fsFeatures, "30", ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: false,
			},
		},
	})
}

// A group of the name that this resource did not create (no matching token)
// is refused at plan, with "import it", and is left alone.
func TestAccFeatureStore_createRefusesForeignGroup(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SageMaker.CreateFeatureGroup(ctx, &sagemaker.CreateFeatureGroupInput{
		FeatureGroupName:            aws.String("customers"),
		RecordIdentifierFeatureName: aws.String("id"),
		EventTimeFeatureName:        aws.String("ts"),
		FeatureDefinitions: []smtypes.FeatureDefinition{
			{FeatureName: aws.String("id"), FeatureType: smtypes.FeatureTypeString},
			{FeatureName: aws.String("ts"), FeatureType: smtypes.FeatureTypeFractional},
		},
		OnlineStoreConfig: &smtypes.OnlineStoreConfig{EnableOnlineStore: aws.Bool(true)},
	})
	if err != nil {
		t.Fatalf("creating another configuration's feature group: %v", err)
	}
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      featureStoreConfig(h, key, fsFeatures, "30", ""),
			ExpectError: regexp.MustCompile(`(?s)Feature store \(customers\) already exists.*` + words("import it")),
		}},
	})
	checkNoWrites(t, h)
	if _, err := c.SageMaker.DescribeFeatureGroup(ctx, &sagemaker.DescribeFeatureGroupInput{FeatureGroupName: aws.String("customers")}); err != nil {
		t.Fatalf("the other configuration's group is gone: %v", err)
	}
}

// The create times out while the group is still Creating: the group is
// recorded (tainted by Terraform). The next plan refuses to replace it and
// says how to proceed; destroy then deletes it. Before, the next apply
// deleted and recreated the group without allow_destructive_changes.
func TestAccFeatureStore_createTimeoutNotReplaced(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	// The group stays Creating after the create until the test releases
	// it, after the create timed out: the timeout runs out while the create
	// waits, however fast the machine and whatever the poll interval.
	creating := acctest.NewHold(t)
	created := acctest.AfterCall(h.Shim, "CreateFeatureGroup")
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{
		Action: "DescribeFeatureGroup", Armed: func() bool { return created() && !creating.Released() }, Statuses: []string{"Creating"},
	}))
	cfg := featureStoreConfig(h, key, fsFeatures, "30", `  timeouts = { create = "1s" }`)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkFeatureStoreGone(h, "customers"), expectCalls(h, 1, 1)),
		Steps: []resource.TestStep{
			{
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)creating feature store \(customers\).*` + words("was created") + `.*` + words("recorded in state") + `.*untaint`),
			},
			{
				PreConfig:   creating.Release, // SageMaker finishes the create
				Config:      cfg,
				ExpectError: regexp.MustCompile(`(?s)Feature store \(customers\) already exists.*tainted.*untaint.*allow_destructive_changes`),
				Check:       expectCalls(h, 1, 0),
			},
		},
	})
}

// A feature group is never replaced because it is tainted: the plan is
// refused and says how to proceed; with allow_destructive_changes it is.
func TestAccFeatureStore_taintRefused(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	var writes int
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFeatureStoreGone(h, "customers"),
		Steps: []resource.TestStep{
			{
				Config: featureStoreConfig(h, key, fsFeatures, "30", ""),
				Check:  func(*terraform.State) error { writes = len(h.Shim.Writes()); return nil },
			},
			{
				Taint:       []string{featureStoreName},
				Config:      featureStoreConfig(h, key, fsFeatures, "30", ""),
				ExpectError: regexp.MustCompile(`(?s)Feature store \(customers\) already exists.*` + words("terraform untaint") + `.*allow_destructive_changes`),
			},
			{
				Config: featureStoreConfig(h, key, fsFeatures, "30", ""),
				PreConfig: func() {
					if n := len(h.Shim.Writes()); n != writes {
						t.Errorf("the refused plan made %d write calls", n-writes)
					}
				},
				ExpectError: regexp.MustCompile(`(?s)already exists.*untaint`),
			},
			{
				Config: featureStoreConfig(h, key, fsFeatures, "30", "  allow_destructive_changes = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(featureStoreName, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: expectCalls(h, 2, 1),
			},
		},
	})
}

// SageMaker failed to create the group (CreateFailed): the plan shows it and
// fails saying what to do; with allow_destructive_changes the group is
// replaced. Before, CreateFailed was kept silently with an empty plan.
func TestAccFeatureStore_createFailedRepaired(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	armed := false
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{
		Action: "DescribeFeatureGroup", Armed: func() bool { return armed && acctest.CountOK(h.Shim, "DeleteFeatureGroup") == 0 },
		Statuses: []string{"CreateFailed"}, FailureReason: "role cannot write to the offline store bucket",
	}))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFeatureStoreGone(h, "customers"),
		Steps: []resource.TestStep{
			{Config: featureStoreConfig(h, key, fsFeatures, "30", "")},
			{
				PreConfig:   func() { armed = true },
				Config:      featureStoreConfig(h, key, fsFeatures, "30", ""),
				ExpectError: regexp.MustCompile(`(?s)Feature store \(customers\) is CreateFailed.*` + words("role cannot write") + `.*` + words("allow_destructive_changes = true")),
			},
			{
				Config: featureStoreConfig(h, key, fsFeatures, "30", "  allow_destructive_changes = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(featureStoreName, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(featureStoreName, "status", "Created"),
					expectCalls(h, 2, 1),
				),
			},
		},
	})
}

// A deletion started outside Terraform that then fails: the refresh waits
// for its outcome and keeps the group (DeleteFailed), the plan reports it,
// and destroy deletes it. Before, a group read as Deleting was dropped from
// state and, once its deletion failed, orphaned.
func TestAccFeatureStore_deleteFailedKept(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	armed := false
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{
		Action: "DescribeFeatureGroup", Armed: func() bool { return armed && acctest.CountOK(h.Shim, "DeleteFeatureGroup") == 0 },
		Statuses: []string{"Deleting", "DeleteFailed"}, FailureReason: "the offline store's Glue table could not be deleted",
	}))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkFeatureStoreGone(h, "customers"), expectCalls(h, 1, 1)),
		Steps: []resource.TestStep{
			{Config: featureStoreConfig(h, key, fsFeatures, "30", "")},
			{
				PreConfig:   func() { armed = true },
				Config:      featureStoreConfig(h, key, fsFeatures, "30", ""),
				ExpectError: regexp.MustCompile(`(?s)Feature store \(customers\) is DeleteFailed.*` + words("Glue table could not be deleted") + `.*destroy`),
			},
		},
	})
}

// An update whose answer is lost (the feature was added, the client saw a
// 500 and its retry was refused) completes; a delete whose answer is lost
// too. Before, the apply failed with "feature already exists".
func TestAccFeatureStore_updateAndDeleteLostResponse(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "UpdateFeatureGroup", LoseResponse: true, Times: 1}))
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: "DeleteFeatureGroup", LoseResponse: true, Times: 1}))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkFeatureStoreGone(h, "customers"), expectCalls(h, 1, 1)),
		Steps: []resource.TestStep{
			{Config: featureStoreConfig(h, key, fsFeatures, "30", "")},
			{
				Config: featureStoreConfig(h, key, fsFeaturesPlusScore, "30", ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(featureStoreName, "features.#", "4"),
					expectCalls(h, 1, 0),
				),
			},
		},
	})
}

// An update interrupted by its timeout while SageMaker still applies it is
// finished by the next apply, in place.
func TestAccFeatureStore_updateTimeoutFinished(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	// The update lands and its wait sees it InProgress; the wait's next look
	// (the double would answer Successful) is held until the next step: the
	// update's 1s timeout, which bounds the wait, runs out while SageMaker
	// still applies the update, on any machine and at any poll interval.
	var step atomic.Int32
	lookedSinceUpdate := func() bool {
		n := -1 // no update yet
		for _, c := range h.Shim.Log() {
			switch {
			case c.Fixture || c.Service != "sagemaker":
			case c.Action == "UpdateFeatureGroup" && c.Status == http.StatusOK:
				n = 0
			case c.Action == "DescribeFeatureGroup" && n >= 0:
				n++
			}
		}
		return n >= 1
	}
	hold := acctest.NewHold(t)
	t.Cleanup(h.Shim.AddServedRule(acctest.FaultRule{
		Service: "sagemaker", Action: "DescribeFeatureGroup", Times: 1, Hold: hold,
		Match: func(*acctest.Request) bool { return step.Load() == 2 && lookedSinceUpdate() },
	}))
	plus := featureStoreConfig(h, key, fsFeaturesPlusScore, "30", `  timeouts = { update = "1s" }`)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkFeatureStoreGone(h, "customers"), expectCalls(h, 1, 1)),
		Steps: []resource.TestStep{
			{Config: featureStoreConfig(h, key, fsFeatures, "30", `  timeouts = { update = "1s" }`)},
			{PreConfig: func() { step.Store(2) }, Config: plus, ExpectError: regexp.MustCompile(`(?s)updating feature store \(customers\)`)},
			{
				PreConfig: func() {
					step.Store(3)
					landHeld(t, hold) // the held look is answered: the update is done
				},
				Config: plus,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(featureStoreName, "features.#", "4"),
					expectCalls(h, 1, 0),
				),
			},
		},
	})
}

// 4294967297 does not fit SageMaker's 32-bit integer: refused at plan on its
// attribute. Before, it was sent as 1 without a word.
func TestAccFeatureStore_ttlOutOfRange(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      featureStoreConfig(h, key, fsFeatures, "4294967297", ""),
			ExpectError: regexp.MustCompile(`(?s)online_store.ttl.value.*` + words("TTL value must be between 1 and 2147483647 (got 4294967297)")),
		}},
	})
	checkNoWrites(t, h)
}

// A description of 128 two-byte characters is within SageMaker's limit of
// 128 characters. Before, its 256 bytes were counted and the plan refused.
func TestAccFeatureStore_descriptionCharacters(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	cfg := strings.Replace(featureStoreConfig(h, key, fsFeatures, "30", ""), `"Customer risk features"`, `"`+strings.Repeat("é", 128)+`"`, 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{Config: cfg, PlanOnly: true, ExpectNonEmptyPlan: true},
			{
				Config:      strings.Replace(cfg, `"`+strings.Repeat("é", 128)+`"`, `"`+strings.Repeat("é", 129)+`"`, 1),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(words("description is 129 characters long; at most 128 are allowed")),
			},
		},
	})
}

// An invalid value inside a nested attribute names its attribute: the online
// store's key is told from the offline store's. Before, both read "Invalid
// feature store" at the resource's header.
func TestAccFeatureStore_nestedAttributePaths(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	cfg := featureStoreConfig(h, key, fsFeatures, "30", "")
	online := strings.Replace(cfg, "kms_key_arn = \""+key+"\"\n    ttl", "kms_key_arn = \"not-a-key\"\n    ttl", 1)
	offline := strings.Replace(cfg, "kms_key_arn = \""+key+"\"\n  }\n  role_arn", "kms_key_arn = \"not-a-key\"\n  }\n  role_arn", 1)
	if online == cfg || offline == cfg {
		t.Fatal("the configuration changed shape: the keys were not replaced")
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{Config: online, PlanOnly: true, ExpectError: regexp.MustCompile(`Invalid feature store: online_store\.kms_key_arn`)},
			{Config: offline, PlanOnly: true, ExpectError: regexp.MustCompile(`Invalid feature store: offline_store\.kms_key_arn`)},
		},
	})
}

// A group recorded while still Creating (an apply interrupted, then
// untainted) is finished by the next apply in place: the plan shows an
// update, the apply waits for Created. Before, the plan was empty and the
// group stayed recorded as Creating.
func TestAccFeatureStore_creatingFinishedInPlace(t *testing.T) {
	h := acctest.Setup(t)
	key := featureStoreFixtures(t, h)
	armed := false
	t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{
		Action: "DescribeFeatureGroup", Armed: func() bool { return armed }, Times: 2, Statuses: []string{"Creating"},
	}))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkFeatureStoreGone(h, "customers"), expectCalls(h, 1, 1)),
		Steps: []resource.TestStep{
			{Config: featureStoreConfig(h, key, fsFeatures, "30", "")},
			{
				PreConfig: func() { armed = true },
				Config:    featureStoreConfig(h, key, fsFeatures, "30", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(featureStoreName, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(featureStoreName, "status", "Created"),
					expectCalls(h, 1, 0),
				),
			},
		},
	})
}
