package pulumi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// CpuFootprint is a CPU footprint for a small or medium business: the
// Pulumi twin of mlplatform_cpu_footprint, over the same core verbs.
type CpuFootprint struct{}

var (
	_ infer.CustomResource[CpuFootprintArgs, CpuFootprintState] = CpuFootprint{}
	_ infer.CustomCheck[CpuFootprintArgs]                       = CpuFootprint{}
	_ infer.CustomDiff[CpuFootprintArgs, CpuFootprintState]     = CpuFootprint{}
	_ infer.CustomUpdate[CpuFootprintArgs, CpuFootprintState]   = CpuFootprint{}
	_ infer.CustomRead[CpuFootprintArgs, CpuFootprintState]     = CpuFootprint{}
	_ infer.CustomDelete[CpuFootprintState]                     = CpuFootprint{}
	_ infer.Annotated                                           = (*CpuFootprint)(nil)
)

// cpuFootprintToken is the CPU footprint's type token.
const cpuFootprintToken = "mlplatform:index:CpuFootprint"

// CpuFootprintArgs are the inputs of a CPU footprint.
type CpuFootprintArgs struct {
	Name                 *string           `pulumi:"name,optional"`
	Requirements         *CpuRequirements  `pulumi:"requirements,optional"`
	InstanceType         *string           `pulumi:"instanceType,optional"`
	CapacityType         *string           `pulumi:"capacityType,optional"`
	OnDemandBase         *int              `pulumi:"onDemandBase,optional"`
	MinSize              int               `pulumi:"minSize"`
	MaxSize              int               `pulumi:"maxSize"`
	DesiredCapacity      int               `pulumi:"desiredCapacity"`
	Schedule             []CpuSchedule     `pulumi:"schedule,optional"`
	SubnetIDs            []string          `pulumi:"subnetIds,optional"`
	Image                *string           `pulumi:"image,optional"`
	SecurityGroupIDs     []string          `pulumi:"securityGroupIds,optional"`
	InstanceProfile      *string           `pulumi:"instanceProfile,optional"`
	KMSKeyARN            *string           `pulumi:"kmsKeyArn,optional"`
	RootVolume           *GpuRootVolume    `pulumi:"rootVolume,optional"`
	DataVolumes          []GpuDataVolume   `pulumi:"dataVolumes,optional"`
	UserData             *string           `pulumi:"userData,optional" provider:"secret"`
	MetadataHopLimit     *int              `pulumi:"metadataHopLimit,optional"`
	MinHealthyPercentage *int              `pulumi:"minHealthyPercentage,optional"`
	Tags                 map[string]string `pulumi:"tags,optional"`
	Validation           *GpuValidation    `pulumi:"validation,optional"`
	Orchestrator         *Orchestrator     `pulumi:"orchestrator,optional"`
}

// CpuRequirements are what the workload needs.
type CpuRequirements struct {
	MinVCPUs       *int     `pulumi:"minVcpus,optional"`
	MinMemoryGiB   *float64 `pulumi:"minMemoryGib,optional"`
	CPUFeatures    []string `pulumi:"cpuFeatures,optional"`
	Architecture   *string  `pulumi:"architecture,optional"`
	Burstable      *bool    `pulumi:"burstable,optional"`
	MaxHourlyPrice *float64 `pulumi:"maxHourlyPrice,optional"`
}

// CpuSchedule is one scheduled change of the group's sizes.
type CpuSchedule struct {
	Name            string  `pulumi:"name"`
	Recurrence      string  `pulumi:"recurrence"`
	TimeZone        *string `pulumi:"timeZone,optional"`
	Duration        *string `pulumi:"duration,optional"`
	MinSize         *int    `pulumi:"minSize,optional"`
	MaxSize         *int    `pulumi:"maxSize,optional"`
	DesiredCapacity *int    `pulumi:"desiredCapacity,optional"`
}

