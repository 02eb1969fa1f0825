"""What the benchmark modules share: the contenders, the decompression floor, the correctness
guard, in-process interleaved timing for the ``track_*`` ratios, peak-memory measurement, quick
mode, and the registry of ratios that ``python -m benchmarks.report`` prints.

Nothing here is a benchmark (asv collects ``time_``/``track_``/``peakmem_`` names from every module
of the package, so this module defines none, and its base classes start with ``_``).
"""

from __future__ import annotations

import gc
import os
import statistics
import struct
import sys
import time

import numpy as np
import pandas  # noqa: F401 - loaded up front (kafkafmt imports pyarrow/pandas lazily): every
import pyarrow  # noqa: F401   benchmark process, and asv's peakmem_ baseline, includes them alike

from . import corpus

try:  # the library may be half-written while someone works on it: its benchmarks are then skipped
    import kafkafmt

    _kafkafmt_decode = kafkafmt.decode
    KAFKAFMT_ERROR = None
    # the ratios against aiokafka and kafka-python are one core against one core: kafkafmt's readers
    # default to every core, so the suite pins them to one (bench_threads measures threads explicitly;
    # KAFKAFMT_BENCH_THREADS=N to measure the default with N)
    import os as _os

    kafkafmt.set_cpu_count(int(_os.environ.get("KAFKAFMT_BENCH_THREADS", "1")))
except Exception as exc:  # noqa: BLE001 - any import problem means "not benchmarkable"
    kafkafmt = None
    _kafkafmt_decode = None
    KAFKAFMT_ERROR = "%s: %s" % (type(exc).__name__, exc)

from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from kafka.record.memory_records import MemoryRecords as KpMemoryRecords

try:  # raised inside a benchmark, asv reports it as skipped (n/a) instead of failed
    from asv_runner.benchmarks.mark import SkipNotImplemented
except ImportError:  # pragma: no cover - outside asv
    class SkipNotImplemented(NotImplementedError):
        pass


def require_kafkafmt():
    if _kafkafmt_decode is None:
        # NotImplementedError in setup() makes asv mark the benchmark as skipped (n/a)
        raise NotImplementedError("kafkafmt is not importable: %s" % KAFKAFMT_ERROR)


def aiokafka_is_compiled() -> bool:
    """True when aiokafka uses its Cython ``_crecords`` extension (it silently falls back to
    pure Python when the extension fails to import, or when AIOKAFKA_NO_EXTENSIONS is set)."""
    from aiokafka.record.default_records import DefaultRecordBatch

    return (AioMemoryRecords.__module__.startswith("aiokafka.record._crecords")
            and DefaultRecordBatch.__module__.startswith("aiokafka.record._crecords"))


# ---------------------------------------------------------------------------------------------
# quick mode and the measurement budget
# ---------------------------------------------------------------------------------------------

def asv_quick() -> bool:
    """True inside ``asv run --quick`` (asv then runs each benchmark once with number=1, repeat=1,
    warmup_time=0, rounds=1; the runner passes these as ``extra_params`` to the ``_run`` frame
    that calls our setup), or when ``KAFKAFMT_BENCH_QUICK=1``."""
    env = os.environ.get("KAFKAFMT_BENCH_QUICK")
    if env is not None:
        return env not in ("", "0")
    f = sys._getframe(1)
    while f is not None:
        p = f.f_locals.get("extra_params") if f.f_code.co_name == "_run" else None
        if isinstance(p, dict):
            return p.get("warmup_time") == 0 and p.get("repeat") == 1 and p.get("number") == 1
        f = f.f_back
    return False


#: set by setup() of the track_* benchmarks (the asv frames are not on the stack during the
#: track_ call itself in every asv version, so quick mode is decided in setup)
_QUICK = [False]


def note_quick():
    _QUICK[0] = asv_quick()


def budget() -> float:
    """Seconds of measurement per contender in one track_* call: env KAFKAFMT_BENCH_BUDGET
    (default 2.0), or 0.05 in quick mode."""
    if "KAFKAFMT_BENCH_BUDGET" in os.environ:
        return float(os.environ["KAFKAFMT_BENCH_BUDGET"])
    return 0.05 if _QUICK[0] else 2.0


