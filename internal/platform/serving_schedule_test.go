package platform

import (
	"context"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
)

// Scheduled actions of the fakeScaling test double (see
// serving_scaling_faults_test.go): kept by resource id and name, with the
// same faults as its other writes.

func (f *fakeScaling) PutScheduledAction(_ context.Context, in *applicationautoscaling.PutScheduledActionInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScheduledActionOutput, error) {
	act, err := f.fault("PutScheduledAction")
	if act {
		if f.scheduled == nil {
			f.scheduled = map[string]map[string]aastypes.ScheduledAction{}
		}
		id := aws.ToString(in.ResourceId)
		if f.scheduled[id] == nil {
			f.scheduled[id] = map[string]aastypes.ScheduledAction{}
		}
		f.scheduled[id][aws.ToString(in.ScheduledActionName)] = aastypes.ScheduledAction{
			ScheduledActionName: in.ScheduledActionName, ResourceId: in.ResourceId, Schedule: in.Schedule,
			Timezone: in.Timezone, ScalableTargetAction: in.ScalableTargetAction, ServiceNamespace: in.ServiceNamespace,
		}
	}
	return &applicationautoscaling.PutScheduledActionOutput{}, err
}

func (f *fakeScaling) DescribeScheduledActions(_ context.Context, in *applicationautoscaling.DescribeScheduledActionsInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScheduledActionsOutput, error) {
	out := &applicationautoscaling.DescribeScheduledActionsOutput{}
	for _, a := range f.scheduled[aws.ToString(in.ResourceId)] {
		out.ScheduledActions = append(out.ScheduledActions, a)
	}
	return out, nil
}

func (f *fakeScaling) DeleteScheduledAction(_ context.Context, in *applicationautoscaling.DeleteScheduledActionInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeleteScheduledActionOutput, error) {
	act, err := f.fault("DeleteScheduledAction")
	if act {
		id, name := aws.ToString(in.ResourceId), aws.ToString(in.ScheduledActionName)
		if _, ok := f.scheduled[id][name]; !ok && err == nil {
			return nil, &aastypes.ObjectNotFoundException{Message: aws.String("No scheduled action found")}
		}
		delete(f.scheduled[id], name)
	}
	return &applicationautoscaling.DeleteScheduledActionOutput{}, err
}

// scheduledNames lists the fake's scheduled actions as "name schedule
// zone min max", sorted.
func (f *fakeScaling) scheduledNames() []string {
	var out []string
	for _, m := range f.scheduled {
		for _, a := range m {
			p := func(v *int32) string {
				if v == nil {
					return "-"
				}
				return itoa32(*v)
			}
			out = append(out, strings.Join([]string{aws.ToString(a.ScheduledActionName), aws.ToString(a.Schedule), aws.ToString(a.Timezone),
				p(a.ScalableTargetAction.MinCapacity), p(a.ScalableTargetAction.MaxCapacity)}, " | "))
		}
	}
	slices.Sort(out)
	return out
}

func itoa32(v int32) string { return strconv.Itoa(int(v)) }

// nightSpec scales the primary variant (1 to 4) and holds it at 1 (max 1)
// from 20:00 for 11 hours on working days, and raises the floor to 3 on
// Monday mornings.
func nightSpec() ServingEndpointSpec {
	s := scaledSpec(100)
	s.Variants[0].Autoscaling.Schedules = []Schedule{
		{Name: "night", Recurrence: "0 20 * * 1-5", Duration: 11 * time.Hour, Max: iptr(1)},
		{Name: "monday", Recurrence: "30 7 * * mon", TimeZone: "UTC", Min: iptr(3)},
	}
	return s
}

