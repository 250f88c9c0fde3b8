variable "name" {
  description = "Cluster name, unique in the region: 1 to 100 letters, digits, `-`, `_` or `.`. Nodes are tagged `mlplatform:cluster = <name>`; the placement group and launch template are `mlplatform-<name>`."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9._-]{1,100}$", var.name))
    error_message = "name must be 1 to 100 letters, digits, '-', '_' or '.'."
  }
}

variable "instance_type" {
  description = "GPU instance type: a P family training type (`p5.48xlarge` H100, `p5e.48xlarge` or `p5en.48xlarge` H200, `p4d.24xlarge` A100) or a G family type (`g5.*` A10G, `g6.*` L4, `g6e.*` L40S). The type decides the defaults below and the hwprobe profile."
  type        = string
  default     = "p5en.48xlarge"

  validation {
    condition     = can(regex("^(p5\\.48xlarge|p5e\\.48xlarge|p5en\\.48xlarge|p4d\\.24xlarge|(g5|g6|g6e)\\.[0-9]*x?large)$", var.instance_type))
    error_message = "instance_type must be p5.48xlarge, p5e.48xlarge, p5en.48xlarge, p4d.24xlarge, or a g5, g6 or g6e size."
  }
}

variable "node_count" {
  description = "Number of nodes, 1 to 512."
  type        = number
  default     = 2

  validation {
    condition     = var.node_count >= 1 && var.node_count <= 512 && floor(var.node_count) == var.node_count
    error_message = "node_count must be a whole number from 1 to 512."
  }
}

variable "zone_id" {
  description = "Availability zone id, e.g. `mec1-az1`. Null: the zone of `subnet_id` or of the capacity reservation, else the first allowed zone that offers the type."
  type        = string
  default     = null

  validation {
    condition     = var.zone_id == null || can(regex("^[a-z0-9]+-az[0-9]+$", var.zone_id))
    error_message = "zone_id must be a zone id such as mec1-az1 (not a zone name such as me-central-1a)."
  }
}

variable "zone_fallback" {
  description = "When the zone has no capacity, launch in another zone of the jurisdiction that offers the type (never outside it). Ignored on a capacity reservation or block, whose zone is fixed."
  type        = bool
  default     = false
}

variable "image" {
  description = "AMI id (`ami-...`) or SSM parameter name holding one. Default: the AWS Deep Learning Base OSS NVIDIA driver AMI for Ubuntu 22.04 (x86_64), resolved at plan time."
  type        = string
  default     = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"

  validation {
    condition     = can(regex("^(ami-[0-9a-f]+|/.+|resolve:ssm:/.+)$", var.image))
    error_message = "image must be an AMI id (ami-...) or an SSM parameter name (/... or resolve:ssm:/...)."
  }
}

variable "kms_key_arn" {
  description = "ARN of the customer-managed KMS key that encrypts every volume. It must lie inside the provider's jurisdiction (checked at plan)."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID), not an alias: residency checks need the key's region and account."
  }
}

variable "capacity_type" {
  description = "`on_demand`, `capacity_reservation`, `capacity_block` (EC2 Capacity Blocks for ML) or `spot`."
  type        = string
  default     = "on_demand"

  validation {
    condition     = contains(["on_demand", "capacity_reservation", "capacity_block", "spot"], var.capacity_type)
    error_message = "capacity_type must be on_demand, capacity_reservation, capacity_block or spot."
  }
}

variable "reservation_id" {
  description = "Capacity reservation or capacity block id (`cr-...`); required with `capacity_type` `capacity_reservation` or `capacity_block`."
  type        = string
  default     = null

  validation {
    condition     = var.reservation_id == null || can(regex("^cr-[0-9a-f]+$", var.reservation_id))
    error_message = "reservation_id must be a capacity reservation id (cr-...)."
  }
}

variable "subnet_id" {
  description = "Subnet of every node's network interfaces. Null: a subnet of `vpc_id` in the zone, else the zone's default subnet."
  type        = string
  default     = null
}

variable "vpc_id" {
  description = "VPC to pick the subnet from in the zone when `subnet_id` is null."
  type        = string
  default     = null
}

variable "security_group_ids" {
  description = "Security groups of every interface. EFA needs a group that allows all traffic to and from itself. Null: the VPC's default group."
  type        = set(string)
  default     = null
}

variable "instance_profile" {
  description = "IAM instance profile name or ARN for the nodes (for example to publish hwprobe reports to S3)."
  type        = string
  default     = null
}

variable "placement_group_name" {
  description = "An existing cluster placement group to launch into. Null: the cluster creates and owns `mlplatform-<name>`."
  type        = string
  default     = null
}

variable "efa_interfaces" {
  description = "EFA interfaces per node. Null: as many as the type supports (16 on p5en.48xlarge, 32 on p5.48xlarge, 0 on a type without EFA)."
  type        = number
  default     = null

  validation {
    condition     = var.efa_interfaces == null || try(var.efa_interfaces >= 0 && floor(var.efa_interfaces) == var.efa_interfaces, false)
    error_message = "efa_interfaces must be a whole number, 0 or more."
  }
}

variable "root_volume_gib" {
  description = "Root volume size in GiB. Null: 500 on P types, 200 on G types."
  type        = number
  default     = null

  validation {
    condition     = var.root_volume_gib == null || try(var.root_volume_gib >= 8, false)
    error_message = "root_volume_gib must be at least 8."
  }
}

