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

One concern: the interpreter of a plan's nodes over Avro bytes (its reads, checks, skips and
resolutions call one another recursively and are inlined into one loop). The columns are arrowcols'
(every kernel's builder); where values come from, and their framing, kafkafmt._native.framing; their
JSON text, kafkafmt._native.avrotext.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t, INT32_MAX, INT64_MIN
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, free

from kafkafmt._native.arrowcols cimport *
from kafkafmt._native.framing cimport Source, Rows, row_span
from kafkafmt._native.textforms cimport uuid_ok
from kafkafmt._native.arrowcols import TOO_LARGE_TEXT

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
    E_FULL = AC_FULL      # an int32 offset would overflow: stop here, call again
    E_NOMEM = AC_NOMEM

cdef enum:
    NOT_LEAF = -1         # quick(): not a leaf it decodes

cdef enum:
    MAX_DEPTH_ = 64       # nested records/arrays/maps/unions per value


MAX_DEPTH = MAX_DEPTH_

OPS = dict(
    OP_NULL=OP_NULL, OP_BOOL=OP_BOOL, OP_INT=OP_INT, OP_INT_LONG=OP_INT_LONG, OP_INT_FLOAT=OP_INT_FLOAT,
    OP_INT_DOUBLE=OP_INT_DOUBLE, OP_LONG=OP_LONG, OP_LONG_FLOAT=OP_LONG_FLOAT, OP_LONG_DOUBLE=OP_LONG_DOUBLE,
    OP_FLOAT=OP_FLOAT, OP_FLOAT_DOUBLE=OP_FLOAT_DOUBLE, OP_DOUBLE=OP_DOUBLE, OP_STRING=OP_STRING,
    OP_BYTES=OP_BYTES, OP_FIXED=OP_FIXED, OP_DEC_BYTES=OP_DEC_BYTES, OP_DEC_FIXED=OP_DEC_FIXED,
    OP_DURATION=OP_DURATION, OP_ENUM=OP_ENUM, OP_RECORD=OP_RECORD, OP_ARRAY=OP_ARRAY, OP_MAP=OP_MAP,
    OP_UNION=OP_UNION, OP_MEMBER=OP_MEMBER, OP_DEFAULT=OP_DEFAULT, OP_ERROR=OP_ERROR, OP_RAW=OP_RAW, OP_CUT=OP_CUT,
    SK_NONE=SK_NONE, SK_FIXED=SK_FIXED, SK_VARINT=SK_VARINT, SK_BYTES=SK_BYTES,
    SK_RECORD=SK_RECORD, SK_ARRAY=SK_ARRAY, SK_MAP=SK_MAP, SK_UNION=SK_UNION)
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
    (E_TOO_LARGE, "TOO_LARGE", TOO_LARGE_TEXT),
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



cdef struct Ctx:
    const Node *nodes
    const int32_t *table
    const uint8_t *consts
    const uint8_t *bounds    # decimal bounds (little-endian magnitudes)
    Col *cols
    const int32_t *col_children
    Row row               # the value being decoded, its error or the fields it nulls
    # the call
    const Rows *rows
    int64_t skip_bytes       # framing before each value
    bint trailing_error      # bytes after a value: its error (else counted in trailing)
    int64_t trailing
    int32_t top              # the top column: one value a row
    int64_t start
    int64_t zero_items
    int64_t zero_cap
    int64_t ncols



# ------------------------------------------------------------------------------------------------
# columns

cdef inline int put_null(Ctx *x, int32_t ci) noexcept nogil:
    """A placeholder in column ci (see put_null_col)."""
    return put_null_col(x.cols, x.col_children, ci)


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
    """`read_long` near the end of the value: every byte checked against it."""
    cdef const uint8_t *p = pp[0]
    cdef uint64_t u = 0, b
    cdef int shift = 0
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



cdef inline int fail(Ctx *x, int32_t ni, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    return row_fail(&x.row, ni, p, code, detail)


cdef inline int field_null(Ctx *x, int32_t ni, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    """A value node ni's column cannot hold: null in its place and the field named in the row's
    error (a column that cannot be null: the row's error)."""
    return null_field(&x.row, x.cols, x.col_children, x.nodes[ni].col, ni, p, code, detail)


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


cdef inline int branch(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, int64_t *v) noexcept nogil:
    """The branch index of union node ni, checked against its branches."""
    cdef const uint8_t *at = pp[0]
    cdef int rc = read_long(pp, end, v)
    if rc:
        return fail(x, ni, at, rc, 0)
    if v[0] < 0 or v[0] >= x.nodes[ni].b:
        return fail(x, ni, at, E_UNION_INDEX, v[0])
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
        rc = branch(x, ni, pp, end, &v)
        return rc if rc else skip(x, x.table[nd.a + v], pp, end, depth + 1)
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
    cdef int64_t k
    cdef int rc
    if saved == NULL:
        return E_NOMEM
    for k in range(x.ncols):
        saved[k] = x.cols[k].length
    rc = run(x, ni, pp, end, depth)
    restore(x.cols, x.ncols, saved)
    free(saved)
    return rc


cdef int put_cut(Col *c, int32_t which, const uint8_t *s, int64_t n) noexcept nogil:
    """A value kept as its bytes: int32 ``which`` (little-endian), then the n bytes at s."""
    cdef int64_t used = c.offs[c.length]            # (offs holds cap + 1 offsets: this one is there)
    cdef int rc = var_reserve(c, used, 4 + n)
    if rc:
        return rc
    memcpy(c.data + used, &which, 4)
    memcpy(c.data + used + 4, s, n)
    var_close(c, used + 4 + n)
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
        return put_struct(&x.cols[nd.col], True)
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
                    rc = put_struct(child, True)
                    if rc:
                        return rc
        return put_end(c, child.length)
    elif op == OP_UNION:
        rc = branch(x, ni, pp, end, &v)
        return rc if rc else run(x, x.table[nd.a + v], pp, end, depth + 1)
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
        return put_struct(c, True)
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


cdef int read_value(void *ctx, int64_t i, int32_t r, Row *row) noexcept nogil:
    """Row i of the call, its writer's root node r."""
    cdef Ctx *x = <Ctx *>ctx
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef int rc
    row_span(x.rows, i, &row.start, &end)
    p = row.start + x.skip_bytes
    x.zero_items = 0
    if p > end:
        return fail(x, r, end, E_TRUNCATED, 0)
    rc = run(x, r, &p, end, 0)
    if rc == E_NONE and x.cols[x.top].length != i - x.start + 1:
        return fail(x, r, p, E_RESOLVE, -1)     # a plan that did not write one row
    if rc == E_NONE and p != end:
        if x.trailing_error:
            return fail(x, r, p, E_TRAILING, end - p)
        x.trailing += 1
    return rc


# ------------------------------------------------------------------------------------------------

cdef class Program(ColumnPlan):
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
    cdef readonly int32_t top

    def __dealloc__(self):
        free(self.nodes)
        free(self.table)
        free(self.consts)
        free(self.bounds)

    def __init__(self, const int64_t[:, ::1] nodes, const int32_t[::1] table, bytes consts, bytes bounds,
                 const int64_t[:, ::1] columns, const int32_t[::1] col_children, int32_t top):
        self.set_columns(columns, col_children, 0, INT32_MAX)
        if not 0 <= top < self.ncols:
            raise ValueError("top column out of range")
        self.top = top
        self.nnodes = <int32_t>nodes.shape[0]
        # every reference must stay inside the plan: checked once here (_check), not per value
        self.nodes = <Node *>unpack(nodes, "iiiill", sizeof(Node), "nodes")
        self.table = copy_i32(table)
        self.consts = copy_bytes(consts)
        self.bounds = copy_bytes(bounds)
        self._check(table.shape[0], len(consts), len(bounds))

    cdef _check(self, Py_ssize_t ntable, Py_ssize_t nconsts, Py_ssize_t nbounds):
        cdef Py_ssize_t i
        cdef Node *nd
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

        Returns (status, stop, columns, errors, trailing): STATUS_OK, or STATUS_FULL when a
        column's int32 offsets would overflow at row `stop` (rows [start, stop) are in `columns`;
        call again from stop). columns: per column (length, null count, validity, data, offsets),
        buffers as OwnedBuffer or None. errors: the rows with an error, as NumPy arrays (row,
        code, byte position in the value, node, detail, more): a code from FIELD_ERROR (below 64) is
        a row read with that field (and ``more`` others) null. trailing: rows decoded with bytes left
        after the value (when trailing_error is false; else those rows are errors).
        """
        cdef int64_t n = source.rows.n, i
        cdef Ctx x
        cdef Rules rules
        cdef bint bad = False
        if roots.shape[0] < n:
            raise ValueError("per-row arrays shorter than the column")
        if start < 0 or start > n:
            raise ValueError("start out of range")
        with nogil:
            for i in range(start, n):
                if roots[i] >= self.nnodes or roots[i] < -255:
                    bad = True
                    break
        if bad:
            raise ValueError("root out of range")
        rules.too_large, rules.big_node, rules.pre_node, rules.top = E_TOO_LARGE, ROOT_NODE, 0, self.top
        memset(&x, 0, sizeof(Ctx))
        x.nodes, x.table, x.consts, x.bounds = self.nodes, self.table, self.consts, self.bounds
        x.col_children, x.ncols, x.top, x.start, x.zero_cap = self.col_children, self.ncols, self.top, start, zero_cap
        x.rows, x.skip_bytes, x.trailing_error = &source.rows, skip_bytes, trailing_error
        return self.read(read_value, &x, &x.row, &x.cols, &roots[0] if n else NULL, start, n, &rules,
                         "decoding Avro values") + (x.trailing,)
