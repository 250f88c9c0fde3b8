// Command gen-sdk writes pulumi/schema.json from the provider and generates
// the SDKs from it with Pulumi's code generators (pkg/v3/codegen), in process:
// Go under pulumi/sdk/go, and TypeScript and Python under pulumi/sdk/nodejs
// and pulumi/sdk/python. Run it from the repository root:
//
//	go run ./pulumi/cmd/gen-sdk
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	nodejsgen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	pythongen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"

	mlpulumi "github.com/mlplatform/mlplatform/pulumi"
)

const tool = "mlplatform-gen-sdk"

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "gen-sdk:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dir := flag.String("dir", "pulumi", "directory of schema.json; SDKs go to DIR/sdk/<language>")
	langs := flag.String("languages", "go,nodejs,python", "SDKs to generate")
	flag.Parse()

	raw, err := mlpulumi.Schema(ctx)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "schema.json"), raw, 0o644); err != nil {
		return fmt.Errorf("writing schema: %w", err)
	}
	for _, lang := range strings.Split(*langs, ",") {
		var spec schema.PackageSpec
		if err := json.Unmarshal(raw, &spec); err != nil {
			return fmt.Errorf("decoding schema: %w", err)
		}
		pkg, diags, err := schema.BindSpec(spec, nil, schema.ValidationOptions{})
		if err != nil {
			return fmt.Errorf("binding schema: %w", err)
		}
		if diags.HasErrors() {
			return fmt.Errorf("binding schema: %v", diags)
		}
		var files map[string][]byte
		switch lang {
		case "go":
			files, err = gogen.GeneratePackage(tool, pkg, nil)
		case "nodejs":
			files, err = nodejsgen.GeneratePackage(tool, pkg, nil, nil, false, nil)
		case "python":
			files, err = pythongen.GeneratePackage(tool, pkg, nil, nil)
		default:
			return fmt.Errorf("unknown language %q", lang)
		}
		if err != nil {
			return fmt.Errorf("generating the %s SDK: %w", lang, err)
		}
		if err := write(filepath.Join(*dir, "sdk", lang), files); err != nil {
			return err
		}
	}
	return nil
}

// write replaces out with files.
func write(out string, files map[string][]byte) error {
	if err := os.RemoveAll(out); err != nil {
		return fmt.Errorf("clearing %s: %w", out, err)
	}
	for name, data := range files {
		path := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}
