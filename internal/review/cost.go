package review

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// estimate is the cost and GPUs of one side (before or after) of a change.
type estimate struct {
	priced    bool    // the resource type has a cost model
	known     bool    // USD is known
	usd       float64 // monthly
	basis     string
	reason    string // why USD is unknown, or why the type is not priced
	quotes    []PriceQuote
	gpuModel  string
	gpus      int     // GPUs declared (instances x GPUs each)
	gpusKnown bool    // the GPU count is known
	gpuHours  float64 // monthly GPU-hours with schedules applied
	nodes     *int    // instances the validation gate would check
}

// values is one side of a change with its unknown marks.
type values struct {
	m       map[string]any
	unknown any // after_unknown, for the after side of a Terraform plan
}

func (v values) get(path ...string) (any, bool) {
	if unknownAt(v.unknown, path...) {
		return nil, false
	}
	x := lookup(v.m, path...)
	if s, ok := x.(string); ok && s == unknownValue {
		return nil, false
	}
	return x, true
}

func (v values) str(path ...string) (string, bool) {
	x, ok := v.get(path...)
	return str(x), ok
}

func (v values) num(path ...string) (float64, bool, bool) { // value, set, known
	x, ok := v.get(path...)
	if !ok {
		return 0, true, false
	}
	if x == nil {
		return 0, false, true
	}
	f, ok := num(x)
	return f, ok, true
}

// pricer prices instance types from the catalog.
type pricer struct {
	cat    *catalog.Catalog
	region string // the jurisdiction's first region: where an unregioned resource runs
}

func (p pricer) quote(instanceType, region string) (PriceQuote, *catalog.InstanceType, string) {
	if region == "" || region == unknownValue {
		region = p.region
	}
	t, ok := p.cat.Lookup(instanceType)
	if !ok {
		return PriceQuote{}, nil, fmt.Sprintf("%s is not in the catalog (as of %s)", instanceType, p.cat.AsOf())
	}
	usd, est, ok := t.HourlyUSD(region)
	if !ok {
		src := "no price carried"
		if t.Price != nil && t.Price.Source != "" {
			src = t.Price.Source
		}
		return PriceQuote{}, &t, fmt.Sprintf("no price for %s in the catalog (as of %s): %s", instanceType, asOf(t, p.cat), src)
	}
	return PriceQuote{InstanceType: instanceType, USDPerHour: usd, Region: t.Price.Region, Estimate: est, AsOf: asOf(t, p.cat), Source: t.Price.Source}, &t, ""
}

func asOf(t catalog.InstanceType, c *catalog.Catalog) string {
	if t.AsOf != "" {
		return t.AsOf
	}
	return c.AsOf()
}

// gpuOf returns the GPUs per instance of a type (ml.* types map to the EC2
// type of the same hardware).
func (p pricer) gpuOf(instanceType string) (string, int) {
	name := strings.TrimPrefix(instanceType, "ml.")
	t, ok := p.cat.Lookup(name)
	if !ok || t.GPU == nil {
		return "", 0
	}
	return t.GPU.Model, t.GPU.Count
}

// estimateSide prices one side of a change by resource type.
func (p pricer) estimateSide(c *Change, v values) estimate {
	region := c.Region
	switch c.Type {
	case "mlplatform_gpu_cluster":
		return p.instances(v, region, "instance_type", func() (float64, []Scaled, string, bool) {
			n, set, known := v.num("node_count")
			if !known {
				return 0, nil, "node_count is known only after apply", false
			}
			if !set {
				n = 1
			}
			return n, nil, "", true
		}, capacityType(v))
	case "mlplatform_cpu_footprint":
		typeAttr := "instance_type"
		if t, _ := v.str("instance_type"); t == "" {
			for _, a := range []string{"chosen_instance_type", "selected_instance_type", "chosen_type"} {
				if _, ok := v.get(a); ok {
					if s, _ := v.str(a); s != "" {
						typeAttr = a
						break
					}
				}
				if unknownAt(v.unknown, a) {
					typeAttr = a
				}
			}
		}
		return p.instances(v, region, typeAttr, func() (float64, []Scaled, string, bool) {
			return groupCapacity(v)
		}, capacityType(v))
	case "aws_instance":
		return p.instances(v, region, "instance_type", func() (float64, []Scaled, string, bool) { return 1, nil, "", true }, "")
	case "mlplatform_serving_endpoint", "aws_sagemaker_endpoint_configuration":
		return p.endpoint(c, v)
	}
	return estimate{}
}

