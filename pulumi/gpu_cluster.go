package pulumi

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// GpuCluster is a GPU training cluster: the Pulumi twin of
// mlplatform_gpu_cluster, over the same core verbs.
type GpuCluster struct{}

var (
	_ infer.CustomResource[GpuClusterArgs, GpuClusterState] = GpuCluster{}
	_ infer.CustomCheck[GpuClusterArgs]                     = GpuCluster{}
	_ infer.CustomDiff[GpuClusterArgs, GpuClusterState]     = GpuCluster{}
	_ infer.CustomUpdate[GpuClusterArgs, GpuClusterState]   = GpuCluster{}
	_ infer.CustomRead[GpuClusterArgs, GpuClusterState]     = GpuCluster{}
	_ infer.CustomDelete[GpuClusterState]                   = GpuCluster{}
	_ infer.Annotated                                       = (*GpuCluster)(nil)
)

// GpuClusterArgs are the inputs of a GPU cluster.
type GpuClusterArgs struct {
	Name               *string           `pulumi:"name,optional"`
	InstanceType       string            `pulumi:"instanceType"`
	NodeCount          int               `pulumi:"nodeCount"`
	Zone               *string           `pulumi:"zone,optional"`
	ZoneID             *string           `pulumi:"zoneId,optional"`
	ZoneFallback       *bool             `pulumi:"zoneFallback,optional"`
	SubnetID           *string           `pulumi:"subnetId,optional"`
	VPCID              *string           `pulumi:"vpcId,optional"`
	SecurityGroupIDs   []string          `pulumi:"securityGroupIds,optional"`
	InstanceProfile    *string           `pulumi:"instanceProfile,optional"`
	Image              string            `pulumi:"image"`
	PlacementGroupName *string           `pulumi:"placementGroupName,optional"`
	EFAInterfaces      *int              `pulumi:"efaInterfaces,optional"`
	Capacity           *GpuCapacity      `pulumi:"capacity,optional"`
	KMSKeyARN          *string           `pulumi:"kmsKeyArn,optional"`
	RootVolume         *GpuRootVolume    `pulumi:"rootVolume,optional"`
	DataVolumes        []GpuDataVolume   `pulumi:"dataVolumes,optional"`
	UserData           *string           `pulumi:"userData,optional" provider:"secret"`
	MetadataHopLimit   *int              `pulumi:"metadataHopLimit,optional"`
	Tags               map[string]string `pulumi:"tags,optional"`
	Rollout            *GpuRollout       `pulumi:"rollout,optional"`
	CapacityRetry      *GpuCapacityRetry `pulumi:"capacityRetry,optional"`
	Validation         *GpuValidation    `pulumi:"validation,optional"`
	Orchestrator       *Orchestrator     `pulumi:"orchestrator,optional"`
}

// GpuCapacity is what capacity nodes launch into.
type GpuCapacity struct {
	Type          string  `pulumi:"type"`
	ReservationID *string `pulumi:"reservationId,optional"`
	SpotMaxPrice  *string `pulumi:"spotMaxPrice,optional"`
}

// GpuRootVolume is the root volume of every node.
type GpuRootVolume struct {
	SizeGiB    *int    `pulumi:"sizeGib,optional"`
	Type       *string `pulumi:"type,optional"`
	IOPS       *int    `pulumi:"iops,optional"`
	Throughput *int    `pulumi:"throughput,optional"`
}

// GpuDataVolume is a further EBS volume of every node.
type GpuDataVolume struct {
	DeviceName *string `pulumi:"deviceName,optional"`
	SizeGiB    int     `pulumi:"sizeGib"`
	Type       *string `pulumi:"type,optional"`
	IOPS       *int    `pulumi:"iops,optional"`
	Throughput *int    `pulumi:"throughput,optional"`
}

// GpuRollout is how stale nodes are replaced.
type GpuRollout struct {
	Strategy  *string `pulumi:"strategy,optional"`
	BatchSize *int    `pulumi:"batchSize,optional"`
}

// GpuCapacityRetry is how launches retry capacity errors.
type GpuCapacityRetry struct {
	Attempts     *int    `pulumi:"attempts,optional"`
	InitialDelay *string `pulumi:"initialDelay,optional"`
}

