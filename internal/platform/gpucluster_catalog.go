package platform

import (
	"slices"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

// catalogGPUTypes answers the GPU cluster's questions from the instance
// catalog (embedded data refreshed by live offerings).
type catalogGPUTypes struct{ c *catalog.Catalog }

func (a catalogGPUTypes) TypeInfo(name string) (GPUTypeInfo, bool) {
	t, ok := a.c.Lookup(name)
	if !ok {
		return GPUTypeInfo{}, false
	}
	info := GPUTypeInfo{Name: t.Name, EFASupported: t.EFA.Supported, MaxEFAInterfaces: t.EFA.MaxInterfaces, PlacementStrategies: t.PlacementStrategies}
	if t.GPU != nil {
		info.GPUs, info.GPUModel = t.GPU.Count, t.GPU.Model
	}
	if info.EFASupported && info.MaxEFAInterfaces == 0 {
		info.MaxEFAInterfaces = 1
	}
	return info, true
}

func (a catalogGPUTypes) OfferedZoneIDs(name string) []string {
	t, ok := a.c.Lookup(name)
	if !ok {
		return nil
	}
	out := slices.Clone(t.ZoneIDs)
	slices.Sort(out)
	return out
}

func (a catalogGPUTypes) GPUTypesOffered(zoneID string) []string {
	var out []string
	for _, t := range a.c.Find(catalog.Filter{MinGPUCount: 1, OfferedOnly: true}) {
		if zoneID == "" || slices.Contains(t.ZoneIDs, zoneID) {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}
