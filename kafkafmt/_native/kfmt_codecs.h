/*
 * kfmt_codecs.h -- lz4, zstd and snappy decompression inside the record kernel's nogil loop.
 *
 * The libraries are not linked at build time (a wheel must import where they are missing, and
 * their -dev headers are rarely installed where it is built): kafkafmt._native.libs names the
 * shared object by a documented lookup (KAFKAFMT_LIBLZ4 / KAFKAFMT_LIBZSTD, then the sonames
 * liblz4.so.1 / libzstd.so.1 and their macOS/Windows names, then ctypes.util.find_library) and
 * kfmt_load_* resolves the few functions used with dlopen/dlsym. When a library is missing,
 * those batches go through the Python codecs instead (kafkafmt.codecs).
 *
 * Both decompressors write into a scratch buffer that grows (realloc) up to a cap, and return
 * the decompressed size, or KFMT_DECOMP_CORRUPT / KFMT_DECOMP_LIMIT / KFMT_DECOMP_NOMEM.
 *
 * lz4 frame (as Kafka's KafkaLZ4BlockOutputStream / python-lz4 write it): magic 0x184D2204, FLG
 * (version 01, block independence, block checksum, content size, content checksum, dict id),
 * BD (block max size 64 KiB..4 MiB), [content size u64], [dict id u32], header checksum (checked
 * by the kernel's decompressor, which sees v2 batches only; magic-0 frames carry KAFKA-3160's
 * wrong one and go through the Python codec), content size (checked against the output),
 * blocks (u32 LE size, high bit = stored; [u32 checksum]), end mark 0, [content checksum].
 * Linked blocks decode with the preceding output as their dictionary.
 *
 * snappy needs no library: its format is a varint length and literal / copy elements (google/snappy's
 * format_description.txt), decoded here with every bound checked. Both of Kafka's forms: raw blocks
 * (librdkafka) and snappy-java's stream (Kafka's Java clients: 8 magic bytes, two int32, then
 * big-endian int32 lengths of raw blocks), checked as kafkafmt.codecs.snappy checks them -- the
 * Python codec, whose library (cramjam: Rust's snap) decodes large payloads faster;
 * tests/test_kernel_snappy.py holds the two to the same answers on valid and damaged payloads.
 */
#ifndef KFMT_CODECS_H
#define KFMT_CODECS_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KFMT_DECOMP_CORRUPT (-1)
#define KFMT_DECOMP_LIMIT (-2)
#define KFMT_DECOMP_NOMEM (-3)

typedef struct { const void *src; size_t size; size_t pos; } kfmt_zstd_in;
typedef struct { void *dst; size_t size; size_t pos; } kfmt_zstd_out;

static void *(*kfmt_ZSTD_createDCtx)(void);
static size_t (*kfmt_ZSTD_freeDCtx)(void *);
static size_t (*kfmt_ZSTD_decompressDCtx)(void *, void *, size_t, const void *, size_t);
static unsigned (*kfmt_ZSTD_isError)(size_t);
static unsigned long long (*kfmt_ZSTD_getFrameContentSize)(const void *, size_t);
static size_t (*kfmt_ZSTD_decompressStream)(void *, kfmt_zstd_out *, kfmt_zstd_in *);
static size_t (*kfmt_ZSTD_DCtx_reset)(void *, int);
static int (*kfmt_LZ4_decompress_safe_usingDict)(const char *, char *, int, int, const char *, int);
static int kfmt_have_zstd = 0, kfmt_have_lz4 = 0;

#define KFMT_SYM(lib, name) (*(void **)(&kfmt_##name) = dlsym(lib, #name))

/* Resolve libzstd's functions from the shared object at path; 1 on success. */
static int kfmt_load_zstd(const char *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
    if (!KFMT_SYM(lib, ZSTD_createDCtx) || !KFMT_SYM(lib, ZSTD_freeDCtx) || !KFMT_SYM(lib, ZSTD_decompressDCtx) ||
        !KFMT_SYM(lib, ZSTD_isError) || !KFMT_SYM(lib, ZSTD_getFrameContentSize) ||
        !KFMT_SYM(lib, ZSTD_decompressStream) || !KFMT_SYM(lib, ZSTD_DCtx_reset))
        return 0;
    kfmt_have_zstd = 1;
    return 1;
}

