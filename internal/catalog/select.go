package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Requirements are what a CPU workload needs from an instance type. Zero
// fields ask for nothing.
type Requirements struct {
	MinVCPUs     int
	MinMemoryGiB float64
	// CPUFeatures are /proc/cpuinfo flag names, every one required
	// (avx512f, avx512_bf16, avx512_vnni, amx_tile, amx_bf16, sve).
	CPUFeatures []string
	// Architecture is x86_64, arm64, or "" / "any".
	Architecture string
	// Burstable allows burstable families (t2, t3, t3a, t4g).
	Burstable bool
	// MaxHourlyUSD is the most an instance may cost per hour; 0 is no limit.
	// A type without a known price never meets a limit.
	MaxHourlyUSD float64
	// GPU allows types with GPUs; a CPU footprint leaves it false.
	GPU bool
}

// Candidate is one instance type as selection saw it.
type Candidate struct {
	Name         string
	VCPUs        int
	MemoryGiB    float64
	Architecture string
	// USDPerHour is the On-Demand price; PriceKnown is false when the
	// catalog has none, and Estimate when the price is not a quote for the
	// catalog's region.
	USDPerHour  float64
	PriceKnown  bool
	Estimate    bool
	PriceSource string
	// ZoneIDs are the allowed zones offering the type (empty offline, where
	// only the region is known).
	ZoneIDs []string
	// Missed lists each requirement the type does not meet, in words:
	// "min_vcpus: 2 < 4". Empty for a qualifying type.
	Missed []string
}

// Qualifies reports whether the candidate meets every requirement.
func (c Candidate) Qualifies() bool { return len(c.Missed) == 0 }

// Selection is the outcome of Select: the chosen type, why, and what else was
// considered.
type Selection struct {
	Chosen Candidate
	// Reason says in one sentence why Chosen won.
	Reason string
	// Qualifying are the types meeting every requirement, cheapest first
	// (types without a price last, by size).
	Qualifying []Candidate
	// RejectedCheaper are the types cheaper than Chosen that missed a
	// requirement, cheapest first, each with what it missed.
	RejectedCheaper []Candidate
}

// Burstable reports whether an instance type is of a burstable family.
func Burstable(name string) bool {
	f := Family(name)
	return len(f) >= 2 && f[0] == 't' && f[1] >= '0' && f[1] <= '9'
}

// NoMatchError says that no offered type meets the requirements, and lists
// the nearest candidates with what each missed.
type NoMatchError struct {
	Region  string
	Nearest []Candidate
}

func (e *NoMatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no instance type offered in %s meets the requirements", e.Region)
	if len(e.Nearest) > 0 {
		b.WriteString("; nearest:")
		for _, c := range e.Nearest {
			fmt.Fprintf(&b, "\n  %s (%s): %s", c.Name, c.priceText(), strings.Join(c.Missed, "; "))
		}
	}
	return b.String()
}

func (c Candidate) priceText() string {
	if !c.PriceKnown {
		return "price unknown"
	}
	s := fmt.Sprintf("$%.4f/h", c.USDPerHour)
	if c.Estimate {
		s += ", estimate"
	}
	return s
}

// Select picks the cheapest instance type of c offered in one of the allowed
// zones that meets req. allowedZoneIDs are the zone ids residency allows in
// the catalog's region; with live data a type must be offered in one of them,
// offline its region must be known to offer it.
//
// The answer is stable: candidates are ordered by known price, then vCPUs,
// memory and name, so ties are broken the same way every time. A type without
// a known price is never preferred to a priced one; it is chosen only when no
// priced type qualifies, and the reason says so.
func Select(c *Catalog, req Requirements, allowedZoneIDs []string) (Selection, error) {
	var cands []Candidate
	for _, name := range c.Names() {
		t, _ := c.Lookup(name)
		if t.GPU != nil && !req.GPU {
			continue
		}
		zones, offered := offeredZones(c, name, allowedZoneIDs)
		if !offered {
			continue
		}
		cand := candidate(c, t, zones)
		cand.Missed = missed(t, cand, req)
		cands = append(cands, cand)
	}
	slices.SortStableFunc(cands, compareCandidates)

	var sel Selection
	for _, cand := range cands {
		if cand.Qualifies() {
			sel.Qualifying = append(sel.Qualifying, cand)
		}
	}
	if len(sel.Qualifying) == 0 {
		return Selection{}, &NoMatchError{Region: c.Region(), Nearest: nearest(cands, 5)}
	}
	sel.Chosen = sel.Qualifying[0]
	for _, cand := range cands {
		if cand.Name == sel.Chosen.Name {
			break
		}
		if !cand.Qualifies() {
			sel.RejectedCheaper = append(sel.RejectedCheaper, cand)
		}
	}
	sel.Reason = reason(sel, req)
	return sel, nil
}

