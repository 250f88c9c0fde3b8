package provider_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/slurmtest"
)

// createMungeSecret stores key as a Secrets Manager secret encrypted with
// kmsKey, in the emulator, and returns its ARN.
func createMungeSecret(t *testing.T, h *acctest.Harness, region, name string, key []byte, kmsKey string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, region)
	if err != nil {
		t.Fatal(err)
	}
	in := &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretBinary: key}
	if kmsKey != "" {
		in.KmsKeyId = aws.String(kmsKey)
	}
	out, err := acctest.SecretsManager(c).CreateSecret(ctx, in)
	if err != nil {
		t.Fatalf("creating the munge key's secret: %v", err)
	}
	return aws.ToString(out.ARN)
}

// slurmClusterConfig is gateConfig's cluster joining the Slurm cluster
// whose controller is controller.
func slurmClusterConfig(h *acctest.Harness, name string, nodes int, key, certPEM, controller, secretARN string, validation ...string) string {
	c := gateConfig(h, name, gpuType, nodes, key, certPEM, strings.Join(append([]string{`    timeout = "3m"`}, validation...), "\n"))
	return strings.TrimSuffix(c, "}\n") + fmt.Sprintf(`
  orchestrator = {
    slurm = {
      controllers          = [%q]
      munge_key_secret_arn = %q
      partition            = "gpu"
      features             = ["team-vision"]
    }
  }
}
`, controller, secretARN)
}

// jobEnded says whether a job that ran on a node while its what (a
// scale-in, a destroy) began had ended by the time what finished, and
// ended well.
func jobEnded(job <-chan error, what string) error {
	select {
	case err := <-job:
		if err != nil {
			return fmt.Errorf("the job running at the %s did not finish: %v", what, err)
		}
		return nil
	default:
		return fmt.Errorf("the %s finished while the job on its node still ran", what)
	}
}

