package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mlplatform/mlplatform/internal/platform"
)

var (
	_ resource.ResourceWithConfigure   = &servingEndpointResource{}
	_ resource.ResourceWithModifyPlan  = &servingEndpointResource{}
	_ resource.ResourceWithImportState = &servingEndpointResource{}
)

// NewServingEndpointResource is the mlplatform_serving_endpoint constructor.
func NewServingEndpointResource() resource.Resource { return &servingEndpointResource{} }

type servingEndpointResource struct {
	meta *Meta
}

type servingEndpointModel struct {
	ID                    types.String          `tfsdk:"id"`
	Name                  types.String          `tfsdk:"name"`
	Model                 *servingModelModel    `tfsdk:"model"`
	Variants              []servingVariantModel `tfsdk:"variants"`
	Deployment            *servingDeployModel   `tfsdk:"deployment"`
	DataCapture           *servingCaptureModel  `tfsdk:"data_capture"`
	KMSKeyARN             types.String          `tfsdk:"kms_key_arn"`
	VPCConfig             *servingVPCModel      `tfsdk:"vpc_config"`
	NetworkIsolation      types.Bool            `tfsdk:"network_isolation"`
	Tags                  types.Map             `tfsdk:"tags"`
	TagsAll               types.Map             `tfsdk:"tags_all"`
	ARN                   types.String          `tfsdk:"arn"`
	Status                types.String          `tfsdk:"status"`
	FailureReason         types.String          `tfsdk:"failure_reason"`
	EndpointConfigName    types.String          `tfsdk:"endpoint_config_name"`
	ModelName             types.String          `tfsdk:"model_name"`
	LastDeploymentOutcome types.String          `tfsdk:"last_deployment_outcome"`
	MonthlyCostUSD        types.Float64         `tfsdk:"monthly_cost_usd"`
	PriceSource           types.String          `tfsdk:"price_source"`
	StandardAlarmNames    types.List            `tfsdk:"standard_alarm_names"`
	Timeouts              timeouts.Value        `tfsdk:"timeouts"`
}

type servingVPCModel struct {
	SubnetIDs        types.List `tfsdk:"subnet_ids"`
	SecurityGroupIDs types.List `tfsdk:"security_group_ids"`
}

type servingModelModel struct {
	Image            types.String `tfsdk:"image"`
	ModelDataURI     types.String `tfsdk:"model_data_uri"`
	Environment      types.Map    `tfsdk:"environment"`
	ExecutionRoleARN types.String `tfsdk:"execution_role_arn"`
}

type servingVariantModel struct {
	Name                 types.String            `tfsdk:"name"`
	InstanceType         types.String            `tfsdk:"instance_type"`
	InitialInstanceCount types.Int64             `tfsdk:"initial_instance_count"`
	InitialWeight        types.Float64           `tfsdk:"initial_weight"`
	Serverless           *servingServerlessModel `tfsdk:"serverless"`
	Autoscaling          *servingScalingModel    `tfsdk:"autoscaling"`
}

type servingScalingModel struct {
	MinCapacity             types.Int64   `tfsdk:"min_capacity"`
	MaxCapacity             types.Int64   `tfsdk:"max_capacity"`
	TargetInvocations       types.Float64 `tfsdk:"target_invocations_per_instance"`
	ScaleInCooldownSeconds  types.Int64   `tfsdk:"scale_in_cooldown_seconds"`
	ScaleOutCooldownSeconds types.Int64   `tfsdk:"scale_out_cooldown_seconds"`
	Schedule                types.List    `tfsdk:"schedule"`
}

type servingServerlessModel struct {
	MemorySizeMB   types.Int64 `tfsdk:"memory_size_mb"`
	MaxConcurrency types.Int64 `tfsdk:"max_concurrency"`
}

type servingDeployModel struct {
	TrafficRouting         types.String                `tfsdk:"traffic_routing"`
	SizeType               types.String                `tfsdk:"size_type"`
	SizeValue              types.Int64                 `tfsdk:"size_value"`
	WaitSeconds            types.Int64                 `tfsdk:"wait_seconds"`
	TerminationWaitSeconds types.Int64                 `tfsdk:"termination_wait_seconds"`
	MaxExecutionSeconds    types.Int64                 `tfsdk:"maximum_execution_timeout_seconds"`
	RollbackAlarms         types.List                  `tfsdk:"rollback_alarms"`
	StandardAlarms         *servingStandardAlarmsModel `tfsdk:"standard_alarms"`
}

type servingCaptureModel struct {
	Enabled            types.Bool   `tfsdk:"enabled"`
	SamplingPercentage types.Int64  `tfsdk:"sampling_percentage"`
	DestinationS3URI   types.String `tfsdk:"destination_s3_uri"`
	KMSKeyARN          types.String `tfsdk:"kms_key_arn"`
	CaptureOptions     types.List   `tfsdk:"capture_options"`
}

