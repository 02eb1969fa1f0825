# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""JSON kernel: parse a whole column of JSON texts into Arrow buffers in one call, without the GIL,
driven by a plan compiled once from the target Arrow type (kafkafmt.values.json._plan).

The plan is a table of *nodes*, one per value position of the target type (object -> struct,
array -> list, object with any keys -> map, scalars, ...), and a table of object *fields* (name,
node, required). Each row's text is parsed in one pass: an object's keys are matched to its fields
(the next field in order first, then a hash of the names), each value is parsed straight into its
column, fields never seen are null (an error when required); unknown keys are skipped (an error
when the object is closed: ``additionalProperties: false``), or -- an object node with an ``extras``
column -- kept there, key and value as the text has them, as the JSON text of an object (null when
there are none). Every skipped value is still checked, so a row decodes only if it is valid JSON
(as ``json.loads`` reads it: NaN and Infinity accepted) of the right shape.

Per-record errors (the row is rolled back and becomes null): invalid JSON, a value of another type
than the plan's, a missing required field, a null where none is allowed, invalid UTF-8, a bad
escape or lone surrogate, a duplicate key, a bad date-time or base64, nesting deeper than
MAX_DEPTH, text after the value.

A number or date-time its column cannot hold -- an integer beyond the column's bits, a date-time
beyond the range of the column's unit, a decimal beyond 128 bits -- is its field's error: the field
is null, the rest of the value is read, and the row's error names the first such field (code +
FIELD_ERROR) and counts them.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t, INT32_MAX, INT64_MAX, INT64_MIN
from libc.string cimport memcpy, memset, memcmp
from libc.stdlib cimport malloc, calloc, realloc, free, strtod
from libc.math cimport isfinite, floor, NAN, INFINITY
from cpython.buffer cimport PyBuffer_FillInfo

from kafkafmt._native.arrowcols cimport *

# ---- node kinds
cdef enum:
    J_OBJECT = 1          # struct col; fields [a, a + b); c: 1 = closed (unknown keys are errors); extras: the
                          # string col of the unknown keys (an object's JSON text), or -1
    J_ARRAY = 2           # list col; item node a
    J_MAP = 3             # map col; value node a (keys: strings)
    J_STRING = 4          # string col
    J_INT = 5             # K_FIXED col of width 1/2/4/8; c: bits; accepts integral numbers (1.0, 1e2)
    J_UINT = 6            # uint64 / uint32 ...
    J_FLOAT = 7           # width 4 or 8
    J_BOOL = 8
    J_NULL = 9            # K_NULL col: only null
    J_TIMESTAMP = 10      # int64 col: RFC 3339 text (or an integer in the unit); c: nanoseconds per unit
    J_DATE = 11           # date32 col: YYYY-MM-DD (or an integer: days)
    J_ENUM = 12           # int32 col: symbols [a, a + b) in the fields table
    J_RAW = 13            # string col: the value's JSON text as it is
    J_BASE64 = 14         # binary col: base64 text
    J_DECIMAL = 15        # decimal128 col (width 16): base64 big-endian unscaled (Kafka Connect); c: precision

# ---- node flags
cdef enum:
    N_NULL_OK = 1         # a JSON null reads as null

# ---- field flags
cdef enum:
    F_REQUIRED = 1

cdef enum:
    E_NONE = 0
    E_SYNTAX = 1
    E_TYPE = 2
    E_REQUIRED = 3
    E_NULL = 4
    E_RANGE = 5
    E_UTF8 = 6
    E_ESCAPE = 7
    E_DUPLICATE = 8
    E_DATETIME = 9
    E_BASE64 = 10
    E_DECIMAL = 11
    E_DEPTH = 12
    E_TRAILING = 13
    E_UNKNOWN_KEY = 14
    E_ENUM = 15
    E_TOO_LARGE = 16
    E_FULL = 100
    E_NOMEM = 101

cdef enum:
    MAX_DEPTH_ = 100

MAX_DEPTH = MAX_DEPTH_
STATUS_OK, STATUS_FULL = 0, int(E_FULL)
#: added to the error code of a field nulled because its column cannot hold it (the value is read)
FIELD_ERROR = AC_FIELD
KINDS = dict(J_OBJECT=J_OBJECT, J_ARRAY=J_ARRAY, J_MAP=J_MAP, J_STRING=J_STRING, J_INT=J_INT, J_UINT=J_UINT,
             J_FLOAT=J_FLOAT, J_BOOL=J_BOOL, J_NULL=J_NULL, J_TIMESTAMP=J_TIMESTAMP, J_DATE=J_DATE, J_ENUM=J_ENUM,
             J_RAW=J_RAW, J_BASE64=J_BASE64, J_DECIMAL=J_DECIMAL)
COLUMN_KINDS = dict(K_NULL=K_NULL, K_BOOL=K_BOOL, K_FIXED=K_FIXED, K_VAR=K_VAR, K_LIST=K_LIST, K_STRUCT=K_STRUCT,
                    K_MAP=K_MAP)
NODE_FLAGS = dict(N_NULL_OK=N_NULL_OK)
FIELD_FLAGS = dict(F_REQUIRED=F_REQUIRED)

_ERROR_TABLE = (
    (E_SYNTAX, "SYNTAX", "invalid JSON"),
    (E_TYPE, "TYPE", "{detail} where the schema has {expected}"),
    (E_REQUIRED, "REQUIRED", "required field missing"),
    (E_NULL, "NULL", "null where the schema allows none"),
    (E_RANGE, "RANGE", "value out of range for {expected}"),
    (E_UTF8, "UTF8", "text is not valid UTF-8"),
    (E_ESCAPE, "ESCAPE", "invalid escape (or a lone surrogate) in a string"),
    (E_DUPLICATE, "DUPLICATE", "duplicate key"),
    (E_DATETIME, "DATETIME", "not an RFC 3339 date-time / date (or a date outside the column's range)"),
    (E_BASE64, "BASE64", "invalid base64"),
    (E_DECIMAL, "DECIMAL", "decimal does not fit {expected}"),
    (E_DEPTH, "DEPTH", "nesting deeper than {depth}"),
    (E_TRAILING, "TRAILING", "text after the JSON value"),
    (E_UNKNOWN_KEY, "UNKNOWN_KEY", "key not allowed by the schema (additionalProperties: false)"),
    (E_ENUM, "ENUM", "value not in the schema's enum"),
    (E_TOO_LARGE, "TOO_LARGE", "the value alone needs more than 2 GiB in one Arrow column"),
)
#: error code -> (name, message template)
ERROR_INFO = {int(code): (name, text) for code, name, text in _ERROR_TABLE}
#: JSON value types named in E_TYPE's detail
VALUE_TYPES = ("?", "an object", "an array", "a string", "a number", "true/false", "null")


cdef struct Node:
    int32_t kind
    int32_t col
    int32_t a
    int32_t b
    int64_t c
    int32_t flags
    int32_t hash_off      # J_OBJECT: field-name hash table in the table (size b * 2 rounded to a power of 2)
    int32_t hash_len
    int32_t extras        # J_OBJECT: the column of the keys outside its fields, or -1


cdef struct Field:
    int64_t name_off      # in names
    int32_t name_len
    int32_t node
    int32_t flags