// waitSlurmNodes waits up to 30 seconds until the controller lists
// exactly the nodes want (by name, in any order; nil: none).
func waitSlurmNodes(sc *slurmtest.Cluster, want []string) error {
	deadline := time.Now().Add(30 * time.Second)
	want = slices.Sorted(slices.Values(want))
	for {
		ns, err := sc.Nodes()
		var got []string
		for _, n := range ns {
			got = append(got, n.Name)
		}
		slices.Sort(got)
		if err == nil && slices.Equal(got, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Slurm lists nodes %v (%v), want %v", got, err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// configureController is a plan check that does what the platform team
// does with the plan: add slurm_controller_config to the controller
// before the nodes join. The test's controller checks its health every 2
// seconds instead of the proposed 300.
type configureController struct {
	c *slurmtest.Cluster
	// address is the cluster's resource address ("": gpuClusterResource).
	address string
}

func (cc configureController) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	address := cmp.Or(cc.address, gpuClusterResource)
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != address {
			continue
		}
		after, _ := rc.Change.After.(map[string]any)
		conf, ok := after["slurm_controller_config"].(string)
		if !ok || conf == "" {
			resp.Error = fmt.Errorf("slurm_controller_config is not known at plan: %v", after["slurm_controller_config"])
			return
		}
		conf = strings.Replace(conf, fmt.Sprintf("HealthCheckInterval=%d", 300), "HealthCheckInterval=2", 1)
		if err := cc.c.AddConfig(conf); err != nil {
			resp.Error = fmt.Errorf("configuring the controller: %w", err)
		}
		return
	}
	resp.Error = fmt.Errorf("no change for %s in the plan", address)
}

// TestAccGPUCluster_slurmJoin: a GPU cluster declared with
// orchestrator.slurm joins a real Slurm cluster (Debian's Slurm 22.05: a
// controller, and a real slurmd and munged per node, started by the node
// player from what the node's own `hwprobe slurm join` fetched and
// decided). The real Terraform CLI applies the cluster; each node joins
// with the gres, features and memory of its profile; srun on a node sees
// its two GPUs; a node whose GPU falls off is drained by hwprobe within
// one health check interval and a job that needs every node waits; when
// the GPU is back, hwprobe resumes the node and the job runs; an
// administrator's drain is never resumed. A scale-in waits for the job on
// its node: the node drains on the provider's request (`hwprobe slurm
// watch`), its job ends, it leaves Slurm, and only then is its instance
// terminated; every node leaves at destroy as its instance shuts down
// (`hwprobe slurm leave`): no ghost node.
func TestAccGPUCluster_slurmJoin(t *testing.T) {
	start := time.Now()
	const name = "slurm-join"
	h, p, key := gateSetup(t, name, healthyGPUs)
	sc := slurmtest.Start(t, slurmtest.Options{Dynamic: true})
	p.Slurm = sc
	secret := createMungeSecret(t, h, acctest.Region, "slurm/munge", sc.MungeKey, key)
	nodes := []string{name + "-0", name + "-1"}
	inService := slurmtest.InService
	waitNodes := func(want []string) error { return waitSlurmNodes(sc, want) }
	joined := func(s *terraform.State) error {
		prof := s.RootModule().Resources[gpuClusterResource].Primary.Attributes["validation_profile"]
		sum := sha256.Sum256([]byte(prof))
		wantFeatures := []string{"mlplatform", name, "p5en.48xlarge", "h200", "efa", "pg-mlplatform-" + name, "profile-" + hex.EncodeToString(sum[:])[:12], "team-vision"}
		for _, nn := range nodes {
			n := sc.WaitNode(nn, 60*time.Second, "joined and in service", inService)
			if got := strings.Split(n.Fields["AvailableFeatures"], ","); !slices.Equal(got, wantFeatures) {
				return fmt.Errorf("%s: features %v, want %v (from the profile)", nn, got, wantFeatures)
			}
			if got := n.Fields["Gres"]; got != "gpu:h200:8" {
				return fmt.Errorf("%s: gres %q, want gpu:h200:8", nn, got)
			}
			if got := n.Fields["Partitions"]; got != "gpu" {
				return fmt.Errorf("%s: partitions %q, want gpu", nn, got)
			}
		}
		out, err := sc.Srun(context.Background(), "-w", nodes[0], "-p", "gpu", "--gres=gpu:2", "sh", "-c", `echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"; ls /dev | grep -c '^nvidia'`)
		if err != nil {
			return err
		}
		if got := strings.Fields(out); !slices.Equal(got, []string{nodes[0], "0,1", "8"}) {
			return fmt.Errorf("srun --gres=gpu:2 printed %q, want the node, devices 0,1 and its 8 device files", out)
		}
		// slurmd's own first run came before the node existed in the
		// controller (nothing to do, exit 0); the node registered drained,
		// and its first check after registration resumed it.
		runs := sc.HealthRuns(nodes[0])
		for _, want := range []string{"the controller does not know this node yet", "passed its first check after it registered drained: resumed"} {
			if !strings.Contains(runs, want) {
				return fmt.Errorf("%s: the health checks never said %q:\n%s", nodes[0], want, runs)
			}
		}
		if strings.Contains(runs, "=== exit 2") {
			return fmt.Errorf("%s: a health check could not run:\n%s", nodes[0], runs)
		}
		return nil
	}
	// A GPU falls off node 1: hwprobe drains it, a job for both nodes
	// waits; the GPU is back: hwprobe resumes it, the job runs.
	gpuFallsOff := func(*terraform.State) error {
		if err := sc.SetNodeEnv(nodes[1], "HWPROBE_NVML_MOCK", acctest.GPUNode(gpuType).NVMLMock+";gpus=7"); err != nil {
			return err
		}
		n := sc.WaitNode(nodes[1], 20*time.Second, "drained by hwprobe", slurmtest.DrainedBy("hwprobe: gpu.count"))
		t.Logf("%s: %s, reason %q", nodes[1], n.State, n.Reason)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := sc.Srun(ctx, "-p", "gpu", "-N", "2", "true")
			done <- err
		}()
		select {
		case err := <-done:
			return fmt.Errorf("a job for both nodes ran while one is drained: %v", err)
		case <-time.After(5 * time.Second):
		}
		if err := sc.SetNodeEnv(nodes[1], "HWPROBE_NVML_MOCK", acctest.GPUNode(gpuType).NVMLMock); err != nil {
			return err
		}
		sc.WaitNode(nodes[1], 20*time.Second, "resumed", inService)
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("the job did not run once the node was resumed: %v", err)
			}
		case <-ctx.Done():
			return fmt.Errorf("the job did not run once the node was resumed")
		}
		return nil
	}
	// An administrator drains node 0: hwprobe never resumes it.
	adminDrain := func(*terraform.State) error {
		if _, err := sc.Scontrol("update", "nodename="+nodes[0], "state=drain", "reason=maintenance"); err != nil {
			return err
		}
		time.Sleep(5 * time.Second) // two health check intervals, each passing
		n, err := sc.ShowNode(nodes[0])
		if err != nil || !n.State.Drained() || n.Reason != "maintenance" {
			return fmt.Errorf("%s: %s %q %v, want drained for maintenance", nodes[0], n.State, n.Reason, err)
		}
		if runs := sc.HealthRuns(nodes[0]); !strings.Contains(runs, "drained by someone else (maintenance): left drained") {
			return fmt.Errorf("the health check did not see the administrator's drain:\n%s", runs)
		}
		_, err = sc.Scontrol("update", "nodename="+nodes[0], "state=resume")
		return err
	}
	// A job on node 1 when a scale-in begins, held running until the
	// test releases it. With an update timeout of 10 seconds the apply
	// fails, naming the node, which stays drained for leaving with its
	// job running and its instance up. The next apply waits for the job
	// to end (exit 0: not killed with its node) and only then terminates
	// the instance.
	var job *slurmtest.Job
	startJob := func() {
		job = sc.HoldJob("-w", nodes[1], "-p", "gpu")
		sc.WaitNode(nodes[1], 20*time.Second, "running the job", slurmtest.Busy)
	}
	heldByTheJob := func() {
		n, err := sc.ShowNode(nodes[1])
		if err != nil || !slurmtest.DrainedBy("hwprobe: leaving: requested by mlplatform")(n) || !n.State.Busy() {
			t.Fatalf("after the timed-out scale-in, %s is %s (reason %q, %v): want drained for leaving, its job running", nodes[1], n.State, n.Reason, err)
		}
		select {
		case err := <-job.Done():
			t.Fatalf("the job on %s ended (%v) before the scale-in's timeout had passed", nodes[1], err)
		default:
		}
		t.Logf("%s held the scale-in: %s, reason %q", nodes[1], n.State, n.Reason)
		// The job ends once the retried scale-in waits for the node: it
		// has looked for the node's left marker twice.
		job.ReleaseOnceLooked(h.Shim, 2)
		// The retried scale-in meets a throttled leave request and a lost
		// answer while it reads the leave markers.
		h.Shim.Throttle("ec2", "CreateTags", 2)
		h.Shim.LoseResponses("s3", "ListObjectsV2", 1)
	}
	jobFinished := func(*terraform.State) error {
		if throttled := h.Shim.FaultsServed("ec2", "CreateTags"); throttled != 2 {
			return fmt.Errorf("%d throttled CreateTags answers served, want the 2 injected", throttled)
		}
		return jobEnded(job.Done(), "scale-in")
	}
	playerOK := func(*terraform.State) error {
		if errs := p.Errs(); len(errs) > 0 {
			return fmt.Errorf("node player: %v", errs)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: slurmClusterConfig(h, name, 2, key, p.Signer.CertPEM, sc.Controller, secret),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectKnownValue(gpuClusterResource, tfjsonpath.New("slurm_controller_config"), knownContains("NodeName="+name+"-[0-")),
				configureController{c: sc},
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestMatchResourceAttr(gpuClusterResource, "slurm_controller_config", regexp.MustCompile(`(?m)^Nodeset=`+name+` Feature=`+name+`$`)),
				resource.TestMatchResourceAttr(gpuClusterResource, "slurm_controller_config", regexp.MustCompile(`(?m)^PartitionName=gpu Nodes=`+name+` State=UP$`)),
				resource.TestMatchResourceAttr(gpuClusterResource, "slurm_controller_config", regexp.MustCompile(`(?m)^HealthCheckProgram=/usr/local/sbin/hwprobe-slurm-health-check$`)),
				joined, gpuFallsOff, adminDrain, playerOK,
			),
		}, {
			// Scale-in while a job runs on node 1, with too short an
			// update timeout: the provider asks the node to leave (its
			// watch drains it) and waits for the job, then gives up
			// without terminating the instance.
			PreConfig:   startJob,
			Config:      strings.TrimSuffix(slurmClusterConfig(h, name, 1, key, p.Signer.CertPEM, sc.Controller, secret), "}\n") + "  timeouts {\n    update = \"10s\"\n  }\n}\n",
			ExpectError: regexp.MustCompile(`did not leave Slurm before the timeout`),
		}, {
			// Again, with the default timeout: the apply waits for the
			// job to end, the node leaves Slurm, then its instance is
			// terminated.
			PreConfig: heldByTheJob,
			Config:    slurmClusterConfig(h, name, 1, key, p.Signer.CertPEM, sc.Controller, secret),
			Check: resource.ComposeAggregateTestCheckFunc(
				jobFinished,
				func(*terraform.State) error { return waitNodes(nodes[:1]) },
				func(*terraform.State) error {
					sc.WaitNode(nodes[0], 10*time.Second, "in service", inService)
					return nil
				},
				playerOK,
			),
		}},
	})
	if t.Failed() {
		return
	}
	// Destroyed: every node left, no ghost.
	if err := waitNodes(nil); err != nil {
		t.Error(err)
	}
	t.Logf("Slurm join test: %s", time.Since(start).Round(100*time.Millisecond))
}

