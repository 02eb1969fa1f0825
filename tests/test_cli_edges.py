"""The command line at its edges: a pipe whose reader goes away, a mistyped command, an output that
cannot be written or a dependency that is missing, a read that would lose records -- run as a
subprocess (a real shell pipe where it is about pipes)."""
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

import kafkafmt
from kcli import REPO, run as cli

T0 = 1767225600000           # 2026-01-01T00:00:00Z


def no_traceback(p):
    assert "Traceback" not in p.stderr, p.stderr


def shell(command, env=None):
    """``bash -o pipefail -c command`` with this tree's kafkafmt as ``python -m kafkafmt``."""
    e = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {}))
    e.pop("KAFKAFMT_PROGRESS", None)
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, env=e,
                          timeout=300)


KAFKAFMT = f"{shlex.quote(sys.executable)} -m kafkafmt"


# ----------------------------------------------------------------------------------------------
# a pipe whose reader goes away: the commands that stream their output stop, the exit code is that of
# what was read

def _corrupt_second_batch(folder):
    seg = sorted(folder.glob("*.log"))[0]
    b = kafkafmt.read_segment(seg).batches
    data = bytearray(seg.read_bytes())
    # inside the second batch's last record (past its 61-byte header, whatever the batch's size): a CRC mismatch
    data[int(b.position[1]) + int(b.size[1]) - 3] ^= 0xFF
    seg.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def many_partitions(tmp_path_factory):
    """A log dir of 300 small partitions (the tables of stats and dump fill more than a pipe's buffer),
    a copy whose first partition has a corrupt batch and one whose last has."""
    root = tmp_path_factory.mktemp("pipes")
    clean = root / "clean"
    for i in range(300):
        kafkafmt.write_log_dir(clean / f"t{i:03d}-0", values=[b"v%d" % j for j in range(40)],
                               timestamps=[T0 + 1000 * j for j in range(40)], batch_size=10)
    corrupt = root / "corrupt"
    shutil.copytree(clean, corrupt)
    _corrupt_second_batch(corrupt / "t000-0")
    corrupt_last = root / "corrupt-last"
    shutil.copytree(clean, corrupt_last)
    _corrupt_second_batch(corrupt_last / "t299-0")
    return clean, corrupt, corrupt_last


STREAMING = ("dump --records --print-data", "export --format jsonl --to -")


@pytest.mark.parametrize("command", ["verify", "stats", "verify --json"] + list(STREAMING))
def test_a_closed_pipe_keeps_the_exit_code_of_what_was_read(many_partitions, command):
    """``| head -1``: verify and stats, which print their tables after reading everything, say 1 for a problem
    anywhere; dump and export --to - stop reading once the reader went away (kcat's and kafka-dump-log's way),
    with the exit code of what they read: a corrupt batch past where they stopped is not seen (0), one
    seen is 1. Never a traceback or "Broken pipe"."""
    clean, corrupt, corrupt_last = many_partitions
    piped = shell(f"{KAFKAFMT} {command} {shlex.quote(str(corrupt))} | head -1")
    if command.startswith("dump"):          # the first partition's second batch: seen or not, said alike
        assert (piped.returncode == 1) == ("CRC mismatch" in piped.stderr), piped.stderr
    else:                                   # (a strict export stops at the corrupt batch, first)
        assert piped.returncode == 1, piped.stderr
    assert len(piped.stdout.splitlines()) <= 1
    no_traceback(piped)
    assert "Broken pipe" not in piped.stderr and "BrokenPipeError" not in piped.stderr
    # the reader of stderr going away too: no traceback either
    both = shell(f"{KAFKAFMT} {command} {shlex.quote(str(corrupt))} 2>&1 | head -1")
    assert both.returncode in ((0, 1) if command.startswith("dump") else (1,)) and "Traceback" not in both.stdout
    last = shell(f"{KAFKAFMT} {command} {shlex.quote(str(corrupt_last))} | head -1")
    if command in STREAMING:                # stopped long before the last partition
        assert last.returncode == 0 and "t299" not in last.stderr, last.stderr
    else:
        assert last.returncode == 1, last.stderr
    # and clean data through the same pipe: 0
    ok = shell(f"{KAFKAFMT} {command} {shlex.quote(str(clean))} | head -1")
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr.strip() == "" or "the reader of stdout closed the pipe" in ok.stderr, ok.stderr


