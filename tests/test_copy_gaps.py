"""Brokers' copies of a partition that each lack batches another holds (a range a recovery cut, batches one broker's
log cleaner dropped): each offset is read once, from a copy that holds it -- the copy read's gaps from another copy
that holds the same batches around them -- and only from a copy whose records equal the copy read's where both
hold them. The clusters are written by tests/kcluster.py with kafka-python's builders (every door is asked in
tests/test_doors.py's ``copy_gaps`` layout)."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil

import pyarrow.compute as pc
import pytest

import kafkafmt
import kcluster
import kpy
from kcli import run as cli
from kafkafmt.log import ReportKind


def _cluster(root):
    c = kcluster.write_cluster(root, {"pay": (1, 2)}, brokers=2, seed=5, records=120, segment_bytes=1500,
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    part = c.parts[("pay", 0)]
    read, other = part.replicas               # the copy read lacks fewer bytes than the other
    assert len(part.batches) >= 9
    return c, part, read, other


def _rewrite(c, broker, part, batches):
    folder = c.folder(broker, part.topic, part.partition)
    shutil.rmtree(folder)
    kcluster.write_copy(folder, dataclasses.replace(part, batches=batches), len(batches), 1500)


def _offsets(t):
    return t.column("offset").to_pylist()


def _truth(part, lo=0, hi=None):
    return [r.offset for r in part.records() if r.offset >= lo and (hi is None or r.offset < hi)]


def _lack(c, part, read, other, read_skips=(4,), other_skips=(1, 7)):
    """The copy read lacks the batches at ``read_skips``; the other copy those at ``other_skips`` and the last
    one (so that it is not the copy read: a read follows the copy reaching the highest offset)."""
    gone = [o for i in read_skips for o in (r.offset for r in part.batches[i].records)]
    kcluster.drop_batches(c, read, "pay", 0, list(read_skips), segment_bytes=1500)
    kcluster.drop_batches(c, other, "pay", 0, list(other_skips) + [len(part.batches) - 1], segment_bytes=1500)
    return gone


def test_a_gap_is_read_from_the_copy_that_holds_it_and_said(tmp_path):
    c, part, read, other = _cluster(tmp_path)
    gone = _lack(c, part, read, other)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    t = recs.to_arrow()
    assert _offsets(t) == _truth(part)
    kinds = [e.kind for e in recs.report]
    assert kinds.count(ReportKind.GAP_FROM_COPY) == 1 and kinds.count(ReportKind.PARTLY_READ) == 1
    said = next(e for e in recs.report if e.kind is ReportKind.GAP_FROM_COPY)
    assert said.offset == gone[0] and c.folder(other, "pay", 0) in said.message
    # the batch table marks the batches read from the other copy: exactly the ones the copy read lacks
    b = recs.batches
    filled = pc.filter(b.to_arrow(), b.to_arrow()["from_copy"]) if "from_copy" in b.columns else None
    assert filled is not None and filled["base_offset"].to_pylist() == [gone[0]]
    # stats counts every record, verify passes with a warning naming the stretch
    assert cli("stats", tmp_path, "--json", check=0).stdout.count(f"offsets {gone[0]}..{gone[-1]} read from") == 1
    out = cli("verify", tmp_path, check=0).stdout
    assert "1 warnings" in out and f"offsets {gone[0]}..{gone[-1]} read from the copy in" in out


@pytest.mark.parametrize("where", ["start", "end"])
def test_an_offset_range_inside_a_gap_reads_its_part(tmp_path, where):
    c, part, read, other = _cluster(tmp_path)
    gone = _lack(c, part, read, other)
    mid = gone[len(gone) // 2] if len(gone) > 1 else gone[0]
    lo, hi = (mid, gone[-1] + 30) if where == "start" else (gone[0] - 10, mid + 1)
    t = kafkafmt.read_log_dirs(str(tmp_path), start_offset=lo, end_offset=hi).to_arrow()
    assert _offsets(t) == _truth(part, lo, hi)


def test_a_copy_batched_apart_around_the_gap_gives_its_records(tmp_path):
    """The other copy holds the gap's records in a batch that also holds the batch before it (a cleaner
    rewrote them as one): the records were compared where both copies hold them, only the gap's are taken."""
    c, part, read, other = _cluster(tmp_path)
    gone = _lack(c, part, read, other, read_skips=(4,), other_skips=())
    b3, b4 = part.batches[3], part.batches[4]
    recs = b3.records + b4.records
    merged = kcluster.Batch(kpy.build_v2(recs, "none", require_codec=False), b3.base, b4.last, 0,
                            max(b3.max_ts, b4.max_ts), recs)
    # (the other copy also lacks the last batch: the copy read is the longer one)
    _rewrite(c, other, part, part.batches[:3] + [merged] + part.batches[5:-1])
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _truth(part)
    assert any(e.kind is ReportKind.GAP_FROM_COPY and e.offset == gone[0] for e in recs.report)


