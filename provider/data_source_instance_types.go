package provider

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

var _ datasource.DataSourceWithConfigure = &instanceTypesDataSource{}

// NewInstanceTypesDataSource is the mlplatform_instance_types constructor.
// Each read computes its answer; the provider's own constructor shares a
// memo of answers between the data sources of one provider process.
func NewInstanceTypesDataSource() datasource.DataSource { return &instanceTypesDataSource{} }

type instanceTypesDataSource struct {
	meta *Meta
	memo *instanceTypesMemo
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
	if d.meta == nil {
		resp.Diagnostics.AddError("reading instance types", "the provider is not configured")
		return
	}
	state, err := readInstanceTypes(ctx, d.meta, d.memo, req.Config.Raw)
	if err != nil {
		resp.Diagnostics.AddError("reading instance types", err.Error())
		return
	}
	resp.State.Raw = state
}

// readInstanceTypes answers one configuration of the data source with its
// state. Both the framework's Read and the provider's protocol server (see
// protocol.go) read through it. The state is built as terraform-plugin-go
// values, not through a model and State.Set: the answer of a filter (a list
// of objects of 20 attributes each) is computed once per catalog and shared
// by every data source with the same filter, and the reflection of
// State.Set over it cost more than the rest of the read.
func readInstanceTypes(ctx context.Context, meta *Meta, memo *instanceTypesMemo, config tftypes.Value) (tftypes.Value, error) {
	vals, _, err := readInstanceTypesAttrs(ctx, meta, memo, config)
	if err != nil {
		return tftypes.Value{}, err
	}
	return tftypes.NewValue(config.Type(), vals), nil
}

// readInstanceTypesAttrs is readInstanceTypes as the state's attributes, and
// the answer they hold (whose encoding protocolServer keeps).
func readInstanceTypesAttrs(ctx context.Context, meta *Meta, memo *instanceTypesMemo, config tftypes.Value) (map[string]tftypes.Value, instanceTypesAnswer, error) {
	var vals map[string]tftypes.Value
	if err := config.As(&vals); err != nil {
		return nil, instanceTypesAnswer{}, fmt.Errorf("decoding the configuration: %w", err)
	}
	listType, ok := vals["instance_types"].Type().(tftypes.List)
	if !ok {
		return nil, instanceTypesAnswer{}, fmt.Errorf("instance_types is not a list in the schema")
	}
	f := catalog.Filter{
		GPUModel:        tfString(vals["gpu_model"]),
		MinGPUCount:     int(tfInt(vals["min_gpu_count"])),
		MinGPUMemoryGiB: int(tfInt(vals["min_gpu_memory_gib"])),
		CPUFeatures:     tfStrings(vals["cpu_features"]),
		Architecture:    tfString(vals["architecture"]),
		OfferedOnly:     true,
	}
	if v, ok := tfBool(vals["offered_only"]); ok {
		f.OfferedOnly = v
	}
	if v, ok := tfBool(vals["efa"]); ok {
		f.EFA = &v
	}
	cat, err := memo.catalog(ctx, meta, f)
	if err != nil {
		return nil, instanceTypesAnswer{}, err
	}
	region := meta.Region()
	efa := "any"
	if f.EFA != nil {
		efa = fmt.Sprint(*f.EFA)
	}
	id := fmt.Sprintf("%s/gpu=%s,count>=%d,mem>=%d,efa=%s,cpu=%v,arch=%s,offered=%t",
		region, f.GPUModel, f.MinGPUCount, f.MinGPUMemoryGiB, efa, f.CPUFeatures, f.Architecture, f.OfferedOnly)
	ans := memo.answer(cat, id, func() instanceTypesAnswer {
		found := cat.Find(f)
		sortByPrice(found, region)
		return newInstanceTypesAnswer(found, region, listType.ElementType)
	})
	vals["id"] = tftypes.NewValue(tftypes.String, id)
	vals["names"] = ans.names
	vals["instance_types"] = ans.rows
	vals["catalog_as_of"] = tftypes.NewValue(tftypes.String, cat.AsOf())
	vals["catalog_live"] = tftypes.NewValue(tftypes.Bool, cat.Live())
	return vals, ans, nil
}

