# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The rare paths of the kernels' Arrow column builder (arrowcols.pxd holds the appends every value
takes): growing a column, the placeholder of a struct, the rows with an error, the end of a row, and
the hand-over of the columns to Python as buffers that own their memory.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint64_t, int32_t, int64_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport calloc, malloc, realloc, free
from cpython.buffer cimport PyBuffer_FillInfo

#: added to the error code of a field nulled because its column cannot hold it (the value is read)
FIELD_ERROR = AC_FIELD
#: kernel error codes at or past this belong to the Python side (framing, schema ids)
FRAMING = AC_FRAMING
STATUS_OK, STATUS_FULL = AC_OK, AC_FULL
KINDS = dict(K_NULL=K_NULL, K_BOOL=K_BOOL, K_FIXED=K_FIXED, K_VAR=K_VAR, K_LIST=K_LIST, K_STRUCT=K_STRUCT,
             K_MAP=K_MAP)
#: the text of the error a value gets when it alone would pass 2 GiB in one column (every kernel's TOO_LARGE)
TOO_LARGE_TEXT = "the value alone needs more than 2 GiB in one Arrow column"


cdef class OwnedBuffer:

    def __dealloc__(self):
        free(self.ptr)

    def __len__(self):
        return self.size

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.ptr, self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass


cdef OwnedBuffer own(uint8_t **ptr, Py_ssize_t size):
    """The buffer of ``size`` bytes at ``ptr[0]`` handed to Python, cut to its size first (a column grows
    by doubling: the capacity it did not use goes back to the allocator, not kept beside the values)."""
    cdef OwnedBuffer b = OwnedBuffer.__new__(OwnedBuffer)
    cdef void *q = realloc(ptr[0], size if size > 0 else 1)
    if q != NULL:
        ptr[0] = <uint8_t *>q
    b.ptr = ptr[0]
    b.size = size
    ptr[0] = NULL
    return b


cdef int32_t *copy_i32(const int32_t[::1] a) except NULL:
    """A plan's int32 table, copied into memory of its own (free it)."""
    cdef Py_ssize_t i
    cdef int32_t *out = <int32_t *>malloc(max(1, a.shape[0]) * sizeof(int32_t))
    if out == NULL:
        raise MemoryError()
    for i in range(a.shape[0]):
        out[i] = a[i]
    return out


cdef void *unpack(const int64_t[:, ::1] table, const char *layout, size_t size, str what) except NULL:
    """A plan's table (n, k) as n C structs of ``size`` bytes whose k members are ``layout``'s, in order
    ('i' int32, 'l' int64, aligned as C aligns them), in memory of their own (free it); ValueError when
    the table (``what``) has not k columns."""
    cdef Py_ssize_t n = table.shape[0], k = len(layout), r, f
    cdef size_t at
    cdef uint8_t *out
    cdef int32_t v32
    if table.shape[1] != k:
        raise ValueError(f"{what} are (n, {k}), not (n, {table.shape[1]})")
    out = <uint8_t *>calloc(max(1, n), size)
    if out == NULL:
        raise MemoryError()
    for r in range(n):
        at = 0
        for f in range(k):
            if layout[f] == 108:                # 'l'
                at = (at + 7) & ~(<size_t>7)
                memcpy(out + r * size + at, &table[r, f], 8)
                at += 8
            else:
                at = (at + 3) & ~(<size_t>3)
                v32 = <int32_t>table[r, f]
                memcpy(out + r * size + at, &v32, 4)
                at += 4
        if at > size:
            free(out)
            raise ValueError(f"{what}: layout {layout!r} does not fit {size} bytes")
    return out


cdef uint8_t *copy_bytes(bytes b) except NULL:
    """A plan's bytes, copied into memory of its own (free it)."""
    cdef uint8_t *out = <uint8_t *>malloc(max(1, len(b)))
    if out == NULL:
        raise MemoryError()
    if len(b):
        memcpy(out, <const char *>b, len(b))
    return out


# ------------------------------------------------------------------------------------------------
# growing

cdef int grow(Col *c, int64_t need) noexcept nogil:
    """Capacity for at least ``need`` values (validity, offsets or fixed data)."""
    cdef int64_t ncap = c.cap * 2 if c.cap >= 8 else 16
    cdef int64_t old_bytes = (c.cap + 7) >> 3, new_bytes
    cdef void *p
    while ncap < need:
        ncap *= 2
    new_bytes = (ncap + 7) >> 3
    p = realloc(c.valid, new_bytes + 1)
    if p == NULL:
        return AC_NOMEM
    c.valid = <uint8_t *>p
    memset(c.valid + old_bytes, 0xFF, new_bytes + 1 - old_bytes)
    if c.kind == K_FIXED:
        p = realloc(c.data, ncap * c.width + 1)
        if p == NULL:
            return AC_NOMEM
        c.data = <uint8_t *>p
        c.data_cap = ncap * c.width + 1
    elif c.kind == K_BOOL:
        p = realloc(c.data, new_bytes + 1)
        if p == NULL:
            return AC_NOMEM
        c.data = <uint8_t *>p
        c.data_cap = new_bytes + 1
    elif c.kind == K_VAR or c.kind == K_LIST or c.kind == K_MAP:
        p = realloc(c.offs, (ncap + 1) * sizeof(int32_t))
        if p == NULL:
            return AC_NOMEM
        c.offs = <int32_t *>p
    c.cap = ncap
    return AC_OK


