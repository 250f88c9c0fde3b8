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
  description = "The hwprobe profile (HCL) a node of this cluster is validated against with `hwprobe validate --profile FILE`: region, zone, type, GPU model and count, NVLink links on SXM parts, ECC on and MIG off on P types, EFA devices, and a bf16 GEMM efficiency floor."
  value = join("\n", compact([
    "name = ${jsonencode(var.name)}",
    "host {",
    "  region        = ${jsonencode(replace(mlplatform_gpu_cluster.this.zone, "/[a-z]$/", ""))}",
    "  zone_ids      = [${jsonencode(mlplatform_gpu_cluster.this.placement_zone_id)}]",
    "  instance_type = ${jsonencode(var.instance_type)}",
    "}",
    "gpu {",
    "  model = ${jsonencode(local.spec.gpu)}",
    "  count = ${local.gpus_per_node}",
    local.spec.nvlink > 0 ? "  min_nvlink_links = ${local.spec.nvlink}" : "",
    local.spec.training ? "  ecc_enabled = true" : "",
    local.spec.training ? "  mig_enabled = false" : "",
    "}",
    mlplatform_gpu_cluster.this.efa_interfaces > 0 ? "efa {\n  count = ${mlplatform_gpu_cluster.this.efa_interfaces}\n}" : "",
    "benchmark \"gpu_gemm_bf16\" {",
    "  min_efficiency = ${var.min_gemm_efficiency}",
    "}",
  ]))
}
