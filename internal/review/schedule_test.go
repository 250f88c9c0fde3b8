package review

import (
	"math"
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

// TestAverageCapacity checks what the review adds to the core's weekly
// average (platform.AverageCapacity, whose cases are in
// internal/platform/cpufootprint_schedule_test.go) and cron parser
// (platform.ParseWeeklyCron, internal/platform/cron_test.go): a plan's
// schedules, durations in minutes, and the weekly-only rule.
func TestAverageCapacity(t *testing.T) {
	tests := []struct {
		name              string
		min, max, desired float64
		schedules         []Scaled
		want              float64
	}{
		{"no schedule: desired all week", 0, 4, 2, nil, 2},
		{
			// Off 20:00-07:00 on working days by one block with a
			// duration (minutes): 168 - 5 x 11 = 113 hours on.
			"scale to zero with a duration", 1, 4, 2,
			[]Scaled{{Cron: "0 20 * * 1-5", Min: f(0), Max: f(0), Desired: f(0), Duration: 11 * 60}},
			2 * 113.0 / 168,
		},
		{
			"scale to zero off-hours", 0, 4, 4,
			[]Scaled{{Cron: "0 20 * * 1-5", Min: f(0), Max: f(0), Desired: f(0)}, {Cron: "0 7 * * 1-5", Max: f(4), Desired: f(4)}},
			4 * 65.0 / 168,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := averageCapacity(tt.min, tt.max, tt.desired, tt.schedules)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("averageCapacity = %v, want %v", got, tt.want)
			}
		})
	}
	for cron, want := range map[string]string{"0 20 1 * *": "only weekly schedules", "0 20 * * 8": "day of week", "0 20 * *": "want 5 fields"} {
		if _, err := averageCapacity(0, 1, 1, []Scaled{{Cron: "0 7 * * *", Desired: f(1)}, {Cron: cron, Desired: f(0)}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("schedule %q: err = %v, want %q", cron, err, want)
		}
	}
}