variable "data_volume_gib" {
  description = "Size of the gp3 data volume (datasets, checkpoints) in GiB; 0 for none. Null: 4000 on P types (1000 MiB/s, 16000 IOPS), 500 on G types (250 MiB/s, 3000 IOPS)."
  type        = number
  default     = null

  validation {
    condition     = var.data_volume_gib == null || try(var.data_volume_gib >= 0, false)
    error_message = "data_volume_gib must be 0 or more."
  }
}

variable "user_data" {
  description = "User data run at boot (plain text, at most 16 KiB). With `validation` it runs first, beside the hwprobe bootstrap, and must begin with `#!`, `#cloud-config`, `#cloud-boothook` or `#include`."
  type        = string
  default     = null
}

variable "validation" {
  description = "The validation gate (the resource's `validation` block): every node runs hwprobe at boot against the profile the provider renders from this cluster and publishes a signed report to `reports_s3_uri`; apply succeeds only when every node has passed. The module adds the benchmarks for the GPU type (`gpu_gemm_bf16` at `min_gemm_efficiency` of the catalog peak; on nodes with more than one GPU also `gpu_nccl_allreduce_busbw` at `min_allreduce_efficiency`), a timeout of 30m on P types and 15m on G types, and `replace` as what a failing node does. In me-central-1 `trusted_certificates` must hold AWS's RSA-2048 certificate for the region. Null: nodes are not validated."
  type = object({
    reports_s3_uri       = string
    reports_kms_key_arn  = string
    trusted_certificates = optional(string)
    wait                 = optional(bool, true)
    timeout              = optional(string)
    on_failure           = optional(string, "replace")
    max_replacements     = optional(number, 2)
    level                = optional(string, "quick")
    hwprobe_s3_uri       = optional(string)
    hwprobe_sha256       = optional(string)
  })
  default = null

  validation {
    condition     = var.validation == null || try(contains(["fail", "warn", "replace"], var.validation.on_failure), false)
    error_message = "validation.on_failure must be fail, warn or replace."
  }
  validation {
    condition     = var.validation == null || try(contains(["quick", "full"], var.validation.level), false)
    error_message = "validation.level must be quick or full."
  }
}

variable "min_allreduce_efficiency" {
  description = "Lowest fraction of the catalog's NCCL all-reduce bus bandwidth that `gpu_nccl_allreduce_busbw` must reach on nodes with more than one GPU, when `validation` is set (0 to 1)."
  type        = number
  default     = 0.6

  validation {
    condition     = var.min_allreduce_efficiency > 0 && var.min_allreduce_efficiency <= 1
    error_message = "min_allreduce_efficiency must be above 0 and at most 1."
  }
}

variable "min_gemm_efficiency" {
  description = "Lowest fraction of the GPU's bf16 datasheet peak that `gpu_gemm_bf16` must reach, when `validation` is set (0 to 1)."
  type        = number
  default     = 0.6

  validation {
    condition     = var.min_gemm_efficiency > 0 && var.min_gemm_efficiency <= 1
    error_message = "min_gemm_efficiency must be above 0 and at most 1."
  }
}

variable "tags" {
  description = "Tags of the nodes, their volumes and the launch template, merged over the provider's default_tags."
  type        = map(string)
  default     = {}
}

variable "slurm" {
  description = "The Slurm cluster the nodes join (the resource's `orchestrator.slurm`): configless dynamic nodes named `PREFIX-INDEX`, with gres, features and memory from the validation profile, hwprobe as their health check; they leave Slurm when their instance shuts down. Needs `validation`. Add the output `slurm_controller_config` to the controller. Null: the nodes join no scheduler."
  type = object({
    controllers          = list(string)
    munge_key_secret_arn = string
    partition            = optional(string)
    features             = optional(list(string))
    node_name_prefix     = optional(string)
  })
  default = null
}

variable "eks" {
  description = "The EKS cluster the nodes join (the resource's `orchestrator.eks`), in the provider's region: each node registers with the startup taint `mlplatform.io/hwprobe=pending:NoSchedule` and the resource's labels (`mlplatform.io/cluster = <name>`, ...) plus `labels`; the validation gate lifts the taint from each node whose evidence passed and cordons those that failed. `image` must then be an EKS optimized Amazon Linux 2023 NVIDIA image (nodeadm). With `create_access_entry` (default true) the resource creates the EC2_LINUX access entry of the role of `instance_profile`, which is then required; the provider's identity needs an access entry that may get, list and patch Nodes. Needs `validation`. Null: the nodes join no scheduler."
  type = object({
    cluster_name        = string
    labels              = optional(map(string))
    create_access_entry = optional(bool, true)
  })
  default = null
}

variable "kubernetes" {
  description = "A self-managed Kubernetes cluster (kubeadm) the nodes join (the resource's `orchestrator.kubernetes`), in the jurisdiction: `kubeconfig_secret_arn` is a Secrets Manager secret holding the gate's kubeconfig (token or client certificate; its server an address of a VPC of the region or an AWS name that names the region, checked at plan), `join_token_secret_arn` one holding a kubeadm bootstrap token, read by the nodes with their instance profile. Each registers with the startup taint `mlplatform.io/hwprobe=pending:NoSchedule` and the resource's labels plus `labels`; the validation gate lifts the taint from each that passed. `image` must have kubeadm, the kubelet, a container runtime and the AWS CLI. Needs `validation`. Null: no such cluster. At most one of `slurm`, `eks` and `kubernetes`."
  type = object({
    kubeconfig_secret_arn = string
    context               = optional(string)
    join_token_secret_arn = string
    labels                = optional(map(string))
  })
  default = null
}
