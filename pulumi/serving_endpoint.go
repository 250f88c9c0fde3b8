package pulumi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// servingEndpointToken is the serving endpoint's type token.
const servingEndpointToken = "mlplatform:index:ServingEndpoint"

// ServingEndpoint is a SageMaker real-time endpoint: the Pulumi twin of
// mlplatform_serving_endpoint, over the same core verbs.
type ServingEndpoint struct{}

var (
	_ infer.CustomResource[ServingEndpointArgs, ServingEndpointState] = ServingEndpoint{}
	_ infer.CustomCheck[ServingEndpointArgs]                          = ServingEndpoint{}
	_ infer.CustomDiff[ServingEndpointArgs, ServingEndpointState]     = ServingEndpoint{}
	_ infer.CustomUpdate[ServingEndpointArgs, ServingEndpointState]   = ServingEndpoint{}
	_ infer.CustomRead[ServingEndpointArgs, ServingEndpointState]     = ServingEndpoint{}
	_ infer.CustomDelete[ServingEndpointState]                        = ServingEndpoint{}
	_ infer.Annotated                                                 = (*ServingEndpoint)(nil)
)

// ServingEndpointArgs are the inputs of a serving endpoint.
type ServingEndpointArgs struct {
	Name        *string            `pulumi:"name,optional"`
	Model       ServingModel       `pulumi:"model"`
	Variants    []ServingVariant   `pulumi:"variants"`
	Deployment  *ServingDeployment `pulumi:"deployment,optional"`
	DataCapture *ServingCapture    `pulumi:"dataCapture,optional"`
	KMSKeyARN   *string            `pulumi:"kmsKeyArn,optional"`
	VPCConfig   *ServingVPCConfig  `pulumi:"vpcConfig,optional"`
	// NetworkIsolation unset is the core's default.
	NetworkIsolation *bool             `pulumi:"networkIsolation,optional"`
	Tags             map[string]string `pulumi:"tags,optional"`
}

// ServingVPCConfig puts the model's container in the customer's VPC.
type ServingVPCConfig struct {
	SubnetIDs        []string `pulumi:"subnetIds"`
	SecurityGroupIDs []string `pulumi:"securityGroupIds"`
}

// Annotate describes the VPC configuration.
func (c *ServingVPCConfig) Annotate(a infer.Annotator) {
	a.Describe(&c.SubnetIDs, fmt.Sprintf("Subnet ids (1 to %d), of one VPC, in allowed zones; subnets in two or more zones keep the endpoint up when a zone is not.", platform.ServingMaxSubnets))
	a.Describe(&c.SecurityGroupIDs, fmt.Sprintf("Security group ids (1 to %d) of the subnets' VPC.", platform.ServingMaxSecurityGroups))
}

// ServingModel is the container that serves.
type ServingModel struct {
	Image            string            `pulumi:"image"`
	ModelDataURI     *string           `pulumi:"modelDataUri,optional"`
	Environment      map[string]string `pulumi:"environment,optional" provider:"secret"`
	ExecutionRoleARN string            `pulumi:"executionRoleArn"`
}

// ServingVariant is one production variant.
type ServingVariant struct {
	Name                 string              `pulumi:"name"`
	InstanceType         *string             `pulumi:"instanceType,optional"`
	InitialInstanceCount *int                `pulumi:"initialInstanceCount,optional"`
	InitialWeight        *float64            `pulumi:"initialWeight,optional"`
	Serverless           *ServingServerless  `pulumi:"serverless,optional"`
	Autoscaling          *ServingAutoscaling `pulumi:"autoscaling,optional"`
}

// ServingAutoscaling is an instance variant's autoscaling through
// Application Auto Scaling.
type ServingAutoscaling struct {
	MinCapacity                  int               `pulumi:"minCapacity"`
	MaxCapacity                  int               `pulumi:"maxCapacity"`
	TargetInvocationsPerInstance float64           `pulumi:"targetInvocationsPerInstance"`
	ScaleInCooldownSeconds       *int              `pulumi:"scaleInCooldownSeconds,optional"`
	ScaleOutCooldownSeconds      *int              `pulumi:"scaleOutCooldownSeconds,optional"`
	Schedule                     []ServingSchedule `pulumi:"schedule,optional"`
}

// ServingServerless is a serverless variant's capacity.
type ServingServerless struct {
	MemorySizeMB   int `pulumi:"memorySizeMb"`
	MaxConcurrency int `pulumi:"maxConcurrency"`
}

