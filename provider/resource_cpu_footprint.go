package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mlplatform/mlplatform/internal/platform"
)

var (
	_ resource.ResourceWithConfigure   = &cpuFootprintResource{}
	_ resource.ResourceWithModifyPlan  = &cpuFootprintResource{}
	_ resource.ResourceWithImportState = &cpuFootprintResource{}
)

// NewCPUFootprintResource is the mlplatform_cpu_footprint constructor.
func NewCPUFootprintResource() resource.Resource { return &cpuFootprintResource{} }

type cpuFootprintResource struct {
	meta *Meta
}

type cpuFootprintModel struct {
	ID                    types.String   `tfsdk:"id"`
	Name                  types.String   `tfsdk:"name"`
	Requirements          types.Object   `tfsdk:"requirements"`
	InstanceType          types.String   `tfsdk:"instance_type"`
	CapacityType          types.String   `tfsdk:"capacity_type"`
	OnDemandBase          types.Int64    `tfsdk:"on_demand_base"`
	MinSize               types.Int64    `tfsdk:"min_size"`
	MaxSize               types.Int64    `tfsdk:"max_size"`
	DesiredCapacity       types.Int64    `tfsdk:"desired_capacity"`
	Schedule              types.List     `tfsdk:"schedule"`
	SubnetIDs             types.List     `tfsdk:"subnet_ids"`
	Image                 types.String   `tfsdk:"image"`
	ImageID               types.String   `tfsdk:"image_id"`
	SecurityGroupIDs      types.Set      `tfsdk:"security_group_ids"`
	InstanceProfile       types.String   `tfsdk:"instance_profile"`
	KMSKeyARN             types.String   `tfsdk:"kms_key_arn"`
	RootVolume            types.Object   `tfsdk:"root_volume"`
	DataVolumes           types.List     `tfsdk:"data_volumes"`
	UserData              types.String   `tfsdk:"user_data"`
	MetadataHopLimit      types.Int64    `tfsdk:"metadata_hop_limit"`
	MinHealthyPercentage  types.Int64    `tfsdk:"min_healthy_percentage"`
	Tags                  types.Map      `tfsdk:"tags"`
	TagsAll               types.Map      `tfsdk:"tags_all"`
	ChosenInstanceType    types.String   `tfsdk:"chosen_instance_type"`
	DecisionReason        types.String   `tfsdk:"decision_reason"`
	RejectedCheaper       types.List     `tfsdk:"rejected_cheaper"`
	Candidates            types.List     `tfsdk:"candidates"`
	InstanceTypes         types.List     `tfsdk:"instance_types"`
	HourlyPriceUSD        types.Float64  `tfsdk:"hourly_price_usd"`
	PriceSource           types.String   `tfsdk:"price_source"`
	MonthlyCostUSD        types.Float64  `tfsdk:"monthly_cost_usd"`
	MonthlyScheduledUSD   types.Float64  `tfsdk:"monthly_cost_scheduled_usd"`
	CostNote              types.String   `tfsdk:"cost_note"`
	ASGName               types.String   `tfsdk:"asg_name"`
	LaunchTemplateID      types.String   `tfsdk:"launch_template_id"`
	CreationToken         types.String   `tfsdk:"creation_token"`
	Timeouts              timeouts.Value `tfsdk:"timeouts"`
	Validation            types.Object   `tfsdk:"validation"`
	ValidationProfile     types.String   `tfsdk:"validation_profile"`
	ValidationBootstrap   types.String   `tfsdk:"validation_bootstrap"`
	ValidationApprover    types.String   `tfsdk:"validation_approver"`
	ValidationResults     types.List     `tfsdk:"validation_results"`
	Orchestrator          types.Object   `tfsdk:"orchestrator"`
	SlurmControllerConfig types.String   `tfsdk:"slurm_controller_config"`
}

type cpuRequirementsModel struct {
	MinVCPUs       types.Int64   `tfsdk:"min_vcpus"`
	MinMemoryGiB   types.Float64 `tfsdk:"min_memory_gib"`
	CPUFeatures    types.List    `tfsdk:"cpu_features"`
	Architecture   types.String  `tfsdk:"architecture"`
	Burstable      types.Bool    `tfsdk:"burstable"`
	MaxHourlyPrice types.Float64 `tfsdk:"max_hourly_price"`
}

type cpuScheduleModel struct {
	Name            types.String `tfsdk:"name"`
	Recurrence      types.String `tfsdk:"recurrence"`
	TimeZone        types.String `tfsdk:"time_zone"`
	Duration        types.String `tfsdk:"duration"`
	MinSize         types.Int64  `tfsdk:"min_size"`
	MaxSize         types.Int64  `tfsdk:"max_size"`
	DesiredCapacity types.Int64  `tfsdk:"desired_capacity"`
}

var (
	cpuRequirementsType = map[string]attr.Type{
		"min_vcpus": types.Int64Type, "min_memory_gib": types.Float64Type, "cpu_features": types.ListType{ElemType: types.StringType},
		"architecture": types.StringType, "burstable": types.BoolType, "max_hourly_price": types.Float64Type,
	}
	cpuScheduleType = types.ObjectType{AttrTypes: map[string]attr.Type{
		"name": types.StringType, "recurrence": types.StringType, "time_zone": types.StringType, "duration": types.StringType,
		"min_size": types.Int64Type, "max_size": types.Int64Type, "desired_capacity": types.Int64Type,
	}}
)

func (r *cpuFootprintResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_cpu_footprint"
}

