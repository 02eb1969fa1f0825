"""What a read skipped or did in a degraded way, typed: `ReportEntry` of a `ReportKind`; and what it shares
with the other notes that name a place in a file: the fields of a `Note` (a recovery's actions are notes too), read
also as a mapping, and the place in words (`place_text`, a command's problems use it too); a damaged range in
the words every command uses (`damage_words`).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["ReportKind", "ReportEntry", "Note", "place_text", "damage_words", "spans_text"]


def place_text(file, start=None, end=None, offset=None):
    """Where in a file, in words: ``file position start..end (offset N)``, each part left out when
    unknown (``..end`` also when the range is empty)."""
    where = file
    if start is not None:
        where += f" position {start}"
        if end is not None and end > start:
            where += f"..{end}"
    if offset is not None:
        where += f" (offset {offset})"
    return where


#: stretches of offsets a message names (then how many more)
_SPANS_SAID = 5


def spans_text(spans):
    """Stretches of offsets [(lo, hi), ...] in words: ``lo..hi-1`` each, the first few named, then how many
    more and how many offsets in all (for several)."""
    n = sum(hi - lo for lo, hi in spans)
    text = ", ".join(f"{lo}..{hi - 1}" for lo, hi in spans[:_SPANS_SAID])
    more = f" and {len(spans) - _SPANS_SAID} more stretches" if len(spans) > _SPANS_SAID else ""
    return f"{text}{more} ({n} offsets)" if len(spans) > 1 else text


class ReportKind(enum.Enum):
    """The kinds of `ReportEntry`.

    Attributes
    ----------
    CORRUPT
        A corrupt byte range, skipped (salvage).
    TRUNCATED
        A final batch cut short.
    ZEROS
        A zero-filled (preallocated) tail.
    GAP
        Offsets missing between a partition's places (tiered and local).
    LEFTOVER
        A broker leftover file or folder, skipped.
    DUPLICATE
        A second copy of something read once (a re-upload; a copy of a partition holding offsets
        the copy read no longer has).
    REPLICA
        A copy of a partition not read: the copy read holds every record it holds (``replicas="dedup"``).
    MISMATCH
        Copies of one partition that disagree.
    INDEX_FALLBACK
        An index not used (missing, insane, wrong): scanned instead.
    BAD_VALUE
        Keys or values that could not be typed (``value_format=``): null, the reason kept.
    FROM_COPY
        A range of the copy read that it cannot give intact (damaged, cut off), read from another copy
        that holds it intact.
    GAP_FROM_COPY
        Offsets the copy read lacks between two of its batches (a range a recovery cut from it, batches
        one broker's log cleaner dropped), read from another copy that holds them between the same two
        batches.
    PARTLY_READ
        A copy of a partition read only for offsets the copy read lacks between two of its batches
        (`GAP_FROM_COPY`), or holds in batches whose CRC fails (`FROM_COPY`, when CRCs are checked); the copy
        read holds the rest.
    DIVERGED
        Copies of one partition that part above their high watermarks: records Kafka would truncate
        (never committed).
    DAMAGED_COPY
        A copy of a partition, not read, whose bytes are damaged.
    INCARNATION
        Copies of one partition from different incarnations of its topic (other topic ids), nothing
        choosing one: not read.
    STRAY
        A copy of another incarnation of the topic than the one read (a stray log): not read.
    """

    CORRUPT = "corrupt"                # a corrupt byte range, skipped (salvage)
    TRUNCATED = "truncated"            # a final batch cut short
    ZEROS = "zeros"                    # a zero-filled (preallocated) tail
    GAP = "gap"                        # offsets missing between a partition's places (tiered and local)
    LEFTOVER = "leftover"              # a broker leftover file or folder, skipped
    DUPLICATE = "duplicate"            # a second copy of something read once (a re-upload, an older copy)
    REPLICA = "replica"                # a copy of a partition not read: the copy read holds all of it
    MISMATCH = "mismatch"              # copies of one partition that disagree
    INDEX_FALLBACK = "index_fallback"  # an index not used (missing, insane, wrong): scanned instead
    BAD_VALUE = "bad_value"            # keys or values that could not be typed (value_format=): null, reason kept
    FROM_COPY = "from_copy"            # a range the copy read cannot give intact, read from another copy
    GAP_FROM_COPY = "gap_from_copy"    # offsets the copy read lacks between two of its batches, read from another
    PARTLY_READ = "partly_read"        # a copy not read but for offsets the copy read lacks or holds damaged
    DIVERGED = "diverged"              # copies that part above their high watermarks (uncommitted records)
    DAMAGED_COPY = "damaged_copy"      # a copy not read whose bytes are damaged
    INCARNATION = "incarnation"        # copies of different incarnations of a topic, none chosen: not read
    STRAY = "stray"                    # a copy of another incarnation than the one read: not read


@dataclass(frozen=True)
class Note:
    """What a note on a place in a file holds -- its ``kind``, the ``file``, the ``message``, the byte
    range ``start``..``end`` and the ``offset`` concerned (each None when unknown) -- read also as a
    mapping (``note["start"]``, ``note.get("reason")``). The base of `ReportEntry` and of a recovery's
    actions, which document the fields in their own words."""
    kind: object
    file: str
    message: str
    start: object = None
    end: object = None
    offset: object = None

    @property
    def reason(self):
        """The ``message`` (the name older callers use)."""
        return self.message

    def __getitem__(self, key):
        return getattr(self, key)

    def get(self, key, default=None):
        """A field by name, or ``default`` when there is no such field (as `dict.get`).

        Parameters
        ----------
        key : str
            A field name (``kind``, ``file``, ``message``, ``reason``, ``start``, ``end``, ``offset``, and
            those of the note's own class).
        default : optional
            What a name that is not a field gives.

        Returns
        -------
        object
        """
        return getattr(self, key, default)


@dataclass(frozen=True)
class ReportEntry(Note):
    """Something skipped or read in a degraded way. Reads also as a mapping (``entry["start"]``,
    ``entry.get("reason")``).

    Parameters
    ----------
    kind : ReportKind
        What happened.
    file : str
        The file or folder concerned.
    message : str
        Why, in words.
    start, end : int, optional
        The byte range in ``file`` (None for a whole file or folder).
    offset : int, optional
        The batch's offset when known.

    Examples
    --------
    A damaged copy of a sample segment, read with ``errors="salvage"``:

    >>> import kafkafmt
    >>> from kafkafmt.sample import damaged_copy
    >>> folder = damaged_copy("damaged/payments-0")     # its second batch damaged
    >>> recs = kafkafmt.read_segment(f"{folder}/00000000000000000000.log", errors="salvage")
    >>> len(recs)
    30
    >>> entry = recs.report[0]
    >>> entry.kind, entry.start, entry.end, entry.offset
    (<ReportKind.CORRUPT: 'corrupt'>, 352, 669, 20)
    >>> entry["message"]
    "CRC mismatch: the stored checksum does not match the batch's bytes"
    >>> entry.is_damage
    True
    """
    @property
    def is_damage(self):
        """A corrupt range or a truncated tail: data that could not be read."""
        return self.kind in (ReportKind.CORRUPT, ReportKind.TRUNCATED)

    def __contains__(self, key):
        return hasattr(self, key)


def damage_words(entry, skipped=False):
    """A damaged range -- a `ReportEntry` of kind ZEROS, TRUNCATED or CORRUPT -- in the words every command
    uses: what it is and its size in bytes (a corrupt range's ``message`` first; ``skipped`` says a read
    went on after it)."""
    n = int(entry.end) - int(entry.start)
    if entry.kind is ReportKind.ZEROS:
        return f"zero-filled tail of {n} bytes (preallocated file)"
    if entry.kind is ReportKind.TRUNCATED:
        return f"truncated final batch: {n} bytes after the last complete batch"
    return f"{entry.message}; {n} bytes" + (" skipped" if skipped else "")
