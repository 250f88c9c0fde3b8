package slurm

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Action is what the health check does to the node in Slurm.
type Action string

// Actions.
const (
	Nothing Action = "none"
	Drain   Action = "drain"
	Resume  Action = "resume"
)

// Decision is an Action, the reason to drain with, and why, for the log.
type Decision struct {
	Action Action
	Reason string // the drain reason, for Drain
	Why    string
}

// MaxReasonLen bounds the drain reasons hwprobe writes (bytes): enough for
// the check and its detail, short enough for sinfo -R.
const MaxReasonLen = 200

// NotResponding is the reason slurmctld gives a node it set DOWN because
// its slurmd stopped answering: transient, not an administrator's.
const NotResponding = "Not responding"

// Reason builds a drain reason: "hwprobe: CHECK: DETAIL", on one line, at
// most MaxReasonLen bytes.
func Reason(check, detail string) string {
	r := ReasonPrefix + " " + oneLine(check)
	if d := oneLine(detail); d != "" {
		r += ": " + d
	}
	if len(r) <= MaxReasonLen {
		return r
	}
	cut := MaxReasonLen - len("...")
	for cut > 0 && !utf8.RuneStart(r[cut]) {
		cut--
	}
	return r[:cut] + "..."
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Decide says what the health check does to node n: nil when the
// controller does not know the node. reason is the drain reason when the
// node failed its check (Reason builds it), "" when it passed.
//
// The rules, so that hwprobe never undoes what someone else decided:
//   - A node that passed is resumed only when it is drained with a reason
//     hwprobe wrote; a node drained or down for any other reason is left as
//     it is.
//   - A node that failed is drained, unless it is drained already (with the
//     same reason, or with someone else's: theirs is kept) or down for
//     another reason (draining would replace that reason, and a later pass
//     would resume a node someone else took down). A node down because it
//     stopped answering ("Not responding", or no reason: slurmctld's own)
//     is drained, so that it does not come back into service when its
//     slurmd registers.
//   - A node drained or down for leaving Slurm ("hwprobe: leaving: ...",
//     slurm leave and slurm watch) is left as it is: its instance is going
//     away, and resuming it would let jobs land on it.
//   - A node the controller does not know cannot be drained: a dynamic
//     node before its slurmd registered. Nothing is done; the next run,
//     after registration, drains it.
func Decide(n *Node, reason string) Decision {
	failed := reason != ""
	if n == nil {
		if failed {
			return Decision{Action: Nothing, Why: "the controller does not know this node yet (a dynamic node before it registered): nothing to drain until it does"}
		}
		return Decision{Action: Nothing, Why: "the controller does not know this node yet: nothing to resume"}
	}
	st := n.State
	theirs := n.Reason != "" && !Ours(n.Reason)
	switch {
	case Leaving(n.Reason) && (st.Drained() || st.Down()):
		return Decision{Action: Nothing, Why: fmt.Sprintf("leaving Slurm (%s): left as it is", n.Reason)}
	case !failed && st.Drained() && Ours(n.Reason):
		return Decision{Action: Resume, Why: fmt.Sprintf("passed; drained by hwprobe (%s): resumed", n.Reason)}
	case !failed && st.Drained():
		return Decision{Action: Nothing, Why: fmt.Sprintf("passed; drained by someone else (%s): left drained", orNone(n.Reason))}
	case !failed && st.Down():
		return Decision{Action: Nothing, Why: fmt.Sprintf("passed; down (%s): left to Slurm and its administrators", orNone(n.Reason))}
	case !failed:
		return Decision{Action: Nothing, Why: "passed; nothing to do"}
	case st.Drained() && n.Reason == reason:
		return Decision{Action: Nothing, Why: "failed; drained already with this reason"}
	case st.Drained() && Ours(n.Reason):
		return Decision{Action: Drain, Reason: reason, Why: fmt.Sprintf("failed; drained by hwprobe for another check (%s): reason updated", n.Reason)}
	case st.Drained():
		return Decision{Action: Nothing, Why: fmt.Sprintf("failed; drained already by someone else (%s): their reason kept", n.Reason)}
	case st.Down() && theirs && n.Reason != NotResponding:
		return Decision{Action: Nothing, Why: fmt.Sprintf("failed; down for another reason (%s): left down, reason kept", n.Reason)}
	}
	return Decision{Action: Drain, Reason: reason, Why: "failed; drained"}
}

// DecideFirst is Decide for a node's first check after it registered,
// drained by its own join: the platform's nodes register with State=DRAIN
// in slurmd's --conf, so that no job lands on them before hwprobe checked
// them, and such a drain has no reason (an administrator's always has
// one). That reasonless drain is hwprobe's own: a node that passed is
// resumed, one that failed gets hwprobe's reason. Anything else is decided
// as Decide does.
func DecideFirst(n *Node, reason string) Decision {
	if n == nil || !n.State.Drained() || n.Reason != "" {
		return Decide(n, reason)
	}
	if reason == "" {
		return Decision{Action: Resume, Why: "passed its first check after it registered drained: resumed"}
	}
	return Decision{Action: Drain, Reason: reason, Why: "failed its first check after it registered drained: drained with the reason"}
}

func orNone(s string) string {
	if s == "" {
		return "no reason"
	}
	return s
}
