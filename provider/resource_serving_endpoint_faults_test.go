package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
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

// Faults between the provider and the emulator while a serving endpoint is
// created. Each test ends with the destroy of terraform-plugin-testing and
// checks that no endpoint, config or model is left (0 orphans).

func expectServingCalls(h *acctest.Harness, creates, deletes int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if c, d := acctest.CountOK(h.Shim, "CreateEndpoint"), acctest.CountOK(h.Shim, "DeleteEndpoint"); c != creates || d != deletes {
			return fmt.Errorf("%d endpoints created and %d deleted, want %d and %d", c, d, creates, deletes)
		}
		return nil
	}
}

// Every create call is served but its answer lost (a 500), the endpoint's
// after a throttling error too: the SDK's retries are told the names are
// taken, and the provider goes on with what it made (the model and config
// by their fresh names, the endpoint by its creation token).
func TestAccServingEndpoint_createLostResponse(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	h.Shim.Inject(acctest.Fault{Service: "sagemaker", Action: "CreateEndpoint", Code: "ThrottlingException", Message: "Rate exceeded", Times: 1})
	for _, action := range []string{"CreateModel", "CreateEndpointConfig", "CreateEndpoint"} {
		t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: action, LoseResponse: true, Times: 1}))
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.g6.xlarge", 1, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "status", "InService"),
					resource.TestCheckResourceAttr(servingName, "tags_all.%", "1"), // the token stays out of the tags
					func(*terraform.State) error {
						if n := len(h.Shim.Calls("sagemaker", "CreateEndpoint")); n != 3 {
							return fmt.Errorf("%d CreateEndpoint calls, want 3 (throttled, answer lost, retried)", n)
						}
						if n := len(h.Shim.Calls("sagemaker", "CreateEndpointConfig")); n < 2 {
							return fmt.Errorf("%d CreateEndpointConfig calls, want the lost one and its retry", n)
						}
						if cs := h.SageMakerEndpoints.Configs(acctest.Region); len(cs) != 1 {
							return fmt.Errorf("endpoint configs %v, want one", cs)
						}
						return nil
					},
				),
			},
			{Config: servingConfig(h, servingImage, "ml.g6.xlarge", 1, ""), PlanOnly: true},
		},
	})
}

// The create is interrupted by its timeout while the endpoint is still
// coming up: the endpoint is recorded (Terraform taints it), never
// orphaned; the next apply replaces it, deleting the old endpoint, config
// and model, and nothing is left after destroy.
func TestAccServingEndpoint_createInterrupted(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	// The first look of the create's wait is held until the next step:
	// the create's 1s timeout (which bounds the wait) runs out while the
	// endpoint is coming up, on any machine and at any poll interval.
	created := acctest.AfterCall(h.Shim, "CreateEndpoint")
	hold := acctest.NewHold(t)
	t.Cleanup(h.Shim.AddServedRule(acctest.FaultRule{
		Service: "sagemaker", Action: "DescribeEndpoint", Times: 1, Hold: hold, Match: func(*acctest.Request) bool { return created() },
	}))
	var firstConfig string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config:      servingConfig(h, servingImage, "ml.m5.large", 1, `  timeouts = { create = "1s" }`),
				ExpectError: regexp.MustCompile(`(?s)creating serving endpoint \(fraud\).*` + words("was created") + `.*` + words("not seen in service")),
			},
			{
				PreConfig: func() {
					if n := hold.Arrived(); n != 1 {
						t.Fatalf("%d looks of the create's wait were held when its timeout ran out, want 1", n)
					}
					landHeld(t, hold) // the held look lands
					cs := h.SageMakerEndpoints.Configs(acctest.Region)
					if len(cs) != 1 {
						t.Errorf("endpoint configs after the interrupted create: %v, want one", cs)
					} else {
						firstConfig = cs[0]
					}
				},
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					expectServingCalls(h, 2, 1),
					func(*terraform.State) error {
						if cs := h.SageMakerEndpoints.Configs(acctest.Region); len(cs) != 1 || slices.Contains(cs, firstConfig) {
							return fmt.Errorf("endpoint configs %v: want one, not the recorded %s", cs, firstConfig)
						}
						return nil
					},
				),
			},
		},
	})
}

