package platform

import (
	"testing"

	"github.com/mlplatform/mlplatform/internal/residency"
)

func TestGuardReport(t *testing.T) {
	refs := []residency.Ref{
		{Path: "regions[0]", Kind: residency.KindRegion, Value: "me-central-1"},
		{Path: "s3_uris[0]", Kind: residency.KindS3URI, Value: "s3://eu-data/x"},
	}
	vs := []residency.Violation{
		{Path: "s3_uris[0]", Value: "s3://eu-data/x", Rule: "s3-bucket-region", Msg: "bucket is in eu-west-1", Fix: "move it"},
		{Path: "s3_uris[0]", Value: "s3://eu-data/x", Rule: "s3-replication", Msg: "replicates", Fix: "stop it"},
	}
	got := guardReport(refs, vs)
	if got.Compliant || len(got.Verdicts) != 2 || len(got.Violations) != 2 {
		t.Fatalf("report = %+v", got)
	}
	if v := got.Verdicts[0]; v.Verdict != "pass" || v.Rule != "" || v.Message != "" {
		t.Errorf("first verdict = %+v, want pass", v)
	}
	if v := got.Verdicts[1]; v.Verdict != "violation" || v.Rule != "s3-bucket-region" || v.Message != "bucket is in eu-west-1. Fix: move it" {
		t.Errorf("second verdict = %+v, want the first violation of its path", v)
	}
	if ok := guardReport(refs[:1], nil); !ok.Compliant || ok.Verdicts[0].Verdict != "pass" {
		t.Errorf("compliant report = %+v", ok)
	}
}

func TestGuardIDIgnoresOrderAndPaths(t *testing.T) {
	a := []residency.Ref{{Path: "regions[0]", Kind: residency.KindRegion, Value: "me-central-1"}, {Path: "zone_ids[0]", Kind: residency.KindZoneID, Value: "mec1-az1"}}
	b := []residency.Ref{{Path: "zoneIds[0]", Kind: residency.KindZoneID, Value: "mec1-az1"}, {Path: "regions[0]", Kind: residency.KindRegion, Value: "me-central-1"}}
	if GuardID(a) != GuardID(b) {
		t.Errorf("GuardID depends on order or paths: %s != %s", GuardID(a), GuardID(b))
	}
	if GuardID(a) == GuardID(a[:1]) {
		t.Error("GuardID does not depend on the values")
	}
}

// Known values become required references on their paths; a list or an
// element not known yet is left for apply and makes allKnown false; an
// empty element is a reference (to nothing, a violation), never skipped.
func TestGuardRefs(t *testing.T) {
	refs, allKnown := GuardRefs(map[string]GuardList{
		"regions":  {Values: []string{"me-central-1", ""}},
		"s3_uris":  {Values: []string{"s3://a/x", "", "s3://c/z"}, Pending: map[int]bool{1: true}},
		"zone_ids": {Unknown: true},
	})
	var got []string
	for _, r := range refs {
		if !r.Required {
			t.Errorf("%s is not required", r.Path)
		}
		got = append(got, string(r.Kind)+":"+r.Path+"="+r.Value)
	}
	want := []string{"region:regions[0]=me-central-1", "region:regions[1]=", "s3_uri:s3_uris[0]=s3://a/x", "s3_uri:s3_uris[2]=s3://c/z"}
	if allKnown || len(got) != len(want) {
		t.Fatalf("refs %v (all known %v), want %v and not all known", got, allKnown, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("ref %d = %s, want %s", i, got[i], want[i])
		}
	}
	if _, allKnown := GuardRefs(map[string]GuardList{"arns": {Values: []string{"arn:aws:iam::123456789012:role/x"}}}); !allKnown {
		t.Error("every value known, but allKnown is false")
	}
}
