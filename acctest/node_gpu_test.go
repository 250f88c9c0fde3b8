//go:build cgo

package acctest

import (
	"context"
	"testing"

	"github.com/mlplatform/mlplatform/hwprobe/gpu/nvmlmock"
	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/profile"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
	"github.com/mlplatform/mlplatform/internal/catalog"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// The mock machine that plays each type's GPUs is what the catalog
// declares for it: the GPU section of the profile the provider renders
// passes against the healthy mock (8 GPUs x 6 checks and the count), and
// fails with a link down.
func TestNVMLMockMatchesCatalog(t *testing.T) {
	cat, err := catalog.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"p4d.24xlarge", "p5.48xlarge", "p5en.48xlarge"} {
		t.Run(typ, func(t *testing.T) {
			it, ok := cat.Lookup(typ)
			if !ok {
				t.Fatalf("%s not in the catalog", typ)
			}
			text := platform.RenderProfile(platform.ProfileForInstanceType(platform.ValidationSpec{Checks: []string{platform.CheckGPU}},
				platform.NodeFactsFromCatalog(it, 0), platform.ProfileTarget{Name: "t"}))
			prof, diags := profile.Load("profile.hcl", []byte(text))
			if diags.HasErrors() || prof.GPU == nil || prof.GPU.MinNVLinkLinks == 0 {
				t.Fatalf("profile %v:\n%s", diags, text)
			}
			run := func(faults ...string) validate.Result {
				b := GPUNode(typ, faults...)
				spec, err := nvmlmock.Parse(b.NVMLMock)
				if err != nil {
					t.Fatal(err)
				}
				lib, err := nvmlmock.New(spec)
				if err != nil {
					t.Fatal(err)
				}
				// The real probe of this machine, its NVML the mock.
				inv, err := probe.Probe(context.Background(), probe.Config{NVML: lib})
				if err != nil {
					t.Fatal(err)
				}
				return validate.Validate(context.Background(), prof, inv, nil)
			}
			if r := run(); r.Exit != 0 || r.Summary.Pass != 49 || r.Summary.Fail != 0 || r.Summary.NotRun != 0 {
				t.Errorf("healthy %s mock against the %s profile: %+v\n%s", NVMLMockMachine(typ), typ, r.Summary, text)
			}
			if r := run("nvlink_down=2:5"); r.Exit != 1 || r.Summary.Fail != 1 {
				t.Errorf("a link down: %+v", r.Summary)
			}
		})
	}
	if GPUNode("g6.xlarge").NVMLMock != "" {
		t.Error("g6.xlarge has no mock machine")
	}
}