// tfString, tfInt, tfBool and tfStrings read a configuration value; null
// (and unknown, which Terraform never sends to a read) reads as absent.
func tfString(v tftypes.Value) string {
	var s string
	if v.IsKnown() && !v.IsNull() {
		_ = v.As(&s)
	}
	return s
}

func tfInt(v tftypes.Value) int64 {
	if !v.IsKnown() || v.IsNull() {
		return 0
	}
	var f big.Float
	if err := v.As(&f); err != nil {
		return 0
	}
	i, _ := f.Int64()
	return i
}

func tfBool(v tftypes.Value) (value, ok bool) {
	if !v.IsKnown() || v.IsNull() {
		return false, false
	}
	if err := v.As(&value); err != nil {
		return false, false
	}
	return value, true
}

func tfStrings(v tftypes.Value) []string {
	var elems []tftypes.Value
	if !v.IsKnown() || v.IsNull() || v.As(&elems) != nil {
		return nil
	}
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		out = append(out, tfString(e))
	}
	return out
}

// instanceTypesAnswer is the computed part of one filter's answer.
type instanceTypesAnswer struct {
	names, rows tftypes.Value
	// enc holds their msgpack encoding once asked (see encoded).
	enc *answerEncoding
}

type answerEncoding struct {
	once        sync.Once
	names, rows []byte
	err         error
}

// encoded returns the msgpack encoding of names and rows (as in a
// tfprotov6.DynamicValue), computed once per answer: every data source
// with the same filter sends the same bytes.
func (a instanceTypesAnswer) encoded() (names, rows []byte, err error) {
	e := a.enc
	if e == nil {
		e = &answerEncoding{}
	}
	e.once.Do(func() {
		var n, r tfprotov6.DynamicValue
		if n, e.err = tfprotov6.NewDynamicValue(a.names.Type(), a.names); e.err != nil {
			return
		}
		if r, e.err = tfprotov6.NewDynamicValue(a.rows.Type(), a.rows); e.err != nil {
			return
		}
		e.names, e.rows = n.MsgPack, r.MsgPack
	})
	return e.names, e.rows, e.err
}

// instanceTypesMemo keeps the answer of each filter for the life of the
// provider process: a configuration with many lookups of a few filters
// (one per module instance) computes each once. Answers are immutable
// values; the key holds the catalog they were computed from, so a reloaded
// catalog is never answered from an older one. A nil memo computes every
// time.
type instanceTypesMemo struct {
	mu      sync.Mutex
	answers map[instanceTypesKey]instanceTypesAnswer

	embeddedOnce sync.Once
	embedded     *catalog.Catalog
	embeddedErr  error
}

type instanceTypesKey struct {
	cat *catalog.Catalog
	id  string // region and filter
}

func newInstanceTypesMemo() *instanceTypesMemo {
	return &instanceTypesMemo{answers: map[instanceTypesKey]instanceTypesAnswer{}}
}

// catalog is the catalog a read with filter f needs: the types that can
// match f refreshed from EC2 (catalog.Candidates: a lookup by GPU asks EC2
// about the GPU types only), or the whole catalog.
func (m *instanceTypesMemo) catalog(ctx context.Context, meta *Meta, f catalog.Filter) (*catalog.Catalog, error) {
	var embedded *catalog.Catalog
	var err error
	if m == nil {
		embedded, err = catalog.Embedded()
	} else {
		m.embeddedOnce.Do(func() { m.embedded, m.embeddedErr = catalog.Embedded() })
		embedded, err = m.embedded, m.embeddedErr
	}
	if err != nil {
		return nil, err
	}
	names, all := embedded.Candidates(f)
	if all || len(names) == 0 {
		return meta.Catalog(ctx)
	}
	return meta.CatalogFor(ctx, names...)
}

