"""Hostile input (issue 8): mutated buffers, decompression bombs, absurd sizes, and accounting for
every byte of a corrupted segment.

* mutation (Hypothesis): valid buffers of every magic x codec, mutated (byte flips, insertions,
  deletions, truncations, length-field rewrites, rewrites inside compressed payloads), decode
  either succeeds with a consistent result or raises a ``KafkafmtError`` with a position in the
  buffer -- never another exception;
* bombs: payloads expanding to far more than ``max_decompressed`` are stopped early with
  ``DecompressionLimitError``, in bounded time and memory (peak RSS measured), also through the
  default cap;
* absurd counts and lengths (2^31-1) in small inputs allocate nothing sized from them;
* accounting: in strict mode every byte of a corrupted segment is either decoded or lies in the
  entry the error names (at or after the end of the last good batch).

The fuzz harnesses (fuzz/, see fuzz/README.md) share this file's oracle (fuzz/kfuzz.py).
Tests marked ``xfail(strict=True)`` reproduce known findings of issue 8: they start to fail
(XPASS) when the finding is fixed -- then remove the marker.
"""
from __future__ import annotations

import gzip
import json
import os
import pathlib
import random
import struct
import subprocess
import sys
import time

import pytest

import hypothesis
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import kafkafmt  # noqa: E402
from kafkafmt.errors import (CompressionError, CorruptRecordError, DecompressionLimitError,  # noqa: E402
                             KafkafmtError)

FUZZ = pathlib.Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))
import kfuzz  # noqa: E402

kfuzz.load(instrument=False)

MB = 1 << 20
TS = 1_600_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


# ---------------------------------------------------------------------------------------------
# valid buffers to mutate

def _records(n, salt=0):
    keys = [None if i % 4 == 1 else b"key-%d" % (i + salt) for i in range(n)]
    values = [None if i % 5 == 3 else b"value-%d-" % i + b"xyz" * (i % 7) for i in range(n)]
    headers = [[] if i % 3 == 0 else [("h%d" % k, None if k == 1 else b"v" * k) for k in range(i % 3)]
               for i in range(n)]
    return keys, values, headers


def _bases():
    out = {}
    k, v, h = _records(6)
    for codec in CODECS:
        out[f"v2_{codec}"] = kafkafmt.encode(keys=k, values=v, headers=h, timestamps=[TS + i for i in range(6)],
                                             compression=codec, batch_size=150, base_offset=10)
    for magic in (0, 1):
        for codec in CODECS[:4]:
            out[f"m{magic}_{codec}"] = kafkafmt.encode(keys=k, values=v, timestamps=[TS] * 6, magic=magic,
                                                       compression=codec, batch_size=150, base_offset=3)
    out["v2_txn"] = (kafkafmt.encode(keys=k[:2], values=v[:2], timestamps=[TS] * 2, producer_id=4, producer_epoch=0,
                                     transactional=True, compression="lz4")
                     + kafkafmt.encode_control("commit", offset=2, producer_id=4, timestamp=TS)
                     + kafkafmt.record._encoder.encode_empty_batch(base_offset=3, last_offset=5, timestamp=TS))
    out["mixed"] = out["m1_gzip"] + out["v2_zstd"] + out["m0_none"]
    return out


BASES = _bases()
BASE_NAMES = sorted(BASES)


def _check_decode(buf, **kw):
    """kafkafmt.decode on buf: a consistent result or a located KafkafmtError; else a failure."""
    try:
        recs = kafkafmt.decode(buf, **kw)
    except KafkafmtError as e:
        kfuzz.check_error(e, buf)
        return e
    kfuzz.check_records(recs, buf, kw)
    return recs


# ---------------------------------------------------------------------------------------------
# mutation (Hypothesis)

INTERESTING = (0, 1, -1, -2, 7, 14, 48, 49, 61, 127, 128, 65536, (1 << 31) - 1, -(1 << 31))


@st.composite
def mutations(draw):
    kind = draw(st.sampled_from(("flip", "insert", "delete", "truncate", "length", "count", "varint", "inner",
                                 "splice")))
    return (kind, draw(st.integers(0, 1 << 30)), draw(st.sampled_from(INTERESTING)),
            draw(st.binary(min_size=1, max_size=16)))