func (r *servingEndpointResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_serving_endpoint"
}

func (r *servingEndpointResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	code := func(vs []string) string { return "`" + strings.Join(vs, "`, `") + "`" }
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A SageMaker real-time endpoint (model, endpoint config and endpoint) on GPU or CPU instances, or serverless, that stays in the jurisdiction and stays up through changes. " +
			"The image's registry, the model data and data capture buckets and every KMS key are checked against the residency policy at plan time. " +
			"A change of the model, the variants, the data capture or the key is a blue/green update through `UpdateEndpoint` with a new endpoint config (generated names, so updates never collide): " +
			"the endpoint keeps its ARN, the old config and model are deleted only once the new config serves, and an update that SageMaker silently rolled back fails the apply with SageMaker's reason. " +
			"The plan warns when a deployment guardrail (canary, linear) will fall back to all at once, and says which rule.",
		Attributes: map[string]schema.Attribute{
			"id": computed("The endpoint name."),
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Endpoint name (1 to 63 letters, digits and hyphens). Changing it creates a new endpoint (new ARN and URL).",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"model": schema.SingleNestedAttribute{
				Required:            true,
				MarkdownDescription: "The container that serves. A change deploys a new model and endpoint config blue/green.",
				Attributes: map[string]schema.Attribute{
					"image":              schema.StringAttribute{Required: true, MarkdownDescription: "ECR image URI (`ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG` or `@sha256:DIGEST`); its registry's region must be in the jurisdiction."},
					"model_data_uri":     schema.StringAttribute{Optional: true, MarkdownDescription: "S3 URI of the model artifacts (`s3://BUCKET/KEY`), in a bucket in the jurisdiction."},
					"environment":        schema.MapAttribute{ElementType: types.StringType, Optional: true, Sensitive: true, MarkdownDescription: "Environment variables of the container. No place for secrets: anyone allowed `sagemaker:DescribeModel` can read them. Keep secrets in AWS Secrets Manager in the jurisdiction and have the container read them at start with the execution role: a container that calls Secrets Manager needs `network_isolation = false` (network isolation, the default, blocks every call out), best with `vpc_config` and a Secrets Manager VPC endpoint in that VPC. Sensitive: hidden in plan output."},
					"execution_role_arn": schema.StringAttribute{Required: true, MarkdownDescription: "IAM role SageMaker assumes to pull the image and the model data."},
				},
			},
			"variants": schema.ListNestedAttribute{
				Required:            true,
				MarkdownDescription: "Production variants (1 to 10): each on instances (`instance_type`, `initial_instance_count`) or serverless, never mixed in one endpoint.",
				Validators:          []validator.List{listvalidator.SizeBetween(1, 10)},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":                   schema.StringAttribute{Required: true, MarkdownDescription: "Variant name."},
					"instance_type":          schema.StringAttribute{Optional: true, MarkdownDescription: "SageMaker instance type, GPU or CPU: `ml.FAMILY.SIZE`, e.g. `ml.g6.xlarge`, `ml.m5.large`. Families: " + code(platform.ServingFamilies()) + "."},
					"initial_instance_count": schema.Int64Attribute{Optional: true, MarkdownDescription: "Instances of an instance variant (1 to 1000). A variant scaled outside Terraform shows as a change, unless it has `autoscaling`: autoscaling owns its count then."},
					"initial_weight":         schema.Float64Attribute{Optional: true, MarkdownDescription: "Traffic weight relative to the other variants; unset means 1."},
					"serverless": schema.SingleNestedAttribute{
						Optional:            true,
						MarkdownDescription: "Serverless variant, for small footprints.",
						Attributes: map[string]schema.Attribute{
							"memory_size_mb":  schema.Int64Attribute{Required: true, MarkdownDescription: "Memory: 1024, 2048, 3072, 4096, 5120 or 6144 MB."},
							"max_concurrency": schema.Int64Attribute{Required: true, MarkdownDescription: "Concurrent invocations (1 to 200)."},
						},
					},
					"autoscaling": schema.SingleNestedAttribute{
						Optional: true,
						MarkdownDescription: "Autoscaling of an instance variant through Application Auto Scaling: a scalable target (`endpoint/NAME/variant/VARIANT`, `sagemaker:variant:DesiredInstanceCount`) registered once the endpoint is in service, " +
							"with a target-tracking policy on `SageMakerVariantInvocationsPerInstance`. Changing it changes the target and the policy in place. " +
							"The instance count autoscaling sets is not a change; bounds, target or cooldowns changed outside Terraform are. Not for serverless variants.",
						Attributes: map[string]schema.Attribute{
							"min_capacity":                    schema.Int64Attribute{Required: true, MarkdownDescription: "Fewest instances (at least 1)."},
							"max_capacity":                    schema.Int64Attribute{Required: true, MarkdownDescription: "Most instances (at least `min_capacity`, at most 1000)."},
							"target_invocations_per_instance": schema.Float64Attribute{Required: true, MarkdownDescription: "Invocations per instance per minute that the policy tracks (more than 0)."},
							"scale_in_cooldown_seconds": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(platform.ServingDefaultCooldownSeconds),
								MarkdownDescription: fmt.Sprintf("Seconds after a scale-in before the next (default %d).", platform.ServingDefaultCooldownSeconds)},
							"scale_out_cooldown_seconds": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(platform.ServingDefaultCooldownSeconds),
								MarkdownDescription: fmt.Sprintf("Seconds after a scale-out before the next (default %d).", platform.ServingDefaultCooldownSeconds)},
							"schedule": servingScheduleAttribute(),
						},
					},
				}},
			},
			"deployment": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "How an update shifts traffic to the new fleet (blue/green). Changing it alone changes nothing in AWS; the next update uses it.",
				Attributes: map[string]schema.Attribute{
					"traffic_routing": schema.StringAttribute{Optional: true, MarkdownDescription: "One of " + code(platform.TrafficRoutings()) + "; unset means `all_at_once`. Canary and linear shifting run on single-variant instance endpoints only; elsewhere SageMaker shifts all at once, and the plan warns.",
						Validators: []validator.String{stringvalidator.OneOf(platform.TrafficRoutings()...)}},
					"size_type":  schema.StringAttribute{Optional: true, MarkdownDescription: "Canary size or linear step unit: " + code(platform.SizeTypes()) + "."},
					"size_value": schema.Int64Attribute{Optional: true, MarkdownDescription: "Canary size or linear step."},
					"wait_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: fmt.Sprintf("Wait between traffic shifts (0 to %d).", platform.ServingMaxWaitSeconds),
						Validators: []validator.Int64{int64validator.Between(0, platform.ServingMaxWaitSeconds)}},
					"termination_wait_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: fmt.Sprintf("How long the old fleet is kept after the switch (0 to %d).", platform.ServingMaxWaitSeconds),
						Validators: []validator.Int64{int64validator.Between(0, platform.ServingMaxWaitSeconds)}},
					"maximum_execution_timeout_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "Bound of the whole deployment (600 to 28800); unset: SageMaker's default."},
					"rollback_alarms":                   schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "CloudWatch alarm names that roll the deployment back (at most 10, the standard alarms included)."},
					"standard_alarms":                   servingStandardAlarmsSchema(),
				},
			},
			"data_capture": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Capture of requests and responses, to a bucket in the jurisdiction.",
				Attributes: map[string]schema.Attribute{
					"enabled": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true), MarkdownDescription: "Capture on (default) or off."},
					"sampling_percentage": schema.Int64Attribute{Required: true, MarkdownDescription: "Share of requests captured, 0 to 100.",
						Validators: []validator.Int64{int64validator.Between(0, 100)}},
					"destination_s3_uri": schema.StringAttribute{Required: true, MarkdownDescription: "Where captures go (`s3://BUCKET/PREFIX`), in a bucket in the jurisdiction."},
					"kms_key_arn":        schema.StringAttribute{Optional: true, MarkdownDescription: "KMS key ARN that encrypts the captures; in the jurisdiction."},
					"capture_options":    schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "What is captured: " + code(platform.CaptureModes()) + "; unset means both."},
				},
			},
			"vpc_config": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Puts the model's container in your VPC (the model's `VpcConfig`): its network interfaces go in these subnets, with these security groups, so that what it reaches is what your VPC allows. " +
					"Checked at plan like every subnet the provider takes: each subnet must exist in the provider's region and lie in a zone the residency policy allows (`residency.excluded_zone_ids` included), the subnets in one VPC, the security groups of that VPC; " +
					"ids known only at apply are checked then, before anything is written. Not for serverless endpoints (SageMaker runs them in its own network). " +
					"A model cannot change: changing this deploys a new model and endpoint config blue/green, as a model change does.",
				Attributes: map[string]schema.Attribute{
					"subnet_ids": schema.ListAttribute{ElementType: types.StringType, Required: true,
						MarkdownDescription: fmt.Sprintf("Subnet ids (1 to %d), of one VPC, in allowed zones; subnets in two or more zones keep the endpoint up when a zone is not.", platform.ServingMaxSubnets)},
					"security_group_ids": schema.ListAttribute{ElementType: types.StringType, Required: true,
						MarkdownDescription: fmt.Sprintf("Security group ids (1 to %d) of the subnets' VPC.", platform.ServingMaxSecurityGroups)},
				},
			},
			"network_isolation": schema.BoolAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Network isolation of the model's container (`EnableNetworkIsolation`): no network call in or out, so the container cannot send what it serves anywhere, nor fetch code or data at run time, even with `vpc_config`. " +
					"SageMaker still pulls the image and the model data for it, with the execution role. Default `true` on instance endpoints; `false` on serverless endpoints, which SageMaker does not isolate (setting it `true` there is refused). " +
					"Set it to `false` for a container that must call out (an AWS API such as Secrets Manager, a licence server, a feature store), best with `vpc_config` so that those calls stay in your VPC. " +
					"A model cannot change: changing it deploys a new model blue/green.",
			},
			"kms_key_arn":             schema.StringAttribute{Optional: true, MarkdownDescription: "KMS key ARN that encrypts the instances' storage volumes; in the jurisdiction. Required where customer-managed keys are (jurisdiction `AE` by default), except on instance types with local NVMe instance storage (`ml.g5`, `ml.g6`, `ml.p4d`, `ml.p5` and others): SageMaker encrypts that storage with a hardware module on the instance and refuses a key there, so setting one on such a type is an error at plan."},
			"tags":                    schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: "Tags of the endpoint, merged over the provider's `default_tags`. Changing them is an in-place update."},
			"tags_all":                schema.MapAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "All tags of the endpoint: `tags` merged over the provider's `default_tags`."},
			"arn":                     computed("ARN of the endpoint; it stays the same across blue/green updates."),
			"status":                  computed("Status of the endpoint: `InService` once serving."),
			"failure_reason":          computed("SageMaker's reason when the endpoint failed or the last update was rolled back."),
			"endpoint_config_name":    computed("The endpoint config the endpoint serves now (a generated name; it changes with every blue/green update)."),
			"model_name":              computed("The model the endpoint serves now (a generated name)."),
			"last_deployment_outcome": computed("Outcome of the last create or update this provider ran: `Created`, `Updated` or `RolledBack` (SageMaker rolled the update back: the apply failed and the endpoint serves its old config)."),
			"monthly_cost_usd": schema.Float64Attribute{Computed: true, MarkdownDescription: fmt.Sprintf("On-Demand cost of a month (%.0f hours) with every instance variant at its `initial_instance_count`: instances x hourly price, summed. "+
				"Serverless variants count 0 (priced per use); an autoscaled variant's range is in `price_source`. Shown in the plan; unknown while a type or count is.", platform.HoursPerMonth)},
			"standard_alarm_names": schema.ListAttribute{ElementType: types.StringType, Computed: true,
				MarkdownDescription: "Names of the standard alarms the provider created (`deployment.standard_alarms`), variant by variant, latency first: wire them to SNS with `aws_cloudwatch_metric_alarm` data or your alerting. Null when none are asked for."},
			"price_source": schema.StringAttribute{Computed: true, MarkdownDescription: "Where each price in `monthly_cost_usd` comes from, its date, and whether it is an estimate (a price not quoted for the provider's region is)."},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{
				Create: true, Update: true, Delete: true,
				CreateDescription: "How long to wait for the endpoint to be in service (default 60m).",
				UpdateDescription: "How long to wait for a blue/green update (default 90m).",
				DeleteDescription: "How long to wait for the endpoint to be deleted (default 30m).",
			}),
		},
	}
}

