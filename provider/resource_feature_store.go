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
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mlplatform/mlplatform/internal/platform"
)

var (
	_ resource.ResourceWithConfigure    = &featureStoreResource{}
	_ resource.ResourceWithModifyPlan   = &featureStoreResource{}
	_ resource.ResourceWithImportState  = &featureStoreResource{}
	_ resource.ResourceWithUpgradeState = &featureStoreResource{}
)

// NewFeatureStoreResource is the mlplatform_feature_store constructor.
func NewFeatureStoreResource() resource.Resource { return &featureStoreResource{} }

type featureStoreResource struct {
	meta *Meta
}

type featureStoreModel struct {
	ID                          types.String   `tfsdk:"id"`
	Name                        types.String   `tfsdk:"name"`
	Description                 types.String   `tfsdk:"description"`
	RecordIdentifierFeatureName types.String   `tfsdk:"record_identifier_feature_name"`
	EventTimeFeatureName        types.String   `tfsdk:"event_time_feature_name"`
	Features                    types.Set      `tfsdk:"features"`
	OnlineStore                 types.Object   `tfsdk:"online_store"`
	OfflineStore                types.Object   `tfsdk:"offline_store"`
	Throughput                  types.Object   `tfsdk:"throughput"`
	RoleARN                     types.String   `tfsdk:"role_arn"`
	Tags                        types.Map      `tfsdk:"tags"`
	TagsAll                     types.Map      `tfsdk:"tags_all"`
	AllowDestructiveChanges     types.Bool     `tfsdk:"allow_destructive_changes"`
	ARN                         types.String   `tfsdk:"arn"`
	Status                      types.String   `tfsdk:"status"`
	FailureReason               types.String   `tfsdk:"failure_reason"`
	CreationTime                types.String   `tfsdk:"creation_time"`
	OfflineStoreTableName       types.String   `tfsdk:"offline_store_table_name"`
	OfflineStoreDatabaseName    types.String   `tfsdk:"offline_store_database_name"`
	OfflineStoreResolvedS3URI   types.String   `tfsdk:"offline_store_resolved_s3_uri"`
	Timeouts                    timeouts.Value `tfsdk:"timeouts"`
}

type featureModel struct {
	Name            types.String `tfsdk:"name"`
	Type            types.String `tfsdk:"type"`
	CollectionType  types.String `tfsdk:"collection_type"`
	VectorDimension types.Int64  `tfsdk:"vector_dimension"`
}

type onlineStoreModel struct {
	Enabled     types.Bool   `tfsdk:"enabled"`
	StorageType types.String `tfsdk:"storage_type"`
	KMSKeyARN   types.String `tfsdk:"kms_key_arn"`
	TTL         types.Object `tfsdk:"ttl"`
}

type ttlModel struct {
	Unit  types.String `tfsdk:"unit"`
	Value types.Int64  `tfsdk:"value"`
}

type offlineStoreModel struct {
	S3URI                    types.String `tfsdk:"s3_uri"`
	KMSKeyARN                types.String `tfsdk:"kms_key_arn"`
	TableFormat              types.String `tfsdk:"table_format"`
	DisableGlueTableCreation types.Bool   `tfsdk:"disable_glue_table_creation"`
}

type throughputModel struct {
	Mode               types.String `tfsdk:"mode"`
	ReadCapacityUnits  types.Int64  `tfsdk:"read_capacity_units"`
	WriteCapacityUnits types.Int64  `tfsdk:"write_capacity_units"`
}

var (
	featureAttrTypes = map[string]attr.Type{
		"name": types.StringType, "type": types.StringType, "collection_type": types.StringType, "vector_dimension": types.Int64Type,
	}
	featureObjectType = types.ObjectType{AttrTypes: featureAttrTypes}
	ttlAttrTypes      = map[string]attr.Type{"unit": types.StringType, "value": types.Int64Type}
	onlineAttrTypes   = map[string]attr.Type{
		"enabled": types.BoolType, "storage_type": types.StringType, "kms_key_arn": types.StringType, "ttl": types.ObjectType{AttrTypes: ttlAttrTypes},
	}
	offlineAttrTypes = map[string]attr.Type{
		"s3_uri": types.StringType, "kms_key_arn": types.StringType, "table_format": types.StringType, "disable_glue_table_creation": types.BoolType,
	}
	throughputAttrTypes = map[string]attr.Type{
		"mode": types.StringType, "read_capacity_units": types.Int64Type, "write_capacity_units": types.Int64Type,
	}
)