// ServingDeployment is how an update shifts traffic.
type ServingDeployment struct {
	TrafficRouting                 *string                `pulumi:"trafficRouting,optional"`
	SizeType                       *string                `pulumi:"sizeType,optional"`
	SizeValue                      *int                   `pulumi:"sizeValue,optional"`
	WaitSeconds                    *int                   `pulumi:"waitSeconds,optional"`
	TerminationWaitSeconds         *int                   `pulumi:"terminationWaitSeconds,optional"`
	MaximumExecutionTimeoutSeconds *int                   `pulumi:"maximumExecutionTimeoutSeconds,optional"`
	RollbackAlarms                 []string               `pulumi:"rollbackAlarms,optional"`
	StandardAlarms                 *ServingStandardAlarms `pulumi:"standardAlarms,optional"`
}

// ServingCapture is the capture of requests and responses.
type ServingCapture struct {
	Enabled            *bool    `pulumi:"enabled,optional"`
	SamplingPercentage int      `pulumi:"samplingPercentage"`
	DestinationS3URI   string   `pulumi:"destinationS3Uri"`
	KMSKeyARN          *string  `pulumi:"kmsKeyArn,optional"`
	CaptureOptions     []string `pulumi:"captureOptions,optional"`
}

// ServingEndpointState is the endpoint's state: its inputs and what serves.
type ServingEndpointState struct {
	ServingEndpointArgs
	TagsAll               map[string]string `pulumi:"tagsAll,optional"`
	ARN                   *string           `pulumi:"arn,optional"`
	Status                *string           `pulumi:"status,optional"`
	FailureReason         *string           `pulumi:"failureReason,optional"`
	EndpointConfigName    *string           `pulumi:"endpointConfigName,optional"`
	ModelName             *string           `pulumi:"modelName,optional"`
	LastDeploymentOutcome *string           `pulumi:"lastDeploymentOutcome,optional"`
	MonthlyCostUSD        *float64          `pulumi:"monthlyCostUsd,optional"`
	PriceSource           *string           `pulumi:"priceSource,optional"`
	StandardAlarmNames    []string          `pulumi:"standardAlarmNames,optional"`
}

// Annotate describes the resource.
func (e *ServingEndpoint) Annotate(a infer.Annotator) {
	a.Describe(e, "A SageMaker real-time endpoint (model, endpoint config and endpoint) on GPU or CPU instances, or serverless, that stays in the jurisdiction and stays up through changes. "+
		"The image's registry, the model data and data capture buckets and every KMS key are checked against the residency policy in Check. "+
		"A change of the model, the variants, the data capture or the key is a blue/green update with a new endpoint config (generated names): the endpoint keeps its ARN, "+
		"the old config and model are deleted only once the new config serves, and an update that SageMaker silently rolled back fails with SageMaker's reason. "+
		"Preview warns when a deployment guardrail (canary, linear) will fall back to all at once, and says which rule.")
}

// Annotate describes the inputs.
func (c *ServingEndpointArgs) Annotate(a infer.Annotator) {
	a.Describe(&c.Name, "Endpoint name (1 to 63 letters, digits and hyphens). Default: the resource name. Changing it creates a new endpoint (new ARN and URL).")
	a.Describe(&c.Model, "The container that serves. A change deploys a new model and endpoint config blue/green.")
	a.Describe(&c.Variants, "Production variants (1 to 10): each on instances (`instanceType`, `initialInstanceCount`) or serverless, never mixed in one endpoint.")
	a.Describe(&c.Deployment, "How an update shifts traffic to the new fleet (blue/green). Changing it alone changes nothing in AWS; the next update uses it.")
	a.Describe(&c.DataCapture, "Capture of requests and responses, to a bucket in the jurisdiction.")
	a.Describe(&c.KMSKeyARN, "KMS key ARN that encrypts the instances' storage volumes; in the jurisdiction. Required where customer-managed keys are (jurisdiction `AE` by default), except on instance types with local NVMe instance storage (`ml.g5`, `ml.g6`, `ml.p4d`, `ml.p5` and others): SageMaker encrypts that storage with a hardware module on the instance and refuses a key there, so setting one on such a type is an error in preview.")
	a.Describe(&c.VPCConfig, "Puts the model's container in your VPC (the model's `VpcConfig`): its network interfaces go in these subnets, with these security groups, so that what it reaches is what your VPC allows. "+
		"Checked in Check like every subnet the provider takes: each subnet must exist in the provider's region and lie in a zone the residency policy allows (`residency.excludedZoneIds` included), the subnets in one VPC, the security groups of that VPC; "+
		"ids known only at apply are checked then, before anything is written. Not for serverless endpoints (SageMaker runs them in its own network). "+
		"A model cannot change: changing this deploys a new model and endpoint config blue/green, as a model change does.")
	a.Describe(&c.NetworkIsolation, "Network isolation of the model's container (`EnableNetworkIsolation`): no network call in or out, so the container cannot send what it serves anywhere, nor fetch code or data at run time, even with `vpcConfig`. "+
		"SageMaker still pulls the image and the model data for it, with the execution role. Default `true` on instance endpoints; `false` on serverless endpoints, which SageMaker does not isolate (setting it `true` there is refused). "+
		"Set it to `false` for a container that must call out (an AWS API such as Secrets Manager, a licence server, a feature store), best with `vpcConfig` so that those calls stay in your VPC. "+
		"A model cannot change: changing it deploys a new model blue/green.")
	a.Describe(&c.Tags, "Tags of the endpoint, merged over the provider's `defaultTags`.")
}

