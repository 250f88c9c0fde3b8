package provider

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/mlplatform/mlplatform/internal/platform"
)

var (
	_ resource.ResourceWithConfigure   = &gpuClusterResource{}
	_ resource.ResourceWithModifyPlan  = &gpuClusterResource{}
	_ resource.ResourceWithImportState = &gpuClusterResource{}
)

// NewGPUClusterResource is the mlplatform_gpu_cluster constructor.
func NewGPUClusterResource() resource.Resource { return &gpuClusterResource{} }

type gpuClusterResource struct {
	meta *Meta
}

type gpuClusterModel struct {
	ID                    types.String   `tfsdk:"id"`
	Name                  types.String   `tfsdk:"name"`
	InstanceType          types.String   `tfsdk:"instance_type"`
	NodeCount             types.Int64    `tfsdk:"node_count"`
	Zone                  types.String   `tfsdk:"zone"`
	ZoneID                types.String   `tfsdk:"zone_id"`
	ZoneFallback          types.Bool     `tfsdk:"zone_fallback"`
	SubnetID              types.String   `tfsdk:"subnet_id"`
	VPCID                 types.String   `tfsdk:"vpc_id"`
	SecurityGroupIDs      types.Set      `tfsdk:"security_group_ids"`
	InstanceProfile       types.String   `tfsdk:"instance_profile"`
	Image                 types.String   `tfsdk:"image"`
	ImageID               types.String   `tfsdk:"image_id"`
	PlacementGroupName    types.String   `tfsdk:"placement_group_name"`
	EFAInterfaces         types.Int64    `tfsdk:"efa_interfaces"`
	Capacity              types.Object   `tfsdk:"capacity"`
	KMSKeyARN             types.String   `tfsdk:"kms_key_arn"`
	RootVolume            types.Object   `tfsdk:"root_volume"`
	DataVolumes           types.List     `tfsdk:"data_volumes"`
	UserData              types.String   `tfsdk:"user_data"`
	MetadataHopLimit      types.Int64    `tfsdk:"metadata_hop_limit"`
	Tags                  types.Map      `tfsdk:"tags"`
	TagsAll               types.Map      `tfsdk:"tags_all"`
	Rollout               types.Object   `tfsdk:"rollout"`
	CapacityRetry         types.Object   `tfsdk:"capacity_retry"`
	LaunchTemplateID      types.String   `tfsdk:"launch_template_id"`
	LaunchTemplateVersion types.Int64    `tfsdk:"launch_template_version"`
	PlacementZoneID       types.String   `tfsdk:"placement_zone_id"`
	NodeIDs               types.List     `tfsdk:"node_ids"`
	PrivateIPs            types.List     `tfsdk:"private_ips"`
	Nodes                 types.List     `tfsdk:"nodes"`
	CreationToken         types.String   `tfsdk:"creation_token"`
	Validation            types.Object   `tfsdk:"validation"`
	ValidationProfile     types.String   `tfsdk:"validation_profile"`
	ValidationBootstrap   types.String   `tfsdk:"validation_bootstrap"`
	ValidationResults     types.List     `tfsdk:"validation_results"`
	Orchestrator          types.Object   `tfsdk:"orchestrator"`
	SlurmControllerConfig types.String   `tfsdk:"slurm_controller_config"`
	Timeouts              timeouts.Value `tfsdk:"timeouts"`
}

type gpuCapacityModel struct {
	Type          types.String `tfsdk:"type"`
	ReservationID types.String `tfsdk:"reservation_id"`
	SpotMaxPrice  types.String `tfsdk:"spot_max_price"`
}

type gpuVolumeModel struct {
	DeviceName types.String `tfsdk:"device_name"`
	SizeGiB    types.Int64  `tfsdk:"size_gib"`
	Type       types.String `tfsdk:"type"`
	IOPS       types.Int64  `tfsdk:"iops"`
	Throughput types.Int64  `tfsdk:"throughput"`
}

type gpuRootVolumeModel struct {
	SizeGiB    types.Int64  `tfsdk:"size_gib"`
	Type       types.String `tfsdk:"type"`
	IOPS       types.Int64  `tfsdk:"iops"`
	Throughput types.Int64  `tfsdk:"throughput"`
}

type gpuRolloutModel struct {
	Strategy  types.String `tfsdk:"strategy"`
	BatchSize types.Int64  `tfsdk:"batch_size"`
}

type gpuCapacityRetryModel struct {
	Attempts     types.Int64  `tfsdk:"attempts"`
	InitialDelay types.String `tfsdk:"initial_delay"`
}

var (
	gpuCapacityType = map[string]attr.Type{"type": types.StringType, "reservation_id": types.StringType, "spot_max_price": types.StringType}
	gpuRootVolType  = map[string]attr.Type{"size_gib": types.Int64Type, "type": types.StringType, "iops": types.Int64Type, "throughput": types.Int64Type}
	gpuDataVolType  = types.ObjectType{AttrTypes: map[string]attr.Type{"device_name": types.StringType, "size_gib": types.Int64Type, "type": types.StringType, "iops": types.Int64Type, "throughput": types.Int64Type}}
	gpuNodeType     = types.ObjectType{AttrTypes: map[string]attr.Type{
		"index": types.Int64Type, "id": types.StringType, "private_ip": types.StringType, "zone": types.StringType,
		"zone_id": types.StringType, "state": types.StringType, "instance_type": types.StringType,
	}}
)

