"""Planning a recovery: what to change in a log dir, and why -- nothing is written here.

The plan follows what a broker does at start-up after an unclean shutdown, rule by rule (the Kafka
file and method are named where each rule is applied):

1. Leftovers of the broker's own work, per partition folder (``LogLoader.load`` and
   ``LogLoader.removeTempFilesAndCollectSwapFiles``, storage/.../log/LogLoader.java): ``.deleted``
   files are removed (KRaft ``.checkpoint.deleted`` excepted); ``.cleaned`` files are removed, and
   with them every ``.swap`` file whose base offset is at or above the smallest ``.cleaned`` one (an
   interrupted split, KAFKA-6264); the remaining ``.swap`` files are finished: every other file whose
   name's offset lies in [smallest swap base offset, largest swap ``readNextOffset``) is removed
   (segments already compacted into the swap) and each ``.swap`` is renamed to its name without
   the suffix. Index files without a ``.log`` are removed (``LogLoader.loadSegmentFiles``).
   ``<topic>-<partition>.<id>-delete`` folders are removed (``LogManager.loadLog`` ->
   ``addLogToBeDeleted``); ``-future`` and ``-stray`` folders are kept (loaded as future / stray
   logs) and repaired like partitions.
2. Each segment's data (``LogSegment.recover``): the first batch that fails its checks ends the
   segment in Kafka (``batch.ensureValid()`` in the loop; ``log.truncateTo(validBytes)``), and
   every later segment of the partition is deleted (``LogLoader.recoverLog``: "Corruption found
   in segment ..., truncating"). With ``kafka_compatible=True`` that is what the plan does. By
   default (keep intact batches) only the damaged byte ranges are removed: a torn or zero-filled
   tail is truncated, a damaged stretch in the middle is cut out and the intact batches after it
   are kept (offsets then have a gap, as in a compacted log). A segment named above its first
   batch's base offset is renamed to it (every batch kept, as ``LocalLog.splitOverflowedSegment``
   names the segments it splits off). Segments holding the same offsets (a stray copy of part of a
   segment) are resolved where the bytes are the same -- the copy removed, or the earlier segment's
   tail truncated where the later one begins -- and refused where they differ.
3. Index files are rewritten when missing, unreadable, failing the checks ``kafkafmt verify`` makes
   (``OffsetIndex``/``TimeIndex`` sanity checks, every entry against the batch it names), or --
   time index -- when the last entry is not the segment's largest timestamp (``LogSegment.recover``
   and ``onBecomeInactiveSegment`` end every recovered or rolled segment with that entry; retention
   reads it). A valid index is left as the broker wrote it. The ``.txnindex`` is rewritten when its
   aborted transactions differ from the ABORT markers (``LogSegment.updateTxnIndex``).
4. Producer state (``ProducerStateManager``): unreadable snapshots are removed (``loadFromSnapshot``
   deletes a corrupt one), as are snapshots past the new log end offset (``truncateAndReload``)
   and, when a damaged stretch is cut out, those after it (they counted batches that are gone); a
   snapshot at the log end offset is written when none is left there (``takeSnapshot``, as at the
   end of recovery and at a clean shutdown).
5. Checkpoints: the partition's ``leader-epoch-checkpoint`` loses the epochs starting at or past the
   log end offset (``LeaderEpochFileCache.truncateFromEnd``), or -- unreadable, epochs not increasing
   -- is rebuilt from the batches' leader epochs (``LogSegment.recover`` -> ``LeaderEpochFileCache.
   assign``: an epoch starts at the first batch above the latest one); in the log dir,
   ``recovery-point-offset-checkpoint`` entries are set to the log end offset (every segment was
   checked and is flushed before the file is written, so the broker need not recover it again:
   KAFKA-5829; partitions without an entry are not added), and
   a ``log-start-offset-checkpoint`` entry past the log end offset is lowered to it (else
   ``LogLoader.deleteSegmentsIfLogStartGreaterThanLogEnd`` would delete every segment).
"""
from __future__ import annotations

import enum
import functools
import os
from dataclasses import dataclass, field, replace

import numpy as np

from kafkafmt.log import sidefiles
from kafkafmt.errors import EncodeError, KafkafmtError, NotALogDirError, PathNotFoundError
from kafkafmt.recovery.indexes import (ProducerState, index_entries, leader_epochs, record_time_offsets,
                                       scan_segment, segment_span)
from kafkafmt.log import find_log_dirs, folder_kind
from kafkafmt.log import PARTITION_DIR, is_leftover_dir, segment_base, segment_file_name
from kafkafmt.log import Note, ReportEntry, ReportKind, place_text
from kafkafmt.log import DEFAULT_INDEX_INTERVAL

__all__ = ["ActionKind", "RecoveryAction", "RecoveryPlan", "plan_recovery", "TEMP_SUFFIX", "OPEN_TRANSACTIONS"]

#: name suffix of the temporary files a recovery writes before renaming them into place
TEMP_SUFFIX = ".kafkafmt-tmp"
_RECOVERY_POINT = "recovery-point-offset-checkpoint"
_LOG_START = "log-start-offset-checkpoint"
_EPOCHS = "leader-epoch-checkpoint"
_INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
_INT32_MAX = 2**31 - 1
_SNAPSHOT_DELETED = ".checkpoint.deleted"        # KRaft snapshots: handled by KafkaMetadataLog, not here


class ActionKind(enum.Enum):
    """The kinds of `RecoveryAction`: TRUNCATE, CUT, WRITE, DELETE, RENAME, APPEND."""

    TRUNCATE = "truncate"      # cut a file's tail at ``start`` (bytes start..end removed)
    CUT = "cut"                # rewrite a log without its damaged ranges (``removed``), keeping the rest
    WRITE = "write"            # create or replace a file with new contents (indexes, snapshot, checkpoints)
    DELETE = "delete"          # remove a file or folder (moved into the backup)
    RENAME = "rename"          # rename ``file`` to ``target`` (a .swap file finished)
    APPEND = "append"          # add ``data`` at the end of a log (an end-transaction marker, when chosen)


