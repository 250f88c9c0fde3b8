# The hwprobe reports of a validated GPU cluster, judged as the gate judges
# them: per node pass or fail, every check, benchmark figures with their
# efficiency against the catalog peak, and the attested region and zone.
variable "trusted_certificates" {
  description = "PEM of the certificates that sign node identity documents: AWS's published certificate for the region (see the validation guide)."
  type        = string
}

data "mlplatform_validation_reports" "train" {
  name                 = "train-a"
  reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
  trusted_certificates = var.trusted_certificates
}

output "failing_nodes" {
  value = [for r in data.mlplatform_validation_reports.train.reports : r.instance_id if r.status != "pass"]
}
