package platform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/slurm"
	"github.com/mlplatform/mlplatform/internal/cloud"
)

// A footprint that joins Slurm leaves it before Auto Scaling terminates
// an instance, whoever chose it (a lower desired capacity, a schedule, an
// instance refresh, a replacement):
//   - the group carries a terminate hook (cloud.SlurmLeaveHook) that holds
//     the instance in Terminating:Wait;
//   - the node's `hwprobe slurm watch` reads "Terminated" as its target
//     lifecycle state, drains the node, lets its jobs end, deletes it from
//     Slurm and writes its left marker under the footprint's reports
//     prefix;
//   - the terminate action is then completed by the apply (which waits
//     for the scale-ins it makes) or by `mlplatform approve` (for the
//     scale-ins between applies): the node policy lets no node complete
//     its own actions. Nobody completing it, the hook's heartbeat (two
//     hours) ends the wait and the instance terminates all the same: its
//     leave unit takes it out of Slurm at shutdown.
//
// The markers need the validation block's reports: without them the
// group gets no hook, and the nodes leave Slurm at shutdown only.

// FootprintLeaveTimeoutError is an apply that waited for its scale-in
// longer than its timeout: the instances are drained in Slurm and held
// in Terminating:Wait.
type FootprintLeaveTimeoutError struct {
	Footprint string
	Instances []string
	Err       error
}

func (e *FootprintLeaveTimeoutError) Error() string {
	if len(e.Instances) == 0 {
		return fmt.Sprintf("CPU footprint %s: Auto Scaling had not finished the scale-in before the timeout (the group still ran more instances than its desired capacity): apply (or destroy) again to wait for it: %v", e.Footprint, e.Err)
	}
	return fmt.Sprintf("CPU footprint %s: instances %s did not leave Slurm before the timeout: they are drained in Slurm (reason \"hwprobe: leaving: ...\") and still run jobs, or their hwprobe slurm watch did not answer. Auto Scaling holds them in Terminating:Wait and terminates them once they leave (the next apply or destroy, or mlplatform approve, completes their terminate action) or when the lifecycle hook %s's heartbeat (%ds) runs out; to give up on their jobs sooner, cancel them (scancel -w NODE): %v",
		e.Footprint, strings.Join(e.Instances, ", "), cloud.SlurmLeaveHookName, cloud.MaxHookHeartbeat, e.Err)
}

func (e *FootprintLeaveTimeoutError) Unwrap() error { return e.Err }

// slurmLeaves reports whether footprint spec's group carries the terminate
// hook: it joins Slurm and its reports hold the markers.
func (s CPUFootprintSpec) slurmLeaves() bool {
	return s.Slurm != nil && s.Validation != nil && s.Validation.ReportsS3URI != ""
}

// syncSlurmLeaveHook puts the terminate hook on group when spec's nodes
// leave Slurm through it, and removes it when an earlier apply put it and
// they no longer do. It runs before the group's sizes change, so that the
// first scale-in of a footprint that starts joining Slurm waits too.
func (e *Env) syncSlurmLeaveHook(ctx context.Context, prior *CPUFootprintRecord, spec CPUFootprintSpec, group string, o CPUFootprintOptions) error {
	if spec.slurmLeaves() {
		h := cloud.SlurmLeaveHook()
		cur, err := cloud.FindHook(ctx, e.Clients.AutoScaling, group, h.Name)
		switch {
		case err == nil && *cur == h:
			return nil
		case err != nil && !errors.Is(err, cloud.ErrNotFound):
			return err
		}
		o.progress("CPU footprint %s: lifecycle hook %s (an instance Auto Scaling terminates leaves Slurm first, its jobs ending, for up to %ds)", spec.Name, h.Name, h.HeartbeatSecs)
		return cloud.PutHook(ctx, e.Clients.AutoScaling, group, h)
	}
	if prior != nil && prior.Spec.slurmLeaves() {
		o.progress("CPU footprint %s: removing lifecycle hook %s", spec.Name, cloud.SlurmLeaveHookName)
		return cloud.DeleteHook(ctx, e.Clients.AutoScaling, group, cloud.SlurmLeaveHookName)
	}
	return nil
}

// LeaveCompletion is what one look at a group's terminating instances
// did.
type LeaveCompletion struct {
	// Completed are the instances whose terminate action was completed:
	// their node left Slurm, or never joined it.
	Completed []string
	// Waiting are the instances still held: drained, their jobs running
	// (or their watch silent).
	Waiting []string
}

