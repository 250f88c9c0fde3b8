package review

import (
	"time"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// Scaled is a scheduled change of capacity as a plan declares it: a cron
// expression and the capacity it sets. Nil fields leave the current value.
// With Duration (minutes), the group's own sizes come back that long after
// each firing (mlplatform_cpu_footprint's schedule `duration`).
type Scaled struct {
	Cron     string
	Min      *float64
	Max      *float64
	Desired  *float64
	Duration int
}

// averageCapacity is the mean number of instances running over a week
// (platform.AverageCapacity) when the group starts at desired and the
// schedules apply in turn. Only weekly schedules can be priced
// (platform.ParseWeeklyCron); the plan's time zones do not change a weekly
// average, so the crons are read in UTC.
func averageCapacity(minSize, maxSize, desired float64, schedules []Scaled) (float64, error) {
	changes := make([]platform.SizeChange, len(schedules))
	for i, s := range schedules {
		c, err := platform.ParseWeeklyCron(s.Cron)
		if err != nil {
			return 0, err
		}
		changes[i] = platform.SizeChange{Cron: c, Min: s.Min, Max: s.Max, Desired: s.Desired, Window: time.Duration(s.Duration) * time.Minute}
	}
	return platform.AverageCapacity(platform.Sizes{Min: minSize, Max: maxSize, Desired: desired}, changes), nil
}
