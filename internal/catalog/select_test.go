package catalog

import (
	"errors"
	"strings"
	"testing"
)

var meZones = []string{"mec1-az1", "mec1-az3"}

// synthetic builds a live catalog for me-central-1 from rows; a row with
// price 0 has no price.
func synthetic(rows ...InstanceType) *Catalog {
	c := &Catalog{region: "me-central-1", live: true, types: map[string]InstanceType{}}
	for _, r := range rows {
		r.Family = Family(r.Name)
		c.types[r.Name] = r
	}
	c.sortNames()
	return c
}

func row(name string, vcpus, mib int, arch string, usd float64, zones []string, features ...string) InstanceType {
	t := InstanceType{Name: name, VCPUs: vcpus, MemoryMiB: mib, Architecture: arch, ZoneIDs: zones, zonesLive: true, CPU: CPU{Features: features}}
	if usd > 0 {
		t.Price = &Price{USDPerHour: usd, Region: "me-central-1", Source: "test price"}
	}
	return t
}

func TestSelectEmbedded(t *testing.T) {
	c := embedded(t)
	cases := []struct {
		name   string
		req    Requirements
		want   string
		reject string // a cheaper type that must be listed as rejected
	}{
		{"smallest x86 with 2 vCPUs", Requirements{MinVCPUs: 2, Architecture: "x86_64"}, "c7i.large", ""},
		{"AMX never falls back to a cheaper type without it", Requirements{MinVCPUs: 2, CPUFeatures: []string{"amx_tile", "amx_bf16"}}, "c7i.large", "m7g.medium"},
		{"memory decides", Requirements{MinVCPUs: 2, MinMemoryGiB: 8, Architecture: "x86_64"}, "m7i.large", "c7i.large"},
		// c7g is not offered in me-central-1 in the snapshot: m7g is.
		{"arm64 offered in region", Requirements{MinVCPUs: 2, Architecture: "arm64"}, "m7g.large", ""},
		{"sve", Requirements{CPUFeatures: []string{"sve"}}, "m7g.medium", ""},
		{"budget", Requirements{MinVCPUs: 4, MaxHourlyUSD: 0.17}, "m7g.xlarge", "m7g.medium"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Select(c, tc.req, meZones)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Chosen.Name != tc.want {
				t.Fatalf("chose %s, want %s (reason: %s)", sel.Chosen.Name, tc.want, sel.Reason)
			}
			if !sel.Chosen.Qualifies() || !sel.Chosen.PriceKnown || !sel.Chosen.Estimate {
				t.Errorf("chosen %+v: want qualifying, priced, estimate (us-east-1 price)", sel.Chosen)
			}
			for _, q := range sel.Qualifying {
				if q.PriceKnown && q.USDPerHour < sel.Chosen.USDPerHour {
					t.Errorf("qualifying %s is cheaper than chosen %s", q.Name, sel.Chosen.Name)
				}
			}
			for _, r := range sel.RejectedCheaper {
				if r.Qualifies() || r.USDPerHour > sel.Chosen.USDPerHour {
					t.Errorf("rejected %s: qualifies %v, price %v > chosen %v", r.Name, r.Qualifies(), r.USDPerHour, sel.Chosen.USDPerHour)
				}
			}
			if tc.reject != "" {
				found := false
				for _, r := range sel.RejectedCheaper {
					found = found || r.Name == tc.reject
				}
				if !found {
					t.Errorf("%s not among rejected cheaper types %v", tc.reject, names(sel.RejectedCheaper))
				}
				if !strings.Contains(sel.Reason, "rejected") {
					t.Errorf("reason %q does not say what was rejected", sel.Reason)
				}
			}
			if !strings.Contains(sel.Reason, tc.want) {
				t.Errorf("reason %q does not name the choice", sel.Reason)
			}
		})
	}
}

