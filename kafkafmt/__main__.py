"""`python -m kafkafmt FILE|DIR... | --sample`: decode segment files and print a one-line summary each."""
from __future__ import annotations

import argparse
import glob
import os
import sys

import numpy as np

from kafkafmt.decoder import read_segment
from kafkafmt.errors import KafkafmtError
from kafkafmt.records import CODEC_NAMES


def summary(path, verify_crc=True):
    recs = read_segment(path, verify_crc=verify_crc)
    b = recs.batches
    codecs = ",".join(sorted({CODEC_NAMES.get(int(c), str(c)) for c in np.unique(b.codec)})) or "-"
    magics = ",".join(str(m) for m in np.unique(b.magic)) or "-"
    span = f"{recs.offset.min()}..{recs.offset.max()}" if len(recs) else "-"
    tail = f" tail={recs.tail}({recs.trailing_bytes}B)" if recs.tail else ""
    return (f"{path}: records={len(recs)} batches={len(b)} controls={len(recs.controls)} offsets={span} "
            f"magic={magics} codec={codecs}{tail}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="kafkafmt", description=__doc__)
    parser.add_argument("files", nargs="*", help="segment files (.log), record-set dumps, or log directories")
    parser.add_argument("--sample", action="store_true", help="run on the bundled sample log directory")
    parser.add_argument("--no-crc", action="store_true", help="do not verify CRCs")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    args = parser.parse_args(argv)
    paths = list(args.files)
    if args.sample:
        from kafkafmt.sample import sample_dir

        paths.append(sample_dir())
    if not paths:
        parser.error("give files or directories, or --sample")
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(glob.glob(os.path.join(p, "**", "*.log"), recursive=True))
        else:
            files.append(p)
    status = 0
    for path in files:
        try:
            print(summary(path, verify_crc=not args.no_crc))
        except (KafkafmtError, OSError) as exc:
            if args.debug:
                raise
            print(f"kafkafmt: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
