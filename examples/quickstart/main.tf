# Quick start: the effective UAE residency policy, the GPU types offered in
# me-central-1, a residency guard over a data bucket, a SageMaker feature
# store whose offline store lives in that bucket, and (with gpu_nodes > 0) a
# p5en.48xlarge training cluster.
#
# Runs against AWS, or against the local emulator (`make demo` / `make emulator`
# set AWS_ENDPOINT_URL, which the provider honours).
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
  description = "Bucket holding the training data. It must live in the jurisdiction."
  type        = string
  default     = "mlplatform-demo-data"
}

variable "kms_key_arn" {
  description = "ARN of a customer-managed KMS key in me-central-1 (aws_kms_key): it encrypts the feature store's offline store and the cluster's volumes. Jurisdiction AE requires customer-managed keys by default."
  type        = string
}

variable "feature_store_role_arn" {
  description = "IAM role SageMaker Feature Store assumes to write the offline store."
  type        = string
}

variable "gpu_nodes" {
  description = "p5en.48xlarge nodes to launch (8 x H200 each, billed by the hour). 0 launches none."
  type        = number
  default     = 0
}

provider "mlplatform" {
  region = "me-central-1"
  residency {
    jurisdiction      = "AE"
    excluded_zone_ids = ["mec1-az2"]
    mode              = "enforce"
  }
  default_tags = {
    owner = "ml-platform"
  }
}

# The effective policy: allowed regions and zones.
data "mlplatform_residency" "this" {}

# 8-GPU instance types offered in the region, cheapest first.
data "mlplatform_instance_types" "gpu" {
  min_gpu_count = 8
  offered_only  = true
}

# Checks the bucket's region and replication before anything depends on it.
resource "mlplatform_residency_guard" "data" {
  s3_uris  = ["s3://${var.data_bucket}/features/"]
  zone_ids = [data.mlplatform_residency.this.allowed_zone_ids[0]]
}

# Features for training, offline store in the jurisdiction. Adding a feature
# later is an in-place update, never a replacement.
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

# A training cluster in the first allowed zone, in a cluster placement group,
# with every EFA interface the type supports.
resource "mlplatform_gpu_cluster" "train" {
  count = var.gpu_nodes > 0 ? 1 : 0

  name          = "quickstart-train"
  instance_type = "p5en.48xlarge"
  node_count    = var.gpu_nodes
  zone_id       = data.mlplatform_residency.this.allowed_zone_ids[0]
  image         = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
  root_volume   = { size_gib = 200 }
  kms_key_arn   = var.kms_key_arn
}

output "allowed_zone_ids" {
  value = data.mlplatform_residency.this.allowed_zone_ids
}

output "gpu_types_offered" {
  value = [for t in data.mlplatform_instance_types.gpu.instance_types : "${t.name} (${t.gpu_count}x ${t.gpu_model})"]
}

output "guard_compliant" {
  value = mlplatform_residency_guard.data.compliant
}

output "feature_group_arn" {
  value = mlplatform_feature_store.customers.arn
}

output "gpu_nodes" {
  value = [for c in mlplatform_gpu_cluster.train : c.node_ids]
}
