# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Avro values as JSON text, as kafka-avro-console-consumer prints them (Jackson 2's generator, Java's
number texts), from their Arrow columns: a whole column per call, by a text plan compiled from the reader
schema and the Arrow type (kafkafmt.values.avro._json). A concern of its own beside the decoder
(kafkafmt._native.avro): it reads Arrow arrays, not Avro bytes.
"""
import numpy as np
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport calloc, realloc, free

from kafkafmt._native.arrowcols cimport AC_OK, AC_NOMEM, grow_bytes


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


cdef inline int out_grow(Out *o, int64_t need) noexcept nogil:
    return grow_bytes(&o.buf, &o.cap, o.len + need, 4096)


cdef inline int out_put(Out *o, const uint8_t *s, int64_t n) noexcept nogil:
    if o.len + n > o.cap and out_grow(o, n):
        return AC_NOMEM
    memcpy(o.buf + o.len, s, n)
    o.len += n
    return AC_OK


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


cdef inline uint8_t *u_escape(uint8_t *w, uint32_t u) noexcept nogil:
    """\\uXXXX (upper-case hex) of UTF-16 code unit u at w; returns the end."""
    w[0] = 92
    w[1] = 117
    w[2] = HEX[(u >> 12) & 15]
    w[3] = HEX[(u >> 8) & 15]
    w[4] = HEX[(u >> 4) & 15]
    w[5] = HEX[u & 15]
    return w + 6


cdef int put_json_string(Out *o, const uint8_t *s, int64_t n, bint latin1) noexcept nogil:
    """s as a JSON string the way Jackson 2's UTF-8 generator writes it: quotes, backslashes and control
    characters escaped (\\u00XX upper case; \\b \\t \\f \\n \\r short), characters beyond the BMP as their
    two UTF-16 surrogates, the rest as UTF-8. latin1: s's bytes are code points 0-255."""
    cdef int64_t i
    cdef uint8_t c
    cdef uint32_t cp
    cdef uint8_t *w
    if o.len + 2 + 6 * n > o.cap and out_grow(o, 2 + 6 * n):
        return AC_NOMEM
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
                w = u_escape(w, c)
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
            w = u_escape(u_escape(w, 0xD800 + (cp >> 10)), 0xDC00 + (cp & 0x3FF))
            i += 4
            continue
        w[0] = c                         # other UTF-8 bytes as they are
        w += 1
        i += 1
    w[0] = 34
    w += 1
    o.len = w - o.buf
    return AC_OK


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
            return AC_NOMEM
        for k in range(t.nchild):
            key = &nodes[children[t.child0 + k]]
            if (k and out_put(o, <const uint8_t *>",", 1)) or out_put(o, key.key, key.nkey):
                return AC_NOMEM
            rc = put_text(nodes, children, children[t.child0 + k], i, o)
            if rc:
                return rc
        return out_put(o, <const uint8_t *>"}", 1)
    if t.kind == T_WRAP:
        if out_put(o, t.text, t.ntext):
            return AC_NOMEM
        rc = put_text(nodes, children, children[t.child0], i, o)
        if rc:
            return rc
        return out_put(o, <const uint8_t *>"}", 1)
    if t.kind == T_ARR or t.kind == T_MAP:
        a = t.offs[j]
        b = t.offs[j + 1]
        if out_put(o, <const uint8_t *>("[" if t.kind == T_ARR else "{"), 1):
            return AC_NOMEM
        while a < b:
            if t.kind == T_MAP:
                key = &nodes[children[t.child0]]
                v64 = key.offset + a
                rc = put_json_string(o, key.data + key.offs[v64], key.offs[v64 + 1] - key.offs[v64], False)
                if rc or out_put(o, <const uint8_t *>":", 1):
                    return AC_NOMEM
                rc = put_text(nodes, children, children[t.child0 + 1], a, o)
            else:
                rc = put_text(nodes, children, children[t.child0], a, o)
            if rc:
                return rc
            a += 1
            if a < b and out_put(o, <const uint8_t *>",", 1):
                return AC_NOMEM
        return out_put(o, <const uint8_t *>("]" if t.kind == T_ARR else "}"), 1)
    if t.kind == T_ENUM:
        v32 = (<const int32_t *>t.data)[j]
        return out_put(o, t.text + t.text_offs[v32], t.text_offs[v32 + 1] - t.text_offs[v32])
    if t.kind == T_BYTES:
        if t.width:
            return put_json_string(o, t.data + j * t.width, t.width, True)
        return put_json_string(o, t.data + t.offs[j], t.offs[j + 1] - t.offs[j], True)
    return out_put(o, <const uint8_t *>"null", 4)


cdef const uint8_t *_bytes(object buf, list keep, int64_t *n) except? NULL:
    """The bytes of an object with the buffer protocol, kept alive in ``keep`` (None: NULL; n: their count)."""
    cdef const uint8_t[::1] mv
    if buf is None:
        return NULL
    mv = np.frombuffer(buf, np.uint8)
    keep.append(mv)
    if n != NULL:
        n[0] = mv.shape[0]
    return &mv[0] if mv.shape[0] else <const uint8_t *>""


def avro_text(list nodes, const int32_t[::1] children, int32_t top, int64_t n):
    """Each of n rows of the text plan ``nodes`` (per node: kind, child0, nchild, width, validity, offset,
    data, offsets, key, text, text offsets -- buffers as objects with the buffer protocol, or None) as
    JSON text: (int64 offsets, UTF-8 data) NumPy arrays ("null" where the top node is null)."""
    cdef Py_ssize_t m = len(nodes), k
    cdef TNode *t = <TNode *>calloc(max(1, m), sizeof(TNode))
    cdef Out o
    cdef int64_t i
    cdef int rc = AC_OK
    keep = []
    if t == NULL:
        raise MemoryError()
    memset(&o, 0, sizeof(Out))
    offs_a = np.empty(n + 1, np.int64)
    cdef int64_t[::1] offs = offs_a
    cdef uint8_t[::1] dv
    try:
        for k in range(m):
            kind, child0, nchild, width, valid, offset, data, offsets, key, text, text_offs = nodes[k]
            t[k].kind = kind
            t[k].child0 = child0
            t[k].nchild = nchild
            t[k].width = width
            t[k].offset = offset
            t[k].valid = _bytes(valid, keep, NULL)
            t[k].data = _bytes(data, keep, NULL)
            t[k].offs = <const int32_t *>_bytes(offsets, keep, NULL)
            t[k].key = _bytes(key, keep, &t[k].nkey)
            t[k].text = _bytes(text, keep, &t[k].ntext)
            t[k].text_offs = <const int64_t *>_bytes(text_offs, keep, NULL)
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

