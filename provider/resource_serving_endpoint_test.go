package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
)

const (
	servingName   = "mlplatform_serving_endpoint.this"
	servingImage  = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:1"
	servingImage2 = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:2"
	servingRole   = "arn:aws:iam::123456789012:role/serving"
	servingBucket = "uae-models"
)

// servingConfig is an endpoint serving image with one variant of
// instanceType; extra goes inside the resource block. Its tests are not
// about keys: the provider accepts AWS managed keys (acctest.AWSManagedKeys).
func servingConfig(h *acctest.Harness, image, instanceType string, count int, extra string) string {
	return servingConfigIn(h, acctest.AWSManagedKeys, image, instanceType, count, extra)
}

// servingConfigIn is servingConfig with residency settings of its own.
func servingConfigIn(h *acctest.Harness, residency, image, instanceType string, count int, extra string) string {
	return h.ProviderConfig(residency) + fmt.Sprintf(`
resource "mlplatform_serving_endpoint" "this" {
  name = "fraud"
  model = {
    image              = %q
    model_data_uri     = "s3://%s/fraud/model.tar.gz"
    execution_role_arn = %q
    environment        = { SAGEMAKER_PROGRAM = "serve.py" }
  }
  variants = [{
    name                   = "primary"
    instance_type          = %q
    initial_instance_count = %d
  }]
  tags = { team = "fraud" }
%s
}
`, image, servingBucket, servingRole, instanceType, count, extra)
}

func servingFixtures(t *testing.T, h *acctest.Harness) {
	t.Helper()
	createBucket(t, h, servingBucket, acctest.Region)
}

// checkServingGone checks that the endpoint, every endpoint config and every
// model are gone after destroy.
func checkServingGone(h *acctest.Harness) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		if _, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("fraud")}); err == nil {
			return fmt.Errorf("endpoint fraud still exists")
		}
		if cs := h.SageMakerEndpoints.Configs(acctest.Region); len(cs) > 0 {
			return fmt.Errorf("endpoint configs left: %v", cs)
		}
		ms, err := c.SageMaker.ListModels(ctx, &sagemaker.ListModelsInput{})
		if err != nil {
			return err
		}
		if len(ms.Models) > 0 {
			return fmt.Errorf("%d models left, e.g. %s", len(ms.Models), aws.ToString(ms.Models[0].ModelName))
		}
		return nil
	}
}

func TestAccServingEndpoint_basic(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "id", "fraud"),
					resource.TestCheckResourceAttr(servingName, "arn", "arn:aws:sagemaker:me-central-1:123456789012:endpoint/fraud"),
					resource.TestCheckResourceAttr(servingName, "status", "InService"),
					resource.TestMatchResourceAttr(servingName, "endpoint_config_name", regexp.MustCompile(`^fraud-[0-9a-f]{8}$`)),
					resource.TestMatchResourceAttr(servingName, "model_name", regexp.MustCompile(`^fraud-[0-9a-f]{8}$`)),
					resource.TestCheckResourceAttr(servingName, "last_deployment_outcome", "Created"),
					resource.TestCheckResourceAttr(servingName, "variants.0.instance_type", "ml.m5.large"),
					resource.TestCheckResourceAttr(servingName, "model.image", servingImage),
					resource.TestCheckResourceAttr(servingName, "model.environment.SAGEMAKER_PROGRAM", "serve.py"),
					resource.TestCheckResourceAttr(servingName, "tags_all.team", "fraud"),
					resource.TestCheckNoResourceAttr(servingName, "variants.0.initial_weight"),
					func(*terraform.State) error {
						// The creation token is on the endpoint, not among the tags.
						if n := sageMakerCalls(h, "CreateEndpoint"); n != 1 {
							return fmt.Errorf("%d CreateEndpoint calls, want 1", n)
						}
						return nil
					},
				),
			},
			{
				Config:   servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				PlanOnly: true, // a refresh reads back what was declared: no change
			},
		},
	})
}

