# The defaults below are the UAE ML platform's, written once in the Go core
# (internal/platform: PlatformDefaults, PlatformJurisdiction,
# PlatformDataClassifications, PlatformTagKeys) and shared with the Pulumi
# component mlplatform:index:Platform. HCL cannot import them:
# TestPlatformDefaults_module (go test ./internal/platform) parses this
# module and fails, naming the variable and both values, when one differs.
# Change a default in the core and here together.

variable "name" {
  description = "Platform name, 1 to 32 lowercase letters, digits and hyphens: it prefixes every resource (`<name>-train`, `<name>-features`, `<name>-inference`) and is the `platform` tag."
  type        = string
  default     = "uae-ml"

  validation {
    condition     = can(regex("^[a-z0-9](-?[a-z0-9]){0,31}$", var.name)) && length(var.name) <= 32
    error_message = "name must be 1 to 32 lowercase letters, digits and single hyphens, starting and ending with a letter or digit."
  }
}

variable "owner" {
  description = "The `owner` tag of every resource: the team or person accountable for the platform."
  type        = string

  validation {
    condition     = length(trimspace(var.owner)) > 0 && length(var.owner) <= 256
    error_message = "owner must be a non-empty tag value of at most 256 characters."
  }
}

variable "cost_center" {
  description = "The `cost-center` tag of every resource, for chargeback."
  type        = string

  validation {
    condition     = length(trimspace(var.cost_center)) > 0 && length(var.cost_center) <= 256
    error_message = "cost_center must be a non-empty tag value of at most 256 characters."
  }
}

variable "data_classification" {
  description = "The `data-classification` tag of every resource: `public`, `internal`, `confidential` or `restricted`."
  type        = string
  default     = "confidential"

  validation {
    condition     = contains(["public", "internal", "confidential", "restricted"], var.data_classification)
    error_message = "data_classification must be public, internal, confidential or restricted."
  }
}

variable "tags" {
  description = "Further tags of every resource. `owner`, `cost-center`, `data-classification` and `platform` come from their variables and win over these."
  type        = map(string)
  default     = {}
}

variable "allow_audit_mode" {
  description = "Accept a provider whose residency mode is `audit` (violations warn instead of failing). Off: the platform refuses to plan unless the mode is `enforce`."
  type        = bool
  default     = false
}

variable "kms_key_arn" {
  description = "ARN of the customer-managed KMS key in me-central-1 that encrypts every volume, the feature store and the captured data."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID), not an alias."
  }
}

variable "data_bucket" {
  description = "S3 bucket in me-central-1, without cross-region replication, of the feature store's offline records."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.data_bucket))
    error_message = "data_bucket must be a bucket name (3 to 63 lowercase letters, digits, '.' or '-'), not an s3:// URI."
  }
}

variable "capture_bucket" {
  description = "S3 bucket in me-central-1 for the endpoint's data capture (`s3://<bucket>/<name>-inference`); null for no capture. Capture needs `endpoint_instance_type`."
  type        = string
  default     = null

  validation {
    condition     = var.capture_bucket == null || can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.capture_bucket))
    error_message = "capture_bucket must be a bucket name, not an s3:// URI."
  }
}

variable "features" {
  description = "Features of the feature group beyond its record identifier (`record_id`) and event time (`event_time`): name and type (`Integral`, `Fractional` or `String`)."
  type = list(object({
    name             = string
    type             = string
    collection_type  = optional(string)
    vector_dimension = optional(number)
  }))

  validation {
    condition     = length(var.features) >= 1
    error_message = "features must list at least one feature."
  }
}

variable "feature_store_role_arn" {
  description = "IAM role SageMaker assumes to write the offline store."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$", var.feature_store_role_arn))
    error_message = "feature_store_role_arn must be an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)."
  }
}

variable "endpoint_image" {
  description = "ECR image URI of the serving container, in me-central-1 (`ACCOUNT.dkr.ecr.me-central-1.amazonaws.com/REPO:TAG`)."
  type        = string

  validation {
    condition     = can(regex("^[0-9]{12}\\.dkr\\.ecr\\.[a-z0-9-]+\\.amazonaws\\.com/[a-z0-9._/-]+(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$", var.endpoint_image))
    error_message = "endpoint_image must be an ECR image URI: ACCOUNT.dkr.ecr.REGION.amazonaws.com/REPO:TAG (or @sha256:DIGEST)."
  }
}

variable "model_data_uri" {
  description = "S3 URI of the model artifacts, in a bucket in me-central-1; null when the image carries the model."
  type        = string
  default     = null

  validation {
    condition     = var.model_data_uri == null || can(regex("^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$", var.model_data_uri))
    error_message = "model_data_uri must be an s3://BUCKET/KEY URI."
  }
}