// CpuFootprintState is the footprint's state: its inputs, the decision and
// what exists.
type CpuFootprintState struct {
	CpuFootprintArgs
	ChosenInstanceType      *string           `pulumi:"chosenInstanceType,optional"`
	DecisionReason          *string           `pulumi:"decisionReason,optional"`
	RejectedCheaper         []string          `pulumi:"rejectedCheaper,optional"`
	Candidates              []string          `pulumi:"candidates,optional"`
	InstanceTypes           []string          `pulumi:"instanceTypes,optional"`
	HourlyPriceUSD          *float64          `pulumi:"hourlyPriceUsd,optional"`
	PriceSource             *string           `pulumi:"priceSource,optional"`
	MonthlyCostUSD          *float64          `pulumi:"monthlyCostUsd,optional"`
	MonthlyCostScheduledUSD *float64          `pulumi:"monthlyCostScheduledUsd,optional"`
	CostNote                *string           `pulumi:"costNote,optional"`
	ResolvedSubnetIDs       []string          `pulumi:"resolvedSubnetIds,optional"`
	ImageID                 *string           `pulumi:"imageId,optional"`
	TagsAll                 map[string]string `pulumi:"tagsAll,optional"`
	ASGName                 *string           `pulumi:"asgName,optional"`
	LaunchTemplateID        *string           `pulumi:"launchTemplateId,optional"`
	CreationToken           *string           `pulumi:"creationToken,optional"`
	// ValidationProfile and ValidationResults: the validation gate's.
	ValidationProfile *string               `pulumi:"validationProfile,optional"`
	ValidationResults []GpuValidationResult `pulumi:"validationResults,optional"`
	// ValidationApprover is the approver configuration of `mlplatform
	// approve`.
	ValidationApprover *string `pulumi:"validationApprover,optional"`
	// SlurmControllerConfig is what the Slurm controller needs for the
	// instances (orchestrator.slurm).
	SlurmControllerConfig *string `pulumi:"slurmControllerConfig,optional"`
}

// Annotate describes the resource.
func (f *CpuFootprint) Annotate(a infer.Annotator) {
	a.Describe(f, "A CPU footprint for a small or medium business: an EC2 Auto Scaling group of the cheapest instance type offered in the jurisdiction that meets `requirements` "+
		"(vCPUs, memory, ISA features such as `avx512f` or `amx_tile`, architecture, price), or of an explicit `instanceType`. Preview shows the type chosen, why, "+
		"which cheaper types were rejected and for what, and the monthly cost at `desiredCapacity` and with the `schedule` entries applied. "+
		"The footprint owns its launch template, group (`mlplatform-cpu-<name>`) and scheduled actions: a size a schedule set is not drift. "+
		"Sizes, capacity, schedules, subnets and tags change in place; a change of what an instance is (type, image, volumes, user data, security groups, instance profile, key) "+
		"rolls the instances with an instance refresh that keeps `minHealthyPercentage` in service. Only a new `name` replaces the footprint. "+
		"Residency (subnets' zones, KMS key, image, tags) is checked in Check, before anything is created.")
}

// Annotate describes the inputs.
func (c *CpuFootprintArgs) Annotate(a infer.Annotator) {
	a.Describe(&c.Name, "Footprint name, unique in the region: 1 to 100 letters, digits, `-`, `_` or `.`. Default: the resource name. It names the group and launch template (`mlplatform-cpu-<name>`). Changing it replaces the footprint.")
	a.Describe(&c.Requirements, "What the workload needs: the cheapest type offered in an allowed zone that meets all of it is chosen (the same inputs give the same type; a type without a known price is never the cheapest).")
	a.Describe(&c.InstanceType, "Explicit instance type instead of the choice: still checked against `requirements` and the offerings of the allowed zones. Changing it rolls the instances.")
	a.Describe(&c.CapacityType, "`on_demand` (default) or `spot`: spot capacity above an On-Demand base, drawn from the cheapest qualifying types (at most 5).")
	a.Describe(&c.OnDemandBase, "Instances kept On-Demand under `capacityType: spot`. Default 0.")
	a.Describe(&c.MinSize, "Minimum instances of the group.")
	a.Describe(&c.MaxSize, fmt.Sprintf("Maximum instances of the group, at most %d.", platform.MaxFootprintSize))
	a.Describe(&c.DesiredCapacity, "Instances the group runs outside schedules. With `schedule` entries, the scheduled actions own the group's sizes between changes of the program: a size a schedule set is not drift.")
	a.Describe(&c.Schedule, "Scheduled sizes: at each time `recurrence` fires (in `timeZone`), the group takes the sizes set here; with `duration`, the footprint's own sizes come back when the window ends.")
	a.Describe(&c.SubnetIDs, "Subnets of the group, each in an allowed zone that offers the type. Default: the default subnet of every allowed zone that offers the type.")
	a.Describe(&c.Image, "Machine image: an AMI id (`ami-...`) or an SSM parameter that holds one. Default: the latest Amazon Linux 2023 of the chosen type's architecture. A new AMI rolls the instances.")
	a.Describe(&c.SecurityGroupIDs, "Security groups of the instances.")
	a.Describe(&c.InstanceProfile, "IAM instance profile name or ARN for the instances.")
	a.Describe(&c.KMSKeyARN, "ARN of the KMS key that encrypts every volume; it must lie inside the jurisdiction. Without it, the account's default EBS key.")
	a.Describe(&c.RootVolume, "Root volume of every instance (encrypted).")
	a.Describe(&c.DataVolumes, "Further EBS volumes of every instance (encrypted, deleted with the instance).")
	a.Describe(&c.MetadataHopLimit, metadataHopLimitDoc("instances", "instance"))
	a.SetDefault(&c.MetadataHopLimit, platform.DefaultMetadataHopLimit)
	a.Describe(&c.UserData, "User data run at boot (plain text, at most 16 KiB). Changing it rolls the instances. User data is no place for secrets: anyone allowed ec2:DescribeInstanceAttribute or ec2:DescribeLaunchTemplateVersions can read it, and so can every process on the instance through the metadata service. Keep secrets in AWS Secrets Manager in the jurisdiction and have the script read them at boot with the instance role (aws secretsmanager get-secret-value). A secret in the Pulumi state.")
	a.Describe(&c.MinHealthyPercentage, fmt.Sprintf("Share of the group kept in service while an instance refresh rolls it, 0 to 100. Default %d.", platform.DefaultMinHealthyPercentage))
	a.Describe(&c.Tags, "Tags of the group, its launch template, its instances and their volumes. Keys starting with `aws:` or `mlplatform:` are reserved.")
	a.Describe(&c.Validation, "The validation gate: every instance runs hwprobe at boot against the chosen type's profile (vCPUs, memory, CPU features) and publishes a signed report in-region; the update succeeds only when the instances passed. "+
		"The group gets a lifecycle hook (`"+platform.FootprintValidationHookName+"`, EC2_INSTANCE_LAUNCHING, heartbeat = `timeout`, default ABANDON): every instance launched later waits in Pending:Wait until hwprobe completes the action, CONTINUE when it passed, ABANDON when it failed. "+
		"`onFailure: replace` terminates a failing instance through Auto Scaling (desired capacity kept) and waits for its replacement.")
	a.Describe(&c.Orchestrator, orchestratorDoc)
}

