"""The door-equality matrix (issue 22, "What to build" 3; issue 21 items 6, 8, 11).

The same data must give the same answers through every door: the library (`read_log_dirs`,
`iter_log_dirs`), the command line (`export` rows, `stats` counts, `verify` verdict and problems,
`dump --records` record lines), Spark batch (`spark.read.format("kafka-segments")`) and Spark
streaming (`spark.readStream`, Trigger.AvailableNow into a memory sink). Each layout of
tests/doorlayouts.py is built once per module; every door is asked about it through its public
interface only, and its answer is compared with what the layout holds -- known from the writer's
inputs or kafka-python's decoder, never from kafkafmt's own readers.

The right answers, where a door could pick another:

* a partition found in a log dir and in tiered uploads is one partition: each offset once;
* offsets in neither the uploads nor the local segments (a GAP) are reported by every door: the
  library's report (`ReportKind.GAP`), every CLI command's output, `verify`'s verdict (FAILED,
  exit 1: records the partition should hold are missing); Spark batch and stream fail by default
  naming the range, as Spark's Kafka source fails on offsets it cannot read, and with
  failOnDataLoss=false give the rest;
* a partition folder reachable twice (a symlink) is read once;
* two copies of a log dir (a backup beside the original, a follower's): each offset read once by
  default (`replicas="dedup"`), from the longest copy; every copy with `replicas="all"` (library) /
  `--replicas all` (CLI) / `.option("replicas", "all")` (Spark batch), told apart by the library's
  `logDir` column -- a stream, which tracks one offset per partition, refuses two copies;
* an empty broker log dir (only meta.properties) is a valid log dir of a broker that hosts no
  partition: every door answers "no records" without failing -- exit 0 from every command,
  `verify` OK with 0 partitions, `stats` no partitions, `export` a file with the schema and no rows,
  `dump` no record lines, Spark an empty DataFrame, a stream that ends with nothing. (A path that
  does not exist stays a usage error.) Failing (exit 2 "no partition folders") would make a job
  over every log dir of a cluster break on a broker that simply has no partitions yet;
* records below a partition's log start offset (log-start-offset-checkpoint, DeleteRecords) are
  deleted: no door returns them (a consumer from "earliest" starts at the log start), and `stats`
  counts what the other doors return;
* a log dir on S3 gives exactly what the same files give locally, to every command;
* brokers' copies of a partition that each lack batches another holds (a range a recovery cut, batches one
  broker's cleaner dropped): each offset read once, from a copy that holds it; `verify` warns of each stretch
  the copy read lacks.

An encrypted tiered upload is read by every door given its private key: the library's ``tiered_keys``,
the CLI's ``--tiered-key KEY_ID=PEM_FILE``, the kafka-segments option ``tieredKey.<key id>`` (PEM text); the
doors build the same options object (`kafkafmt.read.ReadOptions`) from them.

The copies' option: the library's ``replicas`` (read_log_dirs, iter_log_dirs), the CLI's ``--replicas``
(export, stats, verify, dump, report) and the kafka-segments option ``replicas`` (batch and stream).
"""
from __future__ import annotations

import base64
import collections
import contextlib
import itertools
import json
import os
import pathlib
import re
import warnings

import pyarrow.parquet as pq
import pytest

import kafkafmt
import kcli
from doorlayouts import LAYOUTS, Layouts, segment_offsets
from s3server import s3  # noqa: F401  (pytest fixture)

COLS = ["topic", "partition", "offset", "key", "value"]
RECORD_DOORS = ["library", "library_iter", "export", "dump", "spark_batch", "spark_stream"]
CLEAN = [n for n in LAYOUTS if n not in ("gap",)]


# --- fixtures ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def layouts(tmp_path_factory, request):
    def get_s3():
        return request.getfixturevalue("s3")

    try:
        corpus = request.getfixturevalue("real_corpus")
    except pytest.skip.Exception:
        corpus = None
    return Layouts(tmp_path_factory, get_s3, corpus)


