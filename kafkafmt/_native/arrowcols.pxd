# cython: language_level=3
"""Arrow columns grown inside a no-GIL decode loop, shared by the typed-value kernels (protobuf,
jsontext): one ``Col`` per Arrow array (validity bits, int32 offsets, fixed-width or variable
data), appended to value by value and handed to Python as buffers.

Every append returns 0, ``AC_NOMEM`` or ``AC_FULL`` (an int32 offset would pass 2^31 - 1: the
caller stops the call there and starts another).
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
    AC_FULL = 100
    AC_NOMEM = 101
    AC_FIELD = 32         # a field's error code + AC_FIELD: the field is null, the rest of the value is read

cdef struct Soft:
    # the fields of the row being decoded that their columns cannot hold (null instead): the first one,
    # and how many
    int32_t n
    int32_t code
    int32_t where         # its field / node
    int64_t pos
    int64_t detail

cdef struct Col:
    int32_t kind
    int32_t width
    int32_t child0
    int32_t nchild
    bint nullable
    int64_t length
    int64_t cap
    uint8_t *valid
    uint8_t *data
    int64_t data_cap
    int32_t *offs



cdef inline int grow(Col *c, int64_t need) noexcept nogil:
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


cdef inline int room(Col *c) noexcept nogil:
    if c.length < c.cap:
        return AC_OK
    return grow(c, c.length + 1)


cdef inline int grow_data(Col *c, int64_t need) noexcept nogil:
    cdef int64_t ncap = c.data_cap * 2 if c.data_cap >= 64 else 64
    cdef void *p
    while ncap < need:
        ncap *= 2
    p = realloc(c.data, ncap)
    if p == NULL:
        return AC_NOMEM
    c.data = <uint8_t *>p
    c.data_cap = ncap
    return AC_OK


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
    cdef int32_t k
    cdef int rc
    if c.kind == K_NULL:
        c.length = i + 1
        return AC_OK
    rc = room(c)
    if rc:
        return rc
    if c.nullable:
        clear_bit(c.valid, i)
    if c.kind == K_FIXED:
        memset(c.data + i * c.width, 0, c.width)
    elif c.kind == K_BOOL:
        clear_bit(c.data, i)
    elif c.kind == K_VAR or c.kind == K_LIST or c.kind == K_MAP:
        c.offs[i + 1] = c.offs[i]
    elif c.kind == K_STRUCT:
        for k in range(c.nchild):
            rc = put_null_col(cols, children, children[c.child0 + k])
            if rc:
                return rc
    c.length = i + 1
    return AC_OK


cdef inline uint8_t *put_slot(Col *c) noexcept nogil:
    if c.length >= c.cap and grow(c, c.length + 1):
        return NULL
    c.length += 1
    return c.data + (c.length - 1) * c.width


cdef inline int put_bytes(Col *c, const uint8_t *s, int64_t n) noexcept nogil:
    cdef int64_t used, end
    if c.length >= c.cap and grow(c, c.length + 1):
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
    if c.length >= c.cap and grow(c, c.length + 1):
        return AC_NOMEM
    if child_len > INT32_MAX:
        return AC_FULL
    c.length += 1
    c.offs[c.length] = <int32_t>child_len
    return AC_OK


cdef inline int put_struct(Col *c, bint valid) noexcept nogil:
    """One struct slot whose children were appended by the caller."""
    if c.length >= c.cap and grow(c, c.length + 1):
        return AC_NOMEM
    if not valid:
        clear_bit(c.valid, c.length)
    c.length += 1
    return AC_OK


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


cdef inline int64_t popcount(const uint8_t *bits, int64_t n) noexcept nogil:
    cdef int64_t i, total = 0
    cdef uint64_t w
    for i in range(n >> 6):
        memcpy(&w, bits + 8 * i, 8)
        w = w - ((w >> 1) & 0x5555555555555555ULL)
        w = (w & 0x3333333333333333ULL) + ((w >> 2) & 0x3333333333333333ULL)
        w = (w + (w >> 4)) & 0x0F0F0F0F0F0F0F0FULL
        total += <int64_t>((w * 0x0101010101010101ULL) >> 56)
    for i in range((n >> 6) << 6, n):
        total += (bits[i >> 3] >> (i & 7)) & 1
    return total



cdef inline void soft_note(Soft *s, int32_t where, int64_t pos, int code, int64_t detail) noexcept nogil:
    """Note a field of the current row nulled because its column cannot hold it (the first one is named)."""
    if s.n == 0:
        s.code = code
        s.where = where
        s.pos = pos
        s.detail = detail
    s.n += 1


cdef inline int null_field(Col *cols, const int32_t *children, Soft *soft, int32_t ci, int32_t where, int64_t pos,
                           int code, int64_t detail) noexcept nogil:
    """A value column ci cannot hold (field ``where``): null in its place, the field noted (the row's
    error names it); -1 when the column cannot be null (the caller fails the row instead)."""
    if not cols[ci].nullable:
        return -1
    soft_note(soft, where, pos, code, detail)
    return put_null_col(cols, children, ci)


cdef inline void put_soft(const Soft *s, int64_t i, uint8_t *code, int64_t *pos, int32_t *where, int64_t *detail,
                          int32_t *more) noexcept nogil:
    """Row i's error arrays: the first field nulled (its code + AC_FIELD) and how many more."""
    code[i] = <uint8_t>(s.code + AC_FIELD)
    pos[i] = s.pos
    where[i] = s.where
    detail[i] = s.detail
    more[i] = s.n - 1


cdef inline void restore(Col *cols, int64_t m, const int64_t *saved) noexcept nogil:
    """Roll every column back to the lengths in saved (validity bits cleared by placeholders set again)."""
    cdef int64_t k, b, e
    for k in range(m):
        b = saved[k]
        e = cols[k].length
        if cols[k].kind != K_NULL:
            while b < e:
                cols[k].valid[b >> 3] |= <uint8_t>(1 << (b & 7))
                b += 1
        cols[k].length = saved[k]