@dataclass(frozen=True)
class RecoveryAction(Note):
    """One change a recovery makes. Reads also as a mapping, like `ReportEntry`.

    Parameters
    ----------
    kind : ActionKind
        TRUNCATE (cut a file's tail at ``start``), CUT (rewrite a log without its damaged ranges,
        keeping the rest), WRITE (create or replace a file: indexes, snapshot, checkpoints), DELETE
        (remove a file or folder, moved into the backup) or RENAME (a .swap file finished).
    file : str
        The path changed.
    message : str
        Why, in ``verify``'s words.
    start, end : int, optional
        The byte range removed (TRUNCATE, first range of a CUT).
    offset : int, optional
        The first offset concerned when known.
    target : str, optional
        RENAME: the new name.
    removed : tuple
        CUT: ``((start, end, reason), ...)``.
    data : bytes, optional
        WRITE: the new contents.
    log_dir : str, optional
        The log dir it belongs to (lock, backup).
    lost : tuple
        The offsets of the records it removes: ``((first, last), ...)``, ``last`` None when the
        damaged bytes do not say where they end.
    duplicate_of : str, optional
        An overlapping segment resolved (DELETE, TRUNCATE): the segment that still holds every
        byte removed (nothing is lost).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import damaged_copy
    >>> folder = damaged_copy("damaged/payments-0")     # its second batch damaged
    >>> cut = kafkafmt.recover(folder).actions[0]
    >>> cut.kind, cut.start, cut.end, cut.offset, cut.bytes_removed
    (<ActionKind.CUT: 'cut'>, 352, 669, 20, 317)
    >>> cut["removed"]
    ((352, 669, "CRC mismatch: the stored checksum does not match the batch's bytes; 317 bytes"),)
    """
    target: object = None                                   # RENAME: the new name
    removed: tuple = ()                                      # CUT: ((start, end, reason), ...)
    data: object = field(default=None, repr=False)          # WRITE: the new contents
    log_dir: object = field(default=None, repr=False)       # the log dir it belongs to (lock, backup)
    lost: tuple = ()                                         # ((first, last or None), ...) offsets removed
    duplicate_of: object = None                              # the segment still holding what is removed

    @property
    def damage(self):
        """True for the actions that remove records or fix how a log is named (TRUNCATE, CUT, a
        segment deleted or renamed, a marker appended); False for the routine ones (indexes,
        snapshots, checkpoints, the broker's leftovers)."""
        if self.kind in (ActionKind.TRUNCATE, ActionKind.CUT, ActionKind.APPEND):
            return True
        if self.kind is ActionKind.RENAME:
            return not self.file.endswith(".swap")
        return self.kind is ActionKind.DELETE and (bool(self.lost) or self.duplicate_of is not None)

    @property
    def offsets_lost(self):
        """How many offsets the records removed held (those whose end is known), or None when none
        is known."""
        known = [b - a + 1 for a, b in self.lost if b is not None]
        return sum(known) if known else (None if self.lost else 0)

    def lost_text(self):
        """The offsets removed, in words ("" when none)."""
        if not self.lost:
            return ""
        parts = [f"offsets {a}..{b}" if b is not None and b > a else f"offset {a}" if b == a else
                 f"offsets from {a} on (how many: unreadable)" for a, b in self.lost]
        n = self.offsets_lost
        return "records lost: " + ", ".join(parts) + (f" ({n} offsets)" if n else "")

    @property
    def bytes_removed(self):
        """Bytes this action removes from a log (TRUNCATE, CUT; 0 for the other kinds)."""
        if self.kind is ActionKind.TRUNCATE:
            return int(self.end) - int(self.start)
        if self.kind is ActionKind.CUT:
            return sum(int(e) - int(s) for s, e, _ in self.removed)
        return 0

    def text(self):
        """The action as one line of ``kafkafmt recover``'s output.

        Returns
        -------
        str
            ``kind: file position start..end (offset N): message``.

        Examples
        --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import damaged_copy
    >>> folder = damaged_copy("damaged/payments-0")     # its second batch damaged
    >>> print(kafkafmt.recover(folder).actions[0].text())
    cut: .../damaged/payments-0/00000000000000000000.log position 352..669 (offset 20): 1 damaged range(s)
    removed, 2 intact batches kept (Kafka would truncate at position 352): CRC mismatch: the stored
    checksum does not match the batch's bytes; 317 bytes
        """
        where = self.file + (f" -> {os.path.basename(self.target)}" if self.kind is ActionKind.RENAME else "")
        return f"{self.kind.value}: {place_text(where, self.start, self.end, self.offset)}: {self.message}"


@dataclass
class RecoveryPlan:
    """What a recovery does (``actions``, in order) and what it found (``problems``). `recover`
    returns it.

    Parameters
    ----------
    roots : list
        The paths given, resolved.
    actions : list of RecoveryAction
        What the recovery does, in order.
    problems : list of ReportEntry
        The damage, as `ReportEntry` of kinds CORRUPT/TRUNCATED/ZEROS/LEFTOVER.
    partitions, segments, bytes : int
        How much was looked at.
    kafka_compatible : bool
        Planned as Kafka's own recovery (truncate at the first damage).
    applied : bool
        The actions have been carried out.
    refusals : list of str
        Why the plan cannot be carried out as it is (a segment named against its content whose
        true name is taken; a transaction the damage leaves open, until a choice is made): `recover`
        refuses to apply such a plan before changing anything.
    transactions : list of dict
        Each transaction the damage leaves open while later batches are kept: ``folder``,
        ``producer_id``, ``first_offset`` (where it opened), ``damage_offset``, ``hidden`` (records
        ``read_committed`` readers would no longer see), ``shown`` (the marker type the damaged
        bytes still show, "commit"/"abort", or None), ``choice`` (what the plan does:
        None -- refused --, "truncate", "abort" or "commit") and ``text``.
    manifests : list of str
        After ``apply``, the manifest written for each log dir (``recover --undo MANIFEST``
        reverts it).

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import damaged_copy
    >>> folder = damaged_copy("damaged/payments-0")     # its second batch damaged
    >>> plan = kafkafmt.recover(folder)
    >>> [a.kind.value for a in plan.actions], plan.bytes_removed
    (['cut', 'write', 'write'], 317)
    >>> plan.problems[0].kind, plan.problems[0].offset
    (<ReportKind.CORRUPT: 'corrupt'>, 20)
    """
    roots: list
    actions: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    partitions: int = 0
    segments: int = 0
    bytes: int = 0
    kafka_compatible: bool = False
    applied: bool = False
    manifests: list = field(default_factory=list)
    refusals: list = field(default_factory=list)
    transactions: list = field(default_factory=list)

    def __repr__(self):     # a summary: str(plan) lists the actions
        kinds = {}
        for a in self.actions:
            kinds[a.kind.value] = kinds.get(a.kind.value, 0) + 1
        what = ", ".join(f"{k} {n}" for k, n in kinds.items())
        return (f"<RecoveryPlan{' (applied)' if self.applied else ''}: {len(self.actions)} actions"
                f"{f' ({what})' if what else ''}, {len(self.problems)} problems, {self.partitions} partitions, "
                f"{self.segments} segments, {self.bytes} bytes looked at>")

    @property
    def clean(self):
        """Nothing to do (and nothing refused)."""
        return not self.actions and not self.refusals

    @property
    def bytes_removed(self):
        """Bytes the actions remove from logs, in all."""
        return sum(a.bytes_removed for a in self.actions)

    def log_dirs(self):
        """The log dirs the actions touch, in order."""
        out = []
        for a in self.actions:
            if a.log_dir not in out:
                out.append(a.log_dir)
        return out

    def text(self):
        """The plan as ``kafkafmt recover`` prints it: one line per action, then a summary.

        Returns
        -------
        str

        Examples
        --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import damaged_copy
    >>> folder = damaged_copy("damaged/payments-0")     # its second batch damaged
    >>> print(kafkafmt.recover(folder).text())
    damage (records removed, logs changed):
      cut: .../damaged/payments-0/00000000000000000000.log position 352..669 (offset 20): ...
        records lost: offsets 20..34 (15 offsets)
    routine fixes (no record removed):
      .index rebuilt: 1 file(s)
        write: .../damaged/payments-0/00000000000000000000.index: index entry 0 (offset 44, position 669):
        no batch starts at position 669: rebuilt from the log (0 entries; LogSegment.recover)
      producer snapshot written: 1 file(s)
        write: .../damaged/payments-0/00000000000000000122.snapshot: no producer snapshot at the log end
        offset 122: written from the 2 producers' state (ProducerStateManager.takeSnapshot)
    DRY RUN: 1 partitions, 3 segments (3075 bytes): 3 actions would do, 317 bytes removed from logs, 15
    offsets lost (give --apply to do them)
        """
        lines = []
        damage = [a for a in self.actions if a.damage]
        if damage:
            lines.append("damage (records removed, logs changed):")
            for a in damage:
                lines.append("  " + a.text())
                if a.lost:
                    lines.append("    " + a.lost_text())
        if self.transactions:
            lines.append("transactions:")
            for t in self.transactions:
                lines.append("  " + t["text"] + (f"; chosen: {t['choice']}" if t["choice"] else ""))
        if self.refusals:
            lines.append("refused (nothing is changed until this is settled):")
            lines += ["  " + r for r in self.refusals]
        groups = {}
        for a in self.actions:
            if not a.damage:
                groups.setdefault(_routine_label(a), []).append(a)
        if groups:
            lines.append("routine fixes (no record removed):")
            for label, acts in groups.items():
                lines.append(f"  {label}: {len(acts)} file(s)")
                for a in acts[:3]:
                    lines.append("    " + a.text())
                if len(acts) > 3:
                    lines.append(f"    and {len(acts) - 3} more (--json lists every action)")
        lines.append(self.summary())
        return "\n".join(lines)

    def counts(self):
        """How many actions of each kind the plan holds, in `text`'s words: ``{label: count}`` (the
        routine fixes by the group `text` lists them under; the others by what they do to a log).

        Returns
        -------
        dict

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> kafkafmt.recover(f"{sample_dir()}/orders-1").counts()
        {'producer snapshot written': 1}
        """
        out = {}
        for a in self.actions:
            label = _DAMAGE_LABELS[a.kind] if a.damage else _routine_label(a)
            out[label] = out.get(label, 0) + 1
        return out

    @property
    def offsets_lost(self):
        """Offsets of the records the actions remove, where known (see `RecoveryAction.lost`)."""
        return sum(a.offsets_lost or 0 for a in self.actions)

    def summary(self):
        """The last line of `text`: what was looked at, what is (or would be) done and lost.

        Returns
        -------
        str

        Examples
        --------
        >>> import kafkafmt
        >>> from kafkafmt.sample import sample_dir
        >>> print(kafkafmt.recover(f"{sample_dir()}/orders-1").summary())
        DRY RUN: 1 partitions, 4 segments (...): 1 actions would do, 0 bytes removed from logs, 0 offsets lost
        (give --apply to do them)
        """
        verb = "did" if self.applied else "would do"
        unknown = any(b is None for a in self.actions for _, b in a.lost)
        return (f"{'APPLIED' if self.applied else 'REFUSED' if self.refusals else 'DRY RUN'}: {self.partitions} "
                f"partitions, {self.segments} segments ({self.bytes} bytes): {len(self.actions)} actions {verb}, "
                f"{self.bytes_removed} bytes removed from logs, {self.offsets_lost} offsets lost"
                + (" (and more whose count the damaged bytes do not say)" if unknown else "")
                + ("" if self.applied or not self.actions or self.refusals else " (give --apply to do them)"))

    __str__ = text


