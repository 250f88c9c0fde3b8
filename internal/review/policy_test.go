package review

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRules(t *testing.T) {
	rs, err := ParseRules("residency, destroy-stateful,cost-increase>500,gpu-increase>8")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.String())
	}
	if strings.Join(got, ",") != "residency,destroy-stateful,cost-increase>500,gpu-increase>8" {
		t.Errorf("rules %v", got)
	}
	for _, bad := range []string{"residency>1", "cost-increase", "cost-increase>-1", "cost-increase>abc", "nonsense", "gpu-increase"} {
		if _, err := ParseRules(bad); err == nil {
			t.Errorf("ParseRules(%q) accepted", bad)
		}
	}
}

// TestFailOnRules checks every rule both ways on real plans.
func TestFailOnRules(t *testing.T) {
	tests := []struct {
		plan, rules string
		pass        bool
		reason      string
	}{
		{"platform-create", "residency", true, ""},
		{"platform-audit", "residency", false, "outside jurisdiction AE"},
		{"platform-create", "residency-unknown", false, "not decidable from the plan"},
		{"platform-update", "destroy", true, ""},
		{"platform-replace", "destroy", false, "2 resource(s) deleted or replaced"},
		{"platform-update", "destroy-stateful", true, ""},
		{"platform-destroy", "destroy-stateful", false, "mlplatform_feature_store.customers is deleted"},
		{"aws-create", "cost-increase>1000", false, "no known price"},  // the endpoint's price is unknown: cannot bound the rise
		{"aws-create", "cost-increase>500", false, "rises by $587.50"}, // known part alone is over
		{"platform-destroy", "cost-increase>0", true, ""},              // only the old side is unknown: a decrease
		{"platform-create", "gpu-increase>16", true, ""},
		{"platform-create", "gpu-increase>15", false, "adds 16 GPUs"},
		{"aws-create", "unknown-price", false, "1 price(s) unknown"},
		{"platform-update", "residency,destroy,destroy-stateful,gpu-increase>8", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.plan+"/"+tt.rules, func(t *testing.T) {
			rules, err := ParseRules(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			r := reviewFixture(t, tt.plan, Options{FailOn: rules})
			if r.Policy.Passed != tt.pass {
				t.Fatalf("passed = %v, want %v: %v", r.Policy.Passed, tt.pass, r.Policy.Failed)
			}
			if !tt.pass && !strings.Contains(strings.Join(r.Policy.Failed, "; "), tt.reason) {
				t.Errorf("failed %v, want a reason containing %q", r.Policy.Failed, tt.reason)
			}
		})
	}
	// Residency cannot pass when it was not evaluated.
	p, _ := ParsePlan([]byte(`{"format_version":"1.2","resource_changes":[]}`))
	rules, _ := ParseRules("residency")
	r, _ := Review(context.Background(), p, Options{FailOn: rules})
	if r.Policy.Passed {
		t.Error("--fail-on residency passed without a jurisdiction")
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	_ = os.WriteFile(garbage, []byte("not json"), 0o644)
	other := filepath.Join(dir, "other.json")
	_ = os.WriteFile(other, []byte(`{"hello":"world"}`), 0o644)
	plan := func(n string) string { return filepath.Join("testdata", "plans", n+".json") }
	tests := []struct {
		name string
		args []string
		code int
		out  string // in stdout
		err  string // in stderr
	}{
		{"ok markdown", []string{"review", plan("platform-create")}, ExitOK, "### mlplatform review", ""},
		{"ok json", []string{"review", "--format", "json", plan("platform-create")}, ExitOK, `"schema_version": "1"`, ""},
		{"policy passes", []string{"review", "--fail-on", "destroy", plan("platform-update")}, ExitOK, ":white_check_mark: passed", ""},
		{"policy fails", []string{"review", "--fail-on", "residency,destroy-stateful,cost-increase>500", plan("platform-audit")}, ExitPolicyFailed, ":x: failed", "policy: residency"},
		{"policy fails, json still written", []string{"review", "--format", "json", "--fail-on", "destroy-stateful", plan("platform-destroy")}, ExitPolicyFailed, `"passed": false`, "destroy-stateful"},
		{"stdin", []string{"review", "-"}, ExitOK, "terraform `1.11.4`", ""},
		{"flags after the file", []string{"review", plan("platform-create"), "--format", "json"}, ExitOK, `"schema_version": "1"`, ""},
		{"two files", []string{"review", plan("platform-create"), plan("platform-update")}, ExitBadInput, "", "got 2 arguments"},
		{"help", []string{"review", "--help"}, ExitOK, "Exit codes:", ""},
		{"top help", []string{"help"}, ExitOK, "mlplatform review", ""},
		{"no file", []string{"review"}, ExitBadInput, "", "want one plan file"},
		{"missing file", []string{"review", filepath.Join(dir, "nope.json")}, ExitBadInput, "", "reading the plan"},
		{"not JSON", []string{"review", garbage}, ExitBadInput, "", "not a JSON object"},
		{"not a plan", []string{"review", other}, ExitBadInput, "", "neither"},
		{"bad rule", []string{"review", "--fail-on", "cheap", plan("platform-create")}, ExitBadInput, "", "unknown rule"},
		{"bad format", []string{"review", "--format", "yaml", plan("platform-create")}, ExitBadInput, "", "--format"},
		{"bad flag", []string{"review", "--nope", plan("platform-create")}, ExitBadInput, "", "flag provided but not defined"},
		{"unknown command", []string{"deploy"}, ExitBadInput, "", "Usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			stdin, _ := os.Open(plan("platform-create"))
			defer stdin.Close()
			err := Main(context.Background(), tt.args, stdin, &stdout, &stderr)
			code := ExitOK
			var ee *ExitError
			if errors.As(err, &ee) {
				code = ee.Code
			} else if err != nil {
				t.Fatalf("error without an exit code: %v", err)
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d (err %v, stderr %s)", code, tt.code, err, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.out) {
				t.Errorf("stdout lacks %q:\n%.400s", tt.out, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.err) {
				t.Errorf("stderr lacks %q:\n%s", tt.err, stderr.String())
			}
		})
	}
}

func TestHelpExplainsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"review", "--help"}, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--format", "--output", "--fail-on", "--jurisdiction", "--max-chars", "residency-unknown", "cost-increase>N", "gpu-increase>N", "unknown-price", "destroy-stateful", "0  ", "1  ", "2  ", "Examples:", "pulumi preview --json"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}
