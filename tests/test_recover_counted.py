"""A recovery plan made only to be counted (``plan_recovery(contents=False)``, what ``verify`` counts as its
pending fixes) holds the same actions as the plan ``recover`` applies -- kinds, files, labels, in order -- on a
cluster written without kafkafmt, sound with what a broker fixes at start-up and damaged; only the contents of
the indexes and snapshots it would write are left unbuilt, and it cannot be applied."""
from __future__ import annotations

import os

import pytest

import kafkafmt
import kcluster
from kafkafmt.errors import RecoveryError
from kafkafmt.log import sidefiles
from kafkafmt.recovery import apply_plan, plan_recovery

TOPICS = {"payments": (3, 2), "orders": (2, 2)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("counted")
    c = kcluster.write_cluster(root, TOPICS, seed=5, records=40, segment_bytes=1200, behind=0.3, empty=0.2,
                               leader_change=0.5, producers=3)
    kcluster.flip_byte(c.copies("payments", 0)[0], segment=0)
    folder = c.copies("orders", 1)[0]
    os.remove(os.path.join(folder, kcluster.segment_files(folder)[0][:-4] + ".index"))
    return root


def _files(root):
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.join(d, n)] = f.read()
    return out


def test_a_counted_plan_holds_the_actions_recover_applies(cluster):
    built, counted = plan_recovery(str(cluster)), plan_recovery(str(cluster), contents=False)
    assert [(a.kind, a.file) for a in counted.actions] == [(a.kind, a.file) for a in built.actions]
    assert counted.counts() == built.counts() and counted.problems == built.problems
    labels = set(built.counts())
    assert {".timeindex rebuilt", ".index rebuilt", "producer snapshot written"} <= labels   # (routine writes)
    assert any(a.damage for a in built.actions)                                            # (and damage)
    unbuilt = [a for a in counted.actions if a.data is None and a.kind.value == "write"]
    assert unbuilt and all(b.data is not None for a, b in zip(counted.actions, built.actions) if a in unbuilt)
    assert kafkafmt.recovery.pending_fixes(str(cluster)) == built.counts()
    # a snapshot's message counts its producers alike, though a counted plan replays no batch to count them
    snaps = [(a.message, b) for a, b in zip(counted.actions, built.actions)
             if a.file.endswith(".snapshot") and b.data is not None]
    assert snaps and all(a == b.message for a, b in snaps)
    held = [len(sidefiles.read_producer_snapshot(b.data)["entries"]) for _, b in snaps]
    assert all(f"from the {n} producers'" in b.message for n, (_, b) in zip(held, snaps)) and any(held)


def test_a_counted_plan_is_not_applied(cluster, tmp_path):
    before = _files(cluster)
    with pytest.raises(RecoveryError, match="plan again"):
        apply_plan(plan_recovery(str(cluster), contents=False), tmp_path / "backup")
    assert _files(cluster) == before and not (tmp_path / "backup").exists()


def test_a_broker_folder_named_like_a_partition_is_walked(cluster, tmp_path):
    """``broker-1`` (named as a partition of a topic "broker", holding its ``kafka-logs``) is walked for its log
    dir by recover and by verify's pending fixes, as every command walks it: the same plan as for the log dir
    itself, never an empty partition called clean. A folder only named as a partition, holding nothing, is
    refused by recover as verify refuses it (exit 2)."""
    from kafkafmt.errors import NotALogDirError
    from kcli import run as cli

    broker = os.path.join(str(cluster), "broker-1")
    log_dir = os.path.join(broker, "kafka-logs")
    given, direct = plan_recovery(broker), plan_recovery(log_dir)
    assert direct.actions and [(a.kind, a.file) for a in given.actions] == [(a.kind, a.file) for a in direct.actions]
    assert given.partitions == direct.partitions > 1
    assert kafkafmt.recovery.pending_fixes(broker) == kafkafmt.recovery.pending_fixes(log_dir) == direct.counts()
    assert cli("recover", broker, check=1).stdout == cli("recover", log_dir, check=1).stdout
    empty = tmp_path / "orders-0"
    empty.mkdir()
    with pytest.raises(NotALogDirError):
        plan_recovery(str(empty))
    cli("recover", empty, check=2)
    cli("verify", empty, check=2)
