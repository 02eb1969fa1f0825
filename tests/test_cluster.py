"""A cluster's copies read right (issue 42, items 1-4 and 13), on three brokers' log dirs written without
kafkafmt (tests/kcluster.py: kafka-python's builders, side files as a broker places them).

One damaged cluster holds every kind of damage at once, each in its own partition, and every door is asked
about it once:

* payments-1: a byte flipped in a copy that is not read -- every door reads each offset once, and `verify`,
  `stats` and `report` name the damaged copy (exit 1);
* payments-4: a byte flipped in the copy that is read, its followers intact -- every door gives every record,
  the damaged stretch read from an intact copy (`ReportKind.FROM_COPY`), the damaged copy still a problem;
* orders-0: a follower behind its leader -- a copy ``behind``, by how many offsets;
* orders-1: a former leader's copy with records above its high watermark that the new leader's log does not
  hold -- ``diverged`` and uncommitted (a warning: Kafka would truncate them), the new leader's records read;
* orders-2: a stray copy of the second half of a segment saved as a segment of its own in the copy read --
  each offset once, the overlap reported.

The truth is what the generator wrote to each partition's leader (its records, values and offsets), never what
kafkafmt read. Copies of two incarnations of a topic are a second, smaller cluster.
"""
from __future__ import annotations

import collections
import json
import os
import shutil
import warnings

import pyarrow.parquet as pq
import pytest

import kafkafmt
import kcli
import kcluster

TOPICS = {"payments": (6, 3), "orders": (3, 2)}


def _read(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kafkafmt.KafkafmtWarning)
        return fn(*args, **kw)


def _read_copy(root, topic, partition):
    """The folder of the copy a read of ``root`` follows for one partition (what discovery chose)."""
    found = kafkafmt.log.discover(str(root), topics=[topic], partitions=[partition])
    return found.partitions[0].folder


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """(root, cluster, what was done): the cluster with one damage per partition (see the module doc)."""
    root = tmp_path_factory.mktemp("damaged")
    c = kcluster.write_cluster(root, TOPICS, seed=42, records=120, segment_bytes=3000, behind=0.0, empty=0.0,
                               leader_change=1.0)
    done = {}
    follower = [f for f in c.copies("payments", 1) if f != _read_copy(root, "payments", 1)][0]
    done["follower"] = (follower, kcluster.flip_byte(follower, segment=1))
    leader = _read_copy(root, "payments", 4)
    done["leader"] = (leader, kcluster.flip_byte(leader, segment=1))
    stale = c.copies("orders", 0)[1]
    kcluster.truncate_copy(stale, keep_batches=3)
    done["stale"] = stale
    former = c.parts[("orders", 1)].replicas[1]
    done["diverged"] = (c.folder(former, "orders", 1), kcluster.diverge_copy(c, former, "orders", 1))
    stray = _read_copy(root, "orders", 2)
    done["overlap"] = (stray, kcluster.stray_overlap(stray, segment=0))
    return root, c, done


def _truth(c):
    """{(topic, partition): {offset: value}} of the leaders."""
    return {k: {r.offset: r.value for r in recs} for k, recs in c.truth().items()}


def _by_partition(table):
    got = collections.defaultdict(dict)
    for t, p, o, v in zip(*(table.column(n).to_pylist() for n in ("topic", "partition", "offset", "value"))):
        assert o not in got[(t, p)], f"offset {o} of {t}-{p} read twice"
        got[(t, p)][o] = v
    return dict(got)


def test_library_reads_each_offset_once_from_an_intact_copy(damaged):
    root, c, done = damaged
    recs = _read(kafkafmt.read_log_dirs, str(root))
    assert _by_partition(recs.to_arrow()) == _truth(c)
    kinds = collections.Counter(e.kind for e in recs.report)
    assert kinds[kafkafmt.ReportKind.FROM_COPY] == 1 and kinds[kafkafmt.ReportKind.DIVERGED] == 1
    used = [e for e in recs.report if e.kind is kafkafmt.ReportKind.FROM_COPY][0]
    leader, (lo, hi) = done["leader"]
    assert used.file.startswith(leader) and used.offset == lo
    overlap = [e for e in recs.report if e.kind is kafkafmt.ReportKind.DUPLICATE]
    assert len(overlap) == 1 and overlap[0].file.startswith(done["overlap"][0])
    chunks = list(_read(kafkafmt.iter_log_dirs, str(root), max_bytes=4 << 10))
    assert _by_partition(kafkafmt.Records.concat(chunks).to_arrow()) == _truth(c)


