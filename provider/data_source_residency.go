package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/platform"
)

var _ datasource.DataSourceWithConfigure = &residencyDataSource{}

// NewResidencyDataSource is the mlplatform_residency constructor.
func NewResidencyDataSource() datasource.DataSource { return &residencyDataSource{} }

type residencyDataSource struct {
	meta *Meta
}

type residencyDataModel struct {
	ID                         types.String   `tfsdk:"id"`
	Jurisdiction               types.String   `tfsdk:"jurisdiction"`
	JurisdictionName           types.String   `tfsdk:"jurisdiction_name"`
	Region                     types.String   `tfsdk:"region"`
	AllowedRegions             []string       `tfsdk:"allowed_regions"`
	ExcludedZoneIDs            []string       `tfsdk:"excluded_zone_ids"`
	AllowedZoneIDs             []string       `tfsdk:"allowed_zone_ids"`
	AllowedZoneNames           []string       `tfsdk:"allowed_zone_names"`
	RequireCustomerManagedKeys types.Bool     `tfsdk:"require_customer_managed_keys"`
	RequiredTags               []string       `tfsdk:"required_tags"`
	Mode                       types.String   `tfsdk:"mode"`
	Explain                    []explainInput `tfsdk:"explain"`
	Explanations               []explanation  `tfsdk:"explanations"`
}

type explainInput struct {
	Kind  string `tfsdk:"kind"`
	Value string `tfsdk:"value"`
}

type explanation struct {
	Kind       string        `tfsdk:"kind"`
	Value      string        `tfsdk:"value"`
	Compliant  bool          `tfsdk:"compliant"`
	Resolved   []string      `tfsdk:"resolved"`
	Rules      []ruleVerdict `tfsdk:"rules"`
	Violations []string      `tfsdk:"violations"`
}

type ruleVerdict struct {
	Rule    string `tfsdk:"rule"`
	Verdict string `tfsdk:"verdict"`
}

func (d *residencyDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_residency"
}

func (d *residencyDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	strs := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The effective residency policy of the provider: the jurisdiction, the regions and availability zones allowed, and the mode. " +
			"Use it to place resources of other providers inside the policy, e.g. `zone_id = data.mlplatform_residency.this.allowed_zone_ids[0]`.",
		Attributes: map[string]schema.Attribute{
			"id":                            schema.StringAttribute{Computed: true, MarkdownDescription: "The jurisdiction code and region."},
			"jurisdiction":                  schema.StringAttribute{Computed: true, MarkdownDescription: "Jurisdiction code, e.g. `AE`."},
			"jurisdiction_name":             schema.StringAttribute{Computed: true, MarkdownDescription: "Jurisdiction name, e.g. `United Arab Emirates`."},
			"region":                        schema.StringAttribute{Computed: true, MarkdownDescription: "The provider's region."},
			"allowed_regions":               strs("Regions allowed by the policy."),
			"excluded_zone_ids":             strs("Zone ids excluded by the policy."),
			"allowed_zone_ids":              strs("Zone ids of the provider's region that are allowed and available, sorted."),
			"allowed_zone_names":            strs("Zone names matching `allowed_zone_ids`, in the same order."),
			"require_customer_managed_keys": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether KMS keys must be customer-managed: the effective value, the jurisdiction's default (`true` for `AE`) unless the provider block sets `require_customer_managed_keys`."},
			"required_tags":                 strs("Tag keys every resource must carry."),
			"mode":                          schema.StringAttribute{Computed: true, MarkdownDescription: "`enforce` or `audit`."},
			"explain": schema.ListNestedAttribute{
				Optional: true,
				MarkdownDescription: "References to explain: each is checked as `mlplatform_residency_guard` checks it, and `explanations` says what it resolved to and which rules it passed. " +
					"Reading the data source never fails on a violation: it explains.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"kind":  schema.StringAttribute{Required: true, MarkdownDescription: "Kind of reference: " + strings.Join(platform.ExplainKinds(), ", ") + "."},
					"value": schema.StringAttribute{Required: true, MarkdownDescription: "The reference, e.g. a KMS alias ARN or an S3 URL."},
				}},
			},
			"explanations": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "One explanation per `explain` entry, in order.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"kind":      schema.StringAttribute{Computed: true, MarkdownDescription: "Kind of reference."},
					"value":     schema.StringAttribute{Computed: true, MarkdownDescription: "The reference."},
					"compliant": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether it broke no rule."},
					"resolved": schema.ListAttribute{ElementType: types.StringType, Computed: true,
						MarkdownDescription: "What the engine learnt, in order: partition, region, the key an alias points to, multi-region replicas, the bucket's region and replication."},
					"rules": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "Each rule evaluated and its verdict (`pass` or `violation`). A rule not listed was not evaluated.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"rule":    schema.StringAttribute{Computed: true, MarkdownDescription: "Rule id, e.g. `kms-key-region`."},
							"verdict": schema.StringAttribute{Computed: true, MarkdownDescription: "`pass` or `violation`."},
						}},
					},
					"violations": schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Each violation: rule, what is wrong and the fix."},
				}},
			},
		},
	}
}

func (d *residencyDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.meta = metaFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *residencyDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	if d.meta == nil {
		resp.Diagnostics.AddError("reading residency policy", "the provider is not configured")
		return
	}
	var cfg residencyDataModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	zones, err := d.meta.AllowedZones(ctx)
	if err != nil {
		resp.Diagnostics.AddError("reading residency policy", err.Error())
		return
	}
	p := d.meta.Policy
	m := residencyDataModel{
		ID:                         types.StringValue(p.Jurisdiction.Code + "/" + d.meta.Region()),
		Jurisdiction:               types.StringValue(p.Jurisdiction.Code),
		JurisdictionName:           types.StringValue(p.Jurisdiction.Name),
		Region:                     types.StringValue(d.meta.Region()),
		AllowedRegions:             nonNil(p.AllowedRegions),
		ExcludedZoneIDs:            nonNil(p.ExcludedZoneIDs),
		AllowedZoneIDs:             []string{},
		AllowedZoneNames:           []string{},
		RequireCustomerManagedKeys: types.BoolValue(p.RequireCustomerManagedKeys),
		RequiredTags:               nonNil(p.RequiredTags),
		Mode:                       types.StringValue(string(p.Mode)),
		Explain:                    cfg.Explain,
		Explanations:               []explanation{},
	}
	for i, in := range cfg.Explain {
		ex, err := d.meta.ExplainResidency(ctx, in.Kind, in.Value)
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("explain").AtListIndex(i), "explaining residency", err.Error())
			return
		}
		out := explanation{Kind: in.Kind, Value: in.Value, Compliant: ex.Compliant(), Resolved: nonNil(ex.Resolved), Rules: []ruleVerdict{}, Violations: []string{}}
		for _, r := range ex.Rules {
			out.Rules = append(out.Rules, ruleVerdict{Rule: r.Rule, Verdict: r.Verdict})
		}
		for _, v := range ex.Violations {
			out.Violations = append(out.Violations, fmt.Sprintf("%s: %s. Fix: %s", v.Rule, v.Msg, v.Fix))
		}
		m.Explanations = append(m.Explanations, out)
	}
	for _, z := range zones {
		m.AllowedZoneIDs = append(m.AllowedZoneIDs, z.ID)
		m.AllowedZoneNames = append(m.AllowedZoneNames, z.Name)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
