package provider_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// cpuFault is one way a call goes wrong.
type cpuFault struct {
	name string
	// arm sets the fault on service's action; cancel ends the verb's
	// context (an interrupt, as Ctrl-C or a Terraform timeout do). It
	// returns the hold the faulted call waits at (nil when none): the test
	// releases it once the verb has given up (landHeld).
	arm func(t *testing.T, h *acctest.Harness, service, action string, cancel context.CancelFunc) *acctest.Hold
	// fails: the verb must fail (else the fault was not exercised).
	fails bool
}

func cpuFaults() []cpuFault {
	held := func(stop func(cancel context.CancelFunc)) func(*testing.T, *acctest.Harness, string, string, context.CancelFunc) *acctest.Hold {
		return func(t *testing.T, h *acctest.Harness, svc, action string, cancel context.CancelFunc) *acctest.Hold {
			hold := acctest.NewHold(t)
			h.Shim.AddRule(acctest.FaultRule{Service: svc, Action: action, Times: 1, Hold: hold,
				Before: func(*acctest.Request) { stop(cancel) }})
			return hold
		}
	}
	return []cpuFault{
		// The call reaches AWS and the client is stopped at once; the call
		// lands after the verb gave up.
		{name: "interrupted", arm: held(func(cancel context.CancelFunc) { go cancel() }), fails: true},
		// The call is held past the verb's deadline and lands after it.
		{name: "timed out", arm: held(func(cancel context.CancelFunc) { time.AfterFunc(time.Second, cancel) }), fails: true},
		{name: "throttled", arm: func(_ *testing.T, h *acctest.Harness, svc, action string, _ context.CancelFunc) *acctest.Hold {
			h.Shim.Throttle(svc, action, 3)
			return nil
		}},
		{name: "lost answer", arm: func(_ *testing.T, h *acctest.Harness, svc, action string, _ context.CancelFunc) *acctest.Hold {
			h.Shim.LoseResponses(svc, action, 1)
			return nil
		}},
	}
}

// landHeld releases what hold holds (the verb has given up on it) and waits
// until it has landed, so that the test goes on from a settled emulator on
// any machine. A nil hold held nothing.
func landHeld(t *testing.T, hold *acctest.Hold) {
	t.Helper()
	if hold == nil {
		return
	}
	hold.Release()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := hold.WaitAnswered(ctx); err != nil {
		t.Fatal(err)
	}
}

func footprintFaultSpec() platform.CPUFootprintSpec {
	zero := 0
	return platform.CPUFootprintSpec{
		Name: "faulty", InstanceType: "c7i.large", Size: platform.GroupSize{Min: 1, Max: 2, Desired: 1},
		RootVolume: platform.Volume{SizeGiB: 20}, Tags: map[string]string{"team": "smb"},
		Schedules: []platform.Schedule{{Name: "nights", Recurrence: "0 20 * * 1-5", Duration: 11 * time.Hour, Min: &zero, Max: &zero, Desired: &zero}},
	}
}

// checkConverged checks in AWS that exactly the declared footprint exists.
func checkConverged(t *testing.T, h *acctest.Harness, spec platform.CPUFootprintSpec) error {
	t.Helper()
	f, err := footprint(t, h, spec.Name)
	switch {
	case err != nil:
		return err
	case f == nil:
		return errors.New("nothing exists")
	case f.GroupName == "" || f.LaunchTemplateID == "":
		return fmt.Errorf("group %q, launch template %q", f.GroupName, f.LaunchTemplateID)
	case f.Size != spec.Size || len(f.Instances) != spec.Size.Desired:
		return fmt.Errorf("sizes %+v with %d instances, want %+v", f.Size, len(f.Instances), spec.Size)
	case len(f.ScheduledActions) != 2 || f.Tags["team"] != spec.Tags["team"]:
		return fmt.Errorf("scheduled actions %d, tags %v", len(f.ScheduledActions), f.Tags)
	}
	return nil
}

