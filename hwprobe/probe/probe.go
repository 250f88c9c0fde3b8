package probe

import (
	"context"
	"crypto/x509"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/klauspost/cpuid/v2"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
)

// Collector names, as they appear in Inventory.Collectors.
const (
	CollectorHost    = "host"
	CollectorCPU     = "cpu"
	CollectorGPU     = "gpu"
	CollectorNetwork = "network"
)

// Config says where each collector reads from. Zero values mean the real
// machine, except NVML and IMDS: nil skips that collector (recorded as not
// run), so a caller states on purpose that it probes GPUs or EC2.
type Config struct {
	FS           fs.FS               // root file system for /proc and /sys; nil: os.DirFS("/")
	CPUID        *cpuid.CPUInfo      // nil: cpuid.CPU, detected at start-up
	NVML         gpu.Library         // nil: GPU collector skipped
	IMDS         IMDS                // nil: host collector skipped
	TrustedCerts []*x509.Certificate // AWS certificates for the identity signature
	XIDWindow    time.Duration       // listen for GPU XID events this long
	Now          func() time.Time    // nil: time.Now
}

type collector struct {
	name string
	skip string // reason not to run; "" runs it
	run  func(ctx context.Context, inv *Inventory) error
}

// Probe runs every collector concurrently and returns the inventory. A
// collector's failure is recorded in Inventory.Collectors, not returned:
// the error is non-nil only when ctx ended first.
func Probe(ctx context.Context, cfg Config) (*Inventory, error) {
	fsys := cfg.FS
	if fsys == nil {
		fsys = os.DirFS("/")
	}
	id := cfg.CPUID
	if id == nil {
		id = &cpuid.CPU
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	inv := &Inventory{Schema: SchemaVersion, ProbedAt: now().UTC()}
	inv.Hostname, _ = os.Hostname()

	collectors := []collector{
		{name: CollectorHost, skip: skipIf(cfg.IMDS == nil, "no instance metadata client"), run: func(ctx context.Context, inv *Inventory) (err error) {
			inv.Host, err = collectHost(ctx, cfg.IMDS, cfg.TrustedCerts)
			return err
		}},
		{name: CollectorCPU, run: func(ctx context.Context, inv *Inventory) (err error) {
			inv.CPU, err = collectCPU(fsys, id)
			return err
		}},
		{name: CollectorGPU, skip: skipIf(cfg.NVML == nil, "no NVML library configured"), run: func(ctx context.Context, inv *Inventory) (err error) {
			inv.GPU, err = gpu.Collect(ctx, cfg.NVML, gpu.Options{XIDWindow: cfg.XIDWindow})
			return err
		}},
		{name: CollectorNetwork, run: func(ctx context.Context, inv *Inventory) (err error) {
			inv.Network, err = collectNetwork(fsys)
			return err
		}},
	}
	if cfg.NVML == nil {
		inv.GPU = gpu.Section{Reason: "GPU probing not configured"}
	}
	if cfg.IMDS == nil {
		inv.Host = Host{Reason: "instance metadata not probed"}
	}

	runs := make([]Run, len(collectors))
	var wg sync.WaitGroup
	for i, c := range collectors {
		runs[i] = Run{Name: c.name, Skipped: c.skip}
		if c.skip != "" {
			continue
		}
		wg.Go(func() {
			start := time.Now()
			err := c.run(ctx, inv) // each collector writes only its own section
			runs[i].Ran = true
			runs[i].DurationMS = float64(time.Since(start).Microseconds()) / 1000
			if err != nil {
				runs[i].Error = err.Error()
			}
		})
	}
	wg.Wait()
	inv.Collectors = runs
	return inv, ctx.Err()
}

func skipIf(cond bool, reason string) string {
	if cond {
		return reason
	}
	return ""
}
