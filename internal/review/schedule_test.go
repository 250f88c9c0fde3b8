package review

import (
	"math"
	"strings"
	"testing"
)

func f(v float64) *float64 { return &v }

func TestAverageCapacity(t *testing.T) {
	tests := []struct {
		name              string
		min, max, desired float64
		schedules         []Scaled
		want              float64
	}{
		{"no schedule: desired all week", 0, 4, 2, nil, 2},
		{"desired above max is clamped", 0, 3, 5, nil, 3},
		{"desired below min is raised", 2, 4, 1, nil, 2},
		{
			// Off from 20:00 to 07:00 on working days and all weekend:
			// on 13 h x 5 days = 65 of 168 hours.
			"scale to zero off-hours", 0, 4, 4,
			[]Scaled{{Cron: "0 20 * * 1-5", Min: f(0), Max: f(0), Desired: f(0)}, {Cron: "0 7 * * 1-5", Max: f(4), Desired: f(4)}},
			4 * 65.0 / 168,
		},
		{
			// One block with a duration: off from 20:00 for 11 h on
			// working days, back to the group's own sizes at 07:00; on
			// all weekend: 168 - 5 x 11 = 113 hours.
			"scale to zero with a duration", 1, 4, 2,
			[]Scaled{{Cron: "0 20 * * 1-5", Min: f(0), Max: f(0), Desired: f(0), Duration: 11 * 60}},
			2 * 113.0 / 168,
		},
		{
			// A window that wraps around the end of the week (Sunday
			// 23:00 for 2 h) comes back on Monday 01:00.
			"a duration across the week's end", 0, 1, 1,
			[]Scaled{{Cron: "0 23 * * 0", Desired: f(0), Duration: 120}},
			166.0 / 168,
		},
		{
			// Half an hour of one instance each day at 12:00-12:30.
			"minute resolution", 0, 1, 0,
			[]Scaled{{Cron: "0 12 * * *", Desired: f(1)}, {Cron: "30 12 * * *", Desired: f(0)}},
			7 * 0.5 / 168,
		},
		{
			"7 and 0 are both Sunday; names work", 0, 2, 0,
			[]Scaled{{Cron: "0 0 * * 7", Desired: f(2)}, {Cron: "0 0 * * MON", Desired: f(0)}},
			2 * 24.0 / 168,
		},
		{
			"a schedule's desired is clamped by the group's max", 0, 2, 0,
			[]Scaled{{Cron: "0 0 * * *", Desired: f(10)}},
			2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AverageCapacity(tt.min, tt.max, tt.desired, tt.schedules)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("AverageCapacity = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseCronErrors(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"0 20 * *", "want 5 fields"},
		{"0 20 1 * *", "only weekly schedules"},
		{"0 20 * 6 *", "only weekly schedules"},
		{"61 20 * * *", "minute"},
		{"0 24 * * *", "hour"},
		{"0 20 * * 8", "day of week"},
		{"0 20 * * FRI-MON", "runs backwards"},
		{"*/0 * * * *", "bad step"},
		{"a * * * *", "not a number"},
	}
	for _, tt := range tests {
		_, err := ParseCron(tt.expr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseCron(%q) = %v, want an error containing %q", tt.expr, err, tt.want)
		}
	}
	for _, ok := range []string{"*/15 * * * *", "0 7 * * 1-5", "0 20 * * SUN,SAT", "5,35 0-6/2 * * *", "0 0 * * 0-7"} {
		if _, err := ParseCron(ok); err != nil {
			t.Errorf("ParseCron(%q): %v", ok, err)
		}
	}
}
