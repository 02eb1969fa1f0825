"""Tests of kafkafmt.codecs: round trips, cross-checks with kafka-python's encoders/decoders, Kafka's
format quirks (KAFKA-3160 lz4 header checksum, xerial snappy framing, zstd frames without content size),
decompression bombs and corrupt input.

Imports only ``kafkafmt.codecs`` and ``kafkafmt.errors`` so it runs while the rest of the package is
being written.
"""
from __future__ import annotations

import os
import random
import struct
import threading
import time
import tracemalloc

import cramjam
import lz4.frame as lz4f
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka import codec as kcodec
from kafkafmt.codecs import (CODEC_NAMES, CODECS, GZIP, LZ4, NONE, SNAPPY, ZSTD, GzipCodec, Lz4Codec,
                             NoneCodec, SnappyCodec, ZstdCodec, get_codec)
from kafkafmt.codecs.base import DEFAULT_MAX_DECOMPRESSED
from kafkafmt.codecs.lz4 import FRAME_MAGIC, header_checksum, xxh32
from kafkafmt.codecs.snappy import XERIAL_MAGIC
from kafkafmt.errors import (CompressionError, DecompressionLimitError, KafkafmtError,
                             UnsupportedCodecError)

MiB = 1024 * 1024
COMPRESSED = ["gzip", "snappy", "lz4", "zstd"]
SIZES = [0, 1, 100, 64 * 1024 + 1, MiB]


def payload(size: int, kind: str, seed: int = 0) -> bytes:
    if kind == "random":
        return random.Random(seed).randbytes(size)
    words = [b"alpha", b"beta", b"gamma", b'"user":', b'"ts":', b"1700000000", b"{", b"}", b", "]
    rnd = random.Random(seed)
    out = bytearray()
    while len(out) < size:
        out += rnd.choice(words)
    return bytes(out[:size])


JSON = payload(125_000, "json", seed=7)


def lz4_xxh32(data: bytes) -> int:
    """xxh32 computed by liblz4 itself: the content checksum of a frame is xxh32(content, seed 0)."""
    frame = lz4f.compress(data, content_checksum=True, store_size=False, block_linked=False)
    return int.from_bytes(frame[-4:], "little")


class _XxhashShim:
    """Stands in for the ``xxhash`` module (not installed) in kafka-python's old-Kafka lz4 helpers."""

    class xxh32:
        def __init__(self, data):
            self._h = lz4_xxh32(bytes(data))

        def digest(self):
            return self._h.to_bytes(4, "big")


@pytest.fixture
def kafka_python_xxhash(monkeypatch):
    monkeypatch.setattr(kcodec, "xxhash", _XxhashShim)


def java_lz4_frame(data: bytes, *, content_size=False, broken_hc=False, block_size=lz4f.BLOCKSIZE_MAX64KB):
    """An lz4 frame as built independently of kafkafmt (python-lz4 + liblz4's xxh32)."""
    frame = bytearray(lz4f.compress(data, block_size=block_size, block_linked=False,
                                    content_checksum=False, store_size=content_size))
    if broken_hc:
        hc_pos = 14 if content_size else 6
        frame[hc_pos] = (lz4_xxh32(bytes(frame[:hc_pos])) >> 8) & 0xFF
    return bytes(frame)


def xerial(data: bytes, block: int = 32 * 1024, little_endian_ints: bool = False) -> bytes:
    """A snappy-java stream built by hand (header ints big- or little-endian)."""
    out = [XERIAL_MAGIC, struct.pack("<ii" if little_endian_ints else ">ii", 1, 1)]
    for i in range(0, len(data), block):
        chunk = bytes(cramjam.snappy.compress_raw(data[i:i + block]))
        out += [struct.pack(">i", len(chunk)), chunk]
    return b"".join(out)


