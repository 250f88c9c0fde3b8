# A residency-checked GPU training cluster in the UAE: p5en.48xlarge nodes in
# me-central-1 (zone mec1-az1), with EFA, a cluster placement group, and
# volumes encrypted with a customer-managed key from the same region.
#
#   terraform init && terraform apply -var kms_key_arn=arn:aws:kms:me-central-1:...
#
# A plan that would put anything outside the UAE (another region's key, an
# excluded zone, a type not offered there) fails before anything is created.

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
  description = "Customer-managed KMS key in me-central-1 for every volume."
  type        = string
}

variable "node_count" {
  description = "Number of p5en.48xlarge nodes."
  type        = number
  default     = 4
}

variable "capacity_reservation_id" {
  description = "Capacity reservation (cr-...) for the nodes; empty for on-demand."
  type        = string
  default     = ""
}

provider "mlplatform" {
  region = "me-central-1"

  residency {
    jurisdiction                  = "AE"
    excluded_zone_ids             = ["mec1-az2"]
    require_customer_managed_keys = true
    required_tags                 = ["owner"]
    mode                          = "enforce"
  }

  default_tags = {
    owner = "ml-platform"
  }
}

data "mlplatform_residency" "this" {}

resource "mlplatform_gpu_cluster" "train" {
  name          = "uae-llm-train"
  instance_type = "p5en.48xlarge"
  node_count    = var.node_count
  zone_id       = "mec1-az1"

  # Without a reservation, fall back to the other allowed zone offering
  # p5en (mec1-az3) on InsufficientInstanceCapacity; never outside the UAE.
  zone_fallback = var.capacity_reservation_id == ""

  image = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"

  capacity = var.capacity_reservation_id == "" ? null : {
    type           = "capacity_reservation"
    reservation_id = var.capacity_reservation_id
  }

  kms_key_arn  = var.kms_key_arn
  root_volume  = { size_gib = 500 }
  data_volumes = [{ size_gib = 4000, throughput = 1000, iops = 16000 }]

  # The hwprobe bootstrap slot: a later release renders the validation
  # profile here.
  user_data = <<-EOT
    #!/bin/bash
    echo "node ready" > /var/log/mlplatform-bootstrap.log
  EOT

  tags = { workload = "pretraining" }
}

output "node_private_ips" {
  description = "Private addresses of the nodes, by node index (rank slot)."
  value       = mlplatform_gpu_cluster.train.private_ips
}

output "placement" {
  description = "Where the cluster runs and in which placement group."
  value = {
    zone_id         = mlplatform_gpu_cluster.train.placement_zone_id
    placement_group = mlplatform_gpu_cluster.train.placement_group_name
    efa_per_node    = mlplatform_gpu_cluster.train.efa_interfaces
    allowed_zones   = data.mlplatform_residency.this.allowed_zone_ids
  }
}
