"""The arrays of a read of many partitions are allocated without NumPy's huge-page advice
(`kafkafmt._native.arraymem`): the handler gives no advice, a read installs it for its own context only and puts
the caller's back, and what it made stays usable afterwards."""
import ctypes
import sys

import numpy as np
import pytest

import kafkafmt
from kafkafmt import errors
from kafkafmt._native.arraymem import PLAIN_HANDLER_NAME, plain_arrays, set_handler

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the handler is installed on Linux only")

try:
    from numpy._core.multiarray import get_handler_name      # NumPy 2
except ImportError:      # pragma: no cover - NumPy 1.x
    from numpy.core.multiarray import get_handler_name


def advised_huge(array):
    """Whether the mapping holding the middle of ``array`` 's data is advised huge pages (``hg`` among its
    VmFlags: NumPy advises from the first page boundary within the array on)."""
    at = array.ctypes.data + array.nbytes // 2
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= at < hi
            elif inside and head == "VmFlags:":
                return "hg" in line.split()[1:]
    raise AssertionError("the array's mapping is not in /proc/self/smaps")


@linux
def test_the_plain_handler_gives_no_huge_page_advice():
    default = np.ones(64 << 20, np.uint8)           # (64 MiB: a mapping of its own, as NumPy advises)
    with plain_arrays():
        plain = np.ones(64 << 20, np.uint8)
    assert get_handler_name(plain) == PLAIN_HANDLER_NAME
    assert not advised_huge(plain)
    if get_handler_name(default) == "default_allocator" and advised_huge(default) is False:
        pytest.skip("this NumPy gives no huge-page advice either (NUMPY_MADVISE_HUGEPAGE=0, or an old kernel)")
    assert advised_huge(default)


@linux
def test_a_read_of_log_dirs_allocates_its_arrays_so_and_puts_the_callers_handler_back(sample):
    before = get_handler_name()
    recs = kafkafmt.read_log_dirs(sample, topics=["payments"])
    assert get_handler_name() == before
    assert get_handler_name(np.asarray(recs.offset)) == PLAIN_HANDLER_NAME
    with pytest.raises(errors.KafkafmtError):
        kafkafmt.read_log_dirs(sample / "no-such-log-dir")
    assert get_handler_name() == before


@linux
def test_arrays_made_within_are_resized_and_freed_after_it():
    with plain_arrays():
        with plain_arrays():                        # (nested: the outer one's handler back)
            pass
        assert get_handler_name() == PLAIN_HANDLER_NAME
        a = np.arange(1 << 20, dtype=np.int64)
        empty = np.empty(0, np.int64)
    a.resize(3 << 20, refcheck=False)               # (the handler's realloc, outside)
    assert a[(1 << 20) - 1] == (1 << 20) - 1 and not a[(1 << 20):].any()
    empty.resize(4, refcheck=False)
    assert get_handler_name(a) == get_handler_name(empty) == PLAIN_HANDLER_NAME
    del a, empty


# --- a caller's own NumPy allocator (NEP 49), made with ctypes: libc's malloc behind its own name ---------------
_P, _N = ctypes.c_void_p, ctypes.c_size_t
_MALLOC, _CALLOC = ctypes.CFUNCTYPE(_P, _P, _N), ctypes.CFUNCTYPE(_P, _P, _N, _N)
_REALLOC, _FREE = ctypes.CFUNCTYPE(_P, _P, _P, _N), ctypes.CFUNCTYPE(None, _P, _P, _N)


class _Allocator(ctypes.Structure):
    _fields_ = [("ctx", _P), ("malloc", _MALLOC), ("calloc", _CALLOC), ("realloc", _REALLOC), ("free", _FREE)]


class _Handler(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 127), ("version", ctypes.c_uint8), ("allocator", _Allocator)]


def _callers_handler(name):
    """A "mem_handler" capsule of an allocator of the caller's own (kept alive for good: arrays hold it)."""
    libc = ctypes.CDLL(None)
    for fn, args in ((libc.malloc, [_N]), (libc.calloc, [_N, _N]), (libc.realloc, [_P, _N]), (libc.free, [_P])):
        fn.restype, fn.argtypes = (None if fn is libc.free else _P), args
    handler = _Handler(name.encode(), 1, _Allocator(None, _MALLOC(lambda ctx, n: libc.malloc(n or 1)),
                                                    _CALLOC(lambda ctx, n, e: libc.calloc(n or 1, e or 1)),
                                                    _REALLOC(lambda ctx, p, n: libc.realloc(p, n or 1)),
                                                    _FREE(lambda ctx, p, n: libc.free(p))))
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [_P, ctypes.c_char_p, _P]
    capsule = new(ctypes.addressof(handler), b"mem_handler", None)
    _KEPT.append((handler, capsule))
    return capsule


_KEPT = []


@linux
def test_a_callers_own_allocator_is_kept_through_a_read(sample):
    before = set_handler(_callers_handler("callers_allocator"))
    try:
        recs = kafkafmt.read_log_dirs(sample, topics=["payments"])
        with plain_arrays():
            inside = np.empty(16)
        assert get_handler_name(np.asarray(recs.offset)) == get_handler_name(inside) == "callers_allocator"
        assert get_handler_name() == "callers_allocator"
    finally:
        set_handler(before)
    assert get_handler_name() == "default_allocator"
