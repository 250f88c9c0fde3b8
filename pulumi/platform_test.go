package pulumi

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// The Platform's summary reports the real residency verdict: in audit mode
// with violations it says so, with their number and rules, never
// "compliant"; a verdict that could not be checked is not a pass either.
func TestPlatformSummary(t *testing.T) {
	nodes := []any{map[string]any{"state": "running", "zoneId": "mec1-az1"}, map[string]any{"state": "pending", "zoneId": "mec1-az1"}}
	policy := "residency AE (United Arab Emirates, audit mode): allowed regions me-central-1"
	audit := platform.ResidencyVerdict{Policy: policy, Mode: residency.ModeAudit, Violations: []residency.Violation{
		{Path: "features.offline_store.s3_uri", Rule: "s3-bucket-region"},
		{Path: "features.offline_store.kms_key_arn", Rule: "kms-key-region"},
		{Path: "training.zone_id", Rule: "zone-excluded"},
	}}
	for _, tc := range []struct {
		name    string
		verdict platform.ResidencyVerdict
		want    []string
		compl   bool
	}{
		{"audit with violations", audit, []string{"NOT compliant", "3 residency violations in audit mode", "kms-key-region, s3-bucket-region, zone-excluded", "training.zone_id"}, false},
		{"compliant", platform.ResidencyVerdict{Policy: policy, Mode: residency.ModeEnforce}, []string{"compliant with " + policy}, true},
		{"not checked", platform.UncheckedVerdict("the mlplatform provider is not configured"), []string{"NOT verified", "not configured"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := platformSummary(tc.verdict, "uae-training", nodes, "uae-features", "Created")
			if strings.HasPrefix(s, "compliant") != tc.compl {
				t.Errorf("summary %q: starts with compliant = %v, want %v", s, !tc.compl, tc.compl)
			}
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("summary %q lacks %q", s, w)
				}
			}
			if !strings.Contains(s, "1 of 2 nodes running in mec1-az1") || !strings.Contains(s, "feature store uae-features: Created") {
				t.Errorf("summary %q lacks the parts' state", s)
			}
		})
	}
}

