package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/hwprobe/probe/machine"
)

// The CPU footprint's validation gate on both front ends: the footprint
// player (acctest.FootprintPlayer) plays the instances with the real
// hwprobe; the gate completes their lifecycle actions against the
// lifecycle-action double. c7i.large is the type. hwprobe probes a fixed
// machine description, never this machine's CPU: the passing rows' nodes
// are Sapphire Rapids (AMX: the c7i's features pass), the failing and
// warning rows' nodes Zen 5 (no AMX: the features check fails).

// gateRig is one front end's run of a gate scenario: the player it starts
// in the first step, and the reports key.
type gateRig struct {
	machine string // the nodes' fixed machine description
	player  *acctest.FootprintPlayer
	key     string
	cli     string // the mlplatform command line (approveScaleOut)
}

// start builds the player, the reports key, and plays footprint name until
// the test ends.
func (g *gateRig) start(name string) func(t *testing.T, h *acctest.Harness, f *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		g.player = acctest.NewFootprintPlayer(t, h)
		g.player.Machine = g.machine
		g.cli = acctest.BuildCLI(t)
		c, err := h.Clients(context.Background(), acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		k, err := c.KMS.CreateKey(context.Background(), &kms.CreateKeyInput{})
		if err != nil {
			t.Fatal(err)
		}
		g.key = aws.ToString(k.KeyMetadata.Arn)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); g.player.WatchFootprint(ctx, name) }()
		t.Cleanup(func() { cancel(); <-done })
	}
}

// inputs is a c7i footprint of desired instances validated with checks.
func (g *gateRig) inputs(name string, desired int, checks []any, over map[string]any) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		v := merge(map[string]any{
			"checks":               checks,
			"timeout":              "5m",
			"reports_s3_uri":       "s3://" + uaeBucket + "/footprints/",
			"reports_kms_key_arn":  g.key,
			"trusted_certificates": g.player.Signer.CertPEM,
		}, over)
		return cpuInputs(name, map[string]any{"min_size": 0, "max_size": 3, "desired_capacity": desired, "validation": v})(f)
	}
}

// wantLifecycle checks the results of the lifecycle actions completed so
// far, in order, and the group's hook.
func (g *gateRig) wantLifecycle(group string, results ...string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		deadline := time.Now().Add(30 * time.Second)
		var got []string
		for {
			got = got[:0]
			for _, c := range g.player.Lifecycle.Completions() {
				got = append(got, c.Result)
			}
			if len(got) >= len(results) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if !slices.Equal(got[:min(len(got), len(results))], results) {
			return fmt.Errorf("lifecycle results %v, want %v first; the player met: %v", got, results, g.player.Errs())
		}
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		out, err := c.AutoScaling.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(group)})
		if err != nil {
			return err
		}
		if len(out.LifecycleHooks) != 1 || aws.ToString(out.LifecycleHooks[0].LifecycleHookName) != "mlplatform-validation" ||
			aws.ToString(out.LifecycleHooks[0].DefaultResult) != "ABANDON" || aws.ToInt32(out.LifecycleHooks[0].HeartbeatTimeout) != 300 {
			return fmt.Errorf("lifecycle hooks of %s: %+v", group, out.LifecycleHooks)
		}
		return nil
	}
}

// approveScaleOut scales the group out by one outside the front end, as a
// schedule would, and runs `mlplatform approve` with the approver
// configuration the front end recorded: the new instance waits until the
// approver, not the node, puts it in service.
func (g *gateRig) approveScaleOut(group string) func(context.Context, *acctest.Harness, map[string]string) error {
	return func(ctx context.Context, h *acctest.Harness, outs map[string]string) error {
		approver := outs["validation_approver"]
		if !strings.Contains(approver, `"footprint": "`+strings.TrimPrefix(group, "mlplatform-cpu-")+`"`) {
			return fmt.Errorf("validation_approver %q does not name the footprint", approver)
		}
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		before := len(g.player.Lifecycle.Completions())
		if _, err := c.AutoScaling.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String(group), DesiredCapacity: aws.Int32(3)}); err != nil {
			return err
		}
		env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
		for k, v := range h.Env() {
			env = append(env, k+"="+v)
		}
		// The new instance must be waiting before a round can judge it:
		// an idle round decides nothing and ends at once.
		deadline := time.Now().Add(time.Minute)
		for {
			cmd := exec.CommandContext(ctx, g.cli, "approve", "--config", "-")
			cmd.Stdin, cmd.Env = strings.NewReader(approver), env
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("mlplatform approve: %v\n%s", err, out)
			}
			if strings.Contains(string(out), " CONTINUE (pass: ") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("mlplatform approve put no instance in service within a minute:\n%s", out)
			}
			time.Sleep(time.Second)
		}
		cs := g.player.Lifecycle.Completions()
		if len(cs) != before+1 || cs[len(cs)-1].Result != "CONTINUE" {
			return fmt.Errorf("lifecycle actions after the approver: %+v, want one more CONTINUE", cs[before:])
		}
		return nil
	}
}

func cpuFootprintValidationScenarios() []scenario {
	pass := &gateRig{machine: machine.SapphireRapids}
	fail, warn := &gateRig{machine: machine.Zen5}, &gateRig{machine: machine.Zen5}
	features := []any{"host", "cpu", "cpu_features"}
	return []scenario{
		{
			name: "cpu_footprint/validation", kind: cpuFootprint, resource: "conf-gate", residency: awsManagedKeys,
			steps: []step{
				{name: "create: the instance passes and its lifecycle action continues", outOfBand: pass.start("conf-gate"),
					inputs: pass.inputs("conf-gate", 1, features, nil), want: created, check: pass.wantLifecycle("mlplatform-cpu-conf-gate", "CONTINUE")},
				{name: "scale out in place: the new instance is validated before it serves",
					inputs: pass.inputs("conf-gate", 2, features, nil), want: updated, check: pass.wantLifecycle("mlplatform-cpu-conf-gate", "CONTINUE", "CONTINUE"),
					outputs: []string{"validation_approver"}, checkOutputs: pass.approveScaleOut("mlplatform-cpu-conf-gate")},
			},
		},
		{
			name: "cpu_footprint/validation-fail", kind: cpuFootprint, resource: "conf-gate-fail", residency: awsManagedKeys,
			steps: []step{
				{name: "a profile demanding a CPU feature the node lacks (AMX on Zen 5) fails the apply naming it", outOfBand: fail.start("conf-gate-fail"),
					inputs: fail.inputs("conf-gate-fail", 1, features, nil), want: refused, refusedAtApply: true,
					messages: []string{"validation of CPU footprint conf-gate-fail failed", "cpu.feature amx_tile: expected present, observed absent"}},
			},
		},
		{
			name: "cpu_footprint/validation-warn", kind: cpuFootprint, resource: "conf-gate-warn", residency: awsManagedKeys,
			steps: []step{
				{name: "on_failure warn: created with a warning, the failing instance continues", outOfBand: warn.start("conf-gate-warn"),
					inputs: warn.inputs("conf-gate-warn", 1, features, map[string]any{"on_failure": "warn"}), want: created,
					warnings: []string{"amx_tile", `on_failure = "warn"`}, check: warn.wantLifecycle("mlplatform-cpu-conf-gate-warn", "CONTINUE")},
			},
		},
	}
}
