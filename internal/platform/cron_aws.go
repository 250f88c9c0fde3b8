package platform

import (
	"fmt"
	"strconv"
	"strings"
)

// AWSCron renders the expression in the six-field form of Application Auto
// Scaling and EventBridge, "cron(MIN HOUR DOM MONTH DOW YEAR)": day of week
// 1-7 from Sunday, "?" in the one of day of month and day of week that is
// unrestricted. AWS takes only one of the two restricted, so an expression
// that restricts both (Unix cron matches either) has no AWS form.
func (c Cron) AWSCron() (string, error) {
	f := cronFields()
	field := func(mask uint64, i int) string {
		if mask == f[i].fullMask {
			return "*"
		}
		return cronMaskString(mask, f[i].lo, f[i].hi)
	}
	domAll := c.dom == f[2].fullMask
	dowAll := c.dow == f[4].fullMask
	var dom, dow string
	switch {
	case dowAll && c.dowStar:
		dom, dow = field(c.dom, 2), "?"
	case domAll && c.domStar:
		// AWS numbers days of week 1 (Sunday) to 7 (Saturday).
		dom, dow = "?", cronMaskString(c.dow<<1, 1, 7)
	default:
		return "", fmt.Errorf("cron %q restricts both day of month and day of week; Application Auto Scaling takes one of them: set the other to \"*\"", c.String())
	}
	return fmt.Sprintf("cron(%s)", strings.Join([]string{field(c.minute, 0), field(c.hour, 1), dom, field(c.month, 3), dow, "*"}, " ")), nil
}

// ParseAWSCron reads back what AWSCron writes: "cron(m h dom mon dow *)"
// with "?" for the unrestricted day field and days of week numbered 1
// (Sunday) to 7. Steps, names, "L", "W" and "#", which AWSCron never
// writes, are refused.
func ParseAWSCron(s string) (Cron, error) {
	body, ok := strings.CutPrefix(s, "cron(")
	if ok {
		body, ok = strings.CutSuffix(body, ")")
	}
	if !ok {
		return Cron{}, fmt.Errorf("%q: not a cron(...) expression", s)
	}
	f := strings.Fields(body)
	if len(f) != 6 || f[5] != "*" {
		return Cron{}, fmt.Errorf("%q: want six fields, the year *", s)
	}
	dom, dow := f[2], f[4]
	switch {
	case dom == "?" && dow != "?":
		dom = "*"
		var days []string
		for _, item := range strings.Split(dow, ",") {
			lo, hi, isRange := strings.Cut(item, "-")
			a, errA := strconv.Atoi(lo)
			b, errB := a, error(nil)
			if isRange {
				b, errB = strconv.Atoi(hi)
			}
			if errA != nil || errB != nil || a < 1 || b > 7 || a > b {
				return Cron{}, fmt.Errorf("%q: day of week %q: want days 1 to 7", s, item)
			}
			if isRange {
				days = append(days, fmt.Sprintf("%d-%d", a-1, b-1))
			} else {
				days = append(days, strconv.Itoa(a-1))
			}
		}
		dow = strings.Join(days, ",")
	case dow == "?" && dom != "?":
		dow = "*"
	default:
		return Cron{}, fmt.Errorf("%q: one of day of month and day of week must be ?", s)
	}
	return ParseCron(strings.Join([]string{f[0], f[1], dom, f[3], dow}, " "))
}
