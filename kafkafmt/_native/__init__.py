"""Cython extension modules: the per-batch and per-record work of kafkafmt."""