func TestCronAWSCron(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "0 20 * * 1-5", want: "cron(0 20 ? * 2-6 *)"},
		{in: "0 20 * * *", want: "cron(0 20 * * ? *)"},
		{in: "30 7 * * mon", want: "cron(30 7 ? * 2 *)"},
		{in: "0 0 * * 0,6", want: "cron(0 0 ? * 1,7 *)"},
		{in: "0 0 * * 7", want: "cron(0 0 ? * 1 *)"},
		{in: "15 6 1 */3 *", want: "cron(15 6 1 1,4,7,10 ? *)"},
		{in: "*/15 * * * *", want: "cron(0,15,30,45 * * * ? *)"},
		{in: "0 0 1 * 1", err: "restricts both day of month and day of week"},
	} {
		cr, err := ParseCron(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		got, err := cr.AWSCron()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzCronAWSCron: an expression that parses either has no AWS form or
// renders to six fields with exactly one "?" in day of month or day of
// week, and days of week within 1-7.
func FuzzCronAWSCron(f *testing.F) {
	for _, s := range []string{"0 20 * * 1-5", "0 0 1 * *", "*/5 * * * *", "0 0 * * 7", "0 0 1 * 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCron(s)
		if err != nil {
			return
		}
		out, err := c.AWSCron()
		if err != nil {
			return
		}
		if !strings.HasPrefix(out, "cron(") || !strings.HasSuffix(out, " *)") {
			t.Fatalf("%q -> %q", s, out)
		}
		fs := strings.Fields(strings.TrimSuffix(strings.TrimPrefix(out, "cron("), ")"))
		if len(fs) != 6 || (fs[2] == "?") == (fs[4] == "?") {
			t.Fatalf("%q -> %q: want 6 fields and one '?' in day of month or day of week", s, out)
		}
		if fs[4] != "?" && strings.ContainsAny(fs[4], "08") {
			t.Fatalf("%q -> %q: day of week outside 1-7", s, out)
		}
		back, err := ParseAWSCron(out)
		if err != nil {
			t.Fatalf("%q -> %q, which ParseAWSCron refuses: %v", s, out, err)
		}
		if back.minute != c.minute || back.hour != c.hour || back.dom != c.dom || back.month != c.month || back.dow != c.dow {
			t.Fatalf("%q -> %q, which reads back as %q", s, out, back.String())
		}
	})
}

func TestParseAWSCron(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "cron(0 20 ? * 2-6 *)", want: "0 20 * * 1-5"},
		{in: "cron(0 7 ? * 3-7 *)", want: "0 7 * * 2-6"},
		{in: "cron(0 0 ? * 1,7 *)", want: "0 0 * * 0,6"},
		{in: "cron(15 6 1 1,4,7,10 ? *)", want: "15 6 1 1,4,7,10 *"},
		{in: "cron(0 20 * * ? *)", want: "0 20 * * *"},
		{in: "cron(0 20 ? * 0 *)", err: "days 1 to 7"},
		{in: "cron(0 20 ? * MON *)", err: "days 1 to 7"},
		{in: "cron(0 20 1 * 2 *)", err: "must be ?"},
		{in: "cron(0 20 ? * 2 2027)", err: "the year *"},
		{in: "at(2026-01-01T00:00:00)", err: "not a cron"},
		{in: "cron(0 20 ? * 2 *", err: "not a cron"},
	} {
		got, err := ParseAWSCron(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got.String() != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.in, got.String(), err, c.want)
		}
	}
}

func TestServingScheduleValidation(t *testing.T) {
	paths := func(errs []Problem) []string {
		var out []string
		for _, e := range errs {
			out = append(out, e.Path)
		}
		return out
	}
	s := nightSpec()
	if errs := ValidateServingEndpoint(s, nil); len(errs) != 0 {
		t.Fatalf("valid spec: %v", errs)
	}
	bad := nightSpec()
	a := bad.Variants[0].Autoscaling
	a.Schedules = append(a.Schedules,
		Schedule{Name: "zero", Recurrence: "0 22 * * *", Min: iptr(0)},
		Schedule{Name: "bad", Recurrence: "61 * * * *", Max: iptr(2)},
		Schedule{Name: "both", Recurrence: "0 1 1 * 1", Max: iptr(2)},
		Schedule{Name: "inverted", Recurrence: "0 2 * * *", Min: iptr(5)}, // above max 4
		Schedule{Name: "empty", Recurrence: "0 3 * * *"},
		Schedule{Name: "night-end", Recurrence: "0 4 * * *", Max: iptr(2)},
		Schedule{Name: "huge", Recurrence: "0 5 * * *", Max: iptr(1001), Min: iptr(1)},
	)
	got := paths(ValidateServingEndpoint(bad, nil))
	for _, want := range []string{
		"variants[0].autoscaling.schedule[2].min_capacity",
		"variants[0].autoscaling.schedule[3].recurrence",
		"variants[0].autoscaling.schedule[4].recurrence",
		"variants[0].autoscaling.schedule[5]",
		"variants[0].autoscaling.schedule[6]",
		"variants[0].autoscaling.schedule[7].name",
		"variants[0].autoscaling.schedule[8].max_capacity",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no error at %s; got %v", want, got)
		}
	}
	for _, e := range ValidateServingEndpoint(bad, nil) {
		if e.Path == "variants[0].autoscaling.schedule[2].min_capacity" && !strings.Contains(e.Detail, "cannot scale a SageMaker instance variant to 0") {
			t.Errorf("min 0 message %q", e.Detail)
		}
		if e.Path == "variants[0].autoscaling.schedule[6]" && !strings.Contains(e.Detail, "min_capacity, max_capacity") {
			t.Errorf("empty schedule message %q", e.Detail)
		}
	}
	// Unknown at plan: a schedule value, or the bounds it is checked
	// against, are checked at apply.
	for _, u := range []string{"variants[0].autoscaling.schedule[2].min_capacity", "variants[0].autoscaling.schedule", "variants[0].autoscaling.max_capacity"} {
		for _, e := range ValidateServingEndpoint(bad, []string{u}) {
			if strings.HasPrefix(e.Path, "variants[0].autoscaling.schedule") {
				t.Errorf("unknown %s: error %s at plan", u, e.Path)
			}
		}
	}
}