# --------------------------------------------------------------------------------------------- registry
def test_registry():
    assert (NONE, GZIP, SNAPPY, LZ4, ZSTD) == (0, 1, 2, 3, 4)
    assert CODEC_NAMES == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    expected = {0: NoneCodec, 1: GzipCodec, 2: SnappyCodec, 3: Lz4Codec, 4: ZstdCodec}
    for codec_id, cls in expected.items():
        codec = CODECS[codec_id]
        assert isinstance(codec, cls) and codec.id == codec_id and codec.name == CODEC_NAMES[codec_id]
        assert get_codec(codec_id) is codec
        assert get_codec(codec.name) is codec
        assert get_codec(codec.name.upper()) is codec
    import numpy as np
    assert get_codec(np.int8(3)) is CODECS[3]


@pytest.mark.parametrize("bad", [5, 6, 7, 8, -1, "brotli", "", None, 2.5, True, b"gzip"])
def test_unknown_codec(bad):
    with pytest.raises(UnsupportedCodecError):
        get_codec(bad)
    assert issubclass(UnsupportedCodecError, KafkafmtError)


def test_none_codec():
    data = memoryview(b"abc")
    assert get_codec(0).decompress(data) is data
    assert get_codec(0).compress(data) == b"abc"
    with pytest.raises(DecompressionLimitError):
        get_codec(0).decompress(b"abcd", max_size=3)


def test_error_hierarchy():
    assert issubclass(DecompressionLimitError, CompressionError)
    assert issubclass(CompressionError, ValueError)
    assert DEFAULT_MAX_DECOMPRESSED == 512 * MiB


@pytest.mark.parametrize("name", COMPRESSED)
def test_negative_max_size(name):
    with pytest.raises(ValueError):
        get_codec(name).decompress(get_codec(name).compress(b"x"), max_size=-1)


# ------------------------------------------------------------------------------------------ round trips
@pytest.mark.parametrize("kind", ["random", "json"])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", ["none"] + COMPRESSED)
def test_round_trip(name, size, kind):
    codec = get_codec(name)
    data = payload(size, kind, seed=size)
    for magic in ((0, 1, 2) if name == "lz4" else (2,)):
        compressed = codec.compress(data, magic=magic)
        assert isinstance(compressed, bytes)
        for view in (compressed, bytearray(compressed), memoryview(compressed)):
            assert bytes(codec.decompress(view, magic=magic)) == data
        # a memoryview into the middle of a larger buffer, as from an mmap'ed segment
        big = b"\xee" * 61 + compressed + b"\xee" * 3
        assert bytes(codec.decompress(memoryview(big)[61:61 + len(compressed)], magic=magic)) == data


@pytest.mark.parametrize("name", COMPRESSED)
def test_exact_cap(name):
    codec = get_codec(name)
    data = JSON
    compressed = codec.compress(data)
    assert bytes(codec.decompress(compressed, max_size=len(data))) == data
    with pytest.raises(DecompressionLimitError):
        codec.decompress(compressed, max_size=len(data) - 1)
    with pytest.raises(DecompressionLimitError):
        codec.decompress(compressed, max_size=0)
    assert bytes(codec.decompress(codec.compress(b""), max_size=0)) == b""


@pytest.mark.parametrize("level", [1, 9])
def test_gzip_levels(level):
    assert get_codec("gzip").decompress(get_codec("gzip").compress(JSON, level=level)) == JSON


@pytest.mark.parametrize("level", [1, 9, 12, 17])
def test_lz4_levels(level):
    assert get_codec("lz4").decompress(get_codec("lz4").compress(JSON, level=level)) == JSON


@pytest.mark.parametrize("level", [-5, 1, 3, 19])
def test_zstd_levels(level):
    assert get_codec("zstd").decompress(get_codec("zstd").compress(JSON, level=level)) == JSON


