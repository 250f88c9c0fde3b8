package cloud

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"
)

// ServingAlarmAPI is the part of the CloudWatch API the serving endpoint's
// standard alarms use. CloudWatchClient (the handle on *cloudwatch.Client) implements it.
type ServingAlarmAPI interface {
	PutMetricAlarm(ctx context.Context, in *cloudwatch.PutMetricAlarmInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error)
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
	DeleteAlarms(ctx context.Context, in *cloudwatch.DeleteAlarmsInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error)
	ListTagsForResource(ctx context.Context, in *cloudwatch.ListTagsForResourceInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.ListTagsForResourceOutput, error)
	TagResource(ctx context.Context, in *cloudwatch.TagResourceInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.TagResourceOutput, error)
	UntagResource(ctx context.Context, in *cloudwatch.UntagResourceInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.UntagResourceOutput, error)
}

// newCloudWatch builds the CloudWatch client. It speaks the awsQuery
// protocol, which CloudWatch serves beside the SDK's default (Smithy RPC v2
// CBOR) and which emulators and VPC endpoint proxies understand too.
func newCloudWatch(cfg aws.Config, endpoint string) *cloudwatch.Client {
	return cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.Protocol = awsquery.New(schemas.GraniteServiceVersion20100801)
	})
}

// CloudWatch returns the CloudWatch client, built on first use: only
// serving endpoints with standard alarms need it.
func (c *Clients) CloudWatch() CloudWatchClient {
	c.cwOnce.Do(func() { c.cw = NewCloudWatchClient(newCloudWatch(c.AWS, c.cwEndpoint)) })
	return c.cw
}

// SageMaker metrics of an endpoint variant, and what the standard alarms
// compare.
const (
	SageMakerNamespace       = "AWS/SageMaker"
	MetricModelLatency       = "ModelLatency" // microseconds
	MetricInvocations        = "Invocations"
	MetricInvocation5XX      = "Invocation5XXErrors"
	DimensionEndpointName    = "EndpointName"
	DimensionVariantName     = "VariantName"
	alarmTreatMissingData    = "notBreaching"
	alarmComparisonOperator  = cwtypes.ComparisonOperatorGreaterThanThreshold
	alarmErrorRateExpression = "errors / invocations"
)

// ServingAlarmKind is what a standard alarm watches.
type ServingAlarmKind string

// Standard alarm kinds.
const (
	AlarmLatencyP99 ServingAlarmKind = "p99-latency"
	Alarm5XXRate    ServingAlarmKind = "5xx"
)

// ServingAlarm is one standard alarm of an endpoint variant, as put and as
// read back.
type ServingAlarm struct {
	Name              string
	Kind              ServingAlarmKind
	Endpoint, Variant string
	// Threshold: microseconds of p99 ModelLatency, or the fraction of
	// invocations answered 5xx.
	Threshold         float64
	PeriodSeconds     int32
	EvaluationPeriods int32
	Tags              map[string]string
	// ARN is set on read.
	ARN string
}

func dims(endpoint, variant string) []cwtypes.Dimension {
	return []cwtypes.Dimension{
		{Name: aws.String(DimensionEndpointName), Value: aws.String(endpoint)},
		{Name: aws.String(DimensionVariantName), Value: aws.String(variant)},
	}
}