func TestServingScheduledActions(t *testing.T) {
	got, err := servingScheduledActions("fraud", nightSpec().Variants[0])
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range got {
		lines = append(lines, a.Name+" "+a.Schedule+" "+a.TimeZone+" "+p32(a.Min)+" "+p32(a.Max))
	}
	want := []string{
		"mlplatform-fraud-primary-night cron(0 20 ? * 2-6 *) Asia/Dubai - 1",
		"mlplatform-fraud-primary-night-end cron(0 7 ? * 3-7 *) Asia/Dubai 1 4",
		"mlplatform-fraud-primary-monday cron(30 7 ? * 2 *) UTC 3 -",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("actions\n got %q\nwant %q", lines, want)
	}
}

func p32(v *int32) string {
	if v == nil {
		return "-"
	}
	return itoa32(*v)
}

// Create puts the actions after the target; an update changes, adds and
// removes them; delete removes them before it deregisters (moto, like this
// fake, keeps the actions of a deregistered target).
func TestServingScheduleLifecycle(t *testing.T) {
	ctx := context.Background()
	f := newFakeServing()
	as := newFakeScaling(f)
	ep, err := createServing(ctx, f, as, nightSpec(), nil, "tok", fastWait)
	if err != nil {
		t.Fatal(err)
	}
	reg, put := slices.IndexFunc(f.calls, hasPrefix("aas:RegisterScalableTarget")), slices.IndexFunc(f.calls, hasPrefix("aas:PutScheduledAction"))
	if reg < 0 || put < reg {
		t.Fatalf("calls %v: PutScheduledAction must follow RegisterScalableTarget", f.calls)
	}
	if n := len(as.scheduledNames()); n != 3 {
		t.Fatalf("actions after create: %v", as.scheduledNames())
	}
	rb := ReadBackServingEndpointOf(ep, nightSpec(), "", nil)
	if got := rb.Spec.Variants[0].Autoscaling.Schedules; len(got) != 2 || !sameSchedule(got[0], nightSpec().Variants[0].Autoscaling.Schedules[0]) {
		t.Fatalf("read back schedules %+v", got)
	}
	prior := ServingEndpointPrior{Spec: nightSpec(), ConfigName: ep.ConfigName, ModelName: ep.ModelName}
	next := nightSpec()
	next.Variants[0].Autoscaling.Schedules = []Schedule{{Name: "night", Recurrence: "0 21 * * 1-5", Max: iptr(2)}}
	if _, err := updateServing(ctx, f, as, prior, next, nil, fastWait); err != nil {
		t.Fatal(err)
	}
	if got := as.scheduledNames(); !slices.Equal(got, []string{"mlplatform-fraud-primary-night | cron(0 21 ? * 2-6 *) | Asia/Dubai | - | 2"}) {
		t.Fatalf("actions after update: %q", got)
	}
	if err := deleteServing(ctx, f, as, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName}, fastWait); err != nil {
		t.Fatal(err)
	}
	if got := as.scheduledNames(); len(got) != 0 || len(as.targets) != 0 {
		t.Fatalf("after delete: actions %v targets %v", got, as.targets)
	}
}

// Imported (nothing declared), the variant's actions read back as the
// schedules that made them: the night window folded back with its 11h,
// the default time zone unset, recurrences in their canonical spelling;
// the plan against schedules declared so is then empty.
func TestServingScheduleImport(t *testing.T) {
	ctx := context.Background()
	f := newFakeServing()
	as := newFakeScaling(f)
	if _, err := createServing(ctx, f, as, nightSpec(), nil, "tok", fastWait); err != nil {
		t.Fatal(err)
	}
	ep, err := readServing(ctx, f, as, "fraud", ServingEndpointPrior{})
	if err != nil {
		t.Fatal(err)
	}
	rb := ReadBackServingEndpointOf(ep, ServingEndpointSpec{}, "", nil)
	got := rb.Spec.Variants[0].Autoscaling.Schedules
	slices.SortFunc(got, func(a, b Schedule) int { return strings.Compare(b.Name, a.Name) }) // night, monday
	want := nightSpec().Variants[0].Autoscaling.Schedules
	for i := range want { // AWS keeps the canonical spelling: "mon" reads back as 1
		c, err := ParseCron(want[i].Recurrence)
		if err != nil {
			t.Fatal(err)
		}
		want[i].Recurrence = c.String()
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("imported schedules:\n%+v\nwant:\n%+v", got, want)
	}
	declared := nightSpec()
	declared.Variants[0].Autoscaling.Schedules = want
	if p := PlanServingEndpoint(rb.Spec, declared, nil); len(p.InPlace) != 0 || p.NewConfig() {
		t.Errorf("plan after import: %+v", p)
	}
}