/* Resolve liblz4's LZ4_decompress_safe_usingDict from the shared object at path; 1 on success. */
static int kfmt_load_lz4(const char *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return 0;
    if (!KFMT_SYM(lib, LZ4_decompress_safe_usingDict)) return 0;
    kfmt_have_lz4 = 1;
    return 1;
}

/* Make room for `need` bytes in the scratch buffer (geometric growth, never past cap + 1). */
static inline int kfmt_reserve(uint8_t **buf, int64_t *cap, int64_t need, int64_t limit) {
    if (need <= *cap) return 0;
    if (need > limit + 1) return KFMT_DECOMP_LIMIT;
    int64_t n = *cap * 2 > need ? *cap * 2 : need;
    if (n > limit + 1) n = limit + 1;
    uint8_t *p = (uint8_t *)realloc(*buf, (size_t)n);
    if (!p) return KFMT_DECOMP_NOMEM;
    *buf = p;
    *cap = n;
    return 0;
}

static inline uint32_t kfmt_le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* ---- lz4 frames: the one parser (the kernel's decompressor below, and through frames.pyx the
 * Python codec's bounds and checks, use these two functions) ---------------------------------- */

#define KFMT_LZ4_MAGIC 0x184D2204u
/* frame errors (negative); frames.pyx turns them into messages (FRAME_ERRORS) */
#define KFMT_LZ4_TRUNCATED_HEADER (-11)
#define KFMT_LZ4_BAD_MAGIC (-12)
#define KFMT_LZ4_BAD_VERSION (-13)       /* version bits other than 01, or reserved bits set */
#define KFMT_LZ4_BAD_BLOCK_SIZE (-14)    /* BD block maximum size id outside 4..7 */
#define KFMT_LZ4_NO_END_MARK (-15)       /* the input ends where a block size or end mark belongs */
#define KFMT_LZ4_BLOCK_TOO_BIG (-16)     /* a block larger than the frame's maximum block size */
#define KFMT_LZ4_TRUNCATED (-17)         /* a block or checksum runs past the end of the input */

typedef struct {
    int flg;                /* FLG byte */
    int linked;             /* blocks refer to earlier output (no block independence) */
    int block_sum;          /* each block followed by a 4-byte checksum */
    int content_sum;        /* the end mark followed by a 4-byte checksum */
    int64_t block_max;      /* 64 KiB .. 4 MiB */
    int64_t content_size;   /* -1: not in the header */
    int64_t hc_pos;         /* position of the header checksum byte (checked by kfmt_lz4_decompress) */
    int64_t body;           /* position of the first block header */
} kfmt_lz4_frame;

/* Parse the frame header at src[pos:n]; 0, or a KFMT_LZ4_* code. */
static int kfmt_lz4_header(const uint8_t *src, int64_t n, int64_t pos, kfmt_lz4_frame *f) {
    if (n - pos < 7) return KFMT_LZ4_TRUNCATED_HEADER;
    if (kfmt_le32(src + pos) != KFMT_LZ4_MAGIC) return KFMT_LZ4_BAD_MAGIC;
    int flg = src[pos + 4], bd = src[pos + 5];
    if ((flg >> 6) != 1 || (flg & 0x02) || (bd & 0x8F)) return KFMT_LZ4_BAD_VERSION;
    int bsid = (bd >> 4) & 7;
    if (bsid < 4) return KFMT_LZ4_BAD_BLOCK_SIZE;
    f->flg = flg;
    f->linked = !(flg & 0x20);
    f->block_sum = (flg & 0x10) != 0;
    f->content_sum = (flg & 0x04) != 0;
    f->block_max = (int64_t)1 << (8 + 2 * bsid);
    int64_t h = pos + 6;
    f->content_size = -1;
    if (flg & 0x08) {
        if (n - h < 8 + 1) return KFMT_LZ4_TRUNCATED_HEADER;
        uint64_t cs = (uint64_t)kfmt_le32(src + h) | ((uint64_t)kfmt_le32(src + h + 4) << 32);
        f->content_size = cs > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)cs;
        h += 8;
    }
    if (flg & 0x01) h += 4;                                  /* dictionary id */
    if (n - h < 1) return KFMT_LZ4_TRUNCATED_HEADER;
    f->hc_pos = h;
    f->body = h + 1;
    return 0;
}

