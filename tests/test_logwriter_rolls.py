"""LogWriter writes each segment when it rolls (issue 33, item 15): memory bounded by the active segment,
rolled (and flushed) segments readable while the writer goes on, and a killed writer leaves a readable prefix of
what it appended that a new writer continues.

Scenarios: a long writer's memory against its segment size (tracemalloc); readers (kafkafmt's read_log_dir and
kafka-python's decoder) in a loop while another process appends, rolls and flushes; the writer killed at every
durable step (``KAFKAFMT_CRASH_AFTER``) and by SIGKILL at random moments, then continued by a new writer. What a
complete run writes is the reference: every crashed folder must hold its segments byte for byte, the last one a
prefix of whole batches.
"""
from __future__ import annotations

import multiprocessing
import os
import random
import time
import tracemalloc
import warnings

import numpy as np
import pytest

import kpy

import kafkafmt
from kafkafmt import LogWriter
from kafkafmt.cli import main as cli_main
from kafkafmt._util.durable import CRASH_ENV, TMP_SUFFIX
from test_logwriter import check_partition

TS0 = 1_700_000_000_000


def workload(w, rounds, report=None, flush_every=4):
    """Appends of every kind (plain, compressed, transactional with COMMIT/ABORT, compaction-style gaps,
    producer sequences), small enough to roll often; a flush every few rounds. ``report(recovery_point)``
    after each step."""
    for r in range(rounds):
        k = r % 6
        vals = [b"r%d-%d-" % (r, i) + bytes([65 + r % 26]) * (r * 7 % 90) for i in range(3 + r % 5)]
        ts = [TS0 + 10 * r + i for i in range(len(vals))]
        if k in (0, 1, 2):
            w.append(values=vals, timestamps=ts, compression=(None, "lz4", "zstd")[k], batch_size=300,
                     producer_id=3 if k == 1 else -1)
        elif k == 3:
            w.append(values=vals, timestamps=ts, producer_id=7, transactional=True, batch_size=200)
        elif k == 4:
            w.append_control("abort" if r % 12 == 4 else "commit", producer_id=7, timestamp=ts[0])
        else:
            w.append_empty_batch(last_offset=w.next_offset + 2, timestamp=ts[0])
            w.append(values=vals, timestamps=ts, offsets=[w.next_offset + 5 + 2 * i for i in range(len(vals))])
        if flush_every and r % flush_every == flush_every - 1:
            w.flush()
        if report is not None:
            report(w.recovery_point)


SEGMENT_BYTES, INTERVAL = 1400, 300


def _write(folder, rounds, report=None, **kw):
    w = LogWriter(folder, segment_bytes=SEGMENT_BYTES, index_interval_bytes=INTERVAL, leader_epoch=3)
    workload(w, rounds, report, **kw)
    w.close()


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def _logs(folder):
    """{name: bytes} of the .log files."""
    return {n: _bytes(os.path.join(folder, n)) for n in sorted(os.listdir(folder)) if n.endswith(".log")}


def _batches(folder):
    """Every batch of the folder's .log files (control and empty ones too)."""
    return kafkafmt.decode(b"".join(_logs(folder).values()), include_control=True).batches


def _log_end(folder):
    b = _batches(folder)
    return int(b.last_offset[-1]) + 1 if len(b) else None


def _open_transactions(folder):
    """producer id -> first offset of its transaction still open, from kafka-python's view of the batches."""
    out = {}
    for data in _logs(folder).values():
        for b in kpy.kp_decode(data, include_control=True)["batches"]:
            if b["is_control"]:
                out.pop(b["producer_id"], None)
            elif b["is_transactional"]:
                out.setdefault(b["producer_id"], b["base_offset"])
    return out


def _offsets_of_producer(folder, producer_id):
    out = []
    for data in _logs(folder).values():
        d = kpy.kp_decode(data)
        out += [r["offset"] for r in d["records"] if d["batches"][r["batch_index"]]["producer_id"] == producer_id]
    return out


def _verify(folder):
    assert cli_main(["verify", folder]) == 0


def _kafka_python(folder):
    """(offset, value) of every record of the folder's .log files, by kafka-python's decoder."""
    return [(r["offset"], r["value"]) for data in _logs(folder).values() for r in kpy.kp_decode(data)["records"]]


def _kafkafmt(folder, **kw):
    recs = kafkafmt.read_log_dir(folder, **kw)
    return list(zip(recs.offset.tolist(), recs.value.to_pylist()))


