# cython: language_level=3
"""A NumPy data allocator (NEP 49) that is plain ``malloc``: the arrays kafkafmt's reads make are allocated
without NumPy's transparent-huge-page advice.

NumPy's own allocator advises huge pages (``madvise(MADV_HUGEPAGE)``) over every array of 4 MiB or more. A read
of many partitions makes dozens of such arrays (the columns of its pieces, their batch tables) and frees them;
on Linux with transparent huge pages in ``madvise`` mode (the usual default) that made every other read of
20,000 small partitions spend about a second more in the kernel, faulting them in. kafkafmt's own output buffers
keep their advice (2 MiB-aligned: `kafkafmt._native.kernel.GrowableBuffer`). `plain_arrays` installs this handler
for the current context only (NumPy keeps it in a context variable) around a read, and puts the caller's back:
arrays made meanwhile keep it (NumPy frees each array with its own handler).

The handler is reached through NumPy's C API table (``PyDataMem_SetHandler``, slot 304 since NumPy 1.22: the
slots never move), so that no NumPy headers are needed to build kafkafmt.
"""
import sys

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_New
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memset, strncmp, strncpy

ctypedef struct _Allocator:
    void *ctx
    void *(*malloc)(void *ctx, size_t size) noexcept nogil
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize) noexcept nogil
    void *(*realloc)(void *ctx, void *ptr, size_t new_size) noexcept nogil
    void (*free)(void *ctx, void *ptr, size_t size) noexcept nogil

ctypedef struct _Handler:          # NumPy's PyDataMem_Handler, version 1
    char name[127]
    unsigned char version
    _Allocator allocator

ctypedef object (*_SetHandler)(object)

#: the slot of PyDataMem_SetHandler in NumPy's C API table
cdef int SET_HANDLER_SLOT = 304

# (a size of 0 asked as 1: malloc(0) may give NULL, which NumPy takes for a failure)
cdef void *_malloc(void *ctx, size_t size) noexcept nogil:
    return malloc(size if size else 1)

cdef void *_calloc(void *ctx, size_t nelem, size_t elsize) noexcept nogil:
    return calloc(nelem if nelem else 1, elsize if elsize else 1)

cdef void *_realloc(void *ctx, void *ptr, size_t size) noexcept nogil:
    return realloc(ptr, size if size else 1)

cdef void _free(void *ctx, void *ptr, size_t size) noexcept nogil:
    free(ptr)

cdef _Handler _HANDLER
memset(&_HANDLER, 0, sizeof(_Handler))
strncpy(_HANDLER.name, b"kafkafmt_plain_malloc", 126)
_HANDLER.version = 1
_HANDLER.allocator.malloc = _malloc
_HANDLER.allocator.calloc = _calloc
_HANDLER.allocator.realloc = _realloc
_HANDLER.allocator.free = _free

#: the handler, as NumPy takes it (a capsule named "mem_handler"; it lives as long as this module)
PLAIN_HANDLER = PyCapsule_New(&_HANDLER, b"mem_handler", NULL)
#: the name NumPy gives arrays allocated by it (``numpy.core.multiarray.get_handler_name``)
PLAIN_HANDLER_NAME = "kafkafmt_plain_malloc"

cdef void **_api = NULL


cdef void **_numpy_api() except NULL:
    """NumPy's C API table (what ``import_array`` reads), from its ``_ARRAY_API`` capsule."""
    global _api
    if _api == NULL:
        try:
            from numpy._core import _multiarray_umath as umath     # NumPy 2
        except ImportError:
            from numpy.core import _multiarray_umath as umath      # NumPy 1.22+
        _api = <void **>PyCapsule_GetPointer(umath._ARRAY_API, NULL)
    return _api


def set_handler(handler):
    """Make ``handler`` (a "mem_handler" capsule) NumPy's data allocator in the current context; the one it
    replaces (``PyDataMem_SetHandler``)."""
    return (<_SetHandler>_numpy_api()[SET_HANDLER_SLOT])(handler)


cdef int _state = -1       # whether plain_arrays installs the handler here (-1: not known yet)


cdef bint _usable():
    """Linux (where the advice is given) with a NumPy whose C API has the slot (1.22+), tried once."""
    global _state
    if _state < 0:
        _state = 0
        if sys.platform.startswith("linux"):
            try:
                import numpy
                if numpy.lib.NumpyVersion(numpy.__version__) >= "1.22.0":
                    set_handler(set_handler(PLAIN_HANDLER))
                    _state = 1
            except Exception:       # (no such table or capsule: NumPy's own allocator is kept)
                _state = 0
    return _state == 1


cdef bint _is_default(handler):
    """Whether ``handler`` (a "mem_handler" capsule) is NumPy's own allocator."""
    cdef _Handler *h = <_Handler *>PyCapsule_GetPointer(handler, b"mem_handler")
    return strncmp(h.name, b"default_allocator", 127) == 0


class plain_arrays:
    """Within: NumPy arrays made in this context are allocated by `PLAIN_HANDLER` (no huge-page advice) where
    they would be by NumPy's own allocator -- a handler the caller installed stays --; the handler before is put
    back on leaving (nested and in several threads alike: each context its own). A no-op where the handler
    cannot be installed (not Linux, a NumPy without the slot)."""

    __slots__ = ("_before",)

    def __enter__(self):
        before = set_handler(PLAIN_HANDLER) if _usable() else None
        if before is not None and not _is_default(before):
            set_handler(before)     # (the caller's own allocator: theirs to keep)
            before = None
        self._before = before
        return self

    def __exit__(self, *exc):
        before, self._before = self._before, None
        if before is not None:
            set_handler(before)
        return False