func (r *cpuFootprintResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	volAttrs := func() map[string]schema.Attribute {
		return map[string]schema.Attribute{
			"size_gib":   schema.Int64Attribute{Optional: true, MarkdownDescription: "Size in GiB. For the root volume, default: the image's size."},
			"type":       schema.StringAttribute{Optional: true, MarkdownDescription: "EBS volume type: `gp3` (default), `gp2`, `io1`, `io2`, `st1` or `sc1`."},
			"iops":       schema.Int64Attribute{Optional: true, MarkdownDescription: "Provisioned IOPS (gp3: 3000 to 80000, io1: 100 to 64000, io2: 100 to 256000)."},
			"throughput": schema.Int64Attribute{Optional: true, MarkdownDescription: "Throughput in MiB/s (gp3 only, 125 to 2000)."},
		}
	}
	dataVol := volAttrs()
	dataVol["size_gib"] = schema.Int64Attribute{Required: true, MarkdownDescription: "Size in GiB."}
	dataVol["device_name"] = schema.StringAttribute{Optional: true, MarkdownDescription: "Device name, e.g. `/dev/sdf`. Default: `/dev/sdf`, `/dev/sdg`, ... in order."}
	computedList := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A CPU footprint for a small or medium business: an EC2 Auto Scaling group of the cheapest instance type offered in the jurisdiction that meets `requirements` " +
			"(vCPUs, memory, ISA features such as `avx512f` or `amx_tile`, architecture, price), or of an explicit `instance_type`. The plan shows the type chosen, why, " +
			"which cheaper types were rejected and for what, and the monthly cost at `desired_capacity` and with the `schedule` blocks applied. " +
			"The footprint owns its launch template and group (`mlplatform-cpu-<name>`) and their scheduled actions: a size a schedule set is not drift. " +
			"Sizes, capacity, schedules, subnets and tags change in place; a change of what an instance is (type, image, volumes, user data, security groups, instance profile, key) " +
			"makes a new launch template version and rolls the instances with an instance refresh that keeps `min_healthy_percentage` in service. Only a new `name` replaces the footprint. " +
			"Residency (subnets' zones, KMS key, image, tags) is checked at plan time, before anything is created.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The footprint name.", PlanModifiers: keep},
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Footprint name, unique in the region: 1 to 100 letters, digits, `-`, `_` or `.`. It names the Auto Scaling group and launch template (`mlplatform-cpu-<name>`). Changing it replaces the footprint.",
			},
			"requirements": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "What the workload needs: the provider picks the cheapest type offered in an allowed zone that meets all of it (stable: the same inputs give the same type; ties broken by name; a type without a known price is never the cheapest). Ignored for the choice when `instance_type` is set, which must still meet it.",
				Attributes: map[string]schema.Attribute{
					"min_vcpus":      schema.Int64Attribute{Optional: true, MarkdownDescription: "Minimum vCPUs per instance."},
					"min_memory_gib": schema.Float64Attribute{Optional: true, MarkdownDescription: "Minimum memory per instance, GiB."},
					"cpu_features": schema.ListAttribute{ElementType: types.StringType, Optional: true,
						MarkdownDescription: fmt.Sprintf("ISA features every instance must have, as `/proc/cpuinfo` names them: %s.", "`"+strings.Join(platform.CPUFeatureNames(), "`, `")+"`")},
					"architecture":     schema.StringAttribute{Optional: true, MarkdownDescription: "`x86_64`, `arm64` or `any` (default)."},
					"burstable":        schema.BoolAttribute{Optional: true, MarkdownDescription: "Allow burstable types (t3, t4g, ...). Default `false`."},
					"max_hourly_price": schema.Float64Attribute{Optional: true, MarkdownDescription: "Most an instance may cost per hour (On-Demand, USD). A type whose price is unknown never meets it."},
				},
			},
			"instance_type":    schema.StringAttribute{Optional: true, MarkdownDescription: "Explicit instance type instead of the choice: still checked against `requirements` and the offerings of the allowed zones. Changing the type rolls the instances."},
			"capacity_type":    schema.StringAttribute{Optional: true, MarkdownDescription: "`on_demand` (default) or `spot`: spot capacity above an On-Demand base (`on_demand_base`), drawn from the cheapest qualifying types (at most 5, cheapest first, allocation `price-capacity-optimized`)."},
			"on_demand_base":   schema.Int64Attribute{Optional: true, MarkdownDescription: "Instances kept On-Demand under `capacity_type = \"spot\"`. Default 0."},
			"min_size":         schema.Int64Attribute{Required: true, MarkdownDescription: "Minimum instances of the group."},
			"max_size":         schema.Int64Attribute{Required: true, MarkdownDescription: fmt.Sprintf("Maximum instances of the group, at most %d.", platform.MaxFootprintSize)},
			"desired_capacity": schema.Int64Attribute{Required: true, MarkdownDescription: "Instances the group runs outside schedules. With `schedule` blocks, the scheduled actions own the group's sizes between changes of the configuration: a size a schedule set is not drift."},
			"subnet_ids": schema.ListAttribute{
				ElementType: types.StringType, Optional: true, Computed: true,
				MarkdownDescription: "Subnets of the group, each in an allowed zone that offers the type. Default: the default subnet of every allowed zone that offers the type.",
			},
			"image":              schema.StringAttribute{Optional: true, MarkdownDescription: "Machine image: an AMI id (`ami-...`) or an SSM parameter that holds one (`/aws/service/...`, or `resolve:ssm:/...`). Default: the latest Amazon Linux 2023 of the chosen type's architecture. A new AMI rolls the instances."},
			"image_id":           schema.StringAttribute{Computed: true, MarkdownDescription: "The AMI the instances run: `image` resolved."},
			"security_group_ids": schema.SetAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Security groups of the instances."},
			"instance_profile":   schema.StringAttribute{Optional: true, MarkdownDescription: "IAM instance profile name or ARN for the instances."},
			"kms_key_arn":        schema.StringAttribute{Optional: true, MarkdownDescription: "ARN of the KMS key that encrypts every volume. Volumes are always encrypted; without a key, with the account's default EBS key. The key must lie inside the jurisdiction."},
			"root_volume":        schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "Root volume of every instance (encrypted).", Attributes: volAttrs()},
			"data_volumes": schema.ListNestedAttribute{
				Optional: true, MarkdownDescription: "Further EBS volumes of every instance (encrypted, deleted with the instance).",
				NestedObject: schema.NestedAttributeObject{Attributes: dataVol},
			},
			"user_data":                   schema.StringAttribute{Optional: true, Sensitive: true, MarkdownDescription: "User data run at boot (plain text, at most 16 KiB): the slot for the hwprobe bootstrap. Changing it rolls the instances. User data is no place for secrets: anyone allowed `ec2:DescribeInstanceAttribute` or `ec2:DescribeLaunchTemplateVersions` can read it, and so can every process on the instance through the metadata service. Keep secrets in AWS Secrets Manager in the jurisdiction and have the script read them at boot with the instance role (`aws secretsmanager get-secret-value`). Sensitive: hidden in plan output."},
			"min_healthy_percentage":      schema.Int64Attribute{Optional: true, MarkdownDescription: fmt.Sprintf("Share of the group kept in service while an instance refresh rolls it, 0 to 100. Default %d.", platform.DefaultMinHealthyPercentage)},
			platform.MetadataHopLimitPath: metadataHopLimitAttr("instances", "instance"),
			"tags":                        schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Tags of the group, its launch template and its instances (propagated at launch) and their volumes. Keys starting with `aws:` or `mlplatform:` are reserved. Changing them retags in place; running instances keep their tags until replaced."},
			"tags_all":                    schema.MapAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "`tags` merged over the provider's `default_tags`."},
			"chosen_instance_type":        schema.StringAttribute{Computed: true, MarkdownDescription: "The instance type the footprint runs: `instance_type`, or the choice."},
			"decision_reason":             schema.StringAttribute{Computed: true, MarkdownDescription: "Why that type: which requirement decided it."},
			"rejected_cheaper":            computedList("Types cheaper than the chosen one that were rejected, each with what it missed (`name: requirement: value`)."),
			"candidates":                  computedList("Every qualifying type, cheapest first."),
			"instance_types":              computedList("Types the group launches: the chosen one, or under spot the cheapest qualifying ones."),
			"hourly_price_usd":            schema.Float64Attribute{Computed: true, MarkdownDescription: "On-Demand price of one instance per hour, USD; 0 when unknown."},
			"price_source":                schema.StringAttribute{Computed: true, MarkdownDescription: "Where the price comes from, and whether it is an estimate for this region."},
			"monthly_cost_usd":            schema.Float64Attribute{Computed: true, MarkdownDescription: fmt.Sprintf("Estimated On-Demand cost of `desired_capacity` instances running all month (%.0f h), USD; 0 when the price is unknown.", platform.HoursPerMonth)},
			"monthly_cost_scheduled_usd":  schema.Float64Attribute{Computed: true, MarkdownDescription: "The same with the `schedule` blocks applied (the mean number of instances over a week)."},
			"cost_note":                   schema.StringAttribute{Computed: true, MarkdownDescription: "What the estimate assumes."},
			"asg_name":                    schema.StringAttribute{Computed: true, MarkdownDescription: "Name of the Auto Scaling group (`mlplatform-cpu-<name>`)."},
			"launch_template_id":          schema.StringAttribute{Computed: true, MarkdownDescription: "Id of the launch template the footprint owns."},
			"creation_token": schema.StringAttribute{
				Computed: true, PlanModifiers: keep,
				MarkdownDescription: "Random token of the create that made the footprint, tagged `mlplatform:creation-token` on its group, launch template and instances: it proves this resource owns them. A create refuses a footprint of the same name it cannot prove it owns (import it instead), and destroy leaves another owner's alone.",
			},
		},
		Blocks: map[string]schema.Block{
			"schedule": schema.ListNestedBlock{
				MarkdownDescription: "Scheduled sizes: at each time `recurrence` fires (in `time_zone`), the group takes the sizes set here; with `duration`, the footprint's own sizes come back when the window ends, so \"scale to zero from 20:00 to 07:00 on working days\" is one block. The footprint owns the group's scheduled actions.",
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"name":             schema.StringAttribute{Required: true, MarkdownDescription: "Name of the scheduled action (1 to 63 letters, digits, `-` or `_`); the action that ends a window is `<name>-end`."},
					"recurrence":       schema.StringAttribute{Required: true, MarkdownDescription: "Cron expression (minute hour day-of-month month day-of-week), e.g. `0 20 * * 1-5`."},
					"time_zone":        schema.StringAttribute{Optional: true, MarkdownDescription: fmt.Sprintf("IANA time zone of `recurrence`. Default `%s`.", platform.DefaultScheduleTimeZone)},
					"duration":         schema.StringAttribute{Optional: true, MarkdownDescription: "Length of the window in whole minutes, e.g. `11h` or `90m`: the footprint's sizes come back when it ends."},
					"min_size":         schema.Int64Attribute{Optional: true, MarkdownDescription: "Minimum size during the window."},
					"max_size":         schema.Int64Attribute{Optional: true, MarkdownDescription: "Maximum size during the window."},
					"desired_capacity": schema.Int64Attribute{Optional: true, MarkdownDescription: "Desired capacity during the window."},
				}},
			},
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
	for k, a := range cpuFootprintValidationSchema() {
		resp.Schema.Attributes[k] = a
	}
	for k, a := range orchestratorSchema("An instance's Slurm name is `PREFIX-INSTANCEID`.") {
		resp.Schema.Attributes[k] = a
	}
}

