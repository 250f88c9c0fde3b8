// Package pulumi is the pulumi-go-provider adapter of mlplatform: it
// translates Pulumi inputs to the domain specs in internal/ and errors to
// check failures and errors. Validation, residency, AWS calls and waiting
// live in internal/, shared with the Terraform provider.
package pulumi

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// Name is the Pulumi package name; resource tokens are mlplatform:index:<Type>.
const Name = "mlplatform"

// GoImportPath is where the generated Go SDK lives.
const GoImportPath = "github.com/mlplatform/mlplatform/pulumi/sdk/go/mlplatform"

// Provider returns the mlplatform Pulumi provider.
func Provider() (p.Provider, error) {
	prov, err := infer.NewProviderBuilder().
		WithDisplayName("mlplatform").
		WithDescription("Provision AI/ML infrastructure on AWS (GPU training clusters, CPU footprints, SageMaker feature stores and serving endpoints, a residency guard, and the Platform component) with data residency enforced at preview time. "+
			"`"+platform.PollIntervalEnv+"` (a duration such as `200ms`) makes every wait poll at that interval instead of the intervals meant for AWS: for emulators and tests.").
		WithKeywords("pulumi", "mlplatform", "aws", "ml", "gpu", "residency", "category/cloud").
		WithHomepage("https://github.com/mlplatform/mlplatform").
		WithRepository("https://github.com/mlplatform/mlplatform").
		WithPublisher("mlplatform").
		WithLicense("Apache-2.0").
		WithNamespace("mlplatform").
		WithLanguageMap(map[string]any{
			"go":     map[string]any{"importBasePath": GoImportPath},
			"nodejs": map[string]any{"packageName": "@mlplatform/pulumi"},
			"python": map[string]any{"packageName": "pulumi_mlplatform"},
		}).
		WithConfig(infer.Config(&Config{})).
		WithResources(resources()...).
		WithComponents(components()...).
		WithModuleMap(map[tokens.ModuleName]tokens.ModuleName{"pulumi": "index"}).
		Build()
	if err != nil {
		return p.Provider{}, err
	}
	return withUnknownInputs(withRequestDetails(acceptSDKFields(prov))), nil
}

// Plugin returns the provider as the plugin binary serves it to the Pulumi
// engine: Provider, with check failures on nested properties worded for the
// engine's output (see forEngine). In-process tests use Provider, whose
// failures keep their property paths.
func Plugin() (p.Provider, error) {
	prov, err := Provider()
	if err != nil {
		return p.Provider{}, err
	}
	return engineFailures(prov), nil
}

// sdkFields are the properties the Pulumi engine and SDKs add to what a
// program declares: every SDK sends the plugin `version` of an explicit
// provider (the engine puts it at the root of the provider's inputs), and
// engines before the `__internal` map put `pluginDownloadURL` there too. No
// mlplatform resource or config declares a property of these names
// (TestSchemaReservedNames), so they are never user data.
var sdkFields = [...]string{"version", "pluginDownloadURL"}

// acceptSDKFields lets the provider's configuration and every resource
// accept what the SDKs send besides the declared properties. infer decodes
// Check inputs strictly (an unknown property is a check failure), so the
// fields are set aside before the inner Check; the provider's checked inputs
// get them back, since the engine reads the plugin version from them.
func acceptSDKFields(prov p.Provider) p.Provider {
	checkConfig, check := prov.CheckConfig, prov.Check
	prov.CheckConfig = func(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
		var kept map[string]property.Value
		req.Inputs, kept = withoutSDKFields(req.Inputs)
		req.State, _ = withoutSDKFields(req.State)
		resp, err := checkConfig(ctx, req)
		if err != nil || len(kept) == 0 {
			return resp, err
		}
		for k, v := range kept {
			resp.Inputs = resp.Inputs.Set(k, v)
		}
		return resp, nil
	}
	prov.Check = func(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
		req.Inputs, _ = withoutSDKFields(req.Inputs)
		req.State, _ = withoutSDKFields(req.State)
		return check(ctx, req)
	}
	return prov
}

// withoutSDKFields returns m without the SDK fields, and the fields it had.
func withoutSDKFields(m property.Map) (property.Map, map[string]property.Value) {
	var kept map[string]property.Value
	for _, k := range sdkFields {
		v, ok := m.GetOk(k)
		if !ok {
			continue
		}
		if kept == nil {
			kept = map[string]property.Value{}
		}
		kept[k] = v
		m = m.Delete(k)
	}
	return m, kept
}

func resources() []infer.InferredResource {
	return []infer.InferredResource{
		infer.Resource(ResidencyGuard{}),
		infer.Resource(GpuCluster{}),
		infer.Resource(FeatureStore{}),
		infer.Resource(CpuFootprint{}),
		infer.Resource(ServingEndpoint{}),
	}
}

func components() []infer.InferredComponent {
	return []infer.InferredComponent{
		infer.ComponentF(NewPlatform),
	}
}
