package provider

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// instanceTypesTypeName is the data source that protocolServer reads itself.
const instanceTypesTypeName = "mlplatform_instance_types"

// NewProtocol6 returns the factory of the provider's protocol server: the
// framework's, except that reads of mlplatform_instance_types go straight
// to readInstanceTypes, and its configurations with nothing to report are
// validated here.
//
// A CPU profile of the provider during a plan of 100 lookups put 40% of its
// time in what the framework does around a read after the data source
// returns: it converts the whole state (a list of up to 30 objects of 20
// attributes) into framework values, attribute by attribute with a log
// context each, to look for semantic equality, which no attribute of this
// data source defines. The read sends the encoding of each filter's answer,
// made once. Validation, which Terraform asks for twice per data source and
// plan (validate, then plan), cost the framework about 0.2 ms a call
// against the schema's 13 attributes; a configuration it would find fault
// with still goes to the framework, which reports it. Everything else
// (schema, configuration, every other data source and resource) is the
// framework's.
func NewProtocol6(version string) func() tfprotov6.ProviderServer {
	return func() tfprotov6.ProviderServer {
		p := newProvider(version)
		return &protocolServer{ProviderServer: providerserver.NewProtocol6(p)(), provider: p}
	}
}

// NewProtocol6WithError is NewProtocol6 in the form that
// terraform-plugin-testing's ProtoV6ProviderFactories take.
func NewProtocol6WithError(version string) func() (tfprotov6.ProviderServer, error) {
	f := NewProtocol6(version)
	return func() (tfprotov6.ProviderServer, error) { return f(), nil }
}

type protocolServer struct {
	tfprotov6.ProviderServer
	provider *mlplatformProvider

	typeOnce sync.Once
	ds       instanceTypesSchema // of mlplatform_instance_types
}

// instanceTypesSchema is what protocolServer reads mlplatform_instance_types
// with: the schema, its type, and what a configuration must hold for the
// framework's validation to have nothing to say (see validConfig).
type instanceTypesSchema struct {
	schema schema.Schema
	typ    tftypes.Object
	// validate is false when the data source or its schema has a check
	// validConfig does not run itself: every configuration then goes to
	// the framework.
	validate bool
}

func (s *protocolServer) instanceTypes(ctx context.Context) *instanceTypesSchema {
	s.typeOnce.Do(func() {
		ds := &instanceTypesDataSource{}
		var resp datasource.SchemaResponse
		ds.Schema(ctx, datasource.SchemaRequest{}, &resp)
		s.ds = newInstanceTypesSchema(ctx, ds, resp.Schema)
	})
	return &s.ds
}

func newInstanceTypesSchema(ctx context.Context, ds datasource.DataSource, sch schema.Schema) instanceTypesSchema {
	out := instanceTypesSchema{schema: sch, validate: true}
	out.typ, _ = sch.Type().TerraformType(ctx).(tftypes.Object)
	_, withValidators := ds.(datasource.DataSourceWithConfigValidators)
	_, withValidate := ds.(datasource.DataSourceWithValidateConfig)
	if out.typ.AttributeTypes == nil || withValidators || withValidate || len(sch.Blocks) > 0 {
		out.validate = false
	}
	for _, a := range sch.Attributes {
		var validators int
		switch a := a.(type) {
		case schema.StringAttribute:
			// Its validators run in validConfig.
		case schema.BoolAttribute:
			validators = len(a.Validators)
		case schema.Int64Attribute:
			validators = len(a.Validators)
		case schema.Float64Attribute:
			validators = len(a.Validators)
		case schema.ListAttribute:
			validators = len(a.Validators)
		case schema.ListNestedAttribute:
			// Read-only: its elements are never configured (see below).
			validators = len(a.Validators)
		default:
			validators = 1 // a kind validConfig does not know
		}
		if validators > 0 {
			out.validate = false
		}
		if _, nested := a.(schema.NestedAttribute); nested && !(a.IsComputed() && !a.IsOptional() && !a.IsRequired()) {
			out.validate = false // a configurable nested attribute: checks of its own
		}
	}
	return out
}

// ValidateDataResourceConfig answers a configuration of
// mlplatform_instance_types that the framework would find nothing wrong
// with itself, at a fraction of the framework's cost (Terraform asks twice
// per data source and plan: validate, then plan); any other configuration,
// and every other data source, goes to the framework, which reports what is
// wrong.
func (s *protocolServer) ValidateDataResourceConfig(ctx context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	if req.TypeName == instanceTypesTypeName && req.Config != nil {
		if ds := s.instanceTypes(ctx); ds.validate {
			if config, err := req.Config.Unmarshal(ds.typ); err == nil && ds.validConfig(ctx, config) {
				return &tfprotov6.ValidateDataResourceConfigResponse{}, nil
			}
		}
	}
	return s.ProviderServer.ValidateDataResourceConfig(ctx, req)
}

