package conformance

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/pulumitest"
)

// result is what a front end did in one step.
type result struct {
	outcome outcome
	// planned is what the plan said before a refusal at apply.
	planned  outcome
	atApply  bool   // the refusal came at apply
	message  string // the refusal's text
	warnings []string
	log      string // the commands' output, shown when the step fails
	// outputs are the step's outputs (step.outputs) as recorded.
	outputs map[string]string
	// plannedOutputs are the step's knownAtPlan attributes the plan knew.
	plannedOutputs map[string]string
}

// driver runs the steps of one scenario through one front end.
type driver interface {
	name() string
	step(ctx context.Context, t *testing.T, idx int, st step, f *fixtures) result
}

// row is one line of the suite's pass/fail table.
type row struct {
	scenario, frontEnd, step, verdict string
}

// TestConformance runs every scenario against the Terraform provider (the
// real Terraform CLI) and the Pulumi provider (the real Pulumi engine), each
// from an emulator of its own (so each has its own shim request log, which
// tells writes apart), in parallel. A scenario stops at its first failing
// step.
// Without TF_ACC it is skipped; without the Pulumi CLI its Pulumi half is
// skipped, or fails when $CI is true.
func TestConformance(t *testing.T) {
	if os.Getenv("TF_ACC") == "" {
		t.Skip("set TF_ACC=1 to run the conformance suite (Terraform CLI, Pulumi engine and moto)")
	}
	start := time.Now()
	cli, cliErr := pulumitest.FindCLI()
	var pluginDir string
	if cliErr == nil {
		pluginDir = pulumitest.BuildPlugin(t)
	}
	var mu sync.Mutex
	var rows []row
	record := func(r row) {
		mu.Lock()
		rows = append(rows, r)
		mu.Unlock()
	}
	// The table once every scenario has run (the halves are parallel
	// subtests: they run after this function returns, before its cleanup).
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		fmt.Fprintf(&b, "\n| scenario | front end | step | verdict |\n|---|---|---|---|\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.scenario, r.frontEnd, r.step, strings.ReplaceAll(r.verdict, "\n", " "))
		}
		fmt.Fprintf(&b, "\nsuite time: %s\n", time.Since(start).Round(time.Second))
		t.Log(b.String())
	})
	// Each front end gets scenarios of its own: a scenario's rigs (node
	// players, keys) hold state between its steps, and the two halves run
	// in parallel, each against its own emulator.
	pulumiScenarios := scenarios()
	for i, sc := range scenarios() {
		psc := pulumiScenarios[i]
		// A front end's half is selected with -run patterns of the form
		// TestConformance/*/*/pulumi, which hold for names of the form
		// resource/case only.
		if strings.Count(sc.name, "/") != 1 {
			t.Fatalf("scenario %q: a scenario is named resource/case, with one slash", sc.name)
		}
		t.Run(sc.name, func(t *testing.T) {
			// Scenarios run side by side: a scenario's subtests wait
			// for each other only through their own rigs and emulators.
			t.Parallel()
			t.Run("terraform", func(t *testing.T) {
				h := acctest.Setup(t)
				f := newFixtures(t, h)
				runScenario(t, h, f, sc, newTerraformDriver(t, h, sc), record)
			})
			t.Run("pulumi", func(t *testing.T) {
				if cliErr != nil {
					if os.Getenv("CI") == "true" {
						t.Fatal(cliErr)
					}
					record(row{sc.name, "pulumi", "-", "not run: " + cliErr.Error()})
					t.Skip("skipping: " + cliErr.Error())
				}
				h := acctest.ParallelEmulator(t)
				f := newFixtures(t, h)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				runScenario(t, h, f, psc, newPulumiDriver(ctx, t, h, psc, cli, pluginDir), record)
			})
		})
	}
}

// runScenario runs the steps in order and stops at the first that fails.
func runScenario(t *testing.T, h *acctest.Harness, f *fixtures, sc scenario, d driver, record func(row)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i, st := range sc.steps {
		label := fmt.Sprintf("%d %s", i+1, st.name)
		if sc.residency != nil {
			st.residency = merge(sc.residency, st.residency)
		}
		if st.outOfBand != nil {
			st.outOfBand(t, h, f)
		}
		for _, p := range st.paths {
			if d.name() == "pulumi" {
				p = camel(p)
			}
			st.messages = append(slices.Clip(st.messages), p)
		}
		h.Shim.ResetLog()
		r := d.step(ctx, t, i, st, f)
		problems := evaluate(st, r, h)
		if len(problems) == 0 && st.check != nil {
			if err := st.check(ctx, h, f); err != nil {
				problems = append(problems, err.Error())
			}
		}
		if len(problems) == 0 && st.checkOutputs != nil {
			if err := st.checkOutputs(ctx, h, r.outputs); err != nil {
				problems = append(problems, err.Error())
			}
		}
		if len(problems) == 0 {
			record(row{sc.name, d.name(), label, "pass"})
			continue
		}
		record(row{sc.name, d.name(), label, "FAIL: " + strings.Join(problems, "; ")})
		t.Errorf("%s, step %s: %s\n%s", d.name(), label, strings.Join(problems, "\n  "), r.log)
		for _, rest := range sc.steps[i+1:] {
			record(row{sc.name, d.name(), rest.name, "not run (an earlier step failed)"})
		}
		return
	}
}

// evaluate compares what the front end did with the step's expectations.
func evaluate(st step, r result, h *acctest.Harness) []string {
	var ps []string
	if r.outcome != st.want {
		p := fmt.Sprintf("outcome %q, want %q", r.outcome, st.want)
		if r.outcome == refused {
			p += ": " + firstLines(r.message, 6)
		}
		ps = append(ps, p)
	}
	if st.want == refused && r.outcome == refused {
		switch {
		case st.refusedAtApply && !r.atApply:
			ps = append(ps, "refused at plan; a value known only at apply must be checked at apply")
		case !st.refusedAtApply && r.atApply:
			ps = append(ps, "refused only at apply; want a refusal at plan")
		}
		if m := missing(r.message, st.messages); len(m) > 0 {
			ps = append(ps, fmt.Sprintf("the refusal lacks %q: %s", m, firstLines(r.message, 6)))
		}
	}
	if m := missing(strings.Join(r.warnings, "\n"), st.warnings); len(m) > 0 {
		ps = append(ps, fmt.Sprintf("no warning with %q (warnings: %q)", m, r.warnings))
	}
	if r.outcome == st.want && st.want != refused {
		for _, a := range st.knownAtPlan {
			planned, ok := r.plannedOutputs[a]
			switch applied, rec := r.outputs[a]; {
			case !ok:
				ps = append(ps, fmt.Sprintf("%s is not known at plan", a))
			case rec && applied != planned:
				ps = append(ps, fmt.Sprintf("%s: the apply recorded %q, the plan said %q", a, applied, planned))
			}
		}
	}
	if st.noWrites {
		if w := h.Shim.Writes(); len(w) > 0 {
			var calls []string
			for _, c := range w {
				calls = append(calls, c.Service+"."+c.Action)
			}
			ps = append(ps, fmt.Sprintf("%d AWS writes, want none: %s", len(w), strings.Join(calls, ", ")))
		}
	}
	return ps
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, " | ")
}
