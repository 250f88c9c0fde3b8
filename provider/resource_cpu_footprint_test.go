package provider_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

const cpuFootprintResource = "mlplatform_cpu_footprint.test"

// cpuFootprintConfig is a footprint named name with the given body lines.
func cpuFootprintConfig(h *acctest.Harness, residency, name, body string) string {
	return h.ProviderConfig(residency) + fmt.Sprintf(`
resource "mlplatform_cpu_footprint" "test" {
  name        = %q
  root_volume = { size_gib = 20 }
  user_data   = "#!/bin/sh\necho hwprobe bootstrap slot\n"
  tags        = { team = "smb" }
%s
}
`, name, body)
}

// footprint reads what exists of footprint name (nil when nothing does).
func footprint(t *testing.T, h *acctest.Harness, name string) (*platform.CPUFootprint, error) {
	t.Helper()
	f, err := fixtureEnv(t, h).FindCPUFootprint(context.Background(), name, "")
	if errors.Is(err, platform.ErrNotFound) {
		return nil, nil
	}
	return f, err
}

// checkFootprint checks what exists in EC2 Auto Scaling.
func checkFootprint(t *testing.T, h *acctest.Harness, name string, check func(f *platform.CPUFootprint) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		f, err := footprint(t, h, name)
		if err != nil {
			return err
		}
		if f == nil {
			return fmt.Errorf("footprint %s does not exist", name)
		}
		return check(f)
	}
}

// checkFootprintGone checks that nothing of footprint name exists.
func checkFootprintGone(t *testing.T, h *acctest.Harness, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		f, err := footprint(t, h, name)
		if err != nil {
			return err
		}
		if f != nil {
			return fmt.Errorf("footprint %s still exists: group %q, launch template %q", name, f.GroupName, f.LaunchTemplateID)
		}
		return nil
	}
}

func TestAccCPUFootprint_basic(t *testing.T) {
	h := acctest.Setup(t)
	key := createKey(t, h, acctest.Region)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "smb"),
		Steps: []resource.TestStep{{
			Config: cpuFootprintConfig(h, `excluded_zone_ids = ["mec1-az2"]`, "smb", fmt.Sprintf(`
  requirements = {
    min_vcpus      = 2
    min_memory_gib = 4
  }
  min_size         = 1
  max_size         = 3
  desired_capacity = 2
  kms_key_arn      = %q`, key)),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(cpuFootprintResource, plancheck.ResourceActionCreate),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "id", "smb"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "asg_name", "mlplatform-cpu-smb"),
				resource.TestMatchResourceAttr(cpuFootprintResource, "chosen_instance_type", regexp.MustCompile(`^[a-z0-9]+\.[a-z0-9]+$`)),
				resource.TestMatchResourceAttr(cpuFootprintResource, "decision_reason", regexp.MustCompile(`.+`)),
				resource.TestMatchResourceAttr(cpuFootprintResource, "launch_template_id", regexp.MustCompile(`^lt-`)),
				resource.TestMatchResourceAttr(cpuFootprintResource, "image_id", regexp.MustCompile(`^ami-`)),
				resource.TestMatchResourceAttr(cpuFootprintResource, "creation_token", regexp.MustCompile(`^[0-9a-f]{32}$`)),
				resource.TestMatchResourceAttr(cpuFootprintResource, "price_source", regexp.MustCompile(`.+`)),
				resource.TestCheckResourceAttr(cpuFootprintResource, "tags_all.team", "smb"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "subnet_ids.#", "2"), // mec1-az1 and mec1-az3
				func(s *terraform.State) error {
					a := s.RootModule().Resources[cpuFootprintResource].Primary.Attributes
					if a["hourly_price_usd"] == "0" || a["monthly_cost_usd"] == "0" {
						return fmt.Errorf("no cost shown: %s/h, %s a month", a["hourly_price_usd"], a["monthly_cost_usd"])
					}
					if a["candidates.0"] != a["chosen_instance_type"] {
						return fmt.Errorf("chosen %s is not the cheapest candidate %s", a["chosen_instance_type"], a["candidates.0"])
					}
					t.Logf("chose %s at $%s/h ($%s a month): %s", a["chosen_instance_type"], a["hourly_price_usd"], a["monthly_cost_usd"], a["decision_reason"])
					return nil
				},
				checkFootprint(t, h, "smb", func(f *platform.CPUFootprint) error {
					if f.Size != (platform.GroupSize{Min: 1, Max: 3, Desired: 2}) || len(f.Instances) != 2 || f.Tags["team"] != "smb" {
						return fmt.Errorf("group %+v", f)
					}
					return nil
				}),
			),
		}, {
			// A second plan is empty.
			Config: cpuFootprintConfig(h, `excluded_zone_ids = ["mec1-az2"]`, "smb", fmt.Sprintf(`
  requirements = {
    min_vcpus      = 2
    min_memory_gib = 4
  }
  min_size         = 1
  max_size         = 3
  desired_capacity = 2
  kms_key_arn      = %q`, key)),
			PlanOnly: true,
		}},
	})
}