def test_a_copy_with_other_records_fills_nothing(tmp_path):
    """The other copy holds other records at offsets both hold (another history), after the gap -- the batches
    around the gap are the same in both: its records are not taken into the copy read's gap; the copies are
    said to disagree."""
    c, part, read, other = _cluster(tmp_path)
    gone = _lack(c, part, read, other, read_skips=(4,), other_skips=())
    b6 = part.batches[6]
    changed = [r._replace(value=b"other " + r.value) for r in b6.records]
    b6x = kcluster.Batch(kpy.build_v2(changed, "none", require_codec=False), b6.base, b6.last, 0, b6.max_ts,
                         changed)
    _rewrite(c, other, part, part.batches[:6] + [b6x] + part.batches[7:-1])
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == [o for o in _truth(part) if o not in gone]
    kinds = {e.kind for e in recs.report}
    assert ReportKind.MISMATCH in kinds and ReportKind.GAP_FROM_COPY not in kinds


def test_a_gap_the_other_copy_holds_damaged_stays_a_gap(tmp_path):
    """The other copy holds the gap's batch with a bad CRC: nothing is read from it; the read reports offsets
    missing (an error: verify fails), and gives every record the copies hold intact."""
    c, part, read, other = _cluster(tmp_path)
    gone = _lack(c, part, read, other, read_skips=(4,), other_skips=(1,))
    folder = c.folder(other, "pay", 0)
    seg = next(s for s in kcluster.segment_files(folder)
               if any(row[2] == gone[0] for row in kcluster.batch_positions(os.path.join(folder, s))))
    rows = kcluster.batch_positions(os.path.join(folder, seg))
    kcluster.flip_byte(folder, batch=next(i for i, row in enumerate(rows) if row[2] == gone[0]),
                       segment=kcluster.segment_files(folder).index(seg))
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == [o for o in _truth(part) if o not in gone]
    gap = [e for e in recs.report if e.kind is ReportKind.GAP]
    assert [e.offset for e in gap] == [gone[0]]
    cli("verify", tmp_path, check=1)


def _changed(batch):
    recs = [r._replace(value=b"other " + r.value) for r in batch.records]
    return kcluster.Batch(kpy.build_v2(recs, "none", require_codec=False), batch.base, batch.last, 0, batch.max_ts,
                          recs)


@pytest.mark.parametrize("other_holds", ["other records before", "other records after", "no batch there"])
def test_damage_is_read_from_another_copy_only_where_it_holds_it_alike(tmp_path, other_holds):
    """A damaged batch of the copy read (a bad CRC, alone in its segment) is read from another copy only where
    that copy's records are the copy read's: not from a copy with other records just before it (another history
    from there), nor from one that lacks its offsets too (nothing would stand for the damage) -- but from one
    whose records differ only after it (the two histories part there: below, they are one log)."""
    c, part, read, other = _cluster(tmp_path)
    b = part.batches
    theirs = {"other records before": b[:3] + [_changed(b[3])] + b[4:-1],
              "other records after": b[:5] + [_changed(b[5])] + b[6:-1],
              "no batch there": b[:4] + b[5:-1]}[other_holds]
    _rewrite(c, other, part, theirs)
    folder = c.folder(read, "pay", 0)
    segs = kcluster.segment_files(folder)
    k = next(i for i, s in enumerate(segs) if any(row[2] == b[4].base
                                                   for row in kcluster.batch_positions(os.path.join(folder, s))))
    rows = kcluster.batch_positions(os.path.join(folder, segs[k]))
    kcluster.flip_byte(folder, batch=next(i for i, row in enumerate(rows) if row[2] == b[4].base), segment=k)
    recs = kafkafmt.read_log_dirs(str(tmp_path), errors="salvage")
    kinds = {e.kind for e in recs.report}
    if other_holds == "other records after":
        assert ReportKind.FROM_COPY in kinds and ReportKind.CORRUPT not in kinds
        t = recs.to_arrow()
        assert _offsets(t) == _truth(part)
        assert t.filter(pc.field("offset") == b[4].base)["value"].to_pylist() == [b[4].records[0].value]
        return
    assert ReportKind.CORRUPT in kinds and ReportKind.FROM_COPY not in kinds
    assert not set(_offsets(recs.to_arrow())) & {r.offset for r in b[4].records}
    with pytest.raises(kafkafmt.KafkafmtError):
        kafkafmt.read_log_dirs(str(tmp_path))


