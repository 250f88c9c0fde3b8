package conformance

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/hwprobe/probe"
	"github.com/mlplatform/mlplatform/hwprobe/report"
	"github.com/mlplatform/mlplatform/hwprobe/validate"
	"github.com/mlplatform/mlplatform/internal/platform"
)

// module is the import path of this repository's module.
const module = "github.com/mlplatform/mlplatform"

// layer is a part of the tree and the module-internal packages its files may
// import (ARCHITECTURE.md). Paths are slash-separated and relative to the
// repository root; a file belongs to the first layer whose prefix matches.
type layer struct {
	name     string
	prefixes []string // directories ("provider/") or files ("main.go")
	// allowed lists the packages under internal/ and hwprobe/ the layer may
	// import, as "internal/platform" or "hwprobe/profile" (a package and the
	// packages below it); a package may always import itself and packages
	// below its own directory.
	allowed []string
}

// layers is the import rule. Front ends reach AWS only through
// internal/platform; the core's bottom (residency) is pure. The domain
// renders hwprobe's profiles and verifies identity and attestation documents
// with hwprobe's pure packages, and reads reports through a view of its own;
// never with the packages that probe a node (probe, gpu, bench, validate),
// nor with hwprobe/report, whose types bring them.
var layers = []layer{
	{name: "front end (Terraform)", prefixes: []string{"main.go", "provider/"}, allowed: []string{"internal/platform", "internal/residency", "internal/catalog"}},
	{name: "front end (Pulumi)", prefixes: []string{"pulumi/"}, allowed: []string{"internal/platform", "internal/residency", "internal/catalog"}},
	{name: "front end (CLI)", prefixes: []string{"cmd/"}, allowed: []string{"internal/platform", "internal/residency", "internal/catalog", "internal/review"}},
	{name: "hwprobe", prefixes: []string{"hwprobe/"}, allowed: []string{"hwprobe", "internal/residency", "internal/catalog", "internal/indexrange"}},
	{name: "core: review", prefixes: []string{"internal/review/"}, allowed: []string{"internal/platform", "internal/residency", "internal/catalog"}},
	{name: "core: platform", prefixes: []string{"internal/platform/"}, allowed: []string{"internal/cloud", "internal/residency", "internal/catalog", "internal/indexrange", "hwprobe/profile", "hwprobe/identity", "hwprobe/attest", "hwprobe/slurm", "hwprobe/kube"}},
	{name: "core: cloud", prefixes: []string{"internal/cloud/"}, allowed: []string{"internal/residency", "internal/catalog", "internal/indexrange"}},
	{name: "core: catalog", prefixes: []string{"internal/catalog/"}, allowed: []string{"internal/residency"}},
	{name: "core: residency", prefixes: []string{"internal/residency/"}, allowed: nil},
	{name: "core: index ranges", prefixes: []string{"internal/indexrange/"}, allowed: nil},
}

// violation is one import that breaks the rule.
type violation struct {
	file, layer, imp string
}

func (v violation) String() string {
	return fmt.Sprintf("%s (%s) imports %s", v.file, v.layer, v.imp)
}

// checkLayering parses the imports of every Go file under root (test files
// included; testdata, vendor and hidden directories left out) and returns
// the imports that break the rule, sorted by file. Files outside every layer
// (acctest/, the harness, may use every package) are not checked.
func checkLayering(root string) ([]violation, int, error) {
	var out []violation
	checked := 0
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		l, ok := layerOf(rel)
		if !ok {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", rel, err)
		}
		checked++
		own := strings.TrimSuffix(filepath.ToSlash(filepath.Dir(rel)), "/")
		for _, is := range f.Imports {
			imp, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %w", rel, is.Path.Value, err)
			}
			pkg, internal := strings.CutPrefix(imp, module+"/")
			if !internal || (!strings.HasPrefix(pkg, "internal/") && !strings.HasPrefix(pkg, "hwprobe/")) {
				continue
			}
			if pkg == own || strings.HasPrefix(own, pkg+"/") || strings.HasPrefix(pkg, own+"/") {
				continue
			}
			if !slices.ContainsFunc(l.allowed, func(a string) bool { return pkg == a || strings.HasPrefix(pkg, a+"/") }) {
				out = append(out, violation{file: rel, layer: l.name, imp: imp})
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b violation) int { return strings.Compare(a.String(), b.String()) })
	return out, checked, err
}

