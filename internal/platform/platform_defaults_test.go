package platform

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/mlplatform/mlplatform/internal/residency"
)

// uaeModuleDir is modules/uae-ml-platform, from this package's directory.
const uaeModuleDir = "../../modules/uae-ml-platform"

// The module's defaults are the core's: every field of PlatformDefaults
// with a module counterpart equals that variable's default, every variable
// of the module with a default has a field, the jurisdiction its guard
// expects is PlatformJurisdiction, its data classifications are
// PlatformDataClassifications and the tags it sets are PlatformTagKeys.
// HCL cannot import Go: this test is what keeps the two one set.
func TestPlatformDefaults_module(t *testing.T) {
	for _, p := range platformModuleProblems(uaeModuleDir, DefaultPlatform()) {
		t.Error(p)
	}
}

// The module check finds each kind of difference, naming the variable and
// both values: a changed default, a default of a module the platform calls,
// a default the core lacks, the guard's jurisdiction, a data
// classification, a tag, and an argument that overrides a called module's
// default the core names.
func TestPlatformDefaults_moduleCatches(t *testing.T) {
	modules := t.TempDir()
	for _, m := range []string{"uae-ml-platform", "feature-store"} {
		copyDir(t, filepath.Join("../../modules", m), filepath.Join(modules, m))
	}
	// edit replaces the first old after after (the start of a block) in file.
	edit := func(file, after, old, new string) {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		i := strings.Index(s, after)
		j := strings.Index(s[max(i, 0):], old)
		if i < 0 || j < 0 {
			t.Fatalf("%s lacks %q after %q: update this test", file, old, after)
		}
		s = s[:i+j] + new + s[i+j+len(old):]
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	uae := filepath.Join(modules, "uae-ml-platform")
	vars, main := filepath.Join(uae, "variables.tf"), filepath.Join(uae, "main.tf")
	edit(vars, `variable "training_enabled"`, "false", "true")
	edit(vars, `variable "training_instance_type"`, `"p5en.48xlarge"`, `"p5.48xlarge"`)
	edit(vars, `variable "data_classification"`, `"restricted"]`, `"secret"]`)
	edit(vars, `variable "inference_validation"`, `variable "inference_validation"`, "variable \"spot\" {\n  type    = bool\n  default = true\n}\n\nvariable \"inference_validation\"")
	edit(main, `resource "mlplatform_residency_guard"`, `jurisdiction == "AE"`, `jurisdiction == "SA"`)
	edit(main, "locals {", "platform            = var.name\n", "platform            = var.name\n    project             = var.name\n")
	edit(main, `module "features"`, "offline_bucket = var.data_bucket\n", "offline_bucket = var.data_bucket\n  event_time     = \"ts\"\n")
	edit(filepath.Join(modules, "feature-store", "variables.tf"), `variable "table_format"`, `"Iceberg"`, `"Glue"`)

	got := strings.Join(platformModuleProblems(uae, DefaultPlatform()), "\n")
	t.Logf("problems:\n%s", got)
	for _, want := range []string{
		`variable "training_enabled": default true, core PlatformDefaults.TrainingEnabled false`,
		`variable "training_instance_type": default "p5.48xlarge", core PlatformDefaults.TrainingInstanceType "p5en.48xlarge"`,
		`module "features" (../feature-store) variable "table_format": default "Glue", core PlatformDefaults.OfflineTableFormat "Iceberg"`,
		`module "features" sets event_time`,
		`variable "spot": default true, core none`,
		`guard expects jurisdiction "SA", core PlatformJurisdiction "AE"`,
		`variable "data_classification" accepts ["public","internal","confidential","secret"], core PlatformDataClassifications ["public","internal","confidential","restricted"]`,
		`tags ["cost-center","data-classification","owner","platform","project"], core PlatformTagKeys ["cost-center","data-classification","owner","platform"]`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q; got:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 8 {
		t.Errorf("%d problems, want 8:\n%s", n, got)
	}
}

func TestCheckPlatformPolicy(t *testing.T) {
	ae, _ := residency.LookupJurisdiction("AE")
	other := residency.Jurisdiction{Code: "SA", Name: "Saudi Arabia"}
	for _, tc := range []struct {
		name       string
		policy     residency.Policy
		allowAudit bool
		want       string // "" for accepted
	}{
		{"enforce", residency.Policy{Jurisdiction: ae, Mode: residency.ModeEnforce}, false, ""},
		{"audit refused", residency.Policy{Jurisdiction: ae, Mode: residency.ModeAudit}, false, "residency mode is audit"},
		{"audit allowed", residency.Policy{Jurisdiction: ae, Mode: residency.ModeAudit}, true, ""},
		{"other jurisdiction", residency.Policy{Jurisdiction: other, Mode: residency.ModeEnforce}, true, "jurisdiction is SA: this platform expects jurisdiction AE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckPlatformPolicy(tc.policy, tc.allowAudit)
			if tc.want == "" && err != nil {
				t.Errorf("refused: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
	for _, c := range PlatformDataClassifications() {
		if err := CheckPlatformDataClassification(c); err != nil {
			t.Error(err)
		}
	}
	if err := CheckPlatformDataClassification("secret"); err == nil || !strings.Contains(err.Error(), "public, internal, confidential, restricted") {
		t.Errorf("secret: %v", err)
	}
	if d := DefaultPlatform(); CheckPlatformDataClassification(d.DataClassification) != nil {
		t.Errorf("default data classification %q is not one", d.DataClassification)
	}
}

// tfModule is a Terraform module's top-level blocks, parsed.
type tfModule struct {
	dir    string
	vars   map[string]*hclsyntax.Block // variable blocks by name
	calls  map[string]*hclsyntax.Block // module blocks by name
	blocks []*hclsyntax.Block          // every block
}

func parseTFModule(dir string) (*tfModule, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no .tf files in %s (%v)", dir, err)
	}
	m := &tfModule{dir: dir, vars: map[string]*hclsyntax.Block{}, calls: map[string]*hclsyntax.Block{}}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		file, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos)
		if diags.HasErrors() {
			return nil, diags
		}
		for _, b := range file.Body.(*hclsyntax.Body).Blocks {
			m.blocks = append(m.blocks, b)
			switch {
			case b.Type == "variable" && len(b.Labels) == 1:
				m.vars[b.Labels[0]] = b
			case b.Type == "module" && len(b.Labels) == 1:
				m.calls[b.Labels[0]] = b
			}
		}
	}
	return m, nil
}

// varDefault is a variable's default: ok false when it declares none.
func varDefault(b *hclsyntax.Block) (cty.Value, bool, error) {
	a, ok := b.Body.Attributes["default"]
	if !ok {
		return cty.NilVal, false, nil
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, true, diags
	}
	return v, true, nil
}

// emptyDefault reports whether v is a default that gives nothing: null, or
// an empty list or map.
func emptyDefault(v cty.Value) bool {
	return v.IsNull() || (v.IsKnown() && v.CanIterateElements() && v.LengthInt() == 0)
}

func showCty(v cty.Value) string {
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return v.GoString()
	}
	return string(b)
}

func showGo(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// platformModuleProblems compares the module in dir with the core: each
// problem names the variable (and the module it belongs to) and both values.
func platformModuleProblems(dir string, d PlatformDefaults) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	m, err := parseTFModule(dir)
	if err != nil {
		return []string{err.Error()}
	}
	where := filepath.Base(dir)
	called := map[string]*tfModule{}
	covered := map[string]bool{}

	dv := reflect.ValueOf(d)
	for i := range dv.NumField() {
		field := dv.Type().Field(i)
		tag := field.Tag.Get("module")
		if tag == "" {
			add("core PlatformDefaults.%s has no module tag", field.Name)
			continue
		}
		if tag == "-" {
			continue
		}
		mod, modWhere, name := m, where, tag
		if call, v, ok := strings.Cut(tag, "."); ok {
			name = v
			cb, ok := m.calls[call]
			if !ok {
				add("%s: no module %q, which core PlatformDefaults.%s names", where, call, field.Name)
				continue
			}
			if _, set := cb.Body.Attributes[name]; set {
				add("%s: module %q sets %s, whose default (%s) is core PlatformDefaults.%s: leave it to the default", where, call, name, showGo(dv.Field(i).Interface()), field.Name)
				continue
			}
			src, ok := cb.Body.Attributes["source"]
			sv, diags := src.Expr.Value(nil)
			if !ok || diags.HasErrors() || sv.Type() != cty.String {
				add("%s: module %q has no literal source", where, call)
				continue
			}
			modWhere = fmt.Sprintf("%s: module %q (%s)", where, call, sv.AsString())
			if called[call] == nil {
				if called[call], err = parseTFModule(filepath.Join(dir, sv.AsString())); err != nil {
					add("%s: %v", modWhere, err)
					continue
				}
			}
			mod = called[call]
		} else {
			covered[name] = true
		}
		vb, ok := mod.vars[name]
		if !ok {
			add("%s: no variable %q, which core PlatformDefaults.%s is the default of", modWhere, name, field.Name)
			continue
		}
		v, has, err := varDefault(vb)
		switch {
		case err != nil:
			add("%s variable %q: default: %v", modWhere, name, err)
			continue
		case !has || v.IsNull():
			add("%s variable %q: no default, core PlatformDefaults.%s %s", modWhere, name, field.Name, showGo(dv.Field(i).Interface()))
			continue
		}
		got := reflect.New(field.Type)
		if err := gocty.FromCtyValue(v, got.Interface()); err != nil || !reflect.DeepEqual(got.Elem().Interface(), dv.Field(i).Interface()) {
			add("%s variable %q: default %s, core PlatformDefaults.%s %s", modWhere, name, showCty(v), field.Name, showGo(dv.Field(i).Interface()))
		}
	}

	// A variable whose default gives something is a default of the platform:
	// the core must have it.
	names := make([]string, 0, len(m.vars))
	for n := range m.vars {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v, has, err := varDefault(m.vars[n])
		if covered[n] || !has || err != nil || emptyDefault(v) {
			continue
		}
		add("%s variable %q: default %s, core none: add it to PlatformDefaults", where, n, showCty(v))
	}

	// The jurisdiction the guard's preconditions expect.
	var jurisdictions []string
	for _, b := range m.blocks {
		_ = hclsyntax.VisitAll(b.Body, func(n hclsyntax.Node) hcl.Diagnostics {
			op, ok := n.(*hclsyntax.BinaryOpExpr)
			if !ok || op.Op != hclsyntax.OpEqual {
				return nil
			}
			tr, ok := op.LHS.(*hclsyntax.ScopeTraversalExpr)
			if !ok || len(tr.Traversal) == 0 {
				return nil
			}
			if last, ok := tr.Traversal[len(tr.Traversal)-1].(hcl.TraverseAttr); !ok || last.Name != "jurisdiction" {
				return nil
			}
			if v, diags := op.RHS.Value(nil); !diags.HasErrors() && v.Type() == cty.String {
				jurisdictions = append(jurisdictions, v.AsString())
			}
			return nil
		})
	}
	if len(jurisdictions) == 0 {
		add("%s: no precondition compares the provider's jurisdiction with core PlatformJurisdiction %q", where, PlatformJurisdiction)
	}
	for _, j := range jurisdictions {
		if j != PlatformJurisdiction {
			add("%s: the guard expects jurisdiction %q, core PlatformJurisdiction %q", where, j, PlatformJurisdiction)
		}
	}

	// The data classifications the variable accepts: contains([...], var.data_classification).
	if vb, ok := m.vars["data_classification"]; !ok {
		add("%s: no variable \"data_classification\"", where)
	} else if got, ok := containsList(vb); !ok {
		add("%s variable \"data_classification\": no contains([...], var.data_classification) validation", where)
	} else if !slices.Equal(got, PlatformDataClassifications()) {
		add("%s variable \"data_classification\" accepts %s, core PlatformDataClassifications %s", where, showGo(got), showGo(PlatformDataClassifications()))
	}

	// The tags the module sets over var.tags: locals { tags = merge(var.tags, { ... }) }.
	if got, ok := mergedTagKeys(m); !ok {
		add("%s: no locals tags = merge(var.tags, {...})", where)
	} else if want := slices.Sorted(slices.Values(PlatformTagKeys())); !slices.Equal(got, want) {
		add("%s: locals sets tags %s, core PlatformTagKeys %s", where, showGo(got), showGo(want))
	}
	return problems
}

// containsList is the list of a variable's contains([...], var.NAME)
// validation.
func containsList(vb *hclsyntax.Block) ([]string, bool) {
	var out []string
	found := false
	_ = hclsyntax.VisitAll(vb.Body, func(n hclsyntax.Node) hcl.Diagnostics {
		call, ok := n.(*hclsyntax.FunctionCallExpr)
		if !ok || call.Name != "contains" || len(call.Args) != 2 {
			return nil
		}
		if _, ok := call.Args[0].(*hclsyntax.TupleConsExpr); !ok {
			return nil
		}
		v, diags := call.Args[0].Value(nil)
		if diags.HasErrors() {
			return nil
		}
		found = true
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if e.Type() == cty.String {
				out = append(out, e.AsString())
			}
		}
		return nil
	})
	return out, found
}

// mergedTagKeys are the keys of the object merged over var.tags in the
// module's locals `tags`, sorted.
func mergedTagKeys(m *tfModule) ([]string, bool) {
	for _, b := range m.blocks {
		if b.Type != "locals" {
			continue
		}
		a, ok := b.Body.Attributes["tags"]
		if !ok {
			continue
		}
		call, ok := a.Expr.(*hclsyntax.FunctionCallExpr)
		if !ok || call.Name != "merge" || len(call.Args) != 2 {
			return nil, false
		}
		obj, ok := call.Args[1].(*hclsyntax.ObjectConsExpr)
		if !ok {
			return nil, false
		}
		var keys []string
		for _, it := range obj.Items {
			k := hcl.ExprAsKeyword(it.KeyExpr)
			if k == "" {
				if v, diags := it.KeyExpr.Value(nil); !diags.HasErrors() && v.Type() == cty.String {
					k = v.AsString()
				}
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys, true
	}
	return nil, false
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(from, "*.tf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