def _log_start(c, broker, offset):
    with open(os.path.join(c.dirs[broker], "log-start-offset-checkpoint"), "w") as f:
        f.write(f"0\n1\npay 0 {offset}\n")


@pytest.mark.parametrize("log_start", ["0", "past the cut", "none"])
def test_a_start_the_copy_read_lacks(tmp_path, log_start):
    """The copy read lacks its first batches (a recovery cut them) and another copy holds them: they are read
    from it when the copy read's log start offset (its log dir's checkpoint) says it should hold them -- not
    when the checkpoint is past them (retention or DeleteRecords deleted them there) or missing."""
    c, part, read, other = _cluster(tmp_path)
    cut = [r.offset for i in (0, 1) for r in part.batches[i].records]
    _lack(c, part, read, other, read_skips=(0, 1), other_skips=())
    if log_start == "past the cut":
        _log_start(c, read, cut[-1] + 1)
    elif log_start == "none":
        os.remove(os.path.join(c.dirs[read], "log-start-offset-checkpoint"))
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    got = _offsets(recs.to_arrow())
    said = [e for e in recs.report if e.kind is ReportKind.GAP_FROM_COPY]
    if log_start == "0":
        assert got == _truth(part) and [e.offset for e in said] == [0]
        assert "before its first batch" in said[0].message
    else:
        assert got == _truth(part, cut[-1] + 1) and not said
        assert any(e.kind is ReportKind.DUPLICATE and e.offset == 0 for e in recs.report)


