"""Small chunks gathered into larger ones: the chunks of many small partitions (a chunk a partition's segment)
taken together where a consumer's work per chunk would cost more than the chunk's own records (a Polars frame,
a lakehouse table's write)."""
from __future__ import annotations

from kafkafmt.record import Records

__all__ = ["Gathering", "decoded_bytes", "join_chunks"]


class Gathering:
    """Chunks (or tables) gathered into groups of about ``rows`` rows and at most about ``max_bytes`` decoded
    bytes (what one chunk of the read may hold), a chunk as it is when it holds as many; an item of another
    ``key`` (a table of another schema) starts a group of its own. A group is let go before it is given: a
    consumer may ask for the `rest` while it handles one."""

    def __init__(self, rows, max_bytes):
        self.rows, self.max_bytes = rows, max_bytes
        self.items, self.n, self.nbytes, self.key = [], 0, 0, None

    def add(self, item, rows, nbytes, key=None, left=None):
        """The groups (lists of items) complete once ``item`` (``rows`` rows, ``nbytes`` decoded bytes; ``key``:
        its schema, when that may differ) is added; ``left``: the rows still wanted (a group is given as soon as
        it could hold them)."""
        if self.items and (key != self.key or self.nbytes + nbytes > self.max_bytes):
            yield from self.rest()
        self.items.append(item)
        self.n += rows
        self.nbytes += nbytes
        self.key = key
        if self.n >= (self.rows if left is None else min(self.rows, left)):
            yield from self.rest()

    def rest(self):
        """The items gathered, as one group (none when none)."""
        if self.items:
            items, self.items, self.n, self.nbytes = self.items, [], 0, 0
            yield items

    def clear(self):
        """Let go of what was gathered (a read abandoned)."""
        self.items, self.n, self.nbytes = [], 0, 0


def decoded_bytes(recs):
    """About how many bytes a chunk's columns hold: its keys' and values' bytes (typed ones too), 25 a record and 40
    a header."""
    key, value, headers = (recs.decoded(side) for side in ("key", "value", "headers"))
    return (25 * len(recs) + sum(c.nbytes for c in (key, value) if c is not None)
            + sum(dec.values.nbytes for dec in recs.typed.values())
            + (40 * headers.count() if headers is not None else 0))


def join_chunks(chunks):
    """One `Records` of the chunks (a list given up: `Records.concat` with ``consume``), one after the other; a
    chunk alone as it is. The chunks of a read share its one ``report`` list: the joined records' is empty."""
    if len(chunks) == 1:
        return chunks[0]
    return Records.concat([recs.replace(report=[]) for recs in chunks], consume=True)