// Without a training input the platform has no training cluster, as the
// core's default (and the uae-ml-platform module's training_enabled) says;
// with one, even empty, every default it fills in is the core's.
func TestPlatformDefaults(t *testing.T) {
	d := platform.DefaultPlatform()
	features := PlatformFeatures{OfflineStoreS3URI: "s3://uae-data/features", RoleARN: testRole}

	if d.TrainingEnabled {
		t.Fatalf("core default TrainingEnabled = true; this test expects the platform to start without a GPU cluster")
	}
	none := PlatformArgs{Features: features}
	if c, ok := none.clusterArgs("uae", nil); ok || c != nil {
		t.Errorf("without training: cluster %+v, want none", c)
	}

	empty := PlatformArgs{Training: &PlatformTraining{}, Features: features}
	tags, err := empty.tags("uae")
	if err != nil {
		t.Fatal(err)
	}
	c, ok := empty.clusterArgs("uae", tags)
	if !ok || c == nil {
		t.Fatal("training {}: no cluster")
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"name", deref(c.Name), "uae-training"},
		{"instanceType", c.InstanceType, d.TrainingInstanceType},
		{"nodeCount", c.NodeCount, d.TrainingNodeCount},
		{"zoneId", deref(c.ZoneID), d.TrainingZoneID},
		{"image", c.Image, d.TrainingImage},
		{"rootVolume.sizeGib", deref(c.RootVolume.SizeGiB), d.TrainingRootVolumeGiB},
		{"tags", c.Tags, map[string]string{"platform": "uae", "data-classification": d.DataClassification}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("training %s = %v, want the core's %v", tc.name, tc.got, tc.want)
		}
	}

	s := empty.featureStoreArgs("uae", tags)
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"name", deref(s.Name), "uae-features"},
		{"recordIdentifierFeatureName", s.RecordIdentifierFeatureName, d.RecordIdentifier},
		{"eventTimeFeatureName", s.EventTimeFeatureName, d.EventTime},
		{"features", s.Features, []FeatureDefinition{{Name: d.RecordIdentifier, Type: "String"}, {Name: d.EventTime, Type: "Fractional"}}},
		{"onlineStore.enabled", s.OnlineStore != nil && s.OnlineStore.Enabled, d.OnlineStore},
		{"offlineStore.tableFormat", deref(s.OfflineStore.TableFormat), d.OfflineTableFormat},
		{"allowDestructiveChanges", deref(s.AllowDestructiveChanges), d.AllowDestructiveChanges},
		{"tags", s.Tags, map[string]string{"platform": "uae", "data-classification": d.DataClassification}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("features %s = %v, want the core's %v", tc.name, tc.got, tc.want)
		}
	}

	// What the user gives wins.
	given := PlatformArgs{
		Training: &PlatformTraining{InstanceType: ptr("g6.12xlarge"), NodeCount: ptr(1), SubnetID: ptr("subnet-0123"), Image: ptr("ami-0123456789abcdef0"), RootVolumeGiB: ptr(100)},
		Features: PlatformFeatures{OfflineStoreS3URI: "s3://uae-data/features", RoleARN: testRole, TableFormat: ptr("Glue"), OnlineStore: ptr(false)},
	}
	c, _ = given.clusterArgs("uae", tags)
	if c.InstanceType != "g6.12xlarge" || c.NodeCount != 1 || c.ZoneID != nil || c.Image != "ami-0123456789abcdef0" || deref(c.RootVolume.SizeGiB) != 100 {
		t.Errorf("given training: %+v", c)
	}
	s = given.featureStoreArgs("uae", tags)
	if deref(s.OfflineStore.TableFormat) != "Glue" || s.OnlineStore != nil {
		t.Errorf("given features: table format %q, online store %+v", deref(s.OfflineStore.TableFormat), s.OnlineStore)
	}
}

// The data classification tag: the input, else the one in tags, else the
// core's default; the platform tag is the component's name.
func TestPlatformTags(t *testing.T) {
	d := platform.DefaultPlatform()
	for _, tc := range []struct {
		name    string
		args    PlatformArgs
		want    map[string]string
		wantErr string
	}{
		{"default", PlatformArgs{Tags: map[string]string{"team": "ml"}},
			map[string]string{"team": "ml", "platform": "uae", "data-classification": d.DataClassification}, ""},
		{"from tags", PlatformArgs{Tags: map[string]string{"data-classification": "restricted", "platform": "other"}},
			map[string]string{"platform": "uae", "data-classification": "restricted"}, ""},
		{"input wins", PlatformArgs{DataClassification: ptr("internal"), Tags: map[string]string{"data-classification": "restricted"}},
			map[string]string{"platform": "uae", "data-classification": "internal"}, ""},
		{"invalid", PlatformArgs{DataClassification: ptr("secret")}, nil, "dataClassification: data classification \"secret\": use public, internal, confidential, restricted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := maps.Clone(tc.args.Tags)
			got, err := tc.args.tags("uae")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("tags = %v (%v), want %v", got, err, tc.want)
			}
			if !maps.Equal(tc.args.Tags, in) {
				t.Errorf("the input tags changed: %v", tc.args.Tags)
			}
		})
	}
}

// Without a training cluster the summary says so, and still gives the
// verdict and the feature store.
func TestPlatformSummary_noTraining(t *testing.T) {
	v := platform.ResidencyVerdict{Policy: "residency AE", Mode: residency.ModeEnforce}
	s := platformSummary(v, "", nil, "uae-features", "Created")
	for _, w := range []string{"compliant with residency AE", "no training cluster (no `training` input)", "feature store uae-features: Created"} {
		if !strings.Contains(s, w) {
			t.Errorf("summary %q lacks %q", s, w)
		}
	}
	if strings.Contains(s, "nodes running") {
		t.Errorf("summary %q speaks of nodes", s)
	}
}