// Annotate describes the model.
func (m *ServingModel) Annotate(a infer.Annotator) {
	a.Describe(&m.Image, "ECR image URI (`ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG` or `@sha256:DIGEST`); its registry's region must be in the jurisdiction.")
	a.Describe(&m.ModelDataURI, "S3 URI of the model artifacts (`s3://BUCKET/KEY`), in a bucket in the jurisdiction.")
	a.Describe(&m.Environment, "Environment variables of the container. No place for secrets: anyone allowed sagemaker:DescribeModel can read them. Keep secrets in AWS Secrets Manager in the jurisdiction and have the container read them at start with the execution role: a container that calls Secrets Manager needs `networkIsolation: false` (network isolation, the default, blocks every call out), best with `vpcConfig` and a Secrets Manager VPC endpoint in that VPC. A secret in the Pulumi state.")
	a.Describe(&m.ExecutionRoleARN, "IAM role SageMaker assumes to pull the image and the model data.")
}

// Annotate describes a variant.
func (v *ServingVariant) Annotate(a infer.Annotator) {
	a.Describe(&v.InstanceType, "SageMaker instance type, GPU or CPU: `ml.FAMILY.SIZE`, e.g. `ml.g6.xlarge`, `ml.m5.large`. Families: "+strings.Join(platform.ServingFamilies(), ", ")+".")
	a.Describe(&v.InitialInstanceCount, "Instances of an instance variant (1 to 1000). A variant scaled outside the program shows as a change, unless it has autoscaling: autoscaling owns its count then.")
	a.Describe(&v.InitialWeight, "Traffic weight relative to the other variants; unset means 1.")
	a.Describe(&v.Serverless, "Serverless variant, for small footprints.")
	a.Describe(&v.Autoscaling, "Autoscaling of an instance variant through Application Auto Scaling: a scalable target (`endpoint/NAME/variant/VARIANT`, `sagemaker:variant:DesiredInstanceCount`) registered once the endpoint is in service, "+
		"with a target-tracking policy on `SageMakerVariantInvocationsPerInstance`. Changing it changes the target and the policy in place. "+
		"The instance count autoscaling sets is not a change; bounds, target or cooldowns changed outside the program are. Not for serverless variants.")
}

// Annotate describes a variant's autoscaling.
func (s *ServingAutoscaling) Annotate(a infer.Annotator) {
	a.Describe(&s.MinCapacity, "Fewest instances (at least 1).")
	a.Describe(&s.MaxCapacity, "Most instances (at least minCapacity, at most 1000).")
	a.Describe(&s.TargetInvocationsPerInstance, "Invocations per instance per minute that the policy tracks (more than 0).")
	a.Describe(&s.ScaleInCooldownSeconds, fmt.Sprintf("Seconds after a scale-in before the next (default %d).", platform.ServingDefaultCooldownSeconds))
	a.Describe(&s.ScaleOutCooldownSeconds, fmt.Sprintf("Seconds after a scale-out before the next (default %d).", platform.ServingDefaultCooldownSeconds))
	a.Describe(&s.Schedule, "Scheduled capacity, the CPU footprint's `schedule` shape: at each time `recurrence` fires (in `timeZone`), the variant's scalable target takes the minCapacity and maxCapacity set here "+
		"(an Application Auto Scaling scheduled action); with `duration`, a second action restores this block's bounds when the window ends. Target tracking keeps the count between the bounds in force. "+
		"A scheduled action changed or deleted outside the program shows as a change.")
}

