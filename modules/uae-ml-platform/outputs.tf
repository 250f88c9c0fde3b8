output "residency" {
  description = "The provider's effective policy (jurisdiction, region, allowed zone ids, mode) and whether every location the guard checked complied."
  value = {
    jurisdiction     = data.mlplatform_residency.this.jurisdiction
    region           = data.mlplatform_residency.this.region
    allowed_zone_ids = data.mlplatform_residency.this.allowed_zone_ids
    mode             = data.mlplatform_residency.this.mode
    compliant        = mlplatform_residency_guard.platform.compliant
    checked          = [for r in mlplatform_residency_guard.platform.report : "${r.kind} ${r.value}: ${r.verdict}"]
  }
}

output "training" {
  description = "The GPU training cluster (name, GPUs, zone, node addresses), or null when `training_enabled` is false."
  value = var.training_enabled ? {
    name        = module.training[0].name
    gpus        = "${module.training[0].total_gpus} x ${module.training[0].gpu_model}"
    zone_id     = module.training[0].zone_id
    private_ips = module.training[0].private_ips
  } : null
}

output "feature_store" {
  description = "The feature group: ARN, offline store location and Athena table, feature names."
  value = {
    arn           = module.features.arn
    offline_s3    = module.features.offline_store_s3_uri
    offline_table = module.features.offline_store_table
    features      = module.features.feature_names
  }
}

output "inference" {
  description = "The inference platform: the CPU type chosen and why, its monthly cost without and with the off-hours schedule, the Auto Scaling group, and the endpoint."
  value = {
    instance_type              = module.inference.instance_type
    decision_reason            = module.inference.decision_reason
    monthly_cost_usd           = module.inference.monthly_cost_usd
    monthly_cost_scheduled_usd = module.inference.monthly_cost_scheduled_usd
    asg_name                   = module.inference.asg_name
    endpoint_name              = module.inference.endpoint_name
    endpoint_arn               = module.inference.endpoint_arn
    endpoint_kind              = module.inference.endpoint_kind
  }
}

output "tags" {
  description = "The tags every resource of the platform carries (over the provider's default_tags)."
  value       = local.tags
}
