package provider_test

import (
	"context"
	"encoding/base64"
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
// trusts. This machine has no GPU: the player's hwprobe is built with the
// test-only NVML backend (tag hwprobe_nvmlmock), and each node's GPUs are
// go-nvml's mock server for its type (p5en: 8x H200, 18 NVLink links
// each) with the faults a test names, so hwprobe's real GPU checks run.
// The GPU clusters' profiles check the host and the GPUs (checks =
// ["host", "gpu"]): a p5en's 192 vCPUs and AMX are not this machine's.

// gateSetup creates the reports bucket and key and starts the node player
// for cluster name; it stops when the test ends.
func gateSetup(t *testing.T, name string, behaviour func(index, nth int) acctest.NodeBehaviour) (*acctest.Harness, *acctest.NodePlayer, string) {
	t.Helper()
	return gateSetupWith(t, acctest.Setup(t), name, behaviour)
}

// gateSetupWith is gateSetup on the harness h.
// configure, when given, sets the player up before it watches.
func gateSetupWith(t *testing.T, h *acctest.Harness, name string, behaviour func(index, nth int) acctest.NodeBehaviour, configure ...func(*acctest.NodePlayer)) (*acctest.Harness, *acctest.NodePlayer, string) {
	t.Helper()
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	key := createKey(t, h, acctest.Region)
	p := acctest.NewNodePlayer(t, h)
	p.Behaviour = behaviour
	for _, f := range configure {
		f(p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Watch(ctx, name) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, p, key
}

// gpuType is the GPU clusters' type in the gate's tests: p5en.48xlarge,
// offered in me-central-1, whose GPUs the node player's mock plays.
const gpuType = "p5en.48xlarge"

// gateConfig is a cluster of instanceType with a validation block. A type
// whose GPUs the node player can play is checked for host and GPUs;
// another for host and CPU features. key, a customer managed key,
// encrypts the volumes and the reports.
func gateConfig(h *acctest.Harness, name, instanceType string, nodes int, key, certPEM, extra string) string {
	checks := `["host", "cpu_features"]`
	if acctest.NVMLMockMachine(instanceType) != "" {
		checks = `["host", "gpu"]`
	}
	return h.ProviderConfig("") + fmt.Sprintf(`
resource "mlplatform_gpu_cluster" "test" {
  name          = %q
  instance_type = %q
  node_count    = %d
  zone_id       = "mec1-az1"
  image         = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
  user_data     = "#!/bin/sh\necho the user's own user data\n"
  root_volume   = { size_gib = 200 }
  kms_key_arn   = %[5]q
  capacity_retry = { attempts = 2, initial_delay = "10ms" }

  validation = {
    checks               = %[4]s
    reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
    reports_kms_key_arn  = %[5]q
    trusted_certificates = %[6]q
%[7]s
  }
}
`, name, instanceType, nodes, checks, key, certPEM, extra)
}

// healthyGPUs plays every node with healthy GPUs.
func healthyGPUs(int, int) acctest.NodeBehaviour { return acctest.GPUNode(gpuType) }

// Healthy p5en nodes: hwprobe's GPU checks run against the mock H200s and
// pass, and apply succeeds.
func TestAccGPUCluster_validationPass(t *testing.T) {
	const name = "gate-pass"
	h, p, key := gateSetup(t, name, healthyGPUs)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				// The profile and bootstrap are in the plan.
				plancheck.ExpectKnownValue(gpuClusterResource, tfjsonpath.New("validation_profile"), knownContains(`min_nvlink_links = 18`)),
				plancheck.ExpectKnownValue(gpuClusterResource, tfjsonpath.New("validation_bootstrap"), knownContains("Content-Type: multipart/mixed")),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.#", "2"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.attested_region", "me-central-1"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.attested_zone_id", "mec1-az1"),
				resource.TestMatchResourceAttr(gpuClusterResource, "validation_results.1.summary", regexp.MustCompile(`^\d+ checks passed$`)),
				resource.TestMatchResourceAttr(gpuClusterResource, "validation_profile", regexp.MustCompile(`instance_type = "p5en.48xlarge"`)),
				resource.TestMatchResourceAttr(gpuClusterResource, "validation_profile", regexp.MustCompile(`(?s)gpu \{.*model += "H200".*count += 8`)),
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
			Config: gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, "") + fmt.Sprintf(`
data "mlplatform_validation_reports" "test" {
  name                 = mlplatform_gpu_cluster.test.name
  reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
  trusted_certificates = %[1]q
}

# Narrowed as the gate narrows: the cluster's profile (its reports), another
# profile (none), and an age no report is young enough for.
data "mlplatform_validation_reports" "profile" {
  name                 = mlplatform_gpu_cluster.test.name
  reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
  trusted_certificates = %[1]q
  profile              = mlplatform_gpu_cluster.test.validation_profile
  max_age              = "24h"
}

data "mlplatform_validation_reports" "other" {
  name                 = mlplatform_gpu_cluster.test.name
  reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
  trusted_certificates = %[1]q
  profile              = "name = \"another\"\n"
}

data "mlplatform_validation_reports" "old" {
  name                 = mlplatform_gpu_cluster.test.name
  reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
  trusted_certificates = %[1]q
  max_age              = "1ms"
}
`, p.Signer.CertPEM),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.profile", "reports.0.status", "pass"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.profile", "reports.1.status", "pass"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.other", "reports.0.status", "missing"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.other", "reports.1.status", "missing"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.old", "reports.0.status", "missing"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "id", "s3://uae-hwprobe-reports/clusters/"+name+"/"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.#", "2"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.0.status", "pass"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.1.attested_zone_id", "mec1-az1"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.0.checks.0.id", "host.region"),
				resource.TestCheckResourceAttr("data.mlplatform_validation_reports.test", "reports.0.checks.0.observed", "me-central-1"),
				// The GPU checks ran and passed: not skipped, not "not run".
				resource.TestCheckTypeSetElemNestedAttrs("data.mlplatform_validation_reports.test", "reports.0.checks.*", map[string]string{"id": "gpu.count", "status": "pass", "observed": "8"}),
				resource.TestCheckTypeSetElemNestedAttrs("data.mlplatform_validation_reports.test", "reports.0.checks.*", map[string]string{"id": "gpu.model", "subject": "gpu0", "status": "pass", "observed": "NVIDIA H200 141GB HBM3e"}),
				resource.TestCheckTypeSetElemNestedAttrs("data.mlplatform_validation_reports.test", "reports.1.checks.*", map[string]string{"id": "gpu.nvlink", "subject": "gpu7", "status": "pass", "observed": "18/18 active"}),
				resource.TestCheckTypeSetElemNestedAttrs("data.mlplatform_validation_reports.test", "reports.1.checks.*", map[string]string{"id": "gpu.memory", "subject": "gpu3", "status": "pass"}),
				func(s *terraform.State) error {
					// Every GPU check of both nodes passed: 8 GPUs x 6
					// checks and the count, none failed or not run.
					attrs := s.RootModule().Resources["data.mlplatform_validation_reports.test"].Primary.Attributes
					for r := range 2 {
						gpuPass := 0
						for k, v := range attrs {
							pre := fmt.Sprintf("reports.%d.checks.", r)
							if !strings.HasPrefix(k, pre) || !strings.HasSuffix(k, ".id") || !strings.HasPrefix(v, "gpu.") {
								continue
							}
							st := attrs[strings.TrimSuffix(k, ".id")+".status"]
							if st != "pass" {
								return fmt.Errorf("report %d: %s is %s", r, v, st)
							}
							gpuPass++
						}
						if gpuPass != 49 {
							return fmt.Errorf("report %d: %d GPU checks passed, want 49", r, gpuPass)
						}
					}
					return nil
				},
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

// nvlinkDown plays node 1's first instance with GPU 3's NVLink 17 down,
// and every other node healthy.
func nvlinkDown(index, nth int) acctest.NodeBehaviour {
	if index == 1 && nth == 0 {
		return acctest.GPUNode(gpuType, "nvlink_down=3:17")
	}
	return acctest.GPUNode(gpuType)
}

// Node 1 has an NVLink down: apply fails naming the node, the GPU and the
// link.
func TestAccGPUCluster_validationFail(t *testing.T) {
	const name = "gate-fail"
	h, p, key := gateSetup(t, name, nvlinkDown)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, ""),
			ExpectError: regexp.MustCompile(`(?s)validation\s+of\s+GPU\s+cluster\s+gate-fail\s+failed:\s+1\s+of\s+2\s+nodes\s+failed.*node\s+1\s+\(i-[0-9a-f]+\):\s+gpu\.nvlink\s+gpu3:\s+expected\s+>=\s+18\s+active,\s+observed\s+17/18\s+active\s+\(gpu3:\s+17\s+of\s+18\s+NVLink\s+links\s+active,\s+profile\s+needs\s+18;\s+down:\s+link\s+17\)`),
		}},
	})
}

