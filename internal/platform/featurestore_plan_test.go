package platform

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPlanFeatureStore(t *testing.T) {
	created := func(s FeatureStoreSpec) FeatureStorePrior {
		return FeatureStorePrior{Spec: s, Status: FeatureStoreCreated}
	}
	tests := []struct {
		name    string
		prior   FeatureStorePrior
		desired func(*FeatureStoreSpec)
		unknown []string
		allow   bool

		action        FeatureStoreAction
		inPlace       []string // paths
		replace       []string
		refused       []string
		refusedText   string // in every refusal
		warning       string // in a warning
		statusChanges bool
	}{
		{name: "no change", prior: created(validFeatureStore()), desired: func(*FeatureStoreSpec) {}, action: FeatureStoreNoChange},
		{name: "feature added in place", prior: created(validFeatureStore()),
			desired: func(s *FeatureStoreSpec) {
				s.Features = append(s.Features, Feature{Name: "score", Type: FeatureTypeFractional})
			},
			action: FeatureStoreInPlace, inPlace: []string{"features"}},
		{name: "TTL and tags in place", prior: created(validFeatureStore()),
			desired: func(s *FeatureStoreSpec) {
				s.Online.TTL = &TTL{Unit: "Days", Value: 7}
				s.Tags = map[string]string{"team": "fraud"}
			},
			action: FeatureStoreInPlace, inPlace: []string{"online_store.ttl", "tags"}},
		{name: "feature removed is refused", prior: created(validFeatureStore()),
			desired: func(s *FeatureStoreSpec) { s.Features = s.Features[:2] },
			action:  FeatureStoreRefused, refused: []string{"features"},
			refusedText: "set allow_destructive_changes = true"},
		{name: "feature retyped is refused with its reason", prior: created(validFeatureStore()),
			desired: func(s *FeatureStoreSpec) { s.Features[2].Type = FeatureTypeString },
			action:  FeatureStoreRefused, refused: []string{"features"},
			refusedText: `feature "age" changes type from Integral to String`},
		{name: "offline store moved, allowed: replaced", prior: created(validFeatureStore()), allow: true,
			desired: func(s *FeatureStoreSpec) { s.Offline.S3URI = "s3://other/x" },
			action:  FeatureStoreReplace, replace: []string{"offline_store.s3_uri"},
			warning: "Data will be lost"},
		{name: "unknown feature list fails closed", prior: created(validFeatureStore()),
			desired: func(s *FeatureStoreSpec) { s.Features = nil }, unknown: []string{"features"},
			action: FeatureStoreRefused, refused: []string{"features"}, refusedText: "not known until apply"},
		{name: "unknown tags are a pending in-place change, not absent", prior: created(validFeatureStore()),
			desired: func(s *FeatureStoreSpec) { s.Tags = nil }, unknown: []string{"tags"},
			action: FeatureStoreInPlace, inPlace: []string{"tags"}},
		{name: "unknown TTL is a pending in-place change, not a removal", prior: created(validFeatureStore()),
			desired: func(s *FeatureStoreSpec) { s.Online.TTL = nil }, unknown: []string{"online_store.ttl.value"},
			action: FeatureStoreInPlace, inPlace: []string{"online_store.ttl"}},
		{name: "unknown S3 URI, allowed: replaced", prior: created(validFeatureStore()), allow: true,
			desired: func(s *FeatureStoreSpec) { s.Offline.S3URI = "" }, unknown: []string{"offline_store.s3_uri"},
			action: FeatureStoreReplace, replace: []string{"offline_store.s3_uri"}},
		{name: "still creating: finished in place", prior: FeatureStorePrior{Spec: validFeatureStore(), Status: FeatureStoreCreating},
			desired: func(*FeatureStoreSpec) {}, action: FeatureStoreInPlace, statusChanges: true},
		{name: "create failed, not allowed: refused on status", prior: FeatureStorePrior{Spec: validFeatureStore(), Status: FeatureStoreCreateFailed, FailureReason: "role cannot write"},
			desired: func(*FeatureStoreSpec) {}, action: FeatureStoreRefused, refused: []string{"status"}, refusedText: "role cannot write"},
		{name: "create failed, allowed: replaced on status", prior: FeatureStorePrior{Spec: validFeatureStore(), Status: FeatureStoreCreateFailed}, allow: true,
			desired: func(*FeatureStoreSpec) {}, action: FeatureStoreReplace, replace: []string{"status"}, statusChanges: true, warning: "deleted and created again"},
		{name: "delete failed: refused", prior: FeatureStorePrior{Spec: validFeatureStore(), Status: FeatureStoreDeleteFailed}, allow: true,
			desired: func(*FeatureStoreSpec) {}, action: FeatureStoreRefused, refused: []string{"status"}, refusedText: "deletion failed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			desired := validFeatureStore()
			tc.desired(&desired)
			cs := PlanFeatureStore(tc.prior, desired, tc.unknown, tc.allow)
			if cs.Action != tc.action {
				t.Fatalf("action = %s, want %s (%+v)", cs.Action, tc.action, cs)
			}
			if got := changePaths(cs.InPlace); !slices.Equal(got, tc.inPlace) {
				t.Errorf("in place = %v, want %v", got, tc.inPlace)
			}
			if got := cs.ReplacePaths(); !slices.Equal(got, tc.replace) {
				t.Errorf("replace = %v, want %v", got, tc.replace)
			}
			var refused []string
			for _, p := range cs.Refused {
				refused = append(refused, p.Path)
				if p.Warning || !strings.Contains(p.Detail, tc.refusedText) || !strings.Contains(p.Summary, "customers") {
					t.Errorf("refusal %+v, want an error naming the group and saying %q", p, tc.refusedText)
				}
			}
			if !slices.Equal(refused, tc.refused) {
				t.Errorf("refused = %v, want %v", refused, tc.refused)
			}
			if tc.warning != "" && (len(cs.Warnings) == 0 || !strings.Contains(cs.Warnings[0].Detail, tc.warning) || !cs.Warnings[0].Warning) {
				t.Errorf("warnings = %+v, want one saying %q", cs.Warnings, tc.warning)
			}
			if cs.StatusChanges != tc.statusChanges {
				t.Errorf("status changes = %v, want %v", cs.StatusChanges, tc.statusChanges)
			}
		})
	}
}

