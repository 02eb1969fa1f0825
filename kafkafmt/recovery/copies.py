"""Records a recovery removes from one copy of a partition that another copy given to it holds intact: a cluster's
log dirs recovered together (several brokers' copies of each partition), a damaged stretch cut out of one copy that
another copy of the same incarnation reads back strictly is still in the cluster -- where a broker's follower would
fetch it again from its leader.

`held_elsewhere` marks each such action (`RecoveryAction.held_by`: the folders holding every offset it removes,
read strictly, CRCs checked, before anything changes); `RecoveryPlan.offsets_held_elsewhere` counts them. Nothing
else changes: each copy is still repaired as planned, on its own (the intact batches are not copied over)."""
from __future__ import annotations

import dataclasses
import os
import warnings

from kafkafmt.errors import KafkafmtError, KafkafmtWarning
from kafkafmt.log import PARTITION_DIR, PARTITION_METADATA, is_leftover_dir, read_partition_metadata

__all__ = ["held_elsewhere"]


def held_elsewhere(plan):
    """Set ``held_by`` on the plan's actions whose removed offsets (all of them, each range with a known end)
    another copy of the partition given to the plan holds intact. Copies whose ``partition.metadata`` name
    different topic ids are other incarnations, never holders."""
    lossy = [i for i, a in enumerate(plan.actions) if a.lost and all(last is not None for _, last in a.lost)]
    if not lossy:
        return
    copies = {}
    for root in plan.roots:
        for folder in root.partitions:
            name = os.path.basename(folder)
            if PARTITION_DIR.match(name) and not is_leftover_dir(folder):
                copies.setdefault(name, []).append(folder)
    ids = {}
    for i in lossy:
        a = plan.actions[i]
        folder = os.path.dirname(a.file)
        others = [f for f in copies.get(os.path.basename(folder), ()) if f != folder]
        if not others:
            continue
        mine = _topic_id(folder, ids)
        holders = tuple(f for f in others if _same_incarnation(mine, _topic_id(f, ids))
                        and all(_holds(f, first, last) for first, last in a.lost))
        if holders:
            plan.actions[i] = dataclasses.replace(a, held_by=holders)


def _topic_id(folder, ids):
    if folder not in ids:
        try:
            ids[folder] = read_partition_metadata(os.path.join(folder, PARTITION_METADATA))["topic_id"]
        except (KafkafmtError, OSError):
            ids[folder] = None
    return ids[folder]


def _same_incarnation(a, b):
    return a is None or b is None or a == b


def _holds(folder, first, last):
    """Whether the copy in ``folder`` reads offsets ``first..last`` strictly (every batch sound, CRCs checked)
    and holds both ends."""
    from kafkafmt.read import read_log_dir

    try:
        with warnings.catch_warnings():         # (a missing index is planning's to say, not the recovery's)
            warnings.simplefilter("ignore", KafkafmtWarning)
            recs = read_log_dir(folder, start_offset=first, end_offset=last + 1, columns=["offset"],
                                errors="strict", threads=1)
    except KafkafmtError:
        return False
    offsets = recs.offset
    return bool(len(offsets)) and int(offsets[0]) == first and int(offsets[-1]) == last
