"""The C helpers: CRCs against independent implementations, at every size and alignment class."""
import random
import zlib

import crc32c as crc32c_pkg
import numpy as np
import pytest

from kafkafmt._native import scan

SIZES = [0, 1, 7, 8, 9, 63, 255, 256, 767, 768, 769, 3 * 256 + 13, 8191, 3 * 8192 - 1, 3 * 8192,
         3 * 8192 + 777, 100_000, 1 << 20]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("misalign", [0, 1, 3, 7])
def test_crc32c_matches_reference(size, misalign):
    rnd = random.Random(size * 31 + misalign)
    raw = rnd.randbytes(size + misalign)
    view = np.frombuffer(raw, np.uint8)[misalign:]
    assert scan.crc32c(view) == crc32c_pkg.crc32c(raw[misalign:])


@pytest.mark.parametrize("size", SIZES)
def test_crc32_matches_zlib(size):
    raw = random.Random(size).randbytes(size)
    assert scan.crc32(raw) == zlib.crc32(raw)


def test_crc32c_detects_single_bit_flips():
    raw = bytearray(random.Random(5).randbytes(30_000))
    good = scan.crc32c(bytes(raw))
    for pos in range(0, len(raw), 997):
        raw[pos] ^= 0x10
        assert scan.crc32c(bytes(raw)) != good
        raw[pos] ^= 0x10