func (r *servingEndpointResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.meta = metaFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan validates the endpoint, checks its residency, warns where a
// deployment guardrail falls back to all at once, and marks what a
// blue/green update will change.
func (r *servingEndpointResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan servingEndpointModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	checkTimeouts(plan.Timeouts, &resp.Diagnostics)
	spec, unknown := servingEndpointSpec(&plan)
	// network_isolation not set is the core's default, whatever the prior
	// state holds (Terraform proposes it for an unset computed value).
	var isolation types.Bool
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(platform.ServingNetworkIsolationPath), &isolation)...)
	if isolation.IsNull() {
		spec.NetworkIsolation = nil
		unknown = slices.DeleteFunc(unknown, func(p string) bool { return p == platform.ServingNetworkIsolationPath })
		planned := types.BoolUnknown()
		// The default depends on whether a variant is serverless: known
		// unless a whole variant, or the list, is not.
		if !slices.ContainsFunc(unknown, func(p string) bool {
			return p == "variants" || strings.HasPrefix(p, "variants[") && !strings.Contains(p, "].")
		}) {
			planned = types.BoolValue(spec.NetworkIsolationOn())
		}
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(platform.ServingNetworkIsolationPath), planned)...)
	}
	if r.meta == nil {
		addInvalid("serving endpoint", platform.ValidateServingEndpoint(spec, unknown), &resp.Diagnostics)
		return
	}
	errs, vs, warnings, err := r.meta.CheckServingEndpoint(ctx, spec, unknown)
	if err != nil {
		resp.Diagnostics.AddError("checking data residency", err.Error())
		return
	}
	addInvalid("serving endpoint", errs, &resp.Diagnostics)
	ReportViolations(r.meta.Policy.Mode, vs, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if tagsAll := r.meta.PlannedTagsAll(spec.Tags, !slices.Contains(unknown, platform.ServingEndpointTagsPath)); tagsAll != nil {
		all, d := types.MapValueFrom(ctx, types.StringType, tagsAll)
		resp.Diagnostics.Append(d...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("tags_all"), all)...)
	} else {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("tags_all"), types.MapUnknown(types.StringType))...)
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("standard_alarm_names"), plannedAlarmNames(spec, unknown, &resp.Diagnostics))...)
	cost, price := servingCost(spec, r.meta.Region(), unknown, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("monthly_cost_usd"), cost)...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("price_source"), price)...)
	if req.State.Raw.IsNull() {
		if !slices.Contains(unknown, "name") {
			taken, err := r.meta.CheckServingEndpointCreate(ctx, spec.Name)
			if err != nil {
				resp.Diagnostics.AddError(fmt.Sprintf("checking serving endpoint (%s)", spec.Name), err.Error())
				return
			}
			addInvalid("serving endpoint", taken, &resp.Diagnostics)
		}
		addProblems(warnings, &resp.Diagnostics)
		return
	}
	var state servingEndpointModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	old, _ := servingEndpointSpec(&state)
	p := platform.PlanServingEndpoint(old, spec, unknown)
	addProblems(p.Warnings, &resp.Diagnostics)
	if p.NewConfig() {
		for _, a := range []string{"endpoint_config_name", "model_name", "last_deployment_outcome", "status", "failure_reason"} {
			resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(a), types.StringUnknown())...)
		}
	}
}

