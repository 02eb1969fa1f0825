/*
 * kfmt.h -- C-level helpers shared by kafkafmt's Cython modules.
 *
 *  - big-endian loads (Kafka's fixed-width fields are big-endian)
 *  - Kafka varints: zigzag-encoded base-128 varint (int32, at most 5 bytes) and varlong
 *    (int64, at most 10 bytes), as in org.apache.kafka.common.utils.ByteUtils
 *  - crc32c (Castagnoli; v2 batches): SSE4.2 instruction when the CPU has it, else slicing-by-8 tables
 *  - crc32 (IEEE; v0/v1 messages): carry-less-multiply folding (PCLMULQDQ) when the CPU has it,
 *    else slicing-by-8 tables
 *  - both, from 256 bytes: carry-less-multiply folding 512 bits wide (AVX-512 VPCLMULQDQ) when
 *    the CPU has it
 *  - on ARMv8 (aarch64), both by the CRC32 / CRC32C instructions of the CRC extension (mandatory
 *    from ARMv8.1; Linux: HWCAP_CRC32, Apple silicon: always)
 *  The hardware paths are picked at run time (cpuid, getauxval); KAFKAFMT_CRC_SOFTWARE=1 in the
 *  environment forces the tables (for tests and comparisons).
 *
 * Every reader takes an explicit end pointer and never reads at or past it.
 */
#ifndef KFMT_H
#define KFMT_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <stdlib.h>

#if defined(__GNUC__) || defined(__clang__)
#define KFMT_LIKELY(x) __builtin_expect(!!(x), 1)
#define KFMT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define KFMT_HOT static inline __attribute__((always_inline))
#else
#define KFMT_LIKELY(x) (x)
#define KFMT_UNLIKELY(x) (x)
#define KFMT_HOT static inline
#endif

/* ---- big-endian loads (caller checks bounds) ---------------------------------------------- */

static inline uint16_t kfmt_be16(const uint8_t *p) {
    return (uint16_t)(((uint16_t)p[0] << 8) | p[1]);
}
static inline uint32_t kfmt_be32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_bswap32(v);
#else
    return ((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >> 8) & 0xff00) | (v >> 24);
#endif
}
static inline uint64_t kfmt_be64(const uint8_t *p) {
    return ((uint64_t)kfmt_be32(p) << 32) | kfmt_be32(p + 4);
}

/* ---- varints ------------------------------------------------------------------------------- */

/* Reads a zigzag varint32 (kfmt_varint: at most 5 bytes) or varlong (kfmt_varlong: at most 10) at *pp
 * (bounded by end). Returns 0 on success and advances *pp; -1 when the input ends inside the varint;
 * -2 when it is longer than its most bytes. With that many bytes left (nearly always) the bytes are
 * read without a bound check each. Both are one definition, expanded for each width. */
#define KFMT_ZIGZAG_READ(name, U, S, MAXB, MAXSHIFT)                                  \
KFMT_HOT int name(const uint8_t **pp, const uint8_t *end, S *out) {                  \
    const uint8_t *p = *pp;                                                          \
    U v = 0;                                                                         \
    int shift = 0;                                                                   \
    if (KFMT_LIKELY(end - p >= MAXB)) {                                              \
        for (int i = 0; i < MAXB; i++) {                                             \
            U b = p[i];                                                              \
            v |= (b & 0x7f) << (7 * i);                                              \
            if (b < 0x80) {                                                          \
                *pp = p + i + 1;                                                     \
                *out = (S)((v >> 1) ^ (~(v & 1) + 1));                               \
                return 0;                                                            \
            }                                                                        \
        }                                                                            \
        return -2;                                                                   \
    }                                                                                \
    for (;;) {                                                                       \
        if (KFMT_UNLIKELY(p >= end)) return -1;                                      \
        uint8_t b = *p++;                                                            \
        v |= (U)(b & 0x7f) << shift;                                                 \
        if (!(b & 0x80)) break;                                                      \
        shift += 7;                                                                  \
        if (KFMT_UNLIKELY(shift > MAXSHIFT)) return -2;                              \
    }                                                                                \
    *pp = p;                                                                         \
    *out = (S)((v >> 1) ^ (~(v & 1) + 1));                                           \
    return 0;                                                                        \
}
KFMT_ZIGZAG_READ(kfmt_varint, uint32_t, int32_t, 5, 28)
KFMT_ZIGZAG_READ(kfmt_varlong, uint64_t, int64_t, 10, 63)

