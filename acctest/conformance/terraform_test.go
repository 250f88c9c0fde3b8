package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/provider"
)

// providerAddress is the provider's registry address.
const providerAddress = "registry.terraform.io/mlplatform/mlplatform"

// terraformDriver runs steps through the real Terraform CLI, with the
// provider served from this process (the reattach mode
// terraform-plugin-testing uses too) so no binary is built.
type terraformDriver struct {
	h        *acctest.Harness
	sc       scenario
	tf       string
	dir      string
	reattach string
}

func newTerraformDriver(t *testing.T, h *acctest.Harness, sc scenario) *terraformDriver {
	t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is not set: acctest.Setup sets it")
	}
	return &terraformDriver{h: h, sc: sc, tf: tf, dir: t.TempDir(), reattach: serveProvider(t)}
}

func (d *terraformDriver) name() string { return "terraform" }

// serveProvider serves the provider in this process until the test ends
// and returns TF_REATTACH_PROVIDERS for it.
func serveProvider(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfgCh := make(chan *plugin.ReattachConfig, 1)
	closeCh := make(chan struct{})
	go func() {
		_ = tf6server.Serve(providerAddress, providerserver.NewProtocol6(provider.New("test")()),
			tf6server.WithDebug(ctx, cfgCh, closeCh), tf6server.WithGoPluginLogger(hclog.NewNullLogger()))
	}()
	var cfg *plugin.ReattachConfig
	select {
	case cfg = <-cfgCh:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the provider server did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-closeCh:
		case <-time.After(10 * time.Second):
		}
	})
	b, err := json.Marshal(map[string]any{providerAddress: map[string]any{
		"Protocol": string(cfg.Protocol), "ProtocolVersion": cfg.ProtocolVersion, "Pid": cfg.Pid, "Test": true,
		"Addr": map[string]string{"Network": cfg.Addr.Network(), "String": cfg.Addr.String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tfMessage is one line of Terraform's machine-readable UI.
type tfMessage struct {
	Type       string `json:"type"`
	Diagnostic *struct {
		Severity string `json:"severity"`
		Summary  string `json:"summary"`
		Detail   string `json:"detail"`
		Address  string `json:"address"`
	} `json:"diagnostic"`
	Change *struct {
		Resource struct {
			Addr string `json:"addr"`
		} `json:"resource"`
		Action string `json:"action"`
	} `json:"change"`
}

// tfRun is what one terraform command said.
type tfRun struct {
	err      error
	errors   []string // error diagnostics
	warnings []string
	actions  map[string]string // resource address -> planned action
	raw      string
}

func (d *terraformDriver) terraform(ctx context.Context, dir string, args ...string) tfRun {
	cmd := exec.CommandContext(ctx, d.tf, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+d.reattach, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_CLI_ARGS=", "TF_LOG=")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	r := tfRun{err: cmd.Run(), actions: map[string]string{}}
	r.raw = out.String() + stderr.String()
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m tfMessage
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Type == "diagnostic" && m.Diagnostic != nil:
			text := m.Diagnostic.Summary + ": " + m.Diagnostic.Detail
			if m.Diagnostic.Severity == "error" {
				r.errors = append(r.errors, text)
			} else {
				r.warnings = append(r.warnings, text)
			}
		case m.Type == "planned_change" && m.Change != nil:
			r.actions[m.Change.Resource.Addr] = m.Change.Action
		}
	}
	if r.err != nil && len(r.errors) == 0 {
		r.errors = append(r.errors, r.err.Error()+": "+stderr.String())
	}
	return r
}

// config renders the step as a configuration: the provider, a
// terraform_data per unknown value, and the resource.
func (d *terraformDriver) config(idx int, st step, f *fixtures) string {
	var b strings.Builder
	b.WriteString("terraform {\n  required_providers {\n    mlplatform = { source = \"mlplatform/mlplatform\" }\n  }\n}\n\n")
	var res strings.Builder
	keys := mapsKeys(st.residency)
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&res, "%s = %s\n", k, hcl(st.residency[k], nil))
	}
	b.WriteString(d.h.ProviderConfig(res.String()))
	var helpers []string
	body := hclBody(st.inputs(f), func(v any) string {
		name := fmt.Sprintf("unknown_%d_%d", idx, len(helpers))
		helpers = append(helpers, fmt.Sprintf("resource \"terraform_data\" %q {\n  input = %s\n}\n", name, hcl(v, nil)))
		return "terraform_data." + name + ".output"
	})
	for _, hlp := range helpers {
		b.WriteString("\n" + hlp)
	}
	fmt.Fprintf(&b, "\nresource %q %q {\n%s}\n", d.sc.kind.tf, d.sc.resource, body)
	return b.String()
}

func (d *terraformDriver) addr() string { return d.sc.kind.tf + "." + d.sc.resource }

func (d *terraformDriver) step(ctx context.Context, t *testing.T, idx int, st step, f *fixtures) result {
	t.Helper()
	if st.importID != "" {
		return d.importStep(ctx, t, idx, st, f)
	}
	cfg := d.config(idx, st, f)
	if err := os.WriteFile(filepath.Join(d.dir, "main.tf"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if idx == 0 {
		if r := d.terraform(ctx, d.dir, "init", "-input=false", "-no-color"); r.err != nil {
			t.Fatalf("terraform init: %v\n%s", r.err, r.raw)
		}
	}
	res := result{log: "configuration:\n" + cfg}
	plan := d.terraform(ctx, d.dir, "plan", "-input=false", "-lock=false", "-json", "-out=tfplan")
	res.warnings = append(res.warnings, plan.warnings...)
	res.log += "\nplan:\n" + plan.raw
	if plan.err != nil {
		res.outcome, res.message = refused, strings.Join(plan.errors, "\n")
		return res
	}
	res.outcome = outcomeOfAction(plan.actions[d.addr()])
	res.plannedOutputs = d.planned(ctx, t, st.knownAtPlan)
	if len(plan.actions) == 0 {
		return res
	}
	apply := d.terraform(ctx, d.dir, "apply", "-input=false", "-lock=false", "-json", "tfplan")
	res.warnings = append(res.warnings, apply.warnings...)
	res.log += "\napply:\n" + apply.raw
	if apply.err != nil {
		res.planned, res.outcome, res.atApply, res.message = res.outcome, refused, true, strings.Join(apply.errors, "\n")
		return res
	}
	res.outputs = d.outputs(ctx, t, st.outputs)
	return res
}

// outputs reads attrs of the resource from the state, as `terraform show
// -json` gives them.
func (d *terraformDriver) outputs(ctx context.Context, t *testing.T, attrs []string) map[string]string {
	t.Helper()
	return d.showAttrs(ctx, t, attrs, "show", "-json")
}

// planned reads attrs of the resource that the saved plan knows, from
// `terraform show -json tfplan` (planned_values leave unknown values out).
func (d *terraformDriver) planned(ctx context.Context, t *testing.T, attrs []string) map[string]string {
	t.Helper()
	return d.showAttrs(ctx, t, attrs, "show", "-json", "tfplan")
}

// showAttrs runs terraform with args (a show -json) and reads the string
// attrs of the resource from its root module's values: the state's
// (values) or the plan's (planned_values).
func (d *terraformDriver) showAttrs(ctx context.Context, t *testing.T, attrs []string, args ...string) map[string]string {
	t.Helper()
	if len(attrs) == 0 {
		return nil
	}
	cmd := exec.CommandContext(ctx, d.tf, args...)
	cmd.Dir = d.dir
	cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+d.reattach, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_CLI_ARGS=", "TF_LOG=")
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("terraform %s: %v", strings.Join(args, " "), err)
	}
	type module struct {
		RootModule struct {
			Resources []struct {
				Address string         `json:"address"`
				Values  map[string]any `json:"values"`
			} `json:"resources"`
		} `json:"root_module"`
	}
	var doc struct {
		Values        module `json:"values"`
		PlannedValues module `json:"planned_values"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("terraform %s: %v", strings.Join(args, " "), err)
	}
	out := map[string]string{}
	for _, m := range []module{doc.Values, doc.PlannedValues} {
		for _, r := range m.RootModule.Resources {
			if r.Address != d.addr() {
				continue
			}
			for _, a := range attrs {
				if s, ok := r.Values[a].(string); ok {
					out[a] = s
				}
			}
		}
	}
	return out
}

// importStep imports the resource into the state of a new working
// directory with the step's configuration, then plans: the plan must create,
// replace and delete nothing. Later steps go on in the new directory.
func (d *terraformDriver) importStep(ctx context.Context, t *testing.T, idx int, st step, f *fixtures) result {
	t.Helper()
	dir := t.TempDir()
	cfg := d.config(idx, st, f)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := d.terraform(ctx, dir, "init", "-input=false", "-no-color"); r.err != nil {
		t.Fatalf("terraform init: %v\n%s", r.err, r.raw)
	}
	d.dir = dir
	res := result{log: "configuration:\n" + cfg}
	imp := d.terraform(ctx, dir, "import", "-input=false", "-lock=false", "-no-color", d.addr(), st.importID)
	res.log += "\nimport:\n" + imp.raw
	if imp.err != nil {
		res.outcome, res.message = refused, imp.raw
		return res
	}
	plan := d.terraform(ctx, dir, "plan", "-input=false", "-lock=false", "-json")
	res.log += "\nplan after import:\n" + plan.raw
	res.warnings = append(res.warnings, plan.warnings...)
	if plan.err != nil {
		res.outcome, res.message = refused, strings.Join(plan.errors, "\n")
		return res
	}
	res.outcome = imported
	if a := plan.actions[d.addr()]; a == "create" || a == "replace" || a == "delete" {
		res.outcome = outcome("imported, but the next plan would " + a + " it")
	}
	return res
}

func outcomeOfAction(a string) outcome {
	switch a {
	case "":
		return noChange
	case "create":
		return created
	case "update":
		return updated
	case "replace":
		return replaced
	}
	return outcome(a)
}

// hclBody renders the attributes of a resource block; unknownRef renders an
// unknown value as a reference.
func hclBody(in map[string]any, unknownRef func(any) string) string {
	var b strings.Builder
	keys := mapsKeys(in)
	sort.Strings(keys)
	for _, k := range keys {
		if bs, ok := in[k].(blocks); ok {
			for _, blk := range bs {
				fmt.Fprintf(&b, "  %s {\n", k)
				for _, line := range strings.Split(strings.TrimRight(hclBody(blk, unknownRef), "\n"), "\n") {
					fmt.Fprintf(&b, "  %s\n", line)
				}
				b.WriteString("  }\n")
			}
			continue
		}
		fmt.Fprintf(&b, "  %s = %s\n", k, hcl(in[k], unknownRef))
	}
	return b.String()
}

// hcl renders a value as an HCL expression.
func hcl(v any, unknownRef func(any) string) string {
	switch x := v.(type) {
	case unknown:
		return unknownRef(x.v)
	case string:
		s, _ := json.Marshal(x)
		return strings.ReplaceAll(strings.ReplaceAll(string(s), "${", "$${"), "%{", "%%{")
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = hcl(e, unknownRef)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = hcl(e, unknownRef)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := mapsKeys(x)
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%q = %s", k, hcl(x[k], unknownRef))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	default:
		return fmt.Sprint(x)
	}
}

func mapsKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