@pytest.fixture(scope="module")
def spark_doors(spark):
    spark.conf.set("spark.sql.streaming.pollingDelay", "10ms")
    return spark


_names = itertools.count()


# --- the doors -------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _quiet():
    """The library's warnings (index fallbacks, nothing found) are not what is compared here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", kafkafmt.KafkafmtWarning)
        yield


def lib_rows(recs):
    t = recs.to_arrow()
    if len(t) == 0:
        return []
    cols = [t.column(c).to_pylist() if c in t.column_names else [None] * len(t) for c in COLS]
    return sorted(zip(*cols), key=_key)


def _key(row):
    return tuple((x is None, x) if not isinstance(x, (bytes, bytearray)) else (False, bytes(x)) for x in row)


def _lib_root(layout):
    return layout.roots if len(layout.roots) > 1 else layout.roots[0]


def library(layout, **kw):
    with _quiet():
        recs = kafkafmt.read_log_dirs(_lib_root(layout), storage_options=layout.storage_options,
                                      tiered_keys=layout.tiered_keys, **kw)
    return lib_rows(recs), list(recs.report)


def library_iter(layout, **kw):
    """iter_log_dirs in small chunks (16 KiB of decoded data each)."""
    report, rows = [], []
    with _quiet():
        for chunk in kafkafmt.iter_log_dirs(_lib_root(layout), storage_options=layout.storage_options,
                                            tiered_keys=layout.tiered_keys, report=report, max_bytes=16 * 1024, **kw):
            rows += lib_rows(chunk)
    return sorted(rows, key=_key), report


def _storage_flags(layout):
    o = layout.storage_options or {}
    out = []
    for k in ("endpoint_url", "key", "secret"):
        if k in o:
            out += ["--storage-option", f"{k}={o[k]}"]
    return out


def cli(layout, *args, roots=None):
    roots = layout.roots if roots is None else roots
    flags = _storage_flags(layout) if any("://" in str(r) for r in roots) else []
    for key_id, path in (layout.key_files or {}).items():
        flags += ["--tiered-key", f"{key_id}={path}"]
    return kcli.run(*args, *roots, *flags, env={"AWS_DEFAULT_REGION": "us-east-1"})


def _fail_cli(what, p):
    pytest.fail(f"{what}: exit {p.returncode}: {p.stderr.strip()[-600:]}", pytrace=False)


def _cli_ok(layout, p):
    """A command over data with a gap reports it as an error (exit 1) and still gives the rest."""
    return p.returncode == 0 or (bool(layout.gaps) and p.returncode == 1)


def export_rows(layout, out, *extra, roots=None):
    p = cli(layout, "export", *extra, "--to", str(out), roots=roots)
    if not _cli_ok(layout, p) or not os.path.exists(out):
        return p, None
    t = pq.read_table(str(out))
    rows = sorted(zip(*[t.column(c).to_pylist() for c in COLS]), key=_key) if len(t) else []
    return p, rows


def _b64(v):
    return None if v is None else base64.b64decode(v)


def dump_lines(layout, *extra, roots=None):
    p = cli(layout, "dump", "--records", "--json", *extra, roots=roots)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    return p, lines


def dump_rows(lines):
    """Data records of log segments (not control records; not KRaft snapshot files such as a log
    dir's bootstrap.checkpoint, which hold no partition's records)."""
    return sorted(((d.get("topic"), d.get("partition"), d["offset"], _b64(d.get("key")), _b64(d.get("value")))
                   for d in lines if d.get("type") == "record" and not d.get("isControl")
                   and not str(d.get("file", "")).endswith(".checkpoint")), key=_key)


def stats_json(layout, *extra, roots=None):
    p = cli(layout, "stats", "--json", *extra, roots=roots)
    try:
        doc = json.loads(p.stdout) if p.stdout.strip() else None
    except ValueError:
        doc = None
    return p, doc


def verify_json(layout, *extra, roots=None):
    p = cli(layout, "verify", "--json", *extra, roots=roots)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip().startswith("{")]
    problems = [d for d in lines if d.get("type") == "problem"]
    summary = next((d for d in lines if d.get("type") == "summary"), None)
    return p, summary, problems


def _spark_options(layout):
    opts = {f"storage.{k}": v for k, v in (layout.storage_options or {}).items() if isinstance(v, str)}
    opts.update({f"tieredKey.{k}": v.decode() for k, v in (layout.tiered_keys or {}).items()})
    return opts


def _spark_rows(rows):
    return sorted(((r["topic"], r["partition"], r["offset"], None if r["key"] is None else bytes(r["key"]),
                    None if r["value"] is None else bytes(r["value"])) for r in rows), key=_key)


def spark_batch(spark, layout, **options):
    reader = spark.read.format("kafka-segments")
    for k, v in {**_spark_options(layout), **options}.items():
        reader = reader.option(k, v)
    return _spark_rows(reader.load(",".join(layout.roots)).select(*COLS).collect())


def spark_stream(spark, layout, ckpt, **options):
    name = f"doors_{layout.name}_{next(_names)}"
    reader = spark.readStream.format("kafka-segments").option("startingOffsets", "earliest")
    for k, v in {**_spark_options(layout), **options}.items():
        reader = reader.option(k, v)
    q = (reader.load(",".join(layout.roots)).select(*COLS).writeStream.format("memory").queryName(name)
         .option("checkpointLocation", str(ckpt)).trigger(availableNow=True).start())
    try:
        assert q.awaitTermination(180), "AvailableNow query did not finish in 180 s"
        if q.exception() is not None:
            raise q.exception()
        return _spark_rows(spark.table(name).collect())
    finally:
        q.stop()


def _first_error_line(exc):
    """The reader's own error out of Spark's wrapping (the last "...Error: ..." line of the Python
    traceback it carries), else the exception's first line."""
    text = str(exc)
    found = re.findall(r"^\s*(?:[\w.]+(?:Error|Exception)): .*$", text, re.M)
    ours = [f.strip() for f in found if "kafka-segments" in f or "kafkafmt" in f]
    return (ours or [f.strip() for f in found] or [text.splitlines()[0] if text else repr(exc)])[-1][:500]