// Annotate describes the requirements.
func (r *CpuRequirements) Annotate(a infer.Annotator) {
	a.Describe(&r.MinVCPUs, "Minimum vCPUs per instance.")
	a.Describe(&r.MinMemoryGiB, "Minimum memory per instance, GiB.")
	a.Describe(&r.CPUFeatures, "ISA features every instance must have, as `/proc/cpuinfo` names them: "+strings.Join(platform.CPUFeatureNames(), ", ")+".")
	a.Describe(&r.Architecture, "`x86_64`, `arm64` or `any` (default).")
	a.Describe(&r.Burstable, "Allow burstable types (t3, t4g, ...). Default `false`.")
	a.Describe(&r.MaxHourlyPrice, "Most an instance may cost per hour (On-Demand, USD). A type whose price is unknown never meets it.")
}

// Annotate describes a schedule.
func (s *CpuSchedule) Annotate(a infer.Annotator) {
	a.Describe(&s.Name, "Name of the scheduled action (1 to 63 letters, digits, `-` or `_`); the action that ends a window is `<name>-end`.")
	a.Describe(&s.Recurrence, "Cron expression (minute hour day-of-month month day-of-week), e.g. `0 20 * * 1-5`.")
	a.Describe(&s.TimeZone, fmt.Sprintf("IANA time zone of `recurrence`. Default `%s`.", platform.DefaultScheduleTimeZone))
	a.Describe(&s.Duration, "Length of the window in whole minutes, e.g. `11h` or `90m`: the footprint's sizes come back when it ends.")
}

// Annotate describes the outputs.
func (s *CpuFootprintState) Annotate(a infer.Annotator) {
	a.Describe(&s.ChosenInstanceType, "The instance type the footprint runs: `instanceType`, or the choice.")
	a.Describe(&s.DecisionReason, "Why that type: which requirement decided it.")
	a.Describe(&s.RejectedCheaper, "Types cheaper than the chosen one that were rejected, each with what it missed.")
	a.Describe(&s.Candidates, "Every qualifying type, cheapest first.")
	a.Describe(&s.InstanceTypes, "Types the group launches: the chosen one, or under spot the cheapest qualifying ones.")
	a.Describe(&s.HourlyPriceUSD, "On-Demand price of one instance per hour, USD; 0 when unknown.")
	a.Describe(&s.PriceSource, "Where the price comes from, and whether it is an estimate for this region.")
	a.Describe(&s.MonthlyCostUSD, fmt.Sprintf("Estimated On-Demand cost of `desiredCapacity` instances running all month (%.0f h), USD; 0 when the price is unknown.", platform.HoursPerMonth))
	a.Describe(&s.MonthlyCostScheduledUSD, "The same with the schedules applied (the mean number of instances over a week).")
	a.Describe(&s.CostNote, "What the estimate assumes.")
	a.Describe(&s.ResolvedSubnetIDs, "The subnets of the group: `subnetIds`, or the default subnets chosen.")
	a.Describe(&s.ImageID, "The AMI the instances run: `image` resolved.")
	a.Describe(&s.TagsAll, "`tags` merged over the provider's `defaultTags`.")
	a.Describe(&s.ASGName, "Name of the Auto Scaling group (`mlplatform-cpu-<name>`).")
	a.Describe(&s.LaunchTemplateID, "Id of the launch template the footprint owns.")
	a.Describe(&s.CreationToken, "Random token of the create that made the footprint (tag `mlplatform:creation-token`): it proves this resource owns it. A create refuses a footprint of the same name it cannot prove it owns (import it instead).")
	a.Describe(&s.SlurmControllerConfig, slurmControllerConfigDoc)
	a.Describe(&s.ValidationApprover, "The approver configuration (JSON) of `mlplatform approve`, which decides the launches after `up` (scale-outs, schedules, replacements) with the gate's own checks: run it in the region with this value (`mlplatform approve --watch --config approver.json`). Without an approver, instances launched after `up` are abandoned when the validation timeout runs out.")
}