// TestAccCPUFootprint_faultMatrix runs the core's create, update and delete
// with each write call interrupted, timed out, throttled and answered with
// a lost response, then applies again as Terraform would (a failed create
// with a record is tainted: deleted with its token, then created again).
// After every cell: no orphan group or launch template, and the footprint
// converges.
func TestAccCPUFootprint_faultMatrix(t *testing.T) {
	// Each cell runs against an emulator of its own, in parallel with the
	// others: nothing a failed cell leaves reaches another.
	acctest.ParallelGroup(t)
	opts := platform.CPUFootprintOptions{} // the environment polls every 50ms (platformEnv)
	base := footprintFaultSpec()
	cell := func(t *testing.T) (*acctest.Harness, *platform.Env) {
		t.Helper()
		h := acctest.Setup(t)
		env := platformEnv(t, h)
		if _, err := env.PlanCPUFootprint(context.Background(), nil, base); err != nil { // warm the catalog
			t.Fatal(err)
		}
		return h, env
	}
	type step struct{ service, action string }
	creates := []step{{"ec2", "CreateLaunchTemplate"}, {"autoscaling", "CreateAutoScalingGroup"}, {"autoscaling", "PutScheduledUpdateGroupAction"}}
	updates := []step{{"ec2", "CreateLaunchTemplateVersion"}, {"autoscaling", "UpdateAutoScalingGroup"}, {"autoscaling", "CreateOrUpdateTags"}}
	deletes := []step{{"autoscaling", "DeleteAutoScalingGroup"}, {"ec2", "DeleteLaunchTemplate"}}
	for _, fault := range cpuFaults() {
		for _, st := range creates {
			t.Run(fmt.Sprintf("create/%s/%s", st.action, fault.name), func(t *testing.T) {
				h, env := cell(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				hold := fault.arm(t, h, st.service, st.action, cancel)
				got, err := env.CreateCPUFootprint(ctx, base, opts)
				h.Shim.ClearRules()
				landHeld(t, hold)
				if fault.fails && err == nil {
					t.Fatal("the create succeeded: the fault was not exercised")
				}
				token := ""
				switch {
				case err == nil:
					token = got.CreationToken
				case got != nil:
					// Recorded and tainted: the next apply replaces it.
					if err := env.DeleteCPUFootprint(context.Background(), base.Name, got.CreationToken, opts); err != nil {
						t.Fatalf("destroying the tainted footprint (after %v): %v", err, err)
					}
				default:
					if f, ferr := footprint(t, h, base.Name); ferr != nil || f != nil {
						t.Fatalf("create failed with nothing recorded (%v), yet footprint exists: %+v %v", err, f, ferr)
					}
				}
				if token == "" {
					got, err = env.CreateCPUFootprint(context.Background(), base, opts)
					if err != nil {
						t.Fatalf("re-apply: %v", err)
					}
					token = got.CreationToken
				}
				if err := checkConverged(t, h, base); err != nil {
					t.Fatal(err)
				}
				if err := env.DeleteCPUFootprint(context.Background(), base.Name, token, opts); err != nil {
					t.Fatal(err)
				}
				if err := checkFootprintGone(t, h, base.Name)(nil); err != nil {
					t.Fatal(err)
				}
			})
		}
		for _, st := range updates {
			t.Run(fmt.Sprintf("update/%s/%s", st.action, fault.name), func(t *testing.T) {
				h, env := cell(t)
				f, err := env.CreateCPUFootprint(context.Background(), base, opts)
				if err != nil {
					t.Fatal(err)
				}
				spec := base
				spec.CreationToken = f.CreationToken
				prior := platform.RecordCPUFootprint(f, platform.CPUFootprintRecord{Spec: spec, CreationToken: f.CreationToken})
				next := spec
				next.Size = platform.GroupSize{Min: 1, Max: 3, Desired: 2}
				next.Tags = map[string]string{"team": "smb2"}
				next.UserData = "#!/bin/sh\necho v2\n" // a new template version
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				hold := fault.arm(t, h, st.service, st.action, cancel)
				_, err = env.UpdateCPUFootprint(ctx, prior, next, opts)
				h.Shim.ClearRules()
				landHeld(t, hold)
				if fault.fails && err == nil {
					t.Fatal("the update succeeded: the fault was not exercised")
				}
				// Terraform keeps the prior state and applies again.
				if _, err := env.UpdateCPUFootprint(context.Background(), prior, next, opts); err != nil {
					t.Fatalf("re-apply: %v", err)
				}
				if err := checkConverged(t, h, next); err != nil {
					t.Fatal(err)
				}
				if err := env.DeleteCPUFootprint(context.Background(), base.Name, f.CreationToken, opts); err != nil {
					t.Fatal(err)
				}
			})
		}
		for _, st := range deletes {
			t.Run(fmt.Sprintf("delete/%s/%s", st.action, fault.name), func(t *testing.T) {
				h, env := cell(t)
				f, err := env.CreateCPUFootprint(context.Background(), base, opts)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				hold := fault.arm(t, h, st.service, st.action, cancel)
				err = env.DeleteCPUFootprint(ctx, base.Name, f.CreationToken, opts)
				h.Shim.ClearRules()
				landHeld(t, hold)
				if fault.fails && err == nil {
					t.Fatal("the delete succeeded: the fault was not exercised")
				}
				if err != nil {
					// State keeps the footprint; destroy runs again.
					if err := env.DeleteCPUFootprint(context.Background(), base.Name, f.CreationToken, opts); err != nil {
						t.Fatalf("second destroy after %v: %v", err, err)
					}
				}
				if err := checkFootprintGone(t, h, base.Name)(nil); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestAccCPUFootprint_createInterrupted is a create cut by its Terraform
// timeout while the group's create call is held (it lands afterwards):
// the footprint is recorded, tainted, so the next apply replaces it and
// nothing is orphaned.
func TestAccCPUFootprint_createInterrupted(t *testing.T) {
	h := acctest.Setup(t)
	hold := acctest.NewHold(t)
	cfg := func(timeout string) string {
		return cpuFootprintConfig(h, acctest.AWSManagedKeys, "cut", fmt.Sprintf(`
  instance_type    = "c7i.large"
  min_size         = 1
  max_size         = 2
  desired_capacity = 1
  timeouts {
    create = %q
  }`, timeout))
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "cut"),
		Steps: []resource.TestStep{{
			PreConfig: func() {
				// The group's create is held until the next step: the
				// 4s timeout runs out while it is held, on any machine.
				h.Shim.AddRule(acctest.FaultRule{Service: "autoscaling", Action: "CreateAutoScalingGroup", Times: 1, Hold: hold})
			},
			Config:      cfg("4s"),
			ExpectError: regexp.MustCompile(`creating CPU footprint \(cut\)`),
		}, {
			PreConfig: func() {
				if n := hold.Arrived(); n != 1 {
					t.Fatalf("%d CreateAutoScalingGroup calls were held when the create's timeout ran out, want 1", n)
				}
				landHeld(t, hold) // the held create lands
				h.Shim.ClearRules()
			},
			Config: cfg("10m"),
			Check: resource.ComposeAggregateTestCheckFunc(
				checkFootprint(t, h, "cut", func(f *platform.CPUFootprint) error {
					if len(f.Instances) != 1 {
						return fmt.Errorf("%d instances, want 1", len(f.Instances))
					}
					return nil
				}),
				func(s *terraform.State) error {
					f, err := footprint(t, h, "cut")
					if err != nil {
						return err
					}
					if tok := s.RootModule().Resources[cpuFootprintResource].Primary.Attributes["creation_token"]; f.CreationToken != tok {
						return fmt.Errorf("group carries token %s, state %s", f.CreationToken, tok)
					}
					return nil
				},
			),
		}},
	})
}

// TestAccCPUFootprint_rollInterrupted is a type change whose instance
// refresh outlasts the update's timeout: the apply fails, the prior
// configuration stays in state, and the next apply starts the roll again
// and finishes it (the group records which template its instances were
// refreshed to); then the plan is empty.
func TestAccCPUFootprint_rollInterrupted(t *testing.T) {
	h := acctest.Setup(t)
	cfg := func(typ, timeout string) string {
		return cpuFootprintConfig(h, acctest.AWSManagedKeys, "held", fmt.Sprintf(`
  instance_type    = %q
  min_size         = 1
  max_size         = 2
  desired_capacity = 1
  timeouts {
    update = %q
  }`, typ, timeout))
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkFootprintGone(t, h, "held"),
		// The update's timeout ends while the instance refresh is held.
		// It leaves room for the reads before the refresh starts: 3 s did
		// not under make test's load on 2 vCPUs (moto answered nothing
		// for 12 s, and the deadline hit DescribeScheduledActions).
		Steps: []resource.TestStep{{
			Config: cfg("c7i.large", "30s"),
		}, {
			PreConfig:   h.Refreshes.HoldRefreshes,
			Config:      cfg("m7i.large", "30s"),
			ExpectError: regexp.MustCompile(`(?s)updating CPU footprint \(held\).*instance refresh`),
		}, {
			PreConfig: h.Refreshes.ReleaseRefreshes,
			Config:    cfg("m7i.large", "10m"),
			Check: checkFootprint(t, h, "held", func(f *platform.CPUFootprint) error {
				if len(f.Instances) != 1 || f.Instances[0].InstanceType != "m7i.large" {
					return fmt.Errorf("instances %+v, want one m7i.large", f.Instances)
				}
				if got := h.Refreshes.Started(); len(got) != 2 {
					return fmt.Errorf("refreshes %v, want the held one and its restart", got)
				}
				return nil
			}),
		}, {
			Config:   cfg("m7i.large", "10m"),
			PlanOnly: true,
		}},
	})
}

// TestAccCPUFootprint_refusesForeign: a footprint of the same name made by
// another configuration is never adopted, replaced or deleted.
func TestAccCPUFootprint_refusesForeign(t *testing.T) {
	h := acctest.Setup(t)
	env := fixtureEnv(t, h)
	other, err := env.CreateCPUFootprint(context.Background(), platform.CPUFootprintSpec{Name: "taken", InstanceType: "c7i.large",
		Size: platform.GroupSize{Min: 1, Max: 1, Desired: 1}, RootVolume: platform.Volume{SizeGiB: 20}}, platform.CPUFootprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.Shim.ResetLog()
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: cpuFootprintConfig(h, acctest.AWSManagedKeys, "taken", `
  instance_type    = "m7i.large"
  min_size         = 0
  max_size         = 2
  desired_capacity = 2`),
			ExpectError: regexp.MustCompile(`(?s)already exists.*cannot prove it\s+created it`),
		}},
	})
	for _, c := range h.Shim.Writes() {
		t.Errorf("the refused create wrote: %v", c)
	}
	f, err := footprint(t, h, "taken")
	if err != nil || f == nil || f.CreationToken != other.CreationToken || len(f.Instances) != 1 || f.Instances[0].InstanceType != "c7i.large" {
		t.Errorf("the other footprint changed: %+v, %v", f, err)
	}
	var oe *platform.OwnershipError
	if err := env.DeleteCPUFootprint(context.Background(), "taken", "not-the-owner", platform.CPUFootprintOptions{}); !errors.As(err, &oe) {
		t.Errorf("delete with another token: %v, want an OwnershipError", err)
	}
}
