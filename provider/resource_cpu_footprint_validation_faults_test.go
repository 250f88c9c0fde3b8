package provider_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// hookState is the footprint group's validation hook, as
// "name transition heartbeat default", or "" when it has none.
func hookState(t *testing.T, h *acctest.Harness, group string) (string, error) {
	t.Helper()
	c, err := h.Clients(context.Background(), acctest.Region)
	if err != nil {
		return "", err
	}
	out, err := c.AutoScaling.DescribeLifecycleHooks(context.Background(), &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(group)})
	if err != nil {
		return "", err
	}
	switch len(out.LifecycleHooks) {
	case 0:
		return "", nil
	case 1:
		hk := out.LifecycleHooks[0]
		return fmt.Sprintf("%s %s %d %s", aws.ToString(hk.LifecycleHookName), aws.ToString(hk.LifecycleTransition), aws.ToInt32(hk.HeartbeatTimeout), aws.ToString(hk.DefaultResult)), nil
	}
	return "", fmt.Errorf("%d hooks on %s", len(out.LifecycleHooks), group)
}

// TestAccCPUFootprint_hookFaults runs the core's create with validation,
// the update that adds validation, the update that removes it and the
// delete, with the lifecycle hook's write interrupted, timed out, throttled and answered
// with a lost response, then applies again as Terraform would. After every
// cell the hook is exactly as declared (there, or gone) and nothing is
// orphaned, and a destroy with the hook's delete faulted removes it. The gate does not wait (wait = false): the hook is what is
// under test.
func TestAccCPUFootprint_hookFaults(t *testing.T) {
	h := acctest.Setup(t)
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	key := createKey(t, h, acctest.Region)
	env := platformEnv(t, h)
	opts := platform.CPUFootprintOptions{} // the environment polls every 50ms (platformEnv)
	plain := footprintFaultSpec()
	plain.Name, plain.Schedules = "hooked", nil
	validated := plain
	validated.Validation = &platform.ValidationSpec{Timeout: 10 * time.Minute, Checks: []string{platform.CheckHost, platform.CheckCPU},
		ReportsS3URI: "s3://uae-hwprobe-reports/footprints/", ReportsKMSKeyARN: key}
	group := platform.CPUFootprintResourceName(plain.Name)
	const want = "mlplatform-validation autoscaling:EC2_INSTANCE_LAUNCHING 600 ABANDON"
	if _, err := env.PlanCPUFootprint(context.Background(), nil, validated); err != nil { // warm the catalog
		t.Fatal(err)
	}
	checkHookIs := func(t *testing.T, w string) {
		t.Helper()
		got, err := hookState(t, h, group)
		if err != nil || got != w {
			t.Fatalf("hook %q (%v), want %q", got, err, w)
		}
	}
	cleanup := func() {
		h.Shim.ClearRules()
		_ = env.DeleteCPUFootprint(context.Background(), plain.Name, "", opts)
	}
	for _, fault := range cpuFaults() {
		t.Run("create/PutLifecycleHook/"+fault.name, func(t *testing.T) {
			t.Cleanup(cleanup)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hold := fault.arm(t, h, "autoscaling", "PutLifecycleHook", cancel)
			got, err := env.CreateCPUFootprint(ctx, validated, opts)
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
				if err := env.DeleteCPUFootprint(context.Background(), plain.Name, got.CreationToken, opts); err != nil {
					t.Fatalf("destroying the tainted footprint: %v", err)
				}
			default:
				t.Fatalf("create failed after writing with nothing recorded: %v", err)
			}
			if token == "" {
				if got, err = env.CreateCPUFootprint(context.Background(), validated, opts); err != nil {
					t.Fatalf("re-apply: %v", err)
				}
				token = got.CreationToken
			}
			checkHookIs(t, want)
			if err := env.DeleteCPUFootprint(context.Background(), plain.Name, token, opts); err != nil {
				t.Fatal(err)
			}
			if err := checkFootprintGone(t, h, plain.Name)(nil); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("delete/DeleteLifecycleHook/"+fault.name, func(t *testing.T) {
			t.Cleanup(cleanup)
			f, err := env.CreateCPUFootprint(context.Background(), validated, opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hold := fault.arm(t, h, "autoscaling", "DeleteLifecycleHook", cancel)
			err = env.DeleteCPUFootprint(ctx, plain.Name, f.CreationToken, opts)
			h.Shim.ClearRules()
			landHeld(t, hold)
			if fault.fails && err == nil {
				t.Fatal("the delete succeeded: the fault was not exercised")
			}
			if err != nil {
				// State keeps the footprint; destroy runs again.
				if err := env.DeleteCPUFootprint(context.Background(), plain.Name, f.CreationToken, opts); err != nil {
					t.Fatalf("second destroy: %v", err)
				}
			}
			if err := checkFootprintGone(t, h, plain.Name)(nil); err != nil {
				t.Fatal(err)
			}
			checkHookIs(t, "")
		})
		for _, tc := range []struct {
			name, action string
			from, to     platform.CPUFootprintSpec
			want         string
		}{
			{"add", "PutLifecycleHook", plain, validated, want},
			{"remove", "DeleteLifecycleHook", validated, plain, ""},
		} {
			t.Run(fmt.Sprintf("update-%s/%s/%s", tc.name, tc.action, fault.name), func(t *testing.T) {
				t.Cleanup(cleanup)
				f, err := env.CreateCPUFootprint(context.Background(), tc.from, opts)
				if err != nil {
					t.Fatal(err)
				}
				from, to := tc.from, tc.to
				from.CreationToken, to.CreationToken = f.CreationToken, f.CreationToken
				prior := platform.RecordCPUFootprint(f, platform.CPUFootprintRecord{Spec: from, CreationToken: f.CreationToken})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				hold := fault.arm(t, h, "autoscaling", tc.action, cancel)
				_, err = env.UpdateCPUFootprint(ctx, prior, to, opts)
				h.Shim.ClearRules()
				landHeld(t, hold)
				if fault.fails && err == nil {
					t.Fatal("the update succeeded: the fault was not exercised")
				}
				// Terraform keeps the prior state and applies again.
				if _, err := env.UpdateCPUFootprint(context.Background(), prior, to, opts); err != nil {
					t.Fatalf("re-apply: %v", err)
				}
				checkHookIs(t, tc.want)
				if err := env.DeleteCPUFootprint(context.Background(), plain.Name, f.CreationToken, opts); err != nil {
					t.Fatal(err)
				}
				if err := checkFootprintGone(t, h, plain.Name)(nil); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