// on_failure = "warn": the same failing node, apply succeeds and records
// the failure.
func TestAccGPUCluster_validationWarn(t *testing.T) {
	const name = "gate-warn"
	h, p, key := gateSetup(t, name, nvlinkDown)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, `    on_failure = "warn"`),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "fail"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.summary", "gpu.nvlink gpu3: expected >= 18 active, observed 17/18 active (gpu3: 17 of 18 NVLink links active, profile needs 18; down: link 17)"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.failures.#", "1"),
				resource.TestCheckResourceAttr(gpuClusterResource, "node_ids.#", "2"),
			),
		}},
	})
}

// A node that never reports: apply fails after the timeout naming it.
func TestAccGPUCluster_validationTimeout(t *testing.T) {
	const name = "gate-timeout"
	h, p, key := gateSetup(t, name, func(index, _ int) acctest.NodeBehaviour {
		b := acctest.GPUNode(gpuType)
		b.Silent = index == 1
		return b
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, `    timeout = "1m"`),
			ExpectError: regexp.MustCompile(`(?s)validation\s+of\s+GPU\s+cluster\s+gate-timeout\s+timed\s+out\s+after\s+1m0s:\s+1/2\s+nodes\s+reported.*node\s+1\s+\(i-[0-9a-f]+\)\s+never\s+reported;\s+the\s+end\s+of\s+its\s+console\s+output\s+is\s+in\s+the\s+provider.s\s+log`),
		}},
	})
}