// gpuObjectAs reads optional nested objects whose unset fields are null.
var gpuObjectAs = basetypes.ObjectAsOptions{UnhandledNullAsEmpty: true, UnhandledUnknownAsEmpty: true}

func (r *gpuClusterResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_gpu_cluster"
}

func (r *gpuClusterResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	volAttrs := func() map[string]schema.Attribute {
		return map[string]schema.Attribute{
			"size_gib":   schema.Int64Attribute{Optional: true, MarkdownDescription: "Size in GiB. For the root volume, default: the image's size."},
			"type":       schema.StringAttribute{Optional: true, MarkdownDescription: "EBS volume type: `gp3` (default), `gp2`, `io1`, `io2`, `st1` or `sc1`."},
			"iops":       schema.Int64Attribute{Optional: true, MarkdownDescription: "Provisioned IOPS (gp3: 3000 to 80000, io1: 100 to 64000, io2: 100 to 256000)."},
			"throughput": schema.Int64Attribute{Optional: true, MarkdownDescription: "Throughput in MiB/s (gp3 only, 125 to 2000)."},
		}
	}
	dataVol := volAttrs()
	dataVol["size_gib"] = schema.Int64Attribute{Required: true, MarkdownDescription: "Size in GiB."}
	dataVol["device_name"] = schema.StringAttribute{Optional: true, MarkdownDescription: "Device name, e.g. `/dev/sdf`. Default: `/dev/sdf`, `/dev/sdg`, ... in order."}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A GPU training cluster on EC2: `node_count` nodes of one GPU instance type in one availability zone, in a cluster placement group, " +
			"with as many EFA interfaces as the type supports, on on-demand, reserved, capacity-block or spot capacity, with KMS-encrypted volumes. " +
			"Residency (zone, KMS key, tags), the type's offering in the zone, EFA and placement support and the capacity settings are checked at plan time, before anything is created. " +
			"Nodes are launched from a launch template the cluster owns (`mlplatform-<name>`) with idempotent RunInstances calls; node count changes scale in place, and changes to what a node is " +
			"(instance type, image, volumes, user data, ...) roll the nodes according to `rollout`. See the GPU cluster guide.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The cluster name.", PlanModifiers: keep},
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Cluster name, unique in the region: 1 to 100 letters, digits, `-`, `_` or `.`. Every node is tagged `mlplatform:cluster = <name>`. Changing it replaces the cluster.",
			},
			"instance_type": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "GPU instance type, e.g. `p5en.48xlarge`. It must be offered in the zone. Changing it rolls the nodes.",
			},
			"node_count": schema.Int64Attribute{
				Required:            true,
				MarkdownDescription: fmt.Sprintf("Number of nodes, 1 to %d. Changing it scales in place: new nodes take the missing indices, scale-in removes the highest indices first.", platform.MaxGPUClusterNodes),
			},
			"zone": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Availability zone name, e.g. `me-central-1a`. Prefer `zone_id`: names map to different zones in different accounts. Changing it replaces the cluster.",
				PlanModifiers:       keep,
			},
			"zone_id": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Availability zone id, e.g. `mec1-az1`. Default: the zone of `subnet_id` or of the capacity reservation, else the first allowed zone that offers the type. Changing it replaces the cluster.",
				PlanModifiers:       keep,
			},
			"zone_fallback": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "When the zone has no capacity (after `capacity_retry`), launch the cluster in another zone of the jurisdiction that offers the type; never outside it. Only while the cluster has no nodes. Default `false`.",
			},
			"subnet_id": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Subnet of every node's network interfaces. Default: a subnet of `vpc_id` in the zone, else the zone's default subnet. Changing it replaces the cluster.",
				PlanModifiers:       keep,
			},
			"vpc_id": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "VPC to pick the subnet from in the zone (the one with the most free addresses); with `zone_fallback`, in each zone tried. Changing it replaces the cluster.",
			},
			"security_group_ids": schema.SetAttribute{
				ElementType: types.StringType, Optional: true,
				MarkdownDescription: "Security groups of every network interface. EFA needs a group that allows all traffic to and from itself. Changing them rolls the nodes.",
			},
			"instance_profile": schema.StringAttribute{Optional: true, MarkdownDescription: "IAM instance profile name or ARN for the nodes."},
			"image": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Machine image: an AMI id (`ami-...`) or the name of an SSM parameter that holds one (`/aws/service/...`, or `resolve:ssm:/...`). The parameter is read at plan time; when it points to a new AMI the plan shows `image_id` changing and the apply rolls the nodes.",
			},
			"image_id": schema.StringAttribute{Computed: true, MarkdownDescription: "The AMI the nodes run: `image` resolved."},
			"placement_group_name": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Name of an existing cluster placement group to launch into. When unset, the cluster creates and owns `mlplatform-<name>` (strategy `cluster`) and deletes it with itself.",
				PlanModifiers:       keep,
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 255)},
			},
			"efa_interfaces": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: "EFA interfaces per node. Default: as many as the type supports (e.g. 16 on p5en.48xlarge, 32 on p5.48xlarge), 0 on a type without EFA. The first is the primary interface (device index 0 on network card 0), the others device index 1 on network cards 1, 2, ... Set 0 for none.",
				PlanModifiers:       []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
			},
			"capacity": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "What capacity nodes launch into. Default: on-demand.",
				Attributes: map[string]schema.Attribute{
					"type": schema.StringAttribute{
						Required:            true,
						MarkdownDescription: "`on_demand`, `capacity_reservation` (a targeted On-Demand Capacity Reservation), `capacity_block` (an EC2 Capacity Block for ML: a fixed count for a fixed time) or `spot`.",
					},
					"reservation_id": schema.StringAttribute{Optional: true, MarkdownDescription: "Id (`cr-...`) of the capacity reservation or capacity block; required for those types. The reservation's zone becomes the cluster's zone when none is set."},
					"spot_max_price": schema.StringAttribute{Optional: true, MarkdownDescription: "Maximum spot price in USD per hour. Default: the on-demand price."},
				},
			},
			"kms_key_arn": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "ARN of the KMS key that encrypts every volume. Volumes are always encrypted; without a key, with the account's default EBS key (which fails `require_customer_managed_keys`). The key must lie inside the jurisdiction.",
			},
			"root_volume": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Root volume of every node (encrypted).",
				Attributes:          volAttrs(),
			},
			"data_volumes": schema.ListNestedAttribute{
				Optional:            true,
				MarkdownDescription: fmt.Sprintf("Further EBS volumes of every node (encrypted, deleted with the node), at most %d.", platform.MaxGPUClusterDataVolumes),
				NestedObject:        schema.NestedAttributeObject{Attributes: dataVol},
			},
			"user_data": schema.StringAttribute{
				Optional:            true,
				Sensitive:           true,
				MarkdownDescription: "User data run at boot (plain text, at most 16 KiB). With a `validation` block it runs first, beside the hwprobe bootstrap (it must then begin with `#!`, `#cloud-config`, `#cloud-boothook` or `#include`). Changing it rolls the nodes. User data is no place for secrets: anyone allowed `ec2:DescribeInstanceAttribute` or `ec2:DescribeLaunchTemplateVersions` can read it, and so can every process on the instance through the metadata service. Keep secrets in AWS Secrets Manager in the jurisdiction and have the script read them at boot with the instance role (`aws secretsmanager get-secret-value`). Sensitive: hidden in plan output.",
			},
			platform.MetadataHopLimitPath: metadataHopLimitAttr("nodes", "node"),
			"tags":                        schema.MapAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: fmt.Sprintf("Tags of the nodes, their volumes and the launch template, at most %d with `default_tags`. Keys starting with `aws:` or `mlplatform:` are reserved. Changing them retags in place; nothing is rolled.", platform.MaxGPUClusterTags)},
			"tags_all": schema.MapAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "`tags` merged over the provider's `default_tags`.",
			},
			"rollout": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "How nodes are replaced when what a node is changes (instance type, image, volumes, user data, EFA, security groups, capacity).",
				Attributes: map[string]schema.Attribute{
					"strategy": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "`terminate_first` (default): terminate a batch, then launch its replacements; needs no spare capacity, so it works on a reservation or block. `launch_first`: launch the replacements, wait until they run, then terminate the old nodes; keeps `node_count` nodes up but needs capacity for one batch more.",
					},
					"batch_size": schema.Int64Attribute{Optional: true, MarkdownDescription: "Nodes replaced at a time. Default 1."},
				},
			},
			"capacity_retry": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "How a launch retries `InsufficientInstanceCapacity` in a zone before falling back (`zone_fallback`) or failing.",
				Attributes: map[string]schema.Attribute{
					"attempts":      schema.Int64Attribute{Optional: true, MarkdownDescription: fmt.Sprintf("Launch attempts per zone, 1 to %d. Default %d.", platform.MaxCapacityRetryAttempts, platform.DefaultCapacityRetryAttempts)},
					"initial_delay": schema.StringAttribute{Optional: true, MarkdownDescription: fmt.Sprintf("Wait before the second attempt, doubling up to a minute, e.g. `%s` (default).", platform.DefaultCapacityRetryDelay)},
				},
			},
			"creation_token": schema.StringAttribute{
				Computed: true, PlanModifiers: keep,
				MarkdownDescription: "Random token of the create that made the cluster, tagged `mlplatform:creation-token` on its launch template, placement group, nodes and volumes: it proves this resource owns the cluster. A create refuses a cluster of the same name that it cannot prove it owns (import it instead), and destroy leaves another owner's cluster alone.",
			},
			"launch_template_id":      schema.StringAttribute{Computed: true, MarkdownDescription: "Id of the launch template the cluster owns (`mlplatform-<name>`).", PlanModifiers: keep},
			"launch_template_version": schema.Int64Attribute{Computed: true, MarkdownDescription: "Latest version of the launch template: a new one for every change of the node template."},
			"placement_zone_id":       schema.StringAttribute{Computed: true, MarkdownDescription: "Zone id the nodes run in: `zone_id`, or the zone `zone_fallback` chose."},
			"node_ids":                schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Instance ids of the nodes, by node index."},
			"private_ips":             schema.ListAttribute{ElementType: types.StringType, Computed: true, MarkdownDescription: "Private IPv4 addresses of the nodes, by node index."},
			"nodes": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The nodes, by node index.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"index":         schema.Int64Attribute{Computed: true, MarkdownDescription: "Node index, 0 to `node_count` - 1 (e.g. the rank slot for distributed training)."},
					"id":            schema.StringAttribute{Computed: true, MarkdownDescription: "Instance id."},
					"private_ip":    schema.StringAttribute{Computed: true, MarkdownDescription: "Private IPv4 address."},
					"zone":          schema.StringAttribute{Computed: true, MarkdownDescription: "Availability zone name."},
					"zone_id":       schema.StringAttribute{Computed: true, MarkdownDescription: "Availability zone id."},
					"state":         schema.StringAttribute{Computed: true, MarkdownDescription: "Instance state, e.g. `running`."},
					"instance_type": schema.StringAttribute{Computed: true, MarkdownDescription: "Instance type the node runs."},
				}},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": timeouts.Block(ctx, timeouts.Opts{Create: true, Update: true, Delete: true}),
		},
	}
	for k, a := range gpuValidationSchema() {
		resp.Schema.Attributes[k] = a
	}
	for k, a := range orchestratorSchema("A node's Slurm name is `PREFIX-INDEX` (its index in the cluster: a replacement keeps its node's name).") {
		resp.Schema.Attributes[k] = a
	}
}

