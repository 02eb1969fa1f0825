"""The routine fixes of a recovery, no record removed (rules 3 to 5 of `kafkafmt.recovery.plan`): a
segment's index files rewritten when they cannot stay, producer snapshots removed or written, the
``leader-epoch-checkpoint`` cut or rebuilt, and the log dir's offset checkpoints set to the log end offsets."""
from __future__ import annotations

import os

import numpy as np

from kafkafmt.errors import EncodeError, KafkafmtError
from kafkafmt.log import (INDEX_SUFFIX, LOG_SUFFIX, LOG_START_CHECKPOINT, PARTITION_DIR, RECOVERY_POINT_CHECKPOINT,
                          SNAPSHOT_SUFFIX, TIMEINDEX_SUFFIX, TXNINDEX_SUFFIX, segment_file_name, sidefiles)
from kafkafmt.recovery.actions import ActionKind, RecoveryAction
from kafkafmt.recovery.damage import INT32_MAX
from kafkafmt.recovery.indexes import index_entries, leader_epochs, record_time_offsets
from kafkafmt.recovery.names import name_offset

__all__ = ["plan_indexes", "sound_snapshots", "plan_snapshots", "plan_leader_epochs", "plan_checkpoints"]


def _read_or_none(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def plan_indexes(folder, n, here, base, scan, batches, aborted, opts, log_dir):
    stem = n[:-len(LOG_SUFFIX)]
    out = []
    table = _Laid(batches)
    # indexes a check against these very batches found sound (`SegmentScan.sound`): only a time index's last
    # entry is looked at (stale or not); nothing is built unless written -- when nothing can fail to encode
    sound = scan.sound if batches is scan.batches and opts.timeindex_offsets == "batch" and _encodes(scan) else {}
    plans = []
    for suffix in (INDEX_SUFFIX, TIMEINDEX_SUFFIX):
        name = stem + suffix
        if suffix in sound:
            why = _stale_timeindex(sound[suffix], table) if suffix == TIMEINDEX_SUFFIX else None
        else:
            data = _read_or_none(here[name]) if name in here else None
            why = f"no {suffix} file (a broker rebuilds missing indexes at start-up)" if data is None else data
        plans.append((suffix, name, why))
    written = any(why is not None for _, _, why in plans)
    if written and not opts.contents and batches is scan.batches and _encodes(scan) \
            and not any(isinstance(why, bytes) for _, _, why in plans):
        # a plan only counted: each index to write is said, none built (nothing on disk to compare it with,
        # and nothing that can fail to encode)
        return [RecoveryAction(ActionKind.WRITE, os.path.join(folder, name), f"{why}: rebuilt from the log "
                               f"(LogSegment.recover)", log_dir=log_dir)
                for _, name, why in plans if why is not None] + _plan_txnindex(folder, stem, here, aborted, log_dir)
    if written:
        rec = record_time_offsets(scan.path, batches) if opts.timeindex_offsets == "record" else None
        try:
            index, timeindex = index_entries(batches, index_interval_bytes=opts.index_interval_bytes,
                                             timeindex_offsets=opts.timeindex_offsets, record_offsets=rec)
            # those needed -- both where an entry might not encode: that leaves both alone
            wanted = {suffix for suffix, _, why in plans if why is not None} \
                if batches is scan.batches and _encodes(scan) else {INDEX_SUFFIX, TIMEINDEX_SUFFIX}
            new = {}
            if INDEX_SUFFIX in wanted:
                new[INDEX_SUFFIX] = sidefiles.encode_index(index, base)
            if TIMEINDEX_SUFFIX in wanted:
                new[TIMEINDEX_SUFFIX] = sidefiles.encode_timeindex(timeindex, base)
        except EncodeError:
            # offsets more than 2^31-1 past the base offset: the broker splits such a segment first
            # (LocalLog.splitOverflowedSegment, KAFKA-6264); not done here, the indexes are left alone
            return []
        for suffix, name, why in plans:
            if isinstance(why, bytes):          # an index on disk: rebuilt when it cannot stay
                why = None if why == new[suffix] else _index_problem(suffix, why, base, table)
            if why is not None:
                out.append(RecoveryAction(ActionKind.WRITE, os.path.join(folder, name), f"{why}: rebuilt from the "
                                          f"log ({len(index if suffix == INDEX_SUFFIX else timeindex)} entries; "
                                          f"LogSegment.recover)", data=new[suffix], log_dir=log_dir))
    return out + _plan_txnindex(folder, stem, here, aborted, log_dir)


def _plan_txnindex(folder, stem, here, aborted, log_dir):
    """A segment's ``.txnindex`` rewritten when it does not list the log's aborted transactions."""
    out = []
    name = stem + TXNINDEX_SUFFIX
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


class _Laid(dict):
    """A segment's batch columns with ``position`` where each batch will lie (laid out from 0), worked out only
    when asked for (the usual sound index needs its max timestamps alone)."""

    def __init__(self, batches):
        super().__init__(batches)
        self.pop("position", None)

    def __missing__(self, key):
        if key != "position":
            raise KeyError(key)
        size = self["size"]
        positions = np.concatenate(([0], np.cumsum(size)[:-1])) if len(size) else np.zeros(0)
        self[key] = positions = positions.astype(np.int64)
        return positions


def _index_problem(suffix, data, base, table):
    """Why an existing index cannot stay (None: it is valid for the log as it will be)."""
    try:
        why = sidefiles.index_sanity_problem(data, suffix, base)
        if why is not None:
            return why
        if suffix == INDEX_SUFFIX:
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
    offset, positions within 2^31-1): `plan_indexes` then builds them only to write them."""
    b = scan.batches
    return not len(b["last_offset"]) or (int(b["last_offset"][-1]) - scan.base_offset <= INT32_MAX
                                          and scan.size <= INT32_MAX and int(b["base_offset"][0]) >= scan.base_offset)


def sound_snapshots(here, act):
    """The producer snapshots of a partition that read, ``{offset: name}``; an unreadable one removed
    (``ProducerStateManager.loadFromSnapshot`` deletes a corrupt one)."""
    snaps = {}
    for n in sorted(here):
        if n.endswith(SNAPSHOT_SUFFIX) and name_offset(n) is not None:
            try:
                sidefiles.read_producer_snapshot(here[n])
                snaps[name_offset(n)] = n
            except (KafkafmtError, OSError) as exc:
                act(ActionKind.DELETE, here[n], f"unreadable producer snapshot ({getattr(exc, 'reason', exc)}): "
                                                f"removed (ProducerStateManager.loadFromSnapshot)")
    return snaps


def plan_snapshots(folder, here, snaps, end_offset, cut_after, state, any_batches, log_dir, contents=True):
    """Rule 4: (the snapshots removed -- past the new log end offset, or counting batches of a damaged
    range removed at ``cut_after`` --, the snapshot written at the log end offset when none is left
    there; its bytes built only with ``contents``)."""
    snap_acts, written = [], []
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
        name = segment_file_name(end_offset, SNAPSHOT_SUFFIX)
        written.append(RecoveryAction(
            ActionKind.WRITE, os.path.join(folder, name), f"no producer snapshot at the log end offset "
            f"{end_offset}: written from the {state.producer_count()} producers' state (ProducerStateManager."
            f"takeSnapshot)", data=sidefiles.encode_producer_snapshot(state.snapshot_entries()) if contents else None,
            log_dir=log_dir))
    return snap_acts, written


def plan_leader_epochs(path, end_offset, epoch_rows, log_dir, opts):
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


def plan_checkpoints(plan, log_dir, ends):
    """recovery-point-offset-checkpoint and log-start-offset-checkpoint entries of the partitions."""
    keys = {}
    for folder, (first_base, end) in ends.items():
        m = PARTITION_DIR.match(os.path.basename(folder))
        keys[(m.group("topic"), int(m.group("partition")))] = (first_base, end)
    for name in (RECOVERY_POINT_CHECKPOINT, LOG_START_CHECKPOINT):
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
            if name == RECOVERY_POINT_CHECKPOINT:
                # only entries the broker keeps (a partition it does not list, such as the KRaft
                # __cluster_metadata log, is not added: the broker then recovers it from 0 itself)
                if old is not None and old != end:
                    new[tp] = end
                    changes.append(f"{tp[0]}-{tp[1]} {old} -> {end}")
            elif old is not None and old > end:
                new[tp] = end
                changes.append(f"{tp[0]}-{tp[1]} {old} -> {end} (past the log end offset)")
        if current is None or changes:
            what = "recovery point (log end offset; all segments checked)" if name == RECOVERY_POINT_CHECKPOINT else \
                "log start offset"
            msg = ("unreadable: rewritten" if current is None else f"{what}: " + ", ".join(changes[:5]) +
                   (f" and {len(changes) - 5} more" if len(changes) > 5 else ""))
            plan.actions.append(RecoveryAction(ActionKind.WRITE, path, msg + " (LogLoader.load)",
                                               data=sidefiles.encode_offset_checkpoint(new), log_dir=log_dir))
