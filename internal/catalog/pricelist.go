package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ListedPrice is one instance type's On-Demand Linux price as an AWS Price
// List bulk offer file lists it, with the processor features it states.
type ListedPrice struct {
	InstanceType string
	USDPerHour   float64
	// ProcessorFeatures are the file's words ("Intel AVX512", "Intel AMX").
	ProcessorFeatures []string
	// Flags are the /proc/cpuinfo flags those words imply at least.
	Flags []string
}

// PriceList is what a bulk offer file says about one region.
type PriceList struct {
	Region          string
	PublicationDate string
	Version         string
	Prices          map[string]ListedPrice
}

// offerFile is the part of an AmazonEC2 bulk offer file (offers/v1.0/aws/
// AmazonEC2/current/<region>/index.json) the catalog reads.
type offerFile struct {
	OfferCode       string `json:"offerCode"`
	Version         string `json:"version"`
	PublicationDate string `json:"publicationDate"`
	Products        map[string]struct {
		SKU           string            `json:"sku"`
		ProductFamily string            `json:"productFamily"`
		Attributes    map[string]string `json:"attributes"`
	} `json:"products"`
	Terms struct {
		OnDemand map[string]map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// ParsePriceList reads an AmazonEC2 bulk offer file and returns the
// On-Demand hourly price of every instance type in region for Linux, shared
// tenancy, no pre-installed software, no license. A type listed twice with
// different prices is an error: the filter would be wrong.
func ParsePriceList(r io.Reader, region string) (*PriceList, error) {
	var f offerFile
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return nil, fmt.Errorf("reading price list: %w", err)
	}
	if f.OfferCode != "AmazonEC2" {
		return nil, fmt.Errorf("reading price list: offer code %q, want AmazonEC2", f.OfferCode)
	}
	out := &PriceList{Region: region, PublicationDate: f.PublicationDate, Version: f.Version, Prices: map[string]ListedPrice{}}
	skus := make([]string, 0, len(f.Products))
	for sku := range f.Products {
		skus = append(skus, sku)
	}
	sort.Strings(skus)
	for _, sku := range skus {
		p := f.Products[sku]
		a := p.Attributes
		if p.ProductFamily != "Compute Instance" || a["regionCode"] != region || a["operatingSystem"] != "Linux" ||
			a["tenancy"] != "Shared" || a["preInstalledSw"] != "NA" || a["capacitystatus"] != "Used" ||
			(a["licenseModel"] != "" && a["licenseModel"] != "No License required") ||
			(a["marketoption"] != "" && a["marketoption"] != "OnDemand") || a["instanceType"] == "" {
			continue
		}
		usd, ok, err := onDemandHourly(f.Terms.OnDemand[sku])
		if err != nil {
			return nil, fmt.Errorf("reading price list: sku %s (%s): %w", sku, a["instanceType"], err)
		}
		if !ok {
			continue
		}
		lp := ListedPrice{InstanceType: a["instanceType"], USDPerHour: usd}
		for _, w := range strings.Split(a["processorFeatures"], ";") {
			if w = strings.TrimSpace(w); w != "" {
				lp.ProcessorFeatures = append(lp.ProcessorFeatures, w)
			}
		}
		lp.Flags = FeatureFlags(lp.ProcessorFeatures)
		if prev, dup := out.Prices[lp.InstanceType]; dup && prev.USDPerHour != usd {
			return nil, fmt.Errorf("reading price list: %s listed at $%g and $%g per hour", lp.InstanceType, prev.USDPerHour, usd)
		}
		out.Prices[lp.InstanceType] = lp
	}
	return out, nil
}

func onDemandHourly(terms map[string]struct {
	PriceDimensions map[string]struct {
		Unit         string            `json:"unit"`
		PricePerUnit map[string]string `json:"pricePerUnit"`
	} `json:"priceDimensions"`
}) (float64, bool, error) {
	keys := make([]string, 0, len(terms))
	for k := range terms {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		dims := terms[k].PriceDimensions
		dk := make([]string, 0, len(dims))
		for d := range dims {
			dk = append(dk, d)
		}
		sort.Strings(dk)
		for _, d := range dk {
			pd := dims[d]
			if pd.Unit != "Hrs" {
				continue
			}
			s, ok := pd.PricePerUnit["USD"]
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return 0, false, fmt.Errorf("price %q: not a price", s)
			}
			if v == 0 {
				continue // a zero-priced dimension is a placeholder, not a price
			}
			return v, true, nil
		}
	}
	return 0, false, nil
}

