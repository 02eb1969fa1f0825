# cython: language_level=3, boundscheck=False, wraparound=False
"""A local folder's listing in one call (`kafkafmt.storage.LocalStorage.list`): the entries as
`kafkafmt.storage.Entry` rows, each one's type read from the listing itself and a stat made only for the files
whose size is asked for and for symbolic links -- what ``os.scandir`` and its ``DirEntry`` methods give, without
an object and three method calls per entry (a cluster's discovery lists thousands of folders).

The rows are those of the Python listing beside it, in the same cases: a symbolic link to a folder is a
folder (``is_link`` True), a file that vanishes or a dangling link between the listing and its stat is
left out when its size is asked for, and an error of the listing or of a stat is an OSError naming the folder.
"""
import os
from sys import intern

from libc.errno cimport ENOENT
from libc.stdint cimport int64_t

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
        KFMT_FILE
        KFMT_DIR
        KFMT_LINK
        KFMT_UNKNOWN
    int kfmt_list_open(const char *path, void **handle)
    int kfmt_list_next(void *handle, const char **name, int *kind)
    int kfmt_list_stat(void *handle, const char *name, int follow, int64_t *size, int *kind)
    void kfmt_list_close(void *handle)


cdef _error(int err, path):
    return OSError(err, os.strerror(err), path)


cdef tuple _scan(str path, sized):
    """The entries of the folder ``path``, unsorted: (names, sizes, flags) -- lists of the names (interned:
    partition folders name their files as their siblings do) and their sizes (None where not asked for, 0 for a
    folder), and a bytearray of their flags (1: a folder, 2: a symbolic link). ``sized``: as `list_folder`'s."""
    cdef void *handle = NULL
    cdef const char *cname = NULL
    cdef int kind = 0, got, err, follow_kind = 0
    cdef int64_t size = 0
    cdef bint is_dir, is_link, have_size
    cdef list names = [], sizes = []
    cdef bytearray flags = bytearray()
    raw = os.fsencode(path)
    if b"\0" in raw:           # (as os.scandir: a C string would end there, naming another folder)
        raise ValueError("listing: embedded null byte")
    err = kfmt_list_open(raw, &handle)
    if err:
        raise _error(err, path)
    try:
        while True:
            got = kfmt_list_next(handle, &cname, &kind)
            if got == 0:
                break
            if got < 0:
                raise _error(-got, path)
            name = PyUnicode_DecodeFSDefault(cname)
            have_size = False
            if kind == KFMT_UNKNOWN:            # (a file system whose listing gives no types: one lstat)
                err = kfmt_list_stat(handle, cname, 0, &size, &kind)
                if err == ENOENT:
                    kind = KFMT_FILE            # vanished: as DirEntry says of it (not a folder, not a link)
                elif err:
                    raise _error(err, path)
                else:
                    have_size = kind == KFMT_FILE
            is_link = kind == KFMT_LINK
            is_dir = kind == KFMT_DIR
            if is_link:                          # a link is what it points to (DirEntry.is_dir follows it)
                err = kfmt_list_stat(handle, cname, 1, &size, &follow_kind)
                if err == 0:
                    is_dir = follow_kind == KFMT_DIR
                    have_size = True
                elif err != ENOENT:
                    raise _error(err, path)
            if is_dir:
                sizes.append(0)
            elif sized is None or name.endswith(sized):
                if not have_size:
                    err = kfmt_list_stat(handle, cname, 1, &size, &follow_kind)
                    if err == ENOENT:
                        continue                 # vanished between the listing and its stat (or a dangling link)
                    if err:
                        raise _error(err, path)
                sizes.append(size)
            else:
                sizes.append(None)
            names.append(intern(name))
            flags.append(is_dir | (is_link << 1))
    finally:
        kfmt_list_close(handle)
    return names, sizes, flags


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
    cdef list names, sizes
    cdef bytearray flags
    names, sizes, flags = _scan(path, sized)
    prefix = path if path.endswith("/") else path + "/"
    order = sorted(range(len(names)), key=names.__getitem__)
    return (tuple([names[i] for i in order]), tuple([sizes[i] for i in order]), bytes([flags[i] for i in order]),
            prefix)
