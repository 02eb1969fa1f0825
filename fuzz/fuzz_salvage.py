#!/usr/bin/env python3
"""Atheris harness: the `salvage` target of fuzz/kfuzz.py (see fuzz/README.md)."""
import harness

if __name__ == "__main__":
    harness.run("salvage")