def _apply(buf: bytearray, mutation, rng) -> bytearray:
    kind, where, value, blob = mutation
    n = len(buf)
    ents = kfuzz.entries(buf)
    if kind == "flip" and n:
        buf[where % n] ^= 1 << (where >> 20) % 8 or 0xFF
    elif kind == "insert":
        at = where % (n + 1)
        buf[at:at] = blob
    elif kind == "delete" and n:
        at = where % n
        del buf[at:at + 1 + (where >> 20) % 16]
    elif kind == "truncate":
        del buf[where % (n + 1):]
    elif kind in ("length", "count") and ents:
        pos, total, magic = ents[where % len(ents)]
        if kind == "length":
            struct.pack_into(">i", buf, pos + 8, value)
        elif magic == 2:
            struct.pack_into(">i", buf, pos + 57, value)
        else:                                               # v0/v1: the key or value length
            key_at = pos + (26 if magic == 1 else 18)
            struct.pack_into(">i", buf, key_at, value)
    elif kind == "varint" and ents:
        pos, total, magic = ents[where % len(ents)]
        if magic == 2 and buf[pos + 22] & 7 == 0:           # uncompressed v2: a record varint field
            count = struct.unpack_from(">i", buf, pos + 57)[0]
            payload = bytes(buf[pos + 61:pos + total])
            spans = kfuzz.v2_fields(payload, count)
            if spans:
                s, e, _ = spans[(where >> 8) % len(spans)]
                buf[pos + 61 + s:pos + 61 + e] = kfuzz.zigzag(value)
                struct.pack_into(">i", buf, pos + 8, len(buf) - pos - 12 - (n - pos - total))
    elif kind == "inner" and ents:
        pos, total, magic = ents[where % len(ents)]
        return bytearray(kfuzz._mutate_entry(buf, pos, total, magic, rng, _byte_mutate(rng)))
    elif kind == "splice" and len(ents) > 1:
        a, b = ents[where % len(ents)], ents[(where >> 10) % len(ents)]
        return buf[:a[0]] + buf[b[0]:b[0] + b[1]] + buf[a[0]:]
    return buf


def _byte_mutate(rng):
    def mutate(data, max_size):
        data = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            if data and rng.random() < 0.6:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif data and rng.random() < 0.5:
                del data[rng.randrange(len(data))]
            else:
                data.insert(rng.randrange(len(data) + 1), rng.randrange(256))
        return bytes(data[:max_size])
    return mutate


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(BASE_NAMES), muts=st.lists(mutations(), min_size=1, max_size=4),
       fix_crc=st.booleans(), opt=st.integers(0, 255), seed=st.integers(0, 1 << 32))
def test_mutated_buffers_decode_or_raise_kafkafmt_errors(name, muts, fix_crc, opt, seed):
    rng = random.Random(seed)
    buf = bytearray(BASES[name])
    for m in muts:
        buf = _apply(buf, m, rng)
    if fix_crc:
        kfuzz.fix_all_crcs(buf)       # so that mutations reach past the CRC check
    kw = kfuzz.decode_options(opt)
    try:
        _check_decode(bytes(buf), **kw)
    except Exception as e:
        raise AssertionError(f"{type(e).__name__}: {e}\n  input ({len(buf)} bytes, {kw}): {bytes(buf).hex()}") from e


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=400), opt=st.integers(0, 255))
def test_random_bytes(data, opt):
    _check_decode(data, **kfuzz.decode_options(opt))


@settings(max_examples=300, deadline=None)
@given(sel=st.integers(0, 255), cap=st.integers(0, 255), payload=st.binary(max_size=300))
def test_codecs_on_random_payloads(sel, cap, payload):
    kfuzz.codecs_target(bytes([sel, cap]) + payload)


@settings(max_examples=300, deadline=None)
@given(sel=st.integers(0, 255), body=st.one_of(
    st.binary(max_size=200),
    st.text(alphabet="0123456789 \n\t-+:abcdefversion_topic_id=\\#!", max_size=200).map(str.encode)))
def test_side_file_readers_on_random_bytes(sel, body):
    kfuzz.sidefiles_target(bytes([sel]) + body)