// Check runs every plan-time check of the core (PlanCPUFootprint):
// problems and residency violations fail preview on their properties.
func (CpuFootprint) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[CpuFootprintArgs], error) {
	args, failures, err := infer.DefaultCheck[CpuFootprintArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[CpuFootprintArgs]{Inputs: args, Failures: failures}, err
	}
	if args.MetadataHopLimit == nil && !unknownInput(req.NewInputs, "metadataHopLimit") {
		args.MetadataHopLimit = ptr(platform.DefaultMetadataHopLimit) // recorded, so the state says what the instances run
	}
	if args.Name == nil || *args.Name == "" {
		args.Name = ptr(req.Name)
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.CheckResponse[CpuFootprintArgs]{Inputs: args}, err
	}
	spec := args.spec(wholeListUnknowns(req.NewInputs))
	plan, err := env.PlanCPUFootprint(ctx, nil, spec)
	if err != nil {
		return infer.CheckResponse[CpuFootprintArgs]{Inputs: args}, fmt.Errorf("planning CPU footprint (%s): %w", spec.Name, err)
	}
	failures = reportViolations(ctx, env.Policy, plan.Violations)
	failures = append(failures, problemFailures(ctx, plan.Problems)...)
	if plan.Decided && len(failures) == 0 {
		p.GetLogger(ctx).Infof("CPU footprint %s: %s (%s)", spec.Name, plan.Decision.InstanceType, plan.Decision.Reason)
	}
	return infer.CheckResponse[CpuFootprintArgs]{Inputs: args, Failures: failures}, nil
}

// Create makes the footprint. After a partial failure what exists is
// recorded (the resource is marked as failed to initialise), so no group or
// template is orphaned.
func (CpuFootprint) Create(ctx context.Context, req infer.CreateRequest[CpuFootprintArgs]) (infer.CreateResponse[CpuFootprintState], error) {
	args := req.Inputs
	if req.DryRun {
		previewSlurm(ctx, args.Orchestrator, func(env *platform.Env, unknown []string) (string, error) {
			plan, err := env.PlanCPUFootprint(ctx, nil, args.spec(unknown))
			if err != nil {
				return "", err
			}
			return plan.SlurmControllerConfig, nil
		})
		return infer.CreateResponse[CpuFootprintState]{ID: deref(args.Name), Output: CpuFootprintState{CpuFootprintArgs: args}}, nil
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.CreateResponse[CpuFootprintState]{}, err
	}
	spec := args.spec(nil)
	ctx, cancel := cpuFootprintDeadline(ctx, platform.CPUFootprintCreateTimeout)
	defer cancel()
	f, err := env.CreateCPUFootprint(ctx, spec, cpuFootprintOptions(ctx))
	if f == nil {
		return infer.CreateResponse[CpuFootprintState]{}, createOutcome(ctx, fmt.Sprintf("creating CPU footprint (%s)", spec.Name), false, err)
	}
	declared := CpuFootprintState{CpuFootprintArgs: args}
	state := cpuFootprintStateOf(args, platform.RecordCPUFootprint(f, declared.record()))
	state.ValidationProfile, state.ValidationResults, state.ValidationApprover = footprintValidationOutputs(f)
	state.SlurmControllerConfig = footprintSlurmConfig(f)
	warnFootprintValidation(ctx, f)
	return infer.CreateResponse[CpuFootprintState]{ID: spec.Name, Output: state}, createOutcome(ctx, fmt.Sprintf("creating CPU footprint (%s)", spec.Name), true, err)
}

