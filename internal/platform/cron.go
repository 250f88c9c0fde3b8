package platform

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Cron is a parsed five-field Unix cron expression (minute, hour, day of
// month, month, day of week), the recurrence format of EC2 Auto Scaling
// scheduled actions. Day of week is 0-7 from Sunday (0 and 7 are both
// Sunday, so "5/1" is Friday to Sunday, as in Unix cron); months and
// weekdays also take their English three-letter names, in any case. As in
// Unix cron, when both day of month and day of week are restricted, a time
// matches either. It is the one cron parser of this module: the footprint
// and serving schedules, and the review's prices (ParseWeeklyCron).
type Cron struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
}

type cronField struct {
	name     string
	lo, hi   int
	names    []string // names[i] is the value lo+i
	sunday7  bool     // the values run to 7, which means 0
	fullMask uint64
}

// top is the highest value the field takes: hi, or 7 for day of week.
func (f cronField) top() int {
	if f.sunday7 {
		return 7
	}
	return f.hi
}

var cronMonths = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
var cronDays = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

func cronFields() [5]cronField {
	f := [5]cronField{
		{name: "minute", lo: 0, hi: 59},
		{name: "hour", lo: 0, hi: 23},
		{name: "day of month", lo: 1, hi: 31},
		{name: "month", lo: 1, hi: 12, names: cronMonths},
		{name: "day of week", lo: 0, hi: 6, names: cronDays, sunday7: true},
	}
	for i := range f {
		for v := f[i].lo; v <= f[i].hi; v++ {
			f[i].fullMask |= 1 << v
		}
	}
	return f
}

// ParseCron parses a five-field cron expression: in each field "*",
// values, ranges ("1-5") and steps ("*/15", "0-30/10", "5/20", which is
// "5-59/20"), comma-separated. There is no "?", "L", "W" or "#", no year, no
// rate() or at() (ParseAWSCron reads the AWS six-field form).
func ParseCron(s string) (Cron, error) {
	parts := strings.Fields(s)
	if len(parts) != 5 {
		return Cron{}, fmt.Errorf("cron %q: want 5 fields (minute hour day-of-month month day-of-week), got %d", s, len(parts))
	}
	fields := cronFields()
	var masks [5]uint64
	for i, p := range parts {
		m, err := parseCronField(p, fields[i])
		if err != nil {
			return Cron{}, fmt.Errorf("cron %q: %s: %w", s, fields[i].name, err)
		}
		masks[i] = m
	}
	return Cron{
		minute: masks[0], hour: masks[1], dom: masks[2], month: masks[3], dow: masks[4],
		domStar: strings.HasPrefix(parts[2], "*"), dowStar: strings.HasPrefix(parts[4], "*"),
	}, nil
}

func parseCronField(s string, f cronField) (uint64, error) {
	var mask uint64
	for _, item := range strings.Split(s, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.top()-f.lo+1 {
				return 0, fmt.Errorf("step %q: want a number from 1 to %d", stepText, f.top()-f.lo+1)
			}
			step = n
		}
		lo, hi := f.lo, f.top()
		switch {
		case rng == "*":
		case rng == "":
			return 0, fmt.Errorf("empty item in %q", s)
		default:
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = cronValue(a, f); err != nil {
				return 0, err
			}
			hi = lo
			if isRange {
				if hi, err = cronValue(b, f); err != nil {
					return 0, err
				}
				if hi < lo {
					return 0, fmt.Errorf("range %q runs backwards", rng)
				}
			} else if hasStep {
				hi = f.top() // "5/15" is "5-59/15"; in day of week "5/1" is "5-7/1"
			}
		}
		for v := lo; v <= hi; v += step {
			if f.sunday7 && v == 7 {
				mask |= 1
				continue
			}
			mask |= 1 << v
		}
	}
	return mask, nil
}