func (r *featureStoreResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_feature_store"
}

func (r *featureStoreResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	code := func(vs []string) string { return "`" + strings.Join(vs, "`, `") + "`" }
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc, PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}}
	}
	resp.Schema = schema.Schema{
		// Version 1: features is a set (it was a list).
		Version: 1,
		MarkdownDescription: "A SageMaker feature group whose data stays in the jurisdiction and is never lost by accident. " +
			"The offline store's bucket and every KMS key are checked against the residency policy at plan time (bucket region, no cross-region replication, key region, customer-managed keys). " +
			"Adding features is an in-place update (`UpdateFeatureGroup`), never a replacement; so are TTL, throughput and tag changes. " +
			"Removing or retyping a feature, or changing the offline store (or anything else SageMaker cannot change in place), deletes and recreates the group and loses its data: " +
			"such a plan is refused unless `allow_destructive_changes = true`, and then the plan says what will be lost.",
		Attributes: map[string]schema.Attribute{
			"id": computed("The feature group name."),
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the feature group: 1 to 64 letters, digits, hyphens and underscores, starting and ending with a letter or digit; unique in the account and region. Changing it replaces the group (a destructive change).",
			},
			"description": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Free-form description, at most 128 characters. SageMaker cannot change it after creation: changing it is a destructive change.",
			},
			"record_identifier_feature_name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the feature whose value identifies a record. It must be one of `features`, of type `Integral` or `String`, and not a collection.",
			},
			"event_time_feature_name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the feature that holds a record's event time. It must be one of `features`, of type `Fractional` (Unix seconds) or `String` (ISO-8601), and not a collection.",
			},
			"features": schema.SetNestedAttribute{
				Required: true,
				MarkdownDescription: fmt.Sprintf("The feature definitions, 1 to %d, a set: their order does not matter, and reordering them plans no change. Adding a feature is an in-place update; removing or retyping one is a destructive change. "+
					"Names follow SageMaker's rules (as `name`), are unique ignoring case, and may not be %s.", platform.MaxFeatures, code(platform.ReservedFeatureNames())),
				Validators: []validator.Set{setvalidator.SizeBetween(1, platform.MaxFeatures)},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "Feature name: 1 to 64 letters, digits, hyphens and underscores, starting and ending with a letter or digit."},
					"type": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Value type: " + code(platform.FeatureTypes()) + ".",
						Validators:          []validator.String{stringvalidator.OneOf(platform.FeatureTypes()...)},
					},
					"collection_type": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Makes the feature a collection: " + code(platform.CollectionTypes()) + ". Collections need an online store with `storage_type = \"InMemory\"`; a `Vector` holds `Fractional` values. Unset: a scalar.",
						Validators:          []validator.String{stringvalidator.OneOf(platform.CollectionTypes()...)},
					},
					"vector_dimension": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: fmt.Sprintf("Number of elements of a `Vector` feature, 1 to %d. Only with `collection_type = \"Vector\"`.", platform.FeatureStoreMaxVectorDimension),
						Validators:          []validator.Int64{int64validator.Between(1, platform.FeatureStoreMaxVectorDimension)},
					},
				}},
			},
			"online_store": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "The low-latency online store. Turning it on or off, or changing its storage type or key, is a destructive change; changing the TTL is an in-place update.",
				Attributes: map[string]schema.Attribute{
					"enabled": schema.BoolAttribute{Required: true, MarkdownDescription: "Whether the group has an online store."},
					"storage_type": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Storage tier: " + code(platform.StorageTypes()) + ". Default `Standard`.",
						Validators:          []validator.String{stringvalidator.OneOf(platform.StorageTypes()...)},
					},
					"kms_key_arn": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "ARN of the KMS key that encrypts the online store. Checked against the residency policy: in an allowed region, and customer-managed when the policy requires it.",
					},
					"ttl": schema.SingleNestedAttribute{
						Optional:            true,
						MarkdownDescription: "Time to live: a record expires this long after its event time. Changing it is an in-place update; removing it is a destructive change (SageMaker can change a TTL but not remove it).",
						Attributes: map[string]schema.Attribute{
							"unit": schema.StringAttribute{
								Required:            true,
								MarkdownDescription: "Unit: " + code(platform.TTLUnits()) + ".",
								Validators:          []validator.String{stringvalidator.OneOf(platform.TTLUnits()...)},
							},
							"value": schema.Int64Attribute{
								Required:            true,
								MarkdownDescription: "Number of units, at least 1.",
								Validators:          []validator.Int64{int64validator.AtLeast(1)},
							},
						},
					},
				},
			},
			"offline_store": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "The historical offline store: S3 plus a Glue or Iceberg table. Its bucket must lie in the jurisdiction and must not replicate outside it (checked at plan time). Any change to it is a destructive change.",
				Attributes: map[string]schema.Attribute{
					"s3_uri": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Where offline records are written, `s3://bucket/prefix`. The bucket's region (GetBucketLocation) must be allowed, and it must have no cross-region replication (GetBucketReplication).",
					},
					"kms_key_arn": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "ARN of the KMS key that encrypts the offline store's objects: the team's key. Checked against the residency policy. The role needs `kms:GenerateDataKey` on it.",
					},
					"table_format": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "Table format: " + code(platform.TableFormats()) + ". Default `Glue`.",
						Validators:          []validator.String{stringvalidator.OneOf(platform.TableFormats()...)},
					},
					"disable_glue_table_creation": schema.BoolAttribute{
						Optional:            true,
						MarkdownDescription: "Do not create the Glue table (you manage it). Default `false`. Not with `table_format = \"Iceberg\"`.",
					},
				},
			},
			"throughput": schema.SingleNestedAttribute{
				Optional:            true,
				Computed:            true,
				MarkdownDescription: "Read and write throughput. Unset: as SageMaker has it (on demand for a new group). Changing it is an in-place update.",
				PlanModifiers:       []planmodifier.Object{objectplanmodifier.UseStateForUnknown()},
				Attributes: map[string]schema.Attribute{
					"mode": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "Throughput mode: " + code(platform.ThroughputModes()) + ".",
						Validators:          []validator.String{stringvalidator.OneOf(platform.ThroughputModes()...)},
					},
					"read_capacity_units": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: "Provisioned read capacity units (needed with an online store). Only with `mode = \"Provisioned\"`.",
						Validators:          []validator.Int64{int64validator.Between(1, platform.FeatureStoreMaxCapacityUnits)},
					},
					"write_capacity_units": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: "Provisioned write capacity units. Only with `mode = \"Provisioned\"`.",
						Validators:          []validator.Int64{int64validator.Between(1, platform.FeatureStoreMaxCapacityUnits)},
					},
				},
			},
			"role_arn": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "ARN of the IAM role SageMaker assumes to write the offline store; required with `offline_store`. SageMaker cannot change it after creation: changing it is a destructive change.",
			},
			"tags": schema.MapAttribute{
				ElementType:         types.StringType,
				Optional:            true,
				MarkdownDescription: "Tags of the feature group, merged over the provider's `default_tags`. Changing them is an in-place update.",
			},
			"tags_all": schema.MapAttribute{
				ElementType:         types.StringType,
				Computed:            true,
				MarkdownDescription: "All tags of the feature group: `tags` merged over the provider's `default_tags`.",
			},
			"allow_destructive_changes": schema.BoolAttribute{
				Optional: true,
				Computed: true,
				Default:  booldefault.StaticBool(false),
				MarkdownDescription: "Allow changes that delete and recreate the feature group (removing or retyping a feature, changing the offline store, and the like). " +
					"Such a change loses the online store's records and starts a new offline store table. Default `false`: the plan is refused and says why.",
			},
			"arn":                           computed("ARN of the feature group."),
			"status":                        computed("Status of the feature group: `Created` once ready. A group recorded `Creating` (an apply interrupted or timed out) is finished in place by the next apply; `CreateFailed` is replaced only with `allow_destructive_changes`, otherwise the plan fails saying what to do; `Deleting` and `DeleteFailed` (a deletion outside Terraform) are reported by the plan and the group stays recorded."),
			"failure_reason":                computed("SageMaker's reason when the group's creation or deletion failed."),
			"creation_time":                 computed("When the feature group was created (RFC 3339). It stays the same across in-place updates."),
			"offline_store_table_name":      computed("Name of the offline store's Glue table."),
			"offline_store_database_name":   computed("Name of the offline store's Glue database."),
			"offline_store_resolved_s3_uri": computed("The S3 location where SageMaker writes the offline records."),
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{
				Create: true, Update: true, Delete: true,
				CreateDescription: "How long to wait for the feature group to be created (default 30m).",
				UpdateDescription: "How long to wait for in-place updates (default 30m).",
				DeleteDescription: "How long to wait for the feature group to be deleted (default 30m).",
			}),
		},
	}
}

