# A feature store is imported by its feature group name.
terraform import mlplatform_feature_store.customers customers
