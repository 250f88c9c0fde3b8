// Package pulumitest runs the real Pulumi engine in tests: it finds the
// Pulumi CLI, builds the provider plugin, and gives each test an engine with
// a local file backend and a home of its own. The Pulumi end-to-end tests
// and the front-end conformance suite share it. It is a package of its own,
// apart from acctest, so that test binaries without Pulumi do not link the
// automation API.
package pulumitest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// CLIVersion is the Pulumi CLI release scripts/pulumi-cli.sh builds, unless
// $PULUMI_CLI_VERSION says otherwise.
const CLIVersion = "v3.200.0"

// PluginPackage is the provider plugin's main package.
const PluginPackage = "github.com/mlplatform/mlplatform/pulumi/cmd/pulumi-resource-mlplatform"

// FindCLI finds the Pulumi CLI: $PULUMI_CLI (scripts/test.sh sets it to
// what scripts/pulumi-cli.sh built), else where scripts/pulumi-cli.sh caches
// it ($PULUMI_CLI_DIR, else the user cache directory's
// mlplatform/pulumi-<version>/bin).
func FindCLI() (string, error) {
	candidates := []string{os.Getenv("PULUMI_CLI")}
	version := os.Getenv("PULUMI_CLI_VERSION")
	if version == "" {
		version = CLIVersion
	}
	if dir := os.Getenv("PULUMI_CLI_DIR"); dir != "" {
		candidates = append(candidates, filepath.Join(dir, "pulumi"))
	}
	if cache, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, filepath.Join(cache, "mlplatform", "pulumi-"+version, "bin", "pulumi"))
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if fi, err := os.Stat(c); err == nil && !fi.IsDir() {
			return filepath.Abs(c)
		}
	}
	return "", errors.New("the Pulumi CLI is not built: run scripts/pulumi-cli.sh (or set PULUMI_CLI)")
}

// CLI is FindCLI for a test: without the CLI the test is skipped, or fails
// when $CI is true.
func CLI(t testing.TB) string {
	t.Helper()
	cli, err := FindCLI()
	if err == nil {
		return cli
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(err)
	}
	t.Skip("skipping: " + err.Error())
	return ""
}

// Engine is the real Pulumi CLI with a local file backend and a home of its
// own, and the plugins of a directory first on PATH.
type Engine struct {
	Cmd  auto.PulumiCommand
	Env  map[string]string
	Home string
}

// NewEngine prepares the CLI at cli with the plugins in pluginDir. Its
// environment (Env) is passed to the CLI explicitly (auto.EnvVars), never
// set on the process, so tests with engines of their own run in parallel.
func NewEngine(t testing.TB, cli, pluginDir string) Engine {
	t.Helper()
	// The CLI from its own root (ROOT/bin/pulumi), its version not checked.
	cliRoot := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cliRoot, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cli, filepath.Join(cliRoot, "bin", "pulumi")); err != nil {
		t.Fatal(err)
	}
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: cliRoot, SkipVersionCheck: true})
	if err != nil {
		t.Fatalf("pulumi CLI: %v", err)
	}
	backend, home := t.TempDir(), t.TempDir()
	env := map[string]string{
		"PATH":                     pluginDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PULUMI_BACKEND_URL":       "file://" + backend,
		"PULUMI_CONFIG_PASSPHRASE": "e2e-test",
		"PULUMI_HOME":              home,
		"PULUMI_SKIP_UPDATE_CHECK": "true",
		"PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
		"PULUMI_DIY_BACKEND_NO_LEGACY_WARNING":     "true",
	}
	return Engine{Cmd: cmd, Env: env, Home: home}
}

// Backend is the engine's backend URL (file://...).
func (e Engine) Backend() string { return e.Env["PULUMI_BACKEND_URL"] }

// InlineStack creates (or selects) stack of project with an inline Go
// program run in the test process: no language plugin is needed.
func (e Engine) InlineStack(ctx context.Context, t testing.TB, project, stack string, program pulumi.RunFunc) auto.Stack {
	t.Helper()
	s, err := auto.UpsertStackInlineSource(ctx, stack, project, program,
		auto.Pulumi(e.Cmd), auto.PulumiHome(e.Home), auto.EnvVars(e.Env), auto.SecretsProvider("passphrase"),
		auto.Project(workspace.Project{Name: tokens.PackageName(project), Runtime: workspace.NewProjectRuntimeInfo("go", nil), Backend: &workspace.ProjectBackend{URL: e.Backend()}}))
	if err != nil {
		t.Fatalf("creating stack %s/%s: %v", project, stack, err)
	}
	return s
}

// PluginDirEnv names a directory holding a pulumi-resource-mlplatform
// built already (make test builds it once for every test).
const PluginDirEnv = "ACCTEST_PULUMI_PLUGIN_DIR"

// BuildPlugin returns a directory holding pulumi-resource-mlplatform and
// nothing else (put it first on the engine's PATH): $ACCTEST_PULUMI_PLUGIN_DIR
// when set, else a directory of the test's own where it builds it.
func BuildPlugin(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(PluginDirEnv); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "pulumi-resource-mlplatform")); err != nil {
			t.Fatalf("%s: %v", PluginDirEnv, err)
		}
		return dir
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "pulumi-resource-mlplatform"), PluginPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the provider plugin: %v\n%s", err, out)
	}
	return dir
}
