"""Shared parts of the kafkafmt fuzz harnesses: the targets (with their oracles), the
structure-aware mutator and the Kafka framing helpers they use.

A *target* takes the fuzz input (bytes) and returns normally when kafkafmt behaved: it either
decoded the input (and the result passed the consistency checks) or raised an error of kafkafmt's
own hierarchy (``KafkafmtError``) carrying a sane position. Anything else -- another exception type
(``MemoryError`` included), a failed check (``AssertionError``), a crash or a sanitizer report -- is
a finding.

Input layouts (first bytes select options, the rest is the data):

* ``decode`` / ``v2`` / ``legacy``: ``opts(1) + buffer``; opts bits: 0-1 verify_crc (0 True,
  1 False, 2 None, 3 True), 2 include_control, 3 keys=False, 4 values=False, 5 headers=False,
  6 max_decompressed 64 KiB (else 4 MiB), 7 chunk_bytes 256 (else the default).
* ``codecs``: ``sel(1) + cap(1) + payload``; sel: bits 0-2 codec id (5-7: undefined codecs),
  bits 3-4 magic (0, 1, 2, 2); cap: index into ``CAPS``.
* ``salvage``: as ``decode`` (the log buffer becomes a one-segment partition folder read with
  ``read_log_dir(errors="salvage")``, or with ``read_segment(errors="salvage")`` when opts bit 7 is set).
* ``sidefiles``: ``sel(1) + file``; sel % len(SIDE_READERS) picks the reader, sel >> 6 the
  bytes-like type handed over (bytes, bytearray, memoryview).

Checks can be switched off while a known finding is being fixed: ``KFUZZ_SKIP=accounting,...``
(ids: ``accounting``, ``differential``, ``arrow``, ``monotonic``, ``cdiff`` -- the kernel's C
lz4/zstd decompression against kafkafmt.codecs, when the decoder has them; ``cdiff_hc``
tolerates lz4 frames with a wrong header checksum that only the C path accepts, ``cdiff_lz4size``
those whose content size field is wrong, ``cdiff_zstd`` zstd frames that the system's libzstd
(kernel) and python-zstandard's bundled one judge differently).
"""
from __future__ import annotations

import os
import random
import struct
import sys
import zlib

# third-party modules first, so that instrument_imports() only instruments kafkafmt
import numpy as np  # noqa: F401
import cramjam  # noqa: F401
import lz4.frame  # noqa: F401
import zstandard  # noqa: F401
try:
    import isal.isal_zlib  # noqa: F401  (imported before instrumentation)
except ImportError:  # pragma: no cover
    pass
try:
    import pyarrow  # noqa: F401
except ImportError:  # pragma: no cover
    pyarrow = None

kafkafmt = errors = codecs = sidefiles = _crc32c = None
SKIP = set(filter(None, os.environ.get("KFUZZ_SKIP", "").split(",")))


def load(instrument: bool):
    """Import kafkafmt (under atheris' bytecode instrumentation when ``instrument``)."""
    if instrument:
        import atheris
        with atheris.instrument_imports(include=["kafkafmt"]):
            _import()
    else:
        _import()
    if os.environ.get("KFUZZ_VERBOSE"):
        print(f"kafkafmt from {os.path.dirname(kafkafmt.__file__)}; "
              f"native: {kafkafmt._native.scan.__file__}", file=sys.stderr)


def _import():
    global kafkafmt, errors, codecs, sidefiles, _crc32c
    import kafkafmt as k
    import kafkafmt._native.scan
    import kafkafmt.codecs
    import kafkafmt.errors
    import kafkafmt.log.sidefiles
    kafkafmt, errors, codecs, sidefiles = k, k.errors, k.codecs, k.log.sidefiles
    _crc32c = k._native.scan.crc32c


# ---------------------------------------------------------------------------------------------
# framing helpers (no kafkafmt code: used to build and repair inputs)

V2_HEADER = 61
LOG_OVERHEAD = 12


def crc32c(data) -> int:
    return int(_crc32c(np.frombuffer(bytes(data), np.uint8)))