// A report whose identity document is another instance's is rejected.
func TestAccGPUCluster_validationForged(t *testing.T) {
	const name = "gate-forged"
	var other string
	h, p, key := gateSetup(t, name, func(index, _ int) acctest.NodeBehaviour {
		b := acctest.GPUNode(gpuType)
		if index == 1 {
			b.IdentityOf = other
		}
		return b
	})
	other = "i-0123456789abcdef0" // an instance that is not node 1
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, `    timeout = "3m"`),
			ExpectError: regexp.MustCompile(`(?s)1\s+of\s+2\s+nodes\s+failed.*node\s+1\s+\(i-[0-9a-f]+\):.*rejected\s+i-[0-9a-f]+/\d+T\d+Z\.json:\s+identity\s+of\s+instance\s+i-0123456789abcdef0,\s+not\s+of\s+node\s+1`),
		}},
	})
}

// 10,000 objects under a node's own prefix (anyone who may write there):
// the gate lists at most 256 of them, in one page, reads none of the junk
// and fails naming the node and the bound, instead of reading them all.
func TestAccGPUCluster_validationFlood(t *testing.T) {
	const name = "gate-flood"
	h, p, key := gateSetup(t, name, func(index, _ int) acctest.NodeBehaviour {
		b := acctest.GPUNode(gpuType)
		if index == 0 {
			b.Flood = 10_000
		}
		return b
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(h, name, gpuType, 1, key, p.Signer.CertPEM, `    timeout = "3m"`),
			ExpectError: regexp.MustCompile(`(?s)node\s+0\s+\(i-[0-9a-f]+\):\s+more\s+than\s+256\s+objects\s+under\s+s3://uae-hwprobe-reports/.*i-[0-9a-f]+/:\s+the\s+validation\s+gate\s+reads\s+at\s+most\s+256`),
		}},
	})
	// The gate listed one page of at most 257 keys a look, and read no
	// junk body.
	var lists int
	for _, c := range h.Shim.Calls("s3", "ListObjectsV2") {
		if !c.Fixture {
			lists++
		}
	}
	if lists == 0 || lists > 20 {
		t.Errorf("the gate listed %d pages", lists)
	}
	for _, c := range h.Shim.Calls("s3", "GetObject") {
		if strings.Contains(c.Path, "flood-") {
			t.Errorf("the gate read a flood object: %s", c.Path)
		}
	}
}

// on_failure = "replace": node 1's first instance has an NVLink down and
// hwprobe fails it; the gate terminates it, a new instance is launched at
// index 1, its GPUs are healthy, and apply passes.
func TestAccGPUCluster_validationReplace(t *testing.T) {
	const name = "gate-replace"
	h, p, key := gateSetup(t, name, nvlinkDown)
	var first []string
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, `    on_failure = "replace"`),
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

// Without trusted_certificates the gate would trust AWS's certificate for
// the region, but none is embedded for me-central-1 (no checkable copy):
// the plan says so and nothing is created.
func TestAccGPUCluster_validationCertificates(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	key := createKey(t, h, acctest.Region)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(h, "gate-certs", gpuType, 1, key, "", ""),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)No trusted certificates.*mlplatform carries\s+AWS's\s+RSA-2048\s+certificates\s+for\s+us-east-1,\s+us-west-2,\s+eu-central-1,\s+not\s+for\s+me-central-1:\s+set\s+validation\.trusted_certificates`),
		}},
	})
}
