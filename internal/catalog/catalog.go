// Package catalog is the instance catalog: capabilities, GPU peaks, CPU ISA
// features and prices of the instance types the platform provisions. An
// embedded, dated and sourced data file is the baseline; Load refreshes it
// from EC2 DescribeInstanceTypes and DescribeInstanceTypeOfferings for one
// region. A Catalog is immutable once built and safe for concurrent reads.
package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/residency"
)

//go:embed data/instance_types.json
var embeddedJSON []byte

// GPU describes the GPUs of an instance type.
type GPU struct {
	Model        string `json:"model"` // as EC2 names it: H100, H200, A100, A10G, L4, L40S
	Manufacturer string `json:"manufacturer"`
	Count        int    `json:"count"`
	// MemoryGiB is the nominal memory of one GPU as sold (the datasheet's
	// figure, e.g. 24 for the A10G); MemoryMiB is what EC2 reports as usable.
	MemoryGiB int `json:"memory_gib"`
	MemoryMiB int `json:"memory_mib"`
	// Interconnect between the GPUs: "nvlink" or "pcie"; empty when unknown.
	Interconnect string `json:"interconnect"`
	// PeakBF16TFLOPS is the dense bf16 tensor peak of one GPU; 0 where the
	// vendor publishes none (A10G).
	PeakBF16TFLOPS float64 `json:"peak_bf16_tflops"`
	// MemoryBandwidthGBps is the peak memory bandwidth of one GPU in GB/s.
	MemoryBandwidthGBps float64 `json:"memory_bandwidth_gbps"`
	// PeakSource says where the peaks come from.
	PeakSource string `json:"peak_source"`
}

// EFA is the Elastic Fabric Adapter support of an instance type.
type EFA struct {
	Supported     bool `json:"supported"`
	MaxInterfaces int  `json:"max_interfaces"`
}

// CPU is the host processor.
type CPU struct {
	Manufacturer      string   `json:"manufacturer"`
	Model             string   `json:"model"`
	SustainedClockGHz float64  `json:"sustained_clock_ghz"`
	Features          []string `json:"features"` // /proc/cpuinfo flag names: avx512f, amx_tile, avx512_bf16, sve...
	FeaturesSource    string   `json:"features_source"`
}

// Price is an On-Demand hourly price. USDPerHour is 0 when unknown. A price
// whose Region differs from the catalog's region, or marked Estimate, is not
// a quote for the catalog's region.
type Price struct {
	USDPerHour float64 `json:"usd_per_hour"`
	Region     string  `json:"region"`
	Estimate   bool    `json:"estimate"`
	Source     string  `json:"source"`
}

// InstanceType is one catalog row.
type InstanceType struct {
	Name                string   `json:"name"`
	Family              string   `json:"family"`
	Architecture        string   `json:"architecture"` // x86_64 or arm64
	VCPUs               int      `json:"vcpus"`
	MemoryMiB           int      `json:"memory_mib"`
	GPU                 *GPU     `json:"gpu,omitempty"`
	EFA                 EFA      `json:"efa"`
	CPU                 CPU      `json:"cpu"`
	PlacementStrategies []string `json:"placement_strategies"` // cluster, partition, spread
	// Regions where the type is known to be offered: the embedded snapshot,
	// corrected for the loaded region by live offerings.
	Regions []string `json:"regions"`
	Price   *Price   `json:"price,omitempty"`
	AsOf    string   `json:"as_of"`
	Source  string   `json:"-"` // where the row's data comes from, in words

	// Live is true when EC2 DescribeInstanceTypes refreshed the row.
	Live bool `json:"-"`
	// ZoneIDs and ZoneNames are the zones of the loaded region offering the
	// type (live DescribeInstanceTypeOfferings); empty without live data.
	ZoneIDs   []string `json:"-"`
	ZoneNames []string `json:"-"`
	// zonesLive: ZoneIDs are live offerings of the catalog's region (the
	// type was asked for), not an absence of data.
	zonesLive bool
}

// ClusterPlacement reports whether the type supports cluster placement groups.
func (t InstanceType) ClusterPlacement() bool {
	return slices.Contains(t.PlacementStrategies, "cluster")
}

// HasCPUFeatures reports whether the CPU has every feature (case-insensitive).
func (t InstanceType) HasCPUFeatures(features ...string) bool {
	for _, f := range features {
		if !slices.ContainsFunc(t.CPU.Features, func(g string) bool { return strings.EqualFold(f, g) }) {
			return false
		}
	}
	return true
}

