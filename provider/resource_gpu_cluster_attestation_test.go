package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
)

// Hardware-attested evidence end to end: the gate's challenge reaches each
// played node as an instance tag, the node answers with hwprobe's own
// `report serve`, attested by its NitroTPM (the test build's, a test Nitro
// PKI whose genuine COSE_Sign1 documents the gate verifies with the code
// that verifies AWS's), and the configuration trusts that PKI's root
// (attestation_roots). The image is one the emulator describes with
// NitroTPM support (a shim double: moto keeps no TpmSupport).

// al2023 is the image of gateConfig.
const al2023 = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"

// tpmImage marks gateConfig's image as NitroTPM-capable in the emulator.
func tpmImage(t *testing.T, h *acctest.Harness) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.MarkImageNitroTPM(ctx, al2023); err != nil {
		t.Fatal(err)
	}
}

func attested(p *acctest.NodePlayer, mode string) string {
	return fmt.Sprintf("    timeout = \"3m\"\n    attestation = %q\n    attestation_roots = %q\n", mode, p.NitroRootPEM())
}

// forgedNVLink: node 1's NVLink is down and a writer of the prefix
// rewrites each of its answers to pass.
func forgedNVLink(index, nth int) acctest.NodeBehaviour {
	b := nvlinkDown(index, nth)
	if index == 1 {
		b.ForgeAnswer = acctest.ForgeToPass
	}
	return b
}

// Healthy nodes with NitroTPM booted from the measured image (the test
// PKI's documents carry PCRs of zeros): every answer is attested and
// verified, PCR 4 included, and apply succeeds; each report has its
// attestation document beside it.
func TestAccGPUCluster_attestedPass(t *testing.T) {
	const name = "gate-attested"
	h, p, key := gateSetup(t, name, healthyGPUs)
	tpmImage(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, attested(p, "nitrotpm")+
				fmt.Sprintf("    attestation_pcrs = { \"4\" = %q }\n", strings.Repeat("00", 48))),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "pass"),
				func(s *terraform.State) error { return attestationsBeside(h, s) },
			),
		}},
	})
}

// attestationsBeside checks that each judged report has its attestation
// document beside it in the bucket.
func attestationsBeside(h *acctest.Harness, s *terraform.State) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		return err
	}
	attrs := s.RootModule().Resources[gpuClusterResource].Primary.Attributes
	for i := range 2 {
		key := "clusters/" + attrs["name"] + "/" + attrs[fmt.Sprintf("validation_results.%d.report_key", i)]
		if _, err := c.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("uae-hwprobe-reports"), Key: aws.String(key + ".nitrotpm")}); err != nil {
			return fmt.Errorf("node %d: no attestation beside %s: %w", i, key, err)
		}
	}
	return nil
}

// A writer of the reports prefix (S3 access, no key) rewrites node 1's
// genuine failing answer to pass, keeping its attestation: the report's
// SHA-256 is not what the NitroTPM attested, so apply fails naming node 1
// and why its evidence was rejected.
func TestAccGPUCluster_attestedForgery(t *testing.T) {
	const name = "gate-forgery"
	h, p, key := gateSetup(t, name, forgedNVLink)
	tpmImage(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, attested(p, "nitrotpm")),
			ExpectError: regexp.MustCompile(`(?s)1\s+of\s+2\s+nodes\s+failed.*node\s+1\s+\(i-[0-9a-f]+\):.*rejected\s+i-[0-9a-f]+/\d+T\d+Z\.json:\s+the\s+report's\s+content\s+is\s+not\s+what\s+the\s+node's\s+NitroTPM\s+attested`),
		}},
	})
}

// The same forgery where the evidence is not hardware-attested
// (attestation = "none"): it passes the gate. This is the hole attestation
// closes, and what the plan's warning says.
func TestAccGPUCluster_unattestedForgeryPasses(t *testing.T) {
	const name = "gate-unattested"
	h, p, key := gateSetup(t, name, forgedNVLink)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, "    timeout = \"3m\"\n    attestation = \"none\""),
			Check:  resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "pass"),
		}},
	})
}

// Node 1's NitroTPM is another PKI's (a root the configuration does not
// trust): its answers are rejected.
func TestAccGPUCluster_attestedUnknownRoot(t *testing.T) {
	const name = "gate-rogue"
	rogue, err := acctest.NewNitroSigner()
	if err != nil {
		t.Fatal(err)
	}
	h, p, key := gateSetup(t, name, func(index, _ int) acctest.NodeBehaviour {
		b := acctest.GPUNode(gpuType)
		if index == 1 {
			b.Nitro = rogue
		}
		return b
	})
	tpmImage(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, attested(p, "auto")),
			ExpectError: regexp.MustCompile(`(?s)node\s+1\s+\(i-[0-9a-f]+\):.*rejected\s+i-[0-9a-f]+/\d+T\d+Z\.json:\s+the\s+attestation\s+is\s+not\s+signed\s+by\s+the\s+trusted\s+Nitro\s+root`),
		}},
	})
}

