"""API-only request and response models (camelCase on the wire via CamelModel)."""
