package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/mlplatform/mlplatform/acctest"
	"github.com/mlplatform/mlplatform/acctest/pulumitest"
	"github.com/mlplatform/mlplatform/pulumi/sdk/go/mlplatform"
)

// pulumiDriver runs steps through the real Pulumi engine: an inline program
// that registers the resource generically by its type token, with the
// step's inputs in camelCase, and an explicit provider at the emulator.
type pulumiDriver struct {
	h     *acctest.Harness
	sc    scenario
	eng   pulumitest.Engine
	stack auto.Stack

	// What the program declares now; set before each engine call.
	idx      int
	st       step
	f        *fixtures
	importID string
}

func newPulumiDriver(ctx context.Context, t *testing.T, h *acctest.Harness, sc scenario, cli, pluginDir string) *pulumiDriver {
	t.Helper()
	d := &pulumiDriver{h: h, sc: sc, eng: pulumitest.NewEngine(t, cli, pluginDir)}
	d.stack = d.eng.InlineStack(ctx, t, "conformance", "dev", d.program)
	return d
}

func (d *pulumiDriver) name() string { return "pulumi" }

func (d *pulumiDriver) program(ctx *pulumi.Context) error {
	eps := d.h.Endpoints()
	res := &mlplatform.ResidencyConfigArgs{Jurisdiction: pulumi.String("AE")}
	for k, v := range d.st.residency {
		switch k {
		case "mode":
			res.Mode = pulumi.String(v.(string))
		case "excluded_zone_ids":
			res.ExcludedZoneIds = pulumi.ToStringArray(v.([]string))
		case "required_tags":
			res.RequiredTags = pulumi.ToStringArray(v.([]string))
		case "require_customer_managed_keys":
			res.RequireCustomerManagedKeys = pulumi.Bool(v.(bool))
		default:
			return fmt.Errorf("conformance: residency setting %q has no Pulumi translation here", k)
		}
	}
	prov, err := mlplatform.NewProvider(ctx, "emulator", &mlplatform.ProviderArgs{
		Region: pulumi.String(acctest.Region),
		Endpoints: &mlplatform.EndpointsArgs{
			Ec2: pulumi.String(eps["ec2"]), S3: pulumi.String(eps["s3"]), Kms: pulumi.String(eps["kms"]),
			Sagemaker: pulumi.String(eps["sagemaker"]), Ssm: pulumi.String(eps["ssm"]), Sts: pulumi.String(eps["sts"]),
			Autoscaling: pulumi.String(eps["autoscaling"]), Applicationautoscaling: pulumi.String(eps["applicationautoscaling"]),
			Cloudwatch: pulumi.String(eps["cloudwatch"]), Secretsmanager: pulumi.String(eps["secretsmanager"]),
			Eks: pulumi.String(eps["eks"]), Iam: pulumi.String(eps["iam"]),
		},
		Residency: res,
	})
	if err != nil {
		return err
	}
	// An unknown value is an output of a guard created in this step: its
	// verdict is unknown until the guard exists (its id is not: the
	// provider computes it in the preview).
	helpers := 0
	unknownOf := func(v any) (pulumi.Input, error) {
		name := fmt.Sprintf("unknown-%d-%d", d.idx, helpers)
		helpers++
		g, err := mlplatform.NewResidencyGuard(ctx, name, &mlplatform.ResidencyGuardArgs{Regions: pulumi.StringArray{pulumi.String(acctest.Region)}}, pulumi.Provider(prov))
		if err != nil {
			return nil, err
		}
		return g.Compliant.ApplyT(func(bool) (any, error) { return v, nil }).(pulumi.AnyOutput), nil
	}
	props, err := pulumiValue(d.st.inputs(d.f), false, unknownOf)
	if err != nil {
		return err
	}
	opts := []pulumi.ResourceOption{pulumi.Provider(prov)}
	if d.importID != "" {
		opts = append(opts, pulumi.Import(pulumi.ID(d.importID)))
	}
	var r pulumi.CustomResourceState
	return ctx.RegisterResource(d.sc.kind.pulumi, d.sc.resource, props.(pulumi.Map), &r, opts...)
}

