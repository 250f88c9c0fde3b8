package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
)

// The CPU footprint's validation gate end to end: the real Terraform CLI
// applies a footprint with a validation block against the emulator while
// the footprint player (acctest.FootprintPlayer) plays its instances: the
// profile from the launch template's user data, the real hwprobe on this
// machine, the report published to the emulator's S3 with a test-signed
// identity, and the bootstrap's `hwprobe lifecycle complete` against the
// lifecycle-action double (moto has no lifecycle actions). hwprobe probes
// a fixed machine description, never this machine's CPU: by default a
// 2-vCPU Sapphire Rapids (c7i.large, the footprint type moto offers in
// me-central-1, with AMX), and a 2-vCPU Zen 5 without AMX where a test
// needs a node to fail its CPU features.

// footprintGateSetup creates the reports bucket and key and starts the
// footprint player for footprint name; it stops when the test ends.
func footprintGateSetup(t *testing.T, name string, behaviour func(index, nth int) acctest.NodeBehaviour) (*acctest.Harness, *acctest.FootprintPlayer, string) {
	t.Helper()
	return footprintGateSetupOn(t, name, acctest.MachineSapphireRapids, behaviour)
}

// footprintGateSetupOn is footprintGateSetup with the nodes' CPU the fixed
// machine description mach.
func footprintGateSetupOn(t *testing.T, name, mach string, behaviour func(index, nth int) acctest.NodeBehaviour) (*acctest.Harness, *acctest.FootprintPlayer, string) {
	t.Helper()
	h := acctest.Setup(t)
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	key := createKey(t, h, acctest.Region)
	p := acctest.NewFootprintPlayer(t, h)
	p.Machine = mach
	p.Behaviour = behaviour
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.WatchFootprint(ctx, name) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, p, key
}

// footprintGateConfig is a c7i footprint of desired instances with a
// validation block checking checks. key, a customer managed key, encrypts
// the volumes and the reports.
func footprintGateConfig(h *acctest.Harness, name string, desired int, checks, key, certPEM, extra string) string {
	return h.ProviderConfig("") + fmt.Sprintf(`
resource "mlplatform_cpu_footprint" "test" {
  name             = %q
  instance_type    = "c7i.large"
  min_size         = 0
  max_size         = 4
  desired_capacity = %d
  root_volume      = { size_gib = 20 }
  user_data        = "#!/bin/sh\necho the user's own user data\n"
  kms_key_arn      = %[4]q

  validation = {
    checks               = %[3]s
    timeout              = "5m"
    reports_s3_uri       = "s3://uae-hwprobe-reports/footprints/"
    reports_kms_key_arn  = %[4]q
    trusted_certificates = %[5]q
%[6]s
  }
}
`, name, desired, checks, key, certPEM, extra)
}

// checkHook checks the group's validation lifecycle hook.
func checkHook(t *testing.T, h *acctest.Harness, group string, want bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := groupHooks(h, group)
		if err != nil {
			return err
		}
		if !want {
			if len(got) > 0 {
				return fmt.Errorf("hooks left on %s: %v", group, got)
			}
			return nil
		}
		if w := "mlplatform-validation autoscaling:EC2_INSTANCE_LAUNCHING 300 ABANDON"; !slices.Equal(got, []string{w}) {
			return fmt.Errorf("hooks of %s: %v, want [%s]", group, got, w)
		}
		return nil
	}
}

// groupHooks lists group's lifecycle hooks, "NAME TRANSITION HEARTBEAT
// DEFAULT", sorted.
func groupHooks(h *acctest.Harness, group string) ([]string, error) {
	c, err := h.Clients(context.Background(), acctest.Region)
	if err != nil {
		return nil, err
	}
	out, err := c.AutoScaling.DescribeLifecycleHooks(context.Background(), &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(group)})
	if err != nil {
		return nil, err
	}
	var got []string
	for _, hk := range out.LifecycleHooks {
		got = append(got, fmt.Sprintf("%s %s %d %s", aws.ToString(hk.LifecycleHookName), aws.ToString(hk.LifecycleTransition), aws.ToInt32(hk.HeartbeatTimeout), aws.ToString(hk.DefaultResult)))
	}
	slices.Sort(got)
	return got, nil
}