# ---------------------------------------------------------------------- cross-checks with kafka-python
@pytest.mark.parametrize("data", [b"", b"x", JSON, payload(300_000, "random")], ids=["0", "1", "json", "rand"])
class TestKafkaPython:
    def test_gzip(self, data):
        assert get_codec("gzip").decompress(kcodec.gzip_encode(data)) == data
        assert kcodec.gzip_decode(get_codec("gzip").compress(data)) == data

    def test_snappy_xerial(self, data):
        assert bytes(get_codec("snappy").decompress(kcodec.snappy_encode(data, xerial_compatible=True))) == data
        # old Kafka clients wrote 1 KiB blocks
        small_blocks = kcodec.snappy_encode(data, xerial_compatible=True, xerial_blocksize=1024)
        assert bytes(get_codec("snappy").decompress(small_blocks)) == data
        ours = get_codec("snappy").compress(data)
        if data:  # kafka-python takes a header-only stream (empty payload) for raw snappy
            assert kcodec.snappy_decode(ours) == data

    def test_snappy_raw(self, data):
        raw = kcodec.snappy_encode(data, xerial_compatible=False)
        assert raw[:8] != XERIAL_MAGIC
        assert bytes(get_codec("snappy").decompress(raw)) == data

    def test_lz4(self, data):
        theirs = kcodec.lz4_encode(data)              # kafka-python writes the content size
        assert lz4f.get_frame_info(theirs)["content_size"] == len(data)
        assert get_codec("lz4").decompress(theirs) == data
        assert kcodec.lz4_decode(get_codec("lz4").compress(data)) == data

    def test_lz4_old_kafka(self, data, kafka_python_xxhash):
        theirs = kcodec.lz4_encode_old_kafka(data)
        with pytest.raises(RuntimeError, match="headerChecksum"):
            lz4f.decompress(theirs)                   # why the repair is needed
        assert get_codec("lz4").decompress(theirs, magic=0) == data
        ours = get_codec("lz4").compress(data, magic=0)
        assert ours[6] == theirs[6]                   # the same wrong header checksum
        assert kcodec.lz4_decode_old_kafka(ours) == data

    def test_zstd(self, data):
        assert get_codec("zstd").decompress(kcodec.zstd_encode(data)) == data
        assert kcodec.zstd_decode(get_codec("zstd").compress(data)) == data


# ----------------------------------------------------------------------------------------- gzip details
def test_gzip_members_and_containers():
    import gzip as stdlib_gzip
    import zlib
    codec = get_codec("gzip")
    a, b = JSON, b"second member"
    ga, gb = stdlib_gzip.compress(a), stdlib_gzip.compress(b, mtime=0)
    assert codec.decompress(ga + gb) == a + b                        # concatenated members (as Java reads)
    assert codec.decompress(ga + gb + ga) == a + b + a
    assert codec.decompress(ga + b"\x00\x00 trailing junk") == a      # Java ignores trailing bytes too
    assert codec.decompress(zlib.compress(a)) == a                   # zlib container
    with pytest.raises(DecompressionLimitError):
        codec.decompress(ga + gb, max_size=len(a) + len(b) - 1)
    with pytest.raises(CompressionError):
        codec.decompress(ga + gb[:-3])                               # truncated second member
    with pytest.raises(CompressionError):
        codec.decompress(ga[:-1])
    assert codec.compress(a)[:3] == b"\x1f\x8b\x08"


# ------------------------------------------------------------------------------------------ lz4 details
def test_xxh32_vectors():
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    assert lz4_xxh32(b"abc") == 0x32D153FF


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=80))
def test_xxh32_matches_liblz4(data):
    assert xxh32(data) == lz4_xxh32(data)


def test_lz4_java_header():
    """Kafka's Lz4BlockOutputStream: FLG 0x60 (version 1, independent blocks), BD 0x40 (64 KiB), no size."""
    frame = get_codec("lz4").compress(JSON)
    assert frame[:4] == FRAME_MAGIC and frame[4] == 0x60 and frame[5] == 0x40
    assert frame[6] == header_checksum(b"\x60\x40")
    assert frame[-4:] == b"\x00\x00\x00\x00"          # end mark, no content checksum
    assert lz4f.decompress(frame) == JSON
    old = get_codec("lz4").compress(JSON, magic=0)
    assert old[6] == header_checksum(b"\x60\x40", broken=True) == (lz4_xxh32(old[:6]) >> 8) & 0xFF
    assert old[6] != frame[6] and old[:6] == frame[:6]
    assert get_codec("lz4").compress(JSON, magic=1) == frame        # only magic 0 has the wrong HC
    empty = get_codec("lz4").compress(b"")
    assert empty[4:6] == b"\x60\x40" and empty[7:] == b"\x00\x00\x00\x00"