func (m *instanceTypesMemo) answer(cat *catalog.Catalog, id string, compute func() instanceTypesAnswer) instanceTypesAnswer {
	if m == nil {
		return compute()
	}
	k := instanceTypesKey{cat: cat, id: id}
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.answers[k]; ok {
		return a
	}
	a := compute()
	m.answers[k] = a
	return a
}

// newInstanceTypesAnswer turns the matching types, in result order, into
// the names and instance_types values; elem is the schema's object type of
// one instance_types element.
func newInstanceTypesAnswer(found []catalog.InstanceType, region string, elem tftypes.Type) instanceTypesAnswer {
	names := make([]tftypes.Value, 0, len(found))
	rows := make([]tftypes.Value, 0, len(found))
	for _, t := range found {
		names = append(names, tftypes.NewValue(tftypes.String, t.Name))
		rows = append(rows, tftypes.NewValue(elem, instanceTypeValues(t, region)))
	}
	return instanceTypesAnswer{
		names: tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, names),
		rows:  tftypes.NewValue(tftypes.List{ElementType: elem}, rows),
		enc:   &answerEncoding{},
	}
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

// instanceTypeValues are the attributes of one instance_types element.
func instanceTypeValues(t catalog.InstanceType, region string) map[string]tftypes.Value {
	str := func(v string) tftypes.Value { return tftypes.NewValue(tftypes.String, v) }
	num := func(v float64) tftypes.Value { return tftypes.NewValue(tftypes.Number, big.NewFloat(v)) }
	integer := func(v int) tftypes.Value { return tftypes.NewValue(tftypes.Number, int64(v)) }
	boolean := func(v bool) tftypes.Value { return tftypes.NewValue(tftypes.Bool, v) }
	strs := func(s []string) tftypes.Value {
		vals := make([]tftypes.Value, 0, len(s))
		for _, x := range s {
			vals = append(vals, str(x))
		}
		return tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, vals)
	}
	v := map[string]tftypes.Value{
		"name":                      str(t.Name),
		"family":                    str(t.Family),
		"architecture":              str(t.Architecture),
		"vcpus":                     integer(t.VCPUs),
		"memory_mib":                integer(t.MemoryMiB),
		"gpu_model":                 str(""),
		"gpu_count":                 integer(0),
		"gpu_memory_gib":            integer(0),
		"gpu_interconnect":          str(""),
		"gpu_peak_bf16_tflops":      num(0),
		"gpu_memory_bandwidth_gbps": num(0),
		"efa_supported":             boolean(t.EFA.Supported),
		"efa_max_interfaces":        integer(t.EFA.MaxInterfaces),
		"cpu_features":              strs(t.CPU.Features),
		"cluster_placement":         boolean(t.ClusterPlacement()),
		"zone_ids":                  strs(t.ZoneIDs),
		"zone_names":                strs(t.ZoneNames),
		"price_usd_per_hour":        num(0),
		"price_is_estimate":         boolean(false),
		"price_source":              str(""),
	}
	if g := t.GPU; g != nil {
		v["gpu_model"] = str(g.Model)
		v["gpu_count"] = integer(g.Count)
		v["gpu_memory_gib"] = integer(g.MemoryGiB)
		v["gpu_interconnect"] = str(g.Interconnect)
		v["gpu_peak_bf16_tflops"] = num(g.PeakBF16TFLOPS)
		v["gpu_memory_bandwidth_gbps"] = num(g.MemoryBandwidthGBps)
	}
	if usd, est, ok := t.HourlyUSD(region); ok {
		v["price_usd_per_hour"] = num(usd)
		v["price_is_estimate"] = boolean(est)
		if t.Price != nil {
			v["price_source"] = str(t.Price.Source)
		}
	}
	return v
}
