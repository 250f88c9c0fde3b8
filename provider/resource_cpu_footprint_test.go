package provider_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

const cpuFootprintResource = "mlplatform_cpu_footprint.test"

// cpuFootprintConfig is a footprint named name with the given body lines.
func cpuFootprintConfig(residency, name, body string) string {
	return acctest.ProviderConfig(residency) + fmt.Sprintf(`
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
	f, err := fixtureEnv(t, h).FindCPUFootprint(context.Background(), name)
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
			Config: cpuFootprintConfig(`excluded_zone_ids = ["mec1-az2"]`, "smb", fmt.Sprintf(`
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
			Config: cpuFootprintConfig(`excluded_zone_ids = ["mec1-az2"]`, "smb", fmt.Sprintf(`
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

var _ = strings.Contains
var _ = aws.String
var _ = autoscaling.New
