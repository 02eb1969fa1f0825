"""``kafkafmt recover``: repair a log dir offline, as the broker would at start-up, losing less.

A dry run by default: each action is printed with the file, the byte positions and why (in
``verify``'s words). ``--apply`` carries the plan out: every byte removed and every file replaced
is first saved in a backup folder (``--backup``; default ``<log dir>.recover-<time>`` beside the log
dir) and listed in its ``manifest.jsonl``; ``kafkafmt recover --undo MANIFEST`` puts everything back.

What it does (the rules of Kafka's LogLoader / LogSegment.recover): truncates torn and
zero-filled tails; removes damaged stretches in the middle of a segment, keeping the intact batches
after them (``--kafka-compatible``: truncate at the first damage and delete the later segments, as
the broker does); rebuilds missing, wrong or stale ``.index`` / ``.timeindex`` / ``.txnindex`` files
and the producer ``.snapshot`` at the log end; finishes the broker's ``.swap`` / ``.cleaned`` /
``.deleted`` / ``-delete`` leftovers; updates ``recovery-point-offset-checkpoint`` and
``log-start-offset-checkpoint``; rebuilds a ``.timeindex`` left with a zero-filled tail and an
unreadable ``leader-epoch-checkpoint`` (from the batches' leader epochs); renames a segment whose file
name is above its first batch's base offset; removes a stray copy of part of a segment (overlapping
offsets, byte for byte the same). A log dir whose ``.lock`` is held (a running broker, a LogWriter), or
a partition a LogWriter is writing to, is refused unless ``--force``. Local paths only.

The plan prints the damage first, with the offsets of the records each removal loses, then what is
refused (a misnamed segment whose true name is taken; segments that overlap with other bytes; a
transaction the damage would leave open while later batches are kept, until ``--open-transactions``
chooses), then the routine fixes counted by kind.
``--apply`` checks every file against the plan before changing anything; one that fails part way says
what it had changed and the undo command. ``--undo`` checks every file of the manifest, and the
partition folders for anything newer (a broker that ran since), before it changes anything.

Exit codes: 0 nothing to do, or everything done; 1 a dry run found work to do, or the repair or undo
was refused or failed; 2 bad usage or input (a path that does not exist, is not a log dir, a partition
folder or a segment, or is on object storage; a manifest that does not exist or is not one).
"""
from __future__ import annotations

import os

from kafkafmt.cli.common import UsageError, add_command
from kafkafmt.recovery.plan import OPEN_TRANSACTIONS

DEFAULT_INDEX_INTERVAL = 4096


def _positive(text):
    import argparse

    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be a number of bytes >= 0, not {text!r}")
    return n


def as_given(paths):
    """A function that writes the paths in a text (or a path) as the command line gave them, as every other
    command prints them: the repair works with absolute paths, and a path under one given (``kafka-logs``) is
    printed under it (``kafka-logs/orders-0/...``), not as ``/home/.../kafka-logs/orders-0/...``; when every
    path given is relative, so is what lies in the current folder (the backup beside ``kafka-logs``). None
    stays None."""
    import re

    roots = sorted(((os.path.abspath(p), os.fspath(p)) for p in paths), key=lambda r: -len(r[0]))
    roots = [(re.compile(re.escape(a) + r"(?=/|[^\w.\-]|$)"), g.rstrip(os.sep) or os.sep) for a, g in roots
             if a != os.path.normpath(g)]
    if paths and not any(os.path.isabs(p) for p in paths):
        roots.append((re.compile(re.escape(os.path.join(os.getcwd(), ""))), ""))

    def given(text):
        if text is None:
            return None
        for pattern, g in roots:
            text = pattern.sub(lambda _: g, text)
        return text

    return given


