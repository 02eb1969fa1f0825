# cython: language_level=3
"""Arrow columns grown inside a no-GIL decode loop: the one builder of every typed-value kernel
(avro, protobuf, jsontext). A kernel keeps only its format's walk; everything it writes goes through
here.

* ``Col``: one Arrow array -- validity bits, int32 offsets, fixed-width or variable data, children
  (by index into the call's columns) -- appended to value by value;
* ``Cols``: the columns of one decode call (opened from a plan's column table, rolled back to a row's
  start when the row fails, handed to Python as buffers that own their memory);
* ``Row``: the value being decoded and its error -- or the fields its columns cannot hold (``Soft``:
  null instead, the rest read) --, and ``Errs``: the rows with an error, kept sparse (most columns
  have none);
* the row protocol every kernel's loop follows (`row_skip`, `cols_mark`, `row_end`).

The appends every value takes are inline here; growing, placeholders of nested structs and the
hand-over to Python are in arrowcols.pyx. Every append returns 0, ``AC_NOMEM`` or ``AC_FULL`` (an
int32 offset would pass 2^31 - 1: the caller stops the call at that row and starts another).
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t, INT32_MAX
from libc.string cimport memcpy, memset
from libc.stdlib cimport realloc

cdef enum:
    K_NULL = 0            # Arrow null: a length only
    K_BOOL = 1            # validity + bit-packed values
    K_FIXED = 2           # validity + width bytes per value
    K_VAR = 3             # validity + int32 offsets + data (string, binary)
    K_LIST = 4            # validity + int32 offsets + child 0
    K_STRUCT = 5          # validity + children
    K_MAP = 6             # validity + int32 offsets + child 0 (the entries struct: key, value)

cdef enum:
    AC_OK = 0
    AC_FULL = 100         # an int32 offset would overflow: stop the call here, call again
    AC_NOMEM = 101
    AC_FIELD = 32         # a field's error code + AC_FIELD: the field is null, the rest of the value is read
    AC_FRAMING = 64       # error codes from here on belong to the Python side (framing, schema ids)


cdef struct Soft:
    # the fields of the row being decoded that their columns cannot hold (null instead): the first one,
    # and how many
    int32_t n
    int32_t code
    int32_t where         # its field / node
    int64_t pos
    int64_t detail


cdef struct Row:
    # the value being decoded, and its error: the byte position in the value, the field / node, a detail
    const uint8_t *start
    int64_t pos
    int32_t where
    int64_t detail
    Soft soft             # the fields nulled (their columns cannot hold them)


cdef struct Col:
    int32_t kind
    int32_t width         # K_FIXED: bytes per value
    int32_t child0        # first child in the children table
    int32_t nchild
    bint nullable         # placeholders are null (else zero-valued)
    int64_t length
    int64_t cap           # values the validity / offsets / fixed data can hold
    uint8_t *valid        # bit-packed, grown with 1 bits (cleared for nulls)
    uint8_t *data
    int64_t data_cap      # bytes allocated (K_VAR: offs[length] are used)
    int32_t *offs


cdef struct Cols:
    # the output columns of one decode call
    Col *c
    int64_t m
    const int32_t *children
    int64_t *saved        # every column's length at the start of the current row


cdef struct Errs:
    # the rows with an error (sparse: most columns have none)
    int64_t n
    int64_t cap
    int64_t *row
    uint8_t *code
    int64_t *pos
    int32_t *node
    int64_t *detail
    int32_t *more         # a row read with fields nulled: how many besides the one named


# a kernel's reading of one row (ctx: its context; root: the row's root, >= 0): 0, or the row's error code
# (its place in row), AC_FULL or AC_NOMEM
ctypedef int (*read_row)(void *ctx, int64_t i, int32_t root, Row *row) noexcept nogil

cdef enum:
    ROOT_NODE = -2        # Rules.big_node: the row's root


cdef struct Rules:
    # how a kernel's rows end
    int too_large         # its error code for a value that alone would pass 2 GiB in a column
    int32_t big_node      # ... and its node (ROOT_NODE: the row's root)
    int32_t pre_node      # the node recorded with an error found before decoding
    int32_t top           # the top column (a placeholder where a row is not read)


cdef class OwnedBuffer:
    """Memory malloc'd by a kernel, handed to Python (buffer protocol) and freed with this object."""
    cdef uint8_t *ptr
    cdef Py_ssize_t size


cdef class ColumnPlan:
    """The output columns of a compiled plan (every kernel's Program extends it): per column kind,
    width, first child (in col_children), child count, nullable -- checked once, when set."""
    cdef int64_t[:, ::1] columns
    cdef int32_t *col_children
    cdef int32_t ncols
    cdef int set_columns(self, const int64_t[:, ::1] columns, const int32_t[::1] children, int64_t min_width,
                         int64_t max_width) except -1
    cdef int open(self, Cols *s, int64_t rows) except -1
    cdef tuple read(self, read_row fn, void *ctx, Row *row, Col **cols, const int32_t *roots, int64_t start,
                    int64_t n, const Rules *rules, str what)


