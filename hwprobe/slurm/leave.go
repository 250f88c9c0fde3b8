package slurm

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// LeaveReasonDefault is why a node leaves when nothing says otherwise.
const LeaveReasonDefault = "instance shutting down"

// LeaveReason is the reason hwprobe drains (and, when it cannot delete it,
// downs) a leaving node with: "hwprobe: leaving: WHY".
func LeaveReason(why string) string {
	if strings.TrimSpace(why) == "" {
		why = LeaveReasonDefault
	}
	return Reason("leaving", why)
}

// Leaving reports whether reason is a leave's drain or down reason
// ("hwprobe: leaving: ..."): the health check never resumes such a node.
func Leaving(reason string) bool {
	return strings.HasPrefix(reason, Reason("leaving", "")+":")
}

// LeaveAPI is what Leave asks of the controller; Scontrol has it.
type LeaveAPI interface {
	ShowNode(ctx context.Context, name string) (Node, error)
	Drain(ctx context.Context, name, reason string) error
	Delete(ctx context.Context, name string) error
	Down(ctx context.Context, name, reason string) error
}

// LeaveResult is how a leave ended.
type LeaveResult string

// Leave results.
const (
	// NotInSlurm: the controller does not know the node (it never
	// registered, or it left already).
	NotInSlurm LeaveResult = "not in Slurm"
	// Left: drained and deleted.
	Left LeaveResult = "left"
	// MarkedDown: the controller refused to delete the node (jobs still
	// run on it, or it is not a dynamic node); it was set DOWN with the
	// leave reason, so that it is no silent ghost.
	MarkedDown LeaveResult = "marked down"
)

// LeaveOutcome is what Leave did, and why, for the log.
type LeaveOutcome struct {
	Result LeaveResult
	// State is the node's state before hwprobe touched it; "" when the
	// controller did not know it.
	State string
	Why   string
}

// DeleteRefusal is how the controller answered `scontrol delete` with an
// error.
type DeleteRefusal int

// Delete refusals.
const (
	// NoAnswer: the controller could not be reached, or did not answer in
	// time: nothing is known, nothing more can be done.
	NoAnswer DeleteRefusal = iota
	// Busy: jobs still run on the node (or it is in a reservation).
	Busy
	// Gone: the controller does not know the node any more.
	Gone
	// Refused: any other refusal (a node configured in slurm.conf, not a
	// dynamic one, cannot be deleted).
	Refused
)

// ClassifyDelete reads scontrol delete's error: slurmctld answers a node
// in use with "Requested nodes are busy" (ESLURM_NODES_BUSY), an unknown
// node with "Invalid node name specified"; scontrol says "Unable to contact
// slurm controller" when it reached none, and Scontrol "no answer within"
// when its call timed out.
func ClassifyDelete(err error) DeleteRefusal {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "no answer within") || strings.Contains(msg, "Unable to contact slurm controller") || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return NoAnswer
	case strings.Contains(msg, "busy") || strings.Contains(msg, "in use"):
		return Busy
	case strings.Contains(msg, "Invalid node name") || strings.Contains(msg, "not found"):
		return Gone
	}
	return Refused
}

// Leave takes node name out of Slurm as its instance shuts down:
//   - a node the controller does not know is left alone (NotInSlurm);
//   - otherwise it is drained with reason (LeaveReason), so that no new job
//     lands on it, unless it is drained with that reason already, then
//     deleted (Left);
//   - when the controller refuses the delete (jobs still run on the node,
//     or it is not a dynamic node), the node is set DOWN with the same
//     reason (MarkedDown): its jobs end or are requeued, and sinfo says why
//     it is gone, where otherwise it would turn DOWN "Not responding" after
//     SlurmdTimeout.
//
// An error is returned, and nothing more done, when the controller cannot
// be reached or refuses a drain or a down.
func Leave(ctx context.Context, api LeaveAPI, name, reason string) (LeaveOutcome, error) {
	if !Ours(reason) {
		return LeaveOutcome{}, fmt.Errorf("leave reason %q does not begin with %q", reason, ReasonPrefix)
	}
	n, err := api.ShowNode(ctx, name)
	if errors.Is(err, ErrNodeNotFound) {
		return LeaveOutcome{Result: NotInSlurm, Why: "the controller does not know the node: nothing to do"}, nil
	}
	if err != nil {
		return LeaveOutcome{}, err
	}
	out := LeaveOutcome{State: n.State.String()}
	drained := "drained"
	if n.State.Drained() && n.Reason == reason {
		drained = "drained already"
	} else if err := api.Drain(ctx, name, reason); err != nil {
		return out, fmt.Errorf("drain: %w", err)
	}
	err = api.Delete(ctx, name)
	if err == nil {
		out.Result, out.Why = Left, drained+" and deleted"
		return out, nil
	}
	var why string
	switch ClassifyDelete(err) {
	case NoAnswer:
		return out, fmt.Errorf("%s; delete: %w", drained, err)
	case Gone:
		out.Result, out.Why = Left, drained+"; deleted meanwhile by someone else"
		return out, nil
	case Busy:
		why = "jobs still run on it"
	default:
		why = "the controller refused"
	}
	if derr := api.Down(ctx, name, reason); derr != nil {
		return out, fmt.Errorf("%s; not deleted (%s: %v); down: %w", drained, why, err, derr)
	}
	out.Result = MarkedDown
	out.Why = fmt.Sprintf("%s; not deleted (%s: %s): marked down", drained, why, oneLine(err.Error()))
	return out, nil
}
