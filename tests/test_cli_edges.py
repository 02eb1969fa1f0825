"""The command line at its edges: a pipe whose reader goes away, a mistyped command, an output that
cannot be written or a dependency that is missing, a read that would lose records -- run as a
subprocess (a real shell pipe where it is about pipes)."""
import json
import os
import pathlib
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
# a pipe whose reader goes away: the exit code is still the work's

@pytest.fixture(scope="module")
def many_partitions(tmp_path_factory):
    """A log dir of 300 small partitions (the tables of stats and dump fill more than a pipe's buffer),
    and a copy whose first partition has a corrupt batch."""
    root = tmp_path_factory.mktemp("pipes")
    clean = root / "clean"
    for i in range(300):
        kafkafmt.write_log_dir(clean / f"t{i:03d}-0", values=[b"v%d" % j for j in range(40)],
                               timestamps=[T0 + 1000 * j for j in range(40)], batch_size=10)
    corrupt = root / "corrupt"
    shutil.copytree(clean, corrupt)
    seg = sorted((corrupt / "t000-0").glob("*.log"))[0]
    b = kafkafmt.read_segment(seg).batches
    data = bytearray(seg.read_bytes())
    data[int(b.position[1]) + 70] ^= 0xFF          # inside the second batch's records: a CRC mismatch
    seg.write_bytes(bytes(data))
    return clean, corrupt


@pytest.mark.parametrize("command", ["verify", "stats", "dump --records --print-data", "verify --json",
                                     "export --format jsonl --to -"])
def test_exit_code_survives_a_closed_pipe(many_partitions, command):
    clean, corrupt = many_partitions
    alone = cli(*command.split(), corrupt)
    assert alone.returncode == 1, alone.stderr
    piped = shell(f"{KAFKAFMT} {command} {shlex.quote(str(corrupt))} | head -1")
    assert piped.returncode == 1, piped.stderr          # a problem found: 1, pipe or not
    assert len(piped.stdout.splitlines()) <= 1         # (a strict export stops at the corrupt batch, first)
    no_traceback(piped)
    assert "Broken pipe" not in piped.stderr and "BrokenPipeError" not in piped.stderr
    # the reader of stderr going away too changes nothing
    both = shell(f"{KAFKAFMT} {command} {shlex.quote(str(corrupt))} 2>&1 | head -1")
    assert both.returncode == 1
    # and clean data through the same pipe: 0
    ok = shell(f"{KAFKAFMT} {command} {shlex.quote(str(clean))} | head -1")
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr.strip() == "" or "exported" in ok.stderr, ok.stderr


def test_closed_pipe_in_process(many_partitions, capsys):
    """`kafkafmt.cli.main` in this process over a stdout whose reader went away: the streams are
    restored afterwards and the exit code is the work's."""
    from kafkafmt.cli import main

    clean, corrupt = many_partitions
    r, w = os.pipe()
    os.close(r)
    saved = sys.stdout
    out = os.fdopen(w, "w")
    sys.stdout = out
    try:
        code = main(["verify", str(corrupt), "--no-progress"])
    finally:
        sys.stdout = saved
        out.close()
    assert code == 1
    assert sys.stdout is saved


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
