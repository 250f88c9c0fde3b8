# A GPU training cluster in the UAE that joins an existing Slurm cluster:
# two p5en.48xlarge nodes, validated by hwprobe at boot, then registered
# with the controller as dynamic nodes with their gres (gpu:h200:8),
# features and memory from the validation profile. hwprobe stays on as
# slurmd's health check and drains a node whose hardware fails.
#
#   terraform init && terraform plan -var-file=slurm.tfvars
#   # add the plan's slurm_controller_config to the controller, then
#   terraform apply -var-file=slurm.tfvars
#
# The munge key lives in Secrets Manager in me-central-1, encrypted with a
# customer managed key there; a secret outside the UAE, replicated outside
# it, or under AWS's managed key fails the plan.

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
  description = "Customer managed KMS key in me-central-1 for the volumes and the reports."
  type        = string
}

variable "controller" {
  description = "The Slurm controller (slurmctld), HOST or HOST:PORT, reachable from the nodes' subnet."
  type        = string
}

variable "munge_key_secret_arn" {
  description = "Secrets Manager secret in me-central-1 holding the cluster's munge key."
  type        = string
}

variable "identity_certificate" {
  description = "AWS's RSA-2048 certificate for me-central-1 (PEM), which verifies the nodes' identity documents."
  type        = string
}

provider "mlplatform" {
  region = "me-central-1"

  residency {
    jurisdiction = "AE"
  }
}

resource "mlplatform_gpu_cluster" "train" {
  name          = "uae-slurm-train"
  instance_type = "p5en.48xlarge"
  node_count    = 2
  zone_id       = "mec1-az1"
  # An image with slurmd and munge installed (Slurm 22.05 or later).
  image       = "/mlplatform/images/slurm-gpu"
  kms_key_arn = var.kms_key_arn
  root_volume = { size_gib = 500 }

  validation = {
    reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
    reports_kms_key_arn  = var.kms_key_arn
    trusted_certificates = var.identity_certificate
    on_failure           = "replace"
  }

  orchestrator = {
    slurm = {
      controllers          = [var.controller]
      munge_key_secret_arn = var.munge_key_secret_arn
      partition            = "gpu"
      features             = ["team-vision"]
    }
  }
}

# What to add to the controller's slurm.conf and gres.conf before the
# nodes join: configless, hwprobe as the health check, the node set and the
# partition, the GPUs' device files by node name.
output "slurm_controller_config" {
  value = mlplatform_gpu_cluster.train.slurm_controller_config
}
