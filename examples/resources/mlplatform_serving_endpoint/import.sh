# A serving endpoint is imported by its endpoint name.
terraform import mlplatform_serving_endpoint.fraud fraud-scoring