// GpuClusterState is the cluster's state: its inputs, what planning resolved
// and the nodes that exist.
type GpuClusterState struct {
	GpuClusterArgs
	ImageID               *string           `pulumi:"imageId,optional"`
	TagsAll               map[string]string `pulumi:"tagsAll,optional"`
	LaunchTemplateID      *string           `pulumi:"launchTemplateId,optional"`
	LaunchTemplateVersion *int              `pulumi:"launchTemplateVersion,optional"`
	PlacementGroup        *string           `pulumi:"placementGroup,optional"`
	PlacementZoneID       *string           `pulumi:"placementZoneId,optional"`
	NodeIDs               []string          `pulumi:"nodeIds,optional"`
	PrivateIPs            []string          `pulumi:"privateIps,optional"`
	Nodes                 []GpuNode         `pulumi:"nodes,optional"`
	CreationToken         *string           `pulumi:"creationToken,optional"`
	// ValidationProfile and ValidationResults: the validation gate's.
	ValidationProfile *string               `pulumi:"validationProfile,optional"`
	ValidationResults []GpuValidationResult `pulumi:"validationResults,optional"`
	// SlurmControllerConfig is what the Slurm controller needs for the
	// nodes (orchestrator.slurm).
	SlurmControllerConfig *string `pulumi:"slurmControllerConfig,optional"`
}

// GpuNode is one node of the cluster.
type GpuNode struct {
	Index         int    `pulumi:"index"`
	ID            string `pulumi:"id"`
	PrivateIP     string `pulumi:"privateIp"`
	Zone          string `pulumi:"zone"`
	ZoneID        string `pulumi:"zoneId"`
	SubnetID      string `pulumi:"subnetId"`
	State         string `pulumi:"state"`
	InstanceType  string `pulumi:"instanceType"`
	EFAInterfaces int    `pulumi:"efaInterfaces"`
}

// Annotate describes the resource.
func (g *GpuCluster) Annotate(a infer.Annotator) {
	a.Describe(g, "A GPU training cluster on EC2: `nodeCount` nodes of one GPU instance type in one availability zone, in a cluster placement group, "+
		"with as many EFA interfaces as the type supports and KMS-encrypted volumes. Residency (zone, KMS key, instance profile, tags) and the instance type "+
		"(offered in the zone, EFA, placement) are checked in Check, so `pulumi preview` fails before anything is launched.")
}

