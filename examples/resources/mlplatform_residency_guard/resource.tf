# Resources created by other providers are checked against the policy; the
# training job starts only when the guard has passed.
resource "mlplatform_residency_guard" "training_inputs" {
  s3_uris        = ["s3://${var.data_bucket}/features/"]
  kms_key_arns   = [var.kms_key_arn]
  ecr_image_uris = [var.training_image]
  zone_ids       = ["mec1-az1"]
}

resource "terraform_data" "training_job" {
  input      = var.training_image
  depends_on = [mlplatform_residency_guard.training_inputs]
}

variable "data_bucket" {
  type = string
}

variable "kms_key_arn" {
  type = string
}

variable "training_image" {
  type = string
}