func TestAccCPUFootprint_explicitType(t *testing.T) {
	h := acctest.Setup(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "explicit"),
		Steps: []resource.TestStep{{
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "explicit", `
  instance_type    = "c7i.large"
  min_size         = 0
  max_size         = 2
  desired_capacity = 1`),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "chosen_instance_type", "c7i.large"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "decision_reason", "c7i.large is set explicitly"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "instance_types.#", "1"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "rejected_cheaper.#", "0"),
				checkFootprint(t, h, "explicit", func(f *platform.CPUFootprint) error {
					if len(f.Instances) != 1 || f.Instances[0].InstanceType != "c7i.large" {
						return fmt.Errorf("instances %+v, want one c7i.large", f.Instances)
					}
					return nil
				}),
			),
		}, {
			// An explicit type that misses the requirements: refused at plan.
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "explicit", `
  instance_type    = "c7i.large"
  requirements     = { min_vcpus = 8 }
  min_size         = 0
  max_size         = 2
  desired_capacity = 1`),
			ExpectError: regexp.MustCompile(`(?s)does not meet the requirements.*min_vcpus`),
		}},
	})
}

func TestAccCPUFootprint_amxRequired(t *testing.T) {
	h := acctest.Setup(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "amx"),
		Steps: []resource.TestStep{{
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "amx", `
  requirements = {
    min_vcpus    = 2
    cpu_features = ["amx_tile", "amx_bf16"]
  }
  min_size         = 0
  max_size         = 2
  desired_capacity = 1`),
			Check: resource.ComposeAggregateTestCheckFunc(
				// Sapphire Rapids and later: c7i, m7i, r7i (and their flex
				// variants) carry AMX.
				resource.TestMatchResourceAttr(cpuFootprintResource, "chosen_instance_type", regexp.MustCompile(`^[cmr][78]i(-flex)?\.`)),
				func(s *terraform.State) error {
					a := s.RootModule().Resources[cpuFootprintResource].Primary.Attributes
					if a["rejected_cheaper.#"] == "0" {
						return fmt.Errorf("no cheaper type rejected: want the cheaper types without AMX listed, reason %q", a["decision_reason"])
					}
					for i := 0; i < 3; i++ {
						r := a[fmt.Sprintf("rejected_cheaper.%d", i)]
						if r != "" && !strings.Contains(r, "amx") && !strings.Contains(r, "cpu_features") {
							return fmt.Errorf("rejected %q: a cheaper type must be rejected for the missing AMX feature", r)
						}
					}
					t.Logf("chose %s; rejected cheaper: %s, ...", a["chosen_instance_type"], a["rejected_cheaper.0"])
					return nil
				},
			),
		}},
	})
}

