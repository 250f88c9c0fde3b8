package platform

import (
	"context"
	"fmt"
)

// DecideCPUFootprint is what a plan shows for a footprint: its inputs
// checked, then the instance type chosen among those offered in the zones
// residency allows (live offerings; the whole catalog is loaded only when the
// type is to be chosen), and the monthly cost. A spec with unknown inputs
// the decision needs is decided at apply: ok is false, and nothing is
// checked that needs them.
func (e *Env) DecideCPUFootprint(ctx context.Context, s CPUFootprintSpec) (d CPUDecision, ok bool, err error) {
	if ps := s.ValidateStatic(); len(ps) > 0 {
		return CPUDecision{}, false, &ProblemsError{Problems: ps}
	}
	for _, p := range []string{"instance_type", "requirements", "requirements.min_vcpus", "requirements.min_memory_gib",
		"requirements.cpu_features", "requirements.architecture", "requirements.burstable", "requirements.max_hourly_price",
		"min_size", "max_size", "desired_capacity", "schedule"} {
		if !s.known(p) {
			return CPUDecision{}, false, nil
		}
	}
	zones, err := e.AllowedZones(ctx)
	if err != nil {
		return CPUDecision{}, false, fmt.Errorf("deciding CPU footprint (%s): %w", s.Name, err)
	}
	ids := make([]string, 0, len(zones))
	for _, z := range zones {
		ids = append(ids, z.ID)
	}
	cat, err := e.Catalog(ctx)
	if s.InstanceType != "" {
		cat, err = e.CatalogFor(ctx, s.InstanceType)
	}
	if err != nil {
		return CPUDecision{}, false, fmt.Errorf("deciding CPU footprint (%s): %w", s.Name, err)
	}
	d, err = s.Decide(cat, ids)
	if err != nil {
		return CPUDecision{}, false, err
	}
	return d, true, nil
}