func cronValue(s string, f cronField) (int, error) {
	if len(f.names) > 0 {
		up := strings.ToUpper(s)
		for i, n := range f.names {
			if up == strings.ToUpper(n) {
				return f.lo + i, nil
			}
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < f.lo || v > f.top() {
		return 0, fmt.Errorf("value %q: want %d-%d", s, f.lo, f.top())
	}
	return v, nil
}

// ParseWeeklyCron parses a cron expression that recurs every week: day of
// month and month "*", so that its firings average over a month exactly
// (the review's prices). Otherwise it is ParseCron.
func ParseWeeklyCron(s string) (Cron, error) {
	if f := strings.Fields(s); len(f) == 5 && (f[2] != "*" || f[3] != "*") {
		return Cron{}, fmt.Errorf("cron %q: only weekly schedules (day of month and month \"*\") can be priced", s)
	}
	return ParseCron(s)
}

// Matches reports whether t, in its own location, is a minute the
// expression fires at.
func (c Cron) Matches(t time.Time) bool {
	if c.minute&(1<<t.Minute()) == 0 || c.hour&(1<<t.Hour()) == 0 || c.month&(1<<int(t.Month())) == 0 {
		return false
	}
	domOK := c.dom&(1<<t.Day()) != 0
	dowOK := c.dow&(1<<int(t.Weekday())) != 0
	if !c.domStar && !c.dowStar {
		return domOK || dowOK
	}
	return domOK && dowOK
}

// Firings returns the times in [from, to) the expression fires at, in loc,
// in order.
func (c Cron) Firings(from, to time.Time, loc *time.Location) []time.Time {
	var out []time.Time
	t := from.In(loc).Truncate(time.Minute)
	if t.Before(from) {
		t = t.Add(time.Minute)
	}
	for ; t.Before(to); t = t.Add(time.Minute) {
		if c.hour&(1<<t.Hour()) == 0 {
			// Skip to the next hour.
			t = t.Add(time.Duration(59-t.Minute()) * time.Minute)
			continue
		}
		if c.Matches(t) {
			out = append(out, t)
		}
	}
	return out
}

// Shift returns the expression that fires d after c does, for the end of a
// scheduled window. It needs one minute and one hour in c; when the shift
// crosses midnight, day of week moves with it, and day of month and month
// must be unrestricted ("*").
func (c Cron) Shift(d time.Duration) (Cron, error) {
	if d <= 0 || d%time.Minute != 0 || d >= 7*24*time.Hour {
		return Cron{}, fmt.Errorf("duration %s: want whole minutes, more than 0 and less than 7 days", d)
	}
	if bits.OnesCount64(c.minute) != 1 || bits.OnesCount64(c.hour) != 1 {
		return Cron{}, fmt.Errorf("a window needs a start with one minute and one hour (such as \"0 20 * * 1-5\")")
	}
	start := bits.TrailingZeros64(c.hour)*60 + bits.TrailingZeros64(c.minute)
	end := start + int(d/time.Minute)
	days := end / (24 * 60)
	end %= 24 * 60
	out := c
	out.minute = 1 << (end % 60)
	out.hour = 1 << (end / 60)
	if days == 0 {
		return out, nil
	}
	if !c.domStar || c.month != cronFields()[3].fullMask {
		return Cron{}, fmt.Errorf("a window that crosses midnight needs day of month and month \"*\" (restrict days with day of week)")
	}
	if !c.dowStar {
		var dow uint64
		for v := 0; v < 7; v++ {
			if c.dow&(1<<v) != 0 {
				dow |= 1 << ((v + days) % 7)
			}
		}
		out.dow = dow
	}
	return out, nil
}

// String renders the expression in canonical form: "*" for a full field,
// else comma-separated values and ranges.
func (c Cron) String() string {
	fields := cronFields()
	masks := [5]uint64{c.minute, c.hour, c.dom, c.month, c.dow}
	stars := [5]bool{false, false, c.domStar, false, c.dowStar}
	parts := make([]string, 5)
	for i, f := range fields {
		if masks[i] == f.fullMask && (stars[i] || i == 0 || i == 1 || i == 3) {
			parts[i] = "*"
			continue
		}
		parts[i] = cronMaskString(masks[i], f.lo, f.hi)
	}
	return strings.Join(parts, " ")
}

func cronMaskString(mask uint64, lo, hi int) string {
	var items []string
	for v := lo; v <= hi; v++ {
		if mask&(1<<v) == 0 {
			continue
		}
		end := v
		for end+1 <= hi && mask&(1<<(end+1)) != 0 {
			end++
		}
		switch {
		case end == v:
			items = append(items, strconv.Itoa(v))
		default:
			items = append(items, fmt.Sprintf("%d-%d", v, end))
		}
		v = end
	}
	return strings.Join(items, ",")
}
