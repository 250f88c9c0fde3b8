variable "kms_key_arn" {
  description = "Customer-managed KMS key in me-central-1 for every volume."
  type        = string
}

variable "image" {
  description = "AMI id or SSM parameter name of the node image."
  type        = string
  default     = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
}

variable "reports_bucket" {
  description = "S3 bucket in me-central-1 the nodes publish their hwprobe reports to (encrypted with kms_key_arn). Null: the validation gate is off."
  type        = string
  default     = null
}

variable "trusted_certificates" {
  description = "AWS's RSA-2048 certificate for me-central-1 (PEM), from the EC2 user guide's instance identity page: it verifies each node's signed identity. Needed with reports_bucket."
  type        = string
  default     = null
}

variable "wait_for_validation" {
  description = "Wait for every node's passing report before apply succeeds; false bootstraps the nodes without gating."
  type        = bool
  default     = true
}