// A scheduled action changed or deleted outside reads back as its schedule
// absent: drift the next plan shows and its apply repairs.
func TestServingScheduleDrift(t *testing.T) {
	ctx := context.Background()
	f := newFakeServing()
	as := newFakeScaling(f)
	if _, err := createServing(ctx, f, as, nightSpec(), nil, "tok", fastWait); err != nil {
		t.Fatal(err)
	}
	a := as.scheduled[fakeScalingID]["mlplatform-fraud-primary-night-end"]
	a.ScalableTargetAction = &aastypes.ScalableTargetAction{MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(9)}
	as.scheduled[fakeScalingID]["mlplatform-fraud-primary-night-end"] = a
	delete(as.scheduled[fakeScalingID], "mlplatform-fraud-primary-monday")
	ep, err := readServing(ctx, f, as, "fraud", ServingEndpointPrior{})
	if err != nil {
		t.Fatal(err)
	}
	rb := ReadBackServingEndpointOf(ep, nightSpec(), "", nil)
	if got := rb.Spec.Variants[0].Autoscaling.Schedules; len(got) != 0 {
		t.Fatalf("read back %+v, want both schedules absent", got)
	}
	if p := PlanServingEndpoint(rb.Spec, nightSpec(), nil); len(p.InPlace) == 0 || p.NewConfig() {
		t.Fatalf("plan after drift %+v: want an in-place autoscaling change", p)
	}
}

// Every write of the schedules refused (throttled) or answered with a lost
// response: the apply fails, and the next apply converges to exactly the
// declared actions, nothing orphaned; delete leaves none.
func TestServingScheduleFaults(t *testing.T) {
	for _, op := range []string{"PutScheduledAction", "DeleteScheduledAction"} {
		for _, mode := range []string{"fail", "lose"} {
			t.Run(op+"/"+mode, func(t *testing.T) {
				ctx := context.Background()
				f := newFakeServing()
				as := newFakeScaling(f)
				ep, err := createServing(ctx, f, as, nightSpec(), nil, "tok", fastWait)
				if op == "PutScheduledAction" {
					// Fault the create's first put.
					f2 := newFakeServing()
					as = newFakeScaling(f2)
					f = f2
					as.faults[op] = mode
					ep, err = createServing(ctx, f, as, nightSpec(), nil, "tok", fastWait)
					if err == nil {
						t.Fatal("a faulted PutScheduledAction must fail the create")
					}
					if ep == nil {
						t.Fatal("the endpoint in service must be returned for the record")
					}
				} else if err != nil {
					t.Fatal(err)
				}
				prior := ServingEndpointPrior{Spec: nightSpec(), ConfigName: ep.ConfigName, ModelName: ep.ModelName}
				next := nightSpec()
				next.Variants[0].Autoscaling.Schedules = next.Variants[0].Autoscaling.Schedules[:1]
				if op == "DeleteScheduledAction" {
					as.faults[op] = mode
					if _, err := updateServing(ctx, f, as, prior, next, nil, fastWait); err == nil {
						t.Fatal("a faulted DeleteScheduledAction must fail the update")
					}
				}
				if _, err := updateServing(ctx, f, as, prior, next, nil, fastWait); err != nil {
					t.Fatalf("re-apply: %v", err)
				}
				want := []string{
					"mlplatform-fraud-primary-night | cron(0 20 ? * 2-6 *) | Asia/Dubai | - | 1",
					"mlplatform-fraud-primary-night-end | cron(0 7 ? * 3-7 *) | Asia/Dubai | 1 | 4",
				}
				if got := as.scheduledNames(); !slices.Equal(got, want) {
					t.Fatalf("after re-apply\n got %q\nwant %q", got, want)
				}
				as.faults[op] = mode
				if err := deleteServing(ctx, f, as, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName}, fastWait); err == nil && op == "DeleteScheduledAction" {
					t.Fatal("a faulted DeleteScheduledAction must fail the delete before the endpoint goes")
				}
				delete(as.faults, op)
				if err := deleteServing(ctx, f, as, "fraud", ServingEndpointPrior{ConfigName: ep.ConfigName, ModelName: ep.ModelName}, fastWait); err != nil {
					t.Fatalf("delete again: %v", err)
				}
				if got := as.scheduledNames(); len(got) != 0 || len(as.targets) != 0 {
					t.Fatalf("after delete: actions %v targets %v", got, as.targets)
				}
			})
		}
	}
}
