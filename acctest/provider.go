package acctest

import (
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/mlplatform/mlplatform/provider"
)

// ProviderName is the provider's local name in test configurations.
const ProviderName = "mlplatform"

// ProtoV6ProviderFactories returns the TestCase.ProtoV6ProviderFactories
// that serve the mlplatform provider in process (version "test").
func ProtoV6ProviderFactories() map[string]func() (tfprotov6.ProviderServer, error) {
	return map[string]func() (tfprotov6.ProviderServer, error){
		ProviderName: provider.NewProtocol6WithError("test"),
	}
}