func (r *gpuClusterResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.meta = metaFrom(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan runs every plan-time check before anything is written, and
// fills the values planning resolves (zone, subnet, image, EFA count).
func (r *gpuClusterResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || r.meta == nil {
		return
	}
	var plan, config gpuClusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec := gpuClusterSpec(ctx, &plan, &config, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	checkTimeouts(config.Timeouts, &resp.Diagnostics)
	var state gpuClusterModel
	var prior *platform.GPUClusterRecord
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if resp.Diagnostics.HasError() {
			return
		}
		rec := gpuClusterRecord(ctx, &state, &resp.Diagnostics)
		prior = &rec
	}
	p, err := r.meta.PlanGPUCluster(ctx, prior, spec)
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("planning GPU cluster (%s)", spec.Name), err.Error())
		return
	}
	ReportViolations(r.meta.Policy.Mode, p.Violations, &resp.Diagnostics)
	addProblems(p.Problems, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}

	// The values planning resolved.
	setIfUnknown := func(v *types.String, s string) {
		if v.IsUnknown() && s != "" {
			*v = types.StringValue(s)
		}
	}
	if spec.Known("zone_id") && spec.Known("zone") && spec.Known("subnet_id") {
		setIfUnknown(&plan.ZoneID, p.ZoneID)
		setIfUnknown(&plan.Zone, p.Zone)
		setIfUnknown(&plan.SubnetID, p.SubnetID)
	}
	if (plan.EFAInterfaces.IsUnknown() || config.EFAInterfaces.IsNull()) && spec.Known("instance_type") {
		plan.EFAInterfaces = types.Int64Value(int64(p.EFAInterfaces))
	}
	if spec.Known("image") && p.ImageID != "" {
		plan.ImageID = types.StringValue(p.ImageID)
	}
	if (plan.PlacementGroupName.IsUnknown() || (plan.PlacementGroupName.IsNull() && config.PlacementGroupName.IsNull())) && p.PlacementGroup != "" {
		// Null in state after the cluster's own group was deleted outside:
		// planned back, and recreated by the apply.
		plan.PlacementGroupName = types.StringValue(p.PlacementGroup)
	}
	if spec.Known("name") {
		plan.ID = plan.Name
	}
	if p.TagsAll != nil {
		all, d := types.MapValueFrom(ctx, types.StringType, p.TagsAll)
		resp.Diagnostics.Append(d...)
		plan.TagsAll = all
	} else {
		plan.TagsAll = types.MapUnknown(types.StringType)
	}

	if cs := p.Change; cs != nil {
		// The core's change set: what replaces the cluster, what rolls or
		// scales the nodes, what only retags.
		for _, c := range cs.Replace {
			resp.RequiresReplace.Append(parsePath(c.Path))
		}
		plan.CreationToken = state.CreationToken
		plan.LaunchTemplateID = state.LaunchTemplateID
		plan.LaunchTemplateVersion = state.LaunchTemplateVersion
		plan.PlacementZoneID = state.PlacementZoneID
		plan.NodeIDs, plan.PrivateIPs, plan.Nodes = state.NodeIDs, state.PrivateIPs, state.Nodes
		if state.LaunchTemplateID.ValueString() == "" {
			plan.LaunchTemplateID = types.StringUnknown()
		}
		if len(cs.Template) > 0 || len(cs.Nodes) > 0 {
			plan.LaunchTemplateVersion = types.Int64Unknown()
		}
		if len(cs.Nodes) > 0 {
			plan.NodeIDs = types.ListUnknown(types.StringType)
			plan.PrivateIPs = types.ListUnknown(types.StringType)
			plan.Nodes = types.ListUnknown(gpuNodeType)
			plan.PlacementZoneID = types.StringUnknown()
		}
	}
	if p.Change != nil {
		warnHopLimit(slices.Concat(p.Change.Template, p.Change.Nodes), &resp.Diagnostics)
	}
	if prior != nil && spec.Validation != nil {
		if w := platform.DrainedWarning(spec.Name, spec.Validation.WithDefaults().OnFailure, drainedResults(state.ValidationResults)); w != "" {
			resp.Diagnostics.AddWarning(fmt.Sprintf("planning GPU cluster (%s)", spec.Name), w)
		}
	}
	planValidationAttrs(&plan, &state, p, prior != nil, p.Change != nil && !p.Change.Empty())
	plan.SlurmControllerConfig = planSlurmControllerConfig(plan.Orchestrator, p.SlurmControllerConfig)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

func (r *gpuClusterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan, config gpuClusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, platform.GPUClusterCreateTimeout)
	resp.Diagnostics.Append(d...)
	spec := gpuClusterSpec(ctx, &plan, &config, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if plan.TagsAll.IsUnknown() {
		// Unknown at plan (a tag value or default tag from another
		// resource); known now.
		all, d := types.MapValueFrom(ctx, types.StringType, r.meta.MergeTags(spec.Tags))
		resp.Diagnostics.Append(d...)
		plan.TagsAll = all
	}
	c, err := r.meta.CreateGPUCluster(ctx, spec, gpuClusterOptions(ctx))
	if c != nil {
		// Even after a failure (Ctrl-C, a timeout, lost answers): what
		// exists goes to state, so no GPU node is ever orphaned.
		setGPUClusterState(ctx, &plan, platform.RecordGPUCluster(c, gpuClusterRecord(ctx, &plan, &resp.Diagnostics)), &resp.Diagnostics)
		setValidationResults(ctx, &plan, c, &resp.Diagnostics)
		finishSlurmControllerConfig(&plan.SlurmControllerConfig, plan.Orchestrator, appliedSlurmConfig(c))
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		if c.ValidationWarning != "" {
			resp.Diagnostics.AddWarning(fmt.Sprintf("validating GPU cluster (%s)", spec.Name), c.ValidationWarning)
		}
	}
	addOutcome(&resp.Diagnostics, fmt.Sprintf("creating GPU cluster (%s)", spec.Name), platform.OutcomeOf(c != nil, err))
}

func (r *gpuClusterResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state gpuClusterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || r.meta == nil {
		return
	}
	name := state.Name.ValueString()
	if name == "" {
		name = state.ID.ValueString()
	}
	c, err := r.meta.FindGPUCluster(ctx, name, state.CreationToken.ValueString())
	if forgetGone(ctx, resp, "GPU cluster", name, err) {
		return
	}
	if err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("reading GPU cluster (%s)", name), err.Error())
		return
	}
	if state.CreationToken.ValueString() == "" && c.CreationToken != "" {
		state.CreationToken = types.StringValue(c.CreationToken) // import
	}
	if state.InstanceType.IsNull() {
		r.readImported(ctx, &state, c, &resp.Diagnostics)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	// What the nodes are goes into the declared attributes, so that drift
	// shows in the next plan and its apply repairs it.
	rec := gpuClusterRecord(ctx, &state, &resp.Diagnostics)
	if err := r.meta.ReadGPUClusterHealth(ctx, rec.Spec, c); err != nil {
		resp.Diagnostics.AddWarning(fmt.Sprintf("reading GPU cluster (%s)", name), fmt.Sprintf("which nodes hwprobe drained in Slurm could not be read: %v", err))
	}
	setGPUClusterState(ctx, &state, platform.ReadBackGPUCluster(c, rec), &resp.Diagnostics)
	markDrained(&state, c.Drained, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *gpuClusterResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state, config gpuClusterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &config)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, platform.GPUClusterUpdateTimeout)
	resp.Diagnostics.Append(d...)
	spec := gpuClusterSpec(ctx, &plan, &config, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	spec.CreationToken = state.CreationToken.ValueString()
	if plan.TagsAll.IsUnknown() {
		all, d := types.MapValueFrom(ctx, types.StringType, r.meta.MergeTags(spec.Tags))
		resp.Diagnostics.Append(d...)
		plan.TagsAll = all
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := r.meta.UpdateGPUCluster(ctx, spec, gpuClusterOptions(ctx))
	if err != nil {
		// Keep the prior configuration in state, with the nodes as they are
		// now: the next plan shows the change again and the next apply
		// finishes it.
		if c != nil {
			setGPUClusterState(ctx, &state, platform.RecordGPUCluster(c, gpuClusterRecord(ctx, &state, &resp.Diagnostics)), &resp.Diagnostics)
			if !state.Validation.IsNull() && len(c.Validation) > 0 {
				setValidationResults(ctx, &state, c, &resp.Diagnostics)
				finishSlurmControllerConfig(&state.SlurmControllerConfig, state.Orchestrator, appliedSlurmConfig(c))
			}
			resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		}
		addCoreError(&resp.Diagnostics, fmt.Sprintf("updating GPU cluster (%s)", spec.Name), err)
		return
	}
	setGPUClusterState(ctx, &plan, platform.RecordGPUCluster(c, gpuClusterRecord(ctx, &plan, &resp.Diagnostics)), &resp.Diagnostics)
	setValidationResults(ctx, &plan, c, &resp.Diagnostics)
	finishSlurmControllerConfig(&plan.SlurmControllerConfig, plan.Orchestrator, appliedSlurmConfig(c))
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
	if c.ValidationWarning != "" {
		resp.Diagnostics.AddWarning(fmt.Sprintf("validating GPU cluster (%s)", spec.Name), c.ValidationWarning)
	}
}

func (r *gpuClusterResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state gpuClusterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, platform.GPUClusterDeleteTimeout)
	resp.Diagnostics.Append(d...)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name := state.Name.ValueString()
	if err := r.meta.DeleteGPUCluster(ctx, recordedGPUCluster(ctx, &state, &resp.Diagnostics), gpuClusterOptions(ctx)); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("deleting GPU cluster (%s)", name), err.Error())
	}
}

