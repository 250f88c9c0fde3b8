output "instance_type" {
  description = "The instance type the footprint runs: `instance_type`, or the cheapest offered type that meets the requirements."
  value       = mlplatform_cpu_footprint.this.chosen_instance_type
}

output "decision_reason" {
  description = "Why that type: which requirement decided it."
  value       = mlplatform_cpu_footprint.this.decision_reason
}

output "rejected_cheaper" {
  description = "Types cheaper than the chosen one that were rejected, each with what it missed."
  value       = mlplatform_cpu_footprint.this.rejected_cheaper
}

output "hourly_price_usd" {
  description = "On-Demand price of one instance per hour, USD (0 when unknown)."
  value       = mlplatform_cpu_footprint.this.hourly_price_usd
}

output "monthly_cost_usd" {
  description = "Estimated On-Demand cost of `desired_capacity` instances running all month (730 h), USD, without the off-hours schedule."
  value       = mlplatform_cpu_footprint.this.monthly_cost_usd
}

output "monthly_cost_scheduled_usd" {
  description = "The same with the off-hours schedule applied (equal to `monthly_cost_usd` when the schedule is off)."
  value       = mlplatform_cpu_footprint.this.monthly_cost_scheduled_usd
}

output "cost_note" {
  description = "What the cost estimate assumes, and where the price comes from."
  value       = "${mlplatform_cpu_footprint.this.cost_note} ${mlplatform_cpu_footprint.this.price_source}"
}

output "asg_name" {
  description = "Name of the footprint's Auto Scaling group (`mlplatform-cpu-<name>`)."
  value       = mlplatform_cpu_footprint.this.asg_name
}

output "hwprobe_profile" {
  description = "The hwprobe profile (HCL) every instance is validated against, as the provider renders it from the chosen type and the instance catalog (region, zones, type, vCPUs, memory, CPU features, benchmarks). Null without `validation`."
  value       = mlplatform_cpu_footprint.this.validation_profile
}

output "validation_results" {
  description = "What the gate found per instance at the last apply. Empty without `validation`."
  value       = mlplatform_cpu_footprint.this.validation_results
}

output "endpoint_name" {
  description = "Name of the SageMaker endpoint."
  value       = mlplatform_serving_endpoint.this.id
}

output "endpoint_arn" {
  description = "ARN of the SageMaker endpoint; it stays the same across blue/green updates."
  value       = mlplatform_serving_endpoint.this.arn
}

output "endpoint_kind" {
  description = "`serverless`, or the instance type and count of the endpoint's variant."
  value       = var.endpoint_instance_type == null ? "serverless" : "${var.endpoint_instance_count} x ${var.endpoint_instance_type}"
}

output "slurm_controller_config" {
  description = "What the Slurm controller needs for the nodes (its slurm.conf and gres.conf lines); null without `slurm`."
  value       = mlplatform_cpu_footprint.this.slurm_controller_config
}