def test_the_copy_a_damaged_stretch_is_read_from_is_said_so_before_the_read(damaged):
    """payments-4: the copy read fails a batch's CRC that both followers hold intact. The copies' comparison sees
    it: the follower the read takes the stretch from is `PARTLY_READ` naming those offsets, the other one a copy
    not read (`REPLICA`) -- not both said to be left unread while one of them is read."""
    root, c, done = damaged
    recs = _read(kafkafmt.read_log_dirs, str(root), topics=["payments"], partitions=[4])
    by_kind = collections.defaultdict(list)
    for e in recs.report:
        by_kind[e.kind].append(e)
    (used,), (partly,), (unread,) = (by_kind[k] for k in (kafkafmt.ReportKind.FROM_COPY,
                                                         kafkafmt.ReportKind.PARTLY_READ, kafkafmt.ReportKind.REPLICA))
    lo, hi = done["leader"][1]
    assert f"read from the copy in {partly.file}:" in used.message and partly.offset == used.offset == lo
    assert f"offsets {lo}..{hi}" in partly.message and partly.file != unread.file
    assert {partly.file, unread.file} == set(c.copies("payments", 4)) - {done["leader"][0]}
    note = kcli.run("verify", "--topic", "payments", "--partition", "4", str(root), check=1).stderr
    assert "1 copy of partitions not read" in note


def test_a_copy_not_read_whose_crc_fails_is_called_damaged_by_every_door(tmp_path):
    """A follower with one batch whose CRC fails, nothing else wrong: the copies' comparison computes the CRCs, so
    the read's report, `stats` (exit 1) and `report` 's copies table call it damaged -- not a copy in sync --, and
    `verify` says the damage once, where it is."""
    c = kcluster.write_cluster(tmp_path / "c", {"events": (1, 3)}, seed=3, records=40, behind=0.0, empty=0.0,
                               leader_change=0.0)
    follower = [f for f in c.copies("events", 0) if f != _read_copy(c.root, "events", 0)][0]
    lo, hi = kcluster.flip_byte(follower, batch=1)
    recs = _read(kafkafmt.read_log_dirs, c.root)
    assert sorted(recs.offset.tolist()) == [r.offset for r in c.parts[("events", 0)].records()]
    (said,) = [e for e in recs.report if e.kind is kafkafmt.ReportKind.DAMAGED_COPY]
    assert said.file.startswith(follower) and f"offsets {lo}..{hi}" in said.message
    stats = kcli.run("stats", c.root, check=1)
    assert follower in stats.stderr and "fails the CRC" in stats.stderr
    states = {x["folder"]: x["state"] for x in json.loads(kcli.run("report", "--json", c.root, check=1).stdout)["copies"]}
    assert states[follower] == "damaged" and sorted(states.values()) == ["damaged", "in sync", "read"]
    errors = [x for x in kcli.run("verify", c.root, check=1).stdout.splitlines() if x.startswith("error:")]
    assert len(errors) == 1 and follower in errors[0] and f"(offset {lo})" in errors[0]


