// Command terraform-provider-mlplatform serves the mlplatform Terraform provider.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/mlplatform/mlplatform/provider"
)

// version is set at build time through -ldflags "-X main.version=...".
var version = "dev"

//go:generate go tool tfplugindocs generate --provider-name mlplatform

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()
	return providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/mlplatform/mlplatform",
		Debug:   debug,
	})
}
