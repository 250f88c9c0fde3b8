variable "name" {
  description = "Name of the footprint and the endpoint: 1 to 63 letters, digits and hyphens, starting and ending with a letter or digit. The Auto Scaling group is `mlplatform-cpu-<name>`. Changing it replaces both."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9](-*[A-Za-z0-9])*$", var.name)) && length(var.name) <= 63
    error_message = "name must be 1 to 63 letters, digits and hyphens, starting and ending with a letter or digit (SageMaker's endpoint name rule)."
  }
}

variable "min_vcpus" {
  description = "Minimum vCPUs per instance of the footprint."
  type        = number
  default     = 2

  validation {
    condition     = var.min_vcpus >= 1 && var.min_vcpus <= 192 && floor(var.min_vcpus) == var.min_vcpus
    error_message = "min_vcpus must be a whole number from 1 to 192."
  }
}

variable "min_memory_gib" {
  description = "Minimum memory per instance, GiB."
  type        = number
  default     = 4

  validation {
    condition     = var.min_memory_gib > 0 && var.min_memory_gib <= 1536
    error_message = "min_memory_gib must be above 0 and at most 1536."
  }
}

variable "cpu_features" {
  description = "ISA features every instance must have, as `/proc/cpuinfo` names them, e.g. `[\"avx512f\"]`, or `[\"amx_tile\", \"amx_bf16\"]` for bf16 matrix units (c7i, m7i)."
  type        = list(string)
  default     = []

  validation {
    condition = alltrue([for f in var.cpu_features : contains([
      "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl",
      "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
      "asimd", "sve", "sve2", "bf16", "i8mm", "svebf16",
    ], f)])
    error_message = "cpu_features must name known features: sse4_2, avx, avx2, fma, f16c, avx512f, avx512cd, avx512bw, avx512dq, avx512vl, avx512_vnni, avx512_bf16, avx512_fp16, amx_tile, amx_bf16, amx_int8, asimd, sve, sve2, bf16, i8mm, svebf16."
  }
}

variable "architecture" {
  description = "CPU architecture: `x86_64`, `arm64` (Graviton) or `any`."
  type        = string
  default     = "x86_64"

  validation {
    condition     = contains(["x86_64", "arm64", "any"], var.architecture)
    error_message = "architecture must be x86_64, arm64 or any."
  }
}

variable "max_hourly_price" {
  description = "Most one instance may cost per hour (On-Demand, USD); null for no cap. A type whose price is unknown never meets a cap."
  type        = number
  default     = null

  validation {
    condition     = var.max_hourly_price == null || try(var.max_hourly_price > 0, false)
    error_message = "max_hourly_price must be above 0, or null."
  }
}

variable "instance_type" {
  description = "Explicit EC2 instance type instead of the choice by requirements; it must still meet them and be offered in an allowed zone. Changing it rolls the instances."
  type        = string
  default     = null

  validation {
    condition     = var.instance_type == null || can(regex("^[a-z][a-z0-9-]*\\.[0-9]*[a-z]+$", var.instance_type))
    error_message = "instance_type must be an EC2 instance type such as c7i.large (not an ml.* SageMaker type)."
  }
}

variable "min_size" {
  description = "Minimum instances of the footprint during working hours."
  type        = number
  default     = 1

  validation {
    condition     = var.min_size >= 0 && floor(var.min_size) == var.min_size
    error_message = "min_size must be a whole number, 0 or more."
  }
}

variable "max_size" {
  description = "Maximum instances of the footprint, at most 100."
  type        = number
  default     = 2

  validation {
    condition     = var.max_size >= 1 && var.max_size <= 100 && floor(var.max_size) == var.max_size
    error_message = "max_size must be a whole number from 1 to 100."
  }
}

variable "desired_capacity" {
  description = "Instances the footprint runs during working hours (between `min_size` and `max_size`)."
  type        = number
  default     = 1

  validation {
    condition     = var.desired_capacity >= 0 && floor(var.desired_capacity) == var.desired_capacity
    error_message = "desired_capacity must be a whole number, 0 or more."
  }
}

variable "off_hours_schedule" {
  description = "Scale the footprint to zero off-hours: from `off_hours_recurrence` for `off_hours_duration` (by default 20:00 to 07:00 after each working day, Monday to Friday, Asia/Dubai). False keeps it at `desired_capacity` around the clock."
  type        = bool
  default     = true
}

variable "off_hours_recurrence" {
  description = "Cron expression (minute hour day-of-month month day-of-week, in `time_zone`) at which the off-hours window opens."
  type        = string
  default     = "0 20 * * 1-5"

  validation {
    condition     = length(split(" ", trimspace(var.off_hours_recurrence))) == 5
    error_message = "off_hours_recurrence must be a cron expression of five fields, e.g. \"0 20 * * 1-5\"."
  }
}

variable "off_hours_duration" {
  description = "Length of the off-hours window (e.g. `11h`); the working-hours sizes come back when it ends."
  type        = string
  default     = "11h"

  validation {
    condition     = can(regex("^([0-9]+h)?([0-9]+m)?$", var.off_hours_duration)) && var.off_hours_duration != ""
    error_message = "off_hours_duration must be hours and minutes such as 11h or 10h30m."
  }
}

