package acctest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// ScheduledActions lists the SageMaker scheduled actions in the emulator,
// of resourceID ("endpoint/<name>/variant/<variant>"; "" for all), as
// "name | resource | schedule | zone | min | max" with "-" for a bound not
// set, sorted: what the serving tests of both front ends compare.
func (h *Harness) ScheduledActions(ctx context.Context, resourceID string) ([]string, error) {
	c, err := h.Clients(ctx, Region)
	if err != nil {
		return nil, err
	}
	in := &applicationautoscaling.DescribeScheduledActionsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker}
	if resourceID != "" {
		in.ResourceId = aws.String(resourceID)
	}
	out, err := c.AppAutoScaling.DescribeScheduledActions(ctx, in)
	if err != nil {
		return nil, err
	}
	bound := func(v *int32) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	var lines []string
	for _, a := range out.ScheduledActions {
		var lo, hi *int32
		if t := a.ScalableTargetAction; t != nil {
			lo, hi = t.MinCapacity, t.MaxCapacity
		}
		lines = append(lines, strings.Join([]string{aws.ToString(a.ScheduledActionName), aws.ToString(a.ResourceId), aws.ToString(a.Schedule), aws.ToString(a.Timezone), bound(lo), bound(hi)}, " | "))
	}
	slices.Sort(lines)
	return lines, nil
}

// AlarmAPI is what the alarm helpers and tests use of CloudWatch: the
// SDK client, or the core's handle on it.
type AlarmAPI interface {
	DeleteAlarms(ctx context.Context, in *cloudwatch.DeleteAlarmsInput, o ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error)
	PutMetricAlarm(ctx context.Context, in *cloudwatch.PutMetricAlarmInput, o ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error)
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, o ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
	ListTagsForResource(ctx context.Context, in *cloudwatch.ListTagsForResourceInput, o ...func(*cloudwatch.Options)) (*cloudwatch.ListTagsForResourceOutput, error)
}

// DescribeAlarm returns the metric alarm of the name and its tags, or nil
// when there is none.
func DescribeAlarm(ctx context.Context, cw AlarmAPI, name string) (*cwtypes.MetricAlarm, map[string]string, error) {
	out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{name}})
	if err != nil {
		return nil, nil, err
	}
	if len(out.MetricAlarms) == 0 {
		return nil, nil, nil
	}
	a := out.MetricAlarms[0]
	tags, err := AlarmTags(ctx, cw, a)
	if err != nil {
		return nil, nil, err
	}
	return &a, tags, nil
}

// AlarmTags returns the tags of alarm a.
func AlarmTags(ctx context.Context, cw AlarmAPI, a cwtypes.MetricAlarm) (map[string]string, error) {
	out, err := cw.ListTagsForResource(ctx, &cloudwatch.ListTagsForResourceInput{ResourceARN: a.AlarmArn})
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, t := range out.Tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m, nil
}

// UserTags is tags less the provider's own (mlplatform:).
func UserTags(tags map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range tags {
		if !strings.HasPrefix(k, "mlplatform:") {
			out[k] = v
		}
	}
	return out
}
