# Quick start: the effective UAE residency policy, the GPU types offered in
# me-central-1, and a residency guard over a data bucket.
#
# Runs against AWS, or against the local emulator (`make demo` / `make emulator`
# set AWS_ENDPOINT_URL, which the provider honours).
terraform {
  required_providers {
    mlplatform = {
      source = "mlplatform/mlplatform"
    }
  }
}

variable "data_bucket" {
  description = "Bucket holding the training data. It must live in the jurisdiction."
  type        = string
  default     = "mlplatform-demo-data"
}

provider "mlplatform" {
  region = "me-central-1"
  residency {
    jurisdiction      = "AE"
    excluded_zone_ids = ["mec1-az2"]
    mode              = "enforce"
  }
  default_tags = {
    owner = "ml-platform"
  }
}

# The effective policy: allowed regions and zones.
data "mlplatform_residency" "this" {}

# 8-GPU instance types offered in the region, cheapest first.
data "mlplatform_instance_types" "gpu" {
  min_gpu_count = 8
  offered_only  = true
}

# Checks the bucket's region and replication before anything depends on it.
resource "mlplatform_residency_guard" "data" {
  s3_uris  = ["s3://${var.data_bucket}/features/"]
  zone_ids = [data.mlplatform_residency.this.allowed_zone_ids[0]]
}

output "allowed_zone_ids" {
  value = data.mlplatform_residency.this.allowed_zone_ids
}

output "gpu_types_offered" {
  value = [for t in data.mlplatform_instance_types.gpu.instance_types : "${t.name} (${t.gpu_count}x ${t.gpu_model})"]
}

output "guard_compliant" {
  value = mlplatform_residency_guard.data.compliant
}
