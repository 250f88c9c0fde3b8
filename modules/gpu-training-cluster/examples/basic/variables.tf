variable "kms_key_arn" {
  description = "Customer-managed KMS key in me-central-1 for every volume."
  type        = string
}

variable "image" {
  description = "AMI id or SSM parameter name of the node image."
  type        = string
  default     = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
}
