output "name" {
  description = "The cluster name."
  value       = mlplatform_gpu_cluster.this.id
}

output "node_ids" {
  description = "Instance ids of the nodes, by node index (rank slot)."
  value       = mlplatform_gpu_cluster.this.node_ids
}

output "private_ips" {
  description = "Private IPv4 addresses of the nodes, by node index."
  value       = mlplatform_gpu_cluster.this.private_ips
}

output "zone_id" {
  description = "Zone id the nodes run in."
  value       = mlplatform_gpu_cluster.this.placement_zone_id
}

output "placement_group_name" {
  description = "The cluster placement group the nodes run in."
  value       = mlplatform_gpu_cluster.this.placement_group_name
}

output "efa_interfaces" {
  description = "EFA interfaces per node."
  value       = mlplatform_gpu_cluster.this.efa_interfaces
}

output "gpu_model" {
  description = "The GPU model of the type (as NVML names it, in part)."
  value       = local.spec.gpu
}

output "gpus_per_node" {
  description = "GPUs per node."
  value       = local.gpus_per_node
}

output "total_gpus" {
  description = "GPUs in the cluster."
  value       = local.gpus_per_node * var.node_count
}

output "hwprobe_profile" {
  description = "The hwprobe profile (HCL) every node is validated against, as the provider renders it from the cluster and the instance catalog (region, zones, type, vCPUs, memory, CPU features, GPU model, count, memory and NVLink links, EFA interfaces, benchmarks). Null without `validation`."
  value       = mlplatform_gpu_cluster.this.validation_profile
}

output "validation_results" {
  description = "What the gate found per node at the last apply, by node index. Empty without `validation`."
  value       = mlplatform_gpu_cluster.this.validation_results
}

output "slurm_controller_config" {
  description = "What the Slurm controller needs for the nodes (its slurm.conf and gres.conf lines); null without `slurm`."
  value       = mlplatform_gpu_cluster.this.slurm_controller_config
}
