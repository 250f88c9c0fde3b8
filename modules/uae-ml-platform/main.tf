# The UAE ML platform: a residency guard over every location the platform
# uses, a feature store, a small inference platform and, when asked for, a
# GPU training cluster, all tagged with the owner, cost center and data
# classification. The module configures no provider: the caller's mlplatform
# provider must enforce the AE jurisdiction (the guard below refuses to plan
# otherwise).

data "mlplatform_residency" "this" {}

locals {
  tags = merge(var.tags, {
    owner               = var.owner
    cost-center         = var.cost_center
    data-classification = var.data_classification
    platform            = var.name
  })

  capture_s3_uri = var.capture_bucket == null ? null : "s3://${var.capture_bucket}/${var.name}-inference"
}

# Every location the platform's resources use, checked against the policy
# before any of them is created: the provider's region, the buckets (not
# replicating out of the jurisdiction), the key, the serving image and the
# training zone.
resource "mlplatform_residency_guard" "platform" {
  regions        = [data.mlplatform_residency.this.region]
  s3_uris        = compact(["s3://${var.data_bucket}/", var.model_data_uri, local.capture_s3_uri])
  kms_key_arns   = [var.kms_key_arn]
  ecr_image_uris = [var.endpoint_image]
  zone_ids       = var.training_enabled ? [var.training_zone_id] : []

  lifecycle {
    precondition {
      condition     = data.mlplatform_residency.this.jurisdiction == "AE"
      error_message = "The mlplatform provider's residency jurisdiction is ${data.mlplatform_residency.this.jurisdiction}: this platform expects residency { jurisdiction = \"AE\" } (me-central-1)."
    }
    precondition {
      condition     = data.mlplatform_residency.this.mode == "enforce" || var.allow_audit_mode
      error_message = "The mlplatform provider's residency mode is ${data.mlplatform_residency.this.mode}: violations would only warn. Set mode = \"enforce\", or allow_audit_mode = true while migrating."
    }
  }
}

module "training" {
  source = "../gpu-training-cluster"
  count  = var.training_enabled ? 1 : 0

  name          = "${var.name}-train"
  instance_type = var.training_instance_type
  node_count    = var.training_node_count
  zone_id       = var.training_zone_id
  image         = var.training_image
  kms_key_arn   = var.kms_key_arn
  validation    = var.training_validation
  tags          = local.tags

  depends_on = [mlplatform_residency_guard.platform]
}

module "features" {
  source = "../feature-store"

  name           = "${var.name}-features"
  features       = var.features
  kms_key_arn    = var.kms_key_arn
  offline_bucket = var.data_bucket
  role_arn       = var.feature_store_role_arn
  tags           = local.tags

  depends_on = [mlplatform_residency_guard.platform]
}

module "inference" {
  source = "../smb-inference"

  name             = "${var.name}-inference"
  min_vcpus        = var.inference_min_vcpus
  min_memory_gib   = var.inference_min_memory_gib
  cpu_features     = var.inference_cpu_features
  max_hourly_price = var.inference_max_hourly_price
  min_size         = var.inference_min_size
  max_size         = var.inference_max_size
  desired_capacity = var.inference_desired_capacity

  off_hours_schedule = var.off_hours_schedule
  kms_key_arn        = var.kms_key_arn
  root_volume_gib    = var.root_volume_gib
  validation         = var.inference_validation

  endpoint_image         = var.endpoint_image
  model_data_uri         = var.model_data_uri
  execution_role_arn     = var.serving_role_arn
  endpoint_instance_type = var.endpoint_instance_type
  data_capture_s3_uri    = local.capture_s3_uri

  tags = local.tags

  depends_on = [mlplatform_residency_guard.platform]
}
