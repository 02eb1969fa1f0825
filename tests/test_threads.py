"""threads=: a parallel decode / log-dir read equals the serial one, errors included.

The size threshold below which decode stays serial is lowered (kafkafmt.record._decoder.PARALLEL_MIN_BYTES
and GROUP_MIN_BYTES, public tuning knobs; kafkafmt.read._readers.BULK_RUN_MIN_BYTES for a log-dirs read's runs)
so small test buffers are split into many parts."""
import glob
import json
import os
import re
import pathlib
import random

import numpy as np
import pytest

import kafkafmt
from kafkafmt import errors
from kafkafmt.record import _decoder as decoder
from kafkafmt.read import _readers as readers
from kafkafmt._util import threads as kthreads
from kafkafmt.read import read_log_dir, read_log_dirs, iter_log_dir

import pyarrow as pa


@pytest.fixture
def split_small(monkeypatch):
    monkeypatch.setattr(decoder, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(decoder, "GROUP_MIN_BYTES", 1)
    monkeypatch.setattr(decoder, "COMPRESSED_SHARE_FOR_THREADS", 0)
    monkeypatch.setattr(readers, "BULK_RUN_MIN_BYTES", 0)


def _records(n, seed=1, nulls=True):
    rnd = random.Random(seed)
    keys = [None if nulls and rnd.random() < 0.1 else rnd.randbytes(rnd.randint(0, 20)) for _ in range(n)]
    values = [None if nulls and rnd.random() < 0.05 else rnd.randbytes(rnd.randint(0, 300)) for _ in range(n)]
    headers = [[("h", rnd.randbytes(3))] if rnd.random() < 0.3 else [] for _ in range(n)]
    return dict(keys=keys, values=values, headers=headers, timestamps=[1_700_000_000_000 + i for i in range(n)])


def _buffer(codecs=(None, "gzip", "snappy", "lz4", "zstd"), n=200, per=17, magic=2):
    parts, off = [], 0
    for i, codec in enumerate(codecs):
        r = _records(n, seed=i)
        if magic < 2:
            r.pop("headers")
        parts.append(kafkafmt.encode(**r, compression=codec, max_records=per, base_offset=off, magic=magic))
        off += n
    return b"".join(parts)


def same(a, b):
    assert a.to_arrow().equals(b.to_arrow())
    assert a.batches.columns == b.batches.columns
    for c in a.batches.columns:
        np.testing.assert_array_equal(a.batches[c], b.batches[c], err_msg=c)
    for c in a.controls.columns:
        np.testing.assert_array_equal(a.controls[c], b.controls[c], err_msg=c)
    assert (a.valid_bytes, a.trailing_bytes, a.tail) == (b.valid_bytes, b.trailing_bytes, b.tail)


def test_resolve_threads():
    assert kthreads.resolve_threads(None) == len(os.sched_getaffinity(0))
    assert kthreads.resolve_threads(1) == 1
    assert kthreads.resolve_threads(3) == 3
    with pytest.raises(ValueError):
        kthreads.resolve_threads(-1)


@pytest.mark.parametrize("magic", [2, 1, 0])
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_decode_parallel_equals_serial(split_small, magic, threads):
    codecs = (None, "gzip", "snappy", "lz4", "zstd") if magic == 2 else (None, "gzip", "snappy", None)
    buf = _buffer(codecs, magic=magic)
    serial = kafkafmt.decode(buf, threads=1)
    assert len(decoder._split(_scan_table(buf), len(serial.batches), threads, len(buf))) > 1
    same(serial, kafkafmt.decode(buf, threads=threads))
    for kw in (dict(keys=False), dict(values=False, headers=False), dict(verify_crc=False),
               dict(keys=False, values=False, headers=False),
               dict(start=int(kafkafmt.scan_batches(buf)[0].position[3]), stop=len(buf) - 5)):
        same(kafkafmt.decode(buf, threads=1, **kw), kafkafmt.decode(buf, threads=threads, **kw))


def _scan_table(buf):
    from kafkafmt._native import scan
    t = scan.scan(np.frombuffer(buf, np.uint8), scan.CRC_SKIP_, 0, 256 << 20)
    return t


def test_decode_parallel_controls_and_transactions(split_small):
    parts = [kafkafmt.encode(**_records(50, seed=k), max_records=7, base_offset=100 * k, producer_id=9,
                             transactional=True) + kafkafmt.encode_control(
        "commit" if k % 2 else "abort", offset=100 * k + 50, producer_id=9) for k in range(6)]
    buf = b"".join(parts)
    for inc in (False, True):
        same(kafkafmt.decode(buf, threads=1, include_control=inc), kafkafmt.decode(buf, threads=4, include_control=inc))


def _corrupt(buf, where, value=0xFF):
    b = bytearray(buf)
    b[where] ^= value
    return bytes(b)


def _error(fn):
    try:
        fn()
    except errors.KafkafmtError as exc:
        return type(exc), str(exc), exc.position, exc.offset, getattr(exc, "batch_position", None)
    return None


@pytest.mark.parametrize("seed", range(12))
def test_first_error_in_byte_order_wins(split_small, seed):
    """Two damaged batches (CRC on / off, record-level damage, a broken compressed payload): the
    parallel decode raises exactly the serial decode's error."""
    buf = _buffer()
    t = kafkafmt.scan_batches(buf)[0]
    rnd = random.Random(seed)
    picks = sorted(rnd.sample(range(len(t)), 2))
    for b in picks:
        pos = int(t.position[b]) + rnd.randint(61, int(t.size[b]) + 11)
        buf = _corrupt(buf, pos, rnd.randint(1, 255))
    for crc in (True, None):
        want = _error(lambda: kafkafmt.decode(buf, threads=1, verify_crc=crc))
        got = _error(lambda: kafkafmt.decode(buf, threads=4, verify_crc=crc))
        assert got == want
        if crc:
            assert want is not None and want[0] is errors.CrcError
            assert want[4] == int(t.position[picks[0]])


def test_truncated_tail_and_trailing_zeros(split_small):
    buf = _buffer()
    for data in (buf[:-40], buf + bytes(100)):
        same(kafkafmt.decode(data, threads=1), kafkafmt.decode(data, threads=4))


def test_large_buffer_uses_default_threshold():
    buf = _buffer(("gzip", "snappy"), n=3000, per=50)
    assert len(buf) < decoder.PARALLEL_MIN_BYTES   # the default keeps small inputs serial
    big = buf * (decoder.PARALLEL_MIN_BYTES // len(buf) + 1)
    # offsets repeat (a record set, not a segment): decode does not check them unless asked
    serial = kafkafmt.decode(big, threads=1)
    t = kafkafmt.scan_batches(big)[0]
    table = {"position": t.position, "size": t["size"], "codec": t.codec, "payload_len": t["size"], "magic": t.magic}
    assert len(decoder._split(table, len(t), 2, len(big), copies_values=True)) > 1
    same(serial, kafkafmt.decode(big, threads=2))
    same(serial, kafkafmt.decode(big))          # default: all cores


def test_uncompressed_contiguous_stays_serial_views_split():
    """Uncompressed input (and large lz4/zstd batches) in the contiguous layout is one part (its
    decode is a copy the join would repeat); metadata-only decodes split it."""
    t = kafkafmt.scan_batches(_buffer((None,), n=5000, per=50))[0]
    table = {"position": t.position, "size": t["size"], "codec": t.codec, "payload_len": t["size"], "magic": t.magic}
    n = decoder.PARALLEL_MIN_BYTES
    assert decoder._split(table, len(t), 4, n, copies_values=True) == [(0, len(t))]
    assert len(decoder._split(table, len(t), 4, n, copies_values=False)) > 1
    assert decoder._split(table, len(t), 4, n, copies_values=True, views=True) == [(0, len(t))]
    t = kafkafmt.scan_batches(_buffer(("lz4",), n=5000, per=2000))[0]
    table = {"position": t.position, "size": t["size"], "codec": t.codec, "payload_len": t["size"], "magic": t.magic}
    if decoder.C_CODECS & (1 << 3):
        assert decoder._split(table, len(t), 4, n, copies_values=True) == [(0, len(t))]


def test_minor_faults_per_decode_are_bounded(split_small):
    """Page faults do not grow with the number of parts: the join fills the output once."""
    import resource

    buf = _buffer(n=2000, per=100)
    faults = {}
    for threads in (1, 4):
        kafkafmt.decode(buf, threads=threads)
        r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(5):
            kafkafmt.decode(buf, threads=threads)
        faults[threads] = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 5
    # the output is ~ len(buf): at most one fault per 4 KiB page of it twice over, plus slack
    assert faults[4] <= 2 * len(buf) / 4096 + 200, faults


# --- log dirs ------------------------------------------------------------------------------------

def _write_log(tmp_path, name="t-0", segments=6, corrupt=None):
    from kafkafmt.log import LogWriter

    folder = tmp_path / name
    with LogWriter(folder, segment_bytes=40_000) as w:
        for k in range(segments * 4):
            r = _records(60, seed=k)
            w.append(**r, compression=[None, "lz4", "zstd", "gzip"][k % 4])
    logs = sorted(folder.glob("*.log"))
    if corrupt is not None:
        for i in corrupt:
            b = bytearray(logs[i].read_bytes())
            b[len(b) // 2] ^= 0x5A
            logs[i].write_bytes(bytes(b))
    return folder, logs


def test_read_log_dir_threads_equal_serial(tmp_path):
    folder, logs = _write_log(tmp_path)
    assert len(logs) > 3
    serial = read_log_dir(folder, threads=1)
    for threads in (2, 4, None):
        r = read_log_dir(folder, threads=threads)
        same(serial, r)
        assert r.report == serial.report
    for kw in (dict(start_offset=150, end_offset=1200), dict(columns=["offset"]), dict(isolation="read_committed")):
        same(read_log_dir(folder, threads=1, **kw), read_log_dir(folder, threads=4, **kw))


def test_read_log_dir_threads_errors_and_salvage(tmp_path):
    folder, logs = _write_log(tmp_path, corrupt=[1, 3])
    want = _error(lambda: read_log_dir(folder, threads=1))
    assert want is not None
    assert _error(lambda: read_log_dir(folder, threads=4)) == want
    s = read_log_dir(folder, threads=1, errors="salvage")
    p = read_log_dir(folder, threads=4, errors="salvage")
    same(s, p)
    assert [(e.kind, e.file, e.start, e.end) for e in s.report] == [(e.kind, e.file, e.start, e.end) for e in p.report]


def test_read_log_dir_rereads_a_segment_after_overlap(tmp_path):
    """A segment whose batches start at or below the previous segment's last offset: serial and
    parallel reads raise the same out-of-sequence error."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    a = kafkafmt.encode(**_records(40), max_records=10, base_offset=0)
    b = kafkafmt.encode(**_records(40, seed=5), max_records=10, base_offset=30)   # overlaps 30..39
    (folder / "00000000000000000000.log").write_bytes(a)
    (folder / "00000000000000000020.log").write_bytes(b)
    want = _error(lambda: read_log_dir(folder, threads=1))
    got = _error(lambda: read_log_dir(folder, threads=4))
    assert got == want


def _runs(monkeypatch, root, threads):
    """How many runs a log-dirs read of ``root`` reads its small partitions in (a bulk read each)."""
    calls = []
    real = readers.read_units

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    with monkeypatch.context() as m:
        m.setattr(readers, "read_units", counted)
        read_log_dirs(root, threads=threads)
    return len(calls)


def test_read_log_dirs_and_iter_threads(split_small, tmp_path, monkeypatch):
    for name in ("a-0", "a-1", "b-0"):
        _write_log(tmp_path, name, segments=3)
    serial = read_log_dirs(tmp_path, threads=1)
    same(serial, read_log_dirs(tmp_path, threads=3))
    assert _runs(monkeypatch, tmp_path, 3) == 3           # (the partitions shared out among the threads)
    monkeypatch.setattr(readers, "BULK_RUN_MIN_BYTES", 1 << 30)
    assert _runs(monkeypatch, tmp_path, 3) == 1           # partitions this small: one run, whatever the threads
    same(serial, read_log_dirs(tmp_path, threads=3))
    chunks1 = list(iter_log_dir(tmp_path / "a-0", threads=1, max_bytes=20_000))
    chunks4 = list(iter_log_dir(tmp_path / "a-0", threads=4, max_bytes=20_000))
    assert len(chunks1) == len(chunks4) > 1
    for x, y in zip(chunks1, chunks4):
        same(x, y)


def test_read_segment_threads(split_small, tmp_path):
    folder, logs = _write_log(tmp_path)
    same(kafkafmt.read_segment(logs[0], threads=1), kafkafmt.read_segment(logs[0], threads=4))


def test_real_corpus_threads(split_small, real_corpus):
    """Every real broker segment and record set decodes the same with 4 threads (errors too)."""
    files = sorted(glob.glob(str(real_corpus / "broker-dirs" / "**" / "*.log"), recursive=True))
    files += sorted(glob.glob(str(real_corpus / "record-sets" / "**" / "*.log.bin"), recursive=True))
    assert files
    for f in files:
        data = pathlib.Path(f).read_bytes()
        want = _error(lambda: kafkafmt.decode(data, threads=1))
        assert _error(lambda: kafkafmt.decode(data, threads=4)) == want, f
        if want is None:
            same(kafkafmt.decode(data, threads=1), kafkafmt.decode(data, threads=4))


@pytest.mark.parametrize("command", [["stats"], ["verify"], ["dump", "--records", "--print-data"]])
def test_cli_threads_same_output(split_small, capsys, command):
    from kafkafmt.cli import main

    outs = []
    for n in ("1", "3"):
        rc = main(command + ["--sample", "-q", "--threads", n])
        # (verify's summary says how long it took: the one part that may differ)
        outs.append((rc, re.sub(r"checked in [0-9.]+ s", "checked in <t> s", capsys.readouterr().out)))
    assert outs[0] == outs[1] and outs[0][1]
    assert kthreads.cpu_count() == len(os.sched_getaffinity(0))     # restored after the command


def test_cli_export_threads_same_file(split_small, tmp_path):
    from kafkafmt.cli import main

    got = []
    for n in ("1", "3"):
        out = tmp_path / f"out{n}.jsonl"
        assert main(["export", "--sample", "-q", "--threads", n, "--format", "jsonl", "--to", str(out)]) == 0
        got.append(out.read_bytes() if out.is_file() else b"".join(p.read_bytes() for p in sorted(out.rglob("*"))
                                                                      if p.is_file()))
    assert got[0] == got[1] and got[0]


def test_cli_threads_rejects_zero(capsys):
    from kafkafmt.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["stats", "--sample", "--threads", "0"])
    assert exc.value.code == 2


def test_set_cpu_count():
    previous = kthreads.set_cpu_count(1)
    try:
        assert kthreads.cpu_count() == 1 and kthreads.resolve_threads(None) == 1
    finally:
        kthreads.set_cpu_count(previous)
    assert kthreads.cpu_count() == len(os.sched_getaffinity(0))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_decode_threads_after_fork(split_small):
    """A forked child (Spark's Python workers are forked) gets its own worker threads."""
    buf = _buffer()
    want = kafkafmt.decode(buf, threads=1).to_arrow()
    kafkafmt.decode(buf, threads=3)       # the parent's pool exists
    pid = os.fork()
    if pid == 0:
        try:
            ok = kafkafmt.decode(buf, threads=3).to_arrow().equals(want)
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