// TestAccGPUCluster_slurmReplace: node 1's first instance has an NVLink
// link down. It joins Slurm drained by hwprobe's first health check (before
// it registers, from its failed boot validation), so it takes no job; the
// gate replaces it (on_failure = "replace"); the old instance leaves Slurm
// as it shuts down, and its replacement joins under the same name,
// PREFIX-1, and is in service. Then a GPU falls off node 0: its health
// check drains it in Slurm and writes its marker; a refresh reports the node
// drained (its validation result, and node_count one short), and the next
// apply replaces it: the old instance leaves Slurm, a new one joins as
// PREFIX-0 and is validated. Destroy leaves no node in Slurm.
func TestAccGPUCluster_slurmReplace(t *testing.T) {
	const name = "slurm-replace"
	h, p, key := gateSetup(t, name, nvlinkDown)
	sc := slurmtest.Start(t, slurmtest.Options{Dynamic: true})
	p.Slurm = sc
	secret := createMungeSecret(t, h, acctest.Region, "slurm/munge", sc.MungeKey, key)
	nodes := []string{name + "-0", name + "-1"}
	config := slurmClusterConfig(h, name, 2, key, p.Signer.CertPEM, sc.Controller, secret, `    on_failure = "replace"`)
	var node0 string // node 0's instance before its GPU falls off
	gpuFallsOff := func() {
		if err := sc.SetNodeEnv(nodes[0], "HWPROBE_NVML_MOCK", acctest.GPUNode(gpuType).NVMLMock+";gpus=7"); err != nil {
			t.Fatal(err)
		}
		sc.WaitNode(nodes[0], 20*time.Second, "drained by hwprobe", slurmtest.DrainedBy("hwprobe: gpu.count"))
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(sc.HealthRuns(nodes[0]), "drained marker written") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the health check wrote no drained marker:\n%s", nodes[0], sc.HealthRuns(nodes[0]))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:           config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{configureController{c: sc}}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "pass"),
				func(*terraform.State) error {
					if n := len(p.Played()); n != 3 {
						return fmt.Errorf("the player ran %d instances, want 3 (node 1 replaced once)", n)
					}
					for _, nn := range nodes {
						sc.WaitNode(nn, 60*time.Second, "in service", slurmtest.InService)
					}
					// The replaced instance's health check drained it; its
					// replacement's passes.
					// The replaced instance registered drained and its first
					// check gave the drain hwprobe's reason (it took no job);
					// its replacement's first check resumed it.
					runs := sc.HealthRuns(nodes[1])
					fail := strings.Index(runs, "failed its first check after it registered drained")
					pass := strings.LastIndex(runs, "passed its first check after it registered drained: resumed")
					if fail < 0 || pass < fail || !strings.Contains(runs[:fail], "fail: gpu.nvlink") {
						return fmt.Errorf("%s: want a first check failing (NVLink) before one passing:\n%s", nodes[1], runs)
					}
					ns, err := sc.Nodes()
					if err != nil || len(ns) != 2 {
						return fmt.Errorf("Slurm lists %d nodes (%v), want 2: no ghost of the replaced instance", len(ns), err)
					}
					if errs := p.Errs(); len(errs) > 0 {
						return fmt.Errorf("node player: %v", errs)
					}
					return nil
				},
				func(s *terraform.State) error {
					node0 = s.RootModule().Resources[gpuClusterResource].Primary.Attributes["validation_results.0.instance_id"]
					return nil
				},
			),
		}, {
			// A GPU falls off node 0 after the apply: the refresh reads
			// the health check's marker.
			PreConfig:          gpuFallsOff,
			RefreshState:       true,
			ExpectNonEmptyPlan: true,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "drained"),
				resource.TestMatchResourceAttr(gpuClusterResource, "validation_results.0.summary", regexp.MustCompile(`^hwprobe: gpu\.count`)),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "node_count", "1"),
			),
		}, {
			// The apply replaces it: it leaves Slurm, a new instance
			// joins under its name and passes the gate. Its reads of the
			// markers meet two throttled listings and a lost GetObject
			// answer (retried).
			PreConfig: func() {
				h.Shim.Throttle("s3", "ListObjectsV2", 2)
				h.Shim.LoseResponses("s3", "GetObject", 1)
			},
			Config: config,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				plancheck.ExpectResourceAction(gpuClusterResource, plancheck.ResourceActionUpdate),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "node_count", "2"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.0.status", "pass"),
				resource.TestCheckResourceAttr(gpuClusterResource, "validation_results.1.status", "pass"),
				func(s *terraform.State) error {
					now := s.RootModule().Resources[gpuClusterResource].Primary.Attributes["validation_results.0.instance_id"]
					if node0 == "" || now == node0 {
						return fmt.Errorf("node 0 runs %q, want a new instance in place of %q", now, node0)
					}
					if n := len(p.Played()); n != 4 {
						return fmt.Errorf("the player ran %d instances, want 4 (node 0 replaced once more)", n)
					}
					if faults := h.Shim.FaultsServed("s3", "ListObjectsV2") + h.Shim.FaultsServed("s3", "GetObject"); faults != 3 {
						return fmt.Errorf("%d S3 fault answers served, want the 3 injected", faults)
					}
					for _, nn := range nodes {
						sc.WaitNode(nn, 60*time.Second, "in service", slurmtest.InService)
					}
					if err := waitSlurmNodes(sc, nodes); err != nil {
						return err
					}
					if errs := p.Errs(); len(errs) > 0 {
						return fmt.Errorf("node player: %v", errs)
					}
					return nil
				},
			),
		}},
	})
	if t.Failed() {
		return
	}
	if err := waitSlurmNodes(sc, nil); err != nil {
		t.Fatalf("after destroy: %v", err)
	}
}