// HourlyUSD returns the On-Demand price per hour and whether it is an estimate
// (not a quote for region); ok is false when no price is known.
func (t InstanceType) HourlyUSD(region string) (usd float64, estimate, ok bool) {
	if t.Price == nil || t.Price.USDPerHour <= 0 {
		return 0, false, false
	}
	return t.Price.USDPerHour, t.Price.Estimate || t.Price.Region != region, true
}

func (t InstanceType) clone() InstanceType {
	out := t
	if t.GPU != nil {
		g := *t.GPU
		out.GPU = &g
	}
	if t.Price != nil {
		p := *t.Price
		out.Price = &p
	}
	out.CPU.Features = slices.Clone(t.CPU.Features)
	out.PlacementStrategies = slices.Clone(t.PlacementStrategies)
	out.Regions = slices.Clone(t.Regions)
	out.ZoneIDs = slices.Clone(t.ZoneIDs)
	out.ZoneNames = slices.Clone(t.ZoneNames)
	return out
}

// Catalog is a set of instance types for one region (or none, offline). It is
// never modified after it is built: share it freely between goroutines.
type Catalog struct {
	region   string
	asOf     string
	source   string
	loadedAt time.Time // zero without live data
	live     bool      // offerings for region came from EC2
	types    map[string]InstanceType
	names    []string // sorted for Find
}

// Region is the region the catalog was loaded for; empty for Embedded.
func (c *Catalog) Region() string { return c.region }

// AsOf is the date of the embedded data (YYYY-MM-DD).
func (c *Catalog) AsOf() string { return c.asOf }

// Source says where the catalog's data comes from.
func (c *Catalog) Source() string { return c.source }

// LoadedAt is when live data was merged in; zero for Embedded.
func (c *Catalog) LoadedAt() time.Time { return c.loadedAt }

// Live reports whether offerings and capabilities were refreshed from EC2
// (for every type, or for the types a Source was asked for).
func (c *Catalog) Live() bool { return c.live }

// Names returns every instance type name, sorted.
func (c *Catalog) Names() []string { return slices.Clone(c.names) }

// Lookup returns one instance type by name.
func (c *Catalog) Lookup(name string) (InstanceType, bool) {
	t, ok := c.types[name]
	if !ok {
		return InstanceType{}, false
	}
	return t.clone(), true
}

// OfferedIn reports whether the type is offered in a zone id. With live data
// for the type the zone must be among its offering zones; offline (or for a
// type in another region), the answer is whether the zone's region is among
// the regions the type is known in. A type a partial load did not ask for is
// not offered in the loaded region.
func (c *Catalog) OfferedIn(name, zoneID string) bool {
	t, ok := c.types[name]
	if !ok {
		return false
	}
	if r, err := residency.ParseZoneID(zoneID); err == nil && r == c.region && c.live {
		// A type a partial load did not ask for is not known to be offered.
		return t.zonesLive && slices.Contains(t.ZoneIDs, zoneID)
	}
	if r, err := residency.ParseZoneID(zoneID); err == nil {
		return slices.Contains(t.Regions, r)
	}
	return false
}

func (c *Catalog) offeredInRegion(t InstanceType, region string) bool {
	if region == c.region && c.live {
		return t.zonesLive && len(t.ZoneIDs) > 0
	}
	return slices.Contains(t.Regions, region)
}

// Filter selects instance types. Zero fields match everything.
type Filter struct {
	GPUModel        string   // case-insensitive, e.g. "H100"; implies a GPU
	MinGPUCount     int      // GPUs per instance
	MinGPUMemoryGiB int      // nominal memory of one GPU
	EFA             *bool    // EFA supported (true) or not (false)
	CPUFeatures     []string // every one present, e.g. avx512f, amx_tile
	Architecture    string   // x86_64 or arm64
	Region          string   // offered in this region (default: the catalog's, when OfferedOnly)
	OfferedOnly     bool     // offered in Region (or the catalog's region)
}

// Candidates returns the names of the types of c that can match f once
// refreshed from EC2, so that a load for f (Source.LoadTypes) asks EC2
// about those types only; all is true when any type can match (then load
// the whole catalog). Only a GPU criterion narrows the set. Live data wins
// for the GPU model, count and memory, so every type c lists with GPUs is a
// candidate whatever its GPUs here; but the GPUs of an instance type are
// part of what the type is, so a type c lists without GPUs never matches a
// GPU criterion.
func (c *Catalog) Candidates(f Filter) (names []string, all bool) {
	if f.GPUModel == "" && f.MinGPUCount <= 0 && f.MinGPUMemoryGiB <= 0 {
		return nil, true
	}
	names = []string{}
	for _, n := range c.names {
		if c.types[n].GPU != nil {
			names = append(names, n)
		}
	}
	return names, false
}

