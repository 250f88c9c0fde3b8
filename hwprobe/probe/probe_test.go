//go:build cgo

package probe

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mlplatform/mlplatform/hwprobe/gpu/gputest"
)

func TestProbeCPUHost(t *testing.T) {
	inv, err := Probe(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Schema != SchemaVersion || inv.CPU.Cores <= 0 {
		t.Fatalf("inventory = %+v", inv)
	}
	want := map[string]bool{CollectorHost: false, CollectorCPU: true, CollectorGPU: false, CollectorNetwork: true}
	for name, ran := range want {
		r, ok := inv.Collector(name)
		if !ok || r.Ran != ran || (!ran && r.Skipped == "") {
			t.Errorf("collector %s = %+v", name, r)
		}
	}
	if inv.GPU.Available || inv.GPU.Reason == "" || inv.Host.OnEC2 {
		t.Errorf("gpu %+v host %+v", inv.GPU, inv.Host)
	}
	if _, err := json.Marshal(inv); err != nil {
		t.Fatal(err)
	}
}

func TestProbeGPUMockAndIMDS(t *testing.T) {
	doc, sig, certs := identityFixture(t)
	srv := fakeIMDS(t, map[string]string{
		"/latest/meta-data/instance-id":                    "i-0123456789abcdef0",
		"/latest/meta-data/placement/availability-zone-id": "mec1-az1",
		"/latest/dynamic/instance-identity/document":       doc,
		"/latest/dynamic/instance-identity/rsa2048":        sig,
	})
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "") // the caller's environment may disable it
	inv, err := Probe(context.Background(), Config{NVML: gputest.DGXH200(), IMDS: NewIMDSClient(), TrustedCerts: certs})
	if err != nil {
		t.Fatal(err)
	}
	if failed := inv.Failed(); len(failed) != 0 {
		t.Fatalf("failed collectors: %+v", failed)
	}
	if inv.GPU.Count != 8 || !inv.Host.OnEC2 || !inv.Host.Identity.Verified {
		t.Errorf("gpu count %d host %+v", inv.GPU.Count, inv.Host)
	}
}

func TestProbeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Probe(ctx, Config{}); err == nil {
		t.Error("cancelled probe returned no error")
	}
}

// BenchmarkProbeCPUHost probes this machine's CPU and RDMA devices (no
// GPU library, no instance metadata). Target: under 100 ms.
func BenchmarkProbeCPUHost(b *testing.B) {
	for b.Loop() {
		if _, err := Probe(context.Background(), Config{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProbe8GPUMock probes this machine plus an 8x H100 mock server.
// Target: under 1 s.
func BenchmarkProbe8GPUMock(b *testing.B) {
	lib := gputest.DGXH100()
	for b.Loop() {
		inv, err := Probe(context.Background(), Config{NVML: lib})
		if err != nil || inv.GPU.Count != 8 {
			b.Fatal(err, inv.GPU.Count)
		}
	}
}
