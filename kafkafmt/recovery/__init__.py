"""Offline recovery: check, repair and re-index a broker's log dir before the broker starts.

``recover(path)`` plans (dry run); ``recover(path, apply=True)`` also carries the plan out, with
every removed byte and replaced file saved in a backup folder and listed in a manifest that
``undo(manifest)`` reverts. ``rebuild_indexes(segment)`` computes one segment's indexes from its
``.log`` alone.

Modules: `plan` (what to do and why: a partition's segments walked rule by rule), with `actions` (what a
plan is made of), `roots` (the paths given), `names` (the file names planned by), `leftovers` (the broker's
own), `overlaps` (segments placed against their content), `damage` (what damaged bytes held),
`transactions` (those the damage leaves open), `routine` (indexes, snapshots, checkpoints); `indexes`
(scanning a segment, rebuilding its indexes and the producer state), `apply` (the journal: backups,
manifest, undo), `lock` (the broker's ``.lock``).
"""
from __future__ import annotations

import os

from kafkafmt.errors import RecoveryError
from kafkafmt.recovery.apply import MANIFEST, apply_plan, undo
from kafkafmt.recovery.indexes import (ProducerState, RebuiltIndexes, SegmentScan, rebuild_indexes, scan_of_batches,
                                       scan_segment)
from kafkafmt.recovery.lock import check_not_written, lock_holder, locked_log_dir
from kafkafmt.recovery.plan import ActionKind, RecoveryAction, RecoveryPlan, plan_recovery
from kafkafmt.log import DEFAULT_INDEX_INTERVAL

__all__ = ["recover", "pending_fixes", "undo", "rebuild_indexes", "plan_recovery", "apply_plan", "RecoveryPlan", "RecoveryAction",
           "ActionKind", "RebuiltIndexes", "SegmentScan", "ProducerState", "scan_segment", "scan_of_batches", "lock_holder",
           "locked_log_dir", "MANIFEST"]


def recover(path, apply=False, *, kafka_compatible=False, backup=None, force=False,
            index_interval_bytes=DEFAULT_INDEX_INTERVAL, timeindex_offsets="batch",
            open_transactions=None) -> RecoveryPlan:
    """Recover local log dirs, partition folders or segments as a broker would at start-up, losing less.

    Parameters
    ----------
    path : path or list of paths
        Log dirs, partition folders or ``<base>.log`` segments (local only: object storage URLs
        raise `kafkafmt.errors.RecoveryError`).
    apply : bool
        False (default): only plan -- nothing is written. True: carry the plan out (backups and a
        manifest first; see `kafkafmt.recovery.apply`).
    kafka_compatible : bool
        Truncate each damaged segment at its first damage and delete the partition's later
        segments, exactly as ``LogLoader.recoverLog`` does. Default: keep every intact batch,
        removing only the damaged bytes.
    backup : path, optional
        The backup folder (default ``<log dir>.recover-<time>`` beside the log dir).
    force : bool
        Repair even when the log dir's ``.lock`` is held by another process (a running broker).
    index_interval_bytes : int
        The topics' ``index.interval.bytes``.
    timeindex_offsets : {"batch", "record"}
        Offsets of time index entries: the batch's last offset (Kafka since KAFKA-16310, and its
        recovery always) or the record's (leaders before KAFKA-16310).

    open_transactions : {None, "truncate", "abort", "commit"}
        When the damage removes a transaction's end marker while intact batches after it are kept
        (``read_committed`` readers would see nothing from the transaction on): None (default)
        refuses and says so (``plan.transactions``, ``plan.refusals``); "truncate" truncates that
        partition at the damage, as Kafka does; "abort" or "commit" (only the COMMIT the damaged
        bytes still show) writes the marker at the log end. See `plan_recovery`.

    Returns
    -------
    RecoveryPlan
        The actions (`RecoveryAction`) and the damage found (`ReportEntry`); after ``apply``,
        ``plan.manifests`` lists the manifests written.

    Raises
    ------
    LogDirLockedError
        A log dir is held by a running broker (its ``.lock``) or a LogWriter, or (``apply``) a LogWriter
        is writing to a partition folder, unless ``force``.
    RecoveryError
        ``apply`` asked of a plan with ``refusals`` (nothing is changed), or a change failed part way
        (the message names what was changed, the manifest and the undo command).

    Examples
    --------
    A copy of a sample partition with a damaged batch: the plan keeps the intact batches around it;
    ``apply=True`` carries it out (the damaged records are gone, the others read again) and
    `undo_recovery` puts every byte back:

    >>> import kafkafmt
    >>> from kafkafmt.sample import damaged_copy
    >>> folder = damaged_copy("damaged/payments-0")     # its second batch damaged
    >>> kafkafmt.read_log_dir(folder)
    Traceback (most recent call last):
    ...
    kafkafmt.errors.CrcError: ...
    >>> plan = kafkafmt.recover(folder, apply=True, backup="backup")
    >>> plan.applied, plan.bytes_removed, plan.manifests
    (True, 317, ['backup/manifest.jsonl'])
    >>> len(kafkafmt.read_log_dir(folder))
    105
    >>> restored = kafkafmt.undo_recovery(plan.manifests[0])
    >>> len(restored)
    3
    """
    plan = plan_recovery(path, kafka_compatible=kafka_compatible, index_interval_bytes=index_interval_bytes,
                         timeindex_offsets=timeindex_offsets, open_transactions=open_transactions)
    for root in plan.roots:
        if root.log_dir is not None and not force and lock_holder(root.log_dir):
            with locked_log_dir(root.log_dir, force=False):
                pass                            # raises LogDirLockedError with the message
        for folder in root.partitions if apply and not force else ():
            check_not_written(folder)
    if apply and plan.refusals:
        raise RecoveryError("recovery refused, nothing was changed: " + "; ".join(plan.refusals))
    if apply and plan.actions:
        apply_plan(plan, backup, force=force)
    return plan