variable "time_zone" {
  description = "IANA time zone of the off-hours schedule."
  type        = string
  default     = "Asia/Dubai"

  validation {
    condition     = can(regex("^[A-Za-z_]+(/[A-Za-z0-9_+-]+)*$", var.time_zone))
    error_message = "time_zone must be an IANA time zone such as Asia/Dubai."
  }
}

variable "image" {
  description = "AMI id (`ami-...`) or SSM parameter name holding one for the footprint. Null: the latest Amazon Linux 2023 of the chosen type's architecture."
  type        = string
  default     = null

  validation {
    condition     = var.image == null || can(regex("^(ami-[0-9a-f]+|/.+|resolve:ssm:/.+)$", var.image))
    error_message = "image must be an AMI id (ami-...) or an SSM parameter name (/... or resolve:ssm:/...)."
  }
}

variable "root_volume_gib" {
  description = "Root volume size of every footprint instance, GiB (gp3, encrypted)."
  type        = number
  default     = 30

  validation {
    condition     = var.root_volume_gib >= 8 && var.root_volume_gib <= 16384 && floor(var.root_volume_gib) == var.root_volume_gib
    error_message = "root_volume_gib must be a whole number from 8 to 16384."
  }
}

variable "kms_key_arn" {
  description = "ARN of the customer-managed KMS key that encrypts the footprint's volumes, the endpoint's storage and the captured data. It must lie in the jurisdiction (checked at plan). The endpoint's storage takes no key on instance types with local NVMe instance storage (`ml.g5`, `ml.g6`, ...): SageMaker encrypts it with a hardware module on the instance. Null: the account's AWS managed keys, which jurisdiction `AE` refuses unless the provider sets `residency.require_customer_managed_keys = false`."
  type        = string
  default     = null

  validation {
    condition     = var.kms_key_arn == null || can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID), not an alias: residency checks need the key's region."
  }
}

variable "subnet_ids" {
  description = "Subnets of the footprint. Null: the default subnet of every allowed zone that offers the type."
  type        = list(string)
  default     = null
}

variable "security_group_ids" {
  description = "Security groups of the footprint's instances."
  type        = set(string)
  default     = null
}

variable "instance_profile" {
  description = "IAM instance profile name or ARN for the footprint's instances."
  type        = string
  default     = null
}

variable "user_data" {
  description = "User data run at boot on the footprint's instances (plain text, at most 16 KiB)."
  type        = string
  default     = null
}

variable "endpoint_image" {
  description = "ECR image URI of the serving container (`ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG`); its registry must be in the jurisdiction (checked at plan)."
  type        = string

  validation {
    condition     = can(regex("^[0-9]{12}\\.dkr\\.ecr\\.[a-z0-9-]+\\.amazonaws\\.com(\\.cn)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$", var.endpoint_image))
    error_message = "endpoint_image must be an ECR image URI: ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG (or @sha256:DIGEST)."
  }
}

variable "model_data_uri" {
  description = "S3 URI of the model artifacts (`s3://BUCKET/KEY`), in a bucket in the jurisdiction; null when the image carries the model."
  type        = string
  default     = null

  validation {
    condition     = var.model_data_uri == null || can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$", var.model_data_uri))
    error_message = "model_data_uri must be an s3://BUCKET/KEY URI."
  }
}

variable "execution_role_arn" {
  description = "IAM role SageMaker assumes to pull the image and the model data."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$", var.execution_role_arn))
    error_message = "execution_role_arn must be an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)."
  }
}

variable "endpoint_environment" {
  description = "Environment variables of the serving container."
  type        = map(string)
  default     = {}
}

variable "endpoint_instance_type" {
  description = "SageMaker instance type of the endpoint's variant (`ml.FAMILY.SIZE`, e.g. `ml.m5.large`, `ml.c7i.large`, `ml.g6.xlarge`). Null: a serverless endpoint, billed per request."
  type        = string
  default     = null

  validation {
    condition     = var.endpoint_instance_type == null || can(regex("^ml\\.[a-z0-9-]+\\.[0-9]*x?large$", var.endpoint_instance_type))
    error_message = "endpoint_instance_type must be a SageMaker instance type such as ml.m5.large, or null for serverless."
  }
}

variable "endpoint_instance_count" {
  description = "Instances of the endpoint's variant when `endpoint_instance_type` is set."
  type        = number
  default     = 1

  validation {
    condition     = var.endpoint_instance_count >= 1 && var.endpoint_instance_count <= 1000 && floor(var.endpoint_instance_count) == var.endpoint_instance_count
    error_message = "endpoint_instance_count must be a whole number from 1 to 1000."
  }
}

variable "serverless_memory_mb" {
  description = "Memory of the serverless endpoint: 1024, 2048, 3072, 4096, 5120 or 6144 MB."
  type        = number
  default     = 2048

  validation {
    condition     = contains([1024, 2048, 3072, 4096, 5120, 6144], var.serverless_memory_mb)
    error_message = "serverless_memory_mb must be 1024, 2048, 3072, 4096, 5120 or 6144."
  }
}