// recordedGPUCluster is the cluster as state records it, for its delete:
// its name and creation token, and what its nodes' Slurm leave needs (the
// orchestrator and the validation's reports). A state whose blocks do not
// translate (written by another version) still deletes, with a warning
// that its nodes are not asked to leave Slurm first.
func recordedGPUCluster(ctx context.Context, state *gpuClusterModel, diags *diag.Diagnostics) platform.GPUClusterSpec {
	var d diag.Diagnostics
	s := gpuClusterSpec(ctx, state, state, &d)
	s.Name, s.CreationToken = state.Name.ValueString(), state.CreationToken.ValueString()
	if d.HasError() {
		diags.AddWarning(fmt.Sprintf("deleting GPU cluster (%s)", s.Name), fmt.Sprintf("the recorded configuration could not be read (%s): the nodes are terminated without first leaving Slurm", d.Errors()[0].Detail()))
		return platform.GPUClusterSpec{Name: s.Name, CreationToken: s.CreationToken}
	}
	return s
}

// ImportState imports a cluster by name.
func (r *gpuClusterResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
}

// readImported fills the configuration of an imported cluster from its
// launch template and nodes.
func (r *gpuClusterResource) readImported(ctx context.Context, m *gpuClusterModel, c *platform.GPUCluster, diags *diag.Diagnostics) {
	s, err := r.meta.ImportGPUCluster(ctx, c)
	if err != nil {
		diags.AddError(fmt.Sprintf("importing GPU cluster (%s)", c.Name), err.Error())
		return
	}
	str := func(s string) types.String {
		if s == "" {
			return types.StringNull()
		}
		return types.StringValue(s)
	}
	m.ID, m.Name = types.StringValue(s.Name), types.StringValue(s.Name)
	m.InstanceType = types.StringValue(s.InstanceType)
	m.Image = types.StringValue(s.Image)
	m.InstanceProfile = str(s.InstanceProfile)
	m.KMSKeyARN = str(s.KMSKeyARN)
	m.UserData = str(s.UserData)
	m.MetadataHopLimit = types.Int64Value(int64(s.MetadataHopLimit))
	m.ZoneFallback = types.BoolValue(false)
	m.VPCID = types.StringNull()
	m.PlacementGroupName = str(s.PlacementGroup)
	if len(s.Tags) > 0 {
		m.Tags, _ = types.MapValueFrom(ctx, types.StringType, s.Tags)
		m.TagsAll = m.Tags
	} else {
		m.Tags = types.MapNull(types.StringType)
		m.TagsAll = types.MapValueMust(types.StringType, map[string]attr.Value{})
	}
	m.Capacity = types.ObjectNull(gpuCapacityType)
	if s.Capacity.Type != "" {
		m.Capacity, _ = types.ObjectValueFrom(ctx, gpuCapacityType, gpuCapacityModel{
			Type: types.StringValue(s.Capacity.Type), ReservationID: str(s.Capacity.ReservationID), SpotMaxPrice: str(s.Capacity.SpotMaxPrice),
		})
	}
	m.RootVolume = types.ObjectNull(gpuRootVolType)
	if v := s.RootVolume; v.SizeGiB > 0 {
		m.RootVolume, _ = types.ObjectValueFrom(ctx, gpuRootVolType, gpuRootVolumeModel{SizeGiB: int64Or(v.SizeGiB), Type: str(v.Type), IOPS: int64Or(v.IOPS), Throughput: int64Or(v.Throughput)})
	}
	m.DataVolumes = types.ListNull(gpuDataVolType)
	if len(s.DataVolumes) > 0 {
		var vs []gpuVolumeModel
		for _, v := range s.DataVolumes {
			vs = append(vs, gpuVolumeModel{DeviceName: str(v.DeviceName), SizeGiB: int64Or(v.SizeGiB), Type: str(v.Type), IOPS: int64Or(v.IOPS), Throughput: int64Or(v.Throughput)})
		}
		m.DataVolumes, _ = types.ListValueFrom(ctx, gpuDataVolType, vs)
	}
	m.Rollout = types.ObjectNull(map[string]attr.Type{"strategy": types.StringType, "batch_size": types.Int64Type})
	m.CapacityRetry = types.ObjectNull(map[string]attr.Type{"attempts": types.Int64Type, "initial_delay": types.StringType})
	m.ZoneID, m.Zone, m.SubnetID = str(s.ZoneID), str(s.Zone), str(s.SubnetID)
	m.EFAInterfaces = types.Int64Null()
	if s.EFAInterfaces != nil {
		m.EFAInterfaces = types.Int64Value(int64(*s.EFAInterfaces))
	}
	m.SecurityGroupIDs = types.SetNull(types.StringType)
	if len(s.SecurityGroupIDs) > 0 {
		m.SecurityGroupIDs, _ = types.SetValueFrom(ctx, types.StringType, s.SecurityGroupIDs)
	}
	nullValidation(m)
	m.Orchestrator, m.SlurmControllerConfig = types.ObjectNull(orchestratorType), types.StringNull()
	m.Timeouts = timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType})}
}

