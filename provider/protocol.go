package provider

import (
	"context"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// instanceTypesTypeName is the data source that protocolServer reads itself.
const instanceTypesTypeName = "mlplatform_instance_types"

// NewProtocol6 returns the factory of the provider's protocol server: the
// framework's, except that reads of mlplatform_instance_types go straight
// to readInstanceTypes.
//
// A CPU profile of the provider during a plan of 100 lookups put 40% of its
// time in what the framework does around a read after the data source
// returns: it converts the whole state (a list of up to 30 objects of 20
// attributes) into framework values, attribute by attribute with a log
// context each, to look for semantic equality, which no attribute of this
// data source defines. Everything else (schema, validation, configuration,
// every other data source and resource) is the framework's.
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
	typ      tftypes.Type // of mlplatform_instance_types, from its schema
}

func (s *protocolServer) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	meta := s.provider.meta.Load()
	if req.TypeName != instanceTypesTypeName || meta == nil || req.Config == nil {
		// Not configured (or another data source): the framework reads,
		// and reports what is missing.
		return s.ProviderServer.ReadDataSource(ctx, req)
	}
	s.typeOnce.Do(func() {
		var resp datasource.SchemaResponse
		(&instanceTypesDataSource{}).Schema(ctx, datasource.SchemaRequest{}, &resp)
		s.typ = resp.Schema.Type().TerraformType(ctx)
	})
	fail := func(detail string) (*tfprotov6.ReadDataSourceResponse, error) {
		return &tfprotov6.ReadDataSourceResponse{Diagnostics: []*tfprotov6.Diagnostic{{
			Severity: tfprotov6.DiagnosticSeverityError,
			Summary:  "reading instance types",
			Detail:   detail,
		}}}, nil
	}
	config, err := req.Config.Unmarshal(s.typ)
	if err != nil {
		return fail("decoding the configuration: " + err.Error())
	}
	state, err := readInstanceTypes(ctx, meta, s.provider.instanceTypes, config)
	if err != nil {
		return fail(err.Error())
	}
	dv, err := tfprotov6.NewDynamicValue(s.typ, state)
	if err != nil {
		return fail("encoding the state: " + err.Error())
	}
	return &tfprotov6.ReadDataSourceResponse{State: &dv}, nil
}