def entries(buf, start=0):
    """(position, total size, magic) of the entries whose framing is plausible, from ``start``."""
    out = []
    pos, n = start, len(buf)
    while pos + 17 <= n:
        size = struct.unpack_from(">i", buf, pos + 8)[0]
        if size < 14 or pos + 12 + size > n:
            break
        out.append((pos, 12 + size, buf[pos + 16]))
        pos += 12 + size
    return out


def fix_crc(buf: bytearray, pos: int, total: int, magic: int) -> None:
    end = pos + total
    if magic == 2 and total >= V2_HEADER:
        struct.pack_into(">I", buf, pos + 17, crc32c(buf[pos + 21:end]))
    elif magic in (0, 1) and total >= 26:
        struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16:end])) & 0xFFFFFFFF)


def fix_all_crcs(buf: bytearray, start=0) -> None:
    for pos, total, magic in entries(buf, start):
        fix_crc(buf, pos, total, magic)


def zigzag(v: int) -> bytes:
    """Kafka varint (zigzag) of any int (longer than 10 bytes for huge values, on purpose)."""
    u = (v << 1) ^ (v >> 127) if v < 0 else v << 1
    u &= (1 << 128) - 1
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def read_varint(buf, p, end):
    """(value, next position) of a zigzag varint, or None if it does not end before ``end``."""
    u = shift = 0
    while p < end and shift < 70:
        b = buf[p]
        p += 1
        u |= (b & 0x7F) << shift
        if not b & 0x80:
            return (u >> 1) ^ -(u & 1), p
        shift += 7
    return None


def v2_fields(payload: bytes, count: int, limit=64):
    """Spans (start, end, kind) of the varint fields of the first records of a v2 records blob,
    parsed leniently (stops at the first field that does not parse)."""
    spans = []
    p, end = 0, len(payload)
    for _ in range(min(count, limit)):
        r = read_varint(payload, p, end)
        if r is None:
            break
        length, q = r
        spans.append((p, q, "length"))
        rend = min(end, q + max(length, 0))
        p = q + 1                                          # attributes
        for kind in ("ts_delta", "offset_delta"):
            r = read_varint(payload, p, rend)
            if r is None:
                return spans
            spans.append((p, r[1], kind))
            p = r[1]
        for kind in ("key_len", "value_len"):
            r = read_varint(payload, p, rend)
            if r is None:
                return spans
            spans.append((p, r[1], kind))
            p = r[1] + max(r[0], 0)
        r = read_varint(payload, p, rend)
        if r is None:
            return spans
        spans.append((p, r[1], "header_count"))
        p = r[1]
        for _h in range(min(max(r[0], 0), 8)):
            for kind in ("header_key_len", "header_value_len"):
                r = read_varint(payload, p, rend)
                if r is None:
                    return spans
                spans.append((p, r[1], kind))
                p = r[1] + max(r[0], 0)
        p = rend
    return spans


INTERESTING = (0, 1, -1, -2, 2, 7, 14, 48, 49, 60, 61, 127, 128, 255, 256, 4096, 65535, 65536,
               (1 << 20), (1 << 28), (1 << 30), (1 << 31) - 1, -(1 << 31), (1 << 31), (1 << 32) - 1,
               (1 << 62), -(1 << 63), (1 << 63) - 1)


# ---------------------------------------------------------------------------------------------
# options

CHUNK_SMALL = 256


def decode_options(opt: int) -> dict:
    return dict(
        verify_crc=(True, False, None, True)[opt & 3],
        include_control=bool(opt & 4),
        keys=not opt & 8,
        values=not opt & 16,
        headers=not opt & 32,
        max_decompressed=(64 << 10) if opt & 64 else (4 << 20),
        chunk_bytes=CHUNK_SMALL if opt & 128 else (1 << 20),
    )


# ---------------------------------------------------------------------------------------------
# oracles

class Finding(AssertionError):
    """A check failed (kafkafmt returned something inconsistent)."""


def check(cond, msg):
    if not cond:
        raise Finding(msg)


def check_error(e, buf):
    check(isinstance(e, errors.CorruptRecordError), f"{type(e).__name__} is not a CorruptRecordError")
    check(e.position is not None, f"{type(e).__name__} without a position: {e}")
    check(0 <= e.position <= len(buf), f"position {e.position} outside the buffer ({len(buf)} bytes): {e}")


