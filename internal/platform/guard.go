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
	// Blocked: the policy enforces and a value breaks it.
	Blocked bool
}

// GuardInput is one list input of a residency guard: its attribute (the
// core's snake_case name) and the kind of location each element names.
type GuardInput struct {
	Attr string
	Kind residency.Kind
}

// guardInputs are a guard's inputs, in the order they are checked.
var guardInputs = []GuardInput{
	{"regions", residency.KindRegion},
	{"zone_ids", residency.KindZoneID},
	{"kms_key_arns", residency.KindKMSKey},
	{"s3_uris", residency.KindS3URI},
	{"ecr_image_uris", residency.KindECRImage},
	{"arns", residency.KindARN},
}

// GuardInputs lists a guard's inputs: both front ends' schemas name these.
func GuardInputs() []GuardInput { return slices.Clone(guardInputs) }

// GuardList is one list input of a guard as a front end holds it.
type GuardList struct {
	Values  []string
	Unknown bool         // the whole list is not known yet
	Pending map[int]bool // elements not known yet, by index
}

// GuardRefs turns a guard's lists (by GuardInput.Attr) into residency
// references, paths attr[i], for the values known now; allKnown says
// whether every value is. Every element must name a location: an empty or
// blank one is checked (Required) and is a violation, never a silent pass.
func GuardRefs(lists map[string]GuardList) (refs []residency.Ref, allKnown bool) {
	allKnown = true
	for _, in := range guardInputs {
		l := lists[in.Attr]
		if l.Unknown {
			allKnown = false
			continue
		}
		for i, v := range l.Values {
			if l.Pending[i] {
				allKnown = false
				continue // checked at apply
			}
			refs = append(refs, residency.Ref{Path: fmt.Sprintf("%s[%d]", in.Attr, i), Kind: in.Kind, Value: v, Required: true})
		}
	}
	return refs, allKnown
}

// CheckGuard runs the policy on a residency guard's references and builds
// its report. Both front ends' guards are this function: at plan on the
// values known, at apply on all of them (Blocked: the guard must not be
// created or changed).
func (e *Env) CheckGuard(ctx context.Context, refs []residency.Ref) (GuardCheck, error) {
	vs, err := e.Policy.Check(ctx, e.Locator, refs)
	if err != nil {
		return GuardCheck{}, fmt.Errorf("checking data residency: %w", err)
	}
	c := guardReport(refs, vs)
	c.Blocked = len(vs) > 0 && e.Policy.Enforcing()
	return c, nil
}

// GuardRefresh is what a refresh does with a guard.
type GuardRefresh struct {
	Check GuardCheck
	// Gone: the values no longer comply in enforce mode, so the guard is
	// dropped from state; the next apply plans it anew and fails until fixed.
	Gone bool
	// Keep: the check could not run; the state stays as it was.
	Keep    bool
	Warning string // what the front end shows, when not empty
}

// RefreshGuard checks a guard's values again on refresh: a bucket that has
// gained cross-region replication since, say, makes the guard disappear in
// enforce mode, so that resources depending on it stop at the next apply.
func (e *Env) RefreshGuard(ctx context.Context, refs []residency.Ref) GuardRefresh {
	c, err := e.CheckGuard(ctx, refs)
	switch {
	case err != nil:
		return GuardRefresh{Keep: true, Warning: fmt.Sprintf("The guard could not re-check its values on refresh; the state is kept as it was: %v", err)}
	case c.Blocked:
		return GuardRefresh{Check: c, Gone: true, Warning: "Values the guard checks now break the policy, so the guard will be planned for creation again " +
			"(and that apply will fail until fixed):\n" + residency.Summarize(c.Violations)}
	}
	return GuardRefresh{Check: c}
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
