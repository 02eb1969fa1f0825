"""The one storage interface every byte goes through: local files and fsspec object stores."""
