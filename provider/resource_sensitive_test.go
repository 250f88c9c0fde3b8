package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// TestSensitiveAttributes keeps what may carry secrets out of plan output:
// user data (and the bootstrap that copies it) and the serving container's
// environment.
func TestSensitiveAttributes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		r    resource.Resource
		path path.Path
	}{
		{"gpu cluster user_data", NewGPUClusterResource(), path.Root("user_data")},
		{"gpu cluster validation_bootstrap", NewGPUClusterResource(), path.Root("validation_bootstrap")},
		{"cpu footprint user_data", NewCPUFootprintResource(), path.Root("user_data")},
		{"cpu footprint validation_bootstrap", NewCPUFootprintResource(), path.Root("validation_bootstrap")},
		{"serving endpoint model.environment", NewServingEndpointResource(), path.Root("model").AtName("environment")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var resp resource.SchemaResponse
			tc.r.Schema(ctx, resource.SchemaRequest{}, &resp)
			if resp.Diagnostics.HasError() {
				t.Fatal(resp.Diagnostics)
			}
			a, diags := resp.Schema.AttributeAtPath(ctx, tc.path)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if !a.IsSensitive() {
				t.Errorf("%s is not sensitive", tc.path)
			}
		})
	}
}
