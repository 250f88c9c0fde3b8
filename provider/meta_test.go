package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
)

func TestParsePath(t *testing.T) {
	for in, want := range map[string]path.Path{
		"region":                       path.Root("region"),
		"residency.mode":               path.Root("residency").AtName("mode"),
		"s3_uris[2]":                   path.Root("s3_uris").AtListIndex(2),
		"offline_store.s3_uri":         path.Root("offline_store").AtName("s3_uri"),
		"variants[1].instance_type":    path.Root("variants").AtListIndex(1).AtName("instance_type"),
		`tags["owner"]`:                path.Root("tags").AtMapKey("owner"),
		"residency.allowed_regions[0]": path.Root("residency").AtName("allowed_regions").AtListIndex(0),
	} {
		if got := parsePath(in); !got.Equal(want) {
			t.Errorf("parsePath(%q) = %s, want %s", in, got, want)
		}
	}
}
