package pulumi

import (
	"slices"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

func TestPropertyPath(t *testing.T) {
	for in, want := range map[string]string{
		"region":                         "region",
		"offline_store.s3_uri":           "offlineStore.s3Uri",
		"kms_key_arns[1]":                "kmsKeyArns[1]",
		`tags["cost_center"]`:            `tags["cost_center"]`,
		"features[2].feature_name":       "features[2].featureName",
		"residency.excluded_zone_ids[0]": "residency.excludedZoneIds[0]",
	} {
		if got := propertyPath(in); got != want {
			t.Errorf("propertyPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnknownPaths(t *testing.T) {
	in := property.NewMap(map[string]property.Value{
		"name":         property.New("x"),
		"kmsKeyArn":    property.New(property.Computed),
		"offlineStore": property.New(property.NewMap(map[string]property.Value{"s3Uri": property.New(property.Computed), "tableFormat": property.New("Glue")})),
		"features":     property.New([]property.Value{property.New(property.NewMap(map[string]property.Value{"name": property.New(property.Computed)}))}),
		"tags":         property.New(property.Computed),
	})
	got := unknownPaths(in)
	slices.Sort(got)
	want := []string{"features[0].name", "kms_key_arn", "offline_store.s3_uri", "tags"}
	if !slices.Equal(got, want) {
		t.Errorf("unknownPaths = %v, want %v", got, want)
	}
	if s := snakeCase("recordIdentifierFeatureName"); s != "record_identifier_feature_name" {
		t.Errorf("snakeCase = %q", s)
	}
}

// One PCR value known only at apply makes attestation_pcrs unknown as a
// whole, as Terraform reports it: the PCRs are checked at apply, never
// refused at preview as an empty value.
func TestWholeListUnknownsPCRMap(t *testing.T) {
	in := property.NewMap(map[string]property.Value{
		"validation": property.New(property.NewMap(map[string]property.Value{
			"attestationPcrs": property.New(property.NewMap(map[string]property.Value{"4": property.New(property.Computed), "7": property.New("ab")})),
		})),
	})
	got := wholeListUnknowns(in)
	if !slices.Contains(got, "validation.attestation_pcrs") || !slices.Contains(got, "validation.attestation_pcrs.4") {
		t.Errorf("wholeListUnknowns = %v, want validation.attestation_pcrs and its element", got)
	}
}
