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

One concern: the JSON grammar walked against the plan. Its parts -- strings and escapes, numbers,
objects matched to fields, maps, arrays, the skipping of what the plan does not keep -- call one another
recursively on one context, in one pass over each text, and stay in one module so the compiler inlines
them into that pass. The columns are arrowcols' (every kernel's builder); the text forms of values inside
strings (date-times, base64) are textforms.pxd's; where a value starts after its framing, framing's.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t, INT32_MAX, INT64_MAX, INT64_MIN
from libc.string cimport memcpy, memset, memcmp
from libc.stdlib cimport malloc, calloc, realloc, free, strtod
from libc.math cimport isfinite, floor, NAN, INFINITY

from kafkafmt._native.arrowcols cimport *
from kafkafmt._native.arrowcols import TOO_LARGE_TEXT
from kafkafmt._native.framing cimport Starts, check_starts, starts_span
from kafkafmt._native.textforms cimport *

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
    E_FULL = AC_FULL
    E_NOMEM = AC_NOMEM

cdef enum:
    MAX_DEPTH_ = 100

MAX_DEPTH = MAX_DEPTH_
KINDS = dict(J_OBJECT=J_OBJECT, J_ARRAY=J_ARRAY, J_MAP=J_MAP, J_STRING=J_STRING, J_INT=J_INT, J_UINT=J_UINT,
             J_FLOAT=J_FLOAT, J_BOOL=J_BOOL, J_NULL=J_NULL, J_TIMESTAMP=J_TIMESTAMP, J_DATE=J_DATE, J_ENUM=J_ENUM,
             J_RAW=J_RAW, J_BASE64=J_BASE64, J_DECIMAL=J_DECIMAL)
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
    (E_TOO_LARGE, "TOO_LARGE", TOO_LARGE_TEXT),
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
    Row row               # the value being decoded, its error or the fields it nulls
    Starts call           # row i of the call
    int32_t top           # the top message / node


