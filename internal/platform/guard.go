package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// GuardVerdict is one row of a residency guard's report.
type GuardVerdict struct {
	Path    string // attribute path in the front end's naming, e.g. s3_uris[0]
	Kind    residency.Kind
	Value   string
	Verdict string // "pass" or "violation"
	Rule    string // empty on pass
	Message string // what is wrong and the fix; empty on pass
}

// GuardCheck is the outcome of checking a residency guard's values.
type GuardCheck struct {
	ID         string // digest of what is checked, stable across runs
	Compliant  bool
	Verdicts   []GuardVerdict // one per reference, in reference order
	Violations []residency.Violation
}

// CheckGuard runs the policy on a residency guard's references and builds
// its report. Both front ends' guards are this function.
func (e *Env) CheckGuard(ctx context.Context, refs []residency.Ref) (GuardCheck, error) {
	vs, err := e.Policy.Check(ctx, e.Locator, refs)
	if err != nil {
		return GuardCheck{}, fmt.Errorf("checking data residency: %w", err)
	}
	return guardReport(refs, vs), nil
}

func guardReport(refs []residency.Ref, vs []residency.Violation) GuardCheck {
	byPath := map[string]residency.Violation{}
	for _, v := range vs {
		if _, seen := byPath[v.Path]; !seen {
			byPath[v.Path] = v
		}
	}
	out := GuardCheck{ID: GuardID(refs), Compliant: len(vs) == 0, Violations: vs, Verdicts: make([]GuardVerdict, 0, len(refs))}
	for _, ref := range refs {
		row := GuardVerdict{Path: ref.Path, Kind: ref.Kind, Value: ref.Value, Verdict: "pass"}
		if v, bad := byPath[ref.Path]; bad {
			row.Verdict, row.Rule, row.Message = "violation", v.Rule, v.Msg+". Fix: "+v.Fix
		}
		out.Verdicts = append(out.Verdicts, row)
	}
	return out
}

// GuardID is a digest of what a guard checks: the kinds and values, in any
// order, without their paths.
func GuardID(refs []residency.Ref) string {
	keys := make([]string, 0, len(refs))
	for _, r := range refs {
		keys = append(keys, string(r.Kind)+"="+r.Value)
	}
	sort.Strings(keys)
	sum := sha256.Sum256([]byte(strings.Join(keys, "\n")))
	return "guard-" + hex.EncodeToString(sum[:8])
}

// ExplainKinds are the reference kinds ExplainResidency accepts.
var explainKinds = []residency.Kind{residency.KindRegion, residency.KindZone, residency.KindZoneID, residency.KindKMSKey,
	residency.KindS3URI, residency.KindECRImage, residency.KindARN, residency.KindImage}

// ExplainKinds lists the kinds of reference ExplainResidency accepts.
func ExplainKinds() []string {
	out := make([]string, 0, len(explainKinds))
	for _, k := range explainKinds {
		out = append(out, string(k))
	}
	return out
}

// ExplainResidency explains one reference under the environment's policy:
// what it resolved to and which rules it passed or broke. The reference is
// checked exactly as a guard checks it (an empty value is a violation).
func (e *Env) ExplainResidency(ctx context.Context, kind, value string) (residency.Explanation, error) {
	if !slices.Contains(explainKinds, residency.Kind(kind)) {
		return residency.Explanation{}, fmt.Errorf("unknown kind %q; use one of %s", kind, strings.Join(ExplainKinds(), ", "))
	}
	ex, err := e.Policy.Explain(ctx, e.Locator, residency.Ref{Path: kind, Kind: residency.Kind(kind), Value: value, Required: true})
	if err != nil {
		return residency.Explanation{}, fmt.Errorf("explaining %s %q: %w", kind, value, err)
	}
	return ex, nil
}
