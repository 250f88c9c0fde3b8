package platform

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

var meZoneIDs = []string{"mec1-az1", "mec1-az3"}

func embeddedCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func footprint() CPUFootprintSpec {
	return CPUFootprintSpec{
		Name:         "smb-inference",
		Requirements: CPURequirements{MinVCPUs: 2, MinMemoryGiB: 4, CPUFeatures: []string{"amx_tile", "amx_bf16"}},
		CapacityType: CapacityOnDemandOnly,
		Size:         GroupSize{Min: 1, Max: 3, Desired: 2},
	}
}

func TestCPUFootprintDecide(t *testing.T) {
	cat := embeddedCatalog(t)
	s := footprint()
	zero := 0
	s.Schedules = []Schedule{{Name: "nights", Recurrence: "0 20 * * MON-FRI", Duration: 11 * time.Hour, Min: &zero, Max: &zero, Desired: &zero}}
	d, err := s.Decide(cat, meZoneIDs)
	if err != nil {
		t.Fatal(err)
	}
	if d.InstanceType != "c7i.large" {
		t.Fatalf("chose %s (%s)", d.InstanceType, d.Reason)
	}
	// A cheaper arm64 type without AMX is rejected, and said so.
	if len(d.Rejected) == 0 || !strings.Contains(strings.Join(d.Rejected, "\n"), "lacks amx_tile, amx_bf16") {
		t.Errorf("rejected = %v", d.Rejected)
	}
	if !d.PriceKnown || !d.Estimate || d.HourlyUSD != 0.08925 {
		t.Errorf("price %+v", d)
	}
	if want := 0.08925 * 2 * HoursPerMonth; math.Abs(d.MonthlyAtDesired-want) > 1e-9 {
		t.Errorf("monthly at desired %.4f, want %.4f", d.MonthlyAtDesired, want)
	}
	// Off 11 h on five nights a week.
	if want := 0.08925 * 2 * (168 - 55) / 168.0 * HoursPerMonth; math.Abs(d.MonthlyScheduled-want) > 1e-9 {
		t.Errorf("monthly with schedule %.4f, want %.4f", d.MonthlyScheduled, want)
	}
	if len(d.ScheduledActions) != 2 || !strings.Contains(d.CostAssumptionNote, "estimate") {
		t.Errorf("actions %v, note %q", d.ScheduledActions, d.CostAssumptionNote)
	}
	if d.Candidates[0] != "c7i.large" || len(d.Candidates) < 3 {
		t.Errorf("candidates %v", d.Candidates)
	}
}

func TestCPUFootprintDecideExplicit(t *testing.T) {
	cat := embeddedCatalog(t)
	cases := []struct {
		typ, wantErr string
	}{
		{"m7i.large", ""},
		{"m7g.large", "lacks amx_tile"},       // does not meet the requirements
		{"c7g.large", "not offered"},          // not offered in me-central-1
		{"x9.large", "is not in the catalog"}, // unknown
	}
	for _, tc := range cases {
		s := footprint()
		s.InstanceType = tc.typ
		d, err := s.Decide(cat, meZoneIDs)
		if tc.wantErr == "" {
			if err != nil || d.InstanceType != tc.typ || !strings.Contains(d.Reason, "explicitly") {
				t.Errorf("%s: %+v, %v", tc.typ, d, err)
			}
			continue
		}
		var pe *RefusedError
		if !errors.As(err, &pe) || pe.Problems[0].Path != "instance_type" || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: err = %v, want instance_type: %q", tc.typ, err, tc.wantErr)
		}
	}
}

func TestCPUFootprintDecideNoMatch(t *testing.T) {
	s := footprint()
	s.Requirements.Architecture = "arm64"
	_, err := s.Decide(embeddedCatalog(t), meZoneIDs)
	var pe *RefusedError
	if !errors.As(err, &pe) || pe.Problems[0].Path != "requirements" || !strings.Contains(err.Error(), "nearest") {
		t.Fatalf("err = %v", err)
	}
}

func TestCPUFootprintValidateStatic(t *testing.T) {
	one := 1
	cases := []struct {
		mod  func(*CPUFootprintSpec)
		path string
	}{
		{func(s *CPUFootprintSpec) { s.Name = "bad name" }, "name"},
		{func(s *CPUFootprintSpec) { s.Requirements.CPUFeatures = []string{"avx2", "amx-tile"} }, "requirements.cpu_features[1]"},
		{func(s *CPUFootprintSpec) { s.Requirements.Architecture = "riscv" }, "requirements.architecture"},
		{func(s *CPUFootprintSpec) { s.Requirements.MaxHourlyPrice = -1 }, "requirements.max_hourly_price"},
		{func(s *CPUFootprintSpec) { s.CapacityType = "reserved" }, "capacity_type"},
		{func(s *CPUFootprintSpec) { s.OnDemandBase = 1 }, "on_demand_base"},
		{func(s *CPUFootprintSpec) { s.Size = GroupSize{Min: 2, Max: 1, Desired: 1} }, "min_size"},
		{func(s *CPUFootprintSpec) { s.Size = GroupSize{Min: 0, Max: 1, Desired: 2} }, "desired_capacity"},
		{func(s *CPUFootprintSpec) { s.Size = GroupSize{Min: 0, Max: 500, Desired: 2} }, "max_size"},
		{func(s *CPUFootprintSpec) {
			s.Schedules = []Schedule{{Name: "x", Recurrence: "0 0 * *", Desired: &one}}
		}, "schedule[0].recurrence"},
	}
	for _, tc := range cases {
		s := footprint()
		tc.mod(&s)
		ps := ValidateCPUFootprint(s, s.Unknown)
		if len(ps) != 1 || ps[0].Path != tc.path {
			t.Errorf("want one problem at %s, got %+v", tc.path, ps)
		}
	}
	s := footprint()
	if ps := ValidateCPUFootprint(s, s.Unknown); len(ps) != 0 {
		t.Errorf("valid spec: %+v", ps)
	}
	// Unknown at plan: not checked, never treated as absent.
	s.Size = GroupSize{Min: 2, Max: 1}
	s.Unknown = []string{"desired_capacity"}
	if ps := ValidateCPUFootprint(s, s.Unknown); len(ps) != 0 {
		t.Errorf("sizes with an unknown member are checked at apply: %+v", ps)
	}
}

func TestCPUDecisionShown(t *testing.T) {
	d := CPUDecision{HourlyUSD: 0.089254, MonthlyAtDesired: 130.30999, MonthlyScheduled: 87.654449}
	h, m, s := d.Shown()
	if h != 0.0893 || m != 130.31 || s != 87.6544 {
		t.Errorf("Shown() = %v, %v, %v; want 0.0893, 130.31, 87.6544", h, m, s)
	}
}
