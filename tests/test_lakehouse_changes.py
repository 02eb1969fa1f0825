"""The exports against sources that change between runs, and runs killed at every step (issue 33).

Scenarios, each named in its test: copies of one partition under several roots (``cp -r orders-0 a/ b/``,
three brokers' log dirs); retention; a log end that went back (the newest segment deleted: a truncated log, a
restore from an older copy); the same, written again past the old end before the next run; an unclean leader
election (a newer leader epoch from a segment boundary); a re-created topic (a new topic id; and one without);
other bytes at the same offsets; a batch the log cleaner rewrote (no divergence). Each is checked both ways of
``failOnDataLoss`` and, going on, with the command line killed at every crash point
(``KAFKAFMT_CRASH_AFTER``) before the run that completes. The invariant: the table holds every record it held
before the change once, plus every record of the source from where the run went on once -- read back by
pyiceberg/deltalake, DuckDB and Polars and compared with kafka-python's reading of the partition's segments.
Also: two first-time Iceberg exports racing in two processes, Delta's hour partition column, the Parquet export
killed at every step, and the Spark stream's checkpoint against a log written again between triggers.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid

import numpy as np
import pyarrow as pa
import pytest

import kafkafmt
from kafkafmt.lakehouse import DataLossError, export_table
from kafkafmt.lakehouse.ledger import BATCHES_KEY, LOSS_KEY

import kcli
import kpy
from test_lakehouse import FORMATS, _commit_props, _records, read_back, rows_of

pytestmark = pytest.mark.filterwarnings("ignore::kafkafmt.KafkafmtWarning")

TOPIC = "orders"


# --- sources: written with kafkafmt's LogWriter, read back with kafka-python ------------------------------------

def write(folder, n, seed=0, leader_epoch=None, topic_id=None, segment_bytes=48 << 10):
    """n more records in a partition folder (gzip: kafka-python reads it without extra modules)."""
    with kafkafmt.LogWriter(folder, segment_bytes=segment_bytes, index_interval_bytes=4096,
                            leader_epoch=leader_epoch, topic_id=topic_id) as w:
        first = w.next_offset
        recs = _records(n, first, seed)
        if seed:        # other records than seed 0's at the same offsets
            recs["keys"] = [b"seed%d:" % seed + (k or b"") for k in recs["keys"]]
        w.append(compression="gzip", batch_size=50 * 120, max_records=50, **recs)
    return folder


def kp_rows(folder):
    """The rows of a partition folder as kafka-python reads its segments (rows_of's tuples)."""
    topic, part = os.path.basename(folder).rsplit("-", 1)
    out = []
    for name in sorted(f for f in os.listdir(folder) if f.endswith(".log")):
        with open(os.path.join(folder, name), "rb") as f:
            for r in kpy.kp_decode(f.read())["records"]:
                hdrs = tuple((k, bytes(v) if v is not None else None) for k, v in r["headers"]) or None
                out.append((topic, int(part), r["offset"], r["key"], r["value"], r["timestamp"] * 1000,
                            r["timestamp_type"], hdrs))
    return out


def segments(folder):
    return sorted(int(f[:20]) for f in os.listdir(folder) if f.endswith(".log"))


def drop_segment(folder, base):
    """Delete a segment and its side files (as retention does, or an operator)."""
    for f in os.listdir(folder):
        if f.startswith(f"{base:020d}."):
            os.remove(os.path.join(folder, f))


def truncate_to(folder, offset):
    """Keep only the segments below ``offset`` (a segment boundary): the log end goes back to it."""
    assert offset in segments(folder)
    for base in segments(folder):
        if base >= offset:
            drop_segment(folder, base)
    ep = os.path.join(folder, "leader-epoch-checkpoint")
    if os.path.exists(ep):        # the epochs above the new end go, as Kafka truncates them
        entries = [e for e in kafkafmt.read_leader_epoch_checkpoint(ep)["entries"] if e[1] < offset]
        from kafkafmt.log import sidefiles
        sidefiles.write_leader_epoch_checkpoint(ep, entries)


def export(fmt, root, where, **kw):
    kw.setdefault("target_file_size", 64 << 10)
    if fmt == "iceberg":
        return export_table(root, where, format="iceberg", table="kafka.records", **kw)
    return export_table(root, where, format="delta", **kw)


def cli(fmt, roots, where, *extra, env=None, check=None):
    roots = [roots] if isinstance(roots, str) else roots
    args = ["export", *roots, "--format", fmt, "--to", where, "--target-file-size", "24K", "--commit-every", "40K",
            *extra]
    if fmt == "iceberg":
        args += ["--table", "kafka.records"]
    return kcli.run(*args, env=env, check=check)


def assert_table_holds(fmt, where, want):
    """Every reader of the table gives exactly ``want`` (a list of rows; an offset may be there twice when
    the source diverged and the export went on): nothing missing, nothing twice."""
    want = sorted(want, key=lambda r: (r[0], r[1], r[2], r[3] or b"", r[4] or b""))
    for reader, rows in read_back(fmt, where).items():
        rows = sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3] or b"", r[4] or b""))
        assert len(rows) == len(want), f"{reader}: {len(rows)} rows, expected {len(want)}"
        assert rows == want, f"{reader} differs"