func (r *cpuFootprintResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.meta = metaFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan runs every plan-time check before anything is written, and
// shows the decision: the type, why, and the cost.
func (r *cpuFootprintResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.meta == nil {
		return
	}
	var plan, config cpuFootprintModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec := cpuFootprintSpec(ctx, &plan, &config, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	checkTimeouts(config.Timeouts, &resp.Diagnostics)
	var state cpuFootprintModel
	var prior *platform.CPUFootprintRecord
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if resp.Diagnostics.HasError() {
			return
		}
		rec := cpuFootprintRecord(ctx, &state, &resp.Diagnostics)
		prior = &rec
	}
	p, err := r.meta.PlanCPUFootprint(ctx, prior, spec)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("planning CPU footprint (%s)", spec.Name), err.Error())
		return
	}
	ReportViolations(r.meta.Policy.Mode, p.Violations, &resp.Diagnostics)
	addProblems(p.Problems, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if spec.Known("name") {
		plan.ID = plan.Name
	}
	setDecision(ctx, &plan, p.Decided, p.Decision, p.InstanceTypes, &resp.Diagnostics)
	if config.SubnetIDs.IsNull() {
		plan.SubnetIDs = types.ListUnknown(types.StringType)
		if p.SubnetIDs != nil {
			plan.SubnetIDs = stringList64(ctx, p.SubnetIDs, &resp.Diagnostics)
		}
	}
	plan.ImageID = types.StringUnknown()
	if p.ImageID != "" {
		plan.ImageID = types.StringValue(p.ImageID)
	}
	plan.TagsAll = types.MapUnknown(types.StringType)
	if p.TagsAll != nil {
		all, d := types.MapValueFrom(ctx, types.StringType, p.TagsAll)
		resp.Diagnostics.Append(d...)
		plan.TagsAll = all
	}
	plan.ASGName, plan.LaunchTemplateID = types.StringUnknown(), types.StringUnknown()
	if spec.Known("name") {
		plan.ASGName = types.StringValue(platform.CPUFootprintResourceName(spec.Name))
	}
	planFootprintValidationAttrs(&plan, &state, p, prior != nil, p.Change != nil && !p.Change.Empty())
	if prior != nil && spec.Validation != nil {
		drained := drainedResults(state.ValidationResults)
		if w := platform.FootprintDrainedWarning(spec.Name, spec.Validation.WithDefaults().OnFailure, drained); w != "" {
			resp.Diagnostics.AddWarning(fmt.Sprintf("planning CPU footprint (%s)", spec.Name), w)
		}
		if len(drained) > 0 && platform.ReplacesDrainedFootprint(spec) {
			// The apply replaces them: the gate judges their replacements.
			plan.ValidationResults = types.ListUnknown(gpuValidationResultType)
		}
	}
	plan.SlurmControllerConfig = planSlurmControllerConfig(plan.Orchestrator, p.SlurmControllerConfig)
	if cs := p.Change; cs != nil {
		warnHopLimit(cs.InPlace, &resp.Diagnostics)
		for _, c := range cs.Replace {
			resp.RequiresReplace.Append(parsePath(c.Path))
		}
		if len(cs.Replace) == 0 {
			plan.CreationToken = state.CreationToken
			if state.LaunchTemplateID.ValueString() != "" {
				plan.LaunchTemplateID = state.LaunchTemplateID
			}
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *cpuFootprintResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan, config cpuFootprintModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, platform.CPUFootprintCreateTimeout)
	resp.Diagnostics.Append(d...)
	spec := cpuFootprintSpec(ctx, &plan, &config, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	f, err := r.meta.CreateCPUFootprint(ctx, spec, cpuFootprintOptions(ctx))
	if f != nil {
		// Even after a failure (Ctrl-C, a timeout, lost answers): what
		// exists goes to state, tainted, so nothing is orphaned.
		setCPUFootprintState(ctx, &plan, platform.RecordCPUFootprint(f, cpuFootprintRecord(ctx, &plan, &resp.Diagnostics)), &resp.Diagnostics)
		setFootprintValidation(ctx, &plan, f, &resp.Diagnostics)
		finishSlurmControllerConfig(&plan.SlurmControllerConfig, plan.Orchestrator, appliedFootprintSlurmConfig(f))
		finishSlurmControllerConfig(&plan.SlurmControllerConfig, plan.Orchestrator, appliedFootprintSlurmConfig(f))
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		if f.ValidationWarning != "" {
			resp.Diagnostics.AddWarning(fmt.Sprintf("validating CPU footprint (%s)", spec.Name), f.ValidationWarning)
		}
	}
	addOutcome(&resp.Diagnostics, fmt.Sprintf("creating CPU footprint (%s)", spec.Name), platform.OutcomeOf(f != nil, err))
}

func (r *cpuFootprintResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state cpuFootprintModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || r.meta == nil {
		return
	}
	name := state.Name.ValueString()
	if name == "" {
		name = state.ID.ValueString()
	}
	f, err := r.meta.FindCPUFootprint(ctx, name, state.CreationToken.ValueString())
	if forgetGone(ctx, resp, "CPU footprint", name, err) {
		return
	}
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("reading CPU footprint (%s)", name), err.Error())
		return
	}
	var rec platform.CPUFootprintRecord
	if state.MinSize.IsNull() {
		// Import: the configuration comes from the group and its template.
		rec, err = r.meta.ImportCPUFootprint(ctx, f)
		if err != nil {
			resp.Diagnostics.AddError(fmt.Sprintf("importing CPU footprint (%s)", name), err.Error())
			return
		}
		state.Timeouts = timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType})}
		setCPUFootprintSpec(ctx, &state, rec.Spec, &resp.Diagnostics)
		state.Validation = types.ObjectNull(gpuValidationType)
		state.ValidationProfile, state.ValidationBootstrap, state.ValidationApprover = types.StringNull(), types.StringNull(), types.StringNull()
		state.ValidationResults = types.ListNull(gpuValidationResultType)
		state.Orchestrator, state.SlurmControllerConfig = types.ObjectNull(orchestratorType), types.StringNull()
	} else {
		rec = platform.ReadBackCPUFootprint(f, cpuFootprintRecord(ctx, &state, &resp.Diagnostics))
	}
	setCPUFootprintState(ctx, &state, rec, &resp.Diagnostics)
	if !state.MinSize.IsNull() && !state.Validation.IsNull() {
		// The instances hwprobe drained in Slurm since the gate passed
		// them: drift the plan reports (and, with on_failure =
		// "replace", repairs).
		if err := r.meta.ReadCPUFootprintHealth(ctx, rec.Spec, f); err != nil {
			resp.Diagnostics.AddWarning(fmt.Sprintf("reading CPU footprint (%s)", name), fmt.Sprintf("which instances hwprobe drained in Slurm could not be read: %v", err))
		}
		state.ValidationResults = markDrainedResults(state.ValidationResults, f.Drained, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *cpuFootprintResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state, config cpuFootprintModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, platform.CPUFootprintUpdateTimeout)
	resp.Diagnostics.Append(d...)
	spec := cpuFootprintSpec(ctx, &plan, &config, &resp.Diagnostics)
	prior := cpuFootprintRecord(ctx, &state, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	f, err := r.meta.UpdateCPUFootprint(ctx, prior, spec, cpuFootprintOptions(ctx))
	if err != nil {
		// Keep the prior configuration, with what exists now: the next plan
		// shows the change again and the next apply finishes it.
		if f != nil {
			f.Applied = nil
			setCPUFootprintState(ctx, &state, platform.RecordCPUFootprint(f, prior), &resp.Diagnostics)
			resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		}
		addCoreError(&resp.Diagnostics, fmt.Sprintf("updating CPU footprint (%s)", spec.Name), err)
		return
	}
	setCPUFootprintState(ctx, &plan, platform.RecordCPUFootprint(f, cpuFootprintRecord(ctx, &plan, &resp.Diagnostics)), &resp.Diagnostics)
	setFootprintValidation(ctx, &plan, f, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if f.ValidationWarning != "" {
		resp.Diagnostics.AddWarning(fmt.Sprintf("validating CPU footprint (%s)", spec.Name), f.ValidationWarning)
	}
}

func (r *cpuFootprintResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state cpuFootprintModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, platform.CPUFootprintDeleteTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := state.Name.ValueString()
	if err := r.meta.DeleteCPUFootprint(ctx, name, state.CreationToken.ValueString(), cpuFootprintOptions(ctx)); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("deleting CPU footprint (%s)", name), err.Error())
	}
}

