"""Many small partitions behind every door: `kafkafmt.read.iter_partitions_with` reads them in one pass and
gives each partition the chunks, records and report entries its own read gives; ``stats``, ``verify``,
``report`` and ``export`` read through it, their outputs byte for byte those of a read partition by
partition -- on generated log dirs (clean and damaged), the sample and the real corpus."""
import importlib
import json
import os
import re
import shutil
import struct

import pytest

import kafkafmt.cli.export
import kafkafmt.cli.stats
import kafkafmt.cli.verify
import kafkafmt.read._readers as readers
from kafkafmt.cli import main
from kafkafmt.log import discover
from kafkafmt.read import ReadOptions, iter_log_dir_with, iter_partitions_with
from kafkafmt.report.checks import PARTITION_CHECK_READ
from kafkafmt.report.figures import STATS_READ

from test_many_partitions import assert_same, many, segment_by_segment, write  # noqa: F401 (the fixture and its writer)

#: the modules that read partitions through iter_partitions_with
DOORS = (kafkafmt.cli.stats, kafkafmt.cli.verify, importlib.import_module("kafkafmt.report.build"), kafkafmt.cli.export)


def partition_by_partition(parts, options, *, typed=None):
    """The reference: each partition read on its own (`iter_log_dir_with`, each segment on its own), as the commands
    read before."""
    for part in parts:
        report = []
        with segment_by_segment():
            chunks = iter_log_dir_with(part, options, report=report, typed=typed)
        yield part, chunks, report


