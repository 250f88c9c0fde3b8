package pulumi

import (
	"context"
	"slices"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/property"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator input (Slurm; EKS in orchestrator_eks.go) of the GPU
// cluster and the CPU footprint, and its output slurmControllerConfig: the
// Terraform resources' orchestrator block, translated to the same core
// spec.

// Orchestrator is the scheduler the nodes join.
type Orchestrator struct {
	Slurm *OrchestratorSlurm `pulumi:"slurm,optional"`
	EKS   *OrchestratorEKS   `pulumi:"eks,optional"`
	// Kubernetes is a self-managed cluster (orchestrator_kubernetes.go).
	Kubernetes *OrchestratorKubernetes `pulumi:"kubernetes,optional"`
}

// OrchestratorSlurm is the Slurm cluster the nodes join.
type OrchestratorSlurm struct {
	Controllers       []string `pulumi:"controllers"`
	MungeKeySecretARN string   `pulumi:"mungeKeySecretArn"`
	Partition         *string  `pulumi:"partition,optional"`
	Features          []string `pulumi:"features,optional"`
	NodeNamePrefix    *string  `pulumi:"nodeNamePrefix,optional"`
}

// Descriptions shared by both resources: the Terraform side's words.
const (
	orchestratorDoc          = "The scheduler the nodes join: `slurm`, `eks` or `kubernetes` (one of them). Without this input they join none."
	slurmControllerConfigDoc = "What the Slurm controller needs for these nodes, to add to its `slurm.conf` (configless, `MaxNodeCount`, hwprobe as the health check, the node set and partition) and `gres.conf` (the GPUs' device files by node name). Unset without `orchestrator.slurm`; known at preview when its inputs are."
	// gpuSlurmNames and footprintSlurmNames say how each resource names its
	// nodes in Slurm.
	gpuSlurmNames       = "A node's Slurm name is `PREFIX-INDEX` (its index in the cluster: a replacement keeps its node's name)."
	footprintSlurmNames = "An instance's Slurm name is `PREFIX-INSTANCEID`."
)

// Annotate describes the orchestrator input.
func (o *Orchestrator) Annotate(a infer.Annotator) {
	a.Describe(&o.Slurm, "Join an existing Slurm cluster (22.05 or later) as dynamic nodes (`slurmd -Z`), configless: each node fetches `slurm.conf` and `gres.conf` from the controller. "+
		"After hwprobe validated the node and published its report, `hwprobe slurm join` fetches the munge key, and starts `slurmd` with the gres, features and memory of the validation profile. "+
		"GPU cluster: "+gpuSlurmNames+" CPU footprint: "+footprintSlurmNames+" "+
		"hwprobe is the nodes' `HealthCheckProgram` (`"+platform.SlurmHealthCheckProgram+"`): a node that fails its checks is drained with a reason that starts `hwprobe:`. "+
		"The controller's part is `slurmControllerConfig`. Needs the `validation` input. The image must have `slurmd` and `munge`.")
	a.Describe(&o.EKS, orchestratorEKSDoc)
	a.Describe(&o.Kubernetes, orchestratorKubeDoc)
}

// Annotate describes the Slurm settings.
func (s *OrchestratorSlurm) Annotate(a infer.Annotator) {
	a.Describe(&s.Controllers, "slurmctld addresses, `HOST` or `HOST:PORT` (default port 6817), the primary first: `slurmd --conf-server`.")
	a.Describe(&s.MungeKeySecretARN, "ARN of the Secrets Manager secret that holds the cluster's munge key (binary, or base64 text; 32 to 1024 bytes). Residency is checked at preview: the secret's region, the regions it is replicated to, and the KMS key that encrypts it (customer managed where the policy requires). The nodes' instance profile needs `secretsmanager:GetSecretValue` on it and `kms:Decrypt` on its key.")
	a.Describe(&s.Partition, "Partition the controller configuration puts the nodes in (a `Nodeset` by the resource's feature).")
	a.Describe(&s.Features, "Features added to the ones derived from the profile: `mlplatform`, the node name prefix, the instance type, the GPU model, `efa`, `pg-<placement group>`, `profile-<digest>`.")
	a.Describe(&s.NodeNamePrefix, "Begins every node's Slurm name (1 to 40 letters, digits, `_`, `.`, `-`). Default: the resource's name.")
}

// slurmSpec translates the orchestrator input; nil without Slurm. unknown
// are the core paths not known yet (unknownPaths): an orchestrator or a
// slurm object unknown as a whole is Slurm whose values are all unknown,
// as the Terraform front end reads it. infer decodes an unknown value as
// its zero value: a list with an unknown element is not known yet, never a
// list holding "".
func slurmSpec(o *Orchestrator, unknown []string) *platform.SlurmSpec {
	whole := slices.Contains(unknown, "orchestrator") || slices.Contains(unknown, platform.SlurmPath)
	if o == nil || o.Slurm == nil {
		if whole {
			return &platform.SlurmSpec{}
		}
		return nil
	}
	s := o.Slurm
	out := &platform.SlurmSpec{Controllers: slices.Clone(s.Controllers), MungeKeySecretARN: s.MungeKeySecretARN,
		Partition: deref(s.Partition), Features: slices.Clone(s.Features), NodeNamePrefix: deref(s.NodeNamePrefix)}
	if slices.Contains(unknown, platform.SlurmPath+".controllers") {
		out.Controllers = nil
	}
	if slices.Contains(unknown, platform.SlurmPath+".features") {
		out.Features = nil
	}
	return out
}

// slurmPreviewKey is the context key of where a preview's Create or Update
// of a GPU cluster or CPU footprint leaves the slurmControllerConfig its
// plan rendered.
type slurmPreviewKey struct{}

// withSlurmPreview makes slurmControllerConfig known at preview when the
// plan could render it, as the Terraform front end knows it at plan: infer
// marks every output of a preview's create unknown, so the value the
// resource's preview rendered is set on the response here. Unrendered, it
// stays unknown. The paths of the inputs not known yet reach the preview as
// they reach Diff (unknownInputs).
func withSlurmPreview(prov p.Provider) p.Provider {
	set := func(props property.Map, rendered string) property.Map {
		if rendered == "" {
			return props
		}
		return props.Set("slurmControllerConfig", property.New(rendered))
	}
	slurmType := func(t string) bool { return t == gpuClusterToken || t == cpuFootprintToken }
	if create := prov.Create; create != nil {
		prov.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
			if !req.DryRun || !slurmType(string(req.Urn.Type())) {
				return create(ctx, req)
			}
			var rendered string
			ctx = context.WithValue(context.WithValue(ctx, unknownInputsKey{}, wholeListUnknowns(req.Properties)), slurmPreviewKey{}, &rendered)
			resp, err := create(ctx, req)
			if err == nil {
				resp.Properties = set(resp.Properties, rendered)
			}
			return resp, err
		}
	}
	if update := prov.Update; update != nil {
		prov.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
			if !req.DryRun || !slurmType(string(req.Urn.Type())) {
				return update(ctx, req)
			}
			var rendered string
			ctx = context.WithValue(context.WithValue(ctx, unknownInputsKey{}, wholeListUnknowns(req.Inputs)), slurmPreviewKey{}, &rendered)
			resp, err := update(ctx, req)
			if err == nil {
				resp.Properties = set(resp.Properties, rendered)
			}
			return resp, err
		}
	}
	return prov
}

// previewSlurm renders slurmControllerConfig in a preview (withSlurmPreview)
// with render, given the paths of the inputs not known yet; a plan that
// fails leaves it unknown (Check reported why).
func previewSlurm(ctx context.Context, o *Orchestrator, render func(env *platform.Env, unknown []string) (string, error)) {
	out, _ := ctx.Value(slurmPreviewKey{}).(*string)
	if out == nil || o == nil || o.Slurm == nil {
		return
	}
	env, err := envFrom(ctx)
	if err != nil {
		return
	}
	if s, err := render(env, unknownInputs(ctx)); err == nil {
		*out = s
	}
}
