package platform

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// Serving schedules are the CPU footprint's schedules (Schedule,
// ScheduleProblems, ScheduledActions) applied to a variant's scalable
// target: at each time a schedule's recurrence fires, the target takes the
// min and max capacity it sets; with a duration, an "-end" action restores
// the variant's autoscaling bounds. Desired capacity has no place here:
// target tracking owns the count between the bounds.

// servingScheduleSizes are the serving schedule's attribute names.
func servingScheduleSizes() scheduleSizeNames {
	return scheduleSizeNames{min: "min_capacity", max: "max_capacity"}
}

// ServingScheduledActionName is the name of the Application Auto Scaling
// scheduled action of a variant's schedule (or of its "-end" action).
func ServingScheduledActionName(endpoint, variant, action string) string {
	return cloud.ServingScheduledActionPrefix + endpoint + "-" + variant + "-" + action
}

// svSchedules checks the schedules of an instance variant's autoscaling at
// path at (variants[i]); values not known yet are checked at apply.
func svSchedules(v *validator, at string, a *ServingAutoscaling) {
	p := at + ".autoscaling.schedule"
	if len(a.Schedules) == 0 || !v.unknown.known(p, at+".autoscaling.min_capacity", at+".autoscaling.max_capacity") {
		return
	}
	for _, pr := range scheduleProblems(p, GroupSize{Min: int(a.Min), Max: int(a.Max)}, a.Schedules, servingScheduleSizes()) {
		v.add(pr.Path, "%s", pr.Detail)
	}
	names := map[string]int{}
	for i, s := range a.Schedules {
		names[s.Name] = i
	}
	for i, s := range a.Schedules {
		sp := fmt.Sprintf("%s[%d]", p, i)
		if s.Desired != nil {
			v.add(sp, "a serving schedule sets min_capacity and max_capacity; target tracking owns the count between them")
		}
		if s.Min != nil && *s.Min < 1 {
			v.add(sp+".min_capacity", "must be at least 1 (got %d): Application Auto Scaling cannot scale a SageMaker instance variant to 0; use a serverless variant for scale to zero", *s.Min)
		}
		if s.Max != nil && *s.Max > svMaxInstanceCount {
			v.add(sp+".max_capacity", "must be at most %d (got %d)", svMaxInstanceCount, *s.Max)
		}
		if j, clash := names[s.Name+"-end"]; clash && s.Duration != 0 {
			v.add(fmt.Sprintf("%s[%d].name", p, j), "%q is the name of the action that ends schedule %q's window; rename one of them", s.Name+"-end", s.Name)
		}
		c, err := ParseCron(s.Recurrence)
		if err != nil {
			continue // reported above
		}
		if _, err := c.AWSCron(); err != nil {
			v.add(sp+".recurrence", "%v", err)
		}
	}
}

// servingScheduledActions are the scheduled actions that carry out the
// schedules of a scaled variant of the endpoint.
func servingScheduledActions(endpoint string, v ServingVariant) ([]cloud.ServingScheduledAction, error) {
	a := v.Autoscaling
	if a == nil || v.Serverless != nil || len(a.Schedules) == 0 {
		return nil, nil
	}
	acts, err := ScheduledActions(GroupSize{Min: int(a.Min), Max: int(a.Max)}, a.Schedules)
	if err != nil {
		return nil, fmt.Errorf("variant %s: %w", v.Name, err)
	}
	out := make([]cloud.ServingScheduledAction, 0, len(acts))
	for _, x := range acts {
		c, err := ParseCron(x.Recurrence)
		if err != nil {
			return nil, fmt.Errorf("variant %s: scheduled action %s: %w", v.Name, x.Name, err)
		}
		expr, err := c.AWSCron()
		if err != nil {
			return nil, fmt.Errorf("variant %s: scheduled action %s: %w", v.Name, x.Name, err)
		}
		out = append(out, cloud.ServingScheduledAction{
			Name: ServingScheduledActionName(endpoint, v.Name, x.Name), Schedule: expr, TimeZone: x.TimeZone,
			Min: int32Ptr(x.Min), Max: int32Ptr(x.Max),
		})
	}
	return out, nil
}

// applyServingSchedules makes the scheduled actions of each scaled variant
// of s what its schedules declare (none when it declares none).
func applyServingSchedules(ctx context.Context, as cloud.ServingScalingAPI, s ServingEndpointSpec) error {
	for _, v := range scaledVariants(s) {
		want, err := servingScheduledActions(s.Name, v)
		if err != nil {
			return err
		}
		if err := cloud.SyncServingScheduledActions(ctx, as, s.Name, v.Name, want); err != nil {
			return err
		}
	}
	return nil
}

