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

Each rule has its module: `leftovers` (1), `overlaps`, `damage` and `transactions` (2: segments placed
against their content, what damaged bytes held, the transactions the damage leaves open), `routine` (3 to
5); `roots` resolves the paths given, `actions` holds what a plan is made of. This module walks each
partition's segments in offset order, one concern: a segment's fate depends on the ones before it (the log
end offset so far, the producer state replayed, the first damage in Kafka's way), so the walk and the
actions it makes stay together.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from kafkafmt.log import (LOG_SUFFIX, DEFAULT_INDEX_INTERVAL, LEADER_EPOCH_CHECKPOINT, ReportEntry, ReportKind,
                          damage_words, is_leftover_dir, sidefiles)
from kafkafmt.recovery.actions import ActionKind, RecoveryAction, RecoveryPlan
from kafkafmt.recovery.copies import held_elsewhere
from kafkafmt.recovery.damage import first_at_stake, header_last_offset, lost_range, lost_tuple
from kafkafmt.recovery.indexes import ProducerState
from kafkafmt.recovery.leftovers import plan_leftovers
from kafkafmt.recovery.names import INDEX_SUFFIXES, TEMP_SUFFIX, log_base
from kafkafmt.recovery.overlaps import known_scan, misnamed_segment, overlapping_segments
from kafkafmt.recovery.roots import resolve_roots
from kafkafmt.recovery.routine import (plan_checkpoints, plan_indexes, plan_leader_epochs, plan_snapshots,
                                       sound_snapshots)
from kafkafmt.recovery.transactions import OPEN_TRANSACTIONS, Replan, append_markers, plan_open_transactions
from kafkafmt.storage import listed_file_names

__all__ = ["ActionKind", "RecoveryAction", "RecoveryPlan", "plan_recovery", "TEMP_SUFFIX", "OPEN_TRANSACTIONS"]


@dataclass
class _Options:
    kafka_compatible: bool
    index_interval_bytes: int
    timeindex_offsets: str
    open_transactions: object = None
    known: dict = None          # {absolute .log path: SegmentScan} made already
    epochs: dict = None         # {absolute leader-epoch-checkpoint path: its entries}, read and found sound
    contents: bool = True       # the new files' contents built (False: a plan only counted)
    listings: dict = None       # {absolute partition folder: its listing} made already


def plan_recovery(paths, *, kafka_compatible=False, index_interval_bytes=DEFAULT_INDEX_INTERVAL,
                  timeindex_offsets="batch", open_transactions=None, scans=None, log_dirs=None,
                  epochs=None, contents=True, listings=None) -> RecoveryPlan:
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
    contents : bool
        False: the routine files' new contents are not built where nothing on disk must be compared with
        them (a segment's rebuilt indexes, a producer snapshot written): those actions carry ``data=None`` and
        a shorter message, the same actions otherwise. Such a plan is only counted (`pending_fixes`):
        `apply_plan` refuses it.
    listings : dict, optional
        ``{partition folder: its listing}`` (`kafkafmt.log.Partition.listing`) where the folders were listed
        already: their files are taken from it (`kafkafmt.storage.listed_file_names`), not listed again. Only for
        a plan made a moment after the listing, with nothing written between (``verify``'s `pending_fixes`).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if open_transactions not in (None,) + OPEN_TRANSACTIONS:
        raise ValueError(f"open_transactions must be one of {OPEN_TRANSACTIONS} or None, not {open_transactions!r}")
    known = {os.path.abspath(s.path): s for s in scans or ()}
    opts = _Options(kafka_compatible, index_interval_bytes, timeindex_offsets, open_transactions, known,
                    {os.path.abspath(p): e for p, e in (epochs or {}).items()}, bool(contents),
                    {os.path.abspath(f): listing for f, listing in (listings or {}).items()})
    roots = [r for p in paths for r in resolve_roots(p, log_dirs)]
    plan = RecoveryPlan(roots=roots, kafka_compatible=opts.kafka_compatible, contents=opts.contents)
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
            except Replan as again:            # a choice about a transaction the damage leaves open
                del plan.problems[mark[0]:], plan.actions[mark[4]:]
                plan.partitions, plan.segments, plan.bytes = mark[1:4]
                end = _plan_partition(plan, folder, ld, again.opts or opts, root.only_log, markers=again.markers)
            if end is not None and not is_leftover_dir(folder) and root.only_log is None:
                ends[folder] = end
        if ld is not None and ends:
            plan_checkpoints(plan, ld, ends)
    held_elsewhere(plan)
    return plan


def _plan_partition(plan, folder, log_dir, opts, only_log, markers=None):
    """Actions for one partition folder; returns (log start, log end offset) after recovery.
    ``markers``: end-transaction markers to write at the log end (`plan_open_transactions`)."""
    plan.partitions += 1
    acts = []

    def act(kind, path, message, **kw):
        acts.append(RecoveryAction(kind, path, message, log_dir=log_dir, **kw))

    listing = opts.listings.get(folder) if opts.listings else None
    if listing is not None:
        names = listed_file_names(listing)
    else:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if e.is_file()]
        names.sort()
    here = {n: folder + os.sep + n for n in names}               # final name -> where its bytes are now

    # 1. leftovers (LogLoader.removeTempFilesAndCollectSwapFiles)
    plan_leftovers(plan, folder, names, here, act)

    # 2. segments and their data
    logs = sorted((log_base(n), n) for n in here if log_base(n) is not None)
    scans = {}                  # the segments scanned already (those that overlap another)
    logs, refused = overlapping_segments(plan, here, logs, scans, act, opts)
    snaps = sound_snapshots(here, act)
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
        scan = scans.pop(n) if n in scans else known_scan(here[n], base, opts)
        if scan.first_offset is not None and scan.first_offset < base and n not in refused:
            renamed = misnamed_segment(plan, folder, here, n, scan.first_offset, end_offset if k else None, act)
            if renamed is not None:
                base, n = logs[k] = renamed
                scan = known_scan(here[n], base, opts)
        path = os.path.join(folder, n)
        plan.segments += 1
        plan.bytes += scan.size
        plan.problems.extend(scan.damage)
        batches = scan.batches
        if scan.damage:
            first = scan.damage[0]
            kept_end = int(first.start)
            here_cut = first_at_stake(scan, here[n], kept_end, end_offset if k else None)
            first_offset = first.offset if first.offset is not None else here_cut
            if opts.kafka_compatible:
                keep = batches["position"] < kept_end
                batches = {c: v[keep] for c, v in batches.items()}
                for later_base, later in logs[k + 1:]:
                    held = (scans.get(later) or known_scan(here[later], later_base, opts)).batches \
                        if later in here else None
                    for suffix in (LOG_SUFFIX,) + INDEX_SUFFIXES:
                        name = later[:-len(LOG_SUFFIX)] + suffix
                        if name in here:
                            lost = ()
                            if suffix == LOG_SUFFIX and held is not None and len(held["base_offset"]):
                                lost = ((int(held["base_offset"][0]), int(held["last_offset"][-1])),)
                            data_acts.insert(0, RecoveryAction(
                                ActionKind.DELETE, here[name], f"segment after the corruption in {n}: deleted as "
                                "the broker does (LogLoader.recoverLog)", log_dir=log_dir, lost=lost))
                after = scan.batches["last_offset"][scan.batches["position"] >= kept_end]
                last = int(after[-1]) if len(after) else header_last_offset(here[n], kept_end, scan.size)
                data_acts.append(RecoveryAction(
                    ActionKind.TRUNCATE, path, f"{damage_words(first)}; truncated at the first invalid batch as the "
                    f"broker does (LogSegment.recover)", start=kept_end, end=scan.size, offset=first_offset,
                    log_dir=log_dir, lost=lost_tuple(here_cut, last)))
                logs = logs[:k + 1]
            else:
                ranges = scan.kept_ranges()
                if len(ranges) <= 1 and (not ranges or ranges[0][0] == 0):
                    data_acts.append(RecoveryAction(
                        ActionKind.TRUNCATE, path, damage_words(first) + "; truncated after the last intact batch "
                        "(LogSegment.recover)", start=kept_end, end=scan.size, offset=first_offset,
                        log_dir=log_dir, lost=lost_tuple(here_cut, header_last_offset(here[n], kept_end,
                                                                                        scan.size))))
                else:
                    removed = tuple((int(e.start), int(e.end), damage_words(e)) for e in scan.damage)
                    data_acts.append(RecoveryAction(
                        ActionKind.CUT, path, f"{len(removed)} damaged range(s) removed, "
                        f"{len(batches['size'])} intact batches kept (Kafka would truncate at position "
                        f"{kept_end}): {damage_words(first)}", start=kept_end, end=int(first.end), offset=first_offset,
                        removed=removed, log_dir=log_dir,
                        lost=tuple(r for st, en, _ in removed
                                   for r in lost_range(scan, here[n], st, en, end_offset if k else None))))
            cut_after = here_cut if cut_after is None else min(cut_after, here_cut)
            damage_points.append((here_cut, scan.path, [(int(e.start), int(e.end)) for e in scan.damage]))
        controls = scan.controls
        if markers and k == len(logs) - 1:          # the chosen end-transaction markers, at the log end
            at = max(end_offset, base, int(batches["last_offset"][-1]) + 1 if len(batches["last_offset"]) else 0)
            batches, controls, marker_act = append_markers(batches, controls, markers, at, path, log_dir)
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
        index_acts += plan_indexes(folder, n, here, base, scan, batches, aborted, opts, log_dir)
        if opts.kafka_compatible and scan.damage:
            break
    if only_log is not None:
        keep = {os.path.abspath(only_log)}
        stem = os.path.abspath(only_log)[:-len(LOG_SUFFIX)]
        keep |= {stem + s for s in INDEX_SUFFIXES}
        plan.actions += [a for a in acts + data_acts + index_acts if os.path.abspath(a.file) in keep]
        return None

    if damage_points and not opts.kafka_compatible and not markers:
        plan_open_transactions(plan, folder, state, damage_points, kept, opts)

    # 4. producer snapshots
    snap_acts = []
    if end_offset is not None:
        snap_acts, written = plan_snapshots(folder, here, snaps, end_offset, cut_after, state, any_batches, log_dir,
                                             opts.contents)
        index_acts += written
    # 5. leader epochs
    epochs = here.get(LEADER_EPOCH_CHECKPOINT)
    if epochs is not None and end_offset is not None:
        index_acts += plan_leader_epochs(epochs, end_offset, epoch_rows, log_dir, opts)
    plan.actions += acts + snap_acts + data_acts + index_acts
    if not logs:
        return None
    return logs[0][0], end_offset
