package review

import (
	"fmt"
	"strconv"
	"strings"
)

// Rule is one --fail-on rule.
type Rule struct {
	Name      string  // residency, residency-unknown, destroy, destroy-stateful, cost-increase, gpu-increase, unknown-price
	Threshold float64 // for cost-increase (USD per month) and gpu-increase (GPUs)
}

func (r Rule) String() string {
	if r.Name == "cost-increase" || r.Name == "gpu-increase" {
		return fmt.Sprintf("%s>%s", r.Name, strconv.FormatFloat(r.Threshold, 'f', -1, 64))
	}
	return r.Name
}

// RuleHelp describes every rule, for --help and the guide.
var RuleHelp = [][2]string{
	{"residency", "a location is outside the jurisdiction or breaks a residency rule"},
	{"residency-unknown", "a location is not decidable from the plan (known only after apply)"},
	{"destroy", "any resource is deleted or replaced"},
	{"destroy-stateful", "a stateful resource (feature group, endpoint, bucket, key, volume) is deleted or replaced"},
	{"cost-increase>N", "the monthly cost rises by more than N USD, or a changed resource's price is unknown (the rise cannot be bounded)"},
	{"gpu-increase>N", "the plan adds more than N GPUs in total"},
	{"unknown-price", "any changed resource has no known price"},
}

// ParseRules parses "residency,destroy-stateful,cost-increase>500".
func ParseRules(s string) ([]Rule, error) {
	var out []Rule
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, thr, hasThr := strings.Cut(part, ">")
		r := Rule{Name: strings.TrimSpace(name)}
		switch r.Name {
		case "residency", "residency-unknown", "destroy", "destroy-stateful", "unknown-price":
			if hasThr {
				return nil, fmt.Errorf("--fail-on %q: %s takes no threshold", part, r.Name)
			}
		case "cost-increase", "gpu-increase":
			if !hasThr {
				return nil, fmt.Errorf("--fail-on %q: %s needs a threshold, e.g. %s>500", part, r.Name, r.Name)
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(thr), 64)
			if err != nil || f < 0 {
				return nil, fmt.Errorf("--fail-on %q: threshold %q is not a non-negative number", part, thr)
			}
			r.Threshold = f
		default:
			return nil, fmt.Errorf("--fail-on %q: unknown rule %q; rules: residency, residency-unknown, destroy, destroy-stateful, cost-increase>N, gpu-increase>N, unknown-price", part, r.Name)
		}
		out = append(out, r)
	}
	return out, nil
}

// Evaluate applies the rules to a report.
func Evaluate(r *Report, rules []Rule) Verdict {
	v := Verdict{Rules: []string{}, Failed: []string{}}
	fail := func(format string, args ...any) { v.Failed = append(v.Failed, fmt.Sprintf(format, args...)) }
	for _, rule := range rules {
		v.Rules = append(v.Rules, rule.String())
		switch rule.Name {
		case "residency":
			if !r.Residency.Evaluated {
				fail("residency: not evaluated (%s)", r.Residency.NotEvaluatedReason)
				continue
			}
			if n := r.Residency.Counts[VerdictOutside] + r.Residency.Counts[VerdictViolation]; n > 0 {
				fail("residency: %d location(s) outside jurisdiction %s or breaking a residency rule", n, r.Residency.Jurisdiction)
			}
		case "residency-unknown":
			if !r.Residency.Evaluated {
				fail("residency-unknown: not evaluated (%s)", r.Residency.NotEvaluatedReason)
				continue
			}
			if n := r.Residency.Counts[VerdictUnknown]; n > 0 {
				fail("residency-unknown: %d location(s) not decidable from the plan", n)
			}
		case "destroy":
			if n := len(r.Destructive); n > 0 {
				fail("destroy: %d resource(s) deleted or replaced", n)
			}
		case "destroy-stateful":
			var names []string
			for _, d := range r.Destructive {
				if d.Stateful {
					names = append(names, d.Address)
				}
			}
			if len(names) > 0 {
				fail("destroy-stateful: %s %s", strings.Join(names, ", "), plural(len(names), "is deleted or replaced", "are deleted or replaced"))
			}
		case "cost-increase":
			if r.Cost.DeltaMonthly > rule.Threshold {
				fail("cost-increase: monthly cost rises by $%.2f, over $%s", r.Cost.DeltaMonthly, strconv.FormatFloat(rule.Threshold, 'f', -1, 64))
			} else if n := unknownAfter(r); n > 0 {
				fail("cost-increase: %d changed resource(s) have no known price, so the rise cannot be shown to stay under $%s", n, strconv.FormatFloat(rule.Threshold, 'f', -1, 64))
			}
		case "gpu-increase":
			added := 0
			for _, g := range r.GPUs.Models {
				added += g.Delta
			}
			if float64(added) > rule.Threshold {
				fail("gpu-increase: the plan adds %d GPUs, over %s", added, strconv.FormatFloat(rule.Threshold, 'f', -1, 64))
			}
		case "unknown-price":
			if n := len(r.Cost.Unknown); n > 0 {
				fail("unknown-price: %d price(s) unknown", n)
			}
		}
	}
	v.Passed = len(v.Failed) == 0
	return v
}

// unknownAfter counts changed resources whose new price is unknown.
func unknownAfter(r *Report) int {
	n := 0
	for _, u := range r.Cost.Unknown {
		if u.Side == "after" {
			n++
		}
	}
	return n
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