def _transactional_cluster(root):
    """A partition whose log ends with an aborted transaction (pid 7: 3 records, then 2 plain records, then its
    ABORT marker, then plain records); the copy read lacks the marker's batch, the other copy the last batch."""
    c = kcluster.write_cluster(root, {"pay": (1, 2)}, brokers=2, seed=3, records=60, segment_bytes=1500,
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    part = c.parts[("pay", 0)]
    read, other = part.replicas
    o, ts = part.end, kcluster.T0 + 10_000

    def batch(first, n, **kw):
        recs = [kpy.Rec(first + i, ts, b"k", b"%s-%d" % (b"aborted" if kw else b"v", first + i), ())
                for i in range(n)]
        return kcluster.Batch(kpy.build_v2(recs, "none", require_codec=False, **kw), first, first + n - 1, 0, ts,
                              recs)

    marker = kcluster.Batch(kpy.build_control_v2(o + 5, 0, timestamp=ts, producer_id=7, producer_epoch=0),
                            o + 5, o + 5, 0, ts, [])
    part.batches = part.batches + [batch(o, 3, transactional=True, producer_id=7, producer_epoch=0,
                                         base_sequence=0), batch(o + 3, 2), marker, batch(o + 6, 4), batch(o + 10, 1)]
    n = len(part.batches)
    _rewrite(c, read, part, part.batches[:n - 3] + part.batches[n - 2:])
    _rewrite(c, other, part, part.batches[:-1])
    committed = [r.offset for r in part.records() if not r.value.startswith(b"aborted")]
    return c, committed


def test_a_marker_only_another_copy_holds_closes_its_transaction(tmp_path, spark):
    """read_committed: the ABORT marker of a transaction is in a gap of the copy read, held by the other copy --
    the transaction is aborted (its records left out), not open (every record after it held back), through the
    library, the command line, Spark batch and a Spark stream."""
    c, committed = _transactional_cluster(tmp_path / "c")
    root = str(tmp_path / "c")
    assert _offsets(kafkafmt.read_log_dirs(root, isolation="read_committed").to_arrow()) == committed
    out = tmp_path / "out.parquet"
    cli("export", root, "--isolation", "read_committed", "--to", out, check=0)
    import pyarrow.parquet as pq
    assert sorted(pq.read_table(out)["offset"].to_pylist()) == committed
    batch, streamed, _ = _through_spark(spark, root, "gap_txn", tmp_path / "ckpt")
    assert batch == streamed == committed


def _through_spark(spark, root, name, checkpoint):
    """(offsets of a read_committed Spark batch read, of a stream from the earliest offsets to the end, the
    stream's end offsets) of ``root``, sorted."""
    opts = {"kafka.isolation.level": "read_committed"}
    df = spark.read.format("kafka-segments").options(**opts).load(root)
    batch = sorted(r.offset for r in df.select("offset").collect())
    q = (spark.readStream.format("kafka-segments").options(startingOffsets="earliest", **opts).load(root)
         .select("offset").writeStream.format("memory").queryName(name)
         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    try:
        assert q.awaitTermination(120)
        return batch, sorted(r.offset for r in spark.table(name).collect()), \
            json.loads(q.lastProgress["sources"][0]["endOffset"])
    finally:
        q.stop()


def _every_other(tmp_path, records=2000):
    """The copy read lacks every other batch (one broker's cleaner dropped them), the other copy only its last
    batch; both rolled into several segments (gaps inside segments and between them)."""
    c = kcluster.write_cluster(tmp_path, {"pay": (1, 2)}, brokers=2, seed=3, records=records, segment_bytes=8000,
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    part = c.parts[("pay", 0)]
    read, other = part.replicas
    n = len(part.batches)
    kcluster.drop_batches(c, read, "pay", 0, list(range(1, n - 2, 2)), 8000)
    kcluster.drop_batches(c, other, "pay", 0, [n - 1], 8000)
    assert len(kcluster.segment_files(c.folder(read, "pay", 0))) > 3
    return c, part, read, other


@pytest.mark.parametrize("threads", [1, 2])
def test_many_gaps_each_offset_once(tmp_path, threads):
    """Hundreds of gaps, some at segment boundaries: every record once, in offset order; the batch table holds
    each batch once (those read from the other copy marked), and the report an entry per chunk read, not per
    gap."""
    c, part, read, other = _every_other(tmp_path)
    recs = kafkafmt.read_log_dirs(str(tmp_path), threads=threads)
    assert _offsets(recs.to_arrow()) == _truth(part)
    b = recs.batches.to_arrow()
    assert sorted(b["base_offset"].to_pylist()) == [x.base for x in part.batches]
    lacking = {x.base for i, x in enumerate(part.batches) if i % 2 and i < len(part.batches) - 2}
    assert {o for o, f in zip(b["base_offset"].to_pylist(), b["from_copy"].to_pylist()) if f} == lacking
    said = [e for e in recs.report if e.kind is ReportKind.GAP_FROM_COPY]
    assert 0 < len(said) <= 2 * len(kcluster.segment_files(c.folder(read, "pay", 0))) < len(lacking)


def test_a_damaged_stretch_among_many_loses_only_itself(tmp_path):
    c, part, read, other = _every_other(tmp_path, records=600)
    folder = c.folder(other, "pay", 0)
    rows = kcluster.batch_positions(os.path.join(folder, kcluster.segment_files(folder)[0]))
    kcluster.flip_byte(folder, batch=3, segment=0)                    # a batch the copy read lacks
    lost = {r.offset for x in part.batches if x.base == rows[3][2] for r in x.records}
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert lost and _offsets(recs.to_arrow()) == [o for o in _truth(part) if o not in lost]
    assert [e.offset for e in recs.report if e.kind is ReportKind.GAP] == [min(lost)]


def test_a_gap_two_copies_each_hold_in_part(tmp_path):
    """Three copies: the copy read lacks two batches, one other copy holds the first of them, the third the
    second: both are read, each once (what the first copy lacks of the gap is asked of the next)."""
    c = kcluster.write_cluster(tmp_path, {"pay": (1, 3)}, brokers=3, seed=3, records=120, segment_bytes=1500,
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    part = c.parts[("pay", 0)]
    read, second, third = part.replicas
    n = len(part.batches)
    kcluster.drop_batches(c, read, "pay", 0, [4, 5], 1500)
    kcluster.drop_batches(c, second, "pay", 0, [4, n - 1], 1500)
    kcluster.drop_batches(c, third, "pay", 0, [5, n - 1], 1500)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _truth(part)
    froms = [e.message for e in recs.report if e.kind is ReportKind.GAP_FROM_COPY]
    assert len(froms) == 2 and not any(e.kind is ReportKind.GAP for e in recs.report)
    assert sorted(recs.batches.to_arrow()["base_offset"].to_pylist()) == [b.base for b in part.batches]


def _three_copies_one_transaction(root, layout):
    """Three copies of a partition ending with a transaction of producer 7 (its records' values start with
    "aborted" when an ABORT marker ends it) and plain records after; the copy read lacks a stretch of it, which
    the other two copies each hold in part (both lack the last batch, so neither is the copy read).

    * ``"marker second"``: the first copy holds the plain batch in the stretch, the second the ABORT marker;
    * ``"marker first"``: the other way round;
    * ``"interleaved"``: the first copy holds the transaction's first batch and its ABORT marker, the second its
      batch between them (a read that counts one copy's batches before the other's reopens the transaction);
    * ``"marker in both"``: the first copy holds only the marker, the second the plain batch and the marker too;
    * ``"reopened"``: the first copy holds an aborted transaction with its marker and a plain batch, the second
      the producer's next transaction between them, never ended (a read that counts the second copy's part first,
      as it ends sooner, reopens the first transaction and closes it at its marker: both taken as ended).

    Returns (part, the offsets a read_committed consumer gets, the last stable offset or None)."""
    c = kcluster.write_cluster(root, {"pay": (1, 3)}, brokers=3, seed=3, records=60, segment_bytes=1500,
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    part = c.parts[("pay", 0)]
    read, first, second = part.replicas
    o, ts = part.end, kcluster.T0 + 10_000

    def batch(at, n, txn=False):
        recs = [kpy.Rec(at + i, ts, b"k", b"%s-%d" % (b"aborted" if txn else b"v", at + i), ()) for i in range(n)]
        kw = dict(transactional=True, producer_id=7, producer_epoch=0, base_sequence=at - o) if txn else {}
        return kcluster.Batch(kpy.build_v2(recs, "none", require_codec=False, **kw), at, at + n - 1, 0, ts, recs)

    def marker(at):
        return kcluster.Batch(kpy.build_control_v2(at, 0, timestamp=ts, producer_id=7, producer_epoch=0), at, at,
                              0, ts, [])

    n = len(part.batches)
    lso = None
    if layout == "interleaved":
        tail = [batch(o, 1, True), batch(o + 1, 2, True), marker(o + 3), batch(o + 4, 4), batch(o + 8, 1)]
        lacks = {"read": {n, n + 1, n + 2}, "first": {n + 1, n + 4}, "second": {n, n + 2, n + 4}}
    elif layout == "reopened":
        # an aborted transaction, then another of the same producer left open: the first copy holds the first
        # transaction, its marker and a plain batch after the second's, the second copy the open one -- the
        # last stable offset is the open transaction's first offset
        tail = [batch(o, 1, True), marker(o + 1), batch(o + 2, 2), batch(o + 4, 1), batch(o + 5, 4), batch(o + 9, 1)]
        tail[2] = kcluster.Batch(kpy.build_v2(tail[2].records, "none", require_codec=False, transactional=True,
                                              producer_id=7, producer_epoch=0, base_sequence=1), o + 2, o + 3, 0, ts,
                                 tail[2].records)
        lacks = {"read": {n, n + 1, n + 2, n + 3}, "first": {n + 2, n + 5}, "second": {n, n + 1, n + 3, n + 5}}
        lso = o + 2
    else:
        tail = [batch(o, 3, True), batch(o + 3, 2), marker(o + 5), batch(o + 6, 4), batch(o + 10, 1)]
        plain, mark, last = n + 1, n + 2, n + 4
        lacks = {"read": {plain, mark},
                 "first": {"marker second": {mark, last}, "marker first": {plain, last},
                           "marker in both": {plain, last}}[layout],
                 "second": {"marker second": {plain, last}, "marker first": {mark, last},
                            "marker in both": {last}}[layout]}
    part.batches = part.batches + tail
    for broker, role in ((read, "read"), (first, "first"), (second, "second")):
        _rewrite(c, broker, part, [b for i, b in enumerate(part.batches) if i not in lacks[role]])
    return part, [r.offset for r in part.records() if not r.value.startswith(b"aborted")
                  and (lso is None or r.offset < lso)], lso


@pytest.mark.parametrize("layout", ["marker second", "marker first", "interleaved", "marker in both",
                                    "reopened"])
def test_a_transaction_two_copies_each_hold_in_part(tmp_path, layout):
    """read_committed, a gap two copies each hold in part: its batches and markers counted as the copy read's
    from both copies, in offset order (one copy's alone left a transaction open -- every later record held back
    -- or reopened one), the stretch's records kept by those transactions (not by each copy's own view, in which
    the transaction stays open); read_uncommitted: each batch once (what a copy's batches do not cover is asked of
    the next: a marker both hold is read once)."""
    part, committed, _ = _three_copies_one_transaction(tmp_path, layout)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _truth(part)
    assert sorted(recs.batches.to_arrow()["base_offset"].to_pylist()) == [b.base for b in part.batches]
    assert len(recs.controls) == 1
    assert _offsets(kafkafmt.read_log_dirs(str(tmp_path), isolation="read_committed").to_arrow()) == committed


def test_a_transaction_two_copies_each_hold_in_part_through_spark(tmp_path, spark):
    """Transactions two copies each hold in part through Spark: a batch read, and a stream that stops at the last
    stable offset (its end offset, as Spark's Kafka source gives a read_committed stream's)."""
    part, committed, lso = _three_copies_one_transaction(tmp_path / "c", "reopened")
    batch, streamed, end = _through_spark(spark, str(tmp_path / "c"), "gap_txn_parts", tmp_path / "ckpt")
    assert batch == streamed == committed
    assert end == {"pay": {"0": lso}}


def _ending_inside(tmp_path, epoch_after=0):
    """The copy read lacks batches 4 and 5 (and, with ``epoch_after``, a new leader epoch starts at batch 6);
    the other copy's log ends with batch 4 (a follower behind: inside the gap)."""
    c, part, read, other = _cluster(tmp_path)
    b = part.batches
    if epoch_after:
        later = [dataclasses.replace(x, data=kpy.build_v2(x.records, "none", require_codec=False,
                                                          partition_leader_epoch=epoch_after), epoch=epoch_after)
                 for x in b[6:]]
    else:
        later = b[6:]
    _rewrite(c, read, part, b[:4] + later)
    _rewrite(c, other, part, b[:5])
    return c, part, read, other


def test_a_copy_whose_log_ends_inside_the_gap_gives_what_it_holds(tmp_path):
    """A follower behind, its log ending inside the copy read's gap, its batches there of the leader epoch of the
    copy read's batch after the gap (that epoch's leader wrote them): its records are read -- they were lost, the
    copy said to hold nothing more --, and the rest of the gap, which no copy holds, is not."""
    c, part, read, other = _ending_inside(tmp_path)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    b = part.batches
    assert _offsets(recs.to_arrow()) == [r.offset for i, x in enumerate(b) if i != 5 for r in x.records]
    said = [e.message for e in recs.report if e.kind is ReportKind.GAP_FROM_COPY]
    assert len(said) == 1 and f"offsets {b[4].base}..{b[4].last} read from" in said[0]
    assert [e.kind for e in recs.report if e.kind is not ReportKind.GAP_FROM_COPY] == [ReportKind.PARTLY_READ]
    out = cli("verify", str(tmp_path), check=0)
    assert "read from the copy" in out.stdout + out.stderr


def test_a_copy_ending_inside_the_gap_in_another_epoch_is_said_not_read(tmp_path):
    """The same, but the copy read's leader epoch changes across the gap: the follower's records there, of the
    older epoch, may be ones the new leader truncated, so they are not read, and the follower is said to hold
    offsets the copy read lacks (not to hold nothing more)."""
    c, part, read, other = _ending_inside(tmp_path, epoch_after=1)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    b = part.batches
    assert _offsets(recs.to_arrow()) == [r.offset for i, x in enumerate(b) if i not in (4, 5) for r in x.records]
    (entry,) = [e for e in recs.report if e.kind is not ReportKind.REPLICA]
    assert entry.kind is ReportKind.DUPLICATE and entry.offset == b[4].base
    assert f"holds offsets {b[4].base}..{b[4].last} between batches of the copy read" in entry.message


def _flip_batch(c, broker, base):
    """Flip a byte in the body of the batch of a copy starting at offset ``base`` (its CRC then fails)."""
    folder = c.folder(broker, "pay", 0)
    for si, name in enumerate(kcluster.segment_files(folder)):
        for bi, row in enumerate(kcluster.batch_positions(os.path.join(folder, name))):
            if row[2] == base:
                return kcluster.flip_byte(folder, batch=bi, segment=si)
    raise AssertionError(f"no batch at {base}")


def _without_batches(part, skip):
    return [r.offset for i, x in enumerate(part.batches) if i not in skip for r in x.records]


@pytest.mark.parametrize("other", ["lacks the damaged batch", "holds both"])
def test_damage_beside_a_gap_of_the_copy_read(tmp_path, other):
    """The copy read holds batch 4 damaged and lacks batch 5; the other copy holds 5 and lacks 4 (a batch held
    only damaged: a strict read raises, a salvaging one gives every other record once -- 5 was read twice, with
    the damage and as the gap, and 4's records went unsaid) or holds both (every record once)."""
    c, part, read, other_broker = _cluster(tmp_path)
    n = len(part.batches)
    kcluster.drop_batches(c, read, "pay", 0, [5], segment_bytes=1500)
    kcluster.drop_batches(c, other_broker, "pay", 0, ([4] if other == "lacks the damaged batch" else []) + [n - 1],
                          segment_bytes=1500)
    _flip_batch(c, read, part.batches[4].base)
    if other == "holds both":
        recs = kafkafmt.read_log_dirs(str(tmp_path))
        assert _offsets(recs.to_arrow()) == _truth(part)
        return
    with pytest.raises(kafkafmt.CrcError):
        kafkafmt.read_log_dirs(str(tmp_path))
    recs = kafkafmt.read_log_dirs(str(tmp_path), errors="salvage")
    assert _offsets(recs.to_arrow()) == _without_batches(part, {4})
    assert [e.offset for e in recs.report if e.kind is ReportKind.CORRUPT] == [part.batches[4].base]


def test_damage_and_a_gap_held_by_two_other_copies(tmp_path):
    """Three copies: the copy read holds batch 4 damaged and lacks 5, the second holds 4 and lacks 5, the third
    lacks 4 and holds 5: every record once (5 was left out: the damaged stretch read from the second copy up to
    the copy read's next batch was taken to cover it)."""
    c = kcluster.write_cluster(tmp_path, {"pay": (1, 3)}, brokers=3, seed=3, records=120, segment_bytes=1500,
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    part = c.parts[("pay", 0)]
    read, second, third = part.replicas
    n = len(part.batches)
    kcluster.drop_batches(c, read, "pay", 0, [5], 1500)
    kcluster.drop_batches(c, second, "pay", 0, [5, n - 1], 1500)
    kcluster.drop_batches(c, third, "pay", 0, [4, n - 1], 1500)
    _flip_batch(c, read, part.batches[4].base)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _truth(part)
    said = {e.kind: e.message for e in recs.report if e.kind in (ReportKind.FROM_COPY, ReportKind.GAP_FROM_COPY)}
    b4, b5 = part.batches[4], part.batches[5]
    assert f"offsets {b4.base}..{b4.last} read from" in said[ReportKind.FROM_COPY]
    assert f"offsets {b5.base}..{b5.last} read from" in said[ReportKind.GAP_FROM_COPY]


def test_damage_held_intact_by_a_copy_lacking_the_batch_after_it(tmp_path):
    """The copy read holds batch 4 damaged; the other copy holds it intact but lacks batch 5 (no batch of it
    after the stretch is the copy read's): the very batch the damaged header names (offsets and CRC field) is
    read from it -- a strict read raised."""
    c, part, read, other = _cluster(tmp_path)
    kcluster.drop_batches(c, other, "pay", 0, [5, len(part.batches) - 1], segment_bytes=1500)
    _flip_batch(c, read, part.batches[4].base)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _truth(part)
    assert [e.offset for e in recs.report if e.kind is ReportKind.FROM_COPY] == [part.batches[4].base]


def test_gaps_whose_neighbours_the_other_copy_lacks_too(tmp_path):
    """The copy read lacks batches 2 and 4, the other copy 3 (and its last): each gap's neighbour in the other copy
    lies in the copy read's other gap, so its anchors are the batches both hold around it (1 and 5): both gaps
    are read (they were said held by no copy between batches both hold)."""
    c, part, read, other = _cluster(tmp_path)
    kcluster.drop_batches(c, read, "pay", 0, [2, 4], segment_bytes=1500)
    kcluster.drop_batches(c, other, "pay", 0, [3, len(part.batches) - 1], segment_bytes=1500)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _truth(part)
    assert sorted(recs.batches.to_arrow()["base_offset"].to_pylist()) == [b.base for b in part.batches]


def test_a_gap_two_copies_hold_between_different_batches(tmp_path):
    """Three copies: the copy read lacks batches 5 to 7; the second holds 6 and 7 but lacks 4 and 5, the third
    holds 5 to 7 but lacks 3 -- each holds the gap between other batches of the copy read (3 and 8, 4 and 8): what
    the second does not cover is read from the third, checked around its own batches (5 was lost: the third was
    checked against the second's)."""
    c = kcluster.write_cluster(tmp_path, {"pay": (1, 3)}, brokers=3, seed=3, records=120, segment_bytes=1500,
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    part = c.parts[("pay", 0)]
    read, second, third = part.replicas
    n = len(part.batches)
    assert n >= 9
    kcluster.drop_batches(c, read, "pay", 0, [5, 6, 7], 1500)
    kcluster.drop_batches(c, second, "pay", 0, [4, 5, n - 1], 1500)
    kcluster.drop_batches(c, third, "pay", 0, [3, n - 1], 1500)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _truth(part)
    assert sorted(recs.batches.to_arrow()["base_offset"].to_pylist()) == [b.base for b in part.batches]


def test_a_gap_held_partly_damaged_gives_its_intact_batches(tmp_path):
    """The copy read lacks batches 1 and 2; the other copy holds both, 2 damaged: 1 is read from it (the whole gap
    was said not given, 1's records lost) and 2 is said missing."""
    c, part, read, other = _cluster(tmp_path)
    kcluster.drop_batches(c, read, "pay", 0, [1, 2], segment_bytes=1500)
    kcluster.drop_batches(c, other, "pay", 0, [len(part.batches) - 1], segment_bytes=1500)
    _flip_batch(c, other, part.batches[2].base)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _without_batches(part, {2})
    b1, b2 = part.batches[1], part.batches[2]
    assert [e.offset for e in recs.report if e.kind is ReportKind.GAP_FROM_COPY] == [b1.base]
    assert [e.message.split(" are ")[0] for e in recs.report if e.kind is ReportKind.GAP] == \
        [f"offsets {b2.base}..{b2.last}"]


def test_a_copy_ending_inside_a_later_gap_gives_both(tmp_path):
    """The copy read lacks batches 4 and 7; a follower behind holds both but not 5 and 6, and its log ends with 7:
    no batch of it after the first gap is one the copy read holds -- it ends inside the later gap --, its batches
    there of the epoch of the copy read's batches after both gaps: both are read (4 was lost)."""
    c, part, read, other = _cluster(tmp_path)
    n = len(part.batches)
    kcluster.drop_batches(c, read, "pay", 0, [4, 7], segment_bytes=1500)
    kcluster.drop_batches(c, other, "pay", 0, [5, 6] + list(range(8, n)), segment_bytes=1500)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _truth(part)


def test_damaged_batches_in_a_row_each_from_a_copy_holding_it_intact(tmp_path):
    """Three copies: the copy read holds batches 4 and 5 damaged; the second holds 4 intact and 5 damaged, the third
    lacks 4 and holds 5 intact: 4 from the second, 5 from the third (each batch on its own when no copy holds them
    all intact) -- a strict read raised."""
    c = kcluster.write_cluster(tmp_path, {"pay": (1, 3)}, brokers=3, seed=3, records=120, segment_bytes=1500,
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    part = c.parts[("pay", 0)]
    read, second, third = part.replicas
    n = len(part.batches)
    kcluster.drop_batches(c, second, "pay", 0, [n - 1], 1500)
    kcluster.drop_batches(c, third, "pay", 0, [4, n - 1], 1500)
    b4, b5 = part.batches[4], part.batches[5]
    for broker, base in ((read, b4.base), (read, b5.base), (second, b5.base)):
        _flip_batch(c, broker, base)
    recs = kafkafmt.read_log_dirs(str(tmp_path))
    assert _offsets(recs.to_arrow()) == _truth(part)
    froms = sorted(e.message.split(" read from the copy in ")[0] for e in recs.report if e.kind is ReportKind.FROM_COPY)
    assert froms == [f"offsets {b4.base}..{b4.last}", f"offsets {b5.base}..{b5.last}"]
