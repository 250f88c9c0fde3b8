package provider_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"

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
//
// A scale-in waits for the jobs of the instance Auto Scaling chose: the
// group's terminate hook holds it in Terminating:Wait, its node's watch
// (its target lifecycle state "Terminated") drains it and leaves once its
// job ends, and only then is its terminate action completed: by the
// apply that lowered the capacity (through a throttled marker listing and
// a lost CompleteLifecycleAction answer), or, for a scale-in made outside
// Terraform, by `mlplatform approve`, which lets no instance go while its
// job runs.
func TestAccCPUFootprint_slurmJoin(t *testing.T) {
	const name = "fp-slurm"
	start := time.Now()
	h, p, key := footprintGateSetup(t, name, nil)
	cli := acctest.BuildCLI(t)
	sc := slurmtest.Start(t, slurmtest.Options{Dynamic: true})
	p.Slurm = sc
	secret := createMungeSecret(t, h, acctest.Region, "slurm/munge-fp", sc.MungeKey, key)
	config := func(desired int) string {
		return strings.TrimSuffix(footprintGateConfig(h, name, desired, `["host", "cpu_features"]`, key, p.Signer.CertPEM, ""), "}\n") + fmt.Sprintf(`
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
	}
	group := "mlplatform-cpu-" + name
	// instances lists the group's instances: in service, and held in
	// Terminating:Wait.
	instances := func() (live, held []string, err error) {
		f, err := footprint(t, h, name)
		if err != nil || f == nil {
			return nil, nil, fmt.Errorf("footprint: %v", err)
		}
		for _, in := range f.Instances {
			switch in.LifecycleState {
			case "InService":
				live = append(live, in.ID)
			case "Terminating:Wait":
				held = append(held, in.ID)
			}
		}
		return live, held, nil
	}
	// A job on nodes nodes when a scale-in begins. It runs until the test
	// releases it, so no step's length on a slow host decides whether it
	// still runs.
	var job *slurmtest.Job
	startJob := func(nodes int) {
		job = sc.HoldJob("-p", "cpu", "-N", strconv.Itoa(nodes))
		deadline := time.Now().Add(20 * time.Second)
		for {
			ns, err := sc.Nodes()
			busy := 0
			for _, n := range ns {
				if slurmtest.Busy(n) {
					busy++
				}
			}
			if err == nil && busy == nodes {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job runs on %d nodes (%v), want %d", busy, err, nodes)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var kept []string // the nodes left after the first scale-in
	var leaveCalls atomic.Int32
	joined := func(*terraform.State) error {
		deadline := time.Now().Add(60 * time.Second)
		for {
			ns, err := sc.Nodes()
			inService := 0
			for _, n := range ns {
				if slurmtest.InService(n) {
					inService++
				}
			}
			if err == nil && len(ns) == 3 && inService == 3 {
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
				return fmt.Errorf("Slurm lists %d nodes, %d in service (%v), want 3 (player errors %v)", len(ns), inService, err, p.Errs())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	hooks := func(*terraform.State) error {
		got, err := groupHooks(h, group)
		if err != nil {
			return err
		}
		want := []string{"mlplatform-slurm-leave autoscaling:EC2_INSTANCE_TERMINATING 7200 CONTINUE", "mlplatform-validation autoscaling:EC2_INSTANCE_LAUNCHING 300 ABANDON"}
		if !slices.Equal(got, want) {
			return fmt.Errorf("hooks of %s: %v, want %v", group, got, want)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		// The destroy began while a job ran on the last node: it scaled
		// the group to 0 and waited for the node to leave Slurm.
		CheckDestroy: func(*terraform.State) error {
			if job == nil {
				return fmt.Errorf("no job ran at the destroy: an earlier step failed")
			}
			if err := jobEnded(job.Done(), "destroy"); err != nil {
				return err
			}
			return waitSlurmNodes(sc, nil)
		},
		Steps: []resource.TestStep{{
			Config:           config(3),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{configureController{c: sc, address: "mlplatform_cpu_footprint.test"}}},
			Check:            resource.ComposeAggregateTestCheckFunc(joined, hooks),
		}, {
			// 3 -> 2 while a job runs on every node, with an update timeout
			// the job outlasts: the apply fails naming the instance Auto
			// Scaling chose, which stays held, drained for leaving, its
			// job running. (10 seconds: long enough for Auto Scaling to
			// choose on a loaded host.)
			PreConfig:   func() { startJob(3) },
			Config:      strings.TrimSuffix(config(2), "}\n") + "  timeouts {\n    update = \"10s\"\n  }\n}\n",
			ExpectError: regexp.MustCompile(`instances i-[0-9a-f]+ did not leave Slurm`),
		}, {
			// Again with the default timeout: the apply waits for the job,
			// then Auto Scaling terminates the chosen instance.
			PreConfig: func() {
				_, held, err := instances()
				if err != nil || len(held) != 1 {
					t.Fatalf("after the timed-out apply, held in Terminating:Wait: %v (%v), want one instance", held, err)
				}
				if n := sc.WaitNode(name+"-"+held[0], 30*time.Second, "drained for leaving", slurmtest.DrainedBy("hwprobe: leaving: ")); !n.State.Busy() {
					t.Fatalf("%s is %s: want its job still running", held[0], n.State)
				}
				select {
				case err := <-job.Done():
					t.Fatalf("the job ended (%v) before the timed-out scale-in was retried", err)
				default:
				}
				h.Shim.Throttle("s3", "ListObjectsV2", 1)
				// The job ends once the apply waits for the instance to
				// leave Slurm: it has looked for the instance's left marker
				// twice.
				job.ReleaseOnceLooked(h.Shim, 2)
				t.Cleanup(h.Shim.AddServedRule(acctest.FaultRule{Service: "autoscaling", Action: "CompleteLifecycleAction", LoseResponse: true, Times: 1,
					Match: func(r *acctest.Request) bool {
						if r.Form.Get("LifecycleHookName") != "mlplatform-slurm-leave" {
							return false
						}
						leaveCalls.Add(1)
						return true
					}}))
			},
			Config: config(2),
			Check: func(*terraform.State) error {
				if err := jobEnded(job.Done(), "scale-in"); err != nil {
					return err
				}
				throttled := h.Shim.FaultsServed("s3", "ListObjectsV2")
				// The lost answer, then the retry that finds no action
				// waiting: the action was completed.
				if throttled != 1 || leaveCalls.Load() < 2 {
					return fmt.Errorf("%d throttled ListObjectsV2 answers served, want 1; %d CompleteLifecycleAction calls for the leave, want the lost one and its retry", throttled, leaveCalls.Load())
				}
				cs := p.Lifecycle.Completions()
				var ends []acctest.LifecycleCompletion
				for _, c := range cs {
					if c.Hook == "mlplatform-slurm-leave" {
						ends = append(ends, c)
					}
				}
				live, held, err := instances()
				if err != nil {
					return err
				}
				if len(ends) != 1 || len(held) != 0 || len(live) != 2 || slices.Contains(live, ends[0].InstanceID) {
					return fmt.Errorf("terminate actions completed %+v, instances in service %v, held %v: want the chosen instance's completed, two in service", ends, live, held)
				}
				kept = []string{name + "-" + live[0], name + "-" + live[1]}
				slices.Sort(kept)
				return waitSlurmNodes(sc, kept)
			},
		}, {
			// 2 -> 1 outside Terraform (a schedule would) while a job runs:
			// nothing completes the terminate action but the approver,
			// which lets the instance go only once its node left Slurm.
			PreConfig: func() {
				startJob(2)
				c, err := h.Clients(context.Background(), acctest.Region)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.AutoScaling.SetDesiredCapacity(context.Background(), &autoscaling.SetDesiredCapacityInput{
					AutoScalingGroupName: aws.String(group), DesiredCapacity: aws.Int32(1)}); err != nil {
					t.Fatal(err)
				}
			},
			RefreshState:       true,
			ExpectNonEmptyPlan: true,
			Check: func(s *terraform.State) error {
				approver := s.RootModule().Resources["mlplatform_cpu_footprint.test"].Primary.Attributes["validation_approver"]
				_, held, err := instances()
				if err != nil || len(held) != 1 {
					return fmt.Errorf("held in Terminating:Wait: %v (%v), want one instance", held, err)
				}
				leaving := name + "-" + held[0]
				if n := sc.WaitNode(leaving, 30*time.Second, "drained for leaving", slurmtest.DrainedBy("hwprobe: leaving: ")); !n.State.Busy() {
					return fmt.Errorf("%s is %s: want its job still running", leaving, n.State)
				}
				if out, code := runApprover(t, h, cli, approver); code != 0 || strings.Contains(out, "terminated") {
					return fmt.Errorf("round while the job runs: exit %d, output %q: want nothing let go", code, out)
				}
				job.Release()
				if err := <-job.Done(); err != nil {
					return fmt.Errorf("the job on the held node did not finish: %v", err)
				}
				rest := slices.DeleteFunc(slices.Clone(kept), func(n string) bool { return n == leaving })
				if err := waitSlurmNodes(sc, rest); err != nil {
					return fmt.Errorf("after the job: %w", err)
				}
				out, code := runApprover(t, h, cli, approver)
				if code != 0 || !strings.Contains(out, held[0]+" terminated (left Slurm)") {
					return fmt.Errorf("round after the node left: exit %d, output %q: want %s let go", code, out, held[0])
				}
				live, stillHeld, err := instances()
				if err != nil || len(live) != 1 || len(stillHeld) != 0 {
					return fmt.Errorf("after the approver: in service %v, held %v (%v): want one in service", live, stillHeld, err)
				}
				// A job on the last node as the destroy begins; it ends
				// once the destroy has drained the node for leaving.
				startJob(1)
				job.ReleaseOnceLeaving(name + "-" + live[0])
				if errs := p.Errs(); len(errs) > 0 {
					return fmt.Errorf("node player: %v", errs)
				}
				return nil
			},
		}},
	})
	t.Logf("Slurm footprint test: %s", time.Since(start).Round(100*time.Millisecond))
}

// TestAccCPUFootprint_slurmDrained: after the apply, the CPU of one of a
// footprint's instances no longer matches its profile (the stand-in's
// machine description changed). hwprobe's health check drains the node in
// Slurm and writes its marker; a refresh reads the instance's
// validation_results entry as "drained", and under on_failure = "replace"
// the plan shows an update. The apply has Auto Scaling replace the
// instance: it leaves Slurm through the terminate hook, the group launches
// another, which joins and passes the gate; no ghost node is left.
func TestAccCPUFootprint_slurmDrained(t *testing.T) {
	const name = "fp-slurm-drain"
	start := time.Now()
	h, p, key := footprintGateSetup(t, name, nil)
	sc := slurmtest.Start(t, slurmtest.Options{Dynamic: true})
	p.Slurm = sc
	secret := createMungeSecret(t, h, acctest.Region, "slurm/munge-fp-drain", sc.MungeKey, key)
	cfg := strings.TrimSuffix(footprintGateConfig(h, name, 2, `["host", "cpu_features"]`, key, p.Signer.CertPEM, `    on_failure           = "replace"`), "}\n") + fmt.Sprintf(`
  orchestrator = {
    slurm = {
      controllers          = [%q]
      munge_key_secret_arn = %q
      partition            = "cpu"
    }
  }
}
`, sc.Controller, secret)
	var nodes []string // Slurm's names of the two first instances
	var drained string // the instance whose CPU changes
	inService := func(want int) error {
		deadline := time.Now().Add(60 * time.Second)
		for {
			ns, err := sc.Nodes()
			var up []string
			for _, n := range ns {
				if slurmtest.InService(n) {
					up = append(up, n.Name)
				}
			}
			if err == nil && len(ns) == want && len(up) == want {
				slices.Sort(up)
				nodes = up
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("Slurm lists %d nodes, %v in service (%v), want %d (player errors %v)", len(ns), up, err, want, p.Errs())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	cpuChanges := func() {
		drained = strings.TrimPrefix(nodes[0], name+"-")
		if err := sc.SetNodeEnv(nodes[0], "HWPROBE_MACHINE", "zen5"); err != nil {
			t.Fatal(err)
		}
		n := sc.WaitNode(nodes[0], 20*time.Second, "drained by hwprobe", slurmtest.DrainedBy("hwprobe: "))
		t.Logf("%s: %s, reason %q", nodes[0], n.State, n.Reason)
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(sc.HealthRuns(nodes[0]), "drained marker written") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the health check wrote no drained marker:\n%s", nodes[0], sc.HealthRuns(nodes[0]))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	resultOf := func(s *terraform.State, id string) (status, summary string, err error) {
		a := s.RootModule().Resources["mlplatform_cpu_footprint.test"].Primary.Attributes
		n, _ := strconv.Atoi(a["validation_results.#"])
		for i := range n {
			if a[fmt.Sprintf("validation_results.%d.instance_id", i)] == id {
				return a[fmt.Sprintf("validation_results.%d.status", i)], a[fmt.Sprintf("validation_results.%d.summary", i)], nil
			}
		}
		return "", "", fmt.Errorf("no validation result for %s in %d", id, n)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             func(*terraform.State) error { return waitSlurmNodes(sc, nil) },
		Steps: []resource.TestStep{{
			Config:           cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{configureController{c: sc, address: "mlplatform_cpu_footprint.test"}}},
			Check:            func(*terraform.State) error { return inService(2) },
		}, {
			// The refresh reads the drain as drift; with "replace" the plan
			// is an update.
			PreConfig:          cpuChanges,
			RefreshState:       true,
			ExpectNonEmptyPlan: true,
			Check: func(s *terraform.State) error {
				status, summary, err := resultOf(s, drained)
				if err != nil || status != "drained" || !strings.HasPrefix(summary, "hwprobe: ") {
					return fmt.Errorf("%s's validation result: %q %q (%v), want drained with hwprobe's reason", drained, status, summary, err)
				}
				return nil
			},
		}, {
			// The apply replaces it; its replacement joins and passes.
			Config: cfg,
			Check: func(s *terraform.State) error {
				if err := inService(2); err != nil {
					return err
				}
				if slices.Contains(nodes, name+"-"+drained) {
					return fmt.Errorf("the drained instance's node %s is still in Slurm: %v", drained, nodes)
				}
				f, err := footprint(t, h, name)
				if err != nil || f == nil {
					return fmt.Errorf("footprint: %v", err)
				}
				for _, in := range f.Instances {
					if in.ID == drained {
						return fmt.Errorf("the drained instance %s is still in the group, %s", drained, in.LifecycleState)
					}
				}
				a := s.RootModule().Resources["mlplatform_cpu_footprint.test"].Primary.Attributes
				for i := range 2 {
					if st := a[fmt.Sprintf("validation_results.%d.status", i)]; st != "pass" {
						return fmt.Errorf("validation_results.%d.status = %q after the replacement, want pass", i, st)
					}
				}
				if errs := p.Errs(); len(errs) > 0 {
					return fmt.Errorf("node player: %v", errs)
				}
				return nil
			},
		}},
	})
	t.Logf("Slurm footprint drain test: %s", time.Since(start).Round(100*time.Millisecond))
}
