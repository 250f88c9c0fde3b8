package pulumi

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

func servingAlarmInputs(image string, latencyMs float64) property.Map {
	in := servingInputs(image).AsMap()
	in["deployment"] = property.New(property.NewMap(map[string]property.Value{
		"standardAlarms": property.New(property.NewMap(map[string]property.Value{"latencyP99Ms": property.New(latencyMs)})),
	}))
	return property.NewMap(in)
}

// alarmThresholds reads the thresholds of endpoint fraud's alarms in the
// emulator, by name.
func alarmThresholds(t *testing.T, h *acctest.Harness) map[string]float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.CloudWatch().DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("mlplatform-fraud-")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, a := range out.MetricAlarms {
		got[aws.ToString(a.AlarmName)] = aws.ToFloat64(a.Threshold)
	}
	return got
}

// The Pulumi front end passes the standard alarms on: created with the
// endpoint (a PutMetricAlarm answer lost on the way: put again, no
// failure), listed in standardAlarmNames, put again with a new threshold,
// read back as declared, and deleted with the endpoint.
func TestServingEndpoint_standardAlarms(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-models")
	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("ServingEndpoint", "fraud")
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: servingAlarmInputs(svTestImage, 400)})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	h.Shim.AddRule(acctest.FaultRule{Service: "monitoring", Action: "PutMetricAlarm", Times: 1, LoseResponse: true})
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	h.Shim.ClearRules()
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	// Two alarms, the first put twice: its answer was lost, the SDK put it again.
	if n := len(h.Shim.Calls("monitoring", "PutMetricAlarm")); n != 3 {
		t.Fatalf("%d PutMetricAlarm calls, want 3 (the lost one, its retry, the other alarm)", n)
	}
	names := created.Properties.Get("standardAlarmNames").AsArray().AsSlice()
	if len(names) != 2 || names[0].AsString() != "mlplatform-fraud-primary-p99-latency" || names[1].AsString() != "mlplatform-fraud-primary-5xx" {
		t.Fatalf("standardAlarmNames %v", names)
	}
	want := map[string]float64{"mlplatform-fraud-primary-p99-latency": 400000, "mlplatform-fraud-primary-5xx": 0.01}
	if got := alarmThresholds(t, h); len(got) != 2 || got["mlplatform-fraud-primary-p99-latency"] != want["mlplatform-fraud-primary-p99-latency"] || got["mlplatform-fraud-primary-5xx"] != want["mlplatform-fraud-primary-5xx"] {
		t.Fatalf("alarms %v, want %v", got, want)
	}

	check2, err := s.Check(p.CheckRequest{Urn: u, State: check.Inputs, Inputs: servingAlarmInputs(svTestImage, 300)})
	if err != nil || len(check2.Failures) > 0 {
		t.Fatalf("check of the update: %v %+v", err, check2.Failures)
	}
	diff, err := s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check2.Inputs})
	if err != nil || !diff.HasChanges {
		t.Fatalf("diff of a threshold change: %v, changes %t", err, diff.HasChanges)
	}
	updated, err := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, OldInputs: check.Inputs, Inputs: check2.Inputs})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if got := alarmThresholds(t, h)["mlplatform-fraud-primary-p99-latency"]; got != 300000 {
		t.Fatalf("p99 threshold %g after the update, want 300000", got)
	}
	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: check2.Inputs})
	if err != nil {
		t.Fatal(err)
	}
	if got := read.Inputs.Get("deployment").AsMap().Get("standardAlarms").AsMap().Get("latencyP99Ms").AsNumber(); got != 300 {
		t.Fatalf("read back latencyP99Ms %g, want 300", got)
	}
	if err := s.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if got := alarmThresholds(t, h); len(got) != 0 {
		t.Fatalf("alarms left after delete: %v", got)
	}
}