def n_commits(fmt, where):
    return len(_commit_props(fmt, where))


# --- 1. copies of one partition land once ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_replicas_copies_under_several_roots_land_once(fmt, tmp_path):
    """``cp -r orders-0 a/; cp -r orders-0 b/``: one copy read, whatever the copies; a longer copy is
    the one read; ``--replicas all`` is refused for a table."""
    src = write(str(tmp_path / "src" / f"{TOPIC}-0"), 1200)
    for d in ("a", "b"):
        shutil.copytree(src, tmp_path / d / f"{TOPIC}-0")
    roots = [str(tmp_path / "a"), str(tmp_path / "b")]
    where = str(tmp_path / "table")
    r = export(fmt, roots, where)
    assert r.rows == 1200 and r.ranges == {(TOPIC, 0): (0, 1200)}
    assert_table_holds(fmt, where, kp_rows(src))
    # b goes on (a follower caught up further): the next run reads the most complete copy, from the ledger
    write(str(tmp_path / "b" / f"{TOPIC}-0"), 300, seed=0)
    p = cli(fmt, roots, where, "--json", check=0)
    assert json.loads(p.stdout)["ranges"] == {TOPIC: {"0": [1200, 1500]}}
    assert_table_holds(fmt, where, kp_rows(str(tmp_path / "b" / f"{TOPIC}-0")))
    assert cli(fmt, roots, where, "--replicas", "dedup", check=0).stderr.count("up to date") == 1
    p = cli(fmt, roots, where, "--replicas", "all", check=2)
    assert "one copy" in p.stderr
    with pytest.raises(ValueError, match="dedup"):
        export(fmt, roots, where, replicas="all")


@pytest.mark.parametrize("fmt", FORMATS)
def test_replicas_three_brokers_log_dirs(fmt, tmp_path):
    """The guide's three brokers' log dirs: every partition held by two of them, read once each."""
    logs = [tmp_path / f"kafka-logs-{i}" for i in (1, 2, 3)]
    want = []
    for p in range(3):
        src = write(str(tmp_path / "src" / f"{TOPIC}-{p}"), 400 + 100 * p, seed=0)
        want += kp_rows(src)
        for k in (p, (p + 1) % 3):          # replication factor 2
            shutil.copytree(src, logs[k] / f"{TOPIC}-{p}")
    for d in logs:
        (d / "meta.properties").write_text("version=1\nnode.id=1\n")
    where = str(tmp_path / "table")
    p = cli(fmt, [str(d) for d in logs], where, check=0)
    assert "exported 1500 records of 3 partitions" in p.stderr
    assert_table_holds(fmt, where, want)


# --- 2./3. a source that changed since the last run --------------------------------------------------------------

def _first_export(fmt, tmp_path, n=3000):
    root = str(tmp_path / "logs")
    folder = write(os.path.join(root, f"{TOPIC}-0"), n)
    where = str(tmp_path / "table")
    assert export(fmt, root, where).offsets == {(TOPIC, 0): n}
    return root, folder, where, kp_rows(folder)


