# A feature group with an encrypted online store (30-day TTL) and an offline
# store in an S3 bucket in me-central-1, encrypted with the team's key.
# Adding a feature later is an in-place update; removing or retyping one is
# refused at plan unless allow_destructive_changes = true.
resource "mlplatform_feature_store" "customers" {
  name                           = "customers"
  description                    = "Customer risk features"
  record_identifier_feature_name = "customer_id"
  event_time_feature_name        = "event_time"

  features = [
    { name = "customer_id", type = "String" },
    { name = "event_time", type = "Fractional" },
    { name = "age", type = "Integral" },
    { name = "risk_score", type = "Fractional" },
  ]

  online_store = {
    enabled     = true
    kms_key_arn = "arn:aws:kms:me-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    ttl         = { unit = "Days", value = 30 }
  }

  offline_store = {
    s3_uri       = "s3://uae-feature-store/customers"
    kms_key_arn  = "arn:aws:kms:me-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    table_format = "Iceberg"
  }

  role_arn = "arn:aws:iam::123456789012:role/sagemaker-feature-store"
  tags     = { team = "risk" }

  timeouts = {
    create = "20m"
  }
}