func (r *featureStoreResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.meta = metaFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan validates the feature group, checks its residency, and decides
// between an in-place update and a replacement: a destructive change is an
// error unless allow_destructive_changes is true, and then a replacement
// whose plan says what is lost.
func (r *featureStoreResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan featureStoreModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	checkTimeouts(plan.Timeouts, &resp.Diagnostics)
	spec, unknown, _ := featureStoreSpec(ctx, &plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if r.meta == nil {
		addInvalid("feature store", platform.ValidateFeatureStore(spec, unknown), &resp.Diagnostics)
		return
	}
	errs, vs, err := r.meta.CheckFeatureStore(ctx, spec, unknown)
	if err != nil {
		resp.Diagnostics.AddError("checking data residency", err.Error())
		return
	}
	addInvalid("feature store", errs, &resp.Diagnostics)
	ReportViolations(r.meta.Policy.Mode, vs, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if tagsAll := r.meta.PlannedTagsAll(spec.Tags, !slices.Contains(unknown, platform.FeatureStoreTagsPath)); tagsAll != nil {
		all, d := types.MapValueFrom(ctx, types.StringType, tagsAll)
		resp.Diagnostics.Append(d...)
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("tags_all"), all)...)
	} else {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("tags_all"), types.MapUnknown(types.StringType))...)
	}

	allow := plan.AllowDestructiveChanges.ValueBool()
	name := spec.Name
	if req.State.Raw.IsNull() {
		// A create: of a new resource, or the replacement of one Terraform
		// marked tainted. A feature group is never replaced by accident.
		if plan.Name.IsUnknown() {
			return // checked at apply: the create refuses a group it did not make
		}
		warning, err := r.meta.CheckFeatureStoreAbsent(ctx, name, allow)
		switch {
		case errors.Is(err, platform.ErrFeatureStoreExists):
			resp.Diagnostics.AddAttributeError(path.Root("name"), fmt.Sprintf("Feature store (%s) already exists", name), err.Error())
		case err != nil:
			resp.Diagnostics.AddError(fmt.Sprintf("planning feature store (%s)", name), err.Error())
		case warning != "":
			resp.Diagnostics.AddWarning(fmt.Sprintf("Feature store (%s) already exists", name), warning)
		}
		return
	}
	var state featureStoreModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	old, _, _ := featureStoreSpec(ctx, &state, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	cs := platform.PlanFeatureStore(platform.FeatureStorePrior{Spec: old, Status: state.Status.ValueString(), FailureReason: state.FailureReason.ValueString()}, spec, unknown, allow)
	addProblems(append(cs.Refused, cs.Warnings...), &resp.Diagnostics)
	if cs.StatusChanges {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("status"), types.StringUnknown())...)
	}
	for _, p := range cs.ReplacePaths() {
		resp.RequiresReplace = append(resp.RequiresReplace, parsePath(p))
	}
}