def test_closed_pipe_in_process(many_partitions, capsys, monkeypatch):
    """`kafkafmt.cli.main` in this process over a stdout whose reader went away: the streams are
    restored afterwards, the exit code is that of what was read, and dump and export stop at once."""
    from kafkafmt.cli import main

    clean, corrupt, _ = many_partitions

    def closed(argv):
        r, w = os.pipe()
        os.close(r)
        saved = sys.stdout
        out = os.fdopen(w, "w")
        sys.stdout = out
        try:
            return main(argv + ["--no-progress"])
        finally:
            sys.stdout = saved
            out.close()
            assert sys.stdout is saved

    assert closed(["verify", str(corrupt)]) == 1
    # dump stops at once: a few of the 300 partitions read, not all of them
    from kafkafmt.cli.dump import Dumper

    dumped = []
    dump_file = Dumper.dump_file
    monkeypatch.setattr(Dumper, "dump_file", lambda self, kind, path, *a: dumped.append(path) or
                        dump_file(self, kind, path, *a))
    assert closed(["dump", str(clean), "--records"]) == 0
    assert 0 < len(dumped) < 10, len(dumped)
    capsys.readouterr()
    assert closed(["export", str(clean), "--to", "-", "--format", "csv"]) == 0
    said = capsys.readouterr().err
    assert said.startswith("kafkafmt: the reader of stdout closed the pipe: the export stopped after "), said
    assert int(said.split("after ")[1].split()[0]) < 300 * 40


# ----------------------------------------------------------------------------------------------
# a mistyped command is a mistyped command, not a path for stats

@pytest.mark.parametrize("argv, close", [(["dum", "kafka-logs"], "dump"), (["exprot", "x", "--to", "o.csv"], "export"),
                                         (["-q", "verfy", "kafka-logs"], "verify"),
                                         (["--threads", "2", "reprot"], "report"), (["dum", "--help"], "dump"),
                                         (["xyz"], None)])
def test_unknown_command_says_so(tmp_path, argv, close):
    p = cli(*argv, check=2)
    no_traceback(p)
    last = p.stderr.strip().splitlines()[-1]
    word = [a for a in argv if not a.startswith("-") and not a.isdigit()][0]
    assert last.startswith(f"kafkafmt: error: argument COMMAND: invalid choice: '{word}'"), last
    if close:
        assert f"(did you mean {close}?)" in last
    else:
        assert "choose from dump, verify, stats, report, export, recover" in last
    assert "no such file" not in p.stderr and "stats: error" not in p.stderr
    assert p.stderr.startswith("usage: kafkafmt ")


