"""The kernel's own lz4/zstd/snappy decompression and the Python codecs give the same results, the same
error classes, and honour the same cap (the Python codecs are the fallback when liblz4/libzstd
cannot be loaded, decode large snappy payloads, and always decode v0/v1 wrappers)."""
import numpy as np
import pytest

import kpy
import kafkafmt
from kafkafmt.record import _decoder as decoder
from kafkafmt.errors import DecompressionLimitError, KafkafmtError

C_BITS = decoder.C_CODECS
pytestmark = pytest.mark.skipif(not C_BITS, reason="liblz4/libzstd not loadable here: only the Python path exists")

CASES = [c for c in kpy.matrix() if c[0] == 2 and c[1] in ("lz4", "zstd", "snappy")]


def _decode_both(buf, monkeypatch, **kw):
    # (every snappy payload through the kernel's decoder, the large ones too: both decoders compared)
    monkeypatch.setattr(decoder, "SNAPPY_KERNEL_MAX_BYTES", 1 << 40)
    out = []
    for bits in (C_BITS, 0):
        monkeypatch.setattr(decoder, "C_CODECS", bits)
        try:
            out.append(kafkafmt.decode(buf, **kw))
        except KafkafmtError as exc:
            out.append(exc)
    return out


def _same(a, b):
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert type(a) is type(b), (a, b)
        assert (a.position, a.offset) == (b.position, b.offset)
        return
    assert a.offset.tolist() == b.offset.tolist()
    assert a.timestamp.tolist() == b.timestamp.tolist()
    assert a.key.to_pylist() == b.key.to_pylist()
    assert a.value.to_pylist() == b.value.to_pylist()
    assert a.headers.to_pylist() == b.headers.to_pylist()
    assert len(a.controls) == len(b.controls)


@pytest.mark.parametrize("case", CASES, ids=["v%d-%s-%s" % c for c in CASES])
def test_same_records_both_paths(case, monkeypatch):
    buf = kpy.make_case(*case)
    c, py = _decode_both(buf, monkeypatch)
    _same(c, py)
    kpy.assert_records_match(c, kpy.kp_decode(buf))


@pytest.mark.parametrize("codec", ["lz4", "zstd", "snappy"])
def test_kafkafmt_written_frames_both_paths(codec, monkeypatch):
    # Java-style frames: lz4 without content size and independent blocks; zstd with content size;
    # batches spanning several lz4 blocks (values > 64 KiB) and many small batches
    values = [bytes([i % 251]) * (i * 997 % 150_000) for i in range(40)] + [b"v%d" % i for i in range(500)]
    buf = kafkafmt.encode(values=values, timestamps=list(range(len(values))), compression=codec,
                          batch_size=300_000)
    c, py = _decode_both(buf, monkeypatch)
    _same(c, py)
    assert c.value.to_pylist() == values


@pytest.mark.parametrize("codec", ["lz4", "zstd", "snappy"])
def test_corrupted_payloads_same_error_both_paths(codec, monkeypatch):
    buf = bytearray(kafkafmt.encode(values=[b"x" * 3000] * 20, timestamps=list(range(20)), compression=codec))
    rnd = np.random.default_rng(7)
    for _ in range(60):
        bad = bytearray(buf)
        pos = int(rnd.integers(61, len(bad)))
        bad[pos] ^= int(rnd.integers(1, 256))
        c, py = _decode_both(bytes(bad), monkeypatch, verify_crc=None)   # past the CRC, into the codec
        assert isinstance(c, (kafkafmt.Records, KafkafmtError)) and isinstance(py, (kafkafmt.Records, KafkafmtError))
        if isinstance(c, kafkafmt.Records) and isinstance(py, kafkafmt.Records):
            _same(c, py)


@pytest.mark.parametrize("codec", ["lz4", "zstd", "snappy"])
def test_cap_both_paths(codec, monkeypatch):
    buf = kafkafmt.encode(values=[b"\0" * 1_000_000] * 3, timestamps=[1, 2, 3], compression=codec,
                          batch_size=10 << 20)
    c, py = _decode_both(buf, monkeypatch, max_decompressed=1 << 20)
    assert isinstance(c, DecompressionLimitError) and isinstance(py, DecompressionLimitError)
    assert c.position == py.position == 0
    c, py = _decode_both(buf, monkeypatch, max_decompressed=4 << 20)
    _same(c, py)