// Read refreshes the footprint; one gone from AWS is gone from state. An
// import (no sizes in state) reads the configuration from the group and its
// launch template.
func (CpuFootprint) Read(ctx context.Context, req infer.ReadRequest[CpuFootprintArgs, CpuFootprintState]) (infer.ReadResponse[CpuFootprintArgs, CpuFootprintState], error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.ReadResponse[CpuFootprintArgs, CpuFootprintState]{}, err
	}
	name := deref(req.State.Name)
	if name == "" {
		name = req.ID
	}
	f, err := env.FindCPUFootprint(ctx, name, deref(req.State.CreationToken))
	if gone(ctx, err) {
		return infer.ReadResponse[CpuFootprintArgs, CpuFootprintState]{}, nil
	}
	if err != nil {
		return infer.ReadResponse[CpuFootprintArgs, CpuFootprintState]{}, fmt.Errorf("reading CPU footprint (%s): %w", name, err)
	}
	var rec platform.CPUFootprintRecord
	args := req.State.CpuFootprintArgs
	if args.MaxSize == 0 && req.State.ASGName == nil {
		// Import: the configuration comes from the group and its template.
		if rec, err = env.ImportCPUFootprint(ctx, f); err != nil {
			return infer.ReadResponse[CpuFootprintArgs, CpuFootprintState]{}, fmt.Errorf("importing CPU footprint (%s): %w", name, err)
		}
		args = cpuFootprintArgsOf(rec.Spec)
	} else {
		rec = platform.ReadBackCPUFootprint(f, req.State.record())
		args = readBackArgs(args, rec.Spec)
	}
	state := cpuFootprintStateOf(args, rec)
	state.ValidationProfile, state.ValidationResults, state.ValidationApprover = req.State.ValidationProfile, req.State.ValidationResults, req.State.ValidationApprover
	if v := rec.Spec.Validation; v != nil {
		// The instances hwprobe drained in Slurm since the gate passed
		// them: drift the preview reports (and, with onFailure =
		// "replace", the next up repairs).
		if err := env.ReadCPUFootprintHealth(ctx, rec.Spec, f); err != nil {
			p.GetLogger(ctx).Warningf("reading CPU footprint (%s): which instances hwprobe drained in Slurm could not be read: %v", name, err)
		}
		if w := platform.FootprintDrainedWarning(name, v.WithDefaults().OnFailure, f.Drained); w != "" {
			p.GetLogger(ctx).Warning(w)
		}
		state.ValidationResults = markDrained(state.ValidationResults, f.Drained)
	}
	state.SlurmControllerConfig = req.State.SlurmControllerConfig
	return infer.ReadResponse[CpuFootprintArgs, CpuFootprintState]{ID: f.Name, Inputs: args, State: state}, nil
}

// Update converges the footprint to the new inputs. After a failure the
// prior inputs stay in state with what exists now, so the next up finishes
// the change.
func (CpuFootprint) Update(ctx context.Context, req infer.UpdateRequest[CpuFootprintArgs, CpuFootprintState]) (infer.UpdateResponse[CpuFootprintState], error) {
	args := req.Inputs
	if req.DryRun {
		previewSlurm(ctx, args.Orchestrator, func(env *platform.Env, unknown []string) (string, error) {
			prior := req.State.record()
			plan, err := env.PlanCPUFootprint(ctx, &prior, args.spec(unknown))
			if err != nil {
				return "", err
			}
			return plan.SlurmControllerConfig, nil
		})
		out := CpuFootprintState{CpuFootprintArgs: args, ASGName: req.State.ASGName, LaunchTemplateID: req.State.LaunchTemplateID, CreationToken: req.State.CreationToken}
		return infer.UpdateResponse[CpuFootprintState]{Output: out}, nil
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.UpdateResponse[CpuFootprintState]{}, err
	}
	prior := req.State.record()
	spec := args.spec(nil)
	spec.CreationToken = prior.CreationToken
	ctx, cancel := cpuFootprintDeadline(ctx, platform.CPUFootprintUpdateTimeout)
	defer cancel()
	f, err := env.UpdateCPUFootprint(ctx, prior, spec, cpuFootprintOptions(ctx))
	if err != nil {
		if f != nil {
			f.Applied = nil
			return infer.UpdateResponse[CpuFootprintState]{Output: cpuFootprintStateOf(req.State.CpuFootprintArgs, platform.RecordCPUFootprint(f, prior))},
				infer.ResourceInitFailedError{Reasons: []string{fmt.Sprintf("updating CPU footprint (%s): %v", spec.Name, err)}}
		}
		return infer.UpdateResponse[CpuFootprintState]{}, fmt.Errorf("updating CPU footprint (%s): %w", spec.Name, err)
	}
	declared := CpuFootprintState{CpuFootprintArgs: args, CreationToken: req.State.CreationToken}
	out := cpuFootprintStateOf(args, platform.RecordCPUFootprint(f, declared.record()))
	out.ValidationProfile, out.ValidationResults, out.ValidationApprover = footprintValidationOutputs(f)
	out.SlurmControllerConfig = footprintSlurmConfig(f)
	warnFootprintValidation(ctx, f)
	return infer.UpdateResponse[CpuFootprintState]{Output: out}, nil
}