def _binary_ok(col, n, name):
    off = np.asarray(col.offsets)
    check(len(off) == n + 1, f"{name}: {len(off)} offsets for {n} rows")
    if n:
        check(int(off[0]) == 0 and bool((np.diff(off.astype(np.int64)) >= 0).all()), f"{name}: offsets not monotonic")
        check(int(off[-1]) <= len(np.asarray(col.data)), f"{name}: offsets past the data")
        if col.validity is not None:
            check(len(np.asarray(col.validity)) * 8 >= n, f"{name}: validity too short")
            nulls = np.asarray(col.is_null())
            lens = np.diff(off.astype(np.int64))
            check(not bool((lens[nulls] != 0).any()), f"{name}: a null spans bytes")


def check_records(recs, buf, kw):
    n = len(recs)
    for name in ("offset", "timestamp", "timestamp_type", "batch_index"):
        check(len(np.asarray(getattr(recs, name))) == n, f"{name}: length differs from {n}")
    for name, option in (("key", "keys"), ("value", "values"), ("headers", "headers")):
        # a column not asked for is absent, never null or empty
        check((name in recs.columns) == kw.get(option, True), f"{name}: present={name in recs.columns} although "
                                                               f"{option}={kw.get(option, True)}")
    if kw.get("keys", True):
        _binary_ok(recs.key, n, "key")
    if kw.get("values", True):
        _binary_ok(recs.value, n, "value")
    if kw.get("headers", True):
        h = recs.headers
        hoff = np.asarray(h.offsets)
        check(len(hoff) == n + 1, "headers: offsets length")
        if n:
            check(bool((np.diff(hoff.astype(np.int64)) >= 0).all()), "headers: offsets not monotonic")
            check(int(hoff[-1]) == len(h.key) == len(h.value), "headers: offsets do not match the header rows")
    b = recs.batches
    nb = len(b)
    pos = np.asarray(b.position, np.int64)
    size = np.asarray(b.size, np.int64)
    check(recs.valid_bytes + recs.trailing_bytes == len(buf), "valid_bytes + trailing_bytes != input length")
    if nb:
        check(int(pos[0]) == 0, "first batch not at position 0")
        check(bool((pos[1:] == pos[:-1] + size[:-1]).all()), "batches not contiguous")
        check(int(pos[-1] + size[-1]) == recs.valid_bytes, "valid_bytes is not the end of the last batch")
    else:
        check(recs.valid_bytes == 0, "valid_bytes > 0 without batches")
    if recs.trailing_bytes:
        tail = bytes(buf[recs.valid_bytes:])
        check(recs.tail in ("truncated", "zeros"), f"trailing bytes with tail {recs.tail!r}")
        if recs.tail == "zeros":
            check(not any(tail), "tail 'zeros' holds non-zero bytes")
        else:
            check(len(tail) < 12 or struct.unpack_from(">i", tail, 8)[0] > len(tail) - 12,
                  "tail 'truncated' but the entry fits")
    bi = np.asarray(recs.batch_index, np.int64)
    if n:
        check(bool((bi >= 0).all() and (bi < nb).all()), "batch_index out of range")
        check(bool((np.diff(bi) >= 0).all()), "batch_index not sorted")
    # nothing dropped: every declared record is a row (data) or a control row
    per_batch = np.bincount(bi, minlength=nb) if nb else np.zeros(0, np.int64)
    ctrl_bi = np.asarray(recs.controls.batch_index, np.int64)
    per_ctrl = np.bincount(ctrl_bi, minlength=nb) if nb else np.zeros(0, np.int64)
    is_ctrl = np.asarray(b.is_control, bool)
    counts = np.asarray(b.record_count, np.int64)
    inc = kw.get("include_control", False)
    for i in range(nb):
        got = int(per_ctrl[i]) if is_ctrl[i] else int(per_batch[i])
        check(got == counts[i], f"batch {i}: {got} records decoded, record_count {counts[i]}")
        if is_ctrl[i] and inc:
            check(int(per_batch[i]) == counts[i], f"control batch {i}: rows missing with include_control")
        if not is_ctrl[i]:
            check(int(per_ctrl[i]) == 0, f"data batch {i} produced control rows")