cdef inline int fail(Ctx *x, int32_t ni, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    return row_fail(&x.row, ni, p, code, detail)


cdef inline int field_null(Ctx *x, int32_t ni, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    """A value node ni's column cannot hold: null in its place and the field named in the row's
    error (a column that cannot be null: the row's error)."""
    return null_field(&x.row, x.cols, x.col_children, x.nodes[ni].col, ni, p, code, detail)


cdef int put_extra(Col *c, int64_t *used, const uint8_t *k, int64_t kn, const uint8_t *v, int64_t vn) noexcept nogil:
    """Append ``,"key":value`` (``{`` before the first) to the value being built in c (its bytes from
    c.offs[c.length] to *used), key and value as the text has them."""
    cdef uint8_t sep = 123 if used[0] == c.offs[c.length] else 44
    cdef int rc = var_reserve(c, used[0], kn + vn + 2)
    if rc:
        return rc
    c.data[used[0]] = sep
    memcpy(c.data + used[0] + 1, k, kn)
    c.data[used[0] + 1 + kn] = 58
    memcpy(c.data + used[0] + 2 + kn, v, vn)
    used[0] += kn + vn + 2
    return AC_OK

cdef inline const uint8_t *ws(const uint8_t *p, const uint8_t *end) noexcept nogil:
    while p < end and (p[0] == 32 or p[0] == 10 or p[0] == 13 or p[0] == 9):
        p += 1
    return p


cdef enum:
    MORE = -1             # next_item(): another item follows


cdef inline int colon(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end) noexcept nogil:
    """The ``:`` after an object's key (whitespace around it skipped)."""
    cdef const uint8_t *p = ws(pp[0], end)
    if p >= end or p[0] != 58:
        return fail(x, ni, p, E_SYNTAX, 0)
    pp[0] = ws(p + 1, end)
    return E_NONE


cdef inline int next_item(Ctx *x, int32_t ni, const uint8_t **pp, const uint8_t *end, uint8_t close) noexcept nogil:
    """After an item of an object or array: ``,`` (MORE, *pp at the next item) or the ``close`` byte
    (E_NONE, *pp past it)."""
    cdef const uint8_t *p = ws(pp[0], end)
    if p < end and p[0] == 44:
        pp[0] = ws(p + 1, end)
        return MORE
    if p < end and p[0] == close:
        pp[0] = p + 1
        return E_NONE
    return fail(x, ni, p, E_SYNTAX, 0)


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
    used = c.offs[c.length]
    rc = var_reserve(c, used, n)                # (unescaped, the text only shrinks)
    if rc:
        return rc
    rc = unescape(x, ni, s, n, c.data + used, &o)
    if rc:
        return rc
    var_close(c, used + o)
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
                rc = scan_string(x, -1, &p, end, &s, &n, &esc) or colon(x, -1, &p, end) or \
                    skip(x, &p, end, depth + 1) or next_item(x, -1, &p, end, 125)
                if rc != MORE:
                    pp[0] = p
                    return rc
        p = ws(p + 1, end)
        if p < end and p[0] == 93:
            pp[0] = p + 1
            return E_NONE
        while True:
            rc = skip(x, &p, end, depth + 1) or next_item(x, -1, &p, end, 93)
            if rc != MORE:
                pp[0] = p
                return rc
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
            rc = colon(x, ni, &p, end)
            if rc:
                break
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
            if rc == E_NONE:
                rc = next_item(x, ni, &p, end, 125)
            if rc != MORE:
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
        else:
            rc = var_add(ex, &used, <const uint8_t *>"}", 1)
            if rc == E_NONE:
                var_close(ex, used)
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
    if p < end and p[0] == 125:
        pp[0] = p + 1
        return put_end(c, entries.length)
    while True:
        if p >= end or p[0] != 34:
            return fail(x, ni, p, E_SYNTAX, 0)
        rc = put_string(x, ni, keys, &p, end) or colon(x, ni, &p, end) or \
            parse_value(x, nd.a, &p, end, depth + 1) or put_struct(entries, True) or next_item(x, ni, &p, end, 125)
        if rc == E_NONE:
            break
        if rc != MORE:
            return rc
    # duplicate keys (json.loads would keep the last): an error
    if keys.length - first > 1:
        cap = key_slots(&x.hashes, &x.hashes_cap, keys.length - first)
        if cap == 0:
            return E_NOMEM
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
    if nd.kind == J_BASE64:
        o = c.offs[c.length]
        rc = var_reserve(c, o, n)               # (decoded, the text only shrinks)
        if rc:
            return rc
        nb = b64decode(s, n, c.data + o)
        if nb < 0:
            return fail(x, ni, start, E_BASE64, 0)
        var_close(c, o + nb)
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
            rc = parse_value(x, nd.a, &p, end, depth + 1) or next_item(x, ni, &p, end, 93)
            if rc == E_NONE:
                pp[0] = p
                return put_end(c, x.cols[x.nodes[nd.a].col].length)
            if rc != MORE:
                return rc
    if nd.kind == J_MAP:
        if t != 1:
            return fail(x, ni, p, E_TYPE, t)
        return parse_map(x, ni, pp, end, depth)
    if nd.kind == J_BOOL:
        if t != 5:
            return fail(x, ni, p, E_TYPE, t)
        if p[0] == 116 and end - p >= 4 and memcmp(p, b"true", 4) == 0:
            pp[0] = p + 4
            return put_bool(c, True)
        if end - p >= 5 and memcmp(p, b"false", 5) == 0:
            pp[0] = p + 5
            return put_bool(c, False)
        return fail(x, ni, p, E_SYNTAX, 0)
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


cdef int read_text(void *ctx, int64_t i, int32_t r, Row *row) noexcept nogil:
    """Row i of the call: one JSON value of the top node, nothing after it but whitespace."""
    cdef Ctx *x = <Ctx *>ctx
    cdef const uint8_t *end
    cdef const uint8_t *p
    cdef int rc
    row.start = starts_span(&x.call, i, &end)
    x.seen_top = 0
    p = ws(row.start, end)
    rc = parse_value(x, x.top, &p, end, 0)
    if rc == E_NONE:
        p = ws(p, end)
        if p != end:
            return fail(x, x.top, p, E_TRAILING, end - p)
    return rc


# ------------------------------------------------------------------------------------------------

cdef class Program(ColumnPlan):
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
    cdef int32_t nnodes, nfields, ntable
    cdef int64_t nnames
    cdef readonly int32_t top

    def __dealloc__(self):
        free(self.nodes)
        free(self.fields)
        free(self.table)
        free(self.names)

    def __init__(self, const int64_t[:, ::1] nodes, const int64_t[:, ::1] fields, const int32_t[::1] table,
                 bytes names, const int64_t[:, ::1] columns, const int32_t[::1] col_children, int32_t top):
        self.set_columns(columns, col_children, 1, 16)
        self.nnodes, self.nfields = nodes.shape[0], fields.shape[0]
        self.ntable, self.nnames = table.shape[0], len(names)
        if not 0 <= top < self.nnodes:
            raise ValueError("top node out of range")
        self.top = top
        self.nodes = <Node *>unpack(nodes, "iiiiliiii", sizeof(Node), "nodes")
        self.fields = <Field *>unpack(fields, "liii", sizeof(Field), "fields")
        self.table = copy_i32(table)
        self.names = copy_bytes(names)
        self._check()

    cdef _check(self):
        """Every reference stays inside the plan: checked once here, not per value."""
        cdef Py_ssize_t i, k
        cdef Node *nd
        cdef Field *f
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
               const int32_t[::1] roots, int64_t start):
        """Parse rows [start, n); row i's text is data[starts[i]:offsets[i + 1]].

        roots[i]: 0 parse; -1 a null value (stays null); < -1 an error found before (code -roots[i]).
        Returns (status, stop, columns, errors) as the Protobuf kernel's decode (errors name nodes).
        """
        cdef Ctx x
        cdef Rules rules
        memset(&x, 0, sizeof(Ctx))
        cdef int64_t n = check_starts(offsets, data, starts, roots, start, &x.call)
        rules.too_large, rules.big_node, rules.pre_node, rules.top = E_TOO_LARGE, self.top, -1, self.nodes[self.top].col
        x.nodes, x.fields, x.table, x.names = self.nodes, self.fields, self.table, self.names
        x.col_children, x.top = self.col_children, self.top
        try:
            return self.read(read_text, &x, &x.row, &x.cols, &roots[0] if n else NULL, start, n, &rules,
                             "parsing JSON values")
        finally:
            free(x.seen)
            free(x.scratch)
            free(x.hashes)
