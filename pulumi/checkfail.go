package pulumi

import (
	"context"
	"fmt"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// violationFailure is the check failure for a residency violation, worded as
// the Terraform provider's diagnostic (provider.ReportViolations): the rule
// as summary, then the attribute path and value, what is wrong, the rule and
// mode, and the fix.
func violationFailure(mode residency.Mode, v residency.Violation) p.CheckFailure {
	path := propertyPath(v.Path)
	return p.CheckFailure{
		Property: path,
		Reason: fmt.Sprintf("residency violation: %s\n%s = %q: %s.\nRule: %s (%s mode).\nFix: %s",
			v.Rule, path, v.Value, configText(v.Msg), v.Rule, mode, configText(v.Fix)),
	}
}

// forEngine rewrites check failures for the Pulumi engine, which prints a
// failure as `property P value V has a problem: R`, V being inputs[P]
// looked up as one top-level key. For a nested path (s3Uris[0],
// offlineStore.s3Uri) that prints `value {<nil>}`, which reads as though the
// value were missing. Such a failure goes to the engine without a property
// (`resource 'x' has a problem: R`) and with its path leading the reason,
// unless the reason already names it.
func forEngine(inputs property.Map, failures []p.CheckFailure) []p.CheckFailure {
	out := make([]p.CheckFailure, 0, len(failures))
	for _, f := range failures {
		if f.Property == "" {
			out = append(out, f)
			continue
		}
		if _, ok := inputs.GetOk(f.Property); ok {
			out = append(out, f)
			continue
		}
		reason := f.Reason
		if !strings.Contains(reason, f.Property) {
			reason = f.Property + ": " + reason
		}
		out = append(out, p.CheckFailure{Reason: reason})
	}
	return out
}

// engineFailures applies forEngine to every Check and CheckConfig answer.
func engineFailures(prov p.Provider) p.Provider {
	checkConfig, check := prov.CheckConfig, prov.Check
	wrap := func(inner func(context.Context, p.CheckRequest) (p.CheckResponse, error)) func(context.Context, p.CheckRequest) (p.CheckResponse, error) {
		return func(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
			resp, err := inner(ctx, req)
			if len(resp.Failures) > 0 {
				resp.Failures = forEngine(req.Inputs, resp.Failures)
			}
			return resp, err
		}
	}
	prov.CheckConfig, prov.Check = wrap(checkConfig), wrap(check)
	return prov
}