func (r *featureStoreResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan featureStoreModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, platform.FeatureStoreCreateTimeout)
	resp.Diagnostics.Append(d...)
	spec, _, _ := featureStoreSpec(ctx, &plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	fs, vs, err := r.meta.CreateFeatureStore(ctx, spec, featureStoreWait(ctx, spec.Name, "creation", timeout))
	ReportViolations(r.meta.Policy.Mode, vs, &resp.Diagnostics)
	if fs != nil {
		// Created, even if it did not become ready: record it so that it is
		// tainted and replaced, never orphaned.
		resp.Diagnostics.Append(r.readBack(ctx, &plan, fs)...)
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	}
	if err != nil && fs != nil {
		err = fmt.Errorf("%w\n\nThe feature group is recorded in state, so it is never orphaned. Terraform marks it tainted; a tainted feature group "+
			"is never replaced without allow_destructive_changes: run `terraform untaint` on this resource and apply again, which finishes it in place", err)
	}
	if err != nil {
		addFeatureStoreError(fmt.Sprintf("creating feature store (%s)", spec.Name), err, &resp.Diagnostics)
	}
}

func (r *featureStoreResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state featureStoreModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Name.ValueString()
	fs, err := r.meta.ReadFeatureStore(ctx, name, platform.FeatureStoreReadSettle)
	if errors.Is(err, platform.ErrNotFound) {
		tflog.Warn(ctx, "feature store is gone; removing it from state", map[string]any{"name": name})
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("reading feature store (%s)", name), err.Error())
		return
	}
	resp.Diagnostics.Append(r.readBack(ctx, &state, fs)...)
	if state.AllowDestructiveChanges.IsNull() {
		state.AllowDestructiveChanges = types.BoolValue(false) // after import
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *featureStoreResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state featureStoreModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, platform.FeatureStoreUpdateTimeout)
	resp.Diagnostics.Append(d...)
	spec, _, _ := featureStoreSpec(ctx, &plan, &resp.Diagnostics)
	old, _, _ := featureStoreSpec(ctx, &state, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	fs, vs, err := r.meta.UpdateFeatureStore(ctx, old, spec, featureStoreWait(ctx, spec.Name, "update", timeout))
	ReportViolations(r.meta.Policy.Mode, vs, &resp.Diagnostics)
	if err != nil {
		// Keep what was known: the next refresh reads what the update did.
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		addFeatureStoreError(fmt.Sprintf("updating feature store (%s)", spec.Name), err, &resp.Diagnostics)
		return
	}
	resp.Diagnostics.Append(r.readBack(ctx, &plan, fs)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *featureStoreResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state featureStoreModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, platform.FeatureStoreDeleteTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Name.ValueString()
	if err := r.meta.DeleteFeatureStore(ctx, name, featureStoreWait(ctx, name, "deletion", timeout)); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("deleting feature store (%s)", name), err.Error())
	}
}

