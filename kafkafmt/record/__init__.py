"""Kafka records as columns: `Records` and `Table`, the decoder (bytes -> Records) and the encoder."""
