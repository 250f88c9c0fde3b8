# An 8x H200 training node in the UAE.
name = "p5en-training"

host {
  region        = "me-central-1"
  zone_ids      = ["mec1-az1", "mec1-az3"]
  instance_type = "p5en.48xlarge"
}

cpu {
  min_cores      = 96
  min_memory_gib = 1900
  features       = ["avx512f", "avx512_bf16", "amx_tile"]
}

gpu {
  model            = "H200"
  count            = 8
  min_memory_gib   = 140
  min_nvlink_links = 18
  mig_enabled      = false
  ecc_enabled      = true
  min_pcie_gen     = 5
  min_pcie_width   = 16
}

efa {
  count = 16
}

benchmark "gpu_gemm_bf16" {
  min_efficiency = 0.6
}

benchmark "gpu_mlp_infer_p99" {
  max      = 25
  optional = true
}

report {
  s3_uri     = "s3://uae-hwprobe-reports/clusters/train-a/"
  kms_key_id = "arn:aws:kms:me-central-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
}
