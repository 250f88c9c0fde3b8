package catalog

import (
	"strings"
	"testing"
)

// Every ml.* type the tests and examples use has a dated, sourced price;
// none is a quote for me-central-1, so each is marked an estimate.
func TestServingPrices(t *testing.T) {
	prices, asOf, err := ServingPrices()
	if err != nil {
		t.Fatal(err)
	}
	if asOf == "" {
		t.Fatal("serving prices carry no date")
	}
	for _, name := range []string{"ml.m5.large", "ml.m5.xlarge", "ml.c5.large", "ml.g5.xlarge", "ml.g6.xlarge", "ml.g6.2xlarge", "ml.p5.48xlarge"} {
		p, ok := prices[name]
		if !ok {
			t.Errorf("%s: no price", name)
			continue
		}
		if p.USDPerHour <= 0 || p.Source == "" || p.Region == "" {
			t.Errorf("%s: %+v: price, source and region required", name, p)
		}
		if p.Region != "me-central-1" && !p.Estimate {
			t.Errorf("%s: a %s price not marked an estimate", name, p.Region)
		}
		if p.Estimate && !strings.Contains(p.Source, "estimate") {
			t.Errorf("%s: source %q does not say it is an estimate", name, p.Source)
		}
	}
	if g5, g6 := prices["ml.g5.xlarge"].USDPerHour, prices["ml.g6.xlarge"].USDPerHour; g6 >= g5 {
		t.Errorf("ml.g6.xlarge %g not below ml.g5.xlarge %g (L4 lists below A10G)", g6, g5)
	}
}