func TestAccCPUFootprint_arm64(t *testing.T) {
	h := acctest.Setup(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "graviton"),
		Steps: []resource.TestStep{{
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "graviton", `
  requirements = {
    min_vcpus    = 4
    architecture = "arm64"
  }
  min_size         = 0
  max_size         = 2
  desired_capacity = 1`),
			Check: resource.ComposeAggregateTestCheckFunc(
				// Graviton families end in g (m7g, c7g, r8g, t4g, ...).
				resource.TestMatchResourceAttr(cpuFootprintResource, "chosen_instance_type", regexp.MustCompile(`^[a-z]+[0-9]+g[a-z]*\.`)),
				resource.TestMatchResourceAttr(cpuFootprintResource, "image_id", regexp.MustCompile(`^ami-`)),
			),
		}},
	})
}

func TestAccCPUFootprint_noMatch(t *testing.T) {
	h := acctest.Setup(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			// AMX is an Intel feature: no arm64 type has it.
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "none", `
  requirements = {
    min_vcpus    = 2
    cpu_features = ["amx_tile"]
    architecture = "arm64"
  }
  min_size         = 0
  max_size         = 2
  desired_capacity = 1`),
			ExpectError: regexp.MustCompile(`(?s)No instance type meets the requirements.*(architecture|amx_tile)`),
		}},
	})
	if w := h.Shim.Writes(); len(w) > 0 {
		t.Errorf("a refused plan wrote %d times: %v", len(w), w)
	}
}

// scheduleConfig scales footprint "nights" to zero from 20:00 to 07:00 on
// working days.
func scheduleConfig(h *acctest.Harness) string {
	return cpuFootprintConfig(h, acctest.AWSManagedKeys, "nights", `
  instance_type    = "c7i.large"
  min_size         = 1
  max_size         = 3
  desired_capacity = 2

  schedule {
    name             = "off-hours"
    recurrence       = "0 20 * * 1-5"
    duration         = "11h"
    min_size         = 0
    max_size         = 0
    desired_capacity = 0
  }`)
}