def same_records(a, b, kw, what):
    check(len(a) == len(b), f"{what}: {len(a)} != {len(b)} records")
    check(np.array_equal(np.asarray(a.offset), np.asarray(b.offset)), f"{what}: offsets differ")
    check(np.array_equal(np.asarray(a.timestamp), np.asarray(b.timestamp)), f"{what}: timestamps differ")
    if kw.get("keys", True):
        check(a.key.to_pylist() == b.key.to_pylist(), f"{what}: keys differ")
    if kw.get("values", True):
        check(a.value.to_pylist() == b.value.to_pylist(), f"{what}: values differ")
    if kw.get("headers", True):
        check(a.headers.to_pylist() == b.headers.to_pylist(), f"{what}: headers differ")


def _decode_python_codecs(buf, kw):
    """decode with every codec run by kafkafmt.codecs (not by the kernel's C decompressors)."""
    dec = sys.modules["kafkafmt.record._decoder"]
    saved = dec.C_CODECS
    dec.C_CODECS = 0
    try:
        return kafkafmt.decode(buf, **kw)
    except errors.KafkafmtError as e:
        return e
    finally:
        dec.C_CODECS = saved


def _has_c_codecs():
    return bool(getattr(sys.modules.get("kafkafmt.record._decoder"), "C_CODECS", 0))


def decode_target(data: bytes):
    if not data:
        return
    kw = decode_options(data[0])
    buf = data[1:]
    try:
        recs = kafkafmt.decode(buf, **kw)
    except errors.KafkafmtError as e:
        check_error(e, buf)
        if "accounting" not in SKIP:
            check_accounting(buf, e, kw)
        if "cdiff" not in SKIP and _has_c_codecs():
            ref = _decode_python_codecs(buf, kw)
            if not isinstance(ref, errors.KafkafmtError):
                raise Finding(f"C decompression fails ({e!r}) where kafkafmt.codecs decodes {len(ref)} records")
        return
    check_records(recs, buf, kw)
    if "cdiff" not in SKIP and _has_c_codecs():
        ref = _decode_python_codecs(buf, kw)
        if isinstance(ref, errors.KafkafmtError):
            if "cdiff_hc" in SKIP and "headerChecksum" in str(ref):
                return      # the kernel's lz4 does not check the frame header checksum (known)
            if "cdiff_lz4size" in SKIP and ("frameSize" in str(ref) or "lz4: payload decompresses to" in str(ref)):
                return      # ... nor the frame's content size field (known)
            if "cdiff_zstd" in SKIP and "zstd" in str(ref) and "corruption" in str(ref).lower():
                return      # the system's libzstd (kernel) accepts frames python-zstandard's rejects
            raise Finding(f"C decompression decodes {len(recs)} records where kafkafmt.codecs raises {ref!r}")
        same_records(recs, ref, kw, "C vs Python codecs")
    if "differential" not in SKIP:
        # the same input without CRC checks and with every column: the same records
        full = dict(kw, verify_crc=None, keys=True, values=True, headers=True, chunk_bytes=1 << 20)
        try:
            ref = kafkafmt.decode(buf, **full)
        except errors.KafkafmtError as e:
            if not (kw["keys"] or kw["values"] or kw["headers"]):
                return      # metadata-only decoding does not parse record bodies (by design, as Kafka)
            raise Finding(f"decodes with {kw} but not with {full}: {e!r}") from e
        same_records(recs, ref, kw, "differential")
    if "arrow" not in SKIP and pyarrow is not None and kw["keys"] and kw["values"] and kw["headers"]:
        t = recs.to_arrow()
        check(t.num_rows == len(recs), "to_arrow: row count")
        t.validate(full=True)


def check_accounting(buf, e, kw):
    """Strict mode names every byte it does not decode: the error lies in the entry that starts
    after the last good one (``e.batch_position`` when the error carries it, else the entry the
    framing walk places the position in), and everything before that entry decodes."""
    pos = e.position
    start = getattr(e, "batch_position", None)
    if start is None:
        last = entries(buf)
        starts = [p for p, _, _ in last if p <= pos]
        start = starts[-1] if starts else 0
        end_of_walk = last[-1][0] + last[-1][1] if last else 0
        if pos >= end_of_walk:          # the framing walk stops before it: a framing error at `pos`
            start = end_of_walk
    check(0 <= start <= len(buf), f"batch_position {start} outside the buffer")
    check(pos >= start, f"error position {pos} before the start {start} of its entry")
    try:
        prefix = kafkafmt.decode(buf[:start], **kw)
    except errors.KafkafmtError as e2:
        raise Finding(f"error reported at {pos} (entry at {start}: {e.reason}) but the bytes before that "
                      f"entry do not decode either: {e2!r}") from e2
    check(prefix.valid_bytes == start and prefix.trailing_bytes == 0,
          f"error at {pos}: the {start} bytes before its entry decode only to {prefix.valid_bytes}")


