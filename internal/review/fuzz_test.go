package review

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mlplatform/mlplatform/internal/catalog"
)

// FuzzParsePlan feeds the plan parser (Terraform and Pulumi) arbitrary
// input, seeded with every fixture. Whatever it accepts must review and
// render within the comment limit without panicking.
func FuzzParsePlan(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "plans", "*.json"))
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"format_version":"1.2"}`))
	f.Add([]byte(`{"format_version":"9.0"}`))
	f.Add([]byte(`{"steps":[{"op":"replace","urn":"urn:pulumi:s::p::a:b/c:D::n","newState":{"type":"a:b/c:D","custom":true,"inputs":{"x":[1,{"y":null}]}}}]}`))
	f.Add([]byte(`{"format_version":"1.2","resource_changes":[{"address":"a.b","mode":"managed","type":"mlplatform_cpu_footprint","change":{"actions":["create"],"after":{"instance_type":"c7i.large","min":1,"max":3,"schedule":[{"cron":"*/7 1-23/2 * * MON-FRI","desired":3}]},"after_unknown":{"schedule":true}}}]}`))
	cat, err := catalog.Embedded()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlan(data)
		if err != nil {
			return
		}
		r, err := Review(context.Background(), p, Options{Jurisdiction: "AE", Catalog: cat})
		if err != nil {
			return
		}
		if md := Markdown(r, 0); len(md) > CommentLimit {
			t.Fatalf("Markdown is %d bytes, over the limit", len(md))
		}
	})
}