// Delete removes the group (waiting for its instances to terminate), its
// scheduled actions and its launch template.
func (CpuFootprint) Delete(ctx context.Context, req infer.DeleteRequest[CpuFootprintState]) (infer.DeleteResponse, error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	name := deref(req.State.Name)
	if name == "" {
		name = req.ID
	}
	ctx, cancel := cpuFootprintDeadline(ctx, platform.CPUFootprintDeleteTimeout)
	defer cancel()
	if err := env.DeleteCPUFootprint(ctx, name, deref(req.State.CreationToken), cpuFootprintOptions(ctx)); err != nil {
		return infer.DeleteResponse{}, fmt.Errorf("deleting CPU footprint (%s): %w", name, err)
	}
	return infer.DeleteResponse{}, nil
}

// Diff asks the core what the new inputs change over the state: the same
// change set as Terraform's plan. An input not known yet is a change to be
// known at apply, never an absent value.
func (CpuFootprint) Diff(ctx context.Context, req infer.DiffRequest[CpuFootprintArgs, CpuFootprintState]) (infer.DiffResponse, error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.DiffResponse{}, err
	}
	args := req.Inputs
	if deref(args.Name) == "" {
		args.Name = req.State.Name
	}
	spec := args.spec(unknownInputs(ctx))
	prior := req.State.record()
	plan, err := env.PlanCPUFootprint(ctx, &prior, spec)
	if err != nil {
		return infer.DiffResponse{}, fmt.Errorf("planning CPU footprint (%s): %w", spec.Name, err)
	}
	d := infer.DiffResponse{DeleteBeforeReplace: true, DetailedDiff: map[string]p.PropertyDiff{}}
	put := func(cs []platform.Change, kind p.DiffKind) {
		for _, c := range cs {
			path, input := cpuFootprintDiffPath(c.Path, args, req.State)
			d.DetailedDiff[propertyPath(path)] = p.PropertyDiff{Kind: kind, InputDiff: input}
		}
	}
	if cs := plan.Change; cs != nil {
		warnHopLimit(ctx, spec.Name, cs.InPlace)
		put(cs.InPlace, p.Update)
		put(cs.Roll, p.Update)
		put(cs.Repair, p.Update)
		put(cs.Replace, p.UpdateReplace)
	}
	if platform.ReplacesDrainedFootprint(spec) && slices.ContainsFunc(req.State.ValidationResults, func(r GpuValidationResult) bool { return r.Status == platform.NodeDrained }) {
		// Instances hwprobe drained in Slurm: the update replaces them, and
		// the gate judges their replacements.
		d.DetailedDiff["validationResults"] = p.PropertyDiff{Kind: p.Update}
	}
	d.HasChanges = len(d.DetailedDiff) > 0
	return d, nil
}

// cpuFootprintDiffPath is the property a core change shows on, and whether
// it is an input: a change the user did not make (a new choice of type, a
// new AMI behind the same image, default tags, default subnets, a group
// deleted outside) shows on the output that changes.
func cpuFootprintDiffPath(path string, args CpuFootprintArgs, state CpuFootprintState) (string, bool) {
	switch {
	case path == "instance_type" && args.InstanceType == nil:
		return "chosen_instance_type", false
	case path == "image" && deref(args.Image) == deref(state.Image):
		return "image_id", false
	case path == "tags" && maps.Equal(args.Tags, state.Tags):
		return "tags_all", false
	case path == "subnet_ids" && len(args.SubnetIDs) == 0:
		return "resolved_subnet_ids", false
	case path == "asg_name" || path == "launch_template_id":
		return path, false
	}
	return path, true
}