// An endpoint of the name that this resource did not create (no ownership
// tag) is refused at plan, on the name, with "import it": zero AWS writes,
// one DescribeEndpoint per plan, and the endpoint left alone.
func TestAccServingEndpoint_createRefusesForeignEndpoint(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SageMaker.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{
		EndpointConfigName: aws.String("theirs"),
		ProductionVariants: []smtypes.ProductionVariant{{VariantName: aws.String("a"), ModelName: aws.String("m"), InstanceType: "ml.m5.large", InitialInstanceCount: aws.Int32(1)}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SageMaker.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String("fraud"), EndpointConfigName: aws.String("theirs")}); err != nil {
		t.Fatal(err)
	}
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      servingConfig(h, servingImage, "ml.m5.large", 1, ""),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Invalid serving endpoint: name.*` + words("an endpoint of that name already exists") + `.*` + words("made outside this provider") + `.*` + words("import it")),
		}},
	})
	for _, c := range h.Shim.Writes() {
		t.Errorf("the refused plan wrote: %v", c)
	}
	if n := len(h.Shim.Calls("sagemaker", "DescribeEndpoint")); n != 1 {
		t.Errorf("%d DescribeEndpoint calls for one planned create, want 1", n)
	}
	if cs := h.SageMakerEndpoints.Configs(acctest.Region); !slices.Equal(cs, []string{"theirs"}) {
		t.Errorf("endpoint configs %v, want only the other configuration's", cs)
	}
	if n := len(h.Shim.Calls("sagemaker", "DeleteEndpoint")); n != 0 {
		t.Errorf("%d DeleteEndpoint calls on an endpoint this resource did not make", n)
	}
	ms, err := c.SageMaker.ListModels(ctx, &sagemaker.ListModelsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms.Models) != 0 {
		t.Errorf("%d models left by the refused create", len(ms.Models))
	}
}

// The answers of UpdateEndpoint and of every delete call are lost (served,
// then a 500): the SDK's retries are refused (the update is in progress) or
// find the thing gone, and the provider goes on from what the endpoint says.
// The blue/green update completes, and destroy leaves nothing.
func TestAccServingEndpoint_updateAndDeleteLostResponse(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	var firstConfig string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkServingGone(h), expectServingCalls(h, 1, 1)),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				Check: resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error {
					firstConfig = v
					for _, action := range []string{"UpdateEndpoint", "DeleteEndpointConfig", "DeleteEndpoint"} {
						t.Cleanup(acctest.InjectSageMaker(h.Shim, acctest.SageMakerFault{Action: action, LoseResponse: true, Times: 1}))
					}
					return nil
				}),
			},
			{
				Config: servingConfig(h, servingImage2, "ml.m5.large", 1, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "model.image", servingImage2),
					resource.TestCheckResourceAttr(servingName, "last_deployment_outcome", "Updated"),
					func(*terraform.State) error {
						if n := len(h.Shim.Calls("sagemaker", "UpdateEndpoint")); n < 2 {
							return fmt.Errorf("%d UpdateEndpoint calls, want the lost one and a retry", n)
						}
						if cs := h.SageMakerEndpoints.Configs(acctest.Region); len(cs) != 1 || cs[0] == firstConfig {
							return fmt.Errorf("endpoint configs %v: want only the new one", cs)
						}
						return nil
					},
				),
			},
		},
	})
}

// countServingModels counts the models in the emulator.
func countServingModels(h *acctest.Harness) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return 0, err
	}
	ms, err := c.SageMaker.ListModels(ctx, &sagemaker.ListModelsInput{})
	if err != nil {
		return 0, err
	}
	return len(ms.Models), nil
}

// An update cut off by its timeout while SageMaker still deploys: the apply
// fails and the state keeps the config of before, with both configs and
// models in AWS. SageMaker then finishes; the next refresh sees the endpoint
// serving the new config, deletes the old config and model (they carry the
// endpoint's creation token), and the plan is empty.
func TestAccServingEndpoint_updateTimedOutLeavesNothing(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	const timeouts = `  timeouts = { update = "1s" }`
	var firstConfig string
	hold := acctest.NewHold(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, timeouts),
				Check: resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error {
					firstConfig = v
					// The first describe after UpdateEndpoint (the first look
					// of the update's wait) is held until the last step: the
					// update's 1s timeout runs out while SageMaker deploys,
					// on any machine and at any poll interval; it lands then.
					updated := acctest.AfterCall(h.Shim, "UpdateEndpoint")
					t.Cleanup(h.Shim.AddServedRule(acctest.FaultRule{
						Service: "sagemaker", Action: "DescribeEndpoint", Times: 1, Hold: hold, Match: func(*acctest.Request) bool { return updated() },
					}))
					return nil
				}),
			},
			{
				Config:      servingConfig(h, servingImage2, "ml.m5.large", 1, timeouts),
				ExpectError: regexp.MustCompile(`(?s)updating serving endpoint \(fraud\)`),
			},
			{
				PreConfig: func() {
					if n := hold.Arrived(); n != 1 {
						t.Fatalf("%d looks of the update's wait were held when its timeout ran out, want 1", n)
					}
					landHeld(t, hold) // the held describe lands: the deployment ends
					if cs := h.SageMakerEndpoints.Configs(acctest.Region); len(cs) != 2 {
						t.Errorf("configs after the cut-off update: %v, want the old and the new", cs)
					}
				},
				// The refresh before the plan finds the new config serving.
				Config:           servingConfig(h, servingImage2, "ml.m5.large", 1, timeouts),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "model.image", servingImage2),
					func(s *terraform.State) error {
						cs := h.SageMakerEndpoints.Configs(acctest.Region)
						if got := s.RootModule().Resources[servingName].Primary.Attributes["endpoint_config_name"]; len(cs) != 1 || cs[0] != got || got == firstConfig {
							return fmt.Errorf("configs %v, state %s, first %s: want only the serving one, not the first", cs, got, firstConfig)
						}
						if n, err := countServingModels(h); err != nil || n != 1 {
							return fmt.Errorf("%d models (%v), want only the serving one", n, err)
						}
						return nil
					},
				),
			},
		},
	})
}
