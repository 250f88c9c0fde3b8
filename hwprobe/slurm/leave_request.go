package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// LeaveRequestTag is the instance tag by which the provider asks a node to
// leave Slurm before it terminates it (a scale-in, a replacement, a node
// the gate failed): its value is the request's id. internal/platform keeps
// its own copy; a test keeps the two equal.
const LeaveRequestTag = "mlplatform-slurm-leave"

// TargetLifecycleStatePath is where EC2's instance metadata says what
// Auto Scaling is taking the instance to (under latest/meta-data/):
// "Terminated" once a scale-in, an instance refresh or a replacement
// chose it, while the group's terminate hook holds it in
// Terminating:Wait.
const TargetLifecycleStatePath = "autoscaling/target-lifecycle-state"

// AutoScalingLeaveRequest is the request id of a leave that Auto
// Scaling's terminate asked for (TargetLifecycleStatePath), where the
// provider's requests are random ids (LeaveRequestTag).
const AutoScalingLeaveRequest = "autoscaling-terminating"

// LifecycleLeaveRequest reads the target lifecycle state: the leave
// request it makes, when Auto Scaling is terminating the instance.
func LifecycleLeaveRequest(state string) (string, bool) {
	if strings.TrimSpace(state) == "Terminated" {
		return AutoScalingLeaveRequest, true
	}
	return "", false
}

// LeftMarkerDir is where a node that left Slurm on request says so, under
// its cluster's reports prefix: LeftMarkerDir + INSTANCE-ID + ".json".
const LeftMarkerDir = "slurm-left/"

// LeftMarkerKey is the key of instanceID's marker under prefix (the
// cluster's reports prefix, ending in "/").
func LeftMarkerKey(prefix, instanceID string) string {
	return prefix + LeftMarkerDir + instanceID + ".json"
}

// JoinedMarkerDir is where a node that joined Slurm says so, under its
// cluster's reports prefix: JoinedMarkerDir + INSTANCE-ID + ".json". The
// provider waits for a leave only from nodes that joined: a node that
// never did (its boot failed before the join) has no job and no watch
// unit to answer.
const JoinedMarkerDir = "slurm-joined/"

// JoinedMarker is what a node writes when it joins Slurm.
type JoinedMarker struct {
	Node       string    `json:"node"`
	InstanceID string    `json:"instance_id"`
	JoinedAt   time.Time `json:"joined_at"`
}

// LeftMarker is what a node writes once it has left Slurm on request: the
// provider terminates it only then (or when the request times out, never:
// the apply fails and the node stays drained).
type LeftMarker struct {
	Node       string      `json:"node"`
	InstanceID string      `json:"instance_id"`
	Request    string      `json:"request"`
	Result     LeaveResult `json:"result"`
	Why        string      `json:"why,omitempty"`
	LeftAt     time.Time   `json:"left_at"`
}

// ParseLeaveRequest checks a leave request id (the tag's value): 1 to 64
// characters of [0-9a-z-].
func ParseLeaveRequest(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return "", fmt.Errorf("leave request %q: want 1 to 64 characters", short(s))
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-') {
			return "", fmt.Errorf("leave request %q: only 0-9, a-z and - allowed", short(s))
		}
	}
	return s, nil
}

// ParseLeftMarker reads a marker and checks it names a node, an instance
// and a request, with a result that says the node is out of Slurm.
func ParseLeftMarker(b []byte) (LeftMarker, error) {
	var m LeftMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return LeftMarker{}, fmt.Errorf("slurm left marker: %w", err)
	}
	switch {
	case m.InstanceID == "" || m.Request == "":
		return LeftMarker{}, errors.New("slurm left marker: no instance_id or request")
	case m.Result != Left && m.Result != NotInSlurm && m.Result != MarkedDown:
		return LeftMarker{}, fmt.Errorf("slurm left marker: result %q is not %q, %q or %q", m.Result, Left, NotInSlurm, MarkedDown)
	}
	return m, nil
}

// ParseJoinedMarker reads a joined marker and checks it names an
// instance.
func ParseJoinedMarker(b []byte) (JoinedMarker, error) {
	var m JoinedMarker
	if err := json.Unmarshal(b, &m); err != nil {
		return JoinedMarker{}, fmt.Errorf("slurm joined marker: %w", err)
	}
	if m.InstanceID == "" {
		return JoinedMarker{}, errors.New("slurm joined marker: no instance_id")
	}
	return m, nil
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Busy reports whether jobs still run on a node in state s: allocated or
// mixed, or completing; a drained node in that state is DRAINING.
func (s State) Busy() bool {
	return s.Base == "ALLOCATED" || s.Base == "ALLOC" || s.Base == "MIXED" || s.Base == "MIX" || s.Base == "COMPLETING" || s.Base == "DRAINING" || s.Has("COMPLETING")
}

// RequestedLeave is one step of a leave the provider asked for: the node
// is drained with reason (so no new job lands on it) and left alone while
// its jobs run (Waiting); once it is idle its slurmd is stopped (stop), so
// that it cannot register again, and it is deleted (Left). A node the
// controller does not know is done at once (NotInSlurm); one whose delete
// is refused after its slurmd stopped is set down (MarkedDown), and done.
// Each step can be run again: a node drained with reason is not drained
// again.
func RequestedLeave(ctx context.Context, api LeaveAPI, name, reason string, stop func(context.Context) error) (LeaveOutcome, bool, error) {
	if !Ours(reason) {
		return LeaveOutcome{}, false, fmt.Errorf("leave reason %q does not begin with %q", reason, ReasonPrefix)
	}
	n, err := api.ShowNode(ctx, name)
	if errors.Is(err, ErrNodeNotFound) {
		return LeaveOutcome{Result: NotInSlurm, Why: "the controller does not know the node: nothing to do"}, true, nil
	}
	if err != nil {
		return LeaveOutcome{}, false, err
	}
	out := LeaveOutcome{State: n.State.String()}
	if !n.State.Drained() || n.Reason != reason {
		if err := api.Drain(ctx, name, reason); err != nil {
			return out, false, fmt.Errorf("drain: %w", err)
		}
		if n, err = api.ShowNode(ctx, name); err != nil {
			return out, false, fmt.Errorf("after the drain: %w", err)
		}
		out.State = n.State.String()
	}
	if n.State.Busy() {
		out.Why = "drained; waiting for its jobs to end"
		return out, false, nil
	}
	if err := stop(ctx); err != nil {
		return out, false, fmt.Errorf("drained and idle; stopping slurmd: %w", err)
	}
	err = api.Delete(ctx, name)
	switch {
	case err == nil:
		out.Result, out.Why = Left, "drained, idle, slurmd stopped, deleted"
		return out, true, nil
	case ClassifyDelete(err) == Gone:
		out.Result, out.Why = Left, "drained, idle, slurmd stopped; deleted meanwhile by someone else"
		return out, true, nil
	case ClassifyDelete(err) == NoAnswer:
		return out, false, fmt.Errorf("drained, idle, slurmd stopped; delete: %w", err)
	}
	if derr := api.Down(ctx, name, reason); derr != nil {
		return out, false, fmt.Errorf("drained, idle, slurmd stopped; not deleted (%v); down: %w", err, derr)
	}
	out.Result, out.Why = MarkedDown, fmt.Sprintf("drained, idle, slurmd stopped; not deleted (%s): marked down", oneLine(err.Error()))
	return out, true, nil
}