def _assert_prefix_of(folder, reference):
    """The folder's segments are the reference's, byte for byte, the last one cut after a whole batch."""
    mine, full = _logs(folder), _logs(reference)
    names = list(mine)
    assert names == list(full)[:len(names)], (names, list(full))
    for name in names[:-1]:
        assert mine[name] == full[name], name
    if names:
        last = mine[names[-1]]
        assert full[names[-1]].startswith(last), names[-1]
        ends = kafkafmt.decode(full[names[-1]], include_control=True).batches
        assert len(last) in set((np.asarray(ends.position) + np.asarray(ends.size)).tolist()) | {0}


# writers in other processes: started by a forkserver (a clean, single-threaded parent), reporting each
# recovery point to a file as they go (os.write: in the kernel before the next step, whatever kills them)
_PROCESSES = multiprocessing.get_context("forkserver")
_PROCESSES.set_forkserver_preload([__name__])    # imported once in the server, not in every writer


def _writer_process(folder, rounds, points, crash_after=None, pause=0.0):
    if crash_after is not None:
        os.environ[CRASH_ENV] = str(crash_after)
    fd = os.open(points, os.O_WRONLY | os.O_CREAT | os.O_APPEND)     # (it exists: the writer starts)

    def report(point):
        os.write(fd, b"%d\n" % point)
        time.sleep(pause)
    _write(folder, rounds, report)


def _start_writer(folder, rounds, **kw):
    """A writer process appending the workload to folder; returns (process, the file of its recovery points)."""
    points = folder + ".points"
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    proc = _PROCESSES.Process(target=_writer_process, args=(folder, rounds, points), kwargs=kw)
    proc.start()
    return proc, points


def _wait_started(proc, points):
    while not os.path.exists(points) and proc.is_alive():
        time.sleep(0.001)


def _last_point(points):
    """The last recovery point a writer process reported (0 before any)."""
    if not os.path.exists(points):
        return 0
    with open(points) as f:
        return max((int(line) for line in f), default=0)


# ------------------------------------------------------------------------------------------------------------
# (a) memory stays bounded by the active segment

def test_a_long_writer_holds_only_its_active_segment(tmp_path):
    """100,000 records (11 MB) through a writer rolling at 64 KiB: the writer's allocations peak below a few
    segments' worth (before, every batch stayed in memory until close(): a peak above the bytes written)."""
    seg_bytes = 64 << 10
    values = [bytes([i % 251]) * 100 for i in range(500)]
    timestamps = list(range(TS0, TS0 + 500))
    folder = str(tmp_path / "long-0")
    w = LogWriter(folder, segment_bytes=seg_bytes, index_interval_bytes=4096)
    w.append(values=values, timestamps=timestamps)                      # warm up (imports, caches)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(199):
            w.append(values=values, timestamps=timestamps)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    held = peak - base
    # the active segment, one append's encoded batches and its columns, index building: a few segments
    assert held < 6 * seg_bytes, held
    # and what rolled is on disk, readable, before close()
    assert len(kafkafmt.read_log_dir(folder)) == w.recovery_point > 99_000
    w.close()
    assert len(kafkafmt.read_log_dir(folder)) == 100_000
    assert sum(len(b) for b in _logs(folder).values()) > 10_000_000


# ------------------------------------------------------------------------------------------------------------
# rolled and flushed segments are there while the writer goes on; flushes change nothing in the end

def test_rolled_and_flushed_batches_are_readable_before_close_and_flushing_changes_no_byte(tmp_path):
    plain, flushed = str(tmp_path / "plain" / "mixed-0"), str(tmp_path / "flushed" / "mixed-0")
    _write(plain, 40, flush_every=0)
    seen = []
    w = LogWriter(flushed, segment_bytes=SEGMENT_BYTES, index_interval_bytes=INTERVAL, leader_epoch=3)

    def report(point):
        # what is on disk is exactly what the writer says survives a crash
        on_disk = os.path.isdir(flushed) and _logs(flushed)
        got = _kafkafmt(flushed) if on_disk else []
        seen.append(len(got))
        assert (_log_end(flushed) if on_disk else 0) == point
        assert got == _kafkafmt(plain)[:len(got)]
    workload(w, 40, report)
    w.close()
    assert len(set(seen)) > 10                 # the folder grew while the writer went on
    assert sorted(os.listdir(plain)) == sorted(os.listdir(flushed))
    for name in os.listdir(plain):
        assert _bytes(os.path.join(plain, name)) == _bytes(os.path.join(flushed, name)), name
    check_partition(plain, SEGMENT_BYTES, INTERVAL)
    _verify(plain)


