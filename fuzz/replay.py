#!/usr/bin/env python3
"""Run inputs through a fuzz target without atheris (for sanitizer builds, valgrind, triage).

    python fuzz/replay.py TARGET PATH...     # files or folders (recursively)
    python fuzz/replay.py all                # every target on its own fuzz/corpus/<target>/

Prints each finding (input path, exception) and a summary; exits 1 if there was any finding.
``--sample N`` runs a deterministic sample of at most N inputs per target.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import kfuzz as common  # noqa: E402


def _inputs(paths):
    for p in map(pathlib.Path, paths):
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*") if q.is_file())
        elif p.is_file():
            yield p


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("target", choices=sorted(common.TARGETS) + ["all"])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    common.load(instrument=False)
    jobs = ([(t, [HERE / "corpus" / t]) for t in common.TARGETS] if args.target == "all"
            else [(args.target, args.paths or [HERE / "corpus" / args.target])])
    findings = total = 0
    for target, paths in jobs:
        fn = common.TARGETS[target]
        files = list(_inputs(paths))
        if args.sample and len(files) > args.sample:
            step = len(files) / args.sample
            files = [files[int(i * step)] for i in range(args.sample)]
        t0 = time.monotonic()
        for f in files:
            try:
                data = f.read_bytes()
            except FileNotFoundError:           # a running fuzzer reduced its corpus meanwhile
                continue
            try:
                fn(data)
            except Exception as e:  # noqa: BLE001 - every other exception is a finding
                findings += 1
                print(f"FINDING {target} {f}: {type(e).__name__}: {e}", flush=True)
                if not args.quiet:
                    traceback.print_exc()
        total += len(files)
        print(f"{target}: {len(files)} inputs in {time.monotonic() - t0:.1f}s", flush=True)
    print(f"{total} inputs, {findings} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
