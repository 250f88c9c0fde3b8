package pulumi

import (
	"fmt"
	"slices"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// ServingSchedule is one scheduled change of a variant's autoscaling
// bounds: the CPU footprint's schedule shape, with the scalable target's
// capacities.
type ServingSchedule struct {
	Name        string  `pulumi:"name"`
	Recurrence  string  `pulumi:"recurrence"`
	TimeZone    *string `pulumi:"timeZone,optional"`
	Duration    *string `pulumi:"duration,optional"`
	MinCapacity *int    `pulumi:"minCapacity,optional"`
	MaxCapacity *int    `pulumi:"maxCapacity,optional"`
}

// Annotate describes a serving schedule.
func (s *ServingSchedule) Annotate(a infer.Annotator) {
	a.Describe(&s.Name, "Name of the schedule (1 to 63 letters, digits, `-` or `_`), unique in the variant; its scheduled action is `mlplatform-<endpoint>-<variant>-<name>`, the one that ends a window `...-end`.")
	a.Describe(&s.Recurrence, "Cron expression (minute hour day-of-month month day-of-week), e.g. `0 20 * * 1-5`; restrict day of month or day of week, not both (Application Auto Scaling takes one).")
	a.Describe(&s.TimeZone, fmt.Sprintf("IANA time zone of `recurrence`. Default `%s`.", platform.DefaultScheduleTimeZone))
	a.Describe(&s.Duration, "Length of the window in whole minutes, e.g. `11h`: the autoscaling's own minCapacity and maxCapacity come back when it ends.")
	a.Describe(&s.MinCapacity, "Fewest instances during the window (at least 1: an instance variant cannot scale to 0); unset keeps the current value.")
	a.Describe(&s.MaxCapacity, "Most instances during the window (at most 1000); unset keeps the current value.")
}

// servingSchedulesSpec translates a variant's schedules; a duration the
// core cannot parse is reported by servingScheduleFailures.
func servingSchedulesSpec(ss []ServingSchedule) []platform.Schedule {
	var out []platform.Schedule
	for _, s := range ss {
		d, _ := platform.ParseScheduleDuration(deref(s.Duration))
		out = append(out, platform.Schedule{Name: s.Name, Recurrence: s.Recurrence, TimeZone: deref(s.TimeZone), Duration: d, Min: s.MinCapacity, Max: s.MaxCapacity})
	}
	return out
}

// servingScheduleFailures are the durations the core cannot parse, on
// their properties.
func servingScheduleFailures(c ServingEndpointArgs) []p.CheckFailure {
	var out []p.CheckFailure
	for i, v := range c.Variants {
		if v.Autoscaling == nil {
			continue
		}
		for j, s := range v.Autoscaling.Schedule {
			if _, err := platform.ParseScheduleDuration(deref(s.Duration)); err != nil {
				out = append(out, p.CheckFailure{Property: propertyPath(fmt.Sprintf("variants[%d].autoscaling.schedule[%d].duration", i, j)), Reason: err.Error()})
			}
		}
	}
	return out
}

// servingSchedulesArgs writes schedules back as inputs.
func servingSchedulesArgs(ss []platform.Schedule) []ServingSchedule {
	var out []ServingSchedule
	for _, s := range ss {
		out = append(out, ServingSchedule{Name: s.Name, Recurrence: s.Recurrence, TimeZone: optString(s.TimeZone),
			Duration: optString(platform.ScheduleDurationText(s.Duration, "")), MinCapacity: s.Min, MaxCapacity: s.Max})
	}
	return out
}

// keepScheduleText gives the durations in got the text declared in args
// where it means the same.
func keepScheduleText(got *ServingEndpointArgs, args ServingEndpointArgs) {
	for i := range got.Variants {
		g := got.Variants[i].Autoscaling
		k := slices.IndexFunc(args.Variants, func(v ServingVariant) bool { return v.Name == got.Variants[i].Name && v.Autoscaling != nil })
		if g == nil || k < 0 {
			continue
		}
		declared := args.Variants[k].Autoscaling.Schedule
		for j := range g.Schedule {
			s := &g.Schedule[j]
			d := slices.IndexFunc(declared, func(d ServingSchedule) bool { return d.Name == s.Name })
			if d < 0 || s.Duration == nil {
				continue
			}
			dur, _ := platform.ParseScheduleDuration(*s.Duration)
			s.Duration = optString(platform.ScheduleDurationText(dur, deref(declared[d].Duration)))
		}
	}
}
