"""The commands' answers on a cluster do not depend on how fast they are got (issue 44): ``stats --json``,
``verify --json`` (its problems and its summary but the seconds) and ``report --json`` print the same bytes
with every shortcut of their reads and checks and without them -- each partition and each copy read on its
own, the report's figures and checks from two reads, every batch and every index entry checked one by one,
`recover`'s planner walking, scanning and reading every file itself for verify's pending fixes.

Two clusters written without kafkafmt (tests/kcluster.py): one damaged (a copy not read with a flipped byte,
the copy read damaged where its followers are intact, a follower behind, a diverged former leader, a stray
overlapping segment), one sound but with what a broker fixes at start-up (a missing time index, a broker
leftover, the active segments' time indexes without their final entry, no producer snapshots) and a log
start offset moved past a partition's first segment (DeleteRecords). The report's page holds the figures
plotly.py makes of the same specs.
"""
from __future__ import annotations

import json
import os
import re

import pytest

import kafkafmt
import kcli
import kcluster
from kafkafmt.log import sidefiles

TOPICS = {"payments": (4, 3), "orders": (3, 2), "idle": (3, 2)}


def _read_copy(root, topic, partition):
    return kafkafmt.log.discover(str(root), topics=[topic], partitions=[partition]).partitions[0].folder


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    base = tmp_path_factory.mktemp("outputs")
    damaged = base / "damaged"
    c = kcluster.write_cluster(damaged, TOPICS, seed=3, records=60, segment_bytes=1500, behind=0.3, empty=0.0,
                               leader_change=1.0, spread=False)
    follower = [f for f in c.copies("payments", 1) if f != _read_copy(damaged, "payments", 1)][0]
    kcluster.flip_byte(follower, segment=1)
    kcluster.flip_byte(_read_copy(damaged, "payments", 2), segment=1)
    kcluster.truncate_copy(c.copies("orders", 0)[1], keep_batches=2)
    kcluster.diverge_copy(c, c.parts[("orders", 1)].replicas[1], "orders", 1)
    kcluster.stray_overlap(_read_copy(damaged, "orders", 2), segment=0)

    routine = base / "routine"
    c = kcluster.write_cluster(routine, TOPICS, seed=4, records=60, segment_bytes=1500, behind=0.3, empty=0.3,
                               leader_change=0.5)
    folder = _read_copy(routine, "payments", 0)
    os.remove(os.path.join(folder, kcluster.segment_files(folder)[0][:-4] + ".timeindex"))
    folder = _read_copy(routine, "orders", 0)
    with open(os.path.join(folder, "00000000000000000000.log.deleted"), "wb") as f:
        f.write(b"left behind")
    # DeleteRecords: a log start offset past a partition's first segment, on each of its copies
    moved = [p for p in c.parts.values() if p.topic == "idle"
             and len(kcluster.segment_files(_read_copy(routine, p.topic, p.partition))) > 1][0]
    second = int(kcluster.segment_files(_read_copy(routine, moved.topic, moved.partition))[1][:-4])
    for broker in moved.replicas:
        path = os.path.join(c.dirs[broker], "log-start-offset-checkpoint")
        starts = sidefiles.read_offset_checkpoint(path)
        starts[(moved.topic, moved.partition)] = second + 1
        sidefiles.write_offset_checkpoint(path, starts)
    return {"damaged": damaged, "routine": routine, "moved": (moved.topic, moved.partition)}


def _outputs(root):
    """The three commands' JSON on ``root``, as text (verify's summary without its seconds)."""
    out = {"stats": kcli.run("stats", root, "--json").stdout, "report": kcli.run("report", root, "--json").stdout}
    lines = []
    for line in kcli.run("verify", root, "--json").stdout.splitlines():
        doc = json.loads(line)
        doc.pop("seconds", None)
        lines.append(json.dumps(doc))
    out["verify"] = "\n".join(lines)
    return out


