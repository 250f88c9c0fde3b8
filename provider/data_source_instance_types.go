package provider

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

var _ datasource.DataSourceWithConfigure = &instanceTypesDataSource{}

// NewInstanceTypesDataSource is the mlplatform_instance_types constructor.
func NewInstanceTypesDataSource() datasource.DataSource { return &instanceTypesDataSource{} }

type instanceTypesDataSource struct {
	meta *Meta
}

type instanceTypesModel struct {
	ID              types.String `tfsdk:"id"`
	GPUModel        types.String `tfsdk:"gpu_model"`
	MinGPUCount     types.Int64  `tfsdk:"min_gpu_count"`
	MinGPUMemoryGiB types.Int64  `tfsdk:"min_gpu_memory_gib"`
	EFA             types.Bool   `tfsdk:"efa"`
	CPUFeatures     types.List   `tfsdk:"cpu_features"`
	Architecture    types.String `tfsdk:"architecture"`
	OfferedOnly     types.Bool   `tfsdk:"offered_only"`
	Names           types.List   `tfsdk:"names"`
	InstanceTypes   types.List   `tfsdk:"instance_types"`
	CatalogAsOf     types.String `tfsdk:"catalog_as_of"`
	CatalogLive     types.Bool   `tfsdk:"catalog_live"`
}

var instanceTypeAttrs = map[string]attr.Type{
	"name":                      types.StringType,
	"family":                    types.StringType,
	"architecture":              types.StringType,
	"vcpus":                     types.Int64Type,
	"memory_mib":                types.Int64Type,
	"gpu_model":                 types.StringType,
	"gpu_count":                 types.Int64Type,
	"gpu_memory_gib":            types.Int64Type,
	"gpu_interconnect":          types.StringType,
	"gpu_peak_bf16_tflops":      types.Float64Type,
	"gpu_memory_bandwidth_gbps": types.Float64Type,
	"efa_supported":             types.BoolType,
	"efa_max_interfaces":        types.Int64Type,
	"cpu_features":              types.ListType{ElemType: types.StringType},
	"cluster_placement":         types.BoolType,
	"zone_ids":                  types.ListType{ElemType: types.StringType},
	"zone_names":                types.ListType{ElemType: types.StringType},
	"price_usd_per_hour":        types.Float64Type,
	"price_is_estimate":         types.BoolType,
	"price_source":              types.StringType,
}

func (d *instanceTypesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instance_types"
}

