package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The translation of the core's error vocabulary (internal/platform/errors.go)
// to Terraform diagnostics, once for every resource.

// addProblems reports the core's plan errors and warnings on their
// attributes (the whole resource when the path is empty).
func addProblems(ps []platform.Problem, diags *diag.Diagnostics) {
	for _, p := range ps {
		switch {
		case p.Path == "" && p.Warning:
			diags.AddWarning(p.Summary, p.Detail)
		case p.Path == "":
			diags.AddError(p.Summary, p.Detail)
		case p.Warning:
			diags.AddAttributeWarning(parsePath(p.Path), p.Summary, p.Detail)
		default:
			diags.AddAttributeError(parsePath(p.Path), p.Summary, p.Detail)
		}
	}
}

// addInvalid reports a validator's problems, each on its attribute, with
// the path in the summary too: Terraform before 1.12 shows an error inside
// a nested attribute at the resource's header.
func addInvalid(kind string, ps []platform.Problem, diags *diag.Diagnostics) {
	for _, p := range ps {
		at := parsePath(p.Path)
		if strings.HasPrefix(p.Path, "features[") {
			// features (of a feature store) is a set: an element has no
			// index to point at; the message names the feature.
			at = path.Root("features")
		}
		diags.AddAttributeError(at, "Invalid "+kind+": "+p.Path, p.Detail)
	}
}

// addCoreError reports an apply error: a refused spec's problems on their
// attributes, anything else under summary.
func addCoreError(diags *diag.Diagnostics, summary string, err error) {
	var re *platform.RefusedError
	if errors.As(err, &re) {
		for _, p := range re.Problems {
			diags.AddAttributeError(parsePath(p.Path), summary+": "+p.Summary, p.Detail)
		}
		return
	}
	diags.AddError(summary, err.Error())
}

// addOutcome reports the core's outcome of a create or update (what was
// recorded is the caller's): a whole resource's error is a warning, so the
// resource is not tainted; a partial one's is an error, so Terraform taints
// what a create recorded.
func addOutcome(diags *diag.Diagnostics, summary string, o platform.Outcome) {
	if o.Warning != nil {
		diags.AddWarning(summary+": every part was made, but a later step failed",
			fmt.Sprintf("%v\n\nWhat exists is recorded in state and the resource is not tainted: the next plan reads it again, and the next apply finishes what is left.", o.Warning))
	}
	if o.Failed != nil {
		addCoreError(diags, summary, o.Failed)
	}
}

// forgetGone removes from state a resource whose Find said it is gone
// (ErrNotFound) or not ours any more (ErrNotOurs), and reports which; it
// returns whether it did.
func forgetGone(ctx context.Context, resp *resource.ReadResponse, kind, name string, err error) bool {
	switch {
	case errors.Is(err, platform.ErrNotFound):
		tflog.Warn(ctx, kind+" not found, removing from state", map[string]any{"name": name})
	case errors.Is(err, platform.ErrNotOurs):
		resp.Diagnostics.AddWarning(fmt.Sprintf("%s (%s) belongs to another configuration", kind, name),
			err.Error()+". It is removed from state; the next apply refuses to create over the other one.")
	default:
		return false
	}
	resp.State.RemoveResource(ctx)
	return true
}

// checkTimeouts rejects timeouts of zero or less at plan.
func checkTimeouts(t timeouts.Value, diags *diag.Diagnostics) {
	if t.IsNull() || t.IsUnknown() {
		return
	}
	for name, v := range t.Attributes() {
		sv, ok := v.(types.String)
		if !ok || sv.IsNull() || sv.IsUnknown() {
			continue
		}
		if _, p := platform.ParseTimeout("timeouts."+name, sv.ValueString()); p != nil {
			diags.AddAttributeError(parsePath(p.Path), p.Summary, p.Detail)
		}
	}
}
