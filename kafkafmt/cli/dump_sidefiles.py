"""The side-file part of ``kafkafmt dump``: ``.index`` / ``.timeindex`` (entries, checked against
the log, or only the sanity check), ``.txnindex``, producer snapshots, checkpoints and metadata files,
as `kafkafmt.cli.dump` describes them."""
from __future__ import annotations

import os

import numpy as np

from kafkafmt.log import sidefiles

from kafkafmt.cli.common import Problem
from kafkafmt.log import LOG_SUFFIX, log_name_of
from kafkafmt.cli import paths as cli_paths
from kafkafmt.cli.reading import log_metadata
from kafkafmt.cli.dump_records import first_sequence


class SideFileDump:
    """`kafkafmt.cli.dump.Dumper`'s side-file part: one ``dump_<kind>`` method per kind of file
    (`kafkafmt.log.file_kind`), index entries checked against the batches of the log beside them.

    It uses the driver's settings (``args``, ``c`` the console, ``json``) and its ``problem`` /
    ``header``; it fills ``index_mismatches``, ``time_mismatch``, ``time_order`` and ``time_not_found``
    for the summaries Kafka prints at the end.
    """

    # -- index files --------------------------------------------------------------------------
    def log_meta(self, log):
        """(batches, record offsets, timestamps, batch rows) of a segment, cached for its index files."""
        if self._meta[0] != log:
            report = []
            meta = log_metadata(log, report)
            for e in report:
                if e.is_damage:
                    self.c.warn(f"{log}: position {e['start']}: {e['reason']} (the index is checked against the "
                                f"intact batches)")
            self._meta = (log, meta)
        return self._meta[1]

    def _sibling_log(self, path):
        name = log_name_of(path)
        log = None if name is None else cli_paths.sibling(path, name)
        return log if log is not None and cli_paths.exists(log) else None

    def _entries(self, path, kind, width, read):
        """(base offset, bytes, number of whole entries, the entries) of an index file of
        ``width``-byte entries (``read`` reads them), after its header line."""
        self.header(path, kind)
        base = sidefiles.offset_from_file_name(path)
        data = cli_paths.read_bytes(path)
        n = len(data) // width
        return base, data, n, read(data[:n * width], base, trim_zeros=False)

    def _checked_against(self, path):
        """The .log beside an index file, or None (said: its entries are printed unchecked)."""
        log = self._sibling_log(path)
        if log is None:
            self.c.warn(f"{path}: no {stem_log(path)} beside it: entries are printed unchecked")
        return log

    def dump_index(self, path):
        base, data, n, entries = self._entries(path, "index", 8, sidefiles.read_index)
        if self.args.index_sanity_check:
            problem = None
            if n and int(entries["offset"][n - 1]) < base:
                problem = (f"Corrupt index found, index file ({path}) has non-zero size but the last offset is "
                           f"{int(entries['offset'][n - 1])} which is less than the base offset {base}")
            elif len(data) % 8:
                problem = f"Index file {path} is corrupt, found {len(data)} bytes which is neither positive nor a multiple of 8"
            self.sanity_result(path, problem, (n - 1) * 8 if problem and n else len(data))
            return
        if n == 0:
            if self.json:
                self.c.json({"type": "empty", "file": path})
            else:
                self.c.write(f"{path} is empty.")
            return
        log = self._checked_against(path)
        last_at = None
        if log is not None:
            batches = self.log_meta(log)[0]
            if batches is not None and len(batches):
                last_at = dict(zip(batches["position"].tolist(), batches["last_offset"].tolist()))
            else:
                last_at = {}
        offs, poss = entries["offset"].tolist(), entries["position"].tolist()
        for i in range(n):
            off, pos = offs[i], poss[i]
            if off == base and i > 0:
                break     # the zero-filled tail of a preallocated index (as kafka-dump-log stops)
            if last_at is not None:
                got = last_at.get(pos, -1)
                if got != off:
                    self.index_mismatches.setdefault(os.path.abspath(path), []).append((off, got, pos))
            if not self.args.verify_index_only:
                if self.json:
                    self.c.json({"type": "index_entry", "file": path, "offset": off, "position": pos})
                else:
                    self.c.write(f"offset: {off} position: {pos}")

    def dump_timeindex(self, path):
        base, data, n, entries = self._entries(path, "timeindex", 12, sidefiles.read_timeindex)
        ts, offs = entries["timestamp"].tolist(), entries["offset"].tolist()
        if self.args.index_sanity_check:
            problem = None
            if n and ts[n - 1] < ts[0]:
                problem = (f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
                           f"timestamp is {ts[n - 1]} which is less than the first timestamp {ts[0]}")
            elif n and offs[n - 1] < base:
                problem = (f"Corrupt time index found, time index file ({path}) has non-zero size but the last "
                           f"offset is {offs[n - 1]} which is less than the first offset {base}")
            elif len(data) % 12:
                problem = (f"Time index file {path} is corrupt, found {len(data)} bytes which is neither positive "
                           f"nor a multiple of 12")
            self.sanity_result(path, problem, (n - 1) * 12 if problem and n else len(data))
            return
        log = self._checked_against(path)
        meta = None
        if log is not None:
            batches, _, rts, rb = self.log_meta(log)
            if batches is not None and len(batches):
                maxts = np.full(len(batches), -1, np.int64)
                if len(rb):
                    np.maximum.at(maxts, rb, rts)
                last = np.asarray(batches["last_offset"], np.int64)
                meta = (np.asarray(batches["base_offset"], np.int64), last, maxts)
            else:
                meta = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
        key = os.path.abspath(path)
        prev = -1
        for i in range(n):
            t, off = ts[i], offs[i]
            if off == base and i > 0:
                break
            if meta is not None:
                # an entry's offset may be any offset of the batch holding the max timestamp: Kafka
                # before KAFKA-16310 (3.8) wrote the record's offset, later ones the batch's last
                # offset, and the broker's time lookups accept both (kafka-dump-log flags the
                # former; kafkafmt, like `verify`, does not)
                first, last, maxts = meta
                j = int(np.searchsorted(last, off, "left"))
                if j >= len(last):
                    self.time_not_found.setdefault(key, []).append((off, -1))
                elif first[j] > off:
                    self.time_not_found.setdefault(key, []).append((off, int(last[j])))
                else:
                    if int(maxts[j]) != t:
                        self.time_mismatch.setdefault(key, []).append((t, int(maxts[j])))
                    if prev >= t:
                        self.time_order.setdefault(key, []).append((t, prev))
            if not self.args.verify_index_only:
                if self.json:
                    self.c.json({"type": "timeindex_entry", "file": path, "timestamp": t, "offset": off})
                else:
                    self.c.write(f"timestamp: {t} offset: {off}")
            prev = t

    def sanity_result(self, path, problem, position):
        if problem is None:
            if self.json:
                self.c.json({"type": "sanity_check", "file": path, "passed": True})
            else:
                self.c.write(f"{path} passed sanity check.")
            return
        self.failed = True
        if self.json:
            self.c.json({"type": "sanity_check", "file": path, "passed": False, "position": position,
                         "message": problem})
        else:
            self.c.message(problem)

    # -- other side files ---------------------------------------------------------------------
    def dump_txnindex(self, path):
        self.header(path, "txnindex")
        data = cli_paths.read_bytes(path)
        n = len(data) // 34
        if len(data) % 34:
            self.problem(Problem("error", path, f"partial entry of {len(data) % 34} bytes at the end "
                                                f"(Kafka ignores it)", n * 34))
        for e in sidefiles.read_txnindex(data[:n * 34]):
            if self.json:
                self.c.json({"type": "aborted_txn", "file": path, "version": int(e["version"]),
                             "producerId": int(e["producer_id"]), "firstOffset": int(e["first_offset"]),
                             "lastOffset": int(e["last_offset"]), "lastStableOffset": int(e["last_stable_offset"])})
            else:
                self.c.write(f"version: {int(e['version'])} producerId: {int(e['producer_id'])} "
                             f"firstOffset: {int(e['first_offset'])} lastOffset: {int(e['last_offset'])} "
                             f"lastStableOffset: {int(e['last_stable_offset'])}")

    def dump_producer_snapshot(self, path):
        self.header(path, "producer-snapshot")
        snap = sidefiles.read_producer_snapshot(cli_paths.readable(path), verify_crc=False)
        if not snap["crc_valid"]:
            self.problem(Problem("error", path, f"Snapshot is corrupt (CRC is no longer valid). Stored crc: "
                                                f"{snap['crc']}. Computed crc: {snap['computed_crc']}", 2))
        for e in snap["entries"]:
            pid, epoch, cepoch = int(e["producer_id"]), int(e["epoch"]), int(e["coordinator_epoch"])
            txn = int(e["current_txn_first_offset"])
            last_off, seq, delta, ts = int(e["last_offset"]), int(e["last_sequence"]), int(e["offset_delta"]), int(e["timestamp"])
            if self.json:
                obj = {"type": "producer_state", "file": path, "producerId": pid, "producerEpoch": epoch,
                       "coordinatorEpoch": cepoch, "currentTxnFirstOffset": txn if txn >= 0 else None,
                       "lastTimestamp": ts}
                if last_off >= 0:
                    obj.update(firstSequence=first_sequence(seq, delta), lastSequence=seq, lastOffset=last_off,
                               offsetDelta=delta, timestamp=ts)
                self.c.json(obj)
                continue
            line = (f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {cepoch} currentTxnFirstOffset: "
                    f"{f'OptionalLong[{txn}]' if txn >= 0 else 'OptionalLong.empty'} lastTimestamp: {ts}")
            if last_off >= 0:
                line += (f" firstSequence: {first_sequence(seq, delta)} lastSequence: {seq} lastOffset: {last_off} "
                         f"offsetDelta: {delta} timestamp: {ts}")
            self.c.write(line)

    def dump_leader_epoch(self, path):
        self.header(path, "leader-epoch")
        cp = sidefiles.read_leader_epoch_checkpoint(cli_paths.readable(path))
        if self.json:
            self.c.json({"type": "leader_epoch_checkpoint", "file": path, "version": cp["version"],
                         "entries": [{"epoch": int(e), "startOffset": int(o)} for e, o in cp["entries"].tolist()]})
            return
        self.c.write(f"version: {cp['version']}")
        for e, o in cp["entries"].tolist():
            self.c.write(f"epoch: {e} startOffset: {o}")

    def dump_partition_metadata(self, path):
        self.header(path, "partition-metadata")
        md = sidefiles.read_partition_metadata(cli_paths.readable(path))
        if self.json:
            self.c.json({"type": "partition_metadata", "file": path, "version": md["version"],
                         "topicId": md["topic_id"], "topicUuid": str(md["topic_uuid"])})
        else:
            self.c.write(f"version: {md['version']} topicId: {md['topic_id']} ({md['topic_uuid']})")

    def dump_offset_checkpoint(self, path):
        self.header(path, "offset-checkpoint")
        cp = sidefiles.read_offset_checkpoint(cli_paths.readable(path))
        for (topic, part), off in cp.items():
            if self.json:
                self.c.json({"type": "checkpoint_entry", "file": path, "topic": topic, "partition": part, "offset": off})
            else:
                self.c.write(f"topic: {topic} partition: {part} offset: {off}")

    def dump_quorum_state(self, path):
        self.header(path, "quorum-state")
        obj = sidefiles.read_quorum_state(cli_paths.readable(path))
        if self.json:
            self.c.json({"type": "quorum_state", "file": path, "state": obj})
        else:
            from kafkafmt.cli.output import dumps

            self.c.write(dumps(obj))

    def dump_meta_properties(self, path):
        self.header(path, "meta-properties")
        props = sidefiles.read_meta_properties(cli_paths.readable(path))
        if self.json:
            self.c.json({"type": "meta_properties", "file": path, "properties": props})
        else:
            for k, v in props.items():
                self.c.write(f"{k}={v}")


def stem_log(path):
    return log_name_of(path) or os.path.basename(path) + LOG_SUFFIX