@contextlib.contextmanager
def spark_errors(what):
    """A failing Spark query fails the test with one line: the reader's error."""
    try:
        yield
    except Exception as exc:          # noqa: BLE001 -- Spark wraps the reader's error in its own
        if exc.__class__.__module__.startswith(("pyspark", "py4j")):
            pytest.fail(f"{what} raised: {_first_error_line(exc)}", pytrace=False)
        raise


def door_rows(door, layout, request, tmp_path, **spark_options):
    if door == "library":
        return library(layout)[0]
    if door == "library_iter":
        return library_iter(layout)[0]
    if door == "export":
        # the GAP layout: export refuses by default (--fail-on-data-loss true, see test_gap_*), the rows compared here
        extra = ("--fail-on-data-loss", "false") if layout.gaps else ()
        p, rows = export_rows(layout, tmp_path / "out.parquet", *extra)
        if rows is None:
            _fail_cli("export", p)
        return rows
    if door == "dump":
        p, lines = dump_lines(layout)
        if not _cli_ok(layout, p):
            _fail_cli("dump --records --json", p)
        return dump_rows(lines)
    spark = request.getfixturevalue("spark_doors")
    with spark_errors(f"{door} over {layout.name}"):
        if door == "spark_batch":
            return spark_batch(spark, layout, **spark_options)
        return spark_stream(spark, layout, tmp_path / "ckpt", **spark_options)


# --- comparing answers ------------------------------------------------------------------------------------