func (r *servingEndpointResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan servingEndpointModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, platform.ServingEndpointCreateTimeout)
	resp.Diagnostics.Append(d...)
	spec, _ := servingEndpointSpec(&plan)
	ep, vs, err := r.meta.CreateServingEndpoint(ctx, spec, servingWait(ctx, spec.Name, "creation", timeout))
	ReportViolations(r.meta.Policy.Mode, vs, &resp.Diagnostics)
	if ep != nil {
		// Created, even if not in service: record it so that it is tainted
		// and replaced, never orphaned.
		resp.Diagnostics.Append(r.readBack(ctx, &plan, ep, "")...)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
	if err != nil {
		addServingError(fmt.Sprintf("creating serving endpoint (%s)", spec.Name), err, &resp.Diagnostics)
	}
}

func (r *servingEndpointResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state servingEndpointModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Name.ValueString()
	// An update cut off by its timeout left the config of before recorded:
	// once the endpoint serves another, the read deletes the unused ones.
	stateSpec, _ := servingEndpointSpec(&state)
	recorded := platform.ServingEndpointPrior{Spec: stateSpec, ConfigName: state.EndpointConfigName.ValueString(), ModelName: state.ModelName.ValueString()}
	ep, err := r.meta.ReadServingEndpoint(ctx, name, recorded)
	if errors.Is(err, platform.ErrNotFound) {
		tflog.Warn(ctx, "serving endpoint is gone; removing it from state", map[string]any{"name": name})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("reading serving endpoint (%s)", name), err.Error())
		return
	}
	for _, w := range ep.Warnings {
		resp.Diagnostics.AddWarning(fmt.Sprintf("reading serving endpoint (%s)", name), w)
	}
	resp.Diagnostics.Append(r.readBack(ctx, &state, ep, state.LastDeploymentOutcome.ValueString())...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *servingEndpointResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state servingEndpointModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, platform.ServingEndpointUpdateTimeout)
	resp.Diagnostics.Append(d...)
	spec, _ := servingEndpointSpec(&plan)
	old, _ := servingEndpointSpec(&state)
	prior := platform.ServingEndpointPrior{Spec: old, ConfigName: state.EndpointConfigName.ValueString(), ModelName: state.ModelName.ValueString()}
	ep, vs, err := r.meta.UpdateServingEndpoint(ctx, prior, spec, servingWait(ctx, spec.Name, "update", timeout))
	ReportViolations(r.meta.Policy.Mode, vs, &resp.Diagnostics)
	if ep != nil {
		for _, w := range ep.Warnings {
			resp.Diagnostics.AddWarning(fmt.Sprintf("updating serving endpoint (%s)", spec.Name), w)
		}
	}
	if err != nil {
		// Keep the declared values of before: the next plan shows the
		// change again. What serves now is recorded.
		if ep != nil {
			resp.Diagnostics.Append(r.readBack(ctx, &state, ep, state.LastDeploymentOutcome.ValueString())...)
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		addServingError(fmt.Sprintf("updating serving endpoint (%s)", spec.Name), err, &resp.Diagnostics)
		return
	}
	resp.Diagnostics.Append(r.readBack(ctx, &plan, ep, state.LastDeploymentOutcome.ValueString())...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *servingEndpointResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state servingEndpointModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, platform.ServingEndpointDeleteTimeout)
	resp.Diagnostics.Append(d...)
	name := state.Name.ValueString()
	known := platform.ServingEndpointPrior{ConfigName: state.EndpointConfigName.ValueString(), ModelName: state.ModelName.ValueString()}
	if err := r.meta.DeleteServingEndpoint(ctx, name, known, servingWait(ctx, name, "deletion", timeout)); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("deleting serving endpoint (%s)", name), err.Error())
	}
}