cdef struct Ctx:
    const Node *nodes
    const Field *fields
    const int32_t *table
    const uint8_t *names
    Col *cols
    const int32_t *col_children
    uint8_t *seen         # per object being parsed: one byte per field (a stack)
    int64_t seen_top
    int64_t seen_cap
    uint8_t *scratch      # unescaped keys
    int64_t scratch_cap
    int64_t *hashes       # map-key dedupe
    int64_t hashes_cap
    const uint8_t *vstart
    int64_t err_pos
    int64_t err_detail
    int32_t err_node
    Soft soft             # fields of the row nulled (their columns cannot hold them)


cdef inline int fail(Ctx *x, int32_t ni, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    x.err_node = ni
    x.err_pos = p - x.vstart
    x.err_detail = detail
    return code


cdef int field_null(Ctx *x, int32_t ni, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    """A value node ni's column cannot hold: null in its place and the field named in the row's
    error (a column that cannot be null: the row's error)."""
    cdef int rc = null_field(x.cols, x.col_children, &x.soft, x.nodes[ni].col, ni, p - x.vstart, code, detail)
    return fail(x, ni, p, code, detail) if rc < 0 else rc


cdef int put_extra(Col *c, int64_t *used, const uint8_t *k, int64_t kn, const uint8_t *v, int64_t vn) noexcept nogil:
    """Append ``,"key":value`` (``{`` before the first) to the value being built in c (its bytes from
    c.offs[c.length] to *used), key and value as the text has them."""
    cdef int64_t need = used[0] + kn + vn + 2
    if need > INT32_MAX:
        return AC_FULL
    if need > c.data_cap and grow_data(c, need):
        return AC_NOMEM
    c.data[used[0]] = 123 if used[0] == c.offs[c.length] else 44
    memcpy(c.data + used[0] + 1, k, kn)
    c.data[used[0] + 1 + kn] = 58
    memcpy(c.data + used[0] + 2 + kn, v, vn)
    used[0] = need
    return AC_OK

cdef inline const uint8_t *ws(const uint8_t *p, const uint8_t *end) noexcept nogil:
    while p < end and (p[0] == 32 or p[0] == 10 or p[0] == 13 or p[0] == 9):
        p += 1
    return p


cdef inline int type_of(uint8_t c) noexcept nogil:
    """The JSON value type a first byte starts (VALUE_TYPES), 0 for none."""
    if c == 123:
        return 1
    if c == 91:
        return 2
    if c == 34:
        return 3
    if c == 45 or (48 <= c <= 57) or c == 78 or c == 73:    # -, digits, NaN, Infinity
        return 4
    if c == 116 or c == 102:
        return 5
    if c == 110:
        return 6
    return 0


cdef inline int hexval(uint8_t c) noexcept nogil:
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


cdef int scan_string(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, const uint8_t **s,
                     int64_t *n, bint *escaped) noexcept nogil:
    """A string token at *pp (the opening quote): its raw body [s, s + n), whether it has escapes;
    checks control characters, escapes and UTF-8."""
    cdef const uint8_t *p = pp[0] + 1
    cdef const uint8_t *start = p
    cdef const uint8_t *run = p
    cdef uint8_t c
    cdef int k
    cdef uint64_t w
    escaped[0] = False
    while True:
        # 8 plain ASCII bytes at a time (no quote, backslash, control or high byte)
        while p + 8 <= end:
            memcpy(&w, p, 8)
            if ((w - 0x2020202020202020ULL) | w | ((w ^ 0x2222222222222222ULL) - 0x0101010101010101ULL)
                    | ((w ^ 0x5C5C5C5C5C5C5C5CULL) - 0x0101010101010101ULL)) & 0x8080808080808080ULL:
                break
            p += 8
        if p >= end:
            return fail(x, ni, pp[0], E_SYNTAX, 0)
        c = p[0]
        if c == 34:
            break
        if c < 32:
            return fail(x, ni, p, E_SYNTAX, 0)
        if c == 92:
            escaped[0] = True
            if p + 1 >= end:
                return fail(x, ni, p, E_SYNTAX, 0)
            c = p[1]
            if c == 117:
                if p + 6 > end:
                    return fail(x, ni, p, E_ESCAPE, 0)
                for k in range(2, 6):
                    if hexval(p[k]) < 0:
                        return fail(x, ni, p, E_ESCAPE, 0)
                p += 6
            elif c == 34 or c == 92 or c == 47 or c == 98 or c == 102 or c == 110 or c == 114 or c == 116:
                p += 2
            else:
                return fail(x, ni, p, E_ESCAPE, 0)
            continue
        if c >= 0x80:
            run = p
            while p < end and p[0] >= 0x80:
                p += 1
            if not utf8_ok(run, p - run):
                return fail(x, ni, run, E_UTF8, 0)
            continue
        p += 1
    s[0] = start
    n[0] = p - start
    pp[0] = p + 1
    return E_NONE


cdef int unescape(Ctx *x, int32_t ni, const uint8_t *s, int64_t n, uint8_t *out, int64_t *outn) noexcept nogil:
    """The UTF-8 bytes of a string body with escapes (out holds at least n bytes: escapes only shrink)."""
    cdef int64_t i = 0, o = 0
    cdef uint32_t cp, lo
    cdef uint8_t c
    while i < n:
        c = s[i]
        if c != 92:
            out[o] = c
            o += 1
            i += 1
            continue
        c = s[i + 1]
        if c == 117:
            cp = (hexval(s[i + 2]) << 12) | (hexval(s[i + 3]) << 8) | (hexval(s[i + 4]) << 4) | hexval(s[i + 5])
            i += 6
            if 0xD800 <= cp <= 0xDBFF:
                if i + 6 > n or s[i] != 92 or s[i + 1] != 117:
                    return fail(x, ni, s + i, E_ESCAPE, 0)
                lo = (hexval(s[i + 2]) << 12) | (hexval(s[i + 3]) << 8) | (hexval(s[i + 4]) << 4) | hexval(s[i + 5])
                if not 0xDC00 <= lo <= 0xDFFF:
                    return fail(x, ni, s + i, E_ESCAPE, 0)
                i += 6
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
            elif 0xDC00 <= cp <= 0xDFFF:
                return fail(x, ni, s + i - 6, E_ESCAPE, 0)
            if cp < 0x80:
                out[o] = <uint8_t>cp
                o += 1
            elif cp < 0x800:
                out[o] = <uint8_t>(0xC0 | (cp >> 6))
                out[o + 1] = <uint8_t>(0x80 | (cp & 0x3F))
                o += 2
            elif cp < 0x10000:
                out[o] = <uint8_t>(0xE0 | (cp >> 12))
                out[o + 1] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
                out[o + 2] = <uint8_t>(0x80 | (cp & 0x3F))
                o += 3
            else:
                out[o] = <uint8_t>(0xF0 | (cp >> 18))
                out[o + 1] = <uint8_t>(0x80 | ((cp >> 12) & 0x3F))
                out[o + 2] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
                out[o + 3] = <uint8_t>(0x80 | (cp & 0x3F))
                o += 4
            continue
        if c == 110:
            out[o] = 10
        elif c == 116:
            out[o] = 9
        elif c == 114:
            out[o] = 13
        elif c == 98:
            out[o] = 8
        elif c == 102:
            out[o] = 12
        else:
            out[o] = c            # " \ /
        o += 1
        i += 2
    outn[0] = o
    return E_NONE


cdef int put_string(Ctx *x, int32_t ni, Col *c, const uint8_t **pp, const uint8_t *end) noexcept nogil:
    """A string token straight into a string/binary column (unescaped)."""
    cdef const uint8_t *s
    cdef int64_t n, used, o
    cdef bint esc
    cdef int rc = scan_string(x, ni, pp, end, &s, &n, &esc)
    if rc:
        return rc
    if not esc:
        return put_bytes(c, s, n)
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    used = c.offs[c.length]
    if used + n > INT32_MAX:
        return E_FULL
    if used + n > c.data_cap and grow_data(c, used + n):
        return E_NOMEM
    rc = unescape(x, ni, s, n, c.data + used, &o)
    if rc:
        return rc
    c.length += 1
    c.offs[c.length] = <int32_t>(used + o)
    return E_NONE


cdef int number_token(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, bint *integral,
                      bint *special) noexcept nogil:
    """Check a number token (JSON's grammar, plus NaN / Infinity / -Infinity as json.loads reads them)."""
    cdef const uint8_t *p = pp[0]
    integral[0] = True
    special[0] = False
    if p < end and p[0] == 45:
        p += 1
    if end - p >= 8 and memcmp(p, b"Infinity", 8) == 0:
        special[0] = True
        integral[0] = False
        pp[0] = p + 8
        return E_NONE
    if p == pp[0] and end - p >= 3 and memcmp(p, b"NaN", 3) == 0:
        special[0] = True
        integral[0] = False
        pp[0] = p + 3
        return E_NONE
    if p >= end or not (48 <= p[0] <= 57):
        return fail(x, ni, pp[0], E_SYNTAX, 0)
    if p[0] == 48:
        p += 1
    else:
        while p < end and 48 <= p[0] <= 57:
            p += 1
    if p < end and p[0] == 46:
        integral[0] = False
        p += 1
        if p >= end or not (48 <= p[0] <= 57):
            return fail(x, ni, pp[0], E_SYNTAX, 0)
        while p < end and 48 <= p[0] <= 57:
            p += 1
    if p < end and (p[0] == 101 or p[0] == 69):
        integral[0] = False
        p += 1
        if p < end and (p[0] == 43 or p[0] == 45):
            p += 1
        if p >= end or not (48 <= p[0] <= 57):
            return fail(x, ni, pp[0], E_SYNTAX, 0)
        while p < end and 48 <= p[0] <= 57:
            p += 1
    pp[0] = p
    return E_NONE


cdef double to_double(const uint8_t *s, int64_t n) noexcept nogil:
    """strtod of a checked number token (NaN / Infinity spelled as json.loads spells them)."""
    cdef char buf[128]
    cdef char *heap = NULL
    cdef char *b = buf
    cdef double d
    if n > 0 and (s[n - 1] == 78 or s[n - 1] == 121):     # NaN, Infinity
        if s[0] == 78:
            return NAN
        return -INFINITY if s[0] == 45 else INFINITY
    if n >= 127:
        heap = <char *>malloc(n + 1)
        if heap == NULL:
            return NAN
        b = heap
    memcpy(b, s, n)
    b[n] = 0
    d = strtod(b, NULL)
    free(heap)
    return d


cdef int skip(Ctx *x, const uint8_t **pp, const uint8_t *end, int depth) noexcept nogil:
    """Check and skip one JSON value (whitespace before it skipped by the caller)."""
    cdef const uint8_t *p = pp[0]
    cdef const uint8_t *s
    cdef int64_t n
    cdef bint esc, integral, special
    cdef int rc
    if p >= end:
        return fail(x, -1, p, E_SYNTAX, 0)
    if depth > MAX_DEPTH_:
        return fail(x, -1, p, E_DEPTH, 0)
    if p[0] == 34:
        return scan_string(x, -1, pp, end, &s, &n, &esc)
    if p[0] == 123 or p[0] == 91:
        if p[0] == 123:
            p = ws(p + 1, end)
            if p < end and p[0] == 125:
                pp[0] = p + 1
                return E_NONE
            while True:
                if p >= end or p[0] != 34:
                    return fail(x, -1, p, E_SYNTAX, 0)
                rc = scan_string(x, -1, &p, end, &s, &n, &esc)
                if rc:
                    return rc
                p = ws(p, end)
                if p >= end or p[0] != 58:
                    return fail(x, -1, p, E_SYNTAX, 0)
                p = ws(p + 1, end)
                rc = skip(x, &p, end, depth + 1)
                if rc:
                    return rc
                p = ws(p, end)
                if p < end and p[0] == 44:
                    p = ws(p + 1, end)
                    continue
                if p < end and p[0] == 125:
                    pp[0] = p + 1
                    return E_NONE
                return fail(x, -1, p, E_SYNTAX, 0)
        p = ws(p + 1, end)
        if p < end and p[0] == 93:
            pp[0] = p + 1
            return E_NONE
        while True:
            rc = skip(x, &p, end, depth + 1)
            if rc:
                return rc
            p = ws(p, end)
            if p < end and p[0] == 44:
                p = ws(p + 1, end)
                continue
            if p < end and p[0] == 93:
                pp[0] = p + 1
                return E_NONE
            return fail(x, -1, p, E_SYNTAX, 0)
    if p[0] == 116 and end - p >= 4 and memcmp(p, b"true", 4) == 0:
        pp[0] = p + 4
        return E_NONE
    if p[0] == 102 and end - p >= 5 and memcmp(p, b"false", 5) == 0:
        pp[0] = p + 5
        return E_NONE
    if p[0] == 110 and end - p >= 4 and memcmp(p, b"null", 4) == 0:
        pp[0] = p + 4
        return E_NONE
    return number_token(x, -1, pp, end, &integral, &special)


cdef inline uint64_t name_hash(const uint8_t *s, int64_t n) noexcept nogil:
    cdef uint64_t h = 1469598103934665603ULL
    cdef int64_t i
    for i in range(n):
        h = (h ^ s[i]) * 1099511628211ULL
    return h


cdef int32_t find_field(Ctx *x, const Node *nd, const uint8_t *k, int64_t kn, int32_t guess) noexcept nogil:
    """The field (index in the object) named k, or -1: the guess (the field after the last one
    matched) first, then the object's hash table."""
    cdef const Field *f
    cdef uint64_t h
    cdef int64_t slot, mask
    cdef int32_t fi
    if 0 <= guess < nd.b:
        f = &x.fields[nd.a + guess]
        if f.name_len == kn and memcmp(x.names + f.name_off, k, kn) == 0:
            return guess
    if nd.hash_len == 0:
        return -1
    mask = nd.hash_len - 1
    slot = <int64_t>(name_hash(k, kn) & <uint64_t>mask)
    while True:
        fi = x.table[nd.hash_off + slot]
        if fi < 0:
            return -1
        f = &x.fields[nd.a + fi]
        if f.name_len == kn and memcmp(x.names + f.name_off, k, kn) == 0:
            return fi
        slot = (slot + 1) & mask


cdef int key_bytes(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, const uint8_t **k,
                   int64_t *kn) noexcept nogil:
    """An object key: its bytes (unescaped into scratch when it has escapes)."""
    cdef const uint8_t *s
    cdef int64_t n
    cdef bint esc
    cdef void *mem
    cdef int rc = scan_string(x, ni, pp, end, &s, &n, &esc)
    if rc:
        return rc
    if not esc:
        k[0] = s
        kn[0] = n
        return E_NONE
    if n > x.scratch_cap:
        mem = realloc(x.scratch, n + 64)
        if mem == NULL:
            return E_NOMEM
        x.scratch = <uint8_t *>mem
        x.scratch_cap = n + 64
    rc = unescape(x, ni, s, n, x.scratch, kn)
    k[0] = x.scratch
    return rc


cdef int parse_object(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, int depth) noexcept nogil:
    cdef const Node *nd = &x.nodes[ni]
    cdef const uint8_t *p = ws(pp[0] + 1, end)
    cdef const uint8_t *k
    cdef const uint8_t *token
    cdef const uint8_t *kend
    cdef const uint8_t *v
    cdef int64_t kn, base = x.seen_top, i, used = 0
    cdef int32_t fi, guess = 0
    cdef const Field *f
    cdef Col *ex = NULL
    cdef int rc = E_NONE
    cdef void *mem
    if nd.extras >= 0:
        ex = &x.cols[nd.extras]
        if ex.length >= ex.cap and grow(ex, ex.length + 1):
            return E_NOMEM
        used = ex.offs[ex.length]           # (the keys outside the fields: the bytes from here)
    if base + nd.b > x.seen_cap:
        mem = realloc(x.seen, (base + nd.b) * 2 + 64)
        if mem == NULL:
            return E_NOMEM
        x.seen = <uint8_t *>mem
        x.seen_cap = (base + nd.b) * 2 + 64
    memset(x.seen + base, 0, nd.b)
    x.seen_top = base + nd.b
    if p < end and p[0] == 125:
        p += 1
    else:
        while True:
            if p >= end or p[0] != 34:
                rc = fail(x, ni, p, E_SYNTAX, 0)
                break
            token = p
            rc = key_bytes(x, ni, &p, end, &k, &kn)
            if rc:
                break
            kend = p
            p = ws(p, end)
            if p >= end or p[0] != 58:
                rc = fail(x, ni, p, E_SYNTAX, 0)
                break
            p = ws(p + 1, end)
            fi = find_field(x, nd, k, kn, guess)
            if fi < 0:
                if nd.c & 1:
                    rc = fail(x, ni, p, E_UNKNOWN_KEY, 0)
                    break
                v = p
                rc = skip(x, &p, end, depth + 1)
                if rc == E_NONE and ex != NULL:
                    rc = put_extra(ex, &used, token, kend - token, v, p - v)
            elif x.seen[base + fi]:
                rc = fail(x, ni, p, E_DUPLICATE, 0)
            else:
                x.seen[base + fi] = 1
                rc = parse_value(x, x.fields[nd.a + fi].node, &p, end, depth + 1)
                guess = fi + 1
            if rc:
                break
            p = ws(p, end)
            if p < end and p[0] == 44:
                p = ws(p + 1, end)
                continue
            if p < end and p[0] == 125:
                p += 1
                break
            rc = fail(x, ni, p, E_SYNTAX, 0)
            break
    if rc == E_NONE:
        for i in range(nd.b):
            if not x.seen[base + i]:
                f = &x.fields[nd.a + i]
                if f.flags & F_REQUIRED:
                    rc = fail(x, f.node, p, E_REQUIRED, i)
                    break
                rc = put_null_col(x.cols, x.col_children, x.nodes[f.node].col)
                if rc:
                    break
    if rc == E_NONE and ex != NULL:
        if used == ex.offs[ex.length]:
            rc = put_null_col(x.cols, x.col_children, nd.extras)
        elif used + 1 > INT32_MAX:
            rc = E_FULL
        elif used + 1 > ex.data_cap and grow_data(ex, used + 1):
            rc = E_NOMEM
        else:
            ex.data[used] = 125
            ex.length += 1
            ex.offs[ex.length] = <int32_t>(used + 1)
    x.seen_top = base
    if rc:
        return rc
    pp[0] = p
    return put_struct(&x.cols[nd.col], True)


cdef int parse_map(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, int depth) noexcept nogil:
    """An object with any keys -> map<string, value> (a key seen twice is an error)."""
    cdef const Node *nd = &x.nodes[ni]
    cdef Col *c = &x.cols[nd.col]
    cdef Col *entries = &x.cols[x.col_children[c.child0]]
    cdef Col *keys = &x.cols[x.col_children[entries.child0]]
    cdef const uint8_t *p = ws(pp[0] + 1, end)
    cdef int64_t first = keys.length, j, cap, slot, a, b, kn, a2, b2
    cdef uint64_t h
    cdef int rc
    cdef void *mem
    if p < end and p[0] == 125:
        pp[0] = p + 1
        return put_end(c, entries.length)
    while True:
        if p >= end or p[0] != 34:
            return fail(x, ni, p, E_SYNTAX, 0)
        rc = put_string(x, ni, keys, &p, end)
        if rc:
            return rc
        p = ws(p, end)
        if p >= end or p[0] != 58:
            return fail(x, ni, p, E_SYNTAX, 0)
        p = ws(p + 1, end)
        rc = parse_value(x, nd.a, &p, end, depth + 1)
        if rc:
            return rc
        rc = put_struct(entries, True)
        if rc:
            return rc
        p = ws(p, end)
        if p < end and p[0] == 44:
            p = ws(p + 1, end)
            continue
        if p < end and p[0] == 125:
            p += 1
            break
        return fail(x, ni, p, E_SYNTAX, 0)
    # duplicate keys (json.loads would keep the last): an error
    if keys.length - first > 1:
        cap = 16
        while cap < 2 * (keys.length - first):
            cap *= 2
        if cap > x.hashes_cap:
            mem = realloc(x.hashes, cap * sizeof(int64_t))
            if mem == NULL:
                return E_NOMEM
            x.hashes = <int64_t *>mem
            x.hashes_cap = cap
        for j in range(cap):
            x.hashes[j] = -1
        for j in range(first, keys.length):
            a = keys.offs[j]
            b = keys.offs[j + 1]
            slot = <int64_t>(name_hash(keys.data + a, b - a) & <uint64_t>(cap - 1))
            while x.hashes[slot] >= 0:
                a2 = keys.offs[x.hashes[slot]]
                b2 = keys.offs[x.hashes[slot] + 1]
                if b2 - a2 == b - a and memcmp(keys.data + a, keys.data + a2, b - a) == 0:
                    return fail(x, ni, p, E_DUPLICATE, 0)
                slot = (slot + 1) & (cap - 1)
            x.hashes[slot] = j
    pp[0] = p
    return put_end(c, entries.length)


cdef int64_t days_from_civil(int64_t y, int64_t m, int64_t d) noexcept nogil:
    y -= m <= 2
    cdef int64_t era = (y if y >= 0 else y - 399) // 400
    cdef int64_t yoe = y - era * 400
    cdef int64_t doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    cdef int64_t doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef inline int digits(const uint8_t *s, int n, int64_t *v) noexcept nogil:
    cdef int i
    v[0] = 0
    for i in range(n):
        if not (48 <= s[i] <= 57):
            return 0
        v[0] = v[0] * 10 + (s[i] - 48)
    return 1


cdef bint parse_date(const uint8_t *s, int64_t n, int64_t *days) noexcept nogil:
    cdef int64_t y, m, d
    cdef int mdays
    if n < 10 or not digits(s, 4, &y) or s[4] != 45 or not digits(s + 5, 2, &m) or s[7] != 45 \
            or not digits(s + 8, 2, &d):
        return False
    if m < 1 or m > 12 or d < 1:
        return False
    mdays = 31
    if m == 4 or m == 6 or m == 9 or m == 11:
        mdays = 30
    elif m == 2:
        mdays = 29 if (y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)) else 28
    if d > mdays:
        return False
    days[0] = days_from_civil(y, m, d)
    return True


cdef bint parse_datetime(const uint8_t *s, int64_t n, int64_t *secs, int64_t *ns) noexcept nogil:
    """ISO 8601 / RFC 3339 text as Arrow's parser takes it -> seconds since the epoch and nanoseconds
    (0 <= ns < 1e9): YYYY-MM-DD, then optionally T (t, or a space) and hh[:mm[:ss[.fraction]]], then
    optionally Z (z), +hh, +hhmm or +hh:mm (text without a zone is taken as UTC)."""
    cdef int64_t days, hh = 0, mi = 0, ss = 0, frac = 0, scale = 1000000000, oh = 0, om = 0, total
    cdef int64_t i = 10
    cdef int digits_seen = 0
    cdef bint neg = False
    if n < 10 or not parse_date(s, 10, &days):
        return False
    if i < n and (s[i] == 84 or s[i] == 116 or s[i] == 32):
        if i + 3 > n or not digits(s + i + 1, 2, &hh):
            return False
        i += 3
        if i < n and s[i] == 58:
            if i + 3 > n or not digits(s + i + 1, 2, &mi):
                return False
            i += 3
            if i < n and s[i] == 58:
                if i + 3 > n or not digits(s + i + 1, 2, &ss):
                    return False
                i += 3
                if i < n and (s[i] == 46 or s[i] == 44):
                    i += 1
                    while i < n and 48 <= s[i] <= 57:
                        if digits_seen < 9:
                            frac = frac * 10 + (s[i] - 48)
                            scale //= 10
                        digits_seen += 1
                        i += 1
                    if digits_seen == 0:
                        return False
                    frac *= scale
        if hh > 23 or mi > 59 or ss > 60:
            return False
        if ss == 60:
            ss = 59                       # a leap second: as Python's and Arrow's parsers, the second before
        if i < n:
            if s[i] == 90 or s[i] == 122:
                i += 1
            elif s[i] == 43 or s[i] == 45:
                neg = s[i] == 45
                if i + 3 > n or not digits(s + i + 1, 2, &oh):
                    return False
                if i + 6 <= n and s[i + 3] == 58:
                    if not digits(s + i + 4, 2, &om):
                        return False
                    i += 6
                elif i + 5 <= n and 48 <= s[i + 3] <= 57:
                    if not digits(s + i + 3, 2, &om):
                        return False
                    i += 5
                else:
                    i += 3
                if oh > 23 or om > 59:
                    return False
                if neg:
                    oh = -oh
                    om = -om
    if i != n:
        return False
    secs[0] = ((days * 24 + hh - oh) * 60 + mi - om) * 60 + ss       # (4-digit years: far inside int64)
    ns[0] = frac
    return True


cdef inline int b64val(uint8_t c) noexcept nogil:
    if 65 <= c <= 90:
        return c - 65
    if 97 <= c <= 122:
        return c - 71
    if 48 <= c <= 57:
        return c + 4
    if c == 43:
        return 62
    if c == 47:
        return 63
    return -1


cdef int64_t b64decode(const uint8_t *s, int64_t n, uint8_t *out) noexcept nogil:
    """Standard base64 with padding -> bytes written; -1 when invalid."""
    cdef int64_t i, o = 0, pad = 0
    cdef int a, b, c, d
    if n % 4:
        return -1
    if n and s[n - 1] == 61:
        pad = 1
        if s[n - 2] == 61:
            pad = 2
    for i in range(0, n, 4):
        a = b64val(s[i])
        b = b64val(s[i + 1])
        c = b64val(s[i + 2]) if not (i + 4 == n and pad == 2) else 0
        d = b64val(s[i + 3]) if not (i + 4 == n and pad >= 1) else 0
        if a < 0 or b < 0 or c < 0 or d < 0:
            return -1
        out[o] = <uint8_t>((a << 2) | (b >> 4))
        o += 1
        if not (i + 4 == n and pad == 2):
            out[o] = <uint8_t>(((b & 15) << 4) | (c >> 2))
            o += 1
        if not (i + 4 == n and pad >= 1):
            out[o] = <uint8_t>(((c & 3) << 6) | d)
            o += 1
    return o


cdef int put_number(Ctx *x, int32_t ni, const Node *nd, Col *c, const uint8_t **pp, const uint8_t *end) noexcept nogil:
    cdef const uint8_t *start = pp[0]
    cdef bint integral, special, neg
    cdef int rc = number_token(x, ni, pp, end, &integral, &special)
    cdef int64_t n = pp[0] - start, i, v = 0, lo, hi
    cdef uint64_t u = 0, lim
    cdef double d
    cdef float fl
    cdef uint8_t *slot
    cdef int32_t i32
    if rc:
        return rc
    if nd.kind == J_FLOAT:
        d = to_double(start, n)
        slot = put_slot(c)
        if slot == NULL:
            return E_NOMEM
        if c.width == 4:
            fl = <float>d
            memcpy(slot, &fl, 4)
        else:
            memcpy(slot, &d, 8)
        return E_NONE
    # integers (J_INT, J_UINT, J_TIMESTAMP / J_DATE given as numbers): exact, or an integral float
    neg = start[0] == 45
    if integral:
        lim = 18446744073709551615ULL if (nd.kind == J_UINT and not neg) else \
            (9223372036854775808ULL if neg else 9223372036854775807ULL)
        for i in range(1 if neg else 0, n):
            if u > (lim - (start[i] - 48)) // 10:
                return field_null(x, ni, start, E_RANGE, 0)
            u = u * 10 + (start[i] - 48)
    else:
        if special:
            return fail(x, ni, start, E_TYPE, 4)
        d = to_double(start, n)
        if d != floor(d) or not isfinite(d):
            return fail(x, ni, start, E_TYPE, 4)
        if neg:
            if d < -9223372036854775808.0:
                return field_null(x, ni, start, E_RANGE, 0)
            u = <uint64_t>(-d) if d > -9223372036854775808.0 else 9223372036854775808ULL
        else:
            if d >= 18446744073709551616.0 or (nd.kind != J_UINT and d >= 9223372036854775808.0):
                return field_null(x, ni, start, E_RANGE, 0)
            u = <uint64_t>d
    if nd.kind == J_UINT:
        if neg and u != 0:
            return field_null(x, ni, start, E_RANGE, 0)
        if nd.c < 64 and u >> nd.c:
            return field_null(x, ni, start, E_RANGE, 0)
        slot = put_slot(c)
        if slot == NULL:
            return E_NOMEM
        memcpy(slot, &u, c.width)        # little-endian: the low bytes
        return E_NONE
    v = <int64_t>(0 - u) if neg else <int64_t>u
    if nd.kind == J_INT and nd.c < 64:
        hi = (<int64_t>1 << (nd.c - 1)) - 1
        lo = -hi - 1
        if v < lo or v > hi:
            return field_null(x, ni, start, E_RANGE, 0)
    if nd.kind == J_DATE and (v < -2147483648 or v > 2147483647):
        return field_null(x, ni, start, E_RANGE, 0)
    slot = put_slot(c)
    if slot == NULL:
        return E_NOMEM
    memcpy(slot, &v, c.width)
    return E_NONE


cdef int put_text_value(Ctx *x, int32_t ni, const Node *nd, Col *c, const uint8_t **pp,
                        const uint8_t *end) noexcept nogil:
    """A string for a date-time, date, enum, base64 or decimal node."""
    cdef const uint8_t *start = pp[0]
    cdef const uint8_t *s
    cdef int64_t n, v, k, o, nb, j
    cdef bint esc
    cdef uint8_t *slot
    cdef uint8_t *buf
    cdef const Field *f
    cdef void *mem
    cdef int rc = scan_string(x, ni, pp, end, &s, &n, &esc)
    cdef uint8_t sign
    cdef int64_t secs, per
    if rc:
        return rc
    if esc:
        if n > x.scratch_cap:
            mem = realloc(x.scratch, n + 64)
            if mem == NULL:
                return E_NOMEM
            x.scratch = <uint8_t *>mem
            x.scratch_cap = n + 64
        rc = unescape(x, ni, s, n, x.scratch, &n)
        if rc:
            return rc
        s = x.scratch
    if nd.kind == J_TIMESTAMP:
        if not parse_datetime(s, n, &secs, &v):
            return fail(x, ni, start, E_DATETIME, 0)
        per = 1000000000LL // nd.c       # the column's units per second
        if secs > INT64_MAX // per - 1 or secs < -(INT64_MAX // per - 1):
            return field_null(x, ni, start, E_RANGE, 0)
        v = secs * per + v // nd.c       # (the nanoseconds floored to the unit: v >= 0)
        slot = put_slot(c)
        if slot == NULL:
            return E_NOMEM
        memcpy(slot, &v, 8)
        return E_NONE
    if nd.kind == J_DATE:
        if n != 10 or not parse_date(s, n, &v) or v < -2147483648 or v > 2147483647:
            return fail(x, ni, start, E_DATETIME, 0)
        slot = put_slot(c)
        if slot == NULL:
            return E_NOMEM
        memcpy(slot, &v, 4)
        return E_NONE
    if nd.kind == J_ENUM:
        for k in range(nd.b):
            f = &x.fields[nd.a + k]
            if f.name_len == n and memcmp(x.names + f.name_off, s, n) == 0:
                slot = put_slot(c)
                if slot == NULL:
                    return E_NOMEM
                memcpy(slot, &k, 4)
                return E_NONE
        return fail(x, ni, start, E_ENUM, 0)
    # base64 (bytes, decimals)
    if c.length >= c.cap and grow(c, c.length + 1):
        return E_NOMEM
    if nd.kind == J_BASE64:
        o = c.offs[c.length]
        if o + n > INT32_MAX:
            return E_FULL
        if o + n > c.data_cap and grow_data(c, o + n):
            return E_NOMEM
        nb = b64decode(s, n, c.data + o)
        if nb < 0:
            return fail(x, ni, start, E_BASE64, 0)
        c.length += 1
        c.offs[c.length] = <int32_t>(o + nb)
        return E_NONE
    # J_DECIMAL: big-endian two's complement -> 16 little-endian bytes, within 10^precision
    buf = <uint8_t *>malloc(n + 4)
    if buf == NULL:
        return E_NOMEM
    nb = b64decode(s, n, buf)
    if nb < 0:
        free(buf)
        return fail(x, ni, start, E_BASE64, 0)
    sign = 0xFF if nb > 0 and (buf[0] & 0x80) else 0
    j = 0
    while nb - j > 16:
        if buf[j] != sign:
            free(buf)
            return field_null(x, ni, start, E_DECIMAL, 0)
        j += 1
    slot = put_slot(c)
    if slot == NULL:
        free(buf)
        return E_NOMEM
    memset(slot, sign, 16)
    for k in range(nb - j):
        slot[k] = buf[nb - 1 - k]
    free(buf)
    if nb - j == 16 and ((slot[15] & 0x80) != 0) != (sign == 0xFF):
        c.length -= 1
        return field_null(x, ni, start, E_DECIMAL, 0)
    return E_NONE


cdef int parse_value(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, int depth) noexcept nogil:
    """One value of node ni at *pp (no whitespace before it) into its column."""
    cdef const Node *nd = &x.nodes[ni]
    cdef const uint8_t *p = pp[0]
    cdef const uint8_t *q
    cdef Col *c = &x.cols[nd.col]
    cdef Col *child
    cdef int t, rc
    if p >= end:
        return fail(x, ni, p, E_SYNTAX, 0)
    if depth > MAX_DEPTH_:
        return fail(x, ni, p, E_DEPTH, 0)
    t = type_of(p[0])
    if t == 6 and (nd.kind != J_RAW or (nd.flags & N_NULL_OK)):
        if end - p < 4 or memcmp(p, b"null", 4) != 0:
            return fail(x, ni, p, E_SYNTAX, 0)
        if not (nd.flags & N_NULL_OK):
            return fail(x, ni, p, E_NULL, 0)
        pp[0] = p + 4
        return put_null_col(x.cols, x.col_children, nd.col)
    if nd.kind == J_STRING:
        if t != 3:
            return fail(x, ni, p, E_TYPE, t)
        return put_string(x, ni, c, pp, end)
    if nd.kind == J_INT or nd.kind == J_UINT or nd.kind == J_FLOAT:
        if t != 4:
            return fail(x, ni, p, E_TYPE, t)
        return put_number(x, ni, nd, c, pp, end)
    if nd.kind == J_OBJECT:
        if t != 1:
            return fail(x, ni, p, E_TYPE, t)
        return parse_object(x, ni, pp, end, depth)
    if nd.kind == J_ARRAY:
        if t != 2:
            return fail(x, ni, p, E_TYPE, t)
        child = &x.cols[x.nodes[nd.a].col]
        p = ws(p + 1, end)
        if p < end and p[0] == 93:
            pp[0] = p + 1
            return put_end(c, child.length if child.kind != K_NULL else child.length)
        while True:
            rc = parse_value(x, nd.a, &p, end, depth + 1)
            if rc:
                return rc
            p = ws(p, end)
            if p < end and p[0] == 44:
                p = ws(p + 1, end)
                continue
            if p < end and p[0] == 93:
                pp[0] = p + 1
                return put_end(c, x.cols[x.nodes[nd.a].col].length)
            return fail(x, ni, p, E_SYNTAX, 0)
    if nd.kind == J_MAP:
        if t != 1:
            return fail(x, ni, p, E_TYPE, t)
        return parse_map(x, ni, pp, end, depth)
    if nd.kind == J_BOOL:
        if t != 5:
            return fail(x, ni, p, E_TYPE, t)
        if room(c):
            return E_NOMEM
        if p[0] == 116 and end - p >= 4 and memcmp(p, b"true", 4) == 0:
            put_bit(c.data, c.length, True)
            pp[0] = p + 4
        elif end - p >= 5 and memcmp(p, b"false", 5) == 0:
            put_bit(c.data, c.length, False)
            pp[0] = p + 5
        else:
            return fail(x, ni, p, E_SYNTAX, 0)
        c.length += 1
        return E_NONE
    if nd.kind == J_RAW:
        q = p
        rc = skip(x, &q, end, depth)
        if rc:
            return rc
        pp[0] = q
        return put_bytes(c, p, q - p)
    if nd.kind == J_NULL:
        return fail(x, ni, p, E_TYPE, t)
    if (nd.kind == J_TIMESTAMP or nd.kind == J_DATE) and t == 4:
        return put_number(x, ni, nd, c, pp, end)
    if t != 3:
        return fail(x, ni, p, E_TYPE, t)
    return put_text_value(x, ni, nd, c, pp, end)


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


cdef OwnedBuffer _own(uint8_t **ptr, Py_ssize_t size):
    cdef OwnedBuffer b = OwnedBuffer.__new__(OwnedBuffer)
    b.ptr = ptr[0]
    b.size = size
    ptr[0] = NULL
    return b


cdef class Program:
    """A compiled JSON plan and its output columns.

    Parameters
    ----------
    nodes : int64 array (n, 9)
        kind, column, a, b, c, flags, hash offset, hash length, extras column per node.
    fields : int64 array (f, 4)
        name offset, name length, node, flags (also enum symbols).
    table : int32 array
        The objects' field-name hash tables.
    names : bytes
    columns : int64 array (c, 5)
        kind, width, first child, child count, nullable.
    col_children : int32 array
    top : int
        The node of every row.
    """
    cdef Node *nodes
    cdef Field *fields
    cdef int32_t *table
    cdef uint8_t *names
    cdef int32_t *col_children
    cdef int64_t[:, ::1] columns
    cdef int32_t nnodes, nfields, ncols, ntable
    cdef int64_t nnames
    cdef readonly int32_t top

    def __cinit__(self):
        self.nodes = NULL
        self.fields = NULL
        self.table = NULL
        self.names = NULL
        self.col_children = NULL

    def __dealloc__(self):
        free(self.nodes)
        free(self.fields)
        free(self.table)
        free(self.names)
        free(self.col_children)

    def __init__(self, const int64_t[:, ::1] nodes, const int64_t[:, ::1] fields, const int32_t[::1] table,
                 bytes names, int64_t[:, ::1] columns, const int32_t[::1] col_children, int32_t top):
        cdef Py_ssize_t i
        if nodes.shape[1] != 9 or fields.shape[1] != 4 or columns.shape[1] != 5:
            raise ValueError("nodes are (n, 9), fields (f, 4), columns (c, 5)")
        self.nnodes, self.nfields, self.ncols = nodes.shape[0], fields.shape[0], columns.shape[0]
        self.ntable, self.nnames = table.shape[0], len(names)
        if not 0 <= top < self.nnodes:
            raise ValueError("top node out of range")
        self.top = top
        self.nodes = <Node *>calloc(max(1, self.nnodes), sizeof(Node))
        self.fields = <Field *>calloc(max(1, self.nfields), sizeof(Field))
        self.table = <int32_t *>calloc(max(1, self.ntable), sizeof(int32_t))
        self.names = <uint8_t *>malloc(max(1, self.nnames))
        self.col_children = <int32_t *>calloc(max(1, col_children.shape[0]), sizeof(int32_t))
        if self.nodes == NULL or self.fields == NULL or self.table == NULL or self.names == NULL \
                or self.col_children == NULL:
            raise MemoryError()
        for i in range(self.nnodes):
            self.nodes[i].kind = <int32_t>nodes[i, 0]
            self.nodes[i].col = <int32_t>nodes[i, 1]
            self.nodes[i].a = <int32_t>nodes[i, 2]
            self.nodes[i].b = <int32_t>nodes[i, 3]
            self.nodes[i].c = nodes[i, 4]
            self.nodes[i].flags = <int32_t>nodes[i, 5]
            self.nodes[i].hash_off = <int32_t>nodes[i, 6]
            self.nodes[i].hash_len = <int32_t>nodes[i, 7]
            self.nodes[i].extras = <int32_t>nodes[i, 8]
        for i in range(self.nfields):
            self.fields[i].name_off = fields[i, 0]
            self.fields[i].name_len = <int32_t>fields[i, 1]
            self.fields[i].node = <int32_t>fields[i, 2]
            self.fields[i].flags = <int32_t>fields[i, 3]
        for i in range(self.ntable):
            self.table[i] = table[i]
        if self.nnames:
            memcpy(self.names, <const char *>names, self.nnames)
        for i in range(col_children.shape[0]):
            self.col_children[i] = col_children[i]
        self.columns = np.array(columns, dtype=np.int64)
        self._check(col_children.shape[0])

    cdef _check(self, Py_ssize_t nchildren):
        """Every reference stays inside the plan: checked once here, not per value."""
        cdef Py_ssize_t i, k
        cdef Node *nd
        cdef Field *f
        for i in range(self.ncols):
            if self.columns[i, 2] < 0 or self.columns[i, 2] + self.columns[i, 3] > nchildren:
                raise ValueError(f"column {i}: children out of range")
            if self.columns[i, 0] == K_FIXED and not 1 <= self.columns[i, 1] <= 16:
                raise ValueError(f"column {i}: width out of range")
        for i in range(nchildren):
            if not 0 <= self.col_children[i] < self.ncols:
                raise ValueError("column child out of range")
        for i in range(self.nfields):
            f = &self.fields[i]
            if f.name_off < 0 or f.name_len < 0 or f.name_off + f.name_len > self.nnames:
                raise ValueError(f"field {i}: name out of range")
            if not -1 <= f.node < self.nnodes:
                raise ValueError(f"field {i}: node out of range")
        for i in range(self.nnodes):
            nd = &self.nodes[i]
            if not J_OBJECT <= nd.kind <= J_DECIMAL:
                raise ValueError(f"node {i}: unknown kind")
            if not 0 <= nd.col < self.ncols:
                raise ValueError(f"node {i}: column out of range")
            kind, width, nchild = self.columns[nd.col, 0], self.columns[nd.col, 1], self.columns[nd.col, 3]
            if nd.kind in (J_OBJECT, J_ENUM):
                if nd.a < 0 or nd.b < 0 or nd.a + nd.b > self.nfields:
                    raise ValueError(f"node {i}: fields out of range")
            if nd.kind == J_OBJECT:
                if kind != K_STRUCT:
                    raise ValueError(f"node {i}: an object writes a struct")
                if nd.hash_off < 0 or nd.hash_len < 0 or nd.hash_off + nd.hash_len > self.ntable or \
                        (nd.hash_len & (nd.hash_len - 1)) or (nd.b and nd.hash_len < nd.b + 1):
                    raise ValueError(f"node {i}: hash table out of range")
                for k in range(nd.hash_len):
                    if not -1 <= self.table[nd.hash_off + k] < nd.b:
                        raise ValueError(f"node {i}: hash entry out of range")
                for k in range(nd.b):
                    if not 0 <= self.fields[nd.a + k].node < self.nnodes:
                        raise ValueError(f"node {i}: field node out of range")
                if not (nd.extras == -1 or (0 <= nd.extras < self.ncols and self.columns[nd.extras, 0] == K_VAR
                                            and self.columns[nd.extras, 4])):
                    raise ValueError(f"node {i}: extras column")
            elif nd.kind in (J_ARRAY, J_MAP):
                if not 0 <= nd.a < self.nnodes:
                    raise ValueError(f"node {i}: item node out of range")
                if kind != (K_LIST if nd.kind == J_ARRAY else K_MAP) or nchild != 1:
                    raise ValueError(f"node {i}: column kind")
                if nd.kind == J_ARRAY and self.col_children[self.columns[nd.col, 2]] != self.nodes[nd.a].col:
                    raise ValueError(f"node {i}: the item writes another column")
                if nd.kind == J_MAP:
                    ent = self.col_children[self.columns[nd.col, 2]]
                    if self.columns[ent, 0] != K_STRUCT or self.columns[ent, 3] != 2 or \
                            self.columns[self.col_children[self.columns[ent, 2]], 0] != K_VAR or \
                            self.col_children[self.columns[ent, 2] + 1] != self.nodes[nd.a].col:
                        raise ValueError(f"node {i}: map entries")
            elif nd.kind in (J_STRING, J_RAW, J_BASE64):
                if kind != K_VAR:
                    raise ValueError(f"node {i}: column kind")
            elif nd.kind == J_BOOL:
                if kind != K_BOOL:
                    raise ValueError(f"node {i}: column kind")
            elif nd.kind == J_NULL:
                if kind != K_NULL:
                    raise ValueError(f"node {i}: column kind")
            elif nd.kind in (J_INT, J_UINT):
                if kind != K_FIXED or width * 8 != nd.c or width not in (1, 2, 4, 8):
                    raise ValueError(f"node {i}: column width")
            elif nd.kind == J_FLOAT:
                if kind != K_FIXED or width not in (4, 8):
                    raise ValueError(f"node {i}: column width")
            elif nd.kind == J_TIMESTAMP:
                if kind != K_FIXED or width != 8 or nd.c < 1:
                    raise ValueError(f"node {i}: column width")
            elif nd.kind in (J_DATE, J_ENUM):
                if kind != K_FIXED or width != 4:
                    raise ValueError(f"node {i}: column width")
            elif nd.kind == J_DECIMAL:
                if kind != K_FIXED or width != 16:
                    raise ValueError(f"node {i}: column width")

    def decode(self, const int64_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] starts,
               const int32_t[::1] roots, int64_t start, uint8_t[::1] err_code, int64_t[::1] err_pos,
               int32_t[::1] err_node, int64_t[::1] err_detail, int32_t[::1] err_more):
        """Parse rows [start, n); row i's text is data[starts[i]:offsets[i + 1]].

        roots[i]: 0 parse; -1 a null value (stays null); < -1 an error found before (code -roots[i]).
        Returns (status, stop, columns) as the Protobuf kernel's decode.
        """
        cdef int64_t n = offsets.shape[0] - 1, i, m = self.ncols, k
        cdef Ctx x
        cdef Col *cols
        cdef int64_t *saved = NULL
        cdef int rc = E_NONE, status = E_NONE
        cdef int32_t r, top_col = self.nodes[self.top].col
        cdef const uint8_t *base = &data[0] if data.shape[0] > 0 else <const uint8_t *>""
        cdef const uint8_t *p
        cdef const uint8_t *end
        if n < 0:
            raise ValueError("offsets are n + 1 positions")
        if roots.shape[0] < n or starts.shape[0] < n or err_code.shape[0] < n or err_pos.shape[0] < n \
                or err_node.shape[0] < n or err_detail.shape[0] < n or err_more.shape[0] < n:
            raise ValueError("per-row arrays shorter than the column")
        if start < 0 or start > n:
            raise ValueError("start out of range")
        if offsets[0] < 0 or offsets[n] > data.shape[0]:
            raise ValueError("offsets out of range")
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                raise ValueError("offsets out of range")
        for i in range(start, n):
            if roots[i] > 0 or roots[i] < -255:
                raise ValueError("root out of range")
            if roots[i] == 0 and not offsets[i] <= starts[i] <= offsets[i + 1]:
                raise ValueError("start of a value outside its bytes")
        cols = <Col *>calloc(m, sizeof(Col))
        saved = <int64_t *>malloc(m * sizeof(int64_t) + 8)
        memset(&x, 0, sizeof(Ctx))
        if cols == NULL or saved == NULL:
            free(cols)
            free(saved)
            raise MemoryError()
        try:
            for k in range(m):
                cols[k].kind = <int32_t>self.columns[k, 0]
                cols[k].width = <int32_t>self.columns[k, 1]
                cols[k].child0 = <int32_t>self.columns[k, 2]
                cols[k].nchild = <int32_t>self.columns[k, 3]
                cols[k].nullable = self.columns[k, 4] != 0
                if cols[k].kind != K_NULL and grow(&cols[k], max(16, n - start)):
                    raise MemoryError()
                if cols[k].kind == K_VAR or cols[k].kind == K_LIST or cols[k].kind == K_MAP:
                    cols[k].offs[0] = 0
                if cols[k].kind == K_VAR and grow_data(&cols[k], 64):
                    raise MemoryError()
            x.nodes = self.nodes
            x.fields = self.fields
            x.table = self.table
            x.names = self.names
            x.cols = cols
            x.col_children = self.col_children
            i = start
            with nogil:
                while i < n:
                    r = roots[i]
                    if r < 0:
                        if r < -1:
                            err_code[i] = <uint8_t>(-r)
                        rc = put_null_col(cols, self.col_children, top_col)
                        if rc:
                            status = rc
                            break
                        i += 1
                        continue
                    for k in range(m):
                        saved[k] = cols[k].length
                    x.vstart = base + starts[i]
                    end = base + offsets[i + 1]
                    x.seen_top = 0
                    x.soft.n = 0
                    p = ws(x.vstart, end)
                    rc = parse_value(&x, self.top, &p, end, 0)
                    if rc == E_NONE:
                        p = ws(p, end)
                        if p != end:
                            rc = fail(&x, self.top, p, E_TRAILING, end - p)
                    if rc == E_NONE:
                        if x.soft.n:
                            put_soft(&x.soft, i, &err_code[0], &err_pos[0], &err_node[0], &err_detail[0],
                                     &err_more[0])
                        i += 1
                        continue
                    restore(cols, m, saved)
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
                        x.err_node = self.top
                    err_code[i] = <uint8_t>rc
                    err_pos[i] = x.err_pos
                    err_node[i] = x.err_node
                    err_detail[i] = x.err_detail
                    rc = put_null_col(cols, self.col_children, top_col)
                    if rc:
                        status = rc
                        break
                    i += 1
            if status == E_NOMEM:
                raise MemoryError("out of memory while parsing JSON values")
            out = []
            for k in range(m):
                out.append(self._column(&cols[k]))
            return (STATUS_FULL if status == E_FULL else STATUS_OK, i, out)
        finally:
            for k in range(m):
                free(cols[k].valid)
                free(cols[k].data)
                free(cols[k].offs)
            free(cols)
            free(saved)
            free(x.seen)
            free(x.scratch)
            free(x.hashes)

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