// Annotate describes a serverless variant.
func (s *ServingServerless) Annotate(a infer.Annotator) {
	a.Describe(&s.MemorySizeMB, "Memory: 1024, 2048, 3072, 4096, 5120 or 6144 MB.")
	a.Describe(&s.MaxConcurrency, "Concurrent invocations (1 to 200).")
}

// Annotate describes the deployment settings.
func (d *ServingDeployment) Annotate(a infer.Annotator) {
	a.Describe(&d.TrafficRouting, "One of "+strings.Join(platform.TrafficRoutings(), ", ")+"; unset means `all_at_once`. Canary and linear shifting run on single-variant instance endpoints only; elsewhere SageMaker shifts all at once, and preview warns.")
	a.Describe(&d.SizeType, "Canary size or linear step unit: "+strings.Join(platform.SizeTypes(), ", ")+".")
	a.Describe(&d.SizeValue, "Canary size or linear step.")
	a.Describe(&d.WaitSeconds, fmt.Sprintf("Wait between traffic shifts (0 to %d).", platform.ServingMaxWaitSeconds))
	a.Describe(&d.TerminationWaitSeconds, fmt.Sprintf("How long the old fleet is kept after the switch (0 to %d).", platform.ServingMaxWaitSeconds))
	a.Describe(&d.MaximumExecutionTimeoutSeconds, "Bound of the whole deployment (600 to 28800); unset: SageMaker's default.")
	a.Describe(&d.RollbackAlarms, "CloudWatch alarm names that roll the deployment back (at most 10, the standard alarms included).")
	a.Describe(&d.StandardAlarms, standardAlarmsDescription)
}

// Annotate describes the data capture.
func (c *ServingCapture) Annotate(a infer.Annotator) {
	a.Describe(&c.Enabled, "Capture on (default) or off.")
	a.Describe(&c.SamplingPercentage, "Share of requests captured, 0 to 100.")
	a.Describe(&c.DestinationS3URI, "Where captures go (`s3://BUCKET/PREFIX`), in a bucket in the jurisdiction.")
	a.Describe(&c.KMSKeyARN, "KMS key ARN that encrypts the captures; in the jurisdiction.")
	a.Describe(&c.CaptureOptions, "What is captured: "+strings.Join(platform.CaptureModes(), ", ")+"; unset means both.")
}

// Annotate describes the outputs.
func (s *ServingEndpointState) Annotate(a infer.Annotator) {
	a.Describe(&s.TagsAll, "All tags of the endpoint: `tags` merged over the provider's `defaultTags`.")
	a.Describe(&s.MonthlyCostUSD, fmt.Sprintf("On-Demand cost of a month (%.0f hours) with every instance variant at its initialInstanceCount: instances x hourly price, summed. "+
		"Serverless variants count 0 (priced per use); an autoscaled variant's range is in priceSource.", platform.HoursPerMonth))
	a.Describe(&s.PriceSource, "Where each price in monthlyCostUsd comes from, its date, and whether it is an estimate (a price not quoted for the provider's region is).")
	a.Describe(&s.ARN, "ARN of the endpoint; it stays the same across blue/green updates.")
	a.Describe(&s.Status, "Status of the endpoint: `InService` once serving.")
	a.Describe(&s.FailureReason, "SageMaker's reason when the endpoint failed or the last update was rolled back.")
	a.Describe(&s.EndpointConfigName, "The endpoint config the endpoint serves now (a generated name; it changes with every blue/green update).")
	a.Describe(&s.ModelName, "The model the endpoint serves now (a generated name).")
	a.Describe(&s.LastDeploymentOutcome, "Outcome of the last create or update: `Created`, `Updated` or `RolledBack` (SageMaker rolled the update back: the update failed and the endpoint serves its old config).")
}

