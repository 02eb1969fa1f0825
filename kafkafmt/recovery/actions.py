"""What a recovery plan is made of: the changes (`RecoveryAction` of an `ActionKind`) and the plan that
holds them with the damage found (`RecoveryPlan`), and how they read -- one line per action, the routine
fixes grouped, a summary."""
from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field

from kafkafmt.log import SIDE_FILE_SUFFIXES, SNAPSHOT_SUFFIX, SWAP_SUFFIX, Note, place_text

__all__ = ["ActionKind", "RecoveryAction", "RecoveryPlan"]


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
    held_by : tuple of str
        Other copies of the partition given to the same recovery (a cluster's log dirs) that hold
        every offset in ``lost`` intact, read strictly (`kafkafmt.recovery.copies`), before the
        recovery changes anything.

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
    held_by: tuple = ()                                      # other copies holding every offset in lost intact

    @property
    def damage(self):
        """True for the actions that remove records or fix how a log is named (TRUNCATE, CUT, a
        segment deleted or renamed, a marker appended); False for the routine ones (indexes,
        snapshots, checkpoints, the broker's leftovers)."""
        if self.kind in (ActionKind.TRUNCATE, ActionKind.CUT, ActionKind.APPEND):
            return True
        if self.kind is ActionKind.RENAME:
            return not self.file.endswith(SWAP_SUFFIX)
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
        held = ("; the copy in " + " and in ".join(self.held_by) + " holds every one of them intact"
                if self.held_by else "")
        return "records lost: " + ", ".join(parts) + (f" ({n} offsets)" if n else "") + held

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
    contents : bool
        The files it writes have their new contents (``data``); False for a plan made only to be counted
        (``plan_recovery(contents=False)``), which cannot be applied.

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
    contents: bool = True

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
            Several lines, without a final newline.

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
            ``{label: count}``.

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

    @property
    def offsets_held_elsewhere(self):
        """Of `offsets_lost`, those another copy given to the recovery holds intact (`RecoveryAction.held_by`)."""
        return sum(a.offsets_lost or 0 for a in self.actions if a.held_by)

    def summary(self):
        """The last line of `text`: what was looked at, what is (or would be) done and lost.

        Returns
        -------
        str
            One line.

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
                + (f" ({self.offsets_held_elsewhere} of them held intact by another copy given)"
                   if self.offsets_held_elsewhere else "")
                + (" (and more whose count the damaged bytes do not say)" if unknown else "")
                + ("" if self.applied or not self.actions or self.refusals else " (give --apply to do them)"))

    __str__ = text


_DAMAGE_LABELS = {ActionKind.TRUNCATE: "log truncated", ActionKind.CUT: "damaged bytes cut out",
                  ActionKind.DELETE: "segment removed", ActionKind.RENAME: "segment renamed",
                  ActionKind.APPEND: "end-transaction marker written"}


#: how a routine write is listed, by the suffix of the file written
_WRITTEN_LABELS = tuple((s, f"{s} rebuilt") for s in SIDE_FILE_SUFFIXES) + \
    ((SNAPSHOT_SUFFIX, "producer snapshot written"),)


def _routine_label(action):
    """The group a routine action is listed under in `RecoveryPlan.text`."""
    name = os.path.basename(action.file)
    if action.kind is ActionKind.WRITE:
        for suffix, label in _WRITTEN_LABELS:
            if name.endswith(suffix):
                return label
        return f"{name} rewritten"
    if action.kind is ActionKind.RENAME:
        return "interrupted swap finished"
    if name.endswith(SNAPSHOT_SUFFIX):
        return "producer snapshot removed"
    if "entries relative to the wrong base offset" in action.message:
        return "index of a renamed segment removed"
    return "broker leftover removed"