def test_seed_corpus_is_clean():
    """The fuzz targets on freshly generated seeds (no real corpus needed): no finding."""
    import seed_corpus
    seeds = list(seed_corpus.v2_logs().values()) + list(seed_corpus.legacy_logs().values())
    for buf in seeds:
        for opt in seed_corpus.OPTS:
            kfuzz.decode_target(bytes([opt]) + buf)
    for codec_id, magic, payload in seed_corpus.payloads():
        for cap in range(len(kfuzz.CAPS)):
            kfuzz.codecs_target(bytes([codec_id | ((0, 1, 2)[magic] << 3), cap]) + payload)
    for reader, data in seed_corpus.side_files():
        kfuzz.sidefiles_target(bytes([kfuzz.SIDE_NAMES.index(reader)]) + data)


# ---------------------------------------------------------------------------------------------
# bombs

import bombs  # noqa: E402  (fuzz/bombs.py: the builders)


def _hwm_reset():
    """Reset the peak RSS of this process (Linux: /proc/self/clear_refs); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _peak_growth(fn):
    """(result or exception, seconds, peak RSS growth in bytes) of fn()."""
    if not sys.platform.startswith("linux") or not _hwm_reset():
        pytest.skip("needs Linux /proc/self/clear_refs to measure peak RSS")
    base = _status("VmRSS")
    _hwm_reset()
    t0 = time.perf_counter()
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001
        out = e
    dt = time.perf_counter() - t0
    return out, dt, _status("VmHWM") - base


BOMB_SIZE = 64 * MB
CAP = 4 * MB


@pytest.fixture(scope="module")
def bomb_batches():
    one_gzip = gzip.compress(bytes(8 * MB), compresslevel=9)
    return {
        "gzip": bombs.v2_batch(bombs.gzip_bomb(BOMB_SIZE), 1, 1),
        "gzip_members": bombs.v2_batch(one_gzip * (BOMB_SIZE // (8 * MB)), 1, 1),
        "zstd_content_size": bombs.v2_batch(bombs.zstd_bomb(BOMB_SIZE, True), 1, 4),
        "zstd_streamed": bombs.v2_batch(bombs.zstd_bomb(BOMB_SIZE, False), 1, 4),
        "lz4": bombs.v2_batch(bombs.lz4_bomb(BOMB_SIZE), 1, 3),
        "snappy": bombs.v2_batch(kafkafmt.codecs.get_codec("snappy").compress(bytes(32 * MB)), 1, 2),
        "legacy_gzip": bombs.legacy_wrapper(bombs.gzip_bomb(BOMB_SIZE), 1),
        "legacy_lz4": bombs.legacy_wrapper(bombs.lz4_bomb(BOMB_SIZE), 3, magic=0),
    }


@pytest.mark.parametrize("kind", ["gzip", "gzip_members", "zstd_content_size", "zstd_streamed", "lz4", "snappy",
                                  "legacy_gzip", "legacy_lz4"])
@pytest.mark.parametrize("through", ["max_decompressed", "default_cap"])
def test_decompression_bomb_is_stopped(bomb_batches, kind, through, monkeypatch):
    buf = bomb_batches[kind]
    assert len(buf) < 6 * MB
    if through == "default_cap":    # the default cap is the same code path: a smaller default here
        monkeypatch.setattr(kafkafmt.codecs.base, "DEFAULT_MAX_DECOMPRESSED", CAP)
        kw = {}
    else:
        kw = dict(max_decompressed=CAP)
    out, seconds, growth = _peak_growth(lambda: kafkafmt.decode(buf, **kw))
    assert isinstance(out, DecompressionLimitError), repr(out)
    assert out.position == 0 and out.offset is not None
    assert seconds < 2, f"{seconds:.2f}s to stop a bomb"
    # output is stopped at the cap: at most a few times the cap of memory, never the bomb's size
    assert growth < 3 * CAP + 24 * MB, f"peak RSS grew by {growth / MB:.0f} MB (cap {CAP / MB:.0f} MB)"


def test_default_cap_is_at_most_512_mib():
    assert kafkafmt.codecs.DEFAULT_MAX_DECOMPRESSED <= 512 * MB


def test_snappy_claimed_size_allocates_nothing():
    claim = bombs.v2_batch(bombs.snappy_claim(64 * MB), 1, 2)        # 70 bytes claiming 64 MiB
    out, seconds, growth = _peak_growth(lambda: kafkafmt.decode(claim, max_decompressed=128 * MB))
    assert isinstance(out, CompressionError), repr(out)
    assert growth < 16 * MB, f"a {len(claim)}-byte input made peak RSS grow by {growth / MB:.0f} MB"


def test_lz4_bomb_peak_is_about_the_cap(bomb_batches):
    """Through kafkafmt.codecs (v0/v1 wrappers; v2 batches when liblz4 is not found)."""
    cap = 32 * MB
    out, _, growth = _peak_growth(lambda: kafkafmt.decode(bomb_batches["legacy_lz4"], max_decompressed=cap))
    assert isinstance(out, DecompressionLimitError)
    assert growth < 1.5 * cap, f"peak RSS grew by {growth / MB:.0f} MB for a {cap / MB:.0f} MB cap"


def test_many_gzip_members_linear_time():
    gz = kafkafmt.codecs.get_codec("gzip")
    member = gzip.compress(b"")

    def seconds(mb):
        payload = member * int(mb * MB / len(member))
        t0 = time.perf_counter()
        gz.decompress(payload)
        return time.perf_counter() - t0

    small, large = seconds(0.25), seconds(1)           # 4x the members
    assert large < 10 * small + 0.05, f"0.25 MB of members: {small:.2f}s, 1 MB: {large:.2f}s (quadratic)"


# ---------------------------------------------------------------------------------------------
# absurd counts and lengths: nothing allocated from them

_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import bombs, kafkafmt, zlib, zstandard
def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmPeak:"):
            return int(line.split()[1]) // 1024
z = lambda b: zstandard.ZstdCompressor().compress(b)
BIG = (1 << 31) - 1
cases = {
    "count_zstd": bombs.v2_batch(z(bombs.record() * 10), BIG, 4),
    "count_gzip": bombs.v2_batch(zlib.compress(bombs.record() * 10), BIG, 1),
    "count_plain": bombs.v2_batch(bombs.record() * 10, BIG, 0),
    "header_count_plain": bombs.v2_batch(bombs.record(headers=bombs.zz(BIG) + b"\x02h\x00"), 1, 0),
    "header_count_zstd": bombs.v2_batch(z(bombs.record(headers=bombs.zz(BIG) + b"\x02h\x00")), 1, 4),
    "key_len_plain": bombs.v2_batch(bombs.record(key=bombs.zz(BIG) + b"kk"), 1, 0),
    "key_len_zstd": bombs.v2_batch(z(bombs.record(key=bombs.zz(BIG) + b"kk")), 1, 4),
    "value_len_gzip": bombs.v2_batch(zlib.compress(bombs.record(value=b"v") [:-3] + bombs.zz(BIG) + b"vv\x00"), 1, 1),
}
kafkafmt.decode(bombs.v2_batch(bombs.record(), 1, 0))      # warm up
out = {}
for name, buf in cases.items():
    before = vm()
    try:
        kafkafmt.decode(buf)
        res = "decoded"
    except Exception as e:
        res = type(e).__name__
    out[name] = [res, vm() - before, len(buf)]
print(json.dumps(out))
"""