def test_a_path_without_a_command_is_stats(sample, tmp_path, monkeypatch):
    """Without a command, an existing path (or a URL) as the first word still means stats."""
    stats = cli("stats", sample, "--json", check=0).stdout
    assert cli(sample, "--json", check=0).stdout == stats
    assert cli("--json", sample, check=0).stdout == stats
    assert cli("--threads", "1", sample, "--json", check=0).stdout == stats
    # a folder named like a command, given as a path: ./dump is a path
    (tmp_path / "dum").symlink_to(sample, target_is_directory=True)
    p = subprocess.run([sys.executable, "-m", "kafkafmt", "dum", "--json"], cwd=tmp_path, capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert p.returncode == 0 and json.loads(p.stdout)["totals"] == json.loads(stats)["totals"], p.stderr
    # a URL is a path: stats says what it could not read, not "invalid choice"
    p = cli("memory://nothing-here/logs", check=2)
    assert "invalid choice" not in p.stderr and "memory://nothing-here/logs" in p.stderr, p.stderr


# ----------------------------------------------------------------------------------------------
# a command is one module plus one row of the command table

TOY_COMMAND = '''"""``kafkafmt partitions``: the partitions under the paths, one per line (a toy command).

Only what a command module needs: ``add_parser`` and ``run``.
"""
from kafkafmt.cli.common import add_command, find_inputs


def add_parser(sub, parents, command):
    p = add_command(sub, parents, command, __doc__)
    p.add_argument("--prefix", default="", help="printed before each partition")
    return p


def run(args, console):
    found = find_inputs(args.paths)
    for part in found.partitions:
        console.write(args.prefix + part.name)
    return 0 if found.partitions else 1
'''


def test_a_command_is_a_module_and_a_row(sample, tmp_path, monkeypatch, capsys):
    """A toy command: its module and one row of COMMAND_TABLE give a command main runs, with the
    common options, listed in --help, put first when options come before it, suggested when mistyped."""
    import kafkafmt.cli as cli_mod
    from kafkafmt.cli import COMMAND_TABLE, Command, main

    (tmp_path / "toy_partitions_command.py").write_text(TOY_COMMAND)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli_mod, "COMMAND_TABLE",
                        COMMAND_TABLE + (Command("partitions", "toy_partitions_command", "list the partitions"),))
    want = sorted(p.name for p in kafkafmt.list_partitions(str(sample)))
    for argv in (["partitions", "--prefix", "p:", str(sample)], ["-q", "partitions", str(sample), "--prefix", "p:"],
                 ["--threads", "1", "partitions", "--prefix=p:", str(sample)]):
        capsys.readouterr()
        assert main(argv) == 0, argv
        assert sorted(capsys.readouterr().out.split()) == ["p:" + n for n in want], argv
    assert main(["partitions", str(tmp_path / "nothing")]) == 2       # the common input errors apply
    with pytest.raises(SystemExit):
        main(["--help"])
    assert re.search(r"^ +partitions\s+list the partitions$", capsys.readouterr().out, re.M)
    with pytest.raises(SystemExit) as exc:
        main(["partitons", str(sample)])
    assert exc.value.code == 2 and "did you mean partitions?" in capsys.readouterr().err
    # without its row there is no such command
    monkeypatch.setattr(cli_mod, "COMMAND_TABLE", COMMAND_TABLE)
    with pytest.raises(SystemExit) as exc:
        main(["partitions", str(sample)])
    assert exc.value.code == 2 and "invalid choice: 'partitions'" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# report: what would fail after the reading is found before it

