// Command terraform-provider-mlplatform serves the mlplatform Terraform provider.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

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

// defaultMemoryLimit is the soft limit on Go-managed memory when GOMEMLIMIT
// is not set. Terraform runs a provider process per command (and per
// provider configuration); its live heap is about 15 MB, and without a limit
// the collector lets it double before collecting. The limit is soft: past it
// the collector works harder, the process is never stopped.
const defaultMemoryLimit = 32 << 20

func run() error {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	if err := provider.QuietSDKLogs(os.Getenv, os.Setenv); err != nil {
		return err
	}
	var debugMode bool
	flag.BoolVar(&debugMode, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()
	var opts []tf6server.ServeOpt
	if debugMode {
		opts = append(opts, tf6server.WithManagedDebug())
	}
	return tf6server.Serve("registry.terraform.io/mlplatform/mlplatform", provider.NewProtocol6(version), opts...)
}
