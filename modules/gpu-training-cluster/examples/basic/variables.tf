variable "kms_key_arn" {
  description = "Customer-managed KMS key in me-central-1 for every volume."
  type        = string
}
