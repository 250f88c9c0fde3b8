package provider_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/mlplatform/mlplatform/provider"
)

// TestProtocol_instanceTypesValidate: the protocol server's own validation
// of mlplatform_instance_types answers exactly what the framework answers,
// for configurations it passes and for those the framework finds wrong.
func TestProtocol_instanceTypesValidate(t *testing.T) {
	ctx := context.Background()
	const typeName = "mlplatform_instance_types"
	ours := provider.NewProtocol6("test")()
	theirs, err := providerserver.NewProtocol6WithError(provider.New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := ours.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || len(schemas.Diagnostics) > 0 {
		t.Fatalf("GetProviderSchema: %v %v", err, schemas.Diagnostics)
	}
	dsType := schemas.DataSourceSchemas[typeName].ValueType()
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	unknownStr := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	strs := tftypes.List{ElementType: tftypes.String}
	configs := map[string]struct {
		set   map[string]tftypes.Value
		fails bool
	}{
		"empty":         {},
		"count":         {set: map[string]tftypes.Value{"min_gpu_count": tftypes.NewValue(tftypes.Number, 2)}},
		"unknown count": {set: map[string]tftypes.Value{"min_gpu_count": tftypes.NewValue(tftypes.Number, tftypes.UnknownValue)}},
		"x86_64":        {set: map[string]tftypes.Value{"architecture": str("x86_64"), "gpu_model": str("H100"), "efa": tftypes.NewValue(tftypes.Bool, true)}},
		"arm64":         {set: map[string]tftypes.Value{"architecture": str("arm64"), "offered_only": tftypes.NewValue(tftypes.Bool, false)}},
		"unknown arch":  {set: map[string]tftypes.Value{"architecture": unknownStr}},
		"features": {set: map[string]tftypes.Value{"cpu_features": tftypes.NewValue(strs, []tftypes.Value{str("amx_tile"), unknownStr}),
			"min_gpu_memory_gib": tftypes.NewValue(tftypes.Number, 80)}},
		"unknown features": {set: map[string]tftypes.Value{"cpu_features": tftypes.NewValue(strs, tftypes.UnknownValue)}},
		"bad arch":         {set: map[string]tftypes.Value{"architecture": str("sparc")}, fails: true},
		"empty arch":       {set: map[string]tftypes.Value{"architecture": str("")}, fails: true},
		"id set":           {set: map[string]tftypes.Value{"id": str("x")}, fails: true},
		"names set":        {set: map[string]tftypes.Value{"names": tftypes.NewValue(strs, []tftypes.Value{str("p5.48xlarge")})}, fails: true},
		"live unknown":     {set: map[string]tftypes.Value{"catalog_live": tftypes.NewValue(tftypes.Bool, tftypes.UnknownValue)}, fails: true},
	}
	for name, tc := range configs {
		dv, err := tfprotov6.NewDynamicValue(dsType, objectOf(t, dsType, tc.set))
		if err != nil {
			t.Fatal(err)
		}
		req := &tfprotov6.ValidateDataResourceConfigRequest{TypeName: typeName, Config: &dv}
		a, err := ours.ValidateDataResourceConfig(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := theirs.ValidateDataResourceConfig(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(diagStrings(a.Diagnostics), diagStrings(b.Diagnostics)) {
			t.Errorf("%s: protocol server %v, framework %v", name, diagStrings(a.Diagnostics), diagStrings(b.Diagnostics))
		}
		if (len(b.Diagnostics) > 0) != tc.fails {
			t.Errorf("%s: framework diagnostics %v, want failure %v", name, diagStrings(b.Diagnostics), tc.fails)
		}
	}
}

func diagStrings(ds []*tfprotov6.Diagnostic) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s %s: %s: %s", d.Severity, d.Attribute, d.Summary, d.Detail))
	}
	return out
}
