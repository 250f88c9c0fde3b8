package catalog

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func embedded(t *testing.T) *Catalog {
	t.Helper()
	c, err := Embedded()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The embedded data is dated and sourced, and every row is complete.
func TestEmbeddedIntegrity(t *testing.T) {
	c := embedded(t)
	if _, err := time.Parse(time.DateOnly, c.AsOf()); err != nil {
		t.Errorf("catalog as_of %q: %v", c.AsOf(), err)
	}
	if c.Source() == "" || c.Region() != "" || c.Live() {
		t.Errorf("Source=%q Region=%q Live=%v", c.Source(), c.Region(), c.Live())
	}
	for _, name := range c.Names() {
		it, _ := c.Lookup(name)
		if _, err := time.Parse(time.DateOnly, it.AsOf); err != nil {
			t.Errorf("%s: as_of %q: %v", name, it.AsOf, err)
		}
		if it.Source == "" || it.Family != Family(name) || it.VCPUs <= 0 || it.MemoryMiB <= 0 {
			t.Errorf("%s: incomplete row %+v", name, it)
		}
		if it.Architecture != "x86_64" && it.Architecture != "arm64" {
			t.Errorf("%s: architecture %q", name, it.Architecture)
		}
		if len(it.CPU.Features) == 0 || it.CPU.FeaturesSource == "" {
			t.Errorf("%s: no CPU features or source", name)
		}
		if it.EFA.Supported != (it.EFA.MaxInterfaces > 0) {
			t.Errorf("%s: EFA %+v", name, it.EFA)
		}
		if g := it.GPU; g != nil {
			if g.Count <= 0 || g.MemoryGiB <= 0 || g.MemoryMiB <= 0 || g.MemoryBandwidthGBps <= 0 || g.PeakSource == "" {
				t.Errorf("%s: incomplete GPU %+v", name, g)
			}
			if g.Interconnect != "nvlink" && g.Interconnect != "pcie" {
				t.Errorf("%s: interconnect %q", name, g.Interconnect)
			}
		}
		if p := it.Price; p != nil {
			if p.Source == "" || p.Region == "" {
				t.Errorf("%s: price without source or region %+v", name, p)
			}
			if p.Region != "me-central-1" && !p.Estimate {
				t.Errorf("%s: a price from %s must be marked an estimate", name, p.Region)
			}
		}
	}
}

func TestEmbeddedFacts(t *testing.T) {
	c := embedded(t)
	tests := []struct {
		name      string
		gpu       string
		gpus      int
		gib       int
		bf16      float64
		hbm       float64
		link      string
		efa       int
		vcpus     int
		memGiB    int
		features  []string
		meCentral bool
	}{
		{name: "p5.48xlarge", gpu: "H100", gpus: 8, gib: 80, bf16: 989, hbm: 3350, link: "nvlink", efa: 32, vcpus: 192, memGiB: 2048},
		{name: "p5e.48xlarge", gpu: "H200", gpus: 8, gib: 141, bf16: 989, hbm: 4800, link: "nvlink", efa: 32, vcpus: 192, memGiB: 2048},
		{name: "p5en.48xlarge", gpu: "H200", gpus: 8, gib: 141, bf16: 989, hbm: 4800, link: "nvlink", efa: 16, vcpus: 192, memGiB: 2048, features: []string{"amx_bf16"}, meCentral: true},
		{name: "p4d.24xlarge", gpu: "A100", gpus: 8, gib: 40, bf16: 312, hbm: 1555, link: "nvlink", efa: 4, vcpus: 96, memGiB: 1152},
		{name: "p4de.24xlarge", gpu: "A100", gpus: 8, gib: 80, bf16: 312, hbm: 2039, link: "nvlink", efa: 4, vcpus: 96, memGiB: 1152},
		{name: "g5.xlarge", gpu: "A10G", gpus: 1, gib: 24, bf16: 0, hbm: 600, link: "pcie", vcpus: 4, memGiB: 16, meCentral: true},
		{name: "g5.48xlarge", gpu: "A10G", gpus: 8, gib: 24, hbm: 600, link: "pcie", efa: 1, vcpus: 192, memGiB: 768, meCentral: true},
		{name: "g6.xlarge", gpu: "L4", gpus: 1, gib: 24, bf16: 121, hbm: 300, link: "pcie", vcpus: 4, memGiB: 16, meCentral: true},
		{name: "g6e.48xlarge", gpu: "L40S", gpus: 8, gib: 48, bf16: 362, hbm: 864, link: "pcie", efa: 4, vcpus: 192, memGiB: 1536, meCentral: true},
		{name: "c7i.large", vcpus: 2, memGiB: 4, features: []string{"avx512f", "amx_tile", "amx_bf16", "avx512_bf16"}, meCentral: true},
		{name: "m7i.48xlarge", vcpus: 192, memGiB: 768, efa: 1, features: []string{"amx_tile"}, meCentral: true},
		{name: "c7g.large", vcpus: 2, memGiB: 4, features: []string{"sve", "bf16"}},
		{name: "c6i.large", vcpus: 2, memGiB: 4, features: []string{"avx512f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, ok := c.Lookup(tt.name)
			if !ok {
				t.Fatalf("%s not in catalog", tt.name)
			}
			if it.VCPUs != tt.vcpus || it.MemoryMiB != tt.memGiB*1024 {
				t.Errorf("vcpus/memory = %d/%d MiB, want %d/%d GiB", it.VCPUs, it.MemoryMiB, tt.vcpus, tt.memGiB)
			}
			if it.EFA.MaxInterfaces != tt.efa {
				t.Errorf("EFA interfaces = %d, want %d", it.EFA.MaxInterfaces, tt.efa)
			}
			if !it.ClusterPlacement() {
				t.Error("no cluster placement")
			}
			if !it.HasCPUFeatures(tt.features...) {
				t.Errorf("CPU features %v lack %v", it.CPU.Features, tt.features)
			}
			if slices.Contains(it.Regions, "me-central-1") != tt.meCentral {
				t.Errorf("me-central-1 in regions = %v, want %v", !tt.meCentral, tt.meCentral)
			}
			if tt.gpu == "" {
				if it.GPU != nil {
					t.Errorf("unexpected GPU %+v", it.GPU)
				}
				return
			}
			g := it.GPU
			if g == nil || g.Model != tt.gpu || g.Count != tt.gpus || g.MemoryGiB != tt.gib || g.PeakBF16TFLOPS != tt.bf16 || g.MemoryBandwidthGBps != tt.hbm || g.Interconnect != tt.link {
				t.Errorf("GPU = %+v", g)
			}
		})
	}
}

// Prices are honest: p5en is listed in me-central-1 without a captured
// figure, p4d/p5 are unlisted, and reference prices from elsewhere are
// estimates.
func TestEmbeddedPrices(t *testing.T) {
	c := embedded(t)
	for _, name := range []string{"p5en.48xlarge", "p5.48xlarge", "p4d.24xlarge"} {
		it, _ := c.Lookup(name)
		if _, _, ok := it.HourlyUSD("me-central-1"); ok {
			t.Errorf("%s carries a price; none is known for me-central-1", name)
		}
		if it.Price == nil || it.Price.Source == "" {
			t.Errorf("%s: price note missing", name)
		}
	}
	it, _ := c.Lookup("g5.xlarge")
	usd, est, ok := it.HourlyUSD("me-central-1")
	if !ok || !est || usd <= 0 {
		t.Errorf("g5.xlarge price = %v, estimate %v, ok %v", usd, est, ok)
	}
}

func ptr[T any](v T) *T { return &v }

func TestFind(t *testing.T) {
	c := embedded(t)
	tests := []struct {
		name string
		f    Filter
		want []string // exact, in order; nil means check wantSome only
		some []string
		none []string
	}{
		{name: "H100", f: Filter{GPUModel: "h100"}, want: []string{"p5.48xlarge"}},
		{name: "H200 offered in UAE", f: Filter{GPUModel: "H200", Region: "me-central-1"}, want: []string{"p5en.48xlarge"}},
		{name: "8 GPUs of 80 GiB", f: Filter{MinGPUCount: 8, MinGPUMemoryGiB: 80}, want: []string{"p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"}},
		{name: "4 L40S", f: Filter{GPUModel: "L40S", MinGPUCount: 4}, want: []string{"g6e.12xlarge", "g6e.24xlarge", "g6e.48xlarge"}},
		{name: "EFA GPUs in UAE", f: Filter{MinGPUCount: 1, EFA: ptr(true), Region: "me-central-1"}, some: []string{"p5en.48xlarge", "g5.48xlarge", "g6.48xlarge"}, none: []string{"g5.xlarge", "p5.48xlarge"}},
		{name: "no EFA", f: Filter{EFA: ptr(false)}, some: []string{"c7i.large"}, none: []string{"p5.48xlarge"}},
		{name: "AMX", f: Filter{CPUFeatures: []string{"amx_tile", "AMX_BF16"}}, some: []string{"c7i.large", "m7i.48xlarge", "p5en.48xlarge"}, none: []string{"c6i.large", "g5.xlarge", "c7g.large"}},
		{name: "arm64", f: Filter{Architecture: "arm64"}, some: []string{"c7g.large", "m7g.16xlarge"}, none: []string{"c7i.large"}},
		{name: "arm64 in UAE offline", f: Filter{Architecture: "arm64", Region: "me-central-1"}, some: []string{"m7g.large"}, none: []string{"c7g.large"}},
		{name: "offered only with no region matches nothing", f: Filter{OfferedOnly: true}, want: []string{}},
		{name: "unknown model", f: Filter{GPUModel: "B200"}, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, it := range c.Find(tt.f) {
				got = append(got, it.Name)
			}
			if tt.want != nil && !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("Find = %v, want %v", got, tt.want)
			}
			for _, n := range tt.some {
				if !slices.Contains(got, n) {
					t.Errorf("Find = %v, want it to include %s", got, n)
				}
			}
			for _, n := range tt.none {
				if slices.Contains(got, n) {
					t.Errorf("Find = %v, want it to exclude %s", got, n)
				}
			}
		})
	}
}

