package provider_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/kubetest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// TestAccCPUFootprint_eksJoin: a CPU footprint declared with
// orchestrator.eks joins a real kube-apiserver the way a GPU cluster does
// (TestAccGPUCluster_eksJoin): its instances register tainted, the gate
// (with its role's EKS token) lifts the taint of each whose evidence
// passed, as it puts them in service; the instances' access entry is
// created before the group launches any and deleted after them.
func TestAccCPUFootprint_eksJoin(t *testing.T) {
	kubetest.Require(t)
	const name = "fp-eks"
	h, p, key := footprintGateSetup(t, name, nil)
	e := eksSetup(t, h)
	p.Kube = e
	cfg := strings.TrimSuffix(e.asGate(footprintGateConfig(h, name, 2, `["host", "cpu_features"]`, key, p.Signer.CertPEM, "")), "}\n") + `
  instance_profile = "eks-nodes"

  orchestrator = {
    eks = {
      cluster_name = "` + eksCluster + `"
    }
  }
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             e.checkEntry(""),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: resource.ComposeAggregateTestCheckFunc(
				func(s *terraform.State) error {
					return e.checkEntry(s.RootModule().Resources["mlplatform_cpu_footprint.test"].Primary.Attributes["creation_token"])(s)
				},
				func(*terraform.State) error {
					deadline := time.Now().Add(30 * time.Second)
					for {
						nodes, err := e.nodes(name)
						if err != nil {
							return err
						}
						ready := 0
						for _, n := range nodes {
							if !hasTaint(n, platform.EKSTaintKey) && n.Labels[platform.GateLabel] == platform.GatePassed && n.Labels[platform.EKSLabelResource] == "cpu-footprint" &&
								n.Labels[platform.EKSLabelInstance] == "c7i.large" {
								ready++
							}
						}
						if ready == 2 {
							return nil
						}
						if time.Now().After(deadline) {
							return fmt.Errorf("%d of %d Nodes untainted and labelled passed, want 2 (player errors %v)", ready, len(nodes), p.Errs())
						}
						time.Sleep(200 * time.Millisecond)
					}
				},
			),
		}},
	})
}

// TestAccCPUFootprint_kubeJoin: a CPU footprint declared with
// orchestrator.kubernetes joins a self-managed cluster (a real
// kube-apiserver) the way a GPU cluster does (TestAccGPUCluster_kubeJoin):
// its instances join with kubeadm discovery and the bootstrap token from
// their secret, tainted, and the gate, with the kubeconfig from its
// secret, lifts the taint of each whose evidence passed.
func TestAccCPUFootprint_kubeJoin(t *testing.T) {
	kubetest.Require(t)
	const name = "fp-kube"
	h, p, key := footprintGateSetup(t, name, nil)
	e := kubeSetup(t, h, key)
	p.Kube = e
	cfg := strings.TrimSuffix(footprintGateConfig(h, name, 2, `["host", "cpu_features"]`, key, p.Signer.CertPEM, ""), "}\n") + `
  orchestrator = {
    kubernetes = {
      kubeconfig_secret_arn = "` + e.kubeconfigSecret + `"
      join_token_secret_arn = "` + e.tokenSecret + `"
    }
  }
}
`
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: func(*terraform.State) error {
				deadline := time.Now().Add(30 * time.Second)
				for {
					nodes, err := e.admin.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: platform.EKSLabelCluster + "=" + name})
					if err != nil {
						return err
					}
					ready := 0
					for _, n := range nodes.Items {
						if !hasTaint(n, platform.EKSTaintKey) && n.Labels[platform.GateLabel] == platform.GatePassed && n.Labels[platform.EKSLabelResource] == "cpu-footprint" &&
							n.Labels[platform.EKSLabelInstance] == "c7i.large" {
							ready++
						}
					}
					e.mu.Lock()
					joined := len(e.joined)
					e.mu.Unlock()
					if ready == 2 && joined == 2 {
						return nil
					}
					if time.Now().After(deadline) {
						return fmt.Errorf("%d of %d Nodes untainted and labelled passed, %d joined through kubeadm, want 2 (player errors %v)", ready, len(nodes.Items), joined, p.Errs())
					}
					time.Sleep(200 * time.Millisecond)
				}
			},
		}},
	})
}
