package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
)

const servingScalingID = "endpoint/fraud/variant/primary"

// servingScalingConfig is the endpoint with one instance variant under
// autoscaling; scaling is the inside of the autoscaling block.
func servingScalingConfig(h *acctest.Harness, instanceType string, scaling string) string {
	return h.ProviderConfig(acctest.AWSManagedKeys) + fmt.Sprintf(`
resource "mlplatform_serving_endpoint" "this" {
  name = "fraud"
  model = {
    image              = %q
    execution_role_arn = %q
  }
  variants = [{
    name                   = "primary"
    instance_type          = %q
    initial_instance_count = 1
    autoscaling            = { %s }
  }]
}
`, servingImage, servingRole, instanceType, scaling)
}

// registeredScaling reads the variant's scalable target and policy from
// Application Auto Scaling (moto): min, max, target, cooldowns; found false
// when nothing is registered.
func registeredScaling(h *acctest.Harness) (minC, maxC int32, target float64, in, out int32, found bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return
	}
	ts, err := c.AppAutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{
		ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceIds: []string{servingScalingID},
	})
	if err != nil || len(ts.ScalableTargets) == 0 {
		return
	}
	found = true
	minC, maxC = aws.ToInt32(ts.ScalableTargets[0].MinCapacity), aws.ToInt32(ts.ScalableTargets[0].MaxCapacity)
	ps, err := c.AppAutoScaling.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{
		ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(servingScalingID),
	})
	if err != nil {
		return
	}
	for _, p := range ps.ScalingPolicies {
		if tt := p.TargetTrackingScalingPolicyConfiguration; tt != nil && aws.ToString(p.ResourceId) == servingScalingID {
			if pm := tt.PredefinedMetricSpecification; pm == nil || pm.PredefinedMetricType != "SageMakerVariantInvocationsPerInstance" {
				return minC, maxC, 0, 0, 0, true, fmt.Errorf("policy %s tracks %+v, want SageMakerVariantInvocationsPerInstance", aws.ToString(p.PolicyName), pm)
			}
			target, in, out = aws.ToFloat64(tt.TargetValue), aws.ToInt32(tt.ScaleInCooldown), aws.ToInt32(tt.ScaleOutCooldown)
		}
	}
	return
}

func checkScaling(h *acctest.Harness, wantMin, wantMax int32, wantTarget float64, wantIn, wantOut int32) resource.TestCheckFunc {
	return func(*terraform.State) error {
		minC, maxC, target, in, out, found, err := registeredScaling(h)
		if err != nil {
			return err
		}
		if !found || minC != wantMin || maxC != wantMax || target != wantTarget || in != wantIn || out != wantOut {
			return fmt.Errorf("registered (found %v) min %d max %d target %g cooldowns %d/%d; want %d %d %g %d/%d", found, minC, maxC, target, in, out, wantMin, wantMax, wantTarget, wantIn, wantOut)
		}
		return nil
	}
}

// TestAccServingEndpoint_autoscaling: create registers the variant with
// Application Auto Scaling once in service; a change of the bounds and the
// target updates the target and the policy in place (no new endpoint
// config, no UpdateEndpoint); the variant scaled by autoscaling within its
// bounds is not drift (second plan empty); a target changed outside is;
// bad bounds fail at plan on their paths; delete deregisters.
func TestAccServingEndpoint_autoscaling(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	var configName string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(checkServingGone(h), func(*terraform.State) error {
			_, _, _, _, _, found, err := registeredScaling(h)
			if err != nil {
				return err
			}
			if found {
				return fmt.Errorf("scalable target %s still registered after destroy", servingScalingID)
			}
			return nil
		}),
		Steps: []resource.TestStep{
			{
				Config: servingScalingConfig(h, "ml.m5.large", `min_capacity = 1, max_capacity = 4, target_invocations_per_instance = 100`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					// The cost is in the plan: 1 x 0.115 USD/h x 730 h.
					plancheck.ExpectKnownValue(servingName, tfjsonpath.New("monthly_cost_usd"), knownvalue.Float64Exact(83.95)),
					plancheck.ExpectKnownValue(servingName, tfjsonpath.New("price_source"), knownvalue.StringRegexp(regexp.MustCompile(`ml\.m5\.large 0\.115 USD/h \(us-east-1 price, estimate\).*autoscales between 1 and 4 instances: 83\.95 to 335\.80`))),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "monthly_cost_usd", "83.95"),
					resource.TestCheckResourceAttr(servingName, "status", "InService"),
					resource.TestCheckResourceAttr(servingName, "variants.0.autoscaling.max_capacity", "4"),
					resource.TestCheckResourceAttr(servingName, "variants.0.autoscaling.scale_in_cooldown_seconds", "300"),
					checkScaling(h, 1, 4, 100, 300, 300),
					resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error { configName = v; return nil }),
				),
			},
			{
				Config: servingScalingConfig(h, "ml.m5.large", `min_capacity = 1, max_capacity = 6, target_invocations_per_instance = 250, scale_out_cooldown_seconds = 60`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkScaling(h, 1, 6, 250, 300, 60),
					resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error {
						if v != configName {
							return fmt.Errorf("endpoint config %s, want %s kept: a change of autoscaling deploys nothing", v, configName)
						}
						return nil
					}),
					func(*terraform.State) error {
						if n := sageMakerCalls(h, "UpdateEndpoint"); n != 0 {
							return fmt.Errorf("%d UpdateEndpoint calls, want 0", n)
						}
						// Autoscaling scales the variant within its bounds.
						return h.SageMakerEndpoints.ScaleVariant(acctest.Region, "fraud", "primary", 3)
					},
				),
			},
			{
				// The count autoscaling set is not drift.
				Config:   servingScalingConfig(h, "ml.m5.large", `min_capacity = 1, max_capacity = 6, target_invocations_per_instance = 250, scale_out_cooldown_seconds = 60`),
				PlanOnly: true,
			},
			{
				// A target changed outside Terraform is.
				PreConfig: func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					c, err := h.Clients(ctx, acctest.Region)
					if err == nil {
						_, err = c.AppAutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
							ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(servingScalingID),
							ScalableDimension: "sagemaker:variant:DesiredInstanceCount", MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(9),
						})
					}
					if err != nil {
						t.Fatal(err)
					}
				},
				Config:             servingScalingConfig(h, "ml.m5.large", `min_capacity = 1, max_capacity = 6, target_invocations_per_instance = 250, scale_out_cooldown_seconds = 60`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: servingScalingConfig(h, "ml.m5.large", `min_capacity = 1, max_capacity = 6, target_invocations_per_instance = 250, scale_out_cooldown_seconds = 60`),
				Check:  checkScaling(h, 1, 6, 250, 300, 60),
			},
			{
				Config:      servingScalingConfig(h, "ml.m5.large", `min_capacity = 5, max_capacity = 2, target_invocations_per_instance = 250`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`variants\[0\]\.autoscaling\.max_capacity`),
			},
		},
	})
}

// Autoscaling on a serverless variant fails at plan on its path.
func TestAccServingEndpoint_autoscalingServerlessRejected(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig(acctest.AWSManagedKeys) + fmt.Sprintf(`
resource "mlplatform_serving_endpoint" "this" {
  name  = "fraud"
  model = { image = %q, execution_role_arn = %q }
  variants = [{
    name        = "small"
    serverless  = { memory_size_mb = 2048, max_concurrency = 5 }
    autoscaling = { min_capacity = 1, max_capacity = 2, target_invocations_per_instance = 10 }
  }]
}
`, servingImage, servingRole),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`variants\[0\]\.autoscaling`),
		}},
	})
}
