variable "kms_key_arn" {
  description = "The team's customer-managed KMS key in me-central-1."
  type        = string
}

variable "offline_bucket" {
  description = "S3 bucket in me-central-1, without cross-region replication, for the offline store."
  type        = string
}

variable "role_arn" {
  description = "IAM role SageMaker assumes to write the offline store."
  type        = string
}

variable "features" {
  description = "Customer features."
  type = list(object({
    name            = string
    type            = string
    collection_type = optional(string)
  }))
  default = [
    { name = "age", type = "Integral" },
    { name = "country", type = "String" },
    { name = "lifetime_value", type = "Fractional" },
  ]
}
