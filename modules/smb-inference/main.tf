# A small inference platform for a small or medium business: a CPU footprint
# of the cheapest type offered in the jurisdiction that meets the workload's
# requirements, scaled to zero off-hours by default, and a small SageMaker
# endpoint (serverless by default, or one ml.* instance variant) with
# optional data capture to a bucket in the jurisdiction.

locals {
  serverless = var.endpoint_instance_type == null

  # Instance types with local NVMe instance storage (ml.g5, ml.g6, ml.p5,
  # ...): SageMaker encrypts that storage with a hardware module on the
  # instance and refuses a volume key there, so the endpoint gets none (the
  # provider's rule, which refuses a key on these types at plan). The
  # captured data is still encrypted with var.kms_key_arn.
  endpoint_local_storage = !local.serverless && can(regex("^ml\\.(c5d|c6gd|c6id|g4dn|g5|g6|g6e|g7e|gr6|m5d|m6gd|m6id|p4d|p4de|p5|p5e|p5en|p6-b200|r5d|r6gd|r6id|trn1|trn1n|trn2)\\.", coalesce(var.endpoint_instance_type, "-")))

  # Working days in the UAE are Monday to Friday: the window opens at 20:00
  # Monday to Friday and closes 11 hours later, at 07:00 the next morning.
  schedules = var.off_hours_schedule ? [{
    name       = "off-hours"
    recurrence = var.off_hours_recurrence
    duration   = var.off_hours_duration
    time_zone  = var.time_zone
  }] : []
}

resource "mlplatform_cpu_footprint" "this" {
  name          = var.name
  instance_type = var.instance_type

  requirements = {
    min_vcpus        = var.min_vcpus
    min_memory_gib   = var.min_memory_gib
    cpu_features     = var.cpu_features
    architecture     = var.architecture
    max_hourly_price = var.max_hourly_price
    burstable        = false
  }

  min_size         = var.min_size
  max_size         = var.max_size
  desired_capacity = var.desired_capacity

  dynamic "schedule" {
    for_each = local.schedules
    content {
      name             = schedule.value.name
      recurrence       = schedule.value.recurrence
      duration         = schedule.value.duration
      time_zone        = schedule.value.time_zone
      min_size         = 0
      max_size         = 0
      desired_capacity = 0
    }
  }

  image              = var.image
  kms_key_arn        = var.kms_key_arn
  root_volume        = { size_gib = var.root_volume_gib, type = "gp3", iops = null, throughput = null }
  subnet_ids         = var.subnet_ids
  security_group_ids = var.security_group_ids
  instance_profile   = var.instance_profile
  user_data          = var.user_data

  tags = var.tags

  validation = var.validation == null ? null : {
    wait                 = var.validation.wait
    timeout              = var.validation.timeout
    on_failure           = var.validation.on_failure
    max_replacements     = var.validation.max_replacements
    level                = var.validation.level
    checks               = null
    benchmarks           = [{ name = "cpu_sgemm", min_efficiency = var.min_sgemm_efficiency, min = null, max = null, optional = null }]
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
      error_message = "eks needs validation: the instances register tainted, and the validation gate lifts the taint from the instances that passed."
    }
    precondition {
      condition     = var.kubernetes == null || var.validation != null
      error_message = "kubernetes needs validation: the instances register tainted, and the validation gate lifts the taint from the instances that passed."
    }
    precondition {
      condition     = length([for o in [var.slurm, var.eks, var.kubernetes] : o if o != null]) <= 1
      error_message = "more than one of slurm, eks and kubernetes is set: an instance joins one scheduler."
    }
    precondition {
      condition     = var.min_size <= var.desired_capacity && var.desired_capacity <= var.max_size
      error_message = "min_size <= desired_capacity <= max_size must hold (got ${var.min_size}, ${var.desired_capacity}, ${var.max_size})."
    }
  }
}

resource "mlplatform_serving_endpoint" "this" {
  name = var.name

  model = {
    image              = var.endpoint_image
    model_data_uri     = var.model_data_uri
    execution_role_arn = var.execution_role_arn
    environment        = var.endpoint_environment
  }

  variants = [{
    name                   = "primary"
    instance_type          = var.endpoint_instance_type
    initial_instance_count = local.serverless ? null : var.endpoint_instance_count
    initial_weight         = null
    serverless = local.serverless ? {
      memory_size_mb  = var.serverless_memory_mb
      max_concurrency = var.serverless_max_concurrency
    } : null
  }]

  data_capture = var.data_capture_s3_uri == null ? null : {
    enabled             = true
    sampling_percentage = var.data_capture_sampling_percentage
    destination_s3_uri  = var.data_capture_s3_uri
    kms_key_arn         = var.kms_key_arn
    capture_options     = null
  }

  kms_key_arn = local.endpoint_local_storage ? null : var.kms_key_arn

  tags = var.tags

  lifecycle {
    precondition {
      condition     = !(local.serverless && var.data_capture_s3_uri != null)
      error_message = "data capture needs an instance variant (set endpoint_instance_type): SageMaker serverless endpoints do not capture data."
    }
  }
}
