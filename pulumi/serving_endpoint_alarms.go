package pulumi

import (
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

const standardAlarmsDescription = "The standard rollback alarms, created by the provider: per production variant, a CloudWatch alarm on p99 `ModelLatency` " +
	"(`mlplatform-ENDPOINT-VARIANT-p99-latency`) and one on the share of invocations answered 5xx, `Invocation5XXErrors / Invocations` (`mlplatform-ENDPOINT-VARIANT-5xx`; no traffic is not breaching), " +
	"in the `AWS/SageMaker` namespace, tagged with the endpoint's tags, its name and its creation token. They roll a deployment back beside `rollbackAlarms` (10 alarms in all at most: 2 per variant). " +
	"An alarm of such a name that this endpoint did not create is refused, never changed."

// ServingStandardAlarms are the thresholds of the standard rollback alarms.
type ServingStandardAlarms struct {
	LatencyP99Ms      *float64 `pulumi:"latencyP99Ms,optional"`
	Error5xxRate      *float64 `pulumi:"error5xxRate,optional"`
	PeriodSeconds     *int     `pulumi:"periodSeconds,optional"`
	EvaluationPeriods *int     `pulumi:"evaluationPeriods,optional"`
}

// Annotate describes the standard alarms.
func (s *ServingStandardAlarms) Annotate(a infer.Annotator) {
	a.Describe(&s.LatencyP99Ms, "p99 model latency above which the alarm fires, in milliseconds (default 500; CloudWatch's `ModelLatency` is in microseconds: the provider converts).")
	a.Describe(&s.Error5xxRate, "Share of invocations answered 5xx above which the alarm fires, as a fraction between 0 and 1 (default 0.01, that is 1%).")
	a.Describe(&s.PeriodSeconds, "Period of each evaluation, a multiple of 60 seconds (default 60).")
	a.Describe(&s.EvaluationPeriods, "Consecutive periods above the threshold before the alarm fires (default 3; period x periods at most one day).")
}

func (s *ServingStandardAlarms) spec() *platform.ServingStandardAlarms {
	if s == nil {
		return nil
	}
	return &platform.ServingStandardAlarms{
		LatencyP99Ms: deref(s.LatencyP99Ms), Error5XXRate: deref(s.Error5xxRate),
		PeriodSeconds: int64(deref(s.PeriodSeconds)), EvaluationPeriods: int64(deref(s.EvaluationPeriods)),
	}
}

// readBackDeployment is the deployment as declared, but for the standard
// alarms as the core read them back: absent when one is gone or changed
// beyond its thresholds, the thresholds found when they were changed
// outside.
func readBackDeployment(args ServingEndpointArgs, rb platform.ServingEndpointSpec) *ServingDeployment {
	d := args.Deployment
	if d == nil || d.StandardAlarms == nil || rb.Deployment == nil {
		return d
	}
	got := rb.Deployment.StandardAlarms
	if want := d.StandardAlarms.spec(); got != nil && *got == *want {
		return d
	}
	out := *d
	out.StandardAlarms = nil
	if got != nil {
		out.StandardAlarms = &ServingStandardAlarms{LatencyP99Ms: ptr(got.LatencyP99Ms), Error5xxRate: ptr(got.Error5XXRate), PeriodSeconds: ptr(int(got.PeriodSeconds)), EvaluationPeriods: ptr(int(got.EvaluationPeriods))}
	}
	return &out
}