def describe(expected, got):
    """One line: how an answer differs from the expected rows."""
    e, g = collections.Counter(expected), collections.Counter(got)
    missing, extra = e - g, g - e
    dup = sum(v - 1 for v in g.values() if v > 1) - sum(v - 1 for v in e.values() if v > 1)
    null_topic = sum(1 for r in got if r[0] is None)
    by_part_e = collections.Counter((r[0], r[1]) for r in expected)
    by_part_g = collections.Counter((r[0], r[1]) for r in got)
    parts = {f"{t}-{p}": (by_part_g.get((t, p), 0), by_part_e.get((t, p), 0))
             for (t, p) in sorted(set(by_part_e) | set(by_part_g), key=str)
             if by_part_g.get((t, p), 0) != by_part_e.get((t, p), 0)}
    distinct = len({r[:3] for r in got})
    return (f"{len(got)} rows ({distinct} distinct offsets), expected {len(expected)}: "
            f"{sum(missing.values())} missing, {sum(extra.values())} unexpected, {max(dup, 0)} extra copies, "
            f"{null_topic} with a null topic; (got, expected) per partition where they differ: {parts}")


def assert_rows(what, expected, got):
    expected, got = sorted(expected, key=_key), sorted(got, key=_key)
    if got != expected:
        pytest.fail(f"{what}: {describe(expected, got)}", pytrace=False)


def mentions_range(text, lo, hi):
    return f"{lo}..{hi}" in text or f"[{lo}, {hi + 1})" in text


def _relative(text, layout):
    """A CLI output with the layout's root written as <root> (to compare S3 with local disk)."""
    for r in sorted(layout.roots + ([layout.local_twin] if layout.local_twin else []), key=len, reverse=True):
        text = text.replace(str(r).rstrip("/"), "<root>")
    return text


# ===========================================================================================================
# 1. the records, door by door

def _spark_options_for(layout):
    # the GAP layout: Spark's default (failOnDataLoss=true) fails, see test_gap_*; the rows are compared here
    return {"failOnDataLoss": "false"} if layout.gaps else {}


@pytest.mark.parametrize("door", RECORD_DOORS)
@pytest.mark.parametrize("name", LAYOUTS)
def test_records(layouts, name, door, request, tmp_path):
    """Every door returns exactly the layout's records: each (topic, partition, offset) once -- two
    copies of a log dir too (the longer one read) -- with the writer's key and value."""
    layout = layouts[name]
    got = door_rows(door, layout, request, tmp_path, **_spark_options_for(layout))
    assert_rows(f"{door} over {name}", layout.expected, got)


@pytest.mark.parametrize("name", LAYOUTS)
def test_stats_counts(layouts, name):
    """`stats --json`: records per partition (summed over the log dirs it lists) are the number of
    rows every other door returns; a partition's firstOffset is its log start."""
    layout = layouts[name]
    p, doc = stats_json(layout)
    if not _cli_ok(layout, p) or doc is None:
        _fail_cli("stats --json", p)
    got = collections.Counter()
    for d in doc["partitions"]:
        got[(d["topic"], d["partition"])] += d["records"]
    want = collections.Counter((r[0], r[1]) for r in layout.expected)
    assert dict(got) == dict(want), f"stats over {name}: records per partition {dict(got)} != {dict(want)}"
    if layout.log_start:
        for (t, part), n in layout.log_start.items():
            firsts = [d["firstOffset"] for d in doc["partitions"] if (d["topic"], d["partition"]) == (t, part)]
            assert firsts == [n], f"stats firstOffset of {t}-{part}: {firsts}, log start offset {n}"


