"""Atheris driver shared by the fuzz_*.py harnesses: ``run(target)`` sets up coverage-guided
fuzzing of one target of ``common.TARGETS`` with its structure-aware mutator.

Any libFuzzer flag may be passed on the command line (``-max_total_time=60``, ``-runs=N``,
``-max_len=65536``, a corpus folder, single input files to replay...).
"""
from __future__ import annotations

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris  # noqa: E402

import kfuzz as common  # noqa: E402


def _decode_mutator(data, max_size, seed):
    return common.structure_mutate(data, max_size, seed, atheris.Mutate)


def _codecs_mutator(data, max_size, seed):
    rng = random.Random(seed)
    r = rng.random()
    if len(data) < 2 or r < 0.5:
        return atheris.Mutate(data, max_size)
    head, payload = bytearray(data[:2]), data[2:]
    if r < 0.65:
        head[rng.randrange(2)] = rng.randrange(256)
        return bytes(head + payload)[:max_size]
    codec_id, magic = head[0] & 7, (0, 1, 2, 2)[(head[0] >> 3) & 3]
    if not 1 <= codec_id <= 4:
        return atheris.Mutate(data, max_size)
    raw = common._codec_roundtrip(codec_id, magic, payload)
    if raw is None:
        return atheris.Mutate(data, max_size)
    if r < 0.9:
        raw = atheris.Mutate(raw, len(raw) * 2 + 64)
    else:
        raw = raw * rng.randint(2, 64)        # more compressible, larger output
    try:
        new = common._compress(codec_id, magic, raw, rng)
    except Exception:
        return atheris.Mutate(data, max_size)
    if rng.random() < 0.15:
        new = new + new                       # concatenated frames / members / streams
    return bytes(head + new)[:max_size]


def _sidefiles_mutator(data, max_size, seed):
    rng = random.Random(seed)
    if data and rng.random() < 0.1:
        return bytes([rng.randrange(256)]) + data[1:]
    return atheris.Mutate(data, max_size)


MUTATORS = {"decode": _decode_mutator, "v2": _decode_mutator, "legacy": _decode_mutator,
            "salvage": _decode_mutator,
            "codecs": _codecs_mutator, "sidefiles": _sidefiles_mutator}


def run(target: str):
    common.load(instrument=not os.environ.get("KFUZZ_NO_INSTRUMENT"))
    test = common.TARGETS[target]
    atheris.Setup(sys.argv, test, custom_mutator=MUTATORS[target])
    atheris.Fuzz()