@pytest.mark.parametrize("content_size", [False, True])
@pytest.mark.parametrize("block_size", [lz4f.BLOCKSIZE_MAX64KB, lz4f.BLOCKSIZE_MAX256KB, lz4f.BLOCKSIZE_MAX4MB])
def test_lz4_frames(content_size, block_size):
    codec = get_codec("lz4")
    for data in (JSON, payload(200_000, "random")):
        good = java_lz4_frame(data, content_size=content_size, block_size=block_size)
        broken = java_lz4_frame(data, content_size=content_size, broken_hc=True, block_size=block_size)
        assert good != broken
        for magic in (0, 1, 2):
            assert codec.decompress(good, magic=magic) == data
            # KAFKA-3160 value: accepted for every magic (Java ignores HC for magic 0; librdkafka and
            # kafka-python repair it)
            assert codec.decompress(broken, magic=magic) == data
        hc_pos = 14 if content_size else 6
        other = bytearray(good)
        other[hc_pos] = next(v for v in range(256) if v not in (good[hc_pos], broken[hc_pos]))
        assert codec.decompress(bytes(other), magic=0) == data    # Java ignores HC entirely for magic 0
        with pytest.raises(CompressionError):
            codec.decompress(bytes(other), magic=2)


def test_lz4_checksums_and_concatenation():
    codec = get_codec("lz4")
    a, b = JSON, payload(70_000, "random", seed=3)
    fa = lz4f.compress(a, block_linked=False, block_checksum=True, content_checksum=True)
    fb = java_lz4_frame(b, broken_hc=True)
    assert codec.decompress(fa) == a
    assert codec.decompress(fa + fb, magic=0) == a + b
    assert codec.decompress(fa + fb + fa) == a + b + a
    assert codec.decompress(fa + b"trailing junk") == a              # Java stops at the end mark
    corrupted = bytearray(fa)
    corrupted[len(corrupted) // 2] ^= 0x01
    with pytest.raises(CompressionError):
        codec.decompress(bytes(corrupted))
    with pytest.raises(DecompressionLimitError):
        codec.decompress(fa + fb, max_size=len(a) + len(b) - 1)


def test_lz4_lying_content_size():
    data = JSON
    frame = bytearray(java_lz4_frame(data, content_size=True))
    frame[6:14] = (len(data) - 1).to_bytes(8, "little")
    frame[14] = header_checksum(frame[4:14])
    with pytest.raises(CompressionError):
        get_codec("lz4").decompress(bytes(frame))
    frame[6:14] = (1 << 40).to_bytes(8, "little")
    frame[14] = header_checksum(frame[4:14])
    with pytest.raises(DecompressionLimitError):
        get_codec("lz4").decompress(bytes(frame))


# ----------------------------------------------------------------------------------------- zstd details
@pytest.mark.parametrize("data", [b"", b"x", JSON, payload(700_000, "random")], ids=["0", "1", "json", "rand"])
def test_zstd_content_size_or_not(data):
    codec = get_codec("zstd")
    with_size = zstandard.ZstdCompressor(write_content_size=True).compress(data)
    without = zstandard.ZstdCompressor(write_content_size=False, write_checksum=True).compress(data)
    assert zstandard.frame_content_size(without) == -1
    cobj = zstandard.ZstdCompressor(level=3).compressobj()            # streaming, like zstd-jni
    streamed = b"".join(cobj.compress(data[i:i + 16384]) for i in range(0, len(data), 16384)) + cobj.flush()
    if data:  # (an empty stream is ended at once, with content size 0)
        assert zstandard.frame_content_size(streamed) == -1
    for frame in (with_size, without, streamed):
        assert codec.decompress(frame) == data
        assert codec.decompress(memoryview(frame)) == data
        assert codec.decompress(frame, max_size=len(data)) == data
        if data:
            with pytest.raises(DecompressionLimitError):
                codec.decompress(frame, max_size=len(data) - 1)


def test_zstd_multiple_and_skippable_frames():
    codec = get_codec("zstd")
    a, b = JSON, b"second frame"
    fa = zstandard.ZstdCompressor(write_content_size=False).compress(a)
    fb = zstandard.ZstdCompressor().compress(b)
    skippable = struct.pack("<II", 0x184D2A53, 5) + b"hello"
    assert codec.decompress(fa + fb) == a + b
    assert codec.decompress(skippable + fa + skippable + fb) == a + b
    with pytest.raises(DecompressionLimitError):
        codec.decompress(fa + fb, max_size=len(a) + len(b) - 1)
    with pytest.raises(CompressionError):
        codec.decompress(fa + b"trailing junk")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=st.integers(0, 300_000), level=st.integers(1, 5), with_size=st.booleans(),
       checksum=st.booleans(), seed=st.integers(0, 3))