// ImportState imports a footprint by name.
func (r *cpuFootprintResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
}

func cpuFootprintOptions(ctx context.Context) platform.CPUFootprintOptions {
	return platform.CPUFootprintOptions{Progress: func(msg string) { tflog.Info(ctx, msg) }}
}

func stringList64(ctx context.Context, xs []string, diags *diag.Diagnostics) types.List {
	if xs == nil {
		xs = []string{}
	}
	l, d := types.ListValueFrom(ctx, types.StringType, xs)
	diags.Append(d...)
	return l
}

// setDecision writes the decision into the computed attributes; unknown
// when it is made at apply.
func setDecision(ctx context.Context, m *cpuFootprintModel, decided bool, d platform.CPUDecision, instanceTypes []string, diags *diag.Diagnostics) {
	if !decided {
		m.ChosenInstanceType, m.DecisionReason, m.PriceSource, m.CostNote = types.StringUnknown(), types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
		m.RejectedCheaper, m.Candidates, m.InstanceTypes = types.ListUnknown(types.StringType), types.ListUnknown(types.StringType), types.ListUnknown(types.StringType)
		m.HourlyPriceUSD, m.MonthlyCostUSD, m.MonthlyScheduledUSD = types.Float64Unknown(), types.Float64Unknown(), types.Float64Unknown()
		return
	}
	setDecisionKnown(ctx, m, d, instanceTypes, diags)
}

