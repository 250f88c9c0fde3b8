package provider_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/mlplatform/mlplatform/acctest"
)

const (
	alarmP99 = "mlplatform-fraud-primary-p99-latency"
	alarm5xx = "mlplatform-fraud-primary-5xx"
)

func standardAlarmsHCL(latencyMs float64) string {
	return fmt.Sprintf(`
  deployment = {
    rollback_alarms = ["team-alarm"]
    standard_alarms = {
      latency_p99_ms = %g
      error_5xx_rate = 0.01
    }
  }`, latencyMs)
}

// cwFixture is a CloudWatch client through the harness, for a test's own
// calls (marked as fixture calls).
func cwFixture(t *testing.T, h *acctest.Harness) (acctest.AlarmAPI, context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := h.Clients(ctx, acctest.Region)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return c.CloudWatch(), ctx, cancel
}

func dimensionsOf(ds []cwtypes.Dimension) map[string]string {
	m := map[string]string{}
	for _, d := range ds {
		m[aws.ToString(d.Name)] = aws.ToString(d.Value)
	}
	return m
}

// checkStandardAlarms checks both alarms of variant primary in moto: the
// metric, statistic, threshold, dimensions and tags.
func checkStandardAlarms(t *testing.T, h *acctest.Harness, latencyMs float64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		cw, ctx, cancel := cwFixture(t, h)
		defer cancel()
		wantDims := map[string]string{"EndpointName": "fraud", "VariantName": "primary"}
		p99, tags, err := acctest.DescribeAlarm(ctx, cw, alarmP99)
		if err != nil || p99 == nil {
			return fmt.Errorf("alarm %s: %v (found: %t)", alarmP99, err, p99 != nil)
		}
		if ns, m, st := aws.ToString(p99.Namespace), aws.ToString(p99.MetricName), aws.ToString(p99.ExtendedStatistic); ns != "AWS/SageMaker" || m != "ModelLatency" || st != "p99" {
			return fmt.Errorf("alarm %s watches %s %s %s, want AWS/SageMaker ModelLatency p99", alarmP99, ns, m, st)
		}
		if th := aws.ToFloat64(p99.Threshold); th != latencyMs*1000 {
			return fmt.Errorf("alarm %s threshold %g, want %g microseconds", alarmP99, th, latencyMs*1000)
		}
		if d := dimensionsOf(p99.Dimensions); fmt.Sprint(d) != fmt.Sprint(wantDims) {
			return fmt.Errorf("alarm %s dimensions %v, want %v", alarmP99, d, wantDims)
		}
		if p99.ComparisonOperator != cwtypes.ComparisonOperatorGreaterThanThreshold || aws.ToInt32(p99.EvaluationPeriods) != 3 || aws.ToInt32(p99.Period) != 60 {
			return fmt.Errorf("alarm %s: %s, %d periods of %ds; want GreaterThanThreshold, 3 of 60s", alarmP99, p99.ComparisonOperator, aws.ToInt32(p99.EvaluationPeriods), aws.ToInt32(p99.Period))
		}
		if tags["mlplatform:serving-endpoint"] != "fraud" || len(tags["mlplatform:creation-token"]) != 32 || tags["team"] != "fraud" {
			return fmt.Errorf("alarm %s tags %v: want the endpoint's name, its creation token and its tags", alarmP99, tags)
		}
		rate, rtags, err := acctest.DescribeAlarm(ctx, cw, alarm5xx)
		if err != nil || rate == nil {
			return fmt.Errorf("alarm %s: %v (found: %t)", alarm5xx, err, rate != nil)
		}
		if th, tmd := aws.ToFloat64(rate.Threshold), aws.ToString(rate.TreatMissingData); th != 0.01 || tmd != "notBreaching" {
			return fmt.Errorf("alarm %s threshold %g, missing data %q; want 0.01, notBreaching", alarm5xx, th, tmd)
		}
		var metrics []string
		for _, q := range rate.Metrics {
			if q.MetricStat != nil {
				if d := dimensionsOf(q.MetricStat.Metric.Dimensions); fmt.Sprint(d) != fmt.Sprint(wantDims) {
					return fmt.Errorf("alarm %s metric %s dimensions %v, want %v", alarm5xx, aws.ToString(q.Id), d, wantDims)
				}
				metrics = append(metrics, aws.ToString(q.MetricStat.Metric.MetricName)+":"+aws.ToString(q.MetricStat.Stat))
			} else {
				metrics = append(metrics, aws.ToString(q.Expression))
			}
		}
		if want := []string{"Invocation5XXErrors:Sum", "Invocations:Sum", "errors / invocations"}; !slices.Equal(metrics, want) {
			return fmt.Errorf("alarm %s metrics %v, want %v", alarm5xx, metrics, want)
		}
		if rtags["mlplatform:creation-token"] != tags["mlplatform:creation-token"] {
			return fmt.Errorf("alarm %s carries token %q, %s %q", alarm5xx, rtags["mlplatform:creation-token"], alarmP99, tags["mlplatform:creation-token"])
		}
		return nil
	}
}

