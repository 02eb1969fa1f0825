"""kafkafmt's version: the one place it is written (pyproject.toml and every module read it from here)."""
__version__ = "0.1.0"
