package platform

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

// ServingEndpointCost is an endpoint's On-Demand cost while every instance
// variant runs its declared count all month.
type ServingEndpointCost struct {
	// MonthlyUSD sums instances x hourly price x HoursPerMonth over the
	// instance variants; serverless variants add 0 (priced per use).
	MonthlyUSD float64
	// Source says where each price comes from, whether it is an estimate,
	// and what is left out.
	Source string
	// Known is false when an instance type has no price: MonthlyUSD then
	// leaves it out, and Source says so.
	Known bool
}

// ServingEndpointCostOf prices s in region from the embedded ml.* prices.
// Values known only at apply: ok is false, and the caller shows unknown.
func ServingEndpointCostOf(s ServingEndpointSpec, region string, unknown []string) (cost ServingEndpointCost, ok bool, err error) {
	o := unknownPaths(unknown)
	if !o.known(servingVariantsPath) {
		return ServingEndpointCost{}, false, nil
	}
	prices, asOf, err := catalog.ServingPrices()
	if err != nil {
		return ServingEndpointCost{}, false, err
	}
	cost.Known = true
	var notes []string
	bySource := map[string][]string{}
	for i, v := range s.Variants {
		at := fmt.Sprintf("%s[%d]", servingVariantsPath, i)
		if v.Serverless != nil {
			notes = append(notes, fmt.Sprintf("variant %s is serverless: priced per use (compute duration and data processed), counted as 0", v.Name))
			continue
		}
		if !o.known(at+".instance_type", at+".initial_instance_count") {
			return ServingEndpointCost{}, false, nil
		}
		p, found := prices[v.InstanceType]
		if !found {
			cost.Known = false
			notes = append(notes, fmt.Sprintf("variant %s: no price for %s in the catalog, left out", v.Name, v.InstanceType))
			continue
		}
		cost.MonthlyUSD += float64(v.InitialInstanceCount) * p.USDPerHour * HoursPerMonth
		what := fmt.Sprintf("%s %g USD/h", v.InstanceType, p.USDPerHour)
		if p.Estimate || p.Region != region {
			what += fmt.Sprintf(" (%s price, estimate)", p.Region)
		}
		bySource[p.Source] = append(bySource[p.Source], what)
		if a := v.Autoscaling; a != nil {
			notes = append(notes, fmt.Sprintf("variant %s autoscales between %d and %d instances: %.2f to %.2f USD a month", v.Name, a.Min, a.Max,
				float64(a.Min)*p.USDPerHour*HoursPerMonth, float64(a.Max)*p.USDPerHour*HoursPerMonth))
		}
	}
	cost.MonthlyUSD = math.Round(cost.MonthlyUSD*100) / 100
	var parts []string
	srcs := make([]string, 0, len(bySource))
	for src := range bySource {
		srcs = append(srcs, src)
	}
	slices.Sort(srcs)
	for _, src := range srcs {
		parts = append(parts, strings.Join(bySource[src], ", ")+": "+src)
	}
	parts = append(parts, notes...)
	if len(parts) > 0 {
		cost.Source = fmt.Sprintf("instances x hourly x %.0f h, prices as of %s. %s", HoursPerMonth, asOf, strings.Join(parts, ". "))
	}
	return cost, true, nil
}