// checkAlarmTags checks that both standard alarms carry exactly the user
// tags want besides the endpoint's name and creation token.
func checkAlarmTags(t *testing.T, h *acctest.Harness, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		cw, ctx, cancel := cwFixture(t, h)
		defer cancel()
		for _, n := range []string{alarmP99, alarm5xx} {
			a, tags, err := acctest.DescribeAlarm(ctx, cw, n)
			if err != nil || a == nil {
				return fmt.Errorf("alarm %s: %v (found: %t)", n, err, a != nil)
			}
			if user := acctest.UserTags(tags); tags["mlplatform:serving-endpoint"] != "fraud" || len(tags["mlplatform:creation-token"]) != 32 || !maps.Equal(user, want) {
				return fmt.Errorf("alarm %s tags %v: want %v besides the endpoint's name and creation token", n, tags, want)
			}
		}
		return nil
	}
}

func checkAlarmsGone(t *testing.T, h *acctest.Harness) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		if err := checkServingGone(h)(s); err != nil {
			return err
		}
		cw, ctx, cancel := cwFixture(t, h)
		defer cancel()
		out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("mlplatform-fraud-")})
		if err != nil {
			return err
		}
		if len(out.MetricAlarms) > 0 {
			return fmt.Errorf("%d standard alarms left after destroy, e.g. %s", len(out.MetricAlarms), aws.ToString(out.MetricAlarms[0].AlarmName))
		}
		return nil
	}
}