# ---- arrowcols.pyx: the rare paths and the hand-over to Python
cdef int grow(Col *c, int64_t need) noexcept nogil
cdef int grow_data(Col *c, int64_t need) noexcept nogil
cdef int grow_bytes(uint8_t **buf, int64_t *cap, int64_t need, int64_t least) noexcept nogil
cdef int put_null_struct(Col *cols, const int32_t *children, int32_t ci) noexcept nogil
cdef int push_err(Errs *e, int64_t row, int code, int64_t pos, int32_t node, int64_t detail,
                  int32_t more) noexcept nogil
cdef list cols_take(Cols *s)
cdef void cols_free(Cols *s) noexcept
cdef tuple errs_take(Errs *e)
cdef void errs_free(Errs *e) noexcept
cdef bint offsets_ok(const int64_t *offsets, int64_t n, int64_t size) noexcept
cdef OwnedBuffer own(uint8_t **ptr, Py_ssize_t size)
cdef int32_t *copy_i32(const int32_t[::1] a) except NULL
cdef void *unpack(const int64_t[:, ::1] table, const char *layout, size_t size, str what) except NULL
cdef uint8_t *copy_bytes(bytes b) except NULL


# ---- appends (every value takes one)

cdef inline int room(Col *c) noexcept nogil:
    """Room for one more value in c (0, or AC_NOMEM)."""
    if c.length < c.cap:
        return AC_OK
    return grow(c, c.length + 1)


cdef inline void clear_bit(uint8_t *bits, int64_t i) noexcept nogil:
    bits[i >> 3] &= <uint8_t>~(1 << (i & 7))


cdef inline void put_bit(uint8_t *bits, int64_t i, bint v) noexcept nogil:
    if v:
        bits[i >> 3] |= <uint8_t>(1 << (i & 7))
    else:
        bits[i >> 3] &= <uint8_t>~(1 << (i & 7))


cdef inline int put_null_col(Col *cols, const int32_t *children, int32_t ci) noexcept nogil:
    """Append a placeholder: null in a nullable column, else a zero value (0, empty string or
    list, a struct of placeholders)."""
    cdef Col *c = &cols[ci]
    cdef int64_t i = c.length
    if c.kind == K_NULL:
        c.length = i + 1
        return AC_OK
    if c.kind == K_STRUCT:
        return put_null_struct(cols, children, ci)
    if i >= c.cap and grow(c, i + 1):
        return AC_NOMEM
    if c.nullable:
        clear_bit(c.valid, i)
    if c.kind == K_FIXED:
        memset(c.data + i * c.width, 0, c.width)
    elif c.kind == K_BOOL:
        clear_bit(c.data, i)
    else:                                   # K_VAR, K_LIST, K_MAP: empty
        c.offs[i + 1] = c.offs[i]
    c.length = i + 1
    return AC_OK


cdef inline uint8_t *put_slot(Col *c) noexcept nogil:
    """Room for one fixed-width value: its address (NULL when out of memory)."""
    if room(c):
        return NULL
    c.length += 1
    return c.data + (c.length - 1) * c.width


cdef inline int put_raw(Col *c, const void *v, size_t n) noexcept nogil:
    """One fixed-width value of n bytes (the column's width; inlined with a constant n, one store)."""
    if room(c):
        return AC_NOMEM
    memcpy(c.data + c.length * n, v, n)
    c.length += 1
    return AC_OK


cdef inline int put_i32(Col *c, int32_t v) noexcept nogil:
    return put_raw(c, &v, 4)


cdef inline int put_i64(Col *c, int64_t v) noexcept nogil:
    return put_raw(c, &v, 8)


cdef inline int put_f32(Col *c, float v) noexcept nogil:
    return put_raw(c, &v, 4)


cdef inline int put_f64(Col *c, double v) noexcept nogil:
    return put_raw(c, &v, 8)


cdef inline int put_bool(Col *c, bint v) noexcept nogil:
    if room(c):
        return AC_NOMEM
    put_bit(c.data, c.length, v)
    c.length += 1
    return AC_OK


cdef inline int var_reserve(Col *c, int64_t used, int64_t n) noexcept nogil:
    """Room for n more bytes of the variable-width value being built at ``used`` (its end so far)
    and for the value's offset."""
    if room(c):
        return AC_NOMEM
    if used + n > INT32_MAX:
        return AC_FULL
    if used + n > c.data_cap and grow_data(c, used + n):
        return AC_NOMEM
    return AC_OK


cdef inline int var_add(Col *c, int64_t *used, const uint8_t *s, int64_t n) noexcept nogil:
    """Append n bytes to the variable-width value being built (``used``: its end so far)."""
    cdef int rc = var_reserve(c, used[0], n)
    if rc:
        return rc
    memcpy(c.data + used[0], s, n)
    used[0] += n
    return AC_OK


cdef inline void var_close(Col *c, int64_t used) noexcept nogil:
    """End the variable-width value being built at ``used`` (room was made by var_reserve)."""
    c.length += 1
    c.offs[c.length] = <int32_t>used