@pytest.mark.parametrize("fmt", FORMATS)
def test_log_end_went_back_both_ways(fmt, tmp_path):
    """Scenario "log end went back": the newest segment deleted after an export (ledger at 3000). Default:
    DataLossError naming topic, partition, the ledger's offset and the source's, nothing committed, exit 1.
    --fail-on-data-loss false: exit 0, the loss on stderr even with -q and in --json, recorded in the commit;
    the records later written at the re-used offsets arrive as new rows."""
    root, folder, where, before = _first_export(fmt, tmp_path)
    end = segments(folder)[-1]
    truncate_to(folder, end)
    commits = n_commits(fmt, where)
    with pytest.raises(DataLossError, match=rf"orders-0: the table's ledger is at offset 3000 but the source "
                                            rf"diverged: its log end went back from 3000 to {end}"):
        export(fmt, root, where)
    p = cli(fmt, root, where, "-q", check=1)
    assert "data loss" in p.stderr and "--fail-on-data-loss false" in p.stderr
    assert n_commits(fmt, where) == commits                      # nothing committed
    p = cli(fmt, root, where, "-q", "--json", "--fail-on-data-loss", "false", check=0)
    assert "orders-0: the table's ledger is at offset 3000" in p.stderr and "went on" in p.stderr
    doc = json.loads(p.stdout)
    assert doc["offsets"] == {TOPIC: {"0": end}}
    assert doc["data_loss"] == [{"topic": TOPIC, "partition": 0, "start": end, "end": 3000, "kind": "diverged",
                                 "reason": f"its log end went back from 3000 to {end}", "resume": end}]
    assert json.loads(_commit_props(fmt, where)[-1][LOSS_KEY]) == doc["data_loss"]
    assert cli(fmt, root, where, check=0).stderr.count("up to date") == 1     # the loss was taken
    write(folder, 656, seed=7)                                   # new records at offsets end..end+655
    r = export(fmt, root, where)
    assert r.ranges == {(TOPIC, 0): (end, end + 656)} and r.data_loss == []
    assert_table_holds(fmt, where, before + [x for x in kp_rows(folder) if x[2] >= end])


@pytest.mark.parametrize("fmt", FORMATS)
def test_log_end_went_back_and_was_written_again_before_the_next_run(fmt, tmp_path):
    """Scenario "written again past the old end" (the issue's: ledger at 3000, the log end goes back, 656 new
    records arrive before any run): the last exported batch now holds other bytes; the records from the
    truncation point on are new rows, none skipped -- where the source parts from the table is found by
    comparing the two."""
    root, folder, where, before = _first_export(fmt, tmp_path)
    end = segments(folder)[-1]
    truncate_to(folder, end)
    write(folder, 3000 - end + 200, seed=3)
    with pytest.raises(DataLossError, match=r"orders-0: the table's ledger is at offset 3000 but the source "
                                            r"diverged: the batch read at offsets"):
        export(fmt, root, where)
    with pytest.warns(kafkafmt.KafkafmtWarning, match=f"differ from the table's from offset {end}"):
        r = export(fmt, root, where, fail_on_data_loss=False)
    assert r.ranges == {(TOPIC, 0): (end, 3200)} and r.rows == 3200 - end
    assert [(x.start, x.end, x.resume, x.kind) for x in r.data_loss] == [(end, 3000, end, "diverged")]
    assert_table_holds(fmt, where, before + [x for x in kp_rows(folder) if x[2] >= end])
    assert export(fmt, root, where).commits == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_unclean_leader_election_newer_epoch(fmt, tmp_path):
    """Scenario "unclean leader election": a new leader's log parts at a segment boundary and goes on in
    leader epoch 1 past the old end: the export goes on from where epoch 1 begins (Kafka's rule)."""
    root, folder, where, before = _first_export(fmt, tmp_path)
    cut = segments(folder)[-2]
    truncate_to(folder, cut)
    write(folder, 3100 - cut, seed=5, leader_epoch=1)
    with pytest.raises(DataLossError, match=f"a newer leader's log from offset {cut}"):
        export(fmt, root, where)
    r = export(fmt, root, where, fail_on_data_loss=False)
    assert r.data_loss[0].resume == cut and r.ranges == {(TOPIC, 0): (cut, 3100)}
    assert_table_holds(fmt, where, before + [x for x in kp_rows(folder) if x[2] >= cut])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("new_id", [True, False], ids=["new-topic-id", "same-topic-id"])
