package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
)

// servingNetwork returns the network fixtures of the emulator.
func servingNetwork(t *testing.T, h *acctest.Harness) *acctest.Network {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := h.Network(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func vpcBlock(subnets []string, groups ...string) string {
	q := func(ids []string) string {
		out := ""
		for i, id := range ids {
			if i > 0 {
				out += ", "
			}
			out += fmt.Sprintf("%q", id)
		}
		return "[" + out + "]"
	}
	return fmt.Sprintf("  vpc_config = {\n    subnet_ids         = %s\n    security_group_ids = %s\n  }\n", q(subnets), q(groups))
}

// checkServingModel checks the model the endpoint serves in SageMaker: its
// network isolation and its VPC subnets (none: no VpcConfig).
func checkServingModel(h *acctest.Harness, isolated bool, subnets ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := h.ServingModel(ctx, "fraud")
		if err != nil {
			return err
		}
		if aws.ToBool(m.EnableNetworkIsolation) != isolated {
			return fmt.Errorf("the model served has EnableNetworkIsolation %v, want %v", aws.ToBool(m.EnableNetworkIsolation), isolated)
		}
		var got []string
		if m.VpcConfig != nil {
			got = m.VpcConfig.Subnets
		}
		if !slices.Equal(got, subnets) {
			return fmt.Errorf("the model served is in subnets %v, want %v", got, subnets)
		}
		return nil
	}
}

// An endpoint in the VPC, network-isolated by default; turning isolation
// off and leaving the VPC are blue/green updates to a new model (the ARN
// stays), and a refresh reads back what was declared.
func TestAccServingEndpoint_network(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	n := servingNetwork(t, h)
	subnets := []string{n.Subnets["mec1-az3"], n.Subnets["mec1-az1"]}
	inVPC := vpcBlock(subnets, n.SecurityGroup)
	var arn, firstModel string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, inVPC),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(servingName, tfjsonpath.New("network_isolation"), knownvalue.Bool(true)),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "network_isolation", "true"),
					resource.TestCheckResourceAttr(servingName, "vpc_config.subnet_ids.0", subnets[0]),
					resource.TestCheckResourceAttr(servingName, "vpc_config.subnet_ids.1", subnets[1]),
					resource.TestCheckResourceAttr(servingName, "vpc_config.security_group_ids.0", n.SecurityGroup),
					resource.TestCheckResourceAttrWith(servingName, "arn", func(v string) error { arn = v; return nil }),
					resource.TestCheckResourceAttrWith(servingName, "model_name", func(v string) error { firstModel = v; return nil }),
					checkServingModel(h, true, subnets...),
				),
			},
			{Config: servingConfig(h, servingImage, "ml.m5.large", 1, inVPC), PlanOnly: true},
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, inVPC+"  network_isolation = false\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(servingName, tfjsonpath.New("model_name")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "network_isolation", "false"),
					resource.TestCheckResourceAttrWith(servingName, "arn", func(v string) error {
						if v != arn {
							return fmt.Errorf("ARN changed from %s to %s: the endpoint was replaced", arn, v)
						}
						return nil
					}),
					resource.TestCheckResourceAttrWith(servingName, "model_name", func(v string) error {
						if v == firstModel {
							return fmt.Errorf("model %s unchanged: a model's network cannot change in place", v)
						}
						return nil
					}),
					checkServingModel(h, false, subnets...),
				),
			},
			{
				// Unset again: the default, isolation on; out of the VPC.
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(servingName, tfjsonpath.New("network_isolation"), knownvalue.Bool(true)),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "network_isolation", "true"),
					resource.TestCheckNoResourceAttr(servingName, "vpc_config.subnet_ids.#"),
					checkServingModel(h, true),
				),
			},
		},
	})
}

// The endpoint moved outside Terraform to a model that is not isolated:
// the refresh shows it, and the apply deploys an isolated model again.
func TestAccServingEndpoint_networkDrift(t *testing.T) {
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
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					return h.ServeOpenModel(ctx, "fraud")
				},
				ExpectNonEmptyPlan: true,
			},
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(servingName, tfjsonpath.New("network_isolation"), knownvalue.Bool(true)),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "network_isolation", "true"),
					checkServingModel(h, true),
				),
			},
		},
	})
}