cdef inline int put_bytes(Col *c, const uint8_t *s, int64_t n) noexcept nogil:
    """One string / binary value."""
    cdef int64_t used, end
    if room(c):
        return AC_NOMEM
    used = c.offs[c.length]
    end = used + n
    if end > INT32_MAX:
        return AC_FULL
    if end > c.data_cap and grow_data(c, end):
        return AC_NOMEM
    memcpy(c.data + used, s, n)
    c.length += 1
    c.offs[c.length] = <int32_t>end
    return AC_OK


cdef inline int put_end(Col *c, int64_t child_len) noexcept nogil:
    """Close a list / map value whose items end at child_len."""
    if room(c):
        return AC_NOMEM
    if child_len > INT32_MAX:
        return AC_FULL
    c.length += 1
    c.offs[c.length] = <int32_t>child_len
    return AC_OK


cdef inline int put_struct(Col *c, bint valid) noexcept nogil:
    """One struct slot whose children were appended by the caller."""
    if room(c):
        return AC_NOMEM
    if not valid:
        clear_bit(c.valid, c.length)
    c.length += 1
    return AC_OK


cdef inline int64_t key_slots(int64_t **table, int64_t *table_cap, int64_t n) noexcept nogil:
    """The open-addressing table a map's n keys are deduplicated in: a power of two >= 2n (at least 16)
    slots, all -1 (empty), in ``table[0]`` (grown, ``table_cap[0]`` its size). Returns its size, 0 when
    out of memory."""
    cdef int64_t cap = 16, j
    cdef void *mem
    while cap < 2 * n:
        cap *= 2
    if cap > table_cap[0]:
        mem = realloc(table[0], cap * sizeof(int64_t))
        if mem == NULL:
            return 0
        table[0] = <int64_t *>mem
        table_cap[0] = cap
    for j in range(cap):
        table[0][j] = -1
    return cap


# ---- checks every kernel makes

cdef inline bint utf8_ok(const uint8_t *s, int64_t n) noexcept nogil:
    """Strict UTF-8 (no overlongs, no surrogates, at most U+10FFFF), ASCII 8 bytes at a time."""
    cdef int64_t i = 0
    cdef uint64_t w
    cdef uint8_t c, c1
    cdef int need
    while i < n:
        if i + 8 <= n:
            memcpy(&w, s + i, 8)
            if (w & 0x8080808080808080ULL) == 0:
                i += 8
                continue
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        if c >= 0xC2 and c <= 0xDF:
            need = 1
        elif c >= 0xE0 and c <= 0xEF:
            need = 2
        elif c >= 0xF0 and c <= 0xF4:
            need = 3
        else:
            return False
        if i + need >= n:
            return False
        c1 = s[i + 1]
        if (c1 & 0xC0) != 0x80:
            return False
        if c == 0xE0 and c1 < 0xA0:
            return False
        if c == 0xED and c1 > 0x9F:
            return False
        if c == 0xF0 and c1 < 0x90:
            return False
        if c == 0xF4 and c1 > 0x8F:
            return False
        if need >= 2 and (s[i + 2] & 0xC0) != 0x80:
            return False
        if need == 3 and (s[i + 3] & 0xC0) != 0x80:
            return False
        i += need + 1
    return True


# ---- fields the columns cannot hold, and the row protocol

cdef inline void soft_note(Soft *s, int32_t where, int64_t pos, int code, int64_t detail) noexcept nogil:
    """Note a field of the current row nulled because its column cannot hold it (the first one is named)."""
    if s.n == 0:
        s.code = code
        s.where = where
        s.pos = pos
        s.detail = detail
    s.n += 1


cdef inline int row_fail(Row *r, int32_t where, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    """The row's error ``code`` at p, in field / node ``where``: returns code."""
    r.where = where
    r.pos = p - r.start
    r.detail = detail
    return code


cdef inline int null_field(Row *r, Col *cols, const int32_t *children, int32_t ci, int32_t where, const uint8_t *p,
                           int code, int64_t detail) noexcept nogil:
    """A value at p column ci cannot hold (field ``where``): null in its place, the field noted (the
    row's error names it); a column that cannot be null: the row's error ``code``."""
    if not cols[ci].nullable:
        return row_fail(r, where, p, code, detail)
    soft_note(&r.soft, where, p - r.start, code, detail)
    return put_null_col(cols, children, ci)


cdef inline void cols_mark(Cols *s) noexcept nogil:
    """Remember every column's length: the start of a row."""
    cdef int64_t k
    for k in range(s.m):
        s.saved[k] = s.c[k].length


cdef inline void restore(Col *cols, int64_t m, const int64_t *saved) noexcept nogil:
    """Roll every column back to the lengths in saved (validity bits cleared by placeholders set again;
    string data ends at offs[length]: nothing more to undo)."""
    cdef int64_t k, b, e
    for k in range(m):
        b = saved[k]
        e = cols[k].length
        if cols[k].kind != K_NULL:
            while b < e:
                cols[k].valid[b >> 3] |= <uint8_t>(1 << (b & 7))
                b += 1
        cols[k].length = saved[k]