func TestFeatureStoreReadBack(t *testing.T) {
	found := &FeatureStore{
		Spec: FeatureStoreSpec{
			Name: "customers", RecordIdentifier: "customer_id", EventTime: "event_time",
			Features:   []Feature{{Name: "age", Type: FeatureTypeIntegral}, {Name: "customer_id", Type: FeatureTypeString}, {Name: "event_time", Type: FeatureTypeFractional}},
			Online:     &OnlineStore{Enabled: true, StorageType: StorageStandard, TTL: &TTL{Unit: "Days", Value: 30}},
			Offline:    &OfflineStore{S3URI: "s3://features-uae/customers/", TableFormat: TableFormatGlue},
			Throughput: &Throughput{Mode: ThroughputOnDemand},
			RoleARN:    "arn:aws:iam::123456789012:role/feature-store",
			Tags:       map[string]string{"owner": "ml-platform", "team": "risk"},
		},
		ARN: "arn:aws:sagemaker:me-central-1:123456789012:feature-group/customers", Status: FeatureStoreCreated,
		CreationTime: time.Date(2026, 3, 1, 12, 0, 0, 0, time.FixedZone("GST", 4*3600)), TableName: "customers_1",
	}
	defaults := map[string]string{"owner": "ml-platform"}
	declared := FeatureStoreDeclared{
		Spec: FeatureStoreSpec{
			Name: "customers", RecordIdentifier: "customer_id", EventTime: "event_time",
			Features: []Feature{{Name: "customer_id"}, {Name: "event_time"}, {Name: "age"}},
			Online:   &OnlineStore{Enabled: true},
			Offline:  &OfflineStore{S3URI: "s3://features-uae/customers"},
			Tags:     map[string]string{"team": "risk"},
		},
		Unset: []string{"description", "online_store.storage_type", "online_store.kms_key_arn", "offline_store.kms_key_arn",
			"offline_store.table_format", "offline_store.disable_glue_table_creation", "throughput"},
	}
	rb := FeatureStoreReadBackOf(found, declared, defaults)
	s := rb.Spec
	if got := featureNames(s.Features); !slices.Equal(got, []string{"customer_id", "event_time", "age"}) {
		t.Errorf("features in order %v, want the declared order", got)
	}
	if s.Offline.S3URI != "s3://features-uae/customers" {
		t.Errorf("S3 URI %q, want the declared spelling (no trailing slash)", s.Offline.S3URI)
	}
	for _, path := range []string{"description", "online_store.storage_type", "online_store.kms_key_arn", "offline_store.table_format", "offline_store.disable_glue_table_creation"} {
		if !rb.IsUnset(path) {
			t.Errorf("%s is set; unset in the declaration and at its default in AWS, it must stay unset", path)
		}
	}
	if rb.IsUnset("throughput") || s.Throughput == nil || s.Throughput.Mode != ThroughputOnDemand {
		t.Errorf("throughput %+v (unset %v), want what AWS has", s.Throughput, rb.IsUnset("throughput"))
	}
	if len(s.Tags) != 1 || s.Tags["team"] != "risk" || len(rb.TagsAll) != 2 {
		t.Errorf("tags %v, tags_all %v: want own tags without the default tag, all tags in tags_all", s.Tags, rb.TagsAll)
	}
	if rb.CreationTime != "2026-03-01T08:00:00Z" || rb.OfflineTableName != "customers_1" || rb.Status != FeatureStoreCreated {
		t.Errorf("outputs %+v", rb)
	}

	// A value the user wrote out at its default stays written out; a default
	// tag the user also set stays theirs.
	declared.Unset = []string{"description"}
	declared.Spec.Tags = map[string]string{"team": "risk", "owner": "ml-platform"}
	declared.Spec.Online.StorageType = StorageStandard
	rb = FeatureStoreReadBackOf(found, declared, defaults)
	if rb.IsUnset("online_store.storage_type") || rb.Spec.Online.StorageType != StorageStandard || rb.IsUnset("offline_store.table_format") {
		t.Errorf("explicit defaults dropped: unset %v", rb.Unset)
	}
	if rb.Spec.Tags["owner"] != "ml-platform" {
		t.Errorf("tags %v, want the default tag the user set kept", rb.Spec.Tags)
	}

	// What AWS does not report keeps its declared value (an emulator that
	// does not echo the online store); an import declares nothing.
	quiet := *found
	quiet.Spec.Online, quiet.Spec.Throughput = nil, nil
	rb = FeatureStoreReadBackOf(&quiet, declared, defaults)
	if rb.Spec.Online == nil || !rb.Spec.Online.Enabled || !rb.IsUnset("throughput") {
		t.Errorf("online store %+v, throughput unset %v: want the declared online store and no throughput", rb.Spec.Online, rb.IsUnset("throughput"))
	}
	imported := FeatureStoreDeclared{Spec: FeatureStoreSpec{Name: "customers"}, Unset: []string{"description", "role_arn", "online_store", "online_store.storage_type",
		"online_store.kms_key_arn", "offline_store.kms_key_arn", "offline_store.table_format", "offline_store.disable_glue_table_creation", "throughput", "tags"}}
	rb = FeatureStoreReadBackOf(found, imported, defaults)
	if rb.IsUnset("online_store") || rb.Spec.Online == nil || !rb.IsUnset("online_store.storage_type") || rb.Spec.Tags["team"] != "risk" || rb.Spec.Tags["owner"] != "" {
		t.Errorf("import: %+v unset %v", rb.Spec, rb.Unset)
	}
	if got := featureNames(rb.Spec.Features); !slices.Equal(got, []string{"age", "customer_id", "event_time"}) {
		t.Errorf("import features %v, want AWS's order", got)
	}
	// A disabled online store the user never declared stays undeclared.
	off := *found
	off.Spec.Online = &OnlineStore{Enabled: false}
	if rb := FeatureStoreReadBackOf(&off, imported, defaults); rb.Spec.Online != nil || !rb.IsUnset("online_store") {
		t.Errorf("disabled online store read back as %+v", rb.Spec.Online)
	}
}