func TestAccServingEndpoint_gpu(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{{
			Config: servingConfig(h, servingImage, "ml.g6.2xlarge", 2, ""),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(servingName, "status", "InService"),
				resource.TestCheckResourceAttr(servingName, "variants.0.instance_type", "ml.g6.2xlarge"),
				resource.TestCheckResourceAttr(servingName, "variants.0.initial_instance_count", "2"),
			),
		}},
	})
}

func TestAccServingEndpoint_blueGreenUpdate(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	var arn, firstConfig string
	canary := `
  deployment = {
    traffic_routing          = "canary"
    size_type                = "capacity_percent"
    size_value               = 10
    wait_seconds             = 300
    termination_wait_seconds = 120
    rollback_alarms          = ["fraud-p99-latency"]
  }`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, canary),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrWith(servingName, "arn", func(v string) error { arn = v; return nil }),
					resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error { firstConfig = v; return nil }),
				),
			},
			{
				Config: servingConfig(h, servingImage2, "ml.g6.xlarge", 1, canary),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(servingName, tfjsonpath.New("endpoint_config_name")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrWith(servingName, "arn", func(v string) error {
						if v != arn {
							return fmt.Errorf("ARN changed from %s to %s: the endpoint was replaced", arn, v)
						}
						return nil
					}),
					resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error {
						if v == firstConfig {
							return fmt.Errorf("config name unchanged (%s)", v)
						}
						if cs := h.SageMakerEndpoints.Configs(acctest.Region); !slices.Equal(cs, []string{v}) {
							return fmt.Errorf("endpoint configs %v, want only the new %s (the old one deleted)", cs, v)
						}
						return nil
					}),
					resource.TestCheckResourceAttr(servingName, "model.image", servingImage2),
					resource.TestCheckResourceAttr(servingName, "last_deployment_outcome", "Updated"),
					func(*terraform.State) error {
						calls := h.Shim.Calls("sagemaker", "")
						var order []string
						for _, c := range calls {
							if !c.Fixture && c.Write {
								order = append(order, c.Action)
							}
						}
						// UpdateEndpoint before the old config's deletion.
						iu, id := slices.Index(order, "UpdateEndpoint"), slices.Index(order, "DeleteEndpointConfig")
						if iu < 0 || id < iu || slices.Contains(order, "DeleteEndpoint") || slices.Contains(order[:iu], "DeleteModel") {
							return fmt.Errorf("write order %v: want UpdateEndpoint, then the old config and model deleted, no DeleteEndpoint", order)
						}
						return nil
					},
				),
			},
		},
	})
}

// SageMaker rolls the update back and says nothing: the endpoint is
// InService on its old config. The apply fails with SageMaker's reason, the
// state keeps the old config, and the next plan shows the change again.
func TestAccServingEndpoint_silentRollbackDetected(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	const reason = "Deployment rolled back: alarm fraud-p99-latency went to ALARM"
	var firstConfig string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				Check: resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error {
					firstConfig = v
					h.SageMakerEndpoints.RollBack(reason)
					return nil
				}),
			},
			{
				Config:      servingConfig(h, servingImage2, "ml.m5.large", 1, ""),
				ExpectError: regexp.MustCompile(`(?s)rolled the update back.*` + words(reason)),
			},
			{
				PreConfig: func() {
					// The new config (which nothing served) is gone; the old one serves.
					if cs := h.SageMakerEndpoints.Configs(acctest.Region); !slices.Equal(cs, []string{firstConfig}) {
						t.Errorf("endpoint configs after the rollback: %v, want only %s", cs, firstConfig)
					}
					h.SageMakerEndpoints.RollBack("")
				},
				Config: servingConfig(h, servingImage2, "ml.m5.large", 1, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// The state kept the old image: the change is planned again.
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "model.image", servingImage2),
					resource.TestCheckResourceAttr(servingName, "last_deployment_outcome", "Updated"),
				),
			},
		},
	})
}