def test_absurd_counts_and_lengths_allocate_nothing():
    """record count / header count / key length of 2^31-1 in small inputs (plain and compressed):
    CorruptRecordError, and peak virtual memory (reservations included) does not move."""
    if not sys.platform.startswith("linux"):
        pytest.skip("VmPeak from /proc")
    res = subprocess.run([sys.executable, "-c", _CHILD, str(FUZZ)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for name, (outcome, vm_growth_mb, size) in out.items():
        assert outcome == "CorruptRecordError", (name, outcome)
        assert vm_growth_mb < 32, f"{name}: a {size}-byte input grew peak virtual memory by {vm_growth_mb} MB"


_RATIO_CHILD = r"""
import json, os, sys
import kafkafmt
def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmPeak:"):
            return int(line.split()[1]) // 1024
first = kafkafmt.encode(keys=[None], values=[bytes(32 << 20)], timestamps=[0], compression="gzip",
                        compression_level=9)
rest = b"".join(kafkafmt.encode(keys=[None], values=[os.urandom(2000)], timestamps=[0], base_offset=1 + i,
                                compression="gzip") for i in range(1000))
before = vm()
try:
    kafkafmt.decode(first + rest)
    res = "decoded"
except BaseException as e:
    res = type(e).__name__
print(json.dumps([res, vm() - before, len(first + rest)]))
"""


def test_output_reservation_is_bounded_by_the_input():
    """One very compressible gzip batch (32 MiB of zeros in 33 KB) followed by 2 MB of poorly
    compressible ones: the decoder must not reserve ratio x the rest of the input (2.2 GB here;
    with 200 MiB and 2 MB of zstd before the kernel decompressed zstd: MemoryError).
    (Batches the kernel decompresses itself -- lz4, zstd -- are reserved for from their stored
    size, capped; this is the path of the Python codecs: gzip, snappy, v0/v1 wrappers.)"""
    if not sys.platform.startswith("linux"):
        pytest.skip("VmPeak from /proc")
    res = subprocess.run([sys.executable, "-c", _RATIO_CHILD], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    outcome, vm_growth_mb, size = json.loads(res.stdout.strip().splitlines()[-1])
    assert outcome == "decoded"
    assert vm_growth_mb < 1024, f"{size}-byte input: peak virtual memory grew by {vm_growth_mb} MB"


# ---------------------------------------------------------------------------------------------
# accounting: nothing silently lost in strict mode

def _account(buf, **kw):
    """Decode buf in strict mode; assert that every byte is decoded or named by the error."""
    try:
        recs = kafkafmt.decode(buf, **kw)
    except KafkafmtError as e:
        kfuzz.check_error(e, buf)
        kfuzz.check_accounting(buf, e, kw)
        return e
    kfuzz.check_records(recs, buf, kw)
    return recs


CORRUPTIONS = ("flip", "flip_fixcrc", "length", "length_fixcrc", "count_fixcrc", "zero_range", "garbage_between",
               "truncate", "two_batches_fixcrc")


def _corrupt(buf: bytes, kind: str, rng: random.Random) -> bytes:
    b = bytearray(buf)
    ents = kfuzz.entries(b)
    if not ents:
        return bytes(b)
    pos, total, magic = rng.choice(ents)
    if kind.startswith("flip"):
        at = rng.randrange(pos, pos + total)
        b[at] ^= 1 << rng.randrange(8)
    elif kind.startswith("length"):
        struct.pack_into(">i", b, pos + 8, rng.choice((total - 12 + rng.randint(1, 40), total - 12 - rng.randint(1, 20),
                                                       13, 0, -1, (1 << 31) - 1)))
    elif kind.startswith("count"):
        if magic == 2:
            c = struct.unpack_from(">i", b, pos + 57)[0]
            struct.pack_into(">i", b, pos + 57, rng.choice((c + 1, c - 1, 0, -1, (1 << 31) - 1)))
        else:
            b[pos + 16] = 7
    elif kind == "zero_range":
        at, n = rng.randrange(pos, pos + total), rng.randint(1, 64)
        b[at:at + n] = bytes(len(b[at:at + n]))
    elif kind == "garbage_between":
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 30)))
    elif kind == "truncate":
        del b[rng.randrange(pos, pos + total):]
    elif kind == "two_batches_fixcrc" and len(ents) > 2:
        # a record-level fault in one batch, a framing fault in a later one
        i = rng.randrange(len(ents) - 1)
        p1, t1, m1 = ents[i]
        p2, _, _ = ents[rng.randrange(i + 1, len(ents))]
        struct.pack_into(">i", b, p2 + 8, 5)
        b[p1 + t1 - 1] ^= 0x40
        kfuzz.fix_crc(b, p1, t1, m1)
        return bytes(b)
    if kind.endswith("fixcrc"):
        kfuzz.fix_all_crcs(b)
    return bytes(b)


