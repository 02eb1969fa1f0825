"""Helpers every layer uses: thread pools, times, progress bars, durable writes (private to kafkafmt)."""