cdef int grow_bytes(uint8_t **buf, int64_t *cap, int64_t need, int64_t least) noexcept nogil:
    """A buffer of at least ``need`` bytes (doubling, from ``least``): its memory and capacity updated."""
    cdef int64_t ncap = cap[0] * 2 if cap[0] >= least else least
    cdef void *p
    while ncap < need:
        ncap *= 2
    p = realloc(buf[0], ncap)
    if p == NULL:
        return AC_NOMEM
    buf[0] = <uint8_t *>p
    cap[0] = ncap
    return AC_OK


cdef int grow_data(Col *c, int64_t need) noexcept nogil:
    """Room for at least ``need`` bytes of variable-width data."""
    return grow_bytes(&c.data, &c.data_cap, need, 64)


cdef inline int regrow(void **p, size_t n) noexcept nogil:
    cdef void *q = realloc(p[0], n)
    if q == NULL:
        return AC_NOMEM
    p[0] = q
    return AC_OK


cdef int put_null_struct(Col *cols, const int32_t *children, int32_t ci) noexcept nogil:
    """The placeholder of a struct: null when it can be, with a placeholder in every child."""
    cdef Col *c = &cols[ci]
    cdef int64_t i = c.length
    cdef int32_t k
    cdef int rc
    if i >= c.cap and grow(c, i + 1):
        return AC_NOMEM
    if c.nullable:
        clear_bit(c.valid, i)
    for k in range(c.nchild):
        rc = put_null_col(cols, children, children[c.child0 + k])
        if rc:
            return rc
    c.length = i + 1
    return AC_OK


# ------------------------------------------------------------------------------------------------
# rows with an error, and the end of a row

cdef int push_err(Errs *e, int64_t row, int code, int64_t pos, int32_t node, int64_t detail,
                  int32_t more) noexcept nogil:
    """Record the error of one row."""
    cdef int64_t ncap
    if e.n == e.cap:
        ncap = e.cap * 2 if e.cap else 64
        if regrow(<void **>&e.row, ncap * sizeof(int64_t)) or regrow(<void **>&e.code, ncap) or \
                regrow(<void **>&e.pos, ncap * sizeof(int64_t)) or regrow(<void **>&e.node, ncap * sizeof(int32_t)) \
                or regrow(<void **>&e.detail, ncap * sizeof(int64_t)) or \
                regrow(<void **>&e.more, ncap * sizeof(int32_t)):
            return AC_NOMEM
        e.cap = ncap
    e.row[e.n] = row
    e.code[e.n] = <uint8_t>code
    e.pos[e.n] = pos
    e.node[e.n] = node
    e.detail[e.n] = detail
    e.more[e.n] = more
    e.n += 1
    return AC_OK


cdef int row_end(Cols *s, Errs *e, int rc, int64_t i, int64_t start, const Row *row, int too_large, int32_t big_node,
                 int32_t top) noexcept nogil:
    """The end of row i, decoded with result rc (its error in ``row``): AC_OK to go on with the next
    row, else the status that stops the call there (AC_FULL: call again from row i; AC_NOMEM).

    A row read whole with fields nulled (``row.soft``) is recorded with the first one's code + AC_FIELD.
    A failed row is rolled back (every column to its length at the row's start) and becomes a
    placeholder in the top column, its error recorded; a row that alone would pass an int32 offset
    (AC_FULL at the call's first row) is the error ``too_large`` of ``big_node``."""
    cdef int64_t pos = row.pos, detail = row.detail
    cdef int32_t node = row.where
    if rc == AC_OK:
        if row.soft.n and push_err(e, i, row.soft.code + AC_FIELD, row.soft.pos, row.soft.where, row.soft.detail,
                                   row.soft.n - 1):
            return AC_NOMEM
        return AC_OK
    restore(s.c, s.m, s.saved)
    if rc == AC_FULL and i > start:
        return AC_FULL
    if rc == AC_NOMEM:
        return AC_NOMEM
    if rc == AC_FULL:
        rc = too_large
        pos = 0
        detail = 0
        node = big_node
    if push_err(e, i, rc, pos, node, detail, 0):
        return AC_NOMEM
    return put_null_col(s.c, s.children, top)


