"""The broker's own leftovers in a partition folder, planned as ``LogLoader`` clears them at start-up (rule 1
of `kafkafmt.recovery.plan`): a recovery's temporary files, ``.deleted`` and ``.cleaned`` files, ``.swap`` files
of an interrupted split removed, the other ``.swap`` files finished, index files without their ``.log``
removed."""
from __future__ import annotations

import os

from kafkafmt.log import LEFTOVER_SUFFIXES, LOG_SUFFIX, SEGMENT_DIGITS, SWAP_SUFFIX, ReportEntry, ReportKind, segment_file_name
from kafkafmt.log import CLEANED_SUFFIX, DELETED_SUFFIX
from kafkafmt.recovery.actions import ActionKind
from kafkafmt.recovery.indexes import scan_segment
from kafkafmt.recovery.names import INDEX_SUFFIXES, SNAPSHOT_DELETED, TEMP_SUFFIX, name_offset

__all__ = ["plan_leftovers"]

#: the names `plan_leftovers` clears before the index files without their segment
_LEFTOVER_SUFFIXES = (TEMP_SUFFIX,) + LEFTOVER_SUFFIXES


def plan_leftovers(plan, folder, names, here, act):
    """The leftovers among a partition folder's files ``names``: each removed or renamed through ``act``
    (as `kafkafmt.recovery.plan` makes actions) and said in ``plan.problems``; ``here`` (final name -> where
    its bytes are now) is kept up to date (LogLoader.removeTempFilesAndCollectSwapFiles, LogLoader.load)."""
    gone = set()
    drop = _dropper(plan, here, act, gone)
    if any(n.endswith(_LEFTOVER_SUFFIXES) for n in names):     # (the usual folder has none of them)
        _temporary_files(plan, folder, names, here, act, gone, drop)
    _orphan_indexes(here, drop)


def _temporary_files(plan, folder, names, here, act, gone, drop):
    """A recovery's temporary files, ``.deleted``, ``.cleaned`` and ``.swap`` files (`plan_leftovers`)."""
    for n in names:
        if n.endswith(TEMP_SUFFIX):
            drop(n, "temporary file of an interrupted recovery")
    for n in names:
        if n in gone:
            continue
        if n.endswith(DELETED_SUFFIX) and not n.endswith(SNAPSHOT_DELETED):
            drop(n, "stray file marked for deletion (.deleted): removed (LogLoader."
                    "removeTempFilesAndCollectSwapFiles)")
    cleaned = [n for n in here if n.endswith(CLEANED_SUFFIX)]
    min_cleaned = min((name_offset(n) for n in cleaned if name_offset(n) is not None), default=None)
    swaps = [n for n in here if n.endswith(SWAP_SUFFIX)]
    valid_swaps = []
    for n in swaps:
        if min_cleaned is not None and name_offset(n) is not None and name_offset(n) >= min_cleaned:
            drop(n, f".swap file of an interrupted segment split (base offset at or above the .cleaned "
                    f"offset {min_cleaned}): removed (KAFKA-6264; LogLoader.removeTempFilesAndCollectSwapFiles)")
        else:
            valid_swaps.append(n)
    for n in cleaned:
        drop(n, "stray .cleaned file of an interrupted log cleaning: removed (LogLoader."
                "removeTempFilesAndCollectSwapFiles)")
    swap_logs = [n for n in valid_swaps if n[:-len(SWAP_SUFFIX)].endswith(LOG_SUFFIX) and name_offset(n) is not None]
    if swap_logs:
        lo = min(name_offset(n) for n in swap_logs)
        hi = max(scan_segment(here[n], name_offset(n)).next_offset for n in swap_logs)
        for n in sorted(here):
            off = name_offset(n)
            if n.endswith(SWAP_SUFFIX) or off is None:
                continue
            if lo <= off < hi:
                drop(n, f"replaced by the interrupted swap of offsets {lo}..{hi - 1} (compacted or split, not yet "
                        f"deleted): removed (LogLoader.load, second pass)")
    for n in valid_swaps:
        final = n[:-len(SWAP_SUFFIX)]
        src = here.pop(n)
        if final in here:
            drop(final, "replaced by its .swap file")
        act(ActionKind.RENAME, src, "interrupted swap finished by renaming (LogLoader.load, third pass)",
            target=os.path.join(folder, final))
        plan.problems.append(ReportEntry(ReportKind.LEFTOVER, src, "interrupted .swap operation"))
        here[final] = src


def _dropper(plan, here, act, gone):
    """``drop(name, message)``: a file removed through ``act``, said in ``plan.problems``, taken out of ``here``."""
    def drop(name, message):
        act(ActionKind.DELETE, here[name], message)
        plan.problems.append(ReportEntry(ReportKind.LEFTOVER, here[name], message))
        gone.add(name)
        del here[name]
    return drop


def _orphan_indexes(here, drop):
    """Index files without their ``.log`` dropped (LogLoader.loadSegmentFiles)."""
    for n in sorted(here):
        if n.endswith(INDEX_SUFFIXES):
            stem = n[:n.rindex(".")]
            if len(stem) == SEGMENT_DIGITS and stem.isascii() and stem.isdigit() and stem + LOG_SUFFIX in here:
                continue                # (the usual index, named as its segment)
            if name_offset(n) is not None:
                log = segment_file_name(name_offset(n), LOG_SUFFIX)
                if log not in here:
                    drop(n, f"index file without its {log}: removed (LogLoader.loadSegmentFiles)")
