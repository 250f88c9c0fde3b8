package platform

import (
	"fmt"
	"slices"
	"time"
	_ "time/tzdata" // schedules name IANA zones; hosts without zoneinfo still resolve them
)

// DefaultScheduleTimeZone is the time zone of a schedule that names none.
const DefaultScheduleTimeZone = "Asia/Dubai"

// HoursPerMonth is the month every monthly cost of this module counts (the
// footprint's and the endpoint's estimates, their schema descriptions, the
// review's prices): 730 hours, 8760 / 12, as AWS pricing and its calculator
// use.
const HoursPerMonth = 730.0

// GroupSize is an Auto Scaling group's size.
type GroupSize struct {
	Min, Max, Desired int
}

// Schedule is one schedule block of a footprint: at each time Recurrence
// fires (in TimeZone), the group takes the sizes set here; with a Duration,
// the footprint's own sizes come back when the window ends, so "scale to
// zero from 20:00 to 07:00 on working days" is one block.
type Schedule struct {
	Name       string
	Recurrence string
	TimeZone   string // IANA name; DefaultScheduleTimeZone when empty
	Duration   time.Duration
	// Sizes during the window; nil keeps the group's current value.
	Min, Max, Desired *int
}

// ScheduledAction is one EC2 Auto Scaling scheduled action a schedule becomes.
type ScheduledAction struct {
	Name       string
	Recurrence string
	TimeZone   string
	Min, Max   *int
	Desired    *int
}

var scheduleNameRE = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// scheduleSizeNames are the attribute names of a schedule's sizes in one
// resource's schema; desired is "" where the resource has none.
type scheduleSizeNames struct{ min, max, desired string }

// ScheduleProblems checks schedules and returns every problem with its
// attribute path (path prefix such as "schedule").
func ScheduleProblems(path string, base GroupSize, ss []Schedule) []Problem {
	return scheduleProblems(path, base, ss, scheduleSizeNames{"min_size", "max_size", "desired_capacity"})
}

func scheduleProblems(path string, base GroupSize, ss []Schedule, names scheduleSizeNames) []Problem {
	var out []Problem
	add := func(p, format string, args ...any) {
		out = append(out, Problem{Path: p, Summary: "Invalid schedule", Detail: fmt.Sprintf(format, args...)})
	}
	seen := map[string]bool{}
	for i, s := range ss {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case !scheduleNameRE().MatchString(s.Name):
			add(p+".name", "%q: use 1-63 letters, digits, '-' or '_', starting with a letter or digit", s.Name)
		case seen[s.Name]:
			add(p+".name", "%q: schedule names must be unique", s.Name)
		}
		seen[s.Name] = true
		c, err := ParseCron(s.Recurrence)
		if err != nil {
			add(p+".recurrence", "%v", err)
		}
		if _, err := time.LoadLocation(s.zone()); err != nil {
			add(p+".time_zone", "%q is not an IANA time zone (such as %s)", s.TimeZone, DefaultScheduleTimeZone)
		}
		if s.Min == nil && s.Max == nil && s.Desired == nil {
			if names.desired == "" {
				add(p, "set at least one of %s, %s", names.min, names.max)
			} else {
				add(p, "set at least one of %s, %s, %s", names.min, names.max, names.desired)
			}
		}
		for _, v := range []struct {
			name string
			v    *int
		}{{names.min, s.Min}, {names.max, s.Max}, {names.desired, s.Desired}} {
			if v.v != nil && *v.v < 0 {
				add(p+"."+v.name, "must be 0 or more, got %d", *v.v)
			}
		}
		lo, hi := orInt(s.Min, base.Min), orInt(s.Max, base.Max)
		if lo > hi {
			add(p, "%s %d is above %s %d during the window", names.min, lo, names.max, hi)
		} else if s.Desired != nil && (*s.Desired < lo || *s.Desired > hi) {
			add(p+"."+names.desired, "%d is outside %s %d and %s %d during the window", *s.Desired, names.min, lo, names.max, hi)
		}
		if s.Duration != 0 && err == nil {
			if _, err := c.Shift(s.Duration); err != nil {
				add(p+".duration", "%v", err)
			}
		}
	}
	return out
}

