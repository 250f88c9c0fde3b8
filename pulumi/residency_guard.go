package pulumi

import (
	"context"
	"fmt"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
	"github.com/mlplatform/mlplatform/internal/residency"
)

// ResidencyGuard checks locations that other providers create against the
// residency policy: the Pulumi twin of mlplatform_residency_guard.
type ResidencyGuard struct{}

var (
	_ infer.CustomResource[ResidencyGuardArgs, ResidencyGuardState] = ResidencyGuard{}
	_ infer.CustomCheck[ResidencyGuardArgs]                         = ResidencyGuard{}
	_ infer.CustomUpdate[ResidencyGuardArgs, ResidencyGuardState]   = ResidencyGuard{}
	_ infer.CustomRead[ResidencyGuardArgs, ResidencyGuardState]     = ResidencyGuard{}
	_ infer.Annotated                                               = (*ResidencyGuard)(nil)
)

// ResidencyGuardArgs are the locations to check.
type ResidencyGuardArgs struct {
	Regions      []string `pulumi:"regions,optional"`
	ZoneIDs      []string `pulumi:"zoneIds,optional"`
	KMSKeyARNs   []string `pulumi:"kmsKeyArns,optional"`
	S3URIs       []string `pulumi:"s3Uris,optional"`
	ECRImageURIs []string `pulumi:"ecrImageUris,optional"`
	ARNs         []string `pulumi:"arns,optional"`
}

// ResidencyGuardState is the guard's state: its inputs and the verdicts.
type ResidencyGuardState struct {
	ResidencyGuardArgs
	Compliant bool               `pulumi:"compliant"`
	Report    []GuardReportEntry `pulumi:"report"`
}

// GuardReportEntry is the verdict on one checked value.
type GuardReportEntry struct {
	Path    string `pulumi:"path"`
	Kind    string `pulumi:"kind"`
	Value   string `pulumi:"value"`
	Verdict string `pulumi:"verdict"`
	Rule    string `pulumi:"rule"`
	Message string `pulumi:"message"`
}

// Annotate describes the resource in the schema.
func (g *ResidencyGuard) Annotate(a infer.Annotator) {
	a.Describe(g, "Checks locations that other providers create (buckets, keys, images, ARNs, regions, zones) against the residency policy. "+
		"Known values are checked in Check, so `pulumi preview` fails on a violation; values known only during `up` are checked before the guard is created, "+
		"so resources that depend on the guard never start on a violation. On refresh the guard checks again: a value that no longer complies makes the guard "+
		"disappear from state, and the next `up` recreates it and fails until fixed.")
}

// Annotate describes the inputs.
func (a *ResidencyGuardArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Regions, "AWS region names to check, e.g. the region of another provider.")
	an.Describe(&a.ZoneIDs, "Availability zone ids to check, e.g. `mec1-az1`. Excluded zone ids fail.")
	an.Describe(&a.KMSKeyARNs, "KMS key ARNs: the key must be in an allowed region, and customer-managed when the policy requires it.")
	an.Describe(&a.S3URIs, "S3 locations (`s3://bucket/prefix`, bucket ARNs or https URLs): the bucket must be in an allowed region and must not replicate outside it.")
	an.Describe(&a.ECRImageURIs, "Container image URIs: they must be ECR images in an allowed region.")
	an.Describe(&a.ARNs, "Any ARNs: their region must be allowed (global ARNs such as IAM pass).")
}

// Annotate describes the outputs.
func (s *ResidencyGuardState) Annotate(a infer.Annotator) {
	a.Describe(&s.Compliant, "Whether every value complied when last checked. In `audit` mode this can be false.")
	a.Describe(&s.Report, "What was checked and the verdict for each value.")
}

// Annotate describes a report entry.
func (e *GuardReportEntry) Annotate(a infer.Annotator) {
	a.Describe(&e.Path, "Property path of the value, e.g. `s3Uris[0]`.")
	a.Describe(&e.Kind, "Kind of location: region, zone_id, kms_key, s3_uri, ecr_image or arn.")
	a.Describe(&e.Value, "The value checked.")
	a.Describe(&e.Verdict, "`pass` or `violation`.")
	a.Describe(&e.Rule, "The rule broken, empty on pass.")
	a.Describe(&e.Message, "What is wrong and how to fix it, empty on pass.")
}

// Check validates the inputs and checks every value already known; in enforce
// mode a violation fails preview on its property.
func (ResidencyGuard) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[ResidencyGuardArgs], error) {
	args, failures, err := infer.DefaultCheck[ResidencyGuardArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[ResidencyGuardArgs]{Inputs: args, Failures: failures}, err
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.CheckResponse[ResidencyGuardArgs]{Inputs: args}, err
	}
	failures, err = checkResidency(ctx, env, args.refsKnown(unknownElements(req.NewInputs)), nil, "")
	if err != nil {
		return infer.CheckResponse[ResidencyGuardArgs]{Inputs: args}, fmt.Errorf("checking data residency: %w", err)
	}
	return infer.CheckResponse[ResidencyGuardArgs]{Inputs: args, Failures: failures}, nil
}

