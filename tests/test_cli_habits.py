"""The command line's habits, as kcat and kafka-dump-log have them and as every command shares them: paths
printed as given, help that reads in order, a bad option value said in one line (exit 2), record counts and
print formats, real --topic/--partition options, and a pipe whose reader goes away stopping the work."""
import json
import os
import shutil

import pytest

import kafkafmt
from kcli import run as cli


def no_traceback(p):
    assert "Traceback" not in p.stderr, p.stderr


def flip(path, pos, mask=0xFF):
    data = bytearray(path.read_bytes())
    data[pos] ^= mask
    path.write_bytes(bytes(data))


# ----------------------------------------------------------------------------------------------
# paths as given, help in order

def test_recover_prints_paths_as_given(sample, tmp_path):
    """recover names a file as verify (every command) does: under the path given, not made absolute."""
    shutil.copytree(sample / "orders-1", tmp_path / "logs" / "orders-1")
    seg = sorted((tmp_path / "logs" / "orders-1").glob("*.log"))[0]
    flip(seg, int(kafkafmt.read_segment(seg).batches.position[1]) + 70)
    named = os.path.join("logs", "orders-1", seg.name)
    verify = cli("verify", "logs", cwd=tmp_path, check=1)
    assert named in verify.stdout + verify.stderr
    for args in (["recover", "logs"], ["recover", "logs", "--json"]):
        p = cli(*args, cwd=tmp_path, check=1)
        assert named in p.stdout and str(tmp_path) not in p.stdout, p.stdout
    p = cli("recover", str(tmp_path / "logs"), check=1)          # an absolute path given: absolute paths
    assert str(seg) in p.stdout
    # the backup beside the log dir, and the undo command to paste, relative too
    p = cli("recover", "logs", "--apply", cwd=tmp_path, check=0)
    manifest = [ln for ln in p.stdout.splitlines() if ln.startswith("manifest: ")][0].split()[1]
    assert manifest.startswith("logs.recover-") and manifest.endswith("manifest.jsonl"), p.stdout
    cli("recover", "--undo", manifest, cwd=tmp_path, check=0)


def test_sample_dir_says_where_the_sample_is(sample):
    p = cli("--sample-dir", sample=sample, check=0)
    assert p.stdout == f"{sample}\n" and p.stderr == ""


def test_value_decoder_help_reads_in_order():
    text = " ".join(cli("dump", "--help", check=0).stdout.split())
    assert "--value-decoder FORMAT decode values as FORMAT and print them as JSON text" in text
    assert "--key-decoder FORMAT decode keys as FORMAT, as --value-decoder does values" in text
    text = " ".join(cli("export", "--help", check=0).stdout.split())
    assert "--value-format FORMAT decode values as FORMAT and write them as typed (nested) columns" in text


# ----------------------------------------------------------------------------------------------
# every option's bad value: one line, exit 2

def _value_options():
    """(command, option, metavar) of every option of every command that takes a checked value: a type
    (numbers, sizes, ranges, formats) or a set of choices."""
    from kafkafmt.cli import build_parser
    from kafkafmt.cli.arguments import NUMERIC_METAVARS

    out = []
    for name, parser in build_parser().commands.items():
        for a in parser._actions:
            if not a.option_strings or a.nargs == 0:
                continue
            if a.metavar in NUMERIC_METAVARS:     # a number, a size or a range: checked as the line is parsed
                assert a.type is not None, (name, a.option_strings)
            if a.type is not None or a.choices is not None:
                out.append((name, a.option_strings[-1], a.metavar))
    return out


def test_the_probe_sees_every_numeric_and_size_option():
    seen = {(c, o) for c, o, _ in _value_options()}
    for want in [("dump", "--max-bytes"), ("dump", "--max-records"), ("dump", "--threads"), ("dump", "--partition"),
                 ("dump", "--offset-range"), ("dump", "--time-range"), ("dump", "--format"),
                 ("export", "--target-file-size"), ("export", "--commit-every"), ("export", "--max-records"),
                 ("export", "--compression"), ("recover", "--index-interval-bytes"), ("verify", "--partition"),
                 ("stats", "--partition"), ("report", "--partition")]:
        assert want in seen, want


