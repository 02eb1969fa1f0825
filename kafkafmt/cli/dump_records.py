"""The record part of ``kafkafmt dump``: ``.log`` segments, record sets and KRaft snapshots (batch
and record lines, skipped and trailing bytes), as `kafkafmt.cli.dump` describes them."""
from __future__ import annotations

import json
import os
import re

import numpy as np

from kafkafmt.errors import KafkafmtError
from kafkafmt.record import CODEC_NAMES, TIMESTAMP_TYPES

from kafkafmt.cli.common import (Problem, escape_text, is_leftover, read_options, segment_base,
                                 segment_in_partition)
from kafkafmt.log import ReportKind
from kafkafmt.cli.controls import control_text, control_json
from kafkafmt.cli import internal_topics
from kafkafmt.cli.output import dumps
from kafkafmt.cli.reading import CHUNK_BYTES, FileReader, iter_partition, resolve_range, topic_of_file
from kafkafmt.log import read_tasks
from kafkafmt.log import plan
from kafkafmt.log import warn_fallbacks
from kafkafmt.values import decode_values

DELETE_HORIZON_FLAG = 0x40
INT32_MAX = (1 << 31) - 1
_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


def _java_bool(v):
    return "true" if v else "false"


def last_sequence(base_sequence, delta):
    """DefaultRecordBatch.lastSequence: NO_SEQUENCE stays -1; sequences wrap after 2^31-1 to 0."""
    if base_sequence < 0:
        return -1
    if base_sequence > INT32_MAX - delta:
        return delta - (INT32_MAX - base_sequence) - 1
    return base_sequence + delta


def first_sequence(last_seq, delta):
    """DefaultRecordBatch.decrementSequence."""
    if last_seq < delta:
        return INT32_MAX - (delta - last_seq) + 1
    return last_seq - delta