// Annotate describes the inputs.
func (c *GpuClusterArgs) Annotate(a infer.Annotator) {
	a.Describe(&c.Name, "Cluster name, unique in the region: 1 to 100 letters, digits, `-`, `_` or `.`. Default: the resource name. Changing it replaces the cluster.")
	a.Describe(&c.InstanceType, "GPU instance type, e.g. `p5en.48xlarge`. It must be offered in the zone. Changing it rolls the nodes.")
	a.Describe(&c.NodeCount, fmt.Sprintf("Number of nodes, 1 to %d. Changing it scales in place.", platform.MaxGPUClusterNodes))
	a.Describe(&c.Zone, "Availability zone name, e.g. `me-central-1a`. Prefer `zoneId`. Changing it replaces the cluster.")
	a.Describe(&c.ZoneID, "Availability zone id, e.g. `mec1-az1`. Default: the zone of `subnetId` or of the capacity reservation, else the first allowed zone that offers the type. Changing it replaces the cluster.")
	a.Describe(&c.ZoneFallback, "On capacity errors, launch in another zone of the jurisdiction that offers the type; never outside it. Default `false`.")
	a.Describe(&c.SubnetID, "Subnet of every node's network interfaces. Default: a subnet of `vpcId` in the zone, else the zone's default subnet. Changing it replaces the cluster.")
	a.Describe(&c.VPCID, "VPC to pick the subnet from in the zone. Changing it replaces the cluster.")
	a.Describe(&c.SecurityGroupIDs, "Security groups of every network interface. Changing them rolls the nodes.")
	a.Describe(&c.InstanceProfile, "IAM instance profile name or ARN for the nodes.")
	a.Describe(&c.Image, "Machine image: an AMI id (`ami-...`) or the name of an SSM parameter that holds one. The parameter is read at preview: when it points to a new AMI, the update rolls the nodes.")
	a.Describe(&c.PlacementGroupName, "Name of an existing cluster placement group. Default: the cluster creates and owns `mlplatform-<name>`. Changing it replaces the cluster.")
	a.Describe(&c.EFAInterfaces, "EFA interfaces per node. Default: as many as the type supports; 0 for none.")
	a.Describe(&c.Capacity, "What capacity nodes launch into. Default: on-demand.")
	a.Describe(&c.KMSKeyARN, "ARN of the KMS key that encrypts every volume. It must lie inside the jurisdiction.")
	a.Describe(&c.RootVolume, "Root volume of every node (encrypted).")
	a.Describe(&c.DataVolumes, "Further EBS volumes of every node (encrypted, deleted with the node).")
	a.Describe(&c.MetadataHopLimit, metadataHopLimitDoc("nodes", "node"))
	a.SetDefault(&c.MetadataHopLimit, platform.DefaultMetadataHopLimit)
	a.Describe(&c.UserData, "User data run at boot (plain text, at most 16 KiB). Changing it rolls the nodes. User data is no place for secrets: anyone allowed ec2:DescribeInstanceAttribute or ec2:DescribeLaunchTemplateVersions can read it, and so can every process on the instance through the metadata service. Keep secrets in AWS Secrets Manager in the jurisdiction and have the script read them at boot with the instance role (aws secretsmanager get-secret-value). A secret in the Pulumi state.")
	a.Describe(&c.Tags, "Tags of the nodes, their volumes, the launch template and the placement group.")
	a.Describe(&c.Rollout, "How nodes are replaced when what a node is changes.")
	a.Describe(&c.CapacityRetry, "How a launch retries `InsufficientInstanceCapacity` in a zone.")
	a.Describe(&c.Orchestrator, orchestratorDoc)
}

// Annotate describes the capacity settings.
func (c *GpuCapacity) Annotate(a infer.Annotator) {
	a.Describe(&c.Type, "`on_demand`, `capacity_reservation`, `capacity_block` or `spot`.")
	a.Describe(&c.ReservationID, "Id (`cr-...`) of the capacity reservation or capacity block.")
	a.Describe(&c.SpotMaxPrice, "Maximum spot price in USD per hour.")
}

// Annotate describes the outputs.
func (s *GpuClusterState) Annotate(a infer.Annotator) {
	a.Describe(&s.ImageID, "The AMI the nodes run: `image` resolved.")
	a.Describe(&s.TagsAll, "`tags` merged over the provider's `defaultTags`.")
	a.Describe(&s.LaunchTemplateID, "Id of the launch template the cluster owns.")
	a.Describe(&s.LaunchTemplateVersion, "Latest version of the launch template.")
	a.Describe(&s.PlacementGroup, "The cluster placement group the nodes run in: `placementGroupName`, or `mlplatform-<name>` that the cluster owns.")
	a.Describe(&s.PlacementZoneID, "Zone id the nodes run in.")
	a.Describe(&s.NodeIDs, "Instance ids of the nodes, by node index.")
	a.Describe(&s.PrivateIPs, "Private IPv4 addresses of the nodes, by node index.")
	a.Describe(&s.Nodes, "The nodes, by node index.")
	a.Describe(&s.SlurmControllerConfig, slurmControllerConfigDoc)
	a.Describe(&s.CreationToken, "Random token of the create that made the cluster (tag `mlplatform:creation-token`): it proves this resource owns the cluster. A create refuses a cluster of the same name it cannot prove it owns (import it instead).")
}