/* A varint length (negative: null, returned as -1) and that many bytes at *pp, bounded by end:
 * 0 with *data and *length set and *pp past them; -1 when they run past end; -2 when the varint
 * is longer than 5 bytes. (The hot loops call these directly: always inlined, whatever the
 * compiler's size limits.) */
KFMT_HOT int kfmt_bytes(const uint8_t **pp, const uint8_t *end, const uint8_t **data, int32_t *length) {
    int rc = kfmt_varint(pp, end, length);
    if (KFMT_UNLIKELY(rc)) return rc;
    if (*length < 0) *length = -1;
    *data = *pp;
    if (*length > 0) {
        if (KFMT_UNLIKELY(*length > end - *pp)) return -1;
        *pp += *length;
    }
    return 0;
}

/* Writes v as a zigzag varint32 (kfmt_put_varint: room for 5 bytes needed) or varlong (kfmt_put_varlong:
 * 10) at p; returns the bytes written. kfmt_varint_size / kfmt_varlong_size: how many that is. */
#define KFMT_ZIGZAG_WRITE(put, size, U, S, BITS)                                     \
static inline int put(uint8_t *p, S v) {                                             \
    U u = ((U)v << 1) ^ (U)(v >> (BITS - 1));                                        \
    int n = 0;                                                                       \
    while (u >= 0x80) {                                                              \
        p[n++] = (uint8_t)(u | 0x80);                                                \
        u >>= 7;                                                                     \
    }                                                                                \
    p[n++] = (uint8_t)u;                                                             \
    return n;                                                                        \
}                                                                                    \
static inline int size(S v) {                                                       \
    U u = ((U)v << 1) ^ (U)(v >> (BITS - 1));                                        \
    int n = 1;                                                                       \
    while (u >= 0x80) { u >>= 7; n++; }                                              \
    return n;                                                                        \
}
KFMT_ZIGZAG_WRITE(kfmt_put_varint, kfmt_varint_size, uint32_t, int32_t, 32)
KFMT_ZIGZAG_WRITE(kfmt_put_varlong, kfmt_varlong_size, uint64_t, int64_t, 64)

static inline void kfmt_put_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void kfmt_put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void kfmt_put_be64(uint8_t *p, uint64_t v) {
    kfmt_put_be32(p, (uint32_t)(v >> 32));
    kfmt_put_be32(p + 4, (uint32_t)v);
}

/* ---- copies ----------------------------------------------------------------------------- */

/* memcpy(d, s, n) for the short fields of records (keys, header names), without a call: up to 32
 * bytes by two overlapping loads and stores of the widest size that fits, writing only d[0:n]. */
KFMT_HOT void kfmt_copy(uint8_t *d, const uint8_t *s, size_t n) {
    if (n >= 16) {
        if (n > 32) {
            memcpy(d, s, n);
        } else {
            uint64_t a, b, c, e;
            memcpy(&a, s, 8); memcpy(&b, s + 8, 8); memcpy(&c, s + n - 16, 8); memcpy(&e, s + n - 8, 8);
            memcpy(d, &a, 8); memcpy(d + 8, &b, 8); memcpy(d + n - 16, &c, 8); memcpy(d + n - 8, &e, 8);
        }
    } else if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8); memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8); memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4); memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4); memcpy(d + n - 4, &b, 4);
    } else if (n > 0) {
        d[0] = s[0];
        d[n >> 1] = s[n >> 1];
        d[n - 1] = s[n - 1];
    }
}