// UpgradeState moves state of schema version 0, where features was a list,
// to version 1, where it is a set: both are a JSON array in state.
func (r *featureStoreResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		0: {StateUpgrader: func(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
			if req.RawState == nil {
				resp.Diagnostics.AddError("upgrading feature store state", "no prior state to upgrade")
				return
			}
			resp.DynamicValue = &tfprotov6.DynamicValue{JSON: req.RawState.JSON}
		}},
	}
}

// ImportState imports a feature group by name.
func (r *featureStoreResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
}

// featureStoreWait bounds a wait by timeout and logs its progress.
func featureStoreWait(ctx context.Context, name, what string, timeout time.Duration) platform.FeatureStoreWait {
	return platform.FeatureStoreWait{
		Timeout: timeout,
		Progress: func(state string, elapsed time.Duration) {
			tflog.Info(ctx, "waiting for feature store "+what, map[string]any{"name": name, "state": state, "elapsed": elapsed.Round(time.Second).String()})
		},
	}
}

// addFeatureStoreError reports an error of the core: a refused spec's
// problems on their attributes, residency violations (already reported)
// once.
func addFeatureStoreError(summary string, err error, diags *diag.Diagnostics) {
	var re *platform.RefusedError
	switch {
	case errors.As(err, &re):
		addInvalid("feature store", re.Problems, diags)
	case errors.Is(err, platform.ErrFeatureStoreResidency) && diags.HasError():
	default:
		diags.AddError(summary, err.Error())
	}
}