// Check validates the inputs and runs every plan-time check of the core
// (PlanGPUCluster): problems and residency violations fail preview on their
// properties.
func (GpuCluster) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[GpuClusterArgs], error) {
	args, failures, err := infer.DefaultCheck[GpuClusterArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[GpuClusterArgs]{Inputs: args, Failures: failures}, err
	}
	if args.MetadataHopLimit == nil && !unknownInput(req.NewInputs, "metadataHopLimit") {
		args.MetadataHopLimit = ptr(platform.DefaultMetadataHopLimit) // recorded, so the state says what the nodes run
	}
	if args.Name == nil || *args.Name == "" {
		args.Name = ptr(req.Name)
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.CheckResponse[GpuClusterArgs]{Inputs: args}, err
	}
	spec := args.spec(wholeListUnknowns(req.NewInputs))
	plan, err := env.PlanGPUCluster(ctx, nil, spec)
	if err != nil {
		return infer.CheckResponse[GpuClusterArgs]{Inputs: args}, fmt.Errorf("planning GPU cluster (%s): %w", spec.Name, err)
	}
	failures = reportViolations(ctx, env.Policy, plan.Violations)
	failures = append(failures, problemFailures(ctx, plan.Problems)...)
	return infer.CheckResponse[GpuClusterArgs]{Inputs: args, Failures: failures}, nil
}

// Create launches the cluster. After a partial failure what exists is
// recorded (the resource is marked as failed to initialise), so no GPU node
// is ever orphaned; a retry converges because the core is idempotent.
func (GpuCluster) Create(ctx context.Context, req infer.CreateRequest[GpuClusterArgs]) (infer.CreateResponse[GpuClusterState], error) {
	args := req.Inputs
	if req.DryRun {
		previewSlurm(ctx, args.Orchestrator, func(env *platform.Env, unknown []string) (string, error) {
			plan, err := env.PlanGPUCluster(ctx, nil, args.spec(unknown))
			if err != nil {
				return "", err
			}
			return plan.SlurmControllerConfig, nil
		})
		return infer.CreateResponse[GpuClusterState]{ID: deref(args.Name), Output: GpuClusterState{GpuClusterArgs: args}}, nil
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.CreateResponse[GpuClusterState]{}, err
	}
	spec := args.spec(nil)
	ctx, cancel := gpuClusterDeadline(ctx, platform.OpCreate)
	defer cancel()
	c, err := env.CreateGPUCluster(ctx, spec, gpuClusterOptions(ctx))
	warnValidation(ctx, c)
	err = createOutcome(ctx, fmt.Sprintf("creating GPU cluster (%s)", spec.Name), c != nil, err)
	if c == nil {
		return infer.CreateResponse[GpuClusterState]{}, err
	}
	return infer.CreateResponse[GpuClusterState]{ID: c.Name, Output: gpuClusterState(env, args, c)}, err
}

// Read refreshes the nodes; a cluster gone from AWS is gone from state. An
// import (no instance type in state) reads the configuration from the
// cluster's launch template.
func (GpuCluster) Read(ctx context.Context, req infer.ReadRequest[GpuClusterArgs, GpuClusterState]) (infer.ReadResponse[GpuClusterArgs, GpuClusterState], error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.ReadResponse[GpuClusterArgs, GpuClusterState]{}, err
	}
	name := deref(req.State.Name)
	if name == "" {
		name = req.ID
	}
	c, err := env.FindGPUCluster(ctx, name, deref(req.State.CreationToken))
	if gone(ctx, err) {
		return infer.ReadResponse[GpuClusterArgs, GpuClusterState]{}, nil
	}
	if err != nil {
		return infer.ReadResponse[GpuClusterArgs, GpuClusterState]{}, fmt.Errorf("reading GPU cluster (%s): %w", name, err)
	}
	args := req.Inputs
	if args.InstanceType == "" {
		args = req.State.GpuClusterArgs
	}
	if args.InstanceType == "" {
		if args, err = importedGPUClusterArgs(ctx, env, c); err != nil {
			return infer.ReadResponse[GpuClusterArgs, GpuClusterState]{}, err
		}
	}
	// What the nodes are goes into the declared inputs and the recorded
	// image and tags, so drift shows in the next preview and the next up
	// repairs it.
	declared := req.State
	declared.GpuClusterArgs = args
	if declared.TagsAll == nil {
		declared.TagsAll = env.MergeTags(args.Tags)
	}
	recorded := declared.record()
	if err := env.ReadGPUClusterHealth(ctx, recorded.Spec, c); err != nil {
		p.GetLogger(ctx).Warningf("reading GPU cluster (%s): which nodes hwprobe drained in Slurm could not be read: %v", name, err)
	}
	if v := recorded.Spec.Validation; v != nil {
		if w := platform.DrainedWarning(name, v.WithDefaults().OnFailure, c.Drained); w != "" {
			p.GetLogger(ctx).Warning(w)
		}
	}
	rec := platform.ReadBackGPUCluster(c, recorded)
	args.NodeCount, args.InstanceType = rec.Spec.NodeCount, rec.Spec.InstanceType
	if rec.Spec.MetadataHopLimit != 0 {
		args.MetadataHopLimit = ptr(rec.Spec.MetadataHopLimit)
	}
	state := gpuClusterStateOf(args, rec)
	state.ValidationProfile, state.ValidationResults = req.State.ValidationProfile, markDrained(req.State.ValidationResults, c.Drained)
	state.SlurmControllerConfig = req.State.SlurmControllerConfig
	return infer.ReadResponse[GpuClusterArgs, GpuClusterState]{ID: c.Name, Inputs: args, State: state}, nil
}

