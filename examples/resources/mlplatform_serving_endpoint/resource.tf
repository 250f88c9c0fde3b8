# A GPU endpoint (one NVIDIA L4 per instance) serving a fraud model from an
# in-region ECR image and S3 bucket, with 20% of requests captured to an
# in-region bucket under the team's key. Changing the model or the variant
# is a blue/green update: canary first (10% of capacity for 5 minutes); the
# old fleet goes only once the new one serves, and an update that SageMaker
# rolls back fails the apply with its reason. The container runs in the
# team's VPC (subnets in two allowed zones) and is network-isolated (the
# default): it can make no network call in or out.
resource "mlplatform_serving_endpoint" "fraud" {
  name = "fraud-scoring"

  model = {
    image              = "123456789012.dkr.ecr.me-central-1.amazonaws.com/fraud-scoring:1.4.0"
    model_data_uri     = "s3://uae-models/fraud-scoring/model.tar.gz"
    execution_role_arn = "arn:aws:iam::123456789012:role/sagemaker-serving"
    environment        = { SAGEMAKER_PROGRAM = "inference.py" }
  }

  variants = [{
    name                   = "primary"
    instance_type          = "ml.g6.xlarge"
    initial_instance_count = 2
    # Two to six instances tracking 100 invocations per instance per minute;
    # at most one on working-day nights (20:00 to 07:00, Dubai time).
    autoscaling = {
      min_capacity                    = 2
      max_capacity                    = 6
      target_invocations_per_instance = 100
      schedule = [
        { name = "night", recurrence = "0 20 * * 1-5", duration = "11h", min_capacity = 1, max_capacity = 1 },
      ]
    }
  }]

  deployment = {
    traffic_routing          = "canary"
    size_type                = "capacity_percent"
    size_value               = 10
    wait_seconds             = 300
    termination_wait_seconds = 600
    rollback_alarms          = ["fraud-scoring-queue-depth"]
    # The provider creates p99 latency and 5xx rate alarms per variant.
    standard_alarms = {
      latency_p99_ms = 250
      error_5xx_rate = 0.02
    }
  }

  data_capture = {
    sampling_percentage = 20
    destination_s3_uri  = "s3://uae-inference-capture/fraud-scoring"
    kms_key_arn         = "arn:aws:kms:me-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  }

  # No kms_key_arn: ml.g6 instances have local NVMe storage, which SageMaker
  # encrypts with a hardware module on the instance and takes no key for
  # (the plan says so). On EBS-backed types (ml.m5, ml.c7i, ...) set the
  # team's key here; jurisdiction AE requires one by default.

  vpc_config = {
    subnet_ids         = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
    security_group_ids = ["sg-0123456789abcdef0"]
  }
  # network_isolation = false # only for a container that must call out

  tags = { team = "fraud" }
}
