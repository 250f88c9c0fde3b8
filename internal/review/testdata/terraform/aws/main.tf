# Fixture for the review's plan tests with resources of the AWS provider
# (hashicorp/aws): buckets in and outside the jurisdiction, replication out
# of it, KMS keys, an EC2 GPU instance and a SageMaker endpoint, next to the
# mlplatform provider's residency settings. The tests plan it with the real
# Terraform CLI against the AWS emulator when a local mirror of hashicorp/aws
# is available (MLPLATFORM_TF_PLUGIN_MIRROR).
terraform {
  required_providers {
    mlplatform = {
      source = "mlplatform/mlplatform"
    }
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
  }
}

variable "endpoint" {
  type = string
}

variable "data_bucket" {
  type    = string
  default = "review-aws-data"
}

provider "mlplatform" {
  region = "me-central-1"
  residency {
    jurisdiction = "AE"
    mode         = "audit"
  }
}

provider "aws" {
  region                      = "me-central-1"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
  s3_use_path_style           = true
  endpoints {
    s3        = var.endpoint
    kms       = var.endpoint
    ec2       = var.endpoint
    sagemaker = var.endpoint
    iam       = var.endpoint
    sts       = var.endpoint
  }
}

provider "aws" {
  alias                       = "eu"
  region                      = "eu-west-1"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  s3_use_path_style           = true
  endpoints {
    s3  = var.endpoint
    kms = var.endpoint
    sts = var.endpoint
  }
}

resource "aws_kms_key" "data" {
  description             = "review fixture: data key in the jurisdiction"
  deletion_window_in_days = 7
}

resource "aws_s3_bucket" "data" {
  bucket = var.data_bucket
}

resource "aws_s3_bucket" "eu_copy" {
  provider = aws.eu
  bucket   = "${var.data_bucket}-eu-copy"
}

resource "aws_s3_bucket_versioning" "data" {
  bucket = aws_s3_bucket.data.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_replication_configuration" "data" {
  bucket     = aws_s3_bucket.data.id
  role       = "arn:aws:iam::123456789012:role/replication"
  depends_on = [aws_s3_bucket_versioning.data]
  rule {
    id     = "copy-out"
    status = "Enabled"
    destination {
      bucket = "arn:aws:s3:::${var.data_bucket}-eu-copy"
    }
  }
}

resource "aws_instance" "inference" {
  ami               = "ami-0123456789abcdef0"
  instance_type     = "g6.xlarge"
  availability_zone = "me-central-1a"
}

resource "aws_sagemaker_endpoint_configuration" "serve" {
  name        = "review-serve"
  kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/0b7c4a5e-1111-2222-3333-444455556666"
  production_variants {
    variant_name           = "primary"
    model_name             = "review-model"
    instance_type          = "ml.g5.xlarge"
    initial_instance_count = 2
  }
  data_capture_config {
    initial_sampling_percentage = 10
    destination_s3_uri          = "s3://${var.data_bucket}/capture"
    capture_options {
      capture_mode = "Input"
    }
  }
}