// Update converges the cluster to the new inputs: scaling, rolling stale
// nodes, retagging. After a failure the prior inputs stay in state with the
// nodes as they are now, so the next up finishes the change.
func (GpuCluster) Update(ctx context.Context, req infer.UpdateRequest[GpuClusterArgs, GpuClusterState]) (infer.UpdateResponse[GpuClusterState], error) {
	args := req.Inputs
	if req.DryRun {
		previewSlurm(ctx, args.Orchestrator, func(env *platform.Env, unknown []string) (string, error) {
			prior := req.State.record()
			plan, err := env.PlanGPUCluster(ctx, &prior, args.spec(unknown))
			if err != nil {
				return "", err
			}
			return plan.SlurmControllerConfig, nil
		})
		return infer.UpdateResponse[GpuClusterState]{Output: GpuClusterState{GpuClusterArgs: args, LaunchTemplateID: req.State.LaunchTemplateID, PlacementGroup: req.State.PlacementGroup, CreationToken: req.State.CreationToken}}, nil
	}
	env, err := envFrom(ctx)
	if err != nil {
		return infer.UpdateResponse[GpuClusterState]{}, err
	}
	spec := args.spec(nil)
	spec.CreationToken = deref(req.State.CreationToken)
	ctx, cancel := gpuClusterDeadline(ctx, platform.OpUpdate)
	defer cancel()
	c, err := env.UpdateGPUCluster(ctx, spec, gpuClusterOptions(ctx))
	warnValidation(ctx, c)
	if err != nil {
		if c != nil {
			return infer.UpdateResponse[GpuClusterState]{Output: gpuClusterState(env, req.State.GpuClusterArgs, c)},
				infer.ResourceInitFailedError{Reasons: []string{fmt.Sprintf("updating GPU cluster (%s): %v", spec.Name, err)}}
		}
		return infer.UpdateResponse[GpuClusterState]{}, fmt.Errorf("updating GPU cluster (%s): %w", spec.Name, err)
	}
	return infer.UpdateResponse[GpuClusterState]{Output: gpuClusterState(env, args, c)}, nil
}

// Delete terminates the nodes and removes what the cluster owns.
func (GpuCluster) Delete(ctx context.Context, req infer.DeleteRequest[GpuClusterState]) (infer.DeleteResponse, error) {
	env, err := envFrom(ctx)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	name := deref(req.State.Name)
	if name == "" {
		name = req.ID
	}
	ctx, cancel := gpuClusterDeadline(ctx, platform.OpDelete)
	defer cancel()
	// The cluster as its state records it: with Slurm, its nodes leave
	// Slurm before they are terminated.
	recorded := req.State.spec(nil)
	recorded.Name, recorded.CreationToken = name, deref(req.State.CreationToken)
	if err := env.DeleteGPUCluster(ctx, recorded, gpuClusterOptions(ctx)); err != nil {
		return infer.DeleteResponse{}, fmt.Errorf("deleting GPU cluster (%s): %w", name, err)
	}
	return infer.DeleteResponse{}, nil
}

