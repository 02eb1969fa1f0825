"""Transactions the damage leaves open: said in the plan, refused until a choice is made, and the
end-transaction markers written when ``abort`` or ``commit`` is chosen."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from kafkafmt.recovery.actions import ActionKind, RecoveryAction

__all__ = ["OPEN_TRANSACTIONS", "Replan", "plan_open_transactions", "append_markers"]

#: what to do with a transaction whose end marker the damage removed while later batches are kept
OPEN_TRANSACTIONS = ("truncate", "abort", "commit")


class Replan(Exception):
    """Plan a partition again: in Kafka's way (``opts``), or with end-transaction ``markers``."""

    def __init__(self, opts=None, markers=None):
        super().__init__("replan")
        self.opts, self.markers = opts, markers


def plan_open_transactions(plan, folder, state, damage_points, kept, opts):
    """Transactions the damage leaves open while intact batches after it are kept: said in the plan
    (which producer, from which offset, how many records ``read_committed`` readers lose), and
    refused unless ``open_transactions`` chose what to do (then `Replan`)."""
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
                                 + (", commit (write the COMMIT marker the damaged bytes show)"
                                    if shown and shown[0] == "commit" else ""))
        elif choice == "commit" and not (shown and shown[0] == "commit"):
            plan.refusals.append(text + "; --open-transactions commit writes only a COMMIT marker the damaged bytes "
                                        "still show: choose abort or truncate")
        elif choice in ("abort", "commit"):
            ts = shown[3] if shown else entry[4]
            coord = shown[2] if shown else max(entry[5], 0)
            markers[pid] = (choice, entry[0], coord, ts)
    if markers:
        raise Replan(markers=markers)
    if any(t["choice"] == "truncate" for t in plan.transactions if t["folder"] == folder):
        raise Replan(opts=replace(opts, kafka_compatible=True, open_transactions="truncate"))


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


def append_markers(batches, controls, markers, at, path, log_dir):
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
