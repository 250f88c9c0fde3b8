variable "kms_key_arn" {
  description = "Customer-managed KMS key in me-central-1 for the footprint's volumes."
  type        = string
}

variable "endpoint_image" {
  description = "ECR image URI of the serving container, in me-central-1."
  type        = string
}

variable "execution_role_arn" {
  description = "IAM role SageMaker assumes to pull the image."
  type        = string
}