/* ---- CRC tables ---------------------------------------------------------------------------- */

static uint32_t kfmt_crc32c_table[8][256];
static uint32_t kfmt_crc32_table[8][256];
static uint32_t kfmt_shift_long[4][256];   /* crc32c register advanced over KFMT_LONG zero bytes */
static uint32_t kfmt_shift_short[4][256];  /* ... over KFMT_SHORT zero bytes */
#define KFMT_LONG 8192
#define KFMT_SHORT 256
static int kfmt_crc_ready = 0;
static int kfmt_have_sse42 = 0;
static int kfmt_have_pclmul = 0;
static int kfmt_have_vpclmul = 0;   /* AVX-512 carry-less multiplies (both CRCs, long inputs) */
static int kfmt_have_armcrc = 0;

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_acle.h>
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif
#define KFMT_ARM_CRC 1
#endif

static void kfmt_make_table(uint32_t table[8][256], uint32_t poly) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = table[0][i];
        for (int t = 1; t < 8; t++) {
            c = table[0][c & 0xff] ^ (c >> 8);
            table[t][i] = c;
        }
    }
}

/* The crc32c register is linear over GF(2): running it over n zero bytes is a linear map of the
 * register. Tabulate that map for n bytes, byte lane by byte lane, from the images of the 32
 * unit vectors. */
static void kfmt_make_shift(uint32_t shift[4][256], size_t nbytes) {
    uint32_t basis[32];
    for (int bit = 0; bit < 32; bit++) {
        uint32_t x = (uint32_t)1 << bit;
        for (size_t i = 0; i < nbytes; i++) x = kfmt_crc32c_table[0][x & 0xff] ^ (x >> 8);
        basis[bit] = x;
    }
    for (int lane = 0; lane < 4; lane++) {
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t img = 0;
            for (int j = 0; j < 8; j++)
                if (v & (1u << j)) img ^= basis[8 * lane + j];
            shift[lane][v] = img;
        }
    }
}

static inline uint32_t kfmt_shift(uint32_t shift[4][256], uint32_t x) {
    return shift[0][x & 0xff] ^ shift[1][(x >> 8) & 0xff] ^ shift[2][(x >> 16) & 0xff] ^ shift[3][x >> 24];
}

/* Must be called once (with the GIL) before any CRC function. */
static void kfmt_crc_init(void) {
    if (kfmt_crc_ready) return;
    kfmt_make_table(kfmt_crc32c_table, 0x82F63B78u);
    kfmt_make_table(kfmt_crc32_table, 0xEDB88320u);
    kfmt_make_shift(kfmt_shift_long, KFMT_LONG);
    kfmt_make_shift(kfmt_shift_short, KFMT_SHORT);
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    const char *soft = getenv("KAFKAFMT_CRC_SOFTWARE");
    if (!(soft && soft[0] && strcmp(soft, "0") != 0)) {
        __builtin_cpu_init();
        kfmt_have_sse42 = __builtin_cpu_supports("sse4.2");
        kfmt_have_pclmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
        kfmt_have_vpclmul = kfmt_have_pclmul && kfmt_have_sse42 && __builtin_cpu_supports("avx512f") &&
                            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq");
    }
#endif
#if defined(KFMT_ARM_CRC)
    const char *soft_arm = getenv("KAFKAFMT_CRC_SOFTWARE");
    if (!(soft_arm && soft_arm[0] && strcmp(soft_arm, "0") != 0)) {
#if defined(__APPLE__)
        kfmt_have_armcrc = 1;
#elif defined(__linux__)
        kfmt_have_armcrc = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#endif
    }
#endif
    kfmt_crc_ready = 1;
}