func TestFindOrder(t *testing.T) {
	var got []string
	for _, it := range embedded(t).Find(Filter{GPUModel: "A10G"}) {
		got = append(got, it.Name)
	}
	want := []string{"g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge", "g5.12xlarge", "g5.16xlarge", "g5.24xlarge", "g5.48xlarge"}
	if !slices.Equal(got, want) {
		t.Fatalf("order = %v, want %v", got, want)
	}
}

func TestCheapest(t *testing.T) {
	c := embedded(t)
	it, est, ok := c.Cheapest(Filter{CPUFeatures: []string{"amx_tile"}, Region: "me-central-1"})
	if !ok || it.Name != "c7i.large" || !est {
		t.Fatalf("Cheapest = %s estimate=%v ok=%v, want c7i.large (estimate)", it.Name, est, ok)
	}
	if _, _, ok := c.Cheapest(Filter{GPUModel: "H100"}); ok {
		t.Error("Cheapest chose a type without a price")
	}
}

func TestOfferedInOffline(t *testing.T) {
	c := embedded(t)
	tests := []struct {
		name, zone string
		want       bool
	}{
		{"p5en.48xlarge", "mec1-az1", true},
		{"p5.48xlarge", "mec1-az1", false},
		{"p5.48xlarge", "use1-az1", true},
		{"nope.large", "mec1-az1", false},
		{"g5.xlarge", "not-a-zone", false},
	}
	for _, tt := range tests {
		if got := c.OfferedIn(tt.name, tt.zone); got != tt.want {
			t.Errorf("OfferedIn(%s, %s) = %v, want %v", tt.name, tt.zone, got, tt.want)
		}
	}
}