func capacityType(v values) string {
	for _, path := range [][]string{{"capacity", "type"}, {"capacity"}, {"capacity_type"}} {
		if s, _ := v.str(path...); s != "" {
			return s
		}
	}
	return ""
}

// groupCapacity is an Auto Scaling group's average instances: desired (or
// min) with its scheduled actions applied.
func groupCapacity(v values) (float64, []Scaled, string, bool) {
	get := func(names ...string) (float64, bool, bool) {
		for _, n := range names {
			f, set, known := v.num(n)
			if !known {
				return 0, true, false
			}
			if set {
				return f, true, true
			}
		}
		return 0, false, true
	}
	minSize, minSet, k1 := get("min", "min_size")
	maxSize, maxSet, k2 := get("max", "max_size")
	desired, desSet, k3 := get("desired", "desired_capacity")
	if !k1 || !k2 || !k3 {
		return 0, nil, "capacity (min, max or desired) is known only after apply", false
	}
	if !desSet {
		desired = minSize
	}
	if !maxSet {
		maxSize = math.Max(desired, minSize)
	}
	if !minSet {
		minSize = 0
	}
	scheds, note, ok := schedules(v)
	if !ok {
		return 0, nil, note, false
	}
	avg, err := averageCapacity(minSize, maxSize, desired, scheds)
	if err != nil {
		return 0, nil, err.Error(), false
	}
	return avg, scheds, "", true
}

func schedules(v values) ([]Scaled, string, bool) {
	raw, known := v.get("schedule")
	if !known {
		return nil, "the schedule is known only after apply", false
	}
	if raw == nil {
		raw, _ = v.get("schedules")
	}
	list, _ := raw.([]any)
	if m, ok := raw.(map[string]any); ok {
		list = []any{m}
	}
	var out []Scaled
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		s := Scaled{Cron: str(m["cron"])}
		if s.Cron == "" {
			s.Cron = str(m["recurrence"])
		}
		if s.Cron == "" || s.Cron == unknownValue {
			return nil, fmt.Sprintf("schedule[%d] has no cron known before apply", i), false
		}
		if d := str(m["duration"]); d == unknownValue {
			return nil, fmt.Sprintf("schedule[%d] has a duration known only after apply", i), false
		} else if d != "" {
			dur, err := time.ParseDuration(d)
			if err != nil || dur <= 0 {
				return nil, fmt.Sprintf("schedule[%d] duration %q is not a duration such as 11h", i, d), false
			}
			s.Duration = int(dur.Minutes())
		}
		for name, dst := range map[string]**float64{"min": &s.Min, "max": &s.Max, "desired": &s.Desired, "min_size": &s.Min, "max_size": &s.Max, "desired_capacity": &s.Desired} {
			if f, ok := num(m[name]); ok {
				f := f
				*dst = &f
			}
		}
		out = append(out, s)
	}
	return out, "", true
}