@pytest.mark.parametrize("name", [n for n in CLEAN if n not in ("bootstrap", "copy_gaps")])
def test_verify_clean(layouts, name):
    """`verify` over clean data: OK, exit 0, no problem; it checked the partitions the other doors
    read (and as many records, where no record is on disk twice or below the log start)."""
    layout = layouts[name]
    p, summary, problems = verify_json(layout)
    assert summary is not None, f"verify printed no summary: exit {p.returncode}: {p.stderr.strip()[-600:]}"
    shown = [f"{d['severity']}: {d['message'][:160]}" for d in problems][:3]
    want = {"exit": 0, "status": "OK", "problems": 0, "partitions": len({(r[0], r[1]) for r in layout.expected}),
            "records": len(layout.expected)}
    got = {"exit": p.returncode, "status": summary["status"], "problems": len(problems),
           "partitions": summary["partitions"], "records": summary["records"]}
    if name in ("merged", "one_root"):
        # verify checks what is on disk: both copies of a segment that is uploaded and local -- its
        # count of records may differ from the records read
        del want["records"], got["records"]
    if got != want:
        pytest.fail(f"verify over {name}: {got}, expected {want}; problems: {shown}", pytrace=False)


def test_verify_copies_lacking_batches(layouts):
    """`verify` over copies that each lack batches another holds: OK (exit 0), every record checked once, and a
    warning for each stretch the copy read lacks, naming the copy it was read from (its records are in the
    cluster, but one broker's copy does not hold them)."""
    layout = layouts["copy_gaps"]
    p, summary, problems = verify_json(layout)
    assert (p.returncode, summary["status"], summary["records"]) == (0, "OK", len(layout.expected)), p.stderr
    assert problems and all(d["severity"] == "warning" and "read from the copy in" in d["message"] for d in problems)


def test_truth_is_what_the_files_hold(layouts):
    """The expected rows (from the writer's inputs) are what kafka-python decodes from the files of
    each local layout: the matrix does not depend on kafkafmt's readers being right."""
    import kpy

    for name in ("plain", "kafka_tiered", "merged", "gap", "symlinked", "one_root"):
        layout = layouts[name]
        found = set()
        for root in layout.roots:
            for dirpath, _dirs, files in os.walk(root, followlinks=True):
                folder = os.path.basename(dirpath)
                m = re.fullmatch(r"(.+)-(\d+)(?:-[A-Za-z0-9_-]{22})?", folder)
                for f in files:
                    if f.endswith(".log") and m:
                        for r in kpy.kp_decode(pathlib.Path(dirpath, f).read_bytes())["records"]:
                            found.add((m.group(1), int(m.group(2)), r["offset"], r["key"], r["value"]))
        assert found == set(layout.expected), name
        assert len(found) == len(layout.expected), name


@pytest.mark.parametrize("door", RECORD_DOORS)
def test_seek_across_tiered_and_local(layouts, door, request, tmp_path):
    """An offset range of the merged partition that starts in the uploads, crosses the segment that
    is in both places and ends in the local segments: every door seeks to the same rows (a stream
    starts at the offset and runs to the end; its rows are cut at the same end here)."""
    layout = layouts["merged"]
    spans = segment_offsets(os.path.join(layout.roots[0], "events-3"))      # the local segments
    overlap_lo, overlap_hi = spans[0]
    lo, hi = overlap_lo - 150, overlap_hi + 40
    assert lo > 0
    want = [r for r in layout.expected if r[:2] == ("events", 3) and lo <= r[2] < hi]
    if door in ("library", "library_iter"):
        got = (library if door == "library" else library_iter)(layout, topics=["events"], start_offset=lo,
                                                               end_offset=hi)[0]
    elif door == "export":
        p, got = export_rows(layout, tmp_path / "seek.parquet", "--topics", "events", "--offset-range", f"{lo}:{hi}")
        if got is None:
            _fail_cli("export --offset-range", p)
    elif door == "dump":
        p, lines = dump_lines(layout, "--topics", "events", "--offset-range", f"{lo}:{hi}")
        if p.returncode != 0:
            _fail_cli("dump --offset-range", p)
        got = dump_rows(lines)
    else:
        spark = request.getfixturevalue("spark_doors")
        start = json.dumps({"events": {"3": lo}})
        with spark_errors(door):
            got = _seek_spark(spark, layout, door, start, hi, tmp_path)
    assert_rows(f"{door} seeking events-3 {lo}:{hi} across uploads and local segments", want, got)