# ----------------------------------------------------------------------------------------------
# where things are

@dataclass
class _Root:
    """A path given: a log dir (its partition folders), a partition folder, or one segment."""
    log_dir: object            # the log dir (checkpoints, lock, backup), or None when there is none
    partitions: list           # partition folders to repair
    delete_dirs: list          # -delete folders to remove
    only_log: object = None    # a single segment's .log given


def _is_log_dir(path):
    try:
        names = os.listdir(path)
    except OSError:
        return False
    if "meta.properties" in names or _RECOVERY_POINT in names or _LOG_START in names:
        return True
    try:
        return folder_kind(path) == "log_dir"
    except KafkafmtError:
        return False


def _partition_dirs(log_dir):
    """(partition folders incl. -future/-stray ones, -delete folders) of a log dir."""
    parts, deletes = [], []
    for name in sorted(os.listdir(log_dir)):
        full = os.path.join(log_dir, name)
        if not os.path.isdir(full) or name.startswith("."):
            continue
        if is_leftover_dir(name):
            (deletes if name.endswith("-delete") else parts).append(full)
        elif PARTITION_DIR.match(name):
            parts.append(full)
    return parts, deletes


def _resolve(path, log_dirs=None):
    text = os.fspath(path)
    if "://" in text:
        raise NotALogDirError(f"{text}: recover repairs local log dirs only, not object storage (copy the data to a "
                              f"local disk, recover it there, and upload the result)", file=text)
    path = os.path.abspath(text)
    if not os.path.exists(path):
        raise PathNotFoundError(f"no such file or directory: {path}", file=path)
    if os.path.isfile(path):
        if segment_base(path) is None:
            raise NotALogDirError(f"{path}: not a log dir, a partition folder or a <base offset>.log segment",
                                  file=path)
        folder = os.path.dirname(path)
        parent = os.path.dirname(folder)
        return [_Root(parent if _is_log_dir(parent) else None, [folder], [], only_log=path)]
    if PARTITION_DIR.match(os.path.basename(path)) or is_leftover_dir(path):
        names = os.listdir(path)
        if not any(os.path.isdir(os.path.join(path, n)) and PARTITION_DIR.match(n) for n in names):
            parent = os.path.dirname(path)
            return [_Root(parent if _is_log_dir(parent) else None, [path], [])]
    if not _is_log_dir(path):
        # a folder holding log dirs (kafka-logs-1, -2, ...): those found below it already, else a walk
        found = sorted(d for d in log_dirs or () if os.path.abspath(d).startswith(path + os.sep)) or find_log_dirs(path)
        if not found:
            raise NotALogDirError(f"not a log dir or partition folder: {path}", file=path)
        return [r for d in found for r in _resolve(d, log_dirs)]
    parts, deletes = _partition_dirs(path)
    return [_Root(path, parts, deletes)]


# ----------------------------------------------------------------------------------------------
# planning

@dataclass
class _Options:
    kafka_compatible: bool
    index_interval_bytes: int
    timeindex_offsets: str
    open_transactions: object = None
    known: dict = None          # {absolute .log path: SegmentScan} made already
    epochs: dict = None         # {absolute leader-epoch-checkpoint path: its entries}, read and found sound


#: what to do with a transaction whose end marker the damage removed while later batches are kept
OPEN_TRANSACTIONS = ("truncate", "abort", "commit")


class _Replan(Exception):
    """Plan a partition again: in Kafka's way (``opts``), or with end-transaction ``markers``."""

    def __init__(self, opts=None, markers=None):
        super().__init__("replan")
        self.opts, self.markers = opts, markers


def plan_recovery(paths, *, kafka_compatible=False, index_interval_bytes=DEFAULT_INDEX_INTERVAL,
                  timeindex_offsets="batch", open_transactions=None, scans=None, log_dirs=None,
                  epochs=None) -> RecoveryPlan:
    """Plan the recovery of log dirs, partition folders or segments (see the module docstring).

    Parameters
    ----------
    paths : path or list of paths
        Local log dirs, partition folders or ``<base>.log`` segment files.
    kafka_compatible : bool
        Truncate each damaged segment at its first damage and delete the partition's later
        segments, exactly as the broker would; default: remove only the damaged bytes.
    index_interval_bytes : int
        ``index.interval.bytes`` of the topics (Kafka's default 4096).
    timeindex_offsets : {"batch", "record"}
        See `kafkafmt.recovery.rebuild_indexes`.
    open_transactions : {None, "truncate", "abort", "commit"}
        What to do when the damage removes a transaction's end marker while intact batches after
        it are kept (the transaction would stay open and hide every later record from
        ``read_committed`` readers): None (default) refuses and says so in ``plan.transactions``
        and ``plan.refusals``; "truncate" truncates that partition at its first damage, as Kafka
        does; "abort" writes an ABORT marker for it at the log end; "commit" writes the COMMIT
        marker the damaged bytes still show (refused when they do not show one).
    scans : iterable of SegmentScan, optional
        Scans of segments made already (`kafkafmt.recovery.scan_of_batches`: from a checked read of their
        batches), used in place of scanning those files again.
    log_dirs : list of str, optional
        The log dirs below ``paths`` when found already (`kafkafmt.log.Found.log_dirs_paths`): a path holding
        log dirs is not walked again to find them.
    epochs : dict, optional
        ``{path of a leader-epoch-checkpoint: its entries}`` (`kafkafmt.log.sidefiles.read_leader_epoch_checkpoint`)
        where a check found them sound (`kafkafmt.log.sidefiles.leader_epoch_problems`): not read again.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if open_transactions not in (None,) + OPEN_TRANSACTIONS:
        raise ValueError(f"open_transactions must be one of {OPEN_TRANSACTIONS} or None, not {open_transactions!r}")
    known = {os.path.abspath(s.path): s for s in scans or ()}
    opts = _Options(kafka_compatible, index_interval_bytes, timeindex_offsets, open_transactions, known,
                    {os.path.abspath(p): e for p, e in (epochs or {}).items()})
    roots = [r for p in paths for r in _resolve(p, log_dirs)]
    plan = RecoveryPlan(roots=roots, kafka_compatible=opts.kafka_compatible)
    for root in roots:
        ld = root.log_dir
        for d in root.delete_dirs:
            plan.problems.append(ReportEntry(ReportKind.LEFTOVER, d, "partition folder being deleted (-delete)"))
            plan.actions.append(RecoveryAction(ActionKind.DELETE, d, "partition folder marked for deletion: "
                                               "removed as the broker would (LogManager.loadLog -> "
                                               "addLogToBeDeleted)", log_dir=ld))
        ends = {}
        for folder in root.partitions:
            mark = (len(plan.problems), plan.partitions, plan.segments, plan.bytes, len(plan.actions))
            try:
                end = _plan_partition(plan, folder, ld, opts, root.only_log)
            except _Replan as again:            # a choice about a transaction the damage leaves open
                del plan.problems[mark[0]:], plan.actions[mark[4]:]
                plan.partitions, plan.segments, plan.bytes = mark[1:4]
                end = _plan_partition(plan, folder, ld, again.opts or opts, root.only_log, markers=again.markers)
            if end is not None and not is_leftover_dir(folder) and root.only_log is None:
                ends[folder] = end
        if ld is not None and ends:
            _plan_checkpoints(plan, ld, ends)
    return plan


@functools.lru_cache(maxsize=4096)
def _offset_of(name):
    """The offset a file's name starts with, or None (names repeat from folder to folder: kept)."""
    try:
        return sidefiles.offset_from_file_name(name)
    except ValueError:
        return None


