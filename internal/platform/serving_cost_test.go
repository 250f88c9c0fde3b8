package platform

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestServingEndpointCost(t *testing.T) {
	s := ServingEndpointSpec{Name: "fraud", Variants: []ServingVariant{
		{Name: "a", InstanceType: "ml.m5.large", InitialInstanceCount: 2},
		{Name: "b", InstanceType: "ml.g6.xlarge", InitialInstanceCount: 1, Autoscaling: &ServingAutoscaling{Min: 1, Max: 4, TargetInvocations: 100}},
	}}
	c, ok, err := ServingEndpointCostOf(s, "me-central-1", nil)
	if err != nil || !ok || !c.Known {
		t.Fatalf("cost %+v ok %v: %v", c, ok, err)
	}
	want := math.Round((2*0.115+1*1.1267)*HoursPerMonth*100) / 100 // 990.59 at 730 h
	if c.MonthlyUSD != want {
		t.Errorf("monthly %g, want %g", c.MonthlyUSD, want)
	}
	for _, s := range []string{"estimate", "us-east-1", fmt.Sprintf("x %.0f h", HoursPerMonth), "autoscales between 1 and 4"} {
		if !strings.Contains(c.Source, s) {
			t.Errorf("source %q lacks %q", c.Source, s)
		}
	}

	sl := ServingEndpointSpec{Name: "small", Variants: []ServingVariant{{Name: "s", Serverless: &ServingServerless{MemoryMB: 2048, MaxConcurrency: 5}}}}
	c, ok, err = ServingEndpointCostOf(sl, "me-central-1", nil)
	if err != nil || !ok || c.MonthlyUSD != 0 || !strings.Contains(c.Source, "priced per use") {
		t.Errorf("serverless: %+v ok %v: %v", c, ok, err)
	}

	un := ServingEndpointSpec{Name: "x", Variants: []ServingVariant{{Name: "a", InstanceType: "ml.r7i.large", InitialInstanceCount: 1}}}
	if c, ok, _ = ServingEndpointCostOf(un, "me-central-1", nil); !ok || c.Known || !strings.Contains(c.Source, "no price for ml.r7i.large") {
		t.Errorf("unpriced type: %+v ok %v", c, ok)
	}
	if _, ok, _ = ServingEndpointCostOf(s, "me-central-1", []string{"variants[1].initial_instance_count"}); ok {
		t.Error("a count known only at apply priced at plan")
	}
}
