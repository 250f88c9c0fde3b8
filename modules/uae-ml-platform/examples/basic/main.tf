# The UAE ML platform with its defaults: a feature store, a CPU inference
# footprint scaled to zero off-hours and a small endpoint on one ml.m5.large
# capturing 20% of requests in the UAE, behind a residency guard; the GPU
# training cluster is off until training_enabled = true.
#
#   terraform init
#   terraform apply -var kms_key_arn=arn:aws:kms:me-central-1:ACCOUNT:key/ID \
#                   -var data_bucket=BUCKET_IN_ME_CENTRAL_1 \
#                   -var capture_bucket=BUCKET_IN_ME_CENTRAL_1 \
#                   -var endpoint_image=ACCOUNT.dkr.ecr.me-central-1.amazonaws.com/REPO:TAG \
#                   -var feature_store_role_arn=arn:aws:iam::ACCOUNT:role/NAME \
#                   -var serving_role_arn=arn:aws:iam::ACCOUNT:role/NAME

# The module configures no provider: this block is where residency is set.
# The platform refuses to plan unless the jurisdiction is AE and the mode
# enforce.
provider "mlplatform" {
  region = "me-central-1"

  residency {
    jurisdiction                  = "AE"
    excluded_zone_ids             = ["mec1-az2"]
    require_customer_managed_keys = true
    required_tags                 = ["owner", "cost-center", "data-classification"]
    mode                          = "enforce"
  }
}

module "platform" {
  source = "../.."

  name                = "uae-ml"
  owner               = "ml-platform"
  cost_center         = "ai-research"
  data_classification = "confidential"

  kms_key_arn            = var.kms_key_arn
  data_bucket            = var.data_bucket
  capture_bucket         = var.capture_bucket
  feature_store_role_arn = var.feature_store_role_arn

  features = [
    { name = "age", type = "Integral" },
    { name = "country", type = "String" },
    { name = "lifetime_value", type = "Fractional" },
  ]

  endpoint_image         = var.endpoint_image
  endpoint_instance_type = "ml.m5.large"
  serving_role_arn       = var.serving_role_arn

  training_enabled = var.training_enabled
  training_image   = var.training_image
}

output "residency" {
  description = "The policy in force and the guard's verdicts."
  value       = module.platform.residency
}

output "inference" {
  description = "CPU type chosen, why, monthly cost without and with the off-hours schedule, endpoint."
  value       = module.platform.inference
}

output "feature_store" {
  description = "Feature group ARN and offline table."
  value       = module.platform.feature_store
}

output "training" {
  description = "The training cluster, or null."
  value       = module.platform.training
}
