package catalog

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2API is the EC2 subset Load calls. *ec2.Client and the core's cloud.EC2Client satisfy it.
type EC2API interface {
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
}

// zoneNamer is optional: when the EC2API also lists zones (as *ec2.Client and cloud.EC2Client
// does), Load records zone names beside zone ids with one extra call.
type zoneNamer interface {
	DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, opts ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
}

// describeBatch is the most instance types DescribeInstanceTypes takes at once.
const describeBatch = 100

// Load builds the catalog for region: the embedded data, refreshed by EC2
// for every embedded type. It makes a handful of calls whatever the region:
// the offerings by zone id (paginated, up to 1000 a page), DescribeInstanceTypes
// for the offered types of the catalog's types (100 a call), and, when api
// can, one DescribeAvailabilityZones for zone names. Both listings are
// filtered to the embedded types by name, so the catalog covers exactly the
// embedded types. Live data wins for vCPUs, memory, architecture, GPUs, EFA
// and placement; the embedded data supplies peaks, prices and CPU ISA
// features. Cache the result: it is safe to share. Source loads only the
// types asked for, and keeps them in a disk cache between processes.
func Load(ctx context.Context, api EC2API, region string) (*Catalog, error) {
	src := &Source{API: api, Region: region}
	if zn, ok := api.(zoneNamer); ok {
		src.ZoneNames = func(ctx context.Context) (map[string]string, error) { return describeZoneNames(ctx, zn) }
	}
	return src.Load(ctx)
}

// describeZoneNames maps the region's zone ids to zone names.
func describeZoneNames(ctx context.Context, zn zoneNamer) (map[string]string, error) {
	out, err := zn.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, z := range out.AvailabilityZones {
		names[aws.ToString(z.ZoneId)] = aws.ToString(z.ZoneName)
	}
	return names, nil
}

// fetch asks EC2 for the facts of names (embedded type names) in region: the
// offerings of each, filtered by name, then DescribeInstanceTypes for the
// offered ones. Every name asked gets an entry, offered or not.
func fetch(ctx context.Context, api EC2API, region string, names []string, now time.Time) (map[string]facts, error) {
	out := make(map[string]facts, len(names))
	for _, n := range names {
		out[n] = facts{FetchedAt: now}
	}
	// Offerings are asked for the catalog's own types only, by name: an
	// unfiltered listing returns every type of the region and costs seconds
	// on every provider start (and a large response to parse).
	for chunk := range slices.Chunk(names, describeBatch) {
		pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(api, &ec2.DescribeInstanceTypeOfferingsInput{
			LocationType: types.LocationTypeAvailabilityZoneId,
			Filters:      []types.Filter{{Name: aws.String("instance-type"), Values: chunk}},
			MaxResults:   aws.Int32(1000),
		})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing instance type offerings in %s: %w", region, err)
			}
			for _, o := range page.InstanceTypeOfferings {
				name := string(o.InstanceType)
				f, asked := out[name]
				if z := aws.ToString(o.Location); asked && z != "" && !slices.Contains(f.ZoneIDs, z) {
					f.ZoneIDs = append(f.ZoneIDs, z)
					out[name] = f
				}
			}
		}
	}

	var offered []string
	for _, n := range names {
		if f := out[n]; len(f.ZoneIDs) > 0 {
			slices.Sort(f.ZoneIDs)
			offered = append(offered, n)
		}
	}
	slices.Sort(offered)
	for chunk := range slices.Chunk(offered, describeBatch) {
		p := ec2.NewDescribeInstanceTypesPaginator(api, &ec2.DescribeInstanceTypesInput{
			InstanceTypes: toInstanceTypes(chunk),
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing instance types in %s: %w", region, err)
			}
			for _, info := range page.InstanceTypes {
				name := string(info.InstanceType)
				if f, asked := out[name]; asked {
					f.Info = infoFromEC2(info)
					out[name] = f
				}
			}
		}
	}
	return out, nil
}

func toInstanceTypes(names []string) []types.InstanceType {
	out := make([]types.InstanceType, len(names))
	for i, n := range names {
		out[i] = types.InstanceType(n)
	}
	return out
}