// clearDecision nulls the decision (a state without one: a create that
// failed before the type was decided).
func clearDecision(m *cpuFootprintModel) {
	m.ChosenInstanceType, m.DecisionReason, m.PriceSource, m.CostNote = types.StringNull(), types.StringNull(), types.StringNull(), types.StringNull()
	m.RejectedCheaper, m.Candidates, m.InstanceTypes = types.ListNull(types.StringType), types.ListNull(types.StringType), types.ListNull(types.StringType)
	m.HourlyPriceUSD, m.MonthlyCostUSD, m.MonthlyScheduledUSD = types.Float64Null(), types.Float64Null(), types.Float64Null()
}

func setDecisionKnown(ctx context.Context, m *cpuFootprintModel, d platform.CPUDecision, instanceTypes []string, diags *diag.Diagnostics) {
	m.ChosenInstanceType = types.StringValue(d.InstanceType)
	m.DecisionReason = types.StringValue(d.Reason)
	m.PriceSource = types.StringValue(d.PriceSource)
	m.CostNote = types.StringValue(d.CostAssumptionNote)
	m.RejectedCheaper = stringList64(ctx, d.Rejected, diags)
	m.Candidates = stringList64(ctx, d.Candidates, diags)
	m.InstanceTypes = stringList64(ctx, instanceTypes, diags)
	hourly, monthly, scheduled := d.Shown()
	m.HourlyPriceUSD = types.Float64Value(hourly)
	m.MonthlyCostUSD = types.Float64Value(monthly)
	m.MonthlyScheduledUSD = types.Float64Value(scheduled)
}

