variable "name" {
  description = "Feature group name: 1 to 64 letters, digits, hyphens and underscores, starting and ending with a letter or digit. Changing it replaces the group."
  type        = string

  validation {
    condition     = can(regex("^[A-Za-z0-9]([A-Za-z0-9_-]{0,62}[A-Za-z0-9])?$", var.name))
    error_message = "name must be 1 to 64 letters, digits, '-' or '_', starting and ending with a letter or digit."
  }
}

variable "description" {
  description = "Free-form description, at most 128 characters (SageMaker cannot change it later: changing it replaces the group)."
  type        = string
  default     = null

  validation {
    condition     = var.description == null || try(length(var.description) <= 128, false)
    error_message = "description must be at most 128 characters."
  }
}

variable "record_identifier" {
  description = "Name of the feature that identifies a record. The module adds it as a `String` feature."
  type        = string
  default     = "record_id"
}

variable "event_time" {
  description = "Name of the feature that holds a record's event time. The module adds it as a `Fractional` feature (Unix seconds)."
  type        = string
  default     = "event_time"
}

variable "features" {
  description = "The features beyond the record identifier and event time: name, type (`Integral`, `Fractional` or `String`), and optionally a collection type (`List`, `Set` or `Vector`, which need `online_storage_type = \"InMemory\"`) and a vector dimension. Adding one is an in-place update; removing or retyping one is refused unless `allow_destructive_changes`."
  type = list(object({
    name             = string
    type             = string
    collection_type  = optional(string)
    vector_dimension = optional(number)
  }))

  validation {
    condition     = length(var.features) >= 1 && length(var.features) <= 2498
    error_message = "features must list 1 to 2498 features (SageMaker allows 2500, two of them the record identifier and event time)."
  }
  validation {
    condition     = alltrue([for f in var.features : contains(["Integral", "Fractional", "String"], f.type)])
    error_message = "Every feature type must be Integral, Fractional or String."
  }
  validation {
    condition     = alltrue([for f in var.features : can(regex("^[A-Za-z0-9]([A-Za-z0-9_-]{0,62}[A-Za-z0-9])?$", f.name))])
    error_message = "Every feature name must be 1 to 64 letters, digits, '-' or '_', starting and ending with a letter or digit."
  }
  validation {
    condition     = length(distinct([for f in var.features : lower(f.name)])) == length(var.features)
    error_message = "Feature names must be unique, ignoring case."
  }
  validation {
    condition     = alltrue([for f in var.features : f.collection_type == null || contains(["List", "Set", "Vector"], coalesce(f.collection_type, "-"))])
    error_message = "A feature's collection_type must be List, Set or Vector (or null for a scalar)."
  }
}

variable "kms_key_arn" {
  description = "ARN of the team's customer-managed KMS key: it encrypts the online store and the offline store's objects. It must be a key ARN (not an alias) in the jurisdiction; the provider checks its region, and that it is customer-managed when the policy requires it. The offline store's role needs `kms:GenerateDataKey` on it."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.kms_key_arn))
    error_message = "kms_key_arn must be a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/ID), not an alias or a key id."
  }
}

variable "offline_bucket" {
  description = "S3 bucket of the offline store. It must be in the jurisdiction's region and must not replicate to another region: the provider checks both at plan time (GetBucketLocation, GetBucketReplication)."
  type        = string

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", var.offline_bucket))
    error_message = "offline_bucket must be a bucket name (3 to 63 lowercase letters, digits, '.' or '-'), not an s3:// URI."
  }
}

variable "offline_prefix" {
  description = "Key prefix of the offline store in the bucket. Default: `feature-store/<name>`."
  type        = string
  default     = null
}

variable "table_format" {
  description = "Offline store table format: `Iceberg` or `Glue`."
  type        = string
  default     = "Iceberg"

  validation {
    condition     = contains(["Iceberg", "Glue"], var.table_format)
    error_message = "table_format must be Iceberg or Glue."
  }
}

variable "role_arn" {
  description = "ARN of the IAM role SageMaker assumes to write the offline store (`s3:PutObject` on the bucket, `kms:GenerateDataKey` on the key)."
  type        = string

  validation {
    condition     = can(regex("^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$", var.role_arn))
    error_message = "role_arn must be an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)."
  }
}

variable "online_store" {
  description = "Whether the group has an online store (low-latency reads)."
  type        = bool
  default     = true
}

variable "online_storage_type" {
  description = "Online store tier: `Standard` or `InMemory` (needed for collection features)."
  type        = string
  default     = "Standard"

  validation {
    condition     = contains(["Standard", "InMemory"], var.online_storage_type)
    error_message = "online_storage_type must be Standard or InMemory."
  }
}

variable "online_ttl_days" {
  description = "Days after its event time that an online record expires; null for no expiry. Changing it is an in-place update; removing it replaces the group."
  type        = number
  default     = null

  validation {
    condition     = var.online_ttl_days == null || try(var.online_ttl_days >= 1 && floor(var.online_ttl_days) == var.online_ttl_days, false)
    error_message = "online_ttl_days must be a whole number of at least 1, or null."
  }
}

variable "allow_destructive_changes" {
  description = "Allow changes that delete and recreate the feature group, losing its online records and starting a new offline table."
  type        = bool
  default     = false
}

variable "tags" {
  description = "Tags of the feature group, merged over the provider's default_tags."
  type        = map(string)
  default     = {}
}
