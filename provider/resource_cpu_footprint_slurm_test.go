package provider_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/slurmtest"
)

// TestAccCPUFootprint_slurmJoin: a CPU footprint declared with
// orchestrator.slurm joins a real Slurm cluster (Debian's Slurm 22.05):
// each instance, validated by hwprobe at boot, joins as PREFIX-INSTANCEID
// with the features of its profile and no gres, and is in service; its
// instances leave Slurm as they shut down at destroy: no ghost node.
func TestAccCPUFootprint_slurmJoin(t *testing.T) {
	const name = "fp-slurm"
	h, p, key := footprintGateSetup(t, name, nil)
	sc := slurmtest.Start(t, slurmtest.Options{Dynamic: true})
	p.Slurm = sc
	secret := createMungeSecret(t, h, acctest.Region, "slurm/munge-fp", sc.MungeKey, key)
	cfg := strings.TrimSuffix(footprintGateConfig(h, name, 2, `["host", "cpu_features"]`, key, p.Signer.CertPEM, ""), "}\n") + fmt.Sprintf(`
  orchestrator = {
    slurm = {
      controllers          = [%q]
      munge_key_secret_arn = %q
      partition            = "cpu"
      features             = ["smb"]
    }
  }
}
`, sc.Controller, secret)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             func(*terraform.State) error { return waitSlurmNodes(sc, nil) },
		Steps: []resource.TestStep{{
			Config:           cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{configureController{c: sc, address: "mlplatform_cpu_footprint.test"}}},
			Check: func(*terraform.State) error {
				deadline := time.Now().Add(60 * time.Second)
				for {
					ns, err := sc.Nodes()
					inService := 0
					for _, n := range ns {
						if slurmtest.InService(n) {
							inService++
						}
					}
					if err == nil && len(ns) == 2 && inService == 2 {
						for _, n := range ns {
							feats := n.Fields["AvailableFeatures"]
							if !strings.HasPrefix(n.Name, name+"-i-") || !strings.Contains(feats, "c7i.large") || !strings.Contains(feats, "smb") ||
								n.Fields["Partitions"] != "cpu" || (n.Fields["Gres"] != "" && n.Fields["Gres"] != "(null)") {
								return fmt.Errorf("%s: features %q, partitions %q, gres %q", n.Name, feats, n.Fields["Partitions"], n.Fields["Gres"])
							}
						}
						if errs := p.Errs(); len(errs) > 0 {
							return fmt.Errorf("node player: %v", errs)
						}
						return nil
					}
					if time.Now().After(deadline) {
						return fmt.Errorf("Slurm lists %d nodes, %d in service (%v), want 2 (player errors %v)", len(ns), inService, err, p.Errs())
					}
					time.Sleep(200 * time.Millisecond)
				}
			},
		}},
	})
}
