package platform_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// TestDecideCPUFootprint decides against the emulator's live offerings in
// me-central-1, with a zone excluded by residency.
func TestDecideCPUFootprint(t *testing.T) {
	h := acctest.SetupEmulator(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := platform.Open(ctx, platform.Config{Region: acctest.Region, Endpoints: h.Endpoints(),
		Residency: residency.PolicyConfig{Jurisdiction: "AE", ExcludedZoneIDs: []string{"mec1-az2"}}})
	if err != nil {
		t.Fatal(err)
	}
	spec := platform.CPUFootprintSpec{
		Name:         "smb",
		Requirements: platform.CPURequirements{MinVCPUs: 2, CPUFeatures: []string{"amx_tile"}},
		CapacityType: platform.CapacityOnDemandOnly,
		Size:         platform.GroupSize{Min: 0, Max: 2, Desired: 1},
	}
	d, ok, err := env.DecideCPUFootprint(ctx, spec)
	if err != nil || !ok {
		t.Fatalf("decide: %v, %v", ok, err)
	}
	if !strings.HasPrefix(d.InstanceType, "c7i.") && !strings.HasPrefix(d.InstanceType, "m7i.") {
		t.Errorf("chose %s: want a type with AMX (%s)", d.InstanceType, d.Reason)
	}
	for _, z := range d.ZoneIDs {
		if z == "mec1-az2" {
			t.Errorf("zones %v include the excluded mec1-az2", d.ZoneIDs)
		}
	}
	if len(d.ZoneIDs) == 0 || d.MonthlyAtDesired <= 0 {
		t.Errorf("decision %+v", d)
	}

	// An unknown requirement: decided at apply, not rejected.
	spec.Unknown = []string{"requirements.cpu_features"}
	if _, ok, err := env.DecideCPUFootprint(ctx, spec); ok || err != nil {
		t.Errorf("unknown requirement: ok %v, err %v; want decided later", ok, err)
	}

	// Bad input: the attribute path, before any AWS call.
	spec.Unknown = nil
	spec.Size = platform.GroupSize{Min: 3, Max: 2, Desired: 2}
	_, _, err = env.DecideCPUFootprint(ctx, spec)
	var pe *platform.ProblemsError
	if !errors.As(err, &pe) || pe.Problems[0].Path != "min_size" {
		t.Errorf("err = %v, want a problem at min_size", err)
	}
}
