# Fixture for the review's plan tests: the quick start's platform (a
# residency guard over the data bucket, a feature store whose offline store
# lives in it, a p5en.48xlarge training cluster) plus terraform_data, with
# variables that drive the scenarios: create, in-place update, replace,
# destroy, and a residency violation in audit mode. The tests plan it with
# the real Terraform CLI against the AWS emulator and run `mlplatform review`
# on `terraform show -json`.
terraform {
  required_providers {
    mlplatform = {
      source = "mlplatform/mlplatform"
    }
  }
}

variable "data_bucket" {
  type    = string
  default = "review-data"
}

variable "role_arn" {
  type    = string
  default = "arn:aws:iam::123456789012:role/sagemaker-feature-store"
}

variable "cluster_name" {
  type    = string
  default = "review-train"
}

variable "gpu_nodes" {
  type    = number
  default = 2
}

variable "extra_features" {
  type    = list(object({ name = string, type = string }))
  default = []
}

variable "risk_score_type" {
  type    = string
  default = "Fractional"
}

variable "allow_destructive_changes" {
  type    = bool
  default = false
}

variable "residency_mode" {
  type    = string
  default = "enforce"
}

variable "offline_kms_key_arn" {
  type    = string
  default = null
}

variable "guard_regions" {
  type    = list(string)
  default = []
}

provider "mlplatform" {
  region = "me-central-1"
  residency {
    jurisdiction      = "AE"
    excluded_zone_ids = ["mec1-az2"]
    mode              = var.residency_mode
    # The review scenarios are about plans, not keys: AWS managed keys are
    # accepted (jurisdiction AE requires customer managed ones by default).
    require_customer_managed_keys = false
  }
  default_tags = {
    owner = "ml-platform"
  }
}

resource "mlplatform_residency_guard" "data" {
  s3_uris  = ["s3://${var.data_bucket}/features/"]
  zone_ids = ["mec1-az1"]
  regions  = var.guard_regions
}

resource "mlplatform_feature_store" "customers" {
  name                           = "customers"
  record_identifier_feature_name = "customer_id"
  event_time_feature_name        = "event_time"
  allow_destructive_changes      = var.allow_destructive_changes

  features = concat([
    { name = "customer_id", type = "String" },
    { name = "event_time", type = "Fractional" },
    { name = "risk_score", type = var.risk_score_type },
  ], var.extra_features)

  offline_store = {
    s3_uri      = "s3://${var.data_bucket}/feature-store"
    kms_key_arn = var.offline_kms_key_arn
  }

  role_arn   = var.role_arn
  depends_on = [mlplatform_residency_guard.data]
}

resource "mlplatform_gpu_cluster" "train" {
  name          = var.cluster_name
  instance_type = "p5en.48xlarge"
  node_count    = var.gpu_nodes
  zone_id       = "mec1-az1"
  image         = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
  root_volume   = { size_gib = 200 }
}

# A change marker the pipeline keeps beside the platform.
resource "terraform_data" "release" {
  input = {
    cluster = mlplatform_gpu_cluster.train.name
    nodes   = var.gpu_nodes
  }
}
