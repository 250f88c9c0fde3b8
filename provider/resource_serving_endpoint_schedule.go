package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The schedule list of a serving variant's autoscaling: the CPU
// footprint's schedule shape, with the scalable target's capacities.

type servingScheduleModel struct {
	Name        types.String `tfsdk:"name"`
	Recurrence  types.String `tfsdk:"recurrence"`
	TimeZone    types.String `tfsdk:"time_zone"`
	Duration    types.String `tfsdk:"duration"`
	MinCapacity types.Int64  `tfsdk:"min_capacity"`
	MaxCapacity types.Int64  `tfsdk:"max_capacity"`
}

func servingScheduleType() types.ObjectType {
	return types.ObjectType{AttrTypes: map[string]attr.Type{
		"name": types.StringType, "recurrence": types.StringType, "time_zone": types.StringType, "duration": types.StringType,
		"min_capacity": types.Int64Type, "max_capacity": types.Int64Type,
	}}
}

func servingScheduleAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		Optional: true,
		MarkdownDescription: "Scheduled capacity, the CPU footprint's `schedule` shape: at each time `recurrence` fires (in `time_zone`), the variant's scalable target takes the `min_capacity` and `max_capacity` set here " +
			"(an Application Auto Scaling scheduled action `mlplatform-<endpoint>-<variant>-<name>`); with `duration`, a second action (`...-end`) restores this block's `min_capacity` and `max_capacity` when the window ends. " +
			"Target tracking keeps the count between the bounds in force. An instance variant cannot scale to 0: `min_capacity` is at least 1. " +
			"A scheduled action changed or deleted outside Terraform shows as a change. Changing a schedule changes its actions in place.",
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the schedule (1 to 63 letters, digits, `-` or `_`), unique in the variant."},
			"recurrence": schema.StringAttribute{Required: true, MarkdownDescription: "Cron expression (minute hour day-of-month month day-of-week), e.g. `0 20 * * 1-5`; " +
				"restrict day of month or day of week, not both (Application Auto Scaling takes one)."},
			"time_zone": schema.StringAttribute{Optional: true, MarkdownDescription: fmt.Sprintf("IANA time zone of `recurrence`. Default `%s`.", platform.DefaultScheduleTimeZone)},
			"duration": schema.StringAttribute{Optional: true, MarkdownDescription: "Length of the window in whole minutes, e.g. `11h`: the block's bounds come back when it ends.",
				Validators: []validator.String{scheduleDurationValidator{}}},
			"min_capacity": schema.Int64Attribute{Optional: true, MarkdownDescription: "Fewest instances during the window (at least 1); unset keeps the current value."},
			"max_capacity": schema.Int64Attribute{Optional: true, MarkdownDescription: "Most instances during the window (at most 1000); unset keeps the current value."},
		}},
	}
}

// servingSchedulesSpec translates a schedule list at path p, adding the
// paths of values not known yet to unknown.
func servingSchedulesSpec(p string, l types.List, unknown *[]string) []platform.Schedule {
	if l.IsNull() {
		return nil
	}
	if l.IsUnknown() {
		*unknown = append(*unknown, p)
		return nil
	}
	var ms []servingScheduleModel
	if d := l.ElementsAs(context.Background(), &ms, true); d.HasError() {
		*unknown = append(*unknown, p)
		return nil
	}
	var out []platform.Schedule
	for i, m := range ms {
		at := fmt.Sprintf("%s[%d]", p, i)
		str := func(n string, v types.String) string {
			if v.IsUnknown() {
				*unknown = append(*unknown, at+"."+n)
			}
			return v.ValueString()
		}
		num := func(n string, v types.Int64) *int {
			if v.IsUnknown() {
				*unknown = append(*unknown, at+"."+n)
				return nil
			}
			if v.IsNull() {
				return nil
			}
			x := int(v.ValueInt64())
			return &x
		}
		s := platform.Schedule{Name: str("name", m.Name), Recurrence: str("recurrence", m.Recurrence), TimeZone: str("time_zone", m.TimeZone),
			Min: num("min_capacity", m.MinCapacity), Max: num("max_capacity", m.MaxCapacity)}
		// An invalid duration is refused by its validator before this.
		s.Duration, _ = platform.ParseScheduleDuration(str("duration", m.Duration))
		out = append(out, s)
	}
	return out
}

// servingSchedulesValue writes schedules back in the declared shape:
// null stays null when there are none, and durations keep their declared
// text.
func servingSchedulesValue(declared types.List, ss []platform.Schedule) types.List {
	if len(ss) == 0 && (declared.IsNull() || declared.IsUnknown()) {
		return types.ListNull(servingScheduleType())
	}
	var prior []servingScheduleModel
	if !declared.IsNull() && !declared.IsUnknown() {
		_ = declared.ElementsAs(context.Background(), &prior, true)
	}
	optStr := func(s string) types.String {
		if s == "" {
			return types.StringNull()
		}
		return types.StringValue(s)
	}
	optInt := func(p *int) types.Int64 {
		if p == nil {
			return types.Int64Null()
		}
		return types.Int64Value(int64(*p))
	}
	vals := make([]attr.Value, 0, len(ss))
	for _, s := range ss {
		text := ""
		for _, p := range prior {
			if p.Name.ValueString() == s.Name {
				text = p.Duration.ValueString()
			}
		}
		m := servingScheduleModel{Name: types.StringValue(s.Name), Recurrence: types.StringValue(s.Recurrence), TimeZone: optStr(s.TimeZone),
			Duration: optStr(platform.ScheduleDurationText(s.Duration, text)), MinCapacity: optInt(s.Min), MaxCapacity: optInt(s.Max)}
		o, _ := types.ObjectValueFrom(context.Background(), servingScheduleType().AttrTypes, m)
		vals = append(vals, o)
	}
	l, _ := types.ListValue(servingScheduleType(), vals)
	return l
}

// scheduleDurationValidator refuses a duration the core cannot parse, at
// plan, on its attribute path.
type scheduleDurationValidator struct{}

func (scheduleDurationValidator) Description(context.Context) string {
	return "a duration of whole minutes such as 11h or 90m"
}

func (v scheduleDurationValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (scheduleDurationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, err := platform.ParseScheduleDuration(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid serving endpoint: "+req.Path.String(), err.Error())
	}
}