// cpuFootprintRecord is the core's record of what the model holds.
func cpuFootprintRecord(ctx context.Context, m *cpuFootprintModel, diags *diag.Diagnostics) platform.CPUFootprintRecord {
	r := platform.CPUFootprintRecord{
		Spec:      cpuFootprintSpec(ctx, m, m, diags),
		ImageID:   m.ImageID.ValueString(),
		GroupName: m.ASGName.ValueString(), LaunchTemplateID: m.LaunchTemplateID.ValueString(),
		CreationToken: m.CreationToken.ValueString(),
	}
	r.Spec.CreationToken = r.CreationToken
	r.Decision = platform.CPUDecision{
		InstanceType: m.ChosenInstanceType.ValueString(), Reason: m.DecisionReason.ValueString(), PriceSource: m.PriceSource.ValueString(),
		HourlyUSD: m.HourlyPriceUSD.ValueFloat64(), MonthlyAtDesired: m.MonthlyCostUSD.ValueFloat64(), MonthlyScheduled: m.MonthlyScheduledUSD.ValueFloat64(),
		CostAssumptionNote: m.CostNote.ValueString(),
	}
	list := func(l types.List) []string {
		if l.IsNull() || l.IsUnknown() {
			return nil
		}
		var out []string
		diags.Append(l.ElementsAs(ctx, &out, false)...)
		return out
	}
	r.Decision.Rejected, r.Decision.Candidates = list(m.RejectedCheaper), list(m.Candidates)
	r.InstanceTypes, r.SubnetIDs = list(m.InstanceTypes), list(m.SubnetIDs)
	if !m.TagsAll.IsNull() && !m.TagsAll.IsUnknown() {
		r.TagsAll = map[string]string{}
		diags.Append(m.TagsAll.ElementsAs(ctx, &r.TagsAll, false)...)
	}
	return r
}

// setCPUFootprintState writes a core record into the model: the declared
// attributes drift changed, and the computed ones.
func setCPUFootprintState(ctx context.Context, m *cpuFootprintModel, r platform.CPUFootprintRecord, diags *diag.Diagnostics) {
	s := r.Spec
	m.ID, m.Name = types.StringValue(s.Name), types.StringValue(s.Name)
	setHopLimit(&m.MetadataHopLimit, s.MetadataHopLimit)
	m.MinSize, m.MaxSize, m.DesiredCapacity = types.Int64Value(int64(s.Size.Min)), types.Int64Value(int64(s.Size.Max)), types.Int64Value(int64(s.Size.Desired))
	if !m.CapacityType.IsNull() || s.CapacityType == platform.CapacitySpotMixed {
		m.CapacityType = types.StringValue(s.CapacityType)
	}
	if !m.OnDemandBase.IsNull() || s.OnDemandBase != 0 {
		m.OnDemandBase = types.Int64Value(int64(s.OnDemandBase))
	}
	if declared := cpuSchedules(ctx, m, diags); len(s.Schedules) != len(declared) {
		// Schedules whose actions changed outside read back absent: the
		// others stay as declared (a duration as written), as on Pulumi.
		kept := slices.DeleteFunc(declared, func(sc cpuScheduleModel) bool {
			return !slices.ContainsFunc(s.Schedules, func(x platform.Schedule) bool { return x.Name == sc.Name.ValueString() })
		})
		l, d := types.ListValueFrom(ctx, cpuScheduleType, kept)
		diags.Append(d...)
		m.Schedule = l
	}
	if r.Decision.InstanceType != "" {
		setDecisionKnown(ctx, m, r.Decision, r.InstanceTypes, diags)
	} else {
		clearDecision(m)
	}
	m.SubnetIDs = stringList64(ctx, r.SubnetIDs, diags)
	m.ImageID = types.StringValue(r.ImageID)
	m.TagsAll = types.MapNull(types.StringType)
	if r.TagsAll != nil {
		all, d := types.MapValueFrom(ctx, types.StringType, r.TagsAll)
		diags.Append(d...)
		m.TagsAll = all
	}
	m.ASGName, m.LaunchTemplateID, m.CreationToken = types.StringValue(r.GroupName), types.StringValue(r.LaunchTemplateID), types.StringValue(r.CreationToken)
}

func schedulesValue(ctx context.Context, ss []platform.Schedule, diags *diag.Diagnostics) types.List {
	var out []cpuScheduleModel
	for _, s := range ss {
		sm := cpuScheduleModel{Name: types.StringValue(s.Name), Recurrence: types.StringValue(s.Recurrence), TimeZone: types.StringNull(), Duration: types.StringNull(),
			MinSize: intOrNull(s.Min), MaxSize: intOrNull(s.Max), DesiredCapacity: intOrNull(s.Desired)}
		if s.TimeZone != "" {
			sm.TimeZone = types.StringValue(s.TimeZone)
		}
		if s.Duration != 0 {
			sm.Duration = types.StringValue(platform.ScheduleDurationText(s.Duration, ""))
		}
		out = append(out, sm)
	}
	l, d := types.ListValueFrom(ctx, cpuScheduleType, out)
	diags.Append(d...)
	return l
}

