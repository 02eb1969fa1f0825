"""Copies holding the very same bytes as the copy read (`kafkafmt.log.same_bytes`): ``verify`` reads such a log once
and checks each copy's side files against that read -- and says every problem it says when it reads every copy
(a copy damaged under an equal size, a side file of its own, a log problem both copies hold). Clusters written
without kafkafmt (tests/kcluster.py)."""
from __future__ import annotations

import json
import os

import pytest

import kafkafmt
import kcli
import kcluster
from kafkafmt.log import same_bytes


def _write_pair(root, segment_bytes=1500):
    """One partition on two brokers, no copy behind: (root, the copy read, its follower), the same bytes."""
    kcluster.write_cluster(root, {"pay": (1, 2)}, brokers=2, seed=5, records=120, segment_bytes=segment_bytes,
                           behind=0.0, leader_change=0.0, spread=False)
    found = kafkafmt.log.discover(str(root))
    (a,), (b,) = found.partitions, found.unread
    return root, a.folder, b.folder


@pytest.fixture
def pair(tmp_path):
    return _write_pair(tmp_path)


def _pairs(root):
    found = kafkafmt.log.discover(str(root))
    return [(found.partitions[0], found.unread[0])]


def _verify(root, monkeypatch, twins):
    from kafkafmt.report.checks import Twins

    monkeypatch.setattr(Twins, "enabled", [twins])
    p = kcli.run("verify", root, "--json")
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    lines[-1].pop("seconds")
    return p.returncode, lines, kcli.run("report", root, "--json").stdout


def _same_either_way(root, monkeypatch):
    """verify's exit code and every line, the same with the twins' shortcut and reading every copy (and the
    report's JSON)."""
    fast, slow = _verify(root, monkeypatch, True), _verify(root, monkeypatch, False)
    assert fast == slow
    return fast[:2]


def test_same_bytes_compares_every_byte(pair):
    root, _, follower = pair
    assert same_bytes(_pairs(root)) == [True]
    kcluster.flip_byte(follower, segment=1)           # (the same size, a batch's body changed)
    assert same_bytes(_pairs(root)) == [False]


def test_same_bytes_reads_every_group_into_one_buffer(pair, monkeypatch):
    """Segments compared a few at a time (groups of sizes up and down) are read into one buffer made once, as
    large as the largest group; every byte still compared."""
    from kafkafmt.log import _twins
    from kafkafmt.storage import LocalStorage

    root, _, follower = pair
    monkeypatch.setattr(_twins, "_GROUP_BYTES", 4000)
    seen = []
    read_many = LocalStorage.read_many

    def spy(self, paths, buf, starts, *args, **kwargs):
        seen.append((id(buf.base if buf.base is not None else buf), len(buf), int(starts[-1])))
        return read_many(self, paths, buf, starts, *args, **kwargs)

    pairs = _pairs(root)
    monkeypatch.setattr(LocalStorage, "read_many", spy)
    assert same_bytes(pairs) == [True]
    assert len(seen) > 3 and len({s[0] for s in seen}) == 1 and max(s[2] for s in seen) == seen[0][1], seen
    kcluster.flip_byte(follower, segment=len(kcluster.segment_files(follower)) - 1)     # (in the last group)
    assert same_bytes(pairs) == [False]


def test_same_bytes_other_segments(pair):
    root, _, follower = pair
    last = os.path.join(follower, kcluster.segment_files(follower)[-1])
    with open(last, "ab") as f:
        f.write(b"\0" * 12)                           # (a zero-filled tail: a larger file)
    assert same_bytes(_pairs(root)) == [False]


def test_a_damaged_twin_is_said(pair, monkeypatch):
    """A follower whose bytes differ from the copy read by one flipped byte is read and its damage said."""
    root, _, follower = pair
    kcluster.flip_byte(follower, segment=1)
    rc, lines = _same_either_way(root, monkeypatch)
    assert rc == 1 and any(d.get("severity") == "error" and d["file"].startswith(str(follower)) for d in lines)


def test_a_twins_side_files_are_its_own(pair, monkeypatch):
    """A twin's index file is checked against the batches of the copy read: its own damage said, in its name."""
    root, _, follower = pair
    assert same_bytes(_pairs(root)) == [True]
    index = os.path.join(follower, kcluster.segment_files(follower)[0][:-4] + ".index")
    with open(index, "r+b") as f:
        f.seek(4)
        f.write(b"\xff\xff\xff\x00")                  # (an entry pointing past its segment's batches)
    rc, lines = _same_either_way(root, monkeypatch)
    assert rc == 1 and [d["file"] for d in lines if d.get("severity") == "error"] == [index]


def test_a_log_problem_twins_hold_is_said_of_each(tmp_path, monkeypatch):
    """Both copies hold the same stray overlapping segment: the problem is said of each copy's files."""
    root, leader, follower = _write_pair(tmp_path, segment_bytes=1 << 20)
    made = [kcluster.stray_overlap(folder, segment=0)[0] for folder in (leader, follower)]
    assert same_bytes(_pairs(root)) == [True]
    rc, lines = _same_either_way(root, monkeypatch)
    said = {d["file"] for d in lines if d.get("type") != "summary"}
    assert rc == 1 and all(path in said for path in made)


def test_twins_past_the_kept_batches_are_read(tmp_path, monkeypatch):
    """Past the batches a check keeps for twins, a twin is read as any copy: the same answer."""
    from kafkafmt.report.checks import Twins

    root, _, follower = _write_pair(tmp_path)
    index = os.path.join(follower, kcluster.segment_files(follower)[0][:-4] + ".index")
    with open(index, "r+b") as f:
        f.seek(4)
        f.write(b"\xff\xff\xff\x00")
    monkeypatch.setattr(Twins, "max_batches", 0)
    rc, lines = _same_either_way(root, monkeypatch)
    assert rc == 1 and [d["file"] for d in lines if d.get("severity") == "error"] == [index]


def test_twins_keep_at_most_their_batches(pair, monkeypatch):
    """What the reads found is kept for the twins up to `Twins.max_batches` batches; past it a twin is read."""
    from kafkafmt.read import iter_partitions_with
    from kafkafmt.report.checks import PARTITION_CHECK_READ, Twins, check_partition

    found = kafkafmt.log.discover(str(pair[0]))
    for cap, kept in ((0, False), (1 << 18, True)):
        monkeypatch.setattr(Twins, "max_batches", cap)
        twins = Twins(found)
        for part, chunks, report in iter_partitions_with(found.partitions, PARTITION_CHECK_READ):
            check_partition(part, read=(chunks, report), logged=twins)
        assert bool(twins.logged) == kept and 0 <= twins.kept <= cap
        (copy, read, logged), = twins.copies(found.unread, iter_partitions_with)
        assert copy.key == found.unread[0].key and (logged is not None) == kept and (read is None) == kept
        assert twins.kept == 0 and not twins.logged          # (let go once its last twin is checked)
        for _ in read[0] if read else ():
            pass
