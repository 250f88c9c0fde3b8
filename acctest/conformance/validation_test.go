package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mlplatform/mlplatform/acctest"
)

// The validation gate on both front ends: a p5en cluster whose nodes the
// node player plays (the real hwprobe with go-nvml's mock H200s, built
// with the hwprobe_nvmlmock tag; identity documents signed by a test key
// the validation block trusts). Each scenario's first step starts the
// player before the front end applies.

// gateRun is what one front end's run of a gate scenario shares between
// its steps: the test signer's certificate and the reports key.
type gateRun struct {
	mu      sync.Mutex
	certPEM string
	keyARN  string
	player  *acctest.NodePlayer
}

func (g *gateRun) get() (string, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.certPEM, g.keyARN
}

// start makes the reports key and starts a node player for cluster name
// with behaviour; it stops when the front end's run ends.
func (g *gateRun) start(name string, behaviour func(index, nth int) acctest.NodeBehaviour) func(t *testing.T, h *acctest.Harness, f *fixtures) {
	return func(t *testing.T, h *acctest.Harness, _ *fixtures) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			t.Fatal(err)
		}
		key, err := c.KMS.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("conformance reports key")})
		if err != nil {
			t.Fatal(err)
		}
		p := acctest.NewNodePlayer(t, h)
		p.Behaviour = behaviour
		g.mu.Lock()
		g.certPEM, g.keyARN, g.player = p.Signer.CertPEM, aws.ToString(key.KeyMetadata.Arn), p
		g.mu.Unlock()
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); p.Watch(wctx, name) }()
		t.Cleanup(func() { stop(); <-done })
	}
}

// startAttested is start on an image with NitroTPM (the emulator's image
// double): the nodes' answers are attested by the player's test NitroTPM.
func (g *gateRun) startAttested(name string, behaviour func(index, nth int) acctest.NodeBehaviour) func(t *testing.T, h *acctest.Harness, f *fixtures) {
	start := g.start(name, behaviour)
	return func(t *testing.T, h *acctest.Harness, f *fixtures) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.MarkImageNitroTPM(ctx, f.amiA); err != nil {
			t.Fatal(err)
		}
		start(t, h, f)
	}
}

// attestedInputs is gateInputs requiring NitroTPM attestation under the
// player's test Nitro root.
func (g *gateRun) attestedInputs(name string) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		g.mu.Lock()
		root := g.player.NitroRootPEM()
		g.mu.Unlock()
		return g.gateInputs(name, map[string]any{"attestation": "nitrotpm", "attestation_roots": root})(f)
	}
}

// attestedUnknownInputs is attestedInputs with the mode and PCR 4 (the
// test PKI's documents carry PCRs of zeros) known only at apply.
func (g *gateRun) attestedUnknownInputs(name string) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		g.mu.Lock()
		root := g.player.NitroRootPEM()
		g.mu.Unlock()
		return g.gateInputs(name, map[string]any{"attestation": unknown{"nitrotpm"}, "attestation_roots": root,
			"attestation_pcrs": map[string]any{"4": unknown{strings.Repeat("00", 48)}}})(f)
	}
}

// gateInputs is a p5en cluster of two nodes with a validation block.
func (g *gateRun) gateInputs(name string, validation map[string]any) func(*fixtures) map[string]any {
	return func(f *fixtures) map[string]any {
		cert, key := g.get()
		v := merge(map[string]any{
			"checks":               []any{"host", "gpu"},
			"reports_s3_uri":       "s3://" + uaeBucket + "/reports/",
			"reports_kms_key_arn":  key,
			"trusted_certificates": cert,
			"timeout":              "5m",
		}, validation)
		return gpuInputs(name, map[string]any{"instance_type": "p5en.48xlarge", "node_count": 2, "validation": v})(f)
	}
}

// gateNodes plays every node with healthy H200s, except node 1's first
// instance when nvlinkDown, whose GPU 3 has NVLink 17 down.
func gateNodes(nvlinkDown bool) func(index, nth int) acctest.NodeBehaviour {
	return func(index, nth int) acctest.NodeBehaviour {
		if nvlinkDown && index == 1 && nth == 0 {
			return acctest.GPUNode("p5en.48xlarge", "nvlink_down=3:17")
		}
		return acctest.GPUNode("p5en.48xlarge")
	}
}

// wantValidated checks that every node of cluster name reported, by the
// reports under its prefix.
func wantValidated(name string, nodes int) func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		out, err := c.S3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(uaeBucket), Prefix: aws.String("reports/" + name + "/")})
		if err != nil {
			return err
		}
		seen := map[string]bool{}
		for _, o := range out.Contents {
			id, _, _ := strings.Cut(strings.TrimPrefix(aws.ToString(o.Key), "reports/"+name+"/"), "/")
			seen[id] = true
		}
		if len(seen) < nodes {
			return fmt.Errorf("%d nodes published reports, want %d", len(seen), nodes)
		}
		return nil
	}
}

// wantPlayed checks that the player ran n instances of the cluster.
func (g *gateRun) wantPlayed(n int) func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
	return func(context.Context, *acctest.Harness, *fixtures) error {
		g.mu.Lock()
		p := g.player
		g.mu.Unlock()
		if got := len(p.Played()); got != n {
			return fmt.Errorf("the node player ran %d instances, want %d", got, n)
		}
		if errs := p.Errs(); len(errs) > 0 {
			return fmt.Errorf("node player: %v", errs)
		}
		return nil
	}
}