// pulumiValue translates a neutral value: maps get camelCase keys (except
// the user's keys under tags), unknowns become outputs.
func pulumiValue(v any, userKeys bool, unknownOf func(any) (pulumi.Input, error)) (pulumi.Input, error) {
	switch x := v.(type) {
	case unknown:
		return unknownOf(x.v)
	case string:
		return pulumi.String(x), nil
	case int:
		return pulumi.Int(x), nil
	case bool:
		return pulumi.Bool(x), nil
	case []string:
		return pulumi.ToStringArray(x), nil
	case []any:
		arr := pulumi.Array{}
		for _, e := range x {
			pv, err := pulumiValue(e, false, unknownOf)
			if err != nil {
				return nil, err
			}
			arr = append(arr, pv)
		}
		return arr, nil
	case blocks:
		arr := pulumi.Array{}
		for _, e := range x {
			pv, err := pulumiValue(map[string]any(e), false, unknownOf)
			if err != nil {
				return nil, err
			}
			arr = append(arr, pv)
		}
		return arr, nil
	case map[string]any:
		m := pulumi.Map{}
		for k, e := range x {
			pv, err := pulumiValue(e, k == "tags", unknownOf)
			if err != nil {
				return nil, err
			}
			if !userKeys {
				k = camel(k)
			}
			m[k] = pv
		}
		return m, nil
	}
	return nil, fmt.Errorf("conformance: no Pulumi value for %T", v)
}

// events collects the engine events of one operation.
type eventLog struct {
	ch       chan events.EngineEvent
	done     chan struct{}
	mu       sync.Mutex
	ops      []string
	opFailed bool // the resource's own operation (create, update, delete) failed
	warn     []string
	errs     []string
	// outputs are the resource's outputs as the step's outputs event gave
	// them (in a preview, unknown ones are plugin.UnknownStringValue).
	outputs map[string]any
}