// PutServingAlarm creates or replaces the alarm: PutMetricAlarm replaces an
// alarm of the name, so a retry after a lost answer is harmless. Tags are
// applied when the alarm is created.
func PutServingAlarm(ctx context.Context, api ServingAlarmAPI, a ServingAlarm) error {
	in := &cloudwatch.PutMetricAlarmInput{
		AlarmName:          aws.String(a.Name),
		AlarmDescription:   aws.String(fmt.Sprintf("mlplatform standard rollback alarm (%s) of endpoint %s, variant %s", a.Kind, a.Endpoint, a.Variant)),
		ComparisonOperator: alarmComparisonOperator,
		EvaluationPeriods:  aws.Int32(a.EvaluationPeriods),
		Threshold:          aws.Float64(a.Threshold),
		TreatMissingData:   aws.String(alarmTreatMissingData),
		ActionsEnabled:     aws.Bool(true),
	}
	for _, k := range slices.Sorted(maps.Keys(a.Tags)) {
		in.Tags = append(in.Tags, cwtypes.Tag{Key: aws.String(k), Value: aws.String(a.Tags[k])})
	}
	switch a.Kind {
	case AlarmLatencyP99:
		in.Namespace = aws.String(SageMakerNamespace)
		in.MetricName = aws.String(MetricModelLatency)
		in.ExtendedStatistic = aws.String("p99")
		in.Period = aws.Int32(a.PeriodSeconds)
		in.Dimensions = dims(a.Endpoint, a.Variant)
	case Alarm5XXRate:
		stat := func(id, metric string) cwtypes.MetricDataQuery {
			return cwtypes.MetricDataQuery{Id: aws.String(id), ReturnData: aws.Bool(false), MetricStat: &cwtypes.MetricStat{
				Period: aws.Int32(a.PeriodSeconds), Stat: aws.String("Sum"),
				Metric: &cwtypes.Metric{Namespace: aws.String(SageMakerNamespace), MetricName: aws.String(metric), Dimensions: dims(a.Endpoint, a.Variant)},
			}}
		}
		in.Metrics = []cwtypes.MetricDataQuery{
			stat("errors", MetricInvocation5XX),
			stat("invocations", MetricInvocations),
			{Id: aws.String("rate"), Expression: aws.String(alarmErrorRateExpression), Label: aws.String("5xx rate"), ReturnData: aws.Bool(true)},
		}
	default:
		return fmt.Errorf("alarm %s: unknown kind %q", a.Name, a.Kind)
	}
	if _, err := api.PutMetricAlarm(ctx, in); err != nil {
		return fmt.Errorf("putting alarm %s: %w", a.Name, err)
	}
	return nil
}

// RetagServingAlarm gives an existing alarm (by ARN) the tags in set and
// removes the keys in remove: PutMetricAlarm sets tags only when it creates
// an alarm. Both calls set a state, so a retry is harmless.
func RetagServingAlarm(ctx context.Context, api ServingAlarmAPI, name, arn string, set map[string]string, remove []string) error {
	if len(set) > 0 {
		in := &cloudwatch.TagResourceInput{ResourceARN: aws.String(arn)}
		for _, k := range slices.Sorted(maps.Keys(set)) {
			in.Tags = append(in.Tags, cwtypes.Tag{Key: aws.String(k), Value: aws.String(set[k])})
		}
		if _, err := api.TagResource(ctx, in); err != nil {
			return fmt.Errorf("tagging alarm %s: %w", name, err)
		}
	}
	if len(remove) > 0 {
		if _, err := api.UntagResource(ctx, &cloudwatch.UntagResourceInput{ResourceARN: aws.String(arn), TagKeys: remove}); err != nil {
			return fmt.Errorf("untagging alarm %s: %w", name, err)
		}
	}
	return nil
}

// FindServingAlarms reads the metric alarms of the given names (at most
// 100), with their tags, by name. A name missing from the map does not
// exist. An alarm that is not of a standard kind (its metric changed
// outside) comes back with an empty Kind.
func FindServingAlarms(ctx context.Context, api ServingAlarmAPI, names []string) (map[string]ServingAlarm, error) {
	out := map[string]ServingAlarm{}
	if len(names) == 0 {
		return out, nil
	}
	return out, describeAlarms(ctx, api, &cloudwatch.DescribeAlarmsInput{AlarmNames: names, AlarmTypes: []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm}}, out)
}

// ListServingAlarms reads the metric alarms whose names start with prefix,
// with their tags.
func ListServingAlarms(ctx context.Context, api ServingAlarmAPI, prefix string) (map[string]ServingAlarm, error) {
	out := map[string]ServingAlarm{}
	return out, describeAlarms(ctx, api, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String(prefix), AlarmTypes: []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm}}, out)
}

