# A residency-checked SageMaker feature store in the UAE.
#
#   terraform init
#   terraform apply -var kms_key_arn=arn:aws:kms:me-central-1:... \
#                   -var offline_bucket=my-feature-bucket \
#                   -var role_arn=arn:aws:iam::...:role/...
#
# The plan fails before anything is created when the offline store's bucket
# is outside me-central-1 or replicates to another region, when a key lives
# in another region or is AWS-managed, or when a required tag is missing.
#
# Add a feature to var.features and apply: the group is updated in place
# (same ARN, same creation time, no data lost). Remove or retype one and the
# plan is refused, naming the feature and what would be lost; set
# allow_destructive_changes = true to replace the group deliberately.

terraform {
  required_version = ">= 1.5"
  required_providers {
    mlplatform = {
      source  = "mlplatform/mlplatform"
      version = ">= 0.1.0"
    }
  }
}

variable "kms_key_arn" {
  description = "The team's customer-managed KMS key in me-central-1, for both stores."
  type        = string
}

variable "offline_bucket" {
  description = "S3 bucket in me-central-1, without cross-region replication, for the offline store."
  type        = string
}

variable "role_arn" {
  description = "IAM role SageMaker assumes to write the offline store (s3:PutObject on the bucket, kms:GenerateDataKey on the key)."
  type        = string
}

variable "features" {
  description = "Feature definitions beyond the record identifier and event time."
  type = list(object({
    name            = string
    type            = string
    collection_type = optional(string)
  }))
  default = [
    { name = "age", type = "Integral" },
    { name = "country", type = "String" },
    { name = "lifetime_value", type = "Fractional" },
  ]
}

variable "allow_destructive_changes" {
  description = "Allow changes that delete and recreate the feature group (and lose its data)."
  type        = bool
  default     = false
}

provider "mlplatform" {
  region = "me-central-1"

  residency {
    jurisdiction                  = "AE"
    require_customer_managed_keys = true
    required_tags                 = ["team", "data-classification"]
  }

  default_tags = { owner = "ml-platform" }
}

resource "mlplatform_feature_store" "customers" {
  name                           = "customers"
  description                    = "Customer features for risk and churn models"
  record_identifier_feature_name = "customer_id"
  event_time_feature_name        = "event_time"

  features = concat([
    { name = "customer_id", type = "String", collection_type = null },
    { name = "event_time", type = "Fractional", collection_type = null },
  ], var.features)

  online_store = {
    enabled     = true
    kms_key_arn = var.kms_key_arn
    ttl         = { unit = "Days", value = 90 }
  }

  offline_store = {
    s3_uri      = "s3://${var.offline_bucket}/feature-store"
    kms_key_arn = var.kms_key_arn
  }

  role_arn                  = var.role_arn
  allow_destructive_changes = var.allow_destructive_changes

  tags = {
    team                  = "risk"
    "data-classification" = "confidential"
  }
}

output "feature_group_arn" {
  value = mlplatform_feature_store.customers.arn
}

output "offline_store_table" {
  description = "Glue database and table to query the offline store with Athena."
  value       = "${mlplatform_feature_store.customers.offline_store_database_name}.${mlplatform_feature_store.customers.offline_store_table_name}"
}
