package provider

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

func instanceTypesSchemaForTest(t *testing.T) instanceTypesSchema {
	t.Helper()
	ctx := context.Background()
	ds := &instanceTypesDataSource{}
	var resp datasource.SchemaResponse
	ds.Schema(ctx, datasource.SchemaRequest{}, &resp)
	return newInstanceTypesSchema(ctx, ds, resp.Schema)
}

// The protocol server validates mlplatform_instance_types itself: its schema
// has no check that validConfig leaves to the framework. A change to the
// schema that makes this fail sends every validation to the framework (the
// answers stay right, the cost comes back): update validConfig with it.
func TestInstanceTypesValidatesItself(t *testing.T) {
	d := instanceTypesSchemaForTest(t)
	if !d.validate {
		t.Fatal("mlplatform_instance_types has a check validConfig does not run: every validation goes to the framework")
	}
	config := func(set map[string]tftypes.Value) tftypes.Value {
		vals := map[string]tftypes.Value{}
		for k, at := range d.typ.AttributeTypes {
			vals[k] = tftypes.NewValue(at, nil)
			if v, ok := set[k]; ok {
				vals[k] = v
			}
		}
		return tftypes.NewValue(d.typ, vals)
	}
	ctx := context.Background()
	for name, tc := range map[string]struct {
		set  map[string]tftypes.Value
		want bool
	}{
		"empty":             {want: true},
		"arm64":             {set: map[string]tftypes.Value{"architecture": tftypes.NewValue(tftypes.String, "arm64")}, want: true},
		"sparc":             {set: map[string]tftypes.Value{"architecture": tftypes.NewValue(tftypes.String, "sparc")}},
		"names":             {set: map[string]tftypes.Value{"names": tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, []tftypes.Value{})}},
		"unknown read-only": {set: map[string]tftypes.Value{"catalog_as_of": tftypes.NewValue(tftypes.String, tftypes.UnknownValue)}},
	} {
		if got := d.validConfig(ctx, config(tc.set)); got != tc.want {
			t.Errorf("%s: validConfig = %v, want %v", name, got, tc.want)
		}
	}
}

// encodeObject writes the bytes tfprotov6.NewDynamicValue writes, with the
// answer's parts encoded once.
func TestEncodeObject(t *testing.T) {
	d := instanceTypesSchemaForTest(t)
	cat, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	elem := d.typ.AttributeTypes["instance_types"].(tftypes.List).ElementType
	for _, f := range []catalog.Filter{{}, {MinGPUCount: 8}, {GPUModel: "B300"}, {CPUFeatures: []string{"amx_tile"}}} {
		found := cat.Find(f)
		ans := newInstanceTypesAnswer(found, "me-central-1", elem)
		vals := map[string]tftypes.Value{}
		for k, at := range d.typ.AttributeTypes {
			vals[k] = tftypes.NewValue(at, nil)
		}
		vals["min_gpu_count"] = tftypes.NewValue(tftypes.Number, int64(f.MinGPUCount))
		vals["cpu_features"] = tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, []tftypes.Value{tftypes.NewValue(tftypes.String, "amx_tile")})
		vals["id"] = tftypes.NewValue(tftypes.String, strings.Repeat("long id ", 40))
		vals["names"], vals["instance_types"] = ans.names, ans.rows
		vals["catalog_live"] = tftypes.NewValue(tftypes.Bool, true)
		want, err := tfprotov6.NewDynamicValue(d.typ, tftypes.NewValue(d.typ, vals))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // computed, then kept
			names, rows, err := ans.encoded()
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeObject(d.typ, vals, map[string][]byte{"names": names, "instance_types": rows})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.MsgPack) {
				t.Fatalf("%+v: %d bytes differ from NewDynamicValue's %d", f, len(got), len(want.MsgPack))
			}
		}
	}
	if _, err := encodeObject(tftypes.Object{AttributeTypes: map[string]tftypes.Type{"a": tftypes.String}}, map[string]tftypes.Value{}, nil); err == nil {
		t.Error("an attribute without a value encoded")
	}
}

// The headers are the shortest form, as terraform-plugin-go's encoder
// writes them.
func TestAppendMsgPackHeaders(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 255, 256, 65535, 65536} {
		s := strings.Repeat("x", n)
		want, err := tfprotov6.NewDynamicValue(tftypes.String, tftypes.NewValue(tftypes.String, s))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendMsgPackString(nil, s); !bytes.Equal(got, want.MsgPack) {
			t.Errorf("string of %d: header % x, want % x", n, got[:min(len(got), 5)], want.MsgPack[:min(len(want.MsgPack), 5)])
		}
	}
	for _, n := range []int{0, 15, 16, 1000} {
		typ := tftypes.Object{AttributeTypes: map[string]tftypes.Type{}}
		vals := map[string]tftypes.Value{}
		for i := range n {
			k := string(rune('a'+i%26)) + strings.Repeat("k", i/26) // distinct
			typ.AttributeTypes[k] = tftypes.Bool
			vals[k] = tftypes.NewValue(tftypes.Bool, true)
		}
		want, err := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, vals))
		if err != nil {
			t.Fatal(err)
		}
		got := appendMsgPackMapLen(nil, n)
		if !bytes.HasPrefix(want.MsgPack, got) {
			t.Errorf("map of %d: header % x, want a prefix of % x", n, got, want.MsgPack[:min(len(want.MsgPack), 5)])
		}
	}
}