// featureStoreSpec translates the model to the core's spec, and lists the
// attribute paths whose values are not known yet and the optional ones that
// are unset (null).
func featureStoreSpec(ctx context.Context, m *featureStoreModel, diags *diag.Diagnostics) (platform.FeatureStoreSpec, []string, []string) {
	var unknown, unset []string
	str := func(p string, v types.String) string {
		switch {
		case v.IsUnknown():
			unknown = append(unknown, p)
		case v.IsNull():
			unset = append(unset, p)
		}
		return v.ValueString()
	}
	null := func(p string, v attr.Value) bool {
		switch {
		case v.IsUnknown():
			unknown = append(unknown, p)
		case v.IsNull():
			unset = append(unset, p)
		default:
			return false
		}
		return true
	}
	s := platform.FeatureStoreSpec{
		Name:             str("name", m.Name),
		Description:      str("description", m.Description),
		RecordIdentifier: str("record_identifier_feature_name", m.RecordIdentifierFeatureName),
		EventTime:        str("event_time_feature_name", m.EventTimeFeatureName),
		RoleARN:          str("role_arn", m.RoleARN),
	}

	if !null("features", m.Features) {
		for i, e := range m.Features.Elements() {
			at := fmt.Sprintf("features[%d]", i)
			obj, ok := e.(types.Object)
			if !ok || obj.IsUnknown() {
				unknown = append(unknown, at)
				s.Features = append(s.Features, platform.Feature{})
				continue
			}
			var f featureModel
			diags.Append(obj.As(ctx, &f, basetypes.ObjectAsOptions{})...)
			s.Features = append(s.Features, platform.Feature{
				Name:            str(at+".name", f.Name),
				Type:            str(at+".type", f.Type),
				CollectionType:  str(at+".collection_type", f.CollectionType),
				VectorDimension: f.VectorDimension.ValueInt64(),
			})
			if f.VectorDimension.IsUnknown() {
				unknown = append(unknown, at+".vector_dimension")
			}
		}
	}

	if !null("online_store", m.OnlineStore) {
		var o onlineStoreModel
		diags.Append(m.OnlineStore.As(ctx, &o, basetypes.ObjectAsOptions{})...)
		null("online_store.enabled", o.Enabled)
		s.Online = &platform.OnlineStore{
			Enabled:     o.Enabled.ValueBool(),
			StorageType: str("online_store.storage_type", o.StorageType),
			KMSKeyARN:   str("online_store.kms_key_arn", o.KMSKeyARN),
		}
		if !null("online_store.ttl", o.TTL) {
			var t ttlModel
			diags.Append(o.TTL.As(ctx, &t, basetypes.ObjectAsOptions{})...)
			if t.Value.IsUnknown() {
				unknown = append(unknown, "online_store.ttl.value")
			}
			s.Online.TTL = &platform.TTL{Unit: str("online_store.ttl.unit", t.Unit), Value: t.Value.ValueInt64()}
		}
	}

	if !null("offline_store", m.OfflineStore) {
		var o offlineStoreModel
		diags.Append(m.OfflineStore.As(ctx, &o, basetypes.ObjectAsOptions{})...)
		null("offline_store.disable_glue_table_creation", o.DisableGlueTableCreation)
		s.Offline = &platform.OfflineStore{
			S3URI:                    str("offline_store.s3_uri", o.S3URI),
			KMSKeyARN:                str("offline_store.kms_key_arn", o.KMSKeyARN),
			TableFormat:              str("offline_store.table_format", o.TableFormat),
			DisableGlueTableCreation: o.DisableGlueTableCreation.ValueBool(),
		}
	}

	if !null("throughput", m.Throughput) {
		var t throughputModel
		diags.Append(m.Throughput.As(ctx, &t, basetypes.ObjectAsOptions{})...)
		if t.ReadCapacityUnits.IsUnknown() || t.WriteCapacityUnits.IsUnknown() {
			unknown = append(unknown, "throughput")
		}
		s.Throughput = &platform.Throughput{
			Mode:               str("throughput.mode", t.Mode),
			ReadCapacityUnits:  t.ReadCapacityUnits.ValueInt64(),
			WriteCapacityUnits: t.WriteCapacityUnits.ValueInt64(),
		}
	}

	if !null(platform.FeatureStoreTagsPath, m.Tags) {
		s.Tags = map[string]string{}
		for k, v := range m.Tags.Elements() {
			sv, ok := v.(types.String)
			if !ok || sv.IsUnknown() {
				unknown = append(unknown, platform.FeatureStoreTagsPath)
				continue
			}
			s.Tags[k] = sv.ValueString()
		}
	}
	return s, unknown, unset
}

