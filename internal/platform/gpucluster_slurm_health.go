package platform

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// MaxHealthMarkers bounds the health markers a refresh lists for one
// cluster (slurm.HealthMarkerDir: one per drain or resume, kept until a
// lifecycle rule of the bucket expires them). More fails the read.
const MaxHealthMarkers = 20000

// NodeDrained is HealthDrained in a node's validation result: hwprobe's
// health check drained the node in Slurm after the gate passed it.
const NodeDrained = "drained"

// HwprobeDrained is a running node whose newest health marker says that
// hwprobe's health check drained it in Slurm.
type HwprobeDrained struct {
	Index      int
	InstanceID string
	Reason     string // "hwprobe: CHECK: DETAIL"
	At         time.Time
}

// slurmDrained reads which of the running nodes hwprobe's health check
// drained: those whose newest marker (slurm.HealthMarkerDir, the key's
// time) says drained. A cluster without Slurm or without reports has no
// markers. The markers are not signed: a writer to the reports bucket
// could make a node read as drained (and a cluster with on_failure =
// "replace" replace it), never make a node pass the gate.
func (e *Env) slurmDrained(ctx context.Context, spec GPUClusterSpec, nodes []cloud.GPUNode) ([]HwprobeDrained, error) {
	if spec.Slurm == nil || spec.Validation == nil || spec.Validation.ReportsS3URI == "" || len(nodes) == 0 {
		return nil, nil
	}
	var running []HwprobeDrained
	for _, n := range nodes {
		if healthyNode(GPUNode(n)) {
			running = append(running, HwprobeDrained{Index: n.Index, InstanceID: n.InstanceID})
		}
	}
	return e.readDrained(ctx, spec.Validation.ReportsPrefix(spec.Name), running)
}

// readDrained reads which of nodes (running, by index and instance id)
// hwprobe's health check drained: those whose newest marker under prefix
// (slurm.HealthMarkerDir, the key's time) says drained.
func (e *Env) readDrained(ctx context.Context, prefix string, nodes []HwprobeDrained) ([]HwprobeDrained, error) {
	if len(nodes) == 0 {
		return nil, nil
	}
	keys, err := cloud.ListReports(ctx, e.Clients.S3, prefix+slurm.HealthMarkerDir, cloud.ReportListing{Max: MaxHealthMarkers})
	if err != nil {
		return nil, fmt.Errorf("listing the nodes' Slurm health markers: %w", err)
	}
	type newest struct {
		key   cloud.ReportKey
		state string
	}
	last := map[string]newest{}
	for _, k := range keys {
		id, state, ok := slurm.HealthMarkerInstance(k.Rel)
		if !ok {
			continue
		}
		if cur, seen := last[id]; !seen || k.Rel > cur.key.Rel {
			last[id] = newest{k, state}
		}
	}
	var out []HwprobeDrained
	for _, n := range nodes {
		m, ok := last[n.InstanceID]
		if !ok || m.state != slurm.HealthDrained {
			continue
		}
		body, err := cloud.GetReport(ctx, e.Clients.S3, prefix, m.key.Key, "")
		if err != nil {
			return nil, fmt.Errorf("reading the Slurm health marker of %s: %w", n.InstanceID, err)
		}
		hm, err := slurm.ParseHealthMarker(body)
		if err != nil || hm.InstanceID != n.InstanceID || hm.State != slurm.HealthDrained {
			continue // not a marker of this node's drain: not read as one
		}
		out = append(out, HwprobeDrained{Index: n.Index, InstanceID: n.InstanceID, Reason: hm.Reason, At: hm.At})
	}
	slices.SortFunc(out, func(a, b HwprobeDrained) int { return a.Index - b.Index })
	return out, nil
}

// ReadGPUClusterHealth records in c which running nodes hwprobe's health
// check drained in Slurm since (c.Drained), for a refresh. recorded is the
// cluster as state records it (its orchestrator and validation); a
// cluster without Slurm or reports reads nothing.
func (e *Env) ReadGPUClusterHealth(ctx context.Context, recorded GPUClusterSpec, c *GPUCluster) error {
	if c == nil {
		return nil
	}
	nodes := make([]cloud.GPUNode, len(c.Nodes))
	for i, n := range c.Nodes {
		nodes[i] = cloud.GPUNode(n)
	}
	d, err := e.slurmDrained(ctx, recorded, nodes)
	c.Drained = d
	return err
}

// replacesDrained reports whether spec repairs the nodes hwprobe drained
// by replacing them: Slurm, and a validation with on_failure = "replace".
func replacesDrained(spec GPUClusterSpec) bool {
	return spec.Slurm != nil && spec.Validation != nil && spec.Validation.WithDefaults().OnFailure == OnFailureReplace
}

// DrainedWarning says what the plan does of the nodes hwprobe drained,
// given the cluster's on_failure; "" when none is.
func DrainedWarning(name, onFailure string, drained []HwprobeDrained) string {
	if len(drained) == 0 {
		return ""
	}
	var idx []int
	for _, d := range drained {
		idx = append(idx, d.Index)
	}
	first := drained[0]
	msg := fmt.Sprintf("GPU cluster %s: hwprobe's health check drained nodes %s in Slurm after they were validated (node %d, %s: %s).", name, cloud.FormatIndices(idx), first.Index, first.InstanceID, first.Reason)
	return msg + drainedAdvice(onFailure, "a new instance is launched and validated")
}

// drainedAdvice is what a plan does of drained nodes under onFailure;
// replaced says what follows a node's leave under "replace".
func drainedAdvice(onFailure, replaced string) string {
	if onFailure == OnFailureReplace {
		return " With on_failure = \"replace\", this apply replaces them: each leaves Slurm (its jobs end first), then " + replaced + "."
	}
	return fmt.Sprintf(" With on_failure = %q they are not replaced; they take no job while drained, and hwprobe resumes them if they pass again. Set on_failure = \"replace\" to have the next apply replace them.", onFailure)
}