// instances prices count x type x hours.
func (p pricer) instances(v values, region, typeAttr string, count func() (float64, []Scaled, string, bool), capacity string) estimate {
	e := estimate{priced: true}
	typ, known := v.str(typeAttr)
	if !known || typ == "" {
		e.reason = typeAttr + " is known only after apply"
		if known {
			e.reason = typeAttr + " is not set"
		}
		return e
	}
	model, per := p.gpuOf(typ)
	avg, scheds, why, ok := count()
	if model != "" {
		e.gpuModel = model
	}
	if !ok {
		e.reason = why
		return e
	}
	declared := avg
	if len(scheds) > 0 {
		// The declared size is the desired capacity; avg is the schedule's mean.
		if d, set, _ := v.num("desired"); set {
			declared = d
		} else if d, set, _ := v.num("desired_capacity"); set {
			declared = d
		} else if d, set, _ := v.num("min"); set {
			declared = d
		}
	}
	n := int(math.Round(declared))
	e.nodes = &n
	if model != "" {
		e.gpus, e.gpusKnown = n*per, true
		e.gpuHours = avg * float64(per) * platform.HoursPerMonth
	}
	hours := fmt.Sprintf("%s x %s x %.0f h", fmtCount(declared), typ, platform.HoursPerMonth)
	if len(scheds) > 0 {
		hours = fmt.Sprintf("%s x %.0f h (desired %s, %d schedule(s): %s instances on average)", typ, platform.HoursPerMonth, fmtCount(declared), len(scheds), fmtCount(avg))
	}
	switch capacity {
	case "spot", "capacity_block":
		e.reason = fmt.Sprintf("%s capacity is billed at its own market or block price, which the catalog does not carry", capacity)
		e.basis = hours
		return e
	}
	q, _, why2 := p.quote(typ, region)
	if why2 != "" {
		e.reason = why2
		e.basis = hours
		return e
	}
	e.known = true
	e.usd = avg * q.USDPerHour * platform.HoursPerMonth
	e.basis = hours + fmt.Sprintf(" at $%.4f/h", q.USDPerHour)
	if q.Estimate {
		e.basis += fmt.Sprintf(" (%s price, estimate)", q.Region)
	}
	e.quotes = append(e.quotes, q)
	return e
}

// endpoint: SageMaker variants. The catalog carries no ml.* prices, so the
// price is unknown; GPUs come from the EC2 type of the same hardware, at the
// autoscaling minimum when one is declared.
func (p pricer) endpoint(c *Change, v values) estimate {
	e := estimate{priced: true}
	var variants []any
	for _, name := range []string{"variant", "variants", "production_variant", "production_variants"} {
		if raw, known := v.get(name); !known {
			e.reason = name + " is known only after apply"
			return e
		} else if l, ok := raw.([]any); ok && len(l) > 0 {
			variants = l
			break
		} else if m, ok := raw.(map[string]any); ok {
			variants = []any{m}
			break
		}
	}
	var types []string
	e.gpusKnown = true
	for _, raw := range variants {
		m, _ := raw.(map[string]any)
		typ := str(m["instance_type"])
		if typ == "" {
			if m["serverless"] != nil || m["serverless_config"] != nil {
				types = append(types, "serverless")
			}
			continue
		}
		count := 1.0
		for _, k := range []string{"initial_instance_count", "instance_count", "initial_count"} {
			if f, ok := num(m[k]); ok {
				count = f
				break
			}
		}
		if as := single(m["autoscaling"]); as != nil {
			if am, ok := as.(map[string]any); ok {
				for _, k := range []string{"min", "min_capacity"} {
					if f, ok := num(am[k]); ok {
						count = f
						break
					}
				}
			}
		}
		types = append(types, fmt.Sprintf("%s x %s", fmtCount(count), typ))
		if model, per := p.gpuOf(typ); model != "" {
			e.gpuModel = model
			e.gpus += int(count) * per
			e.gpuHours += count * float64(per) * platform.HoursPerMonth
		}
	}
	e.basis = strings.Join(types, " + ")
	if e.basis == "" {
		e.basis = "no variants"
	}
	e.reason = fmt.Sprintf("SageMaker hosting (ml.*) prices are not in the catalog (as of %s); count at the autoscaling minimum", p.cat.AsOf())
	return e
}

