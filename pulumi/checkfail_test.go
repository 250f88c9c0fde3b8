package pulumi

import (
	"fmt"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/internal/residency"
)

func TestForEngine(t *testing.T) {
	inputs := property.NewMap(map[string]property.Value{
		"region": property.New("eu-west-1"),
		"s3Uris": property.New([]property.Value{property.New("s3://eu")}),
	})
	got := forEngine(inputs, []p.CheckFailure{
		{Property: "region", Reason: "outside the jurisdiction"},
		{Property: "s3Uris[0]", Reason: `residency violation: s3-bucket-region` + "\n" + `s3Uris[0] = "s3://eu": ...`},
		{Property: "offlineStore.s3Uri", Reason: "must be an s3:// URI"},
		{Reason: "no property"},
	})
	want := []p.CheckFailure{
		{Property: "region", Reason: "outside the jurisdiction"},
		{Reason: `residency violation: s3-bucket-region` + "\n" + `s3Uris[0] = "s3://eu": ...`},
		{Reason: "offlineStore.s3Uri: must be an s3:// URI"},
		{Reason: "no property"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("forEngine:\n got %v\nwant %v", got, want)
	}
}

func TestViolationFailure(t *testing.T) {
	f := violationFailure(residency.ModeEnforce, residency.Violation{
		Path: "offline_store.s3_uri", Value: "s3://eu/x", Rule: "s3-bucket-region", Msg: "bucket is in eu-west-1", Fix: "use a bucket in me-central-1",
	})
	want := "residency violation: s3-bucket-region\n" + `offlineStore.s3Uri = "s3://eu/x": bucket is in eu-west-1.` + "\nRule: s3-bucket-region (enforce mode).\nFix: use a bucket in me-central-1"
	if f.Property != "offlineStore.s3Uri" || f.Reason != want {
		t.Errorf("violationFailure = %q %q\nwant reason %q", f.Property, f.Reason, want)
	}
}
