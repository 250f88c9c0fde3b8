# A customer feature group in the UAE region with features from a variable.
#
#   terraform init
#   terraform apply -var kms_key_arn=arn:aws:kms:me-central-1:ACCOUNT:key/ID \
#                   -var offline_bucket=BUCKET_IN_ME_CENTRAL_1 \
#                   -var role_arn=arn:aws:iam::ACCOUNT:role/NAME
#
# Add a feature to var.features and apply again: the group is updated in
# place.

provider "mlplatform" {
  region = "me-central-1"

  residency {
    jurisdiction                  = "AE"
    require_customer_managed_keys = true
    required_tags                 = ["team"]
  }

  default_tags = { owner = "ml-platform" }
}

module "customers" {
  source = "../.."

  name           = "customers"
  description    = "Customer features for churn models"
  features       = var.features
  kms_key_arn    = var.kms_key_arn
  offline_bucket = var.offline_bucket
  role_arn       = var.role_arn

  online_ttl_days = 90
  tags            = { team = "risk" }
}

output "feature_group_arn" {
  description = "ARN of the feature group."
  value       = module.customers.arn
}

output "offline_store_table" {
  description = "Athena table of the offline store."
  value       = module.customers.offline_store_table
}