func (d *instanceTypesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Instance types of the provider's region, filtered by GPU model, count and memory, EFA, CPU ISA features and architecture. " +
			"Capabilities and per-zone offerings come live from EC2 (DescribeInstanceTypes, DescribeInstanceTypeOfferings); peaks and prices come from the embedded, dated catalog. " +
			"Results are ordered cheapest first; types without a known price come last.",
		Attributes: map[string]schema.Attribute{
			"id":                 schema.StringAttribute{Computed: true, MarkdownDescription: "Region and filter digest."},
			"gpu_model":          schema.StringAttribute{Optional: true, MarkdownDescription: "GPU model as EC2 names it, case-insensitive: `H100`, `H200`, `A100`, `A10G`, `L4`, `L40S`."},
			"min_gpu_count":      schema.Int64Attribute{Optional: true, MarkdownDescription: "Minimum GPUs per instance."},
			"min_gpu_memory_gib": schema.Int64Attribute{Optional: true, MarkdownDescription: "Minimum memory of one GPU, in GiB (nominal, as sold)."},
			"efa":                schema.BoolAttribute{Optional: true, MarkdownDescription: "Only types that support EFA (`true`) or that do not (`false`)."},
			"cpu_features": schema.ListAttribute{ElementType: types.StringType, Optional: true,
				MarkdownDescription: "CPU ISA features every result must have, as `/proc/cpuinfo` names them: `avx512f`, `avx512_bf16`, `amx_tile`, `amx_bf16`, `sve`..."},
			"architecture": schema.StringAttribute{Optional: true, MarkdownDescription: "`x86_64` or `arm64`.",
				Validators: []validator.String{stringvalidator.OneOf("x86_64", "arm64")}},
			"offered_only": schema.BoolAttribute{Optional: true, MarkdownDescription: "Only types offered in at least one zone of the provider's region. Default `true`."},
			"names":        schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Names of the matching types, in result order."},
			"instance_types": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The matching types, cheapest first.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":                      schema.StringAttribute{Computed: true, MarkdownDescription: "Instance type, e.g. `p5en.48xlarge`."},
					"family":                    schema.StringAttribute{Computed: true, MarkdownDescription: "Family, e.g. `p5en`."},
					"architecture":              schema.StringAttribute{Computed: true, MarkdownDescription: "`x86_64` or `arm64`."},
					"vcpus":                     schema.Int64Attribute{Computed: true, MarkdownDescription: "vCPUs."},
					"memory_mib":                schema.Int64Attribute{Computed: true, MarkdownDescription: "Memory in MiB."},
					"gpu_model":                 schema.StringAttribute{Computed: true, MarkdownDescription: "GPU model; empty for CPU types."},
					"gpu_count":                 schema.Int64Attribute{Computed: true, MarkdownDescription: "GPUs per instance."},
					"gpu_memory_gib":            schema.Int64Attribute{Computed: true, MarkdownDescription: "Memory of one GPU in GiB (nominal)."},
					"gpu_interconnect":          schema.StringAttribute{Computed: true, MarkdownDescription: "`nvlink` or `pcie`; empty when unknown."},
					"gpu_peak_bf16_tflops":      schema.Float64Attribute{Computed: true, MarkdownDescription: "Dense bf16 peak of one GPU (datasheet); 0 when the vendor publishes none."},
					"gpu_memory_bandwidth_gbps": schema.Float64Attribute{Computed: true, MarkdownDescription: "Peak memory bandwidth of one GPU in GB/s."},
					"efa_supported":             schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether EFA is supported."},
					"efa_max_interfaces":        schema.Int64Attribute{Computed: true, MarkdownDescription: "Maximum EFA interfaces."},
					"cpu_features":              schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "CPU ISA features known for the type."},
					"cluster_placement":         schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether cluster placement groups are supported."},
					"zone_ids":                  schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Zone ids of the region where the type is offered (live)."},
					"zone_names":                schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Zone names where the type is offered (live)."},
					"price_usd_per_hour":        schema.Float64Attribute{Computed: true, MarkdownDescription: "On-demand price per hour in the region, USD; 0 when unknown."},
					"price_is_estimate":         schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the price is an estimate rather than a listed price."},
					"price_source":              schema.StringAttribute{Computed: true, MarkdownDescription: "Where the price comes from."},
				}},
			},
			"catalog_as_of": schema.StringAttribute{Computed: true, MarkdownDescription: "Date of the embedded catalog data (peaks, prices)."},
			"catalog_live":  schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether capabilities and offerings were refreshed from EC2."},
		},
	}
}

func (d *instanceTypesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.meta = metaFrom(req.ProviderData, &resp.Diagnostics)
}