def _generated_segment():
    k, v, h = _records(40, salt=7)
    return (BASES["m1_gzip"] + kafkafmt.encode(keys=k, values=v, headers=h, timestamps=[TS] * 40, compression="zstd",
                                               batch_size=300, base_offset=100)
            + kafkafmt.encode(keys=k, values=v, timestamps=[TS] * 40, batch_size=250, base_offset=200)
            + BASES["v2_txn"])



def _accounting_params():
    out = []
    for kind in CORRUPTIONS:
        for verify in (True, False):
            # without a CRC check (or with CRCs recomputed), a rewritten length or count leaves a batch
            # whose records are bad before an entry whose framing is bad (issue 8: the error named
            # the later entry until scan errors were deferred behind the kernel)
            out.append(pytest.param(kind, verify, id=f"{kind}-crc{int(verify)}"))
    return out


@pytest.mark.parametrize("kind, verify", _accounting_params())
def test_accounting_generated_segment(kind, verify):
    seg = _generated_segment()
    for seed in range(40):
        bad = _corrupt(seg, kind, random.Random(seed))
        try:
            _account(bad, verify_crc=verify)
        except AssertionError as e:
            raise AssertionError(f"{kind} seed {seed}: {e}\n  input: {bad.hex()}") from e


def _real_segments(root):
    files = sorted(p for p in pathlib.Path(root).rglob("*") if p.name.endswith((".log", ".log.bin")))
    return [p for p in files if 0 < p.stat().st_size <= 400_000]