// TestAccGPUCluster_slurmInterrupted: a create interrupted after the
// launch, before the nodes join (the provider's first look at the launched
// instances is held until the create's timeout of 15 seconds has ended its
// context, as a Ctrl-C ends it) records what it made; the next apply finishes
// the cluster: its two nodes are in Slurm and in service, no ghost beside
// them and no orphaned instance; destroy leaves no instance and no node
// in Slurm.
func TestAccGPUCluster_slurmInterrupted(t *testing.T) {
	const name = "slurm-cut"
	h, p, key := gateSetup(t, name, healthyGPUs)
	sc := slurmtest.Start(t, slurmtest.Options{Dynamic: true})
	p.Slurm = sc
	secret := createMungeSecret(t, h, acctest.Region, "slurm/munge", sc.MungeKey, key)
	cfg := slurmClusterConfig(h, name, 2, key, p.Signer.CertPEM, sc.Controller, secret)
	// 15 seconds: time enough to reach the launch on a loaded host.
	cut := strings.TrimSuffix(cfg, "}\n") + "  timeouts {\n    create = \"15s\"\n  }\n}\n"
	var launched, held atomic.Bool
	h.Shim.OnCall("ec2", "RunInstances", func(r *acctest.Request) {
		if !r.Fixture {
			launched.Store(true)
		}
	})
	h.Shim.AddRule(acctest.FaultRule{Service: "ec2", Action: "DescribeInstances", Times: 1,
		Match:  func(r *acctest.Request) bool { return launched.Load() && !r.Fixture },
		Before: func(*acctest.Request) { held.Store(true) },
		Hold:   acctest.HoldUntilClientGone(t)})
	nodesInSlurm := func() []string {
		ns, _ := sc.Nodes()
		var names []string
		for _, n := range ns {
			names = append(names, n.Name)
		}
		return names
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy: func(*terraform.State) error {
			if err := waitSlurmNodes(sc, nil); err != nil {
				return fmt.Errorf("after destroy: %w", err)
			}
			if live, err := liveGPUNodes(t, h, name); err != nil || len(live) != 0 {
				return fmt.Errorf("after destroy: %d live instances (%v)", len(live), err)
			}
			return nil
		},
		Steps: []resource.TestStep{{
			// Cut after the launch: every instance was made, so the apply
			// ends with a warning, not an error (the resource is not
			// tainted), and state records every live instance; the gate
			// did not judge them, so the next plan runs it again.
			Config:             cut,
			ExpectNonEmptyPlan: true,
			ConfigPlanChecks:   resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{configureController{c: sc}}},
			Check: func(s *terraform.State) error {
				live, err := liveGPUNodes(t, h, name)
				recorded := s.RootModule().Resources[gpuClusterResource].Primary.Attributes["nodes.#"]
				t.Logf("after the interrupted create: %d live instances, %s recorded, Slurm lists %v", len(live), recorded, nodesInSlurm())
				if err != nil || fmt.Sprint(len(live)) != recorded {
					return fmt.Errorf("%d live instances (%v), %s recorded: an orphan", len(live), err, recorded)
				}
				if !held.Load() {
					return errors.New("the create was not held after the launch: the cut did not happen where it should")
				}
				return nil
			},
		}, {
			Config: cfg,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(gpuClusterResource, "nodes.#", "2"),
				func(*terraform.State) error {
					for _, nn := range []string{name + "-0", name + "-1"} {
						sc.WaitNode(nn, 60*time.Second, "in service", slurmtest.InService)
					}
					live, err := liveGPUNodes(t, h, name)
					if err != nil || len(live) != 2 {
						return fmt.Errorf("%d live instances (%v), want 2: no orphan", len(live), err)
					}
					if names := nodesInSlurm(); !slices.Equal(names, []string{name + "-0", name + "-1"}) {
						return fmt.Errorf("Slurm lists %v, want the cluster's two nodes and no ghost", names)
					}
					if errs := p.Errs(); len(errs) > 0 {
						return fmt.Errorf("node player: %v", errs)
					}
					return nil
				},
			),
		}},
	})
}