func (s Schedule) zone() string {
	if s.TimeZone == "" {
		return DefaultScheduleTimeZone
	}
	return s.TimeZone
}

func orInt(p *int, def int) int {
	if p != nil {
		return *p
	}
	return def
}

// ScheduledActions turns valid schedules into the scheduled actions that
// carry them out: one per schedule, and for a schedule with a Duration a
// second one, named "<name>-end", that restores base.
func ScheduledActions(base GroupSize, ss []Schedule) ([]ScheduledAction, error) {
	var out []ScheduledAction
	for _, s := range ss {
		c, err := ParseCron(s.Recurrence)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", s.Name, err)
		}
		out = append(out, ScheduledAction{Name: s.Name, Recurrence: c.String(), TimeZone: s.zone(), Min: s.Min, Max: s.Max, Desired: s.Desired})
		if s.Duration == 0 {
			continue
		}
		end, err := c.Shift(s.Duration)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", s.Name, err)
		}
		out = append(out, ScheduledAction{
			Name: s.Name + "-end", Recurrence: end.String(), TimeZone: s.zone(),
			Min: &base.Min, Max: &base.Max, Desired: &base.Desired,
		})
	}
	return out, nil
}

// AverageInstances returns the mean number of running instances over a
// week in steady state (AverageCapacity): the group starts at base, and
// every scheduled action sets its sizes when it fires, in its time zone.
// Without schedules it is base.Desired.
func AverageInstances(base GroupSize, actions []ScheduledAction) (float64, error) {
	changes := make([]SizeChange, 0, len(actions))
	for _, a := range actions {
		c, err := ParseCron(a.Recurrence)
		if err != nil {
			return 0, fmt.Errorf("scheduled action %s: %w", a.Name, err)
		}
		loc, err := time.LoadLocation(a.TimeZone)
		if err != nil {
			return 0, fmt.Errorf("scheduled action %s: time zone %q: %w", a.Name, a.TimeZone, err)
		}
		changes = append(changes, SizeChange{Cron: c, Location: loc, Min: floatOf(a.Min), Max: floatOf(a.Max), Desired: floatOf(a.Desired)})
	}
	return AverageCapacity(Sizes{Min: float64(base.Min), Max: float64(base.Max), Desired: float64(base.Desired)}, changes), nil
}

func floatOf(p *int) *float64 {
	if p == nil {
		return nil
	}
	f := float64(*p)
	return &f
}

// Sizes are a group's minimum, maximum and desired number of instances as
// the weekly average counts them: numbers, since a plan's are (GroupSize is
// a footprint's, in whole instances).
type Sizes struct {
	Min, Max, Desired float64
}

// SizeChange is one scheduled change of a group's sizes: at each time Cron
// fires, read in Location (nil is UTC), the group takes the sizes set here
// (nil keeps the current one). With a Window, the group's own sizes come
// back that long after each firing (a window of a week or more counts
// modulo a week: the average is of a repeating week).
type SizeChange struct {
	Cron              Cron
	Location          *time.Location
	Min, Max, Desired *float64
	Window            time.Duration
}

// week is the period AverageCapacity averages over.
const week = 7 * 24 * time.Hour

