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

variable "reports_bucket" {
  description = "S3 bucket in me-central-1 the instances publish their hwprobe reports to (encrypted with kms_key_arn). Null: the validation gate is off."
  type        = string
  default     = null
}

variable "trusted_certificates" {
  description = "AWS's RSA-2048 certificate for me-central-1 (PEM), from the EC2 user guide's instance identity page: it verifies each instance's signed identity. Needed with reports_bucket."
  type        = string
  default     = null
}

variable "wait_for_validation" {
  description = "Wait for the instances' passing reports before apply succeeds; false bootstraps them without gating."
  type        = bool
  default     = true
}
