package pulumi

import (
	"context"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
)

// TestConfigDiff: a change of residency, tags, profile or endpoints updates
// the provider in place (a replaced provider would replace every resource,
// GPU nodes included); only a change of region replaces it.
func TestConfigDiff(t *testing.T) {
	str := func(s string) *string { return &s }
	base := func() *Config {
		return &Config{Region: str("me-central-1"), Residency: &ResidencyConfig{Mode: str("enforce")}, DefaultTags: map[string]string{"owner": "ml"}}
	}
	cases := []struct {
		name    string
		mod     func(*Config)
		changes bool
		replace bool
	}{
		{"same", func(*Config) {}, false, false},
		{"residency mode", func(c *Config) { c.Residency.Mode = str("audit") }, true, false},
		{"default tags", func(c *Config) { c.DefaultTags["cost-centre"] = "42" }, true, false},
		{"endpoints", func(c *Config) { c.Endpoints = &Endpoints{EC2: str("http://127.0.0.1:1")} }, true, false},
		{"region", func(c *Config) { c.Region = str("eu-west-1") }, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			news := base()
			tc.mod(news)
			resp, err := (&Config{}).Diff(context.Background(), infer.DiffRequest[*Config, *Config]{State: base(), Inputs: news})
			if err != nil {
				t.Fatal(err)
			}
			if resp.HasChanges != tc.changes {
				t.Errorf("HasChanges = %v, want %v (%v)", resp.HasChanges, tc.changes, resp.DetailedDiff)
			}
			replace := false
			for _, d := range resp.DetailedDiff {
				replace = replace || d.Kind == p.UpdateReplace
			}
			if replace != tc.replace {
				t.Errorf("replace = %v, want %v (%v)", replace, tc.replace, resp.DetailedDiff)
			}
		})
	}
}