class RecordDump:
    """`kafkafmt.cli.dump.Dumper`'s record part: a log file or a partition read in chunks, its batches
    (and with ``--records`` its records) printed in file order with what was skipped between them.

    It uses the driver's settings (``args``, ``c`` the console, ``json``, ``deep``, ``print_data``,
    ``decoder``, ``offsets`` / ``times`` / ``filtered``, ``max_bytes``, ``typed``, ``progress``) and its
    ``problem`` / ``header``; it fills ``nonconsecutive`` and ``unreadable`` for the summaries at the end.
    """

    # -- logs ---------------------------------------------------------------------------------
    def read_options(self, **settings):
        """How dump reads records: every byte salvaged, CRCs computed (shown) rather than checked, control
        records kept (`kafkafmt.cli.common.read_options`); bytes, which are typed (``self.typed``) as they
        are printed (`_RecordView`), only for the records printed."""
        return read_options(self.args, errors="salvage", verify_crc=False, include_control=True, value_format=None,
                            key_format=None, schema_registry=None, value_schema=None, key_schema=None, **settings)

    def range_for(self, pd):
        if pd.url not in self._ranges:
            try:
                self._ranges[pd.url] = resolve_range(pd, self.offsets, self.times)
            except KafkafmtError as exc:     # the time seek met corrupt data: say so once per folder
                self._ranges[pd.url] = None
                self.problem(Problem("error", exc.file or pd.url, f"cannot seek by time: {exc.reason}",
                                     exc.position, offset=exc.offset))
        return self._ranges[pd.url]

    def dump_log(self, path, kind, from_dir=False):
        report = []
        self.cur_decoder = self.decoder or (internal_topics.decoder_for(path, kind) if self.decode_internal
                                            else None)
        # batch lines only: no key/value copies
        opts = self.read_options(columns=None if self.deep else ["offset", "timestamp"])
        sp = segment_in_partition(path)
        if self.filtered and sp is not None and not is_leftover(path):
            # a segment of a partition folder: seek with the partition's indexes
            pd, base = sp
            rng = self.range_for(pd)
            following = [s.base_offset for s in pd.list_segments() if s.base_offset > base]
            lo = hi = None
            if rng is not None:
                lo = base if rng[0] is None else max(rng[0], base)
                hi = following[0] if following else None
                if rng[1] is not None:
                    hi = rng[1] if hi is None else min(hi, rng[1])
            if rng is None or (hi is not None and hi <= lo):
                if not from_dir:
                    self.log_header(path, kind)
                return
            self.log_header(path, kind)
            self.print_chunks(path, iter_partition(pd, report, opts.replace(start_offset=lo, end_offset=hi)),
                              report, (lo, hi))
            return
        with FileReader(path) as fr:
            rng = (None, None)
            if self.filtered:
                rng = fr.resolve_range(self.offsets, self.times)
                if rng is None:
                    if not from_dir:
                        self.log_header(path, kind)
                    return
            self.log_header(path, kind)
            chunks = fr.chunks(report, opts.replace(start_offset=rng[0], end_offset=rng[1]))
            self.print_chunks(path, chunks, report, rng)

    def dump_partition(self, pd):
        """A partition's records segment by segment -- local, tiered uploads, or both merged -- from
        its log start (records below it were deleted; name a segment file to see every byte), the
        tasks planned as every door plans them."""
        report = []
        self.cur_decoder = self.decoder or (internal_topics.topic_decoders().get(pd.topic) if self.decode_internal
                                            else None)
        rng = self.range_for(pd) if self.filtered else (None, None)
        segments = pd.list_segments(report)
        tasks = plan(pd, start_offset=rng[0], end_offset=rng[1], report=report) if rng is not None else []
        warn_fallbacks(report, 0, pd.name)
        options = self.read_options().decode_options(None if self.deep else ["offset", "timestamp"])
        by_segment = {}
        for t in tasks:
            by_segment.setdefault(t.segment.base_offset, []).append(t)
        after = [None]

        def chunks(seg_tasks):
            for recs, after[0] in read_tasks(seg_tasks, report, options, "salvage", CHUNK_BYTES, after[0]):
                yield recs

        for seg in segments:
            if self.stopped:
                break
            mine = by_segment.get(seg.base_offset)
            if mine is None and (self.filtered or seg.size):
                continue        # outside the range asked for, or below the log start
            self.log_header(seg.url, "log", base=seg.base_offset)
            if mine:
                self.print_chunks(seg.url, chunks(mine), report, rng or (None, None))

    def log_header(self, path, kind, base=None):
        extra = {}
        base = segment_base(path) if base is None else base
        lines = []
        if kind == "kraft-snapshot":
            name = os.path.basename(path)
            m = _KRAFT_SNAPSHOT.match(name)
            if m:
                extra = {"snapshotEndOffset": int(m.group(1)), "snapshotEpoch": int(m.group(2))}
                lines.append(f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}")
            elif name == "bootstrap.checkpoint":
                lines.append("KRaft bootstrap snapshot")
        elif base is not None:
            extra = {"logStartOffset": base}
            lines.append(f"Log starting offset: {base}")
        self.header(path, kind, **extra)
        if not self.json and self.fmt is None:
            for line in lines:
                self.c.write(line)

    def print_chunks(self, path, chunks, report, rng):
        lo, hi = rng
        seen = 0
        first_pos = None
        prev_offset = [None]
        stop = False
        try:
            for chunk in chunks:
                b = chunk.batches
                pos = np.asarray(b["position"], np.int64)
                size = np.asarray(b["size"], np.int64)
                order = np.argsort(pos, kind="stable")
                keep = np.ones(len(b), bool)
                if lo is not None:
                    keep &= np.asarray(b["last_offset"]) >= lo
                if hi is not None:
                    keep &= np.asarray(b["base_offset"]) < hi
                sel = [int(i) for i in order if keep[i]]
                if self.max_bytes is not None and sel:
                    if first_pos is None:
                        first_pos = int(pos[sel[0]])
                    fits = [i for i in sel if pos[i] + size[i] <= first_pos + self.max_bytes]
                    stop = len(fits) < len(sel)
                    sel = fits
                new = report[seen:]
                seen = len(report)
                self.print_batches(path, chunk, sel, sorted(new, key=_start), prev_offset)
                self.progress.advance(int(size.sum()), len(chunk))
                if stop or self.stopped:
                    break
        finally:
            close = getattr(chunks, "close", None)
            if close:
                close()
        if self.stopped:
            return              # what lies past the records dumped was not asked for
        for e in sorted(report[seen:], key=_start):
            self.print_report_entry(path, e)

    def print_report_entry(self, path, e):
        reason = e.message
        if e.kind in (ReportKind.TRUNCATED, ReportKind.ZEROS):
            if self.max_bytes is not None:
                return
            n = e["end"] - e["start"]
            if self.json:
                self.c.json({"type": "trailing", "file": path, "position": e["start"], "bytes": n, "reason": reason})
            else:
                self.c.write(f"Found {n} invalid bytes at the end of {os.path.basename(path)}")
            if e.kind is ReportKind.TRUNCATED:
                self.failed = True
            return
        if e.start is None:
            if e.kind is not ReportKind.INDEX_FALLBACK:      # those the library warns about itself
                self.c.warn(f"{e.file}: {reason}")
            return
        self.failed = True
        n = e["end"] - e["start"]
        if self.json:
            self.c.json({"type": "skipped", "file": path, "position": e["start"], "end": e["end"], "bytes": n,
                         "offset": e.get("offset"), "reason": reason})
        else:
            at = f" (batch offset {e['offset']})" if e.get("offset") is not None else ""
            self.c.write(f"Skipped {n} corrupt bytes at position {e['start']}{at}: {reason}")
        self.c.message(f"kafkafmt: {path}: position {e['start']}: {reason}; {n} bytes skipped")

    def print_batches(self, path, recs, sel, pending, prev_offset):
        if not sel and not pending:
            return
        b = recs.batches
        L = {k: b[k].tolist() for k in ("position", "size", "base_offset", "last_offset", "last_offset_delta",
                                        "partition_leader_epoch", "magic", "crc", "crc_valid", "attributes",
                                        "codec", "timestamp_type", "is_transactional", "is_control", "producer_id",
                                        "producer_epoch", "base_sequence", "first_timestamp", "max_timestamp",
                                        "record_count")}
        segs = b["segment"].tolist() if "segment" in b.columns else None
        rec_ranges = None
        if self.deep and len(recs):
            bidx = np.asarray(recs.batch_index, np.int64)
            sel_arr = np.asarray(sel, np.int64)
            rec_ranges = (np.searchsorted(bidx, sel_arr, "left").tolist(), np.searchsorted(bidx, sel_arr, "right").tolist())
            rv = _RecordView(recs, self, path)
        pending = list(pending)
        topic = recs.topic if isinstance(recs.topic, str) else None
        part = recs.partition if isinstance(recs.partition, (int, np.integer)) else None
        for k, i in enumerate(sel):
            if self.stopped:
                return
            p = L["position"][i]
            while pending and (pending[0].get("start") is None or pending[0]["start"] < p):
                self.print_report_entry(path, pending.pop(0))
            if not L["crc_valid"][i]:
                self.failed = True
                self.c.message(f"kafkafmt: error: {path} position {p} (offset {L['base_offset'][i]}): CRC mismatch: "
                               f"the stored checksum {L['crc'][i]} does not match the batch's bytes")
            if self.json:
                self.c.json(self.batch_json(path, L, i, topic, part, segs))
            elif self.fmt is None:
                self.c.write(self.batch_text(L, i))
            if rec_ranges is not None:
                lo, hi = rec_ranges[0][k], rec_ranges[1][k]
                if self.remaining is not None:
                    hi = min(hi, lo + self.remaining)
                if hi > lo:
                    self.counted(rv.emit(path, L, i, lo, hi, topic, part, prev_offset))
            else:
                self.counted(L["record_count"][i])
        for e in pending:
            self.print_report_entry(path, e)

    @staticmethod
    def batch_text(L, i):
        magic = L["magic"][i]
        ts_name = TIMESTAMP_TYPES.get(L["timestamp_type"][i], "NoTimestampType")
        if magic >= 2:
            dh = f"OptionalLong[{L['first_timestamp'][i]}]" if L["attributes"][i] & DELETE_HORIZON_FLAG \
                else "OptionalLong.empty"
            head = (f"baseOffset: {L['base_offset'][i]} lastOffset: {L['last_offset'][i]} "
                    f"count: {L['record_count'][i]} baseSequence: {L['base_sequence'][i]} "
                    f"lastSequence: {last_sequence(L['base_sequence'][i], L['last_offset_delta'][i])} "
                    f"producerId: {L['producer_id'][i]} producerEpoch: {L['producer_epoch'][i]} "
                    f"partitionLeaderEpoch: {L['partition_leader_epoch'][i]} "
                    f"isTransactional: {_java_bool(L['is_transactional'][i])} "
                    f"isControl: {_java_bool(L['is_control'][i])} deleteHorizonMs: {dh}")
        else:
            head = f"offset: {L['last_offset'][i]}"
        return (f"{head} position: {L['position'][i]} {ts_name}: {L['max_timestamp'][i]} size: {L['size'][i]} "
                f"magic: {magic} compresscodec: {CODEC_NAMES.get(L['codec'][i], L['codec'][i])} "
                f"crc: {L['crc'][i]} isvalid: {_java_bool(L['crc_valid'][i])}")

    @staticmethod
    def batch_json(path, L, i, topic, part, segs):
        magic = L["magic"][i]
        return {
            "type": "batch", "file": path, "topic": topic, "partition": part,
            "segment": segs[i] if segs is not None else None,
            "baseOffset": L["base_offset"][i], "lastOffset": L["last_offset"][i], "count": L["record_count"][i],
            "baseSequence": L["base_sequence"][i],
            "lastSequence": last_sequence(L["base_sequence"][i], L["last_offset_delta"][i]) if magic >= 2 else -1,
            "producerId": L["producer_id"][i], "producerEpoch": L["producer_epoch"][i],
            "partitionLeaderEpoch": L["partition_leader_epoch"][i],
            "isTransactional": bool(L["is_transactional"][i]), "isControl": bool(L["is_control"][i]),
            "deleteHorizonMs": L["first_timestamp"][i] if magic >= 2 and L["attributes"][i] & DELETE_HORIZON_FLAG
            else None,
            "position": L["position"][i], "size": L["size"][i],
            "timestampType": TIMESTAMP_TYPES.get(L["timestamp_type"][i], "NoTimestampType"),
            "firstTimestamp": L["first_timestamp"][i], "maxTimestamp": L["max_timestamp"][i],
            "magic": magic, "compresscodec": CODEC_NAMES.get(L["codec"][i], str(L["codec"][i])),
            "crc": L["crc"][i], "isvalid": bool(L["crc_valid"][i]), "attributes": L["attributes"][i],
        }