def test_a_flushed_active_segment_is_a_broker_s_open_segment(tmp_path):
    """After flush() the active segment's .log holds the batches so far, its indexes those a broker's open
    segment holds (no final time index entry), its .txnindex the aborts so far; verify finds nothing wrong."""
    folder = str(tmp_path / "open-0")
    w = LogWriter(folder)
    w.append(values=[b"a" * 60] * 4, timestamps=[TS0 + 5, TS0 + 9, TS0 + 1, TS0 + 2], max_records=1)
    w.append(values=[b"t"], timestamps=[TS0 + 20], producer_id=9, transactional=True)
    w.append_control("abort", producer_id=9, timestamp=TS0 + 21)
    w.append(values=[b"z"], timestamps=[TS0 + 3])
    assert os.listdir(folder) == [] and w.recovery_point == 0       # (the folder is there: the writer locks it)
    w.flush()
    assert w.recovery_point == 7
    assert [v for _, v in _kafkafmt(folder, isolation="read_committed")] == [b"a" * 60] * 4 + [b"z"]
    assert kafkafmt.read_txnindex(os.path.join(folder, f"{0:020d}.txnindex")).tolist() == [(0, 9, 4, 5, 6)]
    # a segment of less than index.interval.bytes: no index entry yet, and no close entry in the time index
    assert len(kafkafmt.read_timeindex(os.path.join(folder, f"{0:020d}.timeindex"))) == 0
    _verify(folder)
    before = _logs(folder)
    w.flush()                                                  # nothing new: nothing written
    assert _logs(folder) == before
    w.close()
    tidx = kafkafmt.read_timeindex(os.path.join(folder, f"{0:020d}.timeindex"))
    assert (int(tidx["timestamp"][-1]), int(tidx["offset"][-1])) == (TS0 + 21, 5)
    with pytest.raises(kafkafmt.EncodeError, match="closed"):
        w.flush()


def test_an_exception_in_the_block_keeps_what_rolled_and_drops_the_rest(tmp_path):
    folder = str(tmp_path / "t-0")
    with pytest.raises(RuntimeError):
        with LogWriter(folder, segment_bytes=200) as w:
            for i in range(5):
                w.append(values=[b"v%d" % i] * 3, timestamps=[TS0] * 3)
            raise RuntimeError("boom")
    assert [v for _, v in _kafkafmt(folder)] == [b"v%d" % i for i in range(4) for _ in range(3)]
    with LogWriter(folder) as w2:
        assert w2.append(values=[b"next"], timestamps=[TS0]) == (12, 12)


# ------------------------------------------------------------------------------------------------------------
# (b) readers in a loop while another process appends, rolls and flushes

def test_readers_see_a_prefix_while_another_process_writes(tmp_path):
    reference = str(tmp_path / "ref" / "live-0")
    _write(reference, 300)
    final = _kafkafmt(reference)
    final_kp = _kafka_python(reference)
    assert [o for o, _ in final_kp] == [o for o, _ in final]
    folder = str(tmp_path / "live" / "live-0")

    proc, _ = _start_writer(folder, 300, pause=0.002)
    lengths, kp_lengths, done = [], [], False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kafkafmt.KafkafmtWarning)    # an index older than its .log: a scan
        while not done:
            done = not proc.is_alive()
            if not os.path.isdir(folder) or not _logs(folder):
                continue
            got = _kafkafmt(folder)                         # strict: any error fails the test
            assert got == final[:len(got)], "kafkafmt read something that is not a prefix"
            lengths.append(len(got))
            kp = _kafka_python(folder)
            assert kp == final_kp[:len(kp)], "kafka-python read something that is not a prefix"
            kp_lengths.append(len(kp))
    proc.join()
    assert proc.exitcode == 0
    assert _kafkafmt(folder) == final
    assert len(set(lengths)) > 5 and len(set(kp_lengths)) > 5, (lengths, kp_lengths)   # reads met the writer


# ------------------------------------------------------------------------------------------------------------
# (c) a crash matrix: killed at every durable step, and by SIGKILL at random moments

