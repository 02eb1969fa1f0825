"""The shortcuts a read of many small partitions takes give the answers the plain ways give.

A cluster's commands are fast because of three shortcuts: the copies of a partition are compared by scanning many
segments' bytes in one native call (else each segment is scanned alone), many small partitions are read in one
pass (else each on its own), and a chunk with nothing wrong in it is checked at once (else batch by batch). Each
command's JSON on a cluster written with kafka-python's builders -- damaged, behind and diverging copies among
intact ones -- is the same, byte for byte (timings aside), with every shortcut on and with each turned off.
"""
from __future__ import annotations

import json

import pytest

import kafkafmt.log._bulk as bulk
import kafkafmt.log._copies as copies
import kafkafmt.report.checks as checks
import kcli
import kcluster

#: the commands compared, and the exit code each has on the damaged cluster
COMMANDS = [(("stats", "--json"), 1), (("verify", "--json"), 1), (("report", "--json"), 1)]
#: fields that say how long a run took
_TIMINGS = {"seconds", "elapsed", "elapsedSeconds", "generated", "generatedAt"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("fastpaths")
    c = kcluster.write_cluster(root, {"orders": (3, 3), "events": (2, 2), "clicks": (2, 1)}, seed=44, records=60,
                               segment_bytes=1500, behind=0.3, empty=0.0, leader_change=1.0)
    damaged, diverged = c.parts[("orders", 1)], c.parts[("orders", 2)]
    kcluster.flip_byte(c.folder(damaged.replicas[1], "orders", 1))              # a damaged copy beside intact ones
    kcluster.diverge_copy(c, diverged.replicas[2], "orders", 2)                 # a copy that diverges
    return str(root)


def _untimed(value):
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in _TIMINGS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _outputs(root):
    out = {}
    for args, code in COMMANDS:
        p = kcli.run(*args, root, check=code)
        out[" ".join(args)] = [_untimed(json.loads(line)) for line in p.stdout.splitlines() if line.strip()]
    return out


@pytest.fixture(scope="module")
def fast(cluster):
    return _outputs(cluster)


def _no_group_scan(monkeypatch):
    monkeypatch.setattr(copies, "_SCAN_GROUP_BYTES", 0)          # each copy's segments scanned one by one


def _no_bulk_read(monkeypatch):
    monkeypatch.setattr(bulk, "SMALL_UNIT_BYTES", 0)             # each partition read on its own


def _no_plain_chunk(monkeypatch):
    monkeypatch.setattr(checks.Checker, "_plain_chunk", lambda self, *a: None)   # every batch checked alone


@pytest.mark.parametrize("shortcut_off", [_no_group_scan, _no_bulk_read, _no_plain_chunk],
                         ids=["group-scan", "bulk-read", "plain-chunk"])
def test_commands_say_the_same_without_a_shortcut(cluster, fast, monkeypatch, shortcut_off):
    assert fast["verify --json"][-1]["errors"] > 0          # (the damage is seen: the comparison means something)
    shortcut_off(monkeypatch)
    plain = _outputs(cluster)
    for command, lines in fast.items():
        assert json.dumps(plain[command], sort_keys=True) == json.dumps(lines, sort_keys=True), command