@pytest.mark.parametrize("kind, verify", _accounting_params())
def test_accounting_real_segments(real_corpus, kind, verify):
    files = _real_segments(real_corpus)
    assert files
    for p in files:
        buf = p.read_bytes()
        for seed in range(6):
            bad = _corrupt(buf, kind, random.Random(seed))
            try:
                _account(bad, verify_crc=verify)
            except AssertionError as e:
                raise AssertionError(f"{p.relative_to(real_corpus)} {kind} seed {seed}: {e}") from e


def test_first_bad_batch_is_reported():
    a = kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=0)
    b = bytearray(kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=1))
    c = bytearray(kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=2))
    b[61 + 4] = 100                      # key length 50 in a 19-byte record
    kfuzz.fix_crc(b, 0, len(b), 2)
    struct.pack_into(">i", c, 8, 5)      # entry size 5: framing error
    with pytest.raises(CorruptRecordError) as ei:
        kafkafmt.decode(a + bytes(b) + bytes(c))
    assert len(a) <= ei.value.position < len(a) + len(b)


def test_framing_error_names_the_right_size():
    a = kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=0)
    c = bytearray(kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=1))
    struct.pack_into(">i", c, 8, 5)
    with pytest.raises(CorruptRecordError, match="entry size 5 "):
        kafkafmt.decode(a + bytes(c))


# ---------------------------------------------------------------------------------------------
# side files

@pytest.mark.parametrize("reader, data", [
    ("read_leader_epoch_checkpoint", b"9" * 5000 + b"\n"),
    ("read_offset_checkpoint", b"0\n1\nt 0 " + b"9" * 5000 + b"\n"),
    ("read_partition_metadata", b"version: " + b"1" * 5000 + b"\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"),
], ids=["leader_epoch_checkpoint", "offset_checkpoint", "partition_metadata"])
def test_side_files_huge_integers(reader, data):
    with pytest.raises(CorruptRecordError):
        getattr(kafkafmt.log.sidefiles, reader)(data)


# ---------------------------------------------------------------------------------------------
# the kernel's C decompressors (lz4, zstd) and kafkafmt.codecs agree

def _lz4_v2(mutate_frame):
    import lz4.frame
    from kafkafmt.codecs.lz4 import header_checksum
    raw = kafkafmt.encode(keys=[b"k"] * 3, values=[b"value" * 20] * 3, timestamps=[TS] * 3)[61:]
    frame = bytearray(lz4.frame.compress(raw, store_size=True, block_linked=False))
    mutate_frame(frame, header_checksum, len(raw))
    return bombs.v2_batch(bytes(frame), 3, 3)


def _both_paths(buf):
    """(outcome with the kernel's C codecs, outcome with kafkafmt.codecs): records or error class."""
    dec = sys.modules["kafkafmt.record._decoder"]
    if not getattr(dec, "C_CODECS", 0):
        pytest.skip("the kernel decompresses nothing itself here (liblz4/libzstd not found)")
    out = []
    for c_codecs in (dec.C_CODECS, 0):
        saved, dec.C_CODECS = dec.C_CODECS, c_codecs
        try:
            r = kafkafmt.decode(buf)
            out.append(r.value.to_pylist())
        except KafkafmtError as e:
            out.append(type(e).__name__)
        finally:
            dec.C_CODECS = saved
    return out


def _lying_content_size(frame, hc, n):
    struct.pack_into("<Q", frame, 6, n + 1000)
    frame[14] = hc(frame[4:14])