@functools.lru_cache(maxsize=4096)
def _log_base(name):
    """`segment_base` of a file's name (kept, as `_offset_of`)."""
    return segment_base(name)


def _plan_partition(plan, folder, log_dir, opts, only_log, markers=None):
    """Actions for one partition folder; returns (log start, log end offset) after recovery.
    ``markers``: end-transaction markers to write at the log end (`_open_transactions`)."""
    plan.partitions += 1
    acts = []

    def act(kind, path, message, **kw):
        acts.append(RecoveryAction(kind, path, message, log_dir=log_dir, **kw))

    with os.scandir(folder) as entries:
        names = sorted(e.name for e in entries if e.is_file())
    here = {n: folder + os.sep + n for n in names}               # final name -> where its bytes are now
    gone = set()

    def drop(name, message):
        act(ActionKind.DELETE, here[name], message)
        plan.problems.append(ReportEntry(ReportKind.LEFTOVER, here[name], message))
        gone.add(name)
        del here[name]

    # 1. leftovers (LogLoader.removeTempFilesAndCollectSwapFiles)
    for n in names:
        if n.endswith(TEMP_SUFFIX):
            drop(n, "temporary file of an interrupted recovery")
    for n in names:
        if n in gone:
            continue
        if n.endswith(".deleted") and not n.endswith(_SNAPSHOT_DELETED):
            drop(n, "stray file marked for deletion (.deleted): removed (LogLoader."
                    "removeTempFilesAndCollectSwapFiles)")
    cleaned = [n for n in here if n.endswith(".cleaned")]
    min_cleaned = min((_offset_of(n) for n in cleaned if _offset_of(n) is not None), default=None)
    swaps = [n for n in here if n.endswith(".swap")]
    valid_swaps = []
    for n in swaps:
        if min_cleaned is not None and _offset_of(n) is not None and _offset_of(n) >= min_cleaned:
            drop(n, f".swap file of an interrupted segment split (base offset at or above the .cleaned "
                    f"offset {min_cleaned}): removed (KAFKA-6264; LogLoader.removeTempFilesAndCollectSwapFiles)")
        else:
            valid_swaps.append(n)
    for n in cleaned:
        drop(n, "stray .cleaned file of an interrupted log cleaning: removed (LogLoader."
                "removeTempFilesAndCollectSwapFiles)")
    swap_logs = [n for n in valid_swaps if n[:-len(".swap")].endswith(".log") and _offset_of(n) is not None]
    if swap_logs:
        lo = min(_offset_of(n) for n in swap_logs)
        hi = max(scan_segment(here[n], _offset_of(n)).next_offset for n in swap_logs)
        for n in sorted(here):
            off = _offset_of(n)
            if n.endswith(".swap") or off is None:
                continue
            if lo <= off < hi:
                drop(n, f"replaced by the interrupted swap of offsets {lo}..{hi - 1} (compacted or split, not yet "
                        f"deleted): removed (LogLoader.load, second pass)")
    for n in valid_swaps:
        final = n[:-len(".swap")]
        src = here.pop(n)
        if final in here:
            drop(final, "replaced by its .swap file")
        act(ActionKind.RENAME, src, "interrupted swap finished by renaming (LogLoader.load, third pass)",
            target=os.path.join(folder, final))
        plan.problems.append(ReportEntry(ReportKind.LEFTOVER, src, "interrupted .swap operation"))
        here[final] = src
    for n in sorted(here):
        if n.endswith(_INDEX_SUFFIXES) and _offset_of(n) is not None:
            log = segment_file_name(_offset_of(n), ".log")
            if log not in here:
                drop(n, f"index file without its {log}: removed (LogLoader.loadSegmentFiles)")

    # 2. segments and their data
    logs = sorted((_log_base(n), n) for n in here if _log_base(n) is not None)
    scans = {}                  # the segments scanned already (those that overlap another)
    logs, refused = _overlapping_segments(plan, here, logs, scans, act, opts)
    snaps = {}
    for n in sorted(here):
        if n.endswith(".snapshot") and _offset_of(n) is not None:
            try:
                sidefiles.read_producer_snapshot(here[n])
                snaps[_offset_of(n)] = n
            except (KafkafmtError, OSError) as exc:
                act(ActionKind.DELETE, here[n], f"unreadable producer snapshot ({getattr(exc, 'reason', exc)}): "
                                                f"removed (ProducerStateManager.loadFromSnapshot)")
                gone.add(n)
    seed = None
    if logs and logs[0][0] in snaps:
        seed = sidefiles.read_producer_snapshot(here[snaps[logs[0][0]]])["entries"]
    state = ProducerState(seed)
    data_acts, index_acts = [], []
    cut_after = None            # first offset whose producer state changed (snapshots after it are stale)
    end_offset = logs[0][0] if logs else None
    any_batches = False
    damage_points = []          # (first offset at stake, .log scanned, damaged byte ranges) per damaged segment
    kept = []                   # (base offsets, last offsets, is_control) of the batches kept, per segment
    epoch_rows = []             # the kept batches' base offsets, leader epochs and magic, per segment
    for k, (base, n) in enumerate(logs):
        scan = scans.pop(n) if n in scans else _scan(here[n], base, opts)
        if scan.first_offset is not None and scan.first_offset < base and n not in refused:
            renamed = _misnamed_segment(plan, folder, here, n, scan.first_offset, end_offset if k else None, act)
            if renamed is not None:
                base, n = logs[k] = renamed
                scan = _scan(here[n], base, opts)
        path = os.path.join(folder, n)
        plan.segments += 1
        plan.bytes += scan.size
        plan.problems.extend(scan.damage)
        batches = scan.batches
        if scan.damage:
            first = scan.damage[0]
            kept_end = int(first.start)
            here_cut = _first_at_stake(scan, here[n], kept_end, end_offset if k else None)
            first_offset = first.offset if first.offset is not None else here_cut
            if opts.kafka_compatible:
                keep = batches["position"] < kept_end
                batches = {c: v[keep] for c, v in batches.items()}
                for later_base, later in logs[k + 1:]:
                    held = (scans.get(later) or _scan(here[later], later_base, opts)).batches \
                        if later in here else None
                    for suffix in (".log",) + _INDEX_SUFFIXES:
                        name = later[:-len(".log")] + suffix
                        if name in here:
                            lost = ()
                            if suffix == ".log" and held is not None and len(held["base_offset"]):
                                lost = ((int(held["base_offset"][0]), int(held["last_offset"][-1])),)
                            data_acts.insert(0, RecoveryAction(
                                ActionKind.DELETE, here[name], f"segment after the corruption in {n}: deleted as "
                                "the broker does (LogLoader.recoverLog)", log_dir=log_dir, lost=lost))
                after = scan.batches["last_offset"][scan.batches["position"] >= kept_end]
                last = int(after[-1]) if len(after) else _header_last_offset(here[n], kept_end, scan.size)
                data_acts.append(RecoveryAction(
                    ActionKind.TRUNCATE, path, f"{_words(first)}; truncated at the first invalid batch as the "
                    f"broker does (LogSegment.recover)", start=kept_end, end=scan.size, offset=first_offset,
                    log_dir=log_dir, lost=_lost_tuple(here_cut, last)))
                logs = logs[:k + 1]
            else:
                ranges = scan.kept_ranges()
                if len(ranges) <= 1 and (not ranges or ranges[0][0] == 0):
                    data_acts.append(RecoveryAction(
                        ActionKind.TRUNCATE, path, _words(first) + "; truncated after the last intact batch "
                        "(LogSegment.recover)", start=kept_end, end=scan.size, offset=first_offset,
                        log_dir=log_dir, lost=_lost_tuple(here_cut, _header_last_offset(here[n], kept_end,
                                                                                        scan.size))))
                else:
                    removed = tuple((int(e.start), int(e.end), _words(e)) for e in scan.damage)
                    data_acts.append(RecoveryAction(
                        ActionKind.CUT, path, f"{len(removed)} damaged range(s) removed, "
                        f"{len(batches['size'])} intact batches kept (Kafka would truncate at position "
                        f"{kept_end}): {_words(first)}", start=kept_end, end=int(first.end), offset=first_offset,
                        removed=removed, log_dir=log_dir,
                        lost=tuple(r for st, en, _ in removed
                                   for r in _lost_range(scan, here[n], st, en, end_offset if k else None))))
            cut_after = here_cut if cut_after is None else min(cut_after, here_cut)
            damage_points.append((here_cut, scan.path, [(int(e.start), int(e.end)) for e in scan.damage]))
        controls = scan.controls
        if markers and k == len(logs) - 1:          # the chosen end-transaction markers, at the log end
            at = max(end_offset, base, int(batches["last_offset"][-1]) + 1 if len(batches["last_offset"]) else 0)
            batches, controls, marker_act = _append_markers(batches, controls, markers, at, path, log_dir)
            data_acts.append(marker_act)
        kept.append((batches["base_offset"], batches["last_offset"], batches["is_control"]))
        epoch_rows.append({c: batches[c] for c in ("base_offset", "partition_leader_epoch", "magic")})
        any_batches = any_batches or len(batches["size"]) > 0
        aborted = state.replay(batches, controls)
        if len(batches["size"]):
            end_offset = int(batches["last_offset"][-1]) + 1
        else:
            end_offset = max(end_offset, base)
        if only_log is not None and os.path.abspath(path) != os.path.abspath(only_log):
            continue
        index_acts += _plan_indexes(folder, n, here, base, scan, batches, aborted, opts, log_dir)
        if opts.kafka_compatible and scan.damage:
            break
    if only_log is not None:
        keep = {os.path.abspath(only_log)}
        stem = os.path.abspath(only_log)[:-len(".log")]
        keep |= {stem + s for s in _INDEX_SUFFIXES}
        plan.actions += [a for a in acts + data_acts + index_acts if os.path.abspath(a.file) in keep]
        return None

    if damage_points and not opts.kafka_compatible and not markers:
        _open_transactions(plan, folder, state, damage_points, kept, opts)

    # 4. producer snapshots
    snap_acts = []
    if end_offset is not None:
        for off, n in sorted(snaps.items()):
            if off > end_offset:
                snap_acts.append(RecoveryAction(ActionKind.DELETE, here[n], f"producer snapshot at offset {off} is past "
                                                f"the log end offset {end_offset} (ProducerStateManager."
                                                f"truncateAndReload)", log_dir=log_dir))
            elif cut_after is not None and off > cut_after:
                snap_acts.append(RecoveryAction(ActionKind.DELETE, here[n], f"producer snapshot at offset {off} counts "
                                                f"batches of a damaged range removed at offset {cut_after}",
                                                log_dir=log_dir))
        stale = {a.file for a in snap_acts}
        at_end = snaps.get(end_offset)
        if any_batches and (at_end is None or here[at_end] in stale):
            name = segment_file_name(end_offset, ".snapshot")
            index_acts.append(RecoveryAction(
                ActionKind.WRITE, os.path.join(folder, name), f"no producer snapshot at the log end offset "
                f"{end_offset}: written from the {len(state.producers)} producers' state (ProducerStateManager."
                f"takeSnapshot)", data=sidefiles.encode_producer_snapshot(state.snapshot_entries()),
                log_dir=log_dir))
    # 5. leader epochs
    epochs = here.get(_EPOCHS)
    if epochs is not None and end_offset is not None:
        index_acts += _plan_leader_epochs(epochs, end_offset, epoch_rows, log_dir, opts)
    plan.actions += acts + snap_acts + data_acts + index_acts
    if not logs:
        return None
    return logs[0][0], end_offset