def _one_by_one(monkeypatch):
    """Every shortcut off: each partition and copy read on its own, the report's figures and checks from two
    reads, every chunk and index checked entry by entry, every chunk's figures taken segment by segment and
    codec by codec, verify's pending fixes planned from scratch, every copy's log read (none checked from the read
    of a copy holding the same bytes), copies compared batch by batch (none told in sync by its keys' bytes)."""
    import importlib

    from kafkafmt.read import iter_log_dir_with
    from kafkafmt.recovery import pending_fixes
    from kafkafmt.report.checks import Checker, Twins
    from kafkafmt.report.figures import PartitionStats

    def each_on_its_own(parts, options):
        for part in parts:
            report = []
            yield part, iter_log_dir_with(part, options, report=report), report

    stats, verify, build, indexes = (importlib.import_module(m) for m in (
        "kafkafmt.cli.stats", "kafkafmt.cli.verify", "kafkafmt.report.build", "kafkafmt.log.sidefiles._indexes"))
    for module in (stats, verify, build):
        monkeypatch.setattr(module, "iter_partitions_with", each_on_its_own)
    monkeypatch.setattr(build, "reads_alike", lambda part, segments=None: False)
    monkeypatch.setattr(verify, "pending_fixes", lambda paths, **_: pending_fixes(paths))
    monkeypatch.setattr(Twins, "enabled", [False])
    monkeypatch.setattr(Checker, "_plain_chunk", lambda *a: None)
    monkeypatch.setattr(PartitionStats, "_add_plain", lambda *a: False)
    monkeypatch.setattr(indexes, "_index_sound", lambda *a: False)
    monkeypatch.setattr(indexes, "_timeindex_sound", lambda *a: False)
    monkeypatch.setattr(sidefiles, "sound_index_entries", lambda *a: None)
    monkeypatch.setattr(importlib.import_module("kafkafmt.log._copies"), "_PREFIXES", [False])


@pytest.mark.parametrize("name", ["damaged", "routine"])
def test_every_command_answers_the_same_without_its_shortcuts(clusters, name, monkeypatch):
    root = clusters[name]
    fast = _outputs(root)
    with monkeypatch.context() as m:
        _one_by_one(m)
        slow = _outputs(root)
    assert fast == slow
    summary = json.loads(fast["verify"].splitlines()[-1])
    report = json.loads(fast["report"])
    if name == "damaged":
        assert summary["status"] == "FAILED" and summary["copies"] > 0
        assert {c["state"] for c in report["copies"]} >= {"damaged", "behind", "diverged"}
    else:
        # what verify counts is what a dry run of recover plans (recover's own planner, its own reads)
        assert summary["status"] == "OK" and summary["pendingFixes"] == kafkafmt.recover(root).counts()
        assert {"broker leftover removed", ".timeindex rebuilt", "producer snapshot written"} <= set(summary["pendingFixes"])
        moved = [p for p in report["partitions"] if (p["topic"], p["partition"]) == clusters["moved"]][0]
        assert moved["belowLogStart"] > 0                  # (its figures from its log start, its checks from 0)


def test_the_page_holds_what_plotly_makes_of_its_figures(clusters, tmp_path):
    """Each chart's data and layout (written as plain JSON) are what plotly.py's validated Figure of them gives."""
    import plotly.graph_objects as go

    page = tmp_path / "r.html"
    kcli.run("report", clusters["damaged"], "--to", page, check=1)
    text = page.read_text(encoding="utf-8")
    dec = json.JSONDecoder()
    charts = 0
    for m in re.finditer(r'Plotly\.newPlot\("chart\d+",', text):
        data, end = dec.raw_decode(text, m.end())
        layout, _ = dec.raw_decode(text, end + 1)
        assert go.Figure(data=data, layout=layout).to_plotly_json() == {"data": data, "layout": layout}
        charts += 1
    assert charts >= 8