def _huge_content_size(frame, hc, n):
    struct.pack_into("<Q", frame, 6, 1 << 40)
    frame[14] = hc(frame[4:14])


def _wrong_header_checksum(frame, hc, n):
    good, broken = hc(frame[4:14]), hc(frame[4:14], broken=True)
    frame[14] = next(v for v in range(256) if v not in (good, broken))


@pytest.mark.parametrize("mutate", [_lying_content_size, _huge_content_size, _wrong_header_checksum],
                         ids=["lying_content_size", "content_size_over_cap", "wrong_header_checksum"])
def test_lz4_frame_header_checked_by_both_paths(mutate):
    with_c, with_python = _both_paths(_lz4_v2(mutate))
    assert with_c == with_python


@pytest.mark.parametrize("codec, case", [
    (codec, case)
    for codec in ("lz4", "zstd")
    for case in ("valid", "truncated", "trailing_garbage", "two_frames", "skippable_first")])
def test_c_and_python_decompression_agree(codec, case):
    import lz4.frame
    import zstandard
    raw = kafkafmt.encode(keys=[b"k"] * 4, values=[b"value" * 30] * 4, timestamps=[TS] * 4)[61:]
    comp = (lambda b: lz4.frame.compress(b, block_linked=False)) if codec == "lz4" else \
        (lambda b: zstandard.ZstdCompressor(write_content_size=False).compress(b))
    half = len(raw) // 2
    payload = {"valid": comp(raw), "truncated": comp(raw)[:-3], "trailing_garbage": comp(raw) + b"\x01\x02\x03",
               "two_frames": comp(raw[:half]) + comp(raw[half:]),
               "skippable_first": struct.pack("<II", 0x184D2A50, 3) + b"abc" + comp(raw)}[case]
    buf = bombs.v2_batch(payload, 4, {"lz4": 3, "zstd": 4}[codec])
    with_c, with_python = _both_paths(buf)
    assert with_c == with_python


# ---------------------------------------------------------------------------------------------
# salvage mode: decoded batches + reported skipped ranges cover the whole file exactly

