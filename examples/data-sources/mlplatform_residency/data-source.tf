data "mlplatform_residency" "this" {}

# Place another provider's subnet in an allowed zone.
output "first_allowed_zone_id" {
  value = data.mlplatform_residency.this.allowed_zone_ids[0]
}
