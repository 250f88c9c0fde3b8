package provider_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The validation gate end to end: the real Terraform CLI applies a GPU
// cluster with a validation block against the emulator while the node
// player (acctest.NodePlayer) plays its nodes: it reads the profile from
// the launch template's user data, runs the real hwprobe on this machine
// (real CPU probe) and publishes each report to the emulator's S3, with an
// identity document signed by the test's own key, which the configuration
// trusts. This machine has no GPU and no NVML mock backend is built into
// hwprobe, so the profiles check the host and the CPU features (checks =
// ["host", "cpu_features"]); the GPU sections are covered by the core's
// unit tests (TestGateDecide, TestProfileForGPUCluster).

// gateSetup creates the reports bucket and key and starts the node player
// for cluster name; it stops when the test ends.
func gateSetup(t *testing.T, name string, behaviour func(index, nth int) acctest.NodeBehaviour) (*acctest.Harness, *acctest.NodePlayer, string) {
	t.Helper()
	h := acctest.Setup(t)
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	key := createKey(t, h, acctest.Region)
	p := acctest.NewNodePlayer(t, h)
	p.Behaviour = behaviour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Watch(ctx, name) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, p, key
}

// gateConfig is a cluster of instanceType with a validation block.
func gateConfig(name, instanceType string, nodes int, key, certPEM, extra string) string {
	return acctest.ProviderConfig("") + fmt.Sprintf(`
resource "mlplatform_gpu_cluster" "test" {
  name          = %q
  instance_type = %q
  node_count    = %d
  zone_id       = "mec1-az1"
  image         = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
  user_data     = "#!/bin/sh\necho the user's own user data\n"
  root_volume   = { size_gib = 200 }
  capacity_retry = { attempts = 2, initial_delay = "10ms" }

  validation = {
    checks               = ["host", "cpu_features"]
    reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
    reports_kms_key_arn  = %q
    trusted_certificates = %q
%s
  }
}
`, name, instanceType, nodes, key, certPEM, extra)
}

func TestAccGPUCluster_validationPass(t *testing.T) {
	const name = "gate-pass"
	h, p, key := gateSetup(t, name, nil)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: gateConfig(name, "g6.xlarge", 2, key, p.Signer.CertPEM, ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				// The profile and bootstrap are in the plan.
				plancheck.ExpectKnownValue(gpuClusterResource, tfjsonpath.New("validation_profile"), knownContains(`features = ["sse4_2", "avx", "avx2", "fma", "f16c"]`)),
				plancheck.ExpectKnownValue(gpuClusterResource, tfjsonpath.New("validation_bootstrap"), knownContains("Content-Type: multipart/mixed")),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.#", "2"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.attested_region", "me-central-1"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.attested_zone_id", "mec1-az1"),
				resource.TestMatchResourceAttr(gpuClusterResource, "validation_results.1.summary", regexp.MustCompile(`^\d+ checks passed$`)),
				resource.TestMatchResourceAttr(gpuClusterResource, "validation_profile", regexp.MustCompile(`instance_type = "g6.xlarge"`)),
				func(s *terraform.State) error {
					// The launch template carries the bootstrap around the
					// user's own user data, and the player ran both nodes.
					lt, err := ec2Client(t, h).DescribeLaunchTemplateVersions(context.Background(), &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: aws.String("mlplatform-" + name), Versions: []string{"$Latest"}})
					if err != nil || len(lt.LaunchTemplateVersions) != 1 {
						return fmt.Errorf("launch template: %v", err)
					}
					raw, err := base64.StdEncoding.DecodeString(aws.ToString(lt.LaunchTemplateVersions[0].LaunchTemplateData.UserData))
					if err != nil {
						return err
					}
					parts, err := platform.ParseBootstrap(string(raw))
					if err != nil {
						return err
					}
					if parts.UserData != "#!/bin/sh\necho the user's own user data\n" || !strings.Contains(parts.Script, "hwprobe\" validate --profile") {
						return fmt.Errorf("bootstrap parts: %+v", parts)
					}
					if got := s.RootModule().Resources[gpuClusterResource].Primary.Attributes["validation_profile"]; got != parts.Profile {
						return fmt.Errorf("validation_profile differs from the launch template's profile")
					}
					if n := len(p.Played()); n != 2 {
						return fmt.Errorf("the player ran %d nodes, want 2", n)
					}
					if errs := p.Errs(); len(errs) > 0 {
						return fmt.Errorf("node player: %v", errs)
					}
					return nil
				},
			),
		}, {
			// The reports, read back by the data source.
			Config: gateConfig(name, "g6.xlarge", 2, key, p.Signer.CertPEM, "") + fmt.Sprintf(`
data "mlplatform_validation_reports" "test" {
  name                 = mlplatform_gpu_cluster.test.name
  reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
  trusted_certificates = %q
}
`, p.Signer.CertPEM),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "id", "s3://uae-hwprobe-reports/clusters/"+name+"/"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.#", "2"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.0.status", "pass"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.1.attested_zone_id", "mec1-az1"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.0.checks.0.id", "host.region"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.0.checks.0.observed", "me-central-1"),
				resource.TestCheckTypeSetElemNestedAttrs("data.mlplatform_validation_reports.test", "reports.0.checks.*", map[string]string{"id": "cpu.feature", "subject": "avx2", "status": "pass"}),
			),
		}},
	})
}

// knownContains checks that a planned string value is known and contains s.
func knownContains(s string) knownStringCheck { return knownStringCheck{want: s} }

type knownStringCheck struct{ want string }

func (c knownStringCheck) CheckValue(v any) error {
	str, ok := v.(string)
	if !ok {
		return fmt.Errorf("value is %T, want a known string", v)
	}
	if !strings.Contains(str, c.want) {
		return fmt.Errorf("value does not contain %q:\n%s", c.want, str)
	}
	return nil
}