def _check_crashed_then_continue(folder, reference, flushed_to):
    """What a killed writer left: a prefix of the reference (whole segments, whole batches) holding at least
    every record below the last recovery point it reported; a new writer continues right after it."""
    on_disk = os.path.isdir(folder) and bool(_logs(folder))
    if on_disk:
        _assert_prefix_of(folder, reference)
    got = _kafkafmt(folder) if on_disk else []
    full = _kafkafmt(reference)
    assert got == full[:len(got)]
    offsets = [o for o, _ in got]
    assert offsets == sorted(set(offsets))                           # none twice
    on_disk_end = _log_end(folder) if on_disk else 0
    assert on_disk_end >= flushed_to, (on_disk_end, flushed_to)      # nothing reported durable was lost
    open_txns = _open_transactions(folder) if on_disk else {}
    with LogWriter(folder) as w:
        start = w.next_offset
        assert start == on_disk_end
        assert w.open_txns == open_txns                              # the producer state is the log's
        w.append(values=[b"after-1", b"after-2"], timestamps=[TS0, TS0])
        if 7 in open_txns:
            w.append_control("abort", producer_id=7, timestamp=TS0)
    again = _kafkafmt(folder)
    assert again == got + [(start, b"after-1"), (start + 1, b"after-2")]
    assert _kafka_python(folder) == again
    _epoch_history_matches_batches(folder)
    committed = {o for o, _ in _kafkafmt(folder, isolation="read_committed")}
    assert {start, start + 1} <= committed
    if 7 in open_txns:                      # the transaction left open by the crash, aborted by the new writer
        left_open = {o for o in _offsets_of_producer(folder, 7) if open_txns[7] <= o < start}
        assert left_open and not committed & left_open
    names = os.listdir(folder)
    assert not [n for n in names if n.endswith(TMP_SUFFIX)]
    logs = {n[:20] for n in names if n.endswith(".log")}
    assert all(n[:20] in logs for n in names if n[:20].isdigit()), names      # no orphaned index file
    _verify(folder)
    return len(got)


@pytest.mark.slow
def test_killed_at_every_durable_step_leaves_a_readable_prefix_that_a_new_writer_continues(tmp_path):
    reference = str(tmp_path / "ref" / "crash-0")
    _write(reference, 24)
    kept, k = [], 0
    while True:
        k += 1
        folder = str(tmp_path / f"k{k}" / "crash-0")
        proc, points = _start_writer(folder, 24, crash_after=k)
        proc.join()
        code = proc.exitcode
        if code == 0:
            break
        assert code == 86, code                                   # durable's crash exit
        kept.append(_check_crashed_then_continue(folder, reference, _last_point(points)))
        assert k < 500
    assert k > 30                                                 # the writer has many durable steps
    assert kept == sorted(kept) and kept[0] == 0 and len(set(kept)) > 10


def _epoch_history_matches_batches(folder):
    """The leader-epoch checkpoint names the first batch of each epoch, and epochs never go back."""
    b = _batches(folder)
    epochs = np.asarray(b.partition_leader_epoch)[np.asarray(b.magic) == 2].tolist()
    assert epochs == sorted(epochs)
    firsts = [(e, int(np.asarray(b.base_offset)[np.asarray(b.partition_leader_epoch) == e][0]))
              for e in sorted(set(epochs))]
    path = os.path.join(folder, "leader-epoch-checkpoint")
    assert kafkafmt.read_leader_epoch_checkpoint(path)["entries"].tolist() == firsts


def _gap_writer_process(folder):
    os.environ[CRASH_ENV] = "1"
    w = LogWriter(folder, base_offset=13, leader_epoch=5)
    w.append(values=[b"gap"], timestamps=[TS0])
    w.flush()


def test_an_epoch_entry_past_the_log_end_is_dropped_as_a_broker_does(tmp_path):
    """A writer assigns its leader epoch (leader-epoch-checkpoint) before its first batch reaches the disk, as a
    leader does; killed in between, it leaves an entry past the log end, which the next writer drops
    (LogLoader's truncateFromEnd) instead of writing batches under an epoch that starts later."""
    folder = str(tmp_path / "epochs-0")
    kafkafmt.write_log_dir(folder, values=[b"a", b"b", b"c"], timestamps=[TS0] * 3, leader_epoch=3)

    proc = _PROCESSES.Process(target=_gap_writer_process, args=(folder,))
    proc.start()
    proc.join()
    assert proc.exitcode == 86
    path = os.path.join(folder, "leader-epoch-checkpoint")
    assert kafkafmt.read_leader_epoch_checkpoint(path)["entries"].tolist() == [(3, 0), (5, 13)]
    with LogWriter(folder) as w:
        assert w.leader_epoch == 3
        assert w.append(values=[b"d"], timestamps=[TS0]) == (3, 3)
    _epoch_history_matches_batches(folder)
    _verify(folder)


@pytest.mark.slow
def test_sigkill_at_random_moments_leaves_a_readable_prefix_that_a_new_writer_continues(tmp_path):
    reference = str(tmp_path / "ref" / "kill-0")
    t0 = time.perf_counter()
    _write(reference, 200)
    took = time.perf_counter() - t0
    rnd = random.Random(33)
    kept = []
    for i in range(10):
        folder = str(tmp_path / f"kill{i}" / "kill-0")
        proc, points = _start_writer(folder, 200)
        _wait_started(proc, points)
        time.sleep(rnd.uniform(0, 0.8 * took))
        proc.kill()                                                  # SIGKILL
        proc.join()
        kept.append(_check_crashed_then_continue(folder, reference, _last_point(points)))
    assert len(set(kept)) > 3, kept