/* The block header at *pos: 1 = a block of *size bytes (*stored: not compressed) starting at the
 * new *pos, its data and checksum present; 0 = the end mark, *pos then after it and the content
 * checksum (the end of the frame); or a KFMT_LZ4_* code. The caller moves past a block with
 * *pos += size + (block_sum ? 4 : 0). */
static inline int kfmt_lz4_block(const uint8_t *src, int64_t n, int64_t *pos, const kfmt_lz4_frame *f,
                                 int64_t *size, int *stored) {
    int64_t p = *pos;
    if (n - p < 4) return KFMT_LZ4_NO_END_MARK;
    uint32_t s = kfmt_le32(src + p);
    p += 4;
    if (s == 0) {
        if (f->content_sum) {
            if (n - p < 4) return KFMT_LZ4_TRUNCATED;
            p += 4;
        }
        *pos = p;
        return 0;
    }
    *stored = (s & 0x80000000u) != 0;
    s &= 0x7FFFFFFFu;
    if ((int64_t)s > f->block_max) return KFMT_LZ4_BLOCK_TOO_BIG;
    if ((int64_t)s + (f->block_sum ? 4 : 0) > n - p) return KFMT_LZ4_TRUNCATED;
    *size = (int64_t)s;
    *pos = p;
    return 1;
}

/* Walk the blocks of the frame f (header parsed): its end position, and in *bound an upper bound
 * of its decompressed size (stored blocks: their size; compressed ones: the maximum block size;
 * capped by the content size when the header has one); or a KFMT_LZ4_* code. */
static int64_t kfmt_lz4_walk(const uint8_t *src, int64_t n, const kfmt_lz4_frame *f, int64_t *bound) {
    int64_t p = f->body, size = 0, b = 0;
    int stored = 0, rc;
    while ((rc = kfmt_lz4_block(src, n, &p, f, &size, &stored)) == 1) {
        b += stored ? size : f->block_max;
        p += size + (f->block_sum ? 4 : 0);
    }
    if (rc < 0) return rc;
    if (f->content_size >= 0 && f->content_size < b) b = f->content_size;
    *bound = b;
    return p;
}

/* XXH32 (the lz4 frame format's hash), for the frame header checksum: (xxh32(FLG..) >> 8) & 0xFF. */
#define KFMT_XXH_P1 2654435761U
#define KFMT_XXH_P2 2246822519U
#define KFMT_XXH_P3 3266489917U
#define KFMT_XXH_P4 668265263U
#define KFMT_XXH_P5 374761393U

