package review

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// Options are the reviewer's settings.
type Options struct {
	// Jurisdiction is used when the plan's mlplatform provider configuration
	// names none (e.g. "AE").
	Jurisdiction string
	// FailOn is the CI policy; empty checks nothing.
	FailOn []Rule
	// Catalog prices the plan; nil means the embedded catalog. The review
	// never loads live data: it works offline.
	Catalog *catalog.Catalog
}

// Review evaluates a parsed plan. It makes no network call: prices come
// from the embedded catalog and locations from the plan.
func Review(ctx context.Context, p *Plan, opts Options) (*Report, error) {
	cat := opts.Catalog
	if cat == nil {
		var err error
		if cat, err = catalog.Embedded(); err != nil {
			return nil, fmt.Errorf("reviewing plan: %w", err)
		}
	}
	r := &Report{SchemaVersion: SchemaVersion, Source: p.Source, ToolVersion: p.ToolVersion}
	for _, c := range p.Changes {
		switch c.Action {
		case ActionCreate:
			r.Summary.Create++
		case ActionUpdate:
			r.Summary.Update++
		case ActionReplace:
			r.Summary.Replace++
		case ActionDelete:
			r.Summary.Delete++
		case ActionNoop:
			r.Summary.NoOp++
		}
	}
	policy, res := policyOf(p, opts.Jurisdiction)
	pr := pricer{cat: cat}
	if policy != nil && len(policy.AllowedRegions) > 0 {
		pr.region = policy.AllowedRegions[0]
	}
	var ests map[string][2]estimate
	r.Cost, ests = pr.buildCost(p.Changes)
	r.GPUs = buildGPUs(p.Changes, ests)
	r.Destructive = buildDestructive(p.Changes)
	r.Validation = buildValidation(p.Changes, ests, pr)
	if policy != nil {
		if err := evaluateResidency(ctx, p, policy, &res); err != nil {
			return nil, err
		}
	}
	r.Residency = res
	if len(opts.FailOn) > 0 {
		v := Evaluate(r, opts.FailOn)
		r.Policy = &v
	}
	return r, nil
}

// policyOf builds the residency policy from the plan's mlplatform provider
// configuration, else from the jurisdiction flag.
func policyOf(p *Plan, flagJurisdiction string) (*residency.Policy, Residency) {
	res := Residency{Counts: map[string]int{}, Locations: []Location{}, AllowedRegions: []string{}}
	cfg := residency.PolicyConfig{}
	b := p.residencyBlock
	if j := str(b["jurisdiction"]); j != "" {
		cfg.Jurisdiction, res.JurisdictionSource = j, "plan: mlplatform provider residency block"
	} else if flagJurisdiction != "" {
		cfg.Jurisdiction, res.JurisdictionSource = flagJurisdiction, "flag --jurisdiction"
	} else {
		res.NotEvaluatedReason = "no jurisdiction: the plan has no mlplatform provider residency block; pass --jurisdiction (e.g. AE)"
		if p.residencyUnknown {
			res.NotEvaluatedReason = "the mlplatform provider's residency block takes values the plan does not carry; pass --jurisdiction (e.g. AE)"
		}
		return nil, res
	}
	cfg.AllowedRegions = strings1(b["allowed_regions"])
	cfg.ExcludedZoneIDs = strings1(b["excluded_zone_ids"])
	cfg.RequiredTags = strings1(b["required_tags"])
	if v, ok := b["require_customer_managed_keys"].(bool); ok {
		cfg.RequireCustomerManagedKeys = &v // unset: the jurisdiction's default
	}
	cfg.Mode = residency.Mode(str(b["mode"]))
	pol, err := residency.NewPolicy(cfg)
	if err != nil {
		res.NotEvaluatedReason = err.Error()
		return nil, res
	}
	res.Jurisdiction = pol.Jurisdiction.Code
	res.AllowedRegions = slices.Clone(pol.AllowedRegions)
	res.Mode = string(pol.Mode)
	res.Evaluated = true
	return pol, res
}

