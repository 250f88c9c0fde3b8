package pulumi

import (
	"context"
	"errors"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// reportViolations turns violations into check failures (enforce) or
// warnings (audit).
func reportViolations(ctx context.Context, policy *residency.Policy, vs []residency.Violation) []p.CheckFailure {
	var failures []p.CheckFailure
	for _, v := range vs {
		f := violationFailure(policy.Mode, v)
		if !policy.Enforcing() {
			p.GetLogger(ctx).Warning(f.Reason)
			continue
		}
		failures = append(failures, f)
	}
	return failures
}

// failuresError joins check failures into one error; nil when there are none.
func failuresError(failures []p.CheckFailure) error {
	if len(failures) == 0 {
		return nil
	}
	errs := make([]error, 0, len(failures))
	for _, f := range failures {
		msg := f.Reason
		if !strings.Contains(msg, f.Property) {
			msg = f.Property + ": " + msg
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}

// propertyPath turns a core attribute path (the Terraform spelling, e.g.
// offline_store.s3_uri or kms_key_arns[1]) into the Pulumi property path
// (offlineStore.s3Uri, kmsKeyArns[1]). Index and map-key parts are kept.
func propertyPath(s string) string {
	var b strings.Builder
	inBracket, upper := false, false
	for _, r := range s {
		switch {
		case inBracket:
			b.WriteRune(r)
			inBracket = r != ']'
		case r == '[':
			b.WriteRune(r)
			inBracket = true
		case r == '_':
			upper = true
		case upper:
			b.WriteString(strings.ToUpper(string(r)))
			upper = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// residencyViolation is a violation of the residency policy.
type residencyViolation = residency.Violation