// completions waits until the lifecycle double answered n completions and
// returns their results, in order.
func completions(p *acctest.FootprintPlayer, n int, within time.Duration) ([]acctest.LifecycleCompletion, error) {
	deadline := time.Now().Add(within)
	for {
		got := p.Lifecycle.Completions()
		if len(got) >= n {
			return got, nil
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("%d lifecycle actions completed, want %d: %+v (player errors %v)", len(got), n, got, p.Errs())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func results(cs []acctest.LifecycleCompletion) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Result)
	}
	return out
}

func TestAccCPUFootprint_validationPass(t *testing.T) {
	const name = "fp-gate-pass"
	h, p, key := footprintGateSetup(t, name, nil)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, name),
		Steps: []resource.TestStep{{
			// The nodes are Sapphire Rapids: the c7i's CPU features, AMX
			// included, pass.
			Config: footprintGateConfig(h, name, 2, `["host", "cpu", "cpu_features"]`, key, p.Signer.CertPEM, ""),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				// The profile and bootstrap are in the plan.
				plancheck.ExpectKnownValue(cpuFootprintResource, tfjsonpath.New("validation_profile"), knownContains(`instance_type = "c7i.large"`)),
				plancheck.ExpectKnownValue(cpuFootprintResource, tfjsonpath.New("validation_bootstrap"), knownContains("report serve")),
				// No node approves itself: the approver's configuration,
				// not the node's script, decides launches after apply.
				plancheck.ExpectKnownValue(cpuFootprintResource, tfjsonpath.New("validation_approver"), knownContains(`"footprint": "`+name+`"`)),
			}},
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.#", "2"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.0.status", "pass"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.1.status", "pass"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.0.attested_region", "me-central-1"),
				resource.TestCheckResourceAttrWith(cpuFootprintResource, "validation_bootstrap", func(v string) error {
					if strings.Contains(v, "lifecycle") {
						return fmt.Errorf("the node's bootstrap completes a lifecycle action:\n%s", v)
					}
					return nil
				}),
				resource.TestMatchResourceAttr(cpuFootprintResource, "validation_results.1.summary", regexp.MustCompile(`^\d+ checks passed$`)),
				checkHook(t, h, "mlplatform-cpu-"+name, true),
				func(s *terraform.State) error {
					cs, err := completions(p, 2, 30*time.Second)
					if err != nil {
						return err
					}
					if r := results(cs); !slices.Equal(r, []string{"CONTINUE", "CONTINUE"}) {
						return fmt.Errorf("lifecycle results %v, want CONTINUE twice", r)
					}
					for _, c := range cs {
						if p.Lifecycle.Waiting(c.InstanceID) {
							return fmt.Errorf("%s still in Pending:Wait after CONTINUE", c.InstanceID)
						}
					}
					if errs := p.Errs(); len(errs) > 0 {
						return fmt.Errorf("node player: %v", errs)
					}
					return nil
				},
			),
		}, {
			// Validation removed: the hook goes, the profile and results too.
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, name, `
  instance_type    = "c7i.large"
  min_size         = 0
  max_size         = 4
  desired_capacity = 2`),
			Check: resource.ComposeAggregateTestCheckFunc(
				checkHook(t, h, "mlplatform-cpu-"+name, false),
				resource.TestCheckNoResourceAttr(cpuFootprintResource, "validation_profile"),
			),
		}},
	})
}

// A c7i profile demands AMX; the node is a Zen 5 without it: apply fails
// naming the instance and the feature.
func TestAccCPUFootprint_validationFail(t *testing.T) {
	const name = "fp-gate-fail"
	h, p, key := footprintGateSetupOn(t, name, acctest.MachineZen5, nil)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      footprintGateConfig(h, name, 1, `["host", "cpu", "cpu_features"]`, key, p.Signer.CertPEM, ""),
			ExpectError: regexp.MustCompile(`(?s)validation\s+of\s+CPU\s+footprint\s+fp-gate-fail\s+failed:\s+1\s+of\s+1\s+nodes\s+failed.*node\s+0\s+\(i-[0-9a-f]+\):.*cpu\.feature\s+amx_tile:\s+expected\s+present,\s+observed\s+absent`),
		}},
	})
	// The gate abandoned the failing instance's lifecycle action.
	cs, err := completions(p, 1, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if cs[0].Result != "ABANDON" {
		t.Errorf("first lifecycle result %s, want ABANDON", cs[0].Result)
	}
}

