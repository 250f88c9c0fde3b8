package pulumi

import (
	"context"
	"errors"
	"fmt"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The translation of the core's error vocabulary (internal/platform/errors.go)
// to Pulumi's, once for every resource.

// createOutcome translates the core's outcome of a create that returned
// found and err: nil when the resource is recorded as created (a whole
// resource's error is logged as a warning), a ResourceInitFailedError when
// what exists is recorded but partial, the error itself when nothing exists.
func createOutcome(ctx context.Context, summary string, found bool, err error) error {
	o := platform.OutcomeOf(found, err)
	if o.Warning != nil {
		p.GetLogger(ctx).Warningf("%s: every part was made, but a later step failed: %v", summary, o.Warning)
	}
	switch {
	case o.Failed == nil:
		return nil
	case !o.Record:
		return fmt.Errorf("%s: %w", summary, o.Failed)
	default:
		return infer.ResourceInitFailedError{Reasons: []string{fmt.Sprintf("%s: %v", summary, o.Failed)}}
	}
}

// gone reports whether a Find said the resource is gone (ErrNotFound) or
// not ours any more (ErrNotOurs, logged as a warning): either way a Read
// answers with no resource.
func gone(ctx context.Context, err error) bool {
	switch {
	case errors.Is(err, platform.ErrNotFound):
		return true
	case errors.Is(err, platform.ErrNotOurs):
		p.GetLogger(ctx).Warningf("%v", err)
		return true
	}
	return false
}
