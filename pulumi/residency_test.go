package pulumi

import "testing"

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
