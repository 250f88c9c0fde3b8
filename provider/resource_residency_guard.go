package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

var (
	_ resource.ResourceWithConfigure   = &residencyGuardResource{}
	_ resource.ResourceWithModifyPlan  = &residencyGuardResource{}
	_ resource.ResourceWithImportState = &residencyGuardResource{}
)

// NewResidencyGuardResource is the mlplatform_residency_guard constructor.
func NewResidencyGuardResource() resource.Resource { return &residencyGuardResource{} }

type residencyGuardResource struct {
	meta *Meta
}

type residencyGuardModel struct {
	ID           types.String `tfsdk:"id"`
	Regions      types.List   `tfsdk:"regions"`
	ZoneIDs      types.List   `tfsdk:"zone_ids"`
	KMSKeyARNs   types.List   `tfsdk:"kms_key_arns"`
	S3URIs       types.List   `tfsdk:"s3_uris"`
	ECRImageURIs types.List   `tfsdk:"ecr_image_uris"`
	ARNs         types.List   `tfsdk:"arns"`
	Compliant    types.Bool   `tfsdk:"compliant"`
	Report       types.List   `tfsdk:"report"`
}

var guardReportType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"path":    types.StringType,
	"kind":    types.StringType,
	"value":   types.StringType,
	"verdict": types.StringType,
	"rule":    types.StringType,
	"message": types.StringType,
}}

func (r *residencyGuardResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_residency_guard"
}

func (r *residencyGuardResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	list := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Checks locations that other providers create (buckets, keys, images, ARNs, regions, zones) against the residency policy. " +
			"Known values are checked at plan time; values known only at apply are checked before the guard is created, so resources that `depends_on` the guard never start on a violation. " +
			"On refresh the guard checks again: a referenced bucket that has since gained cross-region replication, say, makes the guard plan to be created anew, and that apply fails.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Identifier of the guard: a digest of what it checks.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"regions":        list("AWS region names to check, e.g. the `region` of another provider."),
			"zone_ids":       list("Availability zone ids to check, e.g. `mec1-az1`. Excluded zone ids fail."),
			"kms_key_arns":   list("KMS key or alias ARNs: the key (an alias is resolved to it) and every replica of a multi-region key must be in an allowed region, and customer-managed when the policy requires it."),
			"s3_uris":        list("S3 locations (`s3://bucket/prefix`, bucket ARNs or https URLs): the bucket must be in an allowed region and must not replicate outside it."),
			"ecr_image_uris": list("Container image URIs: they must be ECR images in an allowed region."),
			"arns":           list("Any ARNs: their partition and region must be allowed (global ARNs such as IAM pass). KMS key and alias ARNs are resolved and checked as keys, bucket ARNs as buckets; access points fail closed."),
			"compliant": schema.BoolAttribute{
				Computed:            true,
				MarkdownDescription: "Whether every value complied when last checked. In `audit` mode this can be false.",
			},
			"report": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "What was checked and the verdict for each value.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"path":    schema.StringAttribute{Computed: true, MarkdownDescription: "Attribute path of the value, e.g. `s3_uris[0]`."},
					"kind":    schema.StringAttribute{Computed: true, MarkdownDescription: "Kind of location: region, zone_id, kms_key, s3_uri, ecr_image or arn."},
					"value":   schema.StringAttribute{Computed: true, MarkdownDescription: "The value checked."},
					"verdict": schema.StringAttribute{Computed: true, MarkdownDescription: "`pass` or `violation`."},
					"rule":    schema.StringAttribute{Computed: true, MarkdownDescription: "The rule broken, empty on pass."},
					"message": schema.StringAttribute{Computed: true, MarkdownDescription: "What is wrong and how to fix it, empty on pass."},
				}},
			},
		},
	}
}

