"""Schema sources (the _schemas topic, folders, inline schemas, a live registry)."""
