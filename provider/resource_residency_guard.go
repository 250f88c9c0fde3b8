package provider

import (
	"context"
	"fmt"
	"strings"

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

// guardInputs maps each input attribute to the kind of reference it holds.
var guardInputs = []struct {
	attr string
	kind residency.Kind
	get  func(*residencyGuardModel) types.List
}{
	{"regions", residency.KindRegion, func(m *residencyGuardModel) types.List { return m.Regions }},
	{"zone_ids", residency.KindZoneID, func(m *residencyGuardModel) types.List { return m.ZoneIDs }},
	{"kms_key_arns", residency.KindKMSKey, func(m *residencyGuardModel) types.List { return m.KMSKeyARNs }},
	{"s3_uris", residency.KindS3URI, func(m *residencyGuardModel) types.List { return m.S3URIs }},
	{"ecr_image_uris", residency.KindECRImage, func(m *residencyGuardModel) types.List { return m.ECRImageURIs }},
	{"arns", residency.KindARN, func(m *residencyGuardModel) types.List { return m.ARNs }},
}

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
	refs, allKnown := guardRefs(ctx, &plan)
	report, vs, ok := r.check(ctx, refs, &resp.Diagnostics)
	if !ok {
		return
	}
	ReportViolations(r.meta.Policy.Mode, vs, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if allKnown {
		plan.ID = types.StringValue(platform.GuardID(refs))
		plan.Compliant = types.BoolValue(len(vs) == 0)
		plan.Report = report
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
	refs, _ := guardRefs(ctx, &state)
	var scratch diag.Diagnostics
	report, vs, ok := r.check(ctx, refs, &scratch)
	if !ok {
		resp.Diagnostics.AddWarning("re-checking residency guard", "The guard could not re-check its values on refresh; the state is kept as it was.\n\n"+diagText(scratch))
		return
	}
	if len(vs) > 0 && r.meta.Policy.Mode == residency.ModeEnforce {
		resp.Diagnostics.AddWarning("Residency guard no longer complies",
			"Values the guard checks now break the policy, so the guard will be planned for creation again (and that apply will fail until fixed):\n"+residency.Summarize(vs))
		resp.State.RemoveResource(ctx)
		return
	}
	state.Compliant = types.BoolValue(len(vs) == 0)
	state.Report = report
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
	refs, _ := guardRefs(ctx, m)
	report, vs, ok := r.check(ctx, refs, diags)
	if !ok {
		return
	}
	ReportViolations(r.meta.Policy.Mode, vs, diags)
	if diags.HasError() {
		return
	}
	m.ID = types.StringValue(platform.GuardID(refs))
	m.Compliant = types.BoolValue(len(vs) == 0)
	m.Report = report
}

func (r *residencyGuardResource) check(ctx context.Context, refs []residency.Ref, diags *diag.Diagnostics) (types.List, []residency.Violation, bool) {
	c, err := r.meta.CheckGuard(ctx, refs)
	if err != nil {
		diags.AddError("checking data residency", err.Error())
		return types.ListNull(guardReportType), nil, false
	}
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
	return list, c.Violations, !diags.HasError()
}

// guardRefs lists the known values as residency references; allKnown says
// whether any value is still unknown.
func guardRefs(ctx context.Context, m *residencyGuardModel) ([]residency.Ref, bool) {
	var refs []residency.Ref
	allKnown := true
	for _, in := range guardInputs {
		l := in.get(m)
		if l.IsUnknown() {
			allKnown = false
			continue
		}
		if l.IsNull() {
			continue
		}
		for i, e := range l.Elements() {
			s, ok := e.(types.String)
			if !ok || s.IsUnknown() {
				allKnown = false
				continue
			}
			// A null, empty or blank element names no location: a
			// violation (Required), never a silent pass.
			refs = append(refs, residency.Ref{Path: fmt.Sprintf("%s[%d]", in.attr, i), Kind: in.kind, Value: s.ValueString(), Required: true})
		}
	}
	return refs, allKnown
}

func diagText(d diag.Diagnostics) string {
	var b strings.Builder
	for _, x := range d {
		fmt.Fprintf(&b, "%s: %s\n", x.Summary(), x.Detail())
	}
	return b.String()
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
