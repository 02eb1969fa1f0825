# cython: language_level=3, boundscheck=False, wraparound=False
"""Many small local files read into one buffer by one call (`kafkafmt.storage.LocalStorage.read_many`): for each,
an open, reads until its slot is full or the file ends, a close -- with the interpreter let go for the whole
batch (a cluster's copies are compared, and its small partitions read, a few thousand files at a time).

`advise_files` tells the kernel that files will be read soon (`LocalStorage.will_read`), so that a disk reads
them while the caller works on the ones before.

Each file's result is what `LocalStorage.read_into` gives for it: the bytes read, fewer only when the file is
shorter than its slot; an error is a negative errno in its place (the caller reads that file again the usual
way, which raises the error with its name), never an exception for the batch.
"""
import os

import numpy as np

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.errno cimport EINVAL
from libc.stdint cimport int64_t, uint8_t

cdef extern from "kfmt_reads.h" nogil:
    int64_t kfmt_read_file(const char *path, uint8_t *out, int64_t want, int64_t start)
    int64_t kfmt_advise_file(const char *path, int64_t max_bytes)


cdef const char **_c_names(list raw) except NULL:
    """C strings of ``raw`` (encoded paths, kept alive by the caller), NULL for one holding a NUL (a C string would
    cut it short); the array is the caller's to free (`PyMem_Free`)."""
    cdef Py_ssize_t i, n = len(raw)
    cdef const char **names = <const char **>PyMem_Malloc(max(n, 1) * sizeof(const char *))
    if names == NULL:
        raise MemoryError()
    for i in range(n):
        r = raw[i]
        names[i] = NULL if b"\0" in r else <const char *>r
    return names


def read_files(list paths, uint8_t[::1] buf, const int64_t[::1] starts, offsets=None):
    """Read file ``i`` of ``paths`` into ``buf[starts[i]:starts[i + 1]]`` (``starts``: one more than the
    paths, non-decreasing, within ``buf``), from its byte ``offsets[i]`` on (None: from its first); an int64 array
    of what each read: its bytes, or -errno (ENOSYS: no POSIX reads here; EINVAL: a path holding a NUL, which a C
    string would cut short)."""
    cdef Py_ssize_t n = len(paths), i
    if starts.shape[0] != n + 1:
        raise ValueError("read_files: starts must hold one more entry than paths")
    for i in range(n):
        if starts[i] < 0 or starts[i + 1] < starts[i] or starts[i + 1] > buf.shape[0]:
            raise ValueError(f"read_files: slot {i} ({starts[i]}..{starts[i + 1]}) outside the buffer")
    cdef const int64_t[::1] at = np.zeros(n, np.int64) if offsets is None else np.ascontiguousarray(offsets, np.int64)
    if at.shape[0] != n:
        raise ValueError("read_files: offsets must hold one entry a path")
    for i in range(n):
        if at[i] < 0:
            raise ValueError(f"read_files: offset {at[i]} of file {i} is negative")
    raw = [os.fsencode(p) for p in paths]
    got = np.empty(n, np.int64)
    cdef int64_t[::1] g = got
    cdef uint8_t *base = &buf[0] if buf.shape[0] else NULL
    cdef const char **names = _c_names(raw)
    try:
        with nogil:
            for i in range(n):
                if names[i] == NULL:
                    g[i] = -EINVAL
                elif starts[i + 1] == starts[i]:
                    g[i] = 0
                else:
                    g[i] = kfmt_read_file(names[i], base + starts[i], starts[i + 1] - starts[i], at[i])
    finally:
        PyMem_Free(names)
    return got


def advise_files(list paths, int64_t max_bytes):
    """Tell the kernel that each file of ``paths`` holding at most ``max_bytes`` will be read whole soon
    (``posix_fadvise`` WILLNEED: it starts reading it into the page cache and returns), with the interpreter let
    go for the batch; an int64 array of each file's size where told, else -errno (EFBIG: larger than
    ``max_bytes``; ENOSYS: no such hint here; EINVAL: a path holding a NUL)."""
    cdef Py_ssize_t n = len(paths), i
    raw = [os.fsencode(p) for p in paths]
    got = np.empty(n, np.int64)
    cdef int64_t[::1] g = got
    cdef const char **names = _c_names(raw)
    try:
        with nogil:
            for i in range(n):
                g[i] = -EINVAL if names[i] == NULL else kfmt_advise_file(names[i], max_bytes)
    finally:
        PyMem_Free(names)
    return got