// Results are copies: a caller that edits one cannot change the catalog that
// other goroutines read.
func TestLookupReturnsCopies(t *testing.T) {
	c := embedded(t)
	a, _ := c.Lookup("p5en.48xlarge")
	a.GPU.Count = 1
	a.CPU.Features[0] = "changed"
	a.Regions[0] = "changed"
	b, _ := c.Lookup("p5en.48xlarge")
	if b.GPU.Count != 8 || b.CPU.Features[0] == "changed" || b.Regions[0] == "changed" {
		t.Fatal("Lookup shares memory with the catalog")
	}
	f := c.Find(Filter{GPUModel: "H200"})
	f[0].GPU.Model = "changed"
	if g, _ := c.Lookup(f[0].Name); g.GPU.Model != "H200" {
		t.Fatal("Find shares memory with the catalog")
	}
}

func TestConcurrentReads(t *testing.T) {
	c := embedded(t)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				c.Find(Filter{MinGPUCount: 1, Region: "me-central-1"})
				c.Lookup("g6.xlarge")
				c.OfferedIn("g6.xlarge", "mec1-az1")
			}
		}()
	}
	wg.Wait()
}

func TestFamily(t *testing.T) {
	for in, want := range map[string]string{"p5en.48xlarge": "p5en", "c7i.metal-24xl": "c7i", "x": "x"} {
		if got := Family(in); got != want {
			t.Errorf("Family(%q) = %q, want %q", in, got, want)
		}
	}
	if !strings.Contains(embedded(t).Source(), "moto") {
		t.Error("catalog source does not name its snapshot")
	}
}
