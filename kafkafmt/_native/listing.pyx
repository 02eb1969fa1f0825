# cython: language_level=3, boundscheck=False, wraparound=False
"""A local folder's listing in one call (`kafkafmt.storage.LocalStorage.list`): the entries as
`kafkafmt.storage.Entry` rows, each one's type read from the listing itself and a stat made only for the files
whose size is asked for and for symbolic links -- what ``os.scandir`` and its ``DirEntry`` methods give, without
an object and three method calls per entry (a cluster's discovery lists thousands of folders).

The rows are those of the Python listing beside it, in the same cases: a symbolic link to a folder is a
folder (``is_link`` True), a file that vanishes or a dangling link between the listing and its stat is
left out when its size is asked for, and an error of the listing or of a stat is an OSError naming the folder.
The folders are listed in C (`kfmt_list_entries`), the GIL released: several folders in one call
(`list_folders_names`), and threads listing folders of their own side by side.
"""
import os
from sys import intern

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.errno cimport ENOMEM
from libc.stdint cimport int64_t
from libc.string cimport memset

cdef extern from "Python.h":
    object PyUnicode_DecodeFSDefault(const char *s)
    void PyObject_GC_UnTrack(void *op)


cdef inline object _row(make, entry, tuple fields):
    """``make(entry, fields)``, left out of the cyclic garbage collector's lists: a row holds only strings,
    integers, booleans and None, so it can be in no cycle -- the collector would untrack it itself at the first
    collection it survives, after visiting it (a cluster's discovery keeps tens of thousands of them)."""
    row = make(entry, fields)
    PyObject_GC_UnTrack(<void *>row)
    return row

cdef extern from "kfmt_listing.h" nogil:
    enum:
        KFMT_HAS_DIR
        KFMT_HAS_LINK
        KFMT_HAS_SIZE
    ctypedef struct kfmt_entries:
        char *names
        size_t names_len
        int64_t *name_at
        int64_t *size
        unsigned char *flags
        size_t n
    void kfmt_entries_free(kfmt_entries *e)
    int kfmt_list_entries(const char *path, const char *const *suffixes, const size_t *suffix_lens, int nsuffixes,
                          int all_sized, kfmt_entries *out)


cdef _error(int err, path):
    return OSError(err, os.strerror(err), path)


cdef list _scan_many(list paths, sized, bint compact=False, make=None):
    """The entries of each folder of ``paths``, unsorted: (names, sizes, flags) -- lists of the names (interned:
    partition folders name their files as their siblings do) and their sizes (None where not asked for, 0 for a
    folder), and a bytearray of their flags (1: a folder, 2: a symbolic link) -- or, for a folder that cannot be
    listed, the OSError naming it. ``sized``: as `list_folder`'s. Every folder is listed in C with the GIL
    released (threads listing folders of their own do so side by side). ``compact``: each folder's entries as
    `list_folder_names` gives them instead -- through ``make(names, sizes, flags, prefix)`` when given --, made
    folder by folder (no folder's lists kept beside another's)."""
    cdef Py_ssize_t nf = len(paths), i, k, j
    cdef kfmt_entries out
    memset(&out, 0, sizeof(out))
    raws = [os.fsencode(p) for p in paths]
    for raw in raws:
        if b"\0" in raw:       # (as os.scandir: a C string would end there, naming another folder)
            raise ValueError("listing: embedded null byte")
    # the suffixes as bytes (the names' ends compared as the file system gives them)
    suffixes = [] if sized is None else [os.fsencode(x) for x in ((sized,) if isinstance(sized, str) else sized)]
    cdef int nsuf = len(suffixes), all_sized = sized is None
    cdef const char **suf = <const char **>PyMem_Malloc(max(nsuf, 1) * sizeof(char *))
    cdef size_t *suf_len = <size_t *>PyMem_Malloc(max(nsuf, 1) * sizeof(size_t))
    cdef const char **cpaths = <const char **>PyMem_Malloc(max(nf, 1) * sizeof(char *))
    cdef int64_t *ends = <int64_t *>PyMem_Malloc(max(nf, 1) * 2 * sizeof(int64_t))
    cdef int *errs = <int *>PyMem_Malloc(max(nf, 1) * sizeof(int))
    cdef size_t n0, len0
    cdef list result = []
    try:
        if suf == NULL or suf_len == NULL or cpaths == NULL or ends == NULL or errs == NULL:
            raise MemoryError()
        for k in range(nsuf):
            suf[k] = <const char *>suffixes[k]
            suf_len[k] = len(suffixes[k])
        for i in range(nf):
            cpaths[i] = <const char *>raws[i]
        with nogil:
            for i in range(nf):
                n0, len0 = out.n, out.names_len
                errs[i] = kfmt_list_entries(cpaths[i], suf, suf_len, nsuf, all_sized, &out)
                if errs[i]:                 # (what was gathered of it goes)
                    out.n, out.names_len = n0, len0
                ends[2 * i], ends[2 * i + 1] = n0, out.n
        for i in range(nf):
            if errs[i]:
                if errs[i] == ENOMEM:
                    raise MemoryError()
                result.append(_error(errs[i], paths[i]))
                continue
            names, sizes, flags = [], [], bytearray()
            for j in range(ends[2 * i], ends[2 * i + 1]):
                names.append(intern(PyUnicode_DecodeFSDefault(out.names + out.name_at[j])))
                sizes.append(out.size[j] if out.flags[j] & KFMT_HAS_SIZE else None)
                flags.append(out.flags[j] & (KFMT_HAS_DIR | KFMT_HAS_LINK))
            if not compact:
                result.append((names, sizes, flags))
                continue
            got = _sorted_names(paths[i], names, sizes, flags)
            result.append(got if make is None else make(*got))
    finally:
        kfmt_entries_free(&out)
        PyMem_Free(suf)
        PyMem_Free(suf_len)
        PyMem_Free(cpaths)
        PyMem_Free(ends)
        PyMem_Free(errs)
    return result