func int64Or(v int32) types.Int64 {
	if v == 0 {
		return types.Int64Null()
	}
	return types.Int64Value(int64(v))
}

// gpuClusterRecord is the core's record of what state holds.
func gpuClusterRecord(ctx context.Context, m *gpuClusterModel, diags *diag.Diagnostics) platform.GPUClusterRecord {
	r := platform.GPUClusterRecord{
		Spec: gpuClusterSpec(ctx, m, m, diags),
		Zone: m.Zone.ValueString(), ZoneID: m.ZoneID.ValueString(), SubnetID: m.SubnetID.ValueString(),
		ImageID: m.ImageID.ValueString(), PlacementGroup: m.PlacementGroupName.ValueString(),
		LaunchTemplateID: m.LaunchTemplateID.ValueString(), LaunchTemplateVersion: m.LaunchTemplateVersion.ValueInt64(),
		PlacementZoneID: m.PlacementZoneID.ValueString(), CreationToken: m.CreationToken.ValueString(),
	}
	if !m.EFAInterfaces.IsNull() && !m.EFAInterfaces.IsUnknown() {
		n := int(m.EFAInterfaces.ValueInt64())
		r.EFAInterfaces = &n
	}
	r.TagsAll = map[string]string{}
	if !m.TagsAll.IsNull() && !m.TagsAll.IsUnknown() {
		diags.Append(m.TagsAll.ElementsAs(ctx, &r.TagsAll, false)...)
	}
	return r
}

