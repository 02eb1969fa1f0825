# cython: language_level=3, boundscheck=False, wraparound=False
"""What a partition folder's listing says of its segments, from the names' characters: the rows of
`kafkafmt.log._discovery._segment_rows` (its Python twin, which stays the rule's reference) without a pattern
match, a slice, an int() and three concatenations per file -- a cluster's discovery asks it of every folder.

A segment's log is ``<digits>.<log suffix>``; its side files present are ``<the same digits>.<a side file's
suffix>`` among the folder's files. The digits and the suffixes are `kafkafmt.log._names`' own, given once as a
`Names` (no naming rule is spelt here). A listing with a name that is not ASCII is left to the Python twin (its
pattern takes any Unicode decimal digit), as is the question whether a name ending with a leftover's suffix is
a broker leftover (``leftover(name)``).
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.long cimport PyLong_FromUnsignedLongLong
from cpython.tuple cimport PyTuple_Check, PyTuple_GET_SIZE
from operator import itemgetter

_BASE = itemgetter(0)

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    const char *PyUnicode_1BYTE_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)

# what a name is (_kind), besides a side file's index among the Names' sides (0, 1, ...)
cdef enum:
    OTHER = -3
    LEFTOVER_SUFFIX = -2
    LOG = -1


DEF MAX_WORDS = 16


cdef class Names:
    """The naming rules `segment_rows` follows: the digits of a base offset, a segment log's suffix, its side
    files' suffixes (their bits in ``present``: 1 << their index here) and the suffixes a broker leftover's name
    ends with -- `kafkafmt.log._names`' constants (a suffix's leading dot, where it has one, is the separator)."""
    cdef readonly int digits
    cdef readonly bytes log
    cdef readonly tuple sides, leftovers
    # (the words as C strings: pointers into the bytes above, which this object keeps)
    cdef const char *side_p[MAX_WORDS]
    cdef Py_ssize_t side_n[MAX_WORDS]
    cdef const char *left_p[MAX_WORDS]
    cdef Py_ssize_t left_n[MAX_WORDS]
    cdef const char *log_p
    cdef Py_ssize_t log_n
    cdef int n_sides, n_left
    #: the characters a log's name has after its stem (its separator and suffix)
    cdef readonly Py_ssize_t stem_cut

    def __init__(self, int digits, str log, sides, leftovers):
        cdef int k
        self.log = log.lstrip(".").encode("ascii")
        self.sides = tuple(w.lstrip(".").encode("ascii") for w in sides)
        self.leftovers = tuple(w.encode("ascii") for w in leftovers)
        if not 0 < digits <= 20 or not 0 < len(self.sides) <= MAX_WORDS or len(self.leftovers) > MAX_WORDS:
            raise ValueError(f"1..20 digits (an unsigned 64-bit base offset), 1..{MAX_WORDS} side files and at "
                             f"most {MAX_WORDS} leftover suffixes")
        self.digits, self.n_sides, self.n_left = digits, len(self.sides), len(self.leftovers)
        self.log_p, self.log_n = PyBytes_AS_STRING(self.log), PyBytes_GET_SIZE(self.log)
        self.stem_cut = 1 + self.log_n
        for k in range(self.n_sides):
            self.side_p[k], self.side_n[k] = PyBytes_AS_STRING(self.sides[k]), PyBytes_GET_SIZE(self.sides[k])
        for k in range(self.n_left):
            self.left_p[k], self.left_n[k] = PyBytes_AS_STRING(self.leftovers[k]), PyBytes_GET_SIZE(self.leftovers[k])


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


cdef int _kind(const char *s, Py_ssize_t n, Names names) noexcept:
    """A segment file's kind by its (ASCII) name: LOG, a side file's index, LEFTOVER_SUFFIX for a name a
    leftover may have, else OTHER."""
    cdef Py_ssize_t i
    cdef int d = names.digits, k
    for k in range(names.n_left):
        if _ends(s, n, names.left_p[k], names.left_n[k]):
            return LEFTOVER_SUFFIX
    if n <= d + 1 or s[d] != c'.':
        return OTHER
    for i in range(d):
        if s[i] < c'0' or s[i] > c'9':
            return OTHER
    s += d + 1
    n -= d + 1
    if _same(s, n, names.log_p, names.log_n):
        return LOG
    for k in range(names.n_sides):
        if _same(s, n, names.side_p[k], names.side_n[k]):
            return k
    return OTHER


cdef object _base(str name, const char *s, int digits):
    """The base offset the name's digits say."""
    cdef unsigned long long v = 0
    cdef int i
    if digits == 20 and s[0] != c'0':      # (above what 19 digits hold: Python's int)
        return int(name[:digits])
    for i in range(digits):
        v = v * 10 + <unsigned long long>(s[i] - c'0')
    return PyLong_FromUnsignedLongLong(v)