def test_recreated_topic(fmt, new_id, tmp_path):
    """Scenario "re-created topic": the partition deleted and written anew from offset 0, longer than before.
    With a new topic id (partition.metadata) that is what is said; without one (an old broker's), the
    source's records differ from the table's from offset 0. Either way every new record is a new row."""
    root = str(tmp_path / "logs")
    folder = os.path.join(root, f"{TOPIC}-0")
    write(folder, 3000, topic_id=uuid.UUID(int=1))
    where = str(tmp_path / "table")
    export(fmt, root, where)
    before = kp_rows(folder)
    assert json.loads(_commit_props(fmt, where)[-1][BATCHES_KEY])[TOPIC]["0"][5]     # the topic id is kept
    shutil.rmtree(folder)
    write(folder, 3500, seed=11, topic_id=uuid.UUID(int=2) if new_id else uuid.UUID(int=1))
    with pytest.raises(DataLossError, match="deleted and created again" if new_id else "diverged"):
        export(fmt, root, where)
    r = export(fmt, root, where, fail_on_data_loss=False)
    assert r.data_loss[0].resume == 0 and r.ranges == {(TOPIC, 0): (0, 3500)}
    assert_table_holds(fmt, where, before + kp_rows(folder))


def _keyed(root, part, keys, tag, topic_id):
    """Records with ``keys`` (values ``<tag>:<key>``) appended to a partition of a compacted topic."""
    with kafkafmt.LogWriter(os.path.join(root, f"{TOPIC}-{part}"), topic_id=topic_id) as w:
        w.append(keys=keys, values=[tag + b":" + k for k in keys], timestamps=[1_767_225_600_000 + i for i in
                                                                             range(len(keys))])


def _recreate_with_fewer_partitions(root):
    """The topic deleted and created again with one partition (of two), holding keys k10..k29 anew."""
    for part in (0, 1):
        shutil.rmtree(os.path.join(root, f"{TOPIC}-{part}"))
    _keyed(root, 0, [b"k%d" % i for i in range(10, 30)], b"new", uuid.UUID(int=2))


def _first_incarnation(root):
    _keyed(root, 0, [b"k%d" % i for i in range(20)], b"old", uuid.UUID(int=1))
    _keyed(root, 1, [b"j%d" % i for i in range(20)], b"old", uuid.UUID(int=1))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mode", ["upsert", "append"])
def test_recreated_topic_with_fewer_partitions(fmt, mode, tmp_path):
    """Scenario "re-created with fewer partitions": an upsert table of a compacted topic holds the topic's current
    keys once the export goes on (fail_on_data_loss=False): the old incarnation's keys are removed -- those of
    the partition the new topic has, and every row of the partition it does not -- and the vanished partition
    is a data_loss entry, as is the diverged one; an append table keeps its rows and says the same. The partition
    starts again at offset 0 should the new topic grow it."""
    root = str(tmp_path / "logs")
    _first_incarnation(root)
    where = str(tmp_path / "table")
    export(fmt, root, where, mode=mode)
    before = [r for rows in [read_back(fmt, where)] for r in next(iter(rows.values()))]
    _recreate_with_fewer_partitions(root)
    with pytest.raises(DataLossError, match=f"{TOPIC}-1: the table holds its offsets up to 19, but the topic was "
                                            "deleted and created again"):
        export(fmt, root, where, mode=mode)
    r = export(fmt, root, where, mode=mode, fail_on_data_loss=False)
    assert sorted((x.partition, x.kind) for x in r.data_loss) == [(0, "diverged"), (1, "vanished")]
    (loss,) = [json.loads(c[LOSS_KEY]) for c in _commit_props(fmt, where) if LOSS_KEY in c]
    assert sorted((x["partition"], x["kind"], x["end"]) for x in loss) == [(0, "diverged", 20), (1, "vanished", 20)]
    new = kp_rows(os.path.join(root, f"{TOPIC}-0"))
    for reader, rows in read_back(fmt, where).items():
        if mode == "upsert":
            assert {(x[1], x[3]): x[4] for x in rows} == {(0, b"k%d" % i): b"new:k%d" % i for i in range(10, 30)}, \
                reader
            assert len(rows) == 20, reader
        else:
            assert sorted(rows) == sorted(before + new), reader
    assert r.deleted == (30 if mode == "upsert" else 0)          # k0..k9 and j0..j19
    again = export(fmt, root, where, mode=mode)
    assert again.commits == [] and again.data_loss == []         # said once
    _keyed(root, 1, [b"x"], b"new", uuid.UUID(int=2))           # the new topic grows its partition 1
    r = export(fmt, root, where, mode=mode)
    assert r.data_loss == [] and r.ranges[(TOPIC, 1)] == (0, 1)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_upsert_after_a_recreated_topic_killed_at_every_step(fmt, tmp_path):
    """The upsert run going on after the topic was re-created with fewer partitions, killed at every crash point
    until a run completes: the table then holds the new topic's keys only, the losses recorded once."""
    root = str(tmp_path / "logs")
    _first_incarnation(root)
    base = tmp_path / "base"
    cli(fmt, root, str(base), "--mode", "upsert", check=0)
    _recreate_with_fewer_partitions(root)
    crashed, n = 0, 1
    while True:
        where = tmp_path / f"case{n}"
        shutil.copytree(base, where)
        p = cli(fmt, root, str(where), "--mode", "upsert", "--fail-on-data-loss", "false",
                env={"KAFKAFMT_CRASH_AFTER": str(n)})
        if p.returncode == 0:
            break
        assert p.returncode == 86, p.stderr
        crashed += 1
        cli(fmt, root, str(where), "--mode", "upsert", "--fail-on-data-loss", "false", check=0)
        for reader, rows in read_back(fmt, str(where)).items():
            assert {(x[1], x[3]): x[4] for x in rows} == {(0, b"k%d" % i): b"new:k%d" % i for i in range(10, 30)}, \
                (n, reader)
        losses = [json.loads(c[LOSS_KEY]) for c in _commit_props(fmt, str(where)) if LOSS_KEY in c]
        assert len(losses) == 1, (n, losses)
        shutil.rmtree(where)
        n += 1
    assert crashed >= 2