def _plan_leader_epochs(path, end_offset, epoch_rows, log_dir, opts):
    """The ``leader-epoch-checkpoint``: an unreadable or unsound one (a broker cannot load it: its
    log dir goes offline) rebuilt from the batches' leader epochs, as ``LogSegment.recover`` fills
    the epoch cache when it recovers every segment (`leader_epochs`); else the epochs starting at
    or past the log end offset removed (``LeaderEpochFileCache.truncateFromEnd``). One found sound
    already (``opts.epochs``) is not read again."""
    e = opts.epochs.get(path) if opts.epochs else None
    try:
        if e is None:
            e = sidefiles.read_leader_epoch_checkpoint(path)["entries"]
            problems = sidefiles.leader_epoch_problems(e)
            why = problems[0][1] if problems else None
        else:
            why = None
    except (KafkafmtError, OSError) as exc:
        why = getattr(exc, "reason", None) or str(exc)
    if why is not None:
        rows = {c: np.concatenate([r[c] for r in epoch_rows]) if epoch_rows else np.zeros(0, np.int64)
                for c in ("base_offset", "partition_leader_epoch", "magic")}
        new = leader_epochs(rows)
        return [RecoveryAction(ActionKind.WRITE, path, f"{why}: rebuilt from the batches' leader epochs ({len(new)} "
                               f"epoch(s); LogSegment.recover -> LeaderEpochFileCache.assign)",
                               data=sidefiles.encode_leader_epoch_checkpoint(new), log_dir=log_dir)]
    keep = e["start_offset"] < end_offset
    if keep.all():
        return []
    return [RecoveryAction(ActionKind.WRITE, path, f"{int((~keep).sum())} leader epoch(s) start at or past the log "
                           f"end offset {end_offset}: removed (LeaderEpochFileCache.truncateFromEnd)",
                           data=sidefiles.encode_leader_epoch_checkpoint(e[keep]), log_dir=log_dir)]


def _open_transactions(plan, folder, state, damage_points, kept, opts):
    """Transactions the damage leaves open while intact batches after it are kept: said in the plan
    (which producer, from which offset, how many records ``read_committed`` readers lose), and
    refused unless ``open_transactions`` chose what to do (then `_Replan`)."""
    base = np.concatenate([b for b, _, _ in kept]) if kept else np.zeros(0, np.int64)
    last = np.concatenate([x for _, x, _ in kept]) if kept else np.zeros(0, np.int64)
    data = ~np.concatenate([c for _, _, c in kept]).astype(bool) if kept else np.zeros(0, bool)
    markers = {}
    for pid, first in sorted(state.open_txns.items()):
        hits = [d for d in damage_points if d[0] > first]
        if not hits:
            continue
        at, log, ranges = hits[0]
        later = data & (base >= at)
        if not later.any():
            continue                # the damage ends the log: open at the log end, as Kafka leaves it
        since = data & (last >= first)
        hidden = int((last[since] - np.maximum(base[since], first) + 1).sum())
        shown = None
        for start, end in ranges:
            shown = shown or _marker_in(log, start, end, pid)
        entry = state.producers[pid]
        where = folder                  # which copy: several log dirs may hold the partition
        text = (f"{where}: producer {pid}'s transaction from offset {first} is left open by the damage at offset "
                f"{at}: read_committed readers would no longer see the {hidden} records from offset {first} on "
                f"(its own and every later one); the damaged bytes "
                + (f"still show its {shown[0].upper()} marker at offset {shown[1]}" if shown else
                   "do not show its end marker"))
        info = {"folder": folder, "producer_id": pid, "first_offset": first, "damage_offset": at,
                "hidden": hidden, "shown": shown[0] if shown else None, "choice": opts.open_transactions,
                "text": text}
        plan.transactions.append(info)
        choice = opts.open_transactions
        if choice is None:
            plan.refusals.append(text + "; choose: --open-transactions truncate (truncate at the damage, as Kafka "
                                 "does), abort (write an ABORT marker at the log end: its records are not read)"
                                 + (f", commit (write the COMMIT marker the damaged bytes show)"
                                    if shown and shown[0] == "commit" else ""))
        elif choice == "commit" and not (shown and shown[0] == "commit"):
            plan.refusals.append(text + "; --open-transactions commit writes only a COMMIT marker the damaged bytes "
                                        "still show: choose abort or truncate")
        elif choice in ("abort", "commit"):
            ts = shown[3] if shown else entry[4]
            coord = shown[2] if shown else max(entry[5], 0)
            markers[pid] = (choice, entry[0], coord, ts)
    if markers:
        raise _Replan(markers=markers)
    if any(t["choice"] == "truncate" for t in plan.transactions if t["folder"] == folder):
        raise _Replan(opts=replace(opts, kafka_compatible=True, open_transactions="truncate"))


