package platform

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// The core's error vocabulary, the same for every resource. Front ends test
// for these with errors.Is and errors.As and translate them; they decide
// nothing themselves.
//
//   - ErrNotFound: nothing of that name exists (a Find, a Read).
//   - ErrNotOurs (*NotOursError, or *OwnershipError for one part): something
//     of that name exists that this resource cannot prove it made. A create
//     refuses it, a delete leaves it alone; a Find with the recorded owner
//     reports it, and the front end forgets the resource without touching
//     what exists.
//   - *PartialError: a create or update changed something, then failed; what
//     exists comes back with it, to be recorded. Outcome says how.
//   - *RefusedError: a spec that cannot be applied, problems on attribute
//     paths; nothing was written.

// ErrNotFound is what a Find or Read verb returns (or wraps) for something
// that does not exist.
var ErrNotFound = cloud.ErrNotFound

// ErrNotOurs is what a *NotOursError and a part's *OwnershipError are
// (errors.Is).
var ErrNotOurs = cloud.ErrNotOurs

// NotOursError is something of the resource's name that carries no creation
// token, or another than this resource's: another configuration's, or one
// whose create lost its state. It is never adopted, replaced or deleted.
type NotOursError struct {
	Kind  string // "GPU cluster", "CPU footprint"
	Name  string
	Owner string // the creation token this resource recorded; empty at create
	Token string // the creation token found ("" when none)
	// Parts names what was found (for the create's message).
	Parts []string
}

func (e *NotOursError) Is(target error) bool { return target == ErrNotOurs }

func (e *NotOursError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("%s %s already exists (%s) and this resource cannot prove it created it: import it (terraform import, or pulumi import) to manage it here, or choose another name",
			e.Kind, e.Name, strings.Join(e.Parts, ", "))
	}
	return fmt.Sprintf("The %s named %s carries creation token %s, not this resource's %s: the %s this resource created is gone",
		e.Kind, e.Name, orNone(e.Token), e.Owner, e.Kind)
}

// checkOwner is the ownership rule of a Find: with an owner recorded, what
// carries another token is not ours. Without one (an import), anything of
// the name is.
func checkOwner(kind, name, owner, token string) error {
	if owner == "" || token == "" || token == owner {
		return nil
	}
	return &NotOursError{Kind: kind, Name: name, Owner: owner, Token: token}
}

// PartialError is a create or update that failed after it had changed
// something; what is returned with it is what exists, recorded with a
// fresh, bounded context even when the operation's own context was
// cancelled or expired.
type PartialError struct {
	Err error
	// Complete reports that every declared part exists as declared: only a
	// later step failed (a lost answer, an interrupt while waiting), so the
	// resource is whole and need not be replaced.
	Complete bool
}

func (e *PartialError) Error() string { return e.Err.Error() }
func (e *PartialError) Unwrap() error { return e.Err }

// RefusedError is a spec that cannot be applied: its problems, on their
// attribute paths. Nothing was written.
type RefusedError struct {
	Kind     string // "feature store", for the message; may be empty
	Problems []Problem
}

func (e *RefusedError) Error() string {
	var msgs []string
	for _, p := range e.Problems {
		if !p.Warning {
			msgs = append(msgs, p.String())
		}
	}
	s := strings.Join(msgs, "; ")
	if e.Kind != "" {
		s = "invalid " + e.Kind + ": " + s
	}
	return s
}

// Outcome is what a front end does with a create's or an update's answer,
// decided once here for every resource.
type Outcome struct {
	// Record: what exists goes to state, even after an error, so nothing
	// is orphaned.
	Record bool
	// Warning is an error that left the resource whole (every part made as
	// declared): recorded as it is, not tainted, reported as a warning.
	Warning error
	// Failed is an error that left the resource partial or absent:
	// Terraform taints what it records, Pulumi marks it failed to
	// initialise.
	Failed error
}

// OutcomeOf decides the outcome of a create or update that returned found
// (nil when nothing exists) and err.
func OutcomeOf(found bool, err error) Outcome {
	o := Outcome{Record: found}
	var pe *PartialError
	switch {
	case err == nil && !found:
		o.Failed = errors.New("the core created nothing and returned no error")
	case err == nil:
	case found && errors.As(err, &pe) && pe.Complete:
		o.Warning = pe.Err
	default:
		o.Failed = err
	}
	return o
}