// spec translates the inputs to the domain spec; unknown lists the core
// paths not known yet. Values out of range are the spec's InputProblems,
// which the core reports.
func (c GpuClusterArgs) spec(unknown []string) platform.GPUClusterSpec {
	s := platform.GPUClusterSpec{
		Name:             deref(c.Name),
		InstanceType:     c.InstanceType,
		NodeCount:        c.NodeCount,
		Zone:             deref(c.Zone),
		ZoneID:           deref(c.ZoneID),
		ZoneFallback:     deref(c.ZoneFallback),
		SubnetID:         deref(c.SubnetID),
		VPCID:            deref(c.VPCID),
		SecurityGroupIDs: slices.Sorted(slices.Values(c.SecurityGroupIDs)),
		InstanceProfile:  deref(c.InstanceProfile),
		Image:            c.Image,
		PlacementGroup:   deref(c.PlacementGroupName),
		EFAInterfaces:    c.EFAInterfaces,
		KMSKeyARN:        deref(c.KMSKeyARN),
		UserData:         deref(c.UserData),
		MetadataHopLimit: deref(c.MetadataHopLimit),
		Tags:             c.Tags,
	}
	s.Validation = c.Validation.validationSpec(&s)
	s.Slurm = slurmSpec(c.Orchestrator, unknown)
	s.EKS = eksSpec(c.Orchestrator, unknown)
	s.Kube = kubeSpec(c.Orchestrator, unknown)
	if len(s.SecurityGroupIDs) == 0 {
		s.SecurityGroupIDs = nil
	}
	if c.Capacity != nil {
		s.Capacity = platform.Capacity{Type: c.Capacity.Type, ReservationID: deref(c.Capacity.ReservationID), SpotMaxPrice: deref(c.Capacity.SpotMaxPrice)}
	}
	if v := c.RootVolume; v != nil {
		vol, ps := platform.VolumeFromInput("root_volume", platform.VolumeInput{SizeGiB: int64(deref(v.SizeGiB)), Type: deref(v.Type), IOPS: int64(deref(v.IOPS)), Throughput: int64(deref(v.Throughput))})
		s.RootVolume, s.InputProblems = vol, append(s.InputProblems, ps...)
	}
	for i, v := range c.DataVolumes {
		vol, ps := platform.VolumeFromInput(fmt.Sprintf("data_volumes[%d]", i), platform.VolumeInput{DeviceName: deref(v.DeviceName), SizeGiB: int64(v.SizeGiB), Type: deref(v.Type), IOPS: int64(deref(v.IOPS)), Throughput: int64(deref(v.Throughput))})
		s.DataVolumes, s.InputProblems = append(s.DataVolumes, vol), append(s.InputProblems, ps...)
	}
	if r := c.Rollout; r != nil {
		ro, ps := platform.RolloutFromInput(deref(r.Strategy), int64Ptr(r.BatchSize))
		s.Rollout, s.InputProblems = ro, append(s.InputProblems, ps...)
	}
	if r := c.CapacityRetry; r != nil {
		cr, ps := platform.CapacityRetryFromInput(platform.CapacityRetryInput{Attempts: int64Ptr(r.Attempts), InitialDelay: r.InitialDelay})
		s.CapacityRetry, s.InputProblems = cr, append(s.InputProblems, ps...)
	}
	for _, u := range eksUnknowns(unknown) {
		if strings.HasPrefix(u, "tags.") {
			continue // snake-cased tag keys: the caller lists tags["key"]
		}
		if u == "capacity" {
			s.Unknown = append(s.Unknown, "capacity.type", "capacity.reservation_id", "capacity.spot_max_price")
			continue
		}
		s.Unknown = append(s.Unknown, u)
	}
	return s
}

// gpuClusterState is the state after a create or update: the inputs as
// declared, and what exists as outputs.
func gpuClusterState(env *platform.Env, args GpuClusterArgs, c *platform.GPUCluster) GpuClusterState {
	declared := GpuClusterState{GpuClusterArgs: args, TagsAll: env.MergeTags(args.Tags)}
	s := gpuClusterStateOf(args, platform.RecordGPUCluster(c, declared.record()))
	s.ValidationProfile, s.ValidationResults = validationOutputs(c)
	s.SlurmControllerConfig = optString(c.SlurmControllerConfig)
	return s
}

