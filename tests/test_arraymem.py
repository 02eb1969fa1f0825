"""The arrays of a read of many partitions are allocated without NumPy's huge-page advice
(`kafkafmt._native.arraymem`): the handler gives no advice, a read installs it for its own context only and puts
the caller's back, and what it made stays usable afterwards."""
import sys

import numpy as np
import pytest

import kafkafmt
from kafkafmt import errors
from kafkafmt._native.arraymem import PLAIN_HANDLER_NAME, plain_arrays

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