def interleaved_samples(funcs, budget_s=None, min_repeats=None, max_repeats=101, min_sample=0.01):
    """Seconds per call of each of ``funcs``, one sample per round, measured interleaved in this
    process: a list per function, sample i of every function taken in round i.

    Each function is warmed up once, then timed in rounds, each round running every function
    once (in alternating order, so neither always follows the other), so machine noise hits all
    of them alike.  A sample is the mean of ``number`` back-to-back calls, ``number`` chosen so a
    sample lasts >= ``min_sample`` s (like asv's sample_time).  Rounds continue until each
    function has used ``budget`` seconds, within [min_repeats, max_repeats] (min 5; 1 in quick
    mode, where only "does it run" matters).  GC is off while timing, as in timeit/asv.
    """
    budget_s = budget() if budget_s is None else budget_s
    if min_repeats is None:
        min_repeats = 1 if _QUICK[0] else 5
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        first = []
        for f in funcs:
            t0 = time.perf_counter()
            f()
            first.append(max(time.perf_counter() - t0, 1e-7))
        numbers = [max(1, int(min_sample / t)) for t in first]
        slowest = max(n * t for n, t in zip(numbers, first))
        repeats = int(min(max_repeats, max(min_repeats, budget_s / slowest)))
        samples = [[] for _ in funcs]
        order = list(range(len(funcs)))
        perf = time.perf_counter
        for r in range(repeats):
            for i in (order if r % 2 == 0 else order[::-1]):
                f, number = funcs[i], numbers[i]
                t0 = perf()
                for _ in range(number):
                    f()
                samples[i].append((perf() - t0) / number)
        return samples
    finally:
        if gc_was_enabled:
            gc.enable()


def interleaved_medians(funcs, budget_s=None, **kw):
    """Median seconds per call of each of ``funcs`` (see interleaved_samples)."""
    return [statistics.median(s) for s in interleaved_samples(funcs, budget_s, **kw)]


def ratio(numerator, denominator, budget_s=None) -> float:
    """time(numerator) / time(denominator): the median over rounds of each round's ratio (the two
    samples of a round are taken back to back, so a burst of load on this shared machine that
    hits one round hits both sides of it)."""
    num, den = interleaved_samples([numerator, denominator], budget_s)
    return round(statistics.median(a / b for a, b in zip(num, den)), 3)


# ---------------------------------------------------------------------------------------------
# the contenders: decoding to columns
# ---------------------------------------------------------------------------------------------

def kafkafmt_columns(buf, verify_crc=True):
    """kafkafmt.decode, touching every column so a lazy implementation cannot cheat."""
    recs = _kafkafmt_decode(buf, verify_crc=verify_crc)
    recs.offset, recs.timestamp, recs.key, recs.value, recs.headers  # noqa: B018
    return recs


def kafkafmt_meta(buf, verify_crc=True):
    """Metadata-only: offsets and timestamps (no key/value/header copies)."""
    recs = _kafkafmt_decode(buf, verify_crc=verify_crc, keys=False, values=False, headers=False)
    recs.offset, recs.timestamp  # noqa: B018
    return recs


def _int64_array(items, np_array=np.array, int64=np.int64):
    if items and items[0] is None:          # magic 0 has no timestamps: the peers give None
        return np.full(len(items), -1, int64)
    return np_array(items, int64)


def aiokafka_columns(buf, MemoryRecords=AioMemoryRecords, int64_array=_int64_array):
    """aiokafka's fastest honest way to the same columns: iterate its (Cython) batches, check
    each batch's CRC like its consumer does with ``check_crcs=True`` (the default; for a v0/v1
    wrapper that is the wrapper's CRC only), append to Python lists and convert offsets and
    timestamps to NumPy.  Keys/values stay lists of bytes (or None); headers stay aiokafka's
    per-record lists of (str, bytes) tuples.  (Variants with per-batch list comprehensions or
    ``np.fromiter`` measured the same or slower.)"""
    offsets, timestamps, keys, values, headers = [], [], [], [], []
    add_o, add_t, add_k, add_v, add_h = (offsets.append, timestamps.append, keys.append,
                                         values.append, headers.append)
    records = MemoryRecords(buf)
    while records.has_next():
        batch = records.next_batch()
        if not batch.validate_crc():
            raise ValueError("CRC mismatch at offset %d" % batch.base_offset)
        for r in batch:
            add_o(r.offset)
            add_t(r.timestamp)
            add_k(r.key)
            add_v(r.value)
            add_h(r.headers)
    return int64_array(offsets), int64_array(timestamps), keys, values, headers


