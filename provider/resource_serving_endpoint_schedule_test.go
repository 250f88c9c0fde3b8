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
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
)

// servingScheduleConfig is the endpoint with one autoscaled instance
// variant whose autoscaling block ends with schedule (an HCL list, or ""),
// and a terraform_data resource whose output floor is known only at apply.
func servingScheduleConfig(h *acctest.Harness, floor int, schedule string) string {
	return h.ProviderConfig(acctest.AWSManagedKeys) + fmt.Sprintf(`
resource "terraform_data" "later" {
  input = { floor = %d }
}

resource "mlplatform_serving_endpoint" "this" {
  name = "fraud"
  model = {
    image              = %q
    execution_role_arn = %q
  }
  variants = [{
    name                   = "primary"
    instance_type          = "ml.m5.large"
    initial_instance_count = 1
    autoscaling = {
      min_capacity                    = 1
      max_capacity                    = 4
      target_invocations_per_instance = 100
      %s
    }
  }]
}
`, floor, servingImage, servingRole, schedule)
}

// scheduledActions lists every sagemaker scheduled action in the emulator
// (acctest's Harness.ScheduledActions).
func scheduledActions(h *acctest.Harness) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return h.ScheduledActions(ctx, "")
}

func checkScheduledActions(h *acctest.Harness, want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := scheduledActions(h)
		if err != nil {
			return err
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			return fmt.Errorf("scheduled actions\n got %q\nwant %q", got, want)
		}
		return nil
	}
}

const (
	nightSchedule = `{ name = "night", recurrence = "0 20 * * 1-5", duration = "11h", max_capacity = 1 }`
	nightAction   = "mlplatform-fraud-primary-night | endpoint/fraud/variant/primary | cron(0 20 ? * 2-6 *) | Asia/Dubai | - | 1"
	nightEnd      = "mlplatform-fraud-primary-night-end | endpoint/fraud/variant/primary | cron(0 7 ? * 3-7 *) | Asia/Dubai | 1 | 4"
)

