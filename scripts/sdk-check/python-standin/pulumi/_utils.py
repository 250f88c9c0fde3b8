# No lazy_import: the SDK's _utilities falls back to its own.
