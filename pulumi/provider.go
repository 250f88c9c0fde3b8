// Package pulumi is the pulumi-go-provider adapter of mlplatform: it
// translates Pulumi inputs to the domain specs in internal/ and errors to
// check failures and errors. Validation, residency, AWS calls and waiting
// live in internal/, shared with the Terraform provider.
package pulumi

import (
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// Name is the Pulumi package name; resource tokens are mlplatform:index:<Type>.
const Name = "mlplatform"

// GoImportPath is where the generated Go SDK lives.
const GoImportPath = "github.com/mlplatform/mlplatform/pulumi/sdk/go/mlplatform"

// Provider returns the mlplatform Pulumi provider.
func Provider() (p.Provider, error) {
	return infer.NewProviderBuilder().
		WithDisplayName("mlplatform").
		WithDescription("Provision AI/ML infrastructure on AWS (GPU training clusters, feature stores) with data residency enforced at preview time.").
		WithKeywords("pulumi", "mlplatform", "aws", "ml", "gpu", "residency", "category/cloud").
		WithHomepage("https://github.com/mlplatform/mlplatform").
		WithRepository("https://github.com/mlplatform/mlplatform").
		WithPublisher("mlplatform").
		WithLicense("Apache-2.0").
		WithNamespace("mlplatform").
		WithLanguageMap(map[string]any{
			"go":     map[string]any{"importBasePath": GoImportPath},
			"nodejs": map[string]any{"packageName": "@mlplatform/mlplatform"},
			"python": map[string]any{"packageName": "pulumi_mlplatform"},
		}).
		WithConfig(infer.Config(&Config{})).
		WithResources(resources()...).
		WithComponents(components()...).
		WithModuleMap(map[tokens.ModuleName]tokens.ModuleName{"pulumi": "index"}).
		Build()
}

func resources() []infer.InferredResource {
	return []infer.InferredResource{
		infer.Resource(ResidencyGuard{}),
		infer.Resource(GpuCluster{}),
		infer.Resource(FeatureStore{}),
	}
}

func components() []infer.InferredComponent {
	return []infer.InferredComponent{
		infer.ComponentF(NewPlatform),
	}
}