@pytest.mark.parametrize("fmt", FORMATS)
def test_other_bytes_at_the_same_offsets(fmt, tmp_path):
    """Scenario "same offsets, other bytes": the newest segment replaced by one holding as many records at the
    same offsets with other values (a restore of another cluster's copy): the log end is where it was, the
    CRC of the last batch is not."""
    root, folder, where, before = _first_export(fmt, tmp_path)
    last = segments(folder)[-1]
    truncate_to(folder, last)
    write(folder, 3000 - last, seed=9)
    assert kafkafmt.log._planner.log_end_offset(folder) == 3000
    with pytest.raises(DataLossError, match="CRC"):
        export(fmt, root, where)
    r = export(fmt, root, where, fail_on_data_loss=False)
    assert r.data_loss[0].resume == last and r.rows == 3000 - last
    assert_table_holds(fmt, where, before + [x for x in kp_rows(folder) if x[2] >= last])


@pytest.mark.parametrize("fmt", FORMATS)
def test_cleaned_batch_is_no_divergence(fmt, tmp_path):
    """Scenario "compaction": the log cleaner rewrites the last exported batch with fewer records, keeping
    its first and last offset and leader epoch (a new CRC): not a divergence; the next run goes on."""
    root = str(tmp_path / "logs")
    folder = os.path.join(root, f"{TOPIC}-0")
    data = kafkafmt.encode(values=[b"v%d" % i for i in range(100)], keys=[b"k%d" % (i % 10) for i in range(100)],
                           timestamps=list(range(1, 101)), max_records=50)
    os.makedirs(folder)
    log = os.path.join(folder, f"{0:020d}.log")
    with open(log, "wb") as f:
        f.write(data)
    where = str(tmp_path / "table")
    export(fmt, root, where)
    kept = [50, 60, 99]             # the cleaner kept the newest records of three keys
    cleaned = kafkafmt.encode(values=[b"v%d" % i for i in range(50)], keys=[b"k%d" % (i % 10) for i in range(50)],
                              timestamps=list(range(1, 51)), max_records=50) + \
        kafkafmt.encode(values=[b"v%d" % i for i in kept], keys=[b"k%d" % (i % 10) for i in kept],
                        timestamps=[i + 1 for i in kept], offsets=kept)
    with open(log, "wb") as f:
        f.write(cleaned)
    t, _ = kafkafmt.scan_batches(cleaned)
    assert (int(t["base_offset"][1]), int(t["last_offset"][1]), int(t["record_count"][1])) == (50, 99, 3)
    with open(log, "ab") as f:
        f.write(kafkafmt.encode(values=[b"new"], timestamps=[200], base_offset=100))
    r = export(fmt, root, where)
    assert r.data_loss == [] and r.ranges == {(TOPIC, 0): (100, 101)}