// FeatureFlags maps the Price List's processorFeatures words to the
// /proc/cpuinfo flags they imply at least. The words are coarse ("Intel
// AVX512" says nothing of VNNI or BF16), so the catalog keeps its own finer
// flags and uses these to cross-check them.
func FeatureFlags(words []string) []string {
	m := map[string][]string{
		"avx":    {"avx"},
		"avx2":   {"avx2"},
		"avx512": {"avx512f"},
		"amx":    {"amx_tile"},
	}
	var out []string
	for _, w := range words {
		f := strings.Fields(strings.ToLower(w))
		if len(f) == 0 {
			continue
		}
		out = append(out, m[f[len(f)-1]]...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

var (
	rowNameRE  = regexp.MustCompile(`^\s*\{"name": "([^"]+)"`)
	rowPriceRE = regexp.MustCompile(`"price": (\{[^{}]*\}|null)`)
	rowFeatRE  = regexp.MustCompile(`"features": \[([^\]]*)\]`)
)

// ApplyPriceList rewrites the embedded catalog data file (one instance type
// per line) with pl's prices, and returns it with a report: each price
// changed, each catalog type the file does not list, and each disagreement
// between the catalog's CPU features and the file's processorFeatures. Lines
// other than the rows' prices and the price source are left as they are.
func ApplyPriceList(data []byte, pl *PriceList) ([]byte, []string, error) {
	sourceID := "price-list-" + pl.Region
	sourceText := fmt.Sprintf("AWS Price List bulk offer file AmazonEC2/%s (version %s, published %s): On-Demand, Linux, shared tenancy", pl.Region, pl.Version, pl.PublicationDate)
	sourceLine, err := json.Marshal(sourceText)
	if err != nil {
		return nil, nil, err
	}
	var report []string
	lines := strings.Split(string(data), "\n")
	var out []string
	sourceDone := false
	for _, line := range lines {
		if strings.Contains(line, `"`+sourceID+`":`) && !rowNameRE.MatchString(line) {
			continue // rewritten below, after "sources": {
		}
		out = append(out, line)
		if strings.TrimSpace(line) == `"sources": {` {
			out = append(out, fmt.Sprintf("  %q: %s,", sourceID, sourceLine))
			sourceDone = true
		}
	}
	if !sourceDone {
		return nil, nil, fmt.Errorf("updating catalog: no \"sources\" object")
	}
	for i, line := range out {
		m := rowNameRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1]
		lp, listed := pl.Prices[name]
		if !listed {
			report = append(report, fmt.Sprintf("%s: not listed for %s, price kept", name, pl.Region))
			continue
		}
		price := fmt.Sprintf(`"price": {"usd_per_hour": %s, "region": %q, "estimate": false, "source": %q}`, strconv.FormatFloat(lp.USDPerHour, 'f', -1, 64), pl.Region, sourceID)
		if !rowPriceRE.MatchString(line) {
			return nil, nil, fmt.Errorf("updating catalog: row %s has no price field", name)
		}
		prev := rowPriceRE.FindString(line)
		if prev != price {
			report = append(report, fmt.Sprintf("%s: %s -> $%g/h", name, strings.TrimPrefix(prev, `"price": `), lp.USDPerHour))
		}
		out[i] = rowPriceRE.ReplaceAllLiteralString(line, price)
		if fm := rowFeatRE.FindStringSubmatch(line); fm != nil {
			var have []string
			if err := json.Unmarshal([]byte("["+fm[1]+"]"), &have); err != nil {
				return nil, nil, fmt.Errorf("updating catalog: row %s features: %w", name, err)
			}
			for _, f := range lp.Flags {
				if !slices.Contains(have, f) {
					report = append(report, fmt.Sprintf("%s: the price list says %q, the catalog lacks %s", name, strings.Join(lp.ProcessorFeatures, "; "), f))
				}
			}
			for _, f := range []string{"avx512f", "amx_tile"} {
				if slices.Contains(have, f) && len(lp.ProcessorFeatures) > 0 && !slices.Contains(lp.Flags, f) {
					report = append(report, fmt.Sprintf("%s: the catalog has %s, the price list (%q) does not say so", name, f, strings.Join(lp.ProcessorFeatures, "; ")))
				}
			}
		}
	}
	return []byte(strings.Join(out, "\n")), report, nil
}