static inline uint32_t kfmt_crc_sw(uint32_t table[8][256], uint32_t crc, const uint8_t *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) {
        crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        lo = __builtin_bswap32(lo);
        hi = __builtin_bswap32(hi);
#endif
        lo ^= crc;
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
              table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if (defined(__x86_64__)) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
__attribute__((target("sse4.2")))
static inline uint64_t kfmt_hw_words(uint64_t c, const uint8_t *p, size_t words) {
    for (size_t i = 0; i < words; i++) {
        uint64_t a;
        memcpy(&a, p + 8 * i, 8);
        c = _mm_crc32_u64(c, a);
    }
    return c;
}

/* Three streams of `len` bytes run side by side (the instruction has a 3-cycle latency but
 * issues every cycle), then are joined: reg(A|B) = shift_len(reg(A)) ^ reg_from_zero(B). */
#define KFMT_THREE_WAY(len, table)                                                   \
    while (n >= 3 * (size_t)(len)) {                                                 \
        uint64_t c1 = 0, c2 = 0;                                                     \
        const uint8_t *p1 = p + (len), *p2 = p + 2 * (len);                          \
        for (size_t i = 0; i < (len) / 8; i++) {                                     \
            uint64_t a, b, d;                                                        \
            memcpy(&a, p + 8 * i, 8);                                                \
            memcpy(&b, p1 + 8 * i, 8);                                               \
            memcpy(&d, p2 + 8 * i, 8);                                               \
            c = _mm_crc32_u64(c, a);                                                 \
            c1 = _mm_crc32_u64(c1, b);                                               \
            c2 = _mm_crc32_u64(c2, d);                                               \
        }                                                                            \
        c = kfmt_shift(table, (uint32_t)c) ^ (uint32_t)c1;                           \
        c = kfmt_shift(table, (uint32_t)c) ^ (uint32_t)c2;                           \
        p += 3 * (size_t)(len);                                                      \
        n -= 3 * (size_t)(len);                                                      \
    }

__attribute__((target("sse4.2")))
static uint32_t kfmt_crc32c_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    while (n && ((uintptr_t)p & 7)) {
        c = _mm_crc32_u8((uint32_t)c, *p++);
        n--;
    }
    KFMT_THREE_WAY(KFMT_LONG, kfmt_shift_long)
    KFMT_THREE_WAY(KFMT_SHORT, kfmt_shift_short)
    c = kfmt_hw_words(c, p, n / 8);
    p += n & ~(size_t)7;
    n &= 7;
    while (n--) c = _mm_crc32_u8((uint32_t)c, *p++);
    return (uint32_t)c;
}
#endif

#if defined(KFMT_ARM_CRC)
/* ARMv8 CRC extension: 8 bytes per instruction; four independent instructions per step keep the
 * unit busy only within one stream, so the loop is latency-bound (~3 cycles / 8 bytes). */
#define KFMT_ARM_CRC_FN(name, op8, op1)                                               \
    __attribute__((target("+crc")))                                                  \
    static uint32_t name(uint32_t c, const uint8_t *p, size_t n) {                   \
        while (n && ((uintptr_t)p & 7)) {                                            \
            c = op1(c, *p++);                                                        \
            n--;                                                                     \
        }                                                                            \
        while (n >= 8) {                                                             \
            uint64_t v;                                                              \
            memcpy(&v, p, 8);                                                        \
            c = op8(c, v);                                                           \
            p += 8;                                                                  \
            n -= 8;                                                                  \
        }                                                                            \
        while (n--) c = op1(c, *p++);                                                \
        return c;                                                                    \
    }
KFMT_ARM_CRC_FN(kfmt_crc32c_arm, __crc32cd, __crc32cb)
KFMT_ARM_CRC_FN(kfmt_crc32_arm, __crc32d, __crc32b)
#endif

#if (defined(__x86_64__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* Folding constants (bit-reflected x^k mod P, shifted left by one) for 256, 64 and 16 bytes ahead:
 * x^2080, x^2016, x^544, x^480, x^160, x^96. */
