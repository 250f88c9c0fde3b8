package conformance

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/mlplatform/mlplatform/provider"
)

// architectureResources are the resources every name of ARCHITECTURE.md with
// Thing in it must exist for.
var architectureResources = []string{"GPUCluster", "CPUFootprint", "FeatureStore", "ServingEndpoint"}

// architectureExternal are names ARCHITECTURE.md uses that belong to the
// engines' libraries, not to this tree.
var architectureExternal = []string{"RequiresReplace"}

// declared lists the names declared at the top level of the tree's
// hand-written Go files (generated SDKs left out; of the tests, their
// Test functions): functions and
// types as Name, methods as Name and Recv.Name, variables and constants as
// Name.
func declared(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "pulumi/sdk" || rel == "bin" || strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		test := strings.HasSuffix(p, "_test.go")
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if test && !strings.HasPrefix(d.Name.Name, "Test") {
					continue
				}
				names[d.Name.Name] = true
				if d.Recv != nil && len(d.Recv.List) == 1 {
					typ := d.Recv.List[0].Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					if id, ok := typ.(*ast.Ident); ok {
						names[id.Name+"."+d.Name.Name] = true
					}
				}
			case *ast.GenDecl:
				if test {
					continue
				}
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

var (
	codeSpanRE = regexp.MustCompile("`([^`]+)`")
	// A call (Name( or Recv.Name(), a method of Env, a name of a core
	// package (platform.Name), or a lone exported identifier.
	callRE  = regexp.MustCompile(`\b((?:[A-Za-z]\w*\.)?[A-Z]\w*)\(`)
	envRE   = regexp.MustCompile(`\b(Env\.[A-Z]\w*)\b`)
	pkgRE   = regexp.MustCompile(`\b((?:platform|cloud|residency|catalog)\.[A-Z]\w*)\b`)
	identRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
)

// architectureNames returns the Go names a Markdown text names in code
// spans, Thing expanded for every resource.
func architectureNames(doc string) []string {
	var out []string
	add := func(n string) {
		// pkg.Name: the package qualifier is not a receiver.
		if i := strings.IndexByte(n, '.'); i > 0 && n[:i] != "Env" && n[0] >= 'a' && n[0] <= 'z' {
			n = n[i+1:]
		}
		if strings.Contains(n, "Thing") {
			for _, r := range architectureResources {
				out = append(out, strings.ReplaceAll(n, "Thing", r))
			}
			return
		}
		out = append(out, n)
	}
	for _, m := range codeSpanRE.FindAllStringSubmatch(doc, -1) {
		span := m[1]
		if strings.ContainsAny(span, "/ =") && !strings.Contains(span, "(") {
			continue // a path, a command, a setting
		}
		for _, c := range callRE.FindAllStringSubmatch(span, -1) {
			add(c[1])
		}
		for _, c := range envRE.FindAllStringSubmatch(span, -1) {
			add(c[1])
		}
		for _, c := range pkgRE.FindAllStringSubmatch(span, -1) {
			add(c[1])
		}
		if identRE.MatchString(span) {
			add(span)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// missingNames lists the names of doc that names does not hold.
func missingNames(doc string, names map[string]bool) []string {
	var missing []string
	for _, n := range architectureNames(doc) {
		if !names[n] && !slices.Contains(architectureExternal, n) {
			missing = append(missing, n)
		}
	}
	return missing
}

// TestArchitectureNames fails when ARCHITECTURE.md names a function, method
// or type the tree does not declare, or names a step of the resources'
// shape (a name with Thing in it) that one resource lacks.
func TestArchitectureNames(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := declared(t, root)
	checked := architectureNames(string(doc))
	if len(checked) < 40 {
		t.Fatalf("ARCHITECTURE.md names only %d Go names; the reader found too few to be reading it right: %v", len(checked), checked)
	}
	if missing := missingNames(string(doc), names); len(missing) > 0 {
		t.Errorf("ARCHITECTURE.md names what the code does not declare: %s", strings.Join(missing, ", "))
	}
}

// TestArchitectureNames_catches proves the check finds a missing function,
// a missing method of Env and a shape step one resource lacks.
func TestArchitectureNames_catches(t *testing.T) {
	names := map[string]bool{
		"ValidateGPUCluster": true, "ValidateCPUFootprint": true, "ValidateFeatureStore": true,
		"Env.FindGPUCluster": true, "RefusedError": true,
	}
	doc := "`ValidateThing(spec, unknown)`, `Env.FindGPUCluster`, `Env.DeleteGPUCluster(ctx)`, `platform.NoSuchThing`, `RefusedError`, `internal/platform`, `go list -deps`, `Gone(x)`"
	got := missingNames(doc, names)
	want := []string{"Env.DeleteGPUCluster", "Gone", "NoSuchCPUFootprint", "NoSuchFeatureStore", "NoSuchGPUCluster", "NoSuchServingEndpoint", "ValidateServingEndpoint"}
	if !slices.Equal(got, want) {
		t.Errorf("missing = %v, want %v", got, want)
	}
}

// TestReadmeListsEveryResource fails when the README leaves out a resource
// or data source the Terraform provider serves, or a resource or component
// the Pulumi plugin serves (its schema).
func TestReadmeListsEveryResource(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := providerserver.NewProtocol6WithError(provider.New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for name := range schemas.ResourceSchemas {
		want = append(want, name)
	}
	for name := range schemas.DataSourceSchemas {
		want = append(want, name)
	}
	raw, err := os.ReadFile(filepath.Join(root, "pulumi", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pulumiSchema struct {
		Resources map[string]json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(raw, &pulumiSchema); err != nil {
		t.Fatal(err)
	}
	for token := range pulumiSchema.Resources {
		want = append(want, token[strings.LastIndexByte(token, ':')+1:])
	}
	if len(want) < 10 {
		t.Fatalf("found only %v", want)
	}
	slices.Sort(want)
	for _, name := range want {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("README.md does not name `%s`", name)
		}
	}
}