// Check runs the core's plan-time checks (validation, residency, guardrail
// warnings): errors fail preview on their properties.
func (ServingEndpoint) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[ServingEndpointArgs], error) {
	args, failures, err := infer.DefaultCheck[ServingEndpointArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[ServingEndpointArgs]{Inputs: args, Failures: failures}, err
	}
	if deref(args.Name) == "" {
		args.Name = ptr(req.Name)
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.CheckResponse[ServingEndpointArgs]{Inputs: args}, err
	}
	unknown := servingUnknowns(unknownPaths(req.NewInputs), unknownTagPaths(req.NewInputs))
	spec := args.spec()
	errs, vs, warnings, err := env.CheckServingEndpoint(ctx, spec, unknown)
	if err != nil {
		return infer.CheckResponse[ServingEndpointArgs]{Inputs: args}, fmt.Errorf("checking serving endpoint (%s): %w", spec.Name, err)
	}
	for _, e := range errs {
		failures = append(failures, p.CheckFailure{Property: propertyPath(e.Path), Reason: e.Detail})
	}
	failures = append(failures, reportViolations(ctx, env.Policy, vs)...)
	failures = append(failures, problemFailures(ctx, warnings)...)
	failures = append(failures, servingScheduleFailures(args)...)
	if req.OldInputs.Len() == 0 && len(errs) == 0 && !slices.Contains(unknown, "name") {
		// A create: an endpoint of the name must not exist.
		taken, err := env.CheckServingEndpointCreate(ctx, spec.Name)
		if err != nil {
			return infer.CheckResponse[ServingEndpointArgs]{Inputs: args}, fmt.Errorf("checking serving endpoint (%s): %w", spec.Name, err)
		}
		for _, e := range taken {
			failures = append(failures, p.CheckFailure{Property: propertyPath(e.Path), Reason: e.Detail})
		}
	}
	return infer.CheckResponse[ServingEndpointArgs]{Inputs: args, Failures: failures}, nil
}

