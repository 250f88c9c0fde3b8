package platform

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// fakeAlarms is a test double of CloudWatch's alarm calls (no emulator
// runs in unit tests): alarms by name as put, with their tags.
type fakeAlarms struct {
	alarms  map[string]*cloudwatch.PutMetricAlarmInput
	puts    []string
	deletes []string
	retags  []string // "tag NAME k=v,..." and "untag NAME k,..."
}

func newFakeAlarms() *fakeAlarms {
	return &fakeAlarms{alarms: map[string]*cloudwatch.PutMetricAlarmInput{}}
}

func (f *fakeAlarms) PutMetricAlarm(_ context.Context, in *cloudwatch.PutMetricAlarmInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error) {
	name := aws.ToString(in.AlarmName)
	f.puts = append(f.puts, name)
	if old, ok := f.alarms[name]; ok {
		in.Tags = old.Tags // tags are set on create only
	}
	f.alarms[name] = in
	return &cloudwatch.PutMetricAlarmOutput{}, nil
}

func (f *fakeAlarms) DescribeAlarms(_ context.Context, in *cloudwatch.DescribeAlarmsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
	out := &cloudwatch.DescribeAlarmsOutput{}
	for _, name := range sortedKeys(f.alarms) {
		if len(in.AlarmNames) > 0 && !slices.Contains(in.AlarmNames, name) {
			continue
		}
		if p := aws.ToString(in.AlarmNamePrefix); p != "" && !strings.HasPrefix(name, p) {
			continue
		}
		a := f.alarms[name]
		out.MetricAlarms = append(out.MetricAlarms, cwtypes.MetricAlarm{
			AlarmName: a.AlarmName, AlarmArn: aws.String("arn:aws:cloudwatch:me-central-1:123456789012:alarm:" + name),
			Namespace: a.Namespace, MetricName: a.MetricName, ExtendedStatistic: a.ExtendedStatistic, Period: a.Period,
			Dimensions: a.Dimensions, Metrics: a.Metrics, Threshold: a.Threshold, EvaluationPeriods: a.EvaluationPeriods,
			ComparisonOperator: a.ComparisonOperator, TreatMissingData: a.TreatMissingData,
		})
	}
	return out, nil
}

func (f *fakeAlarms) DeleteAlarms(_ context.Context, in *cloudwatch.DeleteAlarmsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error) {
	for _, n := range in.AlarmNames {
		f.deletes = append(f.deletes, n)
		delete(f.alarms, n)
	}
	return &cloudwatch.DeleteAlarmsOutput{}, nil
}

func (f *fakeAlarms) ListTagsForResource(_ context.Context, in *cloudwatch.ListTagsForResourceInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.ListTagsForResourceOutput, error) {
	name := aws.ToString(in.ResourceARN)[strings.LastIndex(aws.ToString(in.ResourceARN), ":")+1:]
	a, ok := f.alarms[name]
	if !ok {
		return nil, errors.New("ResourceNotFound")
	}
	return &cloudwatch.ListTagsForResourceOutput{Tags: a.Tags}, nil
}

func (f *fakeAlarms) alarmOf(arn *string) (*cloudwatch.PutMetricAlarmInput, string, error) {
	name := aws.ToString(arn)[strings.LastIndex(aws.ToString(arn), ":")+1:]
	a, ok := f.alarms[name]
	if !ok {
		return nil, name, errors.New("ResourceNotFound")
	}
	return a, name, nil
}

func (f *fakeAlarms) TagResource(_ context.Context, in *cloudwatch.TagResourceInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.TagResourceOutput, error) {
	a, name, err := f.alarmOf(in.ResourceARN)
	if err != nil {
		return nil, err
	}
	var kv []string
	for _, t := range in.Tags {
		kv = append(kv, aws.ToString(t.Key)+"="+aws.ToString(t.Value))
		a.Tags = slices.DeleteFunc(a.Tags, func(o cwtypes.Tag) bool { return aws.ToString(o.Key) == aws.ToString(t.Key) })
		a.Tags = append(a.Tags, t)
	}
	f.retags = append(f.retags, "tag "+name+" "+strings.Join(kv, ","))
	return &cloudwatch.TagResourceOutput{}, nil
}