func (d *pulumiDriver) collect() *eventLog {
	l := &eventLog{ch: make(chan events.EngineEvent), done: make(chan struct{})}
	suffix := "::" + d.sc.resource
	go func() {
		defer close(l.done)
		for e := range l.ch {
			l.mu.Lock()
			if p := e.ResourcePreEvent; p != nil && p.Metadata.Type == d.sc.kind.pulumi && strings.HasSuffix(p.Metadata.URN, suffix) {
				l.ops = append(l.ops, string(p.Metadata.Op))
			}
			if o := e.ResOutputsEvent; o != nil && o.Metadata.Type == d.sc.kind.pulumi && strings.HasSuffix(o.Metadata.URN, suffix) && o.Metadata.New != nil {
				l.outputs = o.Metadata.New.Outputs
			}
			if f := e.ResOpFailedEvent; f != nil && f.Metadata.Type == d.sc.kind.pulumi && strings.HasSuffix(f.Metadata.URN, suffix) {
				l.opFailed = true
			}
			if g := e.DiagnosticEvent; g != nil {
				switch g.Severity {
				case "warning":
					l.warn = append(l.warn, g.Message)
				case "error":
					l.errs = append(l.errs, g.Message)
				}
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *eventLog) wait() { <-l.done }

// outcome is the resource's outcome from the engine's steps.
func (l *eventLog) outcome() outcome {
	has := func(op string) bool {
		for _, o := range l.ops {
			if o == op {
				return true
			}
		}
		return false
	}
	switch {
	case has("replace") || has("create-replacement") || has("delete-replaced"):
		return replaced
	case has("import"):
		return imported
	case has("create"):
		return created
	case has("update"):
		return updated
	case has("same") || len(l.ops) == 0:
		return noChange
	}
	return outcome(strings.Join(l.ops, ","))
}

func (d *pulumiDriver) step(ctx context.Context, t *testing.T, idx int, st step, f *fixtures) result {
	t.Helper()
	d.idx, d.st, d.f, d.importID = idx, st, f, ""
	if st.importID != "" {
		return d.importStep(ctx, t, st)
	}
	var res result
	hasUnknown := containsUnknown(st.inputs(f))
	refresh := st.outOfBand != nil
	// A refusal expected at plan, and a step with values known only at
	// apply, run a preview first: the plan must refuse, or accept what it
	// cannot know yet.
	if (st.want == refused && !st.refusedAtApply) || hasUnknown || len(st.knownAtPlan) > 0 {
		var out strings.Builder
		l := d.collect()
		popts := []optpreview.Option{optpreview.ProgressStreams(&out), optpreview.ErrorProgressStreams(&out), optpreview.EventStreams(l.ch)}
		if refresh {
			popts = append(popts, optpreview.Refresh())
		}
		_, err := d.stack.Preview(ctx, popts...)
		l.wait()
		res.warnings = append(res.warnings, l.warn...)
		res.log += "preview:\n" + out.String()
		if err != nil {
			res.outcome, res.message = refused, strings.Join(l.errs, "\n")+"\n"+err.Error()+"\n"+out.String()
			return res
		}
		res.planned = l.outcome()
		res.plannedOutputs = map[string]string{}
		for _, a := range st.knownAtPlan {
			if v, ok := l.outputs[camel(a)].(string); ok && v != plugin.UnknownStringValue {
				res.plannedOutputs[a] = v
			}
		}
		if st.want == refused && !st.refusedAtApply {
			res.outcome = res.planned
			return res
		}
	}
	var out strings.Builder
	l := d.collect()
	uopts := []optup.Option{optup.ProgressStreams(&out), optup.ErrorProgressStreams(&out), optup.EventStreams(l.ch)}
	if refresh {
		uopts = append(uopts, optup.Refresh())
	}
	_, err := d.stack.Up(ctx, uopts...)
	l.wait()
	res.warnings = append(res.warnings, l.warn...)
	res.log += "up:\n" + out.String()
	res.outcome = l.outcome()
	if err == nil {
		res.outputs = d.outputs(ctx, t, st.outputs)
	}
	if err != nil {
		if res.planned == "" {
			res.planned = res.outcome
		}
		// Without unknown values, up's checks ran on known values: a
		// refusal there is the plan-time refusal of a skipped preview,
		// unless the resource's operation itself failed (SageMaker rolled
		// an update back).
		res.outcome, res.atApply, res.message = refused, hasUnknown || l.opFailed, strings.Join(l.errs, "\n")+"\n"+err.Error()+"\n"+out.String()
	}
	return res
}

// importStep adopts the existing resource into a new stack with the step's
// program (the resource option import), then previews: the preview must
// create, replace and delete nothing. Later steps go on in the new stack.
func (d *pulumiDriver) importStep(ctx context.Context, t *testing.T, st step) result {
	t.Helper()
	d.importID = st.importID
	d.stack = d.eng.InlineStack(ctx, t, "conformance", "imported", d.program)
	var res result
	var out strings.Builder
	l := d.collect()
	_, err := d.stack.Up(ctx, optup.ProgressStreams(&out), optup.ErrorProgressStreams(&out), optup.EventStreams(l.ch))
	l.wait()
	res.log = "up (import):\n" + out.String()
	res.warnings = append(res.warnings, l.warn...)
	if err != nil {
		res.outcome, res.message = refused, strings.Join(l.errs, "\n")+"\n"+err.Error()+"\n"+out.String()
		return res
	}
	if o := l.outcome(); o != imported {
		res.outcome = outcome("not imported: " + string(o))
		return res
	}
	d.importID = ""
	out.Reset()
	l = d.collect()
	_, err = d.stack.Preview(ctx, optpreview.ProgressStreams(&out), optpreview.ErrorProgressStreams(&out), optpreview.EventStreams(l.ch))
	l.wait()
	res.log += "preview after import:\n" + out.String()
	if err != nil {
		res.outcome, res.message = refused, strings.Join(l.errs, "\n")+"\n"+err.Error()+"\n"+out.String()
		return res
	}
	res.outcome = imported
	if o := l.outcome(); o == created || o == replaced {
		res.outcome = outcome("imported, but the next preview would be " + string(o))
	}
	return res
}

func containsUnknown(v any) bool {
	switch x := v.(type) {
	case unknown:
		return true
	case blocks:
		for _, e := range x {
			if containsUnknown(map[string]any(e)) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if containsUnknown(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if containsUnknown(e) {
				return true
			}
		}
	}
	return false
}

// outputs reads attrs (snake_case) of the resource from the stack's
// deployment, as `pulumi stack export` gives them (camelCase).
func (d *pulumiDriver) outputs(ctx context.Context, t *testing.T, attrs []string) map[string]string {
	t.Helper()
	if len(attrs) == 0 {
		return nil
	}
	dep, err := d.stack.Export(ctx)
	if err != nil {
		t.Fatalf("pulumi stack export: %v", err)
	}
	var state struct {
		Resources []struct {
			URN     string         `json:"urn"`
			Type    string         `json:"type"`
			Outputs map[string]any `json:"outputs"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(dep.Deployment, &state); err != nil {
		t.Fatalf("pulumi stack export: %v", err)
	}
	out := map[string]string{}
	for _, r := range state.Resources {
		if r.Type != d.sc.kind.pulumi || !strings.HasSuffix(r.URN, "::"+d.sc.resource) {
			continue
		}
		for _, a := range attrs {
			if s, ok := r.Outputs[camel(a)].(string); ok {
				out[a] = s
			}
		}
	}
	return out
}