// After apply the gate holds: a scale-out's instances wait in Pending:Wait
// until the approver (`mlplatform approve`, run with the footprint's
// validation_approver) completes their lifecycle action: no instance
// completes its own. The third instance seen reports a failed check: the
// approver abandons it, Auto Scaling replaces it, and the next round puts
// the fourth, which passes, in service.
func TestAccCPUFootprint_validationScaleOut(t *testing.T) {
	const name = "fp-gate-scale"
	h, p, key := footprintGateSetup(t, name, func(index, _ int) acctest.NodeBehaviour {
		if index == 2 {
			return acctest.NodeBehaviour{Report: addCPUFeatureFailure}
		}
		return acctest.NodeBehaviour{}
	})
	cli := acctest.BuildCLI(t)
	cfg := footprintGateConfig(h, name, 1, `["host", "cpu"]`, key, p.Signer.CertPEM, "")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: cfg,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.#", "1"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.0.status", "pass"),
			),
		}, {
			// Through Terraform: desired 1 -> 2, the gate waits for the new
			// instance's report and puts it in service.
			Config: footprintGateConfig(h, name, 2, `["host", "cpu"]`, key, p.Signer.CertPEM, ""),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.#", "2"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.1.status", "pass"),
			),
		}, {
			// Outside Terraform, as a schedule or a scaling policy would:
			// desired 2 -> 3 on the group itself.
			PreConfig: func() {
				c, err := h.Clients(context.Background(), acctest.Region)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := c.AutoScaling.SetDesiredCapacity(context.Background(), &autoscaling.SetDesiredCapacityInput{
					AutoScalingGroupName: aws.String("mlplatform-cpu-" + name), DesiredCapacity: aws.Int32(3)}); err != nil {
					t.Fatal(err)
				}
			},
			// No apply: what decides the new instance is the approver.
			// The refreshed desired capacity (3) differs from the
			// configuration's (2): that plan is expected.
			RefreshState:       true,
			ExpectNonEmptyPlan: true,
			Check: func(s *terraform.State) error {
				approver := s.RootModule().Resources[cpuFootprintResource].Primary.Attributes["validation_approver"]
				if approver == "" {
					return fmt.Errorf("no validation_approver in state")
				}
				// The new instance waits: nobody approved it yet.
				if _, err := completions(p, 3, 5*time.Second); err == nil {
					return fmt.Errorf("a scale-out instance was put in service without the approver: %+v", p.Lifecycle.Completions())
				}
				// Round 1 judges the failing instance: abandoned, exit 1.
				out, code := runApprover(t, h, cli, approver)
				if code != 1 || !strings.Contains(out, " ABANDON (fail: ") || !strings.Contains(out, "avx512_fp16") {
					return fmt.Errorf("first round: exit %d, want 1 with the failing instance abandoned:\n%s", code, out)
				}
				// Round 2 judges its replacement: in service, exit 0.
				out, code = runApprover(t, h, cli, approver)
				if code != 0 || !strings.Contains(out, " CONTINUE (pass: ") {
					return fmt.Errorf("second round: exit %d, want 0 with the replacement in service:\n%s", code, out)
				}
				cs, err := completions(p, 4, 10*time.Second)
				if err != nil {
					return err
				}
				if r := results(cs); !slices.Equal(r, []string{"CONTINUE", "CONTINUE", "ABANDON", "CONTINUE"}) {
					return fmt.Errorf("lifecycle results %v, want CONTINUE, CONTINUE, ABANDON (the failing instance), CONTINUE (its replacement)", r)
				}
				f, err := footprint(t, h, name)
				if err != nil || f == nil {
					return fmt.Errorf("footprint: %v", err)
				}
				var live []string
				for _, in := range f.Instances {
					if in.ID == cs[2].InstanceID && !strings.HasPrefix(in.LifecycleState, "Terminat") {
						return fmt.Errorf("abandoned instance %s is still %s", in.ID, in.LifecycleState)
					}
					if in.LifecycleState != "InService" {
						return fmt.Errorf("instance %s is %s after its lifecycle action", in.ID, in.LifecycleState)
					}
					live = append(live, in.ID)
				}
				if len(live) != 3 || !slices.Contains(live, cs[3].InstanceID) {
					return fmt.Errorf("in service %v, want 3 with the replacement %s", live, cs[3].InstanceID)
				}
				// Nothing waits: a round decides nothing and exits 0.
				if out, code := runApprover(t, h, cli, approver); code != 0 || strings.TrimSpace(out) != "" {
					return fmt.Errorf("idle round: exit %d, output %q", code, out)
				}
				return nil
			},
		}},
	})
}

