package pulumi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/pulumitest"
)

// nodeDeps returns the directory holding node_modules with @pulumi/pulumi,
// typescript and @types/node at the versions scripts/sdk-check.sh pins
// (installing them once into the user's cache from npm). Without node or
// npm the test is skipped, or fails when $CI is true.
func nodeDeps(t *testing.T) string {
	t.Helper()
	skip := func(msg string) string {
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("skipping: " + msg)
		return ""
	}
	if _, err := exec.LookPath("node"); err != nil {
		return skip("node is not installed")
	}
	out, err := exec.Command("bash", filepath.Join("..", "scripts", "sdk-check.sh"), "node-deps").Output()
	if err != nil {
		return skip("installing the npm packages: " + err.Error())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// tsProgram lays out examples/pulumi/typescript as its user would after
// `npm install` and `tsc` (in a workspace): node_modules with the pinned npm
// packages and the TypeScript SDK built from pulumi/sdk/nodejs as
// @mlplatform/pulumi, and the program compiled to bin/ (its package.json's
// main).
func tsProgram(t *testing.T, deps string) string {
	t.Helper()
	work := t.TempDir()
	prog := filepath.Join(work, "program")
	run := func(dir string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run(".", "cp", "-r", filepath.Join("..", "examples", "pulumi", "typescript"), prog)
	// node_modules beside the program and the SDK's sources, as in a
	// workspace: both resolve packages from it.
	nm := filepath.Join(work, "node_modules")
	if err := os.MkdirAll(filepath.Join(nm, "@mlplatform"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(deps, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(deps, "node_modules", e.Name()), filepath.Join(nm, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	tsc := filepath.Join(deps, "node_modules", ".bin", "tsc")
	sdk := filepath.Join(work, "sdk")
	run(".", "cp", "-r", filepath.Join("sdk", "nodejs"), sdk)
	built := filepath.Join(nm, "@mlplatform", "pulumi")
	run(sdk, tsc, "-p", "tsconfig.json", "--outDir", built)
	run(".", "cp", filepath.Join("sdk", "nodejs", "package.json"), built)
	run(prog, tsc, "-p", "tsconfig.json")
	return prog
}

// buildNodeHost builds the test language host (pulumi/internal/nodehost) as
// pulumi-language-nodejs into dir.
func buildNodeHost(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "pulumi-language-nodejs"), "./internal/nodehost")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Node.js language host: %v\n%s", err, out)
	}
}

// TestE2E_typescript runs examples/pulumi/typescript, a TypeScript program
// of the Platform component and a ResidencyGuard, through the real engine
// with the real @pulumi/pulumi Node.js SDK and the generated TypeScript SDK,
// configured from stack config (the default provider, as most programs do):
// with the bucket in eu-west-1 the preview fails with the residency message
// and nothing is written; with the bucket in me-central-1 the stack applies
// and destroys cleanly. The language host that starts node is a launcher of
// our own (see pulumi/internal/nodehost); the rest is real.
func TestE2E_typescript(t *testing.T) {
	cli := pulumitest.CLI(t)
	deps := nodeDeps(t)
	h := acctest.ParallelEmulator(t)
	createBucket(t, h, acctest.Region, "uae-ts-data")
	createBucket(t, h, "eu-west-1", "eu-ts-data")
	pluginDir := pulumitest.BuildPlugin(t)
	buildNodeHost(t, pluginDir)
	prog := tsProgram(t, deps)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e := pulumitest.NewEngine(t, cli, pluginDir)
	stack, err := auto.UpsertStackLocalSource(ctx, "dev", prog,
		auto.Pulumi(e.Cmd), auto.PulumiHome(e.Home), auto.EnvVars(e.Env), auto.SecretsProvider("passphrase"))
	if err != nil {
		t.Fatalf("creating stack: %v", err)
	}
	set := func(key, value string) {
		t.Helper()
		if err := stack.SetConfigWithOptions(ctx, key, auto.ConfigValue{Value: value}, &auto.ConfigOptions{Path: true}); err != nil {
			t.Fatalf("setting %s: %v", key, err)
		}
	}
	for svc, url := range h.Endpoints() {
		set("mlplatform:endpoints."+svc, url)
	}
	set("featureStoreRoleArn", testRole)
	set("kmsKeyArn", createKey(t, h, acctest.Region)) // jurisdiction AE requires customer managed keys by default

	// 1. The bucket outside the jurisdiction: preview fails with the
	// residency message and rule, and nothing was written.
	set("offlineStoreBucket", "eu-ts-data")
	h.Shim.ResetLog()
	var out strings.Builder
	_, err = stack.Preview(ctx, optpreview.ProgressStreams(&out), optpreview.ErrorProgressStreams(&out))
	if err == nil {
		t.Fatalf("preview with the bucket in eu-west-1 succeeded; want a residency failure\n%s", out.String())
	}
	t.Logf("preview output:\n%s", out.String())
	// The guard and the feature store both name the bucket; the engine stops
	// at whichever it checks first.
	assertEngineWording(t, out.String(), "s3Uris[0]", "s3://eu-ts-data", "offlineStore.s3Uri", "s3://eu-ts-data/features")
	assertNoWrites(t, h)

	// 2. In the jurisdiction, up creates the platform and the guard.
	set("offlineStoreBucket", "uae-ts-data")
	out.Reset()
	up, err := stack.Up(ctx, optup.ProgressStreams(&out))
	if err != nil {
		t.Fatalf("up: %v\n%s", err, out.String())
	}
	if nodes, _ := up.Outputs["clusterNodeIds"].Value.([]any); len(nodes) != 2 {
		t.Errorf("clusterNodeIds = %v, want 2 nodes", up.Outputs["clusterNodeIds"].Value)
	}
	if arn, _ := up.Outputs["featureGroupArn"].Value.(string); !strings.Contains(arn, "feature-group/uae-features") {
		t.Errorf("featureGroupArn = %q", arn)
	}
	if n := liveNodes(t, h, "uae-training"); n != 2 {
		t.Errorf("%d live nodes after up, want 2", n)
	}

	// 3. Destroy removes everything.
	out.Reset()
	if _, err := stack.Destroy(ctx, optdestroy.ProgressStreams(&out)); err != nil {
		t.Fatalf("destroy: %v\n%s", err, out.String())
	}
	if n := liveNodes(t, h, "uae-training"); n != 0 {
		t.Errorf("%d live nodes after destroy, want 0", n)
	}
	assertNothingLeft(t, h)
}