func (f *fakeAlarms) UntagResource(_ context.Context, in *cloudwatch.UntagResourceInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.UntagResourceOutput, error) {
	a, name, err := f.alarmOf(in.ResourceARN)
	if err != nil {
		return nil, err
	}
	a.Tags = slices.DeleteFunc(a.Tags, func(o cwtypes.Tag) bool { return slices.Contains(in.TagKeys, aws.ToString(o.Key)) })
	f.retags = append(f.retags, "untag "+name+" "+strings.Join(in.TagKeys, ","))
	return &cloudwatch.UntagResourceOutput{}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func alarmSpec(latencyMs float64, variants ...string) ServingEndpointSpec {
	s := ServingEndpointSpec{Name: "fraud", Deployment: &ServingDeployment{StandardAlarms: &ServingStandardAlarms{LatencyP99Ms: latencyMs}}}
	for _, v := range variants {
		s.Variants = append(s.Variants, ServingVariant{Name: v, InstanceType: "ml.m5.large", InitialInstanceCount: 1})
	}
	return s
}

func TestServingStandardAlarmNames(t *testing.T) {
	got := ServingStandardAlarmNames(alarmSpec(0, "a", "b"))
	want := []string{"mlplatform-fraud-a-p99-latency", "mlplatform-fraud-a-5xx", "mlplatform-fraud-b-p99-latency", "mlplatform-fraud-b-5xx"}
	if !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	if n := ServingStandardAlarmNames(ServingEndpointSpec{Name: "fraud", Deployment: &ServingDeployment{}}); n != nil {
		t.Fatalf("names %v without standard alarms, want nil", n)
	}
	if _, known := ServingStandardAlarmNamesOf(alarmSpec(0, "a"), []string{"variants[0].name"}); known {
		t.Fatal("names known while a variant's name is not")
	}
	// The deployment config names them after the user's alarms.
	s := alarmSpec(0, "a")
	s.Deployment.RollbackAlarms = []string{"mine"}
	if d := servingDeployment(s); !slices.Equal(d.RollbackAlarms, []string{"mine", "mlplatform-fraud-a-p99-latency", "mlplatform-fraud-a-5xx"}) {
		t.Fatalf("rollback alarms %v", d.RollbackAlarms)
	}
}

func TestValidateServingStandardAlarms(t *testing.T) {
	base := func() ServingEndpointSpec {
		s := alarmSpec(500, "a")
		s.Model = ServingModel{Image: "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud:1", ExecutionRoleARN: "arn:aws:iam::123456789012:role/serving"}
		return s
	}
	cases := []struct {
		name   string
		change func(*ServingEndpointSpec)
		path   string
	}{
		{"valid", func(*ServingEndpointSpec) {}, ""},
		{"rate over 1", func(s *ServingEndpointSpec) { s.Deployment.StandardAlarms.Error5XXRate = 5 }, "deployment.standard_alarms.error_5xx_rate"},
		{"negative latency", func(s *ServingEndpointSpec) { s.Deployment.StandardAlarms.LatencyP99Ms = -1 }, "deployment.standard_alarms.latency_p99_ms"},
		{"period not minutes", func(s *ServingEndpointSpec) { s.Deployment.StandardAlarms.PeriodSeconds = 90 }, "deployment.standard_alarms.period_seconds"},
		{"window over a day", func(s *ServingEndpointSpec) {
			s.Deployment.StandardAlarms.PeriodSeconds, s.Deployment.StandardAlarms.EvaluationPeriods = 3600, 25
		}, "deployment.standard_alarms.evaluation_periods"},
		{"more than 10 in all", func(s *ServingEndpointSpec) {
			s.Deployment.RollbackAlarms = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}
		}, "deployment.standard_alarms"},
		{"a standard alarm in rollback_alarms", func(s *ServingEndpointSpec) {
			s.Deployment.RollbackAlarms = []string{"mlplatform-fraud-a-5xx"}
		}, "deployment.rollback_alarms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base()
			c.change(&s)
			errs := ValidateServingEndpoint(s, nil)
			if c.path == "" {
				if len(errs) > 0 {
					t.Fatalf("errors %v", errs)
				}
				return
			}
			if !slices.ContainsFunc(errs, func(e Problem) bool { return e.Path == c.path }) {
				t.Fatalf("errors %v, want one at %s", errs, c.path)
			}
		})
	}
	// Unknown at plan: not checked yet.
	s := base()
	s.Deployment.RollbackAlarms = []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}
	if errs := ValidateServingEndpoint(s, []string{"variants"}); len(errs) > 0 {
		t.Fatalf("errors %v with the variants unknown", errs)
	}
}

