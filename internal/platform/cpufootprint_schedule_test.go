package platform

import (
	"math"
	"strings"
	"testing"
	"time"
)

func iptr(v int) *int { return &v }

func TestScheduledActionsWindow(t *testing.T) {
	base := GroupSize{Min: 1, Max: 4, Desired: 2}
	night := Schedule{Name: "nights", Recurrence: "0 20 * * MON-FRI", Duration: 11 * time.Hour, Min: iptr(0), Max: iptr(0), Desired: iptr(0)}
	acts, err := ScheduledActions(base, []Schedule{night})
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 2 {
		t.Fatalf("%d actions, want 2", len(acts))
	}
	start, end := acts[0], acts[1]
	if start.Name != "nights" || start.Recurrence != "0 20 * * 1-5" || start.TimeZone != "Asia/Dubai" || *start.Desired != 0 {
		t.Errorf("start action %+v", start)
	}
	if end.Name != "nights-end" || end.Recurrence != "0 7 * * 2-6" || *end.Min != 1 || *end.Max != 4 || *end.Desired != 2 {
		t.Errorf("end action %+v", end)
	}
}

func TestAverageInstances(t *testing.T) {
	base := GroupSize{Min: 1, Max: 4, Desired: 2}
	zero := iptr(0)
	cases := []struct {
		name string
		ss   []Schedule
		want float64
	}{
		{"no schedule", nil, 2},
		// Off 20:00-07:00 on the five working nights (55 h) and all weekend:
		// Friday 20:00 to Monday 07:00 is covered by a second window.
		{"nights", []Schedule{{Name: "n", Recurrence: "0 20 * * 1-4", Duration: 11 * time.Hour, Min: zero, Max: zero, Desired: zero}}, 2 * (168 - 44) / 168.0},
		{"nights and weekend", []Schedule{
			{Name: "n", Recurrence: "0 20 * * 1-4", Duration: 11 * time.Hour, Min: zero, Max: zero, Desired: zero},
			{Name: "w", Recurrence: "0 20 * * 5", Duration: 59 * time.Hour, Min: zero, Max: zero, Desired: zero},
		}, 2 * (168 - 44 - 59) / 168.0},
		// One-way actions: up at 08:00, down at 18:00, every day.
		{"one-way pair", []Schedule{
			{Name: "up", Recurrence: "0 8 * * *", Desired: iptr(4)},
			{Name: "down", Recurrence: "0 18 * * *", Desired: iptr(1)},
		}, (10*4 + 14*1) / 24.0},
		// Desired is kept within min and max: a max of 1 caps desired 2.
		{"clamped", []Schedule{{Name: "cap", Recurrence: "0 0 * * *", Duration: 12 * time.Hour, Max: iptr(1), Min: iptr(0)}}, (12*1 + 12*2) / 24.0},
		// Time zone matters only for when, not how long.
		{"utc window", []Schedule{{Name: "u", Recurrence: "0 0 * * *", TimeZone: "UTC", Duration: 6 * time.Hour, Min: zero, Max: zero, Desired: zero}}, 2 * 18 / 24.0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if ps := ScheduleProblems("schedule", base, tc.ss); len(ps) > 0 {
				t.Fatalf("problems: %+v", ps)
			}
			acts, err := ScheduledActions(base, tc.ss)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AverageInstances(base, acts)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("average %.6f instances, want %.6f", got, tc.want)
			}
		})
	}
}

func TestScheduleProblems(t *testing.T) {
	base := GroupSize{Min: 1, Max: 4, Desired: 2}
	cases := []struct {
		s    Schedule
		path string
		want string
	}{
		{Schedule{Name: "", Recurrence: "0 0 * * *", Desired: iptr(1)}, "schedule[0].name", "letters"},
		{Schedule{Name: "a", Recurrence: "0 25 * * *", Desired: iptr(1)}, "schedule[0].recurrence", "hour"},
		{Schedule{Name: "a", Recurrence: "0 0 * * *", TimeZone: "Mars/Olympus", Desired: iptr(1)}, "schedule[0].time_zone", "IANA"},
		{Schedule{Name: "a", Recurrence: "0 0 * * *"}, "schedule[0]", "at least one"},
		{Schedule{Name: "a", Recurrence: "0 0 * * *", Desired: iptr(-1)}, "schedule[0].desired_capacity", "0 or more"},
		{Schedule{Name: "a", Recurrence: "0 0 * * *", Desired: iptr(9)}, "schedule[0].desired_capacity", "outside min_size 1 and max_size 4"},
		{Schedule{Name: "a", Recurrence: "0 0 * * *", Min: iptr(5)}, "schedule[0]", "above max_size"},
		{Schedule{Name: "a", Recurrence: "0 20 1 * *", Duration: 11 * time.Hour, Desired: iptr(1)}, "schedule[0].duration", "crosses midnight"},
	}
	for _, tc := range cases {
		ps := ScheduleProblems("schedule", base, []Schedule{tc.s})
		found := false
		for _, p := range ps {
			found = found || (p.Path == tc.path && strings.Contains(p.Detail, tc.want))
		}
		if !found {
			t.Errorf("%+v: problems %+v, want %s: %q", tc.s, ps, tc.path, tc.want)
		}
	}
	dup := ScheduleProblems("schedule", base, []Schedule{
		{Name: "a", Recurrence: "0 0 * * *", Desired: iptr(1)},
		{Name: "a", Recurrence: "0 1 * * *", Desired: iptr(1)},
	})
	if len(dup) != 1 || dup[0].Path != "schedule[1].name" {
		t.Errorf("duplicate names: %+v", dup)
	}
}
