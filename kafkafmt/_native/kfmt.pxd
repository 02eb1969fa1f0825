# cython: language_level=3
"""C-level helpers from kfmt.h, shared by scan.pyx, kernel.pyx and writer.pyx."""
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int32_t, int64_t

cdef extern from "kfmt.h" nogil:
    uint16_t kfmt_be16(const uint8_t *p)
    uint32_t kfmt_be32(const uint8_t *p)
    uint64_t kfmt_be64(const uint8_t *p)
    int kfmt_varint(const uint8_t **pp, const uint8_t *end, int32_t *out)
    int kfmt_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out)
    int kfmt_bytes(const uint8_t **pp, const uint8_t *end, const uint8_t **data, int32_t *length)
    int kfmt_put_varint(uint8_t *p, int32_t v)
    int kfmt_put_varlong(uint8_t *p, int64_t v)
    int kfmt_varint_size(int32_t v)
    int kfmt_varlong_size(int64_t v)
    void kfmt_put_be16(uint8_t *p, uint16_t v)
    void kfmt_put_be32(uint8_t *p, uint32_t v)
    void kfmt_put_be64(uint8_t *p, uint64_t v)
    void kfmt_advise_hugepages(void *p, size_t n)
    void kfmt_copy(uint8_t *d, const uint8_t *s, size_t n)
    void kfmt_prefetch_ahead(const uint8_t *p, size_t dist, const uint8_t *end, const uint8_t **ahead)
    void kfmt_crc_init()
    uint32_t kfmt_crc32c(const uint8_t *p, size_t n)
    uint32_t kfmt_crc32(const uint8_t *p, size_t n)
    uint32_t kfmt_crc32_table_only(const uint8_t *p, size_t n)
    uint32_t kfmt_crc32c_table_only(const uint8_t *p, size_t n)
    int kfmt_crc_backends()
