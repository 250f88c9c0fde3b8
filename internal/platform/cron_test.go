package platform

import (
	"strings"
	"testing"
	"time"
)

func TestParseCron(t *testing.T) {
	dubai, err := time.LoadLocation("Asia/Dubai")
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04 Mon", s, dubai)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		expr  string
		canon string
		yes   []string
		no    []string
	}{
		{"0 20 * * 1-5", "0 20 * * 1-5", []string{"2026-11-23 20:00 Mon", "2026-11-27 20:00 Fri"}, []string{"2026-11-28 20:00 Sat", "2026-11-23 20:01 Mon", "2026-11-23 21:00 Mon"}},
		{"0 20 * * MON-FRI", "0 20 * * 1-5", []string{"2026-11-24 20:00 Tue"}, []string{"2026-11-29 20:00 Sun"}},
		{"*/15 7-9 * * *", "0,15,30,45 7-9 * * *", []string{"2026-11-23 07:45 Mon", "2026-11-29 09:00 Sun"}, []string{"2026-11-23 10:00 Mon", "2026-11-23 07:10 Mon"}},
		{"30 6 1 jan,jul *", "30 6 1 1,7 *", []string{"2026-07-01 06:30 Wed"}, []string{"2026-08-01 06:30 Sat"}},
		{"0 0 * * 5-7", "0 0 * * 0,5-6", []string{"2026-11-29 00:00 Sun", "2026-11-27 00:00 Fri"}, []string{"2026-11-23 00:00 Mon"}},
		{"0 0 * * 7", "0 0 * * 0", []string{"2026-11-29 00:00 Sun"}, []string{"2026-11-28 00:00 Sat"}},
		// Both day fields restricted: either matches (Unix cron).
		{"0 12 13 * 5", "0 12 13 * 5", []string{"2026-11-13 12:00 Fri", "2026-11-20 12:00 Fri", "2026-12-13 12:00 Sun"}, []string{"2026-11-14 12:00 Sat"}},
		{"5/20 * * * *", "5,25,45 * * * *", []string{"2026-11-23 03:25 Mon"}, []string{"2026-11-23 03:20 Mon"}},
	}
	for _, tc := range cases {
		c, err := ParseCron(tc.expr)
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if got := c.String(); got != tc.canon {
			t.Errorf("%q renders %q, want %q", tc.expr, got, tc.canon)
		}
		for _, s := range tc.yes {
			if !c.Matches(at(s)) {
				t.Errorf("%q does not fire at %s", tc.expr, s)
			}
		}
		for _, s := range tc.no {
			if c.Matches(at(s)) {
				t.Errorf("%q fires at %s", tc.expr, s)
			}
		}
	}
}

func TestParseCronErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"":                  "want 5 fields",
		"0 20 * *":          "want 5 fields",
		"60 * * * *":        "minute: value \"60\": want 0-59",
		"0 24 * * *":        "hour: value \"24\"",
		"0 0 0 * *":         "day of month: value \"0\": want 1-31",
		"0 0 * 13 *":        "month",
		"0 0 * * 8":         "day of week: value \"8\": want 0-7",
		"0 0 * * fri-mon":   "runs backwards",
		"*/0 * * * *":       "step \"0\"",
		"0 0 * * mon,":      "empty item",
		"0 0 * * funday":    "day of week",
		"0 0 ? * MON":       "day of month",
		"0 0 * * * 2026":    "want 5 fields",
		"a b c d e":         "minute",
		"0-70/5 * * * *":    "minute",
		"0 0 1-31/40 * *":   "step \"40\"",
		"0 0 * jan-feb/x *": "step \"x\"",
	} {
		_, err := ParseCron(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCron(%q) = %v, want an error with %q", expr, err, want)
		}
	}
}

func TestCronShift(t *testing.T) {
	cases := []struct {
		expr string
		d    time.Duration
		want string
		err  string
	}{
		{"0 20 * * 1-5", 11 * time.Hour, "0 7 * * 2-6", ""},
		{"0 20 * * 5", 60 * time.Hour, "0 8 * * 1", ""}, // Friday 20:00 to Monday 08:00
		{"30 8 * * *", 9*time.Hour + 30*time.Minute, "0 18 * * *", ""},
		{"0 22 * * 6", 3 * time.Hour, "0 1 * * 0", ""},
		{"0 20 1 * *", 11 * time.Hour, "", "crosses midnight"},
		{"0 20 * * 1-5", 90 * time.Second, "", "whole minutes"},
		{"0 20 * * 1-5", 7 * 24 * time.Hour, "", "less than 7 days"},
		{"0 8,20 * * *", time.Hour, "", "one minute and one hour"},
	}
	for _, tc := range cases {
		c, err := ParseCron(tc.expr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Shift(tc.d)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q shifted %s: err = %v, want %q", tc.expr, tc.d, err, tc.err)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%q shifted %s = %q, %v; want %q", tc.expr, tc.d, got.String(), err, tc.want)
		}
	}
}

