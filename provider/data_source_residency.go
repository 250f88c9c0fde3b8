package provider

import (
	"context"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

var _ datasource.DataSourceWithConfigure = &residencyDataSource{}

// NewResidencyDataSource is the mlplatform_residency constructor.
func NewResidencyDataSource() datasource.DataSource { return &residencyDataSource{} }

type residencyDataSource struct {
	meta *Meta
}

type residencyDataModel struct {
	ID                         types.String `tfsdk:"id"`
	Jurisdiction               types.String `tfsdk:"jurisdiction"`
	JurisdictionName           types.String `tfsdk:"jurisdiction_name"`
	Region                     types.String `tfsdk:"region"`
	AllowedRegions             []string     `tfsdk:"allowed_regions"`
	ExcludedZoneIDs            []string     `tfsdk:"excluded_zone_ids"`
	AllowedZoneIDs             []string     `tfsdk:"allowed_zone_ids"`
	AllowedZoneNames           []string     `tfsdk:"allowed_zone_names"`
	RequireCustomerManagedKeys types.Bool   `tfsdk:"require_customer_managed_keys"`
	RequiredTags               []string     `tfsdk:"required_tags"`
	Mode                       types.String `tfsdk:"mode"`
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
			"require_customer_managed_keys": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether KMS keys must be customer-managed."},
			"required_tags":                 strs("Tag keys every resource must carry."),
			"mode":                          schema.StringAttribute{Computed: true, MarkdownDescription: "`enforce` or `audit`."},
		},
	}
}

func (d *residencyDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.meta = metaFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *residencyDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	if d.meta == nil {
		resp.Diagnostics.AddError("reading residency policy", "the provider is not configured")
		return
	}
	zones, err := cloud.FindZones(ctx, d.meta.Clients.EC2)
	if err != nil {
		resp.Diagnostics.AddError("reading residency policy", err.Error())
		return
	}
	p := d.meta.Policy
	m := residencyDataModel{
		ID:                         types.StringValue(p.Jurisdiction.Code + "/" + d.meta.Clients.Region),
		Jurisdiction:               types.StringValue(p.Jurisdiction.Code),
		JurisdictionName:           types.StringValue(p.Jurisdiction.Name),
		Region:                     types.StringValue(d.meta.Clients.Region),
		AllowedRegions:             nonNil(p.AllowedRegions),
		ExcludedZoneIDs:            nonNil(p.ExcludedZoneIDs),
		AllowedZoneIDs:             []string{},
		AllowedZoneNames:           []string{},
		RequireCustomerManagedKeys: types.BoolValue(p.RequireCustomerManagedKeys),
		RequiredTags:               nonNil(p.RequiredTags),
		Mode:                       types.StringValue(string(p.Mode)),
	}
	for _, z := range zones {
		if z.State != "" && z.State != "available" {
			continue
		}
		if slices.Contains(p.ExcludedZoneIDs, z.ID) {
			continue
		}
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