// Subnets and security groups are checked at plan, each finding on its
// attribute path, with nothing written: a subnet in an excluded zone (a
// residency violation), a security group of another VPC.
func TestAccServingEndpoint_networkRefused(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	n := servingNetwork(t, h)
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config: servingConfigIn(h, "excluded_zone_ids = [\"mec1-az2\"]\n"+acctest.AWSManagedKeys, servingImage, "ml.m5.large", 1,
					vpcBlock([]string{n.Subnets["mec1-az1"], n.Subnets["mec1-az2"]}, n.SecurityGroup)),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Residency violation.*vpc_config\.subnet_ids\[1\].*mec1-az2`),
			},
			{
				Config:      servingConfig(h, servingImage, "ml.m5.large", 1, vpcBlock([]string{n.Subnets["mec1-az1"]}, n.OtherGroup)),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)vpc_config\.security_group_ids\[0\].*` + words("of the subnets' VPC")),
			},
		},
	})
	if w := h.Shim.Writes(); len(w) != 0 {
		t.Errorf("%d writes, want 0: %v", len(w), w)
	}
	if len(h.Shim.Calls("ec2", "DescribeSubnets")) == 0 {
		t.Error("no DescribeSubnets call: the subnets were never looked up")
	}
}

// A subnet id known only at apply (a terraform_data output) is not
// rejected at plan; the apply checks it before any write: one in an
// excluded zone fails there with no SageMaker call, one in an allowed zone
// is created.
func TestAccServingEndpoint_unknownSubnet(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	n := servingNetwork(t, h)
	cfg := func(subnet string) string {
		return h.ProviderConfig("excluded_zone_ids = [\"mec1-az2\"]\n"+acctest.AWSManagedKeys) + fmt.Sprintf(`
resource "terraform_data" "subnet" {
  input = %q
}
resource "mlplatform_serving_endpoint" "this" {
  name = "fraud"
  model = {
    image              = %q
    execution_role_arn = %q
  }
  variants = [{ name = "primary", instance_type = "ml.m5.large", initial_instance_count = 1 }]
  vpc_config = {
    subnet_ids         = [terraform_data.subnet.output]
    security_group_ids = [%q]
  }
}
`, subnet, servingImage, servingRole, n.SecurityGroup)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config:      cfg(n.Subnets["mec1-az2"]),
				ExpectError: regexp.MustCompile(`(?s)vpc_config\.subnet_ids\[0\].*mec1-az2`),
			},
			{
				PreConfig: func() {
					if c := sageMakerCalls(h, "CreateModel") + sageMakerCalls(h, "CreateEndpoint"); c != 0 {
						t.Errorf("%d SageMaker creates for a subnet in an excluded zone known at apply, want 0", c)
					}
				},
				Config: cfg(n.Subnets["mec1-az1"]),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "status", "InService"),
					resource.TestCheckResourceAttr(servingName, "vpc_config.subnet_ids.0", n.Subnets["mec1-az1"]),
					checkServingModel(h, true, n.Subnets["mec1-az1"]),
				),
			},
		},
	})
}

// A serverless endpoint is not network-isolated unless asked (SageMaker
// does not isolate serverless endpoints), and asking is refused at plan.
func TestAccServingEndpoint_serverlessNetwork(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	cfg := func(extra string) string {
		return h.ProviderConfig(acctest.AWSManagedKeys) + fmt.Sprintf(`
resource "mlplatform_serving_endpoint" "this" {
  name = "fraud"
  model = {
    image              = %q
    execution_role_arn = %q
  }
  variants = [{ name = "small", serverless = { memory_size_mb = 2048, max_concurrency = 5 } }]
%s}
`, servingImage, servingRole, extra)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkServingGone(h),
		Steps: []resource.TestStep{
			{
				Config:      cfg("  network_isolation = true\n"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)network_isolation.*` + words("serverless inference does not support network isolation")),
			},
			{
				Config: cfg(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(servingName, tfjsonpath.New("network_isolation"), knownvalue.Bool(false)),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "network_isolation", "false"),
					checkServingModel(h, false),
				),
			},
			{Config: cfg(""), PlanOnly: true},
		},
	})
}