@pytest.mark.parametrize("second", [0, 1])
def test_the_copy_a_crc_failure_is_read_from_is_the_one_said(tmp_path, second):
    """The copy read fails a batch's CRC, and one follower (either) fails another's: whichever copy the read takes
    the stretch from, its note names those offsets (with its own damage, when it is the damaged follower), and
    no other copy's note does."""
    c = kcluster.write_cluster(tmp_path / "c", {"events": (1, 3)}, seed=3, records=40, behind=0.0, empty=0.0,
                               leader_change=0.0)
    read = _read_copy(c.root, "events", 0)
    lo, hi = kcluster.flip_byte(read, batch=1)
    kcluster.flip_byte(sorted(f for f in c.copies("events", 0) if f != read)[second], batch=2)
    recs = _read(kafkafmt.read_log_dirs, c.root)
    assert sorted(recs.offset.tolist()) == [r.offset for r in c.parts[("events", 0)].records()]
    (used,) = [e for e in recs.report if e.kind is kafkafmt.ReportKind.FROM_COPY]
    naming = [e for e in recs.report if e.kind is not kafkafmt.ReportKind.FROM_COPY and f"{lo}..{hi}" in e.message]
    assert len(naming) == 1 and f"read from the copy in {naming[0].file.split('/0000')[0]}:" in used.message


def test_strict_reads_do_not_raise_where_a_copy_holds_the_damage_intact(damaged):
    root, c, done = damaged
    recs = _read(kafkafmt.read_log_dirs, str(root), topics=["payments"], partitions=[4], threads=1)
    assert len(recs) == len(c.parts[("payments", 4)].records())
    # the damaged copy alone is damage, as ever
    with pytest.raises(kafkafmt.CrcError):
        kafkafmt.read_log_dir(done["leader"][0])


def test_copies_as_data(damaged):
    root, c, done = damaged
    found = kafkafmt.log.discover(str(root))
    by_folder = {x.folder: x for x in found.copies}
    stale = by_folder[str(done["stale"])]
    p0 = c.parts[("orders", 0)]
    assert stale.state == "behind" and stale.behind == p0.end - stale.log_end > 0
    diverged = by_folder[done["diverged"][0]]
    assert diverged.state == "diverged" and diverged.uncommitted and diverged.offset == done["diverged"][1]
    assert diverged.high_watermark == done["diverged"][1]
    # the copy read of orders-1 is the new leader's (the newest leader epoch), though the other is as long
    read = [x for x in found.copies if (x.topic, x.partition, x.state) == ("orders", 1, "read")][0]
    assert read.folder != done["diverged"][0] and read.log_end == c.parts[("orders", 1)].end
    # (topic ids are read where the batches do not tell copies apart: here, orders-1's diverged copy)
    assert all(x.topic_id in (None, c.parts[(x.topic, x.partition)].topic_id) for x in found.copies)
    assert diverged.topic_id == c.parts[("orders", 1)].topic_id


def test_verify_checks_every_copy(damaged):
    root, c, done = damaged
    v = kcli.run("verify", "--json", root, check=1)
    lines = [json.loads(x) for x in v.stdout.splitlines()]
    errors = [x for x in lines if x.get("severity") == "error"]
    # exactly the two damaged copies -- the one not read, and the one read (its stretch read from another copy)
    # -- and the stray segment (recover removes it)
    follower, (flo, _) = done["follower"]
    leader, (llo, _) = done["leader"]
    stray_folder, (stray, slo, _shi) = done["overlap"]
    assert sorted(os.path.dirname(e["file"]) for e in errors) == sorted([follower, leader, stray_folder]), errors
    assert {e["offset"] for e in errors} == {flo, llo, slo}
    assert [e for e in errors if e["file"] == stray and "stray copy" in e["message"]]
    summary = lines[-1]
    assert summary["records"] == c.count() and summary["partitions"] == len(c.parts)
    assert summary["copies"] == sum(len(p.replicas) for p in c.parts.values()) - len(c.parts)
    warned = " ".join(x["message"] for x in lines if x.get("severity") == "warning")
    assert "Kafka would truncate" in warned
    # the damaged follower alone: the same error
    alone = kcli.run("verify", "--json", os.path.dirname(follower), check=1)
    assert any(json.loads(x).get("offset") == flo for x in alone.stdout.splitlines())