static const uint64_t kfmt_fold_crc32c[6] = {0xdcb17aa4, 0xb9e02b86, 0x740eef02, 0x9e4addf8, 0xf20c0dfe, 0x14cd00bd6};
static const uint64_t kfmt_fold_crc32[6] = {0x11542778a, 0x1322d1430, 0x154442bd4, 0x1c6e41596, 0x1751997d0,
                                            0x0ccaa009e};

#define KFMT_FOLD512(x, k, d)                                                     \
    do {                                                                          \
        __m512i lo_ = _mm512_clmulepi64_epi128((x), (k), 0x00);                   \
        __m512i hi_ = _mm512_clmulepi64_epi128((x), (k), 0x11);                   \
        (x) = _mm512_ternarylogic_epi64(lo_, hi_, (d), 0x96);                     \
    } while (0)
#define KFMT_FOLD128(x, k, d)                                                     \
    do {                                                                          \
        __m128i lo_ = _mm_clmulepi64_si128((x), (k), 0x00);                       \
        __m128i hi_ = _mm_clmulepi64_si128((x), (k), 0x11);                       \
        (x) = _mm_xor_si128(_mm_xor_si128(lo_, hi_), (d));                        \
    } while (0)

/* The folding of kfmt_crc32_clmul (below) four 512-bit registers wide: 256 bytes per step, each
 * 128-bit lane folded 2048 bits ahead, then the registers into one, its lanes into one 128-bit
 * state, and whole 16-byte blocks into that. Stores the state (whose CRC, from a zero register,
 * is that of the bytes consumed, `crc` taken in) and returns how many bytes it consumed (all but
 * the last n % 16). Needs n >= 256. */
__attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))
static size_t kfmt_fold_avx512(uint32_t crc, const uint8_t *p, size_t n, const uint64_t k[6], uint8_t state[16]) {
    const __m512i k256 = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k[1], (long long)k[0]));
    const __m512i k64 = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)k[3], (long long)k[2]));
    const __m128i k16 = _mm_set_epi64x((long long)k[5], (long long)k[4]);
    const uint8_t *start = p;
    __m512i x0 = _mm512_loadu_si512((const void *)p), x1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i x2 = _mm512_loadu_si512((const void *)(p + 128)), x3 = _mm512_loadu_si512((const void *)(p + 192));
    x0 = _mm512_xor_si512(x0, _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128((int)crc), 0));
    p += 256;
    n -= 256;
    while (n >= 256) {
        KFMT_FOLD512(x0, k256, _mm512_loadu_si512((const void *)p));
        KFMT_FOLD512(x1, k256, _mm512_loadu_si512((const void *)(p + 64)));
        KFMT_FOLD512(x2, k256, _mm512_loadu_si512((const void *)(p + 128)));
        KFMT_FOLD512(x3, k256, _mm512_loadu_si512((const void *)(p + 192)));
        p += 256;
        n -= 256;
    }
    KFMT_FOLD512(x0, k64, x1);
    KFMT_FOLD512(x0, k64, x2);
    KFMT_FOLD512(x0, k64, x3);
    while (n >= 64) {
        KFMT_FOLD512(x0, k64, _mm512_loadu_si512((const void *)p));
        p += 64;
        n -= 64;
    }
    __m128i a = _mm512_extracti32x4_epi32(x0, 0);
    KFMT_FOLD128(a, k16, _mm512_extracti32x4_epi32(x0, 1));
    KFMT_FOLD128(a, k16, _mm512_extracti32x4_epi32(x0, 2));
    KFMT_FOLD128(a, k16, _mm512_extracti32x4_epi32(x0, 3));
    while (n >= 16) {
        KFMT_FOLD128(a, k16, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    _mm_storeu_si128((__m128i *)state, a);
    return (size_t)(p - start);
}

/* crc32c of long inputs: the 512-bit folding, its state and the tail by the SSE4.2 instruction. */
__attribute__((target("sse4.2")))
static uint32_t kfmt_crc32c_avx512(uint32_t crc, const uint8_t *p, size_t n) {
    uint8_t state[16];
    size_t used = kfmt_fold_avx512(crc, p, n, kfmt_fold_crc32c, state);
    uint64_t lo, hi;
    memcpy(&lo, state, 8);
    memcpy(&hi, state + 8, 8);
    uint32_t c = (uint32_t)_mm_crc32_u64(_mm_crc32_u64(0, lo), hi);
    return kfmt_crc32c_hw(c, p + used, n - used);
}
#endif

#define KFMT_AVX512_MIN 256      /* inputs from this size take the 512-bit folding when the CPU has it */

/* crc32c of n bytes (Kafka's Crc32C.compute). */
static inline uint32_t kfmt_crc32c(const uint8_t *p, size_t n) {
#if (defined(__x86_64__)) && (defined(__GNUC__) || defined(__clang__))
    if (kfmt_have_vpclmul && n >= KFMT_AVX512_MIN) return ~kfmt_crc32c_avx512(0xFFFFFFFFu, p, n);
    if (kfmt_have_sse42) return ~kfmt_crc32c_hw(0xFFFFFFFFu, p, n);
#endif
#if defined(KFMT_ARM_CRC)
    if (kfmt_have_armcrc) return ~kfmt_crc32c_arm(0xFFFFFFFFu, p, n);
#endif
    return ~kfmt_crc_sw(kfmt_crc32c_table, 0xFFFFFFFFu, p, n);
}

#if (defined(__x86_64__)) && (defined(__GNUC__) || defined(__clang__))
#include <wmmintrin.h>
#include <smmintrin.h>
/* crc32 (reflected polynomial 0xEDB88320) by carry-less multiplication, after Intel's "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ" (Gopal et al., 2009): four 128-bit
 * accumulators each fold 512 bits ahead per step (x^544 / x^480 mod P), are folded into one
 * (x^160 / x^96 mod P), which then folds 16 bytes at a time. The folded 128 bits have the same CRC
 * contribution as the bytes they replace, so the last 16 bytes of state and the sub-16-byte tail
 * are finished with the tables (no Barrett reduction needed). Constants: bit-reflected
 * x^k mod P, shifted left by one, as the reflected domain needs. Needs n >= 64. */
#define KFMT_CLMUL_FOLD(x, k, d)                                                 \
    do {                                                                         \
        __m128i lo_ = _mm_clmulepi64_si128((x), (k), 0x00);                      \
        __m128i hi_ = _mm_clmulepi64_si128((x), (k), 0x11);                      \
        (x) = _mm_xor_si128(_mm_xor_si128(lo_, hi_), (d));                       \
    } while (0)

__attribute__((target("pclmul,sse4.1")))
static uint32_t kfmt_crc32_clmul(uint32_t crc, const uint8_t *p, size_t n) {
    const __m128i k512 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);   /* x^480, x^544 */
    const __m128i k128 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);   /* x^96, x^160 */
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)crc));
    p += 64;
    n -= 64;
    while (n >= 64) {
        KFMT_CLMUL_FOLD(x0, k512, _mm_loadu_si128((const __m128i *)p));
        KFMT_CLMUL_FOLD(x1, k512, _mm_loadu_si128((const __m128i *)(p + 16)));
        KFMT_CLMUL_FOLD(x2, k512, _mm_loadu_si128((const __m128i *)(p + 32)));
        KFMT_CLMUL_FOLD(x3, k512, _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    KFMT_CLMUL_FOLD(x0, k128, x1);
    KFMT_CLMUL_FOLD(x0, k128, x2);
    KFMT_CLMUL_FOLD(x0, k128, x3);
    while (n >= 16) {
        KFMT_CLMUL_FOLD(x0, k128, _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    uint8_t rest[16] __attribute__((aligned(16)));
    _mm_storeu_si128((__m128i *)rest, x0);
    crc = kfmt_crc_sw(kfmt_crc32_table, 0, rest, 16);
    return kfmt_crc_sw(kfmt_crc32_table, crc, p, n);
}
#endif

/* crc32 (IEEE, as java.util.zip.CRC32) of n bytes. */
static inline uint32_t kfmt_crc32(const uint8_t *p, size_t n) {
#if (defined(__x86_64__)) && (defined(__GNUC__) || defined(__clang__))
    if (kfmt_have_vpclmul && n >= KFMT_AVX512_MIN) {
        uint8_t state[16];
        size_t used = kfmt_fold_avx512(0xFFFFFFFFu, p, n, kfmt_fold_crc32, state);
        return ~kfmt_crc_sw(kfmt_crc32_table, kfmt_crc_sw(kfmt_crc32_table, 0, state, 16), p + used, n - used);
    }
    if (kfmt_have_pclmul && n >= 64) return ~kfmt_crc32_clmul(0xFFFFFFFFu, p, n);
#endif
#if defined(KFMT_ARM_CRC)
    if (kfmt_have_armcrc) return ~kfmt_crc32_arm(0xFFFFFFFFu, p, n);
#endif
    return ~kfmt_crc_sw(kfmt_crc32_table, 0xFFFFFFFFu, p, n);
}

/* The table-driven versions, whatever the CPU (tests compare both paths). */
static inline uint32_t kfmt_crc32_table_only(const uint8_t *p, size_t n) {
    return ~kfmt_crc_sw(kfmt_crc32_table, 0xFFFFFFFFu, p, n);
}
static inline uint32_t kfmt_crc32c_table_only(const uint8_t *p, size_t n) {
    return ~kfmt_crc_sw(kfmt_crc32c_table, 0xFFFFFFFFu, p, n);
}

/* Which implementation each CRC uses in this process: bit 0 crc32c SSE4.2, bit 1 crc32 PCLMULQDQ,
 * bit 2 both by the ARMv8 CRC instructions, bit 3 both by AVX-512 VPCLMULQDQ from KFMT_AVX512_MIN
 * bytes. */
static inline int kfmt_crc_backends(void) {
    return (kfmt_have_sse42 ? 1 : 0) | (kfmt_have_pclmul ? 2 : 0) | (kfmt_have_armcrc ? 4 : 0) | (kfmt_have_vpclmul ? 8 : 0);
}

/* ---- memory ----------------------------------------------------------------------------- */
/* Prefetch [*ahead, p + dist) a cache line at a time, moving *ahead on: walking entries by their
 * size fields is a chain of dependent loads, each a cache miss when the data is not in cache
 * (the next position is known only once the current size is read); fetching the lines ahead of
 * the walk turns that latency chain into a stream. Fetched to stay in every cache level (locality 3):
 * the same bytes are read again right after -- the batch table's pass, the CRC, the record kernel --,
 * and a non-temporal hint (locality 0) let them go before that, so that each of those passes waited on
 * memory again (v0/v1 message sets and small batches decoded 18-34% slower with it). */
static inline void kfmt_prefetch_ahead(const uint8_t *p, size_t dist, const uint8_t *end, const uint8_t **ahead) {
    const uint8_t *a = *ahead, *stop = p + dist < end ? p + dist : end;
    if (a < p) a = p;
    for (; a < stop; a += 64) {
#if defined(__GNUC__) || defined(__clang__)
        __builtin_prefetch(a, 0, 3);
#endif
    }
    *ahead = a;
}

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* Ask for transparent huge pages over the page-aligned part of [p, p+n) (Linux; no-op elsewhere). */
static inline void kfmt_advise_hugepages(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t page = 4096, start = ((uintptr_t)p + page - 1) & ~(page - 1), end = ((uintptr_t)p + n) & ~(page - 1);
    if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
#else
    (void)p; (void)n;
#endif
}

#endif /* KFMT_H */
