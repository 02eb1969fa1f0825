#!/usr/bin/env python3
"""Atheris harness: the `decode` target of fuzz/common.py (see fuzz/README.md)."""
import harness

if __name__ == "__main__":
    harness.run("decode")
