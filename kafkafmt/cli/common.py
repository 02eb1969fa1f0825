"""What the commands share: finding Kafka data under the paths given, ranges and times on the
command line, reading one file as a segment, and problems found on the way."""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field

import numpy as np

from kafkafmt.decoder import PARTITION_DIR
from kafkafmt.logdir import SEGMENT_LOG

LEFTOVER_DIR = re.compile(r".*-(delete|future|stray)$")
LEFTOVER_SUFFIXES = (".deleted", ".cleaned", ".swap")
MAX_WALK_DEPTH = 6


class UsageError(Exception):
    """The command line asks for something impossible (exit code 2)."""


# ----------------------------------------------------------------------------------------------
# problems

@dataclass
class Problem:
    """Something wrong (severity "error") or worth knowing (severity "warning") about the data."""
    severity: str
    file: str
    message: str
    position: int | None = None
    end: int | None = None
    offset: int | None = None

    def text(self):
        where = self.file
        if self.position is not None:
            where += f" position {self.position}"
            if self.end is not None and self.end > self.position:
                where += f"..{self.end}"
        if self.offset is not None:
            where += f" (offset {self.offset})"
        return f"{self.severity}: {where}: {self.message}"

    def to_json(self):
        return {"type": "problem", "severity": self.severity, "file": self.file, "position": self.position,
                "end": self.end, "offset": self.offset, "message": self.message}


TAIL_REASONS = ("truncated final batch", "zero-filled tail")


def is_index_fallback(entry):
    """A report entry saying an index was not used (the library also warns about it)."""
    return entry.get("start") is None and str(entry.get("reason", "")).endswith("scanned instead")


def report_problem(entry, file=None):
    """A Problem from an entry of a logdir ``report`` list; None for index fallbacks (the library
    warns about those itself)."""
    reason = entry.get("reason", "")
    start, end = entry.get("start"), entry.get("end")
    if is_index_fallback(entry):
        return None
    f = file or entry.get("file") or "?"
    if reason == "zero-filled tail":
        return Problem("warning", f, f"zero-filled tail of {end - start} bytes (preallocated file)", start, end)
    if reason == "truncated final batch":
        return Problem("error", f, f"truncated final batch: {end - start} bytes after the last complete batch",
                       start, end)
    if start is not None:
        return Problem("error", f, f"{reason}; {end - start} bytes skipped", start, end, entry.get("offset"))
    return Problem("warning", f, reason)


# ----------------------------------------------------------------------------------------------
# finding the data

@dataclass
class PartitionDir:
    topic: str
    partition: int
    folder: str

    @property
    def name(self):
        return f"{self.topic}-{self.partition}"


@dataclass
class Found:
    partitions: list = field(default_factory=list)   # PartitionDir, in the order found
    files: list = field(default_factory=list)        # files given, and files beside partition folders
    given_files: list = field(default_factory=list)  # the files named on the command line
    leftovers: list = field(default_factory=list)    # Problem (warning) for -delete/-future folders


def input_paths(args, command):
    """The PATH arguments, plus the bundled sample with --sample; a usage error when empty."""
    paths = list(args.paths)
    if getattr(args, "sample", False):
        from kafkafmt.sample import sample_dir

        paths.append(sample_dir())
    if not paths:
        raise UsageError(f"{command}: give log directories, partition folders or segment files (or --sample)")
    return paths


def record_files(found):
    """The files holding records: every segment found (broker leftovers only when named
    explicitly), and KRaft snapshot files."""
    given = set(found.given_files)
    return [f for f in found.files if file_kind(f) in ("log", "kraft-snapshot") and
            (f in given or (file_kind(f) == "log" and not is_leftover(f)))]


