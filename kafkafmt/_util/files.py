"""Reading a whole small file with the fewest calls (side files are read by the thousand: a buffered file
object costs more than the read)."""
from __future__ import annotations

import os

__all__ = ["read_whole"]

#: bytes asked for by each read: a side file is read in one call, a large file in a few
_CHUNK = 1 << 18


def read_whole(path) -> bytes:
    """The whole content of a file (raises OSError as ``open`` does).

    Examples
    --------
    >>> with open("x.bin", "wb") as f:
    ...     _ = f.write(b"abc")
    >>> read_whole("x.bin")
    b'abc'
    """
    # (O_NONBLOCK: a fifo given in its place is read as empty, not waited on for a writer)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        first = os.read(fd, _CHUNK)
        if len(first) < _CHUNK:
            return first
        parts = [first]
        while True:
            more = os.read(fd, _CHUNK)
            if not more:
                return b"".join(parts)
            parts.append(more)
    finally:
        os.close(fd)