func intOrNull(p *int) types.Int64 {
	if p == nil {
		return types.Int64Null()
	}
	return types.Int64Value(int64(*p))
}

// setCPUFootprintSpec writes an imported spec into the declared attributes.
func setCPUFootprintSpec(ctx context.Context, m *cpuFootprintModel, s platform.CPUFootprintSpec, diags *diag.Diagnostics) {
	str := func(v string) types.String {
		if v == "" {
			return types.StringNull()
		}
		return types.StringValue(v)
	}
	m.Requirements = types.ObjectNull(cpuRequirementsType)
	m.InstanceType = str(s.InstanceType)
	m.CapacityType = str(s.CapacityType)
	m.OnDemandBase = types.Int64Null()
	if s.OnDemandBase != 0 {
		m.OnDemandBase = types.Int64Value(int64(s.OnDemandBase))
	}
	m.Schedule = types.ListNull(cpuScheduleType)
	if len(s.Schedules) > 0 {
		m.Schedule = schedulesValue(ctx, s.Schedules, diags)
	}
	m.Image = str(s.Image)
	m.SecurityGroupIDs = types.SetNull(types.StringType)
	if len(s.SecurityGroupIDs) > 0 {
		m.SecurityGroupIDs, _ = types.SetValueFrom(ctx, types.StringType, s.SecurityGroupIDs)
	}
	m.InstanceProfile, m.KMSKeyARN, m.UserData = str(s.InstanceProfile), str(s.KMSKeyARN), str(s.UserData)
	m.MetadataHopLimit = types.Int64Value(int64(s.MetadataHopLimit))
	m.RootVolume = types.ObjectNull(gpuRootVolType)
	if v := s.RootVolume; v.SizeGiB > 0 {
		m.RootVolume, _ = types.ObjectValueFrom(ctx, gpuRootVolType, gpuRootVolumeModel{SizeGiB: int64Or(v.SizeGiB), Type: str(v.Type), IOPS: int64Or(v.IOPS), Throughput: int64Or(v.Throughput)})
	}
	m.DataVolumes = types.ListNull(gpuDataVolType)
	if len(s.DataVolumes) > 0 {
		var vs []gpuVolumeModel
		for _, v := range s.DataVolumes {
			vs = append(vs, gpuVolumeModel{DeviceName: str(v.DeviceName), SizeGiB: int64Or(v.SizeGiB), Type: str(v.Type), IOPS: int64Or(v.IOPS), Throughput: int64Or(v.Throughput)})
		}
		m.DataVolumes, _ = types.ListValueFrom(ctx, gpuDataVolType, vs)
	}
	m.MinHealthyPercentage = types.Int64Null()
	m.Tags = types.MapNull(types.StringType)
	if len(s.Tags) > 0 {
		m.Tags, _ = types.MapValueFrom(ctx, types.StringType, s.Tags)
	}
	m.Size(s.Size)
}

// Size writes group sizes.
func (m *cpuFootprintModel) Size(z platform.GroupSize) {
	m.MinSize, m.MaxSize, m.DesiredCapacity = types.Int64Value(int64(z.Min)), types.Int64Value(int64(z.Max)), types.Int64Value(int64(z.Desired))
}

func cpuSchedules(ctx context.Context, m *cpuFootprintModel, diags *diag.Diagnostics) []cpuScheduleModel {
	if m.Schedule.IsNull() || m.Schedule.IsUnknown() {
		return nil
	}
	var out []cpuScheduleModel
	diags.Append(m.Schedule.ElementsAs(ctx, &out, false)...)
	return out
}

