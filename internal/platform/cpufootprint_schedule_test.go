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

// TestAverageCapacity: the weekly average as the review prices a plan
// (numbers, weekly crons, windows in minutes), and the rules both callers
// share.
func TestAverageCapacity(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	type change struct {
		cron              string
		min, max, desired *float64
		window            time.Duration
	}
	tests := []struct {
		name              string
		min, max, desired float64
		changes           []change
		want              float64
	}{
		{"no schedule: desired all week", 0, 4, 2, nil, 2},
		{"desired above max is clamped", 0, 3, 5, nil, 3},
		{"desired below min is raised", 2, 4, 1, nil, 2},
		{
			// Off from 20:00 to 07:00 on working days and all weekend:
			// on 13 h x 5 days = 65 of 168 hours.
			"scale to zero off-hours", 0, 4, 4,
			[]change{{cron: "0 20 * * 1-5", min: f(0), max: f(0), desired: f(0)}, {cron: "0 7 * * 1-5", max: f(4), desired: f(4)}},
			4 * 65.0 / 168,
		},
		{
			// One block with a window: off from 20:00 for 11 h on
			// working days, back to the group's own sizes at 07:00; on
			// all weekend: 168 - 5 x 11 = 113 hours.
			"scale to zero with a window", 1, 4, 2,
			[]change{{cron: "0 20 * * 1-5", min: f(0), max: f(0), desired: f(0), window: 11 * time.Hour}},
			2 * 113.0 / 168,
		},
		{
			// A window that wraps around the end of the week (Sunday
			// 23:00 for 2 h) comes back on Monday 01:00.
			"a window across the week's end", 0, 1, 1,
			[]change{{cron: "0 23 * * 0", desired: f(0), window: 2 * time.Hour}},
			166.0 / 168,
		},
		{
			// A window of 8 days counts as one of a day.
			"a window of a week or more counts modulo a week", 0, 1, 1,
			[]change{{cron: "0 23 * * 0", desired: f(0), window: 8 * 24 * time.Hour}},
			(168 - 24) / 168.0,
		},
		{
			// A window that ends at its own next firing: the base comes
			// back first, then the change applies again.
			"a window of exactly a week", 0, 1, 1,
			[]change{{cron: "0 23 * * 0", desired: f(0), window: 7 * 24 * time.Hour}},
			0,
		},
		{
			// Windows with several firings a day, which no pair of
			// scheduled actions could write: off 10 minutes after each
			// hour's :00 and :30.
			"windows of a cron with many firings", 0, 1, 1,
			[]change{{cron: "0,30 * * * *", desired: f(0), window: 10 * time.Minute}},
			40.0 / 60,
		},
		{
			// The window that ends at 20:00 brings the base back before
			// the 20:00 change applies.
			"a window ends before a change at the same minute", 0, 4, 2,
			[]change{{cron: "0 20 * * *", desired: f(0)}, {cron: "0 8 * * *", desired: f(4), window: 12 * time.Hour}},
			4 * 12.0 / 24,
		},
		{
			// Half an hour of one instance each day at 12:00-12:30.
			"minute resolution", 0, 1, 0,
			[]change{{cron: "0 12 * * *", desired: f(1)}, {cron: "30 12 * * *", desired: f(0)}},
			7 * 0.5 / 168,
		},
		{
			"7 and 0 are both Sunday; names work", 0, 2, 0,
			[]change{{cron: "0 0 * * 7", desired: f(2)}, {cron: "0 0 * * MON", desired: f(0)}},
			2 * 24.0 / 168,
		},
		{
			"a change's desired is clamped by the group's max", 0, 2, 0,
			[]change{{cron: "0 0 * * *", desired: f(10)}},
			2,
		},
		{
			// Min 3 from Monday, max 2 from Tuesday: min wins.
			"min above max: min wins", 0, 4, 1,
			[]change{{cron: "0 0 * * 1", min: f(3)}, {cron: "0 0 * * 2", max: f(2)}},
			3,
		},
		{
			// Desired 5 every Monday 12:00; max 10 from Saturday 18:00
			// on: in steady state Monday's 5 is never cut to the group's
			// own max of 4.
			"steady state: a bound set late in the week", 0, 4, 1,
			[]change{{cron: "0 12 * * 1", desired: f(5)}, {cron: "0 18 * * 6", max: f(10)}},
			5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := make([]SizeChange, len(tt.changes))
			for i, c := range tt.changes {
				cr, err := ParseWeeklyCron(c.cron)
				if err != nil {
					t.Fatal(err)
				}
				changes[i] = SizeChange{Cron: cr, Min: c.min, Max: c.max, Desired: c.desired, Window: c.window}
			}
			got := AverageCapacity(Sizes{Min: tt.min, Max: tt.max, Desired: tt.desired}, changes)
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("AverageCapacity = %v, want %v", got, tt.want)
			}
			// Time zones move a weekly schedule, not its average.
			dubai, err := time.LoadLocation("Asia/Dubai")
			if err != nil {
				t.Fatal(err)
			}
			for i := range changes {
				changes[i].Location = dubai
			}
			if got := AverageCapacity(Sizes{Min: tt.min, Max: tt.max, Desired: tt.desired}, changes); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("in Asia/Dubai: AverageCapacity = %v, want %v", got, tt.want)
			}
		})
	}
}