static inline uint32_t kfmt_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static uint32_t kfmt_xxh32(const uint8_t *p, size_t len, uint32_t seed) {
    const uint8_t *end = p + len;
    uint32_t h;
    if (len >= 16) {
        const uint8_t *limit = end - 16;
        uint32_t v1 = seed + KFMT_XXH_P1 + KFMT_XXH_P2, v2 = seed + KFMT_XXH_P2, v3 = seed, v4 = seed - KFMT_XXH_P1;
        do {
            v1 = kfmt_rotl32(v1 + kfmt_le32(p) * KFMT_XXH_P2, 13) * KFMT_XXH_P1; p += 4;
            v2 = kfmt_rotl32(v2 + kfmt_le32(p) * KFMT_XXH_P2, 13) * KFMT_XXH_P1; p += 4;
            v3 = kfmt_rotl32(v3 + kfmt_le32(p) * KFMT_XXH_P2, 13) * KFMT_XXH_P1; p += 4;
            v4 = kfmt_rotl32(v4 + kfmt_le32(p) * KFMT_XXH_P2, 13) * KFMT_XXH_P1; p += 4;
        } while (p <= limit);
        h = kfmt_rotl32(v1, 1) + kfmt_rotl32(v2, 7) + kfmt_rotl32(v3, 12) + kfmt_rotl32(v4, 18);
    } else {
        h = seed + KFMT_XXH_P5;
    }
    h += (uint32_t)len;
    while (p + 4 <= end) { h += kfmt_le32(p) * KFMT_XXH_P3; h = kfmt_rotl32(h, 17) * KFMT_XXH_P4; p += 4; }
    while (p < end) { h += (*p) * KFMT_XXH_P5; h = kfmt_rotl32(h, 11) * KFMT_XXH_P1; p++; }
    h ^= h >> 15; h *= KFMT_XXH_P2; h ^= h >> 13; h *= KFMT_XXH_P3; h ^= h >> 16;
    return h;
}

/* Decompress the lz4 frame(s) in src[0:n] into *buf; returns the size or a KFMT_DECOMP_* code. */
static int64_t kfmt_lz4_decompress(const uint8_t *src, int64_t n, uint8_t **buf, int64_t *cap, int64_t limit) {
    int64_t p = 0, out = 0, size = 0;
    int stored = 0, rc;
    kfmt_lz4_frame f;
    while (p < n) {
        /* after a frame, bytes that do not start with the frame magic are ignored (as Java's reader) */
        if (p > 0 && (n - p < 4 || kfmt_le32(src + p) != KFMT_LZ4_MAGIC)) break;
        if (kfmt_lz4_header(src, n, p, &f)) return KFMT_DECOMP_CORRUPT;
        /* v2 batches (the only ones decompressed here) carry a correct header checksum, and a
         * content size the frame must decompress to, as Java's KafkaLZ4BlockInputStream and
         * python-lz4 require (magic-0 frames, with KAFKA-3160's wrong checksum, go through Python) */
        if (((kfmt_xxh32(src + p + 4, (size_t)(f.hc_pos - p - 4), 0) >> 8) & 0xFF) != src[f.hc_pos])
            return KFMT_DECOMP_CORRUPT;
        if (f.content_size > limit - out) return KFMT_DECOMP_LIMIT;
        p = f.body;
        int64_t frame_start = out;
        while ((rc = kfmt_lz4_block(src, n, &p, &f, &size, &stored)) == 1) {
            rc = kfmt_reserve(buf, cap, out + (stored ? size : f.block_max), limit);
            if (rc) {
                if (rc == KFMT_DECOMP_LIMIT && !stored) {
                    /* the bound may overshoot: decode into what the limit allows, then judge */
                    rc = kfmt_reserve(buf, cap, limit + 1, limit);
                    if (rc) return rc;
                } else {
                    return rc;
                }
            }
            if (stored) {
                memcpy(*buf + out, src + p, (size_t)size);
                out += size;
            } else {
                int64_t room = *cap - out;
                if (room > f.block_max) room = f.block_max;
                int64_t dict = f.linked ? out - frame_start : 0;
                if (dict > 65536) dict = 65536;
                int r = kfmt_LZ4_decompress_safe_usingDict((const char *)(src + p), (char *)(*buf + out), (int)size,
                                                           (int)room, (const char *)(*buf + out - dict), (int)dict);
                if (r < 0) return out + room > limit ? KFMT_DECOMP_LIMIT : KFMT_DECOMP_CORRUPT;
                out += r;
            }
            if (out > limit) return KFMT_DECOMP_LIMIT;
            p += size + (f.block_sum ? 4 : 0);
        }
        if (rc < 0) return KFMT_DECOMP_CORRUPT;
        if (f.content_size >= 0 && out - frame_start != f.content_size) return KFMT_DECOMP_CORRUPT;
    }
    return out;
}

