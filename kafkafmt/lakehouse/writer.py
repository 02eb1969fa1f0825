"""Data files: Parquet files of a table written as records stream in, one open file per partition
value, each rolled over when it reaches the target size.

Rows go to a file in the order they come (the export reads partition by partition, offset by
offset, so every file is sorted by Kafka partition and offset). A file's rows are buffered until a
row group's worth (``row_group_bytes`` of Arrow data) is there; when all files' buffers together
pass ``memory_bytes``, the largest is written out, and when more than ``max_open`` files are open
the least recently used one is closed -- so memory stays bounded whatever the number of partitions.
A file is closed once its size (the bytes written so far plus its buffer at the compression ratio
seen so far) reaches ``target_size``.

The table format decides where a file goes and what it becomes once closed: ``open_file(key)``
returns (handle, binary stream), ``close_file(handle, key, stream, parquet_metadata, rows)`` returns
the entry to commit (an Iceberg DataFile, a Delta add action).
"""
from __future__ import annotations

from collections import OrderedDict

from kafkafmt._util.durable import crash_point

__all__ = ["RollingWriter"]

ROW_GROUP_BYTES = 64 << 20
MEMORY_BYTES = 64 << 20          # all files together: what the Parquet export buffers for its one file
MAX_OPEN = 32
_FIRST_RATIO = 0.5


class _Open:
    __slots__ = ("handle", "stream", "writer", "pending", "pending_bytes", "raw_written", "rows")

    def __init__(self, handle, stream, writer):
        self.handle, self.stream, self.writer = handle, stream, writer
        self.pending, self.pending_bytes, self.raw_written, self.rows = [], 0, 0, 0


class RollingWriter:
    def __init__(self, schema, open_file, close_file, *, target_size=128 << 20, compression="snappy",
                 row_group_bytes=ROW_GROUP_BYTES, memory_bytes=MEMORY_BYTES, max_open=MAX_OPEN):
        self.schema = schema
        self.open_file, self.close_file = open_file, close_file
        self.target_size = int(target_size)
        self.compression = None if compression in (None, "none", "uncompressed") else compression
        self.row_group_bytes = max(1, min(int(row_group_bytes), self.target_size))
        self.memory_bytes = memory_bytes
        self.max_open = max_open
        self.files = OrderedDict()      # key -> _Open, least recently used first
        self.done = []                  # entries of closed files
        self.pending_bytes = 0
        self.ratio = _FIRST_RATIO       # stored bytes per Arrow byte, from the files written so far
        self.rows = 0
        self.bytes_written = 0

    def write(self, key, table):
        """Add rows (a pyarrow Table with exactly the writer's schema) to the file of partition ``key``: as many
        as its file has room for before it reaches the target size (at the compression ratio seen so far), the
        rest to the next file, however many rows come at once."""
        while table.num_rows:
            f = self.files.get(key)
            if f is None:
                if len(self.files) >= self.max_open:
                    self._close(next(iter(self.files)))
                f = self._start(key)
            else:
                self.files.move_to_end(key)
            n = self._room(f, table)
            if n < table.num_rows:
                part, table = table.slice(0, n), table.slice(n)
            else:
                part, table = table, table.slice(0, 0)
            self._add(key, f, part)

    def _room(self, f, table):
        """How many of ``table``'s rows file ``f`` takes before it reaches the target size (one at least)."""
        room = self.target_size - (f.stream.tell() + f.pending_bytes * self.ratio)
        stored = table.nbytes * self.ratio
        if stored <= room:
            return table.num_rows
        return max(1, min(table.num_rows, int(-(-room * table.num_rows // stored))))

    def _add(self, key, f, table):
        f.pending.append(table)
        f.pending_bytes += table.nbytes
        self.pending_bytes += table.nbytes
        f.rows += table.num_rows
        self.rows += table.num_rows
        if f.stream.tell() + f.pending_bytes * self.ratio >= self.target_size:
            self._close(key)
        elif f.pending_bytes >= self.row_group_bytes:
            self._flush(f)
        while self.pending_bytes > self.memory_bytes:
            self._flush(max(self.files.values(), key=lambda o: o.pending_bytes))

    def _start(self, key):
        import pyarrow.parquet as pq

        handle, stream = self.open_file(key)
        try:
            writer = pq.ParquetWriter(stream, self.schema, compression=self.compression)
        except BaseException:            # Ctrl-C too: nothing left open
            stream.close()
            raise
        f = self.files[key] = _Open(handle, stream, writer)
        return f

    def _flush(self, f):
        if not f.pending:
            return
        import pyarrow as pa

        t = pa.concat_tables(f.pending) if len(f.pending) > 1 else f.pending[0]
        before = f.stream.tell()
        f.writer.write_table(t, row_group_size=max(t.num_rows, 1))
        written = f.stream.tell() - before
        if f.pending_bytes and written > 0:
            self.ratio = 0.5 * self.ratio + 0.5 * (written / f.pending_bytes) if f.raw_written or self.bytes_written \
                else written / f.pending_bytes
        f.raw_written += f.pending_bytes
        self.pending_bytes -= f.pending_bytes
        f.pending, f.pending_bytes = [], 0

    def _close(self, key):
        f = self.files[key]             # still listed until closed: an abort (Ctrl-C meanwhile) closes it
        self._flush(f)
        f.writer.close()
        size = f.stream.tell()
        f.stream.close()
        del self.files[key]
        self.bytes_written += size
        self.done.append(self.close_file(f.handle, key, size, f.writer.writer.metadata, f.rows))
        crash_point()

    def close(self):
        """Close every open file; returns the entries of all files closed since the last call."""
        for key in list(self.files):
            self._close(key)
        done, self.done = self.done, []
        return done

    def abort(self):
        """Close the open files without finishing their rows (a failed or interrupted export: nothing is
        committed): each Parquet writer, then its stream, so that none is left open."""
        for f in self.files.values():
            for close in (f.writer.close, f.stream.close):
                try:
                    close()
                except Exception:   # noqa: BLE001 - best effort on the way out of an error
                    pass
        self.files.clear()
        self.pending_bytes = 0
