// Command pulumi-resource-mlplatform is the mlplatform Pulumi provider plugin.
package main

import (
	"context"
	"fmt"
	"os"

	mlpulumi "github.com/mlplatform/mlplatform/pulumi"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0"

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	prov, err := mlpulumi.Plugin()
	if err != nil {
		return fmt.Errorf("building the mlplatform provider: %w", err)
	}
	return prov.Run(ctx, mlpulumi.Name, version)
}
