# Two p5en.48xlarge nodes (8 x H200 each) in mec1-az1 of the UAE region, with
# the module's defaults: a cluster placement group, all 16 EFA interfaces,
# gp3 volumes sized for training, encrypted with the team's key, and the
# validation gate: apply succeeds once both nodes have proven their GPUs,
# NVLink, EFA, bf16 GEMM and NCCL all-reduce with hwprobe.
#
#   terraform init
#   terraform apply -var kms_key_arn=arn:aws:kms:me-central-1:ACCOUNT:key/ID \
#     -var reports_bucket=BUCKET -var "trusted_certificates=$(cat aws-me-central-1-rsa2048.pem)"

provider "mlplatform" {
  region = "me-central-1"

  residency {
    jurisdiction                  = "AE"
    excluded_zone_ids             = ["mec1-az2"]
    require_customer_managed_keys = true
  }

  default_tags = { owner = "ml-platform" }
}

module "train" {
  source = "../.."

  name          = "uae-llm-train"
  instance_type = "p5en.48xlarge"
  node_count    = 2
  zone_id       = "mec1-az1"
  kms_key_arn   = var.kms_key_arn
  image         = var.image

  # The gate, once a reports bucket is given (null: nodes not validated).
  validation = var.reports_bucket == null ? null : {
    reports_s3_uri       = "s3://${var.reports_bucket}/clusters/"
    reports_kms_key_arn  = var.kms_key_arn
    trusted_certificates = var.trusted_certificates
    wait                 = var.wait_for_validation
  }

  tags = { workload = "pretraining" }
}

output "private_ips" {
  description = "Node addresses, by rank slot."
  value       = module.train.private_ips
}

output "gpus" {
  description = "GPU model and count of the cluster."
  value       = "${module.train.total_gpus} x ${module.train.gpu_model}"
}

output "hwprobe_profile" {
  description = "The profile each node validates against, as the provider renders it."
  value       = module.train.hwprobe_profile
}

output "validation_results" {
  description = "Per node: passed or failed, and what failed."
  value       = module.train.validation_results
}