func (d *instanceTypesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m instanceTypesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if d.meta == nil {
		resp.Diagnostics.AddError("reading instance types", "the provider is not configured")
		return
	}
	cat, err := d.meta.Catalog(ctx)
	if err != nil {
		resp.Diagnostics.AddError("reading instance types", err.Error())
		return
	}
	f := catalog.Filter{
		GPUModel:        m.GPUModel.ValueString(),
		MinGPUCount:     int(m.MinGPUCount.ValueInt64()),
		MinGPUMemoryGiB: int(m.MinGPUMemoryGiB.ValueInt64()),
		CPUFeatures:     stringList(ctx, m.CPUFeatures),
		Architecture:    m.Architecture.ValueString(),
		OfferedOnly:     m.OfferedOnly.IsNull() || m.OfferedOnly.ValueBool(),
	}
	if !m.EFA.IsNull() {
		v := m.EFA.ValueBool()
		f.EFA = &v
	}
	found := cat.Find(f)
	region := d.meta.Region()
	sortByPrice(found, region)
	names := make([]string, 0, len(found))
	rows := make([]attr.Value, 0, len(found))
	for _, t := range found {
		names = append(names, t.Name)
		obj, diags := instanceTypeObject(t, region)
		resp.Diagnostics.Append(diags...)
		rows = append(rows, obj)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	var ds diag.Diagnostics
	m.Names, ds = types.ListValueFrom(ctx, types.StringType, names)
	resp.Diagnostics.Append(ds...)
	list, ds := types.ListValue(types.ObjectType{AttrTypes: instanceTypeAttrs}, rows)
	resp.Diagnostics.Append(ds...)
	m.InstanceTypes = list
	efa := "any"
	if f.EFA != nil {
		efa = fmt.Sprint(*f.EFA)
	}
	m.ID = types.StringValue(fmt.Sprintf("%s/gpu=%s,count>=%d,mem>=%d,efa=%s,cpu=%v,arch=%s,offered=%t",
		region, f.GPUModel, f.MinGPUCount, f.MinGPUMemoryGiB, efa, f.CPUFeatures, f.Architecture, f.OfferedOnly))
	m.CatalogAsOf = types.StringValue(cat.AsOf())
	m.CatalogLive = types.BoolValue(cat.Live())
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// sortByPrice orders cheapest first; unknown prices last, by name.
func sortByPrice(ts []catalog.InstanceType, region string) {
	sort.SliceStable(ts, func(i, j int) bool {
		pi, _, oki := ts[i].HourlyUSD(region)
		pj, _, okj := ts[j].HourlyUSD(region)
		switch {
		case oki && okj && pi != pj:
			return pi < pj
		case oki != okj:
			return oki
		}
		return ts[i].Name < ts[j].Name
	})
}

func instanceTypeObject(t catalog.InstanceType, region string) (attr.Value, diag.Diagnostics) {
	strs := func(s []string) attr.Value {
		vals := make([]attr.Value, 0, len(s))
		for _, x := range s {
			vals = append(vals, types.StringValue(x))
		}
		return types.ListValueMust(types.StringType, vals)
	}
	v := map[string]attr.Value{
		"name":                      types.StringValue(t.Name),
		"family":                    types.StringValue(t.Family),
		"architecture":              types.StringValue(t.Architecture),
		"vcpus":                     types.Int64Value(int64(t.VCPUs)),
		"memory_mib":                types.Int64Value(int64(t.MemoryMiB)),
		"gpu_model":                 types.StringValue(""),
		"gpu_count":                 types.Int64Value(0),
		"gpu_memory_gib":            types.Int64Value(0),
		"gpu_interconnect":          types.StringValue(""),
		"gpu_peak_bf16_tflops":      types.Float64Value(0),
		"gpu_memory_bandwidth_gbps": types.Float64Value(0),
		"efa_supported":             types.BoolValue(t.EFA.Supported),
		"efa_max_interfaces":        types.Int64Value(int64(t.EFA.MaxInterfaces)),
		"cpu_features":              strs(t.CPU.Features),
		"cluster_placement":         types.BoolValue(t.ClusterPlacement()),
		"zone_ids":                  strs(t.ZoneIDs),
		"zone_names":                strs(t.ZoneNames),
		"price_usd_per_hour":        types.Float64Value(0),
		"price_is_estimate":         types.BoolValue(false),
		"price_source":              types.StringValue(""),
	}
	if g := t.GPU; g != nil {
		v["gpu_model"] = types.StringValue(g.Model)
		v["gpu_count"] = types.Int64Value(int64(g.Count))
		v["gpu_memory_gib"] = types.Int64Value(int64(g.MemoryGiB))
		v["gpu_interconnect"] = types.StringValue(g.Interconnect)
		v["gpu_peak_bf16_tflops"] = types.Float64Value(g.PeakBF16TFLOPS)
		v["gpu_memory_bandwidth_gbps"] = types.Float64Value(g.MemoryBandwidthGBps)
	}
	if usd, est, ok := t.HourlyUSD(region); ok {
		v["price_usd_per_hour"] = types.Float64Value(usd)
		v["price_is_estimate"] = types.BoolValue(est)
		if t.Price != nil {
			v["price_source"] = types.StringValue(t.Price.Source)
		}
	}
	obj, d := types.ObjectValue(instanceTypeAttrs, v)
	return obj, d
}