@pytest.mark.parametrize("command, option, metavar", _value_options(), ids=lambda v: str(v))
def test_every_bad_option_value_is_one_line_and_exit_2(command, option, metavar, capsys):
    """``export --target-file-size lots`` was a 15-line traceback and exit 1: every option's bad value of
    every command is one line naming the option and the value, exit code 2."""
    from kafkafmt.cli import main

    bad = {("dump", "--format"): ["%Q", "%"]}.get((command, option),           # any text is a format: a bad token
                                                 ["lots"] + (["-1"] if metavar in ("N", "SIZE") else []))
    for value in bad:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exc:
            main([command, f"{option}={value}", "--no-progress"])
        assert exc.value.code == 2, (command, option, value)
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1, err
        assert err[0].startswith(f"kafkafmt {command}: error: argument ") and option in err[0] and value in err[0], err


def test_a_bad_value_in_a_subprocess_is_one_line():
    for args in (["export", "--sample", "--to", "x.parquet", "--target-file-size", "lots"],
                 ["export", "--sample", "--to", "x", "--format", "delta", "--commit-every", "lots"]):
        p = cli(*args, check=2)
        assert p.stderr.count("\n") == 1 and "not a size: 'lots'" in p.stderr, p.stderr


def test_a_run_builds_only_its_command():
    """A command's run builds its own parser alone (no other command's module, no value-format plugins looked
    up among the installed packages) and, without a terminal, draws no bar (tqdm not imported); its output is
    the one the full parser gives."""
    import subprocess
    import sys

    code = ("import io, sys, contextlib\n"
            "from kafkafmt.cli import main\n"
            "out = io.StringIO()\n"
            "with contextlib.redirect_stdout(out):\n"
            "    rc = main(['stats', '--sample', '--json', '--no-progress'])\n"
            "print(rc, sorted(m for m in ('tqdm', 'importlib.metadata', 'kafkafmt.cli.dump', 'kafkafmt.cli.export')\n"
            "                 if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.split("\n")[-2] == "0 []", p.stdout[-300:]
    from kafkafmt.cli import build_parser

    full, alone = build_parser(), build_parser(only="stats")
    assert sorted(full.commands) == ["dump", "export", "recover", "report", "stats", "verify"]
    assert list(alone.commands) == ["stats"]
    assert alone.commands["stats"].format_help() == full.commands["stats"].format_help()


# ----------------------------------------------------------------------------------------------
# kcat's habits: -c, -f, --topic / --partition

def test_max_records_stops_dump_and_export(sample, tmp_path):
    want = kafkafmt.read_log_dir(sample / "orders-0")
    p = cli("dump", sample, "--topic", "orders", "-c", "5", "--records", check=0)
    lines = p.stdout.splitlines()
    assert [int(ln.split()[2]) for ln in lines if ln.startswith("| offset: ")] == want.offset[:5].tolist()
    assert sum(ln.startswith("Dumping ") for ln in lines) == 1          # it stopped in the first file
    p = cli("dump", sample, "--topic", "orders", "--max-records", "30", check=0)      # batch lines: up to the 30th
    counts = [int(ln.split(" count: ")[1].split()[0]) for ln in p.stdout.splitlines() if ln.startswith("baseOffset")]
    assert sum(counts[:-1]) < 30 <= sum(counts)
    out = tmp_path / "o.jsonl"
    p = cli("export", sample, "--topics", "orders", "-c", "7", "--to", out, check=0)
    rows = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert [r["offset"] for r in rows] == want.offset[:7].tolist() and "exported 7 records" in p.stderr
    p = cli("export", sample, "-c", "7", "--to", tmp_path / "t", "--format", "delta", check=2)
    assert "--max-records" in p.stderr


def test_dump_format_prints_kcat_lines(sample):
    """-f with kcat's tokens, checked against the library's read: one line per record, control records
    left out (payments holds transaction markers), null keys empty, lengths -1 when null."""
    fmt = r"%t|%p|%o|%T|%K|%S|%k|%s|%h\n"
    p = cli("dump", sample / "payments-0", "-f", fmt, check=0)
    want = kafkafmt.read_log_dir(sample / "payments-0")
    assert len(want.controls) > 0
    lines = p.stdout.split("\n")
    assert lines[-1] == "" and len(lines) - 1 == len(want)
    keys, values, heads = want.key.to_pylist(), want.value.to_pylist(), want.headers.to_pylist()
    for line, o, ts, k, v, h in zip(lines, want.offset.tolist(), want.timestamp.tolist(), keys, values, heads):
        expect = ["payments", "0", str(o), str(ts), str(-1 if k is None else len(k)), str(-1 if v is None else len(v)),
                  "" if k is None else k.decode(), "" if v is None else v.decode(),
                  ",".join(f"{hk}={hv.decode()}" for hk, hv in h)]
        assert line.split("|") == expect
    p = cli("dump", sample / "orders-1", "-c", "2", "-f", r"offset %o\tkey %k\n", check=0)
    o = kafkafmt.read_log_dir(sample / "orders-1", end_offset=2)
    assert p.stdout == "".join(f"offset {x}\tkey {k.decode()}\n" for x, k in zip(o.offset.tolist(), o.key.to_pylist()))
    p = cli("dump", sample / "orders-1", "-f", "%o %R", check=2)
    assert "unknown token %R" in p.stderr and p.stderr.count("\n") == 1


def test_topic_and_partition_are_real_options(sample):
    a = cli("dump", sample, "--topic", "orders", "--partition", "1", "-c", "3", "--records", check=0)
    b = cli("dump", sample, "--topics", "orders", "--partitions", "1", "-c", "3", "--records", check=0)
    assert a.stdout == b.stdout and "orders-1" in a.stdout
    p = cli("dump", sample, "--topi", "orders", check=2)          # no abbreviations: a typo is a typo
    assert "unrecognized arguments: --topi" in p.stderr
    for command in ("dump", "verify", "stats"):
        p = cli(command, sample, "--topics", "ordres", check=2)
        assert p.stderr.strip().endswith("(after --topics/--partitions)"), p.stderr
    p = cli("verify", sample, "--topic", "orders", "--partition", "1", "--json", check=0)
    summary = json.loads(p.stdout.splitlines()[-1])
    assert summary["partitions"] == 1 and summary["records"] == len(kafkafmt.read_log_dir(sample / "orders-1"))


# ----------------------------------------------------------------------------------------------
# Ctrl-C during an export: nothing left open

def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


@pytest.mark.parametrize("fmt, where", [
    ("csv", "kafkafmt.cli.export._TextWriter.__init__"),      # the temporary file just opened
    ("csv", "kafkafmt.cli.export._TextWriter.write"),
    ("delta", "pyarrow.parquet.ParquetWriter"),                # a data file just opened
    ("delta", "kafkafmt.lakehouse.writer.RollingWriter._flush"),   # a data file being finished
])
def test_ctrl_c_during_an_export_leaves_no_file_open(sample, tmp_path, monkeypatch, capsys, fmt, where):
    """Ctrl-C (KeyboardInterrupt) at the moments a CSV or Delta export has a file open: "kafkafmt:
    interrupted", exit code 130, no "unclosed file" warning, no "Exception ignored", no temporary file."""
    import gc
    import importlib
    import sys
    import warnings

    if fmt == "delta":
        pytest.importorskip("deltalake")
    module, _, name = where.rpartition(".")
    try:
        owner = importlib.import_module(module)
    except ImportError:
        owner_module, _, cls = module.rpartition(".")
        owner = getattr(importlib.import_module(owner_module), cls)
    monkeypatch.setattr(owner, name, _interrupt)
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    from kafkafmt.cli import main

    out = tmp_path / ("o.csv" if fmt == "csv" else "table")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["export", str(sample / "orders-1"), "--to", str(out), "--format", fmt, "--no-progress"])
        gc.collect()
    err = capsys.readouterr().err
    assert code == 130 and err == "kafkafmt: interrupted\n", err
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
    assert unraisable == []
    if fmt == "csv":
        assert list(tmp_path.iterdir()) == []