// validConfig reports whether the framework's validation of config
// (fwserver.SchemaValidate, the data source having no validators of its
// own) finds nothing: no read-only attribute set, no required one missing,
// no deprecated or write-only one set, and every string validator content.
// false means "ask the framework", not "invalid".
func (d *instanceTypesSchema) validConfig(ctx context.Context, config tftypes.Value) bool {
	var vals map[string]tftypes.Value
	if err := config.As(&vals); err != nil {
		return false
	}
	for name, a := range d.schema.Attributes {
		v, ok := vals[name]
		if !ok {
			return false
		}
		set := !v.IsNull()
		switch {
		case a.IsComputed() && !a.IsOptional() && !a.IsRequired() && set,
			a.IsRequired() && !set,
			a.IsWriteOnly() && set,
			a.GetDeprecationMessage() != "" && set:
			return false
		}
		sa, ok := a.(schema.StringAttribute)
		if !ok || len(sa.Validators) == 0 {
			continue
		}
		av, err := sa.GetType().ValueFromTerraform(ctx, v)
		if err != nil {
			return false
		}
		str, ok := av.(types.String)
		if !ok {
			return false
		}
		req := validator.StringRequest{
			Path:           path.Root(name),
			PathExpression: path.MatchRoot(name),
			Config:         tfsdk.Config{Raw: config, Schema: d.schema},
			ConfigValue:    str,
		}
		for _, val := range sa.Validators {
			var resp validator.StringResponse
			val.ValidateString(ctx, req, &resp)
			if len(resp.Diagnostics) > 0 {
				return false
			}
		}
	}
	return true
}

func (s *protocolServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	meta := s.provider.meta.Load()
	if req.TypeName != instanceTypesTypeName || meta == nil || req.Config == nil {
		// Not configured (or another data source): the framework reads,
		// and reports what is missing.
		return s.ProviderServer.ReadDataSource(ctx, req)
	}
	ds := s.instanceTypes(ctx)
	fail := func(detail string) (*tfprotov6.ReadDataSourceResponse, error) {
		return &tfprotov6.ReadDataSourceResponse{Diagnostics: []*tfprotov6.Diagnostic{{
			Severity: tfprotov6.DiagnosticSeverityError,
			Summary:  "reading instance types",
			Detail:   detail,
		}}}, nil
	}
	config, err := req.Config.Unmarshal(ds.typ)
	if err != nil {
		return fail("decoding the configuration: " + err.Error())
	}
	vals, ans, err := readInstanceTypesAttrs(ctx, meta, s.provider.instanceTypes, config)
	if err != nil {
		return fail(err.Error())
	}
	names, rows, err := ans.encoded()
	if err != nil {
		return fail("encoding the state: " + err.Error())
	}
	state, err := encodeObject(ds.typ, vals, map[string][]byte{"names": names, "instance_types": rows})
	if err != nil {
		return fail("encoding the state: " + err.Error())
	}
	return &tfprotov6.ReadDataSourceResponse{State: &tfprotov6.DynamicValue{MsgPack: state}}, nil
}

// encodeObject is the msgpack encoding of an object of type typ, as
// tfprotov6.NewDynamicValue writes it (a map of the attributes in name
// order), with the attributes in encoded already encoded.
func encodeObject(typ tftypes.Object, vals map[string]tftypes.Value, encoded map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(typ.AttributeTypes))
	for k := range typ.AttributeTypes {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([][]byte, len(names))
	size := 5
	for i, k := range names {
		if b, ok := encoded[k]; ok {
			parts[i] = b
		} else {
			v, ok := vals[k]
			if !ok {
				return nil, fmt.Errorf("%s: no value set", k)
			}
			dv, err := tfprotov6.NewDynamicValue(typ.AttributeTypes[k], v)
			if err != nil {
				return nil, err
			}
			parts[i] = dv.MsgPack
		}
		size += 5 + len(k) + len(parts[i])
	}
	out := appendMsgPackMapLen(make([]byte, 0, size), len(names))
	for i, k := range names {
		out = appendMsgPackString(out, k)
		out = append(out, parts[i]...)
	}
	return out, nil
}

// appendMsgPackMapLen and appendMsgPackString write a map header and a
// string as github.com/vmihailenco/msgpack/v5 (terraform-plugin-go's
// encoder) does: the shortest form.
func appendMsgPackMapLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x80|byte(n))
	case n <= math.MaxUint16:
		return append(b, 0xde, byte(n>>8), byte(n))
	}
	return append(b, 0xdf, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func appendMsgPackString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 256:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = append(b, 0xda, byte(n>>8), byte(n))
	default:
		b = append(b, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, s...)
}
