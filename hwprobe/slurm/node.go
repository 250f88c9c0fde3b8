// Package slurm is hwprobe's side of Slurm: it reads what `scontrol show
// node` says about a node, decides whether hwprobe's health check drains or
// resumes it, finds the Slurm configuration the node's slurmd uses, and
// runs scontrol. The parsing and the decision are pure functions; Scontrol
// is the only part that runs a program.
package slurm

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ReasonPrefix begins every drain reason hwprobe writes. The health check
// resumes a node only when its reason begins with it: a drain anyone else
// wrote (an administrator's "maintenance", another health checker's) is
// never undone.
const ReasonPrefix = "hwprobe:"

// Node is what `scontrol show node NAME` says about one node.
type Node struct {
	Name  string
	State State
	// Reason is the drain or down reason without the "[user@time]" that
	// scontrol appends; "" when none is set.
	Reason string
	// ReasonUser and ReasonTime are the user and time of that suffix.
	ReasonUser, ReasonTime string
	// Fields holds every other KEY=VALUE of the output, by key.
	Fields map[string]string
}

// State is a node state as scontrol prints it: a base state (IDLE,
// ALLOCATED, MIXED, DOWN, UNKNOWN, FUTURE, ERROR) and flags (DRAIN,
// NOT_RESPONDING, COMPLETING, ...), "IDLE+DRAIN".
type State struct {
	Base  string
	Flags []string
}

// ParseState reads "IDLE+DRAIN+NOT_RESPONDING". sinfo's one-character
// suffixes ("*", "~", "#", ...) are dropped from the base state.
func ParseState(s string) State {
	parts := strings.Split(strings.ToUpper(strings.TrimSpace(s)), "+")
	st := State{Base: strings.TrimRight(parts[0], "*~#!%$@^-")}
	for _, f := range parts[1:] {
		if f != "" {
			st.Flags = append(st.Flags, f)
		}
	}
	return st
}

// String writes the state back as scontrol prints it.
func (s State) String() string {
	return strings.Join(append([]string{s.Base}, s.Flags...), "+")
}

// Has reports whether the state carries flag.
func (s State) Has(flag string) bool {
	for _, f := range s.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Drained reports whether the node is drained or draining: its DRAIN flag
// (or a base state that says so, as sinfo prints it).
func (s State) Drained() bool {
	return s.Has("DRAIN") || s.Base == "DRAIN" || s.Base == "DRAINED" || s.Base == "DRAINING"
}

// Down reports whether the base state is DOWN.
func (s State) Down() bool { return s.Base == "DOWN" }

// Registered reports whether slurmd has registered the node with the
// controller since the controller started: UNKNOWN (and FUTURE, for a node
// configured but not yet in service) say it has not.
func (s State) Registered() bool { return s.Base != "UNKNOWN" && s.Base != "FUTURE" }

// Ours reports whether reason is one hwprobe wrote.
func Ours(reason string) bool { return strings.HasPrefix(reason, ReasonPrefix) }

// ErrNodeNotFound is returned for a node the controller does not know (a
// dynamic node before its slurmd registered, or a wrong name).
var ErrNodeNotFound = errors.New("node not found")

// Free-text fields run to the end of their line (scontrol prints each on
// a line of its own): their values may hold spaces ("OS=Linux 6.1.0 #1 SMP ...", "Reason=hwprobe: gpu.count ...").
var freeText = map[string]bool{"OS": true, "Reason": true, "Comment": true, "Extra": true}

// reasonSuffix is the " [user@time]" scontrol appends to a reason.
var reasonSuffix = regexp.MustCompile(`\s*\[([^\[\]@]*)@([^\[\]]*)\]$`)

// ParseNode reads the output of `scontrol show node NAME`: one node, in
// the default form, where each free-text field (OS, Reason, Comment, Extra)
// has a line of its own (the --oneliner form cannot be read: OS's value
// has spaces and other fields follow it). It fails when the output holds
// no NodeName or no State, or more than one node.
func ParseNode(out string) (Node, error) {
	n := Node{Fields: map[string]string{}}
	for _, line := range strings.Split(out, "\n") {
		rest := strings.TrimSpace(line)
		for rest != "" {
			tok := rest
			if i := strings.IndexAny(rest, " \t"); i >= 0 {
				tok = rest[:i]
			}
			key, val, ok := strings.Cut(tok, "=")
			if ok && freeText[key] {
				val = strings.TrimSpace(strings.TrimPrefix(rest, key+"=")) // the rest of the line
				rest = ""
			} else {
				rest = strings.TrimSpace(rest[len(tok):])
			}
			if !ok || key == "" {
				continue // a stray word (a value with spaces we do not know)
			}
			if key == "NodeName" {
				if n.Name != "" {
					return Node{}, fmt.Errorf("scontrol show node: more than one node (%s, %s)", n.Name, val)
				}
				if val == "" {
					return Node{}, errors.New("scontrol show node: empty NodeName")
				}
				n.Name = val
				continue
			}
			n.Fields[key] = val
		}
	}
	if n.Name == "" {
		return Node{}, errors.New("scontrol show node: no NodeName in the output")
	}
	st, ok := n.Fields["State"]
	if !ok || st == "" {
		return Node{}, fmt.Errorf("scontrol show node: no State for node %s", n.Name)
	}
	n.State = ParseState(st)
	if n.State.Base == "" {
		return Node{}, fmt.Errorf("scontrol show node: node %s has state %q, no base state", n.Name, st)
	}
	delete(n.Fields, "State")
	if r, ok := n.Fields["Reason"]; ok {
		n.Reason = r
		if m := reasonSuffix.FindStringSubmatchIndex(r); m != nil {
			n.ReasonUser, n.ReasonTime = r[m[2]:m[3]], r[m[4]:m[5]]
			n.Reason = strings.TrimSpace(r[:m[0]])
		}
		delete(n.Fields, "Reason")
	}
	return n, nil
}