// Find returns the instance types that match f, ordered by family, then
// vCPUs, memory and name.
func (c *Catalog) Find(f Filter) []InstanceType {
	region := f.Region
	if region == "" {
		region = c.region
	}
	var out []InstanceType
	for _, name := range c.names {
		t := c.types[name]
		if (f.GPUModel != "" || f.MinGPUCount > 0 || f.MinGPUMemoryGiB > 0) && t.GPU == nil {
			continue
		}
		if f.GPUModel != "" && !strings.EqualFold(t.GPU.Model, f.GPUModel) {
			continue
		}
		if f.MinGPUCount > 0 && t.GPU.Count < f.MinGPUCount {
			continue
		}
		if f.MinGPUMemoryGiB > 0 && t.GPU.MemoryGiB < f.MinGPUMemoryGiB {
			continue
		}
		if f.EFA != nil && t.EFA.Supported != *f.EFA {
			continue
		}
		if !t.HasCPUFeatures(f.CPUFeatures...) {
			continue
		}
		if f.Architecture != "" && t.Architecture != f.Architecture {
			continue
		}
		if (f.OfferedOnly || f.Region != "") && (region == "" || !c.offeredInRegion(t, region)) {
			continue
		}
		out = append(out, t.clone())
	}
	return out
}

// Cheapest returns the matching type with the lowest known hourly price, and
// whether that price is an estimate for the catalog's region. Types without a
// price are never chosen.
func (c *Catalog) Cheapest(f Filter) (t InstanceType, estimate, ok bool) {
	best := -1.0
	for _, cand := range c.Find(f) {
		usd, est, known := cand.HourlyUSD(c.region)
		if !known || (best >= 0 && usd >= best) {
			continue
		}
		t, estimate, ok, best = cand, est, true, usd
	}
	return t, estimate, ok
}

// file is the embedded data file.
type file struct {
	AsOf          string            `json:"as_of"`
	Source        string            `json:"source"`
	Sources       map[string]string `json:"sources"`
	InstanceTypes []struct {
		InstanceType
		SourceIDs []string `json:"source"`
	} `json:"instance_types"`
}

// Embedded returns the catalog compiled into the binary, for offline use:
// no zones, prices and offerings as of its date.
func Embedded() (*Catalog, error) {
	var f file
	if err := json.Unmarshal(embeddedJSON, &f); err != nil {
		return nil, fmt.Errorf("reading embedded catalog: %w", err)
	}
	resolve := func(id string) (string, error) {
		s, ok := f.Sources[id]
		if !ok {
			return "", fmt.Errorf("reading embedded catalog: unknown source %q", id)
		}
		return s, nil
	}
	c := &Catalog{asOf: f.AsOf, source: f.Source, types: make(map[string]InstanceType, len(f.InstanceTypes))}
	for _, row := range f.InstanceTypes {
		t := row.InstanceType
		if _, dup := c.types[t.Name]; dup || t.Name == "" {
			return nil, fmt.Errorf("reading embedded catalog: duplicate or empty name %q", t.Name)
		}
		var srcs []string
		for _, id := range row.SourceIDs {
			s, err := resolve(id)
			if err != nil {
				return nil, err
			}
			srcs = append(srcs, s)
		}
		t.Source = strings.Join(srcs, "; ")
		var err error
		if t.GPU != nil && t.GPU.PeakSource != "" {
			if t.GPU.PeakSource, err = resolve(t.GPU.PeakSource); err != nil {
				return nil, err
			}
		}
		if t.CPU.FeaturesSource != "" {
			if t.CPU.FeaturesSource, err = resolve(t.CPU.FeaturesSource); err != nil {
				return nil, err
			}
		}
		if t.Price != nil {
			if t.Price.Source, err = resolve(t.Price.Source); err != nil {
				return nil, err
			}
		}
		c.types[t.Name] = t
	}
	c.sortNames()
	return c, nil
}

func (c *Catalog) sortNames() {
	c.names = c.names[:0]
	for n := range c.types {
		c.names = append(c.names, n)
	}
	sort.Slice(c.names, func(i, j int) bool {
		a, b := c.types[c.names[i]], c.types[c.names[j]]
		switch {
		case a.Family != b.Family:
			return a.Family < b.Family
		case a.VCPUs != b.VCPUs:
			return a.VCPUs < b.VCPUs
		case a.MemoryMiB != b.MemoryMiB:
			return a.MemoryMiB < b.MemoryMiB
		}
		return a.Name < b.Name
	})
}

// Family returns the family of an instance type name: "p5en" for
// p5en.48xlarge.
func Family(name string) string {
	f, _, _ := strings.Cut(name, ".")
	return f
}
