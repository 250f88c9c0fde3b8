package catalog

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

func fixturePriceList(t *testing.T) *PriceList {
	t.Helper()
	f, err := os.Open("testdata/pricelist-me-central-1.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pl, err := ParsePriceList(f, "me-central-1")
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func TestParsePriceList(t *testing.T) {
	pl := fixturePriceList(t)
	if pl.PublicationDate != "2026-11-01T00:00:00Z" || pl.Version != "20261101000000" {
		t.Errorf("meta %+v", pl)
	}
	want := map[string]float64{"c7i.large": 0.0995, "m7g.large": 0.091, "t3.micro": 0.0116, "m7i.large": 0.112}
	if len(pl.Prices) != len(want) {
		t.Errorf("prices %v, want %v", pl.Prices, want)
	}
	for name, usd := range want {
		if pl.Prices[name].USDPerHour != usd {
			t.Errorf("%s = %v, want %v", name, pl.Prices[name].USDPerHour, usd)
		}
	}
	if got := pl.Prices["c7i.large"].Flags; !slices.Equal(got, []string{"amx_tile", "avx", "avx2", "avx512f"}) {
		t.Errorf("c7i.large flags %v", got)
	}
	for _, bad := range []string{`{"offerCode": "AmazonS3"}`, `not json`, `{"offerCode": "AmazonEC2", "products": {"A": {"productFamily": "Compute Instance", "attributes": {"regionCode": "me-central-1", "instanceType": "x.large", "operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}}}, "terms": {"OnDemand": {"A": {"A.1": {"priceDimensions": {"A.1.1": {"unit": "Hrs", "pricePerUnit": {"USD": "cheap"}}}}}}}}`} {
		if _, err := ParsePriceList(strings.NewReader(bad), "me-central-1"); err == nil {
			t.Errorf("%.40s: want an error", bad)
		}
	}
}

func TestApplyPriceList(t *testing.T) {
	pl := fixturePriceList(t)
	out, report, err := ApplyPriceList(embeddedJSON, pl)
	if err != nil {
		t.Fatal(err)
	}
	var f file
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("the updated catalog is not valid JSON: %v", err)
	}
	if f.Sources["price-list-me-central-1"] == "" || !strings.Contains(f.Sources["price-list-me-central-1"], "published 2026-11-01") {
		t.Errorf("source %q", f.Sources["price-list-me-central-1"])
	}
	prices := map[string]*Price{}
	for _, r := range f.InstanceTypes {
		prices[r.Name] = r.Price
	}
	if p := prices["c7i.large"]; p.USDPerHour != 0.0995 || p.Estimate || p.Region != "me-central-1" || p.Source != "price-list-me-central-1" {
		t.Errorf("c7i.large price %+v", p)
	}
	if p := prices["c7i.xlarge"]; p.USDPerHour != 0.1785 || !p.Estimate {
		t.Errorf("c7i.xlarge (not listed) price %+v, want the estimate kept", p)
	}
	if _, ok := prices["t3.micro"]; ok {
		t.Error("a listed type the catalog lacks was added")
	}
	joined := strings.Join(report, "\n")
	for _, want := range []string{
		"c7i.large: {",
		"c7i.xlarge: not listed for me-central-1, price kept",
		"m7i.large: the catalog has avx512f, the price list",
		"m7i.large: the catalog has amx_tile, the price list",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("report lacks %q:\n%s", want, joined)
		}
	}
	// Applying again changes nothing and keeps one source line.
	again, _, err := ApplyPriceList(out, pl)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, out) {
		t.Error("a second application changed the file")
	}
	if strings.Count(string(again), `"price-list-me-central-1":`) != 1 {
		t.Error("the source line is duplicated")
	}
}

func FuzzParsePriceList(f *testing.F) {
	seed, err := os.ReadFile("testdata/pricelist-me-central-1.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"offerCode": "AmazonEC2"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pl, err := ParsePriceList(bytes.NewReader(b), "me-central-1")
		if err != nil {
			return
		}
		for name, p := range pl.Prices {
			if name == "" || !(p.USDPerHour > 0) || math.IsInf(p.USDPerHour, 0) {
				t.Fatalf("%q listed at %v", name, p.USDPerHour)
			}
		}
	})
}
