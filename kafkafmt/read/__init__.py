"""The readers: read_log_dir(s), iter_log_dir(s), read_segment, the Arrow stream and the Polars scan."""