func TestAccCPUFootprint_schedule(t *testing.T) {
	h := acctest.Setup(t)
	withLunch := strings.Replace(scheduleConfig(h), "\n  schedule {", `
  schedule {
    name       = "lunch"
    recurrence = "0 12 * * 1-5"
    duration   = "90m"
    max_size   = 1
  }

  schedule {`, 1)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "nights"),
		Steps: []resource.TestStep{{
			Config: scheduleConfig(h),
			Check: resource.ComposeAggregateTestCheckFunc(
				func(s *terraform.State) error {
					a := s.RootModule().Resources[cpuFootprintResource].Primary.Attributes
					sched, _ := strconv.ParseFloat(a["monthly_cost_scheduled_usd"], 64)
					full, _ := strconv.ParseFloat(a["monthly_cost_usd"], 64)
					if sched >= full || sched <= 0 {
						return fmt.Errorf("scheduled cost %s, at desired %s: the schedule must lower it", a["monthly_cost_scheduled_usd"], a["monthly_cost_usd"])
					}
					t.Logf("monthly cost %s, with the schedule %s", a["monthly_cost_usd"], a["monthly_cost_scheduled_usd"])
					return nil
				},
				checkFootprint(t, h, "nights", func(f *platform.CPUFootprint) error {
					if len(f.ScheduledActions) != 2 {
						return fmt.Errorf("scheduled actions %+v, want off-hours and off-hours-end", f.ScheduledActions)
					}
					a, end := f.ScheduledActions[0], f.ScheduledActions[1]
					if a.Name != "off-hours" || a.Recurrence != "0 20 * * 1-5" || a.TimeZone != "Asia/Dubai" || *a.Desired != 0 || *a.Max != 0 {
						return fmt.Errorf("action %+v", a)
					}
					if end.Name != "off-hours-end" || end.Recurrence != "0 7 * * 2-6" || *end.Desired != 2 || *end.Max != 3 {
						return fmt.Errorf("end action %+v", end)
					}
					return nil
				}),
			),
		}, {
			// Imported outside the window, the schedule reads as it is
			// written: its action and its "-end" action fold back into one
			// schedule of 11h, the default time zone unset.
			Config:                  scheduleConfig(h),
			ResourceName:            cpuFootprintResource,
			ImportState:             true,
			ImportStateId:           "nights",
			ImportStateVerify:       true,
			ImportStateVerifyIgnore: footprintImportIgnore,
		}, {
			// The window starts: Auto Scaling scales the group to zero, as
			// the scheduled action says. Not drift: the plan is empty.
			PreConfig: func() {
				c, err := h.Clients(context.Background(), acctest.Region)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.AutoScaling.UpdateAutoScalingGroup(context.Background(), &autoscaling.UpdateAutoScalingGroupInput{
					AutoScalingGroupName: aws.String("mlplatform-cpu-nights"), MinSize: aws.Int32(0), MaxSize: aws.Int32(0), DesiredCapacity: aws.Int32(0),
				}); err != nil {
					t.Fatal(err)
				}
			},
			Config:   scheduleConfig(h),
			PlanOnly: true,
		}, {
			// An apply in the window leaves it alone.
			Config: scheduleConfig(h),
			Check: checkFootprint(t, h, "nights", func(f *platform.CPUFootprint) error {
				if f.Size != (platform.GroupSize{}) || len(f.Instances) != 0 {
					return fmt.Errorf("group %+v with %d instances: the scheduled zero must stay", f.Size, len(f.Instances))
				}
				return nil
			}),
		}, {
			// A window of seconds is refused at plan, as the serving
			// endpoint's is: scheduled actions run on whole minutes.
			Config:      strings.Replace(scheduleConfig(h), `duration         = "11h"`, `duration         = "90s"`, 1),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Invalid duration.*duration *= "90s".*"90s": write a duration of whole minutes`),
		}, {
			// A second window, its duration written as 90m.
			Config: withLunch,
			Check: checkFootprint(t, h, "nights", func(f *platform.CPUFootprint) error {
				if len(f.ScheduledActions) != 4 {
					return fmt.Errorf("scheduled actions %+v, want two windows", f.ScheduledActions)
				}
				return nil
			}),
		}, {
			// The night's end action deleted outside: the night reads back
			// absent, and the lunch window stays as declared ("90m").
			PreConfig: func() {
				c, err := h.Clients(context.Background(), acctest.Region)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.AutoScaling.DeleteScheduledAction(context.Background(), &autoscaling.DeleteScheduledActionInput{
					AutoScalingGroupName: aws.String("mlplatform-cpu-nights"), ScheduledActionName: aws.String("off-hours-end"),
				}); err != nil {
					t.Fatal(err)
				}
			},
			RefreshState:       true,
			ExpectNonEmptyPlan: true,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "schedule.#", "1"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "schedule.0.name", "lunch"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "schedule.0.duration", "90m"),
			),
		}, {
			// The apply makes the night's actions again.
			Config: withLunch,
			Check: checkFootprint(t, h, "nights", func(f *platform.CPUFootprint) error {
				if len(f.ScheduledActions) != 4 {
					return fmt.Errorf("scheduled actions %+v, want two windows again", f.ScheduledActions)
				}
				return nil
			}),
		}},
	})
}

func TestAccCPUFootprint_spotMixed(t *testing.T) {
	h := acctest.Setup(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "spot"),
		Steps: []resource.TestStep{{
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "spot", `
  requirements = {
    min_vcpus    = 2
    architecture = "x86_64"
  }
  capacity_type    = "spot"
  on_demand_base   = 1
  min_size         = 1
  max_size         = 4
  desired_capacity = 3`),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "instance_types.#", fmt.Sprint(platform.MaxSpotInstanceTypes)),
				resource.TestCheckResourceAttrPair(cpuFootprintResource, "instance_types.0", cpuFootprintResource, "chosen_instance_type"),
				resource.TestMatchResourceAttr(cpuFootprintResource, "cost_note", regexp.MustCompile(`spot`)),
				checkFootprint(t, h, "spot", func(f *platform.CPUFootprint) error {
					if !f.Spot || f.OnDemandBase != 1 || len(f.InstanceTypes) != platform.MaxSpotInstanceTypes {
						return fmt.Errorf("group spot %v base %d types %v", f.Spot, f.OnDemandBase, f.InstanceTypes)
					}
					return nil
				}),
			),
		}, {
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "spot", `
  requirements = {
    min_vcpus    = 2
    architecture = "x86_64"
  }
  capacity_type    = "spot"
  on_demand_base   = 1
  min_size         = 1
  max_size         = 4
  desired_capacity = 3`),
			PlanOnly: true,
		}},
	})
}

func TestAccCPUFootprint_update(t *testing.T) {
	h := acctest.Setup(t)
	var token, lt string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "grow"),
		Steps: []resource.TestStep{{
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "grow", `
  instance_type    = "c7i.large"
  min_size         = 1
  max_size         = 2
  desired_capacity = 1`),
			Check: func(s *terraform.State) error {
				a := s.RootModule().Resources[cpuFootprintResource].Primary.Attributes
				token, lt = a["creation_token"], a["launch_template_id"]
				return nil
			},
		}, {
			Config: strings.Replace(cpuFootprintConfig(h, acctest.AWSManagedKeys, "grow", `
  instance_type    = "c7i.large"
  min_size         = 2
  max_size         = 4
  desired_capacity = 3

  schedule {
    name             = "weekend"
    recurrence       = "0 0 * * 6"
    duration         = "48h"
    desired_capacity = 2
  }`), `team = "smb"`, `team = "smb", env = "prod"`, 1),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(cpuFootprintResource, plancheck.ResourceActionUpdate),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "tags_all.env", "prod"),
				func(s *terraform.State) error {
					a := s.RootModule().Resources[cpuFootprintResource].Primary.Attributes
					if a["creation_token"] != token || a["launch_template_id"] != lt {
						return fmt.Errorf("token %s -> %s, template %s -> %s: an update in place keeps both", token, a["creation_token"], lt, a["launch_template_id"])
					}
					return nil
				},
				checkFootprint(t, h, "grow", func(f *platform.CPUFootprint) error {
					if f.Size != (platform.GroupSize{Min: 2, Max: 4, Desired: 3}) || len(f.Instances) != 3 || f.Tags["env"] != "prod" || len(f.ScheduledActions) != 2 {
						return fmt.Errorf("group %+v, %d instances, tags %v, %d scheduled actions", f.Size, len(f.Instances), f.Tags, len(f.ScheduledActions))
					}
					return nil
				}),
			),
		}, {
			// Schedule removed, tags back: in place again.
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "grow", `
  instance_type    = "c7i.large"
  min_size         = 2
  max_size         = 4
  desired_capacity = 3`),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(cpuFootprintResource, plancheck.ResourceActionUpdate),
			}},
			Check: checkFootprint(t, h, "grow", func(f *platform.CPUFootprint) error {
				if len(f.ScheduledActions) != 0 || f.Tags["env"] != "" {
					return fmt.Errorf("scheduled actions %+v, tags %v", f.ScheduledActions, f.Tags)
				}
				return nil
			}),
		}},
	})
}

func TestAccCPUFootprint_typeRoll(t *testing.T) {
	h := acctest.Setup(t)
	cfg := func(typ string) string {
		return cpuFootprintConfig(h, acctest.AWSManagedKeys, "roll", fmt.Sprintf(`
  instance_type          = %q
  min_healthy_percentage = 50
  min_size               = 1
  max_size               = 3
  desired_capacity       = 2`, typ))
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "roll"),
		Steps: []resource.TestStep{{
			Config: cfg("c7i.large"),
		}, {
			Config: cfg("m7i.large"),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(cpuFootprintResource, plancheck.ResourceActionUpdate),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "chosen_instance_type", "m7i.large"),
				checkFootprint(t, h, "roll", func(f *platform.CPUFootprint) error {
					if len(f.Instances) != 2 {
						return fmt.Errorf("%d instances, want 2", len(f.Instances))
					}
					for _, in := range f.Instances {
						if in.InstanceType != "m7i.large" {
							return fmt.Errorf("instance %s is %s after the roll", in.ID, in.InstanceType)
						}
					}
					if got := h.Refreshes.Started(); len(got) != 1 || got[0] != "mlplatform-cpu-roll:50" {
						return fmt.Errorf("instance refreshes %v, want one at 50%% healthy", got)
					}
					return nil
				}),
			),
		}, {
			Config:   cfg("m7i.large"),
			PlanOnly: true,
		}},
	})
}

// footprintImportIgnore are the attributes an import cannot read back: the
// choice's inputs and its explanation are not in AWS; the image is read
// back as the AMI it resolved to, the root volume with its type.
var footprintImportIgnore = []string{"requirements", "image", "root_volume", "capacity_type", "decision_reason", "rejected_cheaper",
	"candidates", "price_source", "hourly_price_usd", "monthly_cost_usd", "monthly_cost_scheduled_usd", "cost_note", "timeouts"}

func TestAccCPUFootprint_import(t *testing.T) {
	h := acctest.Setup(t)
	cfg := cpuFootprintConfig(h, acctest.AWSManagedKeys, "imported", `
  instance_type    = "c7i.large"
  min_size         = 0
  max_size         = 2
  desired_capacity = 1`)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "imported"),
		Steps: []resource.TestStep{{
			Config: cfg,
		}, {
			Config:                  cfg,
			ResourceName:            cpuFootprintResource,
			ImportState:             true,
			ImportStateId:           "imported",
			ImportStateVerify:       true,
			ImportStateVerifyIgnore: footprintImportIgnore,
		}},
	})
}

func TestAccCPUFootprint_disappears(t *testing.T) {
	h := acctest.Setup(t)
	cfg := cpuFootprintConfig(h, acctest.AWSManagedKeys, "gone", `
  instance_type    = "c7i.large"
  min_size         = 1
  max_size         = 2
  desired_capacity = 1`)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "gone"),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: func(s *terraform.State) error {
				tok := s.RootModule().Resources[cpuFootprintResource].Primary.Attributes["creation_token"]
				return fixtureEnv(t, h).DeleteCPUFootprint(context.Background(), "gone", tok, platform.CPUFootprintOptions{})
			},
			ExpectNonEmptyPlan: true,
		}, {
			// Only the group deleted outside: the apply makes it again.
			Config: cfg,
			Check: func(*terraform.State) error {
				c, err := h.Clients(context.Background(), acctest.Region)
				if err != nil {
					return err
				}
				_, err = c.AutoScaling.DeleteAutoScalingGroup(context.Background(), &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String("mlplatform-cpu-gone"), ForceDelete: aws.Bool(true)})
				return err
			},
			ExpectNonEmptyPlan: true,
		}, {
			Config: cfg,
			Check: checkFootprint(t, h, "gone", func(f *platform.CPUFootprint) error {
				if f.GroupName == "" || len(f.Instances) != 1 {
					return fmt.Errorf("group %q with %d instances: want it made again", f.GroupName, len(f.Instances))
				}
				return nil
			}),
		}},
	})
}

func TestAccCPUFootprint_residencyRejected(t *testing.T) {
	h := acctest.Setup(t)
	foreignKey := createKey(t, h, "eu-west-1")
	az2, err := defaultSubnet(t, h, "mec1-az2")
	if err != nil {
		t.Fatal(err)
	}
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			// Jurisdiction AE requires customer managed keys by default.
			Config: cpuFootprintConfig(h, "", "foreign", `
  instance_type    = "c7i.large"
  min_size         = 0
  max_size         = 2
  desired_capacity = 1`),
			ExpectError: cmkDefaultError("kms_key_arn"),
		}, {
			Config: cpuFootprintConfig(h, `excluded_zone_ids = ["mec1-az2"]`, "foreign", fmt.Sprintf(`
  instance_type    = "c7i.large"
  min_size         = 0
  max_size         = 2
  desired_capacity = 1
  kms_key_arn      = %q`, foreignKey)),
			ExpectError: regexp.MustCompile(`(?s)Residency violation.*kms-key-region.*eu-west-1`),
		}, {
			Config: cpuFootprintConfig(h, `excluded_zone_ids = ["mec1-az2"]`, "foreign", fmt.Sprintf(`
  instance_type    = "c7i.large"
  min_size         = 0
  max_size         = 2
  desired_capacity = 1
  subnet_ids       = [%q]`, az2.ID)),
			ExpectError: regexp.MustCompile(`(?s)Residency violation.*subnet_ids\[0\].*mec1-az2`),
		}},
	})
	if w := h.Shim.Writes(); len(w) > 0 {
		t.Errorf("a plan refused for residency wrote %d times: %v", len(w), w)
	}
	if f, err := footprint(t, h, "foreign"); err != nil || f != nil {
		t.Errorf("footprint foreign exists: %+v, %v", f, err)
	}
}

func TestAccCPUFootprint_unknownInputs(t *testing.T) {
	h := acctest.Setup(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "later"),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig(acctest.AWSManagedKeys) + `
resource "terraform_data" "sizing" {
  input = { vcpus = 2, feature = "avx512f", team = "smb", desired = 1 }
}

resource "mlplatform_cpu_footprint" "test" {
  name = "later"
  requirements = {
    min_vcpus    = terraform_data.sizing.output.vcpus
    cpu_features = [terraform_data.sizing.output.feature]
  }
  min_size         = 0
  max_size         = 2
  desired_capacity = terraform_data.sizing.output.desired
  root_volume      = { size_gib = 20 }
  tags             = { team = terraform_data.sizing.output.team }
}
`,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue(cpuFootprintResource, tfjsonpath.New("chosen_instance_type")),
				plancheck.ExpectUnknownValue(cpuFootprintResource, tfjsonpath.New("monthly_cost_usd")),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestMatchResourceAttr(cpuFootprintResource, "chosen_instance_type", regexp.MustCompile(`\.`)),
				resource.TestCheckResourceAttr(cpuFootprintResource, "tags_all.team", "smb"),
				checkFootprint(t, h, "later", func(f *platform.CPUFootprint) error {
					if len(f.Instances) != 1 {
						return fmt.Errorf("%d instances, want 1", len(f.Instances))
					}
					return nil
				}),
			),
		}},
	})
}

// TestAccCPUFootprint_example applies the documented example (with a key of
// the emulator in place of the placeholder), so it cannot drift from the
// schema.
func TestAccCPUFootprint_example(t *testing.T) {
	h := acctest.Setup(t)
	key := createKey(t, h, acctest.Region)
	example := readExample(t, "../examples/resources/mlplatform_cpu_footprint/resource.tf")
	example = regexp.MustCompile(`arn:aws:kms:me-central-1:123456789012:key/[0-9a-f-]+`).ReplaceAllString(example, key)
	const name = "mlplatform_cpu_footprint.inference"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "smb-inference"),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig("require_customer_managed_keys = true") + example,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestMatchResourceAttr(name, "chosen_instance_type", regexp.MustCompile(`^[cmr][78]i(-flex)?\.`)),
				resource.TestCheckResourceAttr(name, "asg_name", "mlplatform-cpu-smb-inference"),
				checkFootprint(t, h, "smb-inference", func(f *platform.CPUFootprint) error {
					if len(f.Instances) != 2 || len(f.ScheduledActions) != 2 {
						return fmt.Errorf("%d instances, %d scheduled actions", len(f.Instances), len(f.ScheduledActions))
					}
					return nil
				}),
			),
		}},
	})
}