def _seek_spark(spark, layout, door, start, hi, tmp_path):
    if door == "spark_batch":
        return spark_batch(spark, layout, subscribe="events", startingOffsets=start,
                           endingOffsets=json.dumps({"events": {"3": hi}}))
    return [r for r in spark_stream(spark, layout, tmp_path / "ckpt", subscribe="events", startingOffsets=start)
            if r[2] < hi]


# ===========================================================================================================
# 2. a GAP between the tiered uploads and the local segments: every door says so

def _gap(layouts):
    layout = layouts["gap"]
    (topic, part, lo, hi), = layout.gaps
    return layout, topic, part, lo, hi


def test_gap_library(layouts):
    layout, topic, part, lo, hi = _gap(layouts)
    for door in (library, library_iter):
        _rows, report = door(layout)
        gaps = [e for e in report if e.kind is kafkafmt.ReportKind.GAP]
        assert [(e.offset, mentions_range(e.message, lo, hi)) for e in gaps] == [(lo, True)], \
            f"{door.__name__}: GAP entries {[(e.offset, e.message) for e in gaps]}, expected one at {lo}..{hi}"


def test_gap_verify(layouts):
    """`verify`: FAILED (exit 1), an error naming the missing offsets."""
    layout, topic, part, lo, hi = _gap(layouts)
    p, summary, problems = verify_json(layout)
    named = [d for d in problems if mentions_range(d["message"], lo, hi) or d.get("offset") == lo]
    assert named, f"verify over a gap at {topic}-{part} {lo}..{hi}: exit {p.returncode}, " \
                  f"{summary and summary['status']}, problems {[d['message'] for d in problems][:5]}"
    assert [d["severity"] for d in named] == ["error"], named
    assert (p.returncode, summary["status"]) == (1, "FAILED"), (p.returncode, summary)


@pytest.mark.parametrize("command", ["stats", "export", "dump"])
def test_gap_other_commands(layouts, command, tmp_path):
    """`stats` and `dump` read what is there and say that offsets lo..hi are missing (on stderr, or in
    stats' JSON problems), exiting 1 as for any error in the data; `export` says so and writes nothing
    (--fail-on-data-loss true, the default: tests/test_cli_edges.py)."""
    layout, topic, part, lo, hi = _gap(layouts)
    if command == "stats":
        p, doc = stats_json(layout)
        said = p.stderr + json.dumps((doc or {}).get("problems", []))
    elif command == "export":
        p, _rows = export_rows(layout, tmp_path / "gap.parquet")
        said = p.stderr
    else:
        p, lines = dump_lines(layout)
        said = p.stderr + "\n".join(json.dumps(d) for d in lines if d.get("type") not in ("record", "batch", "file"))
    assert mentions_range(said, lo, hi), \
        f"{command} over a gap at {topic}-{part} {lo}..{hi} (exit {p.returncode}) did not say so: " \
        f"{said.strip()[-400:]!r}"
    assert p.returncode == 1, f"{command} over a gap exited {p.returncode}: records are missing, an error"


@pytest.mark.parametrize("door", ["spark_batch", "spark_stream"])
def test_gap_spark_fails_by_default(layouts, door, request, tmp_path):
    """failOnDataLoss=true (the default): the query fails naming the missing offsets (Spark's Kafka
    source fails on offsets it cannot read); test_records checks failOnDataLoss=false."""
    layout, topic, part, lo, hi = _gap(layouts)
    spark = request.getfixturevalue("spark_doors")
    try:
        if door == "spark_batch":
            rows = spark_batch(spark, layout)
        else:
            rows = spark_stream(spark, layout, tmp_path / "ckpt")
    except Exception as exc:          # noqa: BLE001 -- Spark wraps the reader's error in its own
        assert mentions_range(str(exc), lo, hi), f"{door} failed, but not naming {lo}..{hi}: {_first_error_line(exc)}"
        return
    pytest.fail(f"{door} over a gap at {topic}-{part} {lo}..{hi} gave {len(rows)} rows without failing "
                f"(failOnDataLoss defaults to true)", pytrace=False)