def test_cli_counts_and_exports_each_offset_once(damaged, tmp_path):
    root, c, done = damaged
    stats = kcli.run("stats", "--json", root, check=1)          # exit 1: damaged copies are problems
    got = {(d["topic"], d["partition"]): d["records"] for d in json.loads(stats.stdout)["partitions"]}
    assert got == {k: len(v) for k, v in _truth(c).items()}
    out = tmp_path / "all.parquet"
    kcli.run("export", root, "--to", out, check=0)
    assert _by_partition(pq.read_table(out)) == _truth(c)
    report = json.loads(kcli.run("report", "--json", root, check=1).stdout)
    states = {(x["folder"]): x["state"] for x in report["copies"]}
    assert states[done["follower"][0]] == "damaged" and states[str(done["stale"])] == "behind"
    assert states[done["diverged"][0]] == "diverged"
    read4 = [x for x in report["copies"] if x["folder"] == done["leader"][0]][0]
    assert read4["state"] == "read" and read4["errors"] == 1
    every = kcli.run("stats", "--replicas", "all", "--partitions-only", root, check=1)
    for d in c.dirs.values():           # each copy of payments-4 a row of its own, labelled as a copy
        assert f"payments-4 (copy in {d})" in every.stdout


def test_spark_batch_and_stream_read_each_offset_once(damaged, spark, tmp_path):
    root, c, done = damaged
    df = spark.read.format("kafka-segments").load(str(root))
    rows = df.select("topic", "partition", "offset", "value").collect()
    got = collections.defaultdict(dict)
    for r in rows:
        got[(r.topic, r.partition)][r.offset] = bytes(r.value)
    assert dict(got) == _truth(c) and len(rows) == c.count()
    q = (spark.readStream.format("kafka-segments").option("startingOffsets", "earliest").load(str(root))
         .select("topic", "partition", "offset", "value").writeStream.format("memory").queryName("cluster_once")
         .trigger(availableNow=True).option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        assert q.awaitTermination(180)
        assert q.exception() is None, q.exception()
        streamed = collections.defaultdict(dict)
        rows = spark.table("cluster_once").collect()
        for r in rows:
            streamed[(r.topic, r.partition)][r.offset] = bytes(r.value)
    finally:
        q.stop()
    assert dict(streamed) == _truth(c) and len(rows) == c.count()


def test_lakehouse_holds_each_offset_once(damaged, tmp_path):
    root, c, done = damaged
    pytest.importorskip("deltalake")
    table = tmp_path / "delta"
    result = _read(kafkafmt.export_table, str(root), str(table), format="delta")
    from deltalake import DeltaTable

    t = DeltaTable(str(table)).to_pyarrow_table()
    assert _by_partition(t) == _truth(c), result


def test_a_threaded_discovery_finds_what_one_thread_finds(damaged, monkeypatch):
    """Listing the log dirs' folders in several threads and scanning the copies' batch headers a group ahead give
    the partitions, listings, copies and report that one thread gives, on the damaged cluster (groups of a few
    segments each: many groups)."""
    from kafkafmt.log import _copies
    from kafkafmt.storage import _local

    root, _, _ = damaged
    monkeypatch.setattr(_local, "FOLDERS_A_THREAD", 1)
    monkeypatch.setattr(_copies, "_SCAN_GROUP_BYTES", 1 << 13)

    def seen(threads):
        found = _read(kafkafmt.log.discover, str(root), threads=threads)
        return ([(p.topic, p.partition, p.folder, p.listing, [a.folder for a in p.alternates], p.gaps)
                 for p in found.partitions],
                found.copies, [(e.kind, e.file, e.message) for e in found.report])

    one = seen(1)
    assert {c.state for c in one[1]} >= {"read", "behind", "diverged"} and one[2]      # (copies were compared)
    assert seen(2) == one and seen(4) == one


def test_the_copies_are_scanned_in_buffers_made_once(damaged, monkeypatch):
    """The copies' segments are read a group at a time into one buffer (two with a thread scanning ahead), made
    once as large as the largest group -- not one made anew for each group larger than the one before, whose
    memory the process would keep -- and the copies, partitions and report are what they were."""
    from kafkafmt.log import _copies
    from kafkafmt.storage import LocalStorage

    root, _, _ = damaged
    found = _read(kafkafmt.log.discover, str(root))
    monkeypatch.setattr(_copies, "_SCAN_GROUP_BYTES", 1 << 13)       # (many groups, of sizes up and down)
    buffers = []
    read_many = LocalStorage.read_many

    def spy(self, paths, buf, starts, *args, **kwargs):
        base = buf
        while base.base is not None:
            base = base.base
        buffers.append((id(base), len(base), int(starts[-1])))
        return read_many(self, paths, buf, starts, *args, **kwargs)

    monkeypatch.setattr(LocalStorage, "read_many", spy)
    for threads, made in ((1, 1), (2, 2)):
        buffers.clear()
        again = _read(kafkafmt.log.discover, str(root), threads=threads)
        assert len({b[0] for b in buffers}) == made and len(buffers) > 10, buffers
        assert len({b[1] for b in buffers}) == 1 and max(b[2] for b in buffers) == buffers[0][1]
        assert again.copies == found.copies and [p.folder for p in again.partitions] == \
            [p.folder for p in found.partitions]
        assert [(e.kind, e.file, e.message) for e in again.report] == [(e.kind, e.file, e.message)
                                                                       for e in found.report]


# --- incarnations ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def incarnations(tmp_path_factory):
    """events-0 in two roots: root A an old incarnation of the topic (offsets 500..599 left by retention),
    root B the re-created topic (offsets 0..); a third root holds the cluster's metadata log naming B's id."""
    base = tmp_path_factory.mktemp("incarnations")
    c = kcluster.write_cluster(base / "b", {"events": (1, 1)}, seed=5, records=60, behind=0.0, empty=0.0)
    new = c.parts[("events", 0)]
    a = base / "a" / "broker-1" / "kafka-logs"
    shutil.copytree(c.dirs[1], a)
    old_id, old = kcluster.other_incarnation(str(a / "events-0"))
    meta = base / "meta" / "controller-1" / "kafka-logs"
    kcluster.write_metadata_log(str(meta), {"events": new.topic_id})
    return {"a": a, "b": c.dirs[1], "meta": meta, "old_id": old_id, "new": new, "old": old}


def test_incarnations_are_never_merged(incarnations):
    i = incarnations
    roots = [str(i["a"]), str(i["b"])]
    with pytest.raises(kafkafmt.IncarnationError) as err:
        kafkafmt.read_log_dirs(roots)
    assert i["old_id"] in str(err.value) and i["new"].topic_id in str(err.value)
    assert str(i["a"]) in str(err.value) and str(i["b"]) in str(err.value)
    chosen = _read(kafkafmt.read_log_dirs, roots, topic_id=i["old_id"])
    assert sorted(chosen.offset.tolist()) == [r.offset for r in i["old"]]
    strays = [e for e in chosen.report if e.kind is kafkafmt.ReportKind.STRAY]
    assert len(strays) == 1 and str(i["b"]) in strays[0].file
    # the cluster's metadata log names the live incarnation
    live = _read(kafkafmt.read_log_dirs, roots + [str(i["meta"])], topics=["events"])
    assert {o: v for o, v in zip(live.offset.tolist(), live.to_arrow().column("value").to_pylist())} == \
        {r.offset: r.value for r in i["new"].records()}


def test_incarnations_through_the_command_line_and_spark(incarnations, spark, tmp_path):
    i = incarnations
    v = kcli.run("verify", i["a"], i["b"], check=1)
    assert i["old_id"] in v.stdout + v.stderr and i["new"].topic_id in v.stdout + v.stderr
    e = kcli.run("export", i["a"], i["b"], "--to", tmp_path / "x.parquet", check=1)
    assert "topic-id" in e.stderr and not (tmp_path / "x.parquet").exists()
    kcli.run("export", i["a"], i["b"], "--topic-id", i["new"].topic_id, "--to", tmp_path / "new.parquet", check=0)
    assert pq.read_table(tmp_path / "new.parquet").num_rows == len(i["new"].records())
    reader = spark.read.format("kafka-segments").option("paths", f"{i['a']},{i['b']}")
    with pytest.raises(Exception, match="topicId"):
        reader.load().count()
    assert reader.option("topicId", i["old_id"]).load().count() == len(i["old"])


def test_copies_of_one_history_naming_two_topic_ids_are_said(tmp_path):
    """Two copies holding the same batches, one of whose partition.metadata names another topic id (a broker
    refuses such a log: InconsistentTopicIdException): read as one history -- each record once -- and verify and
    report say which copy names which id (a warning: exit 1 with --strict only)."""
    import random

    c = kcluster.write_cluster(tmp_path / "c", {"events": (1, 2)}, seed=3, records=30, behind=0.0, empty=0.0,
                               leader_change=0.0)
    read, other = _read_copy(c.root, "events", 0), None
    other = [f for f in c.copies("events", 0) if f != read][0]
    ours, theirs = c.parts[("events", 0)].topic_id, kcluster.topic_id(random.Random(99))
    with open(os.path.join(other, "partition.metadata"), "w") as f:
        f.write(f"version: 0\ntopic_id: {theirs}")
    recs = _read(kafkafmt.read_log_dirs, c.root)
    assert sorted(recs.offset.tolist()) == [r.offset for r in c.parts[("events", 0)].records()]
    said = [x for x in kcli.run("verify", c.root, check=0).stdout.splitlines() if "topic id" in x]
    assert len(said) == 1 and said[0].startswith(f"warning: {os.path.join(other, 'partition.metadata')}: ")
    assert theirs in said[0] and ours in said[0] and read in said[0]
    kcli.run("verify", "--strict", c.root, check=1)
    rows = [p for p in json.loads(kcli.run("report", "--json", c.root, check=0).stdout)["problems"]
            if "topic id" in p["message"]]
    assert [(r["severity"], r["file"], r["message"]) for r in rows] == [
        ("warning", os.path.join(other, "partition.metadata"), said[0].split(": ", 2)[2])]
    # one incarnation asked for: the other copy is a stray, said once, by discovery
    v = kcli.run("verify", "--topic-id", ours, c.root, check=0)
    assert "another incarnation" in v.stdout + v.stderr and "this copy's topic id" not in v.stdout


def test_overlapping_segments_that_differ_are_refused(tmp_path):
    """A stray segment holding the same offsets as its neighbour with other records: which records the offsets
    hold cannot be told -- a strict read raises, verify and export exit 1, the export writes nothing."""
    c = kcluster.write_cluster(tmp_path / "c", {"events": (1, 1)}, seed=9, records=300, segment_bytes=8000,
                               behind=0.0, empty=0.0, leader_change=0.0, spread=False)
    folder = c.folder(c.parts[("events", 0)].replicas[0], "events", 0)
    seg = max(range(len(kcluster.segment_files(folder)) - 1),          # a segment of several batches
              key=lambda k: len(kcluster.batch_positions(os.path.join(folder, kcluster.segment_files(folder)[k]))))
    assert len(kcluster.batch_positions(os.path.join(folder, kcluster.segment_files(folder)[seg]))) >= 4
    stray, lo, hi = kcluster.stray_overlap(folder, segment=seg, differ=True)
    with pytest.raises(kafkafmt.CorruptRecordError, match="overlap and disagree"):
        kafkafmt.read_log_dir(folder)
    salvaged = _read(kafkafmt.read_log_dir, folder, errors="salvage")
    assert len(salvaged) == len(set(salvaged.offset.tolist())) == len(c.parts[("events", 0)].records())
    assert [e.kind for e in salvaged.report if e.kind is kafkafmt.ReportKind.MISMATCH]
    v = kcli.run("verify", folder, check=1)
    assert [x for x in v.stdout.splitlines() if x.startswith(f"error: {stray} ") and "in other batches" in x]
    kcli.run("export", folder, "--to", tmp_path / "x.parquet", check=1)
    assert not (tmp_path / "x.parquet").exists()
