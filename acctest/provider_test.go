package acctest

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/mlplatform/mlplatform/internal/cloud"
)

// TestProtoV6ProviderFactories checks that the factory serves the provider
// and that its endpoints block accepts every key ProviderConfig writes.
func TestProtoV6ProviderFactories(t *testing.T) {
	f, ok := ProtoV6ProviderFactories()[ProviderName]
	if !ok {
		t.Fatalf("no factory for %q", ProviderName)
	}
	srv, err := f()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Errorf("schema diagnostic: %s: %s", d.Summary, d.Detail)
	}
	var endpoints []string
	for _, b := range resp.Provider.Block.BlockTypes {
		if b.TypeName == "endpoints" {
			for _, a := range b.Block.Attributes {
				endpoints = append(endpoints, a.Name)
			}
		}
	}
	for _, s := range cloud.Services() {
		if !slices.Contains(endpoints, s) {
			t.Errorf("provider endpoints block lacks %q (has %v)", s, endpoints)
		}
	}
}

// TestAccHarness_residencyDataSource runs the real Terraform CLI against the
// emulator through the harness, end to end: a read-only configuration makes
// no write calls.
func TestAccHarness_residencyDataSource(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 to run it (make testacc)")
	}
	h := Setup(t)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { PreCheck(t) },
		ProtoV6ProviderFactories: ProtoV6ProviderFactories(),
		Steps: []resource.TestStep{{
			Config: h.ProviderConfig(`excluded_zone_ids = ["mec1-az2"]`) + `
data "mlplatform_residency" "this" {}
`,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr("data.mlplatform_residency.this", "jurisdiction", "AE"),
				resource.TestCheckResourceAttr("data.mlplatform_residency.this", "region", Region),
				resource.TestCheckResourceAttr("data.mlplatform_residency.this", "excluded_zone_ids.0", "mec1-az2"),
			),
		}},
	})
	if w := h.Shim.Writes(); len(w) != 0 {
		t.Errorf("a read-only configuration made write calls: %v", w)
	}
}