// Evaluate returns the named type as selection would see it, for an
// explicit instance_type: its price, allowed zones and the requirements it
// misses. ok is false when the catalog does not know the type.
func Evaluate(c *Catalog, name string, req Requirements, allowedZoneIDs []string) (Candidate, bool) {
	t, ok := c.Lookup(name)
	if !ok {
		return Candidate{Name: name}, false
	}
	zones, _ := offeredZones(c, name, allowedZoneIDs)
	cand := candidate(c, t, zones)
	cand.Missed = missed(t, cand, req)
	return cand, true
}

func candidate(c *Catalog, t InstanceType, zones []string) Candidate {
	cand := Candidate{
		Name:         t.Name,
		VCPUs:        t.VCPUs,
		MemoryGiB:    float64(t.MemoryMiB) / 1024,
		Architecture: t.Architecture,
		ZoneIDs:      zones,
	}
	cand.USDPerHour, cand.Estimate, cand.PriceKnown = t.HourlyUSD(c.Region())
	if cand.PriceKnown && t.Price != nil {
		cand.PriceSource = t.Price.Source
	}
	return cand
}

func offeredZones(c *Catalog, name string, allowed []string) ([]string, bool) {
	var zones []string
	for _, z := range allowed {
		if c.OfferedIn(name, z) {
			zones = append(zones, z)
		}
	}
	return zones, len(zones) > 0
}

func missed(t InstanceType, cand Candidate, req Requirements) []string {
	var out []string
	if req.MinVCPUs > 0 && t.VCPUs < req.MinVCPUs {
		out = append(out, fmt.Sprintf("min_vcpus: has %d, needs %d", t.VCPUs, req.MinVCPUs))
	}
	if req.MinMemoryGiB > 0 && cand.MemoryGiB < req.MinMemoryGiB {
		out = append(out, fmt.Sprintf("min_memory_gib: has %s, needs %s", gib(cand.MemoryGiB), gib(req.MinMemoryGiB)))
	}
	var lacking []string
	for _, f := range req.CPUFeatures {
		if !t.HasCPUFeatures(f) {
			lacking = append(lacking, f)
		}
	}
	if len(lacking) > 0 {
		out = append(out, "cpu_features: lacks "+strings.Join(lacking, ", "))
	}
	if a := req.Architecture; a != "" && a != "any" && t.Architecture != a {
		out = append(out, fmt.Sprintf("architecture: is %s, needs %s", t.Architecture, a))
	}
	if !req.Burstable && Burstable(t.Name) {
		out = append(out, "burstable: burstable types are not allowed")
	}
	if req.MaxHourlyUSD > 0 {
		switch {
		case !cand.PriceKnown:
			out = append(out, "max_hourly_price: price unknown")
		case cand.USDPerHour > req.MaxHourlyUSD:
			out = append(out, fmt.Sprintf("max_hourly_price: costs $%.4f/h, limit $%.4f/h", cand.USDPerHour, req.MaxHourlyUSD))
		}
	}
	return out
}

func gib(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".") + " GiB"
}

// compareCandidates orders priced types by price, then unpriced ones; ties by
// vCPUs, memory and name.
func compareCandidates(a, b Candidate) int {
	if a.PriceKnown != b.PriceKnown {
		if a.PriceKnown {
			return -1
		}
		return 1
	}
	if a.PriceKnown {
		if c := cmp.Compare(a.USDPerHour, b.USDPerHour); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(a.VCPUs, b.VCPUs); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MemoryGiB, b.MemoryGiB); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// nearest returns up to n non-qualifying candidates missing the fewest
// requirements, cheapest first among equals.
func nearest(cands []Candidate, n int) []Candidate {
	out := slices.Clone(cands)
	slices.SortStableFunc(out, func(a, b Candidate) int {
		if c := cmp.Compare(len(a.Missed), len(b.Missed)); c != 0 {
			return c
		}
		return compareCandidates(a, b)
	})
	return out[:min(n, len(out))]
}

func reason(sel Selection, req Requirements) string {
	ch := sel.Chosen
	var need []string
	if req.MinVCPUs > 0 {
		need = append(need, fmt.Sprintf("%d vCPUs", req.MinVCPUs))
	}
	if req.MinMemoryGiB > 0 {
		need = append(need, gib(req.MinMemoryGiB))
	}
	if len(req.CPUFeatures) > 0 {
		need = append(need, strings.Join(req.CPUFeatures, ", "))
	}
	if a := req.Architecture; a != "" && a != "any" {
		need = append(need, a)
	}
	what := "any instance type"
	if len(need) > 0 {
		what = strings.Join(need, ", ")
	}
	if !ch.PriceKnown {
		return fmt.Sprintf("%s is the smallest type offering %s; no qualifying type has a known price, so this choice is not by price", ch.Name, what)
	}
	s := fmt.Sprintf("%s is the cheapest of %d offered types with %s (%s)", ch.Name, len(sel.Qualifying), what, ch.priceText())
	if len(sel.RejectedCheaper) > 0 {
		// The decisive requirement: what the cheapest rejected type missed.
		r := sel.RejectedCheaper[0]
		s += fmt.Sprintf("; cheaper %s was rejected (%s)", r.Name, strings.Join(r.Missed, "; "))
	}
	return s
}
