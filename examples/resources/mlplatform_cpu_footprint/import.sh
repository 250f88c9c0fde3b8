# A CPU footprint is imported by its name. The type becomes an explicit
# instance_type (requirements cannot be read back from AWS).
terraform import mlplatform_cpu_footprint.inference smb-inference