// gpuClusterStateOf writes a core record into the state.
func gpuClusterStateOf(args GpuClusterArgs, r platform.GPUClusterRecord) GpuClusterState {
	s := GpuClusterState{
		GpuClusterArgs:        args,
		ImageID:               optString(r.ImageID),
		TagsAll:               r.TagsAll,
		LaunchTemplateID:      ptr(r.LaunchTemplateID),
		LaunchTemplateVersion: ptr(int(r.LaunchTemplateVersion)),
		PlacementGroup:        ptr(r.PlacementGroup),
		PlacementZoneID:       ptr(r.PlacementZoneID),
		CreationToken:         ptr(r.CreationToken),
		NodeIDs:               make([]string, 0, len(r.Nodes)),
		PrivateIPs:            make([]string, 0, len(r.Nodes)),
		Nodes:                 make([]GpuNode, 0, len(r.Nodes)),
	}
	for _, n := range r.Nodes {
		s.NodeIDs = append(s.NodeIDs, n.InstanceID)
		s.PrivateIPs = append(s.PrivateIPs, n.PrivateIP)
		s.Nodes = append(s.Nodes, GpuNode{Index: n.Index, ID: n.InstanceID, PrivateIP: n.PrivateIP, Zone: n.Zone, ZoneID: n.ZoneID, SubnetID: n.SubnetID,
			State: n.State, InstanceType: n.InstanceType, EFAInterfaces: n.EFAInterfaces})
	}
	return s
}

// record is the core's record of the state: the declared inputs, and where
// the nodes are for what Pulumi does not record resolved.
func (s GpuClusterState) record() platform.GPUClusterRecord {
	spec := s.GpuClusterArgs.spec(nil)
	r := platform.GPUClusterRecord{
		Spec: spec, ImageID: deref(s.ImageID), PlacementGroup: deref(s.PlacementGroup), TagsAll: s.TagsAll,
		Zone: deref(s.Zone), ZoneID: cmp.Or(deref(s.ZoneID), deref(s.PlacementZoneID)), SubnetID: deref(s.SubnetID),
		EFAInterfaces: s.EFAInterfaces, LaunchTemplateID: deref(s.LaunchTemplateID), PlacementZoneID: deref(s.PlacementZoneID),
		CreationToken: deref(s.CreationToken),
	}
	if s.LaunchTemplateVersion != nil {
		r.LaunchTemplateVersion = int64(*s.LaunchTemplateVersion)
	}
	for _, n := range s.Nodes {
		r.Nodes = append(r.Nodes, platform.GPUNode{Index: n.Index, InstanceID: n.ID, PrivateIP: n.PrivateIP, Zone: n.Zone, ZoneID: n.ZoneID,
			SubnetID: n.SubnetID, State: n.State, InstanceType: n.InstanceType, EFAInterfaces: n.EFAInterfaces})
	}
	if len(s.Nodes) > 0 {
		r.Zone = cmp.Or(r.Zone, s.Nodes[0].Zone)
		r.SubnetID = cmp.Or(r.SubnetID, s.Nodes[0].SubnetID)
	}
	return r
}

// Diff asks the core what the new inputs change over the state: the same
// change set as Terraform's plan. The image is resolved anew (a new AMI
// behind the same SSM parameter rolls the nodes), and an input not known
// yet is a change to be known at apply, never an absent value.
func (GpuCluster) Diff(ctx context.Context, req infer.DiffRequest[GpuClusterArgs, GpuClusterState]) (infer.DiffResponse, error) {
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
	plan, err := env.PlanGPUCluster(ctx, &prior, spec)
	if err != nil {
		return infer.DiffResponse{}, fmt.Errorf("planning GPU cluster (%s): %w", spec.Name, err)
	}
	if cs := plan.Change; cs != nil {
		warnHopLimit(ctx, spec.Name, cs.Template)
	}
	return gpuClusterDiff(plan.Change), nil
}

