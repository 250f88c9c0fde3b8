// Command floorprovider is the smallest terraform-plugin-framework provider
// that can serve the benchmark's lookups configuration: the provider
// address and data source name of mlplatform, a data source that computes
// one id from its config and nothing else (no AWS SDK, no catalog). `make
// bench` plans the 100 lookups against it too: what that plan costs over
// 100 terraform_data is the floor of any framework provider for the
// workload (the provider processes Terraform starts, the protocol, the
// framework, Terraform's handling of 100 data sources).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func main() {
	err := providerserver.Serve(context.Background(), func() provider.Provider { return floorProvider{} },
		providerserver.ServeOpts{Address: "registry.terraform.io/mlplatform/mlplatform"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type floorProvider struct{}

func (floorProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "mlplatform"
}

func (floorProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{Attributes: map[string]schema.Attribute{
		"region": schema.StringAttribute{Optional: true},
	}}
}

func (floorProvider) Configure(context.Context, provider.ConfigureRequest, *provider.ConfigureResponse) {
}

func (floorProvider) Resources(context.Context) []func() resource.Resource { return nil }

func (floorProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{func() datasource.DataSource { return lookup{} }}
}

// lookup is mlplatform_instance_types with only its filter on GPU count.
type lookup struct{}

type lookupModel struct {
	MinGPUCount types.Int64  `tfsdk:"min_gpu_count"`
	ID          types.String `tfsdk:"id"`
}

func (lookup) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_instance_types"
}

func (lookup) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = dsschema.Schema{Attributes: map[string]dsschema.Attribute{
		"min_gpu_count": dsschema.Int64Attribute{Optional: true},
		"id":            dsschema.StringAttribute{Computed: true},
	}}
}

func (lookup) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m lookupModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	m.ID = types.StringValue(fmt.Sprintf("count>=%d", m.MinGPUCount.ValueInt64()))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