// cpuFootprintSpec translates the planned model to the domain spec; unknown
// values are listed in spec.Unknown. subnet_ids, Optional and Computed, is
// taken from the configuration: unset there, the core resolves it.
func cpuFootprintSpec(ctx context.Context, m, config *cpuFootprintModel, diags *diag.Diagnostics) platform.CPUFootprintSpec {
	var s platform.CPUFootprintSpec
	unknown := func(p string) { s.Unknown = append(s.Unknown, p) }
	str := func(p string, v types.String) string {
		if v.IsUnknown() {
			unknown(p)
		}
		return v.ValueString()
	}
	num := func(p string, v types.Int64) int {
		if v.IsUnknown() {
			unknown(p)
		}
		return int(v.ValueInt64())
	}
	strs := func(p string, v interface {
		IsNull() bool
		IsUnknown() bool
		Elements() []attr.Value
	}) []string {
		if v.IsUnknown() || slices.ContainsFunc(v.Elements(), attr.Value.IsUnknown) {
			unknown(p)
			return nil
		}
		var out []string
		for _, e := range v.Elements() {
			if sv, ok := e.(types.String); ok {
				out = append(out, sv.ValueString())
			}
		}
		return out
	}
	s.Name = str("name", m.Name)
	s.InstanceType = str("instance_type", m.InstanceType)
	s.CapacityType = str("capacity_type", m.CapacityType)
	s.OnDemandBase = num("on_demand_base", m.OnDemandBase)
	s.Size = platform.GroupSize{Min: num("min_size", m.MinSize), Max: num("max_size", m.MaxSize), Desired: num("desired_capacity", m.DesiredCapacity)}
	if m.Requirements.IsUnknown() {
		unknown("requirements")
	} else if !m.Requirements.IsNull() {
		var rq cpuRequirementsModel
		diags.Append(m.Requirements.As(ctx, &rq, gpuObjectAs)...)
		s.Requirements.MinVCPUs = num("requirements.min_vcpus", rq.MinVCPUs)
		if rq.MinMemoryGiB.IsUnknown() {
			unknown("requirements.min_memory_gib")
		}
		s.Requirements.MinMemoryGiB = rq.MinMemoryGiB.ValueFloat64()
		if !rq.CPUFeatures.IsNull() {
			s.Requirements.CPUFeatures = strs("requirements.cpu_features", rq.CPUFeatures)
		}
		s.Requirements.Architecture = str("requirements.architecture", rq.Architecture)
		if rq.Burstable.IsUnknown() {
			unknown("requirements.burstable")
		}
		s.Requirements.Burstable = rq.Burstable.ValueBool()
		if rq.MaxHourlyPrice.IsUnknown() {
			unknown("requirements.max_hourly_price")
		}
		s.Requirements.MaxHourlyPrice = rq.MaxHourlyPrice.ValueFloat64()
	}
	if m.Schedule.IsUnknown() {
		unknown("schedule")
	}
	for i, sc := range cpuSchedules(ctx, m, diags) {
		p := fmt.Sprintf("schedule[%d]", i)
		ps := platform.Schedule{Name: str(p+".name", sc.Name), Recurrence: str(p+".recurrence", sc.Recurrence), TimeZone: str(p+".time_zone", sc.TimeZone)}
		if d := str(p+".duration", sc.Duration); d != "" {
			dur, err := platform.ParseScheduleDuration(d)
			if err != nil {
				s.InputProblems = append(s.InputProblems, platform.Problem{Path: p + ".duration", Summary: "Invalid duration", Detail: err.Error() + "."})
			}
			ps.Duration = dur
		}
		for _, f := range []struct {
			v   types.Int64
			dst **int
			n   string
		}{{sc.MinSize, &ps.Min, "min_size"}, {sc.MaxSize, &ps.Max, "max_size"}, {sc.DesiredCapacity, &ps.Desired, "desired_capacity"}} {
			if f.v.IsUnknown() {
				unknown(p + "." + f.n)
			} else if !f.v.IsNull() {
				n := int(f.v.ValueInt64())
				*f.dst = &n
			}
		}
		s.Schedules = append(s.Schedules, ps)
	}
	if slices.ContainsFunc(s.Unknown, func(u string) bool { return strings.HasPrefix(u, "schedule[") }) {
		unknown("schedule")
	}
	if !config.SubnetIDs.IsNull() {
		s.SubnetIDs = strs("subnet_ids", config.SubnetIDs)
	}
	s.Image = str("image", m.Image)
	if !m.SecurityGroupIDs.IsNull() {
		s.SecurityGroupIDs = strs("security_group_ids", m.SecurityGroupIDs)
		slices.Sort(s.SecurityGroupIDs)
	}
	s.InstanceProfile = str("instance_profile", m.InstanceProfile)
	s.KMSKeyARN = str("kms_key_arn", m.KMSKeyARN)
	if m.RootVolume.IsUnknown() {
		unknown("root_volume")
	} else if !m.RootVolume.IsNull() {
		var v gpuRootVolumeModel
		diags.Append(m.RootVolume.As(ctx, &v, gpuObjectAs)...)
		vol, ps := platform.VolumeFromInput("root_volume", platform.VolumeInput{SizeGiB: v.SizeGiB.ValueInt64(), Type: v.Type.ValueString(), IOPS: v.IOPS.ValueInt64(), Throughput: v.Throughput.ValueInt64()})
		s.RootVolume, s.InputProblems = vol, append(s.InputProblems, ps...)
	}
	if m.DataVolumes.IsUnknown() {
		unknown("data_volumes")
	} else if !m.DataVolumes.IsNull() {
		var vs []gpuVolumeModel
		diags.Append(m.DataVolumes.ElementsAs(ctx, &vs, false)...)
		for i, v := range vs {
			vol, ps := platform.VolumeFromInput(fmt.Sprintf("data_volumes[%d]", i), platform.VolumeInput{DeviceName: v.DeviceName.ValueString(), SizeGiB: v.SizeGiB.ValueInt64(), Type: v.Type.ValueString(), IOPS: v.IOPS.ValueInt64(), Throughput: v.Throughput.ValueInt64()})
			s.DataVolumes, s.InputProblems = append(s.DataVolumes, vol), append(s.InputProblems, ps...)
		}
	}
	s.UserData = str("user_data", m.UserData)
	s.MetadataHopLimit = hopLimit(m.MetadataHopLimit, &s.Unknown)
	s.Validation = footprintValidationSpec(ctx, m.Validation, &s, diags)
	s.Slurm = slurmSpecFrom(ctx, m.Orchestrator, &s.Unknown, diags)
	s.EKS = eksSpecFrom(ctx, m.Orchestrator, &s.Unknown, diags)
	s.Kube = kubeSpecFrom(ctx, m.Orchestrator, &s.Unknown, diags)
	s.MinHealthyPercentage = num("min_healthy_percentage", m.MinHealthyPercentage)
	if m.Tags.IsUnknown() {
		unknown("tags")
	} else if !m.Tags.IsNull() {
		s.Tags = map[string]string{}
		for k, v := range m.Tags.Elements() {
			if sv, ok := v.(types.String); ok && !sv.IsUnknown() {
				s.Tags[k] = sv.ValueString()
			} else {
				s.Tags[k] = ""
				unknown(fmt.Sprintf("tags[%q]", k))
			}
		}
	}
	return s
}
