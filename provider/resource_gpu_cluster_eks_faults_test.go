package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The nodes' access entry under faults, on its create path (the GPU
// cluster's create) and its delete path (the cluster's destroy): the call
// interrupted (Ctrl-C while it is on the wire), timed out (held until the
// client gave up, then landing), throttled, and answered with a lost
// response (done, the client sees a 500). After each, what exists is what
// the record says: an apply again finishes with exactly one entry, owned
// by the cluster; a destroy again leaves none. The entry is created before
// any node, so a create cut there launched nothing.
func TestAccGPUCluster_eksAccessEntryFaults(t *testing.T) {
	h := acctest.Setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createBucket(t, h, "uae-hwprobe-reports", acctest.Region)
	if err := h.CreateEKSCluster(ctx, eksCluster); err != nil {
		t.Fatal(err)
	}
	role, err := h.CreateInstanceProfile(ctx, "eks-nodes")
	if err != nil {
		t.Fatal(err)
	}
	env := platformEnv(t, h)
	key := createKey(t, h, acctest.Region)
	spec := func(name string) platform.GPUClusterSpec {
		return platform.GPUClusterSpec{Name: name, InstanceType: "p5en.48xlarge", NodeCount: 1, ZoneID: "mec1-az1", EFAInterfaces: aws.Int(1),
			Image: "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", RootVolume: platform.Volume{SizeGiB: 100},
			InstanceProfile: "eks-nodes",
			Validation:      &platform.ValidationSpec{ReportsS3URI: "s3://uae-hwprobe-reports/clusters/", ReportsKMSKeyARN: key}, // wait = false: no gate
			EKS:             &platform.EKSSpec{ClusterName: eksCluster, CreateAccessEntry: true}}
	}
	type view struct{ Type, Token string }
	entry := func() (view, bool) {
		e, ok := h.EKSAccessEntries(eksCluster)[role]
		return view{Type: e.Type, Token: e.Tags["mlplatform:creation-token"]}, ok
	}
	// fault arms one fault on action for the next call; cut, when set,
	// is the context the faulted call runs under (interrupt, timeout).
	type fault struct {
		name string
		arm  func(t *testing.T, action string, cut context.CancelFunc)
		// cuts: the verb fails, and a second one finishes.
		cuts bool
		// served checks the answers the faulted call got (statuses).
		served func(statuses []int) bool
	}
	// statuses are the answers of action's calls; a held call is logged
	// once it landed, after its client gave up: wait for one.
	statuses := func(action string) []int {
		wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer wcancel()
		_ = h.Shim.WaitCalls(wctx, func(calls []acctest.Call) bool {
			return slices.ContainsFunc(calls, func(c acctest.Call) bool { return c.Service == "eks" && c.Action == action && !c.Fixture })
		})
		var out []int
		for _, c := range h.Shim.Calls("eks", action) {
			if !c.Fixture {
				out = append(out, c.Status)
			}
		}
		return out
	}
	faults := []fault{
		{"interrupted", func(t *testing.T, action string, cut context.CancelFunc) {
			h.Shim.OnCall("eks", action, func(r *acctest.Request) {
				if !r.Fixture {
					cut()
				}
			})
		}, true, func(st []int) bool { return len(st) >= 1 }},
		{"timed out", func(t *testing.T, action string, cut context.CancelFunc) {
			// The caller's time runs out 1 s into the call, which is held
			// until then and lands after.
			t.Cleanup(h.Shim.AddServedRule(acctest.FaultRule{Service: "eks", Action: action, Times: 1, Hold: acctest.HoldUntilClientGone(t),
				Before: func(*acctest.Request) { time.AfterFunc(time.Second, cut) }}))
		}, true, func(st []int) bool { return len(st) >= 1 }},
		{"throttled", func(t *testing.T, action string, _ context.CancelFunc) {
			h.Shim.Inject(acctest.Fault{Service: "eks", Action: action, Code: "ThrottlingException", Message: "Rate exceeded (injected)", Status: http.StatusTooManyRequests, Times: 3})
		}, false, func(st []int) bool {
			return len(st) >= 4 && st[0] == http.StatusTooManyRequests && st[1] == http.StatusTooManyRequests && st[2] == http.StatusTooManyRequests
		}},
		{"lost response", func(t *testing.T, action string, _ context.CancelFunc) {
			t.Cleanup(h.Shim.AddServedRule(acctest.FaultRule{Service: "eks", Action: action, Times: 1, LoseResponse: true}))
		}, false, func(st []int) bool { return len(st) >= 2 && st[0] == http.StatusInternalServerError }},
	}
	// verbCtx is the context of a faulted verb: an interrupt cancels it,
	// a timeout ends it during the held call.
	verbCtx := func(fault) (context.Context, context.CancelFunc) {
		return context.WithCancel(context.Background())
	}
	for i, f := range faults {
		t.Run("create "+f.name, func(t *testing.T) {
			h.Shim.ClearRules()
			h.Shim.ReplayClientTokens()
			name := fmt.Sprintf("eks-entry-c%d", i)
			s := spec(name)
			vctx, vcancel := verbCtx(f)
			defer vcancel()
			h.Shim.ResetLog()
			f.arm(t, "CreateAccessEntry", vcancel)
			c, err := env.CreateGPUCluster(vctx, s, platform.GPUClusterOptions{})
			h.Shim.ClearRules()
			if st := statuses("CreateAccessEntry"); !f.served(st) {
				t.Fatalf("CreateAccessEntry answered %v: the fault did not happen as meant", st)
			}
			if f.cuts {
				if err == nil {
					t.Fatal("the cut create succeeded")
				}
				if live, _ := liveGPUNodes(t, h, name); len(live) != 0 {
					t.Fatalf("cut at CreateAccessEntry: %d nodes launched before the entry", len(live))
				}
				if c == nil {
					t.Fatalf("nothing recorded after a cut past the launch template: %v", err)
				}
				s.CreationToken = c.CreationToken
				if _, err := env.UpdateGPUCluster(context.Background(), s, platform.GPUClusterOptions{}); err != nil {
					t.Fatalf("apply again: %v", err)
				}
			} else if err != nil {
				t.Fatalf("create: %v", err)
			} else {
				s.CreationToken = c.CreationToken
			}
			if got, ok := entry(); !ok || got.Type != "EC2_LINUX" || got.Token != s.CreationToken {
				t.Fatalf("entry %+v (exists %v), want EC2_LINUX owned by %s", got, ok, s.CreationToken)
			}
			if n := len(h.EKSAccessEntries(eksCluster)); n != 1 {
				t.Fatalf("%d entries, want 1", n)
			}
			if err := env.DeleteGPUCluster(context.Background(), platform.GPUClusterSpec{Name: name, CreationToken: s.CreationToken}, platform.GPUClusterOptions{}); err != nil {
				t.Fatal(err)
			}
			if got, ok := entry(); ok {
				t.Fatalf("destroy left the entry %+v", got)
			}
		})
	}
	for i, f := range faults {
		t.Run("delete "+f.name, func(t *testing.T) {
			h.Shim.ClearRules()
			name := fmt.Sprintf("eks-entry-d%d", i)
			s := spec(name)
			c, err := env.CreateGPUCluster(context.Background(), s, platform.GPUClusterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			vctx, vcancel := verbCtx(f)
			defer vcancel()
			h.Shim.ResetLog()
			f.arm(t, "DeleteAccessEntry", vcancel)
			err = env.DeleteGPUCluster(vctx, platform.GPUClusterSpec{Name: name, CreationToken: c.CreationToken}, platform.GPUClusterOptions{})
			h.Shim.ClearRules()
			if st := statuses("DeleteAccessEntry"); !f.served(st) {
				t.Fatalf("DeleteAccessEntry answered %v: the fault did not happen as meant", st)
			}
			if f.cuts {
				if err == nil {
					t.Fatal("the cut destroy succeeded")
				}
				// The launch template still records the entry: a destroy
				// again finds it (or finds it gone, when the cut call
				// landed).
				if err := env.DeleteGPUCluster(context.Background(), platform.GPUClusterSpec{Name: name, CreationToken: c.CreationToken}, platform.GPUClusterOptions{}); err != nil {
					t.Fatalf("destroy again: %v", err)
				}
			} else if err != nil {
				t.Fatalf("destroy: %v", err)
			}
			if got, ok := entry(); ok {
				t.Fatalf("the entry is left behind: %+v", got)
			}
			if err := checkClusterGone(t, h, name)(nil); err != nil {
				t.Fatal(err)
			}
		})
	}
	// Another's entry of the role (a cluster sharing it) is used and left.
	t.Run("shared entry", func(t *testing.T) {
		h.Shim.ClearRules()
		if err := h.CreateAccessEntry(context.Background(), eksCluster, role, "EC2_LINUX"); err != nil {
			t.Fatal(err)
		}
		s := spec("eks-entry-shared")
		c, err := env.CreateGPUCluster(context.Background(), s, platform.GPUClusterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := env.DeleteGPUCluster(context.Background(), platform.GPUClusterSpec{Name: s.Name, CreationToken: c.CreationToken}, platform.GPUClusterOptions{}); err != nil {
			t.Fatal(err)
		}
		if got, ok := entry(); !ok || got.Token != "" {
			t.Fatalf("another's entry: %+v (exists %v): want it left as it was", got, ok)
		}
	})
	// One of another type fails the plan, before any write.
	t.Run("entry of another type", func(t *testing.T) {
		ctx := context.Background()
		other, err := h.CreateInstanceProfile(ctx, "eks-other")
		if err != nil {
			t.Fatal(err)
		}
		if err := h.CreateAccessEntry(ctx, eksCluster, other, "STANDARD"); err != nil {
			t.Fatal(err)
		}
		s := spec("eks-entry-standard")
		s.InstanceProfile = "eks-other"
		h.Shim.ResetLog()
		_, err = env.CreateGPUCluster(ctx, s, platform.GPUClusterOptions{})
		var re *platform.RefusedError
		if !errors.As(err, &re) || !slices.ContainsFunc(re.Problems, func(p platform.Problem) bool { return p.Path == "orchestrator.eks.create_access_entry" }) {
			t.Fatalf("create: %v, want the plan refused on orchestrator.eks.create_access_entry", err)
		}
		if w := h.Shim.Writes(); len(w) > 0 {
			t.Fatalf("writes before the refusal: %v", w)
		}
	})
}