func (c knownStringCheck) String() string { return "contains " + c.want }

// A p5en profile demands AMX, which this machine lacks: apply fails
// naming the node and the feature.
func TestAccGPUCluster_validationFail(t *testing.T) {
	const name = "gate-fail"
	_, p, key := gateSetup(t, name, nil)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(name, "p5en.48xlarge", 1, key, p.Signer.CertPEM, ""),
			ExpectError: regexp.MustCompile(`(?s)validation\s+of\s+GPU\s+cluster\s+gate-fail\s+failed:\s+1\s+of\s+1\s+nodes\s+failed.*node\s+0\s+\(i-[0-9a-f]+\):.*cpu\.feature\s+amx_tile:\s+expected\s+present,\s+observed\s+absent`),
		}},
	})
}

// on_failure = "warn": the same failing node, apply succeeds and records
// the failure.
func TestAccGPUCluster_validationWarn(t *testing.T) {
	const name = "gate-warn"
	_, p, key := gateSetup(t, name, nil)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: gateConfig(name, "p5en.48xlarge", 1, key, p.Signer.CertPEM, `    on_failure = "warn"`),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "fail"),
				resource.TestMatchResourceAttr(gpuClusterResource, "validation_results.0.summary", regexp.MustCompile(`^cpu\.feature \w+: expected present, observed absent`)),
				resource.TestCheckResourceAttr(gpuClusterResource, "node_ids.#", "1"),
				func(s *terraform.State) error {
					// Among the failures: AMX, which p5en's Sapphire Rapids
					// has and this machine does not.
					for k, v := range s.RootModule().Resources[gpuClusterResource].Primary.Attributes {
						if strings.HasPrefix(k, "validation_results.0.failures.") && strings.HasPrefix(v, "cpu.feature amx_tile: expected present, observed absent") {
							return nil
						}
					}
					return fmt.Errorf("no amx_tile failure recorded")
				},
			),
		}},
	})
}

// A node that never reports: apply fails after the timeout naming it.
func TestAccGPUCluster_validationTimeout(t *testing.T) {
	const name = "gate-timeout"
	_, p, key := gateSetup(t, name, func(index, _ int) acctest.NodeBehaviour { return acctest.NodeBehaviour{Silent: index == 1} })
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(name, "g6.xlarge", 2, key, p.Signer.CertPEM, `    timeout = "1m"`),
			ExpectError: regexp.MustCompile(`(?s)validation\s+of\s+GPU\s+cluster\s+gate-timeout\s+timed\s+out\s+after\s+1m0s:\s+1/2\s+nodes\s+reported.*node\s+1\s+\(i-[0-9a-f]+\)\s+never\s+reported;\s+its\s+console\s+output`),
		}},
	})
}

// A report whose identity document is another instance's is rejected.
func TestAccGPUCluster_validationForged(t *testing.T) {
	const name = "gate-forged"
	var other string
	_, p, key := gateSetup(t, name, func(index, _ int) acctest.NodeBehaviour {
		if index == 1 {
			return acctest.NodeBehaviour{IdentityOf: other}
		}
		return acctest.NodeBehaviour{}
	})
	other = "i-0123456789abcdef0" // an instance that is not node 1
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(name, "g6.xlarge", 2, key, p.Signer.CertPEM, `    timeout = "3m"`),
			ExpectError: regexp.MustCompile(`(?s)1\s+of\s+2\s+nodes\s+failed.*node\s+1\s+\(i-[0-9a-f]+\):.*rejected\s+i-[0-9a-f]+/\d+T\d+Z\.json:\s+identity\s+of\s+instance\s+i-0123456789abcdef0,\s+not\s+of\s+node\s+1`),
		}},
	})
}

// on_failure = "replace": node 1's first instance reports a failed check
// (the player adds the NVLink failure hwprobe would report on a node with
// a link down: this machine has no GPU); the gate terminates it, a new
// instance is launched at index 1 and reports healthy, and apply passes.
func TestAccGPUCluster_validationReplace(t *testing.T) {
	const name = "gate-replace"
	_, p, key := gateSetup(t, name, func(index, nth int) acctest.NodeBehaviour {
		if index == 1 && nth == 0 {
			return acctest.NodeBehaviour{Report: addNVLinkFailure}
		}
		return acctest.NodeBehaviour{}
	})
	var first []string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: gateConfig(name, "g6.xlarge", 2, key, p.Signer.CertPEM, `    on_failure = "replace"`),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.#", "2"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "pass"),
				func(s *terraform.State) error {
					first = p.Played()
					if len(first) != 3 {
						return fmt.Errorf("the player ran %d instances, want 3 (node 1 replaced once): %v", len(first), first)
					}
					ids, err := clusterNodeIDs(s)
					if err != nil || len(ids) != 2 {
						return fmt.Errorf("node ids %v: %v", ids, err)
					}
					return nil
				},
			),
		}},
	})
}

// addNVLinkFailure adds to a report the failed check of a GPU with one
// NVLink link down.
func addNVLinkFailure(raw []byte) ([]byte, error) {
	var r map[string]any
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	v, _ := r["validation"].(map[string]any)
	if v == nil {
		return nil, fmt.Errorf("report without validation")
	}
	checks, _ := v["checks"].([]any)
	v["checks"] = append(checks, map[string]any{"id": "gpu.nvlink", "subject": "gpu3", "status": "fail", "expected": ">= 18", "observed": "17", "reason": "17 of 18 NVLink links active"})
	v["exit_code"] = 1
	return json.MarshalIndent(r, "", "  ")
}