def _salvage_cover(tmp_path, buf, name, how="read_log_dir"):
    import warnings
    folder = tmp_path / f"{name}-0"
    folder.mkdir()
    seg = folder / "00000000000000000000.log"
    seg.write_bytes(buf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "read_segment":
            recs = kafkafmt.read_segment(str(seg), errors="salvage")
        else:
            recs = kafkafmt.read._readers.read_log_dir(str(folder), errors="salvage")
    spans = [(int(p), int(p) + int(s), "batch") for p, s in zip(recs.batches.position, recs.batches.size)]
    spans += [(int(r["start"]), int(r["end"]), r.get("reason", "?")) for r in recs.report
              if "start" in r and os.path.abspath(str(r.get("file"))) == os.path.abspath(str(seg))]
    spans.sort()
    at = 0
    for start, end, what in spans:
        assert start == at, f"{'gap' if start > at else 'overlap'} at byte {at}: next range [{start}, {end}) " \
                            f"({what}); ranges: {spans}"
        assert end > start, f"empty range {start} ({what})"
        at = end
    assert at == len(buf), f"ranges end at {at}, the file at {len(buf)}: {spans}"
    return recs


def _salvage_available():
    return hasattr(kafkafmt, "logdir") or __import__("importlib").util.find_spec("kafkafmt.read._readers") is not None


def _read_segment_salvages():
    import inspect
    return "errors" in inspect.signature(kafkafmt.read_segment).parameters


SALVAGE_READERS = ["read_log_dir"] + (["read_segment"] if _read_segment_salvages() else [])


def _salvage_params(kinds):
    return [pytest.param(kind, how, id=f"{kind}-{how}") for kind in kinds for how in SALVAGE_READERS]


@pytest.mark.skipif(not _salvage_available(), reason="kafkafmt.read._readers (salvage mode) not present")
@pytest.mark.parametrize("kind, how", _salvage_params(CORRUPTIONS + ("none",)))
def test_salvage_accounts_for_every_byte_generated(tmp_path, kind, how):
    import kafkafmt.read._readers  # noqa: F401
    seg = _generated_segment()
    for seed in range(12):
        bad = seg if kind == "none" else _corrupt(seg, kind, random.Random(seed))
        sub = tmp_path / f"s{seed}"
        sub.mkdir()
        try:
            _salvage_cover(sub, bad, "t", how)
        except AssertionError as e:
            raise AssertionError(f"{kind} seed {seed}: {e}\n  input: {bad.hex()}") from e


@pytest.mark.skipif(not _salvage_available(), reason="kafkafmt.read._readers (salvage mode) not present")
@pytest.mark.parametrize("kind, how", _salvage_params(CORRUPTIONS))
def test_salvage_accounts_for_every_byte_real(tmp_path, real_corpus, kind, how):
    import kafkafmt.read._readers  # noqa: F401
    for i, p in enumerate(_real_segments(real_corpus)):
        buf = p.read_bytes()
        for seed in range(3):
            bad = _corrupt(buf, kind, random.Random(seed))
            sub = tmp_path / f"f{i}s{seed}"
            sub.mkdir()
            try:
                _salvage_cover(sub, bad, "t", how)
            except AssertionError as e:
                raise AssertionError(f"{p.relative_to(real_corpus)} {kind} seed {seed}: {e}") from e


# ---------------------------------------------------------------------------------------------
# resynchronization (truncated-tail check of decode, salvage mode): bounded CRC work

def _fake_headers(n):
    """A 200 MiB size field running past the end, then a plausible v2 header (size n/2, no
    records, CRC wrong) every 64 bytes: each candidate costs a CRC over n/2 bytes."""
    hdr = struct.pack(">qiibIhiqqqhii", 0, n // 2, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 0)
    return struct.pack(">qi", 0, 200 << 20) + (hdr + bytes(64 - len(hdr))) * (n // 64)


def test_resync_work_is_bounded():
    buf = _fake_headers(1 << 20)
    t0 = time.perf_counter()
    recs = kafkafmt.decode(buf)
    seconds = time.perf_counter() - t0
    assert recs.tail == "truncated" and recs.trailing_bytes == len(buf)
    assert seconds < 0.1, f"decode of {len(buf)} bytes took {seconds:.2f}s"


@pytest.mark.skipif(not _salvage_available(), reason="kafkafmt.read._readers (salvage mode) not present")
def test_salvage_resync_work_is_bounded(tmp_path):
    buf = bytearray(_fake_headers(1 << 20))
    struct.pack_into(">i", buf, 8, 20)      # a corrupt first entry instead of a truncated one
    t0 = time.perf_counter()
    _salvage_cover(tmp_path, bytes(buf), "t")
    seconds = time.perf_counter() - t0
    assert seconds < 0.5, f"salvage read of {len(buf)} bytes took {seconds:.2f}s"


@pytest.mark.parametrize("start", [-16, "past_end"])
def test_decode_start_out_of_range(start):
    buf = kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0]) * 2
    start = len(buf) + 5 if start == "past_end" else start   # -16: inside the bytes object's header
    with pytest.raises(ValueError) as ei:
        kafkafmt.decode(buf, start=start)
    assert not isinstance(ei.value, KafkafmtError), f"an argument error, not {ei.value!r}"


@pytest.mark.skipif(not _read_segment_salvages(), reason="read_segment(errors=) not present")
def test_read_segment_salvage_never_raises(tmp_path):
    a = kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=0)
    b = bytearray(kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=1))
    c = bytearray(kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=2))
    b[61 + 4] = 100
    kfuzz.fix_crc(b, 0, len(b), 2)
    struct.pack_into(">i", c, 8, 5)
    recs = _salvage_cover(tmp_path, a + bytes(b) + bytes(c), "t", "read_segment")
    assert len(recs) == 1


@pytest.mark.skipif(not _salvage_available(), reason="kafkafmt.read._readers (salvage mode) not present")
def test_read_log_dir_salvage_reports_the_whole_zero_tail(tmp_path):
    a = kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=0)
    b = kafkafmt.encode(keys=[b"k"], values=[b"v" * 10], timestamps=[0], base_offset=1)
    buf = bytearray(a + b + bytes(200))
    struct.pack_into(">i", buf, 8, len(a) + len(b) + 50 - 12)   # entry 0 claims to end inside the zeros
    _salvage_cover(tmp_path, bytes(buf), "t", "read_log_dir")