# --- the crash-and-change matrix -----------------------------------------------------------------------------------

def _retention(folder):
    write(folder, 1500, 2)
    for b in segments(folder)[:-2]:          # deleted before the next run read them
        drop_segment(folder, b)
    return segments(folder)[0]


def _log_end_back(folder):
    cut = segments(folder)[-1]
    truncate_to(folder, cut)
    write(folder, 10, 4)                     # the log end still below the ledger's 3000
    return cut


def _written_again(folder):
    cut = segments(folder)[-1]
    truncate_to(folder, cut)
    write(folder, 900, 3)                    # past the ledger's 3000 again
    return cut


def _other_bytes(folder):
    cut = segments(folder)[-1]
    truncate_to(folder, cut)
    write(folder, 3000 - cut, 9)             # as many records at the same offsets, other ones
    return cut


def _new_epoch(folder):
    cut = segments(folder)[-2]
    truncate_to(folder, cut)
    write(folder, 1500, 5, leader_epoch=1)
    return cut


def _recreated(folder):
    shutil.rmtree(folder)
    write(folder, 3300, 11, topic_id=uuid.UUID(int=9))
    return 0


#: name: change the source and return the offset of orders-0 the next run goes on from
CHANGES = {"retention": _retention, "log-end-back": _log_end_back, "written-again": _written_again,
           "other-bytes": _other_bytes, "new-epoch": _new_epoch, "recreated": _recreated}


@pytest.mark.slow
@pytest.mark.parametrize("change", sorted(CHANGES))
@pytest.mark.parametrize("fmt", FORMATS)
def test_crash_and_change_matrix(fmt, change, tmp_path):
    """Each change of the source, then the command line with --fail-on-data-loss false killed at every crash
    point (chunks read, files closed, commits) until a run completes: the table then holds what it held
    before plus the source's records from where the first run went on, each once; the loss is recorded
    once."""
    root = str(tmp_path / "logs")
    folder = write(os.path.join(root, f"{TOPIC}-0"), 3000, topic_id=uuid.UUID(int=8))
    other = write(os.path.join(root, f"{TOPIC}-1"), 700)      # unchanged: what it gets is exported once
    where = str(tmp_path / "table")
    cli(fmt, root, where, check=0)
    before = kp_rows(folder)
    resume = CHANGES[change](folder)
    write(other, 200, seed=1)
    assert "data loss" in cli(fmt, root, where, check=1).stderr      # default: stops, nothing committed
    commits = n_commits(fmt, where)
    crashed, n = 0, 1
    while True:
        p = cli(fmt, root, where, "--fail-on-data-loss", "false", env={"KAFKAFMT_CRASH_AFTER": str(n)})
        if p.returncode != 86:
            assert p.returncode == 0, p.stderr
            break
        crashed += 1
        n += 1
    assert crashed >= 3
    losses = [json.loads(c[LOSS_KEY]) for c in _commit_props(fmt, where)[commits:] if LOSS_KEY in c]
    assert len(losses) == 1, losses                  # recorded once, by the first commit that went on
    (loss,) = losses[0]
    assert loss["kind"] == ("retention" if change == "retention" else "diverged")
    assert (loss["start"], loss["end"]) == ((3000, resume) if change == "retention" else (min(resume, 3000), 3000))
    if change != "retention":
        assert loss["resume"] == resume
    assert "up to date" in cli(fmt, root, where, check=0).stderr
    assert_table_holds(fmt, where, before + [x for x in kp_rows(folder) if x[2] >= resume] + kp_rows(other))