// ImportState imports an endpoint by name.
func (r *servingEndpointResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
}

func servingWait(ctx context.Context, name, what string, timeout time.Duration) platform.ServingWait {
	return platform.ServingWait{
		Timeout: timeout,
		Progress: func(state string, elapsed time.Duration) {
			tflog.Info(ctx, "waiting for serving endpoint "+what, map[string]any{"name": name, "state": state, "elapsed": elapsed.Round(time.Second).String()})
		},
	}
}

func addServingError(summary string, err error, diags *diag.Diagnostics) {
	var re *platform.RefusedError
	switch {
	case errors.As(err, &re):
		addInvalid("serving endpoint", re.Problems, diags)
	case errors.Is(err, platform.ErrServingEndpointResidency) && diags.HasError():
	default:
		diags.AddError(summary, err.Error())
	}
}

// servingEndpointSpec translates the model to the core's spec and lists the
// attribute paths whose values are not known yet.
func servingEndpointSpec(m *servingEndpointModel) (platform.ServingEndpointSpec, []string) {
	var unknown []string
	str := func(p string, v types.String) string {
		if v.IsUnknown() {
			unknown = append(unknown, p)
		}
		return v.ValueString()
	}
	i64 := func(p string, v types.Int64) int64 {
		if v.IsUnknown() {
			unknown = append(unknown, p)
		}
		return v.ValueInt64()
	}
	cooldown := func(p string, v types.Int64) int64 {
		if v.IsNull() {
			return platform.ServingDefaultCooldownSeconds
		}
		return i64(p, v)
	}
	strMap := func(p string, v types.Map) map[string]string {
		if v.IsNull() {
			return nil
		}
		if v.IsUnknown() {
			unknown = append(unknown, p)
			return nil
		}
		out := map[string]string{}
		for k, e := range v.Elements() {
			sv, ok := e.(types.String)
			if !ok || sv.IsUnknown() {
				unknown = append(unknown, p)
				continue
			}
			out[k] = sv.ValueString()
		}
		return out
	}
	strList := func(p string, v types.List) []string {
		if v.IsNull() {
			return nil
		}
		if v.IsUnknown() {
			unknown = append(unknown, p)
			return nil
		}
		var out []string
		for i, e := range v.Elements() {
			sv, ok := e.(types.String)
			if !ok || sv.IsUnknown() {
				unknown = append(unknown, fmt.Sprintf("%s[%d]", p, i))
			}
			out = append(out, sv.ValueString())
		}
		return out
	}
	s := platform.ServingEndpointSpec{
		Name:      str("name", m.Name),
		KMSKeyARN: str("kms_key_arn", m.KMSKeyARN),
		Tags:      strMap(platform.ServingEndpointTagsPath, m.Tags),
	}
	if v := m.VPCConfig; v != nil {
		s.VPC = &platform.ServingVPC{
			SubnetIDs:        strList(platform.ServingSubnetsPath, v.SubnetIDs),
			SecurityGroupIDs: strList(platform.ServingSecurityGroupsPath, v.SecurityGroupIDs),
		}
	}
	switch {
	case m.NetworkIsolation.IsUnknown():
		unknown = append(unknown, platform.ServingNetworkIsolationPath)
	case !m.NetworkIsolation.IsNull():
		isolated := m.NetworkIsolation.ValueBool()
		s.NetworkIsolation = &isolated
	}
	if mm := m.Model; mm != nil {
		s.Model = platform.ServingModel{
			Image:            str("model.image", mm.Image),
			ModelDataURI:     str("model.model_data_uri", mm.ModelDataURI),
			Environment:      strMap("model.environment", mm.Environment),
			ExecutionRoleARN: str("model.execution_role_arn", mm.ExecutionRoleARN),
		}
	}
	for i, v := range m.Variants {
		at := fmt.Sprintf("variants[%d]", i)
		sv := platform.ServingVariant{
			Name:                 str(at+".name", v.Name),
			InstanceType:         str(at+".instance_type", v.InstanceType),
			InitialInstanceCount: i64(at+".initial_instance_count", v.InitialInstanceCount),
			InitialWeight:        v.InitialWeight.ValueFloat64(),
		}
		if v.InitialWeight.IsUnknown() {
			unknown = append(unknown, at+".initial_weight")
		}
		if sl := v.Serverless; sl != nil {
			sv.Serverless = &platform.ServingServerless{MemoryMB: i64(at+".serverless.memory_size_mb", sl.MemorySizeMB), MaxConcurrency: i64(at+".serverless.max_concurrency", sl.MaxConcurrency)}
		}
		if a := v.Autoscaling; a != nil {
			if a.TargetInvocations.IsUnknown() {
				unknown = append(unknown, at+".autoscaling.target_invocations_per_instance")
			}
			sv.Autoscaling = &platform.ServingAutoscaling{
				Min:                     i64(at+".autoscaling.min_capacity", a.MinCapacity),
				Max:                     i64(at+".autoscaling.max_capacity", a.MaxCapacity),
				TargetInvocations:       a.TargetInvocations.ValueFloat64(),
				ScaleInCooldownSeconds:  cooldown(at+".autoscaling.scale_in_cooldown_seconds", a.ScaleInCooldownSeconds),
				ScaleOutCooldownSeconds: cooldown(at+".autoscaling.scale_out_cooldown_seconds", a.ScaleOutCooldownSeconds),
				Schedules:               servingSchedulesSpec(at+".autoscaling.schedule", a.Schedule, &unknown),
			}
		}
		s.Variants = append(s.Variants, sv)
	}
	if d := m.Deployment; d != nil {
		s.Deployment = &platform.ServingDeployment{
			TrafficRouting:         str("deployment.traffic_routing", d.TrafficRouting),
			SizeType:               str("deployment.size_type", d.SizeType),
			SizeValue:              i64("deployment.size_value", d.SizeValue),
			WaitSeconds:            i64("deployment.wait_seconds", d.WaitSeconds),
			TerminationWaitSeconds: i64("deployment.termination_wait_seconds", d.TerminationWaitSeconds),
			MaxExecutionSeconds:    i64("deployment.maximum_execution_timeout_seconds", d.MaxExecutionSeconds),
			RollbackAlarms:         strList("deployment.rollback_alarms", d.RollbackAlarms),
		}
		if a := d.StandardAlarms; a != nil {
			s.Deployment.StandardAlarms, unknown = a.spec(unknown)
		}
	}
	if c := m.DataCapture; c != nil {
		if c.Enabled.IsUnknown() {
			unknown = append(unknown, "data_capture.enabled")
		}
		s.DataCapture = &platform.ServingDataCapture{
			Enabled:            c.Enabled.IsNull() || c.Enabled.ValueBool(),
			SamplingPercentage: i64("data_capture.sampling_percentage", c.SamplingPercentage),
			DestinationS3URI:   str("data_capture.destination_s3_uri", c.DestinationS3URI),
			KMSKeyARN:          str("data_capture.kms_key_arn", c.KMSKeyARN),
			CaptureOptions:     strList("data_capture.capture_options", c.CaptureOptions),
		}
	}
	return s, unknown
}

