package pulumi

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

// The core's limits reach Pulumi: a 33-bit iops and a tag in the
// provider's namespace fail Check on their property, nothing truncated.
func TestGpuCluster_checkLimits(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	s := newServer(t, h, awsManagedKeys(nil))
	for _, tc := range []struct {
		name     string
		inputs   property.Map
		property string
		reason   string
	}{
		{"iops beyond 32 bits", gpuClusterInputs("lim", 1, map[string]property.Value{"rootVolume": property.New(property.NewMap(map[string]property.Value{
			"sizeGib": property.New(200.0), "iops": property.New(4294970296.0)}))}), "rootVolume.iops", "out of range"},
		{"reserved tag", gpuClusterInputs("lim", 1, map[string]property.Value{"tags": property.New(property.NewMap(map[string]property.Value{
			"mlplatform:cluster": property.New("other")}))}), `tags["mlplatform:cluster"]`, "Reserved tag key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check, err := s.Check(p.CheckRequest{Urn: urn("GpuCluster", "lim"), Inputs: tc.inputs})
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			found := false
			for _, f := range check.Failures {
				found = found || (f.Property == tc.property && strings.Contains(f.Reason, tc.reason))
			}
			if !found {
				t.Errorf("failures = %+v, want one on %s containing %q", check.Failures, tc.property, tc.reason)
			}
		})
	}
	assertNoWrites(t, h)
}

// Values of other resources unknown during preview (a tag's value, a
// security group id) are checked at apply, not reported missing.
func TestGpuCluster_checkUnknownElements(t *testing.T) {
	h := acctest.ParallelEmulator(t)
	s := newServer(t, h, awsManagedKeys(map[string]property.Value{"requiredTags": strings_("team")}))
	in := gpuClusterInputs("unk", 1, map[string]property.Value{
		"tags":             property.New(property.NewMap(map[string]property.Value{"team": property.New(property.Computed)})),
		"securityGroupIds": property.New(property.NewArray([]property.Value{property.New(property.Computed)})),
	})
	check, err := s.Check(p.CheckRequest{Urn: urn("GpuCluster", "unk"), Inputs: in})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if len(check.Failures) != 0 {
		t.Errorf("failures = %+v, want none: unknown values are checked at apply", check.Failures)
	}
	assertNoWrites(t, h)
}