// completeSlurmLeaves completes the terminate action of each instance in
// instances that Auto Scaling holds in Terminating:Wait and whose node
// left Slurm (its left marker under prefix) or never joined it (no joined
// marker: it runs no job). An action already completed (a lost answer,
// another approver) or ended by its heartbeat is done.
func (e *Env) completeSlurmLeaves(ctx context.Context, group, prefix string, instances []cloud.FootprintInstance) (LeaveCompletion, error) {
	var out LeaveCompletion
	var ids []string
	for _, in := range instances {
		if in.LifecycleState == cloud.LifecycleTerminatingWait {
			ids = append(ids, in.ID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	joined, err := e.slurmMarkers(ctx, prefix, slurm.JoinedMarkerDir, ids)
	if err != nil {
		return out, fmt.Errorf("reading which instances joined Slurm: %w", err)
	}
	left, err := e.slurmMarkers(ctx, prefix, slurm.LeftMarkerDir, ids)
	if err != nil {
		return out, fmt.Errorf("reading which instances left Slurm: %w", err)
	}
	for _, id := range ids {
		if joined[id] && !left[id] {
			out.Waiting = append(out.Waiting, id)
			continue
		}
		if err := cloud.CompleteSlurmLeave(ctx, e.Clients.AutoScaling, group, id); err != nil && !errors.Is(err, cloud.ErrNoLifecycleAction) {
			return out, err
		}
		out.Completed = append(out.Completed, id)
	}
	return out, nil
}

// deleteSlurmLeaves scales group to 0 before a destroy and waits for its
// nodes to leave Slurm, when the group carries the terminate hook (and
// its markers' tag): without it, deleting the group would terminate
// every instance at once, its jobs killed.
func (e *Env) deleteSlurmLeaves(ctx context.Context, name string, g *cloud.FootprintGroup, o CPUFootprintOptions) error {
	prefix := g.Tags[cloud.TagSlurmMarkers]
	if prefix == "" || !slices.ContainsFunc(g.Instances, func(in cloud.FootprintInstance) bool {
		return liveInstance(in.LifecycleState) || in.LifecycleState == cloud.LifecycleTerminatingWait
	}) {
		return nil
	}
	if _, err := cloud.FindHook(ctx, e.Clients.AutoScaling, g.Name, cloud.SlurmLeaveHookName); errors.Is(err, cloud.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	o.progress("CPU footprint %s: scaling %s to 0, so that its instances leave Slurm first (their jobs end)", name, g.Name)
	if err := cloud.ScaleFootprintGroupToZero(ctx, e.Clients.AutoScaling, g.Name); err != nil {
		return err
	}
	return e.waitSlurmLeaves(ctx, name, g.Name, prefix, o)
}

// slurmLeaveStep reads the group once and lets go the instances it holds
// whose node left Slurm (completeSlurmLeaves), saying which.
func (e *Env) slurmLeaveStep(ctx context.Context, name, group, prefix string, o CPUFootprintOptions) (*cloud.FootprintGroup, LeaveCompletion, error) {
	g, err := cloud.FindFootprintGroup(ctx, e.Clients.AutoScaling, group)
	if err != nil {
		return nil, LeaveCompletion{}, err
	}
	res, err := e.completeSlurmLeaves(ctx, group, prefix, g.Instances)
	if len(res.Completed) > 0 {
		o.progress("CPU footprint %s: instances %s left Slurm: terminating", name, strings.Join(res.Completed, ", "))
	}
	return g, res, err
}

// waitSlurmLeaves waits, within ctx, until the group holds no instance in
// Terminating:Wait and runs no more than its desired capacity, completing
// each terminate action as its node leaves Slurm: the apply that lowered
// the capacity ends once the instances it removed are out of Slurm.
func (e *Env) waitSlurmLeaves(ctx context.Context, name, group, prefix string, o CPUFootprintOptions) error {
	said := ""
	var last []string
	for {
		g, res, err := e.slurmLeaveStep(ctx, name, group, prefix, o)
		if err == nil {
			live := 0
			for _, in := range g.Instances {
				if liveInstance(in.LifecycleState) {
					live++
				}
			}
			if len(res.Waiting) == 0 && len(res.Completed) == 0 && live <= int(g.Desired) {
				return nil
			}
			last = res.Waiting
			if len(res.Waiting) > 0 {
				if msg := fmt.Sprintf("CPU footprint %s: waiting for instances %s to leave Slurm (drained; their jobs end first)", name, strings.Join(res.Waiting, ", ")); msg != said {
					o.progress("%s", msg)
					said = msg
				}
			}
		} else if ctx.Err() == nil {
			o.progress("CPU footprint %s: reading the scale-in: %v (tried again)", name, err)
		}
		poll := e.polling().Nodes
		if err := cloud.SleepOrDone(ctx, cmp.Or(poll.Interval, 5*time.Second)); err != nil || ctx.Err() != nil {
			return &FootprintLeaveTimeoutError{Footprint: name, Instances: slices.Clone(last), Err: context.Cause(ctx)}
		}
	}
}

// ReplacesDrainedFootprint reports whether spec repairs the instances
// hwprobe drained by replacing them: its nodes leave Slurm through the
// terminate hook, and on_failure = "replace".
func ReplacesDrainedFootprint(spec CPUFootprintSpec) bool {
	return spec.slurmLeaves() && spec.Validation.WithDefaults().OnFailure == OnFailureReplace
}

// footprintDrained reads which of the group's instances in service
// hwprobe's health check drained in Slurm (their newest health marker);
// Index is the instance's place in the group's list.
func (e *Env) footprintDrained(ctx context.Context, spec CPUFootprintSpec, in []CPUInstance) ([]HwprobeDrained, error) {
	if !spec.slurmLeaves() {
		return nil, nil
	}
	var live []HwprobeDrained
	for i, x := range in {
		if x.LifecycleState == "InService" {
			live = append(live, HwprobeDrained{Index: i, InstanceID: x.ID})
		}
	}
	return e.readDrained(ctx, spec.Validation.ReportsPrefix(spec.Name), live)
}

// ReadCPUFootprintHealth records in f which instances in service
// hwprobe's health check drained in Slurm since the gate passed them
// (f.Drained), for a refresh. recorded is the footprint as state records
// it; one without Slurm or reports reads nothing.
func (e *Env) ReadCPUFootprintHealth(ctx context.Context, recorded CPUFootprintSpec, f *CPUFootprint) error {
	if f == nil {
		return nil
	}
	recorded.Name = cmp.Or(recorded.Name, f.Name)
	d, err := e.footprintDrained(ctx, recorded, f.Instances)
	f.Drained = d
	return err
}

// replaceDrainedInstances has Auto Scaling replace the instances in
// service that hwprobe drained, under on_failure = "replace": each is
// terminated without lowering the desired capacity, so its node leaves
// Slurm through the terminate hook (its jobs end first) and the group
// launches another, which the gate validates.
func (e *Env) replaceDrainedInstances(ctx context.Context, spec CPUFootprintSpec, in []cloud.FootprintInstance, o CPUFootprintOptions) error {
	if !ReplacesDrainedFootprint(spec) {
		return nil
	}
	cis := make([]CPUInstance, len(in))
	for i, x := range in {
		cis[i] = CPUInstance(x)
	}
	drained, err := e.footprintDrained(ctx, spec, cis)
	if err != nil {
		return fmt.Errorf("reading which instances hwprobe drained in Slurm: %w", err)
	}
	for _, d := range drained {
		o.progress("CPU footprint %s: replacing instance %s, which hwprobe drained in Slurm (%s): it leaves Slurm first, then Auto Scaling launches another", spec.Name, d.InstanceID, d.Reason)
		if err := cloud.ReplaceGroupInstance(ctx, e.Clients.AutoScaling, d.InstanceID); err != nil {
			return err
		}
	}
	return nil
}

// FootprintDrainedWarning says what the plan does of the instances hwprobe
// drained, given the footprint's on_failure; "" when none is.
func FootprintDrainedWarning(name, onFailure string, drained []HwprobeDrained) string {
	if len(drained) == 0 {
		return ""
	}
	ids := make([]string, 0, len(drained))
	for _, d := range drained {
		ids = append(ids, d.InstanceID)
	}
	msg := fmt.Sprintf("CPU footprint %s: hwprobe's health check drained instances %s in Slurm after they were validated (%s: %s).", name, strings.Join(ids, ", "), drained[0].InstanceID, drained[0].Reason)
	return msg + drainedAdvice(onFailure, "Auto Scaling launches another, which is validated")
}