@pytest.fixture
def damaged(many, tmp_path):  # noqa: F811
    """The generated log dir with damage of every kind among its partitions."""
    root = shutil.copytree(many, tmp_path / "damaged" / "kafka-logs")

    def log(name, k=0):
        return root / name / sorted(p for p in os.listdir(root / name) if p.endswith(".log"))[k]

    seg = log("events-6")                                     # a CRC mismatch
    data = bytearray(seg.read_bytes())
    data[len(data) // 2] ^= 0xFF
    seg.write_bytes(bytes(data))
    seg = log("events-3")                                     # a cut-off tail
    seg.write_bytes(seg.read_bytes()[:-7])
    seg = log("orders-12", -1)                                # a zero-filled tail
    seg.write_bytes(seg.read_bytes() + bytes(4096))
    seg = log("orders-4")                                     # cut off before later segments
    seg.write_bytes(seg.read_bytes()[:-5])
    seg = log("events-0")                                     # a damaged base offset (outside the CRC)
    data = bytearray(seg.read_bytes())
    struct.pack_into(">q", data, 12 + struct.unpack_from(">i", data, 8)[0], 10_000)
    seg.write_bytes(bytes(data))
    for f in (root / "events-11").iterdir():                  # no index files
        if f.suffix in (".index", ".timeindex"):
            f.unlink()
    # records deleted below a log start offset (DeleteRecords), one inside a batch
    (root / "log-start-offset-checkpoint").write_text("0\n2\norders-2 1010\nevents-5 40\n")
    return root


def read_through(root, options, reader):
    out = []
    for part, chunks, report in reader(discover([root]).partitions, options):
        got = list(chunks)
        out.append((part.name, got, [(e.kind, e.file, e.message, e.start, e.end, e.offset) for e in report]))
        assert all(c.report is report for c in got)
    return out


def assert_same_chunks(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert_same(x, y)
        assert (x.topic, x.partition) == (y.topic, y.partition)


OPTION_SETS = [ReadOptions(), STATS_READ, PARTITION_CHECK_READ, ReadOptions(columns=["key", "headers"]),
               ReadOptions(errors="salvage", start_offset=0, keep_empty=True)]


@pytest.mark.parametrize("options", OPTION_SETS, ids=range(len(OPTION_SETS)))
def test_each_partition_gets_its_own_reads_chunks(many, options, units_read):  # noqa: F811
    got = read_through(many, options, iter_partitions_with)
    want = read_through(many, options, partition_by_partition)
    assert [(n, r) for n, _, r in got] == [(n, r) for n, _, r in want]
    for (_, a, _), (_, b, _) in zip(got, want):
        assert_same_chunks(a, b)
    assert units_read["chunks"] == 60 and units_read["fallback"] == 0


@pytest.mark.parametrize("options", OPTION_SETS[1:3], ids=["stats", "checks"])
def test_damaged_partitions_are_read_the_usual_way(damaged, options, units_read):
    got = read_through(damaged, options, iter_partitions_with)
    want = read_through(damaged, options, partition_by_partition)
    assert [(n, r) for n, _, r in got] == [(n, r) for n, _, r in want]
    for (_, a, _), (_, b, _) in zip(got, want):
        assert_same_chunks(a, b)
    assert units_read["fallback"] >= 5 and units_read["chunks"] >= 40


def test_a_planning_error_is_raised_in_its_turn(many, monkeypatch):  # noqa: F811
    parts = discover([many]).partitions
    bad = parts[3]
    real = readers._plan_partition

    def plan(part, report, options):
        if part is bad:
            raise OSError("gone")
        return real(part, report, options)

    monkeypatch.setattr(readers, "_plan_partition", plan)
    it = iter_partitions_with(parts, STATS_READ)
    for _ in range(3):
        _, chunks, _ = next(it)
        list(chunks)
    part, chunks, _ = next(it)
    assert part is bad
    with pytest.raises(OSError, match="gone"):
        list(chunks)



def test_the_figures_of_a_pass_are_those_of_its_chunks(many, damaged, sample, real_corpus, monkeypatch):  # noqa: F811
    """`kafkafmt.report.figures` takes the figures of partitions read in one pass from the whole pass at once
    (`piece_figures`): every segment's figures, and what progress is told, are those its chunks give."""
    from kafkafmt.report import figures

    def all_figures(root, at_once):
        monkeypatch.setattr(figures, "BULK_FIGURES", [at_once])
        out = []
        for part, chunks, report in iter_partitions_with(discover([root]).partitions, STATS_READ):
            told = []
            took = figures.bulk_figures(chunks) is not None
            segments, problems = figures.partition_stats(part, read=(chunks, report),
                                                         on_counted=lambda b, r: told.append((b, r)))
            out.append((part.name, {base: a.to_json() for base, a in segments.items()},
                        [p.to_json() for p in problems], tuple(map(sum, zip(*told))) if told else (0, 0), took))
        return out

    took = 0
    for root in [many, damaged, sample] + sorted((real_corpus / "broker-dirs").iterdir()):
        fast, slow = all_figures(root, True), all_figures(root, False)
        assert [x[:4] for x in fast] == [x[:4] for x in slow], root
        took += sum(x[4] for x in fast)
        if root == sample:      # its transactions are followed chunk by chunk
            assert not any(x[4] for x in fast if x[1] and any(a["transactionalBatches"] for a in x[1].values()))
    assert took >= 100

# --- the commands ------------------------------------------------------------------------------------------

def run(capsys, argv, out_file=None):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    out, err = (re.sub(r" in [0-9.]+ s\b", " in 0 s", re.sub(r'"seconds": ?[0-9.]+', '"seconds": 0', text))
                for text in (out, err))
    data = None
    if out_file is not None and os.path.exists(out_file):
        with open(out_file, "rb") as f:
            data = f.read()
        os.unlink(out_file)
    return code, out, err, data


COMMANDS = {
    "stats": ["stats", "--no-progress"],
    "stats-json": ["stats", "--json"],
    "verify": ["verify", "--no-progress"],
    "verify-json": ["verify", "--json"],
    "report-json": ["report", "--json"],
    "report-no-checks": ["report", "--json", "--no-checks"],
    "export-jsonl": ["export", "--salvage", "--fail-on-data-loss", "false", "--to", "{out}.jsonl"],
    "export-parquet": ["export", "--fail-on-data-loss", "false", "--batch-metadata", "--to", "{out}.parquet"],
    "export-range": ["export", "--offset-range", "5:", "--to", "{out}.jsonl"],
}


def assert_commands_same(root, tmp_path, monkeypatch, capsys, commands=COMMANDS):
    for name, argv in commands.items():
        out = str(tmp_path / f"out-{name}")
        argv = [a.format(out=out) for a in argv] + [str(root)]
        target = next((a for a in argv if a.startswith(out)), None)
        got = run(capsys, argv, target)
        with monkeypatch.context() as m:
            for door in DOORS:
                m.setattr(door, "iter_partitions_with", partition_by_partition)
            want = run(capsys, argv, target)
        assert got == want, name


@pytest.mark.parametrize("which", ["clean", "damaged"])
def test_commands_read_many_partitions_in_one_pass(many, damaged, which, tmp_path, monkeypatch, capsys,  # noqa: F811
                                                   units_read):
    root = many if which == "clean" else damaged
    assert_commands_same(root, tmp_path, monkeypatch, capsys)
    assert units_read["chunks"] >= 40 * 8
    if which == "damaged":
        got = run(capsys, ["verify", "--json", root])
        problems = [json.loads(line) for line in got[1].splitlines()]
        assert got[0] == 1 and sum(p.get("severity") == "error" for p in problems) >= 4


def test_commands_on_the_sample_and_the_real_corpus(sample, real_corpus, tmp_path, monkeypatch, capsys, units_read):
    for root in [sample] + sorted((real_corpus / "broker-dirs").iterdir()):
        assert_commands_same(root, tmp_path, monkeypatch, capsys)
    assert units_read["chunks"] > 0


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_the_export_lays_out_many_small_partitions_at_once(many, fmt, tmp_path, monkeypatch, capsys):  # noqa: F811
    """``export --to x.parquet`` (and Arrow IPC) lays out the chunks of many small partitions as one table, not a
    table a chunk: the file holds what a table a chunk gives, the same rows, columns and row groups (an Arrow
    file fewer record batches: it is smaller)."""
    import io

    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    tables = []
    real = kafkafmt.cli.export.to_table
    monkeypatch.setattr(kafkafmt.cli.export, "to_table", lambda recs, schema: tables.append(len(recs)) or
                        real(recs, schema))
    out = str(tmp_path / f"out.{fmt}")
    argv = ["export", "--batch-metadata", "--to", out, str(many)]
    got = run(capsys, argv, out)
    gathered = len(tables)
    monkeypatch.setattr(kafkafmt.cli.export, "GATHER_ROWS", 1)         # a table a chunk, as before
    tables.clear()
    want = run(capsys, argv, out)
    assert got[:2] == want[:2] and got[0] == 0
    assert [re.sub(r"\(.*?B\)", "", x[2]) for x in (got, want)] == [re.sub(r"\(.*?B\)", "", want[2])] * 2
    assert gathered == 1 and len(tables) >= 60, (gathered, len(tables))
    if fmt == "parquet":
        files = [pq.ParquetFile(io.BytesIO(data)) for data in (got[3], want[3])]
        assert files[0].num_row_groups == files[1].num_row_groups
        tables = [f.read() for f in files]
    else:
        tables = [ipc.open_file(io.BytesIO(data)).read_all() for data in (got[3], want[3])]
    assert tables[0].num_rows > 1000 and tables[0].equals(tables[1], check_metadata=True)
