package provider_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/provider"
)

// objectOf is a value of an object type with every attribute null but set.
func objectOf(t *testing.T, typ tftypes.Type, set map[string]tftypes.Value) tftypes.Value {
	t.Helper()
	obj, ok := typ.(tftypes.Object)
	if !ok {
		t.Fatalf("%s is not an object type", typ)
	}
	vals := map[string]tftypes.Value{}
	for name, at := range obj.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
		if v, ok := set[name]; ok {
			vals[name] = v
		}
	}
	return tftypes.NewValue(typ, vals)
}

// TestAccProtocol_instanceTypesRead: the protocol server's own read of
// mlplatform_instance_types answers exactly what the framework's read
// answers, for filters of every kind, against the emulator's EC2.
func TestAccProtocol_instanceTypesRead(t *testing.T) {
	acctest.SetupEmulator(t)
	ctx := context.Background()
	const typeName = "mlplatform_instance_types"
	// ours reads the data source itself; theirs is the framework's server
	// alone.
	ours := provider.NewProtocol6("test")()
	theirs, err := providerserver.NewProtocol6WithError(provider.New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	s := ours
	schemas, err := s.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || len(schemas.Diagnostics) > 0 {
		t.Fatalf("GetProviderSchema: %v %v", err, schemas.Diagnostics)
	}
	dsType := schemas.DataSourceSchemas[typeName].ValueType()
	read := func(config tftypes.Value, framework bool) *tfprotov6.ReadDataSourceResponse {
		t.Helper()
		dv, err := tfprotov6.NewDynamicValue(dsType, config)
		if err != nil {
			t.Fatal(err)
		}
		req := &tfprotov6.ReadDataSourceRequest{TypeName: typeName, Config: &dv}
		server := ours
		if framework {
			server = theirs
		}
		resp, err := server.ReadDataSource(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	minCount := objectOf(t, dsType, map[string]tftypes.Value{"min_gpu_count": tftypes.NewValue(tftypes.Number, 2)})

	// Before ConfigureProvider the framework answers, with its error.
	if resp := read(minCount, false); len(resp.Diagnostics) == 0 {
		t.Fatal("read before ConfigureProvider: no diagnostic")
	}

	pc, err := tfprotov6.NewDynamicValue(schemas.Provider.ValueType(), objectOf(t, schemas.Provider.ValueType(), map[string]tftypes.Value{
		"region": tftypes.NewValue(tftypes.String, acctest.Region),
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, server := range []tfprotov6.ProviderServer{ours, theirs} {
		if resp, err := server.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{Config: &pc}); err != nil || len(resp.Diagnostics) > 0 {
			t.Fatalf("ConfigureProvider: %v %v", err, resp.Diagnostics)
		}
	}
	configs := map[string]tftypes.Value{
		"min_gpu_count": minCount,
		"h200 efa": objectOf(t, dsType, map[string]tftypes.Value{
			"gpu_model": tftypes.NewValue(tftypes.String, "H200"),
			"efa":       tftypes.NewValue(tftypes.Bool, true),
		}),
		"amx x86 not only offered": objectOf(t, dsType, map[string]tftypes.Value{
			"cpu_features": tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, []tftypes.Value{
				tftypes.NewValue(tftypes.String, "amx_tile"), tftypes.NewValue(tftypes.String, "avx512f"),
			}),
			"architecture":       tftypes.NewValue(tftypes.String, "x86_64"),
			"offered_only":       tftypes.NewValue(tftypes.Bool, false),
			"min_gpu_memory_gib": tftypes.NewValue(tftypes.Number, 0),
		}),
		"none": objectOf(t, dsType, map[string]tftypes.Value{"gpu_model": tftypes.NewValue(tftypes.String, "H100")}),
	}
	for name, config := range configs {
		ra, rb := read(config, false), read(config, true)
		if len(ra.Diagnostics) > 0 || len(rb.Diagnostics) > 0 {
			t.Fatalf("%s: diagnostics %v / %v", name, ra.Diagnostics, rb.Diagnostics)
		}
		a, err := ra.State.Unmarshal(dsType)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rb.State.Unmarshal(dsType)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Equal(b) {
			t.Errorf("%s: protocol read\n%v\nframework read\n%v", name, a, b)
		}
		var vals map[string]tftypes.Value
		if err := a.As(&vals); err != nil {
			t.Fatal(err)
		}
		var names []tftypes.Value
		if err := vals["names"].As(&names); err != nil {
			t.Fatal(err)
		}
		if (len(names) == 0) != (name == "none") {
			t.Errorf("%s: %d names", name, len(names))
		}
	}
}
