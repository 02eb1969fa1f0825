"""Peak memory and time of a long `kafkafmt.LogWriter` run: many appends, many segment rolls.

    cd asv_bench && python logwriter_memory.py [--records 5000000] [--per-append 10000]
        [--segment-bytes 1048576] [--value-bytes 40] [--compression lz4] [--runs 2] [--tree DIR ...]

Each run is a fresh process that appends ``--records`` records (``--per-append`` at a time, values of
``--value-bytes`` bytes, ``--compression``) to a new partition folder rolled at ``--segment-bytes``, then closes it;
it prints the time of the appends, the time of ``close()``, the resident memory before ``close()``
(VmRSS) and the peak (VmHWM). With several ``--tree`` (folders holding a ``kafkafmt`` package, put
first on ``PYTHONPATH``) the runs alternate between them, so both see the same machine load. Not an
asv benchmark: one run writes hundreds of MB.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, os, sys, time
import kafkafmt

n, per, seg, size, folder = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
codec = None if sys.argv[6] == "none" else sys.argv[6]
values = [os.urandom(size // 2).hex().encode()[:size] for _ in range(per)]
t0 = time.perf_counter()
w = kafkafmt.LogWriter(folder, segment_bytes=seg)
ts = 1767225600000
for start in range(0, n, per):
    k = min(per, n - start)
    w.append(values=values[:k], timestamps=[ts + start] * k, compression=codec)
t1 = time.perf_counter()
with open("/proc/self/status") as f:
    rss = int([line.split()[1] for line in f if line.startswith("VmRSS:")][0])
w.close()
t2 = time.perf_counter()
with open("/proc/self/status") as f:
    peak = int([line.split()[1] for line in f if line.startswith("VmHWM:")][0])
print(json.dumps({"append_s": t1 - t0, "close_s": t2 - t1, "rss_before_close_kib": rss, "peak_kib": peak,
                  "segments": len([x for x in os.listdir(folder) if x.endswith(".log")])}))
"""


def run(tree, args):
    tmp = tempfile.mkdtemp(prefix="logwriter-bench-")
    try:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
        out = subprocess.run([sys.executable, "-c", _CHILD, str(args.records), str(args.per_append),
                              str(args.segment_bytes), str(args.value_bytes), os.path.join(tmp, "bench-0"),
                              args.compression],
                             env=env, check=True, capture_output=True, text=True).stdout
        return json.loads(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=5_000_000)
    p.add_argument("--per-append", type=int, default=10_000)
    p.add_argument("--segment-bytes", type=int, default=1 << 20)
    p.add_argument("--value-bytes", type=int, default=40)
    p.add_argument("--compression", default="lz4", help="a codec name, or none")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--tree", action="append", help="a folder holding the kafkafmt package (repeatable)")
    args = p.parse_args(argv)
    trees = args.tree or [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    for r in range(args.runs):
        for tree in trees:
            m = run(tree, args)
            print(f"run {r} {tree}: appends {m['append_s']:.2f} s, close() {m['close_s']:.3f} s, "
                  f"RSS before close {m['rss_before_close_kib'] / 1024:.0f} MiB, peak {m['peak_kib'] / 1024:.0f} MiB, "
                  f"{m['segments']} segments", flush=True)


if __name__ == "__main__":
    main()
