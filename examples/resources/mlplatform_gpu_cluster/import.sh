# A GPU cluster is imported by its name.
terraform import mlplatform_gpu_cluster.train llm-train