// runApprover runs one round of `mlplatform approve` against the harness
// with the approver configuration approver; its standard output (the
// decisions) and exit code.
func runApprover(t *testing.T, h *acctest.Harness, cli, approver string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "approve", "--config", "-")
	cmd.Stdin = strings.NewReader(approver)
	for k, v := range h.Env() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir(), "PATH="+os.Getenv("PATH"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("mlplatform approve: %v", err)
	}
	t.Logf("mlplatform approve (exit %d):\n%s%s", code, stdout.String(), stderr.String())
	return stdout.String(), code
}

// addCPUFeatureFailure adds to a report the failed check of a CPU without
// a feature the profile demands, as hwprobe reports it.
func addCPUFeatureFailure(raw []byte) ([]byte, error) {
	var r map[string]any
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	v, _ := r["validation"].(map[string]any)
	if v == nil {
		return nil, fmt.Errorf("report without validation")
	}
	checks, _ := v["checks"].([]any)
	v["checks"] = append(checks, map[string]any{"id": "cpu.feature", "subject": "avx512_fp16", "status": "fail", "expected": "present", "observed": "absent"})
	v["exit_code"] = 1
	return json.MarshalIndent(r, "", "  ")
}

// on_failure = "replace": the first instance reports a failed check;
// hwprobe abandons its lifecycle action, Auto Scaling replaces it, the gate
// counts the replacement against max_replacements and waits for the new
// instance's report, which passes.
func TestAccCPUFootprint_validationReplace(t *testing.T) {
	const name = "fp-gate-replace"
	h, p, key := footprintGateSetup(t, name, func(index, _ int) acctest.NodeBehaviour {
		if index == 0 {
			return acctest.NodeBehaviour{Report: addCPUFeatureFailure}
		}
		return acctest.NodeBehaviour{}
	})
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, name),
		Steps: []resource.TestStep{{
			Config: footprintGateConfig(h, name, 1, `["host", "cpu"]`, key, p.Signer.CertPEM, `    on_failure = "replace"`),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.#", "1"),
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.0.status", "pass"),
				func(s *terraform.State) error {
					cs, err := completions(p, 2, 30*time.Second)
					if err != nil {
						return err
					}
					if r := results(cs); !slices.Equal(r[:2], []string{"ABANDON", "CONTINUE"}) {
						return fmt.Errorf("lifecycle results %v, want ABANDON (the failing instance), CONTINUE (its replacement)", r)
					}
					if got := s.RootModule().Resources[cpuFootprintResource].Primary.Attributes["validation_results.0.instance_id"]; got != cs[1].InstanceID {
						return fmt.Errorf("the gate judged %s, want the replacement %s", got, cs[1].InstanceID)
					}
					return nil
				},
			),
		}},
	})
}

// The gate's CompleteLifecycleAction lands but its answer is lost: the
// SDK's retry finds no action waiting, which is the group having decided,
// not an error. Apply succeeds, the instance is in service, and the
// action was completed once.
func TestAccCPUFootprint_validationCompleteLostAnswer(t *testing.T) {
	const name = "fp-gate-lost"
	h, p, key := footprintGateSetup(t, name, nil)
	t.Cleanup(h.Shim.AddServedRule(acctest.FaultRule{Service: "autoscaling", Action: "CompleteLifecycleAction", Times: 1, LoseResponse: true}))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, name),
		Steps: []resource.TestStep{{
			Config: footprintGateConfig(h, name, 1, `["host", "cpu"]`, key, p.Signer.CertPEM, ""),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(cpuFootprintResource, "validation_results.0.status", "pass"),
				func(*terraform.State) error {
					if n := len(h.Shim.Calls("autoscaling", "CompleteLifecycleAction")); n < 2 {
						return fmt.Errorf("%d CompleteLifecycleAction calls, want the lost one and its retry", n)
					}
					cs := p.Lifecycle.Completions()
					if r := results(cs); !slices.Equal(r, []string{"CONTINUE"}) {
						return fmt.Errorf("lifecycle results %v, want one CONTINUE", r)
					}
					f, err := footprint(t, h, name)
					if err != nil || f == nil || len(f.Instances) != 1 || f.Instances[0].LifecycleState != "InService" {
						return fmt.Errorf("footprint after a lost answer: %+v (%v)", f, err)
					}
					return nil
				},
			),
		}},
	})
}
