package pulumi

import (
	"slices"

	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/mlplatform/mlplatform/internal/platform"
)

// The orchestrator input (Slurm) of the GPU cluster and the CPU footprint,
// and its output slurmControllerConfig: the Terraform resources'
// orchestrator block, translated to the same core spec.

// Orchestrator is the scheduler the nodes join.
type Orchestrator struct {
	Slurm *OrchestratorSlurm `pulumi:"slurm,optional"`
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
	orchestratorDoc          = "The scheduler the nodes join. Without this input they join none."
	slurmControllerConfigDoc = "What the Slurm controller needs for these nodes, to add to its `slurm.conf` (configless, `MaxNodeCount`, hwprobe as the health check, the node set and partition) and `gres.conf` (the GPUs' device files by node name). Unset without `orchestrator.slurm`; known after the update."
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