# ===========================================================================================================
# 3. two replicas of one log dir: read once by default, every copy when asked

def test_replicas_told_apart_by_log_dir(layouts):
    """replicas="all": each row of the library names its copy (logDir): no (logDir, topic,
    partition, offset) twice, two log dirs, every copy's rows."""
    layout = layouts["replicas"]
    with _quiet():
        t = kafkafmt.read_log_dirs(layout.roots[0], replicas="all").to_arrow(log_dir=True)
    keys = list(zip(*[t.column(c).to_pylist() for c in ("logDir", "topic", "partition", "offset")]))
    assert len(keys) == len(set(keys)) == len(layout.every_copy)
    dirs = sorted({k[0] for k in keys})
    assert len(dirs) == 2 and all(d.rstrip("/").endswith("kafka-logs") for d in dirs), dirs


@pytest.mark.parametrize("replicas", ["dedup", "all"])
@pytest.mark.parametrize("door", ["library", "library_iter", "export", "stats", "spark_batch", "spark_stream"])
def test_replicas_option(layouts, door, replicas, request, tmp_path):
    """The option said explicitly: replicas= (library), --replicas (CLI), .option("replicas", ...)
    (Spark). "dedup": one copy per topic-partition-offset, the longest copy's records; "all": every
    copy's. A stream tracks one offset per topic-partition (Spark's Kafka offsets): it refuses two
    copies, naming the option."""
    layout = layouts["replicas"]
    want = sorted(layout.expected if replicas == "dedup" else layout.every_copy, key=_key)
    if door == "library":
        got = library(layout, replicas=replicas)[0]
    elif door == "library_iter":
        got = library_iter(layout, replicas=replicas)[0]
    elif door == "export":
        p, got = export_rows(layout, tmp_path / "out.parquet", "--replicas", replicas)
        if got is None:
            _fail_cli(f"export --replicas {replicas}", p)
    elif door == "stats":
        p, doc = stats_json(layout, "--replicas", replicas)
        if p.returncode != 0 or doc is None:
            _fail_cli(f"stats --replicas {replicas}", p)
        counts = collections.Counter()
        for d in doc["partitions"]:
            counts[(d["topic"], d["partition"])] += d["records"]
        assert dict(counts) == dict(collections.Counter((r[0], r[1]) for r in want))
        return
    elif door == "spark_stream" and replicas == "all":
        with pytest.raises(Exception, match="found in several places.*replicas=all"):
            spark_stream(request.getfixturevalue("spark_doors"), layout, tmp_path / "ckpt", replicas="all")
        return
    else:
        spark = request.getfixturevalue("spark_doors")
        with spark_errors(f"{door} with replicas={replicas}"):
            if door == "spark_batch":
                got = spark_batch(spark, layout, replicas=replicas)
            else:
                got = spark_stream(spark, layout, tmp_path / "ckpt", replicas=replicas)
    assert_rows(f"{door} with replicas {replicas}", want, got)


# ===========================================================================================================
# 4. an empty broker log dir: one answer from every command