// An image without NitroTPM and attestation = "nitrotpm": the plan fails
// at validation.attestation, before anything is created.
func TestAccGPUCluster_attestationNeedsTPMImage(t *testing.T) {
	const name = "gate-no-tpm"
	h, p, key := gateSetup(t, name, healthyGPUs)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, attested(p, "nitrotpm")),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Image\s+without\s+NitroTPM.*attestation\s+=\s+"nitrotpm"\s+needs\s+an\s+image\s+with\s+NitroTPM:\s+ami-[0-9a-f]+\s+does\s+not\s+declare\s+it`),
		}},
	})
}

// A node answers the first apply's challenge; at the next apply (a scale
// out, which judges every node again) its first answer is replayed under a
// fresh key with generated_at edited to match: it answers the earlier
// challenge, so the gate passes it over, and apply fails naming the node
// and why.
func TestAccGPUCluster_replayedAnswer(t *testing.T) {
	const name = "gate-replay"
	h, p, key := gateSetup(t, name, func(index, _ int) acctest.NodeBehaviour {
		b := acctest.GPUNode(gpuType)
		b.Replay = index == 0
		return b
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{
			{
				Config: gateConfig(h, name, gpuType, 1, key, p.Signer.CertPEM, `    timeout = "1m"`),
				Check:  resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "pass"),
			},
			{
				Config:      gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, `    timeout = "1m"`),
				ExpectError: regexp.MustCompile(`(?s)timed\s+out\s+after\s+1m0s:\s+1/2\s+nodes\s+reported.*node\s+0\s+\(i-[0-9a-f]+\)\s+never\s+reported\s+an\s+answer\s+to\s+this\s+apply's\s+challenge\s+\(its\s+newest\s+report\s+passed\s+over:\s+i-[0-9a-f]+/\d+T\d+Z\.json:\s+answers\s+challenge\s+[0-9a-f]+…,\s+not\s+this\s+apply's\s+[0-9a-f]+…\s+\(a\s+report\s+of\s+an\s+earlier\s+apply,\s+or\s+replayed\)`),
			},
		},
	})
}

// Unknown is not missing: attestation, attestation_roots and a PCR value
// known only at apply (terraform_data outputs) plan without a word, and are
// checked at apply. On an image without NitroTPM, "nitrotpm" is refused
// there, before any node launches; on a NitroTPM image the same
// configuration applies, every answer attested and checked against PCR 4.
func TestAccGPUCluster_attestationUnknown(t *testing.T) {
	const name = "gate-att-unknown"
	h, p, key := gateSetup(t, name, healthyGPUs)
	extra := "    timeout = \"3m\"\n    attestation = terraform_data.att.output\n    attestation_roots = terraform_data.roots.output\n    attestation_pcrs = { \"4\" = terraform_data.pcr.output }\n"
	cfg := gateConfig(h, name, gpuType, 2, key, p.Signer.CertPEM, extra) + fmt.Sprintf(`
resource "terraform_data" "att" {
  input = "nitrotpm"
}
resource "terraform_data" "roots" {
  input = %q
}
resource "terraform_data" "pcr" {
  input = %q
}
`, p.NitroRootPEM(), strings.Repeat("00", 48))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectUnknownValue(gpuClusterResource, tfjsonpath.New("validation").AtMapKey("attestation")),
				plancheck.ExpectUnknownValue(gpuClusterResource, tfjsonpath.New("validation").AtMapKey("attestation_pcrs").AtMapKey("4")),
			}},
			ExpectError: regexp.MustCompile(`(?s)attestation\s+=\s+"nitrotpm"\s+needs\s+an\s+image\s+with\s+NitroTPM:\s+ami-[0-9a-f]+\s+does\s+not\s+declare\s+it`),
		}, {
			PreConfig: func() {
				if n := len(h.Shim.Calls("ec2", "RunInstances")); n != 0 {
					t.Fatalf("%d RunInstances before the refusal: the unknown mode was not checked before any launch", n)
				}
				tpmImage(t, h)
			},
			Config: cfg,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "pass"),
				func(s *terraform.State) error { return attestationsBeside(h, s) },
			),
		}},
	})
}
