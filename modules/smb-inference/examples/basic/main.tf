# A small business's inference platform in the UAE region: the cheapest
# offered type with 2 vCPUs, 4 GiB and AVX-512 for the batch and API
# workers, at zero from 20:00 to 07:00 after each working day (Asia/Dubai),
# and a serverless SageMaker endpoint for the model.
#
#
#   terraform init
#   terraform apply -var kms_key_arn=arn:aws:kms:me-central-1:ACCOUNT:key/ID \
#                   -var endpoint_image=ACCOUNT.dkr.ecr.me-central-1.amazonaws.com/REPO:TAG \
#                   -var execution_role_arn=arn:aws:iam::ACCOUNT:role/NAME
#
# With -var reports_bucket=BUCKET -var "trusted_certificates=$(cat aws-me-central-1-rsa2048.pem)"
# every instance also proves its type, CPU features and fp32 GEMM with hwprobe
# before it serves.

provider "mlplatform" {
  region = "me-central-1"

  residency {
    jurisdiction                  = "AE"
    excluded_zone_ids             = ["mec1-az2"]
    require_customer_managed_keys = true
  }

  default_tags = { owner = "smb-team" }
}

module "smb" {
  source = "../.."

  name             = "smb-inference"
  min_vcpus        = 2
  min_memory_gib   = 4
  cpu_features     = ["avx512f"]
  max_hourly_price = 0.5

  min_size         = 1
  max_size         = 3
  desired_capacity = 2

  kms_key_arn     = var.kms_key_arn
  root_volume_gib = 30

  endpoint_image     = var.endpoint_image
  execution_role_arn = var.execution_role_arn

  # The gate, once a reports bucket is given (null: instances not validated).
  validation = var.reports_bucket == null ? null : {
    reports_s3_uri       = "s3://${var.reports_bucket}/footprints/"
    reports_kms_key_arn  = var.kms_key_arn
    trusted_certificates = var.trusted_certificates
    wait                 = var.wait_for_validation
  }

  tags = { workload = "inference" }
}

output "footprint" {
  description = "The type chosen, why, and its monthly cost with and without the off-hours schedule."
  value = {
    type              = module.smb.instance_type
    why               = module.smb.decision_reason
    monthly_usd       = module.smb.monthly_cost_usd
    monthly_sched_usd = module.smb.monthly_cost_scheduled_usd
  }
}

output "endpoint_arn" {
  description = "ARN of the serverless endpoint."
  value       = module.smb.endpoint_arn
}

output "hwprobe_profile" {
  description = "The profile every instance is validated against; null without reports_bucket."
  value       = module.smb.hwprobe_profile
}