// merge returns a new catalog: base refreshed with the live facts for region.
// Types without facts keep the embedded knowledge (their offerings are the
// embedded region list); types with facts follow live offerings, offered or
// not. The catalog is as old as its oldest facts.
func merge(base *Catalog, region string, live map[string]facts, zoneNames map[string]string) *Catalog {
	var loaded time.Time
	for _, f := range live {
		if loaded.IsZero() || f.FetchedAt.Before(loaded) {
			loaded = f.FetchedAt
		}
	}
	c := &Catalog{
		region:   region,
		asOf:     base.asOf,
		source:   base.source + fmt.Sprintf("; refreshed from EC2 in %s on %s", region, loaded.UTC().Format(time.DateOnly)),
		loadedAt: loaded,
		live:     len(live) > 0,
		types:    make(map[string]InstanceType, len(base.types)),
	}
	if !c.live {
		c.source = base.source
	}
	byFamily := map[string]InstanceType{}
	byGPU := map[string]GPU{}
	for _, name := range base.names { // sorted: the smallest row of a family wins
		t := base.types[name]
		if _, ok := byFamily[t.Family]; !ok {
			byFamily[t.Family] = t
		}
		if t.GPU != nil {
			byGPU[gpuKey(t.GPU.Model, t.GPU.MemoryMiB)] = *t.GPU
		}
	}
	for name, t := range base.types {
		c.types[name] = t.clone()
	}
	for name, f := range live {
		t, known := c.types[name]
		if f.Info != nil {
			if !known {
				fam := byFamily[Family(name)]
				t = InstanceType{
					Name: name, Family: Family(name), AsOf: f.FetchedAt.UTC().Format(time.DateOnly),
					Source: "EC2 DescribeInstanceTypes in " + region + "; CPU features of its family",
					CPU:    CPU{Model: fam.CPU.Model, Features: slices.Clone(fam.CPU.Features), FeaturesSource: fam.CPU.FeaturesSource},
				}
			} else {
				t.Source += "; refreshed from EC2 DescribeInstanceTypes in " + region
			}
			applyLive(&t, *f.Info, byGPU, known)
		} else if !known {
			continue
		}
		ids := slices.Clone(f.ZoneIDs)
		slices.Sort(ids)
		t.ZoneIDs = ids
		t.ZoneNames = nil
		for _, id := range ids {
			if n := zoneNames[id]; n != "" {
				t.ZoneNames = append(t.ZoneNames, n)
			}
		}
		t.zonesLive = true
		// Live offerings correct the embedded region list for this region.
		t.Regions = slices.DeleteFunc(slices.Clone(t.Regions), func(r string) bool { return r == region })
		if len(ids) > 0 {
			t.Regions = append(t.Regions, region)
			slices.Sort(t.Regions)
		}
		c.types[name] = t
	}
	c.sortNames()
	return c
}

func gpuKey(model string, mib int) string { return fmt.Sprintf("%s/%d", strings.ToLower(model), mib) }

// applyLive overwrites t with what EC2 reports.
func applyLive(t *InstanceType, li liveInfo, byGPU map[string]GPU, known bool) {
	t.Live = true
	if li.VCPUs != nil {
		t.VCPUs = *li.VCPUs
	}
	if li.MemoryMiB != nil {
		t.MemoryMiB = *li.MemoryMiB
	}
	if li.HasProcessor {
		if arch := pickArch(li.Architectures); arch != "" {
			t.Architecture = arch
		}
		if li.Manufacturer != nil {
			t.CPU.Manufacturer = *li.Manufacturer
		}
		if li.ClockGHz != nil {
			t.CPU.SustainedClockGHz = *li.ClockGHz
		}
	}
	if li.HasNetwork {
		t.EFA.Supported = li.EFA
		t.EFA.MaxInterfaces = li.MaxEFA
	}
	if li.HasPlacement {
		t.PlacementStrategies = append(t.PlacementStrategies[:0:0], li.Strategies...)
	}
	t.GPU = liveGPUOf(t.GPU, li.GPUs, byGPU, known)
}

// liveGPUOf merges EC2's GPU report with the catalog's: EC2 wins for model,
// count and memory; peaks and interconnect come from the embedded row, or
// from any embedded row with the same GPU.
func liveGPUOf(cur *GPU, gpus []liveGPU, byGPU map[string]GPU, known bool) *GPU {
	if len(gpus) == 0 {
		return nil
	}
	d := gpus[0]
	var g GPU
	model, mib := d.Name, d.MemoryMiB
	switch ref, ok := byGPU[gpuKey(model, mib)]; {
	case cur != nil && strings.EqualFold(cur.Model, model) && cur.MemoryMiB == mib:
		g = *cur
	case ok:
		g = ref
		if !known && d.Count == 1 {
			g.Interconnect = "" // one GPU: nothing to interconnect
		}
	default:
		g = GPU{MemoryGiB: int(math.Round(float64(mib) / 1024))}
	}
	g.Model = model
	g.Manufacturer = d.Manufacturer
	g.MemoryMiB = mib
	g.Count = 0
	for _, x := range gpus {
		g.Count += x.Count
	}
	return &g
}

// pickArch prefers the 64-bit architectures EC2 lists.
func pickArch(archs []string) string {
	for _, want := range []types.ArchitectureType{types.ArchitectureTypeX8664, types.ArchitectureTypeArm64} {
		if slices.Contains(archs, string(want)) {
			return string(want)
		}
	}
	if len(archs) > 0 {
		return archs[0]
	}
	return ""
}
