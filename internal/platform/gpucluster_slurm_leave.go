package platform

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// SlurmLeaveTag is the instance tag by which a GPU cluster asks a node to
// leave Slurm before it terminates it (hwprobe's slurm.LeaveRequestTag):
// the node's `hwprobe slurm watch` drains it, lets its jobs end, stops
// slurmd, deletes it from Slurm and writes a marker under the cluster's
// reports prefix (slurm.LeftMarkerKey).
const SlurmLeaveTag = slurm.LeaveRequestTag

// SlurmLeaveTimeoutError is a terminate held by nodes that did not leave
// Slurm in time: their jobs still run (or their watch does not answer).
// They were drained and are not terminated.
type SlurmLeaveTimeoutError struct {
	Cluster string
	// Nodes are the indices of the nodes that did not leave.
	Nodes []int
	Err   error
}

func (e *SlurmLeaveTimeoutError) Error() string {
	return fmt.Sprintf("GPU cluster %s: nodes %s did not leave Slurm before the timeout: they are drained in Slurm (reason \"hwprobe: leaving: ...\") and still run jobs, or their hwprobe slurm watch did not answer; they were not terminated. Apply (or destroy) again once their jobs end (squeue -w NODE), or cancel the jobs (scancel -w NODE), or raise the resource's timeouts; to give up on their jobs, terminate the instances yourself: the provider does not wait for an instance that no longer runs: %v",
		e.Cluster, cloud.FormatIndices(e.Nodes), e.Err)
}

func (e *SlurmLeaveTimeoutError) Unwrap() error { return e.Err }

// slurmLeave asks the running nodes among nodes to leave Slurm (the
// SlurmLeaveTag, a new request id) and waits until each has left (its
// marker) or no longer runs, within ctx: a node still running jobs holds
// the terminate that follows. A cluster without Slurm, or without reports
// to hold the markers, leaves nothing. An interrupted leave is asked again
// at the next apply with a new request; a node that left already is not
// in Slurm and says so at once.
func (e *Env) slurmLeave(ctx context.Context, spec GPUClusterSpec, nodes []cloud.GPUNode, o GPUClusterOptions) error {
	if spec.Slurm == nil || spec.Validation == nil || spec.Validation.ReportsS3URI == "" || len(nodes) == 0 {
		return nil
	}
	var ids []string
	for _, n := range nodes {
		if n.State == "running" || n.State == "pending" {
			ids = append(ids, n.InstanceID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	// Only nodes that joined Slurm (their joined marker) can leave it: a
	// node whose boot failed before the join runs no job and no watch.
	prefix := spec.Validation.ReportsPrefix(spec.Name)
	joined, err := e.slurmMarkers(ctx, prefix, slurm.JoinedMarkerDir, ids)
	if err != nil {
		return fmt.Errorf("reading which nodes joined Slurm: %w", err)
	}
	index := map[string]int{}
	for _, n := range nodes {
		index[n.InstanceID] = n.Index
	}
	if never := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return joined[id] }); len(never) > 0 {
		o.progress("GPU cluster %s: nodes %s never joined Slurm: nothing to leave", spec.Name, cloud.FormatIndices(indicesOf(never, index)))
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return !joined[id] })
	if len(ids) == 0 {
		return nil
	}
	req, err := newLeaveRequest()
	if err != nil {
		return err
	}
	if err := cloud.TagGPUCluster(ctx, e.Clients.EC2, ids, map[string]string{SlurmLeaveTag: req}, nil); err != nil {
		return fmt.Errorf("asking nodes to leave Slurm: %w", err)
	}
	waiting := slices.Clone(ids)
	said := ""
	for {
		left, err := e.slurmMarkers(ctx, prefix, slurm.LeftMarkerDir, waiting)
		if err == nil {
			waiting = slices.DeleteFunc(waiting, func(id string) bool { return left[id] })
		}
		if len(waiting) > 0 && err == nil {
			// A node no longer running runs no job: nothing to wait for.
			var live []cloud.GPUNode
			live, _, err = cloud.FindGPUNodes(ctx, e.Clients.EC2, spec.Name)
			if err == nil {
				running := map[string]bool{}
				for _, n := range live {
					running[n.InstanceID] = n.State == "running" || n.State == "pending"
				}
				waiting = slices.DeleteFunc(waiting, func(id string) bool { return !running[id] })
			}
		}
		if len(waiting) == 0 {
			o.progress("GPU cluster %s: nodes %s left Slurm", spec.Name, cloud.FormatIndices(indicesOf(ids, index)))
			return nil
		}
		if msg := fmt.Sprintf("GPU cluster %s: waiting for nodes %s to leave Slurm (drained; their jobs end first)", spec.Name, cloud.FormatIndices(indicesOf(waiting, index))); msg != said {
			o.progress("%s", msg)
			said = msg
		}
		if err != nil && ctx.Err() == nil {
			o.progress("GPU cluster %s: reading the nodes' leave markers: %v (tried again)", spec.Name, err)
		}
		poll := e.polling().Nodes
		if err := cloud.SleepOrDone(ctx, cmp.Or(poll.Interval, 5*time.Second)); err != nil || ctx.Err() != nil {
			return &SlurmLeaveTimeoutError{Cluster: spec.Name, Nodes: indicesOf(waiting, index), Err: context.Cause(ctx)}
		}
	}
}

// slurmMarkers reads which of ids have a marker under prefix+dir (joined
// or left): one that parses and names its instance.
func (e *Env) slurmMarkers(ctx context.Context, prefix, dir string, ids []string) (map[string]bool, error) {
	keys, err := cloud.ListReports(ctx, e.Clients.S3, prefix+dir, cloud.ReportListing{Max: 4 * MaxReportNodes})
	if err != nil {
		return nil, err
	}
	found := map[string]bool{}
	for _, k := range keys {
		id := strings.TrimSuffix(k.Rel, ".json")
		if !slices.Contains(ids, id) {
			continue
		}
		body, err := cloud.GetReport(ctx, e.Clients.S3, prefix, k.Key, "")
		if err != nil {
			return nil, err
		}
		if markerOf(dir, body) == id {
			found[id] = true
		}
	}
	return found, nil
}

// markerOf is the instance a marker names, "" when it does not parse.
func markerOf(dir string, body []byte) string {
	if dir == slurm.LeftMarkerDir {
		m, err := slurm.ParseLeftMarker(body)
		if err != nil {
			return ""
		}
		return m.InstanceID
	}
	m, err := slurm.ParseJoinedMarker(body)
	if err != nil {
		return ""
	}
	return m.InstanceID
}

func indicesOf(ids []string, index map[string]int) []int {
	out := make([]int, 0, len(ids))
	for _, id := range ids {
		out = append(out, index[id])
	}
	slices.Sort(out)
	return out
}

// newLeaveRequest is a fresh request id: 16 random bytes, hex.
func newLeaveRequest() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", errors.New("leave request: no randomness")
	}
	return hex.EncodeToString(b), nil
}