func describeAlarms(ctx context.Context, api ServingAlarmAPI, in *cloudwatch.DescribeAlarmsInput, out map[string]ServingAlarm) error {
	for {
		page, err := api.DescribeAlarms(ctx, in)
		if err != nil {
			return fmt.Errorf("describing alarms: %w", err)
		}
		for _, m := range page.MetricAlarms {
			a := servingAlarmFrom(m)
			tags, err := api.ListTagsForResource(ctx, &cloudwatch.ListTagsForResourceInput{ResourceARN: m.AlarmArn})
			if err != nil {
				return fmt.Errorf("listing tags of alarm %s: %w", a.Name, err)
			}
			a.Tags = map[string]string{}
			for _, t := range tags.Tags {
				a.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			out[a.Name] = a
		}
		if aws.ToString(page.NextToken) == "" {
			return nil
		}
		in.NextToken = page.NextToken
	}
}

// servingAlarmFrom recognises a standard alarm in what CloudWatch says; an
// alarm of another shape has an empty Kind.
func servingAlarmFrom(m cwtypes.MetricAlarm) ServingAlarm {
	a := ServingAlarm{
		Name:              aws.ToString(m.AlarmName),
		ARN:               aws.ToString(m.AlarmArn),
		Threshold:         aws.ToFloat64(m.Threshold),
		EvaluationPeriods: aws.ToInt32(m.EvaluationPeriods),
	}
	dimsOf := func(ds []cwtypes.Dimension) (endpoint, variant string, ok bool) {
		if len(ds) != 2 {
			return "", "", false
		}
		for _, d := range ds {
			switch aws.ToString(d.Name) {
			case DimensionEndpointName:
				endpoint = aws.ToString(d.Value)
			case DimensionVariantName:
				variant = aws.ToString(d.Value)
			}
		}
		return endpoint, variant, endpoint != "" && variant != ""
	}
	if m.ComparisonOperator != alarmComparisonOperator {
		return a
	}
	if aws.ToString(m.Namespace) == SageMakerNamespace && aws.ToString(m.MetricName) == MetricModelLatency && aws.ToString(m.ExtendedStatistic) == "p99" {
		if e, v, ok := dimsOf(m.Dimensions); ok {
			a.Kind, a.Endpoint, a.Variant, a.PeriodSeconds = AlarmLatencyP99, e, v, aws.ToInt32(m.Period)
		}
		return a
	}
	if len(m.Metrics) != 3 || aws.ToString(m.TreatMissingData) != alarmTreatMissingData {
		return a
	}
	var errs, invs *cwtypes.MetricStat
	expr := ""
	for _, q := range m.Metrics {
		switch aws.ToString(q.Id) {
		case "errors":
			errs = q.MetricStat
		case "invocations":
			invs = q.MetricStat
		case "rate":
			expr = aws.ToString(q.Expression)
		}
	}
	if errs == nil || invs == nil || errs.Metric == nil || invs.Metric == nil || expr != alarmErrorRateExpression ||
		aws.ToString(errs.Metric.MetricName) != MetricInvocation5XX || aws.ToString(invs.Metric.MetricName) != MetricInvocations ||
		aws.ToString(errs.Stat) != "Sum" || aws.ToString(invs.Stat) != "Sum" || aws.ToInt32(errs.Period) != aws.ToInt32(invs.Period) {
		return a
	}
	e, v, ok := dimsOf(errs.Metric.Dimensions)
	e2, v2, ok2 := dimsOf(invs.Metric.Dimensions)
	if ok && ok2 && e == e2 && v == v2 {
		a.Kind, a.Endpoint, a.Variant, a.PeriodSeconds = Alarm5XXRate, e, v, aws.ToInt32(errs.Period)
	}
	return a
}

// DeleteServingAlarms deletes the alarms of the given names; a name that
// does not exist is not an error (CloudWatch ignores it).
func DeleteServingAlarms(ctx context.Context, api ServingAlarmAPI, names []string) error {
	for chunk := range slices.Chunk(names, 100) {
		if _, err := api.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: chunk}); err != nil {
			return fmt.Errorf("deleting alarms %v: %w", chunk, err)
		}
	}
	return nil
}