func TestAccServingEndpoint_rollbackStateKeepsOldConfig(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	var firstConfig string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				Check: resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error {
					firstConfig = v
					h.SageMakerEndpoints.RollBack("health check failed on the new fleet")
					return nil
				}),
			},
			{
				Config:      servingConfig(h, servingImage2, "ml.m5.large", 1, ""),
				ExpectError: regexp.MustCompile(`health check failed`),
			},
			{
				// Back to the first configuration: the state says it serves.
				Config:   servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				PlanOnly: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error {
						if v != firstConfig {
							return fmt.Errorf("state has config %s, want the old %s", v, firstConfig)
						}
						return nil
					}),
				),
			},
		},
	})
}

func TestAccServingEndpoint_import(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{Config: servingConfig(h, servingImage, "ml.m5.large", 1, "")},
			{
				ResourceName:            servingName,
				ImportState:             true,
				ImportStateId:           "fraud",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts", "last_deployment_outcome"},
			},
		},
	})
}

func TestAccServingEndpoint_disappears(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{{
			Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
			Check: func(*terraform.State) error {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c, err := h.Clients(ctx, acctest.Region)
				if err != nil {
					return err
				}
				if _, err := c.SageMaker.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String("fraud")}); err != nil {
					return err
				}
				// The double settles on the next describe.
				_, _ = c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("fraud")})
				return nil
			},
			ExpectNonEmptyPlan: true,
		}},
	})
}

// A variant scaled outside Terraform shows as a change, and the apply
// brings it back through a blue/green update.
func TestAccServingEndpoint_driftInstanceCount(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				Check: func(*terraform.State) error {
					return h.SageMakerEndpoints.ScaleVariant(acctest.Region, "fraud", "primary", 3)
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
				}},
				Check: resource.TestCheckResourceAttr(servingName, "variants.0.initial_instance_count", "1"),
			},
		},
	})
}

// Residency: rejected at plan, and nothing is written.
func TestAccServingEndpoint_imageOutsideJurisdiction(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      servingConfig(h, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/fraud:1", "ml.m5.large", 1, ""),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Residency violation.*model\.image.*eu-west-1`),
		}},
	})
	if w := h.Shim.Writes(); len(w) != 0 {
		t.Errorf("%d writes, want 0: %v", len(w), w)
	}
	if len(h.Shim.Log()) == 0 {
		t.Error("the shim logged no call at all: the zero-writes check would pass vacuously")
	}
}

