// Command gen-sdk writes pulumi/schema.json from the provider and generates
// the SDKs from it with Pulumi's code generators (pkg/v3/codegen), in process:
// Go under pulumi/sdk/go, and TypeScript and Python under pulumi/sdk/nodejs
// and pulumi/sdk/python. The relative imports the TypeScript and Python
// generators get wrong on Go 1.26 are repaired (see imports.go). Run it from
// the repository root:
//
//	go run ./pulumi/cmd/gen-sdk            # regenerate
//	go run ./pulumi/cmd/gen-sdk -check     # fail when the committed SDKs are stale
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	gogen "github.com/pulumi/pulumi/pkg/v3/codegen/go"
	nodejsgen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	pythongen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"

	mlpulumi "github.com/mlplatform/mlplatform/pulumi"
)

const tool = "mlplatform-gen-sdk"

// version is the plugin version the SDKs carry (the `version` they send to
// the provider and ask the engine for); keep it in step with VERSION in the
// GNUmakefile.
const version = "0.1.0"

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "gen-sdk:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	dir := flag.String("dir", "pulumi", "directory of schema.json; SDKs go to DIR/sdk/<language>")
	langs := flag.String("languages", "go,nodejs,python", "SDKs to generate")
	check := flag.Bool("check", false, "write nothing; fail when schema.json or an SDK differs from what would be generated")
	flag.Parse()

	raw, err := mlpulumi.Schema(ctx)
	if err != nil {
		return err
	}
	var stale []string
	if *check {
		if old, err := os.ReadFile(filepath.Join(*dir, "schema.json")); err != nil || !bytes.Equal(old, raw) {
			stale = append(stale, filepath.Join(*dir, "schema.json"))
		}
	} else if err := os.WriteFile(filepath.Join(*dir, "schema.json"), raw, 0o644); err != nil {
		return fmt.Errorf("writing schema: %w", err)
	}
	for _, lang := range strings.Split(*langs, ",") {
		files, err := generate(raw, lang)
		if err != nil {
			return err
		}
		out := filepath.Join(*dir, "sdk", lang)
		if *check {
			diff, err := compare(out, files)
			if err != nil {
				return err
			}
			stale = append(stale, diff...)
			continue
		}
		if err := write(out, files); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("stale, regenerate with go run ./pulumi/cmd/gen-sdk:\n  %s", strings.Join(stale, "\n  "))
	}
	return nil
}

// generate returns the files of one language's SDK for the schema raw, at
// the plugin version, with the relative imports repaired.
func generate(raw []byte, lang string) (map[string][]byte, error) {
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("decoding schema: %w", err)
	}
	// The SDKs carry the plugin version (package.json, setup.py,
	// pulumi-plugin.json) and send it with every resource.
	spec.Version = version
	opts := map[string]any{}
	if raw, ok := spec.Language[lang]; ok {
		if err := json.Unmarshal(raw, &opts); err != nil {
			return nil, fmt.Errorf("decoding the %s options of the schema: %w", lang, err)
		}
	}
	opts["respectSchemaVersion"] = true
	b, err := json.Marshal(opts)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s options: %w", lang, err)
	}
	if spec.Language == nil {
		spec.Language = map[string]schema.RawMessage{}
	}
	spec.Language[lang] = b
	pkg, diags, err := schema.BindSpec(spec, nil, schema.ValidationOptions{})
	if err != nil {
		return nil, fmt.Errorf("binding schema: %w", err)
	}
	if diags.HasErrors() {
		return nil, fmt.Errorf("binding schema: %v", diags)
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
		return nil, fmt.Errorf("unknown language %q", lang)
	}
	if err != nil {
		return nil, fmt.Errorf("generating the %s SDK: %w", lang, err)
	}
	fixImports(lang, files)
	return files, nil
}

// compare lists the files under out that differ from files, are missing, or
// are not generated.
func compare(out string, files map[string][]byte) ([]string, error) {
	var diff []string
	for name, data := range files {
		old, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !bytes.Equal(old, data) {
			diff = append(diff, filepath.Join(out, name))
		}
	}
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(out, p)
		if err != nil {
			return err
		}
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			diff = append(diff, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("reading %s: %w", out, err)
	}
	sort.Strings(diff)
	return diff, nil
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