#define KFMT_ZSTD_UNKNOWN (0ULL - 1)
#define KFMT_ZSTD_ERROR (0ULL - 2)

/* What the lz4 / zstd payload src[0:n] of a v2 batch decompresses to, as far as its headers tell
 * without decompressing it (the kernel's outputs are sized from this before the first batch): a
 * zstd frame's content size; an lz4 frame's content size, else its stored blocks' sizes, its
 * compressed blocks but the last at the frame's maximum block size (writers fill every block
 * but the last) and its last at `ratio` x its stored size (at most that maximum); `ratio` x n
 * when the headers say nothing (a streamed zstd frame) or are malformed (the decompressor
 * reports those). Only the first frame is looked at. At most limit. */
static int64_t kfmt_decompressed_guess(int lz4, const uint8_t *src, int64_t n, int64_t ratio, int64_t limit) {
    int64_t est = -1;
    if (n <= 0) return 0;
    if (!lz4 && kfmt_have_zstd) {
        unsigned long long cs = kfmt_ZSTD_getFrameContentSize(src, (size_t)n);
        if (cs != KFMT_ZSTD_UNKNOWN && cs != KFMT_ZSTD_ERROR) est = cs > (unsigned long long)limit ? limit : (int64_t)cs;
    } else if (lz4) {
        kfmt_lz4_frame f;
        if (kfmt_lz4_header(src, n, 0, &f) == 0) {
            if (f.content_size >= 0) {
                est = f.content_size;
            } else {
                int64_t p = f.body, size = 0, sum = 0, last = -1;
                int stored = 0, rc;
                while ((rc = kfmt_lz4_block(src, n, &p, &f, &size, &stored)) == 1) {
                    sum += stored ? size : f.block_max;
                    last = stored ? -1 : size;
                    p += size + (f.block_sum ? 4 : 0);
                }
                if (rc == 0) {
                    if (last >= 0) sum -= f.block_max - (ratio * last < f.block_max ? ratio * last : f.block_max);
                    est = sum;
                }
            }
        }
    }
    if (est < 0) est = ratio * n;
    return est > limit ? limit : est;
}

/* ---- snappy: raw blocks and snappy-java's framing ------------------------------------------- */

#define KFMT_SNAPPY_MAX_EXPANSION 22     /* no element expands more: a block of n bytes holds < 22 n */
#define KFMT_XERIAL_HEADER 16
static const uint8_t kfmt_xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

/* A raw block's declared size (its varint prefix, at most 10 bytes, at most 2^32 - 1), the prefix's
 * length in *hdr; -1 when there is none. */
static int64_t kfmt_snappy_len(const uint8_t *src, int64_t n, int64_t *hdr) {
    uint64_t v = 0;
    for (int i = 0; i < 10 && i < n; i++) {
        v |= (uint64_t)(src[i] & 0x7F) << (7 * i);
        if (!(src[i] & 0x80)) {
            if (v > 0xFFFFFFFFull) return -1;
            *hdr = i + 1;
            return (int64_t)v;
        }
    }
    return -1;
}

/* The size a raw block of n bytes declares, checked against what n bytes can hold; -1 if invalid. */
static int64_t kfmt_snappy_block_size(const uint8_t *src, int64_t n, int64_t *hdr) {
    int64_t size = kfmt_snappy_len(src, n, hdr);
    return size < 0 || size > KFMT_SNAPPY_MAX_EXPANSION * n ? -1 : size;
}

static inline void kfmt_copy8(uint8_t *d, const uint8_t *s) {
    uint64_t v;
    memcpy(&v, s, 8);
    memcpy(d, &v, 8);
}

/* Decode a raw block's elements s[0:end) into exactly dst[0:size): 0, or -1 (an element past the
 * input's end, a copy from before the output's start or past its end, a size other than declared).
 * Where input and output have room to spare, a short literal is copied as 16 bytes and a copy from
 * 8 or more bytes back 8 at a time (the bytes past its end are written again by what follows). */