// servingEndpointSpecModel writes the declared parts of s into m (the
// inverse of servingEndpointSpec), keeping m's computed values.
func servingEndpointSpecModel(m *servingEndpointModel, s platform.ServingEndpointSpec) (servingEndpointModel, diag.Diagnostics) {
	var diags diag.Diagnostics
	out := *m
	out.ID, out.Name = types.StringValue(s.Name), types.StringValue(s.Name)
	out.KMSKeyARN = optionalString(s.KMSKeyARN)
	out.Tags = optionalMap(s.Tags, &diags)
	out.VPCConfig = nil
	if v := s.VPC; v != nil {
		out.VPCConfig = &servingVPCModel{SubnetIDs: optionalList(v.SubnetIDs, &diags), SecurityGroupIDs: optionalList(v.SecurityGroupIDs, &diags)}
	}
	out.NetworkIsolation = types.BoolValue(s.NetworkIsolationOn())
	out.Model = &servingModelModel{
		Image:            types.StringValue(s.Model.Image),
		ModelDataURI:     optionalString(s.Model.ModelDataURI),
		Environment:      optionalMap(s.Model.Environment, &diags),
		ExecutionRoleARN: types.StringValue(s.Model.ExecutionRoleARN),
	}
	out.Variants = nil
	for _, v := range s.Variants {
		vm := servingVariantModel{
			Name:                 types.StringValue(v.Name),
			InstanceType:         optionalString(v.InstanceType),
			InitialInstanceCount: optionalInt(v.InitialInstanceCount),
			InitialWeight:        types.Float64Null(),
		}
		if v.InitialWeight != 0 {
			vm.InitialWeight = types.Float64Value(v.InitialWeight)
		}
		if sl := v.Serverless; sl != nil {
			vm.Serverless = &servingServerlessModel{MemorySizeMB: types.Int64Value(sl.MemoryMB), MaxConcurrency: types.Int64Value(sl.MaxConcurrency)}
		}
		if a := v.Autoscaling; a != nil {
			declared := types.ListNull(servingScheduleType())
			for _, d := range m.Variants {
				if d.Name.ValueString() == v.Name && d.Autoscaling != nil {
					declared = d.Autoscaling.Schedule
				}
			}
			vm.Autoscaling = &servingScalingModel{
				Schedule:                servingSchedulesValue(declared, a.Schedules),
				MinCapacity:             types.Int64Value(a.Min),
				MaxCapacity:             types.Int64Value(a.Max),
				TargetInvocations:       types.Float64Value(a.TargetInvocations),
				ScaleInCooldownSeconds:  types.Int64Value(a.ScaleInCooldownSeconds),
				ScaleOutCooldownSeconds: types.Int64Value(a.ScaleOutCooldownSeconds),
			}
		}
		out.Variants = append(out.Variants, vm)
	}
	out.DataCapture = nil
	if c := s.DataCapture; c != nil {
		out.DataCapture = &servingCaptureModel{
			Enabled:            types.BoolValue(c.Enabled),
			SamplingPercentage: types.Int64Value(c.SamplingPercentage),
			DestinationS3URI:   types.StringValue(c.DestinationS3URI),
			KMSKeyARN:          optionalString(c.KMSKeyARN),
			CaptureOptions:     optionalList(c.CaptureOptions, &diags),
		}
	}
	return out, diags
}

