package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

// instanceTypesElem is the schema's type of one instance_types element.
func instanceTypesElem(t *testing.T) tftypes.Type {
	t.Helper()
	var resp datasource.SchemaResponse
	(&instanceTypesDataSource{}).Schema(context.Background(), datasource.SchemaRequest{}, &resp)
	obj, ok := resp.Schema.Type().TerraformType(context.Background()).(tftypes.Object)
	if !ok {
		t.Fatal("schema type is not an object")
	}
	l, ok := obj.AttributeTypes["instance_types"].(tftypes.List)
	if !ok {
		t.Fatal("instance_types is not a list")
	}
	return l.ElementType
}

// frameworkRow is one element built with the framework's types, as the data
// source did through State.Set before it built terraform-plugin-go values
// itself: the reference the direct values must equal.
func frameworkRow(t *testing.T, it catalog.InstanceType, region string) tftypes.Value {
	t.Helper()
	attrTypes := map[string]attr.Type{
		"name": types.StringType, "family": types.StringType, "architecture": types.StringType,
		"vcpus": types.Int64Type, "memory_mib": types.Int64Type, "gpu_model": types.StringType,
		"gpu_count": types.Int64Type, "gpu_memory_gib": types.Int64Type, "gpu_interconnect": types.StringType,
		"gpu_peak_bf16_tflops": types.Float64Type, "gpu_memory_bandwidth_gbps": types.Float64Type,
		"efa_supported": types.BoolType, "efa_max_interfaces": types.Int64Type,
		"cpu_features": types.ListType{ElemType: types.StringType}, "cluster_placement": types.BoolType,
		"zone_ids": types.ListType{ElemType: types.StringType}, "zone_names": types.ListType{ElemType: types.StringType},
		"price_usd_per_hour": types.Float64Type, "price_is_estimate": types.BoolType, "price_source": types.StringType,
	}
	strs := func(s []string) attr.Value {
		vals := []attr.Value{}
		for _, x := range s {
			vals = append(vals, types.StringValue(x))
		}
		return types.ListValueMust(types.StringType, vals)
	}
	v := map[string]attr.Value{
		"name": types.StringValue(it.Name), "family": types.StringValue(it.Family), "architecture": types.StringValue(it.Architecture),
		"vcpus": types.Int64Value(int64(it.VCPUs)), "memory_mib": types.Int64Value(int64(it.MemoryMiB)),
		"gpu_model": types.StringValue(""), "gpu_count": types.Int64Value(0), "gpu_memory_gib": types.Int64Value(0),
		"gpu_interconnect": types.StringValue(""), "gpu_peak_bf16_tflops": types.Float64Value(0), "gpu_memory_bandwidth_gbps": types.Float64Value(0),
		"efa_supported": types.BoolValue(it.EFA.Supported), "efa_max_interfaces": types.Int64Value(int64(it.EFA.MaxInterfaces)),
		"cpu_features": strs(it.CPU.Features), "cluster_placement": types.BoolValue(it.ClusterPlacement()),
		"zone_ids": strs(it.ZoneIDs), "zone_names": strs(it.ZoneNames),
		"price_usd_per_hour": types.Float64Value(0), "price_is_estimate": types.BoolValue(false), "price_source": types.StringValue(""),
	}
	if g := it.GPU; g != nil {
		v["gpu_model"] = types.StringValue(g.Model)
		v["gpu_count"] = types.Int64Value(int64(g.Count))
		v["gpu_memory_gib"] = types.Int64Value(int64(g.MemoryGiB))
		v["gpu_interconnect"] = types.StringValue(g.Interconnect)
		v["gpu_peak_bf16_tflops"] = types.Float64Value(g.PeakBF16TFLOPS)
		v["gpu_memory_bandwidth_gbps"] = types.Float64Value(g.MemoryBandwidthGBps)
	}
	if usd, est, ok := it.HourlyUSD(region); ok {
		v["price_usd_per_hour"] = types.Float64Value(usd)
		v["price_is_estimate"] = types.BoolValue(est)
		if it.Price != nil {
			v["price_source"] = types.StringValue(it.Price.Source)
		}
	}
	obj, diags := types.ObjectValue(attrTypes, v)
	if diags.HasError() {
		t.Fatalf("reference object: %v", diags)
	}
	tv, err := obj.ToTerraformValue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tv
}

// TestInstanceTypesAnswer: the values built directly equal, type and value,
// what the framework builds from the same types, for every type of the
// embedded catalog (GPU and CPU types, priced and not).
func TestInstanceTypesAnswer(t *testing.T) {
	cat, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	found := cat.Find(catalog.Filter{})
	if len(found) < 10 {
		t.Fatalf("embedded catalog has %d types, want at least 10", len(found))
	}
	const region = "me-central-1"
	sortByPrice(found, region)
	ans := newInstanceTypesAnswer(found, region, instanceTypesElem(t))
	var rows, names []tftypes.Value
	if err := ans.rows.As(&rows); err != nil {
		t.Fatal(err)
	}
	if err := ans.names.As(&names); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(found) || len(names) != len(found) {
		t.Fatalf("%d rows and %d names for %d types", len(rows), len(names), len(found))
	}
	for i, it := range found {
		if want := frameworkRow(t, it, region); !rows[i].Equal(want) {
			t.Errorf("%s: row %v, want %v", it.Name, rows[i], want)
		}
		if !names[i].Equal(tftypes.NewValue(tftypes.String, it.Name)) {
			t.Errorf("name %d: %v, want %s", i, names[i], it.Name)
		}
	}
}

// TestInstanceTypesMemo: one computation per catalog and filter; another
// catalog (a reload) or filter computes again; a nil memo always computes.
func TestInstanceTypesMemo(t *testing.T) {
	m := newInstanceTypesMemo()
	a, b := &catalog.Catalog{}, &catalog.Catalog{}
	calls := 0
	compute := func() instanceTypesAnswer {
		calls++
		return instanceTypesAnswer{names: tftypes.NewValue(tftypes.String, "x")}
	}
	m.answer(a, "f1", compute)
	m.answer(a, "f1", compute)
	if calls != 1 {
		t.Fatalf("same catalog and filter: %d computations, want 1", calls)
	}
	m.answer(a, "f2", compute)
	m.answer(b, "f1", compute)
	if calls != 3 {
		t.Fatalf("other filter, other catalog: %d computations, want 3", calls)
	}
	var none *instanceTypesMemo
	none.answer(a, "f1", compute)
	none.answer(a, "f1", compute)
	if calls != 5 {
		t.Fatalf("nil memo: %d computations, want 5", calls)
	}
}
