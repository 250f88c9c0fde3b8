package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	mlpulumi "github.com/mlplatform/mlplatform/pulumi"
)

func TestFixImports_typescript(t *testing.T) {
	// What the codegen writes on Go 1.26: nested modules import the root
	// one level too shallow; config/index.ts's "./vars" is right.
	files := map[string][]byte{
		"utilities.ts":    []byte(`import * as pulumi from "@pulumi/pulumi";`),
		"index.ts":        []byte(`import * as utilities from "./utilities";` + "\n" + `const c = require("./config");`),
		"config/index.ts": []byte(`export * from "./vars";`),
		"config/vars.ts":  []byte(`import * as inputs from "./types/input";` + "\n" + `import * as utilities from "./utilities";`),
		"types/index.ts":  []byte(`import * as utilities from "./utilities";` + "\n" + `import * as input from "./input";`),
		"types/input.ts":  []byte(`import * as inputs from "./types/input";`),
		"a/b/deep.ts":     []byte(`import * as utilities from "../utilities";`),
	}
	if n := fixImports("nodejs", files); n != 5 {
		t.Errorf("rewrote %d imports, want 5", n)
	}
	want := map[string]string{
		"index.ts":        `import * as utilities from "./utilities";` + "\n" + `const c = require("./config");`,
		"config/index.ts": `export * from "./vars";`,
		"config/vars.ts":  `import * as inputs from "../types/input";` + "\n" + `import * as utilities from "../utilities";`,
		"types/index.ts":  `import * as utilities from "../utilities";` + "\n" + `import * as input from "./input";`,
		"types/input.ts":  `import * as inputs from "../types/input";`,
		"a/b/deep.ts":     `import * as utilities from "../../utilities";`,
	}
	for name, w := range want {
		if got := string(files[name]); got != w {
			t.Errorf("%s:\n got %s\nwant %s", name, got, w)
		}
	}
	// Idempotent: correct imports stay.
	if n := fixImports("nodejs", files); n != 0 {
		t.Errorf("second pass rewrote %d imports", n)
	}
}

func TestFixImports_python(t *testing.T) {
	files := map[string][]byte{
		"pkg/__init__.py":          []byte("from . import _utilities\nfrom .provider import *\n"),
		"pkg/_utilities.py":        []byte(""),
		"pkg/outputs.py":           []byte("from . import _utilities\n"),
		"pkg/provider.py":          []byte(""),
		"pkg/config/__init__.py":   []byte("from .vars import _ExportableConfig\n"),
		"pkg/config/__init__.pyi":  []byte("from . import _utilities\nfrom .. import outputs as _root_outputs\n"),
		"pkg/config/vars.py":       []byte("import pulumi\nfrom . import _utilities\nfrom .. import outputs as _root_outputs\n"),
		"pkg/config/not_python.md": []byte("from . import _utilities\n"),
	}
	if n := fixImports("python", files); n != 2 {
		t.Errorf("rewrote %d imports, want 2", n)
	}
	want := map[string]string{
		"pkg/__init__.py":          "from . import _utilities\nfrom .provider import *\n",
		"pkg/config/__init__.py":   "from .vars import _ExportableConfig\n",
		"pkg/config/__init__.pyi":  "from .. import _utilities\nfrom .. import outputs as _root_outputs\n",
		"pkg/config/vars.py":       "import pulumi\nfrom .. import _utilities\nfrom .. import outputs as _root_outputs\n",
		"pkg/config/not_python.md": "from . import _utilities\n",
	}
	for name, w := range want {
		if got := string(files[name]); got != w {
			t.Errorf("%s:\n got %q\nwant %q", name, got, w)
		}
	}
}

// TestSDKFresh fails when pulumi/schema.json or a committed SDK differs from
// what gen-sdk generates now. Regenerate with: go run ./pulumi/cmd/gen-sdk
func TestSDKFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("generating the SDKs takes a few seconds")
	}
	dir := filepath.Join("..", "..")
	raw, err := schemaBytes(t)
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, lang := range []string{"go", "nodejs", "python"} {
		files, err := generate(raw, lang)
		if err != nil {
			t.Fatal(err)
		}
		diff, err := compare(filepath.Join(dir, "sdk", lang), files)
		if err != nil {
			t.Fatal(err)
		}
		stale = append(stale, diff...)
	}
	if len(stale) > 0 {
		t.Fatalf("the committed SDKs are stale; regenerate with go run ./pulumi/cmd/gen-sdk:\n  %s", strings.Join(stale, "\n  "))
	}
}

func schemaBytes(t *testing.T) ([]byte, error) {
	t.Helper()
	return mlpulumi.Schema(context.Background())
}

// The SDKs ask the engine for the plugin version the build stamps on the
// plugin (VERSION in the GNUmakefile).
func TestVersionMatchesMakefile(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "GNUmakefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("GNUmakefile sets no VERSION")
	}
	if string(m[1]) != version {
		t.Errorf("gen-sdk generates SDKs for plugin version %s, the GNUmakefile builds %s", version, m[1])
	}
}
