# A GPU training cluster in the UAE whose nodes join an existing EKS
# cluster: two p5en.48xlarge nodes register with the startup taint
# mlplatform.io/hwprobe=pending:NoSchedule, so that no pod lands on them
# before hwprobe proved them; the validation gate lifts the taint from each
# node whose evidence passed, and the apply ends once every such node is
# registered and schedulable. A node that failed keeps the taint, is
# cordoned and replaced.
#
#   terraform init && terraform apply -var-file=eks.tfvars
#
# The provider works as gate_role_arn, which needs an access entry in the
# cluster that may get, list and patch Nodes (see the guide "Training and
# serving on Kubernetes"). The resource creates the EC2_LINUX access entry
# of the nodes' role (the role of instance_profile) itself. The cluster must
# be in me-central-1, its API endpoint too: one outside the UAE fails the
# plan.

terraform {
  required_version = ">= 1.5"
  required_providers {
    mlplatform = {
      source  = "mlplatform/mlplatform"
      version = ">= 0.1.0"
    }
  }
}

variable "gate_role_arn" {
  description = "The role the provider works as; the gate calls the cluster's API with an EKS token of this role."
  type        = string
}

variable "eks_cluster_name" {
  description = "The EKS cluster in me-central-1 that the nodes join."
  type        = string
}

variable "image" {
  description = "The EKS optimized Amazon Linux 2023 NVIDIA image (nodeadm) for the cluster's Kubernetes version: an SSM parameter or an AMI id."
  type        = string
  default     = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id"
}

variable "instance_profile" {
  description = "Instance profile of the nodes. Its role gets the cluster's EC2_LINUX access entry, and must be allowed to publish the reports and read hwprobe."
  type        = string
}

variable "subnet_id" {
  description = "A subnet of the cluster's VPC, in me-central-1: the nodes' zone is its zone."
  type        = string
}

variable "security_group_ids" {
  description = "The nodes' security groups: the cluster security group (the nodes reach the API server and each other), allowing all traffic within itself for EFA."
  type        = set(string)
}

variable "kms_key_arn" {
  description = "Customer managed KMS key in me-central-1 for the volumes and the reports."
  type        = string
}

variable "hwprobe_s3_uri" {
  description = "hwprobe for linux/amd64 in an S3 bucket in me-central-1: EKS images do not carry it."
  type        = string
}

variable "hwprobe_sha256" {
  description = "SHA-256 of the binary at hwprobe_s3_uri; the node checks it before running it."
  type        = string
}

variable "identity_certificate" {
  description = "AWS's RSA-2048 certificate for me-central-1 (PEM), which verifies the nodes' identity documents."
  type        = string
}

provider "mlplatform" {
  region = "me-central-1"

  assume_role = {
    role_arn = var.gate_role_arn
  }

  residency {
    jurisdiction = "AE"
  }
}

resource "mlplatform_gpu_cluster" "train" {
  name               = "uae-eks-train"
  instance_type      = "p5en.48xlarge"
  node_count         = 2
  image              = var.image
  subnet_id          = var.subnet_id
  security_group_ids = var.security_group_ids
  instance_profile   = var.instance_profile
  kms_key_arn        = var.kms_key_arn
  root_volume        = { size_gib = 500 }

  validation = {
    reports_s3_uri       = "s3://uae-hwprobe-reports/clusters/"
    reports_kms_key_arn  = var.kms_key_arn
    trusted_certificates = var.identity_certificate
    hwprobe_s3_uri       = var.hwprobe_s3_uri
    hwprobe_sha256       = var.hwprobe_sha256
    on_failure           = "replace"
  }

  orchestrator = {
    eks = {
      cluster_name = var.eks_cluster_name
      labels       = { "example.com/team" = "vision" }
    }
  }
}

# kubectl get nodes -l mlplatform.io/cluster=uae-eks-train lists the
# nodes; each Node's providerID names its instance.
output "node_ids" {
  description = "Instance ids of the nodes, by node index."
  value       = mlplatform_gpu_cluster.train.node_ids
}

output "validation_results" {
  description = "Per node: passed or failed, and what failed."
  value       = mlplatform_gpu_cluster.train.validation_results
}