func fmtCount(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.2f", f)
}

// buildCost prices every change.
func (p pricer) buildCost(changes []Change) (Cost, map[string][2]estimate) {
	cost := Cost{Currency: "USD", HoursPerMonth: platform.HoursPerMonth, Complete: true, CatalogAsOf: p.cat.AsOf(),
		Resources: []CostLine{}, Unknown: []Unpriced{}, NotPriced: []Unpriced{}, Prices: []PriceQuote{}}
	ests := map[string][2]estimate{}
	quotes := map[string]PriceQuote{}
	for i := range changes {
		c := &changes[i]
		if c.Action == ActionRead {
			continue
		}
		var before, after estimate
		if c.Before != nil {
			before = p.estimateSide(c, values{m: c.Before})
		}
		if c.After != nil {
			after = p.estimateSide(c, values{m: c.After, unknown: c.afterUnknown})
		}
		ests[c.Address] = [2]estimate{before, after}
		if !before.priced && !after.priced {
			if c.Action != ActionNoop {
				cost.NotPriced = append(cost.NotPriced, Unpriced{Address: c.Address, Reason: notPricedReason(c.Type)})
			}
			continue
		}
		line := CostLine{Address: c.Address, Type: c.Type, Action: c.Action}
		side := func(e estimate, exists bool, name string) *float64 {
			if !exists {
				z := 0.0
				return &z
			}
			if !e.known {
				if c.Action != ActionNoop {
					cost.Unknown = append(cost.Unknown, Unpriced{Address: c.Address, Side: name, Reason: e.reason})
					cost.Complete = false
				}
				return nil
			}
			u := round2(e.usd)
			for _, q := range e.quotes {
				quotes[q.InstanceType] = q
			}
			return &u
		}
		line.Before = side(before, c.Before != nil, "before")
		line.After = side(after, c.After != nil, "after")
		line.Basis = after.basis
		if c.After == nil {
			line.Basis = before.basis
		}
		if line.Before != nil {
			cost.BeforeMonthly += *line.Before
		}
		if line.After != nil {
			cost.AfterMonthly += *line.After
		}
		if line.Before != nil && line.After != nil {
			d := round2(*line.After - *line.Before)
			line.Delta = &d
		}
		cost.Resources = append(cost.Resources, line)
	}
	cost.BeforeMonthly, cost.AfterMonthly = round2(cost.BeforeMonthly), round2(cost.AfterMonthly)
	cost.DeltaMonthly = round2(cost.AfterMonthly - cost.BeforeMonthly)
	for _, q := range quotes {
		cost.Prices = append(cost.Prices, q)
	}
	sort.Slice(cost.Prices, func(i, j int) bool { return cost.Prices[i].InstanceType < cost.Prices[j].InstanceType })
	sort.SliceStable(cost.Resources, func(i, j int) bool {
		return absDelta(cost.Resources[i]) > absDelta(cost.Resources[j])
	})
	return cost, ests
}

func absDelta(l CostLine) float64 {
	if l.Delta == nil {
		return math.Inf(1) // unknown first: it could be anything
	}
	return math.Abs(*l.Delta)
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func notPricedReason(typ string) string {
	switch {
	case typ == "mlplatform_feature_store" || strings.HasPrefix(typ, "aws_sagemaker_feature_group"):
		return "billed by usage (reads, writes, storage): not estimated"
	case strings.HasPrefix(typ, "aws_s3_"):
		return "billed by storage and requests: not estimated"
	case strings.HasPrefix(typ, "aws_kms_"):
		return "key and request charges are not in the catalog"
	case strings.HasPrefix(typ, "mlplatform_residency_guard"), typ == "terraform_data", strings.HasPrefix(typ, "null_"):
		return "no cloud resource: free"
	}
	return "the catalog has no price model for " + typ
}
