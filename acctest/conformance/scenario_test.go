package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/mlplatform/mlplatform/acctest"
)

// kind is a resource kind both front ends serve.
type kind struct {
	tf     string // Terraform type, e.g. mlplatform_gpu_cluster
	pulumi string // Pulumi type token, e.g. mlplatform:index:GpuCluster
}

var (
	gpuCluster      = kind{tf: "mlplatform_gpu_cluster", pulumi: "mlplatform:index:GpuCluster"}
	featureStore    = kind{tf: "mlplatform_feature_store", pulumi: "mlplatform:index:FeatureStore"}
	residencyGuard  = kind{tf: "mlplatform_residency_guard", pulumi: "mlplatform:index:ResidencyGuard"}
	cpuFootprint    = kind{tf: "mlplatform_cpu_footprint", pulumi: "mlplatform:index:CpuFootprint"}
	servingEndpoint = kind{tf: "mlplatform_serving_endpoint", pulumi: "mlplatform:index:ServingEndpoint"}
)

// outcome is what a step does to the resource, as both front ends must
// report it.
type outcome string

const (
	created  outcome = "created"          // planned and applied as a create
	updated  outcome = "updated in place" // an in-place update, no replacement
	replaced outcome = "replaced"         // delete and create (either order)
	noChange outcome = "no change"        // nothing planned
	refused  outcome = "refused"          // the plan (or, for values known only then, the apply) fails
	imported outcome = "imported"         // the existing resource adopted; the next plan creates and replaces nothing
)

// blocks is a list of nested blocks: repeated blocks in Terraform (e.g. a
// footprint's schedule), a list of objects for Pulumi.
type blocks []map[string]any

// unknown marks an input value that is known only at apply: Terraform takes
// it from a terraform_data's output created in the same step, Pulumi from
// an output of a resource created in the same step.
type unknown struct{ v any }

// step is one change to a resource and what it must do.
type step struct {
	name string
	// inputs are the resource's arguments in Terraform's snake_case: strings,
	// ints, bools, []any, map[string]any and unknown. Keys of a map under
	// "tags" are user keys and stay as written for Pulumi too.
	inputs func(f *fixtures) map[string]any
	// residency is the provider's residency block (snake_case) besides
	// jurisdiction = "AE", e.g. {"mode": "audit"}.
	residency map[string]any
	// outOfBand runs before the step: a change made outside the front end
	// (drift), which the step's plan must notice.
	outOfBand func(t *testing.T, h *acctest.Harness, f *fixtures)
	// importID, when set, makes the step import the existing resource of
	// this id into fresh state instead of applying.
	importID string

	want outcome
	// refusedAtApply: the refusal comes at apply (values known only then);
	// the plan must succeed.
	refusedAtApply bool
	// messages must each appear in the refusal.
	messages []string
	// paths are attribute paths (snake_case) the refusal must name, as
	// each front end spells them: Terraform as written, Pulumi in
	// camelCase (orchestrator.slurm.mungeKeySecretArn).
	paths []string
	// warnings must each appear in a warning of the plan or apply.
	warnings []string
	// noWrites: the front end makes no AWS write call in this step.
	noWrites bool
	// check runs after a step that did what it should, against the
	// emulator.
	check func(ctx context.Context, h *acctest.Harness, f *fixtures) error
	// outputs are computed attributes (snake_case) the front end must
	// record after the step; checkOutputs judges their values, as the
	// front end's user reads them (Terraform state, the Pulumi stack).
	outputs      []string
	checkOutputs func(ctx context.Context, h *acctest.Harness, outs map[string]string) error
	// knownAtPlan are computed attributes (snake_case, strings) the plan
	// must already know (Terraform's plan, Pulumi's preview), with the
	// value the apply records when they are among outputs too.
	knownAtPlan []string
}

// scenario is a resource's life in steps, run against both front ends from
// a fresh emulator each time.
type scenario struct {
	name     string
	kind     kind
	resource string // resource name in both programs, also its AWS name
	// residency is the provider's residency settings of every step, under
	// each step's own: awsManagedKeys for a scenario not about keys.
	residency map[string]any
	steps     []step
	// waits says the scenario mostly waits out a timeout (a minute or
	// more): it starts before the others, so that its wait overlaps them
	// rather than ending the suite alone.
	waits bool
}

// merge returns base with over's keys set (nil values delete).
func merge(base map[string]any, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = v
	}
	return out
}

// camel turns a snake_case attribute name into the Pulumi property name.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// missing returns the wants that text lacks.
func missing(text string, wants []string) []string {
	var out []string
	for _, w := range wants {
		if !strings.Contains(text, w) {
			out = append(out, w)
		}
	}
	return out
}