// AverageCapacity is the mean number of instances running over a week in
// steady state, the one rule of this module for a schedule's average (the
// footprint's monthly cost, the review's prices): the group starts at base,
// desired kept within min and max, and at each minute first the windows
// that end then bring base back, then the changes that fire apply in their
// order, desired again kept within min and max as Auto Scaling keeps it
// (when a change leaves min above max, min wins). Two weeks warm the state
// up (a window, or a size set late in the week, is in force at the start of
// the next; the windows that end in the first began the week before), and
// the third, from a fixed Monday, is measured, so estimates are stable; the
// calendar is real, so a change restricted to days of the month counts as
// it falls in those weeks.
func AverageCapacity(base Sizes, changes []SizeChange) float64 {
	clamp := func(desired, lo, hi float64) float64 {
		if desired < lo {
			return lo
		}
		if hi >= lo && desired > hi {
			return hi
		}
		return desired
	}
	if len(changes) == 0 {
		return clamp(base.Desired, base.Min, base.Max)
	}
	type event struct {
		at      time.Time
		restore bool // a window ends: base comes back
		order   int
	}
	from := time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)
	measure := from.Add(2 * week)
	to := measure.Add(week)
	var events []event
	for i, ch := range changes {
		loc := ch.Location
		if loc == nil {
			loc = time.UTC
		}
		first := from
		if ch.Window > 0 {
			first = from.Add(-week)
		}
		for _, t := range ch.Cron.Firings(first, to, loc) {
			if !t.Before(from) {
				events = append(events, event{at: t, order: i})
			}
			if ch.Window > 0 {
				if end := t.Add(ch.Window % week); !end.Before(from) && end.Before(to) {
					events = append(events, event{at: end, restore: true})
				}
			}
		}
	}
	slices.SortStableFunc(events, func(x, y event) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		if x.restore != y.restore {
			if x.restore {
				return -1
			}
			return 1
		}
		return x.order - y.order
	})
	lo, hi, cur := base.Min, base.Max, clamp(base.Desired, base.Min, base.Max)
	var instanceMinutes float64
	last := measure
	for _, e := range events {
		if !e.at.Before(measure) {
			instanceMinutes += cur * e.at.Sub(last).Minutes()
			last = e.at
		}
		if e.restore {
			lo, hi, cur = base.Min, base.Max, clamp(base.Desired, base.Min, base.Max)
			continue
		}
		ch := changes[e.order]
		if ch.Min != nil {
			lo = *ch.Min
		}
		if ch.Max != nil {
			hi = *ch.Max
		}
		if ch.Desired != nil {
			cur = *ch.Desired
		}
		cur = clamp(cur, lo, hi)
	}
	instanceMinutes += cur * to.Sub(last).Minutes()
	return instanceMinutes / week.Minutes()
}

// FoldScheduledActions is ScheduledActions read backwards, for an import:
// an action X and an action "X-end" in the same time zone that restores
// base, whose recurrence is X's shifted by some duration, are one schedule
// of that duration, the shortest that makes the same two actions (a daily
// window of 11 hours and one of 35 make the same actions). Every other
// action is a schedule of its own. The default time zone is left unset,
// as a schedule that does not name one is written.
func FoldScheduledActions(base GroupSize, acts []ScheduledAction) []Schedule {
	end := make([]time.Duration, len(acts)) // by start action: its window
	ends := make([]bool, len(acts))         // actions that end a window
	for i, a := range acts {
		j := slices.IndexFunc(acts, func(e ScheduledAction) bool { return e.Name == a.Name+"-end" })
		if j < 0 || ends[j] || acts[j].TimeZone != a.TimeZone || !restores(acts[j], base) {
			continue
		}
		if d, ok := windowBetween(a.Recurrence, acts[j].Recurrence); ok {
			end[i], ends[j] = d, true
		}
	}
	var out []Schedule
	for i, a := range acts {
		if ends[i] {
			continue
		}
		s := Schedule{Name: a.Name, Recurrence: a.Recurrence, TimeZone: a.TimeZone, Duration: end[i], Min: a.Min, Max: a.Max, Desired: a.Desired}
		if s.TimeZone == DefaultScheduleTimeZone {
			s.TimeZone = ""
		}
		out = append(out, s)
	}
	return out
}

// restores reports whether action e sets the sizes of base (a serving
// action sets no desired capacity).
func restores(e ScheduledAction, base GroupSize) bool {
	return e.Min != nil && *e.Min == base.Min && e.Max != nil && *e.Max == base.Max && (e.Desired == nil || *e.Desired == base.Desired)
}

// windowBetween is the shortest duration by which recurrence start shifts
// to recurrence end (Cron.Shift), if any.
func windowBetween(start, end string) (time.Duration, bool) {
	s, err := ParseCron(start)
	if err != nil {
		return 0, false
	}
	e, err := ParseCron(end)
	if err != nil {
		return 0, false
	}
	want := e.String()
	for d := time.Minute; d < 7*24*time.Hour; d += time.Minute {
		shifted, err := s.Shift(d)
		if err != nil {
			return 0, false
		}
		if shifted.String() == want {
			return d, true
		}
	}
	return 0, false
}