def kafka_python_columns(buf, MemoryRecords=KpMemoryRecords, int64_array=_int64_array):
    """The same with kafka-python (pure Python); CRCs checked as its fetcher does: per batch,
    and per inner message of a v0/v1 wrapper (its per-record ``validate_crc()`` is a no-op for
    v2, so it is only called for v0/v1)."""
    offsets, timestamps, keys, values, headers = [], [], [], [], []
    add_o, add_t, add_k, add_v, add_h = (offsets.append, timestamps.append, keys.append,
                                         values.append, headers.append)
    records = MemoryRecords(buf)
    batch = records.next_batch()
    while batch is not None:
        if not batch.validate_crc():
            raise ValueError("CRC mismatch at offset %d" % batch.base_offset)
        if batch.magic < 2:
            for r in batch:
                if not r.validate_crc():
                    raise ValueError("CRC mismatch at offset %d" % r.offset)
                add_o(r.offset)
                add_t(r.timestamp)
                add_k(r.key)
                add_v(r.value)
                add_h(r.headers)
        else:
            for r in batch:
                add_o(r.offset)
                add_t(r.timestamp)
                add_k(r.key)
                add_v(r.value)
                add_h(r.headers)
        batch = records.next_batch()
    return int64_array(offsets), int64_array(timestamps), keys, values, headers


def aiokafka_meta(buf, MemoryRecords=AioMemoryRecords, int64_array=_int64_array):
    """aiokafka, offsets and timestamps only (it still parses every record: it has no other way)."""
    offsets, timestamps = [], []
    add_o, add_t = offsets.append, timestamps.append
    records = MemoryRecords(buf)
    while records.has_next():
        batch = records.next_batch()
        if not batch.validate_crc():
            raise ValueError("CRC mismatch at offset %d" % batch.base_offset)
        for r in batch:
            add_o(r.offset)
            add_t(r.timestamp)
    return int64_array(offsets), int64_array(timestamps)


def aiokafka_frame_columns(buf, MemoryRecords=AioMemoryRecords, int64_array=_int64_array):
    """aiokafka columns plus each record's timestamp type (per batch, repeated), for a DataFrame
    or Arrow table with the same columns as kafkafmt's (-1 for v0, which has none)."""
    offsets, timestamps, keys, values, headers = [], [], [], [], []
    add_o, add_t, add_k, add_v, add_h = (offsets.append, timestamps.append, keys.append,
                                         values.append, headers.append)
    tt_values, tt_counts = [], []
    records = MemoryRecords(buf)
    while records.has_next():
        batch = records.next_batch()
        if not batch.validate_crc():
            raise ValueError("CRC mismatch at offset %d" % batch.base_offset)
        n0 = len(offsets)
        batch_has_tt = hasattr(batch, "timestamp_type")
        for r in batch:
            add_o(r.offset)
            add_t(r.timestamp)
            add_k(r.key)
            add_v(r.value)
            add_h(r.headers)
        # aiokafka's v0/v1 batches have no timestamp_type; their records do
        tt = batch.timestamp_type if batch_has_tt else r.timestamp_type
        tt_values.append(-1 if tt is None else tt)
        tt_counts.append(len(offsets) - n0)
    ttype = np.repeat(np.array(tt_values, np.int32), tt_counts)
    return int64_array(offsets), int64_array(timestamps), keys, values, headers, ttype


def kafka_python_frame_columns(buf, MemoryRecords=KpMemoryRecords, int64_array=_int64_array):
    """The same with kafka-python."""
    offsets, timestamps, keys, values, headers = [], [], [], [], []
    add_o, add_t, add_k, add_v, add_h = (offsets.append, timestamps.append, keys.append,
                                         values.append, headers.append)
    tt_values, tt_counts = [], []
    records = MemoryRecords(buf)
    batch = records.next_batch()
    while batch is not None:
        if not batch.validate_crc():
            raise ValueError("CRC mismatch at offset %d" % batch.base_offset)
        n0 = len(offsets)
        legacy = batch.magic < 2
        for r in batch:
            if legacy and not r.validate_crc():
                raise ValueError("CRC mismatch at offset %d" % r.offset)
            add_o(r.offset)
            add_t(r.timestamp)
            add_k(r.key)
            add_v(r.value)
            add_h(r.headers)
        tt = getattr(batch, "timestamp_type", None)
        tt_values.append(-1 if tt is None else tt)
        tt_counts.append(len(offsets) - n0)
        batch = records.next_batch()
    ttype = np.repeat(np.array(tt_values, np.int32), tt_counts)
    return int64_array(offsets), int64_array(timestamps), keys, values, headers, ttype


