# A GPU training cluster with defaults per GPU type: nodes in one zone in a
# cluster placement group, every EFA interface the type supports, encrypted
# volumes sized for the family, a rollout that needs no spare capacity on a
# reservation or block, and the validation gate with benchmarks for the type.

locals {
  family = split(".", var.instance_type)[0]
  size   = split(".", var.instance_type)[1]

  # What each family is: the GPU (as NVML names it), GPUs per node (0: by
  # size, below), and whether it is a multi-node training family (P) or not
  # (G). The validation profile's facts come from the provider's catalog.
  families = {
    p5   = { gpu = "H100", gpus = 8, training = true }
    p5e  = { gpu = "H200", gpus = 8, training = true }
    p5en = { gpu = "H200", gpus = 8, training = true }
    p4d  = { gpu = "A100", gpus = 8, training = true }
    g5   = { gpu = "A10G", gpus = 0, training = false }
    g6   = { gpu = "L4", gpus = 0, training = false }
    g6e  = { gpu = "L40S", gpus = 0, training = false }
  }
  spec = local.families[local.family]

  # G types: 12xlarge and 24xlarge have 4 GPUs, 48xlarge 8, the others 1.
  gpus_per_node = local.spec.gpus > 0 ? local.spec.gpus : lookup({ "12xlarge" = 4, "24xlarge" = 4, "48xlarge" = 8 }, local.size, 1)

  root_gib   = coalesce(var.root_volume_gib, local.spec.training ? 500 : 200)
  data_gib   = coalesce(var.data_volume_gib, local.spec.training ? 4000 : 500)
  throughput = local.spec.training ? 1000 : 250
  iops       = local.spec.training ? 16000 : 3000

  reserved = contains(["capacity_reservation", "capacity_block"], var.capacity_type)

  # The gate's benchmarks for the type: bf16 GEMM on every GPU node, and the
  # NCCL all-reduce where a node has GPUs to reduce across.
  benchmarks = concat(
    [{ name = "gpu_gemm_bf16", min_efficiency = var.min_gemm_efficiency, min = null, max = null, optional = null }],
    local.gpus_per_node > 1 ? [{ name = "gpu_nccl_allreduce_busbw", min_efficiency = var.min_allreduce_efficiency, min = null, max = null, optional = null }] : [],
  )
}

resource "mlplatform_gpu_cluster" "this" {
  name          = var.name
  instance_type = var.instance_type
  node_count    = var.node_count
  zone_id       = var.zone_id
  zone_fallback = local.reserved ? false : var.zone_fallback
  image         = var.image

  capacity = var.capacity_type == "on_demand" ? null : {
    type           = var.capacity_type
    reservation_id = var.reservation_id
    spot_max_price = null
  }

  subnet_id            = var.subnet_id
  vpc_id               = var.vpc_id
  security_group_ids   = var.security_group_ids
  instance_profile     = var.instance_profile
  placement_group_name = var.placement_group_name
  efa_interfaces       = var.efa_interfaces

  kms_key_arn = var.kms_key_arn
  root_volume = { size_gib = local.root_gib, type = "gp3", iops = null, throughput = null }
  data_volumes = local.data_gib > 0 ? [{
    size_gib    = local.data_gib
    type        = "gp3"
    throughput  = local.throughput
    iops        = local.iops
    device_name = null
  }] : []

  # A reservation or block has no spare capacity: replace a node at a time,
  # terminating first. On demand, keep the cluster whole while replacing.
  rollout = {
    strategy   = local.reserved || var.capacity_type == "spot" ? "terminate_first" : "launch_first"
    batch_size = 1
  }

  user_data = var.user_data
  tags      = var.tags

  validation = var.validation == null ? null : {
    wait                 = var.validation.wait
    timeout              = coalesce(var.validation.timeout, local.spec.training ? "30m" : "15m")
    on_failure           = var.validation.on_failure
    max_replacements     = var.validation.max_replacements
    level                = var.validation.level
    checks               = null
    benchmarks           = local.benchmarks
    reports_s3_uri       = var.validation.reports_s3_uri
    reports_kms_key_arn  = var.validation.reports_kms_key_arn
    trusted_certificates = var.validation.trusted_certificates
    hwprobe_s3_uri       = var.validation.hwprobe_s3_uri
    hwprobe_sha256       = var.validation.hwprobe_sha256
  }

  orchestrator = var.slurm == null && var.eks == null && var.kubernetes == null ? null : {
    slurm = var.slurm == null ? null : {
      controllers          = var.slurm.controllers
      munge_key_secret_arn = var.slurm.munge_key_secret_arn
      partition            = var.slurm.partition
      features             = var.slurm.features
      node_name_prefix     = var.slurm.node_name_prefix
    }
    eks = var.eks == null ? null : {
      cluster_name        = var.eks.cluster_name
      labels              = var.eks.labels
      create_access_entry = var.eks.create_access_entry
    }
    kubernetes = var.kubernetes == null ? null : {
      kubeconfig_secret_arn = var.kubernetes.kubeconfig_secret_arn
      context               = var.kubernetes.context
      join_token_secret_arn = var.kubernetes.join_token_secret_arn
      labels                = var.kubernetes.labels
    }
  }

  lifecycle {
    precondition {
      condition     = var.slurm == null || var.validation != null
      error_message = "slurm needs validation: hwprobe joins the nodes to Slurm and is their health check."
    }
    precondition {
      condition     = var.eks == null || var.validation != null
      error_message = "eks needs validation: the nodes register tainted, and the validation gate lifts the taint from the nodes that passed."
    }
    precondition {
      condition     = var.kubernetes == null || var.validation != null
      error_message = "kubernetes needs validation: the nodes register tainted, and the validation gate lifts the taint from the nodes that passed."
    }
    precondition {
      condition     = length([for o in [var.slurm, var.eks, var.kubernetes] : o if o != null]) <= 1
      error_message = "more than one of slurm, eks and kubernetes is set: a node joins one scheduler."
    }
    precondition {
      condition     = !local.reserved || var.reservation_id != null
      error_message = "capacity_type ${var.capacity_type} needs reservation_id (cr-...)."
    }
  }
}
