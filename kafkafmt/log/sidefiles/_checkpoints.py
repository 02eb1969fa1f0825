"""The checkpoint files, read and written as Kafka reads and writes them (Java's text rules).

Checkpoint files (CheckpointFile.java, LeaderEpochCheckpointFile.java, OffsetCheckpointFile.java)
    UTF-8 text, lines ended by ``\\n`` (``BufferedWriter.newLine`` on Linux): version line (0),
    entry count line, one entry per line, fields separated by whitespace (``\\s+``).
    ``leader-epoch-checkpoint``: ``<epoch int32> <start_offset int64>``.
    ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
    ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``:
    ``<topic> <partition int32> <offset int64>``. An empty file reads as no entries; a version
    other than 0, a malformed line or a count that differs from the number of lines is an error.
"""
from __future__ import annotations

import re

import numpy as np

from kafkafmt._util.durable import write_atomic
from kafkafmt.errors import CorruptRecordError, EncodeError
from kafkafmt.log.sidefiles._common import (CHECKPOINT_VERSION, EPOCH_ENTRY_DTYPE, INT32_MAX, INT32_MIN, INT64_MAX,
                                            INT64_MIN, as_struct, check_range, load_source, source_doc)

__all__ = ["JAVA_WS", "java_lines", "java_split", "java_int", "read_leader_epoch_checkpoint",
           "leader_epoch_problems", "read_offset_checkpoint", "encode_leader_epoch_checkpoint", "write_leader_epoch_checkpoint",
           "encode_offset_checkpoint", "write_offset_checkpoint"]

JAVA_WS = "[ \t\n\x0b\f\r]+"          # java.util.regex \s (ASCII only by default)
_INT_RE = re.compile(r"[+-]?[0-9]+")


def java_lines(data, name):
    """Lines as ``BufferedReader.readLine`` gives them (ends: \\n, \\r, \\r\\n), with their byte
    positions, decoded as strict UTF-8."""
    data = bytes(data)
    if b"\r" not in data:              # (the usual file: lines ended by \n alone, split at once)
        parts = data.split(b"\n")
        if parts[-1] == b"":
            parts.pop()
        out, pos = [], 0
        try:
            for part in parts:
                out.append((part.decode("utf-8"), pos))
                pos += len(part) + 1
            return out
        except UnicodeDecodeError:
            pass                        # said below, where it is
    out, pos, n = [], 0, len(data)
    while pos < n:
        j = pos
        while j < n and data[j] not in (10, 13):
            j += 1
        try:
            out.append((data[pos:j].decode("utf-8"), pos))
        except UnicodeDecodeError as e:
            raise CorruptRecordError(f"line {len(out) + 1} is not valid UTF-8", file=name,
                                     position=pos + e.start) from None
        if j + 1 < n and data[j] == 13 and data[j + 1] == 10:
            pos = j + 2
        else:
            pos = j + 1
    return out


def java_split(line):
    """``Pattern.compile("\\\\s+").split(line)``: leading empty field kept, trailing ones dropped."""
    parts = re.split(JAVA_WS, line)
    if len(parts) > 1:
        while parts and parts[-1] == "":
            parts.pop()
    return parts


def java_int(text, lo, hi, what, name, pos):
    # at most 19 significant digits (int64) before int(): longer ones are out of range anyway, and
    # int() refuses strings of more than 4300 digits with a ValueError
    if len(text) < 19 and text.isascii() and text.isdigit():     # (the usual field: plain ASCII digits)
        value = int(text)
        if lo <= value <= hi:
            return value
    if not _INT_RE.fullmatch(text) or len(text.lstrip("+-").lstrip("0")) > 19:
        raise CorruptRecordError(f"malformed {what} {text[:40]!r}", file=name, position=pos)
    value = int(text.lstrip("+-").lstrip("0") or "0") * (-1 if text.startswith("-") else 1)
    if not lo <= value <= hi:
        raise CorruptRecordError(f"malformed {what} {text!r}", file=name, position=pos)
    return value


#: the usual checkpoint files, told at once: version 0, the count, entries of plain ASCII digits (offsets below
#: 10^18, partitions and epochs below 10^9: in range) and topic names of Kafka's legal characters, each line
#: ended by \n. Anything else is read line by line, by Java's rules (`_checkpoint_rows`).
_PLAIN_OFFSETS = re.compile(rb"0\n([0-9]{1,9})\n((?:[A-Za-z0-9._-]+ [0-9]{1,9} [0-9]{1,18}\n)*)")
_PLAIN_EPOCHS = re.compile(rb"0\n([0-9]{1,9})\n((?:[0-9]{1,9} [0-9]{1,18}\n)*)")


def _plain_fields(pattern, data, n_fields):
    """The fields of a plain checkpoint file (``pattern`` matched whole, as many entries as its count says),
    or None."""
    m = pattern.fullmatch(data)
    if m is None:
        return None
    fields = m.group(2).split()
    return fields if len(fields) == n_fields * int(m.group(1)) else None