variable "serverless_max_concurrency" {
  description = "Concurrent invocations of the serverless endpoint (1 to 200)."
  type        = number
  default     = 5

  validation {
    condition     = var.serverless_max_concurrency >= 1 && var.serverless_max_concurrency <= 200 && floor(var.serverless_max_concurrency) == var.serverless_max_concurrency
    error_message = "serverless_max_concurrency must be a whole number from 1 to 200."
  }
}

variable "data_capture_s3_uri" {
  description = "Where the endpoint captures requests and responses (`s3://BUCKET/PREFIX`), in a bucket in the jurisdiction (checked at plan); null for no capture. Needs an instance variant: serverless endpoints do not capture."
  type        = string
  default     = null

  validation {
    condition     = var.data_capture_s3_uri == null || can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$", var.data_capture_s3_uri))
    error_message = "data_capture_s3_uri must be an s3://BUCKET/PREFIX URI."
  }
}

variable "data_capture_sampling_percentage" {
  description = "Share of requests captured, 1 to 100, when `data_capture_s3_uri` is set."
  type        = number
  default     = 20

  validation {
    condition     = var.data_capture_sampling_percentage >= 1 && var.data_capture_sampling_percentage <= 100 && floor(var.data_capture_sampling_percentage) == var.data_capture_sampling_percentage
    error_message = "data_capture_sampling_percentage must be a whole number from 1 to 100."
  }
}

variable "tags" {
  description = "Tags of the footprint (its group, launch template, instances and volumes) and the endpoint, merged over the provider's default_tags."
  type        = map(string)
  default     = {}
}

variable "validation" {
  description = "The footprint's validation gate (the resource's `validation` block): every instance runs hwprobe at boot against the profile the provider renders from the chosen type and publishes a signed report to `reports_s3_uri`; a lifecycle hook keeps each instance the group launches, then and later, out of service until its report passed, and apply succeeds only when the group's instances have passed. The module adds `cpu_sgemm` at `min_sgemm_efficiency` of the catalog peak and `replace` as what a failing instance does. In me-central-1 `trusted_certificates` must hold AWS's RSA-2048 certificate for the region. Null: instances are not validated."
  type = object({
    reports_s3_uri       = string
    reports_kms_key_arn  = string
    trusted_certificates = optional(string)
    wait                 = optional(bool, true)
    timeout              = optional(string, "20m")
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

variable "min_sgemm_efficiency" {
  description = "Lowest fraction of the CPU's fp32 peak (catalog) that `cpu_sgemm` must reach on every instance, when `validation` is set (0 to 1)."
  type        = number
  default     = 0.5

  validation {
    condition     = var.min_sgemm_efficiency > 0 && var.min_sgemm_efficiency <= 1
    error_message = "min_sgemm_efficiency must be above 0 and at most 1."
  }
}

variable "slurm" {
  description = "The Slurm cluster the nodes join (the resource's `orchestrator.slurm`): configless dynamic nodes named `PREFIX-INSTANCEID`, with gres, features and memory from the validation profile, hwprobe as their health check; they leave Slurm when their instance shuts down. Needs `validation`. Add the output `slurm_controller_config` to the controller. Null: the nodes join no scheduler."
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
  description = "The EKS cluster the instances join (the resource's `orchestrator.eks`), in the provider's region: each instance registers with the startup taint `mlplatform.io/hwprobe=pending:NoSchedule` and the resource's labels (`mlplatform.io/cluster = <name>`, ...) plus `labels`; the validation gate lifts the taint from each instance whose evidence passed at apply. Instances launched after apply (a scale-out, the end of the off-hours window, a replacement) are approved by `mlplatform approve`, which does not lift the taint yet: their Nodes stay tainted. `image` must be an EKS optimized Amazon Linux 2023 image (nodeadm). With `create_access_entry` (default true) the resource creates the EC2_LINUX access entry of the role of `instance_profile`, which is then required; the provider's identity needs an access entry that may get, list and patch Nodes. Needs `validation`. Null: the instances join no scheduler."
  type = object({
    cluster_name        = string
    labels              = optional(map(string))
    create_access_entry = optional(bool, true)
  })
  default = null
}

variable "kubernetes" {
  description = "A self-managed Kubernetes cluster (kubeadm) the instances join (the resource's `orchestrator.kubernetes`), in the jurisdiction: `kubeconfig_secret_arn` is a Secrets Manager secret holding the gate's kubeconfig (token or client certificate; its server an address of a VPC of the region or an AWS name that names the region, checked at plan), `join_token_secret_arn` one holding a kubeadm bootstrap token, read by the instances with their instance profile. Each registers with the startup taint `mlplatform.io/hwprobe=pending:NoSchedule` and the resource's labels plus `labels`; the validation gate lifts the taint from each that passed. `image` must have kubeadm, the kubelet, a container runtime and the AWS CLI. Needs `validation`. Null: no such cluster. At most one of `slurm`, `eks` and `kubernetes`."
  type = object({
    kubeconfig_secret_arn = string
    context               = optional(string)
    join_token_secret_arn = string
    labels                = optional(map(string))
  })
  default = null
}
