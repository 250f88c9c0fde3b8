package pulumi

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

const testRole = "arn:aws:iam::123456789012:role/feature-store"

func feature(name, typ string) property.Value {
	return property.New(property.NewMap(map[string]property.Value{"name": property.New(name), "type": property.New(typ)}))
}

// featureStoreInputs is a feature group with an online store (TTL) and an
// offline store in bucket.
func featureStoreInputs(bucket string, features ...property.Value) property.Map {
	return property.NewMap(map[string]property.Value{
		"name":                        property.New("customers"),
		"recordIdentifierFeatureName": property.New("customer_id"),
		"eventTimeFeatureName":        property.New("event_time"),
		"features":                    property.New(features),
		"onlineStore": property.New(property.NewMap(map[string]property.Value{
			"enabled": property.New(true),
			"ttl":     property.New(property.NewMap(map[string]property.Value{"unit": property.New("Days"), "value": property.New(30.0)})),
		})),
		"offlineStore": property.New(property.NewMap(map[string]property.Value{"s3Uri": property.New("s3://" + bucket + "/customers")})),
		"roleArn":      property.New(testRole),
		"tags":         property.New(property.NewMap(map[string]property.Value{"team": property.New("risk")})),
	})
}

var baseFeatures = []property.Value{feature("customer_id", "String"), feature("event_time", "Fractional"), feature("age", "Integral")}

func TestFeatureStore_lifecycle(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-feature-store")
	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("FeatureStore", "customers")

	inputs := featureStoreInputs("uae-feature-store", baseFeatures...)
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	if _, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true}); err != nil {
		t.Fatalf("preview: %v", err)
	}
	assertNoWrites(t, h)
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	arn := created.Properties.Get("arn").AsString()
	if !strings.Contains(arn, ":feature-group/customers") {
		t.Errorf("arn = %q", arn)
	}
	if tags := created.Properties.Get("tagsAll").AsMap(); tags.Get("owner").AsString() != "ml-platform" || tags.Get("team").AsString() != "risk" {
		t.Errorf("tagsAll = %v", tags)
	}

	// Refresh is clean.
	read, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: check.Inputs})
	if err != nil || read.ID != "customers" {
		t.Fatalf("read: %q %v", read.ID, err)
	}
	diff, err := s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: read.Inputs, Inputs: check.Inputs})
	if err != nil || diff.HasChanges {
		t.Fatalf("diff after refresh: %v %+v", err, diff.DetailedDiff)
	}

	// Adding a feature is an in-place update.
	plus := featureStoreInputs("uae-feature-store", append(baseFeatures, feature("risk_score", "Fractional"))...)
	check2, err := s.Check(p.CheckRequest{Urn: u, State: check.Inputs, Inputs: plus})
	if err != nil || len(check2.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check2.Failures)
	}
	diff, err = s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: check.Inputs, Inputs: check2.Inputs})
	if err != nil || !diff.HasChanges || diff.DetailedDiff["features"].Kind != p.Update || diff.DeleteBeforeReplace {
		t.Fatalf("diff adding a feature: %v %+v", err, diff)
	}
	updated, err := s.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: read.Properties, OldInputs: check.Inputs, Inputs: check2.Inputs})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if n := len(updated.Properties.Get("features").AsArray().AsSlice()); n != 4 {
		t.Errorf("%d features after update, want 4", n)
	}
	if got := len(h.Shim.Calls("sagemaker", "UpdateFeatureGroup")); got != 1 {
		t.Errorf("%d UpdateFeatureGroup calls, want 1", got)
	}
	if got := len(h.Shim.Calls("sagemaker", "DeleteFeatureGroup")); got != 0 {
		t.Errorf("%d DeleteFeatureGroup calls, want 0 (in place)", got)
	}

	// Removing a feature is refused unless allowed.
	fewer := featureStoreInputs("uae-feature-store", baseFeatures[:2]...)
	check3, err := s.Check(p.CheckRequest{Urn: u, State: check2.Inputs, Inputs: fewer})
	if err != nil || len(check3.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check3.Failures)
	}
	_, err = s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: updated.Properties, OldInputs: check2.Inputs, Inputs: check3.Inputs})
	if err == nil || !strings.Contains(err.Error(), "allowDestructiveChanges") {
		t.Fatalf("diff removing a feature: err = %v, want a refusal naming allowDestructiveChanges", err)
	}
	allowed := check3.Inputs.Set("allowDestructiveChanges", property.New(true))
	diff, err = s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: updated.Properties, OldInputs: check2.Inputs, Inputs: allowed})
	if err != nil || diff.DetailedDiff["features"].Kind != p.UpdateReplace || !diff.DeleteBeforeReplace {
		t.Fatalf("diff with allowDestructiveChanges: %v %+v", err, diff)
	}

	if err := s.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	gone, err := s.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: check2.Inputs})
	if err != nil || gone.ID != "" {
		t.Errorf("read after delete: id %q, %v; want gone", gone.ID, err)
	}
}

