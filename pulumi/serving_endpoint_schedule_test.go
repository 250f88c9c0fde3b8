package pulumi

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

// servingScheduleInputs is servingInputs with the variant autoscaled (1 to
// 4) and the schedules given.
func servingScheduleInputs(schedules ...property.Value) property.Map {
	in := servingInputs(svTestImage)
	v := in.Get("variants").AsArray().Get(0).AsMap()
	v = v.Set("autoscaling", property.New(property.NewMap(map[string]property.Value{
		"minCapacity": property.New(1.0), "maxCapacity": property.New(4.0), "targetInvocationsPerInstance": property.New(100.0),
		"schedule": property.New(schedules),
	})))
	return in.Set("variants", property.New([]property.Value{property.New(v)}))
}

func servingScheduleValue(m map[string]property.Value) property.Value {
	return property.New(property.NewMap(m))
}

// sagemakerScheduledActions lists the emulator's sagemaker scheduled
// actions as "name schedule zone".
func sagemakerScheduledActions(t *testing.T, h *acctest.Harness) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.AppAutoScaling.DescribeScheduledActions(ctx, &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range out.ScheduledActions {
		got = append(got, aws.ToString(a.ScheduledActionName)+" "+aws.ToString(a.Schedule)+" "+aws.ToString(a.Timezone))
	}
	slices.Sort(got)
	return got
}

// Check refuses a schedule that scales an instance variant to 0 and a bad
// duration on their properties, and leaves a capacity not known yet to
// apply.
func TestServingEndpoint_scheduleCheck(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-models")
	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("ServingEndpoint", "fraud")
	bad := servingScheduleInputs(
		servingScheduleValue(map[string]property.Value{"name": property.New("off"), "recurrence": property.New("0 20 * * *"), "minCapacity": property.New(0.0)}),
		servingScheduleValue(map[string]property.Value{"name": property.New("x"), "recurrence": property.New("0 21 * * *"), "duration": property.New("soon"), "maxCapacity": property.New(2.0)}),
	)
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: bad})
	if err != nil {
		t.Fatal(err)
	}
	var props []string
	for _, f := range check.Failures {
		props = append(props, f.Property)
		if f.Property == "variants[0].autoscaling.schedule[0].minCapacity" && !strings.Contains(f.Reason, "cannot scale a SageMaker instance variant to 0") {
			t.Errorf("reason %q", f.Reason)
		}
	}
	for _, want := range []string{"variants[0].autoscaling.schedule[0].minCapacity", "variants[0].autoscaling.schedule[1].duration"} {
		if !slices.Contains(props, want) {
			t.Errorf("no failure on %s; got %+v", want, check.Failures)
		}
	}
	later := servingScheduleInputs(servingScheduleValue(map[string]property.Value{"name": property.New("off"), "recurrence": property.New("0 20 * * *"), "minCapacity": property.New(property.Computed)}))
	check, err = s.Check(p.CheckRequest{Urn: u, Inputs: later})
	if err != nil || len(check.Failures) != 0 {
		t.Fatalf("check with a capacity known only at apply: %v %+v", err, check.Failures)
	}
}

// Create puts the scheduled actions, the first PutScheduledAction's answer
// lost (the retry converges); the state keeps the declared duration text;
// a refresh with an action deleted outside drops its schedule (drift);
// delete leaves no action.
func TestServingEndpoint_scheduleLifecycle(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-models")
	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("ServingEndpoint", "fraud")
	in := servingScheduleInputs(
		servingScheduleValue(map[string]property.Value{"name": property.New("night"), "recurrence": property.New("0 20 * * 1-5"), "duration": property.New("11h"), "maxCapacity": property.New(1.0)}),
		servingScheduleValue(map[string]property.Value{"name": property.New("monday"), "recurrence": property.New("30 7 * * mon"), "timeZone": property.New("UTC"), "minCapacity": property.New(3.0)}),
	)
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: in})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	var lost atomic.Int32
	h.Shim.AddRule(acctest.FaultRule{Service: "application-autoscaling", Action: "PutScheduledAction", Times: 1, LoseResponse: true, Before: func(*acctest.Request) { lost.Add(1) }})
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	h.Shim.ClearRules()
	if lost.Load() != 1 {
		t.Fatal("the lost-answer fault never fired")
	}
	if err != nil {
		// The create failed after the endpoint served: the engine records
		// it; the next up updates to the same inputs.
		if created.ID == "" {
			t.Fatalf("create: %v, and nothing recorded", err)
		}
		upd, uerr := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, OldInputs: check.Inputs, Inputs: check.Inputs})
		if uerr != nil {
			t.Fatalf("re-apply after %v: %v", err, uerr)
		}
		created.Properties = upd.Properties
	}
	want := []string{
		"mlplatform-fraud-primary-monday cron(30 7 ? * 2 *) UTC",
		"mlplatform-fraud-primary-night cron(0 20 ? * 2-6 *) Asia/Dubai",
		"mlplatform-fraud-primary-night-end cron(0 7 ? * 3-7 *) Asia/Dubai",
	}
	if got := sagemakerScheduledActions(t, h); !slices.Equal(got, want) {
		t.Fatalf("actions\n got %q\nwant %q", got, want)
	}
	sched := created.Properties.Get("variants").AsArray().Get(0).AsMap().Get("autoscaling").AsMap().Get("schedule").AsArray()
	if sched.Len() != 2 || sched.Get(0).AsMap().Get("duration").AsString() != "11h" {
		t.Fatalf("state schedules %v, want both with the declared duration 11h", sched)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppAutoScaling.DeleteScheduledAction(ctx, &applicationautoscaling.DeleteScheduledActionInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker,
		ResourceId: aws.String("endpoint/fraud/variant/primary"), ScalableDimension: "sagemaker:variant:DesiredInstanceCount", ScheduledActionName: aws.String("mlplatform-fraud-primary-monday")}); err != nil {
		t.Fatal(err)
	}
	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: check.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	sched = read.Properties.Get("variants").AsArray().Get(0).AsMap().Get("autoscaling").AsMap().Get("schedule").AsArray()
	if sched.Len() != 1 || sched.Get(0).AsMap().Get("name").AsString() != "night" {
		t.Fatalf("refreshed schedules %v, want only night (monday deleted outside)", sched)
	}
	if err := s.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: read.Properties}); err != nil {
		t.Fatal(err)
	}
	if got := sagemakerScheduledActions(t, h); len(got) != 0 {
		t.Fatalf("actions left after delete: %q", got)
	}
}
