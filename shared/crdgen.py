"""CRD generation from the schema models (placeholder module body is replaced by the webhook work)."""