func TestFeatureStore_checkRejects(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, "eu-west-1", "eu-feature-store")
	s := newServer(t, h, awsManagedKeys(nil))

	check, err := s.Check(p.CheckRequest{Urn: urn("FeatureStore", "customers"), Inputs: featureStoreInputs("eu-feature-store", baseFeatures...)})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if len(check.Failures) != 1 || check.Failures[0].Property != "offlineStore.s3Uri" || !strings.Contains(check.Failures[0].Reason, "s3-bucket-region") {
		t.Fatalf("failures = %+v, want one s3-bucket-region failure on offlineStore.s3Uri", check.Failures)
	}

	bad := featureStoreInputs("eu-feature-store", feature("customer_id", "Boolean"), feature("event_time", "Fractional"))
	check, err = s.Check(p.CheckRequest{Urn: urn("FeatureStore", "customers"), Inputs: bad})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if len(check.Failures) == 0 || check.Failures[0].Property != "features[0].type" {
		t.Fatalf("failures = %+v, want one on features[0].type", check.Failures)
	}
	assertNoWrites(t, h)
}

// An input not known yet (another resource's output, in preview) is a
// pending change, never an absent value: unknown tags are an in-place
// update, not "tags removed" and not "no change"; an unknown TTL is not a
// TTL removal; an unknown feature list could be destructive, so it fails
// closed unless allowDestructiveChanges.
func TestFeatureStore_unknownInputIsAChange(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-feature-store")
	s := newServer(t, h, awsManagedKeys(nil))
	u := urn("FeatureStore", "customers")
	inputs := featureStoreInputs("uae-feature-store", baseFeatures...)
	check, err := s.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	if err != nil || len(check.Failures) > 0 {
		t.Fatalf("check: %v %+v", err, check.Failures)
	}
	created, err := s.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	writes := len(h.Shim.Writes())
	diff := func(in property.Map) (p.DiffResponse, error) {
		return s.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, OldInputs: check.Inputs, Inputs: in})
	}
	if d, err := diff(check.Inputs); err != nil || d.HasChanges {
		t.Fatalf("diff of the same inputs: %v %+v, want none", err, d.DetailedDiff)
	}

	computed := property.New(property.Computed)
	d, err := diff(check.Inputs.Set("tags", computed))
	if err != nil || !d.HasChanges || d.DetailedDiff["tags"].Kind != p.Update || d.DeleteBeforeReplace {
		t.Fatalf("unknown tags: %v %+v, want an in-place change of tags", err, d)
	}
	ttl := property.New(property.NewMap(map[string]property.Value{
		"enabled": property.New(true),
		"ttl":     property.New(property.NewMap(map[string]property.Value{"unit": property.New("Days"), "value": computed})),
	}))
	d, err = diff(check.Inputs.Set("onlineStore", ttl))
	if err != nil || !d.HasChanges || d.DetailedDiff["onlineStore"].Kind != p.Update || d.DeleteBeforeReplace {
		t.Fatalf("unknown TTL: %v %+v, want an in-place change of onlineStore", err, d)
	}
	unknownFeatures := check.Inputs.Set("features", computed)
	if _, err := diff(unknownFeatures); err == nil || !strings.Contains(err.Error(), "not known until apply") || !strings.Contains(err.Error(), "allowDestructiveChanges") {
		t.Fatalf("unknown features: err = %v, want a refusal saying the features are not known until apply", err)
	}
	d, err = diff(unknownFeatures.Set("allowDestructiveChanges", property.New(true)))
	if err != nil || d.DetailedDiff["features"].Kind != p.UpdateReplace || !d.DeleteBeforeReplace {
		t.Fatalf("unknown features, destructive changes allowed: %v %+v, want a replacement", err, d)
	}
	if n := len(h.Shim.Writes()); n != writes {
		t.Errorf("%d writes during diffs, want none", n-writes)
	}
}