def _until_done(fmt, root, where, *extra):
    """The command line killed at every crash point until a run completes; how many were killed."""
    crashed, n = 0, 1
    while True:
        p = cli(fmt, root, where, *extra, env={"KAFKAFMT_CRASH_AFTER": str(n)})
        if p.returncode != 86:
            assert p.returncode == 0, p.stderr
            return crashed
        crashed += 1
        n += 1


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_many_small_partitions_killed_at_every_step(fmt, tmp_path):
    """Small partitions, read many at once and their rows written together: the first export, then one going on
    after some grew (by a new segment from the ledger's offset, or inside the last one) and a new one came, each
    killed at every crash point until a run completes: the table holds every record of the source once."""
    root = str(tmp_path / "logs")
    folders = [write(os.path.join(root, f"{t}-{p}"), 40 + 25 * p, seed=p, segment_bytes=3 << 10)
               for p in range(2) for t in ("orders", "events")]
    where = str(tmp_path / "table")
    assert _until_done(fmt, root, where) >= 8
    assert_table_holds(fmt, where, [x for f in folders for x in kp_rows(f)])
    write(folders[0], 60, seed=20, segment_bytes=1)
    write(folders[1], 9, seed=21)
    folders.append(write(os.path.join(root, "orders-7"), 30, seed=22))
    assert _until_done(fmt, root, where) >= 4
    assert_table_holds(fmt, where, [x for f in folders for x in kp_rows(f)])
    assert "up to date" in cli(fmt, root, where, check=0).stderr


# --- 4. two first-time Iceberg exports at once ----------------------------------------------------------------------

_RACER = """
import os, sys, time
import kafkafmt
from kafkafmt.lakehouse import CommitConflictError
root, wh, go = sys.argv[1:4]
open(go + "." + str(os.getpid()), "w").close()
while len([f for f in os.listdir(os.path.dirname(go)) if f.startswith(os.path.basename(go) + ".")]) < 2:
    time.sleep(0.001)
try:
    r = kafkafmt.export_table(root, wh, format="iceberg", table="kafka.records")
    print("ok", r.rows)
except CommitConflictError as exc:
    print("conflict", exc)
"""