// readBack writes what exists into m, in the shape m declared it, by the
// core's read-back rules (platform.FeatureStoreReadBackOf).
func (r *featureStoreResource) readBack(ctx context.Context, m *featureStoreModel, fs *platform.FeatureStore) diag.Diagnostics {
	var diags, scratch diag.Diagnostics
	declared, unknown, unset := featureStoreSpec(ctx, m, &scratch)
	rb := r.meta.ReadBackFeatureStore(fs, platform.FeatureStoreDeclared{Spec: declared, Unset: append(unset, unknown...)})
	s := rb.Spec
	str := func(path, v string) types.String {
		if rb.IsUnset(path) {
			return types.StringNull()
		}
		return types.StringValue(v)
	}
	obj := func(attrs map[string]attr.Type, vs map[string]attr.Value) types.Object {
		o, d := types.ObjectValue(attrs, vs)
		diags.Append(d...)
		return o
	}
	m.ID, m.Name = types.StringValue(s.Name), types.StringValue(s.Name)
	m.Description = str("description", s.Description)
	m.RecordIdentifierFeatureName = types.StringValue(s.RecordIdentifier)
	m.EventTimeFeatureName = types.StringValue(s.EventTime)
	m.RoleARN = str("role_arn", s.RoleARN)
	m.ARN, m.Status = types.StringValue(rb.ARN), types.StringValue(rb.Status)
	m.FailureReason = optionalString(rb.FailureReason)
	m.CreationTime = optionalString(rb.CreationTime)
	m.OfflineStoreTableName = optionalString(rb.OfflineTableName)
	m.OfflineStoreDatabaseName = optionalString(rb.OfflineDatabaseName)
	m.OfflineStoreResolvedS3URI = optionalString(rb.OfflineResolvedS3URI)

	feats := make([]attr.Value, 0, len(s.Features))
	for _, f := range s.Features {
		feats = append(feats, obj(featureAttrTypes, map[string]attr.Value{
			"name": types.StringValue(f.Name), "type": types.StringValue(f.Type),
			"collection_type": optionalString(f.CollectionType), "vector_dimension": optionalInt(f.VectorDimension),
		}))
	}
	set, d := types.SetValue(featureObjectType, feats)
	diags.Append(d...)
	m.Features = set

	m.OnlineStore = types.ObjectNull(onlineAttrTypes)
	if on := s.Online; on != nil {
		ttl := types.ObjectNull(ttlAttrTypes)
		if on.TTL != nil {
			ttl = obj(ttlAttrTypes, map[string]attr.Value{"unit": types.StringValue(on.TTL.Unit), "value": types.Int64Value(on.TTL.Value)})
		}
		m.OnlineStore = obj(onlineAttrTypes, map[string]attr.Value{
			"enabled": types.BoolValue(on.Enabled), "storage_type": str("online_store.storage_type", on.StorageType),
			"kms_key_arn": str("online_store.kms_key_arn", on.KMSKeyARN), "ttl": ttl,
		})
	}
	m.OfflineStore = types.ObjectNull(offlineAttrTypes)
	if off := s.Offline; off != nil {
		disable := types.BoolValue(off.DisableGlueTableCreation)
		if rb.IsUnset("offline_store.disable_glue_table_creation") {
			disable = types.BoolNull()
		}
		m.OfflineStore = obj(offlineAttrTypes, map[string]attr.Value{
			"s3_uri": types.StringValue(off.S3URI), "kms_key_arn": str("offline_store.kms_key_arn", off.KMSKeyARN),
			"table_format": str("offline_store.table_format", off.TableFormat), "disable_glue_table_creation": disable,
		})
	}
	m.Throughput = types.ObjectNull(throughputAttrTypes)
	if t := s.Throughput; t != nil {
		m.Throughput = obj(throughputAttrTypes, map[string]attr.Value{
			"mode": types.StringValue(t.Mode), "read_capacity_units": optionalInt(t.ReadCapacityUnits), "write_capacity_units": optionalInt(t.WriteCapacityUnits),
		})
	}
	m.TagsAll, d = types.MapValueFrom(ctx, types.StringType, rb.TagsAll)
	diags.Append(d...)
	m.Tags = types.MapNull(types.StringType)
	if s.Tags != nil {
		m.Tags, d = types.MapValueFrom(ctx, types.StringType, s.Tags)
		diags.Append(d...)
	}
	return diags
}

// optionalString is s, or null when empty.
func optionalString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

// optionalInt is n, or null when zero.
func optionalInt(n int64) types.Int64 {
	if n == 0 {
		return types.Int64Null()
	}
	return types.Int64Value(n)
}
