# cython: language_level=3, boundscheck=False, wraparound=False
"""What a partition folder's listing says of its segments, from the names' characters: the rows of
`kafkafmt.log._discovery._segment_rows` (its Python twin, which stays the rule's reference) without a pattern
match, a slice, an int() and three concatenations per file -- a cluster's discovery asks it of every folder.

A segment's log is ``<20 ASCII digits>.log``; its side files present are ``<the same digits>.index``,
``.timeindex`` and ``.txnindex`` among the folder's files. A listing with a name that is not ASCII is left to
the Python twin (its pattern takes any Unicode decimal digit), as is the question whether a ``.deleted``,
``.cleaned`` or ``.swap`` file is a broker leftover (``leftover(name)``).
"""
from cpython.long cimport PyLong_FromUnsignedLongLong
from cpython.tuple cimport PyTuple_Check, PyTuple_GET_SIZE
from operator import itemgetter

_BASE = itemgetter(0)

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    const char *PyUnicode_1BYTE_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)

# what a name is (_kind)
cdef enum:
    OTHER = 0
    LOG = 1
    INDEX = 2
    TIMEINDEX = 3
    TXNINDEX = 4
    LEFTOVER_SUFFIX = 5

DEF DIGITS = 20


cdef bint _same(const char *s, Py_ssize_t n, const char *word, Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t i
    if n != k:
        return False
    for i in range(k):
        if s[i] != word[i]:
            return False
    return True


cdef bint _ends(const char *s, Py_ssize_t n, const char *word, Py_ssize_t k) noexcept nogil:
    return n >= k and _same(s + n - k, k, word, k)


cdef int _kind(const char *s, Py_ssize_t n) noexcept nogil:
    """A segment file's kind by its (ASCII) name, LEFTOVER_SUFFIX for a name a leftover may have, else OTHER."""
    cdef Py_ssize_t i
    if _ends(s, n, ".deleted", 8) or _ends(s, n, ".cleaned", 8) or _ends(s, n, ".swap", 5):
        return LEFTOVER_SUFFIX
    if n <= DIGITS + 1 or s[DIGITS] != c'.':
        return OTHER
    for i in range(DIGITS):
        if s[i] < c'0' or s[i] > c'9':
            return OTHER
    s += DIGITS + 1
    n -= DIGITS + 1
    if _same(s, n, "log", 3):
        return LOG
    if _same(s, n, "index", 5):
        return INDEX
    if _same(s, n, "timeindex", 9):
        return TIMEINDEX
    if _same(s, n, "txnindex", 8):
        return TXNINDEX
    return OTHER


cdef object _base(str name, const char *s):
    """The base offset the name's 20 digits say."""
    cdef unsigned long long v = 0
    cdef int i
    if s[0] != c'0':            # (above what 19 digits hold: Python's int)
        return int(name[:DIGITS])
    for i in range(DIGITS):
        v = v * 10 + <unsigned long long>(s[i] - c'0')
    return PyLong_FromUnsignedLongLong(v)


#: what `_seen` says of a name that is not ASCII, and of a broker leftover's
_NOT_ASCII, _LEFTOVER = object(), object()


cdef object _seen(str name, dict sides, leftover):
    """What a file's name says: the base offset of a segment's ``.log``; `_LEFTOVER` for a broker leftover
    (``leftover(name)``); `_NOT_ASCII`; else None (a side file's kind noted in ``sides``: {base: bits})."""
    cdef const char *s
    cdef Py_ssize_t n
    cdef int kind, bit
    if not PyUnicode_IS_ASCII(name):
        return _NOT_ASCII
    s = PyUnicode_1BYTE_DATA(name)
    n = PyUnicode_GET_LENGTH(name)
    kind = _kind(s, n)
    if kind == OTHER:
        return None
    if kind == LEFTOVER_SUFFIX:
        return _LEFTOVER if leftover(name) else None
    base = _base(name, s)
    if kind == LOG:
        return base
    bit = 1 if kind == INDEX else (2 if kind == TIMEINDEX else 4)
    sides[base] = sides.get(base, 0) | bit
    return None


def segment_rows(entries, bint local, tuple present, leftover):
    """([(base offset, size, side files present, version, path without ".log" or None)] in offset order,
    [paths of broker leftovers]) of a listing's rows (`kafkafmt.storage.Entry`), or None when a file's name is
    not ASCII. ``present``: the side-file kinds present by their bits (index 1, timeindex 2, txnindex 4);
    ``leftover(name)``: whether a file named with a leftover's suffix is a broker leftover. (None too for rows
    that are not tuples of the Entry's fields.)"""
    cdef dict sides = {}
    cdef list logs = [], leftovers = [], rows = []
    cdef str path
    cdef tuple t
    for e in entries:
        if not PyTuple_Check(e) or PyTuple_GET_SIZE(e) < 5:
            return None          # (not listing rows: the Python twin says what is wrong)
        t = <tuple>e             # (an Entry is a tuple: its fields read by position)
        if t[3]:                 # is_dir
            continue
        seen = _seen(<str?>t[0], sides, leftover)
        if seen is _NOT_ASCII:
            return None
        if seen is _LEFTOVER:
            leftovers.append(t[1])
        elif seen is not None:
            logs.append((seen, t))
    for base, e in logs:
        t = <tuple>e
        path = <str?>t[1]
        rows.append((base, t[2], present[sides.get(base, 0)], t[4], path[:len(path) - 4] if local else None))
    return _in_order(rows), leftovers


def listing_segment_rows(tuple names, tuple sizes, bytes flags, str prefix, tuple present, leftover):
    """`segment_rows` of a local folder's compact listing (`kafkafmt.storage.FolderListing`: its names, sizes
    and flags, and the folder's path with its separator): the same rows, their paths ``prefix + name``, or
    None when a file's name is not ASCII."""
    cdef dict sides = {}
    cdef list logs = [], leftovers = [], rows = []
    cdef Py_ssize_t i, count = len(names)
    cdef str name
    if len(sizes) != count or len(flags) != count:
        return None              # (not a listing: the Python twin says what is wrong)
    for i in range(count):
        if flags[i] & 1:         # a folder
            continue
        name = <str?>names[i]
        seen = _seen(name, sides, leftover)
        if seen is _NOT_ASCII:
            return None
        if seen is _LEFTOVER:
            leftovers.append(prefix + name)
        elif seen is not None:
            logs.append((seen, i))
    for base, i in logs:
        name = <str>names[i]
        rows.append((base, sizes[i], present[sides.get(base, 0)], None, prefix + name[:len(name) - 4]))
    return _in_order(rows), leftovers


cdef list _in_order(list rows):
    if len(rows) > 1:
        rows.sort(key=_BASE)     # (by base offset alone, stable: as the twin, whatever a listing repeats)
    return rows
