// Package probe takes a node's hardware inventory: host identity (IMDSv2),
// CPU, GPUs (NVML) and EFA/InfiniBand devices. Each collector lives in its
// own file with its I/O split from a pure parse function; Probe runs them
// concurrently and records, for each, whether it ran and how long it took.
package probe

import (
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/gpu"
)

// SchemaVersion names the inventory JSON schema (docs/guides/hwprobe.md).
// Adding fields keeps the version; renaming or removing one bumps it.
const SchemaVersion = "hwprobe.mlplatform.io/inventory/v1"

// Inventory is what a node really is.
type Inventory struct {
	Schema     string      `json:"schema"`
	Hostname   string      `json:"hostname,omitempty"`
	ProbedAt   time.Time   `json:"probed_at"`
	Host       Host        `json:"host"`
	CPU        CPU         `json:"cpu"`
	GPU        gpu.Section `json:"gpu"`
	Network    Network     `json:"network"`
	Collectors []Run       `json:"collectors"`
}

// Run records one collector: whether it ran, how long it took, and its
// error when it could not finish.
type Run struct {
	Name       string  `json:"name"`
	Ran        bool    `json:"ran"`
	DurationMS float64 `json:"duration_ms"`
	Error      string  `json:"error,omitempty"`
	Skipped    string  `json:"skipped,omitempty"` // why it did not run
}

// Collector returns the run record of the named collector, or false.
func (inv *Inventory) Collector(name string) (Run, bool) {
	for _, r := range inv.Collectors {
		if r.Name == name {
			return r, true
		}
	}
	return Run{}, false
}

// Failed lists the collectors that did not run or ended with an error.
func (inv *Inventory) Failed() []Run {
	var out []Run
	for _, r := range inv.Collectors {
		if !r.Ran || r.Error != "" {
			out = append(out, r)
		}
	}
	return out
}
