provider "mlplatform" {
  region = "me-central-1"

  # Optional per-service endpoints: VPC endpoints or an emulator.
  # endpoints {
  #   ec2       = "https://vpce-0123-abcd.ec2.me-central-1.vpce.amazonaws.com"
  #   sagemaker = "https://vpce-0123-efgh.api.sagemaker.me-central-1.vpce.amazonaws.com"
  # }

  residency {
    jurisdiction                  = "AE"
    excluded_zone_ids             = ["mec1-az2"]
    require_customer_managed_keys = true
    required_tags                 = ["owner", "cost-center"]
    mode                          = "enforce" # or "audit": warnings instead of errors
  }

  default_tags = {
    owner       = "ml-platform"
    cost-center = "ai-research"
  }
}