func layerOf(rel string) (layer, bool) {
	for _, l := range layers {
		for _, p := range l.prefixes {
			if rel == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p)) {
				return l, true
			}
		}
	}
	return layer{}, false
}

// repoRoot is the repository root: the directory above the test's that
// holds go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestLayering enforces the import rule of ARCHITECTURE.md on the whole
// tree, test files included: it lists every offending file and import.
func TestLayering(t *testing.T) {
	vs, checked, err := checkLayering(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	// The front ends and the core exist: a walk that checked almost nothing
	// would pass vacuously.
	if checked < 50 {
		t.Fatalf("checked only %d files; the walk missed the tree", checked)
	}
	if len(vs) > 0 {
		var b strings.Builder
		for _, v := range vs {
			b.WriteString("  " + v.String() + "\n")
		}
		t.Errorf("%d imports break the layering of ARCHITECTURE.md (front ends -> internal/platform -> internal/catalog, internal/residency, internal/cloud; "+
			"front ends never import internal/cloud: reach AWS through internal/platform, and in tests through acctest; the core uses only hwprobe's pure packages profile and identity):\n%s", len(vs), b.String())
	}
	t.Logf("checked the imports of %d files", checked)
}

// TestLayering_catches checks the rule on a tree of its own: every kind of
// offence is found, and allowed imports pass.
func TestLayering_catches(t *testing.T) {
	root := t.TempDir()
	write := func(rel, imports string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		src := "package x\n\nimport (\n" + imports + ")\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	imp := func(pkgs ...string) string {
		var b strings.Builder
		for _, p := range pkgs {
			fmt.Fprintf(&b, "\t_ %q\n", p)
		}
		return b.String()
	}
	m := module + "/"
	write("main.go", imp(m+"provider", m+"internal/cloud"))
	write("provider/resource_x.go", imp(m+"internal/platform", m+"internal/residency", "fmt"))
	write("provider/resource_x_test.go", imp(m+"internal/cloud", m+"acctest"))
	write("pulumi/x.go", imp(m+"internal/cloud"))
	write("pulumi/sdk/go/x.go", imp(m+"internal/platform"))
	write("cmd/mlplatform/main.go", imp(m+"internal/review", m+"internal/cloud"))
	write("internal/residency/r.go", imp(m+"internal/platform"))
	write("internal/catalog/c.go", imp(m+"internal/residency", m+"internal/cloud"))
	write("internal/cloud/c.go", imp(m+"internal/residency", m+"internal/platform"))
	write("internal/platform/p.go", imp(m+"internal/cloud", m+"internal/catalog", m+"internal/residency", m+"internal/platform/sub"))
	write("hwprobe/probe/p.go", imp(m+"internal/residency", m+"internal/platform", m+"hwprobe/identity"))
	write("internal/platform/v.go", imp(m+"hwprobe/profile", m+"hwprobe/report", m+"hwprobe/identity", m+"hwprobe/probe", m+"hwprobe/bench"))
	write("internal/cloud/v.go", imp(m+"hwprobe/profile"))
	write("provider/resource_y.go", imp(m+"hwprobe/profile"))
	write("acctest/a.go", imp(m+"internal/cloud"))
	write("provider/testdata/bad.go", imp(m+"internal/cloud"))

	vs, checked, err := checkLayering(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.file+" -> "+strings.TrimPrefix(v.imp, m))
	}
	want := []string{
		"cmd/mlplatform/main.go -> internal/cloud",
		"hwprobe/probe/p.go -> internal/platform",
		"internal/catalog/c.go -> internal/cloud",
		"internal/cloud/c.go -> internal/platform",
		"internal/cloud/v.go -> hwprobe/profile",
		"internal/platform/v.go -> hwprobe/bench",
		"internal/platform/v.go -> hwprobe/probe",
		"internal/platform/v.go -> hwprobe/report",
		"internal/residency/r.go -> internal/platform",
		"main.go -> internal/cloud",
		"provider/resource_x_test.go -> internal/cloud",
		"provider/resource_y.go -> hwprobe/profile",
		"pulumi/x.go -> internal/cloud",
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if checked != 14 { // acctest/ and testdata are not checked
		t.Errorf("checked %d files, want 14", checked)
	}
}

// nodeAgent are the packages that probe and benchmark a node: hwprobe's
// collectors, GPU access and benchmarks, and the NVML bindings. The
// plugins and the review CLI must not link them.
var nodeAgent = []string{module + "/hwprobe/probe", module + "/hwprobe/gpu", module + "/hwprobe/bench", module + "/hwprobe/validate", module + "/hwprobe/kube/node", "github.com/NVIDIA/go-nvml"}

// TestFrontEndsLinkNoNodeAgent checks what the Terraform provider, the
// Pulumi plugin and the review CLI link, not only what they import: none
// of them reaches hwprobe's node agent through any package (go list -deps).
// A failure names the import path that links it.
func TestFrontEndsLinkNoNodeAgent(t *testing.T) {
	root := repoRoot(t)
	for _, main := range []string{".", "./pulumi/cmd/pulumi-resource-mlplatform", "./cmd/mlplatform"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", main)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", main, err)
		}
		imports, top := parseDeps(string(out))
		if !slices.ContainsFunc(slices.Collect(maps.Keys(imports)), func(d string) bool { return strings.HasPrefix(d, module+"/internal/") }) {
			t.Fatalf("go list -deps %s lists none of internal/: %d packages, the check would pass vacuously", main, len(imports))
		}
		for _, msg := range nodeAgentPaths(imports, top) {
			t.Errorf("%s links node agent code: %s", main, msg)
		}
	}
}

