variable "kms_key_arn" {
  description = "Customer-managed KMS key in me-central-1."
  type        = string
}

variable "data_bucket" {
  description = "S3 bucket in me-central-1 for the feature store's offline records."
  type        = string
}

variable "capture_bucket" {
  description = "S3 bucket in me-central-1 for the endpoint's data capture."
  type        = string
}

variable "endpoint_image" {
  description = "ECR image URI of the serving container, in me-central-1."
  type        = string
}

variable "feature_store_role_arn" {
  description = "IAM role SageMaker assumes to write the offline store."
  type        = string
}

variable "serving_role_arn" {
  description = "IAM role SageMaker assumes to pull the serving image."
  type        = string
}

variable "training_enabled" {
  description = "Create the GPU training cluster (2 x p5en.48xlarge in mec1-az1)."
  type        = bool
  default     = false
}

variable "training_image" {
  description = "AMI id or SSM parameter name of the training nodes' image."
  type        = string
  default     = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
}
