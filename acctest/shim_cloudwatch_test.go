package acctest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// TestShim_deleteAlarmsDropsTags: an alarm made again under the name of a
// deleted one starts without the old alarm's tags, as on CloudWatch (moto
// 5.2.1 alone hands them on), and a DeleteAlarms of a name that does not
// exist still answers as moto does.
func TestShim_deleteAlarmsDropsTags(t *testing.T) {
	h := SetupEmulator(t)
	ctx := testContext(t)
	c, err := h.Clients(ctx, Region)
	if err != nil {
		t.Fatal(err)
	}
	cw := c.CloudWatch()
	put := func(tags ...cwtypes.Tag) {
		t.Helper()
		if _, err := cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
			AlarmName: aws.String("p99"), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ModelLatency"),
			Statistic: cwtypes.StatisticAverage, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1),
			ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold, Tags: tags,
		}); err != nil {
			t.Fatal(err)
		}
	}
	tagsOf := func() map[string]string {
		t.Helper()
		a, tags, err := DescribeAlarm(ctx, cw, "p99")
		if err != nil || a == nil {
			t.Fatalf("alarm p99: %v, %v", a, err)
		}
		return tags
	}
	put(cwtypes.Tag{Key: aws.String("team"), Value: aws.String("ml")}, cwtypes.Tag{Key: aws.String("cost-center"), Value: aws.String("42")})
	if got := tagsOf(); len(got) != 2 || got["team"] != "ml" {
		t.Fatalf("tags of the first alarm: %v", got)
	}
	if _, err := cw.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"p99", "never-made"}}); err != nil {
		t.Fatal(err)
	}
	put(cwtypes.Tag{Key: aws.String("team"), Value: aws.String("serving")})
	if got := tagsOf(); len(got) != 1 || got["team"] != "serving" {
		t.Fatalf("tags of the alarm made again: %v, want only team=serving", got)
	}
	if _, err := cw.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"p99"}}); err != nil {
		t.Fatal(err)
	}
	put()
	if got := tagsOf(); len(got) != 0 {
		t.Fatalf("tags of an alarm made with none: %v", got)
	}
}
