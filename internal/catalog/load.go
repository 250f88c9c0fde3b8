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

// EC2API is the EC2 subset Load calls. *ec2.Client satisfies it.
type EC2API interface {
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
}

// zoneNamer is optional: when the EC2API also lists zones (as *ec2.Client
// does), Load records zone names beside zone ids with one extra call.
type zoneNamer interface {
	DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, opts ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
}

// describeBatch is the most instance types DescribeInstanceTypes takes at once.
const describeBatch = 100

// Load builds the catalog for region: the embedded data, refreshed by EC2.
// It makes a handful of calls whatever the region: the offerings by zone id
// (paginated, up to 1000 a page), DescribeInstanceTypes for the offered types
// of the catalog's types (100 a call), and, when api can, one
// DescribeAvailabilityZones for zone names. Both listings are filtered to the
// embedded types by name, so the catalog covers exactly the embedded types.
// Live data wins for vCPUs, memory, architecture, GPUs, EFA and placement;
// the embedded data supplies peaks, prices and CPU ISA features. Cache the
// result: it is safe to share.
func Load(ctx context.Context, api EC2API, region string) (*Catalog, error) {
	base, err := Embedded()
	if err != nil {
		return nil, err
	}
	// Offerings are asked for the catalog's own types only, by name: an
	// unfiltered listing returns every type of the region and costs seconds
	// on every provider start (and a large response to parse).
	zones := map[string][]string{} // type -> zone ids
	for chunk := range slices.Chunk(base.names, describeBatch) {
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
				if z := aws.ToString(o.Location); z != "" && !slices.Contains(zones[name], z) {
					zones[name] = append(zones[name], z)
				}
			}
		}
	}

	offered := make([]string, 0, len(zones))
	for name := range zones {
		offered = append(offered, name)
	}
	slices.Sort(offered)
	live := map[string]types.InstanceTypeInfo{}
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
				live[string(info.InstanceType)] = info
			}
		}
	}

	zoneNames := map[string]string{}
	if zn, ok := api.(zoneNamer); ok {
		// Names are a convenience beside the ids: without them the catalog
		// is still complete, so a refusal here does not fail the load.
		if out, err := zn.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{}); err == nil {
			for _, z := range out.AvailabilityZones {
				zoneNames[aws.ToString(z.ZoneId)] = aws.ToString(z.ZoneName)
			}
		}
	}

	return merge(base, region, zones, zoneNames, live, time.Now().UTC()), nil
}

func toInstanceTypes(names []string) []types.InstanceType {
	out := make([]types.InstanceType, len(names))
	for i, n := range names {
		out[i] = types.InstanceType(n)
	}
	return out
}

// merge returns a new catalog: base refreshed with live data for region.
func merge(base *Catalog, region string, zones map[string][]string, zoneNames map[string]string, live map[string]types.InstanceTypeInfo, now time.Time) *Catalog {
	c := &Catalog{
		region:   region,
		asOf:     base.asOf,
		source:   base.source + fmt.Sprintf("; refreshed from EC2 in %s on %s", region, now.Format(time.DateOnly)),
		loadedAt: now,
		live:     true,
		types:    make(map[string]InstanceType, len(base.types)+len(live)),
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
	for name, info := range live {
		t, known := c.types[name]
		if !known {
			fam := byFamily[Family(name)]
			t = InstanceType{
				Name: name, Family: Family(name), AsOf: now.Format(time.DateOnly),
				Source: "EC2 DescribeInstanceTypes in " + region + "; CPU features of its family",
				CPU:    CPU{Model: fam.CPU.Model, Features: slices.Clone(fam.CPU.Features), FeaturesSource: fam.CPU.FeaturesSource},
			}
		} else {
			t.Source += "; refreshed from EC2 DescribeInstanceTypes in " + region
		}
		applyLive(&t, info, byGPU, known)
		c.types[name] = t
	}
	for name, t := range c.types {
		ids := slices.Clone(zones[name])
		slices.Sort(ids)
		t.ZoneIDs = ids
		t.ZoneNames = nil
		for _, id := range ids {
			if n := zoneNames[id]; n != "" {
				t.ZoneNames = append(t.ZoneNames, n)
			}
		}
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
func applyLive(t *InstanceType, info types.InstanceTypeInfo, byGPU map[string]GPU, known bool) {
	t.Live = true
	if v := info.VCpuInfo; v != nil && v.DefaultVCpus != nil {
		t.VCPUs = int(*v.DefaultVCpus)
	}
	if m := info.MemoryInfo; m != nil && m.SizeInMiB != nil {
		t.MemoryMiB = int(*m.SizeInMiB)
	}
	if p := info.ProcessorInfo; p != nil {
		if arch := pickArch(p.SupportedArchitectures); arch != "" {
			t.Architecture = arch
		}
		if p.Manufacturer != nil {
			t.CPU.Manufacturer = *p.Manufacturer
		}
		if p.SustainedClockSpeedInGhz != nil {
			t.CPU.SustainedClockGHz = *p.SustainedClockSpeedInGhz
		}
	}
	if n := info.NetworkInfo; n != nil {
		t.EFA.Supported = aws.ToBool(n.EfaSupported)
		t.EFA.MaxInterfaces = 0
		if n.EfaInfo != nil && n.EfaInfo.MaximumEfaInterfaces != nil {
			t.EFA.MaxInterfaces = int(*n.EfaInfo.MaximumEfaInterfaces)
		}
	}
	if pg := info.PlacementGroupInfo; pg != nil {
		t.PlacementStrategies = t.PlacementStrategies[:0:0]
		for _, s := range pg.SupportedStrategies {
			t.PlacementStrategies = append(t.PlacementStrategies, string(s))
		}
	}
	t.GPU = liveGPU(t.GPU, info.GpuInfo, byGPU, known)
}

// liveGPU merges EC2's GPU report with the catalog's: EC2 wins for model,
// count and memory; peaks and interconnect come from the embedded row, or
// from any embedded row with the same GPU.
func liveGPU(cur *GPU, gi *types.GpuInfo, byGPU map[string]GPU, known bool) *GPU {
	if gi == nil || len(gi.Gpus) == 0 {
		return nil
	}
	d := gi.Gpus[0]
	var g GPU
	model := aws.ToString(d.Name)
	mib := 0
	if d.MemoryInfo != nil && d.MemoryInfo.SizeInMiB != nil {
		mib = int(*d.MemoryInfo.SizeInMiB)
	}
	switch ref, ok := byGPU[gpuKey(model, mib)]; {
	case cur != nil && strings.EqualFold(cur.Model, model) && cur.MemoryMiB == mib:
		g = *cur
	case ok:
		g = ref
		if !known && gi.Gpus[0].Count != nil && *gi.Gpus[0].Count == 1 {
			g.Interconnect = "" // one GPU: nothing to interconnect
		}
	default:
		g = GPU{MemoryGiB: int(math.Round(float64(mib) / 1024))}
	}
	g.Model = model
	g.Manufacturer = aws.ToString(d.Manufacturer)
	g.MemoryMiB = mib
	g.Count = 0
	for _, x := range gi.Gpus {
		g.Count += int(aws.ToInt32(x.Count))
	}
	return &g
}

// pickArch prefers the 64-bit architectures EC2 lists.
func pickArch(archs []types.ArchitectureType) string {
	for _, want := range []types.ArchitectureType{types.ArchitectureTypeX8664, types.ArchitectureTypeArm64} {
		if slices.Contains(archs, want) {
			return string(want)
		}
	}
	if len(archs) > 0 {
		return string(archs[0])
	}
	return ""
}