def _marker_in(path, start, end, pid):
    """The end-transaction marker of producer ``pid`` the damaged bytes [start, end) still show
    (its CRC does not verify): ("commit"|"abort", offset, coordinator epoch, timestamp), or None.
    Read field by field as DefaultRecordBatch and EndTransactionMarker lay them out."""
    with open(path, "rb") as f:
        f.seek(start)
        b = f.read(min(end - start, 128))
    if len(b) < 61 + 12 or b[16] != 2:
        return None
    attributes = int.from_bytes(b[21:23], "big")
    if not attributes & 0x20 or int.from_bytes(b[43:51], "big", signed=True) != pid:
        return None                                     # not a control batch of this producer
    offset = int.from_bytes(b[0:8], "big", signed=True)
    ts = int.from_bytes(b[35:43], "big", signed=True)
    pos = 61
    values = []
    for _ in range(5):                                  # length, attributes(1 byte), ts delta, offset delta, key length
        if len(values) == 1:
            pos += 1
            values.append(None)
            continue
        v, shift = 0, 0
        while pos < len(b):
            byte = b[pos]
            pos += 1
            v |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        values.append((v >> 1) ^ -(v & 1))
    if values[4] != 4 or pos + 4 > len(b):
        return None
    kind = int.from_bytes(b[pos + 2:pos + 4], "big")
    if kind not in (0, 1):
        return None
    pos += 4
    coord = 0
    if pos + 1 + 6 <= len(b):
        pos += 1                                        # value length (varint, 6)
        coord = int.from_bytes(b[pos + 2:pos + 6], "big", signed=True)
    return ("commit" if kind == 1 else "abort", offset, coord, ts)


def _append_markers(batches, controls, markers, at, path, log_dir):
    """The segment's batches and control markers with ``markers`` appended from offset ``at``, and
    the APPEND action that writes them."""
    from kafkafmt.record import encode_control

    rows, blobs = {c: list(np.asarray(v)) for c, v in batches.items()}, []
    controls = dict(controls)
    epoch = int(batches["partition_leader_epoch"][-1]) if len(batches["partition_leader_epoch"]) else 0
    what = []
    for k, (pid, (kind, producer_epoch, coord, ts)) in enumerate(sorted(markers.items())):
        blob = encode_control(kind, offset=at + k, producer_id=pid, producer_epoch=producer_epoch,
                              coordinator_epoch=coord, timestamp=ts, partition_leader_epoch=epoch)
        fake = -1 - k                                   # not a position in the file as it is
        row = {"position": fake, "size": len(blob), "base_offset": at + k, "last_offset": at + k,
               "last_offset_delta": 0, "max_timestamp": ts, "producer_id": pid, "producer_epoch": producer_epoch,
               "base_sequence": -1, "is_transactional": True, "is_control": True, "magic": 2, "codec": 0,
               "timestamp_type": 0, "partition_leader_epoch": epoch}
        for c in rows:
            rows[c].append(row[c])
        controls[fake] = (0 if kind == "abort" else 1, coord, ts)
        blobs.append(blob)
        what.append(f"{kind.upper()} of producer {pid} at offset {at + k}")
    out = {c: np.asarray(v, np.asarray(batches[c]).dtype) for c, v in rows.items()}
    act = RecoveryAction(ActionKind.APPEND, path, "end-transaction marker(s) written at the log end, as chosen "
                         "(--open-transactions): " + ", ".join(what), offset=at, data=b"".join(blobs),
                         log_dir=log_dir)
    return out, controls, act


def _misnamed_segment(plan, folder, here, n, true_base, previous_end, act):
    """A segment whose file name is above its first batch's base offset (files renamed by hand,
    copied under another name): Kafka cannot index such a segment (``AbstractIndex.toRelative``:
    a negative relative offset) and splits it into segments named by their batches' base offsets
    when it recovers it (``LogSegment.recover`` -> ``LogSegmentOffsetOverflowException`` ->
    ``LocalLog.splitOverflowedSegment``). Planned here: the ``.log`` (and ``.txnindex``, whose
    offsets are absolute) renamed to the first batch's base offset, the ``.index``/``.timeindex``
    (relative to the wrong base) removed and rebuilt. Refused when that name is taken or the
    previous segment reaches that offset. Returns the new (base, name), or None when refused."""
    named = segment_base(n)
    log = os.path.join(folder, n)
    new = segment_file_name(true_base, ".log")
    what = (f"segment named against its content: the name says base offset {named}, its first batch starts at "
            f"offset {true_base}")
    plan.problems.append(ReportEntry(ReportKind.CORRUPT, log, what, 0, None, true_base))
    if new in here:
        plan.refusals.append(f"{log}: {what}, and {new} exists already: move one of them aside by hand")
        return None
    if previous_end is not None and true_base < previous_end:
        plan.refusals.append(f"{log}: {what}, but the previous segment holds offsets up to {previous_end - 1}: the "
                             f"segments overlap; move one of them aside by hand")
        return None
    stem, new_stem = n[:-len(".log")], new[:-len(".log")]
    act(ActionKind.RENAME, log, f"{what}: renamed to its true base offset (Kafka splits such a segment by its "
                                f"batches' base offsets: LocalLog.splitOverflowedSegment)",
        target=os.path.join(folder, new), offset=true_base)
    here[new] = here.pop(n)
    for suffix in (".index", ".timeindex"):
        if stem + suffix in here:
            act(ActionKind.DELETE, here.pop(stem + suffix), f"entries relative to the wrong base offset {named}: "
                f"removed, rebuilt as {new_stem + suffix}")
    if stem + ".txnindex" in here:
        act(ActionKind.RENAME, here[stem + ".txnindex"], "absolute offsets: renamed with its segment",
            target=os.path.join(folder, new_stem + ".txnindex"))
        here[new_stem + ".txnindex"] = here.pop(stem + ".txnindex")
    return true_base, new


def _scan(path, base, opts):
    """`scan_segment` of a ``.log``, or its scan made already (``opts.known``)."""
    scan = opts.known.get(path) if opts.known else None
    return scan if scan is not None and scan.base_offset == base else scan_segment(path, base)


def _span(path, opts):
    """`segment_span` of a ``.log``, from its scan when made already (``opts.known``: whole intact files)."""
    scan = opts.known.get(path) if opts.known else None
    if scan is None:
        return segment_span(path)
    last = scan.batches["last_offset"]
    return (scan.first_offset, int(last.max()) + 1) if len(last) else None