// spec translates the inputs to the domain spec; unknown lists the core
// paths not known yet.
func (c CpuFootprintArgs) spec(unknown []string) platform.CPUFootprintSpec {
	s := platform.CPUFootprintSpec{
		Name:                 deref(c.Name),
		InstanceType:         deref(c.InstanceType),
		CapacityType:         deref(c.CapacityType),
		OnDemandBase:         deref(c.OnDemandBase),
		Size:                 platform.GroupSize{Min: c.MinSize, Max: c.MaxSize, Desired: c.DesiredCapacity},
		SubnetIDs:            slices.Clone(c.SubnetIDs),
		Image:                deref(c.Image),
		InstanceProfile:      deref(c.InstanceProfile),
		KMSKeyARN:            deref(c.KMSKeyARN),
		UserData:             deref(c.UserData),
		MetadataHopLimit:     deref(c.MetadataHopLimit),
		MinHealthyPercentage: deref(c.MinHealthyPercentage),
		Tags:                 c.Tags,
	}
	if len(c.SecurityGroupIDs) > 0 {
		s.SecurityGroupIDs = slices.Sorted(slices.Values(c.SecurityGroupIDs))
	}
	if r := c.Requirements; r != nil {
		s.Requirements = platform.CPURequirements{
			MinVCPUs: deref(r.MinVCPUs), MinMemoryGiB: deref(r.MinMemoryGiB), CPUFeatures: r.CPUFeatures,
			Architecture: deref(r.Architecture), Burstable: deref(r.Burstable), MaxHourlyPrice: deref(r.MaxHourlyPrice),
		}
	}
	for i, sc := range c.Schedule {
		ps := platform.Schedule{Name: sc.Name, Recurrence: sc.Recurrence, TimeZone: deref(sc.TimeZone), Min: sc.MinSize, Max: sc.MaxSize, Desired: sc.DesiredCapacity}
		if d := deref(sc.Duration); d != "" {
			dur, err := platform.ParseScheduleDuration(d)
			if err != nil {
				path := fmt.Sprintf("schedule[%d].duration", i)
				s.InputProblems = append(s.InputProblems, platform.Problem{Path: path, Summary: "Invalid duration", Detail: err.Error() + "."})
			}
			ps.Duration = dur
		}
		s.Schedules = append(s.Schedules, ps)
	}
	if v := c.RootVolume; v != nil {
		vol, ps := platform.VolumeFromInput("root_volume", platform.VolumeInput{SizeGiB: int64(deref(v.SizeGiB)), Type: deref(v.Type), IOPS: int64(deref(v.IOPS)), Throughput: int64(deref(v.Throughput))})
		s.RootVolume, s.InputProblems = vol, append(s.InputProblems, ps...)
	}
	for i, v := range c.DataVolumes {
		vol, ps := platform.VolumeFromInput(fmt.Sprintf("data_volumes[%d]", i), platform.VolumeInput{DeviceName: deref(v.DeviceName), SizeGiB: int64(v.SizeGiB), Type: deref(v.Type), IOPS: int64(deref(v.IOPS)), Throughput: int64(deref(v.Throughput))})
		s.DataVolumes, s.InputProblems = append(s.DataVolumes, vol), append(s.InputProblems, ps...)
	}
	s.Validation = footprintValidationSpec(c.Validation, &s)
	s.Slurm = slurmSpec(c.Orchestrator, unknown)
	s.EKS = eksSpec(c.Orchestrator, unknown)
	s.Kube = kubeSpec(c.Orchestrator, unknown)
	for _, u := range eksUnknowns(unknown) {
		if strings.HasPrefix(u, "tags.") {
			continue // snake-cased tag keys: the caller lists tags["key"]
		}
		s.Unknown = append(s.Unknown, u)
	}
	// infer decodes an unknown element as its zero value: a list with one
	// is not known yet, never a list holding "".
	if !s.Known("subnet_ids") {
		s.SubnetIDs = nil
	}
	if !s.Known("security_group_ids") {
		s.SecurityGroupIDs = nil
	}
	if !s.Known("requirements.cpu_features") {
		s.Requirements.CPUFeatures = nil
	}
	return s
}

// record is the core's record of the state.
func (s CpuFootprintState) record() platform.CPUFootprintRecord {
	spec := s.CpuFootprintArgs.spec(nil)
	spec.CreationToken = deref(s.CreationToken)
	r := platform.CPUFootprintRecord{
		Spec: spec, InstanceTypes: s.InstanceTypes, SubnetIDs: s.ResolvedSubnetIDs, ImageID: deref(s.ImageID), TagsAll: s.TagsAll,
		GroupName: deref(s.ASGName), LaunchTemplateID: deref(s.LaunchTemplateID), CreationToken: deref(s.CreationToken),
	}
	r.Decision = platform.CPUDecision{
		InstanceType: deref(s.ChosenInstanceType), Reason: deref(s.DecisionReason), PriceSource: deref(s.PriceSource),
		HourlyUSD: deref(s.HourlyPriceUSD), MonthlyAtDesired: deref(s.MonthlyCostUSD), MonthlyScheduled: deref(s.MonthlyCostScheduledUSD),
		CostAssumptionNote: deref(s.CostNote), Rejected: s.RejectedCheaper, Candidates: s.Candidates,
	}
	return r
}

