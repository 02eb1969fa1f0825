"""Every ratio of the suite in one set of markdown tables.

    cd asv_bench
    taskset -c 1 python -m benchmarks.report                 # measure now, in this process
    python -m benchmarks.report --budget 0.3                 # faster, noisier
    python -m benchmarks.report --family encode,logdir       # some tables only
    python -m benchmarks.report --asv                        # the newest saved asv results instead
    python -m benchmarks.report --asv results/vm/abc-existing-py_....json

Measuring uses exactly the functions the ``track_*`` benchmarks call (``common.RATIOS``, filled by
the bench modules): each time ratio is the ratio of medians of interleaved in-process rounds,
KAFKAFMT_BENCH_BUDGET seconds per contender.  ``--asv`` reads the same numbers from an asv results
file (saved by ``asv run ... --set-commit-hash``); asv's value for a track_ benchmark run in two
processes is the median of the two.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import math
import os
import platform
import subprocess
import sys
import time

from . import bench_arrow, bench_avro, bench_decode, bench_encode, bench_logdir, bench_memory, bench_meta  # noqa: F401
from . import bench_dump, bench_handoff, bench_json, bench_protobuf  # noqa: F401
from . import common

FAMILIES = {
    "corpus": "Decoding, per corpus",
    "encode": "Encoding, per codec (40 000 records, 500 per batch)",
    "logdir": "Log directories",
    "avro": "Typed values: Avro in the wire format -> Arrow columns (one core)",
    "protobuf": "Typed values: Protobuf in the wire format -> Arrow columns (one core)",
    "json": "Typed values: JSON texts -> Arrow columns (one core)",
}
#: column order of the corpus table (others follow in registration order)
ORDER = ["vs_aiokafka", "vs_kafka_python", "decode_vs_floor", "crc_cost", "meta_speedup", "meta_speedup_nocrc", "meta_vs_aiokafka",
         "arrow_vs_aiokafka", "pandas_vs_aiokafka", "pandas_vs_kafka_python", "decode_peak_vs_aiokafka",
         "decode_rate"]


def _fmt(value, unit):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if unit == "records/s":
        return "%.2f M" % (value / 1e6)
    if unit == "MB/s":
        return "%.0f" % value
    return "%.2f" % value


def _keys(family):
    keys = [k for k, s in common.RATIOS.items() if s["family"] == family]
    return sorted(keys, key=lambda k: ORDER.index(k) if k in ORDER else len(ORDER) + keys.index(k))


def _title(key):
    spec = common.RATIOS[key]
    arrow = "↑" if spec["better"] == "higher" else "↓"
    return "%s %s" % (spec["title"], arrow)


def _table(family, cell):
    """Markdown rows: one per parameter, one column per registered id of the family."""
    keys = _keys(family)
    params = []
    for k in keys:
        for p in common.RATIOS[k]["params"]:
            if p not in params:
                params.append(p)
    first = {"corpus": "corpus", "encode": "codec", "logdir": "data", "avro": "record", "protobuf": "record",
             "json": "record"}[family]
    if family == "logdir":   # few cells with different params: one row per id instead
        lines = ["| measure | param | value |", "|---|---|---|"]
        print("\n".join(lines), flush=True)
        for k in keys:
            for p in common.RATIOS[k]["params"]:
                lines.append("| %s | %s | %s |" % (_title(k), p, _fmt(cell(k, p), common.RATIOS[k]["unit"])))
                print(lines[-1], flush=True)
        return lines
    lines = ["| %s | %s |" % (first, " | ".join(_title(k) for k in keys)), "|---" * (len(keys) + 1) + "|"]
    print("\n".join(lines), flush=True)
    for p in params:
        row = [_fmt(cell(k, p), common.RATIOS[k]["unit"]) if p in common.RATIOS[k]["params"] else ""
               for k in keys]
        lines.append("| %s | %s |" % (p, " | ".join(row)))
        print(lines[-1], flush=True)
    return lines


def measure_cell(key, param):
    spec = common.RATIOS[key]
    try:
        if spec["family"] == "corpus" and not common.KAFKAFMT_ERROR:
            common.verify_kafkafmt(param)
        return common.measure_registered(key, param)
    except NotImplementedError:
        return None


# --- asv results ------------------------------------------------------------------------------------

def newest_results_file(results_dir):
    files = [f for f in glob.glob(os.path.join(results_dir, "*", "*.json"))
             if os.path.basename(f) not in ("machine.json", "benchmarks.json")]
    if not files:
        raise SystemExit("no asv results under %s (save some with: asv run --python=same "
                         "--set-commit-hash $(git rev-parse HEAD))" % results_dir)
    return max(files, key=os.path.getmtime)


def asv_cells(path):
    with open(path) as f:
        data = json.load(f)
    cols = data["result_columns"]
    i_res, i_par = cols.index("result"), cols.index("params")
    values = {}
    for name, row in data["results"].items():
        result = row[i_res]
        params = row[i_par] if len(row) > i_par else []
        if result is None:
            continue
        if not params:
            values[(name, None)] = result[0] if isinstance(result, list) else result
            continue
        combos = [[]]
        for plist in params:
            combos = [c + [p] for c in combos for p in plist]
        for combo, v in zip(combos, result):
            values[(name, tuple(eval(p) for p in combo))] = v   # params are stored as repr()s
    info = dict(commit=data.get("commit_hash", "?"), date=data.get("date"), params=data.get("params", {}),
                durations=data.get("durations", {}))

    def cell(key, param):
        track = common.RATIOS[key]["track"]
        if (track, None) in values:
            return values[(track, None)]
        return values.get((track, (param,)))
    return cell, info


def header(source, cpus=True):
    import aiokafka
    import kafka

    extra = ""
    if cpus and hasattr(os, "sched_getaffinity"):
        extra = "; cpus %s" % sorted(os.sched_getaffinity(0))
    print("<!-- %s; %s; Python %s; aiokafka %s (C extension: %s); kafka-python %s%s -->"
          % (source, platform.platform(), platform.python_version(), aiokafka.__version__,
             common.aiokafka_is_compiled(), kafka.__version__, extra))


def _git_describe():
    try:
        return subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe", "--always",
                               "--dirty"], capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        return "?"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, help="seconds per contender per ratio (KAFKAFMT_BENCH_BUDGET)")
    ap.add_argument("--family", default=",".join(FAMILIES), help="corpus,encode,logdir")
    ap.add_argument("--asv", nargs="?", const="", metavar="RESULTS_JSON",
                    help="print the numbers of an asv results file (default: the newest) instead of measuring")
    args = ap.parse_args(argv)
    if args.budget is not None:
        os.environ["KAFKAFMT_BENCH_BUDGET"] = str(args.budget)
    if args.asv is not None:
        path = args.asv or newest_results_file(os.path.join(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__))), "results"))
        cell, info = asv_cells(path)
        when = datetime.datetime.fromtimestamp(os.path.getmtime(path)).isoformat(" ", "minutes")
        header("asv results %s (filed under commit %s, written %s)" % (os.path.relpath(path), info["commit"][:10],
                                                                      when), cpus=False)
    else:
        cell = measure_cell
        header("measured in-process, budget %.2f s per contender, %s, kafkafmt %s"
               % (common.budget(), datetime.datetime.now().isoformat(" ", "minutes"), _git_describe()))
        if common.KAFKAFMT_ERROR:
            print("kafkafmt not importable:", common.KAFKAFMT_ERROR)
    t0 = time.perf_counter()
    for family in args.family.split(","):
        print("\n### %s\n" % FAMILIES[family])
        _table(family, cell)
    print("\n(%.0f s)" % (time.perf_counter() - t0), file=sys.stderr)


if __name__ == "__main__":
    main()