func strings1(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// recordingLocator notes whether the plan could not answer a question.
type recordingLocator struct {
	*planLocator
	offline bool
}

func (r *recordingLocator) note(err error) error {
	if errors.Is(err, errOffline) {
		r.offline = true
	}
	return err
}

func (r *recordingLocator) BucketRegion(ctx context.Context, b string) (string, error) {
	s, err := r.planLocator.BucketRegion(ctx, b)
	return s, r.note(err)
}

func (r *recordingLocator) BucketReplicationRegions(ctx context.Context, b string) ([]string, error) {
	s, err := r.planLocator.BucketReplicationRegions(ctx, b)
	return s, r.note(err)
}

func (r *recordingLocator) ZoneID(ctx context.Context, region, zone string) (string, error) {
	s, err := r.planLocator.ZoneID(ctx, region, zone)
	return s, r.note(err)
}

func (r *recordingLocator) DescribeKey(ctx context.Context, arn string) (residency.KeyInfo, error) {
	k, err := r.planLocator.DescribeKey(ctx, arn)
	return k, r.note(err)
}

// locationRules are the rules that place something outside the
// jurisdiction; other rules are policy violations in place.
var locationRules = []string{
	residency.RuleRegionAllowed, residency.RuleZoneAllowed, residency.RuleZoneExcluded, residency.RuleKMSKeyRegion,
	residency.RuleS3BucketRegion, residency.RuleS3Replication, residency.RuleECRImageRegion, residency.RuleARNRegion,
	residency.RuleImageRegion, residency.RulePartition,
}

// unknownFix says who decides a location the plan cannot: the mlplatform
// provider for its own resources; for other providers' resources only a
// guard that references the value.
func unknownFix(typ string) string {
	if strings.HasPrefix(typ, "mlplatform_") || typ == "provider" {
		return "nothing to do in review: the mlplatform provider checks it with AWS before anything is written, and fails closed"
	}
	return "reference the value from an mlplatform_residency_guard (checked at plan when known, at apply otherwise, failing closed) and depend on the guard; no other check sees it before apply"
}

func evaluateResidency(ctx context.Context, p *Plan, pol *residency.Policy, res *Residency) error {
	loc := newPlanLocator(p.Changes)
	add := func(l Location) {
		res.Locations = append(res.Locations, l)
		res.Counts[l.Verdict]++
	}
	check := func(addr, typ string, ref residency.Ref) error {
		rl := &recordingLocator{planLocator: loc}
		e, err := pol.Explain(ctx, rl, ref)
		if err != nil {
			return fmt.Errorf("reviewing residency: %w", err)
		}
		l := Location{Address: addr, Type: typ, Path: ref.Path, Kind: string(ref.Kind), Value: ref.Value, Verdict: VerdictIn}
		if len(e.Rules) > 0 {
			var rules []string
			for _, rv := range e.Rules {
				rules = append(rules, rv.Rule)
			}
			l.Rule = strings.Join(rules, ", ")
		}
		if len(e.Resolved) > 0 {
			l.Reason = strings.Join(e.Resolved, "; ")
		}
		for _, v := range e.Violations {
			verdict := VerdictViolation
			switch {
			case slices.Contains(locationRules, v.Rule):
				verdict = VerdictOutside
			case v.Rule == residency.RuleUnverifiable && rl.offline:
				verdict = VerdictUnknown
			}
			if rank(verdict) > rank(l.Verdict) {
				l.Verdict, l.Rule, l.Reason, l.Fix = verdict, v.Rule, v.Msg, v.Fix
				if verdict == VerdictUnknown {
					l.Fix = unknownFix(typ)
				}
			}
		}
		add(l)
		return nil
	}
	for _, pc := range p.Providers {
		if pc.Region == "" || (pc.Name != "aws" && pc.Name != "mlplatform") {
			continue
		}
		addr := "provider." + pc.Key
		if pc.Region == unknownValue {
			add(Location{Address: addr, Type: "provider", Path: "region", Kind: string(residency.KindRegion), Value: unknownValue, Verdict: VerdictUnknown,
				Reason: "the provider's region comes from a value the plan does not carry", Fix: "set the provider's region to a constant or a variable"})
			continue
		}
		if err := check(addr, "provider", residency.Ref{Path: "region", Kind: residency.KindRegion, Value: pc.Region}); err != nil {
			return err
		}
	}
	for i := range p.Changes {
		c := &p.Changes[i]
		if c.After == nil || c.Action == ActionRead {
			continue
		}
		refs, unknown := refsOf(c)
		for _, ref := range refs {
			if err := check(c.Address, c.Type, ref); err != nil {
				return err
			}
		}
		for _, ref := range unknown {
			add(Location{Address: c.Address, Type: c.Type, Path: ref.Path, Kind: string(ref.Kind), Value: unknownValue, Verdict: VerdictUnknown,
				Reason: "known only after apply", Fix: unknownFix(c.Type)})
		}
		// Required tags, on the platform's own resources (tags_all carries
		// the provider's default_tags).
		if strings.HasPrefix(c.Type, "mlplatform_") && len(pol.RequiredTags) > 0 {
			if raw, known := (values{m: c.After, unknown: c.afterUnknown}).get("tags_all"); known {
				tags := map[string]string{}
				if m, ok := raw.(map[string]any); ok {
					for k, v := range m {
						tags[k] = str(v)
					}
				}
				for _, v := range pol.CheckTags("tags", tags) {
					add(Location{Address: c.Address, Type: c.Type, Path: v.Path, Kind: "tag", Value: v.Value, Verdict: VerdictViolation, Rule: v.Rule, Reason: v.Msg, Fix: v.Fix})
				}
			}
		}
	}
	sort.SliceStable(res.Locations, func(i, j int) bool { return rank(res.Locations[i].Verdict) > rank(res.Locations[j].Verdict) })
	return nil
}

func rank(v string) int {
	switch v {
	case VerdictOutside:
		return 3
	case VerdictViolation:
		return 2
	case VerdictUnknown:
		return 1
	}
	return 0
}

func buildGPUs(changes []Change, ests map[string][2]estimate) GPUDelta {
	by := map[string]*GPUModel{}
	get := func(m string) *GPUModel {
		if by[m] == nil {
			by[m] = &GPUModel{Model: m, ContributingTo: []string{}}
		}
		return by[m]
	}
	for i := range changes {
		c := &changes[i]
		e, ok := ests[c.Address]
		if !ok {
			continue
		}
		b, a := e[0], e[1]
		if b.gpuModel == "" && a.gpuModel == "" {
			continue
		}
		if b.gpuModel != "" {
			g := get(b.gpuModel)
			g.Before += b.gpus
			g.HoursBefore += b.gpuHours
			g.ContributingTo = appendUnique(g.ContributingTo, c.Address)
		}
		if a.gpuModel != "" {
			g := get(a.gpuModel)
			g.After += a.gpus
			g.HoursAfter += a.gpuHours
			if !a.gpusKnown {
				g.UnknownCount++
			}
			g.ContributingTo = appendUnique(g.ContributingTo, c.Address)
		}
	}
	out := GPUDelta{Models: []GPUModel{}}
	for _, g := range by {
		g.Delta = g.After - g.Before
		g.HoursBefore, g.HoursAfter = round2(g.HoursBefore), round2(g.HoursAfter)
		g.HoursDelta = round2(g.HoursAfter - g.HoursBefore)
		out.Models = append(out.Models, *g)
	}
	sort.Slice(out.Models, func(i, j int) bool { return out.Models[i].Model < out.Models[j].Model })
	return out
}

func buildValidation(changes []Change, ests map[string][2]estimate, pr pricer) Validation {
	v := Validation{Gates: []ValidationGate{}}
	for i := range changes {
		c := &changes[i]
		if c.After == nil || (c.Type != "mlplatform_gpu_cluster" && c.Type != "mlplatform_cpu_footprint") {
			continue
		}
		vals := values{m: c.After, unknown: c.afterUnknown}
		raw, known := vals.get("validation")
		if known && single(raw) == nil {
			continue
		}
		if l, ok := raw.([]any); ok && len(l) == 0 {
			continue
		}
		g := ValidationGate{Address: c.Address, Type: c.Type}
		if e, ok := ests[c.Address]; ok && e[1].nodes != nil {
			n := *e[1].nodes
			g.Nodes = &n
		}
		s := func(k string) string { x, _ := vals.str("validation", k); return x }
		g.Level, g.OnFailure, g.Timeout = s("level"), s("on_failure"), s("timeout")
		if w, ok := vals.get("validation", "wait"); ok {
			if b, ok := w.(bool); ok {
				g.Wait = &b
			}
		}
		typ, _ := vals.str("instance_type")
		if typ == "" {
			typ, _ = vals.str("chosen_instance_type")
		}
		g.Profile = profileOf(pr, typ)
		v.Gates = append(v.Gates, g)
	}
	v.Declared = len(v.Gates) > 0
	return v
}

// profileOf describes what hwprobe will be asked to prove for a type.
func profileOf(pr pricer, typ string) string {
	if typ == "" {
		return "instance type known only after apply"
	}
	t, ok := pr.cat.Lookup(typ)
	if !ok {
		return typ + " (not in the catalog: hardware checks from live data)"
	}
	parts := []string{typ}
	if t.GPU != nil {
		parts = append(parts, fmt.Sprintf("%d x %s %d GB", t.GPU.Count, t.GPU.Model, t.GPU.MemoryGiB))
		if t.GPU.Interconnect != "" {
			parts = append(parts, t.GPU.Interconnect)
		}
	}
	if t.EFA.Supported {
		parts = append(parts, fmt.Sprintf("%d EFA", t.EFA.MaxInterfaces))
	}
	parts = append(parts, fmt.Sprintf("%d vCPU, %d GiB", t.VCPUs, t.MemoryMiB/1024))
	return strings.Join(parts, ", ")
}
