"""Peak memory and rate of ``kafkafmt export`` to Parquet, Iceberg and Delta on ~1 GB of input.

    cd asv_bench && python lakehouse_memory.py [--mb 1024] [--threads 1]

Writes (once, into the corpus cache) a log dir of ``--mb`` MiB of lz4 record batches -- the data of
`benchmarks.bench_lakehouse`, larger -- then runs each export in a fresh process and prints its wall
time, input rate and peak resident memory (the process's VmHWM). Not an asv
benchmark: one export of 1 GB takes too long to repeat.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

_CHILD = r"""
import sys, kafkafmt
kafkafmt.set_cpu_count(int(sys.argv[1]))
from kafkafmt.cli import main
status = main(sys.argv[2:])
with open("/proc/self/status") as f:
    print([line.split()[1] for line in f if line.startswith("VmHWM:")][0])
sys.exit(status)
"""


def log_dir(mb):
    from benchmarks import bench_lakehouse, corpus

    base = corpus.cache_dir() / "logdirs"
    final = base / f"lakehouse-{mb}"
    if not final.is_dir():
        base.mkdir(parents=True, exist_ok=True)
        tmp = base / f"lakehouse-{mb}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        meta = bench_lakehouse._write(tmp, mb)
        os.replace(tmp, final)
        (base / f"lakehouse-{mb}.json").write_text(json.dumps(meta))
    return str(final)


def measure(args, threads):
    """(seconds, peak RSS in bytes) of one export in a fresh process: its own VmHWM (wait4's
    ru_maxrss would count this process's size at the fork)."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(threads), *args], capture_output=True, text=True)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"export failed ({proc.returncode}): {args}\n{proc.stderr[-2000:]}")
    return seconds, int(proc.stdout.split()[-1]) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    root = log_dir(a.mb)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    out = tempfile.mkdtemp(prefix="kafkafmt-lakehouse-memory-")
    runs = {"parquet": ["export", root, "--to", os.path.join(out, "out.parquet")],
            "iceberg": ["export", root, "--format", "iceberg", "--to", os.path.join(out, "wh"),
                        "--table", "kafka.events"],
            "delta": ["export", root, "--format", "delta", "--to", os.path.join(out, "delta")]}
    print(f"input: {size / 2**30:.2f} GiB of segments in {root}, {a.threads} thread(s)")
    print(f"{'format':8} {'seconds':>8} {'MB/s':>7} {'peak RSS MiB':>13}")
    try:
        for name, args in runs.items():
            seconds, peak = measure(args + ["--quiet"], a.threads)
            print(f"{name:8} {seconds:8.1f} {size / seconds / 1e6:7.1f} {peak / 2**20:13.0f}", flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