// Create checks every value, all of them known now, before the guard exists.
func (ResidencyGuard) Create(ctx context.Context, req infer.CreateRequest[ResidencyGuardArgs]) (infer.CreateResponse[ResidencyGuardState], error) {
	state, err := applyGuard(ctx, req.Inputs, req.DryRun)
	if err != nil {
		return infer.CreateResponse[ResidencyGuardState]{}, err
	}
	return infer.CreateResponse[ResidencyGuardState]{ID: platform.GuardID(req.Inputs.refs()), Output: state}, nil
}

// Read checks the values again. When they no longer comply in enforce mode,
// the guard is reported gone, so the next `up` plans it anew and fails.
func (ResidencyGuard) Read(ctx context.Context, req infer.ReadRequest[ResidencyGuardArgs, ResidencyGuardState]) (infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState], error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState]{}, err
	}
	args := req.State.ResidencyGuardArgs
	state, vs, err := guardState(ctx, env, args)
	if err != nil {
		p.GetLogger(ctx).Warningf("re-checking residency guard: %v; the state is kept as it was", err)
		return infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState]{ID: req.ID, Inputs: req.Inputs, State: req.State}, nil
	}
	if len(vs) > 0 && env.Policy.Enforcing() {
		p.GetLogger(ctx).Warning("residency guard no longer complies, so it will be created again (and that update will fail until fixed):\n" + residency.Summarize(vs))
		return infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState]{}, nil
	}
	return infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState]{ID: req.ID, Inputs: args, State: state}, nil
}

// Update checks the new values before the guard changes.
func (ResidencyGuard) Update(ctx context.Context, req infer.UpdateRequest[ResidencyGuardArgs, ResidencyGuardState]) (infer.UpdateResponse[ResidencyGuardState], error) {
	state, err := applyGuard(ctx, req.Inputs, req.DryRun)
	if err != nil {
		return infer.UpdateResponse[ResidencyGuardState]{}, err
	}
	return infer.UpdateResponse[ResidencyGuardState]{Output: state}, nil
}

// applyGuard checks every value and fails in enforce mode. In a preview the
// values Check has already seen are not looked up again.
func applyGuard(ctx context.Context, args ResidencyGuardArgs, dryRun bool) (ResidencyGuardState, error) {
	if dryRun {
		return ResidencyGuardState{ResidencyGuardArgs: args}, nil
	}
	env, err := envFrom(ctx)
	if err != nil {
		return ResidencyGuardState{}, err
	}
	state, vs, err := guardState(ctx, env, args)
	if err != nil {
		return ResidencyGuardState{}, err
	}
	if err := failuresError(reportViolations(ctx, env.Policy, vs)); err != nil {
		return ResidencyGuardState{}, fmt.Errorf("creating residency guard: %w", err)
	}
	return state, nil
}

// guardState runs the policy on the guard's values and builds its report.
func guardState(ctx context.Context, env *platform.Env, args ResidencyGuardArgs) (ResidencyGuardState, []residency.Violation, error) {
	c, err := env.CheckGuard(ctx, args.refs())
	if err != nil {
		return ResidencyGuardState{}, nil, err
	}
	report := make([]GuardReportEntry, 0, len(c.Verdicts))
	for _, v := range c.Verdicts {
		report = append(report, GuardReportEntry{Path: v.Path, Kind: string(v.Kind), Value: v.Value, Verdict: v.Verdict, Rule: v.Rule, Message: v.Message})
	}
	return ResidencyGuardState{ResidencyGuardArgs: args, Compliant: c.Compliant, Report: report}, c.Violations, nil
}

// refs lists the guard's values as residency references, with Pulumi paths;
// every value is known (create, update, read).
func (a ResidencyGuardArgs) refs() []residency.Ref { return a.refsKnown(nil) }

// unknownElements lists the guard inputs not known yet (in preview): a whole
// list by its property name, an element as name[i].
func unknownElements(inputs property.Map) map[string]bool {
	out := map[string]bool{}
	for k, v := range inputs.All {
		switch {
		case v.IsComputed():
			out[k] = true
		case v.IsArray():
			for i, e := range v.AsArray().All {
				if e.HasComputed() {
					out[fmt.Sprintf("%s[%d]", k, i)] = true
				}
			}
		}
	}
	return out
}

// refsKnown lists the guard's known values as residency references. An
// empty or blank element is a reference to nothing, and a violation: every
// element of a guard list must name a location.
func (a ResidencyGuardArgs) refsKnown(unknown map[string]bool) []residency.Ref {
	var refs []residency.Ref
	for _, in := range []struct {
		prop   string
		kind   residency.Kind
		values []string
	}{
		{"regions", residency.KindRegion, a.Regions},
		{"zoneIds", residency.KindZoneID, a.ZoneIDs},
		{"kmsKeyArns", residency.KindKMSKey, a.KMSKeyARNs},
		{"s3Uris", residency.KindS3URI, a.S3URIs},
		{"ecrImageUris", residency.KindECRImage, a.ECRImageURIs},
		{"arns", residency.KindARN, a.ARNs},
	} {
		if unknown[in.prop] {
			continue
		}
		for i, v := range in.values {
			path := fmt.Sprintf("%s[%d]", in.prop, i)
			if unknown[path] {
				continue // checked at apply
			}
			refs = append(refs, residency.Ref{Path: path, Kind: in.kind, Value: v, Required: true})
		}
	}
	return refs
}
