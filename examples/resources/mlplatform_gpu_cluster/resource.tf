# Four p5en.48xlarge nodes (8 x H200 each) in mec1-az1, in a cluster
# placement group the resource creates, with all 16 EFA interfaces per node,
# on a capacity reservation, every volume encrypted with a customer key.
resource "mlplatform_gpu_cluster" "train" {
  name          = "llm-train"
  instance_type = "p5en.48xlarge"
  node_count    = 4
  zone_id       = "mec1-az1"

  image              = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
  subnet_id          = "subnet-0123456789abcdef0"
  security_group_ids = ["sg-0123456789abcdef0"] # must allow all traffic within itself for EFA
  instance_profile   = "ml-training-node"

  capacity = {
    type           = "capacity_reservation"
    reservation_id = "cr-0123456789abcdef0"
  }

  kms_key_arn  = "arn:aws:kms:me-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
  root_volume  = { size_gib = 500 }
  data_volumes = [{ size_gib = 8000, type = "gp3", throughput = 1000, iops = 16000 }]

  rollout = {
    strategy   = "terminate_first" # a reservation has no spare capacity
    batch_size = 1
  }

  tags = { team = "ml-platform", workload = "pretraining" }

  timeouts {
    create = "90m"
    update = "120m"
  }
}
