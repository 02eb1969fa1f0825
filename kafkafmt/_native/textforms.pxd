# cython: language_level=3
"""Values written as text, read without the GIL: RFC 3339 date-times and dates, base64, the hex digits of
escapes, a checked number token as a double, the text form of a UUID -- what the JSON kernel reads inside
strings and numbers (and the Avro kernel's uuid check), apart from the JSON grammar around them.
"""
from libc.stdint cimport uint8_t, uint32_t, int64_t
from libc.string cimport memcpy
from libc.stdlib cimport malloc, free, strtod
from libc.math cimport NAN, INFINITY


cdef inline int hexval(uint8_t c) noexcept nogil:
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


cdef inline double to_double(const uint8_t *s, int64_t n) noexcept nogil:
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


cdef inline int64_t days_from_civil(int64_t y, int64_t m, int64_t d) noexcept nogil:
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


cdef inline bint parse_date(const uint8_t *s, int64_t n, int64_t *days) noexcept nogil:
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


cdef inline bint parse_datetime(const uint8_t *s, int64_t n, int64_t *secs, int64_t *ns) noexcept nogil:
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


cdef inline int64_t b64decode(const uint8_t *s, int64_t n, uint8_t *out) noexcept nogil:
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


cdef inline bint uuid_ok(const uint8_t *s, int64_t n) noexcept nogil:
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