// The provider creates the standard alarms with the endpoint, names them in
// the next blue/green update's rollback alarms beside the user's, puts them
// again when a threshold changes or one is deleted outside, retags them
// when the endpoint's tags change, and deletes them after the endpoint.
func TestAccServingEndpoint_standardAlarms(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             checkAlarmsGone(t, h),
		Steps: []resource.TestStep{
			{
				Config: servingConfig(h, servingImage, "ml.m5.large", 1, standardAlarmsHCL(500)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(servingName, tfjsonpath.New("standard_alarm_names"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(alarmP99), knownvalue.StringExact(alarm5xx)})),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "standard_alarm_names.#", "2"),
					resource.TestCheckResourceAttr(servingName, "standard_alarm_names.0", alarmP99),
					resource.TestCheckResourceAttr(servingName, "standard_alarm_names.1", alarm5xx),
					resource.TestCheckResourceAttr(servingName, "deployment.standard_alarms.period_seconds", "60"),
					resource.TestCheckResourceAttr(servingName, "deployment.standard_alarms.evaluation_periods", "3"),
					checkStandardAlarms(t, h, 500),
				),
			},
			{
				Config:   servingConfig(h, servingImage, "ml.m5.large", 1, standardAlarmsHCL(500)),
				PlanOnly: true, // the alarms read back as declared
			},
			{
				// A blue/green update with a new threshold: the alarm is put
				// again, and the deployment names it.
				Config: servingConfig(h, servingImage2, "ml.m5.large", 1, standardAlarmsHCL(250)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(servingName, "last_deployment_outcome", "Updated"),
					resource.TestCheckResourceAttr(servingName, "deployment.standard_alarms.latency_p99_ms", "250"),
					checkStandardAlarms(t, h, 250),
					func(*terraform.State) error {
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						defer cancel()
						c, err := h.Clients(ctx, acctest.Region)
						if err != nil {
							return err
						}
						out, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("fraud")})
						if err != nil {
							return err
						}
						if out.LastDeploymentConfig == nil || out.LastDeploymentConfig.AutoRollbackConfiguration == nil {
							return fmt.Errorf("the update sent no auto-rollback configuration")
						}
						var names []string
						for _, a := range out.LastDeploymentConfig.AutoRollbackConfiguration.Alarms {
							names = append(names, aws.ToString(a.AlarmName))
						}
						if want := []string{"team-alarm", alarmP99, alarm5xx}; !slices.Equal(names, want) {
							return fmt.Errorf("rollback alarms %v, want %v", names, want)
						}
						return nil
					},
				),
			},
			{
				// Deleted outside: drift, and the apply puts it again.
				PreConfig: func() {
					cw, ctx, cancel := cwFixture(t, h)
					defer cancel()
					if _, err := cw.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{alarm5xx}}); err != nil {
						t.Fatal(err)
					}
				},
				Config: servingConfig(h, servingImage2, "ml.m5.large", 1, standardAlarmsHCL(250)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
				}},
				Check: checkStandardAlarms(t, h, 250),
			},
			{
				// Threshold changed outside: drift, put back.
				PreConfig: func() {
					cw, ctx, cancel := cwFixture(t, h)
					defer cancel()
					if _, err := cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
						AlarmName: aws.String(alarmP99), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ModelLatency"), ExtendedStatistic: aws.String("p99"),
						Period: aws.Int32(60), EvaluationPeriods: aws.Int32(3), Threshold: aws.Float64(9e6), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold,
						Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String("fraud")}, {Name: aws.String("VariantName"), Value: aws.String("primary")}},
					}); err != nil {
						t.Fatal(err)
					}
				},
				Config: servingConfig(h, servingImage2, "ml.m5.large", 1, standardAlarmsHCL(250)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(servingName, plancheck.ResourceActionUpdate),
				}},
				Check: checkStandardAlarms(t, h, 250),
			},
			{
				// The endpoint's tags change: the alarms are retagged (a
				// tag changed, one added), not put again.
				Config: strings.Replace(servingConfig(h, servingImage2, "ml.m5.large", 1, standardAlarmsHCL(250)), `tags = { team = "fraud" }`, `tags = { team = "risk", stage = "two" }`, 1),
				Check:  checkAlarmTags(t, h, map[string]string{"team": "risk", "stage": "two"}),
			},
			{
				// And back: the tag the endpoint no longer has is removed.
				Config: servingConfig(h, servingImage2, "ml.m5.large", 1, standardAlarmsHCL(250)),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkStandardAlarms(t, h, 250),
					checkAlarmTags(t, h, map[string]string{"team": "fraud"}),
				),
			},
			{
				// Asked for no more: the endpoint's own alarms go.
				Config: servingConfig(h, servingImage2, "ml.m5.large", 1, `
  deployment = {
    rollback_alarms = ["team-alarm"]
  }`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckNoResourceAttr(servingName, "standard_alarm_names"),
					func(*terraform.State) error {
						cw, ctx, cancel := cwFixture(t, h)
						defer cancel()
						for _, n := range []string{alarmP99, alarm5xx} {
							if a, _, err := acctest.DescribeAlarm(ctx, cw, n); err != nil || a != nil {
								return fmt.Errorf("alarm %s after standard_alarms was removed: %v (still there: %t)", n, err, a != nil)
							}
						}
						return nil
					},
				),
			},
			{
				Config: servingConfig(h, servingImage2, "ml.m5.large", 1, standardAlarmsHCL(250)),
				Check:  checkStandardAlarms(t, h, 250),
			},
		},
	})
}

// An alarm of a standard alarm's name that the endpoint did not create is
// refused at plan, on the attribute, and left as it was.
func TestAccServingEndpoint_standardAlarmForeign(t *testing.T) {
	h := acctest.Setup(t)
	servingFixtures(t, h)
	cw, ctx, cancel := cwFixture(t, h)
	defer cancel()
	if _, err := cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
		AlarmName: aws.String(alarm5xx), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocation5XXErrors"), Statistic: cwtypes.StatisticSum,
		Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(7), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold,
		Tags: []cwtypes.Tag{{Key: aws.String("owner"), Value: aws.String("sre")}},
	}); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { acctest.PreCheck(t) },
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config:      servingConfig(h, servingImage, "ml.m5.large", 1, standardAlarmsHCL(500)),
			ExpectError: regexp.MustCompile(`(?s)deployment.standard_alarms.*mlplatform-fraud-primary-5xx exists without this.*endpoint's`),
		}},
	})
	a, _, err := acctest.DescribeAlarm(ctx, cw, alarm5xx)
	if err != nil || a == nil || aws.ToFloat64(a.Threshold) != 7 {
		t.Fatalf("the foreign alarm was changed or deleted: %v, %+v", err, a)
	}
	if n := len(h.Shim.Calls("sagemaker", "CreateEndpoint")); n != 0 {
		t.Fatalf("%d CreateEndpoint calls after a refused plan", n)
	}
}