// servingUnknowns lists the core paths of unknown inputs as the core names
// them: a list with an unknown element is unknown at its element; a tag
// value not known is the tags map not known.
func servingUnknowns(paths, tagPaths []string) []string {
	out := slices.DeleteFunc(slices.Clone(paths), func(u string) bool { return strings.HasPrefix(u, "tags.") })
	if len(tagPaths) > 0 {
		out = append(out, platform.ServingEndpointTagsPath)
	}
	for _, u := range paths {
		// an unknown environment value makes the environment unknown
		if strings.HasPrefix(u, "model.environment.") {
			out = append(out, "model.environment")
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Create makes the model, endpoint config and endpoint and waits until it
// serves. An endpoint made but not in service is recorded (failed to
// initialise), never orphaned.
func (ServingEndpoint) Create(ctx context.Context, req infer.CreateRequest[ServingEndpointArgs]) (infer.CreateResponse[ServingEndpointState], error) {
	args := req.Inputs
	if req.DryRun {
		out := ServingEndpointState{ServingEndpointArgs: args}
		if env, err := envFrom(ctx); err == nil {
			out.MonthlyCostUSD, out.PriceSource = servingCost(args.spec(), env.Region(), unknownInputs(ctx))
		}
		return infer.CreateResponse[ServingEndpointState]{ID: deref(args.Name), Output: out}, nil
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.CreateResponse[ServingEndpointState]{}, err
	}
	spec := args.spec()
	ep, vs, err := env.CreateServingEndpoint(ctx, spec, servingWait(ctx, spec.Name, "creation", platform.ServingEndpointCreateTimeout))
	if failures := reportViolations(ctx, env.Policy, vs); len(failures) > 0 && err == nil {
		err = failuresError(failures)
	}
	if ep == nil {
		if err == nil {
			err = errors.New("the core returned no endpoint")
		}
		return infer.CreateResponse[ServingEndpointState]{}, fmt.Errorf("creating serving endpoint (%s): %w", spec.Name, err)
	}
	state := servingState(env, args, ep, "")
	if err != nil {
		return infer.CreateResponse[ServingEndpointState]{ID: spec.Name, Output: state}, infer.ResourceInitFailedError{Reasons: []string{fmt.Sprintf("creating serving endpoint (%s): %v", spec.Name, err)}}
	}
	return infer.CreateResponse[ServingEndpointState]{ID: spec.Name, Output: state}, nil
}

// Read refreshes what serves: a variant scaled outside shows as a change;
// an endpoint gone is gone from state. An import reads everything.
func (ServingEndpoint) Read(ctx context.Context, req infer.ReadRequest[ServingEndpointArgs, ServingEndpointState]) (infer.ReadResponse[ServingEndpointArgs, ServingEndpointState], error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.ReadResponse[ServingEndpointArgs, ServingEndpointState]{}, err
	}
	name := deref(req.State.Name)
	if name == "" {
		name = req.ID
	}
	recorded := platform.ServingEndpointPrior{Spec: req.State.ServingEndpointArgs.spec(), ConfigName: deref(req.State.EndpointConfigName), ModelName: deref(req.State.ModelName)}
	ep, err := env.ReadServingEndpoint(ctx, name, recorded)
	if errors.Is(err, platform.ErrNotFound) {
		return infer.ReadResponse[ServingEndpointArgs, ServingEndpointState]{}, nil
	}
	if err != nil {
		return infer.ReadResponse[ServingEndpointArgs, ServingEndpointState]{}, fmt.Errorf("reading serving endpoint (%s): %w", name, err)
	}
	for _, w := range ep.Warnings {
		p.GetLogger(ctx).Warningf("reading serving endpoint (%s): %s", name, w)
	}
	args := req.State.ServingEndpointArgs
	if args.Model.Image == "" {
		// Import: the declared shape is what exists.
		args = servingArgsOf(ep.Spec)
	}
	state := servingState(env, args, ep, deref(req.State.LastDeploymentOutcome))
	return infer.ReadResponse[ServingEndpointArgs, ServingEndpointState]{ID: name, Inputs: state.ServingEndpointArgs, State: state}, nil
}

// Update deploys a new endpoint config blue/green when what serves
// changes, and retags in place. A rollback by SageMaker fails the update
// with its reason; the prior inputs stay, so the next up tries again.
func (ServingEndpoint) Update(ctx context.Context, req infer.UpdateRequest[ServingEndpointArgs, ServingEndpointState]) (infer.UpdateResponse[ServingEndpointState], error) {
	args := req.Inputs
	if req.DryRun {
		out := req.State
		out.ServingEndpointArgs = args
		out.MonthlyCostUSD, out.PriceSource = nil, nil
		if env, err := envFrom(ctx); err == nil {
			out.MonthlyCostUSD, out.PriceSource = servingCost(args.spec(), env.Region(), unknownInputs(ctx))
		}
		return infer.UpdateResponse[ServingEndpointState]{Output: out}, nil
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.UpdateResponse[ServingEndpointState]{}, err
	}
	spec := args.spec()
	prior := platform.ServingEndpointPrior{Spec: req.State.ServingEndpointArgs.spec(), ConfigName: deref(req.State.EndpointConfigName), ModelName: deref(req.State.ModelName)}
	ep, vs, err := env.UpdateServingEndpoint(ctx, prior, spec, servingWait(ctx, spec.Name, "update", platform.ServingEndpointUpdateTimeout))
	if failures := reportViolations(ctx, env.Policy, vs); len(failures) > 0 && err == nil {
		err = failuresError(failures)
	}
	if ep != nil {
		for _, w := range ep.Warnings {
			p.GetLogger(ctx).Warningf("updating serving endpoint (%s): %s", spec.Name, w)
		}
	}
	if err != nil {
		if ep != nil {
			return infer.UpdateResponse[ServingEndpointState]{Output: servingState(env, req.State.ServingEndpointArgs, ep, deref(req.State.LastDeploymentOutcome))},
				infer.ResourceInitFailedError{Reasons: []string{fmt.Sprintf("updating serving endpoint (%s): %v", spec.Name, err)}}
		}
		return infer.UpdateResponse[ServingEndpointState]{}, fmt.Errorf("updating serving endpoint (%s): %w", spec.Name, err)
	}
	return infer.UpdateResponse[ServingEndpointState]{Output: servingState(env, args, ep, deref(req.State.LastDeploymentOutcome))}, nil
}

// Delete tears down the endpoint, its config and model, in order.
func (ServingEndpoint) Delete(ctx context.Context, req infer.DeleteRequest[ServingEndpointState]) (infer.DeleteResponse, error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	name := deref(req.State.Name)
	if name == "" {
		name = req.ID
	}
	known := platform.ServingEndpointPrior{ConfigName: deref(req.State.EndpointConfigName), ModelName: deref(req.State.ModelName)}
	if err := env.DeleteServingEndpoint(ctx, name, known, servingWait(ctx, name, "deletion", platform.ServingEndpointDeleteTimeout)); err != nil {
		return infer.DeleteResponse{}, fmt.Errorf("deleting serving endpoint (%s): %w", name, err)
	}
	return infer.DeleteResponse{}, nil
}

// Diff asks the core what the new inputs change (PlanServingEndpoint):
// a new name replaces; the model, variants, capture and key deploy a new
// config in place; tags and deployment settings change in place.
func (ServingEndpoint) Diff(ctx context.Context, req infer.DiffRequest[ServingEndpointArgs, ServingEndpointState]) (infer.DiffResponse, error) {
	args := req.Inputs
	if deref(args.Name) == "" {
		args.Name = req.State.Name
	}
	plan := platform.PlanServingEndpoint(req.State.ServingEndpointArgs.spec(), args.spec(), unknownInputs(ctx))
	d := infer.DiffResponse{DetailedDiff: map[string]p.PropertyDiff{}}
	put := func(cs []platform.Change, kind p.DiffKind) {
		for _, c := range cs {
			d.DetailedDiff[propertyPath(c.Path)] = p.PropertyDiff{Kind: kind, InputDiff: true}
		}
	}
	put(plan.InPlace, p.Update)
	put(plan.Config, p.Update)
	put(plan.Replace, p.UpdateReplace) // a new name: the new endpoint is made before the old one goes
	d.HasChanges = len(d.DetailedDiff) > 0
	return d, nil
}

// spec translates the inputs to the core's spec.
func (c ServingEndpointArgs) spec() platform.ServingEndpointSpec {
	s := platform.ServingEndpointSpec{
		Name:             deref(c.Name),
		KMSKeyARN:        deref(c.KMSKeyARN),
		Tags:             c.Tags,
		NetworkIsolation: c.NetworkIsolation,
		Model: platform.ServingModel{
			Image: c.Model.Image, ModelDataURI: deref(c.Model.ModelDataURI),
			Environment: c.Model.Environment, ExecutionRoleARN: c.Model.ExecutionRoleARN,
		},
	}
	if v := c.VPCConfig; v != nil {
		s.VPC = &platform.ServingVPC{SubnetIDs: v.SubnetIDs, SecurityGroupIDs: v.SecurityGroupIDs}
	}
	for _, v := range c.Variants {
		sv := platform.ServingVariant{Name: v.Name, InstanceType: deref(v.InstanceType), InitialInstanceCount: int64(deref(v.InitialInstanceCount)), InitialWeight: deref(v.InitialWeight)}
		if sl := v.Serverless; sl != nil {
			sv.Serverless = &platform.ServingServerless{MemoryMB: int64(sl.MemorySizeMB), MaxConcurrency: int64(sl.MaxConcurrency)}
		}
		if as := v.Autoscaling; as != nil {
			cooldown := func(c *int) int64 {
				if c == nil {
					return platform.ServingDefaultCooldownSeconds
				}
				return int64(*c)
			}
			sv.Autoscaling = &platform.ServingAutoscaling{
				Min: int64(as.MinCapacity), Max: int64(as.MaxCapacity), TargetInvocations: as.TargetInvocationsPerInstance,
				ScaleInCooldownSeconds: cooldown(as.ScaleInCooldownSeconds), ScaleOutCooldownSeconds: cooldown(as.ScaleOutCooldownSeconds),
				Schedules: servingSchedulesSpec(as.Schedule),
			}
		}
		s.Variants = append(s.Variants, sv)
	}
	if d := c.Deployment; d != nil {
		s.Deployment = &platform.ServingDeployment{
			TrafficRouting: deref(d.TrafficRouting), SizeType: deref(d.SizeType), SizeValue: int64(deref(d.SizeValue)),
			WaitSeconds: int64(deref(d.WaitSeconds)), TerminationWaitSeconds: int64(deref(d.TerminationWaitSeconds)),
			MaxExecutionSeconds: int64(deref(d.MaximumExecutionTimeoutSeconds)), RollbackAlarms: d.RollbackAlarms,
			StandardAlarms: d.StandardAlarms.spec(),
		}
	}
	if dc := c.DataCapture; dc != nil {
		s.DataCapture = &platform.ServingDataCapture{
			Enabled: dc.Enabled == nil || *dc.Enabled, SamplingPercentage: int64(dc.SamplingPercentage),
			DestinationS3URI: dc.DestinationS3URI, KMSKeyARN: deref(dc.KMSKeyARN), CaptureOptions: dc.CaptureOptions,
		}
	}
	return s
}

// servingArgsOf is the inputs in the shape of a spec (the inverse of spec):
// what a read back or an import records.
func servingArgsOf(s platform.ServingEndpointSpec) ServingEndpointArgs {
	a := ServingEndpointArgs{
		Name: ptr(s.Name), KMSKeyARN: optString(s.KMSKeyARN), Tags: s.Tags, NetworkIsolation: s.NetworkIsolation,
		Model: ServingModel{Image: s.Model.Image, ModelDataURI: optString(s.Model.ModelDataURI), Environment: s.Model.Environment, ExecutionRoleARN: s.Model.ExecutionRoleARN},
	}
	if v := s.VPC; v != nil {
		a.VPCConfig = &ServingVPCConfig{SubnetIDs: v.SubnetIDs, SecurityGroupIDs: v.SecurityGroupIDs}
	}
	for _, v := range s.Variants {
		sv := ServingVariant{Name: v.Name, InstanceType: optString(v.InstanceType)}
		if v.InitialInstanceCount != 0 {
			sv.InitialInstanceCount = ptr(int(v.InitialInstanceCount))
		}
		if v.InitialWeight != 0 {
			sv.InitialWeight = ptr(v.InitialWeight)
		}
		if sl := v.Serverless; sl != nil {
			sv.Serverless = &ServingServerless{MemorySizeMB: int(sl.MemoryMB), MaxConcurrency: int(sl.MaxConcurrency)}
		}
		if as := v.Autoscaling; as != nil {
			cooldown := func(c int64) *int {
				if c == platform.ServingDefaultCooldownSeconds {
					return nil // the default, as an unset input
				}
				return ptr(int(c))
			}
			sv.Autoscaling = &ServingAutoscaling{
				MinCapacity: int(as.Min), MaxCapacity: int(as.Max), TargetInvocationsPerInstance: as.TargetInvocations,
				ScaleInCooldownSeconds: cooldown(as.ScaleInCooldownSeconds), ScaleOutCooldownSeconds: cooldown(as.ScaleOutCooldownSeconds),
				Schedule: servingSchedulesArgs(as.Schedules),
			}
		}
		a.Variants = append(a.Variants, sv)
	}
	if dc := s.DataCapture; dc != nil {
		a.DataCapture = &ServingCapture{Enabled: ptr(dc.Enabled), SamplingPercentage: int(dc.SamplingPercentage), DestinationS3URI: dc.DestinationS3URI,
			KMSKeyARN: optString(dc.KMSKeyARN), CaptureOptions: dc.CaptureOptions}
	}
	return a
}

// servingState is the state after any verb: what exists in the declared
// shape (the core's read-back rules), and what serves.
func servingState(env *platform.Env, args ServingEndpointArgs, ep *platform.ServingEndpoint, lastDeployment string) ServingEndpointState {
	rb := env.ReadBackServingEndpoint(ep, args.spec(), lastDeployment)
	cost, source := servingCost(rb.Spec, env.Region(), nil)
	declared := servingArgsOf(rb.Spec)
	declared.Deployment = readBackDeployment(args, rb.Spec) // not observable but the standard alarms: as declared
	keepScheduleText(&declared, args)
	if args.DataCapture != nil && declared.DataCapture != nil && args.DataCapture.Enabled == nil && declared.DataCapture.Enabled != nil && *declared.DataCapture.Enabled {
		declared.DataCapture.Enabled = nil // the default, as declared
	}
	return ServingEndpointState{
		ServingEndpointArgs:   declared,
		TagsAll:               rb.TagsAll,
		ARN:                   optString(rb.ARN),
		Status:                optString(rb.Status),
		FailureReason:         optString(rb.FailureReason),
		EndpointConfigName:    optString(rb.ConfigName),
		ModelName:             optString(rb.ModelName),
		LastDeploymentOutcome: optString(rb.LastDeployment),
		MonthlyCostUSD:        cost,
		PriceSource:           source,
		StandardAlarmNames:    rb.StandardAlarmNames,
	}
}

// servingCost is the core's monthly cost of s; nil while a value it needs
// is unknown or the prices cannot be read.
func servingCost(s platform.ServingEndpointSpec, region string, unknown []string) (*float64, *string) {
	c, ok, err := platform.ServingEndpointCostOf(s, region, unknown)
	if err != nil || !ok {
		return nil, nil
	}
	return ptr(c.MonthlyUSD), ptr(c.Source)
}

// servingWait bounds a wait by the program's custom timeout, else by the
// core's default, and reports progress to the Pulumi log.
func servingWait(ctx context.Context, name, what string, def time.Duration) platform.ServingWait {
	return platform.ServingWait{
		Timeout: timeoutOr(ctx, def),
		Progress: func(state string, elapsed time.Duration) {
			p.GetLogger(ctx).InfoStatusf("serving endpoint %s %s: %s (%s)", name, what, state, elapsed.Round(time.Second))
		},
	}
}
