"""A recovery of a cluster's log dirs (several brokers' copies of a partition, written by kafka-python's builders)
says which offsets it removes from a damaged copy that another copy given to it holds intact -- still in the
cluster -- and says so only then: not when the other copy is damaged at the same offsets, not for another
incarnation of the topic, not for a copy not given, not for a follower holding the range in part."""
from __future__ import annotations

import json
import os

import kafkafmt
import kcluster
from kcli import run as cli
from kafkafmt.recovery import plan_recovery

TOPICS = {"pay": (1, 2)}


def _cluster(root, segment_bytes=1500):
    c = kcluster.write_cluster(root, TOPICS, seed=3, records=200, segment_bytes=segment_bytes, behind=0.0,
                               empty=0.0, leader_change=0.0, spread=False)
    return c.copies("pay", 0)


def _lossy(plan):
    return [a for a in plan.actions if a.lost]


def test_offsets_another_copy_holds_are_said_held(tmp_path):
    root = tmp_path / "cluster"
    damaged, intact = _cluster(root)
    clean = kafkafmt.read_log_dirs(str(root)).to_arrow()
    kcluster.flip_byte(damaged, segment=0)
    plan = plan_recovery(str(root))
    lossy = _lossy(plan)
    assert lossy and all(a.held_by == (intact,) for a in lossy)
    assert plan.offsets_held_elsewhere == plan.offsets_lost > 0
    assert f"the copy in {intact} holds every one of them intact" in plan.text()
    summary = json.loads(cli("recover", root, "--json", check=1).stdout.splitlines()[-1])
    assert summary["offsets_held_elsewhere"] == summary["offsets_lost"] == plan.offsets_lost
    kafkafmt.recover(str(root), apply=True, backup=str(tmp_path / "backup"))
    # (the repaired copy now starts at offset 19: the read follows the intact one)
    assert kafkafmt.read_log_dirs(str(root)).to_arrow().equals(clean)
    cli("verify", root, check=0)


def test_no_holder_when_both_copies_are_damaged_there(tmp_path):
    damaged, other = _cluster(tmp_path)
    kcluster.flip_byte(damaged, segment=0)
    kcluster.flip_byte(other, segment=0)
    plan = plan_recovery(str(tmp_path))
    assert _lossy(plan) and not any(a.held_by for a in plan.actions) and plan.offsets_held_elsewhere == 0
    assert "held intact" not in plan.text()


def test_no_holder_of_another_incarnation_or_not_given(tmp_path):
    damaged, other = _cluster(tmp_path)
    kcluster.flip_byte(damaged, segment=0)
    alone = plan_recovery(damaged)                       # the other copy not given
    assert _lossy(alone) and not any(a.held_by for a in alone.actions)
    with open(os.path.join(other, "partition.metadata"), "wb") as f:     # the topic deleted and made again
        f.write(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    plan = plan_recovery(str(tmp_path))
    assert _lossy(plan) and not any(a.held_by for a in plan.actions)


def test_a_range_the_other_copy_holds_only_in_part_is_not_held(tmp_path):
    """Kafka's own recovery (truncate at the damage, later segments deleted) loses the rest of the log; a
    follower that stops halfway through it holds those offsets only in part."""
    damaged, other = _cluster(tmp_path, segment_bytes=5000)         # a few batches a segment
    kcluster.flip_byte(damaged, segment=1)
    whole = plan_recovery(str(tmp_path), kafka_compatible=True)
    assert [a.held_by for a in _lossy(whole)] and all(a.held_by == (other,) for a in _lossy(whole))
    lasts = sorted(row[3] for name in kcluster.segment_files(other)
                   for row in kcluster.batch_positions(os.path.join(other, name)))
    # the follower cut after the first batch of a removed range that spans several of its batches
    first = next(a for action in _lossy(whole) for a, b in action.lost if sum(a <= x <= b for x in lasts) > 1)
    keep = sum(1 for last in lasts if last < first) + 1
    kcluster.truncate_copy(other, keep_batches=keep)
    end = sorted(lasts)[keep - 1]                                   # the follower's last offset now
    lossy = _lossy(plan_recovery(str(tmp_path), kafka_compatible=True))
    assert any(a <= end < b for action in lossy for a, b in action.lost)     # a range it holds only in part
    for a in lossy:        # each action's offsets: held where the follower still holds every one of them
        assert a.held_by == ((other,) if all(last <= end for _, last in a.lost) else ()), a


def test_copies_repaired_apart_read_every_record(tmp_path):
    """Each copy damaged where the other is intact, both repaired: each has lost a range the other holds, and a
    read of the cluster takes the copy read's lost range from the other copy -- every record, once."""
    root = tmp_path / "cluster"
    first, second = _cluster(root)
    clean = kafkafmt.read_log_dirs(str(root)).to_arrow()
    kcluster.flip_byte(first, segment=0)
    kcluster.flip_byte(second, segment=2)
    plan = plan_recovery(str(root))
    assert len(_lossy(plan)) == 2 and plan.offsets_held_elsewhere == plan.offsets_lost
    kafkafmt.recover(str(root), apply=True, backup=str(tmp_path / "backup"))
    recs = kafkafmt.read_log_dirs(str(root))
    assert recs.to_arrow().equals(clean)
    assert any(e.kind is kafkafmt.ReportKind.GAP_FROM_COPY for e in recs.report)
    cli("verify", root, check=0)