cdef int row_skip(Cols *s, Errs *e, int64_t i, int32_t r, int32_t node, int32_t top) noexcept nogil:
    """Row i not decoded: r == -1 a null value (no error), r < -1 an error -r found before decoding
    (recorded with ``node``); a placeholder in the top column."""
    if r < -1 and push_err(e, i, -r, 0, node, 0, 0):
        return AC_NOMEM
    return put_null_col(s.c, s.children, top)


cdef int64_t read_rows(Cols *s, Errs *e, const int32_t *roots, int64_t start, int64_t n, read_row fn, void *ctx,
                       Row *row, const Rules *rules, int *status) noexcept nogil:
    """Every kernel's loop over rows [start, n): ``fn`` reads a row whose root is >= 0 (``row`` holds its
    error), `row_end` ends it; a row with a negative root is `row_skip`'s. Returns where it stopped (n, or
    the row a status -- AC_FULL, AC_NOMEM -- stopped it at)."""
    cdef int64_t i = start
    cdef int32_t r
    status[0] = AC_OK
    while i < n:
        r = roots[i]
        if r < 0:
            status[0] = row_skip(s, e, i, r, rules.pre_node, rules.top)
        else:
            cols_mark(s)
            row.soft.n = 0
            status[0] = row_end(s, e, fn(ctx, i, r, row), i, start, row, rules.too_large,
                                r if rules.big_node == ROOT_NODE else rules.big_node, rules.top)
        if status[0]:
            break
        i += 1
    return i


cdef tuple errs_take(Errs *e):
    """The recorded errors as NumPy arrays (row, code, position, node, detail, more)."""
    rows = np.empty(e.n, np.int64)
    code = np.empty(e.n, np.uint8)
    pos = np.empty(e.n, np.int64)
    node = np.empty(e.n, np.int32)
    detail = np.empty(e.n, np.int64)
    more = np.empty(e.n, np.int32)
    cdef int64_t[::1] r = rows, p = pos, d = detail
    cdef uint8_t[::1] c = code
    cdef int32_t[::1] nd = node, m = more
    if e.n:
        memcpy(&r[0], e.row, e.n * sizeof(int64_t))
        memcpy(&c[0], e.code, e.n)
        memcpy(&p[0], e.pos, e.n * sizeof(int64_t))
        memcpy(&nd[0], e.node, e.n * sizeof(int32_t))
        memcpy(&d[0], e.detail, e.n * sizeof(int64_t))
        memcpy(&m[0], e.more, e.n * sizeof(int32_t))
    return rows, code, pos, node, detail, more


cdef void errs_free(Errs *e) noexcept:
    free(e.row)
    free(e.code)
    free(e.pos)
    free(e.node)
    free(e.detail)
    free(e.more)
    memset(e, 0, sizeof(Errs))


# ------------------------------------------------------------------------------------------------
# the columns of a call

