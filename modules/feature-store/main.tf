# A SageMaker feature group whose features come from a variable, with both
# stores encrypted by the team's customer-managed key and the offline store
# in a bucket the provider checks is inside the jurisdiction and does not
# replicate out of it.

locals {
  prefix = coalesce(var.offline_prefix, "feature-store/${var.name}")
}

resource "mlplatform_feature_store" "this" {
  name                           = var.name
  description                    = var.description
  record_identifier_feature_name = var.record_identifier
  event_time_feature_name        = var.event_time

  features = concat([
    { name = var.record_identifier, type = "String", collection_type = null, vector_dimension = null },
    { name = var.event_time, type = "Fractional", collection_type = null, vector_dimension = null },
  ], var.features)

  online_store = var.online_store ? {
    enabled      = true
    storage_type = var.online_storage_type
    kms_key_arn  = var.kms_key_arn
    ttl          = var.online_ttl_days == null ? null : { unit = "Days", value = var.online_ttl_days }
    } : {
    enabled      = false
    storage_type = null
    kms_key_arn  = null
    ttl          = null
  }

  offline_store = {
    s3_uri                      = "s3://${var.offline_bucket}/${local.prefix}"
    kms_key_arn                 = var.kms_key_arn
    table_format                = var.table_format
    disable_glue_table_creation = null
  }

  role_arn                  = var.role_arn
  allow_destructive_changes = var.allow_destructive_changes
  tags                      = var.tags
}
