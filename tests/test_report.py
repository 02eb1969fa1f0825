"""`kafkafmt report` / `kafkafmt.report.build`: its figures against `stats`, `verify` and an independent
count of the records; consumer lag against a hand replay of the commits written; the HTML page opened in
headless Chromium (charts drawn, no console errors)."""
from __future__ import annotations

import io
import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

import kafkafmt
import kafkafmt.internal as ki
import kafkafmt.report
from kafkafmt.log import LogWriter

from kcli import run as cli
from s3server import s3  # noqa: F401  (pytest fixture)

T0 = 1767225600000           # 2026-01-01T00:00:00Z
STAT_KEYS = ("records", "controlRecords", "batches", "fileBytes", "batchBytes", "payloadBytes", "compressionRatio",
             "codecs", "magics", "firstOffset", "lastOffset", "firstTimestamp", "lastTimestamp", "producers",
             "committedTransactions", "abortedTransactions", "abortedRecords", "controls", "tombstones",
             "skippedBytes", "leaderEpochs")


def jsonl(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def problem_key(p):
    return (p["severity"], p["file"], p["position"], p["end"], p["offset"], p["message"])


def report_json(*args, check=None, sample=None):
    p = cli("report", *args, "--json", sample=sample, check=check)
    assert "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout), p


def assert_same_as_stats_and_verify(paths, sample=None, expect_errors=False):
    code = 1 if expect_errors else 0
    doc, _ = report_json(*paths, check=code, sample=sample)
    stats = json.loads(cli("stats", *paths, "--json", sample=sample, check=code).stdout)
    sparts = {p["name"]: p for p in stats["partitions"]}
    rparts = {p["name"]: p for p in doc["partitions"]}
    assert set(rparts) == set(sparts) and rparts
    for name, sp in sparts.items():
        rp = rparts[name]
        for k in STAT_KEYS:
            assert rp[k] == sp[k], (name, k)
        # log end offset: the next offset, what stats says as lastOffset + 1
        if sp["lastOffset"] is not None:
            assert rp["logEndOffset"] == sp["lastOffset"] + 1
        rsegs = [s for s in doc["segments"] if s["partition"] == name]
        assert [s["baseOffset"] for s in rsegs] == [s["baseOffset"] for s in sp["segments"]]
        for rs, ss in zip(rsegs, sp["segments"]):
            assert rs["file"] == ss["file"]
            for k in STAT_KEYS:
                assert rs[k] == ss[k], (name, rs["baseOffset"], k)
    # topics: the sums of their partitions
    for t in doc["topics"]:
        mine = [p for p in sparts.values() if p["topic"] == t["topic"]]
        assert t["partitions"] == len(mine)
        for k in ("records", "fileBytes", "batches", "abortedTransactions", "committedTransactions"):
            assert t[k] == sum(p[k] for p in mine), (t["topic"], k)
    # problems: those verify lists
    vlines = jsonl(cli("verify", *paths, "--json", sample=sample, check=code).stdout)
    vprobs = {problem_key(p) for p in vlines if p["type"] == "problem"}
    assert {problem_key(p) for p in doc["problems"]} == vprobs
    assert bool(vprobs) == expect_errors or not expect_errors
    return doc


# ----------------------------------------------------------------------------------------------
# the figures are stats' and verify's

def test_report_figures_are_stats_and_verify_on_the_sample(sample):
    doc = assert_same_as_stats_and_verify(["--sample"], sample=sample)
    # the timeline: data records per minute, against the records read by the library
    for part in doc["partitions"]:
        recs = kafkafmt.read_log_dir(part["path"])
        ts = np.asarray(recs.timestamp, np.int64)
        ts = ts[ts >= 0]
        expect = pd.Series(ts // 60000 * 60000).value_counts().sort_index()
        mine = {r["minute"]: r["records"] for r in doc["timeline"] if r["partition"] == part["name"]}
        assert mine == {int(k): int(v) for k, v in expect.items()}, part["name"]
    assert doc["lastWrite"] == max(p["lastTimestamp"] for p in doc["partitions"] if p["lastTimestamp"])
    # transaction markers over time add up to the partitions' committed / aborted transactions
    for part in doc["partitions"]:
        tx = [r for r in doc["transactions"] if r["partition"] == part["name"]]
        assert sum(r["committed"] for r in tx) == part["committedTransactions"]
        assert sum(r["aborted"] for r in tx) == part["abortedTransactions"]


def test_report_places_a_corrupt_stretch_in_its_segment(sample, tmp_path):
    root = tmp_path / "logs"
    shutil.copytree(sample, root)
    seg = sorted((root / "orders-0").glob("*.log"))[0]
    data = bytearray(seg.read_bytes())
    pos = len(data) // 2
    data[pos] ^= 0xFF
    seg.write_bytes(bytes(data))
    doc = assert_same_as_stats_and_verify([root], expect_errors=True)
    mine = [p for p in doc["problems"] if p["file"] == str(seg) and p["position"] is not None
            and p["end"] is not None and p["severity"] == "error"]
    assert mine, doc["problems"]
    s = [x for x in doc["segments"] if x["file"] == str(seg)][0]
    for p in mine:
        assert p["partition"] == "orders-0"
        assert p["position"] <= pos < p["end"]
        assert s["firstTimestamp"] <= p["time"] <= s["lastTimestamp"]
    assert [x for x in doc["partitions"] if x["name"] == "orders-0"][0]["errors"] >= 1


def test_report_figures_on_real_broker_dirs(real_corpus):
    dirs = sorted(d for d in (real_corpus / "broker-dirs").iterdir() if d.is_dir())
    assert dirs
    for d in dirs:
        v = cli("verify", d, "--json")
        assert_same_as_stats_and_verify([d], expect_errors=v.returncode == 1)


def test_library_tables_are_the_json(sample):
    r = kafkafmt.report.build(str(sample))
    doc, _ = report_json("--sample", check=0, sample=sample)
    assert json.loads(json.dumps(r.to_json()))["partitions"] == doc["partitions"]
    for name in kafkafmt.report.TABLES:
        df = r.table(name)
        assert isinstance(df, pd.DataFrame) and len(df) == len(doc[name])
    lag = r.table("lag")
    assert set(lag.columns) >= {"group", "topic", "partition", "committedOffset", "logEndOffset", "lag"}


# ----------------------------------------------------------------------------------------------
# consumer lag: a log dir written for it, against a hand replay of what was written

def _commit(group, topic, partition, offset):
    return ki.encode_group_record(1, {"group": group, "topic": topic, "partition": partition}, 3,
                                  {"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": T0 + offset,
                                   "expireTimestamp": -1})


def _delete(group, topic, partition):
    return ki.encode_group_record(1, {"group": group, "topic": topic, "partition": partition})[0], None


def write_lag_dir(root):
    """Topics and a __consumer_offsets partition; returns (log end offsets, expected committed offsets)
    replayed by hand: a plain commit sets, a tombstone deletes, a transaction's commits count at its
    COMMIT marker, never when aborted or still open."""
    leo = {}
    for topic, part, n in (("orders", 0, 50), ("orders", 1, 30), ("payments", 0, 10)):
        with LogWriter(root / f"{topic}-{part}") as w:
            for i in range(0, n, 7):
                k = min(7, n - i)
                w.append(values=[b"v%d" % j for j in range(i, i + k)], timestamps=[T0 + j * 1000 for j in range(i, i + k)])
        leo[(topic, part)] = n
    expected = {}
    pending = {}
    with LogWriter(root / "__consumer_offsets-0") as w:
        def plain(group, topic, part, offset):        # offset None: the group's offset deleted (a tombstone)
            key, value = _delete(group, topic, part) if offset is None else _commit(group, topic, part, offset)
            w.append(keys=[key], values=[value], timestamps=[T0])
            if offset is None:
                expected.pop((group, topic, part), None)
            else:
                expected[(group, topic, part)] = offset

        def txn(pid, group, topic, part, offset):
            key, value = _commit(group, topic, part, offset)
            w.append(keys=[key], values=[value], timestamps=[T0], producer_id=pid, transactional=True)
            pending.setdefault(pid, []).append(((group, topic, part), offset))

        def end(pid, kind):
            w.append_control(kind, producer_id=pid, timestamp=T0)
            for key, off in pending.pop(pid):
                if kind == "commit":
                    expected[key] = off

        plain("g1", "orders", 0, 10)
        plain("g1", "orders", 0, 20)
        plain("g1", "orders", 1, 30)
        plain("g2", "orders", 0, 5)
        plain("g2", "payments", 0, 7)
        plain("g2", "orders", 0, None)
        plain("g3", "orders", 1, 12)
        txn(100, "g3", "orders", 0, 40)
        txn(101, "g3", "orders", 1, 25)
        plain("g1", "payments", 0, 15)       # beyond the log end: a negative lag
        end(100, "commit")
        end(101, "abort")
        plain("g5", "ghost", 0, 3)           # a partition not on this disk: no log end offset
        txn(102, "g4", "orders", 0, 49)      # still open at the end: not committed
    return leo, expected


def test_consumer_lag_against_a_hand_replay(tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    leo, expected = write_lag_dir(root)
    assert ("g3", "orders", 0) in expected and ("g4", "orders", 0) not in expected   # the scenario holds
    assert expected[("g3", "orders", 1)] == 12 and ("g2", "orders", 0) not in expected
    doc, _ = report_json(root, check=0)
    got = {(r["group"], r["topic"], r["partition"]): r for r in doc["lag"]}
    assert set(got) == set(expected)
    for key, committed in expected.items():
        r = got[key]
        assert r["committedOffset"] == committed
        end = leo.get(key[1:])
        assert r["logEndOffset"] == end
        assert r["lag"] == (None if end is None else end - committed)
    assert got[("g1", "payments", 0)]["lag"] < 0
    # the log end offsets are stats' next offsets
    stats = json.loads(cli("stats", root, "--json", check=0).stdout)
    for p in stats["partitions"]:
        if p["topic"] != "__consumer_offsets":
            assert p["lastOffset"] + 1 == leo[(p["topic"], p["partition"])]
    # and the library gives the same table
    lag = kafkafmt.report.build(root).table("lag")
    assert {(g, t, int(p)): int(c) for g, t, p, c in zip(lag["group"], lag["topic"], lag["partition"],
                                                           lag["committedOffset"])} == expected


# ----------------------------------------------------------------------------------------------
# the page, in headless Chromium

def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium is not installed (.ci/run installs Debian's package)"
    return exe


def render(page, tmp_path, width=1400, height=3000):
    """(screenshot PNG path, the DOM after the scripts ran, the console messages) of a page."""
    png = tmp_path / (page.stem + ".png")
    base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--user-data-dir={tmp_path / 'chromium-profile'}", "--virtual-time-budget=10000",
            f"--window-size={width},{height}"]
    env = {**os.environ, "HOME": str(tmp_path)}
    shot = subprocess.run(base + [f"--screenshot={png}", "--enable-logging=stderr", "--v=0", page.as_uri()],
                          capture_output=True, text=True, timeout=180, env=env)
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180, env=env)
    console = [line for line in shot.stderr.splitlines() if "CONSOLE" in line]
    assert png.is_file(), shot.stderr[-2000:]
    return png, dom.stdout, console


def colours(png):
    from PIL import Image

    im = Image.open(png).convert("RGB")
    counts = im.getcolors(maxcolors=1 << 24)
    return im.size, {c: n for n, c in counts}


@pytest.mark.parametrize("plain", [False, True], ids=["packed-js", "plain-js"])
def test_the_page_renders_in_chromium(sample, tmp_path, plain):
    import base64
    import gzip
    import re

    from plotly.offline import get_plotlyjs

    page = tmp_path / "report.html"
    p = cli("report", "--sample", "--to", page, *(["--plain-js"] if plain else []), sample=sample, check=0)
    assert "Traceback" not in p.stderr
    text = page.read_text()
    js = get_plotlyjs()
    if plain:
        assert js in text                               # plotly.js inlined ...
        rest = text.replace(js, "")
    else:
        packed = re.findall(r'atob\("([A-Za-z0-9+/=]+)"\)', text)
        assert len(packed) == 1 and gzip.decompress(base64.b64decode(packed[0])).decode() == js
        rest = text.replace(packed[0], "")
        assert len(text) < len(js) / 2
    assert "<script src" not in rest and "http" not in rest and "<link" not in rest   # ... nothing else fetched
    n_charts = text.count('class="chart"')
    assert n_charts >= 8
    png, dom, console = render(page, tmp_path)
    assert not [c for c in console if "Uncaught" in c or "Error" in c], console
    # every chart div was drawn by plotly.js (an SVG with its traces in it)
    assert dom.count('class="plot-container plotly"') == n_charts, dom[:500]
    assert dom.count("class=\"main-svg\"") >= n_charts
    size, cols = colours(png)
    assert size == (1400, 3000)
    white = cols.get((255, 255, 255), 0)
    assert white < 0.95 * size[0] * size[1]
    assert len(cols) > 500          # heatmap colour scales, bars, text: not a blank page
    # the topic bar chart's colour (plotly's first colour) is on the screenshot
    assert cols.get((0x63, 0x6E, 0xFA), 0) > 1000


def test_the_console_check_can_fail(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<html><body><div id='x'></div><script>Plotly.newPlot('x', [], {});</script></body></html>")
    png, dom, console = render(page, tmp_path, 400, 300)
    assert any("Uncaught" in c for c in console), console
    assert 'class="plot-container plotly"' not in dom


def test_the_page_stays_small_for_many_partitions(tmp_path):
    root = tmp_path / "many"
    for i in range(200):
        with LogWriter(root / f"t{i % 4}-{i // 4}") as w:
            w.append(values=[b"x" * 20] * 60, timestamps=[T0 + i * 1000 + j * 60_000 for j in range(60)])
    page = tmp_path / "many.html"
    r = kafkafmt.report.build(root)
    size = kafkafmt.report.write_html(r, page)
    assert size == page.stat().st_size
    from plotly.offline import get_plotlyjs

    plotly_js = len(get_plotlyjs().encode())
    # the data of 200 partitions over an hour: a small part of the page beside plotly.js
    assert size - plotly_js < 1 << 20
    assert size < 3 << 20                  # plotly.js packed: the whole page
    assert r.table("partitions")["records"].sum() == 200 * 60


# ----------------------------------------------------------------------------------------------
# object storage

def test_report_on_s3_equals_local(s3, sample, tmp_path):
    b = s3.bucket()
    s3.upload_dir(str(sample), b, "logs")
    o = s3.storage_options
    opts = ["--storage-option", f"endpoint_url={o['endpoint_url']}", "--storage-option", f"key={o['key']}",
            "--storage-option", f"secret={o['secret']}"]
    page = tmp_path / "s3.html"
    p = cli("report", f"s3://{b}/logs", *opts, "--json", "--to", page, env={"AWS_DEFAULT_REGION": "us-east-1"},
            check=0)
    remote = json.loads(p.stdout)
    local, _ = report_json(sample, check=0)
    assert all(d["path"].startswith("s3://") for d in remote["partitions"])
    strip = (lambda rows: [{k: v for k, v in r.items() if k not in ("path", "file")} for r in rows])
    for name in ("topics", "partitions", "segments", "timeline", "transactions", "lag"):
        assert strip(remote[name]) == strip(local[name]), name
    assert [problem_key(x)[0] for x in remote["problems"]] == [problem_key(x)[0] for x in local["problems"]]
    assert page.stat().st_size > 0


def test_report_marks_tiered_and_local_segments(tmp_path):
    from test_tiered import _id, _write_local, kafka_layout_objects

    logs = tmp_path / "logs"
    folder = logs / "orders-0"
    n = 3000
    kafkafmt.write_log_dir(folder, values=[b"v%05d" % i for i in range(n)],
                           timestamps=[T0 + 1000 * i for i in range(n)], segment_bytes=4 << 10,
                           batch_size=1024)
    segs = sorted(f.name for f in folder.glob("*.log"))
    assert len(segs) >= 4
    old = segs[:len(segs) // 2]
    upload = tmp_path / "upload" / "orders-0"
    shutil.copytree(folder, upload)
    for f in upload.iterdir():                        # the uploads: the older half
        if f.name[:20].isdigit() and f"{f.name[:20]}.log" not in old:
            f.unlink()
    tiered = tmp_path / "remote"
    _write_local(str(tiered), kafka_layout_objects(str(upload), "orders", 0, _id(1)))
    for f in folder.iterdir():                        # local: the newer half and the last upload
        if f.name[:20].isdigit() and f"{f.name[:20]}.log" in old[:-1]:
            f.unlink()
    r = kafkafmt.report.build([logs, tiered])
    segments = r.table("segments")
    only_remote = {int(s[:20]) for s in old[:-1]}
    only_local = {int(s[:20]) for s in segs[len(old):]}
    flags = dict(zip(segments["baseOffset"], segments["tiered"]))
    assert set(flags) == {int(s[:20]) for s in segs}
    assert all(flags[b] for b in only_remote) and not any(flags[b] for b in only_local)
    part = r.table("partitions").iloc[0]
    assert part["records"] == n and part["tieredSegments"] == sum(flags.values())
    assert part["localSegments"] == len(flags) - part["tieredSegments"]
    page = tmp_path / "t.html"
    kafkafmt.report.write_html(r, page)
    assert "tiered" in page.read_text()


# ----------------------------------------------------------------------------------------------
# names are text: group, client and transactional ids are arbitrary strings

HOSTILE = ['<a href="javascript:console.log(\'XSS-link\')">clickme</a>', "a<br>b", "<b>bold</b> & <i>it</i>",
           '<img src=x onerror="console.log(\'XSS-img\')">', '</script><script>console.log("XSS-script")</script>',
           "<!--<script>", "&lt;b&gt; &amp;", "%{y}<br>", "plain"]


def _groups_dir(root, groups):
    root.mkdir()
    with LogWriter(root / "orders-0") as w:
        w.append(values=[b"v%d" % j for j in range(50)], timestamps=[T0 + j * 1000 for j in range(50)])
    with LogWriter(root / "__consumer_offsets-0") as w:
        for i, g in enumerate(groups):
            key, value = _commit(g, "orders", 0, 5 + i)
            w.append(keys=[key], values=[value], timestamps=[T0])


def _texts(dom, pattern):
    import html
    import re

    return [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in re.findall(pattern, dom, re.S)]


def test_labels_are_literal_text_in_chromium(tmp_path):
    import re

    root = tmp_path / "logs"
    _groups_dir(root, HOSTILE)
    page = tmp_path / "hostile.html"
    cli("report", root, "--to", page, "--title", "<b>title</b>", check=0)
    png, dom, console = render(page, tmp_path)
    assert not [c for c in console if "XSS" in c or "Uncaught" in c], console     # no script ran
    assert not re.findall(r"<a\b[^>]*javascript", dom)                             # no link was made
    assert not re.findall(r"<img\b", dom)
    assert dom.count('class="plot-container plotly"') == page.read_text().count('class="chart"')   # all drawn
    # the lag chart's category labels: each name as written, one line each
    ticks = _texts(dom, r'<g class="ytick">(<text.*?</text>)')
    assert set(HOSTILE) <= set(ticks), ticks
    # the tables: the same names, and the title
    cells = _texts(dom, r"<td>(.*?)</td>")
    assert set(HOSTILE) <= set(cells)
    assert _texts(dom, r"<h1>(.*?)</h1>") == ["<b>title</b>"]



# ----------------------------------------------------------------------------------------------
# the guide's screenshot of the sample's page is of today's page

def _screenshot_tool():
    import importlib.util

    path = pathlib.Path(__file__).resolve().parent.parent / "docs" / "_ext" / "report_screenshot.py"
    spec = importlib.util.spec_from_file_location("kafkafmt_report_screenshot", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_guides_screenshot_is_of_todays_page(tmp_path):
    """docs/_static/report-sample.png carries the fingerprint of the page it shows (the report's tables and
    the page's text); today's page must have the same, else the picture is stale."""
    tool = _screenshot_tool()
    page, doc = tool.make_page(tmp_path)
    now = tool.fingerprint(page.read_text(encoding="utf-8"), doc)
    assert tool.saved_fingerprint() == now, f"the page changed: run `{tool.COMMAND}` and commit {tool.PNG.name}"
    assert tool.PNG.stat().st_size < 200_000
    size, cols = colours(tool.PNG)
    assert size == tool.WINDOW and len(cols) > 16 and cols.get((255, 255, 255), 0) < 0.9 * size[0] * size[1]
    assert cols.get((0x63, 0x6E, 0xFA), 0) > 1000          # the topic bars were drawn
    assert "](../_static/report-sample.png)" in (tool.DOCS / "guide" / "report.md").read_text()


def test_the_screenshot_fingerprint_sees_changes(tmp_path):
    tool = _screenshot_tool()
    page, doc = tool.make_page(tmp_path)
    html = page.read_text(encoding="utf-8")
    base = tool.fingerprint(html, doc)
    assert tool.fingerprint(html.replace("<td>", "<td>x", 1), doc) != base             # a table's text
    doc["lag"][0]["lag"] = 1
    assert tool.fingerprint(html, doc) != base                                          # the data
    head, body = html.split("</head>", 1)
    assert tool.fingerprint(head.replace("Plotly", "Plotly ") + "</head>" + body, json.loads(json.dumps(doc))) \
        == tool.fingerprint(html, doc)                                                  # not plotly.js


def test_an_acc_starts_with_every_figure():
    """`Acc()` spells its fields out (thousands are made): every figure it sums starts at 0, every figure it counts
    by name starts empty, and it has no other field than those and its ranges -- as `Acc.merge` and `to_json` take
    them."""
    from kafkafmt.report import figures

    a = figures.Acc()
    fields = vars(a)
    assert {n: fields[n] for n in figures._SUMS} == dict.fromkeys(figures._SUMS, 0)
    assert all(type(fields[n]) is figures.Counts and not fields[n] for n in figures._COUNTS)
    assert set(fields) == set(figures._SUMS) | set(figures._COUNTS) | {
        "first_offset", "last_offset", "first_ts", "last_ts", "producers", "epochs"}
    assert len({id(fields[n]) for n in figures._COUNTS}) == len(figures._COUNTS)      # (none shared)