static int kfmt_snappy_elements(const uint8_t *s, const uint8_t *end, uint8_t *dst, int64_t size) {
    int64_t d = 0, len, off;
    while (s < end) {
        uint8_t tag = *s++;
        switch (tag & 3) {
        case 0:                                         /* literal */
            len = tag >> 2;
            if (len >= 60) {                            /* its length - 1 in the next 1..4 bytes */
                int k = (int)len - 59;
                if (end - s < k) return -1;
                len = 0;
                for (int j = 0; j < k; j++) len |= (int64_t)s[j] << (8 * j);
                s += k;
            } else if (len < 16 && end - s >= 16 && size - d >= 16) {
                kfmt_copy8(dst + d, s);
                kfmt_copy8(dst + d + 8, s + 8);
                s += len + 1;
                d += len + 1;
                continue;
            }
            len += 1;
            if (end - s < len || size - d < len) return -1;
            memcpy(dst + d, s, (size_t)len);
            s += len;
            d += len;
            continue;
        case 1:                                         /* copy, 11-bit offset */
            if (end - s < 1) return -1;
            len = 4 + ((tag >> 2) & 7);
            off = ((int64_t)(tag & 0xE0) << 3) | s[0];
            s += 1;
            break;
        case 2:                                         /* copy, 16-bit offset */
            if (end - s < 2) return -1;
            len = 1 + (tag >> 2);
            off = (int64_t)s[0] | ((int64_t)s[1] << 8);
            s += 2;
            break;
        default:                                        /* copy, 32-bit offset */
            if (end - s < 4) return -1;
            len = 1 + (tag >> 2);
            off = (int64_t)kfmt_le32(s);
            s += 4;
            break;
        }
        if (off == 0 || off > d || size - d < len) return -1;
        uint8_t *o = dst + d;
        const uint8_t *from = o - off;
        if (off >= 8 && size - d >= len + 8) {          /* each 8 bytes read were written before */
            for (int64_t j = 0; j < len; j += 8) kfmt_copy8(o + j, from + j);
        } else if (off >= len) {
            memcpy(o, from, (size_t)len);
        } else {                                        /* overlapping: the bytes just written repeat */
            for (int64_t j = 0; j < len; j++) o[j] = from[j];
        }
        d += len;
    }
    return d == size ? 0 : -1;
}

static inline int kfmt_is_xerial(const uint8_t *src, int64_t n) {
    return n >= KFMT_XERIAL_HEADER && memcmp(src, kfmt_xerial_magic, 8) == 0;
}

