"""The kernel's snappy decoder (kfmt_codecs.h, reached here through `kafkafmt._native.frames.snappy_decompress`)
gives what the Python codec gives (cramjam: Rust's snap): the same bytes for every payload both read, and a
refusal -- damaged or over the limit alike -- for every payload either refuses. Raw blocks (librdkafka) and
snappy-java's framing (Kafka's Java clients), valid and damaged; small batches decoded by the kernel, larger
ones by the Python codec (`SNAPPY_KERNEL_MAX_BYTES`)."""
import cramjam
import numpy as np
import pytest

import kafkafmt
from kafkafmt._native import frames
from kafkafmt.record import scan_ranges
from kafkafmt.codecs import SnappyCodec
from kafkafmt.codecs.snappy import XERIAL_MAGIC
from kafkafmt.errors import CompressionError, DecompressionLimitError
from kafkafmt.record import _decoder as decoder

CODEC = SnappyCodec()
LIMIT = 1 << 20


def _python(payload, limit=LIMIT):
    try:
        return bytes(CODEC.decompress(payload, max_size=limit)), 0
    except DecompressionLimitError:
        return None, frames.DECOMP_LIMIT
    except CompressionError:
        return None, frames.DECOMP_CORRUPT


def _kernel(payload, limit=LIMIT):
    return frames.snappy_decompress(np.frombuffer(payload, np.uint8), limit)


def _texts(rng):
    """Data of every kind a value holds: text, JSON-like records, random bytes, runs, empty."""
    words = [b"kafka", b"offset", b"partition", b"{\"id\":", b"\"user\":", b",", b"}", b" "]
    yield b""
    yield b"a"
    yield bytes(rng.integers(0, 256, 5000, dtype=np.uint8))
    yield b"\0" * 70_000                                            # long runs: copies of offset 1
    yield b"ab" * 40_000                                            # copies of offset 2 (overlapping)
    yield b"".join(words[i] for i in rng.integers(0, len(words), 30_000))
    yield b"".join(b"%d" % i for i in range(40_000))                # > 64 KiB: 32-bit offsets, several blocks


def _payloads(rng):
    for data in _texts(rng):
        raw = bytes(cramjam.snappy.compress_raw(data))
        framed = CODEC.compress(data)
        yield data, raw
        yield data, framed
        yield data + data, framed + framed                          # concatenated streams: a second header
        # a header's int32s little-endian (Redpanda): only the magic bytes are checked
        yield data, XERIAL_MAGIC + (1).to_bytes(4, "little") * 2 + framed[16:]


def test_valid_payloads_decode_alike():
    rng = np.random.default_rng(3)
    n = 0
    for data, payload in _payloads(rng):
        if not data and not payload[16:]:
            continue
        want = _python(payload)
        assert want == (data, 0) or not data and want[1] != 0
        assert _kernel(payload) == want
        n += 1
    assert n >= 25


def test_damaged_payloads_are_refused_alike():
    """Bytes flipped, cut, added and lengths rewritten: each payload either both decoders read to the same
    bytes, or both refuse, for the same reason (damaged, or over the limit)."""
    rng = np.random.default_rng(11)
    sources = [p for _, p in _payloads(np.random.default_rng(5)) if len(p) > 20][:16]
    outcomes = set()
    for k in range(3000):
        p = bytearray(sources[k % len(sources)])
        what = k % 5
        if what == 0:
            for _ in range(int(rng.integers(1, 4))):
                p[int(rng.integers(0, len(p)))] ^= int(rng.integers(1, 256))
        elif what == 1:
            del p[int(rng.integers(1, len(p))):]
        elif what == 2:
            p += bytes(rng.integers(0, 256, int(rng.integers(1, 12)), dtype=np.uint8))
        elif what == 3:                 # a block's or the whole payload's declared size changed
            at = 16 if p[:8] == XERIAL_MAGIC else 0
            at += 4 if at else 0
            p[at] = int(rng.integers(0, 256))
        else:
            i = int(rng.integers(0, len(p)))
            p[i:i] = bytes(rng.integers(0, 256, int(rng.integers(1, 5)), dtype=np.uint8))
        want = _python(bytes(p))
        assert _kernel(bytes(p)) == want, (k, what)
        outcomes.add(want[1])
    assert outcomes == {0, frames.DECOMP_CORRUPT, frames.DECOMP_LIMIT} or outcomes == {0, frames.DECOMP_CORRUPT}


def test_the_limit_is_the_pythons():
    data = b"x" * 200_000
    for payload in (bytes(cramjam.snappy.compress_raw(data)), CODEC.compress(data)):
        for limit in (0, 199_999, 200_000):
            assert _kernel(payload, limit) == _python(payload, limit)
    assert _kernel(CODEC.compress(data), 199_999)[1] == frames.DECOMP_LIMIT


def _table(buf):
    """The batch table of a buffer (with its payloads' places)."""
    a = np.frombuffer(buf, np.uint8)
    return scan_ranges(a, np.array([0]), np.array([len(a)]))[0]


def _in_kernel(buf):
    t = _table(buf)
    return decoder.kernel_decompresses(np.asarray(t["codec"]), np.asarray(t["magic"]), np.asarray(t["payload_len"]))


def test_small_batches_decoded_by_the_kernel(monkeypatch):
    """Batches of a few records (a producer with linger.ms=0): the kernel decodes them, with the records the
    Python codec gives; a batch over `SNAPPY_KERNEL_MAX_BYTES` goes through the Python codec."""
    values = [b'{"id": %d, "name": "user-%d"}' % (i, i % 97) for i in range(3000)]
    buf = kafkafmt.encode(values=values, timestamps=list(range(3000)), compression="snappy", max_records=5)
    small = _in_kernel(buf)
    assert small.all() and len(small) == 600
    big = kafkafmt.encode(values=[bytes(np.random.default_rng(1).integers(0, 256, 20_000, dtype=np.uint8))],
                          compression="snappy")
    assert not _in_kernel(big).any()
    got = kafkafmt.decode(buf).to_arrow()
    monkeypatch.setattr(decoder, "C_CODECS", 0)
    assert got.equals(kafkafmt.decode(buf).to_arrow())
    assert got.column("value").to_pylist() == values


@pytest.mark.parametrize("raw", [False, True])
def test_damage_in_a_small_batch_is_said_alike(raw, monkeypatch):
    """A batch whose snappy payload is damaged (its CRC not checked): the same error class and place through
    the kernel and through the Python codec."""
    values = [b"value %d " % i * 20 for i in range(40)]
    buf = bytearray(kafkafmt.encode(values=values, timestamps=list(range(40)), compression="snappy",
                                    max_records=4))
    t = _table(bytes(buf))
    assert _in_kernel(bytes(buf)).all()
    start, n = int(t["payload_start"][3]), int(t["payload_len"][3])
    if raw:             # the batch's payload as librdkafka writes it: one raw block
        data = CODEC.decompress(bytes(buf[start:start + n]))
        block = bytes(cramjam.snappy.compress_raw(bytes(data)))
        assert len(block) <= n
        buf[start:start + n] = block + b"\0" * (n - len(block))
    buf[start + n // 2] ^= 0x5A
    seen = []
    for bits in (decoder.C_CODECS, 0):
        monkeypatch.setattr(decoder, "C_CODECS", bits)
        with pytest.raises(kafkafmt.KafkafmtError) as err:
            kafkafmt.decode(bytes(buf), verify_crc=None)
        seen.append((type(err.value), err.value.offset, err.value.batch_position))
    assert seen[0] == seen[1]
