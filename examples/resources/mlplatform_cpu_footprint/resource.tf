# An inference footprint for a small business: the cheapest type offered in
# the UAE with 2 vCPUs, 8 GiB and AMX (bf16 matrix units: c7i, m7i, ...),
# two instances during working hours, none from 20:00 to 07:00 on working
# days (Asia/Dubai), every volume encrypted with a customer key.
resource "mlplatform_cpu_footprint" "inference" {
  name = "smb-inference"

  requirements = {
    min_vcpus      = 2
    min_memory_gib = 8
    cpu_features   = ["amx_tile", "amx_bf16"]
    architecture   = "x86_64"
  }

  min_size         = 1
  max_size         = 4
  desired_capacity = 2

  schedule {
    name             = "off-hours"
    recurrence       = "0 20 * * 1-5"
    duration         = "11h"
    min_size         = 0
    max_size         = 0
    desired_capacity = 0
  }

  kms_key_arn = "arn:aws:kms:me-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  root_volume = { size_gib = 30 }
  user_data   = "#!/bin/sh\n# hwprobe bootstrap goes here\n"

  # A new image, type or user data rolls the instances, half kept in service.
  min_healthy_percentage = 50

  tags = { team = "smb", workload = "inference" }
}

# What the plan shows a reviewer.
output "footprint_decision" {
  value = {
    type      = mlplatform_cpu_footprint.inference.chosen_instance_type
    why       = mlplatform_cpu_footprint.inference.decision_reason
    rejected  = mlplatform_cpu_footprint.inference.rejected_cheaper
    monthly   = mlplatform_cpu_footprint.inference.monthly_cost_usd
    scheduled = mlplatform_cpu_footprint.inference.monthly_cost_scheduled_usd
  }
}