static inline int64_t kfmt_be32s(const uint8_t *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

/* The size a snappy payload decompresses to (raw or framed; every block's size checked), or
 * KFMT_DECOMP_CORRUPT, or KFMT_DECOMP_LIMIT past limit. */
static int64_t kfmt_snappy_size(const uint8_t *src, int64_t n, int64_t limit) {
    int64_t hdr, size, total = 0, p = KFMT_XERIAL_HEADER;
    if (!kfmt_is_xerial(src, n)) {
        size = n > 0 ? kfmt_snappy_block_size(src, n, &hdr) : -1;
        return size < 0 ? KFMT_DECOMP_CORRUPT : size > limit ? KFMT_DECOMP_LIMIT : size;
    }
    while (p < n) {
        if (n - p < 4) return KFMT_DECOMP_CORRUPT;
        int64_t len = kfmt_be32s(src + p);
        if (len < 0) {                                  /* a concatenated stream's header: skipped */
            if (n - p >= KFMT_XERIAL_HEADER && memcmp(src + p, kfmt_xerial_magic, 8) == 0) {
                p += KFMT_XERIAL_HEADER;
                continue;
            }
            return KFMT_DECOMP_CORRUPT;
        }
        p += 4;
        if (len > n - p) return KFMT_DECOMP_CORRUPT;
        if (len) {
            size = kfmt_snappy_block_size(src + p, len, &hdr);
            if (size < 0) return KFMT_DECOMP_CORRUPT;
            total += size;
            if (total > limit) return KFMT_DECOMP_LIMIT;
        }
        p += len;
    }
    return total;
}

/* Decompress the snappy payload src[0:n] into *buf; returns the size or a code. */
static int64_t kfmt_snappy_decompress(const uint8_t *src, int64_t n, uint8_t **buf, int64_t *cap, int64_t limit) {
    int64_t total = kfmt_snappy_size(src, n, limit), hdr = 0, size, out = 0, p = KFMT_XERIAL_HEADER;
    if (total < 0) return total;
    int rc = kfmt_reserve(buf, cap, total, limit);    /* (a size of 0 too: its elements must be none) */
    if (rc) return rc;
    if (!kfmt_is_xerial(src, n)) {
        size = kfmt_snappy_len(src, n, &hdr);
        return kfmt_snappy_elements(src + hdr, src + n, *buf, size) ? KFMT_DECOMP_CORRUPT : size;
    }
    while (p < n) {                                     /* (the walk kfmt_snappy_size checked) */
        int64_t len = kfmt_be32s(src + p);
        if (len < 0) {
            p += KFMT_XERIAL_HEADER;
            continue;
        }
        p += 4;
        if (len) {
            size = kfmt_snappy_len(src + p, len, &hdr);
            if (kfmt_snappy_elements(src + p + hdr, src + p + len, *buf + out, size)) return KFMT_DECOMP_CORRUPT;
            out += size;
        }
        p += len;
    }
    return out;
}

/* Decompress the zstd frame(s) in src[0:n] into *buf with dctx; returns the size or a code. */
static int64_t kfmt_zstd_decompress(void *dctx, const uint8_t *src, int64_t n, uint8_t **buf, int64_t *cap,
                                    int64_t limit) {
    if (n <= 0) return KFMT_DECOMP_CORRUPT;
    unsigned long long cs = kfmt_ZSTD_getFrameContentSize(src, (size_t)n);
    if (cs == KFMT_ZSTD_ERROR) return KFMT_DECOMP_CORRUPT;
    if (cs != KFMT_ZSTD_UNKNOWN) {
        if ((int64_t)cs > limit) return KFMT_DECOMP_LIMIT;
        int rc = kfmt_reserve(buf, cap, (int64_t)cs > 0 ? (int64_t)cs : 1, limit);
        if (rc) return rc;
        size_t r = kfmt_ZSTD_decompressDCtx(dctx, *buf, (size_t)cs, src, (size_t)n);
        if (!kfmt_ZSTD_isError(r)) return (int64_t)r;
        /* several frames, or a lying size: fall through to streaming, which checks as it goes */
    }
    kfmt_ZSTD_DCtx_reset(dctx, 1 /* ZSTD_reset_session_only */);
    int rc = kfmt_reserve(buf, cap, 64 * 1024 < limit ? 64 * 1024 : limit, limit);
    if (rc) return rc;
    kfmt_zstd_in in = {src, (size_t)n, 0};
    kfmt_zstd_out outb = {*buf, (size_t)*cap, 0};
    size_t left = 1;
    for (;;) {
        left = kfmt_ZSTD_decompressStream(dctx, &outb, &in);
        if (kfmt_ZSTD_isError(left)) return KFMT_DECOMP_CORRUPT;
        if ((int64_t)outb.pos > limit) return KFMT_DECOMP_LIMIT;
        if (in.pos == in.size && left == 0) break;            /* every frame complete */
        if (outb.pos == outb.size) {                         /* output full: grow and go on */
            rc = kfmt_reserve(buf, cap, *cap + 1, limit);
            if (rc) return rc;
            outb.dst = *buf;
            outb.size = (size_t)*cap;
        } else if (in.pos == in.size) {
            return KFMT_DECOMP_CORRUPT;                      /* input ended inside a frame */
        }
    }
    return (int64_t)outb.pos;
}

#endif /* KFMT_CODECS_H */
