# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Avro kernel: decode a whole column of Avro values into Arrow buffers in one call, without the GIL.

The Python side (kafkafmt.values.avro._plan) compiles each (writer schema, reader schema) pair once into a
flat *plan*: an array of nodes, each one instruction -- read a writer type, convert it, append it
to an output column (or skip it) --, with their children in a shared int32 table and field defaults
pre-encoded as Avro binary in a constants blob. The output *columns* follow the reader schema (one
per Arrow array: struct, list, map, primitive); every plan of every writer schema writes into the
same columns, so rows written with different schema ids decode in one pass, in record order.

Per row the caller gives the root node of the row's writer schema (or a negative code: -1 a null
input value, stays null without an error; -k an error k found before decoding, e.g. an unknown
schema id). The kernel then:

* bounds-checks every read against the end of the value: a length, block count or fixed size past
  the end, a negative length, a varint longer than 10 bytes (an int outside 32 bits), a union or
  enum index out of range, a boolean byte other than 0/1, invalid UTF-8 in a string, nesting deeper
  than MAX_DEPTH are per-record errors (ERROR_INFO);
* a decimal beyond its precision is its field's error, not the record's: the field is null, the rest
  of the value is read, and the row's error names the first such field (code + FIELD_ERROR) and
  counts them;
* a recursive record nested deeper than the reader's columns unroll it (OP_CUT) is decoded with the
  plan's node of that record up the path -- every check a value gets -- then taken back out of the
  columns, and kept as its bytes (behind the int32 index of its writer type); the Python side prints
  them as JSON text;
* caps items per array/map block by the bytes left (every item of a type that takes >= 1 byte
  needs one), and items of zero-byte types (null, empty records, fixed(0)) by ``zero_cap`` per value;
