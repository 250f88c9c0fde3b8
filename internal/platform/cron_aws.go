package platform

import (
	"fmt"
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
