package review

import (
	"fmt"
	"strconv"
	"strings"
)

const (
	minutesPerWeek = 7 * 24 * 60
	// HoursPerMonth is the month the review prices: 730 hours (8760 / 12),
	// as AWS's own calculator uses.
	HoursPerMonth = 730.0
)

// Scaled is a scheduled change of capacity: a cron expression and the
// capacity it sets. Nil fields leave the current value. With Duration
// (minutes), the group's own sizes come back that long after each firing
// (mlplatform_cpu_footprint's schedule `duration`).
type Scaled struct {
	Cron     string
	Min      *float64
	Max      *float64
	Desired  *float64
	Duration int
}

// cronSpec is a parsed five-field cron expression restricted to weekly
// recurrence: minute, hour and day of week (day of month and month are *).
type cronSpec struct {
	minutes [60]bool
	hours   [24]bool
	days    [7]bool // 0 = Sunday
}

var dayNames = map[string]int{"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}

// ParseCron parses "MIN HOUR DOM MON DOW" (Unix cron, as Auto Scaling
// scheduled actions take it). Only weekly recurrences can be averaged over a
// month exactly, so day of month and month must be "*".
func ParseCron(expr string) (cronSpec, error) {
	var c cronSpec
	f := strings.Fields(expr)
	if len(f) != 5 {
		return c, fmt.Errorf("cron %q: want 5 fields (minute hour day-of-month month day-of-week)", expr)
	}
	if f[2] != "*" || f[3] != "*" {
		return c, fmt.Errorf("cron %q: only weekly schedules (day of month and month \"*\") can be priced", expr)
	}
	if err := cronField(f[0], 0, 59, nil, c.minutes[:]); err != nil {
		return c, fmt.Errorf("cron %q minute: %w", expr, err)
	}
	if err := cronField(f[1], 0, 23, nil, c.hours[:]); err != nil {
		return c, fmt.Errorf("cron %q hour: %w", expr, err)
	}
	var dow [8]bool
	if err := cronField(f[4], 0, 7, dayNames, dow[:]); err != nil {
		return c, fmt.Errorf("cron %q day of week: %w", expr, err)
	}
	for d := 0; d < 7; d++ {
		c.days[d] = dow[d]
	}
	if dow[7] {
		c.days[0] = true
	}
	return c, nil
}

func cronField(s string, lo, hi int, names map[string]int, set []bool) error {
	atom := func(a string) (int, error) {
		if n, ok := names[strings.ToUpper(a)]; ok {
			return n, nil
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < lo || n > hi {
			return 0, fmt.Errorf("%q is not a number from %d to %d", a, lo, hi)
		}
		return n, nil
	}
	for _, part := range strings.Split(s, ",") {
		rng, stepS, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepS)
			if err != nil || n < 1 || n > hi-lo+1 {
				return fmt.Errorf("bad step %q", stepS)
			}
			step = n
		}
		from, to := lo, hi
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if from, err = atom(a); err != nil {
				return err
			}
			if to, err = atom(b); err != nil {
				return err
			}
			if from > to {
				return fmt.Errorf("range %q runs backwards", rng)
			}
		default:
			n, err := atom(rng)
			if err != nil {
				return err
			}
			from, to = n, n
			if hasStep {
				to = hi
			}
		}
		for i := from; i <= to; i += step {
			set[i-lo] = true
		}
	}
	return nil
}

func (c cronSpec) fires(minuteOfWeek int) bool {
	d := minuteOfWeek / (24 * 60)
	h := minuteOfWeek / 60 % 24
	m := minuteOfWeek % 60
	return c.days[d] && c.hours[h] && c.minutes[m]
}

// AverageCapacity is the mean number of instances running over a week when
// the group starts at desired (clamped to min..max) and the schedules apply
// in turn. The week is simulated twice, minute by minute, and the second
// pass measured, so the result is the steady state whatever the start.
func AverageCapacity(minSize, maxSize, desired float64, schedules []Scaled) (float64, error) {
	specs := make([]cronSpec, len(schedules))
	for i, s := range schedules {
		c, err := ParseCron(s.Cron)
		if err != nil {
			return 0, err
		}
		specs[i] = c
	}
	clamp := func(v, lo, hi float64) float64 {
		if v < lo {
			return lo
		}
		if hi >= lo && v > hi {
			return hi
		}
		return v
	}
	// Where a window with a duration ends, the group's own sizes come back
	// (before any action firing that same minute).
	restore := make([]bool, minutesPerWeek)
	for i, s := range schedules {
		if s.Duration <= 0 {
			continue
		}
		for m := 0; m < minutesPerWeek; m++ {
			if specs[i].fires(m) {
				restore[(m+s.Duration)%minutesPerWeek] = true
			}
		}
	}
	lo, hi, cur := minSize, maxSize, clamp(desired, minSize, maxSize)
	var sum float64
	for pass := 0; pass < 2; pass++ {
		for m := 0; m < minutesPerWeek; m++ {
			if restore[m] {
				lo, hi, cur = minSize, maxSize, clamp(desired, minSize, maxSize)
			}
			for i, s := range schedules {
				if !specs[i].fires(m) {
					continue
				}
				if s.Min != nil {
					lo = *s.Min
				}
				if s.Max != nil {
					hi = *s.Max
				}
				if s.Desired != nil {
					cur = *s.Desired
				}
				cur = clamp(cur, lo, hi)
			}
			if pass == 1 {
				sum += cur
			}
		}
	}
	return sum / minutesPerWeek, nil
}
