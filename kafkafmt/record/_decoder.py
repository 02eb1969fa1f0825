"""The decoding facade: framing scan -> per-batch decompression -> one C kernel call per chunk.

1. `kafkafmt.record._entries.scan_entries` reads every batch header (magic-dispatched per entry, CRCs
   checked in C) and, for a log, the offset sequence.
2. Compressed batches are decompressed here, once per batch, by the codec named in their
   attributes (`kafkafmt.codecs`), on memoryviews of the input; at most ``chunk_bytes`` of
   decompressed data are alive at once.
3. `_native.kernel.Columns.run` decodes the records of a whole chunk of batches into NumPy
   arrays in one call (without the GIL); it asks for larger outputs when the data needs them.
4. The arrays become a `Records` (Arrow layout, so `to_arrow()` shares them).

One concern, the chunk loop around the kernel, in three forms that share its outputs and their sizing:
`decode` (a buffer), its threaded form (a large buffer split at batch boundaries, the parts run through
the same loop at once and joined in order; ``PARALLEL_MIN_BYTES``, ``GROUP_MIN_BYTES`` and
``COMPRESSED_SHARE_FOR_THREADS`` tune it) and `RangeDecoder` (many buffers into one set of outputs).
``C_CODECS`` are the codecs the kernel decompresses itself (set to 0, every codec goes through
`kafkafmt.codecs`: the fuzzers compare both paths).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from kafkafmt import errors
from kafkafmt._native import kernel as _kernel
from kafkafmt._native import libs as _libs
from kafkafmt._native import scan as _scan
from kafkafmt.codecs import get_codec
from kafkafmt.codecs import base as _codec_base
from kafkafmt.record._entries import (ERRORS, NULL_WRAPPER, as_uint8, batch_table, check_truncated_tail,
                                      raise_scan_error, scan_entries, window)
from kafkafmt.record._columns import BinaryColumn, BinaryViewColumn, Headers
from kafkafmt.record._names import COLUMNS
from kafkafmt.record._records import Records
from kafkafmt.record._table import Table
from kafkafmt._util.threads import resolve_threads, thread_pool

__all__ = ["decode", "DecodeOptions", "RangeDecoder"]

C_CODECS = _libs.load_kernel_codecs()   # codec bits the kernel decompresses itself (kafkafmt/_native/libs.py)
#: snappy payloads of more bytes than this go through the Python codec: its library decodes large ones faster
#: than the kernel's own decoder, and below it the call a batch costs outweighs the decoding (measured in the
#: speed guide)
SNAPPY_KERNEL_MAX_BYTES = 8 << 10
_SNAPPY = get_codec("snappy").id

_MAX_RATIO_AHEAD = 16     # compression ratio assumed at most when reserving outputs ahead
_IN_KERNEL_RATIO_GUESS = 4  # compression ratio reserved for kernel-decompressed batches whose frames do not tell
_MIN_RECORD_BYTES = 7     # the smallest v2 record: length, attributes, ts/offset deltas, key/value lengths, headers
_BATCH_WEIGHT = 64        # bytes of chunk budget a batch costs besides its payload (bookkeeping)
# compressed bytes of a RangeDecoder's adds to come reserved for at once, at most (at the ratio seen, capped by
# _MAX_RATIO_AHEAD: address space, touched only as filled, but for the validity bitmaps' bit a record)
_RESERVE_BEYOND_MAX = 32 << 20
# a RangeDecoder's value bytes sized at its first add for twice the input expected, up to this (address space,
# touched only as filled)
_VALUE_FLOOR_MAX = 256 << 20


class _Decompressor:
    """Per-batch decompression with the batch table's columns as Python lists (one conversion,
    not one NumPy scalar per field per batch) and codec objects looked up once."""

    def __init__(self, buf, table, max_decompressed, file):
        self.mv = memoryview(buf)
        self.codec = table["codec"]
        self.magic = table["magic"]
        self.start = table["payload_start"]
        self.length = table["payload_len"]
        self.table = table
        self.max = max_decompressed
        self.file = file
        self.codecs = {}

    def where(self, b):
        return dict(file=self.file, position=int(self.table["position"][b]),
                    offset=int(self.table["base_offset"][b]))

    def __call__(self, b):
        codec_id, magic, start, length = (int(self.codec[b]), int(self.magic[b]), int(self.start[b]),
                                          int(self.length[b]))
        try:
            codec = self.codecs.get(codec_id)
            if codec is None:
                codec = self.codecs[codec_id] = get_codec(codec_id)
            if magic < 2:
                if length < 0:
                    raise errors.CorruptRecordError(ERRORS[NULL_WRAPPER][1])
                if codec_id == 4:
                    raise errors.UnsupportedCodecError("zstd is not allowed in v0/v1 messages")
            return codec.decompress(self.mv[start:start + length], max_size=self.max, magic=magic)
        except errors.KafkafmtError as exc:
            located = exc.located(**self.where(b))
            located.batch_position = int(self.table["position"][b])
            raise located from exc


@dataclass(frozen=True)
class DecodeOptions:
    """What to decode and how strictly: the settings `decode`, `read_segment`, the log-dir readers,
    the CLI and the Spark source share (as pyarrow's ReadOptions).

    Parameters
    ----------
    verify_crc : bool or None
        True: raise on a mismatch; False: compute into ``crc_valid``; None: skip.
    include_control : bool
        Control records as data rows too (they are always in ``controls``).
    keys, values, headers : bool
        False: do not copy that column (metadata-only decoding).
    max_decompressed : int, optional
        Cap on one batch's decompressed size (None: the codec default).
    max_batch_bytes : int
        A size field above this is corruption, not a truncated tail.
    threads : int, optional
        Decoding threads: None = all cores (``os.cpu_count()``), 1 = serial.
    binary : {"contiguous", "view"}
        "contiguous": Arrow binary; "view": binary_view into the input.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> opts = kafkafmt.DecodeOptions(values=False)
    >>> opts
    DecodeOptions(verify_crc=True, include_control=False, keys=True, values=False, headers=True,
                  max_decompressed=None, max_batch_bytes=268435456, threads=None, binary='contiguous')
    >>> seg = f"{sample_dir()}/payments-0/00000000000000000000.log"
    >>> recs = kafkafmt.read_segment(seg, **opts.decode_kwargs())
    >>> recs.columns
    ['key', 'topic', 'partition', 'offset', 'timestamp', 'timestampType', 'headers']
    """
    verify_crc: object = True        # True: raise on mismatch; False: compute into crc_valid; None: skip
    include_control: bool = False    # control records as data rows too (they are always in `controls`)
    keys: bool = True                # False: do not copy keys (metadata-only decoding)
    values: bool = True
    headers: bool = True
    max_decompressed: object = None  # cap on one batch's decompressed size (None: the codec default)
    max_batch_bytes: int = 256 << 20  # a size field above this is corruption, not a truncated tail
    threads: object = None           # decoding threads: None = all cores (os.cpu_count()), 1 = serial
    binary: str = "contiguous"       # "contiguous": Arrow binary; "view": binary_view into the input

    @classmethod
    def for_columns(cls, columns=None, **kwargs):
        """Options decoding only the binary columns named in `columns` (None: all; names as
        `kafkafmt.record._names.COLUMNS`, anything else is a ValueError)."""
        want = None if columns is None else set([columns] if isinstance(columns, str) else columns)
        unknown = sorted(want - set(COLUMNS)) if want is not None else []
        if unknown:
            raise ValueError(f"unknown column{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
                             f"(columns are {', '.join(COLUMNS)})")
        for name, column in (("keys", "key"), ("values", "value"), ("headers", "headers")):
            kwargs.setdefault(name, want is None or column in want)
        return cls(**kwargs)

    def replace(self, **changes):
        """A copy with some settings changed (`dataclasses.replace`).

        Parameters
        ----------
        **changes
            Settings by name, as the constructor takes them.

        Returns
        -------
        DecodeOptions

        Examples
        --------
        >>> import kafkafmt
        >>> kafkafmt.DecodeOptions(values=False).replace(values=True, threads=1)
        DecodeOptions(verify_crc=True, include_control=False, keys=True, values=True, headers=True,
                      max_decompressed=None, max_batch_bytes=268435456, threads=1, binary='contiguous')
        """
        return dataclasses.replace(self, **changes)

    def decode_kwargs(self):
        """The settings as keyword arguments of `decode` (and `read_segment`).

        Returns
        -------
        dict
            Setting name -> value, a shallow dict.

        Examples
        --------
        >>> import kafkafmt
        >>> kafkafmt.DecodeOptions(threads=1).decode_kwargs()
        {'verify_crc': True, 'include_control': False, 'keys': True, 'values': True, 'headers': True,
         'max_decompressed': None, 'max_batch_bytes': 268435456, 'threads': 1, 'binary': 'contiguous'}
        """
        # a shallow dict (dataclasses.asdict deep-copies every field: measurable per chunk)
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def decode(data, *, verify_crc=True, include_control=False, file=None, topic=None, partition=None,
           keys=True, values=True, headers=True, max_decompressed=None, max_batch_bytes=256 << 20,
           chunk_bytes=1 << 20, start=0, stop=None, after_offset=None, next_offset=None,
           check_offsets=None, threads=None, binary="contiguous") -> Records:
    """Decode a buffer of Kafka record batches / message sets into columns.

    Parameters
    ----------
    data : bytes-like
        Any bytes-like (bytes, bytearray, memoryview, mmap, NumPy uint8 array) holding
        concatenated entries: a segment's contents, a Fetch response's record set...
    verify_crc : bool or None
        True checks every CRC and raises CrcError on a mismatch; False computes them into
        ``batches.crc_valid`` without raising; None skips them.
    include_control : bool
        Keep control records (transaction markers, KRaft records) as data rows too
        (they are always in ``controls``).
    file : str, optional
        A name used in error messages.
    topic, partition : optional
        The topic and partition the result is labelled with.
    keys, values, headers : bool
        False leaves that column out (faster metadata-only decoding).
    max_decompressed : int, optional
        Cap on the decompressed size of one batch (default: the codec's default).
    max_batch_bytes : int
        A size field above this is corruption (Kafka: maxMessageSize), not a truncated tail.
    chunk_bytes : int
        Decompressed bytes handed to the C kernel per call (cache-sized by default).
    start, stop : int, optional
        Decode only the entries in that byte range of data (positions in the batch table
        and in errors stay those of data).
    after_offset : int, optional
        The last offset before `start`.
    next_offset : int, optional
        The first offset after the data, when no entry follows `stop` in it.
    check_offsets : bool, optional
        Batch offsets must increase, as in a log (default: when after_offset or next_offset is
        given). The base offset lies outside the v2 CRC: a batch out of sequence with both
        neighbours is corrupt, and the error names it.
    threads : int, optional
        Decoding threads (None: all cores, as pyarrow's use_threads; 1: serial). A large
        buffer is split at batch boundaries from the framing scan, the parts are decoded at once (the C
        loops release the GIL) and joined in order: the result, and the error raised (the first in
        byte order), are those of a serial decode.
    binary : {"contiguous", "view"}
        "contiguous" (key/value as Arrow binary: offsets + one data buffer) or "view" (Arrow
        binary_view columns pointing into `data` and into the decompressed batches, which they keep
        alive: no value byte is copied; see `kafkafmt.record._columns.BinaryViewColumn`).

    Returns
    -------
    Records

    Raises
    ------
    CrcError
        A CRC does not match (``verify_crc=True``).
    CorruptRecordError
        A malformed entry, or a batch out of offset sequence.
    ValueError
        An unknown ``binary`` layout.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> with open(f"{sample_dir()}/payments-0/00000000000000000000.log", "rb") as f:
    ...     data = f.read()
    >>> recs = kafkafmt.decode(data)
    >>> recs
    <Records: 45 records in 3 batches>
    >>> recs.offset[:5]
    array([0, 1, 2, 3, 4])
    >>> recs.value[0]
    b'{"payment": "plain-a-0", "amount": 909}'
    """
    if binary not in _BINARY_LAYOUTS:
        raise ValueError(f"binary must be one of {', '.join(_BINARY_LAYOUTS)}, not {binary!r}")
    whole = as_uint8(data)
    buf = window(whole, start, stop)
    check = check_offsets or (check_offsets is None and (after_offset is not None or next_offset is not None))
    table, count, valid_end, tail, err = scan_entries(whole, buf, start, verify_crc, max_batch_bytes, check,
                                                      after_offset, next_offset)
    options = DecodeOptions(verify_crc=verify_crc, include_control=include_control, keys=keys, values=values,
                            headers=headers, max_decompressed=max_decompressed, max_batch_bytes=max_batch_bytes,
                            threads=threads, binary=binary)
    views_from_input = binary == "view" and (keys or values) and buf.shape[0] < _VIEW_MAX_BUFFER and \
        (max_decompressed or _codec_base.DEFAULT_MAX_DECOMPRESSED) < _VIEW_MAX_BUFFER and \
        not _small_kernel_codec_batches(table, count)
    if binary == "view" and not views_from_input:
        # an input (or a batch) past 2 GiB, or small lz4/zstd batches: views over the decoded
        # contiguous values
        options = options.replace(binary="contiguous")
    groups = _split(table, count, resolve_threads(threads), buf.shape[0], copies_values=keys or values,
                    views=views_from_input)
    views = _ViewBuffers(buf, table, count) if views_from_input else None
    if len(groups) == 1:
        a, c, kept = _decode_group(buf, table, 0, count, options, chunk_bytes, file, views)
    else:
        a, c, kept = _decode_parallel(buf, table, groups, options, chunk_bytes, file, views)
    if err is not None:
        raise_scan_error(err, file)
    if tail == "truncated":
        check_truncated_tail(buf, valid_end, max_batch_bytes, file)
    recs = _finish(a, c, table, buf.shape[0], valid_end, tail, file, topic, partition, options,
                   None if views is None else views.buffers(kept))
    if binary == "view" and views is None:
        return recs.replace(key=_as_views(recs.decoded("key")), value=_as_views(recs.decoded("value")))
    return recs


_VIEW_MAX_BUFFER = (1 << 31) - 1   # view offsets are int32
VIEW_MIN_KERNEL_CODEC_BATCH = 16 << 10   # see _small_kernel_codec_batches


def kernel_decompresses(codec, magic, plen, c_codecs=None):
    """Which batches (columns of a batch table) the kernel decompresses itself: v2 batches of the codecs in
    ``c_codecs`` (default `C_CODECS`), snappy ones of at most `SNAPPY_KERNEL_MAX_BYTES`."""
    c_codecs = C_CODECS if c_codecs is None else c_codecs
    mine = (magic == 2) & (((c_codecs >> codec.astype(np.int64)) & 1) == 1)
    return mine & ((codec != _SNAPPY) | (plen <= SNAPPY_KERNEL_MAX_BYTES))


def _small_kernel_codec_batches(table, count):
    """True when the batches the kernel would decompress itself (`kernel_decompresses`) are small on
    average: views need their decompressed records kept, so they would be decompressed one by one in
    Python, whose per-batch cost then outweighs the copy views save -- those decodes take views over
    the contiguous output instead."""
    mine = kernel_decompresses(table["codec"][:count], table["magic"][:count], table["payload_len"][:count])
    if not mine.any():
        return False
    return float(table["payload_len"][:count][mine].clip(0).mean()) < VIEW_MIN_KERNEL_CODEC_BATCH


class _ViewBuffers:
    """binary="view": the data buffers the kernel's views point into. Buffer 0 is the input; the
    decompressed payload of compressed batch b (a v2 batch's records, a v0/v1 wrapper's inner
    messages) is buffer index[b], numbered in batch order, so parts decoded by different threads
    agree on the numbering."""

    def __init__(self, buf, table, count):
        self.buf = buf
        self.order = np.flatnonzero(table["codec"][:count] != 0)
        self.index = np.zeros(len(table["codec"]), np.int32)
        self.index[self.order] = np.arange(1, len(self.order) + 1, dtype=np.int32)

    def buffers(self, kept):
        """The data buffers, from the payloads the decode kept (batch -> buffer); a compressed
        batch without records has none (an empty placeholder keeps the numbering)."""
        return [self.buf] + [kept.get(int(b), b"") for b in self.order]


def _as_views(col):
    """A contiguous column as a `BinaryViewColumn` over its own data buffer (no value copied)."""
    if col is None:
        return None
    import pyarrow as pa

    arr = col.to_arrow().cast(pa.binary_view())
    validity, views, *data = arr.buffers()
    return BinaryViewColumn(np.frombuffer(views, np.uint8).reshape(-1, 16)[arr.offset:arr.offset + len(arr)],
                            [d for d in data if d is not None],
                            None if not arr.null_count else np.packbits(np.asarray(arr.is_valid()), bitorder="little"),
                            arr.null_count)


# -- threads ------------------------------------------------------------------------------------

_BINARY_LAYOUTS = ("contiguous", "view")
PARALLEL_MIN_BYTES = 4 << 20   # inputs smaller than this are decoded by one thread
GROUP_MIN_BYTES = 1 << 20     # the smallest part a buffer is split into
COMPRESSED_SHARE_FOR_THREADS = 0.5   # contiguous layout: see _worth_splitting
_GROUPS_PER_THREAD = 4         # parts per thread: balance, and the join's peak memory (1 + 1/parts)


def _split(table, count, threads, nbytes, copies_values=False, views=False):
    """Batch ranges [(lo, hi)] decoded by separate threads: one when threads == 1 or the input is
    small, else parts of about equal input bytes, cut at batch boundaries. copies_values (the
    contiguous layout): mostly uncompressed input stays on one thread -- its decode is a copy of
    the values, which joining the parts would do a second time."""
    if threads <= 1 or count < 2 or nbytes < PARALLEL_MIN_BYTES:
        return [(0, count)]
    if copies_values and "codec" in table and not _worth_splitting(table, count, nbytes, views):
        return [(0, count)]
    parts = int(min(threads * _GROUPS_PER_THREAD, max(2, nbytes // GROUP_MIN_BYTES), count))
    ends = (table["position"][:count] + table["size"][:count].astype(np.int64) + 12)
    cuts = np.searchsorted(ends, np.linspace(ends[0], ends[-1], parts + 1)[1:-1], side="left") + 1
    edges = sorted(set([0] + [int(c) for c in cuts if 0 < c < count] + [count]))
    return list(zip(edges, edges[1:]))


def _worth_splitting(table, count, nbytes, views=False):
    """The contiguous layout: whether decoding in parts pays for joining them (a second copy of
    the output). Measured here: uncompressed input and large lz4/zstd batches (decompressed in the
    C loop at memory speed) do not (0.8-1.0x with 2 threads); batches decompressed in Python (gzip,
    snappy, v0/v1 wrappers) and small lz4/zstd batches (per-batch costs) do (1.3x). binary="view":
    uncompressed input does not either (0.64x: the serial CRC pass and the hand-offs outweigh the
    parallel record walk), compressed input does (1.17-1.65x lz4)."""
    codec = table["codec"][:count]
    plen = table["payload_len"][:count].clip(0)
    compressed = codec != 0
    in_kernel = compressed & kernel_decompresses(codec, table["magic"][:count], plen)
    if views:   # every compressed batch is decompressed in Python (its buffer is kept)
        return int(plen[compressed].sum()) >= nbytes * COMPRESSED_SHARE_FOR_THREADS
    python_bytes = int(plen[compressed & ~in_kernel].sum())
    if python_bytes >= nbytes * COMPRESSED_SHARE_FOR_THREADS:
        return True
    kernel = int(in_kernel.sum())
    return kernel > 0 and int(plen[in_kernel].sum()) >= nbytes * COMPRESSED_SHARE_FOR_THREADS and \
        int(plen[in_kernel].sum()) / kernel < VIEW_MIN_KERNEL_CODEC_BATCH


def _decode_parallel(buf, table, groups, options, chunk_bytes, file, views=None):
    """Decode each batch range in the decode pool; the first error in byte order is raised once
    the ranges before it are known to be clean; the outputs are joined in order."""
    pool = thread_pool(resolve_threads(options.threads))
    futures = [pool.submit(_decode_group, buf, table, lo, hi, options, chunk_bytes, file, views) for lo, hi in groups]
    results, kept = [], {}
    try:
        for f in futures:
            a, c, k = f.result()
            results.append((a, c))
            kept.update(k)
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    futures.clear()
    a, c = _join(results, options, pool)
    return a, c, kept


def _join(results, options, pool):
    """One set of kernel outputs from the parts' (arrays, counts), in order. The joined arrays are
    allocated untouched and filled part by part, each part dropped once copied (peak memory: the
    output plus one part); the large copies run in the pool (NumPy copies without the GIL)."""
    counts = [c for _, c in results]
    n = sum(c["records"] for c in counts)
    nh = sum(c["headers"] for c in counts)
    nc = sum(c["controls"] for c in counts)
    c = dict(records=n, headers=nh, controls=nc,
             key_nulls=sum(x["key_nulls"] for x in counts), value_nulls=sum(x["value_nulls"] for x in counts),
             header_value_nulls=sum(x["header_value_nulls"] for x in counts))
    first = results[0][0]
    out = {}
    plan = []   # (name, per-part length of the used prefix, kind)
    for name in ("offset", "timestamp", "timestamp_type", "batch_index"):
        plan.append((name, [x["records"] for x in counts], "plain"))
    for name in _CONTROL_COLUMNS:
        plan.append((name, [x["controls"] for x in counts], "plain"))
    binaries = [("key", "records", "key_nulls", options.keys), ("value", "records", "value_nulls", options.values)]
    if options.binary == "view":   # 16-byte views, their buffer numbers global: copied as they are
        for prefix, group, nulls, wanted in binaries:
            if wanted:
                plan.append((prefix + "_views", [x["records"] for x in counts], "plain"))
                if c[nulls]:
                    plan.append((prefix + "_validity", [x["records"] for x in counts], "bits"))
        binaries = []
    if options.headers:
        binaries += [("header_key", "headers", None, True), ("header_value", "headers", "header_value_nulls", True)]
        plan.append(("header_index", [x["records"] for x in counts], "index"))
    for prefix, group, nulls, wanted in binaries:
        if not wanted:
            continue
        plan.append((prefix + "_data", [int(a[prefix + "_offsets"][x[group]]) for a, x in results], "plain"))
        plan.append((prefix + "_offsets", [x[group] for x in counts], "offsets"))
        if nulls is None or c[nulls]:
            plan.append((prefix + "_validity", [x[group] for x in counts], "bits"))
    bits = [(name, lengths) for name, lengths, kind in plan if kind == "bits"]
    for name, lengths in bits:    # validity bitmaps are small (one bit per row)
        out[name] = np.packbits(np.concatenate([_bits(a[name], k) for (a, _), k in zip(results, lengths)]),
                                bitorder="little")
    plan = [x for x in plan if x[2] != "bits"]
    at, base = {}, {}
    for name, lengths, kind in plan:
        extra = 1 if kind != "plain" else 0
        out[name] = _empty(sum(lengths) + extra, first[name].dtype)
        if extra:
            out[name][0] = 0
        at[name], base[name] = 0, 0
    threads = resolve_threads(options.threads)
    for p, (a, _) in enumerate(results):
        jobs = []
        for name, lengths, kind in plan:
            k, src, dest = lengths[p], a[name], out[name]
            if kind == "plain":
                jobs += _pieces(np.copyto, dest[at[name]:at[name] + k], src[:k], 0, threads)
            else:
                jobs += _pieces(np.add, dest[at[name] + 1:at[name] + 1 + k], src[1:k + 1], base[name], threads)
                base[name] += int(src[k])
            at[name] += k
        # a large copy is split between the pool and this thread (NumPy copies without the GIL, so
        # the workers get it while this thread copies); small ones are done here (a pool round
        # trip can wait for the GIL up to the 5 ms switch interval)
        futures = []
        for j in jobs:
            if j[1].nbytes >= _PARALLEL_COPY_BYTES and threads > 1:
                pieces = _slices(j, threads)
                futures += [pool.submit(_copy_job, x) for x in pieces[1:]]
                _copy_job(pieces[0])
            else:
                _copy_job(j)
        for f in futures:
            f.result()
        held = sum(x.nbytes for x in a.values())
        a.clear()     # this part's buffers go now: peak memory is the output plus one part
        if held >= _TRIM_BYTES:
            _trim()
    return out, c


_TRIM_BYTES = 1 << 20


def _trim():
    """Give freed heap memory back to the system (glibc keeps what worker threads' arenas freed,
    so the parts' buffers would otherwise stay resident through the join)."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes

            _malloc_trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):   # pragma: no cover - not glibc
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim = None


def _warm_allocator(nbytes=16 << 20):
    """Free one large malloc block once: glibc then raises its mmap threshold (to that size), so
    the decode's outputs below it are recycled from the heap instead of being mapped afresh on
    every call -- ~900 page faults (1-2 ms) per 40k-record decode in a fresh process otherwise
    (a process that freed any large array is in this state already)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        p = libc.malloc(nbytes)
        if p:
            libc.free(p)
    except (OSError, AttributeError):   # pragma: no cover - not glibc
        pass


_warm_allocator()


def _empty(n, dtype):
    """An uninitialized array, large ones on 2 MiB boundaries with huge-page advice (the kernel's
    own output buffers: filling them costs 512x fewer page faults than 4 KiB pages)."""
    dtype = np.dtype(dtype)
    if n * dtype.itemsize < (2 << 20):
        return np.empty(n, dtype)
    return np.frombuffer(_kernel.GrowableBuffer(n * dtype.itemsize), dtype, count=n)


def _pieces(fn, dest, src, base, threads):
    """The copy job dest[:] = src + base.""" 
    return [(fn, dest, src, base)] if len(dest) else []


_PARALLEL_COPY_BYTES = 4 << 20


def _slices(job, k):
    fn, dest, src, base = job
    edges = [len(dest) * i // k for i in range(k + 1)]
    return [(fn, dest[x:y], src[x:y], base) for x, y in zip(edges, edges[1:]) if y > x]


def _copy_job(job):
    fn, dest, src, base = job
    if fn is np.copyto or not base:
        np.copyto(dest, src)
    else:
        np.add(src, base, out=dest)


def _bits(validity, k):
    return np.unpackbits(validity, bitorder="little", count=k).astype(bool, copy=False) if k else np.ones(0, bool)


_CONTROL_COLUMNS = ("control_offset", "control_batch_index", "control_type", "control_version",
                    "control_coordinator_epoch", "control_timestamp")


def _decode_group(buf, table, lo, hi, options, chunk_bytes, file, views=None):
    """Decode batches [lo, hi): the kernel's (arrays, counts)."""
    cols, work = _prepare(buf, table, lo, hi, options)
    _decode_chunks(cols, buf, table, lo, hi, work, options, chunk_bytes, file, views)
    a = cols.arrays()
    return a, cols.counts, work["payloads"]


# -- decoding in chunks -------------------------------------------------------------------------

def _prepare(buf, table, lo, hi, options):
    """The kernel's output columns for batches [lo, hi), sized from the batch table (and the frame
    headers of the batches the kernel decompresses, in buf), and which batches need what (batch
    numbers are the table's)."""
    sizes, ahead, work = _sizes(buf, table, lo, hi, options)
    cols = _kernel.Columns(**sizes)
    if ahead is not None:
        cols.reserve(*ahead[0])
        cols.reserve_headers(*ahead[1])
    return cols, work


def _sizes(buf, table, lo, hi, options):
    """What the kernel's outputs need for batches [lo, hi) of a batch table over buf: the Columns
    arguments (sized from the table), the reservations ahead for batches the kernel decompresses
    itself (or None) as (reserve args, reserve_headers args), and which batches need what."""
    sl = slice(lo, hi)
    codec = table["codec"][sl]
    counts = table["record_count"][sl]
    magic = table["magic"][sl]
    plen = table["payload_len"][sl]
    # the cleaner leaves v2 batches without records and without payload, whatever their codec bits
    needs = (codec != 0) & ((magic < 2) | (counts > 0) | (plen > 0))
    # v2 batches the kernel decompresses itself (`kernel_decompresses`: lz4 / zstd when their libraries loaded,
    # small snappy payloads)
    # (not for binary="view": values then point into decompressed buffers that must be kept)
    c_codecs = 0 if options.binary == "view" else C_CODECS
    in_kernel = needs & kernel_decompresses(codec, magic, plen, c_codecs)
    plain = codec == 0
    plain_bytes = int(plen[plain].clip(0).sum())
    # record counts of uncompressed batches were checked against their size by the scan; those of
    # compressed batches are checked against the decompressed size, chunk by chunk, before use
    n_est = int(counts[plain].sum()) + 1
    ctrl_est = int(counts[plain & table["is_control"][sl]].sum())
    view = options.binary == "view"
    sizes = dict(
        # key/value bytes (views: the kernel keeps none)
        records=n_est, key_bytes=plain_bytes // 4 + 1024, value_bytes=plain_bytes + 1024,
        # headers: room for one per record, their bytes a share of the records' (address space
        # only until used; the arrays shrink to fit): growing them means decoding a batch again
        headers=n_est if options.headers else 16, header_key_bytes=plain_bytes // 16 + 256 if options.headers else 16,
        header_value_bytes=plain_bytes // 8 + 1024 if options.headers else 16,
        controls=ctrl_est, want_keys=options.keys, want_values=options.values, want_headers=options.headers,
        include_control=options.include_control, verify_crc=bool(options.verify_crc), c_codecs=c_codecs,
        max_decompressed=_codec_base.DEFAULT_MAX_DECOMPRESSED if options.max_decompressed is None
        else options.max_decompressed, views=view)
    ahead = None
    if in_kernel.any():
        # their decompressed sizes show only in the kernel: reserve what their frame headers tell
        # (a typical ratio where they do not; grown beyond). A generous guess is not free: past
        # glibc's mmap threshold the outputs are mapped afresh on every call, a page fault per page
        rows = np.flatnonzero(in_kernel) + lo
        guess = _kernel.decompressed_guess(buf, rows, table["codec"], table["payload_start"], table["payload_len"],
                                           _IN_KERNEL_RATIO_GUESS, sizes["max_decompressed"])
        stored = int(plen[in_kernel].sum())
        decompressed = min(int(guess.sum()), _MAX_RATIO_AHEAD * stored, 4 << 30)
        records = int(np.minimum(counts[in_kernel], guess // _MIN_RECORD_BYTES).sum())
        ahead = ((min(stored, decompressed, 1 << 30), decompressed, records), (records // 4, records, 4 * records))
    full = np.zeros(len(table["codec"]), bool)
    full[sl] = in_kernel
    compressed = np.flatnonzero(needs & ~in_kernel) + lo
    # (the compressed bytes decompressed outside the kernel: what `_decode_chunks` reserves for)
    return sizes, ahead, dict(in_kernel=full, compressed=compressed, payloads={},
                              compressed_bytes=int(table["payload_len"][compressed].clip(0).sum()))


def _decode_chunks(cols, buf, table, lo, hi, work, options, chunk_bytes, file, views=None, batch_base=0,
                   comp_beyond=0):
    """Run the kernel over batches [lo, hi) in chunks whose decompressed payloads stay under
    chunk_bytes; a batch that fails to decompress is raised once the batches before it are
    decoded (a record-level fault in one of them comes first in the data). binary="view": the
    decompressed payloads are kept in work["payloads"] (batch -> buffer). batch_base: added to
    the batch numbers the records get (see `RangeDecoder`). comp_beyond: about how many more
    compressed bytes later calls will bring into the same outputs (reserved for at once, with these)."""
    decompress = _Decompressor(buf, table, options.max_decompressed, file)
    keep = work["payloads"] if options.binary == "view" else None
    in_kernel = work["in_kernel"]
    compressed_l = work["compressed"].tolist()
    comp_len = table["payload_len"].clip(0)
    # compressed bytes not yet decompressed, here and in the calls to come
    comp_left = work["compressed_bytes"] + comp_beyond
    counts = table["record_count"]
    b, ci = lo, 0
    while b < hi:
        got = {}                 # batch -> its payload decompressed here (none: no payload list at all)
        stop = b
        decompressed = comp_used = claimed = 0
        pending = None
        while stop < hi and (decompressed + _BATCH_WEIGHT * (stop - b) < chunk_bytes or stop == b):
            nxt = compressed_l[ci] if ci < len(compressed_l) else hi
            if nxt > stop:
                if not got:
                    # batches that need no payload, up to the next one that does: one kernel call
                    # (no memory to bound, no per-batch list to build)
                    stop = min(nxt, hi)
                    break
                # uncompressed batches up to the next compressed one, as many as the budget takes
                room = -(-(chunk_bytes - decompressed) // _BATCH_WEIGHT)
                stop = min(nxt, hi, max(stop + 1, b + room))
                continue
            try:
                p = decompress(stop)
            except errors.KafkafmtError as exc:
                pending = exc
                break
            decompressed += len(p)
            comp_used += int(comp_len[stop])
            claimed += min(int(counts[stop]), len(p) // _MIN_RECORD_BYTES)
            got[stop] = p
            if keep is not None:
                keep[stop] = p
            ci += 1
            stop += 1
        if decompressed:
            _reserve_ahead(cols, decompressed, comp_used, comp_left, claimed)
        comp_left -= comp_used
        payloads = None
        if got:
            payloads = [None] * (stop - b)
            for k, p in got.items():
                payloads[k - b] = p
        start = b
        while True:
            status, at, err_at, grow = cols.run(buf, table, start, stop,
                                                None if payloads is None else payloads[start - b:],
                                                None if views is None else views.index, batch_base)
            if status == _kernel.NEED_GROW_:
                cols.grow(grow, 1 << 16)
                start = at
                continue
            if status != 0:
                _raise_kernel_error(status, at, err_at, table, at in got or bool(in_kernel[at]), file)
            break
        if pending is not None:
            raise pending
        b = stop


def _reserve_ahead(cols, decompressed, comp_used, comp_left, claimed):
    """Size the outputs once for everything still compressed, from the ratio seen so far (values
    fit in their decompressed records; keys are typically a small share). The ratio is capped:
    one very compressible batch must not reserve that ratio times the rest of the input; data
    that really expands more grows the outputs geometrically."""
    rest = comp_left - comp_used
    ratio = min(decompressed / max(comp_used, 1), _MAX_RATIO_AHEAD)
    ahead = decompressed + int(rest * ratio)
    cols.reserve(ahead // 8, ahead, claimed + min(int(claimed * rest / max(comp_used, 1)),
                                                  int(rest * ratio) // _MIN_RECORD_BYTES))


def _raise_kernel_error(status, b, err_at, table, compressed, file):
    cls, msg = ERRORS.get(status, (errors.CorruptRecordError, f"malformed records (code {status})"))
    if compressed:
        msg += f" (at byte {err_at} of the decompressed records)"
        position = int(table["position"][b])
    else:
        position = int(table["payload_start"][b]) + err_at
    exc = cls(msg.format(size=""), file=file, position=position, offset=int(table["base_offset"][b]))
    exc.batch_position = int(table["position"][b])
    raise exc


def _binary(offsets, data, validity, nulls, n):
    offsets = offsets[:n + 1]
    used = int(offsets[-1])
    if used < (1 << 31) - 1:
        offsets = offsets.astype(np.int32)
    return BinaryColumn(offsets, data[:used], validity[:(n + 7) // 8] if nulls else None, nulls)


def _controls_table(a, nc):
    return Table({
        "offset": a["control_offset"][:nc], "batch_index": a["control_batch_index"][:nc],
        "type": a["control_type"][:nc], "version": a["control_version"][:nc],
        "coordinator_epoch": a["control_coordinator_epoch"][:nc], "timestamp": a["control_timestamp"][:nc],
    })


def _key_or_value(a, c, name, n, view_buffers):
    """The kernel's "key" or "value" output as a column: binary_view elements into view_buffers
    (binary="view"), else offsets + data."""
    validity, nulls = a.get(name + "_validity"), c[name + "_nulls"]
    if view_buffers is not None:
        return BinaryViewColumn(a[name + "_views"][:n].view(np.uint8).reshape(-1, 16), view_buffers,
                                validity[:(n + 7) // 8] if nulls else None, nulls)
    return _binary(a[name + "_offsets"], a[name + "_data"], validity, nulls, n)


def _finish(a, c, table, nbytes, valid_end, tail, file, topic, partition, options, view_buffers=None):
    """The Records of the kernel's outputs; view_buffers: the data buffers of binary="view" columns."""
    n, nh, nc = c["records"], c["headers"], c["controls"]
    batch_table(table)
    headers = None
    if options.headers:
        hdr_offsets = a["header_index"][:n + 1]
        headers = Headers(
            hdr_offsets.astype(np.int32) if nh < (1 << 31) - 1 else hdr_offsets,
            _binary(a["header_key_offsets"], a["header_key_data"], a["header_key_validity"], 0, nh),
            _binary(a["header_value_offsets"], a["header_value_data"], a.get("header_value_validity"),
                    c["header_value_nulls"], nh))
    # columns not asked for are absent (None), never null or empty
    return Records(
        offset=a["offset"][:n], timestamp=a["timestamp"][:n], timestamp_type=a["timestamp_type"][:n],
        batch_index=a["batch_index"][:n],
        key=_key_or_value(a, c, "key", n, view_buffers) if options.keys else None,
        value=_key_or_value(a, c, "value", n, view_buffers) if options.values else None,
        headers=headers, batches=Table(table), controls=_controls_table(a, nc),
        topic=topic, partition=partition, file=file,
        valid_bytes=valid_end, trailing_bytes=nbytes - valid_end, tail=tail if nbytes > valid_end else None,
    )


class RangeDecoder:
    """Decode the batch tables of several buffers, one after the other, into one set of kernel
    outputs -- many small segments decoded into one `Records` without one per segment, nor a
    concatenation. ``add(buf, table)`` per buffer (a `scan_ranges` table, rows selected as the
    caller wants), ``finish(batches)`` once. A failed ``add`` raises as `decode` does (positions
    those of its buffer); ``mark()`` / ``rewind()`` drop what adds decoded after the mark.
    binary="view" is not supported (the buffers are reused)."""

    def __init__(self, options, chunk_bytes=1 << 20, expected_bytes=None):
        if options.binary != "contiguous":
            raise ValueError("RangeDecoder decodes into contiguous columns only")
        self.options = options
        self.chunk_bytes = chunk_bytes
        self.expected = expected_bytes   # input bytes all adds will bring, when known: outputs sized once
        self.seen = 0             # input bytes added so far
        self.cols = None
        self.batches = 0          # batch rows added so far: the next table's first batch number

    def mark(self):
        return (None if self.cols is None else self.cols.mark(), self.batches, self.seen)

    def rewind(self, mark):
        cols_mark, self.batches, self.seen = mark
        if self.cols is not None:
            self.cols.rewind(cols_mark if cols_mark is not None else (0, 0, 0, 0, 0, 0))

    def add(self, buf, table):
        """Decode every batch of `table` (its positions in buf); its records get batch numbers
        after those of earlier tables."""
        n = len(table["position"])
        if not n:
            return
        buf = as_uint8(buf)
        sizes, ahead, work = _sizes(buf, table, 0, n, self.options)
        nbytes = int(table["size"].sum())
        if self.cols is None:
            if self.expected is not None and self.expected > nbytes:
                # the outputs for everything expected, sized once from what this first table holds
                # (address space only until used; growing them later would copy what they hold)
                scale = self.expected / nbytes
                for k in ("records", "key_bytes", "value_bytes", "headers", "header_key_bytes",
                          "header_value_bytes", "controls"):
                    sizes[k] = int(sizes[k] * scale) + 16
                # value bytes for twice the input at least: the first table's mix of codecs (plain, or
                # decompressed here or by the kernel) may not be the rest's, and an output grown at a later
                # add copies everything decoded before it -- memory the process keeps (the Arrow peak)
                sizes["value_bytes"] = max(sizes["value_bytes"], min(2 * self.expected, _VALUE_FLOOR_MAX))
                if ahead is not None:
                    ahead = tuple(tuple(int(x * scale) for x in a) for a in ahead)
            self.cols = _kernel.Columns(**sizes)
        else:
            self.cols.reserve(sizes["key_bytes"], sizes["value_bytes"], sizes["records"])
            self.cols.reserve_headers(sizes["headers"], sizes["header_key_bytes"], sizes["header_value_bytes"])
        if ahead is not None:
            self.cols.reserve(*ahead[0])
            self.cols.reserve_headers(*ahead[1])
        # the compressed bytes the adds to come will bring, about (this table's share of them in what is
        # expected still): reserved for at the ratio the first payloads show, not grown into add by add
        beyond = 0
        rest = 0 if self.expected is None else self.expected - self.seen - nbytes
        if rest > 0 and nbytes and len(work["compressed"]):
            beyond = min(rest * work["compressed_bytes"] // nbytes,
                         _RESERVE_BEYOND_MAX)
        self.seen += nbytes
        _decode_chunks(self.cols, buf, table, 0, n, work, self.options, self.chunk_bytes, None,
                       batch_base=self.batches, comp_beyond=beyond)
        self.batches += n

    def finish(self, batches):
        """The `Records` of everything added; `batches`: the batch table of every table added, in
        order (its rows are the records' batch numbers)."""
        if self.cols is None:      # nothing added: empty outputs
            empty = _scan.scan(np.zeros(0, np.uint8), _scan.CRC_SKIP_, 0, 1)
            self.cols, _ = _prepare(np.zeros(0, np.uint8), empty, 0, 0, self.options)
        a = self.cols.arrays()
        return _finish(a, self.cols.counts, dict(batches), 0, 0, None, None, None, None, self.options)
