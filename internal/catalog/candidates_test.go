package catalog

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// A GPU criterion narrows the candidates to the types listed with GPUs,
// whatever their model, count or memory; any other filter leaves them all.
func TestCandidates(t *testing.T) {
	c := embedded(t)
	var gpuTypes []string
	for _, n := range c.Names() {
		if it, _ := c.Lookup(n); it.GPU != nil {
			gpuTypes = append(gpuTypes, n)
		}
	}
	if len(gpuTypes) == 0 || len(gpuTypes) == len(c.Names()) {
		t.Fatalf("embedded data: %d GPU types of %d", len(gpuTypes), len(c.Names()))
	}
	for name, f := range map[string]Filter{
		"count":         {MinGPUCount: 8},
		"memory":        {MinGPUMemoryGiB: 1000}, // more than any GPU here: live data may say otherwise
		"model":         {GPUModel: "B300"},      // not in the embedded data
		"model and efa": {GPUModel: "h100", EFA: ptr(true), CPUFeatures: []string{"amx_tile"}, OfferedOnly: true},
	} {
		names, all := c.Candidates(f)
		if all || !slices.Equal(names, gpuTypes) {
			t.Errorf("%s: Candidates = %v, all %v; want the %d GPU types", name, names, all, len(gpuTypes))
		}
	}
	for name, f := range map[string]Filter{
		"none":     {},
		"efa":      {EFA: ptr(true)},
		"cpu":      {CPUFeatures: []string{"avx512f"}, Architecture: "x86_64", OfferedOnly: true},
		"zero gpu": {MinGPUCount: 0, MinGPUMemoryGiB: 0},
	} {
		if names, all := c.Candidates(f); !all || names != nil {
			t.Errorf("%s: Candidates = %v, all %v; want every type", name, names, all)
		}
	}
}

// A load of the candidates answers every GPU filter as the load of the whole
// catalog does, with fewer types asked of EC2.
func TestCandidatesAnswerAsTheWholeCatalog(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	whole, err := process(fakeEC2WithZones{newFakeEC2()}, nil, testKey, clk).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	filters := []Filter{
		{MinGPUCount: 1, OfferedOnly: true}, {MinGPUCount: 8}, {GPUModel: "A10G", OfferedOnly: true},
		{GPUModel: "h200", EFA: ptr(true), OfferedOnly: true}, {MinGPUMemoryGiB: 24, Architecture: "x86_64"},
		{MinGPUCount: 1, CPUFeatures: []string{"amx_tile"}, Region: "me-central-1"},
	}
	for _, f := range filters {
		names, all := embedded(t).Candidates(f)
		if all {
			t.Fatalf("%+v: no candidates", f)
		}
		fake := newFakeEC2()
		part, err := process(fakeEC2WithZones{fake}, nil, testKey, clk).LoadTypes(ctx, names...)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := part.Find(f), whole.Find(f); !reflect.DeepEqual(got, want) {
			t.Errorf("%+v: the candidates' catalog finds %v, the whole catalog %v", f, typeNames(got), typeNames(want))
		}
		for _, asked := range fake.asked {
			if slices.Contains(asked, "c7i.large") {
				t.Errorf("%+v: asked EC2 about c7i.large, a type without GPUs", f)
			}
		}
	}
}

func typeNames(ts []InstanceType) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// LoadTypes answers from what the Source knows with the same catalog each
// time (callers key memos on it), and with a new one once it learnt more.
func TestSourceLoadTypesKeepsItsCatalog(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	src := process(fakeEC2WithZones{newFakeEC2()}, nil, testKey, clk)
	a, err := src.LoadTypes(ctx, "p5en.48xlarge", "g5.xlarge")
	if err != nil {
		t.Fatal(err)
	}
	b, err := src.LoadTypes(ctx, "g5.xlarge")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("a LoadTypes of known types built a new catalog")
	}
	c, err := src.LoadTypes(ctx, "c7i.large")
	if err != nil {
		t.Fatal(err)
	}
	if c == a || !c.OfferedIn("c7i.large", "mec1-az1") || !c.OfferedIn("p5en.48xlarge", "mec1-az1") {
		t.Error("a LoadTypes that learnt a type answered from the older catalog")
	}
	if a.OfferedIn("c7i.large", "mec1-az1") {
		t.Error("a later load changed an earlier catalog")
	}
}

// blockingOfferings holds the offerings call until the zone names are asked:
// a Source that asked the zones only after the facts would never finish.
type blockingOfferings struct {
	fakeEC2WithZones
	zonesAsked chan struct{}
}

func (b blockingOfferings) DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	select {
	case <-b.zonesAsked:
	case <-time.After(10 * time.Second):
		return nil, context.DeadlineExceeded
	}
	return b.fakeEC2WithZones.DescribeInstanceTypeOfferings(ctx, in, opts...)
}

func TestSourceAsksZonesBesideFacts(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f := newFakeEC2()
	api := blockingOfferings{fakeEC2WithZones: fakeEC2WithZones{f}, zonesAsked: make(chan struct{})}
	src := process(api, nil, testKey, clk)
	src.ZoneNames = func(ctx context.Context) (map[string]string, error) {
		close(api.zonesAsked)
		return describeZoneNames(ctx, api)
	}
	c, err := src.LoadTypes(ctx, "p5en.48xlarge")
	if err != nil {
		t.Fatalf("the facts waited for the zone names: %v", err)
	}
	if p5en, _ := c.Lookup("p5en.48xlarge"); !slices.Equal(p5en.ZoneNames, []string{"me-central-1a", "me-central-1c"}) {
		t.Errorf("zone names = %v", p5en.ZoneNames)
	}
	if f.calls["zones"] != 1 || f.calls["offerings"] != 1 || f.calls["types"] != 1 {
		t.Errorf("calls = %v", f.calls)
	}
}