def _checkpoint_rows(data, name, n_fields, what):
    """(version or None for an empty file, [(fields, byte position)], name) of a CheckpointFile's bytes."""
    lines = java_lines(data, name)
    if not lines:
        return None, [], name
    text, pos = lines[0]
    version = java_int(text, INT32_MIN, INT32_MAX, f"{what} version line", name, pos)
    if version != CHECKPOINT_VERSION:
        raise CorruptRecordError(f"{what} has unrecognised version {version} "
                                 f"(expected {CHECKPOINT_VERSION})", file=name, position=pos)
    if len(lines) == 1:
        return version, [], name
    text, pos = lines[1]
    count = java_int(text, 0, INT32_MAX, f"{what} entry count line", name, pos)
    entries = []
    for text, pos in lines[2:]:
        fields = java_split(text)
        if len(fields) != n_fields:
            raise CorruptRecordError(f"malformed line in {what}: {text!r}", file=name, position=pos)
        entries.append((fields, pos))
    if len(entries) != count:
        raise CorruptRecordError(f"{what} announces {count} entries but holds {len(entries)}",
                                 file=name, position=lines[1][1])
    return version, entries, name


@source_doc
def read_leader_epoch_checkpoint(src) -> dict:
    """``leader-epoch-checkpoint``: ``dict(version, entries)`` with ``entries`` a structured array
    (epoch int32, start_offset int64). An empty file gives version None and no entries (as Kafka).

    Parameters
    ----------
    %(src)s

    Returns
    -------
    dict
        ``version`` (int, None for an empty file) and ``entries`` (structured array).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.read_leader_epoch_checkpoint(f"{sample_dir()}/orders-0/leader-epoch-checkpoint")
    {'version': 0, 'entries': array([(3, 0)], dtype=[('epoch', '<i4'), ('start_offset', '<i8')])}
    """
    data, name = load_source(src)
    plain = _plain_fields(_PLAIN_EPOCHS, data, 2)
    if plain is not None:
        out = np.empty(len(plain) // 2, EPOCH_ENTRY_DTYPE)
        out["epoch"] = [int(f) for f in plain[0::2]]
        out["start_offset"] = [int(f) for f in plain[1::2]]
        return {"version": CHECKPOINT_VERSION, "entries": out}
    version, rows, name = _checkpoint_rows(data, name, 2, "leader epoch checkpoint")
    out = np.empty(len(rows), EPOCH_ENTRY_DTYPE)
    for i, ((epoch, start), pos) in enumerate(rows):
        out[i] = (java_int(epoch, INT32_MIN, INT32_MAX, "leader epoch", name, pos),
                  java_int(start, INT64_MIN, INT64_MAX, "start offset", name, pos))
    return {"version": version, "entries": out}


def leader_epoch_problems(entries) -> list:
    """What is wrong with a leader-epoch history (``read_leader_epoch_checkpoint``'s entries), as
    ``LeaderEpochFileCache`` needs it: epochs increasing, start offsets not decreasing. Returns
    ``[(entry index, message), ...]``, empty when it is sound."""
    ep, so = entries["epoch"], entries["start_offset"]
    if len(ep) < 2:
        return []
    out = [(i + 1, f"epoch {int(ep[i + 1])} (entry {i + 1}) is not above the previous epoch {int(ep[i])}")
           for i in np.flatnonzero(np.diff(ep) <= 0).tolist()]
    out += [(i + 1, f"start offset {int(so[i + 1])} of epoch {int(ep[i + 1])} is below the previous start offset "
                    f"{int(so[i])}") for i in np.flatnonzero(np.diff(so) < 0).tolist()]
    return out


def read_offset_checkpoint(src) -> dict:
    """``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
    ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``:
    ``{(topic, partition): offset}`` in file order."""
    data, name = load_source(src)
    plain = _plain_fields(_PLAIN_OFFSETS, data, 3)
    if plain is not None:
        return dict(zip(zip([t.decode("ascii") for t in plain[0::3]], map(int, plain[1::3])), map(int, plain[2::3])))
    _, rows, name = _checkpoint_rows(data, name, 3, "offset checkpoint")
    out = {}
    for (topic, partition, offset), pos in rows:
        out[(topic, java_int(partition, INT32_MIN, INT32_MAX, "partition", name, pos))] = \
            java_int(offset, INT64_MIN, INT64_MAX, "offset", name, pos)
    return out


def encode_leader_epoch_checkpoint(entries) -> bytes:
    arr = as_struct(entries, EPOCH_ENTRY_DTYPE, "leader epoch checkpoint")
    lines = [str(CHECKPOINT_VERSION), str(len(arr))]
    lines += [f"{int(e)} {int(o)}" for e, o in zip(arr["epoch"], arr["start_offset"])]
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_leader_epoch_checkpoint(path, entries) -> None:
    """Write a ``leader-epoch-checkpoint`` from ``[(epoch, start_offset), ...]``."""
    write_atomic(path, encode_leader_epoch_checkpoint(entries))


def encode_offset_checkpoint(offsets: dict) -> bytes:
    lines = [str(CHECKPOINT_VERSION), str(len(offsets))]
    for (topic, partition), offset in offsets.items():
        if not topic or re.search(JAVA_WS, topic):
            raise EncodeError(f"topic name {topic!r} cannot be written in a checkpoint file")
        check_range([partition], INT32_MIN, INT32_MAX, "partition")
        check_range([offset], INT64_MIN, INT64_MAX, "offset")
        lines.append(f"{topic} {int(partition)} {int(offset)}")
    return ("\n".join(lines) + "\n").encode("utf-8")


def write_offset_checkpoint(path, offsets: dict) -> None:
    """Write an offset checkpoint file from ``{(topic, partition): offset}``."""
    write_atomic(path, encode_offset_checkpoint(offsets))