def _without(modules, *argv, cwd=None):
    """``kafkafmt ARGV`` in a subprocess where importing ``modules`` fails (as when not installed)."""
    code = ("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
            + "from kafkafmt.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    return subprocess.run([sys.executable, "-c", code, *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=300)


def test_report_without_its_extra_names_the_install_command(sample, tmp_path):
    # the paths are not even read: a missing one is not what is reported
    p = _without(["plotly"], "report", tmp_path / "not-there", "--to", tmp_path / "r.html", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    no_traceback(p)
    line = p.stderr.strip()
    assert line.startswith("kafkafmt report: error: report needs plotly (not installed): pip install "), line
    assert "not-there" not in line and not (tmp_path / "r.html").exists()
    # the command names this checkout and an extra of its pyproject.toml that holds plotly
    command = line.split(": ", 3)[-1]
    assert command == f"pip install -e '{REPO}[report]'", command
    pyproject = (REPO / "pyproject.toml").read_text()
    report_extra = [ln for ln in pyproject.splitlines() if ln.startswith("report = ")]
    assert report_extra and "plotly" in report_extra[0]
    # from the checkout itself: -e '.[report]'
    p = _without(["plotly"], "report", "--sample", "--to", tmp_path / "r.html", cwd=REPO)
    assert p.stderr.strip().endswith("pip install -e '.[report]'"), p.stderr
    # --json draws no chart: it needs no plotly
    p = _without(["plotly"], "report", "--sample", "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["partitions"]
    # without pandas, even --json cannot work: named too
    p = _without(["pandas"], "report", "--sample", "--json")
    assert p.returncode == 2 and "report needs pandas" in p.stderr, p.stderr


def test_report_to_stdout(sample, tmp_path):
    page = tmp_path / "page.html"
    cli("report", "--sample", "--to", page, "--title", "t", sample=sample, check=0)
    p = subprocess.run([sys.executable, "-m", "kafkafmt", "report", "--sample", "--to", "-", "--title", "t"],
                       capture_output=True, cwd=tmp_path, timeout=300,
                       env=dict(os.environ, PYTHONPATH=str(REPO), KAFKAFMT_SAMPLE_DIR=str(sample)))
    assert p.returncode == 0, p.stderr
    assert p.stdout == page.read_bytes()
    assert not (tmp_path / "-").exists()
    p = cli("report", "--sample", "--to", "-", "--json", sample=sample, check=2)
    assert "both write to stdout" in p.stderr


@pytest.mark.parametrize("where", ["missing-folder/r.html", "a-folder", "a-file/r.html"])
def test_report_to_an_unwritable_place_is_refused_before_reading(tmp_path, where):
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("x")
    target = tmp_path / where
    p = cli("report", tmp_path / "not-there", "--to", target, check=2)
    no_traceback(p)
    assert p.stderr.startswith(f"kafkafmt report: error: cannot write {target}: "), p.stderr
    assert "not-there" not in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a-file", "a-folder"]
    assert list((tmp_path / "a-folder").iterdir()) == []


def test_a_failed_atomic_write_leaves_nothing(tmp_path):
    from kafkafmt._util.durable import write_atomic

    target = tmp_path / "page.html"
    with pytest.raises(TypeError):
        write_atomic(target, [b"<html>", object()])
    assert list(tmp_path.iterdir()) == []
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        write_atomic(target, [b"<html>", object()])
    assert list(tmp_path.iterdir()) == [target] and target.read_bytes() == b"old"


@pytest.mark.parametrize("command", ["dump", "verify", "stats", "report", "export", "recover"])
def test_help_is_plain_text(command):
    """--help shows the command's text without reStructuredText's inline markup."""
    text = cli(command, "--help", check=0).stdout
    assert "`" not in text and ":func:" not in text and "**" not in text
    assert not [ln for ln in text.splitlines() if ln.rstrip().endswith("::")]
    assert len(text.splitlines()) > 10


def test_command_text_takes_markup_off():
    from kafkafmt.cli.common import command_text

    doc = ("Title.\n\nRead ``--json`` as `kafkafmt.report.build` does (:func:`kafkafmt.read_log_dir`, "
           "`Kafka <https://kafka.apache.org>`_, **bold**)::\n\n    kafkafmt x\n")
    assert command_text(doc) == ("Read --json as kafkafmt.report.build does (kafkafmt.read_log_dir, Kafka, bold):"
                                 "\n\n    kafkafmt x\n")


# ----------------------------------------------------------------------------------------------
# export across a tiered gap: refused with nothing written (the default), or what is there with a warning

@pytest.fixture(scope="module")
def tiered_gap(tmp_path_factory):
    """A partition whose tiered uploads end before its local segments start: (log dir, tiered root,
    offsets held, (first missing offset, first local offset))."""
    from test_tiered import _id, _write_local, kafka_layout_objects

    tmp = tmp_path_factory.mktemp("gap")
    folder = tmp / "logs" / "orders-0"
    n = 3000
    kafkafmt.write_log_dir(folder, values=[b"v%05d" % i for i in range(n)],
                           timestamps=[T0 + 1000 * i for i in range(n)], segment_bytes=4 << 10, batch_size=1024)
    bases = sorted(int(f.name[:20]) for f in folder.glob("*.log"))
    assert len(bases) >= 6
    uploaded, missing = bases[:len(bases) // 3], bases[len(bases) // 3: 2 * len(bases) // 3]
    upload = tmp / "upload" / "orders-0"
    shutil.copytree(folder, upload)
    for f in upload.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) not in uploaded:
            f.unlink()
    _write_local(str(tmp / "remote"), kafka_layout_objects(str(upload), "orders", 0, _id(1)))
    shutil.rmtree(tmp / "upload")
    for f in folder.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) in uploaded + missing:
            f.unlink()
    first_missing, first_local = missing[0], bases[2 * len(bases) // 3]
    held = list(range(first_missing)) + list(range(first_local, n))
    return tmp / "logs", tmp / "remote", held, (first_missing, first_local)


def _offsets_of(path, fmt):
    import pyarrow as pa
    import pyarrow.csv
    import pyarrow.parquet as pq

    if fmt == "parquet":
        t = pq.read_table(path)
    elif fmt == "arrow":
        t = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    elif fmt == "csv":
        t = pyarrow.csv.read_csv(path)
    else:
        return [json.loads(line)["offset"] for line in pathlib.Path(path).read_text().splitlines()]
    return t.column("offset").to_pylist()


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "csv", "jsonl"])
def test_export_across_a_tiered_gap(tiered_gap, tmp_path, fmt):
    logs, remote, held, (first_missing, first_local) = tiered_gap
    out = tmp_path / f"out.{fmt}"
    gap = f"offsets {first_missing}..{first_local - 1}"
    # the default (failOnDataLoss): refused, nothing written, the gap named
    p = cli("export", logs, remote, "--to", out, check=1)
    no_traceback(p)
    assert gap in p.stderr and "nothing was written" in p.stderr and "--fail-on-data-loss false" in p.stderr
    assert list(tmp_path.iterdir()) == []
    if fmt in ("csv", "jsonl"):
        p = cli("export", logs, remote, "--to", "-", "--format", fmt, check=1)
        assert p.stdout == "" and gap in p.stderr
    # taken: what is there, exit 0, a warning naming the gap
    p = cli("export", logs, remote, "--to", out, "--fail-on-data-loss", "false", check=0)
    warning = [ln for ln in p.stderr.splitlines() if "warning:" in ln]
    assert len(warning) == 1 and gap in warning[0], p.stderr
    assert _offsets_of(out, fmt) == held
    assert sorted(x.name for x in tmp_path.iterdir()) == [out.name]


@pytest.mark.parametrize("fmt", ["iceberg", "delta"])
def test_table_export_across_a_tiered_gap_creates_nothing(tiered_gap, tmp_path, fmt):
    logs, remote, held, (first_missing, first_local) = tiered_gap
    where = tmp_path / "table"
    table = ["--table", "kafka.orders"] if fmt == "iceberg" else []
    p = cli("export", logs, remote, "--format", fmt, "--to", where, *table, check=1)
    no_traceback(p)
    assert f"offsets {first_missing}..{first_local - 1}" in p.stderr and "Nothing was exported" in p.stderr
    assert not where.exists()
    p = cli("export", logs, remote, "--format", fmt, "--to", where, *table, "--fail-on-data-loss", "false", check=0)
    assert "data loss" in p.stderr and "1024" in p.stderr and "error" not in p.stderr, p.stderr
    assert f"exported {len(held)} records" in p.stderr


# ----------------------------------------------------------------------------------------------
# the README's first command: `pip install -e .` (no extra) is all `stats --sample` needs

_ONLY_RUNTIME = r'''
import importlib.abc, importlib.metadata as md, re, sys

runtime = {re.match(r"[A-Za-z0-9_.-]+", r).group(0).lower().replace("_", "-") for r in md.requires("kafkafmt") or ()
           if "extra ==" not in r}
allowed = {"kafkafmt"} | set(sys.stdlib_module_names) | {m.split(".")[0] for m in sys.modules}
allowed |= {top for top, dists in md.packages_distributions().items()
            if any(d.lower().replace("_", "-") in runtime for d in dists)}
blocked = []


class OnlyRuntime(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top not in allowed:
            blocked.append(top)
            raise ModuleNotFoundError(f"{top} is not a runtime dependency of kafkafmt", name=top)
        return None


sys.meta_path.insert(0, OnlyRuntime())
from kafkafmt.cli import main
code = main(sys.argv[1:])
print("blocked:", sorted(set(blocked)), file=sys.stderr)
sys.exit(code)
'''


def test_stats_of_the_sample_needs_only_the_runtime_dependencies(tmp_path):
    """`python -m kafkafmt stats --sample` in a fresh sample folder (generated, then read) with every
    package that is not a runtime dependency of pyproject.toml unimportable."""
    env = dict(os.environ, PYTHONPATH=str(REPO), KAFKAFMT_SAMPLE_DIR=str(tmp_path / "sample"))
    p = subprocess.run([sys.executable, "-c", _ONLY_RUNTIME, "stats", "--sample"], capture_output=True, text=True,
                       env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.splitlines()[0].split()[:3] == ["PARTITION", "/", "SEGMENT"]
    rows = {ln.split()[0] for ln in p.stdout.splitlines()[1:] if not ln.startswith(" ")}
    assert rows >= {"orders-0", "payments-0", "shipments-0", "__consumer_offsets-0"} and any(
        r.startswith("TOTAL") for r in rows)
    # the guard is real: a module of an extra cannot be imported under it
    p = subprocess.run([sys.executable, "-c", _ONLY_RUNTIME.replace("from kafkafmt.cli import main",
                                                                    "import pyarrow\nfrom kafkafmt.cli import main"),
                        "stats", "--sample"], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 1 and "pyarrow is not a runtime dependency" in p.stderr


def test_missing_extras_name_an_install_line_that_works_here(sample, tmp_path):
    """From this checkout, a missing extra is named as the checkout's editable install with that extra (a
    `pip install 'kafkafmt[arrow]'` would look for a package elsewhere), by the library and the commands."""
    pyproject = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^arrow = \[.*"pyarrow', pyproject, re.M)
    code = ("import sys\nsys.modules['pyarrow'] = None\nimport kafkafmt\n"
            f"recs = kafkafmt.read_log_dir({str(sample / 'orders-0')!r})\n"
            "try:\n    recs.to_arrow()\nexcept ImportError as exc:\n    print(exc)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=300)
    assert p.stdout.strip().endswith(f"need pyarrow: pip install -e '{REPO}[arrow]'"), p.stdout + p.stderr
    p = _without(["pyarrow"], "export", sample, "--to", tmp_path / "o.parquet", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.strip().endswith(f"export needs pyarrow: pip install -e '{REPO}[arrow]'")


@pytest.mark.slow
def test_spark_engine_export_across_a_tiered_gap(tiered_gap, tmp_path):
    """--engine spark reads every path in one query (a partition's uploads and local segments are one
    partition), refuses the gap as the local engine does, and with --fail-on-data-loss false writes what
    is there."""
    pytest.importorskip("pyspark")
    import pyarrow.parquet as pq

    logs, remote, held, (first_missing, first_local) = tiered_gap
    out = tmp_path / "spark-out"
    p = cli("export", logs, remote, "--engine", "spark", "--format", "parquet", "--to", out, check=1)
    assert f"offsets {first_missing}..{first_local - 1}" in p.stderr and "nothing was written" in p.stderr
    assert not out.exists()
    cli("export", logs, remote, "--engine", "spark", "--format", "parquet", "--to", out,
        "--fail-on-data-loss", "false", check=0)
    assert sorted(pq.read_table(out).column("offset").to_pylist()) == held
