package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/mlplatform/mlplatform/acctest"
)

// servingScheduleAlarmScenarios are the serving endpoint's schedules and
// standard alarms on both front ends: scheduled actions follow the
// schedule in place, and the standard alarms follow the endpoint's tags
// (retagged in place, never put again for a tag change) and go with
// standard_alarms.
func servingScheduleAlarmScenarios() []scenario {
	night := func(maxCap int) []any {
		return []any{map[string]any{"name": "night", "recurrence": "0 20 * * 1-5", "duration": "11h", "max_capacity": maxCap}}
	}
	noEndpointWrite := sageMakerCalls(map[string]int{"CreateEndpointConfig": 0, "UpdateEndpoint": 0})
	return []scenario{
		{
			name: "serving_endpoint/schedule", kind: servingEndpoint, resource: "conf-sv-sch", residency: awsManagedKeys,
			steps: []step{
				{name: "create with a weeknight schedule: its action and its end action", inputs: svScheduled(night(1)), want: created,
					check: wantScheduledActions("conf-sv-sch",
						"mlplatform-conf-sv-sch-primary-night | cron(0 20 ? * 2-6 *) | Asia/Dubai | - | 1",
						"mlplatform-conf-sv-sch-primary-night-end | cron(0 7 ? * 3-7 *) | Asia/Dubai | 1 | 4")},
				{name: "night bound raised: the action put again in place, no new config", inputs: svScheduled(night(2)), want: updated,
					check: all(noEndpointWrite, wantScheduledActions("conf-sv-sch",
						"mlplatform-conf-sv-sch-primary-night | cron(0 20 ? * 2-6 *) | Asia/Dubai | - | 2",
						"mlplatform-conf-sv-sch-primary-night-end | cron(0 7 ? * 3-7 *) | Asia/Dubai | 1 | 4"))},
				{name: "schedule removed: both actions deleted in place", inputs: svScheduled(nil), want: updated,
					check: all(noEndpointWrite, wantScheduledActions("conf-sv-sch"))},
			},
		},
		{
			name: "serving_endpoint/standard_alarms", kind: servingEndpoint, resource: "conf-sv-al", residency: awsManagedKeys,
			steps: []step{
				{name: "create with standard alarms: both made with the endpoint's tags", inputs: svAlarmed(true, map[string]any{"team": "fraud"}), want: created,
					check: wantStandardAlarms("conf-sv-al", map[string]string{"team": "fraud"})},
				{name: "tags changed and added: the alarms retagged in place", inputs: svAlarmed(true, map[string]any{"team": "risk", "cost": "ml"}), want: updated,
					check: all(noEndpointWrite, wantStandardAlarms("conf-sv-al", map[string]string{"team": "risk", "cost": "ml"}))},
				{name: "a tag removed: untagged from the alarms in place", inputs: svAlarmed(true, map[string]any{"team": "risk"}), want: updated,
					check: all(noEndpointWrite, wantStandardAlarms("conf-sv-al", map[string]string{"team": "risk"}))},
				{name: "standard alarms removed: both deleted", inputs: svAlarmed(false, map[string]any{"team": "risk"}), want: updated,
					check: wantStandardAlarms("conf-sv-al", nil)},
			},
		},
	}
}

// all runs checks in order and returns the first failure.
func all(checks ...func(context.Context, *acctest.Harness, *fixtures) error) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, f *fixtures) error {
		for _, c := range checks {
			if err := c(ctx, h, f); err != nil {
				return err
			}
		}
		return nil
	}
}

// svScheduled is the schedule scenario's endpoint: one ml.m5.large variant
// scaled between 1 and 4, with schedule (none when nil).
func svScheduled(schedule []any) func(*fixtures) map[string]any {
	scaling := map[string]any{"min_capacity": 1, "max_capacity": 4, "target_invocations_per_instance": 100}
	if schedule != nil {
		scaling["schedule"] = schedule
	}
	return svInputs("conf-sv-sch", svImage, map[string]any{
		"variants": []any{map[string]any{"name": "primary", "instance_type": "ml.m5.large", "initial_instance_count": 1, "autoscaling": scaling}},
	})
}

// svAlarmed is the standard alarms scenario's endpoint, with or without
// standard alarms (a p99 latency threshold of 500 ms, the 5xx rate at its
// default), tagged with tags.
func svAlarmed(alarms bool, tags map[string]any) func(*fixtures) map[string]any {
	over := map[string]any{"tags": tags}
	if alarms {
		over["deployment"] = map[string]any{"standard_alarms": map[string]any{"latency_p99_ms": 500}}
	}
	return svInputs("conf-sv-al", svImage, over)
}

// wantScheduledActions checks the scheduled actions of the endpoint's
// primary variant, in acctest's Harness.ScheduledActions lines less the
// resource ("name | schedule | zone | min | max"), in any order.
func wantScheduledActions(endpoint string, want ...string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		id := "endpoint/" + endpoint + "/variant/primary"
		got, err := h.ScheduledActions(ctx, id)
		if err != nil {
			return err
		}
		for i, line := range got {
			got[i] = strings.Replace(line, " | "+id+" | ", " | ", 1)
		}
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got, want) {
			return fmt.Errorf("scheduled actions of %s:\n  %s\nwant:\n  %s", endpoint, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		return nil
	}
}

// wantStandardAlarms checks the endpoint's standard alarms: none when
// userTags is nil, else the p99 latency and 5xx alarms of its primary
// variant, each carrying userTags as its only tags outside the provider's
// own (mlplatform:), the same user tags as the endpoint.
func wantStandardAlarms(endpoint string, userTags map[string]string) func(context.Context, *acctest.Harness, *fixtures) error {
	return func(ctx context.Context, h *acctest.Harness, _ *fixtures) error {
		c, err := h.Clients(ctx, acctest.Region)
		if err != nil {
			return err
		}
		cw := c.CloudWatch()
		out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("mlplatform-" + endpoint + "-")})
		if err != nil {
			return err
		}
		var names []string
		for _, a := range out.MetricAlarms {
			names = append(names, aws.ToString(a.AlarmName))
		}
		slices.Sort(names)
		if userTags == nil {
			if len(names) > 0 {
				return fmt.Errorf("standard alarms left: %v", names)
			}
			return nil
		}
		if want := []string{"mlplatform-" + endpoint + "-primary-5xx", "mlplatform-" + endpoint + "-primary-p99-latency"}; !slices.Equal(names, want) {
			return fmt.Errorf("standard alarms %v, want %v", names, want)
		}
		ep, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(endpoint)})
		if err != nil {
			return err
		}
		et, err := c.SageMaker.ListTags(ctx, &sagemaker.ListTagsInput{ResourceArn: ep.EndpointArn})
		if err != nil {
			return err
		}
		epTags := map[string]string{}
		for _, t := range et.Tags {
			epTags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		if user := acctest.UserTags(epTags); !maps.Equal(user, userTags) {
			return fmt.Errorf("endpoint %s user tags %v, want %v", endpoint, user, userTags)
		}
		for _, a := range out.MetricAlarms {
			tags, err := acctest.AlarmTags(ctx, cw, a)
			if err != nil {
				return err
			}
			if !maps.Equal(acctest.UserTags(tags), userTags) || tags["mlplatform:serving-endpoint"] != endpoint {
				return fmt.Errorf("alarm %s tags %v: want the user tags %v and the endpoint's name", aws.ToString(a.AlarmName), tags, userTags)
			}
		}
		return nil
	}
}