func TestCronFirings(t *testing.T) {
	c, err := ParseCron("0 20 * * 1-5")
	if err != nil {
		t.Fatal(err)
	}
	dubai, _ := time.LoadLocation("Asia/Dubai")
	from := time.Date(2026, 11, 23, 0, 0, 0, 0, dubai) // a Monday
	got := c.Firings(from, from.Add(7*24*time.Hour), dubai)
	if len(got) != 5 {
		t.Fatalf("%d firings in a week, want 5: %v", len(got), got)
	}
	for i, f := range got {
		if f.Hour() != 20 || f.Minute() != 0 || f.Weekday() != time.Weekday(i+1) {
			t.Errorf("firing %d at %v", i, f)
		}
	}
}

// FuzzParseCron: any input either fails to parse or renders to an
// expression that parses back to the same schedule.
func FuzzParseCron(f *testing.F) {
	for _, s := range []string{"0 20 * * 1-5", "*/15 7-9 * * *", "30 6 1 jan,jul *", "0 0 * * 5-7", "5/20 * * * *", "0 12 13 * 5", "0 0 * * 7/2", "*/7 1-23/2 * * MON-FRI"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCron(s)
		if err != nil {
			return
		}
		back, err := ParseCron(c.String())
		if err != nil {
			t.Fatalf("%q renders %q, which does not parse: %v", s, c.String(), err)
		}
		if back.minute != c.minute || back.hour != c.hour || back.dom != c.dom || back.month != c.month || back.dow != c.dow {
			t.Fatalf("%q renders %q, which parses to a different schedule", s, c.String())
		}
	})
}

// TestParseWeeklyCron: the review's cases (it prices weekly schedules
// only), and what the parser reads as Unix cron does where it once read
// otherwise.
func TestParseWeeklyCron(t *testing.T) {
	for _, tt := range []struct{ expr, want string }{
		{"0 20 * *", "want 5 fields"},
		{"0 20 * * * *", "want 5 fields"},
		{"0 20 1 * *", "only weekly schedules"},
		{"0 20 * 6 *", "only weekly schedules"},
		{"0 20 */1 * *", "only weekly schedules"}, // every day, but not written "*"
		{"0 20 * 1-12 *", "only weekly schedules"},
		{"61 20 1 * *", "only weekly schedules"}, // checked before the fields
		{"61 20 * * *", "minute"},
		{"0 24 * * *", "hour"},
		{"0 20 * * 8", "day of week: value \"8\": want 0-7"},
		{"0 20 * * FRI-MON", "runs backwards"},
		{"0 20 * * 5-00", "runs backwards"},
		{"*/0 * * * *", "step \"0\""},
		{"0 0 * * */9", "step \"9\": want a number from 1 to 8"},
		{"a * * * *", "minute: value \"a\""},
		{"0 0 * * mon,", "empty item"},
	} {
		_, err := ParseWeeklyCron(tt.expr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseWeeklyCron(%q) = %v, want an error containing %q", tt.expr, err, tt.want)
		}
	}
	for _, tt := range []struct{ expr, canon string }{
		{"*/15 * * * *", "0,15,30,45 * * * *"},
		{"0 7 * * 1-5", "0 7 * * 1-5"},
		{"0 20 * * SUN,SAT", "0 20 * * 0,6"},
		{"5,35 0-6/2 * * *", "5,35 0,2,4,6 * * *"},
		{"0 0 * * 0-7", "0 0 * * 0-6"},
		// Day of week runs to 7 (Sunday): "N/step" ends there, and a step
		// may be 8.
		{"0 0 * * 5/1", "0 0 * * 0,5-6"},
		{"0 0 * * FRI/1", "0 0 * * 0,5-6"},
		{"0 0 * * 7/2", "0 0 * * 0"},
		{"0 0 * * */8", "0 0 * * 0"},
		{"0 0 * * 0-7/8", "0 0 * * 0"},
		// Names compare upper-cased, as the review compared them.
		{"0 0 * * ſun", "0 0 * * 0"},
		{"0 0 * * frı", "0 0 * * 5"},
	} {
		c, err := ParseWeeklyCron(tt.expr)
		if err != nil {
			t.Errorf("ParseWeeklyCron(%q): %v", tt.expr, err)
			continue
		}
		if got := c.String(); got != tt.canon {
			t.Errorf("ParseWeeklyCron(%q) renders %q, want %q", tt.expr, got, tt.canon)
		}
		if full, err := ParseCron(tt.expr); err != nil || full.String() != c.String() {
			t.Errorf("ParseCron(%q) = %q, %v; want what ParseWeeklyCron reads", tt.expr, full.String(), err)
		}
	}
}

// FuzzParseWeeklyCron: what the review prices is what ParseCron reads, with
// every day of the month and every month.
func FuzzParseWeeklyCron(f *testing.F) {
	for _, s := range []string{"0 20 * * 1-5", "*/7 1-23/2 * * MON-FRI", "0 0 * * 5/1", "0 0 1 * *", "0 0 * * */8"} {
		f.Add(s)
	}
	full := cronFields()
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseWeeklyCron(s)
		if err != nil {
			return
		}
		p, err := ParseCron(s)
		if err != nil || p != c {
			t.Fatalf("%q: ParseWeeklyCron reads %q, ParseCron %q, %v", s, c.String(), p.String(), err)
		}
		if c.dom != full[2].fullMask || !c.domStar || c.month != full[3].fullMask {
			t.Fatalf("%q: not weekly: %q", s, c.String())
		}
	})
}
