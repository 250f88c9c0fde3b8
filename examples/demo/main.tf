# The whole story in one configuration, as `make demo` runs it against the
# local AWS emulator: a UAE platform with a residency guard, a feature store,
# a scale-to-zero CPU footprint for inference and a GPU training cluster whose
# nodes must prove their hardware (the validation gate) before apply succeeds.
#
# Against real AWS, trusted_certificates is AWS's RSA-2048 certificate for
# me-central-1 (see the validation guide), and the nodes run hwprobe at boot.
# In the demo the emulator stands in for the nodes and signs their identity
# with a test key, whose certificate the demo passes here.
terraform {
  required_version = ">= 1.5"
  required_providers {
    mlplatform = {
      source  = "mlplatform/mlplatform"
      version = ">= 0.1.0"
    }
  }
}

variable "data_bucket" {
  description = "Bucket of the training data and the offline feature store. It must live in the jurisdiction."
  type        = string
  default     = "mlplatform-demo-data"
}

variable "reports_bucket" {
  description = "In-region bucket the nodes publish their hwprobe reports to."
  type        = string
  default     = "mlplatform-demo-reports"
}

variable "kms_key_arn" {
  description = "Customer-managed KMS key in me-central-1: volumes, the offline store and the reports."
  type        = string
}

variable "feature_store_role_arn" {
  description = "IAM role SageMaker Feature Store assumes to write the offline store."
  type        = string
}

variable "trusted_certificates" {
  description = "PEM of the certificates that sign the nodes' identity documents."
  type        = string
}

variable "gpu_instance_type" {
  description = "GPU instance type of the training cluster."
  type        = string
  default     = "g6.12xlarge"
}

variable "gpu_nodes" {
  description = "Nodes of the training cluster."
  type        = number
  default     = 2
}

variable "validation_checks" {
  description = "Profile sections every node must prove: host, cpu, cpu_features, gpu, efa. The demo's nodes are played on a machine without a GPU, so it checks the host and the CPU features only."
  type        = list(string)
  default     = ["host", "cpu_features"]
}

provider "mlplatform" {
  region = "me-central-1"
  residency {
    jurisdiction                  = "AE"
    excluded_zone_ids             = ["mec1-az2"]
    require_customer_managed_keys = true
    mode                          = "enforce"
  }
  default_tags = {
    owner = "ml-platform"
  }
}

data "mlplatform_residency" "this" {}

# The data bucket, the reports bucket and the key, checked before anything
# depends on them.
resource "mlplatform_residency_guard" "data" {
  s3_uris      = ["s3://${var.data_bucket}/", "s3://${var.reports_bucket}/"]
  kms_key_arns = [var.kms_key_arn]
  zone_ids     = [data.mlplatform_residency.this.allowed_zone_ids[0]]
}

resource "mlplatform_feature_store" "customers" {
  name                           = "customers"
  record_identifier_feature_name = "customer_id"
  event_time_feature_name        = "event_time"

  features = [
    { name = "customer_id", type = "String" },
    { name = "event_time", type = "Fractional" },
    { name = "risk_score", type = "Fractional" },
  ]

  offline_store = {
    s3_uri      = "s3://${var.data_bucket}/feature-store"
    kms_key_arn = var.kms_key_arn
  }

  role_arn   = var.feature_store_role_arn
  depends_on = [mlplatform_residency_guard.data]
}

# Inference for a small business: the cheapest type offered in the UAE with
# AMX, two instances in working hours, none from 20:00 to 07:00 on working
# days.
resource "mlplatform_cpu_footprint" "inference" {
  name = "demo-inference"

  requirements = {
    min_vcpus      = 2
    min_memory_gib = 8
    cpu_features   = ["amx_tile", "amx_bf16"]
    architecture   = "x86_64"
  }

  min_size         = 1
  max_size         = 4
  desired_capacity = 2

  schedule {
    name             = "off-hours"
    recurrence       = "0 20 * * 1-5"
    duration         = "11h"
    min_size         = 0
    max_size         = 0
    desired_capacity = 0
  }

  kms_key_arn = var.kms_key_arn
  root_volume = { size_gib = 30 }
  depends_on  = [mlplatform_residency_guard.data]
}

# The training cluster. Apply succeeds only when every node has run hwprobe
# against the profile rendered from this declaration and published a signed,
# passing report in-region.
resource "mlplatform_gpu_cluster" "train" {
  name          = "demo-train"
  instance_type = var.gpu_instance_type
  node_count    = var.gpu_nodes
  zone_id       = data.mlplatform_residency.this.allowed_zone_ids[0]
  image         = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
  kms_key_arn   = var.kms_key_arn
  root_volume   = { size_gib = 200 }

  validation = {
    checks               = var.validation_checks
    timeout              = "5m"
    on_failure           = "fail"
    reports_s3_uri       = "s3://${var.reports_bucket}/clusters/"
    reports_kms_key_arn  = var.kms_key_arn
    trusted_certificates = var.trusted_certificates
  }
  depends_on = [mlplatform_residency_guard.data]
}

# The reports, read back after the gate: per node its verdict, every check
# and where its signed identity says it ran.
data "mlplatform_validation_reports" "train" {
  name                 = mlplatform_gpu_cluster.train.name
  reports_s3_uri       = "s3://${var.reports_bucket}/clusters/"
  trusted_certificates = var.trusted_certificates
  depends_on           = [mlplatform_gpu_cluster.train]
}

output "inference_type" {
  value = "${mlplatform_cpu_footprint.inference.chosen_instance_type}: ${mlplatform_cpu_footprint.inference.decision_reason}"
}

output "gpu_nodes" {
  value = mlplatform_gpu_cluster.train.node_ids
}

output "validation" {
  value = {
    for r in data.mlplatform_validation_reports.train.reports : r.instance_id => {
      status   = r.status
      attested = "${r.attested_region} / ${r.attested_zone_id}"
      checks = [
        for c in r.checks : format("%-7s %s: expected %s, observed %s%s",
          c.status, trimspace("${c.id} ${c.subject}"), c.expected,
        c.observed == "" ? "-" : c.observed, c.reason == "" ? "" : "; ${c.reason}")
      ]
    }
  }
}
