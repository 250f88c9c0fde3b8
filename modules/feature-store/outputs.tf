output "arn" {
  description = "ARN of the feature group."
  value       = mlplatform_feature_store.this.arn
}

output "name" {
  description = "Name of the feature group."
  value       = mlplatform_feature_store.this.id
}

output "offline_store_s3_uri" {
  description = "Where SageMaker writes the offline records."
  value       = mlplatform_feature_store.this.offline_store_resolved_s3_uri
}

output "offline_store_table" {
  description = "Glue database and table of the offline store (`database.table`), to query with Athena."
  value       = "${mlplatform_feature_store.this.offline_store_database_name}.${mlplatform_feature_store.this.offline_store_table_name}"
}

output "feature_names" {
  description = "Every feature of the group, the record identifier and event time included."
  value       = sort([for f in mlplatform_feature_store.this.features : f.name])
}
