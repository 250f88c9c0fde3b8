package provider

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// State written when features was a list (schema version 0) reads as the
// set of version 1, every other attribute unchanged.
func TestFeatureStoreUpgradeStateV0(t *testing.T) {
	ctx := context.Background()
	r := &featureStoreResource{}
	var sr resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &sr)
	v0 := map[string]any{
		"id": "customers", "name": "customers", "record_identifier_feature_name": "customer_id", "event_time_feature_name": "event_time",
		"features": []any{
			map[string]any{"name": "customer_id", "type": "String", "collection_type": nil, "vector_dimension": nil},
			map[string]any{"name": "event_time", "type": "Fractional", "collection_type": nil, "vector_dimension": nil},
		},
		"allow_destructive_changes": false, "status": "Created", "arn": "arn:aws:sagemaker:me-central-1:123456789012:feature-group/customers",
	}
	raw, err := json.Marshal(v0)
	if err != nil {
		t.Fatal(err)
	}
	up, ok := r.UpgradeState(ctx)[0]
	if !ok {
		t.Fatal("no upgrader from version 0")
	}
	var resp resource.UpgradeStateResponse
	up.StateUpgrader(ctx, resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: raw}}, &resp)
	if resp.Diagnostics.HasError() || resp.DynamicValue == nil {
		t.Fatalf("upgrade: %v", resp.Diagnostics)
	}
	typ := sr.Schema.Type().TerraformType(ctx)
	val, err := resp.DynamicValue.Unmarshal(typ)
	if err != nil {
		t.Fatalf("upgraded state does not fit schema version %d: %v", sr.Schema.Version, err)
	}
	st := tfsdk.State{Schema: sr.Schema, Raw: val}
	var m featureStoreModel
	if d := st.Get(ctx, &m); d.HasError() {
		t.Fatalf("reading upgraded state: %v", d)
	}
	if n := len(m.Features.Elements()); n != 2 || m.Name.ValueString() != "customers" || m.Status.ValueString() != "Created" {
		t.Fatalf("upgraded: %d features, name %q, status %q", n, m.Name.ValueString(), m.Status.ValueString())
	}
}