def test_zstd_frame_walk(size, level, with_size, checksum, seed):
    data = payload(size, "json" if seed % 2 else "random", seed=seed)
    frame = zstandard.ZstdCompressor(level=level, write_content_size=with_size,
                                     write_checksum=checksum).compress(data)
    from kafkafmt.codecs.zstd import _frame
    end, declared, bound = _frame(memoryview(frame), 0)
    assert end == len(frame)
    assert declared == (zstandard.get_frame_parameters(frame).content_size if with_size else -1)
    assert bound >= len(data)
    assert get_codec("zstd").decompress(frame) == data


def test_zstd_threads():
    codec = get_codec("zstd")
    inputs = [payload(50_000 + 1000 * i, "json", seed=i) for i in range(4)]
    frames = [zstandard.ZstdCompressor(write_content_size=bool(i % 2)).compress(d) for i, d in enumerate(inputs)]
    errors = []

    def work(i):
        try:
            for _ in range(50):
                assert codec.decompress(frames[i]) == inputs[i]
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# --------------------------------------------------------------------------------------- snappy details
@pytest.mark.parametrize("data", [b"", b"x", JSON, payload(100_000, "random")], ids=["0", "1", "json", "rand"])
def test_snappy_framings(data):
    codec = get_codec("snappy")
    ours = codec.compress(data)
    assert ours[:16] == XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"
    assert ours == xerial(data)                                   # 32 KiB input blocks, as snappy-java
    cases = [
        (xerial(data, little_endian_ints=True), data),            # e.g. Redpanda
        (xerial(data, block=1024), data),                          # old Kafka clients: 1 KiB blocks
        (xerial(data) + xerial(data), data * 2),                   # concatenated streams
        (bytes(cramjam.snappy.compress_raw(data)), data),          # librdkafka: raw snappy
    ]
    for frame, expected in cases:
        assert bytes(codec.decompress(frame)) == expected


def test_snappy_corrupt_framing():
    codec = get_codec("snappy")
    frame = xerial(JSON)
    with pytest.raises(CompressionError):
        codec.decompress(frame[:-1])                               # truncated block
    with pytest.raises(CompressionError):
        codec.decompress(frame[:18])                               # truncated block length
    with pytest.raises(CompressionError):
        codec.decompress(frame[:16] + struct.pack(">i", -5) + frame[20:])
    with pytest.raises(CompressionError):
        codec.decompress(b"")
    lying = bytearray(frame)
    lying[20] ^= 0x01                                              # first block's length varint
    with pytest.raises(CompressionError):
        codec.decompress(bytes(lying))


# ------------------------------------------------------------------------------------ decompression bombs
BOMB = 200 * MiB
CAP = 10 * MiB
_ZEROS = bytes(MiB)