# --- codecs ---------------------------------------------------------------------------------

CAPS = (0, 1, 7, 100, 4096, 65536, 1 << 20, 3)
BIG_CAP = 16 << 20


def codecs_target(data: bytes):
    if len(data) < 2:
        return
    codec_id = data[0] & 7
    magic = (0, 1, 2, 2)[(data[0] >> 3) & 3]
    cap = CAPS[data[1] % len(CAPS)]
    payload = data[2:]
    try:
        codec = codecs.get_codec(codec_id)
    except errors.UnsupportedCodecError:
        check(codec_id > 4, f"codec {codec_id} unsupported")
        return
    as_type = (bytes, memoryview, bytearray)[(data[0] >> 5) % 3]
    try:
        out = codec.decompress(as_type(payload), max_size=cap, magic=magic)
    except errors.KafkafmtError as e:
        check(isinstance(e, errors.CompressionError), f"{type(e).__name__} is not a CompressionError")
        if "monotonic" not in SKIP and isinstance(e, errors.DecompressionLimitError):
            try:
                big = codec.decompress(payload, max_size=BIG_CAP, magic=magic)
            except errors.KafkafmtError:
                return
            check(len(big) > cap, f"{codec.name}: limit error at cap {cap} but {len(big)} bytes with a larger cap")
        return
    mv = memoryview(out)
    check(mv.nbytes <= cap, f"{codec.name}: {mv.nbytes} bytes returned, cap {cap}")
    if "monotonic" not in SKIP:
        try:
            big = codec.decompress(payload, max_size=BIG_CAP, magic=magic)
        except errors.KafkafmtError as e:
            raise Finding(f"{codec.name}: decompresses at cap {cap} but not at {BIG_CAP}: {e!r}") from e
        check(bytes(big) == bytes(out), f"{codec.name}: output depends on the cap")


# --- side files -----------------------------------------------------------------------------

def _side_readers():
    s = sidefiles
    return (
        ("index", lambda d: s.read_index(d)),
        ("index_untrimmed", lambda d: s.read_index(d, trim_zeros=False)),
        ("timeindex", lambda d: s.read_timeindex(d)),
        ("timeindex_untrimmed", lambda d: s.read_timeindex(d, trim_zeros=False)),
        ("txnindex", lambda d: s.read_txnindex(d)),
        ("producer_snapshot", lambda d: s.read_producer_snapshot(d)),
        ("producer_snapshot_nocrc", lambda d: s.read_producer_snapshot(d, verify_crc=False)),
        ("leader_epoch_checkpoint", lambda d: s.read_leader_epoch_checkpoint(d)),
        ("offset_checkpoint", lambda d: s.read_offset_checkpoint(d)),
        ("partition_metadata", lambda d: s.read_partition_metadata(d)),
        ("quorum_state", lambda d: s.read_quorum_state(d)),
        ("meta_properties", lambda d: s.read_meta_properties(d)),
        ("index_sound", lambda d: _told_sound(d, ".index")),
        ("timeindex_sound", lambda d: _told_sound(d, ".timeindex")),
    )


#: a segment's batches for the one-pass index checks (positions, offsets with a gap, max timestamps)
_BATCHES = {"position": [0, 100, 250, 251], "base_offset": [0, 3, 9, 30], "last_offset": [2, 8, 20, 31],
            "max_timestamp": [1000, 900, 2000, 2000]}


