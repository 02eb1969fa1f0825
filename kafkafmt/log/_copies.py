"""Copies of one partition in several log dirs (a cluster's brokers, a backup beside the original): which
are copies at all, which one a read follows, and what each other copy is -- as data (`Copy`).

* **Incarnations.** Folders of one topic-partition whose ``partition.metadata`` names different topic ids are
  different topics (KIP-516: a topic deleted and created again under its name), never copies. The one read
  is the id asked for (``topic_id``), else the one a ``__cluster_metadata`` partition among the roots names
  (its last ``TopicRecord`` for the name, not removed); the others are reported, as a KRaft broker sets such a
  log aside as a stray. With neither, the partition is a conflict (`Resolved.conflicts`): readers refuse it
  (`IncarnationError`), naming the ids and the folders.
* **The copy read** of one incarnation: the one whose last batch has the highest leader epoch (a newer
  leader's log wins, as a follower truncates to it, KIP-101/279), then the highest last offset, then the most
  bytes. The others stay beside it as its ``alternates``: a range the copy read cannot give intact (a CRC
  mismatch, a cut-off segment) is read from one of them that holds it intact (`kafkafmt.log._fill`).
* **Each other copy** is compared with it by batch framing only -- offsets, size, CRC field, leader epoch --
  and decoded only where the batches differ: ``in sync`` (the same), ``behind`` (a prefix: a follower that
  lags; by how many offsets), ``diverged`` (other records at an offset both hold: below both copies' high
  watermarks -- ``replication-offset-checkpoint`` -- an error, as those were committed; at or above, what
  Kafka would truncate as uncommitted), ``damaged`` (its framing breaks before its end).

Costs: one ``partition.metadata`` read per copy of a partition held in several places, one header scan per
segment of those copies (kept in the discovery cache per file version), and nothing for a partition held once.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafkafmt._util.frozen import field_defaults, made
from kafkafmt._util.threads import thread_pool
from kafkafmt.errors import KafkafmtError
from kafkafmt.internal import decode_metadata_record, internal_table
from kafkafmt.internal.codec import uuid_text
from kafkafmt.log import sidefiles
from kafkafmt.log._ahead import announce
from kafkafmt.log._names import LOG_SUFFIX, PARTITION_METADATA, file_kind
from kafkafmt.log._fill import Gap, of_epoch
from kafkafmt.log._framing import scan_range, window
from kafkafmt.log._notes import ReportEntry, ReportKind, spans_text
from kafkafmt.storage import listed_size

__all__ = ["Copy", "COPY_STATES", "Resolved", "resolve_copies", "topic_id_in", "live_topic_ids",
           "METADATA_TOPIC"]

#: KRaft's metadata log, whose TopicRecords name each topic's live id (the cluster_metadata table's topic)
METADATA_TOPIC = internal_table("cluster_metadata").topic
_TOPIC_RECORD, _REMOVE_TOPIC_RECORD = 2, 9       # MetadataRecordType api keys

#: what a copy of a partition is, beside the copy read (`Copy.state`)
COPY_STATES = ("read", "in sync", "behind", "diverged", "damaged", "other incarnation")

_COMPARE_BYTES = 8 << 20       # batches decoded at once to compare two copies' records
_HEADER_COLUMNS = ("position", "size", "crc", "base_offset", "last_offset", "partition_leader_epoch")
#: whether each batch's CRC holds (computed as the copies are scanned: a copy read whose batch is damaged is read
#: there from a copy holding it intact, `ReportKind.FROM_COPY`, and that copy is said so beforehand)
_CRC_VALID = "crc_valid"
_COLUMNS = _HEADER_COLUMNS + (_CRC_VALID,)
_KEY_COLUMNS = ("base_offset", "last_offset", "size", "crc")     # what tells one batch from another
#: a piece's columns also hold the `_KEY_COLUMNS` of each batch as one row of int64s (a copy's keys, compared as
#: bytes: `_Held.key_bytes`)
_KEY_ROWS = "key_rows"
#: whether two copies one of whose batches' keys begin the other's are the same batches at once (the usual
#: pair: a follower in sync or behind), without comparing them batch by batch (a test turns it off to compare)
_PREFIXES = [True]


@dataclass(frozen=True)
class Copy:
    """One copy of a partition, as ``kafka-log-dirs`` lists replicas: where it is, what it holds, and what it
    is beside the copy a read follows.

    Parameters
    ----------
    topic, partition : str, int
        The partition.
    log_dir : str
        The log dir (path or URL) holding the copy (its folder's parent for a folder given alone).
    folder : str
        The copy's folder (path or URL).
    state : str
        One of `COPY_STATES`: ``read`` (the copy reads follow), ``in sync``, ``behind``, ``diverged``,
        ``damaged``, ``other incarnation``.
    topic_id : str or None
        Its ``partition.metadata`` topic id -- read where the copies' batches do not show them to be one
        history (None otherwise, and without the file).
    log_start, log_end : int or None
        Its first offset and one past its last (None: not scanned -- a partition held once).
    bytes : int
        The bytes of its segments.
    behind : int or None
        Offsets its log end lags the copy read's (0 for the copy read and copies in sync).
    high_watermark : int or None
        The high watermark its log dir's ``replication-offset-checkpoint`` holds for it.
    offset : int or None
        Where it parts from the copy read (``diverged``), or where its damage starts (``damaged``).
    uncommitted : bool
        A divergence at or above the high watermarks: records Kafka would truncate, never committed.
    detail : str
        Why it is in that state, in words.
    """
    topic: str
    partition: int
    log_dir: object
    folder: str
    state: str
    topic_id: object = None
    log_start: object = None
    log_end: object = None
    bytes: int = 0
    behind: object = None
    high_watermark: object = None
    offset: object = None
    uncommitted: bool = False
    detail: str = ""

    def to_json(self):
        """The copy as a JSON object (camelCase, as the report's tables)."""
        return {"topic": self.topic, "partition": self.partition, "logDir": self.log_dir, "folder": self.folder,
                "state": self.state, "topicId": self.topic_id, "logStartOffset": self.log_start,
                "logEndOffset": self.log_end, "bytes": self.bytes, "offsetLag": self.behind,
                "highWatermark": self.high_watermark, "offset": self.offset, "uncommitted": self.uncommitted,
                "detail": self.detail}


#: a `Copy` 's fields and their defaults (`_Held.copy`)
_COPY_DEFAULTS = field_defaults(Copy)


@dataclass
class Resolved:
    """What `resolve_copies` made of the partitions found: the ones to read (each copy read with its
    ``alternates``), the copies not read (`Partition` s: to be checked, never counted), every copy as a
    `Copy`, and the conflicts (`ReportEntry` s of incarnations nothing chooses between)."""
    partitions: list
    unread: list
    copies: list
    conflicts: list


def topic_id_in(part):
    """The topic id of a partition folder's ``partition.metadata`` (Kafka's text), None without one or when
    it cannot be read (from the folder's listing: no lookup for a folder that has none)."""
    if part.segments is not None and part.listing is None:
        return None                   # tiered uploads: the id is in their names, not in a file
    listed = _metadata_entry(part)
    if part.listing is not None and listed is None:
        return None
    st = part.storage
    try:
        data = st.read_listed(listed.path, listed.size, listed.version) if listed is not None \
            else st.read_bytes(st.join(part.folder, PARTITION_METADATA))
        return sidefiles.read_partition_metadata(data)["topic_id"]
    except (KafkafmtError, OSError):
        return None


def _metadata_entry(part):
    """The listing's entry of a folder's ``partition.metadata`` (None: not listed, or no such file)."""
    return next((e for e in part.listing or () if e.name == PARTITION_METADATA and not e.is_dir), None)


def _announce(parts, cache):
    """Tell the object stores holding copies (``parts``, in the order `_held_all` scans them) which segments
    scanning them reads whole -- those whose batch headers are not in the cache: they are fetched ahead, a
    few at a time, while the ones before are scanned (`kafkafmt.log._ahead.announce`)."""
    def scanned(seg):
        hit = None if cache is None else cache.get(("headers", seg.url))
        return hit is not None and hit[0] == (seg.size, seg.version)

    announce(parts, skip=scanned)


def resolve_copies(parts, report, *, cache=None, topic_id=None, live_ids=None, high_watermarks=None, threads=1):
    """The partitions a read follows, one per (topic, partition) and incarnation asked for, and every copy.

    Parameters
    ----------
    parts : list of Partition
        Every partition folder found (several per topic-partition when it has copies).
    report : list
        Copies not read are said in it (`ReportKind.REPLICA`, `PARTLY_READ`, `DUPLICATE`, `MISMATCH`,
        `DAMAGED_COPY`, `STRAY`).
    cache : dict, optional
        The discovery's cache (batch headers per segment file and version).
    topic_id : str or dict, optional
        The incarnation to read where copies hold several: one id, or ``{topic: id}``.
    live_ids : callable, optional
        ``live_ids()`` -> ``{topic: id}`` from the cluster's metadata log, asked only when incarnations
        differ.
    high_watermarks : callable, optional
        ``high_watermarks(partition)`` -> the high watermark its log dir checkpointed, or None.
    threads : int, default 1
        How many threads read and scan the copies' batch headers side by side (`_held_all`).

    Returns
    -------
    Resolved
    """
    groups = {}
    for p in parts:
        groups.setdefault((p.topic, p.partition), []).append(p)
    out, unread, copies, conflicts = [], [], [], []
    hw = high_watermarks or (lambda p: None)
    several = [p for g in groups.values() if len(g) > 1 for p in g]
    _announce(several, cache)
    held = dict(zip((p.key for p in several), _held_all(several, cache, threads)))
    for (topic, partition), group in groups.items():
        if len(group) == 1:
            p = group[0]
            copies.append(Copy(topic, partition, p.log_dir_url, p.url, "read", bytes=_listed_bytes(p)))
            out.append(p)
            continue
        mine = [held[p.key] for p in group]
        # the topic ids are read where the copies' batches do not tell: copies that hold the same batches
        # where they overlap are one incarnation (partition.metadata is not opened for them)
        if _wanted_id(topic, topic_id) is not None or not _agree(mine):
            for h in mine:
                h.topic_id = topic_id_in(h.part)
        same = _incarnation(topic, mine, topic_id, live_ids, report, copies, conflicts)
        if same is None:
            unread += group
            continue
        chosen = _copies_of_one(topic, partition, same, report, copies, hw)
        out.append(chosen)
        unread += [p for p in group if p.key != chosen.key]
    return Resolved(out, unread, copies, conflicts)


def _best(held):
    """The copy a read follows: the newest leader epoch of its last batch, then the highest last offset, then
    the most bytes, then the first found."""
    return max(held, key=lambda h: (h.last_epoch, h.last, h.nbytes, -held.index(h)))


def _agree(held):
    """Whether every copy holds the same batches as the copy read where their offsets overlap (and they do
    overlap): one history, one incarnation. Empty copies agree with anything."""
    best = _best(held)
    return all(h is best or h.first is None or best.first is None or _same_batches(best, h) for h in held)


def _same_batches(a, b):
    """Whether two non-empty copies hold the same batches (offsets, size, CRC) over the offsets both hold --
    a prefix of each other first (the common case: their columns' bytes compared), else batch by batch.
    Asked once a pair (`_agree` and `_judge` both ask)."""
    same = b.agrees.get(id(a))
    if same is None:
        same = b.agrees[id(a)] = _compare_batches(a, b)
    return same


def _compare_batches(a, b):
    ka, kb = a.key_bytes(), b.key_bytes()
    short, long = (ka, kb) if len(ka) <= len(kb) else (kb, ka)
    if _PREFIXES[0] and short and long.startswith(short):     # (the first rows of both, all four keys, equal)
        return True
    lo, hi = max(a.first, b.first), min(a.last, b.last)
    if lo > hi:
        return False                # no offset in common: nothing says they are one history
    ra, rb = a.batches(), b.batches()
    ia = (ra[:, 5] >= lo) & (ra[:, 4] <= hi)
    ib = (rb[:, 5] >= lo) & (rb[:, 4] <= hi)
    return bool(np.isin(_batch_keys(ra[ia]), _batch_keys(rb[ib])).all()
                and np.isin(_batch_keys(rb[ib]), _batch_keys(ra[ia])).all())


def _listed_bytes(p):
    return 0 if p.listing is None else listed_size(p.listing, LOG_SUFFIX)


def _wanted_id(topic, topic_id):
    if topic_id is None:
        return None
    return topic_id.get(topic) if isinstance(topic_id, dict) else topic_id


def _incarnation(topic, held, topic_id, live_ids, report, copies, conflicts):
    """The copies (`_Held`) of the incarnation to read, None when they conflict; copies of other incarnations
    reported and listed."""
    ids = [h.topic_id for h in held]
    known = sorted({i for i in ids if i is not None})
    want = _wanted_id(topic, topic_id)
    if want is None and len(known) > 1 and live_ids is not None:
        want = live_ids().get(topic)
    if len(known) <= 1 and (want is None or not known or want == known[0]):
        return held
    group = [h.part for h in held]
    name = group[0].name
    where = "; ".join(f"{p.url} (topic id {i})" for p, i in zip(group, ids))
    if want is None or want not in known:
        why = ("no copy has the topic id asked for " + want + ": " if want is not None
               else "copies of different incarnations of the topic (a topic deleted and created again): ")
        entry = ReportEntry(ReportKind.INCARNATION, group[0].url,
                            f"{name}: {why}{where}; choose one with topic_id= (--topic-id, "
                            f".option('topicId', ...)) or add the cluster's __cluster_metadata log dir")
        report.append(entry)
        conflicts.append(entry)
        for h in held:
            copies.append(h.copy("other incarnation", detail=entry.message))
        return None
    keep = []
    for h in held:
        if h.topic_id is None or h.topic_id == want:
            keep.append(h)
            continue
        msg = (f"{name} in {h.part.url} is another incarnation of the topic (topic id {h.topic_id}; the one read: "
               f"{want}): a stray, not read")
        report.append(ReportEntry(ReportKind.STRAY, h.part.url, msg))
        copies.append(h.copy("other incarnation", detail=msg))
    return keep


def _copies_of_one(topic, partition, held, report, copies, hw):
    """The copy read of one incarnation's copies (`_Held`; with the others as its alternates); each copy
    listed."""
    if len(held) == 1:
        h = held[0]
        copies.append(h.copy("read", hw=hw(h.part), detail="the copy read"))
        return h.part
    best = _best(held)
    judged, gaps, alternates, taken = [], {}, [], []
    for h in held:
        if h is not best:
            entry, copy, mine = _judge(h, best, hw, taken)
            for g in mine:
                had = gaps.setdefault(g.lo, g)
                if had is not g:            # (another copy holds records of it too: its own batches around it)
                    gaps[g.lo] = had._replace(anchors=had.anchors + g.anchors)
            judged.append((entry, copy))
            # a diverged copy gives only offsets below where it parts from the copy read
            alternates.append(h.part if copy.state != "diverged" else h.part.diverging_at(copy.offset))
    chosen = best.part.with_alternates(alternates, tuple(gaps[lo] for lo in sorted(gaps)))
    copies.append(best.copy("read", hw=hw(best.part), detail="the copy read"))
    for entry, copy in judged:
        report.append(entry)
        copies.append(copy)
    return chosen


def _gaps_held(best, h, interior=True):
    """The `Gap` s of the copy read (``best``) that copy ``h`` holds records of (``interior`` False: only
    before its first batch).

    * Between two consecutive batches of ``best``: offsets missing where ``h`` has batches holding some of them
      between two batches both hold (the same base and last offset and CRC: one history) -- its last such batch
      below the gap and its first above, its batches between them in gaps of ``best`` --; or, without such
      batches (``h`` lacks them too, or its log ends inside the gap), its batches in the gap are of the leader
      epoch of ``best`` 's batch after it (`kafkafmt.log._fill.of_epoch`).
    * Before its first batch, from its log start offset on (its log dir's ``log-start-offset-checkpoint``: the
      offsets it should hold, a range a recovery cut from its start -- never offsets deleted by retention or
      DeleteRecords, which the checkpoint is past; none without the checkpoint, or below ``h`` 's own): where
      ``h`` holds some of them and its first batch from ``best`` 's first offset on is ``best`` 's first batch,
      or its batches there are of the leader epoch of ``best`` 's first batch.

    `kafkafmt.log._fill` checks the batches around a gap again before it reads. Asked only of a copy whose
    records equal ``best`` 's at every offset both hold (`_first_difference`): a batch of ``h`` straddling an
    end of a gap (the copies batched apart) was compared record by record. Vectorised over the gaps: nothing per
    batch; none for copies whose batches are not in offset order."""
    b, o = best.cols, h.cols
    base, last, crc = b["base_offset"], b["last_offset"], b["crc"]
    hb, hl, hc = o["base_offset"], o["last_offset"], o["crc"]
    n = len(hb)
    if not len(base) or not n or (base[1:] <= last[:-1]).any() or (hb[1:] <= hl[:-1]).any():
        return []
    out = []
    ep, he = b["partition_leader_epoch"], o["partition_leader_epoch"]
    start = best.part.log_start_offset
    if start is not None:
        lo = max(start, h.part.log_start_offset or 0)
        first = int(base[0])
        z = int(np.searchsorted(hb, first))          # h's first batch from best's first offset on
        i0 = int(np.searchsorted(hl, lo))            # h's first batch holding offsets of the gap
        after = (first, int(last[0]), int(crc[0]))
        if lo < first and z < n and z > i0 and (hb[z], hl[z], hc[z]) == after:
            out.append(Gap(int(lo), first, None, after, int(ep[0]), ((h.part.url, None, after),)))
        elif lo < first and of_epoch(he, i0, z, int(ep[0])):
            out.append(Gap(int(lo), first, None, after, int(ep[0]), ((h.part.url, None, None),)))
    if not interior:
        return out
    cut, lo, hi = _gaps_of(base, last)
    if not len(cut):
        return out
    epochs = ep[cut + 1].tolist()                 # (the epoch of best's batch after each gap)
    # h's batches best holds too (the same base and last offset and CRC): a gap's records are taken between two of
    # them, h's batches between those lying in gaps of best (two gaps with a batch of best between them that h
    # lacks: each gap's anchors are the batches both hold around it)
    jh = np.minimum(np.searchsorted(base, hb), len(base) - 1)
    ci = np.flatnonzero((base[jh] == hb) & (last[jh] == hl) & (crc[jh] == hc))
    i0, i1 = np.searchsorted(hl, lo), np.searchsorted(hb, hi)        # h's batches holding offsets of the gap
    inside = i1 > i0
    ok = np.zeros(len(cut), bool)
    if len(ci):
        pa = np.searchsorted(hl[ci], lo) - 1        # h's last batch below the gap that best holds (in ci)
        pz = np.searchsorted(hb[ci], hi)            # h's first from its end on that best holds (in ci)
        a, z = ci[np.maximum(pa, 0)], ci[np.minimum(pz, len(ci) - 1)]
        ok = inside & (pa >= 0) & (pz < len(ci))
        for i in np.flatnonzero(ok).tolist():
            before = (int(hb[a[i]]), int(hl[a[i]]), int(hc[a[i]]))
            after = (int(hb[z[i]]), int(hl[z[i]]), int(hc[z[i]]))
            out.append(Gap(int(lo[i]), int(hi[i]), before, after, epochs[i], ((h.part.url, before, after),)))
    # not between batches both hold (h lacks them too, or its log ends inside the gap): by the epoch of h's
    # batches there -- that of best's batch after the gap
    for i in np.flatnonzero(inside & ~ok).tolist():
        if of_epoch(he, int(i0[i]), int(i1[i]), epochs[i]):
            c = int(cut[i])
            before = (int(base[c]), int(last[c]), int(crc[c]))      # (the copy read's: a read checks h's epoch)
            after = (int(base[c + 1]), int(last[c + 1]), int(crc[c + 1]))
            out.append(Gap(int(lo[i]), int(hi[i]), before, after, epochs[i], ((h.part.url, None, None),)))
    return sorted(out, key=lambda g: g.lo)


class _Held:
    """What one copy of a partition holds: its segments and their batch headers (scanned, no record
    decoded) -- the pieces of `_held_all` --, first and last offsets, the leader epoch of its last batch, bytes,
    where its framing breaks, and its topic id when it was read (`topic_id_in`). Its headers as one set of columns
    in log order (``cols``: `_HEADER_COLUMNS` and ``segment``, each batch's segment index) are joined when first
    asked: most copies are told by their keys alone (`key_bytes`)."""

    def __init__(self, part, segments, pieces, damage):
        self.part = part
        self.topic_id = None
        self.segments = segments
        self.nbytes = sum(s.size or 0 for s in segments)
        self.pieces, self.damage = pieces, damage
        used = [p for p in pieces if p[2] > p[1]]
        self.first = min(p[3] for p in used) if used else None
        self.last = max(p[4] for p in used) if used else -1
        self.last_epoch = used[-1][5] if used else -1
        self.crc_failures = sum(p[6] for p in used)     # batches whose CRC fails (`_damaged_held`)
        self._cols = self._keys = None
        self.agrees = {}        # {id(other copy): whether they hold the same batches} (`_same_batches`)

    @property
    def cols(self):
        if self._cols is None:
            self._cols = _joined(self.pieces)
        return self._cols

    def key_bytes(self):
        """Every batch's base offset, last offset, size and CRC in log order, as the bytes of rows of four
        int64s."""
        if self._keys is None:
            self._keys = b"".join(p[0][_KEY_ROWS][p[1]:p[2]].tobytes() for p in self.pieces if p[2] > p[1])
        return self._keys

    def batches(self):
        """Every batch: (segment index, position, size, crc, base offset, last offset, epoch) rows."""
        return np.stack([self.cols["segment"]] + [self.cols[c] for c in _HEADER_COLUMNS], axis=1)

    def copy(self, state, *, hw=None, behind=0, offset=None, uncommitted=False, detail=""):
        p = self.part
        start = self.first if p.log_start_offset is None or self.first is None else max(self.first,
                                                                                         p.log_start_offset)
        end = self.last + 1 if self.last >= 0 else (self.segments[-1].base_offset if self.segments else None)
        return made(Copy, _COPY_DEFAULTS, {   # (Copy(...), as every copy of a cluster is made: see _util.frozen)
            "topic": p.topic, "partition": p.partition, "log_dir": p.log_dir_url, "folder": p.url, "state": state,
            "topic_id": self.topic_id, "log_start": start, "log_end": end, "bytes": self.nbytes, "behind": behind,
            "high_watermark": hw, "offset": offset, "uncommitted": uncommitted, "detail": detail})


#: segment bytes read into one buffer and scanned by one native call when copies are compared
_SCAN_GROUP_BYTES = 4 << 20


def _with_key_rows(cols):
    """``cols`` (header columns) with `_KEY_ROWS`."""
    cols[_KEY_ROWS] = np.stack([np.asarray(cols[c], np.int64) for c in _KEY_COLUMNS], axis=1)
    return cols


def _pieces(cols, first, count):
    """The pieces (see `_held_all`) of the ranges of rows ``first[r]:first[r] + count[r]`` of ``cols`` (ranges in
    row order, one after another): (columns, first row, end row, first offset, last offset, leader epoch of the
    last batch, batches whose CRC fails; None, -1, -1, 0 for an empty range)."""
    first, count = np.asarray(first, np.int64), np.asarray(count, np.int64)
    nz = np.flatnonzero(count)
    starts = first[nz]
    lows = np.minimum.reduceat(cols["base_offset"], starts).tolist() if len(nz) else []
    highs = np.maximum.reduceat(cols["last_offset"], starts).tolist() if len(nz) else []
    epochs = cols["partition_leader_epoch"][starts + count[nz] - 1].tolist() if len(nz) else []
    bad = np.add.reduceat((~cols[_CRC_VALID]).astype(np.int64), starts).tolist() if len(nz) else []
    out = [(cols, f, f, None, -1, -1, 0) for f in first.tolist()]
    for k, (r, f, n) in enumerate(zip(nz.tolist(), starts.tolist(), count[nz].tolist())):
        out[r] = (cols, f, f + n, lows[k], highs[k], epochs[k], bad[k])
    return out


#: the batch headers of an empty segment, as a piece (`_held_all`)
_EMPTY = (_with_key_rows({**{c: np.zeros(0, np.int64) for c in _HEADER_COLUMNS}, _CRC_VALID: np.zeros(0, bool)}),
          0, 0, None, -1, -1, 0)


def _held_all(parts, cache, threads=1):
    """A `_Held` per partition folder: the batch headers of every segment, from the cache (a poll rescans only
    the segments that grew), else the local segments' bytes read into one buffer a group at a time and
    scanned by one native call (`kafkafmt.record.scan_ranges`), the others (remote, large, damaged) one by one
    (`_headers`). A segment's headers are a *piece*: (columns, first row, end row, first offset, last offset,
    leader epoch of its last batch, batches whose CRC fails) -- the rows of a group's columns (with `_KEY_ROWS` and
    `_CRC_VALID`), shared by the segments scanned together, positions counted from each segment's start
    (`_pieces`). ``threads`` > 1: the next group read and scanned by another thread while this one's pieces are
    cut (`_scanned_groups`)."""
    listed = [p.list_segments(cache=cache) for p in parts]
    pieces = [[None] * len(segs) for segs in listed]
    damages = [[None] * len(segs) for segs in listed]
    pending = []
    for i, segs in enumerate(listed):
        for j, seg in enumerate(segs):
            hit = None if cache is None else cache.get(("headers", seg.url))
            if hit is not None and hit[0] == (seg.size, seg.version):
                pieces[i][j], damages[i][j] = hit[1]
            elif seg.size == 0:
                pieces[i][j] = _EMPTY
            elif seg.storage.is_local and seg.remote is None and seg.size and seg.size <= _SCAN_GROUP_BYTES:
                pending.append((i, j, seg))
            else:
                pieces[i][j], damages[i][j] = _headers(seg, cache)
    groups, k = [], 0
    while k < len(pending):
        group, total = [], 0
        while k < len(pending) and (not group or total + pending[k][2].size <= _SCAN_GROUP_BYTES):
            group.append(pending[k])
            total += pending[k][2].size
            k += 1
        groups.append(group)
    for group, (starts, ok, table, rng) in zip(groups, _scanned_groups(groups, threads)):
        first, count = rng["first"], rng["count"]
        # the headers only (the scan's other columns go), each batch's position counted from its segment's start
        cols = {c: table[c].copy() for c in _COLUMNS if c != "position"}
        cols["position"] = table["position"] - np.repeat(starts[:-1], count)   # (range r's rows follow r - 1's)
        cut = _pieces(_with_key_rows(cols), first, count)
        bad = ((~ok) | (rng["error"] != 0)).tolist()
        for r, (i, j, seg) in enumerate(group):
            if bad[r]:
                pieces[i][j], damages[i][j] = _headers(seg, cache)   # changed, or damaged: said the usual way
                continue
            pieces[i][j] = piece = cut[r]
            if cache is not None:
                cache[("headers", seg.url)] = ((seg.size, seg.version), (piece, None))
    return [_Held(p, segs, ps, None if ds.count(None) == len(ds)
                  else next((seg, d) for seg, d in zip(segs, ds) if d is not None))
            for p, segs, ps, ds in zip(parts, listed, pieces, damages)]


def _scanned_groups(groups, threads):
    """For each group of `_held_all` 's pending segments, in order: (the segments' starts in the buffer, whether
    each was read whole, the batch table and the ranges of `kafkafmt.record.scan_ranges`). Serially with one
    buffer; with ``threads`` > 1 the next group is read and scanned (both without the GIL) by a pool's thread,
    in a second buffer, while the caller takes this one's (the second while the caller reads and scans the
    first). The buffers are made once, as large as the largest group: one made anew for each group larger
    than the one before would leave the memory of those before it to the process."""
    from kafkafmt.record import scan_ranges

    def scan(group, buf):
        starts = np.zeros(len(group) + 1, np.int64)
        np.cumsum([g[2].size for g in group], out=starts[1:])
        total = int(starts[-1])
        segs = [g[2] for g in group]
        # (local files all: any local storage reads them, in one call)
        ok = segs[0].storage.read_many([seg.log for seg in segs], buf, starts) == np.diff(starts)
        table, rng = scan_ranges(buf[:total], starts[:-1], starts[1:], verify_crc=False)    # (CRCs reported)
        return starts, ok, table, rng

    if not groups:
        return
    size = max(sum(g[2].size for g in group) for group in groups)
    if threads <= 1 or len(groups) < 2:
        buf = np.empty(size, np.uint8)
        for group in groups:
            yield scan(group, buf)
        return
    bufs = (np.empty(size, np.uint8), np.empty(size, np.uint8))    # (group k in bufs[k % 2]: k - 2's is done)
    pool = thread_pool(threads - 1, "scan")
    ahead = pool.submit(scan, groups[1], bufs[1])       # (while this thread reads and scans the first)
    try:
        yield scan(groups[0], bufs[0])
        for k in range(1, len(groups)):
            got = ahead.result()
            ahead = pool.submit(scan, groups[k + 1], bufs[(k + 1) % 2]) if k + 1 < len(groups) else None
            yield got
    finally:
        if ahead is not None:
            ahead.cancel()


def _joined(pieces):
    """One copy's header columns in log order, with ``segment``, from its segments' pieces: views of one
    group's columns where its segments lie there one after another (the usual copy), else joined."""
    used = [(j, p) for j, p in enumerate(pieces) if p[2] > p[1]]
    if not used:
        out = {c: _EMPTY[0][c] for c in _COLUMNS}
        out["segment"] = np.zeros(0, np.int64)
        return out
    src = used[0][1][0]
    if all(p[0] is src for _, p in used) and all(a[2] == b[1] for (_, a), (_, b) in zip(used, used[1:])):
        lo, hi = used[0][1][1], used[-1][1][2]
        out = {c: src[c][lo:hi] for c in _COLUMNS}
    else:
        out = {c: np.concatenate([p[0][c][p[1]:p[2]] for _, p in used]) for c in _COLUMNS}
    out["segment"] = np.repeat(np.array([j for j, _ in used], np.int64), [p[2] - p[1] for _, p in used])
    return out


def _headers(seg, cache):
    """(a piece of a segment's batch headers up to its first damage -- see `_held_all` --, where and why its
    framing breaks or None)."""
    key, stamp = ("headers", seg.url), (seg.size, seg.version)
    hit = None if cache is None else cache.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    with seg.open() as f:
        t, info = scan_range(f, 0, f.size, verify_crc=False)
    table = _with_key_rows({c: np.asarray(t[c], np.int64) for c in _HEADER_COLUMNS})
    table[_CRC_VALID] = np.asarray(t[_CRC_VALID], bool)
    broken = None
    if info["error"] is not None:
        broken = (int(info["error"]["position"]), str(info["error"].get("reason") or "damaged framing"))
    out = (_pieces(table, [0], [len(table["position"])])[0], broken)
    if cache is not None:
        cache[key] = (stamp, out)
    return out


def _judge(h, best, hw, taken):
    """(report entry, Copy, the `Gap` s of the copy read it holds -- `_gaps_held`) of a copy not read (``h``)
    beside the copy read (``best``). ``taken``: the stretches of the copy read's batches whose CRC fails that the
    copies judged before hold intact (a read takes them from the first of them, `kafkafmt.log._fill`); those
    ``h`` would give are added."""
    name, where, there = h.part.name, h.part.url, best.part.url
    span = "no records" if h.first is None else f"offsets {h.first}..{h.last}"
    lag = max(0, best.last - h.last)
    same = h.first is None or best.first is None or _same_batches(best, h)
    differ = None if same else _first_difference(best, h)
    if differ is not None:
        offset, why = differ
        marks = [m for m in (hw(h.part), hw(best.part)) if m is not None]
        uncommitted = len(marks) == 2 and offset >= min(marks)
        if uncommitted:
            msg = (f"copies of {name} diverge from offset {offset} ({why}), above the high watermark "
                   f"{min(marks)}: {where} holds records Kafka would truncate (never committed); read: {there} "
                   f"(up to offset {best.last})")
            entry = ReportEntry(ReportKind.DIVERGED, where, msg, offset=offset)
        else:
            msg = (f"copies of {name} disagree from offset {offset} ({why}): {there} and {where}; read: {there} "
                   f"(up to offset {best.last}); replicas='all' reads both")
            entry = ReportEntry(ReportKind.MISMATCH, where, msg, offset=offset)
        return entry, h.copy("diverged", hw=hw(h.part), behind=lag, offset=offset, uncommitted=uncommitted,
                             detail=msg), ()
    # (a copy holding the same batches where both hold offsets holds none in a gap between two of them; one
    # starting later holds none before the copy read's first batch)
    early = h.first is not None and best.first is not None and h.first < best.first
    gaps = _gaps_held(best, h, interior=not same) if early or not same else ()
    lagging = f"; {lag} offsets behind" if lag else ""
    filled = spans = ""
    if gaps:
        spans = spans_text([(g.lo, min(g.hi, h.last + 1)) for g in gaps])     # (a log may end inside a gap)
        filled = f"; it holds offsets {spans} that the copy read lacks: read from it"
    # (the stretches of the copy read whose CRC fails that a read takes from this copy: said whatever else is)
    damaged = _damaged_held(best, h, taken)
    taken += damaged
    crc_read = (f"; read from it where the copy read holds batches whose CRC fails, when CRCs are checked: offsets "
                f"{spans_text(damaged)}" if damaged else "")
    crc = _first_crc_failure(h) if h.damage is None else None
    if h.damage is not None or crc is not None:
        if h.damage is not None:
            seg, (pos, why) = h.damage
            what = f"breaks at byte {pos} ({why})"
        else:
            seg, pos, lo, hi, n = crc
            what = (f"fails the CRC of {n} batch{'es' if n > 1 else ''}, the first at byte {pos} (offsets "
                    f"{lo}..{hi})")
        msg = f"copy of {name} damaged: {seg.url} {what}; read: {there} (up to offset {best.last})" + filled + crc_read
        return (ReportEntry(ReportKind.DAMAGED_COPY, seg.url, msg, start=pos),
                h.copy("damaged", hw=hw(h.part), behind=lag, detail=msg), gaps)
    state = "behind" if lag else "in sync"
    # offsets it holds before the copy read's first that no gap takes (below the copy read's log start offset:
    # deleted there, or no checkpoint says where that copy's log starts)
    upto = None
    if h.first is not None and (best.first is None or h.first < best.first):
        upto = h.last if best.first is None else min(h.last, best.first - 1)
        lead = next((g for g in gaps if g.before is None), None)
        if lead is not None:
            upto = lead.lo - 1 if lead.lo > h.first else None
    if upto is not None and not gaps:
        msg = (f"copy of {name} not read ({span}): it holds offsets {h.first}..{upto} that the copy read ({there}, "
               f"up to offset {best.last}) does not; replicas='all' reads every copy" + crc_read)
        return (ReportEntry(ReportKind.DUPLICATE, where, msg, offset=h.first),
                h.copy(state, hw=hw(h.part), behind=lag, detail=msg), gaps)
    if gaps:
        below = (f"; it also holds offsets {h.first}..{upto}, before the copy read's log start offset (or with no "
                 f"checkpoint of it): not read, replicas='all' reads every copy" if upto is not None else "")
        msg = (f"copy of {name} ({span}) read only where the copy read ({there}, up to offset {best.last}) lacks "
               f"offsets it holds records of: {spans}" + below + crc_read + lagging)
        return (ReportEntry(ReportKind.PARTLY_READ, where, msg, offset=gaps[0].lo),
                h.copy(state, hw=hw(h.part), behind=lag, detail=msg), gaps)
    untaken = () if same else _in_gaps(best, h)
    if untaken:
        msg = (f"copy of {name} not read ({span}): it holds offsets {spans_text(untaken)} between batches of the copy "
               f"read ({there}, up to offset {best.last}) that it lacks, not between batches both hold (or of "
               f"another leader epoch than the copy read's there): not read, replicas='all' reads every copy"
               + crc_read + lagging)
        return (ReportEntry(ReportKind.DUPLICATE, where, msg, offset=untaken[0][0]),
                h.copy(state, hw=hw(h.part), behind=lag, detail=msg), ())
    if damaged:
        msg = (f"copy of {name} ({span}) read only where the copy read ({there}, up to offset {best.last}) holds "
               f"batches whose CRC fails -- offsets {spans_text(damaged)} -- when CRCs are checked (verify_crc=True, "
               f"the default)" + lagging)
        return (ReportEntry(ReportKind.PARTLY_READ, where, msg, offset=damaged[0][0]),
                h.copy(state, hw=hw(h.part), behind=lag, detail=msg), ())
    msg = (f"copy of {name} not read ({span}): the copy in {there} holds all of it (up to offset {best.last})"
           + lagging)
    return ReportEntry(ReportKind.REPLICA, where, msg), h.copy(state, hw=hw(h.part), behind=lag, detail=msg), ()


def _first_crc_failure(h):
    """(segment, position in it, first and last offset, batches failing in all) of the first batch of copy ``h``
    whose CRC fails, or None (the usual case: nothing looked at)."""
    if not h.crc_failures:
        return None
    cols = h.cols
    bad = np.flatnonzero(~cols[_CRC_VALID])
    i = int(bad[0])
    return (h.segments[int(cols["segment"][i])], int(cols["position"][i]), int(cols["base_offset"][i]),
            int(cols["last_offset"][i]), len(bad))


def _damaged_held(best, h, taken):
    """The stretches of offsets ``(lo, hi)`` of the copy read's (``best``) batches whose CRC fails that copy ``h``
    holds intact, in batches of the same base and last offsets and CRC, but those in the stretches ``taken``
    (another copy gives them): what a read of ``best`` takes from ``h`` there (`ReportKind.FROM_COPY`). Nothing
    looked at when no batch of ``best`` fails its CRC (the usual case)."""
    if not best.crc_failures:
        return []
    b, o = best.cols, h.cols
    bad = np.flatnonzero(~b[_CRC_VALID])
    hb, hl, hc, hv = o["base_offset"], o["last_offset"], o["crc"], o[_CRC_VALID]
    out = []
    for i in bad.tolist():
        base, last, crc = int(b["base_offset"][i]), int(b["last_offset"][i]), int(b["crc"][i])
        if any(lo <= base and last < hi for lo, hi in taken):
            continue
        j = np.flatnonzero((hb == base) & (hl == last) & (hc == crc) & hv)
        if len(j):
            if out and out[-1][1] == base:
                out[-1] = (out[-1][0], last + 1)
            else:
                out.append((base, last + 1))
    return out


def _gaps_of(base, last):
    """The gaps between consecutive batches of a copy (``base`` and ``last`` offsets, in offset order): (the row of
    the batch before each, its first offset, the first offset after it)."""
    cut = np.flatnonzero(base[1:] > last[:-1] + 1)
    return cut, last[cut] + 1, base[cut + 1]


def _in_gaps(best, h):
    """The stretches of offsets (lo, hi) between two consecutive batches of the copy read (``best``) that copy ``h``
    holds batches in (clipped to them): what it holds that the copy read lacks there."""
    b, o = best.cols, h.cols
    base, last = b["base_offset"], b["last_offset"]
    hb, hl = o["base_offset"], o["last_offset"]
    if not len(hb):
        return []
    cut, lo, hi = _gaps_of(base, last)
    if not len(cut):
        return []
    i = np.searchsorted(lo, hl, side="right") - 1        # the gap each batch of h ends in or after
    ic = np.maximum(i, 0)
    inside = (i >= 0) & (hb < hi[ic]) & (hl >= lo[ic])
    return [(int(max(lo[i[k]], hb[k])), int(min(hi[i[k]], hl[k] + 1))) for k in np.flatnonzero(inside).tolist()]


def _first_difference(a, b):
    """The first offset where two copies of a partition both hold a record and the records differ
    (key, value, timestamp), with why -- or None. Batches with the same offsets, size and CRC in
    both are the same; only the others are decoded (copies compacted apart, or batched apart, can
    differ in batches and still agree on every record)."""
    ta, tb = a.batches(), b.batches()
    lo, hi = max(a.first or 0, b.first or 0), min(a.last, b.last)
    if not len(ta) or not len(tb) or lo > hi:
        return None
    ua = ta[~np.isin(_batch_keys(ta), _batch_keys(tb))]
    ub = tb[~np.isin(_batch_keys(tb), _batch_keys(ta))]
    ua = ua[(ua[:, 5] >= lo) & (ua[:, 4] <= hi)]
    ub = ub[(ub[:, 5] >= lo) & (ub[:, 4] <= hi)]
    if not len(ua) or not len(ub):
        return None
    ua = ua[np.argsort(ua[:, 4], kind="stable")]
    i = 0
    while i < len(ua):
        j = i
        nbytes = 0
        while j < len(ua) and (j == i or nbytes < _COMPARE_BYTES):
            nbytes += int(ua[j, 2])
            j += 1
        group_lo, group_hi = int(ua[i, 4]), int(ua[j - 1, 5])
        theirs = ub[(ub[:, 5] >= group_lo) & (ub[:, 4] <= group_hi)]
        if len(theirs):
            ra, why_a = _decoded(a, ua[i:j])
            rb, why_b = _decoded(b, theirs)
            if why_a or why_b:
                return group_lo, why_a or why_b
            found = _first_unequal(ra, rb)
            if found is not None:
                return found
        i = j
    return None


def _batch_keys(rows):
    """One comparable value per batch row: its base and last offsets, size and CRC."""
    cols = np.ascontiguousarray(rows[:, [4, 5, 2, 3]])
    return cols.view(np.dtype((np.void, cols.itemsize * 4))).ravel()


def _decoded(held, rows):
    """The records of some batches of a copy as (offsets, timestamps, keys, values) -- keys and
    values Arrow arrays -- or why they do not decode."""
    import pyarrow as pa

    from kafkafmt.record import decode

    offs, ts, keys, values = [], [], [], []
    for seg_index in np.unique(rows[:, 0]).tolist():
        seg = held.segments[seg_index]
        mine = rows[rows[:, 0] == seg_index]
        mine = mine[np.argsort(mine[:, 1], kind="stable")]
        ends = mine[:, 1] + mine[:, 2]
        cuts = np.flatnonzero(mine[1:, 1] != ends[:-1]) + 1        # runs of adjacent batches: one decode each
        with seg.open() as f:
            for run in np.split(np.arange(len(mine)), cuts):
                start, stop = int(mine[run[0], 1]), int(ends[run[-1]])
                buf, base = window(f, start, stop)
                try:
                    r = decode(buf, start=start - base, stop=stop - base, verify_crc=None, headers=False)
                except KafkafmtError as exc:
                    return None, f"the batches at bytes {start}..{stop} of {seg.url} do not decode: {exc.reason}"
                offs.append(np.asarray(r.offset, np.int64))
                ts.append(np.asarray(r.timestamp, np.int64))
                keys.append(r.key.to_arrow())
                values.append(r.value.to_arrow())
    if not offs:
        return (np.zeros(0, np.int64), np.zeros(0, np.int64), pa.array([], pa.binary()), pa.array([], pa.binary())), None
    return (np.concatenate(offs), np.concatenate(ts), _concat(keys), _concat(values)), None


def _concat(arrays):
    import pyarrow as pa

    return pa.concat_arrays([a.cast(pa.large_binary()) for a in arrays])


def _first_unequal(ra, rb):
    """(offset, what differs) of the first offset both hold with different records, or None."""
    import pyarrow as pa
    import pyarrow.compute as pc

    common, ia, ib = np.intersect1d(ra[0], rb[0], return_indices=True)
    if not len(common):
        return None
    differ = np.zeros(len(common), bool)
    what = np.full(len(common), "", object)
    for name, x, y in (("value", ra[3], rb[3]), ("key", ra[2], rb[2])):
        x, y = x.take(pa.array(ia)), y.take(pa.array(ib))
        same = pc.or_kleene(pc.and_(x.is_null(), y.is_null()), pc.fill_null(pc.equal(x, y), False))
        bad = ~np.asarray(same.to_numpy(zero_copy_only=False), bool)
        what[bad] = name
        differ |= bad
    bad = ra[1][ia] != rb[1][ib]
    what[bad] = "timestamp"
    differ |= bad
    if not differ.any():
        return None
    k = int(np.argmax(differ))
    return int(common[k]), f"the {what[k]}s differ"


def live_topic_ids(meta_parts):
    """{topic: id} of the topics a cluster's metadata log says exist: its latest ``.checkpoint`` snapshot, then
    its records after the snapshot -- each ``TopicRecord`` names a topic's id, a ``RemoveTopicRecord`` removes
    it (the most complete of several copies of the log is read; a record that does not decode is skipped).

    Parameters
    ----------
    meta_parts : list of Partition
        Copies of ``__cluster_metadata-0``.

    Returns
    -------
    dict
    """
    from kafkafmt.record import decode

    best = None
    for part in meta_parts:
        files = part.files()
        snaps = sorted(n for n, _ in files if file_kind(n) == "kraft-snapshot")
        segs = part.list_segments()
        size = sum(s.size or 0 for s in segs)
        if best is None or (snaps[-1:] or [""])[0] > best[0] or size > best[1]:
            best = ((snaps[-1:] or [""])[0], size, part, dict(files))
    if best is None:
        return {}
    snap, _, part, files = best
    names, removed = {}, set()
    upto = -1
    sources = [files[snap]] if snap else []
    if snap:
        upto = int(snap.split("-")[0]) - 1          # <end offset>-<epoch>.checkpoint holds offsets below it
    for path in sources + [s.log for s in part.list_segments()]:
        try:
            with part.storage.open(path) as f:
                recs = decode(window(f, 0, f.size)[0], headers=False)
        except (KafkafmtError, OSError):
            continue
        is_snapshot = path in sources
        offsets = recs.offset
        for i in range(len(recs)):
            if not is_snapshot and int(offsets[i]) <= upto:
                continue
            try:
                api_key, _version, _msg, data = decode_metadata_record(recs.value[i])
            except (KafkafmtError, LookupError, ValueError, TypeError):
                continue
            if api_key == _TOPIC_RECORD:
                names[data["Name"]] = uuid_text(data["TopicId"])
            elif api_key == _REMOVE_TOPIC_RECORD:
                removed.add(uuid_text(data["TopicId"]))
    return {name: tid for name, tid in names.items() if tid not in removed}
