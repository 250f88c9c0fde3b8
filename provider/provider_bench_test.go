package provider_test

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/mlplatform/mlplatform/provider"
)

// BenchmarkGetProviderSchema measures serving the schema from a fresh
// provider server, as Terraform asks for it at the start of every command.
func BenchmarkGetProviderSchema(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		srv, err := providerserver.NewProtocol6WithError(provider.New("bench")())()
		if err != nil {
			b.Fatal(err)
		}
		resp, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.Diagnostics) > 0 || len(resp.ResourceSchemas) == 0 {
			b.Fatalf("schema: %d resources, diagnostics %v", len(resp.ResourceSchemas), resp.Diagnostics)
		}
	}
}