def _start(e):
    s = e.get("start")
    return -1 if s is None else s


class _RecordView:
    """The per-record columns of one chunk as Python lists, for printing."""

    def __init__(self, recs, d: RecordDump, path):
        self.d = d
        self.off = recs.offset.tolist()
        self.ts = recs.timestamp.tolist()
        klen = recs.key.lengths().astype(np.int64)
        vlen = recs.value.lengths().astype(np.int64)
        if recs.key.null_count:
            klen[recs.key.is_null()] = -1
        if recs.value.null_count:
            vlen[recs.value.is_null()] = -1
        self.klen, self.vlen = klen.tolist(), vlen.tolist()
        self.seq = recs.sequence.tolist() if len(recs) else []
        ho = np.asarray(recs.headers.offsets, np.int64)
        self.hoff = ho.tolist()
        self.hkeys = None
        if recs.headers.count():
            lo, hi = int(ho[0]), int(ho[-1])
            self.hbase = lo
            self.hkeys = [k.decode("utf-8", "replace") for k in recs.headers.key[lo:hi].to_pylist()]
            self.hvals = recs.headers.value[lo:hi].to_pylist() if (d.json or d.print_data) else None
        self.keys = recs.key.to_pylist() if (d.json or d.print_data) else None
        self.vals = recs.value.to_pylist() if (d.json or d.print_data) else None
        self.typed = {}             # side -> (JSON texts, schema ids, errors, kept as bytes) of typed keys / values
        if d.typed is not None and d.typed.active and (d.json or d.print_data) and len(recs):
            if recs.topic is None:
                recs = recs.replace(topic=topic_of_file(path))
            recs = decode_values(recs, d.typed)
            d.unreadable.add(recs)
            for side, dec in recs.typed.items():
                kept = [False] * len(dec) if dec.untyped is None else dec.untyped.is_valid().to_pylist()
                self.typed[side] = (dec.json(), dec.schema_id.to_pylist(), dec.error.to_pylist(), kept)
        self.value_col = recs.value
        c = recs.controls
        self.controls = {}
        if len(c):
            for o, t, v, e in zip(c["offset"].tolist(), c["type"].tolist(), c["version"].tolist(),
                                  c["coordinator_epoch"].tolist()):
                self.controls[o] = (t, v, e)

    def headers(self, r):
        lo, hi = self.hoff[r], self.hoff[r + 1]
        if hi <= lo or self.hkeys is None:
            return [], []
        a, b = lo - self.hbase, hi - self.hbase
        return self.hkeys[a:b], (self.hvals[a:b] if self.hvals is not None else None)

    def typed_text(self, side, r, raw):
        """A typed key or value as JSON text; one that could not be read: its bytes and why; one read
        with fields null (their columns cannot hold them): its text and why; one of a topic kept as
        bytes (--untyped-topics bytes): its bytes."""
        if side not in self.typed or self.typed[side][3][r]:
            return None if raw is None else escape_text(raw)
        texts, _, errors, _ = self.typed[side]
        if errors[r] is not None:
            return f"{escape_text(raw) if texts[r] is None else texts[r]} ({side}Error: {errors[r]})"
        return texts[r]

    def typed_json(self, obj, r):
        """Typed keys and values in a JSON line: the value as JSON, its schema id, its error (a
        key or value of a topic kept as bytes stays its bytes, as --bytes says)."""
        for side, (texts, ids, errors, kept) in self.typed.items():
            if kept[r]:
                continue
            obj[side] = None if texts[r] is None else json.loads(texts[r])
            obj[side + "SchemaId"] = ids[r]
            obj[side + "Error"] = errors[r]

    def emit(self, path, L, i, lo, hi, topic, part, prev_offset):
        d = self.d
        magic = L["magic"][i]
        is_control = bool(L["is_control"][i])
        ts_name = TIMESTAMP_TYPES.get(L["timestamp_type"][i], "NoTimestampType")
        shallow = magic < 2 and L["codec"][i] == 0
        skip_meta = d.args.skip_record_metadata
        # non-consecutive offsets, as kafka-dump-log reports them with --deep-iteration
        offs = self.off[lo:hi]
        prev = prev_offset[0]
        for o in offs:
            if prev is not None and o != prev + 1:
                d.nonconsecutive.setdefault(os.path.abspath(path), []).append((prev, o))
            prev = o
        prev_offset[0] = prev
        if d.fmt is not None:
            return 0 if is_control else self.emit_kcat(path, lo, hi, topic, part)
        lines = []              # (written at once: a write per record cost a tenth of a dump)
        write = lines.append
        printed = hi - lo
        for r in range(lo, hi):
            o = self.off[r]
            if d.json:
                hk, hv = self.headers(r)
                obj = {"type": "record", "file": path, "topic": topic, "partition": part, "offset": o,
                       "timestampType": ts_name, "timestamp": self.ts[r], "keySize": self.klen[r],
                       "valueSize": self.vlen[r], "sequence": self.seq[r], "batchBaseOffset": L["base_offset"][i],
                       "isControl": is_control, "headerKeys": hk,
                       "headers": [{"key": k, "value": d.enc(v)} for k, v in zip(hk, hv or [None] * len(hk))],
                       "key": d.enc(self.keys[r]), "value": d.enc(self.vals[r])}
                if shallow:
                    obj["isValid"], obj["crc"] = bool(L["crc_valid"][i]), L["crc"][i]
                if is_control and o in self.controls:
                    obj["control"] = control_json(*self.controls[o], self.value_col[r])
                elif d.cur_decoder is not None and not is_control:
                    obj.update(internal_topics.record_json(d.cur_decoder, self.keys[r], self.vals[r], o))
                elif self.typed and not is_control:
                    self.typed_json(obj, r)
                write(dumps(obj))
                continue
            if skip_meta:
                if is_control:
                    printed -= 1
                    continue
                line = ""
                prefix = "| "
            else:
                line = (f"| offset: {o} {ts_name}: {self.ts[r]} keySize: {self.klen[r]} "
                        f"valueSize: {self.vlen[r]}")
                if magic >= 2:
                    hk, _ = self.headers(r)
                    line += f" sequence: {self.seq[r]} headerKeys: [{','.join(escape_text(k.encode()) for k in hk)}]"
                elif shallow:
                    line += f" isValid: {_java_bool(L['crc_valid'][i])} crc: {L['crc'][i]}"
                if is_control and o in self.controls:
                    t, v, e = self.controls[o]
                    line += control_text(t, v, e, self.value_col[r])
                prefix = " "
            if d.print_data and not is_control:
                k, v = self.texts(path, r, o)
                if k is not None:
                    line += prefix + "key: " + k
                    prefix = " "
                if v is not None:
                    line += prefix + "payload: " + v
            write(line)
        if lines:
            d.c.text("\n".join(lines) + "\n")
        return printed

    def texts(self, path, r, o):
        """(key, value) of record ``r`` as text, as --print-data prints them (None: null): decoded by an
        internal topic's decoder, typed, or the bytes escaped."""
        d = self.d
        k, v = self.keys[r], self.vals[r]
        if d.cur_decoder is not None:
            try:
                return internal_topics.record_texts(d.cur_decoder, k, v, o)
            except internal_topics.MissingKey as exc:     # Kafka's tool stops here
                d.problem(Problem("error", path, str(exc), offset=o))
                return None, None
        if self.typed:
            return self.typed_text("key", r, k), self.typed_text("value", r, v)
        return (None if k is None else escape_text(k)), (None if v is None else escape_text(v))

    def emit_kcat(self, path, lo, hi, topic, part):
        """Records ``lo:hi`` (not control records) as kcat's ``-f`` lines (`kafkafmt.cli.kcat_format`);
        returns how many."""
        d = self.d
        used = d.fmt.used
        lines = []
        for r in range(lo, hi):
            o = self.off[r]
            values = {"t": topic or "", "p": -1 if part is None else part, "o": o, "T": self.ts[r],
                      "K": self.klen[r], "S": self.vlen[r]}
            if "k" in used or "s" in used:
                k, v = self.texts(path, r, o)
                values["k"], values["s"] = k or "", v or ""
            if "h" in used:
                hk, hv = self.headers(r)
                values["h"] = ",".join(f"{escape_text(key.encode())}={'' if val is None else escape_text(val)}"
                                       for key, val in zip(hk, hv or [None] * len(hk)))
            lines.append(d.fmt.render(values))
        d.c.text("".join(lines))
        return hi - lo