func TestApplyServingAlarms(t *testing.T) {
	ctx := context.Background()
	f := newFakeAlarms()
	s := alarmSpec(500, "a")
	tags := map[string]string{"team": "fraud"}
	if err := applyServingAlarms(ctx, f, s, tags, "tok", false); err != nil {
		t.Fatal(err)
	}
	p99 := f.alarms["mlplatform-fraud-a-p99-latency"]
	if p99 == nil || aws.ToFloat64(p99.Threshold) != 500000 || aws.ToString(p99.ExtendedStatistic) != "p99" || aws.ToString(p99.MetricName) != "ModelLatency" {
		t.Fatalf("p99 alarm %+v: want ModelLatency p99 above 500000 microseconds", p99)
	}
	rate := f.alarms["mlplatform-fraud-a-5xx"]
	if rate == nil || aws.ToFloat64(rate.Threshold) != ServingDefault5XXRate || aws.ToString(rate.TreatMissingData) != "notBreaching" || len(rate.Metrics) != 3 {
		t.Fatalf("5xx alarm %+v", rate)
	}
	// Unchanged: nothing put.
	f.puts = nil
	if err := applyServingAlarms(ctx, f, s, tags, "tok", true); err != nil || len(f.puts) > 0 {
		t.Fatalf("second apply: %v, puts %v", err, f.puts)
	}
	// A threshold changes: that alarm only.
	if err := applyServingAlarms(ctx, f, alarmSpec(250, "a"), tags, "tok", true); err != nil || !slices.Equal(f.puts, []string{"mlplatform-fraud-a-p99-latency"}) {
		t.Fatalf("threshold change: %v, puts %v", err, f.puts)
	}
	// The endpoint's tags change: the alarms are retagged (a tag set, one
	// changed, one removed; AWS's own left alone), not put again.
	f.puts, f.retags = nil, nil
	for _, a := range f.alarms {
		a.Tags = append(a.Tags, cwtypes.Tag{Key: aws.String("aws:cloudformation:stack-name"), Value: aws.String("x")})
	}
	tags2 := map[string]string{"team": "risk", "stage": "two"}
	if err := applyServingAlarms(ctx, f, alarmSpec(250, "a"), tags2, "tok", true); err != nil || len(f.puts) > 0 {
		t.Fatalf("tag change: %v, puts %v (want none)", err, f.puts)
	}
	wantRetags := []string{"tag mlplatform-fraud-a-p99-latency stage=two,team=risk", "tag mlplatform-fraud-a-5xx stage=two,team=risk"}
	if !slices.Equal(f.retags, wantRetags) {
		t.Fatalf("retags %q, want %q", f.retags, wantRetags)
	}
	f.retags = nil
	if err := applyServingAlarms(ctx, f, alarmSpec(250, "a"), map[string]string{"stage": "two"}, "tok", true); err != nil ||
		!slices.Equal(f.retags, []string{"untag mlplatform-fraud-a-p99-latency team", "untag mlplatform-fraud-a-5xx team"}) {
		t.Fatalf("tag removed: %v, retags %q", err, f.retags)
	}
	// Tags and a threshold change together: put, then retag.
	f.puts, f.retags = nil, nil
	if err := applyServingAlarms(ctx, f, alarmSpec(300, "a"), tags, "tok", true); err != nil ||
		!slices.Equal(f.puts, []string{"mlplatform-fraud-a-p99-latency"}) || len(f.retags) != 4 {
		t.Fatalf("threshold and tags: %v, puts %v, retags %q", err, f.puts, f.retags)
	}
	for _, a := range f.alarms {
		got := map[string]string{}
		for _, tg := range a.Tags {
			got[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
		}
		if got["team"] != "fraud" || got["stage"] != "" || got[ServingEndpointTokenTag] != "tok" || got[ServingEndpointTag] != "fraud" || got["aws:cloudformation:stack-name"] != "x" {
			t.Fatalf("alarm %s tags %v", aws.ToString(a.AlarmName), got)
		}
	}
	f.retags = nil
	if err := applyServingAlarms(ctx, f, alarmSpec(300, "a"), tags, "tok", true); err != nil || len(f.retags) > 0 {
		t.Fatalf("in step: %v, retags %q (want none)", err, f.retags)
	}
	if err := applyServingAlarms(ctx, f, alarmSpec(250, "a"), tags, "tok", true); err != nil {
		t.Fatal(err)
	}
	// Another token (another endpoint of the name, made before): refused.
	f.puts = nil
	if err := applyServingAlarms(ctx, f, s, tags, "other", true); !errors.Is(err, ErrServingAlarmForeign) || len(f.puts) > 0 {
		t.Fatalf("apply with another token: %v, puts %v", err, f.puts)
	}
	// Variant b goes: its alarms go, a foreign alarm of the prefix stays.
	if err := applyServingAlarms(ctx, f, alarmSpec(250, "a", "b"), tags, "tok", true); err != nil {
		t.Fatal(err)
	}
	f.alarms["mlplatform-fraud-c-5xx"] = &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("mlplatform-fraud-c-5xx")}
	f.deletes = nil
	if err := applyServingAlarms(ctx, f, alarmSpec(250, "a"), tags, "tok", true); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.deletes, []string{"mlplatform-fraud-b-5xx", "mlplatform-fraud-b-p99-latency"}) {
		t.Fatalf("deleted %v, want variant b's alarms only", f.deletes)
	}
	// Delete with the endpoint gone (no token known): its own alarms go,
	// the foreign one stays.
	if err := deleteServingAlarms(ctx, f, "fraud", ""); err != nil {
		t.Fatal(err)
	}
	if got := sortedKeys(f.alarms); !slices.Equal(got, []string{"mlplatform-fraud-c-5xx"}) {
		t.Fatalf("left %v, want only the foreign alarm", got)
	}
}