// TestAccServingEndpoint_scheduledScaling: create puts a scheduled action
// per schedule on the variant's scalable target (and an -end action for a
// window), with the AWS cron form and the capacities, one of them known only
// at apply; an action changed outside is drift that the next apply repairs;
// a change of the schedules adds, replaces and removes actions in place
// without deploying a new endpoint config; bad schedules fail at plan on
// their attribute paths, and a bad value known only at apply fails the
// apply before any write; removing the schedules removes the actions, and
// destroy leaves none.
func TestAccServingEndpoint_scheduledScaling(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	var configName string
	withTwo := `schedule = [` + nightSchedule + `, { name = "monday", recurrence = "30 7 * * mon", time_zone = "UTC", min_capacity = terraform_data.later.output.floor }]`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(checkServingGone(h), checkScheduledActions(h)),
		Steps: []resource.TestStep{
			{
				Config: servingScheduleConfig(h, 3, withTwo),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(servingName, tfjsonpath.New("variants").AtSliceIndex(0).AtMapKey("autoscaling").AtMapKey("schedule").AtSliceIndex(1).AtMapKey("min_capacity")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkScaling(h, 1, 4, 100, 300, 300),
					checkScheduledActions(h, nightAction, nightEnd,
						"mlplatform-fraud-primary-monday | endpoint/fraud/variant/primary | cron(30 7 ? * 2 *) | UTC | 3 | -"),
					resource.TestCheckResourceAttr(servingName, "variants.0.autoscaling.schedule.0.duration", "11h"),
					resource.TestCheckResourceAttr(servingName, "variants.0.autoscaling.schedule.1.min_capacity", "3"),
					resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error { configName = v; return nil }),
				),
			},
			{Config: servingScheduleConfig(h, 3, withTwo), PlanOnly: true},
			{
				// An action changed outside Terraform is drift.
				PreConfig: func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					c, err := h.Clients(ctx, acctest.Region)
					if err == nil {
						_, err = c.AppAutoScaling.PutScheduledAction(ctx, &applicationautoscaling.PutScheduledActionInput{
							ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(servingScalingID),
							ScalableDimension: "sagemaker:variant:DesiredInstanceCount", ScheduledActionName: aws.String("mlplatform-fraud-primary-night-end"),
							Schedule: aws.String("cron(0 9 ? * 3-7 *)"), Timezone: aws.String("Asia/Dubai"),
							ScalableTargetAction: &aastypes.ScalableTargetAction{MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(4)},
						})
					}
					if err != nil {
						t.Fatal(err)
					}
				},
				Config:             servingScheduleConfig(h, 3, withTwo),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// The apply repairs it.
				Config: servingScheduleConfig(h, 3, withTwo),
				Check: checkScheduledActions(h, nightAction, nightEnd,
					"mlplatform-fraud-primary-monday | endpoint/fraud/variant/primary | cron(30 7 ? * 2 *) | UTC | 3 | -"),
			},
			{
				// Imported, the actions read back as the two schedules:
				// night and night-end folded into one of 11h, the default
				// zone unset, monday in AWS's spelling (in the order AWS
				// lists them).
				Config:        servingScheduleConfig(h, 3, withTwo),
				ResourceName:  servingName,
				ImportState:   true,
				ImportStateId: "fraud",
				ImportStateCheck: func(is []*terraform.InstanceState) error {
					if len(is) != 1 {
						return fmt.Errorf("%d instances imported", len(is))
					}
					a := is[0].Attributes
					var got []string
					for i := range 3 {
						p := fmt.Sprintf("variants.0.autoscaling.schedule.%d.", i)
						if a[p+"name"] == "" {
							continue
						}
						got = append(got, strings.Join([]string{a[p+"name"], a[p+"recurrence"], a[p+"time_zone"], a[p+"duration"], a[p+"min_capacity"], a[p+"max_capacity"]}, " | "))
					}
					want := []string{"monday | 30 7 * * 1 | UTC |  | 3 | ", "night | 0 20 * * 1-5 |  | 11h |  | 1"}
					if !slices.Equal(got, want) {
						return fmt.Errorf("imported schedules:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
					}
					return nil
				},
			},
			{
				// Change: monday goes, night moves to 21:00 without a window,
				// weekend comes; in place.
				Config: servingScheduleConfig(h, 3, `schedule = [
        { name = "night", recurrence = "0 21 * * 1-5", max_capacity = 2 },
        { name = "weekend", recurrence = "0 0 * * sat", min_capacity = 1, max_capacity = 1 },
      ]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					checkScheduledActions(h,
						"mlplatform-fraud-primary-night | endpoint/fraud/variant/primary | cron(0 21 ? * 2-6 *) | Asia/Dubai | - | 2",
						"mlplatform-fraud-primary-weekend | endpoint/fraud/variant/primary | cron(0 0 ? * 7 *) | Asia/Dubai | 1 | 1"),
					resource.TestCheckResourceAttrWith(servingName, "endpoint_config_name", func(v string) error {
						if v != configName {
							return fmt.Errorf("endpoint config %s, want %s kept: a change of schedules deploys nothing", v, configName)
						}
						return nil
					}),
				),
			},
			{
				Config:      servingScheduleConfig(h, 3, `schedule = [{ name = "off", recurrence = "0 20 * * *", min_capacity = 0 }]`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`variants\[0\]\.autoscaling\.schedule\[0\]\.min_capacity(.|\n)*cannot scale a SageMaker(.|\n)*instance variant to 0`),
			},
			{
				Config:      servingScheduleConfig(h, 3, `schedule = [`+nightSchedule+`, { name = "x", recurrence = "0 1 1 * 1", max_capacity = 2 }]`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`variants\[0\]\.autoscaling\.schedule\[1\]\.recurrence`),
			},
			{
				Config:      servingScheduleConfig(h, 3, `schedule = [{ name = "x", recurrence = "0 20 * * *", duration = "soon", max_capacity = 2 }]`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)variants\[0\]\.autoscaling\.schedule\[0\]\.duration.*whole minutes`),
			},
			{
				// Known only at apply, and 0: refused at apply, before any
				// write.
				Config:      servingScheduleConfig(h, 0, withTwo),
				ExpectError: regexp.MustCompile(`variants\[0\]\.autoscaling\.schedule\[1\]\.min_capacity`),
			},
			{
				Config: servingScheduleConfig(h, 3, ""),
				Check:  checkScheduledActions(h),
			},
		},
	})
}
