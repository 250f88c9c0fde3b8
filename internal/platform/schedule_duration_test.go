package platform

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestScheduleDuration(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"", 0, false}, {"11h", 11 * time.Hour, false}, {"90m", 90 * time.Minute, false}, {"1h30m", 90 * time.Minute, false},
		{"11h0m0s", 11 * time.Hour, false}, {"30s", 0, true}, {"90m30s", 0, true}, {"-1h", 0, true}, {"0h", 0, true}, {"soon", 0, true}, {"11", 0, true},
	} {
		got, err := ParseScheduleDuration(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseScheduleDuration(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
	for _, tc := range []struct {
		d        time.Duration
		declared string
		want     string
	}{
		{0, "", ""}, {11 * time.Hour, "", "11h"}, {90 * time.Minute, "", "1h30m"}, {45 * time.Minute, "", "45m"}, {48 * time.Hour, "", "48h"},
		{90 * time.Minute, "90m", "90m"}, {11 * time.Hour, "660m", "660m"}, {11 * time.Hour, "10h", "11h"}, {11 * time.Hour, "soon", "11h"},
		{90 * time.Second, "", "1m30s"}, // never parsed so, but written faithfully
	} {
		if got := ScheduleDurationText(tc.d, tc.declared); got != tc.want {
			t.Errorf("ScheduleDurationText(%v, %q) = %q, want %q", tc.d, tc.declared, got, tc.want)
		}
	}
}

// FuzzScheduleDuration: whatever parses writes back, undeclared, as a text
// that parses to the same duration, and a declared text that parses is
// kept as written.
func FuzzScheduleDuration(f *testing.F) {
	for _, s := range []string{"11h", "90m", "1h30m", "0h", "30s", "-5m", "2562047h", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseScheduleDuration(s)
		if err != nil || d == 0 {
			return
		}
		text := ScheduleDurationText(d, "")
		if back, err := ParseScheduleDuration(text); err != nil || back != d {
			t.Fatalf("%q parses to %v, written back as %q, which parses to %v, %v", s, d, text, back, err)
		}
		if kept := ScheduleDurationText(d, s); kept != s {
			t.Fatalf("declared %q (%v) written back as %q", s, d, kept)
		}
	})
}

// TestFoldScheduledActions: the actions of a set of schedules fold back
// into those schedules (durations at their shortest, the default zone
// unset); an end action that does not restore the base, or names no start,
// stays an action of its own.
func TestFoldScheduledActions(t *testing.T) {
	n := func(v int) *int { return &v }
	base := GroupSize{Min: 1, Max: 3, Desired: 2}
	ss := []Schedule{
		{Name: "off-hours", Recurrence: "0 20 * * 1-5", Duration: 11 * time.Hour, Min: n(0), Max: n(0), Desired: n(0)},
		{Name: "weekend", Recurrence: "0 18 * * 5", TimeZone: "UTC", Duration: 60 * time.Hour, Max: n(1)},
		{Name: "monday", Recurrence: "30 7 * * 1", Min: n(2)},
		{Name: "late", Recurrence: "45 23 * * *", Duration: 90 * time.Minute, Desired: n(3)},
	}
	acts, err := ScheduledActions(base, ss)
	if err != nil {
		t.Fatal(err)
	}
	// Reversed: the order of the actions AWS lists does not matter.
	slices.Reverse(acts)
	got := FoldScheduledActions(base, acts)
	slices.Reverse(got)
	if !reflect.DeepEqual(got, ss) {
		t.Fatalf("folded:\n%+v\nwant:\n%+v", got, ss)
	}

	// Read during a window, or changed outside: the end action does not
	// restore the group's sizes, so nothing is folded.
	other := GroupSize{Min: 0, Max: 0}
	if got := FoldScheduledActions(other, acts[:2]); len(got) != 2 || got[0].Duration != 0 || got[1].Duration != 0 {
		t.Errorf("folded against other sizes: %+v", got)
	}
	// An end action alone, and one in another zone, stay as they are.
	lone := []ScheduledAction{{Name: "x-end", Recurrence: "0 7 * * *", TimeZone: "UTC", Min: n(1), Max: n(3), Desired: n(2)}}
	if got := FoldScheduledActions(base, lone); len(got) != 1 || got[0].Name != "x-end" || got[0].TimeZone != "UTC" {
		t.Errorf("lone end action: %+v", got)
	}
	zoned := []ScheduledAction{{Name: "x", Recurrence: "0 20 * * *", TimeZone: "Asia/Dubai", Max: n(0)}, {Name: "x-end", Recurrence: "0 7 * * *", TimeZone: "UTC", Min: n(1), Max: n(3), Desired: n(2)}}
	if got := FoldScheduledActions(base, zoned); len(got) != 2 || got[0].Duration != 0 || got[0].TimeZone != "" {
		t.Errorf("end action in another zone: %+v", got)
	}
}
