"""One rule, one answer, in every command that shows it (issue 34 items 12-16): consumer lag where the
log end is unknown or below the committed offset, the size units, per-segment aborted counts, records
below the log start offset, problems grouped by cause, each topic's heatmap over its own time span, and
a text file named ``*.log``.

Counts are checked against kafka-python's decoding of the files (tests/kpy.py) or against what the test
wrote, never against kafkafmt's own readers.
"""
from __future__ import annotations

import io
import json
import os
import pathlib
import re
import shutil

import numpy as np
import pyarrow.parquet as pq
import pytest

import kafkafmt
import kafkafmt.report
import kpy
from kafkafmt.log import LogWriter, sidefiles
from kcli import run as cli
from test_report import T0, write_lag_dir


def jsonl(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def figures(page):
    """The (data, layout) of every Plotly chart of a report page."""
    out = []
    dec = json.JSONDecoder()
    for m in re.finditer(r'Plotly\.newPlot\("chart\d+",', page):
        data, end = dec.raw_decode(page, m.end())
        layout, _ = dec.raw_decode(page, end + 1)
        out.append((data, layout))
    return out


def kp_records(folder):
    """kafka-python's records (control records too) of every segment of a partition folder, in offset
    order, each with its segment, its batch's producer id and transactional flag, and its control type."""
    out = []
    for f in sorted(pathlib.Path(folder).glob("*.log")):
        d = kpy.kp_decode(f.read_bytes(), include_control=True)
        ctl = {c["offset"]: c["type"] for c in d["controls"]}
        for r in d["records"]:
            b = d["batches"][r["batch_index"]]
            out.append(dict(r, segment=int(f.stem), producer_id=b["producer_id"],
                            is_transactional=b["is_transactional"], control_type=ctl.get(r["offset"])))
    return out


# ----------------------------------------------------------------------------------------------
# 12. consumer lag: unknown is unknown, a negative lag is not lag, the log end's source said

def _empty_logs(folder):
    for f in pathlib.Path(folder).glob("*.log"):
        f.write_bytes(b"")


def _lag_section(page):
    return page[page.index("id='lag'"):page.index("id='activity'")]


def test_lag_unknown_without_records_or_checkpoint(tmp_path):
    """orders-0 and orders-1 hold no records (their .log emptied): their log end is unknown, so is
    every lag there -- not a negative lag, not "caught up"; a group's total adds known lags >= 0."""
    root = tmp_path / "logs"
    root.mkdir()
    leo, expected = write_lag_dir(root)
    _empty_logs(root / "orders-0")
    _empty_logs(root / "orders-1")
    doc = json.loads(cli("report", root, "--json", "--to", tmp_path / "r.html").stdout)
    rows = {(r["group"], r["topic"], r["partition"]): r for r in doc["lag"]}
    assert set(rows) == set(expected)
    for key, committed in expected.items():
        r = rows[key]
        end = leo.get(key[1:]) if key[1] == "payments" else None       # orders: no record on disk
        assert (r["logEndOffset"], r["lag"]) == (end, None if end is None else end - committed), key
        assert r["logEndSource"] == ("segments" if end is not None else None)
    page = (tmp_path / "r.html").read_text()
    lag = _lag_section(page)
    assert "caught up" not in lag
    unknown = sum(1 for k in expected if k[1] != "payments")
    assert f"{unknown} of {len(expected)} partitions' lag is <b>unknown</b>" in lag
    beyond = sum(1 for (g, t, p), committed in expected.items() if t == "payments" and committed > leo[(t, p)])
    assert beyond == 1 and "1 committed offset lies <b>beyond the log end</b>" in lag      # one, said in the singular
    # the chart and the totals: known lags >= 0 only (g1's payments commit lies beyond the log end)
    totals = {}
    for (g, t, p), committed in expected.items():
        if t == "payments" and leo[(t, p)] - committed >= 0:
            totals[g] = totals.get(g, 0) + leo[(t, p)] - committed
    bars = [f for f in figures(page) if "Total lag" in json.dumps(f[1].get("title"))]
    drawn = dict(zip(bars[0][0][0]["y"], bars[0][0][0]["x"])) if bars else {}
    assert drawn == {g: n for g, n in totals.items() if n > 0}
    assert all(v >= 0 for v in drawn.values())


def test_lag_from_the_checkpoint_files(tmp_path):
    """Where no segment holds records, the log end is the log dir's checkpoint: the high watermark of
    replication-offset-checkpoint, else recovery-point-offset-checkpoint; each row says which."""
    root = tmp_path / "logs"
    root.mkdir()
    leo, expected = write_lag_dir(root)
    _empty_logs(root / "orders-0")
    _empty_logs(root / "orders-1")
    sidefiles.write_offset_checkpoint(root / "replication-offset-checkpoint", {("orders", 0): 50})
    sidefiles.write_offset_checkpoint(root / "recovery-point-offset-checkpoint", {("orders", 0): 44, ("orders", 1): 28})
    ends = {("orders", 0): (50, "replication-offset-checkpoint"), ("orders", 1): (28, "recovery-point-offset-checkpoint"),
            ("payments", 0): (10, "segments")}
    doc = json.loads(cli("report", root, "--json").stdout)
    for r in doc["lag"]:
        key = (r["topic"], r["partition"])
        if key not in ends:
            continue
        end, source = ends[key]
        assert (r["logEndOffset"], r["logEndSource"]) == (end, source)
        assert r["lag"] == end - expected[(r["group"], *key)]
    parts = {(p["topic"], p["partition"]): (p["logEndOffset"], p["logEndSource"]) for p in doc["partitions"]}
    assert all(parts[k] == v for k, v in ends.items())
    lib = kafkafmt.report.build(root).table("lag")
    assert set(lib["logEndSource"].dropna()) == {"segments", "replication-offset-checkpoint",
                                                "recovery-point-offset-checkpoint"}


def test_lag_headline_only_when_every_lag_is_known_and_zero(tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    with LogWriter(root / "t-0") as w:
        w.append(values=[b"v"] * 5, timestamps=[T0] * 5)
    from test_report import _commit
    key, value = _commit("g", "t", 0, 5)
    with LogWriter(root / "__consumer_offsets-0") as w:
        w.append(keys=[key], values=[value], timestamps=[T0])
    page = kafkafmt.report.to_html(kafkafmt.report.build(root))
    assert "Every group has caught up" in _lag_section(page)
    _empty_logs(root / "t-0")
    page = kafkafmt.report.to_html(kafkafmt.report.build(root))
    assert "Every group has caught up" not in _lag_section(page) and "unknown" in _lag_section(page)


# ----------------------------------------------------------------------------------------------
# 13. one unit convention: KiB (1,024 bytes) in the report, verify, stats and the progress bars

def test_sizes_in_binary_units_everywhere(sample, tmp_path):
    orders = sum(f.stat().st_size for d in ("orders-0", "orders-1") for f in (sample / d).glob("*.log"))
    total = sum(f.stat().st_size for f in sample.glob("*/*.log"))
    want_orders, want_total = f"{orders / 1024:.1f} KiB", f"{total / 1024:.1f} KiB"
    page = tmp_path / "r.html"
    cli("report", sample, "--to", page, check=0)
    text = page.read_text()
    assert want_orders in text and want_total in text
    assert not re.search(r"\d kB|\d MB|\d GB", text.replace("4.6 MB", "").replace("1.9 MB", ""))
    verify = cli("verify", sample, check=0).stdout
    assert f"({want_total})" in verify
    stats = cli("stats", sample, "--partitions-only", check=0).stdout
    assert want_total in stats
    from kafkafmt._util.progress import progress_bar

    s = io.StringIO()
    bar = progress_bar(3 << 20, label="x", enabled=True, stream=s)
    bar.update(3 << 19)
    bar.refresh()
    bar.close()
    assert "1.5 MiB/3.0 MiB" in s.getvalue() and "MB" not in s.getvalue().replace("MiB", "")


# ----------------------------------------------------------------------------------------------
# 14. stats: per-segment aborted records add up to the partition's

def test_aborted_records_per_segment_add_up(sample):
    folder = sample / "payments-0"
    recs = kp_records(folder)
    # kafka-python's view: records of a producer's transaction that an ABORT marker ends
    aborted, pending = {}, {}
    for r in recs:
        if r["is_control"]:
            rows = pending.pop(r["producer_id"], [])
            if r["control_type"] == 0:                     # ABORT
                for seg in rows:
                    aborted[seg] = aborted.get(seg, 0) + 1
        elif r["is_transactional"]:
            pending.setdefault(r["producer_id"], []).append(r["segment"])
    doc = json.loads(cli("stats", folder, "--json", check=0).stdout)
    part = doc["partitions"][0]
    segs = {s["baseOffset"]: s["abortedRecords"] for s in part["segments"]}
    assert sum(segs.values()) == part["abortedRecords"] == sum(aborted.values()) > 0
    assert {k: v for k, v in segs.items() if v} == aborted
    table = cli("stats", folder, check=0).stdout.splitlines()
    col = table[0].index("ABORTED")
    shown = {}
    for line in table[1:]:
        if line.startswith("  0"):
            m = re.search(r"(\d+)(?: \(\d+ txn\))?$", line[:col + len("ABORTED")])   # right-aligned
            shown[int(line.split()[0])] = int(m.group(1))
    assert shown == segs, table


# ----------------------------------------------------------------------------------------------
# 15. records below the log start offset: not served, not counted, said -- in every command

@pytest.fixture()
def deleted(sample, tmp_path):
    """A copy of the sample whose log-start-offset-checkpoint says orders-0's records below 1,740 were
    deleted (DeleteRecords) while its segments still hold them."""
    root = pathlib.Path(shutil.copytree(sample, tmp_path / "kafka-logs"))
    sidefiles.write_offset_checkpoint(root / "log-start-offset-checkpoint", {("orders", 0): 1740})
    offsets = [r["offset"] for r in kp_records(root / "orders-0") if not r["is_control"]]
    served = sum(1 for o in offsets if o >= 1740)
    below = len(offsets) - served
    assert (served, below) == (660, 1740)
    return root, served, below


def test_below_log_start_every_command(deleted, tmp_path):
    root, served, below = deleted
    folder = root / "orders-0"
    for where in (root, folder):                       # the log dir, the partition folder alone
        p = cli("stats", where, "--json", "--topics", "orders", "--partitions", "0", check=0)
        part = [d for d in json.loads(p.stdout)["partitions"] if d["topic"] == "orders" and d["partition"] == 0][0]
        assert (part["records"], part["belowLogStart"], part["firstOffset"]) == (served, below, 1740), where
        text = cli("stats", where, check=0)
        assert f"{below:,} records below the log start offset" in text.stderr, where
        v = jsonl(cli("verify", where, "--json", check=0).stdout)[-1]
        want = served + (0 if where == folder else 8228 - 2400)
        assert (v["records"], v["belowLogStart"]) == (want, below), where
    doc = json.loads(cli("report", root, "--json", check=0).stdout)
    rp = [p for p in doc["partitions"] if p["name"] == "orders-0"][0]
    assert (rp["records"], rp["belowLogStart"], rp["logStartOffset"]) == (served, below, 1740)
    page = tmp_path / "r.html"
    cli("report", root, "--to", page, check=0)
    assert f"{below:,} records below the log start offset" in page.read_text()
    out = tmp_path / "o.parquet"
    cli("export", folder, "--to", out, check=0)
    assert pq.read_table(out).num_rows == served
    dump = jsonl(cli("dump", folder, "--records", "--json", check=0).stdout)
    assert sum(1 for d in dump if d.get("type") == "record" and d["offset"] >= 1740) == served
    assert len(kafkafmt.read_log_dir(str(folder))) == served
    assert len(kafkafmt.read_log_dirs(str(folder))) == served


# ----------------------------------------------------------------------------------------------
# 16. problems grouped by cause; each topic's own time span; one answer for a text file named *.log

def test_emptied_log_is_one_problem(sample, tmp_path):
    """A .log emptied beside full indexes: one error per segment naming how many entries its indexes
    hold (counted here from the files), not one per entry -- in verify and in the report."""
    folder = pathlib.Path(shutil.copytree(sample / "orders-0", tmp_path / "logs" / "orders-0"))
    want = {}
    for log in folder.glob("*.log"):
        n_index = len(sidefiles.read_index(log.with_suffix(".index").read_bytes(), int(log.stem)))
        n_time = len(sidefiles.read_timeindex(log.with_suffix(".timeindex").read_bytes(), int(log.stem)))
        assert n_index and n_time
        want[str(log)] = (n_index, n_time)
        log.write_bytes(b"")
    problems = [d for d in jsonl(cli("verify", folder, "--json", check=1).stdout) if d["type"] == "problem"]
    assert sorted(p["file"] for p in problems) == sorted(want)
    for p in problems:
        n_index, n_time = want[p["file"]]
        assert f"{n_index} index entries and {n_time} time index entries" in p["message"], p
    doc = json.loads(cli("report", folder, "--json", check=1).stdout)
    assert sorted((p["file"], p["message"]) for p in doc["problems"]) == sorted((p["file"], p["message"])
                                                                               for p in problems)


def test_index_problems_said_once_per_cause(sample, tmp_path):
    """Index entries wrong for one reason are one problem (how many, which, the first)."""
    folder = pathlib.Path(shutil.copytree(sample / "orders-0", tmp_path / "orders-0"))
    index = folder / "00000000000000000000.index"
    raw = bytearray(index.read_bytes())
    n = len(raw) // 8
    for i in range(n):                         # every entry's position moved by one byte: no batch starts there
        pos = int.from_bytes(raw[i * 8 + 4:i * 8 + 8], "big") + 1
        raw[i * 8 + 4:i * 8 + 8] = pos.to_bytes(4, "big")
    index.write_bytes(bytes(raw))
    problems = [d for d in jsonl(cli("verify", folder, "--json", check=1).stdout) if d["type"] == "problem"]
    assert len(problems) == 1 and problems[0]["file"] == str(index)
    assert problems[0]["message"].startswith(f"{n} index entries (0..{n - 1}) wrong for one cause: no batch starts")


def test_each_topic_heatmap_over_its_own_span(tmp_path):
    """A topic written over two days and one written in ten minutes: each heatmap spans its own topic's
    times; a colour scale of one value starts at 0 (no "599.5-600.5")."""
    root = tmp_path / "logs"
    with LogWriter(root / "slow-0") as w:
        w.append(values=[b"s"] * 48, timestamps=[T0 + i * 3_600_000 for i in range(48)])
    with LogWriter(root / "fast-0") as w:
        w.append(values=[b"f"] * 600, timestamps=[T0 + 86_400_000 + i * 1000 for i in range(600)])
    page = kafkafmt.report.to_html(kafkafmt.report.build(root))
    maps = {layout["title"]["text"].split(":")[0]: (data[0], layout) for data, layout in figures(page)
            if data and data[0].get("type") == "heatmap"}
    import datetime

    def span(layout):
        lo, hi = (datetime.datetime.fromisoformat(x).replace(tzinfo=datetime.timezone.utc).timestamp() * 1000
                  for x in layout["xaxis"]["range"])
        return hi - lo

    assert 10 * 60_000 <= span(maps["fast"][1]) <= 11 * 60_000, "the ten-minute topic's heatmap is not its ten minutes"
    assert span(maps["slow"][1]) >= 47 * 3_600_000
    for data, layout in maps.values():
        assert data["zmin"] == 0
        assert len(data["z"][0]) * data["dx"] == span(layout)          # the cells fill the axis
    one = [v for row in maps["slow"][0]["z"] for v in row if v is not None]
    assert set(one) == {1} and maps["slow"][0]["zmax"] == 1


def test_a_topic_of_many_partitions_shows_its_busiest_and_a_band(tmp_path):
    """46 partitions of one topic in two log dirs: the heatmap draws the 40 busiest a row each, in partition
    order, labelled topic-N (the log dir not repeated on every row), the other 6 as one band of their mean
    per partition -- and says so in its title."""
    from kafkafmt.report.html import HEATMAP_ROWS

    counts = {i: 1 + (i * 37) % 46 for i in range(46)}           # 1..46 records, no two alike
    for i, n in counts.items():
        with LogWriter(tmp_path / ("a" if i % 2 else "b") / f"t-{i}") as w:
            w.append(values=[b"v"] * n, timestamps=[T0 + j * 5_000 for j in range(n)])
    page = kafkafmt.report.to_html(kafkafmt.report.build([tmp_path / "a", tmp_path / "b"]))
    (data, layout), = [(d, lay) for d, lay in figures(page) if d and d[0].get("type") == "heatmap"]
    busiest = sorted(sorted(counts, key=lambda i: -counts[i])[:HEATMAP_ROWS])
    rest = [i for i in counts if i not in busiest]
    assert data[0]["y"] == [f"t-{i}" for i in busiest] + [f"the other {len(rest)} (mean)"]
    assert [sum(v or 0 for v in row) for row in data[0]["z"][:-1]] == [counts[i] for i in busiest]
    assert sum(v or 0 for v in data[0]["z"][-1]) == pytest.approx(sum(counts[i] for i in rest) / len(rest), abs=0.1)
    assert f"the {HEATMAP_ROWS} busiest of 46 partitions, the other 6 as their mean" in layout["title"]["text"]
    assert layout["yaxis"]["dtick"] == 1                                # every row labelled


@pytest.mark.parametrize("command", ["verify", "stats", "dump", "export", "report"])
def test_a_text_file_named_log_gets_one_answer(command, tmp_path, sample):
    """Named: "not a Kafka log segment", exit 2 (bad input), from every command. Found in a folder: skipped with
    that warning -- nothing else there: "no partition folders...", exit 2; beside a partition: the
    partition is read, exit 0."""
    folder = tmp_path / "txt"
    folder.mkdir()
    text = folder / "b.log"
    text.write_text("hello123\nthis is a text file, not a Kafka segment\n")
    extra = {"export": ["--to", str(tmp_path / "o.jsonl"), "--format", "jsonl"], "report": ["--json"]}.get(command, [])
    named = cli(command, text, *extra)
    assert named.returncode == 2 and "not a Kafka log segment" in named.stderr, named.stderr
    alone = cli(command, folder, *extra)
    assert alone.returncode == 2, alone.stderr
    assert f"{text}: not a Kafka log segment" in alone.stderr and "skipped" in alone.stderr
    assert "no partition folders" in alone.stderr
    shutil.copytree(sample / "payments-0", folder / "payments-0")
    beside = cli(command, folder, *extra)
    assert beside.returncode == 0, beside.stderr
    assert f"{text}: not a Kafka log segment" in beside.stderr


def test_the_size_chart_is_drawn_in_the_tables_binary_unit():
    """The report's size chart uses the unit its table prints the largest size in (KiB, not plotly's "50k")."""
    from kafkafmt._util.units import byte_unit, human_bytes

    for n in (1, 1023, 1024, 373121, (5 << 20) + 1, 3 << 30):
        name, size = byte_unit(n)
        assert human_bytes(n).endswith(" " + name) and 1 <= n / size < 1024