// forgedNode is an instance id that is no node of the cluster.
const forgedNode = "i-0123456789abcdef0"

func validationScenarios() []scenario {
	pass, fail, warn, replace, timeout, forged := &gateRun{}, &gateRun{}, &gateRun{}, &gateRun{}, &gateRun{}, &gateRun{}
	attested, forgery := &gateRun{}, &gateRun{}
	return []scenario{
		{
			name: "gpu_cluster/validation pass", kind: gpuCluster, resource: "conf-gate-pass", residency: awsManagedKeys,
			steps: []step{
				{name: "healthy GPUs: apply passes; the image has no NitroTPM, so the plan warns", outOfBand: pass.start("conf-gate-pass", gateNodes(false)), inputs: pass.gateInputs("conf-gate-pass", nil),
					want: created, check: wantValidated("conf-gate-pass", 2), warnings: []string{"Validation evidence is not hardware-attested", "has no NitroTPM"}},
			},
		},
		{
			name: "gpu_cluster/validation attested", kind: gpuCluster, resource: "conf-gate-att", residency: awsManagedKeys,
			steps: []step{
				{name: "NitroTPM-attested answers to the gate's challenge, the mode and a PCR known only at apply: apply passes", outOfBand: attested.startAttested("conf-gate-att", gateNodes(false)),
					inputs: attested.attestedUnknownInputs("conf-gate-att"), want: created, check: wantValidated("conf-gate-att", 2)},
			},
		},
		{
			name: "gpu_cluster/validation attested forgery", kind: gpuCluster, resource: "conf-gate-forgery", residency: awsManagedKeys,
			steps: []step{
				{name: "a writer of the prefix rewrites a failing answer to pass: rejected by its attested digest", outOfBand: forgery.startAttested("conf-gate-forgery", func(index, nth int) acctest.NodeBehaviour {
					b := gateNodes(true)(index, nth)
					if index == 1 {
						b.ForgeAnswer = acctest.ForgeToPass
					}
					return b
				}), inputs: forgery.attestedInputs("conf-gate-forgery"),
					want: refused, refusedAtApply: true, messages: []string{"1 of 2 nodes failed", "node 1 (i-", "the report's content is not what the node's NitroTPM attested"}},
			},
		},
		{
			name: "gpu_cluster/validation fail", kind: gpuCluster, resource: "conf-gate-fail", residency: awsManagedKeys,
			steps: []step{
				{name: "an NVLink down: apply fails naming node and link", outOfBand: fail.start("conf-gate-fail", gateNodes(true)), inputs: fail.gateInputs("conf-gate-fail", nil),
					want: refused, refusedAtApply: true, messages: []string{"validation of GPU cluster conf-gate-fail failed: 1 of 2 nodes failed", "node 1 (i-", "gpu.nvlink gpu3", "down: link 17"}},
			},
		},
		{
			name: "gpu_cluster/validation warn", kind: gpuCluster, resource: "conf-gate-warn", residency: awsManagedKeys,
			steps: []step{
				{name: "on_failure warn: apply succeeds with a warning", outOfBand: warn.start("conf-gate-warn", gateNodes(true)), inputs: warn.gateInputs("conf-gate-warn", map[string]any{"on_failure": "warn"}),
					want: created, warnings: []string{"gpu.nvlink gpu3", "down: link 17"}, check: wantValidated("conf-gate-warn", 2)},
			},
		},
		{
			name: "gpu_cluster/validation replace", kind: gpuCluster, resource: "conf-gate-repl", residency: awsManagedKeys,
			steps: []step{
				{name: "on_failure replace: the failing node is replaced and apply passes", outOfBand: replace.start("conf-gate-repl", gateNodes(true)),
					inputs: replace.gateInputs("conf-gate-repl", map[string]any{"on_failure": "replace"}), want: created, check: replace.wantPlayed(3)},
			},
		},
		{
			name: "gpu_cluster/validation timeout", kind: gpuCluster, resource: "conf-gate-time", residency: awsManagedKeys, waits: true,
			steps: []step{
				{name: "a silent node: apply times out naming it", outOfBand: timeout.start("conf-gate-time", func(index, nth int) acctest.NodeBehaviour {
					b := gateNodes(false)(index, nth)
					b.Silent = index == 1
					return b
				}), inputs: timeout.gateInputs("conf-gate-time", map[string]any{"timeout": "1m"}),
					want: refused, refusedAtApply: true, messages: []string{"validation of GPU cluster conf-gate-time timed out after 1m0s: 1/2 nodes reported", "node 1 (i-", "never reported"}},
			},
		},
		{
			name: "gpu_cluster/validation forged", kind: gpuCluster, resource: "conf-gate-forge", residency: awsManagedKeys,
			steps: []step{
				{name: "another instance's identity: the report is rejected", outOfBand: forged.start("conf-gate-forge", func(index, nth int) acctest.NodeBehaviour {
					b := gateNodes(false)(index, nth)
					if index == 1 {
						b.IdentityOf = forgedNode
					}
					return b
				}), inputs: forged.gateInputs("conf-gate-forge", nil),
					want: refused, refusedAtApply: true, messages: []string{"1 of 2 nodes failed", "node 1 (i-", "identity of instance " + forgedNode + ", not of node 1"}},
			},
		},
	}
}