@pytest.mark.parametrize("command", ["stats", "export", "verify", "dump"])
def test_empty_log_dir_every_command(layouts, command, tmp_path):
    layout = layouts["empty"]
    if command == "stats":
        p, doc = stats_json(layout)
        assert p.returncode == 0, f"stats: exit {p.returncode}: {p.stderr.strip()[-300:]}"
        assert doc["partitions"] == [] and doc["totals"]["records"] == 0, doc
    elif command == "export":
        out = tmp_path / "empty.parquet"
        p, rows = export_rows(layout, out)
        assert p.returncode == 0 and rows == [], f"export: exit {p.returncode}: {p.stderr.strip()[-300:]}"
        names = pq.read_schema(str(out)).names
        assert names[:7] == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"], names
    elif command == "verify":
        p, summary, problems = verify_json(layout)
        assert p.returncode == 0 and summary is not None, f"verify: exit {p.returncode}: {p.stderr.strip()[-300:]}"
        assert (summary["status"], summary["partitions"], summary["records"], problems) == ("OK", 0, 0, []), summary
    else:
        p, lines = dump_lines(layout)
        assert p.returncode == 0, f"dump: exit {p.returncode}: {p.stderr.strip()[-300:]}"
        assert dump_rows(lines) == []


# ===========================================================================================================
# 5. S3 and local disk: the same answer from every command

def _normalized_cli(layout, command, roots, tmp_path):
    if command == "stats":
        p = cli(layout, "stats", "--json", roots=roots)
        doc = json.loads(_relative(p.stdout, layout)) if p.returncode == 0 else None
        return p.returncode, doc
    if command == "verify":
        p = cli(layout, "verify", "--json", roots=roots)
        lines = [json.loads(x) for x in _relative(p.stdout, layout).splitlines() if x.strip()]
        for d in lines:
            d.pop("seconds", None)
            d.pop("pendingFixes", None)     # what `recover` would do: it repairs local dirs only
        return p.returncode, lines
    if command == "dump":
        p = cli(layout, "dump", "--records", "--json", roots=roots)
        return p.returncode, [json.loads(x) for x in _relative(p.stdout, layout).splitlines() if x.strip()]
    out = tmp_path / f"{'remote' if '://' in roots[0] else 'local'}.jsonl"
    p = cli(layout, "export", "--to", str(out), roots=roots)
    return p.returncode, out.read_text() if p.returncode == 0 else None


@pytest.mark.parametrize("command", ["stats", "verify", "dump", "export"])
@pytest.mark.parametrize("name", ["s3", "bootstrap"])
def test_s3_equals_local(layouts, name, command, tmp_path):
    """Every command's whole output (paths written relative to the root) over the log dir on S3
    equals its output over the same files on local disk -- the top-level bootstrap.checkpoint of a
    KRaft log dir included (issue 21 item 8)."""
    layout = layouts[name]
    local = _normalized_cli(layout, command, [layout.local_twin], tmp_path)
    remote = _normalized_cli(layout, command, layout.roots, tmp_path)
    assert local[1] is not None, f"{command} over the local copy failed (exit {local[0]})"
    if remote != local:
        if command in ("verify", "dump"):
            def kinds(lines):
                return collections.Counter((d.get("type"), os.path.basename(str(d.get("file", ""))))
                                           for d in lines or [])

            def summary(lines):
                return next((d for d in lines or [] if d.get("type") == "summary"), {})

            rs, ls = summary(remote[1]), summary(local[1])
            pytest.fail(f"{command} over S3 != local: exit {remote[0]} vs {local[0]}; lines (type, file) "
                        f"{dict(kinds(remote[1]) - kinds(local[1]))} only on S3, "
                        f"{dict(kinds(local[1]) - kinds(remote[1]))} only locally; summary (S3, local): "
                        f"{ {k: (rs.get(k), ls.get(k)) for k in sorted(set(rs) | set(ls)) if rs.get(k) != ls.get(k)} }",
                        pytrace=False)
        assert remote == local


# ===========================================================================================================
# 6. DeleteRecords: nothing below the log start offset

def test_delete_records_earliest_is_the_log_start(layouts):
    """The layout really holds records below the log start (so test_records means something)."""
    layout = layouts["delete_records"]
    (topic, part), n = next(iter(layout.log_start.items()))
    folder = os.path.join(layout.roots[0], f"{topic}-{part}")
    assert segment_offsets(folder)[0][0] == 0 < n
    assert all(r[2] >= n for r in layout.expected if (r[0], r[1]) == (topic, part))