func optionalMap(m map[string]string, diags *diag.Diagnostics) types.Map {
	if m == nil {
		return types.MapNull(types.StringType)
	}
	v, d := types.MapValueFrom(context.Background(), types.StringType, m)
	diags.Append(d...)
	return v
}

func optionalList(l []string, diags *diag.Diagnostics) types.List {
	if l == nil {
		return types.ListNull(types.StringType)
	}
	v, d := types.ListValueFrom(context.Background(), types.StringType, l)
	diags.Append(d...)
	return v
}

// readBack writes what exists into m, in the shape m declared it, by the
// core's read-back rules (platform.ReadBackServingEndpointOf).
func (r *servingEndpointResource) readBack(ctx context.Context, m *servingEndpointModel, ep *platform.ServingEndpoint, lastDeployment string) diag.Diagnostics {
	declared, _ := servingEndpointSpec(m)
	rb := r.meta.ReadBackServingEndpoint(ep, declared, lastDeployment)
	out, diags := servingEndpointSpecModel(m, rb.Spec)
	out.Deployment = m.Deployment // not observable: as declared
	if d := rb.Spec.Deployment; d != nil && out.Deployment != nil {
		dm := *out.Deployment
		dm.StandardAlarms = standardAlarmsModel(d.StandardAlarms)
		out.Deployment = &dm
	}
	out.StandardAlarmNames = optionalList(rb.StandardAlarmNames, &diags)
	all, d := types.MapValueFrom(ctx, types.StringType, rb.TagsAll)
	diags.Append(d...)
	out.TagsAll = all
	out.ARN = types.StringValue(rb.ARN)
	out.Status = types.StringValue(rb.Status)
	out.FailureReason = types.StringValue(rb.FailureReason)
	out.EndpointConfigName = types.StringValue(rb.ConfigName)
	out.ModelName = types.StringValue(rb.ModelName)
	out.LastDeploymentOutcome = types.StringValue(rb.LastDeployment)
	out.MonthlyCostUSD, out.PriceSource = servingCost(rb.Spec, r.meta.Region(), nil, &diags)
	*m = out
	return diags
}

// servingCost is the core's monthly cost of s, unknown while a value it
// needs is.
func servingCost(s platform.ServingEndpointSpec, region string, unknown []string, diags *diag.Diagnostics) (types.Float64, types.String) {
	c, ok, err := platform.ServingEndpointCostOf(s, region, unknown)
	if err != nil {
		diags.AddError("pricing serving endpoint", err.Error())
		return types.Float64Unknown(), types.StringUnknown()
	}
	if !ok {
		return types.Float64Unknown(), types.StringUnknown()
	}
	return types.Float64Value(c.MonthlyUSD), types.StringValue(c.Source)
}