// cpuFootprintStateOf writes a core record into the state.
func cpuFootprintStateOf(args CpuFootprintArgs, r platform.CPUFootprintRecord) CpuFootprintState {
	s := CpuFootprintState{
		CpuFootprintArgs:  args,
		ResolvedSubnetIDs: r.SubnetIDs,
		ImageID:           optString(r.ImageID),
		TagsAll:           r.TagsAll,
		ASGName:           optString(r.GroupName),
		LaunchTemplateID:  optString(r.LaunchTemplateID),
		CreationToken:     optString(r.CreationToken),
	}
	if d := r.Decision; d.InstanceType != "" {
		s.ChosenInstanceType, s.DecisionReason = ptr(d.InstanceType), ptr(d.Reason)
		s.RejectedCheaper, s.Candidates, s.InstanceTypes = d.Rejected, d.Candidates, r.InstanceTypes
		hourly, monthly, scheduled := d.Shown()
		s.HourlyPriceUSD, s.PriceSource = ptr(hourly), ptr(d.PriceSource)
		s.MonthlyCostUSD, s.MonthlyCostScheduledUSD = ptr(monthly), ptr(scheduled)
		s.CostNote = optString(d.CostAssumptionNote)
	}
	return s
}

// readBackArgs writes what a refresh read back into the declared inputs:
// sizes (unless schedules own them), capacity, subnets the user declared,
// and schedules changed outside (dropped, so the next up makes them again).
func readBackArgs(args CpuFootprintArgs, s platform.CPUFootprintSpec) CpuFootprintArgs {
	args.MinSize, args.MaxSize, args.DesiredCapacity = s.Size.Min, s.Size.Max, s.Size.Desired
	if s.MetadataHopLimit != 0 {
		args.MetadataHopLimit = ptr(s.MetadataHopLimit)
	}
	if args.CapacityType != nil || s.CapacityType == platform.CapacitySpotMixed {
		args.CapacityType = ptr(s.CapacityType)
	}
	if args.OnDemandBase != nil || s.OnDemandBase != 0 {
		args.OnDemandBase = ptr(s.OnDemandBase)
	}
	if len(args.SubnetIDs) > 0 {
		args.SubnetIDs = slices.Clone(s.SubnetIDs)
	}
	if len(s.Schedules) != len(args.Schedule) {
		kept := args.Schedule[:0:0]
		for _, sc := range args.Schedule {
			if slices.ContainsFunc(s.Schedules, func(x platform.Schedule) bool { return x.Name == sc.Name }) {
				kept = append(kept, sc)
			}
		}
		args.Schedule = kept
	}
	return args
}

// cpuFootprintArgsOf is the inputs of an imported footprint.
func cpuFootprintArgsOf(s platform.CPUFootprintSpec) CpuFootprintArgs {
	optInt := func(v int32) *int {
		if v == 0 {
			return nil
		}
		return ptr(int(v))
	}
	a := CpuFootprintArgs{
		Name: ptr(s.Name), InstanceType: optString(s.InstanceType), CapacityType: optString(s.CapacityType),
		MinSize: s.Size.Min, MaxSize: s.Size.Max, DesiredCapacity: s.Size.Desired,
		SubnetIDs: s.SubnetIDs, Image: optString(s.Image), InstanceProfile: optString(s.InstanceProfile),
		KMSKeyARN: optString(s.KMSKeyARN), UserData: optString(s.UserData), MetadataHopLimit: ptr(s.MetadataHopLimit),
	}
	if s.OnDemandBase != 0 {
		a.OnDemandBase = ptr(s.OnDemandBase)
	}
	if len(s.SecurityGroupIDs) > 0 {
		a.SecurityGroupIDs = s.SecurityGroupIDs
	}
	if len(s.Tags) > 0 {
		a.Tags = s.Tags
	}
	for _, sc := range s.Schedules {
		cs := CpuSchedule{Name: sc.Name, Recurrence: sc.Recurrence, TimeZone: optString(sc.TimeZone), MinSize: sc.Min, MaxSize: sc.Max, DesiredCapacity: sc.Desired}
		if sc.Duration != 0 {
			cs.Duration = ptr(platform.ScheduleDurationText(sc.Duration, ""))
		}
		a.Schedule = append(a.Schedule, cs)
	}
	if v := s.RootVolume; v.SizeGiB > 0 {
		a.RootVolume = &GpuRootVolume{SizeGiB: optInt(v.SizeGiB), Type: optString(v.Type), IOPS: optInt(v.IOPS), Throughput: optInt(v.Throughput)}
	}
	for _, v := range s.DataVolumes {
		a.DataVolumes = append(a.DataVolumes, GpuDataVolume{DeviceName: optString(v.DeviceName), SizeGiB: int(v.SizeGiB), Type: optString(v.Type), IOPS: optInt(v.IOPS), Throughput: optInt(v.Throughput)})
	}
	return a
}

// cpuFootprintDeadline bounds a long operation by the resource's custom
// timeout when the program set one, else by the core's default.
func cpuFootprintDeadline(ctx context.Context, def time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, timeoutOr(ctx, def))
}

// cpuFootprintOptions sends the core's progress to the Pulumi log.
func cpuFootprintOptions(ctx context.Context) platform.CPUFootprintOptions {
	return platform.CPUFootprintOptions{Progress: func(msg string) { p.GetLogger(ctx).InfoStatus(msg) }}
}
