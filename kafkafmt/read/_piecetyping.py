"""The typed keys and values of a whole bulk piece at once.

A read of many small partitions decodes their records in one pass (`kafkafmt.log.BulkPiece`) and types each
partition's chunks as its own read types them. Typing a chunk costs about a quarter of a millisecond whatever it
holds (a value plan run, its Arrow arrays assembled), so for a thousand partitions of twenty values the typing was
most of the read. Here the values of each run of a piece's partitions of one topic are typed by one call
(`kafkafmt.values.decode_values`), and each chunk takes its rows of that (copied into arrays of its own: see
`_compact`).

That gives each chunk what typing it alone gives only when a value's typed row depends on nothing but the value:
so only where every typed side of the topic has its Arrow type known before reading (a plain JSON format infers
its type from the values it is given: such a piece is typed chunk by chunk), and only when every value of the
piece was read whole -- no value with an error, none with a field its column cannot hold, none with bytes after
it, nothing raised. Otherwise the piece is typed chunk by chunk, as before, which says each problem with its own
segment file (the report's entries, a strict read's error) where it would have said it.
"""
from __future__ import annotations

import bisect
import dataclasses

from kafkafmt._util.extras import import_pyarrow
from kafkafmt.values import decode_values

__all__ = ["piece_typed", "PieceTyped"]

#: where a piece keeps its typing (`kafkafmt.log.BulkPiece.memo`)
_MEMO_KEY = "typed"


class PieceTyped:
    """The typed columns of a piece: per run of partitions of one topic, its first row in the piece and its
    ``{side: DecodedColumn}``."""

    __slots__ = ("starts", "columns")

    def __init__(self, starts, columns):
        self.starts = starts
        self.columns = columns

    def rows(self, lo, hi):
        """``{side: DecodedColumn}`` of the piece's rows ``lo:hi`` (one partition's chunk: inside one run), its
        arrays copied out of the piece's (`_compact`)."""
        r = bisect.bisect_right(self.starts, lo) - 1
        base = self.starts[r]
        return {side: _compact(dec[lo - base:hi - base]) for side, dec in self.columns[r].items()}


def _compact(dec):
    """A slice of a piece's `DecodedColumn` with arrays of its own, as typing the chunk alone gives them: a slice
    holds the whole piece's buffers, and a consumer may copy them all for each chunk (Polars' ``from_arrow`` of
    a thousand such chunks of nested values took 2.2 s where their own arrays take 0.1 s)."""
    return dataclasses.replace(dec, values=_own(dec.values), schema_id=_own(dec.schema_id), error=_own(dec.error),
                               untyped=None if dec.untyped is None else _own(dec.untyped))


def _own(array):
    pa = import_pyarrow()
    if isinstance(array, pa.ChunkedArray):
        return pa.chunked_array([pa.concat_arrays([c]) for c in array.chunks], array.type)
    return pa.concat_arrays([array])


def piece_typed(piece, typed):
    """The `PieceTyped` of a `kafkafmt.log.BulkPiece` read with the typed options ``typed``, worked out once a
    piece; None when its chunks must be typed one by one (see the module docstring)."""
    got = piece.memo.get(_MEMO_KEY)
    if got is not None and got[0] is typed:
        return got[1]
    out = _type_piece(piece, typed)
    piece.memo[_MEMO_KEY] = (typed, out)
    return out


def _type_piece(piece, typed):
    units = piece.units
    rows = piece.record_edges[piece.unit_edges].tolist()      # (each unit's first row, then the end)
    starts, columns, known = [], [], {}
    j = 0
    while j < len(units):
        topic = units[j].topic
        k = j + 1
        while k < len(units) and units[k].topic == topic:
            k += 1
        if topic not in known:
            known[topic] = typed.types_known(topic)
        if not known[topic]:
            return None
        lo, hi = rows[j], rows[k]
        try:
            recs = decode_values(piece.records[lo:hi].replace(topic=topic, report=[]), typed)
        except Exception:   # noqa: BLE001 - typed chunk by chunk, each raises what its own typing raises
            return None
        if recs.report or any(d.error_count or d.field_error_count or d.trailing_count for d in recs.typed.values()):
            return None
        starts.append(lo)
        columns.append(recs.typed)
        j = k
    return PieceTyped(starts, columns)