// parseDeps reads go list -deps lines ("pkg import import ...") into each
// package's imports; the last line is the main package.
func parseDeps(out string) (imports map[string][]string, top string) {
	imports = map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		imports[f[0]], top = f[1:], f[0]
	}
	return imports, top
}

// nodeAgentPaths lists, for every node agent package linked from top, the
// shortest chain of imports that links it ("a -> b -> hwprobe/bench"),
// sorted.
func nodeAgentPaths(imports map[string][]string, top string) []string {
	isAgent := func(d string) bool {
		return slices.ContainsFunc(nodeAgent, func(bad string) bool { return d == bad || strings.HasPrefix(d, bad+"/") })
	}
	from := map[string]string{top: ""}
	queue := []string{top}
	var out []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if isAgent(p) {
			chain := []string{strings.TrimPrefix(p, module+"/")}
			for q := from[p]; q != ""; q = from[q] {
				chain = append([]string{strings.TrimPrefix(q, module+"/")}, chain...)
			}
			out = append(out, strings.Join(chain, " -> "))
			continue // the path to what it links is through it
		}
		for _, d := range imports[p] {
			if _, seen := from[d]; !seen {
				from[d] = p
				queue = append(queue, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestNodeAgentPaths_catches proves the chain is found through packages
// that are not themselves node agent code.
func TestNodeAgentPaths_catches(t *testing.T) {
	imports := map[string][]string{
		module:                               {module + "/internal/platform", "fmt"},
		module + "/internal/platform":        {module + "/hwprobe/report"},
		module + "/hwprobe/report":           {module + "/hwprobe/validate"},
		module + "/hwprobe/validate":         {module + "/hwprobe/bench", "github.com/NVIDIA/go-nvml/pkg/nvml"},
		module + "/hwprobe/bench":            nil,
		"github.com/NVIDIA/go-nvml/pkg/nvml": nil,
		"fmt":                                nil,
	}
	got := nodeAgentPaths(imports, module)
	want := []string{module + " -> internal/platform -> hwprobe/report -> hwprobe/validate"}
	if !slices.Equal(got, want) {
		t.Errorf("paths = %v, want %v", got, want)
	}
}

// The validation gate reads hwprobe's reports through a view of its own
// (platform.NodeReport): a report that hwprobe's report package wrote
// decodes into it field for field.
func TestGateReadsHwprobeReports(t *testing.T) {
	if platform.ReportSchema != report.SchemaVersion {
		t.Fatalf("the gate reads schema %q, hwprobe writes %q", platform.ReportSchema, report.SchemaVersion)
	}
	at := time.Date(2026, 11, 26, 23, 59, 0, 0, time.UTC)
	inv := &probe.Inventory{}
	inv.Host.Identity = &probe.Identity{Document: `{"instanceId":"i-1"}`, Signature: "c2ln", Verified: true}
	res := &validate.Result{
		Checks: []validate.Check{
			{ID: "cpu.feature", Subject: "amx_tile", Status: validate.Fail, Expected: "present", Observed: "absent", Reason: "amx_tile not available"},
			{ID: "host.identity_verified", Status: validate.NotRun, Reason: "no certificate", Optional: true},
		},
		Summary: validate.Summary{Pass: 3, Fail: 1, NotRun: 2, OptionalNotRun: 1},
		Exit:    1,
	}
	if platform.ChallengeTag != report.ChallengeTag || platform.AttestationSuffix != report.AttestationSuffix {
		t.Fatalf("the gate issues its challenge as tag %q and reads attestations at *%s; hwprobe reads tag %q and writes *%s",
			platform.ChallengeTag, platform.AttestationSuffix, report.ChallengeTag, report.AttestationSuffix)
	}
	written := report.New(inv, res, report.Options{ProfileSource: []byte("name = \"p\"\n"), Now: at})
	written.Challenge = strings.Repeat("c1", 32)
	body, err := json.Marshal(written)
	if err != nil {
		t.Fatal(err)
	}
	r, err := platform.ParseReport(body)
	if err != nil {
		t.Fatal(err)
	}
	want := report.New(inv, res, report.Options{ProfileSource: []byte("name = \"p\"\n"), Now: at})
	if !r.GeneratedAt.Equal(at) || r.Profile == nil || r.Profile.SHA256 != want.Profile.SHA256 {
		t.Errorf("generated %v, profile %+v; want %v, %s", r.GeneratedAt, r.Profile, at, want.Profile.SHA256)
	}
	if r.Challenge != written.Challenge {
		t.Errorf("challenge %q, want %q", r.Challenge, written.Challenge)
	}
	if r.Identity == nil || r.Identity.Document != inv.Host.Identity.Document || r.Identity.Signature != inv.Host.Identity.Signature {
		t.Errorf("identity %+v, want %+v", r.Identity, inv.Host.Identity)
	}
	v := r.Validation
	if v == nil || v.Exit != 1 || v.Summary.Pass != 3 || v.Summary.Fail != 1 || v.Summary.NotRun != 2 || len(v.Checks) != len(res.Checks) {
		t.Fatalf("validation %+v, want %+v", v, res)
	}
	for i, c := range res.Checks {
		got := v.Checks[i]
		if got.ID != c.ID || got.Subject != c.Subject || got.Status != string(c.Status) || got.Expected != c.Expected ||
			got.Observed != c.Observed || got.Reason != c.Reason || got.Optional != c.Optional {
			t.Errorf("check %d = %+v, want %+v", i, got, c)
		}
		if n := (platform.ReportCheck{ID: got.ID, Subject: got.Subject}).Name(); n != c.Name() {
			t.Errorf("check %d named %q by the gate, %q by hwprobe", i, n, c.Name())
		}
	}
}