variable "serving_role_arn" {
  description = "IAM role SageMaker assumes to pull the serving image and the model data."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$", var.serving_role_arn))
    error_message = "serving_role_arn must be an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)."
  }
}

variable "endpoint_instance_type" {
  description = "SageMaker instance type of the endpoint (e.g. `ml.m5.large`); null for a serverless endpoint."
  type        = string
  default     = null

  validation {
    condition     = var.endpoint_instance_type == null || can(regex("^ml\\.[a-z0-9-]+\\.[0-9]*x?large$", var.endpoint_instance_type))
    error_message = "endpoint_instance_type must be a SageMaker instance type such as ml.m5.large, or null for serverless."
  }
}

variable "inference_min_vcpus" {
  description = "Minimum vCPUs per instance of the inference footprint."
  type        = number
  default     = 2

  validation {
    condition     = var.inference_min_vcpus >= 1 && floor(var.inference_min_vcpus) == var.inference_min_vcpus
    error_message = "inference_min_vcpus must be a whole number, at least 1."
  }
}

variable "inference_min_memory_gib" {
  description = "Minimum memory per instance of the inference footprint, GiB."
  type        = number
  default     = 4

  validation {
    condition     = var.inference_min_memory_gib > 0
    error_message = "inference_min_memory_gib must be above 0."
  }
}

variable "inference_cpu_features" {
  description = "ISA features every inference instance must have (`/proc/cpuinfo` names, e.g. `avx512f`, `amx_tile`)."
  type        = list(string)
  default     = []
}

variable "inference_max_hourly_price" {
  description = "Most one inference instance may cost per hour (On-Demand, USD); null for no cap."
  type        = number
  default     = null

  validation {
    condition     = var.inference_max_hourly_price == null || try(var.inference_max_hourly_price > 0, false)
    error_message = "inference_max_hourly_price must be above 0, or null."
  }
}

variable "inference_min_size" {
  description = "Minimum instances of the inference footprint during working hours."
  type        = number
  default     = 1
}

variable "inference_max_size" {
  description = "Maximum instances of the inference footprint."
  type        = number
  default     = 2
}

variable "inference_desired_capacity" {
  description = "Instances of the inference footprint during working hours."
  type        = number
  default     = 1
}

variable "off_hours_schedule" {
  description = "Scale the inference footprint to zero from 20:00 to 07:00 after each working day (Monday to Friday, Asia/Dubai)."
  type        = bool
  default     = true
}

variable "root_volume_gib" {
  description = "Root volume size of every inference footprint instance, GiB."
  type        = number
  default     = 30

  validation {
    condition     = var.root_volume_gib >= 8 && floor(var.root_volume_gib) == var.root_volume_gib
    error_message = "root_volume_gib must be a whole number, at least 8."
  }
}

variable "training_enabled" {
  description = "Create the GPU training cluster. Off by default: GPU capacity in me-central-1 is scarce and costly; turn it on when a reservation or block is ready, or for on-demand p5en or g6 nodes."
  type        = bool
  default     = false
}

variable "training_instance_type" {
  description = "GPU instance type of the training cluster (see the gpu-training-cluster module): `p5en.48xlarge` (8 x H200) by default."
  type        = string
  default     = "p5en.48xlarge"
}

variable "training_node_count" {
  description = "Nodes of the training cluster."
  type        = number
  default     = 2

  validation {
    condition     = var.training_node_count >= 1 && floor(var.training_node_count) == var.training_node_count
    error_message = "training_node_count must be a whole number, at least 1."
  }
}

variable "training_zone_id" {
  description = "Zone id of the training cluster: `mec1-az1` by default (mec1-az2 has been out of service)."
  type        = string
  default     = "mec1-az1"

  validation {
    condition     = can(regex("^mec1-az[0-9]+$", var.training_zone_id))
    error_message = "training_zone_id must be a zone id of me-central-1 such as mec1-az1."
  }
}

variable "training_image" {
  description = "AMI id or SSM parameter name of the training nodes' image."
  type        = string
  default     = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
}

variable "training_validation" {
  description = "The training cluster's validation gate, passed as it is to the gpu-training-cluster module's `validation`, whose README gives its attributes and checks them: every node proves its GPUs, NVLink, EFA, bf16 GEMM and NCCL all-reduce with hwprobe before apply succeeds. `trusted_certificates` must hold AWS's RSA-2048 certificate for me-central-1. Null: nodes are not validated."
  type        = any
  default     = null
}

variable "inference_validation" {
  description = "The inference footprint's validation gate, passed as it is to the smb-inference module's `validation`, whose README gives its attributes and checks them: every instance proves its type, CPU features and fp32 GEMM with hwprobe before it serves. `trusted_certificates` must hold AWS's RSA-2048 certificate for me-central-1. Null: instances are not validated."
  type        = any
  default     = null
}
