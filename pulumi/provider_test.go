package pulumi

import (
	"context"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/acctest"
)

func TestMain(m *testing.M) { acctest.Main(m) }

// newServer serves the provider in-process, configured for the harness:
// every endpoint at the shim, jurisdiction AE, plus extra residency settings.
func newServer(t *testing.T, h *acctest.Harness, extraResidency map[string]property.Value) integration.Server {
	t.Helper()
	prov, err := Provider()
	if err != nil {
		t.Fatalf("building provider: %v", err)
	}
	s, err := integration.NewServer(context.Background(), Name, semver.MustParse("0.1.0"), integration.WithProvider(prov))
	if err != nil {
		t.Fatalf("starting provider server: %v", err)
	}
	eps := map[string]property.Value{}
	for k, v := range h.Endpoints() {
		eps[k] = property.New(v)
	}
	res := map[string]property.Value{"jurisdiction": property.New("AE")}
	for k, v := range extraResidency {
		res[k] = v
	}
	if err := s.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"region":      property.New(acctest.Region),
		"endpoints":   property.New(property.NewMap(eps)),
		"residency":   property.New(property.NewMap(res)),
		"defaultTags": property.New(property.NewMap(map[string]property.Value{"owner": property.New("ml-platform")})),
	})}); err != nil {
		t.Fatalf("configuring provider: %v", err)
	}
	return s
}

// awsManagedKeys is the residency setting of a test that is not about
// keys: it accepts AWS managed keys (requireCustomerManagedKeys = false),
// which jurisdiction AE refuses by default; extra settings are added.
// Tests about keys and residency keep the default.
func awsManagedKeys(extra map[string]property.Value) map[string]property.Value {
	out := map[string]property.Value{"requireCustomerManagedKeys": property.New(false)}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func urn(typ, name string) resource.URN {
	return resource.NewURN("test", "mlplatform", "", tokens.Type("mlplatform:index:"+typ), name)
}

func strings_(vs ...string) property.Value {
	arr := make([]property.Value, len(vs))
	for i, v := range vs {
		arr[i] = property.New(v)
	}
	return property.New(arr)
}

// assertNoWrites fails the test when anything but fixtures wrote to AWS.
func assertNoWrites(t *testing.T, h *acctest.Harness) {
	t.Helper()
	for _, c := range h.Shim.Writes() {
		t.Errorf("unexpected write: %s", c)
	}
}

func newUnconfigured(t *testing.T) integration.Server {
	t.Helper()
	prov, err := Provider()
	if err != nil {
		t.Fatalf("building provider: %v", err)
	}
	s, err := integration.NewServer(context.Background(), Name, semver.MustParse("0.1.0"), integration.WithProvider(prov))
	if err != nil {
		t.Fatalf("starting provider server: %v", err)
	}
	return s
}