def add_command(sub, parents, name, help, doc, paths_help="log directories, partition folders or segment files"):
    """A subcommand parser with the shared PATH arguments and the module docstring as its text."""
    import argparse

    p = sub.add_parser(name, parents=parents, help=help, description=doc.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", metavar="PATH", help=paths_help)
    return p


def partition_of_folder(folder):
    m = PARTITION_DIR.match(os.path.basename(os.path.normpath(folder)))
    if not m or LEFTOVER_DIR.match(os.path.basename(os.path.normpath(folder))):
        return None
    return PartitionDir(m.group("topic"), int(m.group("partition")), os.path.normpath(folder))


def find_inputs(paths, topics=None, partitions=None):
    """Partition folders and files under ``paths`` (files, partition folders, log dirs, or folders
    holding log dirs). Missing paths raise UsageError."""
    found = Found()
    seen = set()

    def add_partition(pd):
        key = os.path.realpath(pd.folder)
        if key in seen:
            return
        seen.add(key)
        if (topics is None or pd.topic in topics) and (partitions is None or pd.partition in partitions):
            found.partitions.append(pd)

    for p in paths:
        if not os.path.exists(p):
            raise UsageError(f"no such file or directory: {p}")
        if not os.path.isdir(p):
            if not os.access(p, os.R_OK):
                raise UsageError(f"cannot read {p}: permission denied")
            found.files.append(p)
            found.given_files.append(p)
            continue
        pd = partition_of_folder(p)
        if pd is not None:
            add_partition(pd)
            continue
        for dirpath, dirnames, filenames in _walk(p):
            parts, keep = [], []
            for d in sorted(dirnames):
                sub = os.path.join(dirpath, d)
                if LEFTOVER_DIR.match(d):
                    found.leftovers.append(Problem("warning", sub, "partition folder being deleted or moved "
                                                   "(-delete/-future/-stray), skipped"))
                    continue
                pd = partition_of_folder(sub)
                if pd is not None:
                    parts.append(pd)
                elif not d.startswith("."):
                    keep.append(d)
            for pd in sorted(parts, key=lambda x: (x.topic, x.partition)):
                add_partition(pd)
            dirnames[:] = keep
            for f in sorted(filenames):
                if not f.startswith("."):
                    found.files.append(os.path.join(dirpath, f))
    return found


def _walk(top):
    top_depth = os.path.normpath(top).count(os.sep)
    for dirpath, dirnames, filenames in os.walk(top, onerror=_walk_error):
        if os.path.normpath(dirpath).count(os.sep) - top_depth >= MAX_WALK_DEPTH:
            dirnames[:] = []
        yield dirpath, dirnames, filenames


def _walk_error(exc):
    raise exc


def file_kind(path):
    """What a file is, from its name (as Kafka decides by suffix): log, index, timeindex, txnindex,
    producer-snapshot, kraft-snapshot, leader-epoch, partition-metadata, offset-checkpoint,
    quorum-state, meta-properties; None when unknown. Broker leftovers (``.deleted``, ``.cleaned``,
    ``.swap``) are classified by the name before that suffix."""
    name = os.path.basename(path)
    for suffix in LEFTOVER_SUFFIXES:
        if name.endswith(suffix):
            name = name[:-len(suffix)]
            break
    if name.endswith(".log") or name.endswith(".log.bin"):
        return "log"
    for suffix, kind in ((".index", "index"), (".timeindex", "timeindex"), (".txnindex", "txnindex"),
                         (".snapshot", "producer-snapshot"), (".checkpoint", "kraft-snapshot")):
        if name.endswith(suffix):
            return kind
    if name == "leader-epoch-checkpoint":
        return "leader-epoch"
    if name == "partition.metadata":
        return "partition-metadata"
    if name.endswith("-checkpoint"):
        return "offset-checkpoint"
    if name == "quorum-state":
        return "quorum-state"
    if name == "meta.properties":
        return "meta-properties"
    return None


def is_leftover(path):
    return os.path.basename(path).endswith(LEFTOVER_SUFFIXES)


def segment_base(path):
    """Base offset of a ``<20 digits>.log`` file, else None."""
    m = SEGMENT_LOG.match(os.path.basename(path))
    return int(m.group("base")) if m else None


def segment_in_partition(path):
    """(PartitionDir, base offset) when ``path`` is a segment of a partition folder, else None."""
    base = segment_base(path)
    if base is None:
        return None
    pd = partition_of_folder(os.path.dirname(os.path.abspath(path)))
    return None if pd is None else (pd, base)


@contextlib.contextmanager
def single_file_partition(path):
    """A temporary partition folder whose only segment is (a link to) ``path``, with the segment's
    index files when it has them, so that the library's partition readers (chunked streaming,
    salvage, seeks) read exactly this one file. Yields (folder, link path of the segment)."""
    path = os.path.abspath(path)
    base = segment_base(path)
    stem = f"{base if base is not None else 0:020d}"
    tmp = tempfile.mkdtemp(prefix="kafkafmt-")
    try:
        folder = os.path.join(tmp, "file-0")
        os.mkdir(folder)
        link = os.path.join(folder, stem + ".log")
        _link(path, link)
        if base is not None:
            for ext in (".index", ".timeindex", ".txnindex"):
                side = os.path.join(os.path.dirname(path), stem + ext)
                if os.path.exists(side):
                    _link(side, os.path.join(folder, stem + ext))
        yield folder, link
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _link(src, dst):
    try:
        os.symlink(src, dst)
    except (OSError, NotImplementedError):
        os.link(src, dst)


# ----------------------------------------------------------------------------------------------
# ranges and times

_INT = re.compile(r"^[+-]?\d+$")


def parse_time(text):
    """Milliseconds since the epoch from ``1767225600000`` or ISO-8601 (``2026-01-01T00:00:00Z``,
    ``2026-01-01 10:30``, ``2026-01-01``; no zone means UTC)."""
    t = text.strip()
    if _INT.match(t):
        return int(t)
    iso = t[:-1] + "+00:00" if t[-1:] in ("Z", "z") else t
    try:
        d = _dt.datetime.fromisoformat(iso)
    except ValueError:
        raise UsageError(f"not a time: {text!r} (give milliseconds since the epoch or ISO-8601, "
                         f"e.g. 2026-01-01T00:00:00Z)") from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.timezone.utc)
    return (d - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)) // _dt.timedelta(milliseconds=1)