cdef tuple _scan(str path, sized, bint compact=False):
    """`_scan_many` of one folder: its (names, sizes, flags), or its compact entries; its OSError raised."""
    got = _scan_many([path], sized, compact)[0]
    if isinstance(got, OSError):
        raise got
    return got


def list_folder(str path, sized, make, entry):
    """The entries of the folder ``path``, unsorted: ``make(entry, (name, path, size, is_dir, None, is_link))``
    each (``make``: ``tuple.__new__``, ``entry``: the row type). ``sized``: a tuple of name suffixes -- only
    files named so get their size, the others None --, or None for every file's size. Raises OSError (ENOSYS
    where there are no POSIX directory streams: the caller lists the Python way)."""
    cdef list names, sizes
    cdef bytearray flags
    cdef Py_ssize_t i
    names, sizes, flags = _scan(path, sized)
    prefix = path if path.endswith("/") else path + "/"
    return [_row(make, entry, (names[i], prefix + names[i], sizes[i], bool(flags[i] & 1), None, bool(flags[i] & 2)))
            for i in range(len(names))]


def list_folder_names(str path, sized):
    """The entries of the folder ``path`` as `list_folder` finds them, compactly and sorted by name: (names,
    sizes, flags, prefix) -- a tuple of the names, a tuple of their sizes (None where not asked for; 0 for a
    folder), ``bytes`` of their flags (1: a folder, 2: a symbolic link) and the path the names follow
    (``path/``). No row, nor path string, per entry: a partition folder holds some ten files, and a cluster's
    discovery keeps the listing of every folder (`kafkafmt.storage.FolderListing`)."""
    return _scan(path, sized, True)


def list_folders_names(list paths, sized, make=None):
    """`list_folder_names` of each folder of ``paths`` (all ``str``), one after another in C with the GIL
    released -- threads listing folders of their own list side by side: a list of its (names, sizes, flags,
    prefix), or ``make(names, sizes, flags, prefix)`` when given, or the OSError naming a folder that cannot be
    listed."""
    return _scan_many(paths, sized, True, make)


cdef tuple _sorted_names(str path, list names, list sizes, bytearray flags):
    prefix = path if path.endswith("/") else path + "/"
    order = sorted(range(len(names)), key=names.__getitem__)
    return (tuple([names[i] for i in order]), tuple([sizes[i] for i in order]), bytes([flags[i] for i in order]),
            prefix)
