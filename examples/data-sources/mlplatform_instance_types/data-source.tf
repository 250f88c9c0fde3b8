# 8-GPU types with EFA offered in the provider's region, cheapest first.
data "mlplatform_instance_types" "training" {
  min_gpu_count = 8
  efa           = true
}

# CPU types with AMX for bf16 inference on CPUs.
data "mlplatform_instance_types" "amx" {
  cpu_features = ["amx_tile", "amx_bf16"]
  architecture = "x86_64"
}

output "training_types" {
  value = data.mlplatform_instance_types.training.names
}

output "amx_types" {
  value = data.mlplatform_instance_types.amx.names
}