func (r *residencyGuardResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.meta = metaFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan checks every value already known. Unknown values wait for apply.
func (r *residencyGuardResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.meta == nil {
		return
	}
	var plan residencyGuardModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	refs, allKnown := platform.GuardRefs(plan.lists())
	c, ok := r.check(ctx, refs, &resp.Diagnostics)
	if !ok {
		return
	}
	ReportViolations(r.meta.Policy.Mode, c.Violations, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if allKnown {
		plan.ID = types.StringValue(c.ID)
		plan.Compliant = types.BoolValue(c.Compliant)
		plan.Report = guardReport(c, &resp.Diagnostics)
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
		return
	}
	plan.ID = types.StringUnknown()
	plan.Compliant = types.BoolUnknown()
	plan.Report = types.ListUnknown(guardReportType)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *residencyGuardResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan residencyGuardModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *residencyGuardResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state residencyGuardModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || r.meta == nil {
		return
	}
	refs, _ := platform.GuardRefs(state.lists())
	rf := r.meta.RefreshGuard(ctx, refs)
	switch {
	case rf.Keep:
		resp.Diagnostics.AddWarning("re-checking residency guard", rf.Warning)
		return
	case rf.Gone:
		resp.Diagnostics.AddWarning("Residency guard no longer complies", rf.Warning)
		resp.State.RemoveResource(ctx)
		return
	}
	state.Compliant = types.BoolValue(rf.Check.Compliant)
	state.Report = guardReport(rf.Check, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *residencyGuardResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan residencyGuardModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	r.apply(ctx, &plan, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

// Delete removes the guard from state; it owns nothing in AWS.
func (r *residencyGuardResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}

// ImportState is not meaningful for a guard: it owns nothing in AWS. An
// import creates no state and says so.
func (r *residencyGuardResource) ImportState(_ context.Context, _ resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.AddError("importing residency guard", "A residency guard owns nothing in AWS, so there is nothing to import: declare it and apply.")
}

// apply checks every value, all of them known now, before the guard exists.
func (r *residencyGuardResource) apply(ctx context.Context, m *residencyGuardModel, diags *diag.Diagnostics) {
	refs, _ := platform.GuardRefs(m.lists())
	c, ok := r.check(ctx, refs, diags)
	if !ok {
		return
	}
	ReportViolations(r.meta.Policy.Mode, c.Violations, diags)
	if c.Blocked {
		return
	}
	m.ID = types.StringValue(c.ID)
	m.Compliant = types.BoolValue(c.Compliant)
	m.Report = guardReport(c, diags)
}

func (r *residencyGuardResource) check(ctx context.Context, refs []residency.Ref, diags *diag.Diagnostics) (platform.GuardCheck, bool) {
	c, err := r.meta.CheckGuard(ctx, refs)
	if err != nil {
		diags.AddError("checking data residency", err.Error())
		return c, false
	}
	return c, true
}

// guardReport is the report attribute of a check.
func guardReport(c platform.GuardCheck, diags *diag.Diagnostics) types.List {
	rows := make([]attr.Value, 0, len(c.Verdicts))
	for _, v := range c.Verdicts {
		obj, d := types.ObjectValue(guardReportType.AttrTypes, map[string]attr.Value{
			"path": types.StringValue(v.Path), "kind": types.StringValue(string(v.Kind)), "value": types.StringValue(v.Value),
			"verdict": types.StringValue(v.Verdict), "rule": types.StringValue(v.Rule), "message": types.StringValue(v.Message),
		})
		diags.Append(d...)
		rows = append(rows, obj)
	}
	list, d := types.ListValue(guardReportType, rows)
	diags.Append(d...)
	return list
}

// lists translates the guard's list attributes for the core.
func (m *residencyGuardModel) lists() map[string]platform.GuardList {
	byAttr := map[string]types.List{
		"regions": m.Regions, "zone_ids": m.ZoneIDs, "kms_key_arns": m.KMSKeyARNs,
		"s3_uris": m.S3URIs, "ecr_image_uris": m.ECRImageURIs, "arns": m.ARNs,
	}
	out := map[string]platform.GuardList{}
	for attrName, l := range byAttr {
		gl := platform.GuardList{Unknown: l.IsUnknown(), Pending: map[int]bool{}}
		for i, e := range l.Elements() {
			s, ok := e.(types.String)
			if !ok || s.IsUnknown() {
				gl.Pending[i] = true
			}
			gl.Values = append(gl.Values, s.ValueString())
		}
		out[attrName] = gl
	}
	return out
}

// metaFrom unpacks provider data in Configure of resources and data sources.
func metaFrom(data any, diags *diag.Diagnostics) *Meta {
	if data == nil {
		return nil // provider not configured yet (validate)
	}
	m, ok := data.(*Meta)
	if !ok {
		diags.AddError("unexpected provider data", fmt.Sprintf("expected *provider.Meta, got %T; this is a bug in the provider", data))
		return nil
	}
	return m
}