def test_iceberg_first_exports_racing(tmp_path):
    """Two processes export into a new Iceberg table at the same moment (each creates the namespace and the
    table): each ends with its rows exported, nothing to export, or the documented "changed while this export
    ran ... run it again" -- never a raw SQLAlchemy error -- and the table holds every record once."""
    root = str(tmp_path / "logs")
    folder = write(os.path.join(root, f"{TOPIC}-0"), 600)
    env = dict(os.environ, PYTHONPATH=str(kcli.REPO))
    outcomes = []
    for i in range(4):
        wh, gate = tmp_path / f"wh{i}", tmp_path / f"gate{i}"
        gate.mkdir()
        procs = [subprocess.Popen([sys.executable, "-c", _RACER, root, str(wh), str(gate / "go")], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0 and "Error" not in err, err
            assert out.startswith(("ok 600", "ok 0", "conflict")), out
            if out.startswith("conflict"):
                assert "changed while this export ran" in out and "run it again" in out
        outcomes += [o.split()[0] + ("" if o.startswith("conflict") else o.split()[1]) for o, _ in outs]
        assert sum(o.startswith("ok 600") for o, _ in outs) == 1, outs
        from test_lakehouse import read_iceberg
        for reader, rows in read_iceberg(str(wh)).items():
            assert rows == sorted(kp_rows(folder)), reader
    assert outcomes.count("ok600") == 4


# --- 5. Delta's hour partition column --------------------------------------------------------------------------------

def test_delta_hour_partition_is_a_timestamp(tmp_path):
    """``--partition-by topic,hour(timestamp)`` on Delta: ``timestamp_hour`` is a timestamp (UTC) holding
    the hour each record's timestamp falls in, as Iceberg's hour transform -- queried as one by deltalake,
    Polars and DuckDB."""
    import duckdb
    import polars as pl
    from deltalake import DeltaTable

    root = str(tmp_path / "logs")
    folder = write(os.path.join(root, f"{TOPIC}-0"), 600)
    where = str(tmp_path / "table")
    kcli.run("export", root, "--format", "delta", "--to", where, "--partition-by", "topic,hour(timestamp)", check=0)
    dt = DeltaTable(where)
    assert dt.metadata().partition_columns == ["topic", "timestamp_hour"]
    assert dt.schema().to_arrow().field("timestamp_hour").type == pa.timestamp("us", tz="UTC")
    t = dt.to_pyarrow_table()
    ts = t.column("timestamp").cast(pa.int64()).to_numpy()
    hours = t.column("timestamp_hour").cast(pa.int64()).to_numpy()
    assert (hours == ts // 3_600_000_000 * 3_600_000_000).all()
    assert len(set(hours.tolist())) > 10
    assert pl.read_delta(where).schema["timestamp_hour"] == pl.Datetime("us", "UTC")
    # DuckDB over the data files with the partition values of their paths, as hours of the timestamp
    files = [u[len("file://"):] if u.startswith("file://") else u for u in dt.file_uris()]
    per_file = duckdb.connect().sql(
        f"select count(distinct epoch_us(timestamp) // 3600000000) from read_parquet({files!r}) "
        "group by filename").fetchall()
    assert {n for (n,) in per_file} == {1}        # each file holds one hour
    by_hour = dict(duckdb.connect().sql("select timestamp_hour, count(*) from t group by 1").fetchall())
    assert sum(by_hour.values()) == 600 and len(by_hour) == len(set(hours.tolist()))
    assert_table_holds("delta", where, kp_rows(folder))


def test_delta_hour_text_column_of_an_older_table_stays_text(tmp_path):
    """A table made when ``timestamp_hour`` was text (``2023-11-14-22``) goes on with text values."""
    from deltalake import DeltaTable

    from kafkafmt.lakehouse.layout import kafka_schema

    where = str(tmp_path / "table")
    schema = pa.schema(list(kafka_schema()) + [pa.field("timestamp_hour", pa.string())])
    DeltaTable.create(where, schema, partition_by=["topic", "timestamp_hour"])
    root = str(tmp_path / "logs")
    folder = write(os.path.join(root, f"{TOPIC}-0"), 300)
    export("delta", root, where)
    t = DeltaTable(where).to_pyarrow_table()
    assert t.schema.field("timestamp_hour").type == pa.string()
    ts = t.column("timestamp").cast(pa.int64()).to_numpy() // 1000
    assert t.column("timestamp_hour").to_pylist() == [
        np.datetime64(int(v), "ms").astype("datetime64[h]").item().strftime("%Y-%m-%d-%H") for v in ts]
    assert_table_holds("delta", where, kp_rows(folder))


# --- the Parquet export killed at every step ------------------------------------------------------------------------

def test_parquet_export_killed_at_every_step_with_copies(tmp_path):
    """Scenario "copies under several roots" for the Parquet export, killed after every chunk written and
    after the rename: the target is never a partial file -- absent, or the last complete export -- no
    temporary file of a killed run stays once the next run is done, and with --replicas dedup the output
    holds each offset once, equal to kafka-python's reading."""
    import pyarrow.parquet as pq

    src = tmp_path / "src"
    for p in range(3):
        write(str(src / f"{TOPIC}-{p}"), 400)
    for d in ("a", "b"):
        shutil.copytree(src, tmp_path / d)
    roots = [str(tmp_path / "a"), str(tmp_path / "b")]
    out = tmp_path / "out" / "orders.parquet"
    out.parent.mkdir()
    want = sorted(r for p in range(3) for r in kp_rows(str(src / f"{TOPIC}-{p}")))

    def rows():
        t = pq.read_table(out)
        return rows_of(t.set_column(t.schema.get_field_index("timestamp"), "timestamp",
                                    t.column("timestamp").cast(pa.timestamp("us", tz="UTC"))))

    args = ["export", *roots, "--replicas", "dedup", "--to", str(out), "--threads", "1"]
    p = kcli.run(*args, env={"KAFKAFMT_CRASH_AFTER": "1"})          # killed after its first chunk
    assert p.returncode == 86 and not out.exists()
    assert [f.name for f in out.parent.iterdir()] != []             # its temporary file stays behind
    kcli.run(*args, check=0)
    assert rows() == want and [f.name for f in out.parent.iterdir()] == ["orders.parquet"]
    kills, n = 0, 1
    while True:
        p = kcli.run(*args, env={"KAFKAFMT_CRASH_AFTER": str(n)})
        if p.returncode != 86:
            assert p.returncode == 0, p.stderr
            break
        kills += 1
        n += 1
        assert rows() == want           # the file of a complete run, never a partial one
    assert kills >= 3
    assert rows() == want
    assert [f.name for f in out.parent.iterdir()] == ["orders.parquet"]      # no temporary file left
    assert kcli.run("export", *roots, "--replicas", "all", "--to", str(out), check=0).returncode == 0  # every copy
    assert len(rows()) == 2 * len(want)