def frame_from_columns(cols):
    """A pandas DataFrame with kafkafmt's to_pandas() columns from a peer's lists -- the usual
    way: object columns of bytes, int64 offsets, tz-aware ms timestamps (a zero-copy view of the
    int64 array, the fastest way pandas has), int32 timestamp type,
    headers as the peer's per-record lists."""
    import pandas as pd

    offsets, timestamps, keys, values, headers, ttype = cols
    return pd.DataFrame({
        "key": keys,
        "value": values,
        "offset": offsets,
        "timestamp": pd.DatetimeIndex(timestamps.view("M8[ms]"), tz="UTC"),
        "timestampType": ttype,
        "headers": headers,
    })


_HEADERS_TYPE = None


def arrow_from_columns(cols):
    """A pyarrow Table with kafkafmt's to_arrow() schema from a peer's lists (pyarrow's converters:
    binary from lists of bytes, list<struct<key, value>> from lists of tuples, null where a
    record has no headers, as kafkafmt)."""
    import pyarrow as pa

    global _HEADERS_TYPE
    if _HEADERS_TYPE is None:
        _HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    offsets, timestamps, keys, values, headers, ttype = cols
    return pa.table({
        "key": pa.array(keys, pa.binary()),
        "value": pa.array(values, pa.binary()),
        "offset": pa.array(offsets),
        "timestamp": pa.array(timestamps, pa.timestamp("ms", tz="UTC")),
        "timestampType": pa.array(ttype),
        "headers": pa.array([h or None for h in headers], _HEADERS_TYPE),
    })


# ---------------------------------------------------------------------------------------------
# the decompression floor
# ---------------------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _gzip_decompressor():
    try:
        from isal import isal_zlib

        return lambda data, _d=isal_zlib.decompress: _d(data, 31)   # wbits 31: gzip container
    except ImportError:  # pragma: no cover
        import zlib

        return lambda data, _d=zlib.decompress: _d(data, 31)


def _snappy_decompressor():
    """xerial snappy (snappy-java's stream: 16-byte header, then big-endian int32 length + raw
    snappy block, repeated) into one preallocated contiguous output, like lz4/zstd produce;
    raw snappy when the xerial magic is absent."""
    import cramjam

    raw, raw_into, raw_len = (cramjam.snappy.decompress_raw, cramjam.snappy.decompress_raw_into,
                              cramjam.snappy.decompress_raw_len)
    unpack = struct.Struct(">i").unpack_from

    def decompress(data):
        if data[:8] != _XERIAL_MAGIC:
            return raw(data)
        view = memoryview(data)
        pos, end, total, blocks = 16, len(data), 0, []
        while pos < end:
            (n,) = unpack(data, pos)
            block = view[pos + 4:pos + 4 + n]
            size = raw_len(block)
            blocks.append((block, total, size))
            total += size
            pos += 4 + n
        out = bytearray(total)
        out_view = memoryview(out)
        for block, at, size in blocks:
            raw_into(block, out_view[at:at + size])
        return out

    return decompress


def _lz4_decompressor():
    import lz4.frame

    return lz4.frame.decompress


def _zstd_decompressor():
    import zstandard

    dctx = zstandard.ZstdDecompressor()        # one reused context (5-6x faster on small frames)

    def decompress(data, _one_shot=dctx.decompress):
        try:
            return _one_shot(data)
        except zstandard.ZstdError:             # frame without a content size (Java's streaming
            return dctx.decompressobj().decompress(data)   # compressor): not in our corpora
    return decompress


_DECOMPRESSOR_FACTORIES = {1: _gzip_decompressor, 2: _snappy_decompressor,
                           3: _lz4_decompressor, 4: _zstd_decompressor}


def decompress_only(payloads, decompressors):
    """Decompress every compressed payload; returns the decompressed byte count."""
    total = 0
    for codec, data in payloads:
        total += len(decompressors[codec](data))
    return total