// withServingSchedules reads the scheduled actions of each scaled variant
// into ep.
func withServingSchedules(ctx context.Context, as cloud.ServingScalingAPI, ep *ServingEndpoint, have map[string]cloud.ServingScaling) error {
	for _, name := range sortedScalingNames(have) {
		acts, err := cloud.FindServingScheduledActions(ctx, as, ep.Spec.Name, name)
		if err != nil {
			return err
		}
		if ep.scheduled == nil {
			ep.scheduled = map[string][]cloud.ServingScheduledAction{}
		}
		ep.scheduled[name] = acts
	}
	return nil
}

// foldServingSchedules gives each scaled variant of rs the declared
// schedules whose scheduled actions exist as declared: a schedule whose
// actions were changed or deleted outside reads as absent, so the next plan
// puts it back.
func foldServingSchedules(rs *ServingEndpointSpec, found *ServingEndpoint, declared ServingEndpointSpec) {
	for i := range rs.Variants {
		v := &rs.Variants[i]
		if v.Autoscaling == nil {
			continue
		}
		j := slices.IndexFunc(declared.Variants, func(d ServingVariant) bool { return d.Name == v.Name })
		if j < 0 {
			// Nothing declared of the variant (an import): its actions,
			// folded back into schedules.
			a := *v.Autoscaling
			a.Schedules = servingSchedulesOf(rs.Name, v.Name, a, found.scheduled[v.Name])
			v.Autoscaling = &a
			continue
		}
		if declared.Variants[j].Autoscaling == nil || len(declared.Variants[j].Autoscaling.Schedules) == 0 {
			continue
		}
		d := declared.Variants[j]
		have := found.scheduled[v.Name]
		var kept []Schedule
		for _, sc := range d.Autoscaling.Schedules {
			one := d
			oneScaling := *d.Autoscaling
			oneScaling.Schedules = []Schedule{sc}
			one.Autoscaling = &oneScaling
			want, err := servingScheduledActions(rs.Name, one)
			if err != nil || len(want) == 0 {
				continue
			}
			ok := true
			for _, w := range want {
				ok = ok && slices.ContainsFunc(have, w.Equal)
			}
			if ok {
				kept = append(kept, sc)
			}
		}
		a := *v.Autoscaling
		a.Schedules = kept
		v.Autoscaling = &a
	}
}

// servingSchedulesOf reads a variant's scheduled actions back as the
// schedules that make them (FoldScheduledActions, the variant's
// autoscaling bounds the base); an action this provider would not have
// written (another name, a cron it cannot read) is left out.
func servingSchedulesOf(endpoint, variant string, a ServingAutoscaling, acts []cloud.ServingScheduledAction) []Schedule {
	prefix := ServingScheduledActionName(endpoint, variant, "")
	var read []ScheduledAction
	for _, x := range acts {
		name, ok := strings.CutPrefix(x.Name, prefix)
		c, err := ParseAWSCron(x.Schedule)
		if !ok || name == "" || err != nil {
			continue
		}
		read = append(read, ScheduledAction{Name: name, Recurrence: c.String(), TimeZone: x.TimeZone, Min: intPtr(x.Min), Max: intPtr(x.Max)})
	}
	return FoldScheduledActions(GroupSize{Min: int(a.Min), Max: int(a.Max)}, read)
}

// ParseScheduleDuration parses the duration of a schedule, a CPU
// footprint's or a serving variant's, as both front ends take it: a Go
// duration of whole minutes such as "11h" or "90m"; "" is none.
func ParseScheduleDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d%time.Minute != 0 {
		return 0, fmt.Errorf("%q: write a duration of whole minutes such as 11h or 90m", s)
	}
	return d, nil
}

// ScheduleDurationText is how a front end writes d back: as declared when
// the declared text means d, else in its shortest form ("11h", "1h30m",
// "45m"), which is how a schedule is written, so that an imported one
// reads as its configuration says.
func ScheduleDurationText(d time.Duration, declared string) string {
	if d == 0 {
		return ""
	}
	if dd, err := ParseScheduleDuration(declared); err == nil && dd == d {
		return declared
	}
	if d < 0 || d%time.Minute != 0 {
		return d.String()
	}
	h, m := d/time.Hour, d%time.Hour/time.Minute
	switch {
	case h == 0:
		return fmt.Sprintf("%dm", m)
	case m == 0:
		return fmt.Sprintf("%dh", h)
	}
	return fmt.Sprintf("%dh%dm", h, m)
}