cdef class ColumnPlan:

    def __cinit__(self):
        self.col_children = NULL
        self.ncols = 0

    def __dealloc__(self):
        free(self.col_children)

    cdef int set_columns(self, const int64_t[:, ::1] columns, const int32_t[::1] children, int64_t min_width,
                         int64_t max_width) except -1:
        """The column table (m, 5) and the children table; every reference checked to stay inside them, and
        fixed widths in [min_width, max_width]."""
        cdef Py_ssize_t i, m = columns.shape[0], nchildren = children.shape[0]
        if columns.shape[1] != 5:
            raise ValueError("columns are (m, 5)")
        for i in range(m):
            if not K_NULL <= columns[i, 0] <= K_MAP:
                raise ValueError(f"column {i}: unknown kind")
            if columns[i, 2] < 0 or columns[i, 3] < 0 or columns[i, 2] + columns[i, 3] > nchildren:
                raise ValueError(f"column {i}: children out of range")
            if columns[i, 0] == K_FIXED and not min_width <= columns[i, 1] <= max_width:
                raise ValueError(f"column {i}: width out of range")
        for i in range(nchildren):
            if not 0 <= children[i] < m:
                raise ValueError("column child out of range")
        self.col_children = <int32_t *>malloc(max(1, nchildren) * sizeof(int32_t))
        if self.col_children == NULL:
            raise MemoryError()
        for i in range(nchildren):
            self.col_children[i] = children[i]
        self.columns = np.array(columns, dtype=np.int64).reshape(-1, 5)
        self.ncols = <int32_t>m
        return 0

    cdef int open(self, Cols *s, int64_t rows) except -1:
        """The empty columns of a call, each with room for ``rows`` values (MemoryError when there is none;
        cols_free frees them)."""
        cdef int64_t k
        cdef Col *c
        memset(s, 0, sizeof(Cols))
        s.c = <Col *>calloc(max(1, self.ncols), sizeof(Col))
        s.saved = <int64_t *>malloc(max(1, self.ncols) * sizeof(int64_t))
        if s.c == NULL or s.saved == NULL:
            raise MemoryError()
        s.m = self.ncols
        s.children = self.col_children
        for k in range(self.ncols):
            c = &s.c[k]
            c.kind = <int32_t>self.columns[k, 0]
            c.width = <int32_t>self.columns[k, 1]
            c.child0 = <int32_t>self.columns[k, 2]
            c.nchild = <int32_t>self.columns[k, 3]
            c.nullable = self.columns[k, 4] != 0
            if c.kind != K_NULL and grow(c, max(16, rows)):
                raise MemoryError()
            if c.kind == K_VAR or c.kind == K_LIST or c.kind == K_MAP:
                c.offs[0] = 0
            if c.kind == K_VAR and grow_data(c, 64):
                raise MemoryError()
        return 0

    cdef tuple read(self, read_row fn, void *ctx, Row *row, Col **cols, const int32_t *roots, int64_t start,
                    int64_t n, const Rules *rules, str what):
        """A kernel's call: rows [start, n) read by ``fn`` (with its ``ctx``; ``row``: its row; ``cols``: where
        it finds the columns, set here) into new columns, by `read_rows`. Returns (STATUS_OK or STATUS_FULL,
        the row it stopped at, the columns as `take` gives them, the errors as `errs_take` gives them);
        MemoryError (while ``what``) when memory ran out."""
        cdef Cols s
        cdef Errs e
        cdef int status = AC_OK
        cdef int64_t stop
        memset(&s, 0, sizeof(Cols))
        memset(&e, 0, sizeof(Errs))
        try:
            self.open(&s, n - start)
            cols[0] = s.c
            with nogil:
                stop = read_rows(&s, &e, roots, start, n, fn, ctx, row, rules, &status)
            if status == AC_NOMEM:
                raise MemoryError(f"out of memory while {what}")
            return (AC_FULL if status == AC_FULL else AC_OK, stop, cols_take(&s), errs_take(&e))
        finally:
            cols_free(&s)
            errs_free(&e)


cdef int64_t popcount(const uint8_t *bits, int64_t n) noexcept nogil:
    """Set bits among the first n."""
    cdef int64_t i, total = 0
    cdef uint64_t w
    for i in range(n >> 6):
        memcpy(&w, bits + 8 * i, 8)
        w = w - ((w >> 1) & 0x5555555555555555ULL)             # SWAR (portable; gcc turns it into popcnt)
        w = (w & 0x3333333333333333ULL) + ((w >> 2) & 0x3333333333333333ULL)
        w = (w + (w >> 4)) & 0x0F0F0F0F0F0F0F0FULL
        total += <int64_t>((w * 0x0101010101010101ULL) >> 56)
    for i in range((n >> 6) << 6, n):
        total += (bits[i >> 3] >> (i & 7)) & 1
    return total


cdef tuple take(Col *c):
    """(length, null count, validity, data, offsets) of one column, its buffers handed to Python."""
    cdef int64_t nbits = (c.length + 7) >> 3
    cdef int64_t nulls = 0
    cdef object valid = None, data = None, offs = None
    if c.kind == K_NULL:
        return (c.length, c.length, None, None, None)
    if c.nullable:
        nulls = c.length - popcount(c.valid, c.length)
    if nulls:
        valid = own(&c.valid, nbits)
    if c.kind == K_FIXED:
        data = own(&c.data, c.length * c.width)
    elif c.kind == K_BOOL:
        data = own(&c.data, nbits)
    elif c.kind == K_VAR:
        data = own(&c.data, c.offs[c.length])
    if c.kind == K_VAR or c.kind == K_LIST or c.kind == K_MAP:
        offs = own(<uint8_t **>&c.offs, (c.length + 1) * 4)
    return (c.length, nulls, valid, data, offs)


cdef list cols_take(Cols *s):
    """Every column as `take` gives it."""
    cdef int64_t k
    out = []
    for k in range(s.m):
        out.append(take(&s.c[k]))
    return out


cdef void cols_free(Cols *s) noexcept:
    cdef int64_t k
    if s.c != NULL:
        for k in range(s.m):
            free(s.c[k].valid)
            free(s.c[k].data)
            free(s.c[k].offs)
    free(s.c)
    free(s.saved)
    memset(s, 0, sizeof(Cols))


cdef bint offsets_ok(const int64_t *offsets, int64_t n, int64_t size) noexcept:
    """n + 1 offsets, non-decreasing, inside [0, size] (checked once per call, without the GIL)."""
    cdef int64_t i
    cdef bint ok = True
    with nogil:
        if offsets[0] < 0 or offsets[n] > size:
            ok = False
        else:
            for i in range(n):
                if offsets[i + 1] < offsets[i]:
                    ok = False
                    break
    return ok