def make_decompress_only(name):
    """A zero-argument callable decompressing all of corpus ``name`` (payloads pre-split, v0 lz4
    header checksums pre-fixed); NotImplementedError for a corpus without compression."""
    buf, _ = corpus.load(name)
    payloads = [(c, p) for c, p in corpus.compressed_payloads(buf) if c]
    if not payloads:
        raise NotImplementedError("corpus %r has no compressed batch" % name)
    decompressors = {c: _DECOMPRESSOR_FACTORIES[c]() for c in {c for c, _ in payloads}}
    return lambda: decompress_only(payloads, decompressors)


# ---------------------------------------------------------------------------------------------
# correctness guard: a fast decoder that decodes wrongly is not worth timing
# ---------------------------------------------------------------------------------------------

_verified: set = set()


def kafkafmt_fingerprint() -> str:
    """Identifies the kafkafmt code being benchmarked: size and mtime of every .py / extension
    file of the package (a rebuild or an edit changes it)."""
    import hashlib

    if common_state.get("fingerprint") is None:
        h = hashlib.sha1()
        root = os.path.dirname(kafkafmt.__file__) if kafkafmt is not None else ""
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for fn in sorted(filenames):
                if fn.endswith((".py", ".so", ".pyd")):
                    st = os.stat(os.path.join(dirpath, fn))
                    h.update(("%s %d %d\n" % (os.path.relpath(os.path.join(dirpath, fn), root), st.st_size,
                                               st.st_mtime_ns)).encode())
        common_state["fingerprint"] = h.hexdigest()[:16]
    return common_state["fingerprint"]


common_state: dict = {}


def verified_once(kind, key, check):
    """Run ``check()`` (assertions) once per kafkafmt build: remembered in this process and, by a
    stamp file named after kafkafmt's fingerprint, across asv's benchmark processes (every
    benchmark runs in a fresh process; re-checking each time would dominate a quick run).
    KAFKAFMT_BENCH_REVERIFY=1 ignores the stamps."""
    tag = "%s-%s" % (kind, key)
    if tag in _verified:
        return
    stamp = corpus.cache_dir() / "verified" / ("%s-%s" % (kafkafmt_fingerprint(), tag))
    if stamp.exists() and os.environ.get("KAFKAFMT_BENCH_REVERIFY", "") in ("", "0"):
        _verified.add(tag)
        return
    check()
    _verified.add(tag)
    try:
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_bytes(b"")
    except OSError:
        pass


def binary_to_list(column):
    """A kafkafmt BinaryColumn (Arrow layout: offsets, data, validity) as a list of bytes/None."""
    offsets = np.asarray(column.offsets)
    data = column.data if isinstance(column.data, bytes) else bytes(memoryview(column.data).cast("B"))
    n = len(offsets) - 1
    validity = column.validity
    if validity is None:
        valid = np.ones(n, dtype=bool)
    else:
        validity = np.asarray(validity)
        if validity.dtype == np.bool_ and len(validity) == n:
            valid = validity
        else:  # Arrow validity bitmap, LSB first
            valid = np.unpackbits(validity.view(np.uint8), bitorder="little")[:n].astype(bool)
    offsets = offsets.tolist()
    valid = valid.tolist()
    return [data[offsets[i]:offsets[i + 1]] if valid[i] else None for i in range(n)]


def reference_columns(name):
    """The reference decode of corpus ``name``: aiokafka, or kafka-python where aiokafka cannot
    read the corpus (magic-0 lz4)."""
    buf, _ = corpus.load(name)
    try:
        return aiokafka_columns(buf)
    except Exception:  # noqa: BLE001 - aiokafka rejects v0 lz4 (UnsupportedCodecError)
        return kafka_python_columns(buf)


def verify_kafkafmt(name):
    """Check kafkafmt.decode against the reference decode of corpus ``name``: offsets,
    timestamps, keys, values and headers (once per kafkafmt build, see verified_once)."""
    def check():
        buf, meta = corpus.load(name)
        recs = kafkafmt_columns(buf)
        offsets, timestamps, keys, values, headers = reference_columns(name)
        assert len(recs.offset) == meta["records"], (len(recs.offset), meta["records"])
        np.testing.assert_array_equal(np.asarray(recs.offset), offsets)
        np.testing.assert_array_equal(np.asarray(recs.timestamp), timestamps)
        assert binary_to_list(recs.key) == keys, "keys differ"
        assert binary_to_list(recs.value) == values, "values differ"
        mine = [[(k, v) for k, v in hs] for hs in recs.headers.to_pylist()]
        theirs = [[(k, bytes(v)) for k, v in hs] for hs in headers]
        assert mine == theirs, "headers differ"
    verified_once("decode", "%s-%s" % (name, corpus.load(name)[1]["sha256"][:12]), check)