def add_parser(sub, parents, command):
    p = add_command(sub, parents, command,
                    __doc__, "log directories, partition folders or segment .log files (local)")
    p.add_argument("--apply", action="store_true", help="do it (default: only print what would be done)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--keep-intact-batches", dest="kafka_compatible", action="store_false", default=False,
                      help="remove only damaged bytes, keep every intact batch after them (default)")
    mode.add_argument("--kafka-compatible", dest="kafka_compatible", action="store_true",
                      help="truncate each segment at its first damage and delete the later segments, as Kafka")
    p.add_argument("--backup", metavar="DIR", help="backup folder (default: <log dir>.recover-<time> beside it)")
    p.add_argument("--undo", metavar="MANIFEST", help="revert a recovery from its manifest.jsonl")
    p.add_argument("--force", action="store_true", help="go on even if a running broker holds the log dir's .lock")
    p.add_argument("--index-interval-bytes", type=_positive, default=DEFAULT_INDEX_INTERVAL, metavar="N",
                   help="index.interval.bytes of the topics (default 4096)")
    p.add_argument("--timeindex-offsets", choices=("batch", "record"), default="batch",
                   help="time index entries hold the batch's last offset (Kafka >= 3.8 and every recovery; "
                        "default) or the record's offset (leaders before KAFKA-16310)")
    p.add_argument("--open-transactions", choices=OPEN_TRANSACTIONS, default=None,
                   help="when the damage removes a transaction's end marker while later batches are kept (else "
                        "refused, with what read_committed readers would lose): truncate at the damage as Kafka "
                        "does, or write an ABORT marker, or the COMMIT the damaged bytes still show, at the log end")
    p.add_argument("--json", action="store_true", help="JSON lines: one per action, then a summary")
    return p


def run(args, console):
    from kafkafmt.errors import NotALogDirError, PathNotFoundError, RecoveryError
    from kafkafmt.recovery import recover, undo
    from kafkafmt.recovery.apply import read_manifest

    if args.undo:
        if args.paths or args.apply:
            raise UsageError("recover --undo MANIFEST takes no PATH and no --apply")
        if not os.path.isfile(args.undo):
            raise UsageError(f"no such manifest: {args.undo}")
        try:
            read_manifest(args.undo)
        except RecoveryError as exc:          # not a manifest: bad input
            raise UsageError(f"{args.undo}: {exc.reason}") from None
        restored = undo(args.undo, force=args.force)
        for path in restored:
            if args.json:
                console.json({"type": "restored", "file": path})
            else:
                console.write(f"restored: {path}")
        if args.json:
            console.json({"type": "summary", "status": "UNDONE", "restored": len(restored)})
        else:
            console.write(f"UNDONE: {len(restored)} files restored from {args.undo}")
        return 0
    paths = list(args.paths)
    if getattr(args, "sample", False):
        raise UsageError("recover does not repair the bundled sample")
    if not paths:
        raise UsageError("recover: give log directories, partition folders or segment files")
    try:
        plan = recover(paths, apply=args.apply, kafka_compatible=args.kafka_compatible, backup=args.backup,
                       force=args.force, index_interval_bytes=args.index_interval_bytes,
                       timeindex_offsets=args.timeindex_offsets, open_transactions=args.open_transactions)
    except (PathNotFoundError, NotALogDirError) as exc:        # not something recover takes: bad input
        raise UsageError(exc.reason) from None
    given = as_given(paths)
    if args.json:
        for a in plan.actions:
            console.json({"type": "action", "action": a.kind.value, "file": given(a.file), "target": given(a.target),
                          "start": a.start, "end": a.end, "offset": a.offset, "bytes_removed": a.bytes_removed,
                          "removed": [list(r) for r in a.removed], "damage": a.damage,
                          "lost": [list(r) for r in a.lost], "held_by": [given(f) for f in a.held_by],
                          "message": a.message})
        for t in plan.transactions:
            console.json({"type": "transaction", **t})
        for r in plan.refusals:
            console.json({"type": "refused", "message": r})
        console.json({"type": "summary", "status": "APPLIED" if plan.applied else "REFUSED" if plan.refusals
                      else "DRY RUN", "partitions": plan.partitions, "segments": plan.segments, "bytes": plan.bytes,
                      "actions": len(plan.actions), "bytes_removed": plan.bytes_removed,
                      "offsets_lost": plan.offsets_lost, "offsets_held_elsewhere": plan.offsets_held_elsewhere,
                      "manifests": [given(m) for m in plan.manifests]})
    else:
        console.write(given(plan.text()))
        for m in map(given, plan.manifests):
            console.write(f"manifest: {m} (undo: kafkafmt recover --undo {m})")
    return 0 if plan.applied or plan.clean else 1
