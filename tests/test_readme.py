"""The README runs as pasted: its shell blocks by bash, line after line, in an empty folder with this tree's
``kafkafmt`` on the PATH, its Python blocks in this process -- all against the bundled sample (the session's,
through ``KAFKAFMT_SAMPLE_DIR``). A block that cannot run here (installing packages, building the site) says
why on the line before it (``<!-- not-run: reason -->``)."""
import os
import shlex
import subprocess
import sys

import kafkafmt
from mdblocks import REPO, blocks_of

README = REPO / "README.md"
#: the install commands, the package-index line and the documentation build
MAX_NOT_RUN = 3


def test_every_block_runs_or_says_why():
    blocks = blocks_of(README)
    assert all(b.lang in ("bash", "python") for b in blocks), blocks
    not_run = [b for b in blocks if b.not_run]
    assert len(not_run) <= MAX_NOT_RUN, not_run
    assert sum(b.lang == "bash" and not b.not_run for b in blocks) >= 1
    # the two commands CI and every newcomer start with, as they are written
    assert ("pip install -e . && python -m kafkafmt stats --sample" in blocks[0].text
            and 'pip install -e ".[test]" && python -m pytest -q' in blocks[0].text)


def _bash(text, cwd, env):
    script = (f"set -euo pipefail\nkafkafmt() {{ {shlex.quote(sys.executable)} -m kafkafmt \"$@\"; }}\n"
              f"export -f kafkafmt\n{text}")
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _run_python(block):
    exec(compile("\n" * block.line + block.text, str(README), "exec"), {"__name__": "__readme__"})


def _uses_spark(block):
    return "pyspark" in block.text


def test_the_readme_runs_as_pasted(sample, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KAFKAFMT_SAMPLE_DIR", str(sample))
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               KAFKAFMT_PROGRESS="0")
    shell_out = ""
    for block in blocks_of(README):
        if block.not_run or _uses_spark(block):
            continue
        if block.lang == "bash":
            r = _bash(block.text, tmp_path, env)
            assert r.returncode == 0 and "Traceback" not in r.stderr, f"{block}: exit {r.returncode}\n{r.stderr}"
            shell_out += r.stdout
        else:
            _run_python(block)
    # what the tour left: a copy of the sample, repaired with a backup beside it, an export, a report
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "orders.parquet").num_rows == len(
        kafkafmt.read_log_dirs(str(sample), topics=["orders"]))
    assert (tmp_path / "kafka-logs.html").stat().st_size > 0
    assert list(tmp_path.glob("kafka-logs.recover-*/manifest.jsonl"))
    assert "TOTAL (9 partitions)" in shell_out and "payments [0] at offset 0: key plain-a-0: " in shell_out


def test_the_readmes_spark_block_runs(sample, monkeypatch, request):
    """The Spark block, with the session's Spark (its getOrCreate finds it; skipped without pyspark)."""
    request.getfixturevalue("spark")
    monkeypatch.setenv("KAFKAFMT_SAMPLE_DIR", str(sample))
    spark_blocks = [b for b in blocks_of(README) if _uses_spark(b) and not b.not_run]
    assert spark_blocks
    for block in spark_blocks:
        _run_python(block)