// setGPUClusterState writes a core record (after create, update or
// refresh) into the model: the declared attributes drift changed, and the
// computed ones.
func setGPUClusterState(ctx context.Context, m *gpuClusterModel, r platform.GPUClusterRecord, diags *diag.Diagnostics) {
	str := func(v *types.String, s string) {
		if s != "" {
			*v = types.StringValue(s)
		} else if !v.IsNull() {
			*v = types.StringNull()
		}
	}
	m.ID = types.StringValue(r.Spec.Name)
	m.Name = types.StringValue(r.Spec.Name)
	m.NodeCount = types.Int64Value(int64(r.Spec.NodeCount))
	setHopLimit(&m.MetadataHopLimit, r.Spec.MetadataHopLimit)
	m.InstanceType = types.StringValue(r.Spec.InstanceType)
	str(&m.ImageID, r.ImageID)
	str(&m.CreationToken, r.CreationToken)
	str(&m.PlacementGroupName, r.PlacementGroup)
	if r.TagsAll != nil {
		var d diag.Diagnostics
		m.TagsAll, d = types.MapValueFrom(ctx, types.StringType, r.TagsAll)
		diags.Append(d...)
	}
	m.LaunchTemplateID = types.StringValue(r.LaunchTemplateID)
	m.LaunchTemplateVersion = types.Int64Value(r.LaunchTemplateVersion)
	m.PlacementZoneID = types.StringValue(r.PlacementZoneID)
	ids, ips := make([]string, 0, len(r.Nodes)), make([]string, 0, len(r.Nodes))
	nodes := make([]attr.Value, 0, len(r.Nodes))
	for _, n := range r.Nodes {
		ids = append(ids, n.InstanceID)
		ips = append(ips, n.PrivateIP)
		obj, d := types.ObjectValue(gpuNodeType.AttrTypes, map[string]attr.Value{
			"index": types.Int64Value(int64(n.Index)), "id": types.StringValue(n.InstanceID), "private_ip": types.StringValue(n.PrivateIP),
			"zone": types.StringValue(n.Zone), "zone_id": types.StringValue(n.ZoneID), "state": types.StringValue(n.State),
			"instance_type": types.StringValue(n.InstanceType),
		})
		diags.Append(d...)
		nodes = append(nodes, obj)
	}
	var d diag.Diagnostics
	m.NodeIDs, d = types.ListValueFrom(ctx, types.StringType, ids)
	diags.Append(d...)
	m.PrivateIPs, d = types.ListValueFrom(ctx, types.StringType, ips)
	diags.Append(d...)
	m.Nodes, d = types.ListValue(gpuNodeType, nodes)
	diags.Append(d...)
	// Values planning fills but a failed create may leave unknown.
	for _, v := range []*types.String{&m.Zone, &m.ZoneID, &m.SubnetID} {
		if v.IsUnknown() {
			*v = types.StringNull()
		}
	}
	if m.EFAInterfaces.IsUnknown() {
		m.EFAInterfaces = types.Int64Null()
	}
	if m.TagsAll.IsUnknown() {
		m.TagsAll = types.MapNull(types.StringType)
	}
}