def _overlapping_segments(plan, here, logs, scans, act, opts):
    """Segments whose offsets overlap (a stray copy of part of a segment saved as its own
    ``<base>.log``): a consumer reads each offset once, Kafka each from the segment whose base
    offset is the greatest at or below it. Where the two hold the overlapping offsets byte for
    byte, the copy is dropped: a segment held whole by the other is removed, else the earlier one's
    tail is truncated where the later one begins (nothing is lost: the other still holds every
    offset). Where they differ, the plan is refused, naming both files. Returns the segments kept
    (``logs`` without the removed ones; ``scans`` of truncated ones cut to match) and the names
    of the segments in a refused overlap. Found by the segments' framing (`segment_span`); only those
    that overlap are scanned (into ``scans``)."""
    ends, spans = {}, []
    for base, n in logs:
        span = _span(here[n], opts)
        if span is not None:
            ends[n] = span[1]
            spans.append((span[0], -span[1], base, n))
    dropped, refused = set(), set()
    frontier = None                     # the kept segment reaching furthest so far

    def scanned(n, base):
        if n not in scans:
            scans[n] = _scan(here[n], base, opts)
            ends[n] = scans[n].next_offset
        return scans[n]

    bases = {n: base for base, n in logs}
    for start, _, base, n in sorted(spans):
        if frontier is None or start >= ends[frontier]:
            frontier = n
            continue
        a, b = scanned(frontier, bases[frontier]), scanned(n, base)     # their framing overlaps: a closer look
        first = b.first_offset
        if first is None or first >= a.next_offset:     # their intact batches do not
            frontier = n if ends[n] > ends[frontier] else frontier
            continue
        hi = min(a.next_offset, b.next_offset)
        same = _same_bytes(a, b, first, hi)             # ((start, end) in a, (start, end) in b), or None
        both = f"{a.path} and {b.path}"
        contained = b.next_offset <= a.next_offset      # b goes whole, else a's tail from where b begins
        if same is not None and (same[1] != (0, b.size) if contained else same[0][1] != a.size):
            same = None                                 # other bytes (damage) would go with it: not a copy
        if same is None:
            refused |= {frontier, n}
            plan.problems.append(ReportEntry(ReportKind.CORRUPT, b.path, f"overlaps {a.path}: both hold offsets "
                                             f"{first}..{hi - 1}, not byte for byte alike", 0, None, first))
            plan.refusals.append(f"segments {both} overlap (both hold offsets {first}..{hi - 1}) and differ there: "
                                 f"compare them and move one aside by hand")
            continue
        if contained:                               # the later one is a copy of part of the earlier one
            what = (f"holds offsets {first}..{b.next_offset - 1}, every byte of it also in {a.path}: removed (each "
                    f"offset is kept once)")
            stem = n[:-len(".log")]
            act(ActionKind.DELETE, here[n], f"overlapping segment: {what}", offset=first,
                duplicate_of=a.path)
            for suffix in _INDEX_SUFFIXES:
                if stem + suffix in here:
                    act(ActionKind.DELETE, here[stem + suffix], f"side file of the overlapping segment {n}: removed")
                    dropped.add(stem + suffix)
            plan.problems.append(ReportEntry(ReportKind.LEFTOVER, b.path, f"overlapping segment: {what}", 0, None,
                                             first))
            dropped.add(n)
            plan.segments += 1
            plan.bytes += b.size
        else:                                       # the earlier one's tail is the later one's head
            a_at = same[0][0]
            what = (f"offsets {first}..{hi - 1} (bytes {a_at}..{a.size}) are also in {b.path}, byte for byte: "
                    f"truncated where it begins (Kafka reads them from there: LocalLog.read)")
            act(ActionKind.TRUNCATE, a.path, f"overlapping segment: {what}", start=a_at, end=a.size, offset=first,
                duplicate_of=b.path)
            plan.problems.append(ReportEntry(ReportKind.CORRUPT, a.path, f"overlaps {b.path}: {what}", a_at, a.size,
                                             first))
            keep = a.batches["position"] < a_at
            scans[frontier] = replace(a, batches={c: v[keep] for c, v in a.batches.items()},
                                      damage=[e for e in a.damage if int(e.start) < a_at])
            frontier = n
    for name in dropped:
        here.pop(name, None)
    return [(base, n) for base, n in logs if n not in dropped], refused


def _same_bytes(a, b, lo, hi):
    """Whether scanned segments ``a`` and ``b`` hold offsets [lo, hi) in the same intact batches,
    byte for byte: their byte ranges ((start, end) in ``a``, (start, end) in ``b``), else None."""
    def run(s):
        pos, base, last = s.batches["position"], s.batches["base_offset"], s.batches["last_offset"]
        rows = np.flatnonzero((last >= lo) & (base < hi))
        if not len(rows) or int(base[rows[0]]) != lo or int(last[rows[-1]]) != hi - 1:
            return None
        start, end = int(pos[rows[0]]), int(pos[rows[-1]] + s.batches["size"][rows[-1]])
        if int(s.batches["size"][rows].sum()) != end - start:
            return None                              # not contiguous: damage between
        return start, end, rows
    ra, rb = run(a), run(b)
    if ra is None or rb is None or len(ra[2]) != len(rb[2]) or ra[1] - ra[0] != rb[1] - rb[0]:
        return None
    with open(a.path, "rb") as fa, open(b.path, "rb") as fb:
        fa.seek(ra[0])
        fb.seek(rb[0])
        left = ra[1] - ra[0]
        while left:
            n = min(left, 8 << 20)
            if fa.read(n) != fb.read(n):
                return None
            left -= n
    return ra[:2], rb[:2]


def _lost_tuple(first, last):
    """((first, last),) -- or () when the damaged bytes held no record (zeros: ``last`` is False)."""
    if last is False or (last is not None and last < first):
        return ()
    if last is not None and last - first > _INT32_MAX:
        last = None                                 # a damaged header's delta: not believed
    return ((first, last),)


def _first_at_stake(scan, path, start, floor):
    """The first offset the damaged bytes from ``start`` of a scanned segment may hold: after the
    last intact batch before them; at the start of the segment, the damaged batch's own base
    offset when its header reads as one in place (not below ``floor``, the end of the partition's
    log before this segment, nor past the next intact batch) -- a loss is counted from the
    batches, not from the file's name, which is the last resort."""
    b = scan.batches
    pos = b["position"]
    before = b["last_offset"][pos < start]
    if len(before):
        return int(before[-1]) + 1
    head = _header_offsets(path, start, start + 61)
    if head:
        after = b["base_offset"][pos > start]
        if head[0] >= (floor or 0) and (not len(after) or head[0] < int(after[0])):
            return head[0]
    return scan.base_offset if floor is None else max(scan.base_offset, floor)


def _lost_range(scan, path, start, end, floor=None):
    """The offsets the damaged bytes [start, end) of a scanned segment held: from the last intact
    batch before them + 1 (`_first_at_stake`) to the first intact batch after them - 1 (at the
    tail: to the last offset the damaged batch's own header gives)."""
    b = scan.batches
    first = _first_at_stake(scan, path, start, floor)
    after = b["base_offset"][b["position"] >= end]
    if len(after):
        return _lost_tuple(first, int(after[0]) - 1)
    return _lost_tuple(first, _header_last_offset(path, start, end))


def _header_offsets(path, start, end):
    """(base offset, last offset) the batch header at ``start`` gives (last None when unreadable),
    None when it is not a header, False when the bytes are zeros (no record)."""
    with open(path, "rb") as f:
        f.seek(start)
        head = f.read(min(end - start, 61))
    if not any(head):
        return False
    base = int.from_bytes(head[0:8], "big", signed=True) if len(head) >= 8 else -1
    if base < 0:
        return None
    if len(head) >= 27 and head[16] == 2:
        delta = int.from_bytes(head[23:27], "big", signed=True)
        return base, base + delta if delta >= 0 else None
    if len(head) >= 17 and head[16] in (0, 1):
        return base, base                                               # a v0/v1 entry's (last) offset
    return None


def _header_last_offset(path, start, end):
    """The last offset the batch header at ``start`` gives (None when unreadable; False when the
    bytes are zeros: no record)."""
    head = _header_offsets(path, start, end)
    return head if head is False else None if head is None else head[1]


_DAMAGE_LABELS = {ActionKind.TRUNCATE: "log truncated", ActionKind.CUT: "damaged bytes cut out",
                  ActionKind.DELETE: "segment removed", ActionKind.RENAME: "segment renamed",
                  ActionKind.APPEND: "end-transaction marker written"}