func names(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestSelectNoMatch(t *testing.T) {
	_, err := Select(embedded(t), Requirements{MinVCPUs: 4, CPUFeatures: []string{"amx_tile"}, Architecture: "arm64"}, meZones)
	var nm *NoMatchError
	if !errors.As(err, &nm) {
		t.Fatalf("err = %v, want NoMatchError", err)
	}
	if len(nm.Nearest) == 0 || len(nm.Nearest) > 5 {
		t.Fatalf("nearest = %v", names(nm.Nearest))
	}
	for _, n := range nm.Nearest {
		if len(n.Missed) != 1 {
			t.Errorf("nearest %s missed %v; want exactly one requirement missed", n.Name, n.Missed)
		}
	}
	msg := err.Error()
	for _, want := range []string{"no instance type offered", "nearest:", "architecture: is x86_64, needs arm64", "cpu_features: lacks amx_tile"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
}

func TestSelectNotOffered(t *testing.T) {
	// Offered only in an excluded zone: not a candidate at all.
	c := synthetic(
		row("c7i.large", 2, 4096, "x86_64", 0.1, []string{"mec1-az2"}),
		row("m7i.large", 2, 8192, "x86_64", 0.2, []string{"mec1-az1", "mec1-az2"}),
	)
	sel, err := Select(c, Requirements{}, meZones)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Chosen.Name != "m7i.large" || strings.Join(sel.Chosen.ZoneIDs, ",") != "mec1-az1" {
		t.Fatalf("chose %s in %v, want m7i.large in mec1-az1", sel.Chosen.Name, sel.Chosen.ZoneIDs)
	}
	if sel.Chosen.Estimate {
		t.Error("a price for the catalog's region is not an estimate")
	}
}

func TestSelectTiesAndMissingPrices(t *testing.T) {
	rows := []InstanceType{
		row("b1.large", 2, 4096, "x86_64", 0.10, meZones),
		row("a1.large", 2, 4096, "x86_64", 0.10, meZones),
		row("a1.xlarge", 4, 4096, "x86_64", 0.10, meZones),
		row("z0.nano", 1, 512, "x86_64", 0, meZones), // no price
		row("t3.micro", 2, 1024, "x86_64", 0.01, meZones),
	}
	c := synthetic(rows...)
	for i := 0; i < 20; i++ {
		sel, err := Select(c, Requirements{}, meZones)
		if err != nil {
			t.Fatal(err)
		}
		got := names(sel.Qualifying)
		// Priced first by price, ties by vCPUs, memory, name; the unpriced
		// type last; the burstable one rejected (not allowed by default).
		if strings.Join(got, ",") != "a1.large,b1.large,a1.xlarge,z0.nano" {
			t.Fatalf("qualifying order %v", got)
		}
		if strings.Join(names(sel.RejectedCheaper), ",") != "t3.micro" {
			t.Fatalf("rejected cheaper %v, want t3.micro", names(sel.RejectedCheaper))
		}
	}
	sel, err := Select(c, Requirements{Burstable: true}, meZones)
	if err != nil || sel.Chosen.Name != "t3.micro" {
		t.Fatalf("burstable allowed: chose %s, %v", sel.Chosen.Name, err)
	}
	// Only an unpriced type qualifies: chosen, and the reason says so.
	sel, err = Select(c, Requirements{MaxHourlyUSD: 0, MinMemoryGiB: 0.5, Architecture: "x86_64", MinVCPUs: 1, CPUFeatures: nil}, meZones)
	if err != nil || sel.Chosen.Name != "a1.large" {
		t.Fatalf("chose %s, %v", sel.Chosen.Name, err)
	}
	only := synthetic(row("z0.nano", 1, 512, "x86_64", 0, meZones), row("a1.large", 2, 4096, "arm64", 0.1, meZones))
	sel, err = Select(only, Requirements{Architecture: "x86_64"}, meZones)
	if err != nil || sel.Chosen.Name != "z0.nano" || !strings.Contains(sel.Reason, "not by price") {
		t.Fatalf("chose %s (%q), %v", sel.Chosen.Name, sel.Reason, err)
	}
	// A price limit never admits a type without a price.
	_, err = Select(only, Requirements{Architecture: "x86_64", MaxHourlyUSD: 1}, meZones)
	if err == nil || !strings.Contains(err.Error(), "max_hourly_price: price unknown") {
		t.Fatalf("err = %v", err)
	}
}

func TestEvaluate(t *testing.T) {
	c := embedded(t)
	cand, ok := Evaluate(c, "c6i.large", Requirements{CPUFeatures: []string{"amx_tile"}}, meZones)
	if !ok {
		t.Fatal("c6i.large unknown")
	}
	if cand.Qualifies() || !strings.Contains(strings.Join(cand.Missed, ";"), "lacks amx_tile") {
		t.Errorf("missed = %v", cand.Missed)
	}
	if _, ok := Evaluate(c, "x9.huge", Requirements{}, meZones); ok {
		t.Error("unknown type reported as known")
	}
}

func TestBurstable(t *testing.T) {
	for name, want := range map[string]bool{"t3.micro": true, "t4g.nano": true, "t3a.large": true, "trn1.32xlarge": false, "c7i.large": false, "": false} {
		if Burstable(name) != want {
			t.Errorf("Burstable(%q) = %v", name, !want)
		}
	}
}