// TestAccGPUCluster_slurmExample applies the Slurm guide's whole example,
// examples/slurm/main.tf (its own provider block; the harness's endpoint
// environment routes its calls to the emulator; its image parameter
// points at an image of the emulator; its checks narrowed to the host and
// the GPUs the node stand-ins play), against a real
// Slurm controller: the platform team adds the plan's
// slurm_controller_config to the controller, both nodes join with the
// example's gres, partition and features and are in service, and destroy
// waits for the job running on a node (its nodes leave Slurm first, as a
// scale-in's do) and leaves no node in Slurm.
func TestAccGPUCluster_slurmExample(t *testing.T) {
	const name = "uae-slurm-train"
	// The example's provider block has no endpoints: the harness's
	// AWS_ENDPOINT_URL routes its calls, so it runs alone.
	h, p, key := gateSetupWith(t, acctest.SetupSerial(t), name, healthyGPUs)
	ctx := context.Background()
	sc := slurmtest.Start(t, slurmtest.Options{Dynamic: true})
	p.Slurm = sc
	secret := createMungeSecret(t, h, acctest.Region, "slurm/munge", sc.MungeKey, key)
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	images, err := c.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil || len(images.Images) == 0 {
		t.Fatalf("describing images: %v", err)
	}
	if _, err := c.SSM.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/mlplatform/images/slurm-gpu"), Value: images.Images[0].ImageId, Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	example := readExample(t, "../examples/slurm/main.tf")
	// The test serves the provider in process: drop the registry source.
	example = regexp.MustCompile(`(?s)\nterraform \{.*?\n\}\n`).ReplaceAllString(example, "\n")
	// One change: the node stand-ins play a p5en's host and GPUs, not its
	// 192 vCPUs, 2 TiB of memory or EFA interfaces, so the checks are
	// those two.
	const validation = "  validation = {\n"
	if !strings.Contains(example, validation) {
		t.Fatal("the example has no validation block")
	}
	example = strings.Replace(example, validation, validation+`    checks               = ["host", "gpu"]`+"\n", 1)
	const address = "mlplatform_gpu_cluster.train"
	// A job runs on node 0 when the destroy begins: the destroy asks the
	// nodes to leave Slurm and waits for the job to end (exit 0) before it
	// terminates the instance, as a scale-in does. Terminated first, the
	// node would leave Slurm at shutdown with the job killed. The job ends
	// once the destroy has drained the node for leaving.
	var job *slurmtest.Job
	jobAtDestroy := func(*terraform.State) error {
		job = sc.HoldJob("-w", name+"-0", "-p", "gpu")
		sc.WaitNode(name+"-0", 20*time.Second, "running the job", slurmtest.Busy)
		job.ReleaseOnceLeaving(name + "-0")
		return nil
	}
	jobFinished := func(*terraform.State) error {
		if job == nil {
			return fmt.Errorf("no job ran at the destroy")
		}
		if err := jobEnded(job.Done(), "destroy"); err != nil {
			return err
		}
		return waitSlurmNodes(sc, nil)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             jobFinished,
		Steps: []resource.TestStep{{
			Config: example,
			ConfigVariables: config.Variables{
				"kms_key_arn":          config.StringVariable(key),
				"controller":           config.StringVariable(sc.Controller),
				"munge_key_secret_arn": config.StringVariable(secret),
				"identity_certificate": config.StringVariable(p.Signer.CertPEM),
			},
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{configureController{c: sc, address: address}}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestMatchOutput("slurm_controller_config", regexp.MustCompile(`(?m)^PartitionName=gpu Nodes=`+name+` State=UP$`)),
				func(*terraform.State) error {
					for _, nn := range []string{name + "-0", name + "-1"} {
						n := sc.WaitNode(nn, 60*time.Second, "joined and in service", slurmtest.InService)
						if n.Fields["Gres"] != "gpu:h200:8" || n.Fields["Partitions"] != "gpu" || !strings.Contains(n.Fields["AvailableFeatures"], "team-vision") {
							return fmt.Errorf("%s: gres %q, partitions %q, features %q", nn, n.Fields["Gres"], n.Fields["Partitions"], n.Fields["AvailableFeatures"])
						}
					}
					if errs := p.Errs(); len(errs) > 0 {
						return fmt.Errorf("node player: %v", errs)
					}
					return nil
				},
				jobAtDestroy,
			),
		}},
	})
}