#: what `_seen` says of a name that is not ASCII, and of a broker leftover's
_NOT_ASCII, _LEFTOVER = object(), object()


cdef object _seen(str name, dict sides, leftover, Names names):
    """What a file's name says: the base offset of a segment's ``.log``; `_LEFTOVER` for a broker leftover
    (``leftover(name)``); `_NOT_ASCII`; else None (a side file's kind noted in ``sides``: {base: bits})."""
    cdef const char *s
    cdef Py_ssize_t n
    cdef int kind, bit
    if not PyUnicode_IS_ASCII(name):
        return _NOT_ASCII
    s = PyUnicode_1BYTE_DATA(name)
    n = PyUnicode_GET_LENGTH(name)
    kind = _kind(s, n, names)
    if kind == OTHER:
        return None
    if kind == LEFTOVER_SUFFIX:
        return _LEFTOVER if leftover(name) else None
    base = _base(name, s, names.digits)
    if kind == LOG:
        return base
    bit = 1 << kind
    sides[base] = sides.get(base, 0) | bit
    return None


def segment_rows(entries, bint local, tuple present, leftover, Names names not None):
    """([(base offset, size, side files present, version, path without ".log" or None)] in offset order,
    [paths of broker leftovers]) of a listing's rows (`kafkafmt.storage.Entry`), or None when a file's name is
    not ASCII. ``present``: the side-file kinds present by their bits (index 1, timeindex 2, txnindex 4);
    ``leftover(name)``: whether a file named with a leftover's suffix is a broker leftover; ``names``: the rules
    (`Names`). (None too for rows that are not tuples of the Entry's fields.)"""
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
        seen = _seen(<str?>t[0], sides, leftover, names)
        if seen is _NOT_ASCII:
            return None
        if seen is _LEFTOVER:
            leftovers.append(t[1])
        elif seen is not None:
            logs.append((seen, t))
    for base, e in logs:
        t = <tuple>e
        path = <str?>t[1]
        rows.append((base, t[2], present[sides.get(base, 0)], t[4],
                     path[:len(path) - names.stem_cut] if local else None))
    return _in_order(rows), leftovers


def listing_segment_rows(tuple names, tuple sizes, bytes flags, str prefix, tuple present, leftover,
                         Names rules not None):
    """`segment_rows` of a local folder's compact listing (`kafkafmt.storage.FolderListing`: its names, sizes
    and flags, and the folder's path with its separator): the same rows, their paths ``prefix + name``, or
    None when a file's name is not ASCII."""
    cdef dict sides = {}
    cdef list logs = [], leftovers = [], rows = []
    cdef Py_ssize_t i, count = len(names), cut = rules.stem_cut
    cdef str name
    if len(sizes) != count or len(flags) != count:
        return None              # (not a listing: the Python twin says what is wrong)
    for i in range(count):
        if flags[i] & 1:         # a folder
            continue
        name = <str?>names[i]
        seen = _seen(name, sides, leftover, rules)
        if seen is _NOT_ASCII:
            return None
        if seen is _LEFTOVER:
            leftovers.append(prefix + name)
        elif seen is not None:
            logs.append((seen, i))
    for base, i in logs:
        name = <str>names[i]
        rows.append((base, sizes[i], present[sides.get(base, 0)], None, prefix + name[:len(name) - cut]))
    return _in_order(rows), leftovers


cdef list _in_order(list rows):
    if len(rows) > 1:
        rows.sort(key=_BASE)     # (by base offset alone, stable: as the twin, whatever a listing repeats)
    return rows