// gpuClusterSpec translates the planned model to the domain spec; unknown
// values are listed in spec.Unknown. The attributes that are Optional and
// Computed (zone, zone_id, subnet_id, efa_interfaces, placement_group_name)
// are taken from the configuration: when it leaves them unset the core
// resolves them, and a value resolved earlier must not read as a choice.
func gpuClusterSpec(ctx context.Context, m, config *gpuClusterModel, diags *diag.Diagnostics) platform.GPUClusterSpec {
	mm := *m
	mm.Zone, mm.ZoneID, mm.SubnetID = config.Zone, config.ZoneID, config.SubnetID
	mm.EFAInterfaces, mm.PlacementGroupName = config.EFAInterfaces, config.PlacementGroupName
	m = &mm
	var s platform.GPUClusterSpec
	str := func(p string, v types.String) string {
		if v.IsUnknown() {
			s.Unknown = append(s.Unknown, p)
		}
		return v.ValueString()
	}
	s.Name = str("name", m.Name)
	s.InstanceType = str("instance_type", m.InstanceType)
	if m.NodeCount.IsUnknown() {
		s.Unknown = append(s.Unknown, "node_count")
	}
	s.NodeCount = int(m.NodeCount.ValueInt64())
	s.Zone, s.ZoneID, s.SubnetID = str("zone", m.Zone), str("zone_id", m.ZoneID), str("subnet_id", m.SubnetID)
	if m.ZoneFallback.IsUnknown() {
		s.Unknown = append(s.Unknown, "zone_fallback")
	}
	s.ZoneFallback = m.ZoneFallback.ValueBool()
	s.VPCID = str("vpc_id", m.VPCID)
	if m.SecurityGroupIDs.IsUnknown() || slices.ContainsFunc(m.SecurityGroupIDs.Elements(), attr.Value.IsUnknown) {
		// Unknown, or with an element unknown ([aws_security_group.x.id]):
		// checked at apply.
		s.Unknown = append(s.Unknown, "security_group_ids")
	} else if !m.SecurityGroupIDs.IsNull() {
		diags.Append(m.SecurityGroupIDs.ElementsAs(ctx, &s.SecurityGroupIDs, false)...)
		slices.Sort(s.SecurityGroupIDs)
	}
	s.InstanceProfile = str("instance_profile", m.InstanceProfile)
	s.Image = str("image", m.Image)
	s.PlacementGroup = str("placement_group_name", m.PlacementGroupName) // empty: owned
	if !m.EFAInterfaces.IsUnknown() && !m.EFAInterfaces.IsNull() {
		n := int(m.EFAInterfaces.ValueInt64())
		s.EFAInterfaces = &n
	}
	if m.Capacity.IsUnknown() {
		s.Unknown = append(s.Unknown, "capacity.type", "capacity.reservation_id", "capacity.spot_max_price")
	} else if !m.Capacity.IsNull() {
		var c gpuCapacityModel
		diags.Append(m.Capacity.As(ctx, &c, gpuObjectAs)...)
		s.Capacity = platform.Capacity{Type: str("capacity.type", c.Type), ReservationID: str("capacity.reservation_id", c.ReservationID), SpotMaxPrice: str("capacity.spot_max_price", c.SpotMaxPrice)}
	}
	s.KMSKeyARN = str("kms_key_arn", m.KMSKeyARN)
	if !m.RootVolume.IsNull() && !m.RootVolume.IsUnknown() {
		var v gpuRootVolumeModel
		diags.Append(m.RootVolume.As(ctx, &v, gpuObjectAs)...)
		vol, ps := platform.VolumeFromInput("root_volume", platform.VolumeInput{SizeGiB: v.SizeGiB.ValueInt64(), Type: v.Type.ValueString(), IOPS: v.IOPS.ValueInt64(), Throughput: v.Throughput.ValueInt64()})
		s.RootVolume, s.InputProblems = vol, append(s.InputProblems, ps...)
	}
	if !m.DataVolumes.IsNull() && !m.DataVolumes.IsUnknown() {
		var vs []gpuVolumeModel
		diags.Append(m.DataVolumes.ElementsAs(ctx, &vs, false)...)
		for i, v := range vs {
			vol, ps := platform.VolumeFromInput(fmt.Sprintf("data_volumes[%d]", i), platform.VolumeInput{DeviceName: v.DeviceName.ValueString(), SizeGiB: v.SizeGiB.ValueInt64(), Type: v.Type.ValueString(), IOPS: v.IOPS.ValueInt64(), Throughput: v.Throughput.ValueInt64()})
			s.DataVolumes, s.InputProblems = append(s.DataVolumes, vol), append(s.InputProblems, ps...)
		}
	}
	s.UserData = str("user_data", m.UserData)
	s.MetadataHopLimit = hopLimit(m.MetadataHopLimit, &s.Unknown)
	s.Validation = gpuValidationSpec(ctx, m.Validation, &s, diags)
	s.Slurm = slurmSpecFrom(ctx, m.Orchestrator, &s.Unknown, diags)
	s.EKS = eksSpecFrom(ctx, m.Orchestrator, &s.Unknown, diags)
	s.Kube = kubeSpecFrom(ctx, m.Orchestrator, &s.Unknown, diags)
	if m.Tags.IsUnknown() {
		s.Unknown = append(s.Unknown, "tags")
	} else if !m.Tags.IsNull() {
		// Keys are always known; a value unknown at plan is listed as
		// tags["key"] and checked at apply.
		s.Tags = map[string]string{}
		for k, v := range m.Tags.Elements() {
			if sv, ok := v.(types.String); ok && !sv.IsUnknown() {
				s.Tags[k] = sv.ValueString()
			} else {
				s.Tags[k] = ""
				s.Unknown = append(s.Unknown, fmt.Sprintf("tags[%q]", k))
			}
		}
	}
	if !m.Rollout.IsNull() && !m.Rollout.IsUnknown() {
		var ro gpuRolloutModel
		diags.Append(m.Rollout.As(ctx, &ro, gpuObjectAs)...)
		r, ps := platform.RolloutFromInput(ro.Strategy.ValueString(), ro.BatchSize.ValueInt64Pointer())
		s.Rollout, s.InputProblems = r, append(s.InputProblems, ps...)
	}
	if !m.CapacityRetry.IsNull() && !m.CapacityRetry.IsUnknown() {
		var cr gpuCapacityRetryModel
		diags.Append(m.CapacityRetry.As(ctx, &cr, gpuObjectAs)...)
		r, ps := platform.CapacityRetryFromInput(platform.CapacityRetryInput{Attempts: cr.Attempts.ValueInt64Pointer(), InitialDelay: cr.InitialDelay.ValueStringPointer()})
		s.CapacityRetry, s.InputProblems = r, append(s.InputProblems, ps...)
	}
	return s
}

// gpuClusterOptions sends the core's progress to the Terraform log.
func gpuClusterOptions(ctx context.Context) platform.GPUClusterOptions {
	return platform.GPUClusterOptions{Progress: func(msg string) { tflog.Info(ctx, msg) }}
}