def _streamed(begin, compress, end=lambda: b""):
    body = b"".join(compress(_ZEROS) for _ in range(BOMB // MiB))
    return begin + body + end()


def _bomb_gzip():
    import zlib
    cobj = zlib.compressobj(9, zlib.DEFLATED, 31)
    return _streamed(b"", cobj.compress, cobj.flush)


def _bomb_zstd(with_size):
    cobj = zstandard.ZstdCompressor(level=1).compressobj(size=BOMB if with_size else -1)
    return _streamed(b"", cobj.compress, cobj.flush)


def _bomb_lz4(with_size, broken_hc=False):
    comp = lz4f.LZ4FrameCompressor(block_size=lz4f.BLOCKSIZE_MAX64KB, block_linked=False,
                                   content_checksum=False, auto_flush=True)
    frame = bytearray(_streamed(comp.begin(source_size=BOMB if with_size else 0), comp.compress, comp.flush))
    if broken_hc:
        frame[6] = header_checksum(frame[4:6], broken=True)
    return bytes(frame)


def _bomb_snappy_xerial():
    block = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
    return XERIAL_MAGIC + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(block)) + block) * (BOMB // 32768)


def _varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _bomb_snappy_raw():
    # one zero literal, then copies of 64 bytes at offset 1: a genuine 200 MB raw snappy block
    copies = (BOMB - 1) // 64
    return _varint(1 + 64 * copies) + b"\x00\x00" + b"\xfe\x01\x00" * copies


BOMBS = {
    "gzip": (1, _bomb_gzip, 0),
    "zstd-size": (4, lambda: _bomb_zstd(True), 2),
    "zstd-nosize": (4, lambda: _bomb_zstd(False), 2),
    "lz4-size": (3, lambda: _bomb_lz4(True), 2),
    "lz4-nosize": (3, lambda: _bomb_lz4(False), 2),
    "lz4-magic0": (3, lambda: _bomb_lz4(False, broken_hc=True), 0),
    "snappy-xerial": (2, _bomb_snappy_xerial, 2),
    "snappy-raw": (2, _bomb_snappy_raw, 2),
}


def _rss_peak_reset():
    """Reset the kernel's peak-RSS counter (VmHWM); False where not permitted."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_decompression_bomb(bomb):
    codec_id, build, magic = BOMBS[bomb]
    data = build()
    assert len(data) < 12 * MiB
    codec = get_codec(codec_id)
    rss_tracked = _rss_peak_reset()
    rss_before = _status_kib("VmRSS") if rss_tracked else 0
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(DecompressionLimitError):
            codec.decompress(data, max_size=CAP, magic=magic)
        elapsed = time.perf_counter() - start
        traced_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 2.0
    assert traced_peak < 4 * CAP, f"{traced_peak / MiB:.1f} MiB allocated"
    if rss_tracked:
        rss_growth = (_status_kib("VmHWM") - rss_before) * 1024
        assert rss_growth < 6 * CAP, f"peak RSS grew {rss_growth / MiB:.1f} MiB"


# ------------------------------------------------------------------------------------------ corrupt input
def _ok_or_compression_error(codec, data, magic):
    try:
        out = codec.decompress(data, max_size=MiB, magic=magic)
    except CompressionError:
        return None
    assert isinstance(out, (bytes, bytearray, memoryview))
    return out


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(COMPRESSED), data=st.binary(max_size=300), magic=st.sampled_from([0, 1, 2]))
def test_random_bytes(name, data, magic):
    _ok_or_compression_error(get_codec(name), data, magic)


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(COMPRESSED), body=st.binary(max_size=200), magic=st.sampled_from([0, 2]),
       variant=st.integers(0, 3))
def test_random_bytes_after_valid_header(name, body, magic, variant):
    """Random bodies behind headers that pass the format checks, to reach the libraries' decoders."""
    if name == "gzip":
        head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    elif name == "snappy":
        head = XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01" if variant % 2 else b""
    elif name == "lz4":
        desc = bytes([0x60 | (0x08 if variant & 1 else 0) | (0x04 if variant & 2 else 0), 0x40])
        if variant & 1:
            desc += (len(body) * 3).to_bytes(8, "little")
        head = FRAME_MAGIC + desc + bytes([header_checksum(desc, broken=magic == 0)])
    else:
        head = b"\x28\xb5\x2f\xfd" + bytes([(0x20 if variant & 1 else 0) | (0x04 if variant & 2 else 0)])
        head += bytes([len(body)]) if variant & 1 else b"\x58"
    _ok_or_compression_error(get_codec(name), head + body, magic)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(COMPRESSED), size=st.integers(1, 200_000), kind=st.sampled_from(["random", "json"]),
       cut=st.floats(0, 1, exclude_max=True), flip=st.integers(0, 10**9), magic=st.sampled_from([0, 2]))
