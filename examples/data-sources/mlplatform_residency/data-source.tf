data "mlplatform_residency" "this" {}

# Place another provider's subnet in an allowed zone.
output "first_allowed_zone_id" {
  value = data.mlplatform_residency.this.allowed_zone_ids[0]
}

# Explain a reference: what it resolved to and which rules it passed.
data "mlplatform_residency" "why" {
  explain = [
    { kind = "kms_key", value = "arn:aws:kms:me-central-1:123456789012:alias/training" },
  ]
}

output "why" {
  value = data.mlplatform_residency.why.explanations
}
