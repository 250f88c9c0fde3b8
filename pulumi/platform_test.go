package pulumi

import (
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