* on an error, rolls every column back to the row's start and appends a placeholder row: the
  value is null (its non-nullable children hold zeros, as Arrow's Parquet writer wants), and the
  row's error code, byte position in the value, plan node and detail are recorded.

Columns grow geometrically (realloc) inside the loop. A string/binary/list/map column whose int32
offsets would pass 2^31 - 1 stops the call at that row (STATUS_FULL): the caller takes the rows
decoded so far and calls again from there.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t, INT32_MAX, INT64_MIN

from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, calloc, realloc, free
from cpython.buffer cimport PyBuffer_FillInfo

from kafkafmt._native.arrowcols cimport Soft, soft_note, AC_FIELD

# ---- plan node ops (the Python compiler uses OPS)
cdef enum:
    OP_NULL = 1           # writer null -> append a null (placeholder) to col
    OP_BOOL = 2
    OP_INT = 3            # int -> int32 (int, date, time-millis: c > 0, values in [0, c))
    OP_INT_LONG = 4       # int -> int64 (c as OP_INT)
    OP_INT_FLOAT = 5
    OP_INT_DOUBLE = 6
    OP_LONG = 7           # long -> int64 (c as OP_INT: time-micros)
    OP_LONG_FLOAT = 8
    OP_LONG_DOUBLE = 9
    OP_FLOAT = 10
    OP_FLOAT_DOUBLE = 11
    OP_DOUBLE = 12
    OP_STRING = 13        # length + UTF-8 checked bytes -> string column (also bytes -> string); c = 1: a UUID
    OP_BYTES = 14         # length + bytes -> binary column (also string -> bytes)
    OP_FIXED = 15         # c bytes -> fixed_size_binary(c)
    OP_DEC_BYTES = 16     # length + big-endian two's complement -> decimal (a: bound in consts)
    OP_DEC_FIXED = 17     # c bytes -> decimal (a: bound)
    OP_DURATION = 18      # fixed(12) -> month_day_nano
    OP_ENUM = 19          # int index; table[a + index] = reader index or -1; b = writer symbols
    OP_RECORD = 20        # children table[a .. a + b), then the struct col
    OP_ARRAY = 21         # blocks of items (node a) -> list col
    OP_MAP = 22           # blocks of (string key, value node a) -> map col
    OP_UNION = 23         # int index < b; node table[a + index]
    OP_MEMBER = 24        # general reader union (struct of members) col: member a gets node b, others null
    OP_DEFAULT = 25       # decode consts[a .. a + b) with node c (a reader-only field's default)
    OP_ERROR = 26         # a resolution error (incompatible types, a recursive type cut off...): message a
    OP_RAW = 27           # the rest of the value (a top-level "bytes" writer schema): b 0 bytes, 1 string, 2 decimal
    OP_CUT = 28           # a record past the reader's depth: checked with node a, kept as int32 b + its bytes
    SK_NONE = 40          # skip: writer-only parts, nothing written
    SK_FIXED = 41         # c bytes
    SK_VARINT = 42
    SK_BYTES = 43
    SK_RECORD = 44        # children table[a .. a + b)
    SK_ARRAY = 45         # items node a
    SK_MAP = 46           # values node a
    SK_UNION = 47         # table[a + index], index < b

# ---- column kinds
cdef enum:
    K_NULL = 0            # Arrow null: a length only
    K_BOOL = 1            # validity + bit-packed values
    K_FIXED = 2           # validity + width bytes per value
    K_VAR = 3             # validity + int32 offsets + data (string, binary)
    K_LIST = 4            # validity + int32 offsets + child 0
    K_STRUCT = 5          # validity + children
    K_MAP = 6             # validity + int32 offsets + child 0 (the entries struct: key, value)

# ---- per-record error codes (ERROR_INFO); codes >= 64 belong to the Python side (framing, ids)
cdef enum:
    E_NONE = 0
    E_TRUNCATED = 1
    E_VARINT = 2
    E_INT_RANGE = 3
    E_NEG_LENGTH = 4
    E_LENGTH = 5
    E_COUNT = 6
    E_BLOCK_SIZE = 7
    E_ZERO_ITEMS = 8
    E_BOOL = 9
    E_UTF8 = 10
    E_ENUM_INDEX = 11
    E_ENUM_SYMBOL = 12
    E_UNION_INDEX = 13
    E_RESOLVE = 14
    E_DEPTH = 15
    E_DECIMAL = 16
    E_DURATION = 17
    E_TRAILING = 18
    E_TOO_LARGE = 19
    E_TIME_RANGE = 20
    E_UUID = 21
    # not per record: the call stops
    E_FULL = 100          # an int32 offset would overflow: stop here, call again
    E_NOMEM = 101

cdef enum:
    NOT_LEAF = -1         # quick(): not a leaf it decodes

cdef enum:
    MAX_DEPTH_ = 64       # nested records/arrays/maps/unions per value

# ---- framing errors (Confluent wire format), found by frame() before decoding
cdef enum:
    F_NO_MAGIC = 64       # empty, or the first byte is not 0x00 (nor 0x01)
    F_SHORT = 65          # 0x00 but fewer than 5 bytes
    F_GUID = 66           # 0x01: a 16-byte schema GUID (Confluent's V1 framing)

FRAME_ERRORS = {"NO_MAGIC": F_NO_MAGIC, "SHORT": F_SHORT, "GUID": F_GUID}

MAX_DEPTH = MAX_DEPTH_
STATUS_OK, STATUS_FULL = 0, int(E_FULL)
#: added to the error code of a field nulled because its column cannot hold it (the value is read)
FIELD_ERROR = AC_FIELD

OPS = dict(
    OP_NULL=OP_NULL, OP_BOOL=OP_BOOL, OP_INT=OP_INT, OP_INT_LONG=OP_INT_LONG, OP_INT_FLOAT=OP_INT_FLOAT,
    OP_INT_DOUBLE=OP_INT_DOUBLE, OP_LONG=OP_LONG, OP_LONG_FLOAT=OP_LONG_FLOAT, OP_LONG_DOUBLE=OP_LONG_DOUBLE,
    OP_FLOAT=OP_FLOAT, OP_FLOAT_DOUBLE=OP_FLOAT_DOUBLE, OP_DOUBLE=OP_DOUBLE, OP_STRING=OP_STRING,
    OP_BYTES=OP_BYTES, OP_FIXED=OP_FIXED, OP_DEC_BYTES=OP_DEC_BYTES, OP_DEC_FIXED=OP_DEC_FIXED,
    OP_DURATION=OP_DURATION, OP_ENUM=OP_ENUM, OP_RECORD=OP_RECORD, OP_ARRAY=OP_ARRAY, OP_MAP=OP_MAP,
    OP_UNION=OP_UNION, OP_MEMBER=OP_MEMBER, OP_DEFAULT=OP_DEFAULT, OP_ERROR=OP_ERROR, OP_RAW=OP_RAW, OP_CUT=OP_CUT,
    SK_NONE=SK_NONE, SK_FIXED=SK_FIXED, SK_VARINT=SK_VARINT, SK_BYTES=SK_BYTES,
    SK_RECORD=SK_RECORD, SK_ARRAY=SK_ARRAY, SK_MAP=SK_MAP, SK_UNION=SK_UNION)
KINDS = dict(K_NULL=K_NULL, K_BOOL=K_BOOL, K_FIXED=K_FIXED, K_VAR=K_VAR, K_LIST=K_LIST, K_STRUCT=K_STRUCT,
             K_MAP=K_MAP)

# code -> message ({detail}: the error's detail number; {depth}: MAX_DEPTH; {cap}: zero_cap)
_ERROR_TABLE = (
    (E_TRUNCATED, "TRUNCATED", "the value ends inside a field (truncated or corrupt)"),
    (E_VARINT, "VARINT", "varint longer than 10 bytes, or beyond 64 bits"),
    (E_INT_RANGE, "INT_RANGE", "int value {detail} outside the 32-bit range"),
    (E_NEG_LENGTH, "NEG_LENGTH", "negative length {detail}"),
    (E_LENGTH, "LENGTH", "length {detail} runs past the end of the value"),
    (E_COUNT, "COUNT", "block count {detail} is more than the bytes left can hold"),
    (E_BLOCK_SIZE, "BLOCK_SIZE", "block size {detail} runs past the end of the value"),
    (E_ZERO_ITEMS, "ZERO_ITEMS", "more than {cap} items of a zero-byte type in one value"),
    (E_BOOL, "BOOL", "boolean byte {detail} is neither 0 nor 1"),
    (E_UTF8, "UTF8", "string is not valid UTF-8"),
    (E_ENUM_INDEX, "ENUM_INDEX", "enum index {detail} out of range"),
    (E_ENUM_SYMBOL, "ENUM_SYMBOL", "enum symbol #{detail} of the writer is not in the reader's enum, which has "
                                   "no default"),
    (E_UNION_INDEX, "UNION_INDEX", "union branch index {detail} out of range"),
    (E_RESOLVE, "RESOLVE", "{message}"),
    (E_DEPTH, "DEPTH", "nesting deeper than {depth}"),
    (E_DECIMAL, "DECIMAL", "decimal value does not fit its precision"),
    (E_DURATION, "DURATION", "duration months or days above 2^31 - 1"),
    (E_TRAILING, "TRAILING", "{detail} bytes after the end of the Avro value"),
    (E_TOO_LARGE, "TOO_LARGE", "the value alone needs more than 2 GiB in one Arrow column"),
    (E_TIME_RANGE, "TIME_RANGE", "time of day {detail} is outside one day"),
    (E_UUID, "UUID", "uuid string is not 8-4-4-4-12 hex digits"),
)
#: error code -> (name, message template)
ERROR_INFO = {int(code): (name, text) for code, name, text in _ERROR_TABLE}


cdef struct Node:
    int32_t op
    int32_t col
    int32_t a
    int32_t b
    int64_t c
    int64_t min_size         # fewest bytes the writer type takes (counts are checked against it)


cdef struct Col:
    int32_t kind
    int32_t width            # K_FIXED: bytes per value
    int32_t child0           # first child in col_children
    int32_t nchild
    bint nullable            # placeholders are null (else zero-valued)
    int64_t length
    int64_t cap              # values the validity/offsets/fixed data can hold
    uint8_t *valid           # bit-packed, grown with 1 bits (cleared for nulls)
    uint8_t *data
    int64_t data_cap         # bytes allocated (K_VAR: offs[length] are used)
    int32_t *offs


cdef struct Ctx:
    const Node *nodes
    const int32_t *table
    const uint8_t *consts
    const uint8_t *bounds    # decimal bounds (little-endian magnitudes)
    Col *cols
    const int32_t *col_children
    const uint8_t *vstart    # the current value (error positions count from here)
    int64_t err_pos
    int64_t err_detail
    int32_t err_node
    int64_t zero_items
    int64_t zero_cap
    int64_t ncols
    Soft soft                # fields of the row nulled (their columns cannot hold them)


# ------------------------------------------------------------------------------------------------
# columns

cdef int grow(Col *c, int64_t need) noexcept nogil:
    """Capacity for at least `need` values (validity, offsets or fixed data)."""
    cdef int64_t ncap = c.cap * 2 if c.cap >= 8 else 16
    cdef int64_t old_bytes = (c.cap + 7) >> 3, new_bytes
    cdef void *p
    while ncap < need:
        ncap *= 2
    new_bytes = (ncap + 7) >> 3
    p = realloc(c.valid, new_bytes + 1)
    if p == NULL:
        return E_NOMEM
    c.valid = <uint8_t *>p
    memset(c.valid + old_bytes, 0xFF, new_bytes + 1 - old_bytes)
    if c.kind == K_FIXED:
        p = realloc(c.data, ncap * c.width + 1)
        if p == NULL:
            return E_NOMEM
        c.data = <uint8_t *>p
        c.data_cap = ncap * c.width + 1
    elif c.kind == K_BOOL:
        p = realloc(c.data, new_bytes + 1)
        if p == NULL:
            return E_NOMEM
        c.data = <uint8_t *>p
        c.data_cap = new_bytes + 1
    elif c.kind == K_VAR or c.kind == K_LIST or c.kind == K_MAP:
        p = realloc(c.offs, (ncap + 1) * sizeof(int32_t))
        if p == NULL:
            return E_NOMEM
        c.offs = <int32_t *>p
    c.cap = ncap
    return E_NONE


cdef inline int room(Col *c) noexcept nogil:
    if c.length < c.cap:
        return E_NONE
    return grow(c, c.length + 1)


cdef int grow_data(Col *c, int64_t need) noexcept nogil:
    cdef int64_t ncap = c.data_cap * 2 if c.data_cap >= 64 else 64
    cdef void *p
    while ncap < need:
        ncap *= 2
    p = realloc(c.data, ncap)
    if p == NULL:
        return E_NOMEM
    c.data = <uint8_t *>p
    c.data_cap = ncap
    return E_NONE


cdef inline void clear_bit(uint8_t *bits, int64_t i) noexcept nogil:
    bits[i >> 3] &= <uint8_t>~(1 << (i & 7))


cdef inline void put_bit(uint8_t *bits, int64_t i, bint v) noexcept nogil:
    if v:
        bits[i >> 3] |= <uint8_t>(1 << (i & 7))
    else:
        bits[i >> 3] &= <uint8_t>~(1 << (i & 7))


cdef int put_null(Ctx *x, int32_t ci) noexcept nogil:
    """Append a placeholder: null in a nullable column, else a zero value (empty string or list,
    a struct of placeholders)."""
    cdef Col *c = &x.cols[ci]
    cdef int64_t i = c.length
    cdef int32_t k
    cdef int rc
    if c.kind == K_NULL:
        c.length = i + 1
        return E_NONE
    rc = room(c)
    if rc:
        return rc
    if c.nullable:
        clear_bit(c.valid, i)
    if c.kind == K_FIXED:
        memset(c.data + i * c.width, 0, c.width)
    elif c.kind == K_BOOL:
        clear_bit(c.data, i)
    elif c.kind == K_VAR:
        c.offs[i + 1] = c.offs[i]
    elif c.kind == K_LIST or c.kind == K_MAP:
        c.offs[i + 1] = c.offs[i]
    elif c.kind == K_STRUCT:
        for k in range(c.nchild):
            rc = put_null(x, x.col_children[c.child0 + k])
            if rc:
                return rc
    c.length = i + 1
    return E_NONE


cdef inline int put_i32(Col *c, int32_t v) noexcept nogil:
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    (<int32_t *>c.data)[c.length] = v
    c.length += 1
    return E_NONE


cdef inline int put_i64(Col *c, int64_t v) noexcept nogil:
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    (<int64_t *>c.data)[c.length] = v
    c.length += 1
    return E_NONE


cdef inline int put_bool(Col *c, uint8_t v) noexcept nogil:
    if room(c):
        return E_NOMEM
    put_bit(c.data, c.length, v)
    c.length += 1
    return E_NONE


cdef inline int put_f32(Col *c, float v) noexcept nogil:
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    (<float *>c.data)[c.length] = v
    c.length += 1
    return E_NONE


cdef inline int put_f64(Col *c, double v) noexcept nogil:
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    (<double *>c.data)[c.length] = v
    c.length += 1
    return E_NONE


cdef inline int put_bytes(Col *c, const uint8_t *s, int64_t n) noexcept nogil:
    cdef int64_t used, end
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    used = c.offs[c.length]
    end = used + n
    if end > INT32_MAX:
        return E_FULL
    if end > c.data_cap and grow_data(c, end):
        return E_NOMEM
    memcpy(c.data + used, s, n)
    c.length += 1
    c.offs[c.length] = <int32_t>end
    return E_NONE


cdef inline int put_end(Col *c, int64_t child_len) noexcept nogil:
    """Close a list/map value whose items end at child_len."""
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    if child_len > INT32_MAX:
        return E_FULL
    c.length += 1
    c.offs[c.length] = <int32_t>child_len
    return E_NONE


cdef inline int put_valid(Col *c) noexcept nogil:
    """A valid struct value (its children were appended)."""
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    c.length += 1
    return E_NONE


cdef inline uint8_t *put_slot(Col *c) noexcept nogil:
    """Room for one fixed-width value: its address (NULL when out of memory)."""
    if c.length >= c.cap and grow(c, c.length + 1):
        return NULL
    c.length += 1
    return c.data + (c.length - 1) * c.width


# ------------------------------------------------------------------------------------------------
# reading

cdef inline int read_long(const uint8_t **pp, const uint8_t *end, int64_t *out) noexcept nogil:
    """A zigzag varint of at most 10 bytes (the 10th holding bit 63 only): inline when 10 bytes are left
    (no bound to check per byte), else `read_long_slow`."""
    cdef const uint8_t *p = pp[0]
    cdef uint64_t b, u
    cdef int k
    if end - p >= 10:
        b = p[0]
        if b < 0x80:
            pp[0] = p + 1
            out[0] = <int64_t>((b >> 1) ^ (~(b & 1) + 1))
            return E_NONE
        u = b & 0x7F
        for k in range(1, 10):
            b = p[k]
            if k == 9 and b > 1:
                return E_VARINT
            u |= (b & 0x7F) << (7 * k)
            if b < 0x80:
                pp[0] = p + k + 1
                out[0] = <int64_t>((u >> 1) ^ (~(u & 1) + 1))
                return E_NONE
        return E_VARINT
    return read_long_slow(pp, end, out)


cdef int read_long_slow(const uint8_t **pp, const uint8_t *end, int64_t *out) noexcept nogil:
    cdef const uint8_t *p = pp[0]
    cdef uint64_t u, b
    cdef int shift
    if p >= end:
        return E_TRUNCATED
    b = p[0]
    if b < 0x80:
        pp[0] = p + 1
        out[0] = <int64_t>((b >> 1) ^ (~(b & 1) + 1))
        return E_NONE
    u = b & 0x7F
    shift = 7
    p += 1
    while True:
        if p >= end:
            return E_TRUNCATED
        b = p[0]
        p += 1
        if shift == 63 and b > 1:
            return E_VARINT
        u |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    pp[0] = p
    out[0] = <int64_t>((u >> 1) ^ (~(u & 1) + 1))
    return E_NONE


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


cdef bint uuid_ok(const uint8_t *s, int64_t n) noexcept nogil:
    """The canonical text form of a UUID (RFC 4122): 8-4-4-4-12 hex digits."""
    cdef int64_t i
    cdef uint8_t c
    if n != 36:
        return False
    for i in range(36):
        c = s[i]
        if i == 8 or i == 13 or i == 18 or i == 23:
            if c != 45:
                return False
        elif not ((48 <= c <= 57) or (97 <= c <= 102) or (65 <= c <= 70)):
            return False
    return True


cdef inline int fail(Ctx *x, int32_t ni, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    x.err_node = ni
    x.err_pos = p - x.vstart
    x.err_detail = detail
    return code


cdef int field_null(Ctx *x, int32_t ni, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    """A value node ni's column cannot hold: null in its place and the field named in the row's
    error (a column that cannot be null: the row's error)."""
    cdef int32_t ci = x.nodes[ni].col
    if not x.cols[ci].nullable:
        return fail(x, ni, p, code, detail)
    soft_note(&x.soft, ni, p - x.vstart, code, detail)
    return put_null(x, ci)


cdef inline int read_len(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, int64_t *n) noexcept nogil:
    """A length (long) and the check that that many bytes are left."""
    cdef const uint8_t *start = pp[0]
    cdef int rc = read_long(pp, end, n)
    if rc:
        return fail(x, ni, start, rc, 0)
    if n[0] < 0:
        return fail(x, ni, start, E_NEG_LENGTH, n[0])
    if n[0] > end - pp[0]:
        return fail(x, ni, start, E_LENGTH, n[0])
    return E_NONE


cdef int put_decimal(Ctx *x, int32_t ni, Col *c, const uint8_t *src, int64_t n, const uint8_t *bound,
                     const uint8_t *at) noexcept nogil:
    """A big-endian two's-complement integer of n bytes as a little-endian decimal of c.width bytes,
    checked against 10^precision (bound: little-endian magnitude)."""
    cdef int w = c.width, k
    cdef bint neg = n > 0 and (src[0] & 0x80) != 0
    cdef uint8_t sign = 0xFF if neg else 0x00
    cdef uint8_t *dst
    cdef uint8_t mag[32]
    cdef int carry
    while n > w:               # redundant sign bytes
        if src[0] != sign or ((src[1] & 0x80) != 0) != neg:
            return field_null(x, ni, at, E_DECIMAL, 0)
        src += 1
        n -= 1
    dst = put_slot(c)
    if dst == NULL:
        return E_NOMEM
    memset(dst, sign, w)
    for k in range(n):
        dst[k] = src[n - 1 - k]
    # magnitude, compared with the bound from the most significant byte
    carry = 1
    for k in range(w):
        if neg:
            carry += <uint8_t>~dst[k]
            mag[k] = <uint8_t>carry
            carry >>= 8
        else:
            mag[k] = dst[k]
    for k in range(w - 1, -1, -1):
        if mag[k] != bound[k]:
            if mag[k] > bound[k]:
                c.length -= 1
                return field_null(x, ni, at, E_DECIMAL, 0)
            return E_NONE
    c.length -= 1                    # equal to 10^precision: one digit too many
    return field_null(x, ni, at, E_DECIMAL, 0)


cdef int count_ok(Ctx *x, int32_t ni, int64_t count, int64_t min_size, const uint8_t *p, const uint8_t *end,
                  const uint8_t *at) noexcept nogil:
    """Block counts are bounded by the bytes left (items of >= 1 byte) or by zero_cap per value."""
    if min_size > 0:
        if count > (end - p) // min_size:
            return fail(x, ni, at, E_COUNT, count)
        return E_NONE
    if count > x.zero_cap - x.zero_items:
        return fail(x, ni, at, E_ZERO_ITEMS, count)
    x.zero_items += count
    return E_NONE


cdef int block(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, int64_t item_min, int64_t *count,
               int64_t *size) noexcept nogil:
    """The next block header of an array or map: count (0 = the end) and, for a negative count,
    its byte size (else -1)."""
    cdef const uint8_t *at = pp[0]
    cdef int rc = read_long(pp, end, count)
    if rc:
        return fail(x, ni, at, rc, 0)
    size[0] = -1
    if count[0] < 0:
        if count[0] == INT64_MIN:
            return fail(x, ni, at, E_COUNT, count[0])
        count[0] = -count[0]
        rc = read_long(pp, end, size)
        if rc:
            return fail(x, ni, at, rc, 0)
    if count[0] == 0:
        return E_NONE
    return count_ok(x, ni, count[0], item_min, pp[0], end, at)


cdef int skip(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, int depth) noexcept nogil:
    """Skip one writer value of node ni (a field or branch the reader lacks)."""
    cdef const Node *nd = &x.nodes[ni]
    cdef const uint8_t *at = pp[0]
    cdef int64_t v, count, size, k
    cdef int rc
    cdef int32_t op = nd.op
    if depth > MAX_DEPTH_:
        return fail(x, ni, at, E_DEPTH, MAX_DEPTH_)
    if op == SK_NONE:
        return E_NONE
    elif op == SK_FIXED:
        if nd.c > end - at:
            return fail(x, ni, at, E_LENGTH, nd.c)
        pp[0] = at + nd.c
        return E_NONE
    elif op == SK_VARINT:
        rc = read_long(pp, end, &v)
        return fail(x, ni, at, rc, 0) if rc else E_NONE
    elif op == SK_BYTES:
        rc = read_len(x, ni, pp, end, &v)
        if rc:
            return rc
        pp[0] += v
        return E_NONE
    elif op == SK_RECORD:
        for k in range(nd.b):
            rc = skip(x, x.table[nd.a + k], pp, end, depth + 1)
            if rc:
                return rc
        return E_NONE
    elif op == SK_ARRAY or op == SK_MAP:
        while True:
            at = pp[0]
            rc = block(x, ni, pp, end, x.nodes[nd.a].min_size + (1 if op == SK_MAP else 0), &count, &size)
            if rc:
                return rc
            if count == 0:
                return E_NONE
            if size >= 0:               # the writer gave the block's size: jump over it
                if size > end - pp[0]:
                    return fail(x, ni, at, E_BLOCK_SIZE, size)
                pp[0] += size
                continue
            for k in range(count):
                if op == SK_MAP:
                    rc = read_len(x, ni, pp, end, &v)
                    if rc:
                        return rc
                    pp[0] += v
                rc = skip(x, nd.a, pp, end, depth + 1)
                if rc:
                    return rc
    elif op == SK_UNION:
        rc = read_long(pp, end, &v)
        if rc:
            return fail(x, ni, at, rc, 0)
        if v < 0 or v >= nd.b:
            return fail(x, ni, at, E_UNION_INDEX, v)
        return skip(x, x.table[nd.a + v], pp, end, depth + 1)
    if op < SK_NONE:
        return run(x, ni, pp, end, depth)
    return fail(x, ni, at, E_RESOLVE, -1)


cdef inline int quick(Ctx *x, const Node *nd, const uint8_t **pp, const uint8_t *end, int depth) noexcept nogil:
    """The commonest values inside a container decoded without a call to `run`: a double, float or
    boolean; an int, long (or int read as long), enum index or string; a union's branch of one
    byte that is null or one of those. NOT_LEAF for the rest and for anything doubtful (too short,
    invalid UTF-8, out of range, a logical type's check), which `run` then reads from the same
    place, checking and reporting as before."""
    cdef const uint8_t *p = pp[0]
    cdef int32_t op = nd.op
    cdef uint64_t b
    cdef int64_t v
    cdef int32_t mapped
    cdef double d
    cdef float f
    if p >= end:
        return NOT_LEAF
    if op == OP_UNION:
        b = p[0]
        if depth > MAX_DEPTH_ or b >= 0x80 or (b & 1) or <int64_t>(b >> 1) >= nd.b:
            return NOT_LEAF
        nd = &x.nodes[x.table[nd.a + (b >> 1)]]
        op = nd.op
        if op == OP_NULL:
            pp[0] = p + 1
            return put_null(x, nd.col)
        p += 1
        if p >= end:
            return NOT_LEAF
    if op == OP_DOUBLE or op == OP_FLOAT:
        if end - p < (8 if op == OP_DOUBLE else 4):
            return NOT_LEAF
        if op == OP_DOUBLE:
            memcpy(&d, p, 8)
            pp[0] = p + 8
            return put_f64(&x.cols[nd.col], d)
        memcpy(&f, p, 4)
        pp[0] = p + 4
        return put_f32(&x.cols[nd.col], f)
    if op == OP_BOOL:
        if p[0] > 1:
            return NOT_LEAF
        pp[0] = p + 1
        return put_bool(&x.cols[nd.col], p[0])
    if nd.c != 0 or not (op == OP_LONG or op == OP_INT or op == OP_STRING or op == OP_INT_LONG or op == OP_ENUM):
        return NOT_LEAF
    b = p[0]
    if b < 0x80:                      # one varint byte: most lengths, counts and small numbers
        v = <int64_t>((b >> 1) ^ (~(b & 1) + 1))
        p += 1
    elif read_long(&p, end, &v):
        return NOT_LEAF
    if op == OP_STRING:
        if v < 0 or v > end - p or not utf8_ok(p, v):
            return NOT_LEAF
        pp[0] = p + v
        return put_bytes(&x.cols[nd.col], p, v)
    if op == OP_ENUM:
        if v < 0 or v >= nd.b:
            return NOT_LEAF
        mapped = x.table[nd.a + v]
        if mapped < 0:
            return NOT_LEAF
        pp[0] = p
        return put_i32(&x.cols[nd.col], mapped)
    if op != OP_LONG and (v < -2147483648 or v > 2147483647):
        return NOT_LEAF
    pp[0] = p
    if op == OP_INT:
        return put_i32(&x.cols[nd.col], <int32_t>v)
    return put_i64(&x.cols[nd.col], v)


cdef int decode_undo(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, int depth) noexcept nogil:
    """Decode one writer value with node ni (every check a value gets), then take it back out of the
    columns (the fields it nulls stay noted); *pp ends past it."""
    cdef int64_t *saved = <int64_t *>malloc(x.ncols * sizeof(int64_t) + 8)
    cdef int64_t k, b, e
    cdef int rc
    if saved == NULL:
        return E_NOMEM
    for k in range(x.ncols):
        saved[k] = x.cols[k].length
    rc = run(x, ni, pp, end, depth)
    for k in range(x.ncols):
        b = saved[k]
        e = x.cols[k].length
        if x.cols[k].kind != K_NULL:
            while b < e:
                x.cols[k].valid[b >> 3] |= <uint8_t>(1 << (b & 7))
                b += 1
        x.cols[k].length = saved[k]
    free(saved)
    return rc


cdef int put_cut(Col *c, int32_t which, const uint8_t *s, int64_t n) noexcept nogil:
    """A value kept as its bytes: int32 ``which`` (little-endian), then the n bytes at s."""
    cdef int64_t used, end
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    used = c.offs[c.length]
    end = used + 4 + n
    if end > INT32_MAX:
        return E_FULL
    if end > c.data_cap and grow_data(c, end):
        return E_NOMEM
    memcpy(c.data + used, &which, 4)
    memcpy(c.data + used + 4, s, n)
    c.length += 1
    c.offs[c.length] = <int32_t>end
    return E_NONE


cdef int run(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, int depth) noexcept nogil:
    """Decode one writer value of node ni into its column(s)."""
    cdef const Node *nd = &x.nodes[ni]
    cdef int32_t op = nd.op
    cdef const uint8_t *at = pp[0]
    cdef const uint8_t *q
    cdef const uint8_t *qend
    cdef Col *c
    cdef Col *child
    cdef Col *key = NULL
    cdef int64_t v, n, count, size, k
    cdef int32_t mapped, j
    cdef float f
    cdef double d
    cdef uint8_t *slot
    cdef uint32_t u32[3]
    cdef int rc
    if op == OP_LONG:
        rc = read_long(pp, end, &v)
        if rc:
            return fail(x, ni, at, rc, 0)
        if nd.c > 0 and (v < 0 or v >= nd.c):
            return fail(x, ni, at, E_TIME_RANGE, v)
        return put_i64(&x.cols[nd.col], v)
    elif op == OP_INT:
        rc = read_long(pp, end, &v)
        if rc:
            return fail(x, ni, at, rc, 0)
        if v < -2147483648 or v > 2147483647:
            return fail(x, ni, at, E_INT_RANGE, v)
        if nd.c > 0 and (v < 0 or v >= nd.c):
            return fail(x, ni, at, E_TIME_RANGE, v)
        return put_i32(&x.cols[nd.col], <int32_t>v)
    elif op == OP_STRING or op == OP_BYTES:
        rc = read_len(x, ni, pp, end, &n)
        if rc:
            return rc
        if op == OP_STRING:
            if nd.c == 1:
                if not uuid_ok(pp[0], n):
                    return fail(x, ni, at, E_UUID, 0)
            elif not utf8_ok(pp[0], n):
                return fail(x, ni, at, E_UTF8, 0)
        rc = put_bytes(&x.cols[nd.col], pp[0], n)
        pp[0] += n
        return rc
    elif op == OP_DOUBLE or op == OP_FLOAT_DOUBLE or op == OP_FLOAT:
        n = 8 if op == OP_DOUBLE else 4
        if end - at < n:
            return fail(x, ni, at, E_TRUNCATED, 0)
        pp[0] = at + n
        if op == OP_DOUBLE:
            memcpy(&d, at, 8)
            return put_f64(&x.cols[nd.col], d)
        memcpy(&f, at, 4)
        if op == OP_FLOAT:
            return put_f32(&x.cols[nd.col], f)
        return put_f64(&x.cols[nd.col], <double>f)
    elif op == OP_BOOL:
        if at >= end:
            return fail(x, ni, at, E_TRUNCATED, 0)
        if at[0] > 1:
            return fail(x, ni, at, E_BOOL, at[0])
        pp[0] = at + 1
        return put_bool(&x.cols[nd.col], at[0])
    elif op == OP_INT_LONG or op == OP_INT_FLOAT or op == OP_INT_DOUBLE or op == OP_LONG_FLOAT \
            or op == OP_LONG_DOUBLE:
        rc = read_long(pp, end, &v)
        if rc:
            return fail(x, ni, at, rc, 0)
        if (op == OP_INT_LONG or op == OP_INT_FLOAT or op == OP_INT_DOUBLE) and \
                (v < -2147483648 or v > 2147483647):
            return fail(x, ni, at, E_INT_RANGE, v)
        if op == OP_INT_LONG:
            if nd.c > 0 and (v < 0 or v >= nd.c):
                return fail(x, ni, at, E_TIME_RANGE, v)
            return put_i64(&x.cols[nd.col], v)
        if op == OP_INT_FLOAT or op == OP_LONG_FLOAT:
            return put_f32(&x.cols[nd.col], <float>v)
        return put_f64(&x.cols[nd.col], <double>v)
    elif op == OP_NULL:
        return put_null(x, nd.col)

    if depth > MAX_DEPTH_:
        return fail(x, ni, at, E_DEPTH, MAX_DEPTH_)
    if op == OP_RECORD:
        for k in range(nd.b):
            j = x.table[nd.a + k]
            rc = quick(x, &x.nodes[j], pp, end, depth + 1)
            if rc == NOT_LEAF:
                if x.nodes[j].op >= SK_NONE:
                    rc = skip(x, j, pp, end, depth + 1)
                else:
                    rc = run(x, j, pp, end, depth + 1)
            if rc:
                return rc
        return put_valid(&x.cols[nd.col])
    elif op == OP_ARRAY or op == OP_MAP:
        c = &x.cols[nd.col]
        child = &x.cols[x.col_children[c.child0]]
        if op == OP_MAP:
            key = &x.cols[x.col_children[child.child0]]
        while True:
            rc = block(x, ni, pp, end, x.nodes[nd.a].min_size + (1 if op == OP_MAP else 0), &count, &size)
            if rc:
                return rc
            if count == 0:
                break
            for k in range(count):
                if op == OP_MAP:
                    at = pp[0]
                    rc = read_len(x, ni, pp, end, &n)
                    if rc:
                        return rc
                    if not utf8_ok(pp[0], n):
                        return fail(x, ni, at, E_UTF8, 0)
                    rc = put_bytes(key, pp[0], n)
                    if rc:
                        return rc
                    pp[0] += n
                rc = quick(x, &x.nodes[nd.a], pp, end, depth + 1)
                if rc == NOT_LEAF:
                    rc = run(x, nd.a, pp, end, depth + 1)
                if rc:
                    return rc
                if op == OP_MAP:
                    rc = put_valid(child)
                    if rc:
                        return rc
        return put_end(c, child.length)
    elif op == OP_UNION:
        rc = read_long(pp, end, &v)
        if rc:
            return fail(x, ni, at, rc, 0)
        if v < 0 or v >= nd.b:
            return fail(x, ni, at, E_UNION_INDEX, v)
        return run(x, x.table[nd.a + v], pp, end, depth + 1)
    elif op == OP_MEMBER:
        c = &x.cols[nd.col]
        for k in range(c.nchild):
            if k != nd.a:
                rc = put_null(x, x.col_children[c.child0 + k])
                if rc:
                    return rc
        rc = run(x, nd.b, pp, end, depth + 1)
        if rc:
            return rc
        return put_valid(c)
    elif op == OP_ENUM:
        rc = read_long(pp, end, &v)
        if rc:
            return fail(x, ni, at, rc, 0)
        if v < 0 or v >= nd.b:
            return fail(x, ni, at, E_ENUM_INDEX, v)
        mapped = x.table[nd.a + v]
        if mapped < 0:
            return fail(x, ni, at, E_ENUM_SYMBOL, v)
        return put_i32(&x.cols[nd.col], mapped)
    elif op == OP_FIXED or op == OP_DEC_FIXED or op == OP_DURATION:
        if nd.c > end - at:
            return fail(x, ni, at, E_LENGTH, nd.c)
        pp[0] = at + nd.c
        c = &x.cols[nd.col]
        if op == OP_DEC_FIXED:
            return put_decimal(x, ni, c, at, nd.c, x.bounds + nd.a, at)
        slot = put_slot(c)
        if slot == NULL:
            return E_NOMEM
        if op == OP_FIXED:
            memcpy(slot, at, nd.c)
            return E_NONE
        memcpy(u32, at, 12)         # months, days, milliseconds: little-endian uint32
        if u32[0] > 2147483647 or u32[1] > 2147483647:
            c.length -= 1
            return fail(x, ni, at, E_DURATION, 0)
        (<int32_t *>slot)[0] = <int32_t>u32[0]
        (<int32_t *>slot)[1] = <int32_t>u32[1]
        v = <int64_t>u32[2] * 1000000
        memcpy(slot + 8, &v, 8)
        return E_NONE
    elif op == OP_DEC_BYTES:
        rc = read_len(x, ni, pp, end, &n)
        if rc:
            return rc
        q = pp[0]
        pp[0] += n
        return put_decimal(x, ni, &x.cols[nd.col], q, n, x.bounds + nd.a, at)
    elif op == OP_DEFAULT:
        q = x.consts + nd.a
        qend = q + nd.b
        rc = quick(x, &x.nodes[nd.c], &q, qend, depth + 1)
        if rc != NOT_LEAF:
            return rc
        return run(x, <int32_t>nd.c, &q, qend, depth + 1)
    elif op == OP_RAW:
        n = end - at
        pp[0] = end
        if nd.b == 2:
            return put_decimal(x, ni, &x.cols[nd.col], at, n, x.bounds + nd.a, at)
        if nd.b == 1 and not utf8_ok(at, n):
            return fail(x, ni, at, E_UTF8, 0)
        return put_bytes(&x.cols[nd.col], at, n)
    elif op == OP_CUT:
        rc = decode_undo(x, nd.a, pp, end, depth + 1)
        if rc:
            return rc
        return put_cut(&x.cols[nd.col], nd.b, at, pp[0] - at)
    elif op == OP_ERROR:
        return fail(x, ni, at, E_RESOLVE, nd.a)
    elif op >= SK_NONE and op <= SK_UNION:
        return skip(x, ni, pp, end, depth)
    return fail(x, ni, at, E_RESOLVE, -1)


# ------------------------------------------------------------------------------------------------

cdef class OwnedBuffer:
    """Memory malloc'd by the kernel, handed to Python (buffer protocol) and freed with this object."""
    cdef uint8_t *ptr
    cdef Py_ssize_t size

    def __dealloc__(self):
        free(self.ptr)

    def __len__(self):
        return self.size

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.ptr, self.size, 1, flags)

    def __releasebuffer__(self, Py_buffer *view):
        pass


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


cdef struct Errs:
    int64_t n
    int64_t cap
    int64_t *row
    uint8_t *code
    int64_t *pos
    int32_t *node
    int64_t *detail
    int32_t *more            # a row read with fields nulled: how many besides the one named


cdef int push_err(Errs *e, int64_t row, int code, int64_t pos, int32_t node, int64_t detail,
                  int32_t more=0) noexcept nogil:
    """Record the error of one row (the rows with an error only: most columns have none)."""
    cdef int64_t ncap
    cdef void *p
    if e.n == e.cap:
        ncap = e.cap * 2 if e.cap else 64
        p = realloc(e.row, ncap * sizeof(int64_t))
        if p == NULL:
            return E_NOMEM
        e.row = <int64_t *>p
        p = realloc(e.code, ncap)
        if p == NULL:
            return E_NOMEM
        e.code = <uint8_t *>p
        p = realloc(e.pos, ncap * sizeof(int64_t))
        if p == NULL:
            return E_NOMEM
        e.pos = <int64_t *>p
        p = realloc(e.node, ncap * sizeof(int32_t))
        if p == NULL:
            return E_NOMEM
        e.node = <int32_t *>p
        p = realloc(e.detail, ncap * sizeof(int64_t))
        if p == NULL:
            return E_NOMEM
        e.detail = <int64_t *>p
        p = realloc(e.more, ncap * sizeof(int32_t))
        if p == NULL:
            return E_NOMEM
        e.more = <int32_t *>p
        e.cap = ncap
    e.row[e.n] = row
    e.code[e.n] = <uint8_t>code
    e.pos[e.n] = pos
    e.node[e.n] = node
    e.detail[e.n] = detail
    e.more[e.n] = more
    e.n += 1
    return E_NONE


cdef tuple _errs(Errs *e):
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


cdef struct Rows:
    int64_t n
    const int64_t *offsets      # contiguous: n + 1 offsets into base
    const uint8_t *base
    const uint8_t *views        # binary_view: n 16-byte views (NULL: contiguous)
    const uint8_t **bufs        # the data buffers long views point into
    const int64_t *bufsizes


cdef inline void row_span(const Rows *r, int64_t i, const uint8_t **p, const uint8_t **end) noexcept nogil:
    """Where row i's value lies (checked once, by Source)."""
    cdef const uint8_t *v
    cdef int32_t n, b, off
    if r.views == NULL:
        p[0] = r.base + r.offsets[i]
        end[0] = r.base + r.offsets[i + 1]
        return
    v = r.views + 16 * i
    memcpy(&n, v, 4)
    if n <= 12:
        p[0] = v + 4
    else:
        memcpy(&b, v + 8, 4)
        memcpy(&off, v + 12, 4)
        p[0] = r.bufs[b] + off
    end[0] = p[0] + n


cdef class Source:
    """The values of a binary column as the kernel reads them: contiguous (``offsets``, n + 1 int64
    positions into ``data``) or Arrow binary_view (``views``, uint8 (n, 16): int32 length, then the
    value itself when at most 12 bytes, else a prefix, an int32 buffer index and an int32 offset into
    ``buffers``, e.g. a segment's memory map: read where they lie, not copied). Every offset and view
    is checked against its buffer here, once."""
    cdef Rows rows
    cdef object _keep
    cdef const uint8_t **_bufs
    cdef int64_t *_sizes

    def __cinit__(self):
        self._bufs = NULL
        self._sizes = NULL

    def __dealloc__(self):
        free(self._bufs)
        free(self._sizes)

    def __init__(self, offsets=None, data=None, views=None, buffers=()):
        cdef const int64_t[::1] offs
        cdef const uint8_t[::1] d
        cdef const uint8_t[:, ::1] vw
        cdef const uint8_t[::1] buf
        cdef Py_ssize_t k, nb
        cdef int64_t i, n
        cdef int32_t length, bi, off
        cdef const uint8_t *v
        cdef bint ok = True
        keep = []
        if views is None:
            offs = offsets
            d = data
            n = offs.shape[0] - 1
            if n < 0:
                raise ValueError("offsets are n + 1 positions")
            if not offsets_ok(&offs[0], n, d.shape[0]):
                raise ValueError("offsets out of range")
            keep += [offs, d]
            self.rows.n = n
            self.rows.offsets = &offs[0]
            self.rows.base = &d[0] if d.shape[0] > 0 else <const uint8_t *>""
            self.rows.views = NULL
        else:
            vw = views
            if vw.shape[1] != 16:
                raise ValueError("views are (n, 16) bytes")
            nb = len(buffers)
            self._bufs = <const uint8_t **>malloc(max(1, nb) * sizeof(uint8_t *))
            self._sizes = <int64_t *>malloc(max(1, nb) * sizeof(int64_t))
            if self._bufs == NULL or self._sizes == NULL:
                raise MemoryError()
            for k in range(nb):
                buf = np.frombuffer(buffers[k], np.uint8)
                keep.append(buf)
                self._bufs[k] = &buf[0] if buf.shape[0] > 0 else <const uint8_t *>""
                self._sizes[k] = buf.shape[0]
            n = vw.shape[0]
            keep.append(vw)
            with nogil:
                for i in range(n):
                    v = &vw[i, 0]
                    memcpy(&length, v, 4)
                    if length < 0:
                        ok = False
                        break
                    if length > 12:
                        memcpy(&bi, v + 8, 4)
                        memcpy(&off, v + 12, 4)
                        if bi < 0 or bi >= nb or off < 0 or <int64_t>off + length > self._sizes[bi]:
                            ok = False
                            break
            if not ok:
                raise ValueError("a view points outside its buffers")
            self.rows.n = n
            self.rows.views = &vw[0, 0] if n > 0 else <const uint8_t *>""
            self.rows.bufs = self._bufs
            self.rows.bufsizes = self._sizes
        self._keep = keep

    def __len__(self):
        return self.rows.n

    def value(self, int64_t i):
        """Row i's bytes (for error texts)."""
        cdef const uint8_t *p
        cdef const uint8_t *end
        if not 0 <= i < self.rows.n:
            raise IndexError(i)
        row_span(&self.rows, i, &p, &end)
        return (<const char *>p)[:end - p] if end > p else b""


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


cdef OwnedBuffer _own(uint8_t **ptr, Py_ssize_t size):
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


cdef class Program:
    """A compiled plan (nodes, table, constants, decimal bounds) and its output columns.

    Parameters
    ----------
    nodes : int64 array (n, 6)
        op, column, a, b, c, min_size per node.
    table : int32 array
    consts, bounds : bytes
    columns : int64 array (m, 5)
        kind, width, first child (in ``col_children``), child count, nullable.
    col_children : int32 array
    top : int
        The column each row appends to.
    """
    cdef Node *nodes
    cdef int32_t nnodes
    cdef int32_t *table
    cdef uint8_t *consts
    cdef uint8_t *bounds
    cdef int32_t *col_children
    cdef int64_t[:, ::1] columns
    cdef int32_t ncols
    cdef readonly int32_t top
    cdef object _keep

    def __cinit__(self):
        self.nodes = NULL
        self.table = NULL
        self.consts = NULL
        self.bounds = NULL
        self.col_children = NULL

    def __dealloc__(self):
        free(self.nodes)
        free(self.table)
        free(self.consts)
        free(self.bounds)
        free(self.col_children)

    def __init__(self, const int64_t[:, ::1] nodes, const int32_t[::1] table, bytes consts, bytes bounds,
                 int64_t[:, ::1] columns, const int32_t[::1] col_children, int32_t top):
        cdef Py_ssize_t i
        cdef int64_t m = columns.shape[0]
        if nodes.shape[1] != 6 or columns.shape[1] != 5:
            raise ValueError("nodes are (n, 6), columns (m, 5)")
        self.nnodes = <int32_t>nodes.shape[0]
        self.ncols = <int32_t>m
        if not 0 <= top < m:
            raise ValueError("top column out of range")
        self.top = top
        self.nodes = <Node *>malloc(max(1, self.nnodes) * sizeof(Node))
        self.table = <int32_t *>malloc(max(1, table.shape[0]) * sizeof(int32_t))
        self.consts = <uint8_t *>malloc(max(1, len(consts)))
        self.bounds = <uint8_t *>malloc(max(1, len(bounds)))
        self.col_children = <int32_t *>malloc(max(1, col_children.shape[0]) * sizeof(int32_t))
        if self.nodes == NULL or self.table == NULL or self.consts == NULL or self.bounds == NULL \
                or self.col_children == NULL:
            raise MemoryError()
        for i in range(self.nnodes):
            # every reference must stay inside the plan: checked once here, not per value
            self.nodes[i].op = <int32_t>nodes[i, 0]
            self.nodes[i].col = <int32_t>nodes[i, 1]
            self.nodes[i].a = <int32_t>nodes[i, 2]
            self.nodes[i].b = <int32_t>nodes[i, 3]
            self.nodes[i].c = nodes[i, 4]
            self.nodes[i].min_size = nodes[i, 5]
        for i in range(table.shape[0]):
            self.table[i] = table[i]
        if len(consts):
            memcpy(self.consts, <const char *>consts, len(consts))
        if len(bounds):
            memcpy(self.bounds, <const char *>bounds, len(bounds))
        for i in range(col_children.shape[0]):
            self.col_children[i] = col_children[i]
        self.columns = np.array(columns, dtype=np.int64)
        self._check(table.shape[0], len(consts), len(bounds), col_children.shape[0])

    cdef _check(self, Py_ssize_t ntable, Py_ssize_t nconsts, Py_ssize_t nbounds, Py_ssize_t nchildren):
        cdef Py_ssize_t i
        cdef Node *nd
        for i in range(self.ncols):
            if self.columns[i, 2] < 0 or self.columns[i, 2] + self.columns[i, 3] > nchildren:
                raise ValueError(f"column {i}: children out of range")
        for i in range(nchildren):
            if not 0 <= self.col_children[i] < self.ncols:
                raise ValueError("column child out of range")
        for i in range(self.nnodes):
            nd = &self.nodes[i]
            if not (OP_NULL <= nd.op <= OP_CUT or SK_NONE <= nd.op <= SK_UNION):
                raise ValueError(f"node {i}: unknown op {nd.op}")
            if nd.min_size < 0 or nd.c < 0:
                raise ValueError(f"node {i}: negative size")
            if nd.op < SK_NONE and nd.op not in (OP_ERROR, OP_UNION) and \
                    not 0 <= nd.col < self.ncols:
                raise ValueError(f"node {i}: column out of range")
            if nd.op in (OP_RECORD, SK_RECORD, OP_UNION, SK_UNION, OP_ENUM) and \
                    (nd.a < 0 or nd.b < 0 or nd.a + nd.b > ntable):
                raise ValueError(f"node {i}: table range out of range")
            if nd.op in (OP_RECORD, SK_RECORD, OP_UNION, SK_UNION):
                for k in range(nd.b):
                    if not 0 <= self.table[nd.a + k] < self.nnodes:
                        raise ValueError(f"node {i}: child out of range")
            if nd.op in (OP_ARRAY, OP_MAP, SK_ARRAY, SK_MAP) and not 0 <= nd.a < self.nnodes:
                raise ValueError(f"node {i}: item node out of range")
            if nd.op == OP_CUT and not (0 <= nd.a < self.nnodes and self.columns[nd.col, 0] == K_VAR):
                raise ValueError(f"node {i}: cut-off record out of range")
            if nd.op == OP_MEMBER and not (0 <= nd.b < self.nnodes and 0 <= nd.a < self.columns[nd.col, 3]):
                raise ValueError(f"node {i}: member out of range")
            if nd.op == OP_DEFAULT and not (0 <= nd.c < self.nnodes and 0 <= nd.a and nd.a + nd.b <= nconsts):
                raise ValueError(f"node {i}: default out of range")
            if nd.op in (OP_DEC_BYTES, OP_DEC_FIXED) or (nd.op == OP_RAW and nd.b == 2):
                if not (0 <= nd.a and nd.a + self.columns[nd.col, 1] <= nbounds):
                    raise ValueError(f"node {i}: decimal bound out of range")
            if nd.op in (OP_ARRAY, OP_MAP) and self.columns[nd.col, 3] != 1:
                raise ValueError(f"node {i}: a list/map column has one child")
            if nd.op == OP_MAP and self.columns[self.col_children[self.columns[nd.col, 2]], 3] != 2:
                raise ValueError(f"node {i}: map entries have a key and a value")

    def decode_rows(self, Source source, const int32_t[::1] roots, int64_t start,
                    int64_t skip_bytes, bint trailing_error, int64_t zero_cap):
        """Decode rows [start, n) of a binary column (a `Source`).

        roots[i]: the plan node of row i's writer schema; -1 a null value (stays null, no error);
        < -1 an error found before (code -roots[i], recorded as is). skip_bytes: framing before
        each value (5 for the Confluent wire format).

        Returns (status, stop, columns, trailing, errors): STATUS_OK, or STATUS_FULL when a
        column's int32 offsets would overflow at row `stop` (rows [start, stop) are in `columns`;
        call again from stop). columns: per column (length, null count, validity, data, offsets),
        buffers as OwnedBuffer or None. trailing: rows decoded with bytes left after the value
        (when trailing_error is false; else those rows are errors). errors: the rows with an
        error, as NumPy arrays (row, code, byte position in the value, node, detail, more): a code from
        FIELD_ERROR (below 64) is a row read with that field (and ``more`` others) null.
        """
        cdef int64_t n = source.rows.n, i, m = self.ncols, k, b, e, init, trailing = 0
        cdef const Rows *rows = &source.rows
        cdef Ctx x
        cdef Col *cols
        cdef int64_t *saved = NULL
        cdef int rc = E_NONE, status = E_NONE
        cdef int32_t r
        cdef const uint8_t *p
        cdef const uint8_t *end
        cdef Col *top
        cdef Errs errs
        memset(&errs, 0, sizeof(Errs))
        if roots.shape[0] < n:
            raise ValueError("per-row arrays shorter than the column")
        if start < 0 or start > n:
            raise ValueError("start out of range")
        with nogil:
            for i in range(start, n):
                if roots[i] >= self.nnodes or roots[i] < -255:
                    rc = -1
                    break
        if rc:
            raise ValueError("root out of range")
        cols = <Col *>calloc(m, sizeof(Col))
        saved = <int64_t *>malloc(m * sizeof(int64_t) + 8)
        if cols == NULL or saved == NULL:
            free(cols)
            free(saved)
            raise MemoryError()
        try:
            init = max(16, n - start)
            for k in range(m):
                cols[k].kind = <int32_t>self.columns[k, 0]
                cols[k].width = <int32_t>self.columns[k, 1]
                cols[k].child0 = <int32_t>self.columns[k, 2]
                cols[k].nchild = <int32_t>self.columns[k, 3]
                cols[k].nullable = self.columns[k, 4] != 0
                if cols[k].kind != K_NULL:
                    if grow(&cols[k], init):
                        raise MemoryError()
                if cols[k].kind == K_VAR or cols[k].kind == K_LIST or cols[k].kind == K_MAP:
                    cols[k].offs[0] = 0
                if cols[k].kind == K_VAR and grow_data(&cols[k], 64):
                    raise MemoryError()
            x.nodes = self.nodes
            x.table = self.table
            x.consts = self.consts
            x.bounds = self.bounds
            x.cols = cols
            x.col_children = self.col_children
            x.zero_cap = zero_cap
            x.ncols = m
            top = &cols[self.top]
            i = start
            with nogil:
                while i < n:
                    r = roots[i]
                    if r < 0:
                        if r < -1 and push_err(&errs, i, -r, 0, 0, 0):
                            status = E_NOMEM
                            break
                        rc = put_null(&x, self.top)
                        if rc:
                            status = rc
                            break
                        i += 1
                        continue
                    for k in range(m):
                        saved[k] = cols[k].length
                    row_span(rows, i, &x.vstart, &end)
                    p = x.vstart + skip_bytes
                    x.zero_items = 0
                    x.soft.n = 0
                    if p > end:
                        rc = fail(&x, r, end, E_TRUNCATED, 0)
                    else:
                        rc = run(&x, r, &p, end, 0)
                        if rc == E_NONE and top.length != i - start + 1:
                            rc = fail(&x, r, p, E_RESOLVE, -1)     # a plan that did not write one row
                        if rc == E_NONE and p != end:
                            if trailing_error:
                                rc = fail(&x, r, p, E_TRAILING, end - p)
                            else:
                                trailing += 1
                    if rc == E_NONE:
                        if x.soft.n and push_err(&errs, i, x.soft.code + AC_FIELD, x.soft.pos, x.soft.where,
                                                 x.soft.detail, x.soft.n - 1):
                            status = E_NOMEM
                            break
                        i += 1
                        continue
                    # roll every column back to the row's start
                    for k in range(m):
                        b = saved[k]
                        e = cols[k].length
                        if cols[k].kind != K_NULL:
                            while b < e:         # placeholders of the failed row may have cleared bits
                                cols[k].valid[b >> 3] |= <uint8_t>(1 << (b & 7))
                                b += 1
                        cols[k].length = saved[k]   # (string data ends at offs[length]: nothing more)
                    if rc == E_FULL and i > start:
                        status = E_FULL
                        break
                    if rc == E_NOMEM:
                        status = E_NOMEM
                        break
                    if rc == E_FULL:
                        rc = E_TOO_LARGE
                        x.err_pos = 0
                        x.err_detail = 0
                        x.err_node = r
                    if push_err(&errs, i, rc, x.err_pos, x.err_node, x.err_detail):
                        status = E_NOMEM
                        break
                    rc = put_null(&x, self.top)
                    if rc:
                        status = rc
                        break
                    i += 1
            if status == E_NOMEM:
                raise MemoryError("out of memory while decoding Avro values")
            out = []
            for k in range(m):
                out.append(self._column(&cols[k]))
            return (STATUS_FULL if status == E_FULL else STATUS_OK, i, out, trailing, _errs(&errs))
        finally:
            for k in range(m):
                free(cols[k].valid)
                free(cols[k].data)
                free(cols[k].offs)
            free(cols)
            free(saved)
            free(errs.row)
            free(errs.code)
            free(errs.pos)
            free(errs.node)
            free(errs.detail)
            free(errs.more)

    cdef tuple _column(self, Col *c):
        cdef int64_t nbits = (c.length + 7) >> 3
        cdef int64_t nulls = 0
        cdef object valid = None, data = None, offs = None
        if c.kind == K_NULL:
            return (c.length, c.length, None, None, None)
        if c.nullable:
            nulls = c.length - popcount(c.valid, c.length)
        if nulls:
            valid = _own(&c.valid, nbits)
        if c.kind == K_FIXED:
            data = _own(&c.data, c.length * c.width)
        elif c.kind == K_BOOL:
            data = _own(&c.data, nbits)
        elif c.kind == K_VAR:
            data = _own(&c.data, c.offs[c.length])
        if c.kind == K_VAR or c.kind == K_LIST or c.kind == K_MAP:
            offs = _own(<uint8_t **>&c.offs, (c.length + 1) * 4)
        return (c.length, nulls, valid, data, offs)


def frame(const int64_t[::1] offsets, const uint8_t[::1] data, const uint8_t[::1] validity=None,
          int64_t bit_offset=0):
    """`frame_rows` of a contiguous binary column (offsets: n + 1 int64 into data)."""
    return frame_rows(Source(offsets, data), validity, bit_offset)


def frame_rows(Source source, const uint8_t[::1] validity=None, int64_t bit_offset=0):
    """The Confluent framing of every value of a `Source`: 0x00, big-endian int32 schema id, payload.

    validity: Arrow validity bits (None: no null), starting at bit `bit_offset`.

    Returns (ids, slots, uniq): ids int32 per row (0 where unframed); slots int32 per row: the
    index of the row's id in `uniq` (distinct ids in order of first appearance), -1 for a null
    value, -F_* for a framing error.
    """
    cdef int64_t n = source.rows.n, i, length, h
    cdef int64_t cap = 64, used = 0, k
    ids_a = np.zeros(max(n, 0), np.int32)
    slots_a = np.empty(max(n, 0), np.int32)
    cdef int32_t[::1] ids = ids_a
    cdef int32_t[::1] slots = slots_a
    cdef const Rows *rows = &source.rows
    cdef const uint8_t *v
    cdef const uint8_t *vend
    cdef const uint8_t *bits = NULL
    cdef int64_t *keys = NULL
    cdef int32_t *vals = NULL
    cdef int64_t *order = NULL
    cdef int64_t *nk
    cdef int32_t *nv
    cdef int32_t sid
    cdef bint nomem = False
    if validity is not None:
        if validity.shape[0] * 8 < bit_offset + n:
            raise ValueError("validity shorter than the column")
        bits = &validity[0] if validity.shape[0] else NULL
    keys = <int64_t *>malloc(cap * sizeof(int64_t))
    vals = <int32_t *>malloc(cap * sizeof(int32_t))
    order = <int64_t *>malloc((cap // 2 + 1) * sizeof(int64_t))
    try:
        if keys == NULL or vals == NULL or order == NULL:
            raise MemoryError()
        with nogil:
            for k in range(cap):
                keys[k] = -1
            for i in range(n):
                if bits != NULL and not (bits[(bit_offset + i) >> 3] >> ((bit_offset + i) & 7)) & 1:
                    slots[i] = -1
                    continue
                row_span(rows, i, &v, &vend)
                length = vend - v
                if length < 1 or (v[0] != 0 and v[0] != 1):
                    slots[i] = -F_NO_MAGIC
                    continue
                if v[0] == 1:
                    slots[i] = -F_GUID
                    continue
                if length < 5:
                    slots[i] = -F_SHORT
                    continue
                sid = <int32_t>((<uint32_t>v[1] << 24) | (<uint32_t>v[2] << 16) | (<uint32_t>v[3] << 8) | v[4])
                ids[i] = sid
                # open addressing on the id (a handful of distinct ids per column, as a rule)
                h = (<uint32_t>sid * 2654435761u) & (cap - 1)
                while keys[h] != -1 and keys[h] != <int64_t><uint32_t>sid:
                    h = (h + 1) & (cap - 1)
                if keys[h] == -1:
                    if used + 1 > cap // 2:
                        # grow: rehash the ids seen (their slots are their order of appearance)
                        nk = <int64_t *>malloc(2 * cap * sizeof(int64_t))
                        nv = <int32_t *>malloc(2 * cap * sizeof(int32_t))
                        if nk == NULL or nv == NULL:
                            free(nk)
                            free(nv)
                            nomem = True
                            break
                        free(order)
                        order = <int64_t *>malloc((cap + 1) * sizeof(int64_t))
                        if order == NULL:
                            free(nk)
                            free(nv)
                            nomem = True
                            break
                        for k in range(2 * cap):
                            nk[k] = -1
                        for k in range(cap):
                            if keys[k] != -1:
                                h = (<uint32_t>keys[k] * 2654435761u) & (2 * cap - 1)
                                while nk[h] != -1:
                                    h = (h + 1) & (2 * cap - 1)
                                nk[h] = keys[k]
                                nv[h] = vals[k]
                                order[vals[k]] = keys[k]
                        free(keys)
                        free(vals)
                        keys, vals = nk, nv
                        cap *= 2
                        h = (<uint32_t>sid * 2654435761u) & (cap - 1)
                        while keys[h] != -1:
                            h = (h + 1) & (cap - 1)
                    keys[h] = <int64_t><uint32_t>sid
                    vals[h] = <int32_t>used
                    order[used] = <int64_t><uint32_t>sid
                    used += 1
                slots[i] = vals[h]
        if nomem:
            raise MemoryError()
        uniq = np.empty(used, np.int32)
        for k in range(used):
            uniq[k] = <int32_t><uint32_t>order[k]
        return ids_a, slots_a, uniq
    finally:
        free(keys)
        free(vals)
        free(order)


def gather(Source source):
    """The values of a `Source` one after the other: (offsets, data) as NumPy arrays -- int32 offsets,
    int64 past 2 GiB -- i.e. a binary_view column made contiguous (a null value is empty here: the
    caller keeps the validity)."""
    cdef int64_t n = source.rows.n, i, total = 0
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef uint8_t *out
    cdef int32_t[::1] o32
    cdef int64_t[::1] o64
    with nogil:
        for i in range(n):
            row_span(&source.rows, i, &p, &end)
            total += end - p
    data_a = np.empty(total, np.uint8)
    cdef uint8_t[::1] data = data_a
    big = total > INT32_MAX
    offs_a = np.empty(n + 1, np.int64 if big else np.int32)
    out = &data[0] if total else NULL
    total = 0
    if big:
        o64 = offs_a
        with nogil:
            o64[0] = 0
            for i in range(n):
                row_span(&source.rows, i, &p, &end)
                if end > p:
                    memcpy(out + total, p, end - p)
                total += end - p
                o64[i + 1] = total
    else:
        o32 = offs_a
        with nogil:
            o32[0] = 0
            for i in range(n):
                row_span(&source.rows, i, &p, &end)
                if end > p:
                    memcpy(out + total, p, end - p)
                total += end - p
                o32[i + 1] = <int32_t>total
    return offs_a, data_a


def utf8_valid(const uint8_t[::1] data):
    """True when data is strict UTF-8 (the kernel's check, for tests)."""
    return utf8_ok(&data[0] if data.shape[0] else <const uint8_t *>"", data.shape[0])


# ------------------------------------------------------------------------------------------------
# Avro values as JSON text (kafka-avro-console-consumer's), from their Arrow columns

cdef extern from "stdio.h":
    int snprintf(char *buf, size_t n, const char *fmt, ...) nogil

cdef extern from "stdlib.h":
    double strtod(const char *s, char **end) nogil
    float strtof(const char *s, char **end) nogil

cdef extern from "math.h":
    bint isnan(double x) nogil
    bint isinf(double x) nogil
    bint signbit(double x) nogil
    double floor(double x) nogil

cdef extern from "Python.h":
    # repr()'s shortest round-trip digits (David Gay's dtoa): called with the GIL held (avro_text holds it)
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags, int *ptype) nogil
    void PyMem_Free(void *p) nogil

# text node kinds (kafkafmt.values.avro._json compiles them from the reader schema and the Arrow type)
cdef enum:
    T_NULL = 0
    T_BOOL = 1
    T_I32 = 2             # int, date, time-millis (their numbers)
    T_I64 = 3             # long, timestamps, time-micros
    T_F32 = 4             # Java's Float.toString
    T_F64 = 5             # Java's Double.toString
    T_STR = 6             # a JSON string as Jackson writes it
    T_BYTES = 7           # bytes / fixed: code points 0-255 (width > 0: fixed)
    T_ENUM = 8            # int32 indices into the symbols' texts
    T_REC = 9             # children in order, each with its key text
    T_ARR = 10            # int32 offsets, one child
    T_MAP = 11            # int32 offsets, key child (string), value child
    T_WRAP = 12           # a union's one non-null branch: {"name": child}, the same rows
    T_RAW = 13            # a string holding JSON text (a record past the reader's depth), as it is

TEXT_KINDS = dict(T_NULL=T_NULL, T_BOOL=T_BOOL, T_I32=T_I32, T_I64=T_I64, T_F32=T_F32, T_F64=T_F64, T_STR=T_STR,
                  T_BYTES=T_BYTES, T_ENUM=T_ENUM, T_REC=T_REC, T_ARR=T_ARR, T_MAP=T_MAP, T_WRAP=T_WRAP, T_RAW=T_RAW)


cdef struct TNode:
    int32_t kind
    int32_t child0           # first child in the children table
    int32_t nchild
    int32_t width            # T_BYTES: fixed size (0: variable)
    const uint8_t *valid     # NULL: none null
    int64_t offset           # the array's offset (rows and validity bits)
    const uint8_t *data      # values (fixed width), or string / binary data
    const int32_t *offs      # string, binary, list, map offsets
    const uint8_t *key       # a T_REC child: '"name":'
    int64_t nkey
    const uint8_t *text      # T_WRAP: '{"name":'; T_ENUM: the symbols' texts
    int64_t ntext
    const int64_t *text_offs # T_ENUM: offsets of each symbol's text


cdef struct Out:
    uint8_t *buf
    int64_t len
    int64_t cap


cdef int out_grow(Out *o, int64_t need) noexcept nogil:
    cdef int64_t ncap = o.cap * 2 if o.cap else 4096
    cdef void *p
    while ncap < o.len + need:
        ncap *= 2
    p = realloc(o.buf, ncap)
    if p == NULL:
        return E_NOMEM
    o.buf = <uint8_t *>p
    o.cap = ncap
    return E_NONE


cdef inline int out_put(Out *o, const uint8_t *s, int64_t n) noexcept nogil:
    if o.len + n > o.cap and out_grow(o, n):
        return E_NOMEM
    memcpy(o.buf + o.len, s, n)
    o.len += n
    return E_NONE


cdef const char *HEX = "0123456789ABCDEF"


cdef inline int fmt_int(char *buf, int64_t v) noexcept nogil:
    """v in decimal into buf (at least 21 bytes); returns the length."""
    cdef char tmp[24]
    cdef int n = 0, k = 0
    cdef uint64_t u = <uint64_t>v
    if v < 0:
        buf[0] = 45
        k = 1
        u = <uint64_t>0 - u
    while True:
        tmp[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    while n:
        n -= 1
        buf[k] = tmp[n]
        k += 1
    return k


cdef int put_json_string(Out *o, const uint8_t *s, int64_t n, bint latin1) noexcept nogil:
    """s as a JSON string the way Jackson 2's UTF-8 generator writes it: quotes, backslashes and control
    characters escaped (\\u00XX upper case; \\b \\t \\f \\n \\r short), characters beyond the BMP as their
    two UTF-16 surrogates, the rest as UTF-8. latin1: s's bytes are code points 0-255."""
    cdef int64_t i
    cdef uint8_t c
    cdef uint32_t cp, hi, lo
    cdef uint8_t *w
    if o.len + 2 + 6 * n > o.cap and out_grow(o, 2 + 6 * n):
        return E_NOMEM
    w = o.buf + o.len
    w[0] = 34
    w += 1
    i = 0
    while i < n:
        c = s[i]
        if c >= 32 and c != 34 and c != 92 and c < 128:
            w[0] = c
            w += 1
            i += 1
            continue
        if c == 34 or c == 92:
            w[0] = 92
            w[1] = c
            w += 2
            i += 1
            continue
        if c < 32:
            w[0] = 92
            if c == 8 or c == 9 or c == 10 or c == 12 or c == 13:
                w[1] = b"b"[0] if c == 8 else (b"t"[0] if c == 9 else (b"n"[0] if c == 10 else (
                    b"f"[0] if c == 12 else b"r"[0])))
                w += 2
            else:
                w[1] = 117
                w[2] = 48
                w[3] = 48
                w[4] = HEX[c >> 4]
                w[5] = HEX[c & 15]
                w += 6
            i += 1
            continue
        if latin1:                       # a byte >= 0x80: its code point in UTF-8
            w[0] = 0xC0 | (c >> 6)
            w[1] = 0x80 | (c & 0x3F)
            w += 2
            i += 1
            continue
        if c >= 0xF0 and i + 3 < n:      # beyond the BMP: \uD8xx\uDCxx
            cp = ((<uint32_t>(c & 0x07)) << 18) | ((<uint32_t>(s[i + 1] & 0x3F)) << 12) | \
                 ((<uint32_t>(s[i + 2] & 0x3F)) << 6) | (s[i + 3] & 0x3F)
            cp -= 0x10000
            hi = 0xD800 + (cp >> 10)
            lo = 0xDC00 + (cp & 0x3FF)
            w[0] = 92
            w[1] = 117
            w[2] = HEX[(hi >> 12) & 15]
            w[3] = HEX[(hi >> 8) & 15]
            w[4] = HEX[(hi >> 4) & 15]
            w[5] = HEX[hi & 15]
            w[6] = 92
            w[7] = 117
            w[8] = HEX[(lo >> 12) & 15]
            w[9] = HEX[(lo >> 8) & 15]
            w[10] = HEX[(lo >> 4) & 15]
            w[11] = HEX[lo & 15]
            w += 12
            i += 4
            continue
        w[0] = c                         # other UTF-8 bytes as they are
        w += 1
        i += 1
    w[0] = 34
    w += 1
    o.len = w - o.buf
    return E_NONE


cdef bint short_repr(double v, char *buf) noexcept nogil:
    """repr's digits of v into buf when they are at most 6 significant digits."""
    cdef char *r = PyOS_double_to_string(v, 114, 0, 0, NULL)
    cdef int k = 0, nd = 0
    cdef bint lead = True
    if r == NULL:
        return False
    while r[k] != 0 and r[k] != 101 and k < 39:
        if 48 <= r[k] <= 57 and not (lead and r[k] == 48):
            lead = False
            nd += 1
        buf[k] = r[k]
        k += 1
    while r[k] != 0 and k < 39:
        buf[k] = r[k]
        k += 1
    buf[k] = 0
    PyMem_Free(r)
    return nd <= 6                              # (trailing zeros counted: "100.0" takes the slow path)


cdef int java_digits(double v, bint single, char *digits, int *exp10) noexcept nogil:
    """The significant digits (no trailing zeros) and decimal exponent of the first digit of the shortest
    decimal that reads back as v (as a float when single), with Java's rule that one digit becomes the
    closest two-digit decimal that reads back too. Returns the number of digits."""
    cdef char buf[40]
    cdef char *r
    cdef int p, k, nd, e, ip, first_digit
    cdef bint ok
    cdef bint subnormal = v < (1.1754943508222875e-38 if single else 2.2250738585072014e-308)
    if single and not subnormal and short_repr(v, buf):
        pass                                    # at most 6 digits: the only such decimal that is this float
    elif single:                                # (subnormal floats carry fewer digits: from one)
        for p in range(6 if not subnormal else 1, 10):
            snprintf(buf, 40, "%.*e", p - 1, v)
            if strtof(buf, NULL) == <float>v:
                break
    else:                                       # repr's digits ("19.98", "1e+23", "0.0001", "5e-324")
        r = PyOS_double_to_string(v, 114, 0, 0, NULL)
        if r == NULL:
            snprintf(buf, 40, "%.16e", v)
        else:
            k = 0
            while r[k] != 0 and k < 39:
                buf[k] = r[k]
                k += 1
            buf[k] = 0
            PyMem_Free(r)
    # the digits of buf (d.ddde+XX, or repr's forms), without leading and trailing zeros, and the exponent
    nd = 0
    ip = -1                                     # digits before the point
    first_digit = -1
    k = 0
    while buf[k] != 0 and buf[k] != 101:      # 'e'
        if buf[k] == 46:
            ip = nd
        elif buf[k] >= 48 and buf[k] <= 57:
            if first_digit < 0 and buf[k] != 48:
                first_digit = nd
            digits[nd] = buf[k]
            nd += 1
        k += 1
    if ip < 0:
        ip = nd
    e = 0
    if buf[k] == 101:
        e = <int>strtod(buf + k + 1, NULL)
    if first_digit < 0:
        first_digit = 0
    e += ip - 1 - first_digit
    for k in range(first_digit, nd):
        digits[k - first_digit] = digits[k]
    nd -= first_digit
    while nd > 1 and digits[nd - 1] == 48:
        nd -= 1
    if nd == 1 and subnormal:                   # Java: the closest two-digit decimal, when it reads back
                                                # (only values this imprecise have one whose 2nd digit is not 0)
        snprintf(buf, 40, "%.1e", v)
        if single:
            ok = strtof(buf, NULL) == <float>v
        else:
            ok = strtod(buf, NULL) == v
        if ok and buf[2] != 48:
            digits[0] = buf[0]
            digits[1] = buf[2]
            nd = 2
            k = 3
            e = <int>strtod(buf + 4, NULL)
    exp10[0] = e
    return nd


cdef int put_java_number(Out *o, double v, bint single) noexcept nogil:
    """v as Java's Float.toString / Double.toString print it (Java 19+), NaN and the infinities as
    Jackson's strings."""
    cdef char digits[40]
    cdef char text[64]
    cdef int nd, e, n = 0, k
    if isnan(v):
        return out_put(o, <const uint8_t *>'"NaN"', 5)
    if isinf(v):
        return out_put(o, <const uint8_t *>'"Infinity"', 10) if v > 0 else \
            out_put(o, <const uint8_t *>'"-Infinity"', 11)
    if v == 0:
        return out_put(o, <const uint8_t *>"-0.0", 4) if signbit(v) else out_put(o, <const uint8_t *>"0.0", 3)
    if v < 0:
        text[n] = 45
        n += 1
        v = -v
    nd = java_digits(v, single, digits, &e)
    if -3 <= e < 7:
        if e >= 0:
            for k in range(e + 1):
                text[n] = digits[k] if k < nd else 48
                n += 1
            text[n] = 46
            n += 1
            if nd > e + 1:
                for k in range(e + 1, nd):
                    text[n] = digits[k]
                    n += 1
            else:
                text[n] = 48
                n += 1
        else:
            text[n] = 48
            text[n + 1] = 46
            n += 2
            for k in range(-e - 1):
                text[n] = 48
                n += 1
            for k in range(nd):
                text[n] = digits[k]
                n += 1
    else:
        text[n] = digits[0]
        text[n + 1] = 46
        n += 2
        if nd > 1:
            for k in range(1, nd):
                text[n] = digits[k]
                n += 1
        else:
            text[n] = 48
            n += 1
        text[n] = 69
        n += 1 + fmt_int(text + n + 1, e)
    return out_put(o, <const uint8_t *>text, n)


cdef inline bint t_valid(const TNode *t, int64_t i) noexcept nogil:
    cdef int64_t b
    if t.valid == NULL:
        return True
    b = t.offset + i
    return (t.valid[b >> 3] >> (b & 7)) & 1


cdef int put_text(const TNode *nodes, const int32_t *children, int32_t ni, int64_t i, Out *o) noexcept nogil:
    """Row i of node ni as Avro JSON text."""
    cdef const TNode *t = &nodes[ni]
    cdef int64_t j, a, b
    cdef int32_t k, v32
    cdef int64_t v64
    cdef char num[32]
    cdef int n, rc
    cdef float f
    cdef double d
    cdef const TNode *key
    if not t_valid(t, i):
        return out_put(o, <const uint8_t *>"null", 4)
    j = t.offset + i
    if t.kind == T_I64:
        n = fmt_int(num, (<const int64_t *>t.data)[j])
        return out_put(o, <const uint8_t *>num, n)
    if t.kind == T_I32:
        n = fmt_int(num, (<const int32_t *>t.data)[j])
        return out_put(o, <const uint8_t *>num, n)
    if t.kind == T_STR:
        return put_json_string(o, t.data + t.offs[j], t.offs[j + 1] - t.offs[j], False)
    if t.kind == T_RAW:
        return out_put(o, t.data + t.offs[j], t.offs[j + 1] - t.offs[j])
    if t.kind == T_F64:
        return put_java_number(o, (<const double *>t.data)[j], False)
    if t.kind == T_F32:
        return put_java_number(o, (<const float *>t.data)[j], True)
    if t.kind == T_BOOL:
        if (t.data[j >> 3] >> (j & 7)) & 1:
            return out_put(o, <const uint8_t *>"true", 4)
        return out_put(o, <const uint8_t *>"false", 5)
    if t.kind == T_REC:
        if out_put(o, <const uint8_t *>"{", 1):
            return E_NOMEM
        for k in range(t.nchild):
            key = &nodes[children[t.child0 + k]]
            if (k and out_put(o, <const uint8_t *>",", 1)) or out_put(o, key.key, key.nkey):
                return E_NOMEM
            rc = put_text(nodes, children, children[t.child0 + k], i, o)
            if rc:
                return rc
        return out_put(o, <const uint8_t *>"}", 1)
    if t.kind == T_WRAP:
        if out_put(o, t.text, t.ntext):
            return E_NOMEM
        rc = put_text(nodes, children, children[t.child0], i, o)
        if rc:
            return rc
        return out_put(o, <const uint8_t *>"}", 1)
    if t.kind == T_ARR or t.kind == T_MAP:
        a = t.offs[j]
        b = t.offs[j + 1]
        if out_put(o, <const uint8_t *>("[" if t.kind == T_ARR else "{"), 1):
            return E_NOMEM
        while a < b:
            if t.kind == T_MAP:
                key = &nodes[children[t.child0]]
                v64 = key.offset + a
                rc = put_json_string(o, key.data + key.offs[v64], key.offs[v64 + 1] - key.offs[v64], False)
                if rc or out_put(o, <const uint8_t *>":", 1):
                    return E_NOMEM
                rc = put_text(nodes, children, children[t.child0 + 1], a, o)
            else:
                rc = put_text(nodes, children, children[t.child0], a, o)
            if rc:
                return rc
            a += 1
            if a < b and out_put(o, <const uint8_t *>",", 1):
                return E_NOMEM
        return out_put(o, <const uint8_t *>("]" if t.kind == T_ARR else "}"), 1)
    if t.kind == T_ENUM:
        v32 = (<const int32_t *>t.data)[j]
        return out_put(o, t.text + t.text_offs[v32], t.text_offs[v32 + 1] - t.text_offs[v32])
    if t.kind == T_BYTES:
        if t.width:
            return put_json_string(o, t.data + j * t.width, t.width, True)
        return put_json_string(o, t.data + t.offs[j], t.offs[j + 1] - t.offs[j], True)
    return out_put(o, <const uint8_t *>"null", 4)


def avro_text(list nodes, const int32_t[::1] children, int32_t top, int64_t n):
    """Each of n rows of the text plan ``nodes`` (per node: kind, child0, nchild, width, validity, offset,
    data, offsets, key, text, text offsets -- buffers as objects with the buffer protocol, or None) as
    JSON text: (int64 offsets, UTF-8 data) NumPy arrays ("null" where the top node is null)."""
    cdef Py_ssize_t m = len(nodes), k
    cdef TNode *t = <TNode *>calloc(max(1, m), sizeof(TNode))
    cdef Out o
    cdef int64_t i
    cdef int rc = E_NONE
    keep = []
    if t == NULL:
        raise MemoryError()
    memset(&o, 0, sizeof(Out))
    offs_a = np.empty(n + 1, np.int64)
    cdef int64_t[::1] offs = offs_a
    cdef const uint8_t[::1] mv
    cdef const int32_t[::1] mi
    cdef const int64_t[::1] ml
    cdef uint8_t[::1] dv
    try:
        for k in range(m):
            kind, child0, nchild, width, valid, offset, data, offsets, key, text, text_offs = nodes[k]
            t[k].kind = kind
            t[k].child0 = child0
            t[k].nchild = nchild
            t[k].width = width
            t[k].offset = offset
            if valid is not None:
                mv = np.frombuffer(valid, np.uint8)
                keep.append(mv)
                t[k].valid = &mv[0]
            if data is not None:
                mv = np.frombuffer(data, np.uint8)
                keep.append(mv)
                t[k].data = &mv[0] if mv.shape[0] else <const uint8_t *>""
            if offsets is not None:
                mi = np.frombuffer(offsets, np.int32)
                keep.append(mi)
                t[k].offs = &mi[0]
            if key is not None:
                mv = np.frombuffer(key, np.uint8)
                keep.append(mv)
                t[k].key = &mv[0] if mv.shape[0] else <const uint8_t *>""
                t[k].nkey = mv.shape[0]
            if text is not None:
                mv = np.frombuffer(text, np.uint8)
                keep.append(mv)
                t[k].text = &mv[0] if mv.shape[0] else <const uint8_t *>""
                t[k].ntext = mv.shape[0]
            if text_offs is not None:
                ml = np.frombuffer(text_offs, np.int64)
                keep.append(ml)
                t[k].text_offs = &ml[0]
        offs[0] = 0                              # (with the GIL: doubles are printed by repr's dtoa)
        for i in range(n):
            rc = put_text(t, &children[0] if children.shape[0] else NULL, top, i, &o)
            if rc:
                break
            offs[i + 1] = o.len
        if rc:
            raise MemoryError("out of memory while writing Avro values as text")
        data_a = np.empty(o.len, np.uint8)
        dv = data_a
        if o.len:
            memcpy(&dv[0], o.buf, o.len)
        return offs_a, data_a
    finally:
        free(t)
        free(o.buf)
