package pulumi

import (
	"context"
	"fmt"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
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
	refs, _ := platform.GuardRefs(args.lists(req.NewInputs))
	c, err := env.CheckGuard(ctx, refs)
	if err != nil {
		return infer.CheckResponse[ResidencyGuardArgs]{Inputs: args}, err
	}
	return infer.CheckResponse[ResidencyGuardArgs]{Inputs: args, Failures: reportViolations(ctx, env.Policy, c.Violations)}, nil
}

// Create checks every value, all of them known now, before the guard exists.
func (ResidencyGuard) Create(ctx context.Context, req infer.CreateRequest[ResidencyGuardArgs]) (infer.CreateResponse[ResidencyGuardState], error) {
	state, err := applyGuard(ctx, req.Inputs, req.DryRun)
	if err != nil {
		return infer.CreateResponse[ResidencyGuardState]{}, err
	}
	refs, _ := platform.GuardRefs(req.Inputs.lists(property.Map{}))
	return infer.CreateResponse[ResidencyGuardState]{ID: platform.GuardID(refs), Output: state}, nil
}

// Read checks the values again. When they no longer comply in enforce mode,
// the guard is reported gone, so the next `up` plans it anew and fails.
func (ResidencyGuard) Read(ctx context.Context, req infer.ReadRequest[ResidencyGuardArgs, ResidencyGuardState]) (infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState], error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState]{}, err
	}
	args := req.State.ResidencyGuardArgs
	refs, _ := platform.GuardRefs(args.lists(property.Map{}))
	rf := env.RefreshGuard(ctx, refs)
	switch {
	case rf.Keep:
		p.GetLogger(ctx).Warning("re-checking residency guard: " + rf.Warning)
		return infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState](req), nil
	case rf.Gone:
		p.GetLogger(ctx).Warning("residency guard no longer complies: " + rf.Warning)
		return infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState]{}, nil
	}
	return infer.ReadResponse[ResidencyGuardArgs, ResidencyGuardState]{ID: req.ID, Inputs: args, State: guardState(args, rf.Check)}, nil
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
	refs, _ := platform.GuardRefs(args.lists(property.Map{}))
	c, err := env.CheckGuard(ctx, refs)
	if err != nil {
		return ResidencyGuardState{}, err
	}
	failures := reportViolations(ctx, env.Policy, c.Violations)
	if c.Blocked {
		return ResidencyGuardState{}, fmt.Errorf("creating residency guard: %w", failuresError(failures))
	}
	return guardState(args, c), nil
}

// guardState is the guard's state after a check, paths in Pulumi's naming.
func guardState(args ResidencyGuardArgs, c platform.GuardCheck) ResidencyGuardState {
	report := make([]GuardReportEntry, 0, len(c.Verdicts))
	for _, v := range c.Verdicts {
		report = append(report, GuardReportEntry{Path: propertyPath(v.Path), Kind: string(v.Kind), Value: v.Value, Verdict: v.Verdict, Rule: v.Rule, Message: v.Message})
	}
	return ResidencyGuardState{ResidencyGuardArgs: args, Compliant: c.Compliant, Report: report}
}

// lists translates the guard's inputs for the core; inputs (the raw
// inputs, in preview) says which values are not known yet.
func (a ResidencyGuardArgs) lists(inputs property.Map) map[string]platform.GuardList {
	byAttr := map[string][]string{
		"regions": a.Regions, "zone_ids": a.ZoneIDs, "kms_key_arns": a.KMSKeyARNs,
		"s3_uris": a.S3URIs, "ecr_image_uris": a.ECRImageURIs, "arns": a.ARNs,
	}
	out := map[string]platform.GuardList{}
	for attr, values := range byAttr {
		gl := platform.GuardList{Values: values, Pending: map[int]bool{}}
		v, _ := inputs.GetOk(propertyPath(attr))
		switch {
		case v.IsComputed():
			gl.Unknown = true
		case v.IsArray():
			for i, e := range v.AsArray().All {
				if e.HasComputed() {
					gl.Pending[i] = true
				}
			}
		}
		out[attr] = gl
	}
	return out
}
