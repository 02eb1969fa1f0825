# cython: language_level=3
"""C-level helpers from kfmt.h shared by the Cython modules, and the payload pointer table of the kernel."""
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int32_t, int64_t
from libc.stdlib cimport free, malloc

cdef extern from "kfmt.h" nogil:
    uint16_t kfmt_be16(const uint8_t *p)
    uint32_t kfmt_be32(const uint8_t *p)
    uint64_t kfmt_be64(const uint8_t *p)
    int kfmt_varint(const uint8_t **pp, const uint8_t *end, int32_t *out)
    int kfmt_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out)
    int kfmt_put_varint(uint8_t *p, int32_t v)
    int kfmt_put_varlong(uint8_t *p, int64_t v)
    int kfmt_varint_size(int32_t v)
    int kfmt_varlong_size(int64_t v)
    void kfmt_put_be16(uint8_t *p, uint16_t v)
    void kfmt_put_be32(uint8_t *p, uint32_t v)
    void kfmt_put_be64(uint8_t *p, uint64_t v)
    void kfmt_advise_hugepages(void *p, size_t n)
    void kfmt_prefetch_ahead(const uint8_t *p, size_t dist, const uint8_t *end, const uint8_t **ahead)
    void kfmt_crc_init()
    uint32_t kfmt_crc32c(const uint8_t *p, size_t n)
    uint32_t kfmt_crc32(const uint8_t *p, size_t n)
    uint32_t kfmt_crc32_table_only(const uint8_t *p, size_t n)
    uint32_t kfmt_crc32c_table_only(const uint8_t *p, size_t n)
    int kfmt_crc_backends()


cdef inline int payload_pointers(list payloads, Py_ssize_t nb, const uint8_t ***ptrs, int64_t **lens,
                                 list keep) except -1:
    """(pointer, length) of each batch's decompressed payload (NULL, 0 where it is None) in two
    malloc'd arrays the caller frees; the buffers are kept alive in `keep`."""
    cdef const uint8_t[::1] view
    cdef Py_ssize_t k
    ptrs[0] = <const uint8_t **>malloc(nb * sizeof(uint8_t *))
    lens[0] = <int64_t *>malloc(nb * sizeof(int64_t))
    try:
        if ptrs[0] == NULL or lens[0] == NULL:
            raise MemoryError()
        for k in range(nb):
            p = payloads[k]
            if p is None:
                ptrs[0][k] = NULL
                lens[0][k] = 0
            else:
                view = p
                keep.append(view)
                ptrs[0][k] = &view[0] if view.shape[0] > 0 else <const uint8_t *>""
                lens[0][k] = view.shape[0]
    except BaseException:
        free(ptrs[0])
        free(lens[0])
        ptrs[0] = NULL
        lens[0] = NULL
        raise
    return 0