func TestAccServingEndpoint_captureOutsideJurisdiction(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	createBucket(t, h, "eu-captures", "eu-west-1")
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: servingConfig(h, servingImage, "ml.m5.large", 1, `
  data_capture = {
    sampling_percentage = 20
    destination_s3_uri  = "s3://eu-captures/fraud"
  }`),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Residency violation.*data_capture\.destination_s3_uri.*eu-west-1`),
		}},
	})
	if w := h.Shim.Writes(); len(w) != 0 {
		t.Errorf("%d writes, want 0: %v", len(w), w)
	}
	if n := len(h.Shim.Calls("s3", "")); n == 0 {
		t.Error("no S3 call: the bucket's region was never looked up")
	}
}

// Values known only at apply are not rejected at plan: the image and the
// capture destination come from terraform_data outputs, and are checked at
// apply before any write (an out-of-jurisdiction one fails there).
func TestAccServingEndpoint_unknownInputs(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	createBucket(t, h, "uae-captures", acctest.Region)
	createBucket(t, h, "eu-captures", "eu-west-1")
	cfg := func(bucket string) string {
		return h.ProviderConfig(acctest.AWSManagedKeys) + fmt.Sprintf(`
resource "terraform_data" "image" {
  input = %q
}
resource "terraform_data" "capture" {
  input = "s3://%s/fraud"
}
resource "mlplatform_serving_endpoint" "this" {
  name = "fraud"
  model = {
    image              = terraform_data.image.output
    execution_role_arn = %q
  }
  variants = [{ name = "primary", instance_type = "ml.m5.large", initial_instance_count = 1 }]
  data_capture = {
    sampling_percentage = 10
    destination_s3_uri  = terraform_data.capture.output
  }
}
`, servingImage, bucket, servingRole)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config:      cfg("eu-captures"),
				ExpectError: regexp.MustCompile(`(?s)data_capture\.destination_s3_uri.*eu-west-1`),
			},
			{
				PreConfig: func() {
					if n := sageMakerCalls(h, "CreateEndpoint") + sageMakerCalls(h, "CreateModel"); n != 0 {
						t.Errorf("%d SageMaker creates for an out-of-jurisdiction capture bucket known at apply, want 0", n)
					}
				},
				Config: cfg("uae-captures"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "status", "InService"),
					resource.TestCheckResourceAttr(servingName, "data_capture.destination_s3_uri", "s3://uae-captures/fraud"),
					resource.TestCheckResourceAttr(servingName, "data_capture.enabled", "true"),
				),
			},
		},
	})
}

// TestAccServingEndpoint_volumeKeyRule: under jurisdiction AE's default
// (customer managed keys required) an endpoint on EBS-backed instances
// needs kms_key_arn; one on instances with local NVMe storage (ml.g5) takes
// none, since SageMaker encrypts that storage in hardware and refuses a key
// there, so a key on such a type is an error at plan; the data capture key
// is required either way.
func TestAccServingEndpoint_volumeKeyRule(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	createBucket(t, h, "uae-captures", acctest.Region)
	key := createKey(t, h, acctest.Region)
	capture := func(key string) string {
		return fmt.Sprintf("  data_capture = {\n    sampling_percentage = 10\n    destination_s3_uri = \"s3://uae-captures/fraud\"\n    kms_key_arn = %q\n  }", key)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config:      servingConfigIn(h, "", servingImage, "ml.m5.large", 1, ""),
				ExpectError: cmkDefaultError("kms_key_arn"),
			},
			{
				Config:      servingConfigIn(h, "", servingImage, "ml.g5.xlarge", 1, fmt.Sprintf("  kms_key_arn = %q", key)),
				ExpectError: regexp.MustCompile(`(?s)kms_key_arn.*runs\s+on\s+ml\.g5\.xlarge,\s+which\s+has\s+local\s+NVMe\s+instance\s+storage.*Remove\s+kms_key_arn`),
			},
			{
				Config:      servingConfigIn(h, "", servingImage, "ml.g5.xlarge", 1, capture("")),
				ExpectError: cmkDefaultError("data_capture.kms_key_arn"),
			},
			{
				PreConfig: func() {
					if n := sageMakerCalls(h, "CreateEndpointConfig"); n != 0 {
						t.Errorf("%d CreateEndpointConfig calls for refused plans, want 0", n)
					}
				},
				Config: servingConfigIn(h, "", servingImage, "ml.g5.xlarge", 1, capture(key)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "status", "InService"),
					resource.TestCheckNoResourceAttr(servingName, "kms_key_arn"),
					resource.TestCheckResourceAttr(servingName, "data_capture.kms_key_arn", key),
				),
			},
		},
	})
}

// The documentation's example applies as written (with a real key and
// buckets in place of the placeholders), so it cannot drift from the schema.
func TestAccServingEndpoint_example(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "uae-models", acctest.Region)
	createBucket(t, h, "uae-inference-capture", acctest.Region)
	key := createKey(t, h, acctest.Region)
	example := readExample(t, "../examples/resources/mlplatform_serving_endpoint/resource.tf")
	example = regexp.MustCompile(`arn:aws:kms:me-central-1:123456789012:key/[0-9a-f-]+`).ReplaceAllString(example, key)
	n := servingNetwork(t, h)
	example = strings.NewReplacer("subnet-0123456789abcdef0", n.Subnets["mec1-az1"], "subnet-0123456789abcdef1", n.Subnets["mec1-az3"],
		"sg-0123456789abcdef0", n.SecurityGroup).Replace(example)
	const name = "mlplatform_serving_endpoint.fraud"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			// Under the AE default (customer managed keys required): the
			// example's ml.g6 instances have local NVMe storage, which takes
			// no volume key; the captures are under the key.
			Config: h.ProviderConfig("") + example,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(name, "status", "InService"),
				resource.TestCheckResourceAttr(name, "variants.0.instance_type", "ml.g6.xlarge"),
				resource.TestCheckNoResourceAttr(name, "kms_key_arn"),
				resource.TestCheckResourceAttr(name, "data_capture.kms_key_arn", key),
				resource.TestCheckResourceAttr(name, "deployment.traffic_routing", "canary"),
				resource.TestCheckResourceAttr(name, "vpc_config.subnet_ids.1", n.Subnets["mec1-az3"]),
				resource.TestCheckResourceAttr(name, "network_isolation", "true"),
			),
		}},
	})
}

func TestAccServingEndpoint_serverless(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	cfg := func(memory int) string {
		return h.ProviderConfig(acctest.AWSManagedKeys) + fmt.Sprintf(`
resource "mlplatform_serving_endpoint" "this" {
  name = "fraud"
  model = {
    image              = %q
    execution_role_arn = %q
  }
  variants = [{
    name       = "small"
    serverless = { memory_size_mb = %d, max_concurrency = 5 }
  }]
}
`, servingImage, servingRole, memory)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config: cfg(2048),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "status", "InService"),
					resource.TestCheckResourceAttr(servingName, "variants.0.serverless.memory_size_mb", "2048"),
					resource.TestCheckNoResourceAttr(servingName, "variants.0.instance_type"),
					resource.TestCheckNoResourceAttr(servingName, "variants.0.initial_instance_count"),
				),
			},
			{Config: cfg(2048), PlanOnly: true},
			{
				Config: cfg(4096),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
				}},
				Check: resource.TestCheckResourceAttr(servingName, "variants.0.serverless.memory_size_mb", "4096"),
			},
			{
				Config:      cfg(1500),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`variants\[0\]\.serverless\.memory_size_mb`),
			},
		},
	})
}

// A canary deployment reaches UpdateEndpoint as declared: 10% of capacity,
// 300 seconds, the rollback alarm.
func TestAccServingEndpoint_canary(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	canary := `
  deployment = {
    traffic_routing                   = "canary"
    size_type                         = "capacity_percent"
    size_value                        = 10
    wait_seconds                      = 300
    termination_wait_seconds          = 120
    maximum_execution_timeout_seconds = 3600
    rollback_alarms                   = ["fraud-p99-latency"]
  }`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{Config: servingConfig(h, servingImage, "ml.g6.xlarge", 2, canary)},
			{
				Config: servingConfig(h, servingImage2, "ml.g6.xlarge", 2, canary),
				Check: func(*terraform.State) error {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					c, err := h.Clients(ctx, acctest.Region)
					if err != nil {
						return err
					}
					out, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("fraud")})
					if err != nil {
						return err
					}
					d := out.LastDeploymentConfig
					if d == nil || d.BlueGreenUpdatePolicy == nil || d.BlueGreenUpdatePolicy.TrafficRoutingConfiguration == nil {
						return fmt.Errorf("UpdateEndpoint carried no blue/green deployment config: %+v", d)
					}
					bg := d.BlueGreenUpdatePolicy
					r := bg.TrafficRoutingConfiguration
					if r.Type != "CANARY" || r.CanarySize == nil || r.CanarySize.Type != "CAPACITY_PERCENT" || aws.ToInt32(r.CanarySize.Value) != 10 ||
						aws.ToInt32(r.WaitIntervalInSeconds) != 300 || aws.ToInt32(bg.TerminationWaitInSeconds) != 120 || aws.ToInt32(bg.MaximumExecutionTimeoutInSeconds) != 3600 {
						return fmt.Errorf("deployment sent: %+v, routing %+v", bg, r)
					}
					if d.AutoRollbackConfiguration == nil || len(d.AutoRollbackConfiguration.Alarms) != 1 || aws.ToString(d.AutoRollbackConfiguration.Alarms[0].AlarmName) != "fraud-p99-latency" {
						return fmt.Errorf("rollback alarms sent: %+v", d.AutoRollbackConfiguration)
					}
					return nil
				},
			},
		},
	})
}