def _told_sound(data, suffix):
    """`sidefiles.sound_index_entries` (native): entries only when the Python checks find nothing, and theirs."""
    import numpy as np

    batches = {k: np.asarray(v, np.int64) for k, v in _BATCHES.items()}
    got = sidefiles.sound_index_entries(bytes(data), suffix, 0, batches)
    if got is not None:
        entries, why = sidefiles.read_index_file(bytes(data), suffix, 0)
        check_ = sidefiles.check_index if suffix == ".index" else sidefiles.check_timeindex
        check(why is None and not check_(entries, batches, 0) and got.tolist() == entries.tolist(),
              f"{suffix}: told sound, but the checks disagree")
        return got
    return ()


SIDE_NAMES = ("index", "index_untrimmed", "timeindex", "timeindex_untrimmed", "txnindex", "producer_snapshot",
              "producer_snapshot_nocrc", "leader_epoch_checkpoint", "offset_checkpoint", "partition_metadata",
              "quorum_state", "meta_properties", "index_sound", "timeindex_sound")
_READERS = None


def sidefiles_target(data: bytes):
    global _READERS
    if not data:
        return
    if _READERS is None:
        _READERS = _side_readers()
    name, reader = _READERS[data[0] % len(_READERS)]
    body = data[1:]
    arg = (bytes, bytearray, memoryview, bytes)[data[0] >> 6](body)
    try:
        out = reader(arg)
    except errors.KafkafmtError as e:
        check(e.position is None or 0 <= e.position <= len(body), f"{name}: position {e.position} outside the file")
        return
    if name.startswith("index"):
        check(len(out) <= len(body) // 8, f"{name}: more entries than the file holds")
    elif name.startswith("timeindex"):
        check(len(out) <= len(body) // 12, f"{name}: more entries than the file holds")
    elif name.startswith("producer"):
        check(len(out["entries"]) * 46 + 10 <= len(body), f"{name}: more entries than the file holds")


# --- salvage (kafkafmt.read._readers.read_log_dir(errors="salvage")) --------------------------------

_SALVAGE_DIR = None


def salvage_target(data: bytes):
    """The input as a one-segment partition folder (on /dev/shm when there is one), read in
    salvage mode: it must not raise, and its batches plus the skipped ranges it reports must
    cover the file exactly (no gap, no overlap)."""
    global _SALVAGE_DIR
    import tempfile
    import warnings
    from kafkafmt.read import _readers as logdir
    if not data:
        return
    kw = decode_options(data[0])
    buf = data[1:]
    if _SALVAGE_DIR is None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        _SALVAGE_DIR = tempfile.mkdtemp(prefix="kfuzz-", dir=base)
        os.makedirs(os.path.join(_SALVAGE_DIR, "t-0"))
        import atexit
        import shutil
        atexit.register(shutil.rmtree, _SALVAGE_DIR, True)
    folder = os.path.join(_SALVAGE_DIR, "t-0")
    seg = os.path.join(folder, "00000000000000000000.log")
    with open(seg, "wb") as f:
        f.write(buf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if data[0] & 128 and "errors" in __import__("inspect").signature(kafkafmt.read_segment).parameters:
            recs = kafkafmt.read_segment(seg, errors="salvage", verify_crc=kw["verify_crc"],
                                         include_control=kw["include_control"],
                                         max_decompressed=kw["max_decompressed"])
        else:
            recs = logdir.read_log_dir(folder, errors="salvage", verify_crc=kw["verify_crc"],
                                       include_control=kw["include_control"],
                                       max_decompressed=kw["max_decompressed"])
    spans = sorted([(int(p), int(p) + int(z)) for p, z in zip(recs.batches.position, recs.batches.size)]
                   + [(int(r["start"]), int(r["end"])) for r in recs.report
                      if "start" in r and os.path.abspath(str(r.get("file"))) == os.path.abspath(seg)])
    at = 0
    for start, end in spans:
        check(start == at, f"salvage: {'gap' if start > at else 'overlap'} at byte {at} (ranges {spans})")
        check(end > start, f"salvage: empty range at {start}")
        at = end
    check(at == len(buf), f"salvage: ranges end at {at}, the file at {len(buf)} (ranges {spans})")


TARGETS = {"decode": decode_target, "v2": decode_target, "legacy": decode_target,
           "codecs": codecs_target, "sidefiles": sidefiles_target, "salvage": salvage_target}


# ---------------------------------------------------------------------------------------------
# structure-aware mutation (decode / v2 / legacy)

def _codec_roundtrip(codec_id, magic, payload):
    """Decompressed bytes of a payload (None if it does not decompress within 1 MiB)."""
    try:
        return bytes(codecs.get_codec(codec_id).decompress(payload, max_size=1 << 20, magic=magic))
    except Exception:
        return None


def _compress(codec_id, magic, raw, rng):
    c = codecs.get_codec(codec_id)
    if codec_id == 2 and rng.random() < 0.3:
        return bytes(cramjam.snappy.compress_raw(raw))       # librdkafka's raw snappy
    if codec_id == 3 and rng.random() < 0.3:
        return lz4.frame.compress(raw, store_size=True, content_checksum=rng.random() < 0.5,
                                  block_checksum=rng.random() < 0.5)
    if codec_id == 4 and rng.random() < 0.3:
        return zstandard.ZstdCompressor(write_content_size=False).compress(raw)
    return c.compress(raw, magic=magic)


def _mutate_varint_field(blob: bytearray, spans, rng, fix_length):
    start, end, kind = rng.choice(spans)
    value = rng.choice(INTERESTING) if rng.random() < 0.7 else rng.randint(-300, 300)
    if kind == "length" or not fix_length:
        return blob[:start] + zigzag(value) + blob[end:]
    new = blob[:start] + zigzag(value) + blob[end:]
    # keep the enclosing record's length field consistent with its new size
    delta = len(new) - len(blob)
    for s, e, k in reversed(spans):
        if k == "length" and s < start:
            old = read_varint(blob, s, e)[0]
            return new[:s] + zigzag(old + delta) + new[e:]
    return new


def _i32(v):
    return max(-(1 << 31), min((1 << 31) - 1, v))


def _mutate_legacy_set(blob: bytearray, rng):
    """Field rewrite inside a v0/v1 message set (the inner set of a wrapper, or a log)."""
    ents = entries(blob)
    if not ents:
        return blob
    pos, total, magic = rng.choice(ents)
    choice = rng.randrange(6)
    key_at = pos + (26 if magic == 1 else 18)
    if choice == 0:
        struct.pack_into(">i", blob, pos + 8, _i32(rng.choice(INTERESTING)))
    elif choice == 1:
        blob[pos + 16] = rng.choice((0, 1, 2, 3, 0xFF))
    elif choice == 2:
        blob[pos + 17] = (blob[pos + 17] & ~7) | rng.randrange(8)
    elif choice == 3 and key_at + 4 <= len(blob):
        struct.pack_into(">i", blob, key_at, _i32(rng.choice(INTERESTING)))
    elif choice == 4:
        struct.pack_into(">q", blob, pos, max(-(1 << 63), min((1 << 63) - 1, rng.choice(INTERESTING))))
    else:
        vl_at = key_at + 4 + max(0, struct.unpack_from(">i", blob, key_at)[0]) if key_at + 4 <= len(blob) else None
        if vl_at is not None and vl_at + 4 <= len(blob):
            struct.pack_into(">i", blob, vl_at, _i32(rng.choice(INTERESTING)))
    if rng.random() < 0.8:
        fix_crc(blob, pos, total, magic)
    return blob


def _mutate_entry(buf: bytearray, pos, total, magic, rng, mutate_bytes):
    """Rewrite one entry: a header field, or its (decompressed) records. Returns the new buffer."""
    end = pos + total
    entry = bytearray(buf[pos:end])
    if magic == 2 and total >= V2_HEADER:
        attrs = struct.unpack_from(">h", entry, 21)[0]
        codec_id = attrs & 7
        count = struct.unpack_from(">i", entry, 57)[0]
        r = rng.random()
        if r < 0.3:                                          # a header field
            field = rng.choice(((57, ">i"), (23, ">i"), (21, ">h"), (0, ">q"), (27, ">q"), (35, ">q"), (8, ">i")))
            at, fmt = field
            lo, hi = {">i": (-(1 << 31), (1 << 31) - 1), ">h": (-(1 << 15), (1 << 15) - 1),
                      ">q": (-(1 << 63), (1 << 63) - 1)}[fmt]
            if at == 21:
                value = (attrs & ~0x3F) | rng.choice((0, 1, 2, 3, 4, 5, 7)) | rng.choice((0, 0x08, 0x10, 0x20, 0x30))
            elif at == 57 and rng.random() < 0.5:
                value = count + rng.choice((-2, -1, 1, 2))
            else:
                value = rng.choice(INTERESTING)
            struct.pack_into(fmt, entry, at, max(lo, min(hi, value)))
        else:                                                # the records
            payload = bytes(entry[V2_HEADER:])
            raw = payload if codec_id == 0 else _codec_roundtrip(codec_id, 2, payload)
            if raw is None:
                return buf
            spans = v2_fields(raw, count)
            if spans and rng.random() < 0.6:
                raw = _mutate_varint_field(bytearray(raw), spans, rng, rng.random() < 0.7)
            else:
                raw = mutate_bytes(bytes(raw), len(raw) * 2 + 64)
            if codec_id and rng.random() < 0.1:
                codec_id = rng.choice((1, 2, 3, 4))
                struct.pack_into(">h", entry, 21, (attrs & ~7) | codec_id)
            new_payload = bytes(raw) if codec_id == 0 else _compress(codec_id, 2, bytes(raw), rng)
            entry = entry[:V2_HEADER] + new_payload
            struct.pack_into(">i", entry, 8, len(entry) - 12)
    elif magic in (0, 1) and total >= (26 if magic == 1 else 18) + 8:
        codec_id = entry[17] & 7
        key_at = 26 if magic == 1 else 18
        klen = struct.unpack_from(">i", entry, key_at)[0]
        vl_at = key_at + 4 + max(klen, 0)
        if codec_id and vl_at + 4 <= len(entry) and rng.random() < 0.7:
            value = bytes(entry[vl_at + 4:])
            raw = _codec_roundtrip(codec_id, magic, value)
            if raw is None:
                return buf
            if rng.random() < 0.6:
                raw = _mutate_legacy_set(bytearray(raw), rng)
            else:
                raw = mutate_bytes(bytes(raw), len(raw) * 2 + 64)
            if codec_id in (1, 2, 3):
                new_value = _compress(codec_id, magic, bytes(raw), rng)
            else:
                new_value = bytes(raw)
            entry = entry[:vl_at] + struct.pack(">i", len(new_value)) + new_value
            struct.pack_into(">i", entry, 8, len(entry) - 12)
        else:
            entry = _mutate_legacy_set(entry, rng)
    else:
        return buf
    total = len(entry)
    if rng.random() < 0.9:
        fix_crc(entry, 0, total, entry[16] if len(entry) > 16 else magic)
    return buf[:pos] + entry + buf[end:]


def structure_mutate(data: bytes, max_size: int, seed: int, mutate_bytes) -> bytes:
    """One mutation of a decode-target input (opts byte + log buffer)."""
    rng = random.Random(seed)
    if not data:
        data = b"\x00"
    opt, buf = data[:1], bytearray(data[1:])
    r = rng.random()
    try:
        ents = entries(buf)
        if r < 0.35 or not ents:
            out = bytearray(mutate_bytes(bytes(data), max_size))
            if len(out) > 1 and rng.random() < 0.5:
                body = out[1:]
                fix_all_crcs(body)
                out = out[:1] + body
            return bytes(out[:max_size])
        if r < 0.85:
            pos, total, magic = rng.choice(ents)
            buf = _mutate_entry(buf, pos, total, magic, rng, mutate_bytes)
        elif r < 0.93:                                       # whole entries: drop, duplicate, swap
            i = rng.randrange(len(ents))
            pos, total, _ = ents[i]
            piece = buf[pos:pos + total]
            k = rng.randrange(4)
            if k == 0:
                buf = buf[:pos] + buf[pos + total:]
            elif k == 1:
                buf = buf[:pos] + piece + buf[pos:]
            elif k == 2:
                j = rng.randrange(len(ents))
                q, t2, _ = ents[j]
                other = buf[q:q + t2]
                if q > pos:
                    buf = buf[:pos] + other + buf[pos + total:q] + piece + buf[q + t2:]
            else:
                cut = rng.randrange(len(buf) + 1)
                buf = buf[:cut]
        else:
            opt = bytes([rng.randrange(256)])
    except Exception:
        return bytes(mutate_bytes(bytes(data), max_size))[:max_size]
    return bytes(opt + buf)[:max_size]