def peer_available(peer, name):
    """NotImplementedError (asv: skipped) when ``peer`` cannot read corpus ``name`` at all."""
    if peer == "aiokafka" and corpus.CORPORA[name][:2] == (0, "lz4"):
        raise NotImplementedError("aiokafka does not read magic-0 lz4 (UnsupportedCodecError)")


def skip_unless_peer(peer, name):
    """peer_available() inside a benchmark method: asv marks that one benchmark skipped."""
    try:
        peer_available(peer, name)
    except NotImplementedError as exc:
        raise SkipNotImplemented(str(exc)) from None


# ---------------------------------------------------------------------------------------------
# peak memory
# ---------------------------------------------------------------------------------------------

_PEAK_CHILD = r"""
import gc, importlib, json, sys
import pyarrow, pandas     # imported lazily by kafkafmt: their mapped libraries are not the call's
import pyarrow.compute     # nor pyarrow's first use (its memory pool and compute registry: ~60 MB here)
pyarrow.array([0, None]).cast(pyarrow.string())
sys.path.insert(0, sys.argv[1])
mod, fn = sys.argv[2].split(":")
run = getattr(importlib.import_module("benchmarks." + mod), fn)(*json.loads(sys.argv[3]))
import kafkafmt
for name in kafkafmt.__all__:      # (kafkafmt loads a name's modules when first used: not the call's memory either)
    getattr(kafkafmt, name)
def kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
gc.collect()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")               # reset the peak RSS (VmHWM) to the current RSS
base = kb("VmRSS")
result = run()
print((kb("VmHWM") - base) * 1024)
"""


def peak_delta_bytes(factory, *args) -> int:
    """Peak resident memory one call adds, in bytes, file pages it maps included.

    ``factory`` is ``"module:function"`` of this package; in a fresh interpreter (so no allocator
    cache of earlier calls hides anything), ``function(*args)`` prepares a zero-argument callable
    (loading the corpus: not measured), the peak RSS is reset (Linux ``/proc/self/clear_refs``),
    the callable runs, and the result is VmHWM - VmRSS before the call.  NotImplementedError where
    that is not possible."""
    if not os.path.exists("/proc/self/clear_refs"):
        raise NotImplementedError("needs Linux /proc/self/clear_refs")
    import json
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", _PEAK_CHILD, root, factory, json.dumps(list(args))],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("peak measurement of %s%r failed:\n%s" % (factory, args, proc.stderr[-2000:]))
    return int(proc.stdout.split()[-1])


def median_peak_delta(factory, *args, repeats=None) -> int:
    """Median of 3 peak_delta_bytes (1 in quick mode)."""
    repeats = (1 if _QUICK[0] else 3) if repeats is None else repeats
    return int(statistics.median(peak_delta_bytes(factory, *args) for _ in range(repeats)))


# ---------------------------------------------------------------------------------------------
# asv base class and the ratio registry
# ---------------------------------------------------------------------------------------------

class _CorpusBench:
    """Parametrized by corpus; loads it in setup."""

    params = corpus.NAMES
    param_names = ["corpus"]
    timeout = 300

    def setup(self, name):
        note_quick()
        self.buf, self.meta = corpus.load(name)


#: id -> dict(title, params, make | value, better, family, unit, track); filled by the bench
#: modules at import.  A time ratio has ``make(param)`` returning (numerator, denominator)
#: zero-argument callables: the ratio is median time(numerator) / median time(denominator).  A
#: value has ``value(param)`` returning the number itself (throughputs, memory ratios).
#: ``better`` is "higher" or "lower"; ``track`` names the asv benchmark reporting the same number.
RATIOS: dict[str, dict] = {}


def register_ratio(key, title, params, make, better="higher", family="corpus", track=None):
    RATIOS[key] = dict(title=title, params=list(params), make=make, value=None, better=better, family=family,
                       unit="ratio", track=track)


def register_value(key, title, params, value, unit, better="higher", family="corpus", track=None):
    RATIOS[key] = dict(title=title, params=list(params), make=None, value=value, better=better, family=family,
                       unit=unit, track=track)


def measure_registered(key, param, budget_s=None) -> float:
    spec = RATIOS[key]
    if spec["value"] is not None:
        return spec["value"](param)
    num, den = spec["make"](param)
    return ratio(num, den, budget_s)