def test_truncated_and_flipped(name, size, kind, cut, flip, magic):
    codec = get_codec(name)
    data = payload(size, kind, seed=size)
    frame = codec.compress(data, magic=magic)
    truncated = frame[:int(len(frame) * cut)]
    out = _ok_or_compression_error(codec, truncated, magic)
    if name != "snappy":
        assert out is None                       # gzip, lz4, zstd frames all end with a marker/trailer
    else:
        assert out is None or data.startswith(bytes(out))   # xerial: truncation at a block boundary
    flipped = bytearray(frame)
    flipped[flip % len(flipped)] ^= 1 << (flip % 8)
    _ok_or_compression_error(codec, bytes(flipped), magic)


@pytest.mark.parametrize("name", COMPRESSED)
def test_library_errors_are_chained(name):
    """Library failures come out as CompressionError chained to the library's exception."""
    codec = get_codec(name)
    frame = codec.compress(JSON)
    chained = 0
    for pos in range(len(frame) // 3, len(frame) - 8, len(frame) // 40):
        corrupted = bytearray(frame)
        corrupted[pos:pos + 4] = b"\xa5\x5a\xff\x00"
        try:
            out = codec.decompress(bytes(corrupted))
        except DecompressionLimitError:
            raise
        except CompressionError as exc:
            assert not isinstance(exc.__cause__, KafkafmtError)
            chained += exc.__cause__ is not None
        else:
            # Kafka's snappy and lz4 frames carry no checksum: corrupt blocks may decode to garbage
            assert name in ("snappy", "lz4") and bytes(out) != JSON
    assert chained


def test_os_random_is_corrupt():
    for name in COMPRESSED:
        with pytest.raises(CompressionError):
            get_codec(name).decompress(b"\xff" * 8 + os.urandom(1000))


# ------------------------------------------------------------------- the one lz4 frame parser (C)

def test_lz4_frame_parser():
    from kafkafmt._native import frames

    data = JSON * 50
    frame = lz4f.compress(data, store_size=True, block_size=lz4f.BLOCKSIZE_MAX64KB, block_linked=False)
    end, hc_pos, size, bound = frames.lz4_frame(frame, 0)
    assert (end, hc_pos, size, bound) == (len(frame), 14, len(data), len(data))
    frame = lz4f.compress(data, store_size=False, block_size=lz4f.BLOCKSIZE_MAX64KB, content_checksum=True)
    end, hc_pos, size, bound = frames.lz4_frame(frame + b"junk", 0)
    assert (end, hc_pos, size) == (len(frame), 6, -1) and bound >= len(data)
    cases = {
        frame[:5]: "truncated frame header",
        b"\x00" + frame[1:]: "bad magic",
        frame[:4] + bytes([frame[4] | 0x02]) + frame[5:]: "reserved bits",
        frame[:5] + bytes([0x10]) + frame[6:]: "block maximum size",
        frame[:-8]: "truncated frame",
        frame[:7]: "no end mark",
    }
    for bad, words in cases.items():
        code = frames.lz4_frame(bad, 0)[0]
        assert code < 0 and words in frames.FRAME_ERRORS[code], (bad[:12], code)
        with pytest.raises(CompressionError):
            get_codec("lz4").decompress(bad)


def test_frame_errors_one_table():
    from kafkafmt._native import frames

    assert frames.zstd_frame(b"\x00" * 16, 0)[0] == frames.NOT_ZSTD
    assert "zstd" in frames.FRAME_ERRORS[frames.NOT_ZSTD]
    assert len(set(frames.FRAME_ERRORS)) == len(frames.FRAME_ERRORS)