// gpuClusterDiff translates the core's change set. The cluster's name is
// unique, so a replacement deletes before it creates.
func gpuClusterDiff(cs *platform.GPUClusterChangeSet) infer.DiffResponse {
	d := infer.DiffResponse{DeleteBeforeReplace: true, DetailedDiff: map[string]p.PropertyDiff{}}
	outputs := map[string]bool{"image_id": true, "tags_all": true, "launch_template_id": true}
	put := func(cs []platform.Change, kind p.DiffKind) {
		for _, c := range cs {
			d.DetailedDiff[propertyPath(c.Path)] = p.PropertyDiff{Kind: kind, InputDiff: !outputs[c.Path]}
		}
	}
	if cs != nil {
		put(cs.Settings, p.Update)
		put(cs.Template, p.Update)
		put(cs.Nodes, p.Update)
		put(cs.Replace, p.UpdateReplace)
	}
	d.HasChanges = len(d.DetailedDiff) > 0
	return d
}

// gpuClusterDeadline bounds a long operation by the resource's custom
// timeout when the program set one, else by the core's default for op: no
// wait runs without a deadline.
func gpuClusterDeadline(ctx context.Context, op platform.Operation) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, timeoutOr(ctx, platform.GPUClusterTimeout(op)))
}

func int64Ptr(v *int) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// importedGPUClusterArgs reads the configuration of an imported cluster from
// its launch template and first node.
func importedGPUClusterArgs(ctx context.Context, env *platform.Env, c *platform.GPUCluster) (GpuClusterArgs, error) {
	s, err := env.ImportGPUCluster(ctx, c)
	if err != nil {
		return GpuClusterArgs{}, fmt.Errorf("importing GPU cluster (%s): %w", c.Name, err)
	}
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	optInt := func(v int32) *int {
		if v == 0 {
			return nil
		}
		return ptr(int(v))
	}
	a := GpuClusterArgs{
		Name:               ptr(s.Name),
		InstanceType:       s.InstanceType,
		NodeCount:          s.NodeCount,
		Image:              s.Image,
		InstanceProfile:    opt(s.InstanceProfile),
		KMSKeyARN:          opt(s.KMSKeyARN),
		UserData:           opt(s.UserData),
		MetadataHopLimit:   ptr(s.MetadataHopLimit),
		PlacementGroupName: opt(s.PlacementGroup),
		ZoneID:             opt(s.ZoneID),
		Zone:               opt(s.Zone),
		SubnetID:           opt(s.SubnetID),
		EFAInterfaces:      s.EFAInterfaces,
	}
	if len(s.Tags) > 0 {
		a.Tags = s.Tags
	}
	if len(s.SecurityGroupIDs) > 0 {
		a.SecurityGroupIDs = s.SecurityGroupIDs
	}
	if s.Capacity.Type != "" {
		a.Capacity = &GpuCapacity{Type: s.Capacity.Type, ReservationID: opt(s.Capacity.ReservationID), SpotMaxPrice: opt(s.Capacity.SpotMaxPrice)}
	}
	if v := s.RootVolume; v.SizeGiB > 0 {
		a.RootVolume = &GpuRootVolume{SizeGiB: optInt(v.SizeGiB), Type: opt(v.Type), IOPS: optInt(v.IOPS), Throughput: optInt(v.Throughput)}
	}
	for _, v := range s.DataVolumes {
		a.DataVolumes = append(a.DataVolumes, GpuDataVolume{DeviceName: opt(v.DeviceName), SizeGiB: int(v.SizeGiB), Type: opt(v.Type), IOPS: optInt(v.IOPS), Throughput: optInt(v.Throughput)})
	}
	return a, nil
}

// problemFailures turns plan problems into check failures; warnings are
// logged.
func problemFailures(ctx context.Context, ps []platform.Problem) []p.CheckFailure {
	var failures []p.CheckFailure
	for _, pr := range ps {
		msg := pr.Summary
		if pr.Detail != "" {
			msg += ": " + configText(pr.Detail)
		}
		if pr.Warning {
			p.GetLogger(ctx).Warning(propertyPath(pr.Path) + ": " + msg)
			continue
		}
		failures = append(failures, p.CheckFailure{Property: propertyPath(pr.Path), Reason: msg})
	}
	return failures
}

// gpuClusterOptions sends the core's progress to the Pulumi log.
func gpuClusterOptions(ctx context.Context) platform.GPUClusterOptions {
	return platform.GPUClusterOptions{Progress: func(msg string) { p.GetLogger(ctx).InfoStatus(msg) }}
}
