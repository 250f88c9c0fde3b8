package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/float64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// servingStandardAlarmsModel is deployment.standard_alarms.
type servingStandardAlarmsModel struct {
	LatencyP99Ms      types.Float64 `tfsdk:"latency_p99_ms"`
	Error5XXRate      types.Float64 `tfsdk:"error_5xx_rate"`
	PeriodSeconds     types.Int64   `tfsdk:"period_seconds"`
	EvaluationPeriods types.Int64   `tfsdk:"evaluation_periods"`
}

func servingStandardAlarmsSchema() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "The standard rollback alarms, created by the provider: per production variant, a CloudWatch alarm on p99 `ModelLatency` " +
			"(`mlplatform-ENDPOINT-VARIANT-p99-latency`) and one on the share of invocations answered 5xx, `Invocation5XXErrors / Invocations` (`mlplatform-ENDPOINT-VARIANT-5xx`; no traffic is not breaching), " +
			"both in the `AWS/SageMaker` namespace with the `EndpointName` and `VariantName` dimensions, tagged with the endpoint's tags, its name and its creation token. " +
			"They roll a deployment back beside `rollback_alarms` (10 alarms in all at most: 2 per variant). Created with the endpoint, put again when a threshold changes or one is changed or deleted outside, deleted after the endpoint. " +
			"An alarm of such a name that this endpoint did not create is refused, never changed.",
		Attributes: map[string]schema.Attribute{
			"latency_p99_ms": schema.Float64Attribute{Optional: true, Computed: true, Default: float64default.StaticFloat64(platform.ServingDefaultLatencyP99Ms),
				MarkdownDescription: fmt.Sprintf("p99 model latency above which the alarm fires, in milliseconds (default %d; CloudWatch's `ModelLatency` is in microseconds: the provider converts).", platform.ServingDefaultLatencyP99Ms)},
			"error_5xx_rate": schema.Float64Attribute{Optional: true, Computed: true, Default: float64default.StaticFloat64(platform.ServingDefault5XXRate),
				MarkdownDescription: fmt.Sprintf("Share of invocations answered 5xx above which the alarm fires, as a fraction between 0 and 1 (default %g, that is 1%%).", platform.ServingDefault5XXRate)},
			"period_seconds": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(platform.ServingDefaultAlarmPeriodSeconds),
				MarkdownDescription: fmt.Sprintf("Period of each evaluation, a multiple of 60 seconds (default %d).", platform.ServingDefaultAlarmPeriodSeconds)},
			"evaluation_periods": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(platform.ServingDefaultEvaluationPeriods),
				MarkdownDescription: fmt.Sprintf("Consecutive periods above the threshold before the alarm fires (default %d; period x periods at most one day).", platform.ServingDefaultEvaluationPeriods)},
		},
	}
}

// spec translates the block, adding its unknown paths to unknown.
func (a *servingStandardAlarmsModel) spec(unknown []string) (*platform.ServingStandardAlarms, []string) {
	const at = "deployment.standard_alarms."
	if a.LatencyP99Ms.IsUnknown() {
		unknown = append(unknown, at+"latency_p99_ms")
	}
	if a.Error5XXRate.IsUnknown() {
		unknown = append(unknown, at+"error_5xx_rate")
	}
	if a.PeriodSeconds.IsUnknown() {
		unknown = append(unknown, at+"period_seconds")
	}
	if a.EvaluationPeriods.IsUnknown() {
		unknown = append(unknown, at+"evaluation_periods")
	}
	return &platform.ServingStandardAlarms{
		LatencyP99Ms:      a.LatencyP99Ms.ValueFloat64(),
		Error5XXRate:      a.Error5XXRate.ValueFloat64(),
		PeriodSeconds:     a.PeriodSeconds.ValueInt64(),
		EvaluationPeriods: a.EvaluationPeriods.ValueInt64(),
	}, unknown
}

// standardAlarmsModel is the inverse of spec (nil: the block is absent).
func standardAlarmsModel(a *platform.ServingStandardAlarms) *servingStandardAlarmsModel {
	if a == nil {
		return nil
	}
	return &servingStandardAlarmsModel{
		LatencyP99Ms:      types.Float64Value(a.LatencyP99Ms),
		Error5XXRate:      types.Float64Value(a.Error5XXRate),
		PeriodSeconds:     types.Int64Value(a.PeriodSeconds),
		EvaluationPeriods: types.Int64Value(a.EvaluationPeriods),
	}
}

// plannedAlarmNames is standard_alarm_names in the plan: known once the
// endpoint's and the variants' names are.
func plannedAlarmNames(s platform.ServingEndpointSpec, unknown []string, diags *diag.Diagnostics) types.List {
	names, known := platform.ServingStandardAlarmNamesOf(s, unknown)
	if !known {
		return types.ListUnknown(types.StringType)
	}
	return optionalList(names, diags)
}