func TestApplyServingAlarmsRefusesForeign(t *testing.T) {
	f := newFakeAlarms()
	f.alarms["mlplatform-fraud-a-5xx"] = &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("mlplatform-fraud-a-5xx"), Threshold: aws.Float64(7)}
	err := applyServingAlarms(context.Background(), f, alarmSpec(500, "a"), nil, "tok", true)
	if !errors.Is(err, ErrServingAlarmForeign) || !strings.Contains(err.Error(), "mlplatform-fraud-a-5xx") {
		t.Fatalf("err %v, want ErrServingAlarmForeign naming the alarm", err)
	}
	if len(f.puts) > 0 || len(f.deletes) > 0 || aws.ToFloat64(f.alarms["mlplatform-fraud-a-5xx"].Threshold) != 7 {
		t.Fatalf("puts %v, deletes %v: the foreign alarm was touched", f.puts, f.deletes)
	}
}

func TestReadBackStandardAlarms(t *testing.T) {
	ctx := context.Background()
	declared := alarmSpec(500, "a")
	read := func(f *fakeAlarms) map[string]cloud.ServingAlarm {
		ep := &ServingEndpoint{Spec: ServingEndpointSpec{Name: "fraud"}, CreationToken: "tok"}
		if err := withServingAlarms(ctx, f, ep); err != nil {
			t.Fatal(err)
		}
		return ep.alarms
	}
	f := newFakeAlarms()
	if err := applyServingAlarms(ctx, f, declared, nil, "tok", false); err != nil {
		t.Fatal(err)
	}
	if got := readBackStandardAlarms(declared, read(f)); got == nil || *got != *declared.Deployment.StandardAlarms {
		t.Fatalf("as put: %+v, want as declared", got)
	}
	f.alarms["mlplatform-fraud-a-p99-latency"].Threshold = aws.Float64(900000)
	if got := readBackStandardAlarms(declared, read(f)); got == nil || got.LatencyP99Ms != 900 {
		t.Fatalf("threshold changed outside: %+v, want 900 ms", got)
	}
	delete(f.alarms, "mlplatform-fraud-a-5xx")
	if got := readBackStandardAlarms(declared, read(f)); got != nil {
		t.Fatalf("alarm deleted outside: %+v, want nil (drift)", got)
	}
	if got := readBackStandardAlarms(declared, nil); got != declared.Deployment.StandardAlarms {
		t.Fatal("not read: want as declared")
	}
}
