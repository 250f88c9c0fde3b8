package catalog

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed data/serving_prices.json
var servingPricesJSON []byte

type servingPriceFile struct {
	AsOf    string            `json:"as_of"`
	Sources map[string]string `json:"sources"`
	Prices  []struct {
		Name string `json:"name"`
		Price
	} `json:"prices"`
}

// ServingPrices are the embedded SageMaker hosting (ml.*) On-Demand hourly
// prices, by instance type, each with its region, source and whether it is
// an estimate; asOf is the date of the data.
func ServingPrices() (prices map[string]Price, asOf string, err error) {
	var f servingPriceFile
	if err := json.Unmarshal(servingPricesJSON, &f); err != nil {
		return nil, "", fmt.Errorf("reading embedded serving prices: %w", err)
	}
	prices = make(map[string]Price, len(f.Prices))
	for _, p := range f.Prices {
		src, ok := f.Sources[p.Source]
		if !ok {
			return nil, "", fmt.Errorf("reading embedded serving prices: %s: unknown source %q", p.Name, p.Source)
		}
		if _, dup := prices[p.Name]; dup || p.Name == "" || p.USDPerHour <= 0 {
			return nil, "", fmt.Errorf("reading embedded serving prices: duplicate, empty or unpriced row %q", p.Name)
		}
		p.Price.Source = src
		prices[p.Name] = p.Price
	}
	return prices, f.AsOf, nil
}