def pending_fixes(paths, *, log_dirs=None, scans=None, epochs=None, listings=None, **options):
    """What a dry run of `recover` would still do on ``paths`` -- on a log dir that ``verify`` calls
    sound, the routine fixes a broker also makes at start-up after an unclean shutdown (time
    indexes without their final entry, producer snapshots missing at the log end): ``{label:
    count}`` (`RecoveryPlan.counts`), ``{}`` when nothing. Paths recover does not take (object
    storage, files other than segments) are left out.

    Parameters
    ----------
    paths : path or list of paths
        As ``kafkafmt verify`` takes them.
    log_dirs : list of str, optional
        The log dirs below ``paths`` when found already (`kafkafmt.log.Found.log_dirs_paths`): not walked
        for again.
    scans : iterable of SegmentScan, optional
        Scans of segments made already (`scan_of_batches`), not scanned again.
    epochs : dict, optional
        ``{path: entries}`` of the ``leader-epoch-checkpoint`` files read and found sound already.
    listings : dict, optional
        ``{partition folder: its listing}`` of the folders listed already (`plan_recovery`'s).
    **options
        `plan_recovery`'s (``index_interval_bytes``, ``timeindex_offsets``).

    Returns
    -------
    dict
        ``{label: count}``, empty when nothing would be done.

    Examples
    --------
    >>> import kafkafmt
    >>> from kafkafmt.sample import sample_dir
    >>> kafkafmt.recovery.pending_fixes([f"{sample_dir()}/orders-1", "s3://bucket/kafka-logs"])
    {'producer snapshot written': 1}
    """
    from kafkafmt.errors import KafkafmtError

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = {}
    scans = list(scans or ())
    log_dirs = None if log_dirs is None else [d for d in log_dirs if "://" not in os.fspath(d)]
    for p in paths:
        if "://" in os.fspath(p):
            continue
        try:
            plan = plan_recovery(p, scans=scans, log_dirs=log_dirs, epochs=epochs, contents=False,
                                 listings=listings, **options)
        except KafkafmtError:
            continue                          # not something recover takes
        for label, n in plan.counts().items():
            out[label] = out.get(label, 0) + n
    return out