def _split_range(text, parse_one, what):
    for sep in ("..", "/"):
        if sep in text:
            a, b = text.split(sep, 1)
            return a, b
    if ":" not in text:
        parse_one(text)       # raises the reason it is not a value
        raise UsageError(f"cannot read the {what} range {text!r}")
    candidates = []
    for i, c in enumerate(text):
        if c != ":":
            continue
        a, b = text[:i], text[i + 1:]
        ok = True
        for side, other in ((a, b), (b, a)):
            if side == "":
                continue
            if _INT.match(side) and len(side.lstrip("+-")) <= 2 and other and not _INT.match(other):
                ok = False      # "...T10:30" is a time of day, not a range ending at 30 ms
                break
            try:
                parse_one(side)
            except UsageError:
                ok = False
                break
        if ok:
            candidates.append((a, b))
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise UsageError(f"cannot read the {what} range {text!r}: write START:END, START..END, START: or :END")
    raise UsageError(f"the {what} range {text!r} is ambiguous: write START..END")


def parse_offset_range(text):
    """``A:B`` (A <= offset < B), ``A:``, ``:B``, ``A..B``, or one offset ``A`` (just that one)."""
    if text is None:
        return None, None
    t = text.strip()
    if _INT.match(t):
        return int(t), int(t) + 1

    def one(s):
        if not _INT.match(s.strip()):
            raise UsageError(f"not an offset: {s!r}")
        return int(s)

    a, b = _split_range(t, one, "offset")
    lo = one(a) if a.strip() else None
    hi = one(b) if b.strip() else None
    if lo is not None and hi is not None and hi < lo:
        raise UsageError(f"offset range {text!r} ends before it starts")
    return lo, hi


def parse_time_range(text):
    """``T1:T2``, ``T1..T2``, ``T1/T2``, ``T1:`` or ``T1`` (from T1 on), ``:T2``, with times as
    parse_time reads them."""
    if text is None:
        return None, None
    t = text.strip()
    try:
        return parse_time(t), None          # one time: from then on
    except UsageError:
        pass
    a, b = _split_range(t, parse_time, "time")
    lo = parse_time(a) if a.strip() else None
    hi = parse_time(b) if b.strip() else None
    if lo is not None and hi is not None and hi < lo:
        raise UsageError(f"time range {text!r} ends before it starts")
    return lo, hi


def parse_int_list(values, what):
    """``["0,1", "4-6"]`` -> {0, 1, 4, 5, 6}."""
    if not values:
        return None
    out = set()
    for v in values:
        for part in str(v).split(","):
            part = part.strip()
            if not part:
                continue
            m = re.fullmatch(r"(\d+)-(\d+)", part)
            if m:
                out.update(range(int(m.group(1)), int(m.group(2)) + 1))
            elif part.isdigit():
                out.add(int(part))
            else:
                raise UsageError(f"not a {what}: {part!r}")
    return out


def parse_name_list(values):
    if not values:
        return None
    return {p.strip() for v in values for p in str(v).split(",") if p.strip()}


def parse_size(text):
    """``1048576``, ``64K``, ``10M``, ``1G`` (binary units) -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
    if not m:
        raise UsageError(f"not a size: {text!r} (e.g. 1048576, 64K, 10M)")
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2).upper() or " "))


# ----------------------------------------------------------------------------------------------
# formatting

def iso_ms(ms):
    """ISO-8601 UTC for a timestamp in ms; '-' for none (< 0)."""
    if ms is None or ms < 0:
        return "-"
    d = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=int(ms))
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"


def human_bytes(n):
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_text(b):
    """Bytes as text the way Kafka prints keys and values (UTF-8), with invalid bytes as \\xNN and
    non-printable characters escaped, so one record stays on one line."""
    s = b.decode("utf-8", "backslashreplace")
    if s.isprintable():
        return s
    out = []
    for ch in s:
        if ch.isprintable():
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        else:
            o = ord(ch)
            out.append(f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}")
    return "".join(out)


def bytes_encoder(mode):
    """A function bytes|None -> str|None for JSON/CSV output: base64, utf8 (invalid bytes as \\xNN)
    or hex."""
    import base64
    import binascii

    if mode == "base64":
        return lambda b: None if b is None else base64.b64encode(b).decode("ascii")
    if mode == "hex":
        return lambda b: None if b is None else binascii.hexlify(b).decode("ascii")
    if mode == "utf8":
        return lambda b: None if b is None else b.decode("utf-8", "backslashreplace")
    raise UsageError(f"unknown bytes encoding {mode!r} (base64, utf8, hex)")


def counter_text(counter, names=None):
    """{key: n} -> 'a:3,b:1' (keys mapped through names)."""
    if not counter:
        return "-"
    return ",".join(f"{names.get(k, k) if names else k}:{v}" for k, v in sorted(counter.items(), key=lambda kv: str(kv[0])))


def batch_bytes(batches):
    return int(np.asarray(batches["size"], np.int64).sum()) if len(batches) else 0
