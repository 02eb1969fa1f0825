# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Protobuf kernel: decode a whole column of Protobuf messages into Arrow buffers in one call,
without the GIL, driven by a plan compiled once from the reader message's descriptors.

The Python side (kafkafmt.values.protobuf._plan) flattens the reader message into tables: *messages* (their
fields, a field-number lookup, their oneofs), *fields* (number, how to read it, the output column,
the child message) and *oneofs*; the output *columns* follow the Arrow type (struct, list, map,
primitive), as in the Avro kernel (kafkafmt._native.avro).

A message is read in two passes, as the protobuf runtime's semantics need: fields may come in any
order, a singular field seen twice keeps the last value, a message field seen twice is merged
(its occurrences read as one message), packed and unpacked elements of a repeated field mix, the
last member of a oneof seen wins (clearing the others), a map key seen twice keeps the last entry.
Pass 1 walks the message's bytes (its segments: the occurrences of the field that holds it) and
records every known field's occurrences -- byte range, wire type, a sequence number -- in an arena
(unknown fields, fields whose wire type does not match, and groups are skipped); pass 2 writes
every field in declaration order from its occurrences: the last for a singular field (the proto3
default, or null for a field with presence, when none), all of them for repeated fields, merged
ones for messages.

Every read is bounds-checked against the end of its segment: a varint longer than 10 bytes, a
length past the end, a field number 0, wire types 6 and 7, an end-group tag without its start,
invalid UTF-8 in a string, nesting deeper than MAX_DEPTH are per-record errors (FL_REQUIRED, unused
by the plan, makes a missing field one too); the row is rolled back (every column to its length at the
row's start) and becomes a null row.

A value its column cannot hold -- a Timestamp or Duration beyond the range of its column's unit, or
with nanos out of range -- is not the record's error but the field's: the field is null, the rest of
the value is read, and the row's error names the first such field (code + AC_FIELD) and counts them.

A recursive message nested deeper than the plan unrolls it (P_CUTOFF) is checked as the message it is
(decoded with the plan's node of that message, then taken back out of the columns) and kept as its
bytes; the Python side prints them as JSON text.

One concern: the runtime's reading of a message, in its two passes. The passes, the well-known types
(Timestamp, Duration, wrappers, Struct's checks), maps and oneofs read occurrences from one arena and
call one another recursively (a field's message is a message read the same way), so they stay in one
module, inlined into one another. The columns are arrowcols' (every kernel's builder), the varint
wire.pxd's, the Schema Registry's framing (the message indexes) framing's.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t, INT32_MAX, INT64_MAX
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, calloc, realloc, free

from kafkafmt._native.arrowcols cimport *
from kafkafmt._native.arrowcols import TOO_LARGE_TEXT
from kafkafmt._native.framing cimport Starts, check_starts, starts_span
from kafkafmt._native.wire cimport read_varint64 as read_varint, WIRE_TRUNCATED, WIRE_VARINT

# ---- field ops
cdef enum:
    P_INT32 = 1
    P_INT64 = 2
    P_UINT32 = 3
    P_UINT64 = 4
    P_SINT32 = 5
    P_SINT64 = 6
    P_BOOL = 7
    P_ENUM = 8            # raw int32 numbers (the Python side maps them to a dictionary of names)
    P_FIXED32 = 9
    P_SFIXED32 = 10
    P_FLOAT = 11
    P_FIXED64 = 12
    P_SFIXED64 = 13
    P_DOUBLE = 14
    P_STRING = 15
    P_BYTES = 16
    P_MESSAGE = 17        # child message node
    P_MAP = 18            # child: the entry message node (key 1, value 2)
    P_RAW = 19            # the message's bytes, occurrences concatenated (google.protobuf.Struct & co.)
    P_TIMESTAMP = 20      # google.protobuf.Timestamp -> int64 ns since the epoch
    P_DURATION = 21       # google.protobuf.Duration -> int64 ns
    P_WRAPPER = 22        # google.protobuf.*Value: field 1 read with op `extra`
    P_CUTOFF = 23         # a recursive message past the plan's depth: its bytes (K_VAR), checked with node `child`

# ---- field flags
cdef enum:
    FL_REPEATED = 1
    FL_PACKABLE = 2
    FL_PRESENCE = 4       # null when absent (else the proto3 default)
    FL_CLOSED = 8         # closed enum: unknown numbers are unknown fields
    FL_REQUIRED = 16

# ---- per-record error codes (ERROR_INFO); codes >= 64 belong to the Python side
cdef enum:
    E_NONE = 0
    E_TRUNCATED = WIRE_TRUNCATED
    E_VARINT = WIRE_VARINT
    E_TAG = 3
    E_FIELD_ZERO = 4
    E_WIRE = 5
    E_LENGTH = 6
    E_END_GROUP = 7
    E_GROUP = 8
    E_UTF8 = 9
    E_DEPTH = 10
    E_RECURSION = 11
    E_REQUIRED = 12
    E_TIMESTAMP = 13
    E_DURATION = 14
    E_TOO_LARGE = 15
    E_PACKED = 16
    E_FULL = AC_FULL
    E_NOMEM = AC_NOMEM

cdef enum:
    MAX_DEPTH_ = 100      # nested messages and groups per value (the protobuf runtime's default limit)

MAX_DEPTH = MAX_DEPTH_
OPS = dict(P_INT32=P_INT32, P_INT64=P_INT64, P_UINT32=P_UINT32, P_UINT64=P_UINT64, P_SINT32=P_SINT32,
           P_SINT64=P_SINT64, P_BOOL=P_BOOL, P_ENUM=P_ENUM, P_FIXED32=P_FIXED32, P_SFIXED32=P_SFIXED32,
           P_FLOAT=P_FLOAT, P_FIXED64=P_FIXED64, P_SFIXED64=P_SFIXED64, P_DOUBLE=P_DOUBLE, P_STRING=P_STRING,
           P_BYTES=P_BYTES, P_MESSAGE=P_MESSAGE, P_MAP=P_MAP, P_RAW=P_RAW, P_TIMESTAMP=P_TIMESTAMP,
           P_DURATION=P_DURATION, P_WRAPPER=P_WRAPPER, P_CUTOFF=P_CUTOFF)
FLAGS = dict(FL_REPEATED=FL_REPEATED, FL_PACKABLE=FL_PACKABLE, FL_PRESENCE=FL_PRESENCE, FL_CLOSED=FL_CLOSED,
             FL_REQUIRED=FL_REQUIRED)
_ERROR_TABLE = (
    (E_TRUNCATED, "TRUNCATED", "the message ends inside a field (truncated or corrupt)"),
    (E_VARINT, "VARINT", "varint longer than 10 bytes"),
    (E_TAG, "TAG", "field tag {detail} beyond 32 bits"),
    (E_FIELD_ZERO, "FIELD_ZERO", "field number 0"),
    (E_WIRE, "WIRE", "invalid wire type {detail}"),
    (E_LENGTH, "LENGTH", "length {detail} runs past the end of the message"),
    (E_END_GROUP, "END_GROUP", "end-group tag without a matching start group"),
    (E_GROUP, "GROUP", "group not closed by its end-group tag"),
    (E_UTF8, "UTF8", "string is not valid UTF-8"),
    (E_DEPTH, "DEPTH", "messages nested deeper than {depth}"),
    (E_RECURSION, "RECURSION", "a recursive message nested deeper than the Arrow type holds"),
    (E_REQUIRED, "REQUIRED", "required field number {detail} is missing"),
    (E_TIMESTAMP, "TIMESTAMP", "Timestamp beyond timestamp[{unit}] or its nanos out of range"),
    (E_DURATION, "DURATION", "Duration beyond duration[{unit}] or its nanos out of range"),
    (E_TOO_LARGE, "TOO_LARGE", TOO_LARGE_TEXT),
    (E_PACKED, "PACKED", "packed field ends inside an element"),
)
#: error code -> (name, message template)
ERROR_INFO = {int(code): (name, text) for code, name, text in _ERROR_TABLE}


cdef struct Field:
    int32_t number
    int32_t op
    int32_t col           # the value column (the item column of a repeated field)
    int32_t list_col      # repeated: the list (map: the map) column
    int32_t child         # message node (P_MESSAGE, P_MAP: the entry)
    int32_t flags
    int32_t oneof         # index into oneofs, or -1
    int32_t member        # position among the oneof's members
    int32_t extra         # P_ENUM with FL_CLOSED: offset of the known numbers in table; P_WRAPPER: inner op;
                          # P_TIMESTAMP, P_DURATION: nanoseconds per unit of the column (1, 1000)
    int32_t extra2        # P_ENUM: count of known numbers
    int32_t wire          # the wire type of one element


cdef struct Msg:
    int32_t first         # first field (in fields)
    int32_t nfields
    int32_t dense_off     # table[dense_off + number] = field index (in the message), -1; for numbers < dense_len
    int32_t dense_len
    int32_t sorted_off    # table: (number, field index) pairs, ascending, for numbers >= dense_len
    int32_t nsorted
    int32_t col           # the struct column
    int32_t first_oneof
    int32_t noneofs


cdef struct Oneof:
    int32_t col           # the struct column (null when no member is set)
    int32_t which_col     # int32 member position (dictionary index)
    int32_t first         # first member field index in table (global field indexes)
    int32_t nmembers


cdef struct Occ:
    const uint8_t *p      # the value (varint / fixed bytes, or a length-delimited payload)
    const uint8_t *end
    uint64_t val          # wire types 0, 1, 5: the value's bits (read once, in pass 1)
    int64_t seq
    int32_t next
    int32_t wire          # -1: dropped (a map entry whose key comes again)


cdef struct Ctx:
    const Field *fields
    const Msg *msgs
    const Oneof *oneofs
    const int32_t *table
    Col *cols
    int64_t ncols
    const int32_t *col_children
    Occ *occ
    int64_t occ_top
    int64_t occ_cap
    int32_t *slots        # per message being read: (head, tail) occurrence per field
    int64_t slot_top
    int64_t slot_cap
    int64_t *scratch      # map-key dedupe hash table
    int64_t scratch_cap
    int64_t seq
    Row row               # the value being decoded, its error or the fields it nulls
    Starts call           # row i of the call
    int32_t top           # the top message / node


# ------------------------------------------------------------------------------------------------
# columns

cdef inline int put_null(Ctx *x, int32_t ci) noexcept nogil:
    """A placeholder: null in a nullable column, else a zero value (the proto3 default)."""
    return put_null_col(x.cols, x.col_children, ci)


# ------------------------------------------------------------------------------------------------
# reading

cdef inline int fail(Ctx *x, int32_t fi, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    return row_fail(&x.row, fi, p, code, detail)


cdef inline int field_null(Ctx *x, int32_t fi, int32_t ci, const uint8_t *p, int code, int64_t detail) noexcept nogil:
    """A value its column cannot hold: null in its place and the field named in the row's error (a
    column that cannot be null: the row's error)."""
    return null_field(&x.row, x.cols, x.col_children, ci, fi, p, code, detail)


cdef inline int read_tag(Ctx *x, int32_t fi, const uint8_t **pp, const uint8_t *end, uint64_t *tag) noexcept nogil:
    """A field's tag: a varint within 32 bits whose field number is not 0."""
    cdef const uint8_t *at = pp[0]
    cdef int rc = read_varint(pp, end, tag)
    if rc:
        return fail(x, fi, at, rc, 0)
    if tag[0] > 0xFFFFFFFFULL:
        return fail(x, fi, at, E_TAG, <int64_t>tag[0])
    if (tag[0] >> 3) == 0:
        return fail(x, fi, at, E_FIELD_ZERO, 0)
    return E_NONE


cdef inline int read_delimited(Ctx *x, int32_t fi, const uint8_t **pp, const uint8_t *end,
                               const uint8_t **vs) noexcept nogil:
    """A length-delimited value: ``vs`` its first byte, *pp moved past it."""
    cdef const uint8_t *at = pp[0]
    cdef uint64_t v
    cdef int rc = read_varint(pp, end, &v)
    if rc:
        return fail(x, fi, at, rc, 0)
    if v > <uint64_t>(end - pp[0]):
        return fail(x, fi, at, E_LENGTH, <int64_t>(v & INT64_MAX))
    vs[0] = pp[0]
    pp[0] += v
    return E_NONE


cdef inline int32_t seg_from(const Ctx *x, int32_t seg, int64_t cutoff, bint single) noexcept nogil:
    """The segment of a message to read from seg on: seg itself when single, else the first one after
    cutoff (-1: none)."""
    if not single:
        while seg >= 0 and x.occ[seg].seq <= cutoff:
            seg = x.occ[seg].next
    return seg


cdef inline int32_t seg_next(const Ctx *x, int32_t seg, int64_t cutoff, bint single) noexcept nogil:
    """The segment to read after seg (-1: none; single: seg was the only one)."""
    return -1 if single else seg_from(x, x.occ[seg].next, cutoff, False)


cdef int skip_value(Ctx *x, const uint8_t **pp, const uint8_t *end, uint64_t tag, int depth) noexcept nogil:
    """Skip the value of a field whose tag was read (groups: up to their end-group tag)."""
    cdef const uint8_t *p = pp[0]
    cdef const uint8_t *at = p
    cdef const uint8_t *vs
    cdef uint64_t v, t
    cdef int wt = <int>(tag & 7), rc
    if wt == 0:
        rc = read_varint(pp, end, &v)
        return fail(x, -1, at, rc, 0) if rc else E_NONE
    if wt == 1 or wt == 5:
        v = 8 if wt == 1 else 4
        if <uint64_t>(end - p) < v:
            return fail(x, -1, at, E_TRUNCATED, 0)
        pp[0] = p + v
        return E_NONE
    if wt == 2:
        return read_delimited(x, -1, pp, end, &vs)
    if wt == 3:
        if depth >= MAX_DEPTH_:
            return fail(x, -1, at, E_DEPTH, 0)
        while True:
            if pp[0] >= end:
                return fail(x, -1, at, E_GROUP, 0)
            at = pp[0]
            rc = read_tag(x, -1, pp, end, &t)
            if rc:
                return rc
            if (t & 7) == 4:
                if (t >> 3) != (tag >> 3):
                    return fail(x, -1, at, E_END_GROUP, 0)
                return E_NONE
            rc = skip_value(x, pp, end, t, depth + 1)
            if rc:
                return rc
    if wt == 4:
        return fail(x, -1, at, E_END_GROUP, 0)
    return fail(x, -1, at, E_WIRE, wt)


cdef inline int32_t lookup(Ctx *x, const Msg *m, uint64_t number) noexcept nogil:
    """The index (in the message) of field ``number``, or -1."""
    cdef int32_t lo, hi, mid
    cdef const int32_t *s
    if number < <uint64_t>m.dense_len:
        return x.table[m.dense_off + number]
    lo = 0
    hi = m.nsorted - 1
    s = x.table + m.sorted_off
    while lo <= hi:
        mid = (lo + hi) >> 1
        if <uint64_t>s[2 * mid] == number:
            return s[2 * mid + 1]
        if <uint64_t>s[2 * mid] < number:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1


cdef inline int new_occ(Ctx *x) noexcept nogil:
    cdef int64_t ncap
    cdef void *p
    if x.occ_top >= x.occ_cap:
        ncap = x.occ_cap * 2 if x.occ_cap else 256
        if ncap > INT32_MAX:
            return -1
        p = realloc(x.occ, ncap * sizeof(Occ))
        if p == NULL:
            return -1
        x.occ = <Occ *>p
        x.occ_cap = ncap
    x.occ_top += 1
    return <int>(x.occ_top - 1)


cdef int scan(Ctx *x, int32_t mi, int32_t head, int64_t cutoff, bint single, int64_t base, int depth) noexcept nogil:
    """Pass 1 over message mi's segments (the occurrence list from head; only those after cutoff;
    single: head alone): record each known field's occurrences in slots[base ...]."""
    cdef const Msg *m = &x.msgs[mi]
    cdef const Field *f
    cdef int32_t seg, fi, k
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef const uint8_t *vs
    cdef uint64_t tag, v
    cdef int wt, rc, ok
    seg = seg_from(x, head, cutoff, single)
    while seg >= 0:
        p = x.occ[seg].p
        end = x.occ[seg].end
        while p < end:
            rc = read_tag(x, -1, &p, end, &tag)
            if rc:
                return rc
            wt = <int>(tag & 7)
            vs = p
            v = 0
            if wt == 2:
                rc = read_delimited(x, -1, &p, end, &vs)
                if rc:
                    return rc
                v = p - vs
            elif wt == 0:
                rc = read_varint(&p, end, &v)
                if rc:
                    return fail(x, -1, vs, rc, 0)
            elif wt == 5 or wt == 1:
                rc = read_fixed(&p, end, wt == 1, &v)
                if rc:
                    return fail(x, -1, vs, rc, 0)
            else:
                rc = skip_value(x, &p, end, tag, depth)
                if rc:
                    return rc
            fi = lookup(x, m, tag >> 3)
            if fi < 0:
                continue
            f = &x.fields[m.first + fi]
            ok = wt == f.wire or (wt == 2 and (f.flags & FL_PACKABLE))
            if not ok:
                continue                        # a wire type the field cannot have: an unknown field
            k = new_occ(x)
            if k < 0:
                return E_NOMEM
            x.occ[k].p = vs
            x.occ[k].end = p
            x.occ[k].val = v
            x.occ[k].seq = x.seq
            x.occ[k].wire = wt
            x.occ[k].next = -1
            x.seq += 1
            if x.slots[base + 2 * fi] < 0:
                x.slots[base + 2 * fi] = k
            else:
                x.occ[x.slots[base + 2 * fi + 1]].next = k
            x.slots[base + 2 * fi + 1] = k
        seg = seg_next(x, seg, cutoff, single)
    return E_NONE


cdef bint enum_known(Ctx *x, const Field *f, int32_t v) noexcept nogil:
    cdef int32_t lo = 0, hi = f.extra2 - 1, mid
    cdef const int32_t *s = x.table + f.extra
    while lo <= hi:
        mid = (lo + hi) >> 1
        if s[mid] == v:
            return True
        if s[mid] < v:
            lo = mid + 1
        else:
            hi = mid - 1
    return False


cdef inline int read_fixed(const uint8_t **pp, const uint8_t *end, bint wide, uint64_t *out) noexcept nogil:
    """A fixed-width value's bits: 4 bytes (wire type 5), or 8 when ``wide`` (wire type 1), little-endian."""
    cdef uint32_t u32
    if end - pp[0] < (8 if wide else 4):
        return E_TRUNCATED
    if wide:
        memcpy(out, pp[0], 8)
        pp[0] += 8
    else:
        memcpy(&u32, pp[0], 4)
        out[0] = u32
        pp[0] += 4
    return E_NONE


cdef int read_scalar(Ctx *x, int32_t op, const uint8_t **pp, const uint8_t *end, uint64_t *out) noexcept nogil:
    """One element's raw bits (varints decoded; fixed widths little-endian)."""
    if op == P_FIXED32 or op == P_SFIXED32 or op == P_FLOAT:
        return read_fixed(pp, end, False, out)
    if op == P_FIXED64 or op == P_SFIXED64 or op == P_DOUBLE:
        return read_fixed(pp, end, True, out)
    return read_varint(pp, end, out)


cdef int put_scalar(Ctx *x, int32_t op, Col *c, uint64_t u) noexcept nogil:
    """Append one scalar (raw bits from read_scalar) to its column."""
    cdef uint8_t *slot
    cdef int32_t i32
    cdef int64_t i64
    cdef uint32_t u32
    cdef float fl
    cdef double d
    if op == P_BOOL:
        if room(c):
            return E_NOMEM
        put_bit(c.data, c.length, u != 0)
        c.length += 1
        return E_NONE
    slot = put_slot(c)
    if slot == NULL:
        return E_NOMEM
    if op == P_INT32 or op == P_ENUM or op == P_SFIXED32 or op == P_UINT32 or op == P_FIXED32:
        u32 = <uint32_t>u
        memcpy(slot, &u32, 4)
    elif op == P_SINT32:
        u32 = <uint32_t>u
        i32 = <int32_t>((u32 >> 1) ^ (~(u32 & 1) + 1))
        memcpy(slot, &i32, 4)
    elif op == P_SINT64:
        i64 = <int64_t>((u >> 1) ^ (~(u & 1) + 1))
        memcpy(slot, &i64, 8)
    elif op == P_FLOAT:
        u32 = <uint32_t>u
        memcpy(slot, &u32, 4)
    else:                   # int64, uint64, fixed64, sfixed64, double: the 8 bytes as they are
        memcpy(slot, &u, 8)
    return E_NONE


cdef inline int32_t wire_of(int32_t op) noexcept nogil:
    if op == P_FIXED32 or op == P_SFIXED32 or op == P_FLOAT:
        return 5
    if op == P_FIXED64 or op == P_SFIXED64 or op == P_DOUBLE:
        return 1
    if op >= P_STRING:
        return 2
    return 0


cdef int put_occ_scalars(Ctx *x, int32_t fi, const Field *f, Col *c, int32_t k, int64_t *count) noexcept nogil:
    """Append the element(s) of occurrence k (packed: all of them) of a numeric field; closed enums
    drop unknown numbers (the runtime keeps them as unknown fields)."""
    cdef const uint8_t *p = x.occ[k].p
    cdef const uint8_t *end = x.occ[k].end
    cdef const uint8_t *at
    cdef uint64_t u
    cdef int rc
    cdef bint packed = x.occ[k].wire == 2 and f.wire != 2
    if not packed:
        u = x.occ[k].val
        if f.op == P_ENUM and (f.flags & FL_CLOSED) and not enum_known(x, f, <int32_t>u):
            return E_NONE
        count[0] += 1
        return put_scalar(x, f.op, c, u)
    while p < end or (not packed and p == x.occ[k].p):
        at = p
        rc = read_scalar(x, f.op, &p, end, &u)
        if rc:
            return fail(x, fi, at, E_PACKED if packed and rc == E_TRUNCATED else rc, 0)
        if f.op == P_ENUM and (f.flags & FL_CLOSED) and not enum_known(x, f, <int32_t>u):
            if not packed:
                break
            continue
        rc = put_scalar(x, f.op, c, u)
        if rc:
            return rc
        count[0] += 1
        if not packed:
            break
    return E_NONE


cdef int put_string(Ctx *x, int32_t fi, const Field *f, Col *c, int32_t k) noexcept nogil:
    cdef const uint8_t *p = x.occ[k].p
    cdef int64_t n = x.occ[k].end - p
    if f.op == P_STRING and not utf8_ok(p, n):
        return fail(x, fi, p, E_UTF8, 0)
    return put_bytes(c, p, n)


cdef inline int next_field(Ctx *x, int32_t fi, const uint8_t **pp, const uint8_t *end, uint64_t *tag,
                           const uint8_t **vs, int depth) noexcept nogil:
    """The field at *pp: its tag, and *pp moved past its value -- a length-delimited value's bytes from
    ``vs``, any other value checked and skipped."""
    cdef int rc = read_tag(x, fi, pp, end, tag)
    if rc:
        return rc
    vs[0] = pp[0]
    if (tag[0] & 7) == 2:
        return read_delimited(x, fi, pp, end, vs)
    return skip_value(x, pp, end, tag[0], depth)


cdef int small_fields(Ctx *x, int32_t fi, int32_t head, int64_t cutoff, bint single, int32_t wire1, int32_t wire2,
                      const uint8_t **v1, const uint8_t **e1, const uint8_t **v2, const uint8_t **e2,
                      int depth) noexcept nogil:
    """Fields 1 and 2 of a small message (Timestamp, Duration, a wrapper) over its occurrences:
    the last value of each with the expected wire type (NULL when absent)."""
    cdef int32_t seg
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef const uint8_t *vs
    cdef uint64_t tag
    cdef int wt, rc
    v1[0] = NULL
    v2[0] = NULL
    seg = seg_from(x, head, cutoff, single)
    while seg >= 0:
        p = x.occ[seg].p
        end = x.occ[seg].end
        while p < end:
            rc = next_field(x, fi, &p, end, &tag, &vs, depth)
            if rc:
                return rc
            wt = <int>(tag & 7)
            if (tag >> 3) == 1 and wt == wire1:
                v1[0] = vs
                e1[0] = p
            elif (tag >> 3) == 2 and wt == wire2:
                v2[0] = vs
                e2[0] = p
        seg = seg_next(x, seg, cutoff, single)
    return E_NONE


cdef int check_json_msg(Ctx *x, int32_t fi, const uint8_t *p, const uint8_t *end, int kind,
                        int depth) noexcept nogil:
    """Validate the bytes of a google.protobuf.Struct (kind 0), Value (1), ListValue (2) or Struct
    entry (3) as the runtime parses them: well-formed fields, UTF-8 strings, nested kinds."""
    cdef const uint8_t *vs
    cdef uint64_t tag
    cdef int rc, sub
    cdef uint64_t num
    if depth > MAX_DEPTH_:
        return fail(x, fi, p, E_DEPTH, 0)
    while p < end:
        rc = next_field(x, fi, &p, end, &tag, &vs, depth)
        if rc:
            return rc
        num = tag >> 3
        if (tag & 7) == 2:
            sub = -1
            if kind == 0 and num == 1:
                sub = 3
            elif kind == 3 and num == 2:
                sub = 1
            elif kind == 1 and num == 5:
                sub = 0
            elif kind == 1 and num == 6:
                sub = 2
            elif kind == 2 and num == 1:
                sub = 1
            elif (kind == 3 and num == 1) or (kind == 1 and num == 3):
                if not utf8_ok(vs, p - vs):
                    return fail(x, fi, vs, E_UTF8, 0)
            if sub >= 0:
                rc = check_json_msg(x, fi, vs, p, sub, depth + 1)
                if rc:
                    return rc
    return E_NONE


cdef int put_special(Ctx *x, int32_t fi, const Field *f, Col *c, int32_t head, int64_t cutoff, bint single,
                     int depth) noexcept nogil:
    """A Timestamp, Duration, wrapper or raw message (Struct & co., a cut-off message) from its occurrences."""
    cdef const uint8_t *v1
    cdef const uint8_t *e1
    cdef const uint8_t *v2
    cdef const uint8_t *e2
    cdef const uint8_t *at = x.occ[head].p if head >= 0 else x.row.start
    cdef uint64_t s = 0, n = 0
    cdef int64_t secs, nanos, total, per
    cdef bint ok
    cdef int rc
    cdef int32_t seg, inner
    cdef int64_t used
    if f.op == P_RAW or f.op == P_CUTOFF:
        seg = seg_from(x, head, cutoff, single)
        while seg >= 0:                         # checked first (decoding a cut-off message may grow c)
            if f.op == P_RAW:
                rc = check_json_msg(x, fi, x.occ[seg].p, x.occ[seg].end, f.extra, depth)
            else:
                rc = decode_undo(x, f.child, seg, depth + 1, True)
            if rc:
                return rc
            seg = seg_next(x, seg, cutoff, single)
        used = c.offs[c.length]                 # the value: its occurrences, one after the other
        rc = var_reserve(c, used, 0)
        seg = seg_from(x, head, cutoff, single)
        while seg >= 0 and rc == E_NONE:
            rc = var_add(c, &used, x.occ[seg].p, x.occ[seg].end - x.occ[seg].p)
            seg = seg_next(x, seg, cutoff, single)
        if rc:
            return rc
        var_close(c, used)
        return E_NONE
    if f.op == P_WRAPPER:
        inner = f.extra
        rc = small_fields(x, fi, head, cutoff, single, wire_of(inner), -1, &v1, &e1, &v2, &e2, depth)
        if rc:
            return rc
        if inner == P_STRING or inner == P_BYTES:
            if v1 == NULL:
                return put_bytes(c, <const uint8_t *>"", 0)
            if inner == P_STRING and not utf8_ok(v1, e1 - v1):
                return fail(x, fi, v1, E_UTF8, 0)
            return put_bytes(c, v1, e1 - v1)
        if v1 != NULL:
            rc = read_scalar(x, inner, &v1, e1, &s)
            if rc:
                return fail(x, fi, v1, rc, 0)
        return put_scalar(x, inner, c, s)
    rc = small_fields(x, fi, head, cutoff, single, 0, 0, &v1, &e1, &v2, &e2, depth)
    if rc:
        return rc
    if v1 != NULL:
        rc = read_varint(&v1, e1, &s)
        if rc:
            return fail(x, fi, v1, rc, 0)
    if v2 != NULL:
        rc = read_varint(&v2, e2, &n)
        if rc:
            return fail(x, fi, v2, rc, 0)
    secs = <int64_t>s
    nanos = <int64_t><int32_t><uint32_t>n
    per = 1000000000LL // f.extra                # units per second
    if f.op == P_TIMESTAMP:
        ok = 0 <= nanos <= 999999999LL
    else:
        ok = -999999999LL <= nanos <= 999999999LL and not (secs > 0 and nanos < 0) and not (secs < 0 and nanos > 0)
    # (a margin of one second below int64's range: beyond any time a Timestamp or Duration means)
    if not ok or secs > INT64_MAX // per - 1 or secs < -(INT64_MAX // per - 1):
        return field_null(x, fi, f.col, at, E_TIMESTAMP if f.op == P_TIMESTAMP else E_DURATION, f.extra)
    total = secs * per + nanos // f.extra        # (C division: a Duration's nanoseconds truncated toward zero)
    return put_scalar(x, P_INT64, c, <uint64_t>total)


cdef uint64_t key_hash(const uint8_t *p, int64_t n, uint64_t v) noexcept nogil:
    cdef uint64_t h = 1469598103934665603ULL ^ v
    cdef int64_t i
    for i in range(n):
        h = (h ^ p[i]) * 1099511628211ULL
    h ^= h >> 29
    h *= 0xBF58476D1CE4E5B9ULL
    return h ^ (h >> 32)


cdef int entry_key(Ctx *x, int32_t fi, const Field *kf, int32_t k, uint64_t *v, const uint8_t **kp,
                   int64_t *kn) noexcept nogil:
    """The key of map entry occurrence k: its last field 1 (the key type's default when absent)."""
    cdef const uint8_t *v1
    cdef const uint8_t *e1
    cdef const uint8_t *v2
    cdef const uint8_t *e2
    cdef int rc = small_fields(x, fi, k, -1, True, kf.wire, -1, &v1, &e1, &v2, &e2, 0)
    v[0] = 0
    kp[0] = <const uint8_t *>""
    kn[0] = 0
    if rc:
        return rc
    if v1 == NULL:
        return E_NONE
    if kf.wire == 2:
        kp[0] = v1
        kn[0] = e1 - v1
        return E_NONE
    rc = read_scalar(x, kf.op, &v1, e1, v)
    if rc:
        return fail(x, fi, v1, rc, 0)
    if kf.op == P_INT32 or kf.op == P_UINT32 or kf.op == P_SINT32 or kf.op == P_FIXED32 or kf.op == P_SFIXED32:
        v[0] = <uint32_t>v[0]
    elif kf.op == P_BOOL:
        v[0] = v[0] != 0
    return E_NONE


cdef int entry_unknown(Ctx *x, int32_t fi, const Field *f, int32_t k, bint *unknown) noexcept nogil:
    """Whether map entry occurrence k holds an unknown field (another number, or a wire type its
    key / value cannot have): the runtime then keeps the whole entry as an unknown field of the
    message holding the map, not in the map."""
    cdef const Field *kf = &x.fields[x.msgs[f.child].first]
    cdef const Field *vf = &x.fields[x.msgs[f.child].first + 1]
    cdef const uint8_t *p = x.occ[k].p
    cdef const uint8_t *end = x.occ[k].end
    cdef uint64_t tag
    cdef int rc, wt
    unknown[0] = False
    while p < end:
        rc = read_tag(x, fi, &p, end, &tag)
        if rc:
            return rc
        wt = <int>(tag & 7)
        if not (((tag >> 3) == 1 and wt == kf.wire) or ((tag >> 3) == 2 and wt == vf.wire)):
            unknown[0] = True
        rc = skip_value(x, &p, end, tag, 0)
        if rc:
            return rc
    return E_NONE


cdef int dedupe_map(Ctx *x, int32_t fi, const Field *f, int32_t head) noexcept nogil:
    """Mark map entries whose key comes again later as dropped (the runtime keeps the last)."""
    cdef const Field *kf = &x.fields[x.msgs[f.child].first]
    cdef int32_t k = head, n = 0
    cdef int64_t cap, h, slot
    cdef uint64_t v, v2
    cdef const uint8_t *kp
    cdef const uint8_t *kp2
    cdef int64_t kn, kn2
    cdef int rc
    while k >= 0:
        if x.occ[k].wire >= 0:
            n += 1
        k = x.occ[k].next
    if n < 2:
        return E_NONE
    cap = key_slots(&x.scratch, &x.scratch_cap, n)
    if cap == 0:
        return E_NOMEM
    k = head
    while k >= 0:
        if x.occ[k].wire < 0:
            k = x.occ[k].next
            continue
        rc = entry_key(x, fi, kf, k, &v, &kp, &kn)
        if rc:
            return rc
        h = <int64_t>(key_hash(kp, kn, v) & <uint64_t>(cap - 1))
        while True:
            slot = x.scratch[h]
            if slot < 0:
                x.scratch[h] = k
                break
            rc = entry_key(x, fi, kf, <int32_t>slot, &v2, &kp2, &kn2)
            if rc:
                return rc
            if v2 == v and kn2 == kn and (kn == 0 or memcmp_(kp, kp2, kn)):
                x.occ[slot].wire = -1
                x.scratch[h] = k
                break
            h = (h + 1) & (cap - 1)
        k = x.occ[k].next
    return E_NONE


cdef inline bint memcmp_(const uint8_t *a, const uint8_t *b, int64_t n) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


cdef int decode_undo(Ctx *x, int32_t mi, int32_t k, int depth, bint notes) noexcept nogil:
    """Decode occurrence k as message mi (every check a value gets), then take it back out of the
    columns; notes: the fields it nulls stay noted (the row's error names them: a value kept as its
    bytes), else they are forgotten (a value that counts for nothing)."""
    cdef int64_t *saved
    cdef int64_t c
    cdef int rc
    cdef Soft before = x.row.soft
    saved = <int64_t *>malloc(x.ncols * sizeof(int64_t) + 8)
    if saved == NULL:
        return E_NOMEM
    for c in range(x.ncols):
        saved[c] = x.cols[c].length
    rc = put_message(x, mi, k, -1, True, depth)
    restore(x.cols, x.ncols, saved)
    free(saved)
    if not notes:
        x.row.soft = before
    return rc


cdef int check_occ(Ctx *x, int32_t fi, const Field *f, int32_t k, int depth) noexcept nogil:
    """Check an occurrence that gives no value (overwritten, or of a oneof member that lost) as
    strictly as the runtime parses it: strings are UTF-8, messages well-formed."""
    cdef int rc
    cdef const uint8_t *v1
    cdef const uint8_t *e1
    cdef const uint8_t *v2
    cdef const uint8_t *e2
    if f.op == P_STRING:
        if not utf8_ok(x.occ[k].p, x.occ[k].end - x.occ[k].p):
            return fail(x, fi, x.occ[k].p, E_UTF8, 0)
        return E_NONE
    if f.op == P_RAW:
        return check_json_msg(x, fi, x.occ[k].p, x.occ[k].end, f.extra, depth)
    if f.op == P_TIMESTAMP or f.op == P_DURATION or f.op == P_WRAPPER:
        rc = small_fields(x, fi, k, -1, True, wire_of(f.extra) if f.op == P_WRAPPER else 0,
                          -1 if f.op == P_WRAPPER else 0, &v1, &e1, &v2, &e2, depth)
        if rc == E_NONE and f.op == P_WRAPPER and f.extra == P_STRING and v1 != NULL and not utf8_ok(v1, e1 - v1):
            return fail(x, fi, v1, E_UTF8, 0)
        return rc
    if f.op != P_MESSAGE and f.op != P_MAP and f.op != P_CUTOFF:
        return E_NONE
    return decode_undo(x, f.child, k, depth + 1, False)   # decoded, then taken back out of the columns


cdef int put_field(Ctx *x, int32_t fi, const Field *f, int32_t head, int32_t tail, int64_t cutoff,
                   int depth) noexcept nogil:
    """Pass 2 for one field: its value(s) from its occurrences (head..tail; those after cutoff)."""
    cdef Col *c = &x.cols[f.col]
    cdef Col *lst
    cdef bint unknown
    cdef int32_t k, last
    cdef int64_t count = 0, before
    cdef int rc
    cdef uint64_t u
    cdef const uint8_t *p
    if f.flags & FL_REPEATED:
        lst = &x.cols[f.list_col]
        if f.op == P_MAP:
            k = head
            while k >= 0:
                rc = entry_unknown(x, fi, f, k, &unknown)
                if rc == E_NONE and unknown:
                    rc = check_occ(x, fi, f, k, depth)       # still parsed by the runtime
                    x.occ[k].wire = -1
                if rc:
                    return rc
                k = x.occ[k].next
            rc = dedupe_map(x, fi, f, head)
            if rc:
                return rc
        k = head
        while k >= 0:
            if x.occ[k].wire < 0:
                k = x.occ[k].next
                continue
            if f.op == P_MESSAGE or f.op == P_MAP:
                rc = put_message(x, f.child, k, -1, True, depth + 1)
            elif f.op == P_STRING or f.op == P_BYTES:
                rc = put_string(x, fi, f, c, k)
            elif f.op >= P_RAW and f.op <= P_CUTOFF:
                rc = put_special(x, fi, f, c, k, -1, True, depth + 1)
            else:
                rc = put_occ_scalars(x, fi, f, c, k, &count)
            if rc:
                return rc
            k = x.occ[k].next
        return put_end(lst, c.length)
    # singular: the last occurrence (messages: all of them, merged)
    if head >= 0 and cutoff >= 0:
        while head >= 0 and x.occ[head].seq <= cutoff:
            rc = check_occ(x, fi, f, head, depth)           # a oneof member's value before another member's
            if rc:
                return rc
            head = x.occ[head].next
    if head < 0:
        if not (f.flags & FL_PRESENCE):
            # a map entry without its message value reads as the message's defaults
            if f.op == P_MESSAGE:
                return put_message(x, f.child, -1, -1, False, depth + 1)
            if f.op >= P_RAW and f.op <= P_CUTOFF:
                return put_special(x, fi, f, c, -1, -1, True, depth + 1)
        return put_null(x, f.col)           # null with presence, else the proto3 default (not nullable)
    if f.op == P_MESSAGE:
        return put_message(x, f.child, head, cutoff, False, depth + 1)
    if f.op >= P_RAW and f.op <= P_CUTOFF:
        return put_special(x, fi, f, c, head, cutoff, False, depth + 1)
    if f.op == P_STRING or f.op == P_BYTES:
        k = head
        while k != tail:                                    # overwritten strings are checked too
            rc = check_occ(x, fi, f, k, depth)
            if rc:
                return rc
            k = x.occ[k].next
        return put_string(x, fi, f, c, tail)
    if not (f.op == P_ENUM and (f.flags & FL_CLOSED)):
        return put_occ_scalars(x, fi, f, c, tail, &count)
    # closed enums: the last known number (unknown ones are unknown fields)
    last = -1
    k = head
    while k >= 0:
        p = x.occ[k].p
        rc = read_scalar(x, f.op, &p, x.occ[k].end, &u)
        if rc:
            return fail(x, fi, x.occ[k].p, rc, 0)
        if not (f.op == P_ENUM and (f.flags & FL_CLOSED) and not enum_known(x, f, <int32_t>u)):
            last = k
        k = x.occ[k].next
    if last < 0:
        return put_null(x, f.col)
    before = c.length
    return put_occ_scalars(x, fi, f, c, last, &count)


cdef int put_message(Ctx *x, int32_t mi, int32_t head, int64_t cutoff, bint single, int depth) noexcept nogil:
    """Read message mi from its occurrences (head: the list; -1: none, all defaults) and append it."""
    cdef const Msg *m = &x.msgs[mi]
    cdef const Field *f
    cdef const Oneof *o
    cdef int64_t base = x.slot_top, occ_mark = x.occ_top, need, cut, best
    cdef int32_t i, j, fi, win, t
    cdef int rc
    cdef void *mem
    if depth > MAX_DEPTH_:
        return fail(x, -1, x.occ[head].p if head >= 0 else x.row.start, E_DEPTH, 0)
    need = base + 2 * m.nfields
    if need > x.slot_cap:
        mem = realloc(x.slots, (need * 2 + 64) * sizeof(int32_t))
        if mem == NULL:
            return E_NOMEM
        x.slots = <int32_t *>mem
        x.slot_cap = need * 2 + 64
    for i in range(2 * m.nfields):
        x.slots[base + i] = -1
    x.slot_top = need
    rc = E_NONE
    if head >= 0:
        rc = scan(x, mi, head, cutoff, single, base, depth)
    if rc == E_NONE:
        for i in range(m.nfields):
            f = &x.fields[m.first + i]
            if f.oneof >= 0:
                continue
            if (f.flags & FL_REQUIRED) and x.slots[base + 2 * i] < 0:
                rc = fail(x, m.first + i, x.row.start, E_REQUIRED, f.number)
                break
            rc = put_field(x, m.first + i, f, x.slots[base + 2 * i], x.slots[base + 2 * i + 1], -1, depth)
            if rc:
                break
    if rc == E_NONE:
        for j in range(m.noneofs):
            o = &x.oneofs[m.first_oneof + j]
            # the member seen last wins; its occurrences before another member's count for nothing
            win = -1
            best = -1
            for i in range(o.nmembers):
                fi = x.table[o.first + i] - m.first
                t = x.slots[base + 2 * fi + 1]
                if t >= 0 and x.occ[t].seq > best:
                    best = x.occ[t].seq
                    win = i
            cut = -1
            for i in range(o.nmembers):
                fi = x.table[o.first + i] - m.first
                t = x.slots[base + 2 * fi + 1]
                if i != win and t >= 0 and x.occ[t].seq > cut:
                    cut = x.occ[t].seq
            for i in range(o.nmembers):
                fi = x.table[o.first + i] - m.first
                f = &x.fields[m.first + fi]
                if i == win:
                    rc = put_field(x, m.first + fi, f, x.slots[base + 2 * fi], x.slots[base + 2 * fi + 1], cut, depth)
                else:
                    t = x.slots[base + 2 * fi]
                    while t >= 0 and rc == E_NONE:           # a member that lost is still parsed by the runtime
                        rc = check_occ(x, m.first + fi, f, t, depth)
                        t = x.occ[t].next
                    if rc == E_NONE:
                        rc = put_null(x, f.col)
                if rc:
                    break
            if rc:
                break
            if win >= 0:
                rc = put_scalar(x, P_INT32, &x.cols[o.which_col], <uint64_t>win)
            else:
                rc = put_null(x, o.which_col)
            if rc:
                break
            rc = put_struct(&x.cols[o.col], win >= 0)
            if rc:
                break
    x.slot_top = base
    x.occ_top = occ_mark
    if rc:
        return rc
    return put_struct(&x.cols[m.col], True)


cdef int read_message(void *ctx, int64_t i, int32_t r, Row *row) noexcept nogil:
    """Row i of the call: one message of the top type (its bytes: one occurrence)."""
    cdef Ctx *x = <Ctx *>ctx
    cdef int whole
    cdef const uint8_t *end
    row.start = starts_span(&x.call, i, &end)
    x.seq = 0
    x.occ_top = 0
    x.slot_top = 0
    whole = new_occ(x)
    if whole < 0:
        return E_NOMEM
    x.occ[whole].p = row.start
    x.occ[whole].end = end
    x.occ[whole].seq = 0
    x.occ[whole].next = -1
    x.occ[whole].wire = 2
    x.seq = 1
    return put_message(x, x.top, whole, -1, True, 0)


# ------------------------------------------------------------------------------------------------

cdef class Program(ColumnPlan):
    """A compiled reader message: its tables and output columns.

    Parameters
    ----------
    fields : int64 array (n, 11)
        number, op, col, list_col, child, flags, oneof, member, extra, extra2, wire per field.
    msgs : int64 array (m, 9)
        first field, field count, dense_off, dense_len, sorted_off, nsorted, col, first oneof, oneof count.
    oneofs : int64 array (k, 4)
        col, which col, first member (in table), member count.
    table : int32 array
    columns : int64 array (c, 5)
        kind, width, first child (in col_children), child count, nullable.
    col_children : int32 array
    top : int
        The message node of every row.
    """
    cdef Field *fields
    cdef Msg *msgs
    cdef Oneof *oneofs
    cdef int32_t *table
    cdef int32_t nfields, nmsgs, noneofs, ntable
    cdef readonly int32_t top

    def __dealloc__(self):
        free(self.fields)
        free(self.msgs)
        free(self.oneofs)
        free(self.table)

    def __init__(self, const int64_t[:, ::1] fields, const int64_t[:, ::1] msgs, const int64_t[:, ::1] oneofs,
                 const int32_t[::1] table, const int64_t[:, ::1] columns, const int32_t[::1] col_children,
                 int32_t top):
        self.set_columns(columns, col_children, 1, 8)
        self.nfields, self.nmsgs, self.noneofs = fields.shape[0], msgs.shape[0], oneofs.shape[0]
        self.ntable = table.shape[0]
        if not 0 <= top < self.nmsgs:
            raise ValueError("top message out of range")
        self.top = top
        self.fields = <Field *>unpack(fields, "iiiiiiiiiii", sizeof(Field), "fields")
        self.msgs = <Msg *>unpack(msgs, "iiiiiiiii", sizeof(Msg), "msgs")
        self.oneofs = <Oneof *>unpack(oneofs, "iiii", sizeof(Oneof), "oneofs")
        self.table = copy_i32(table)
        self._check()

    cdef _check(self):
        """Every reference stays inside the plan: checked once here, not per value."""
        cdef Py_ssize_t i, k
        cdef Field *f
        cdef Msg *m
        cdef Oneof *o
        for i in range(self.nmsgs):
            m = &self.msgs[i]
            if m.first < 0 or m.nfields < 0 or m.first + m.nfields > self.nfields:
                raise ValueError(f"message {i}: fields out of range")
            if m.dense_off < 0 or m.dense_len < 0 or m.dense_off + m.dense_len > self.ntable:
                raise ValueError(f"message {i}: dense table out of range")
            if m.sorted_off < 0 or m.nsorted < 0 or m.sorted_off + 2 * m.nsorted > self.ntable:
                raise ValueError(f"message {i}: sorted table out of range")
            for k in range(m.dense_len):
                if not -1 <= self.table[m.dense_off + k] < m.nfields:
                    raise ValueError(f"message {i}: dense entry out of range")
            for k in range(m.nsorted):
                if not 0 <= self.table[m.sorted_off + 2 * k + 1] < m.nfields:
                    raise ValueError(f"message {i}: sorted entry out of range")
            if not 0 <= m.col < self.ncols or self.columns[m.col, 0] != K_STRUCT:
                raise ValueError(f"message {i}: column is not a struct")
            if m.first_oneof < 0 or m.noneofs < 0 or m.first_oneof + m.noneofs > self.noneofs:
                raise ValueError(f"message {i}: oneofs out of range")
            for k in range(m.noneofs):
                o = &self.oneofs[m.first_oneof + k]
                if o.first < 0 or o.nmembers < 0 or o.first + o.nmembers > self.ntable:
                    raise ValueError(f"oneof {k}: members out of range")
                for j in range(o.nmembers):
                    if not m.first <= self.table[o.first + j] < m.first + m.nfields:
                        raise ValueError(f"oneof {k}: member outside its message")
                if not (0 <= o.col < self.ncols and 0 <= o.which_col < self.ncols):
                    raise ValueError(f"oneof {k}: column out of range")
                if self.columns[o.which_col, 0] != K_FIXED or self.columns[o.which_col, 1] != 4 \
                        or self.columns[o.col, 0] != K_STRUCT:
                    raise ValueError(f"oneof {k}: column kinds")
        for i in range(self.nfields):
            f = &self.fields[i]
            if not P_INT32 <= f.op <= P_CUTOFF:
                raise ValueError(f"field {i}: unknown op")
            if not 0 <= f.col < self.ncols:
                raise ValueError(f"field {i}: column out of range")
            if (f.flags & FL_REPEATED) and not 0 <= f.list_col < self.ncols:
                raise ValueError(f"field {i}: list column out of range")
            if (f.flags & FL_REPEATED) and self.columns[f.list_col, 0] not in (K_LIST, K_MAP):
                raise ValueError(f"field {i}: list column kind")
            if f.op in (P_MESSAGE, P_MAP, P_CUTOFF) and not 0 <= f.child < self.nmsgs:
                raise ValueError(f"field {i}: child message out of range")
            if f.op == P_MAP and (self.msgs[f.child].nfields != 2 or not (f.flags & FL_REPEATED)):
                raise ValueError(f"field {i}: a map entry has a key and a value")
            if f.op in (P_MESSAGE, P_MAP) and self.msgs[f.child].col != f.col:
                raise ValueError(f"field {i}: the child message writes another column")
            if f.op == P_ENUM and (f.flags & FL_CLOSED) and (f.extra < 0 or f.extra2 < 0
                                                              or f.extra + f.extra2 > self.ntable):
                raise ValueError(f"field {i}: enum numbers out of range")
            if f.op in (P_TIMESTAMP, P_DURATION) and f.extra not in (1, 1000):
                raise ValueError(f"field {i}: unknown time unit")
            if f.op == P_RAW and not 0 <= f.extra <= 2:
                raise ValueError(f"field {i}: unknown JSON message kind")
            if f.op == P_WRAPPER and not (P_INT32 <= f.extra <= P_BYTES and f.extra != P_ENUM):
                raise ValueError(f"field {i}: wrapper of an unknown op")
            if f.wire != wire_of(f.op):
                raise ValueError(f"field {i}: wire type does not match the op")
            if f.oneof >= self.noneofs:
                raise ValueError(f"field {i}: oneof out of range")
            kind = self.columns[f.col, 0]
            width = self.columns[f.col, 1]
            if f.op in (P_MESSAGE, P_MAP):
                ok = kind == K_STRUCT
            elif f.op in (P_STRING, P_BYTES, P_RAW, P_CUTOFF) or (f.op == P_WRAPPER and f.extra in (P_STRING, P_BYTES)):
                ok = kind == K_VAR
            elif f.op == P_BOOL or (f.op == P_WRAPPER and f.extra == P_BOOL):
                ok = kind == K_BOOL
            else:
                inner = f.extra if f.op == P_WRAPPER else f.op
                ok = kind == K_FIXED and width == (8 if inner in (P_INT64, P_UINT64, P_SINT64, P_FIXED64,
                                                                  P_SFIXED64, P_DOUBLE, P_TIMESTAMP,
                                                                  P_DURATION) else 4)
            if not ok:
                raise ValueError(f"field {i}: column kind does not fit the op")

    def decode(self, const int64_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] starts,
               const int32_t[::1] roots, int64_t start):
        """Decode rows [start, n) of a binary column; row i's message is data[starts[i]:offsets[i + 1]].

        roots[i]: 0 decode; -1 a null value (stays null, no error); < -1 an error found before
        (code -roots[i]).

        Returns (status, stop, columns, errors): STATUS_OK, or STATUS_FULL when a column's int32
        offsets would overflow at row `stop` (call again from there). columns: per column (length,
        null count, validity, data, offsets). errors: the rows with an error (row, code, byte position
        in the value, field, detail, more); a row decoded with fields nulled (their columns cannot
        hold them) has the first one's code + FIELD_ERROR, and how many more.
        """
        cdef Ctx x
        cdef Rules rules
        memset(&x, 0, sizeof(Ctx))
        cdef int64_t n = check_starts(offsets, data, starts, roots, start, &x.call)
        rules.too_large, rules.big_node, rules.pre_node, rules.top = E_TOO_LARGE, -1, -1, self.msgs[self.top].col
        x.fields, x.msgs, x.oneofs, x.table = self.fields, self.msgs, self.oneofs, self.table
        x.ncols, x.col_children, x.top = self.ncols, self.col_children, self.top
        try:
            return self.read(read_message, &x, &x.row, &x.cols, &roots[0] if n else NULL, start, n, &rules,
                             "decoding Protobuf values")
        finally:
            free(x.occ)
            free(x.slots)
            free(x.scratch)