def _routine_label(action):
    """The group a routine action is listed under in `RecoveryPlan.text`."""
    name = os.path.basename(action.file)
    if action.kind is ActionKind.WRITE:
        for suffix, label in ((".index", ".index rebuilt"), (".timeindex", ".timeindex rebuilt"),
                              (".txnindex", ".txnindex rebuilt"), (".snapshot", "producer snapshot written")):
            if name.endswith(suffix):
                return label
        return f"{name} rewritten"
    if action.kind is ActionKind.RENAME:
        return "interrupted swap finished"
    if name.endswith(".snapshot"):
        return "producer snapshot removed"
    if "entries relative to the wrong base offset" in action.message:
        return "index of a renamed segment removed"
    return "broker leftover removed"


def _words(entry):
    """A damage entry in ``verify``'s words."""
    n = int(entry.end) - int(entry.start)
    if entry.kind is ReportKind.ZEROS:
        return f"zero-filled tail of {n} bytes (preallocated file)"
    if entry.kind is ReportKind.TRUNCATED:
        return f"truncated final batch: {n} bytes after the last complete batch"
    return f"{entry.message}; {n} bytes"


def _read_or_none(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _plan_indexes(folder, n, here, base, scan, batches, aborted, opts, log_dir):
    stem = n[:-len(".log")]
    out = []
    positions = np.concatenate(([0], np.cumsum(batches["size"])[:-1])) if len(batches["size"]) else np.zeros(0)
    table = dict(batches, position=positions.astype(np.int64))
    # indexes a check against these very batches found sound (`SegmentScan.sound`): only a time index's last
    # entry is looked at (stale or not); nothing is built unless written -- when nothing can fail to encode
    sound = scan.sound if batches is scan.batches and opts.timeindex_offsets == "batch" and _encodes(scan) else {}
    plans = []
    for suffix in (".index", ".timeindex"):
        name = stem + suffix
        if suffix in sound:
            why = _stale_timeindex(sound[suffix], table) if suffix == ".timeindex" else None
        else:
            data = _read_or_none(here[name]) if name in here else None
            why = f"no {suffix} file (a broker rebuilds missing indexes at start-up)" if data is None else data
        plans.append((suffix, name, why))
    if any(why is not None for _, _, why in plans):
        rec = record_time_offsets(scan.path, batches) if opts.timeindex_offsets == "record" else None
        try:
            index, timeindex = index_entries(batches, index_interval_bytes=opts.index_interval_bytes,
                                             timeindex_offsets=opts.timeindex_offsets, record_offsets=rec)
            # those needed -- both where an entry might not encode: that leaves both alone
            wanted = {suffix for suffix, _, why in plans if why is not None} \
                if batches is scan.batches and _encodes(scan) else {".index", ".timeindex"}
            new = {}
            if ".index" in wanted:
                new[".index"] = sidefiles.encode_index(index, base)
            if ".timeindex" in wanted:
                new[".timeindex"] = sidefiles.encode_timeindex(timeindex, base)
        except EncodeError:
            # offsets more than 2^31-1 past the base offset: the broker splits such a segment first
            # (LocalLog.splitOverflowedSegment, KAFKA-6264); not done here, the indexes are left alone
            return []
        for suffix, name, why in plans:
            if isinstance(why, bytes):          # an index on disk: rebuilt when it cannot stay
                why = None if why == new[suffix] else _index_problem(suffix, why, base, table)
            if why is not None:
                out.append(RecoveryAction(ActionKind.WRITE, os.path.join(folder, name), f"{why}: rebuilt from the "
                                          f"log ({len(index if suffix == '.index' else timeindex)} entries; "
                                          f"LogSegment.recover)", data=new[suffix], log_dir=log_dir))
    name = stem + ".txnindex"
    if not aborted and name not in here:
        return out
    data = _read_or_none(here[name]) if name in here else None
    want = sidefiles.encode_txnindex(aborted)
    expected = {(p, last) for p, _, last, _ in aborted}
    why = None
    if data is None:
        if aborted:
            why = f"{len(aborted)} aborted transaction(s) but no .txnindex file"
    elif data != want:
        try:
            have = sidefiles.read_txnindex(data)
            listed = {(int(e["producer_id"]), int(e["last_offset"])) for e in have}
            if listed != expected:
                why = (f"its {len(listed)} aborted transaction(s) do not match the {len(expected)} ABORT markers of "
                       f"the log")
        except KafkafmtError as exc:
            why = exc.reason
    if why is not None:
        out.append(RecoveryAction(ActionKind.WRITE, os.path.join(folder, name), f"{why}: rebuilt from the ABORT "
                                  f"markers (LogSegment.updateTxnIndex)", data=want, log_dir=log_dir))
    return out


def _index_problem(suffix, data, base, table):
    """Why an existing index cannot stay (None: it is valid for the log as it will be)."""
    try:
        why = sidefiles.index_sanity_problem(data, suffix, base)
        if why is not None:
            return why
        if suffix == ".index":
            entries = sidefiles.read_index(data, base)
            problems = sidefiles.check_index(entries, table, base)
        else:
            entries = sidefiles.read_timeindex(data, base)
            problems = sidefiles.check_timeindex(entries, table, base)
            if not problems:
                return _stale_timeindex(entries, table)
    except KafkafmtError as exc:
        return exc.reason
    return str(problems[0]) if problems else None


def _stale_timeindex(entries, table):
    """Why a sound time index is stale -- its last entry is not the segment's largest timestamp, which
    ``LogSegment.onBecomeInactiveSegment`` appends -- or None."""
    ts = table["max_timestamp"]
    top = int(ts.max()) if len(ts) else -1
    if top >= 0 and (not len(entries) or int(entries["timestamp"][-1]) != top):
        last = int(entries["timestamp"][-1]) if len(entries) else None
        return (f"stale: its last entry's timestamp {last} is not the segment's largest timestamp {top} "
                f"(LogSegment.onBecomeInactiveSegment)")
    return None


def _encodes(scan):
    """Whether a scanned segment's indexes encode whatever their entries (offsets within 2^31-1 of the base
    offset, positions within 2^31-1): `_plan_indexes` then builds them only to write them."""
    b = scan.batches
    return not len(b["last_offset"]) or (int(b["last_offset"][-1]) - scan.base_offset <= _INT32_MAX
                                          and scan.size <= _INT32_MAX and int(b["base_offset"][0]) >= scan.base_offset)


def _plan_checkpoints(plan, log_dir, ends):
    """recovery-point-offset-checkpoint and log-start-offset-checkpoint entries of the partitions."""
    keys = {}
    for folder, (first_base, end) in ends.items():
        m = PARTITION_DIR.match(os.path.basename(folder))
        keys[(m.group("topic"), int(m.group("partition")))] = (first_base, end)
    for name in (_RECOVERY_POINT, _LOG_START):
        path = os.path.join(log_dir, name)
        if not os.path.isfile(path):
            continue
        try:
            current = sidefiles.read_offset_checkpoint(path)
        except (KafkafmtError, OSError):
            current = None
        new = dict(current or {})
        changes = []
        for tp, (first_base, end) in keys.items():
            old = new.get(tp)
            if name == _RECOVERY_POINT:
                # only entries the broker keeps (a partition it does not list, such as the KRaft
                # __cluster_metadata log, is not added: the broker then recovers it from 0 itself)
                if old is not None and old != end:
                    new[tp] = end
                    changes.append(f"{tp[0]}-{tp[1]} {old} -> {end}")
            elif old is not None and old > end:
                new[tp] = end
                changes.append(f"{tp[0]}-{tp[1]} {old} -> {end} (past the log end offset)")
        if current is None or changes:
            what = "recovery point (log end offset; all segments checked)" if name == _RECOVERY_POINT else \
                "log start offset"
            msg = ("unreadable: rewritten" if current is None else f"{what}: " + ", ".join(changes[:5]) +
                   (f" and {len(changes) - 5} more" if len(changes) > 5 else ""))
            plan.actions.append(RecoveryAction(ActionKind.WRITE, path, msg + " (LogLoader.load)",
                                               data=sidefiles.encode_offset_checkpoint(new), log_dir=log_dir))
