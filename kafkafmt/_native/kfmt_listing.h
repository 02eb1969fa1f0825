/* A folder's entries for kafkafmt._native.listing: POSIX directory streams, each entry's type from the listing
 * itself (d_type) and a stat only where asked (a file's size, a symlink's target, a type the listing does not
 * give). Fifos, sockets and devices (and links to them) are left out: not Kafka data, and opening a fifo waits
 * for a writer. Where there are no POSIX directory streams (Windows) kfmt_list_open fails with ENOSYS and the
 * Python listing is used. */
#ifndef KFMT_LISTING_H
#define KFMT_LISTING_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { KFMT_FILE = 0, KFMT_DIR = 1, KFMT_LINK = 2, KFMT_UNKNOWN = 3, KFMT_OTHER = 4 };   /* OTHER: fifo, socket, device */

#ifdef _WIN32
static int kfmt_list_open(const char *path, void **handle) { (void)path; *handle = 0; return ENOSYS; }
static int kfmt_list_next(void *handle, const char **name, int *kind) { (void)handle; (void)name; (void)kind; return 0; }
static int kfmt_list_stat(void *handle, const char *name, int follow, int64_t *size, int *kind) {
    (void)handle; (void)name; (void)follow; (void)size; (void)kind; return ENOSYS; }
static void kfmt_list_close(void *handle) { (void)handle; }
#else
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

/* 0, or the errno of opendir */
static int kfmt_list_open(const char *path, void **handle) {
    DIR *d = opendir(path);
    *handle = d;
    return d ? 0 : errno;
}

/* 1 and the next entry (not "." or ".."), 0 at the end, -errno on an error */
static int kfmt_list_next(void *handle, const char **name, int *kind) {
    struct dirent *e;
    for (;;) {
        errno = 0;
        e = readdir((DIR *)handle);
        if (!e)
            return errno ? -errno : 0;
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
            continue;
        *name = e->d_name;
#ifdef DT_UNKNOWN
        *kind = e->d_type == DT_REG ? KFMT_FILE : e->d_type == DT_DIR ? KFMT_DIR : e->d_type == DT_LNK ? KFMT_LINK
              : e->d_type == DT_UNKNOWN ? KFMT_UNKNOWN : KFMT_OTHER;
#else
        *kind = KFMT_UNKNOWN;
#endif
        return 1;
    }
}

/* 0 with the size and kind (KFMT_FILE, KFMT_DIR, KFMT_LINK -- not followed --, else KFMT_OTHER) of an entry, or
 * the errno */
static int kfmt_list_stat(void *handle, const char *name, int follow, int64_t *size, int *kind) {
    struct stat st;
    if (fstatat(dirfd((DIR *)handle), name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) != 0)
        return errno;
    *size = (int64_t)st.st_size;
    *kind = S_ISREG(st.st_mode) ? KFMT_FILE : S_ISDIR(st.st_mode) ? KFMT_DIR : S_ISLNK(st.st_mode) ? KFMT_LINK
          : KFMT_OTHER;
    return 0;
}

static void kfmt_list_close(void *handle) {
    if (handle)
        closedir((DIR *)handle);
}
#endif

/* Folders' entries gathered in C, without the interpreter (the GIL released around it): each entry's name
 * (NUL-terminated, at names + name_at[i]), size and flags (KFMT_HAS_DIR, KFMT_HAS_LINK, KFMT_HAS_SIZE). */
enum { KFMT_HAS_DIR = 1, KFMT_HAS_LINK = 2, KFMT_HAS_SIZE = 4 };

typedef struct {
    char *names;
    size_t names_len, names_cap;
    int64_t *name_at, *size;
    unsigned char *flags;
    size_t n, cap;
} kfmt_entries;

static void kfmt_entries_free(kfmt_entries *e) {
    free(e->names); free(e->name_at); free(e->size); free(e->flags);
    e->names = 0; e->name_at = e->size = 0; e->flags = 0;
    e->names_len = e->names_cap = e->n = e->cap = 0;
}

/* 0, or ENOMEM */
static int kfmt_entries_add(kfmt_entries *e, const char *name, int64_t size, unsigned char flags) {
    size_t len = strlen(name) + 1;
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        int64_t *at = (int64_t *)realloc(e->name_at, cap * sizeof(int64_t));
        if (!at) return ENOMEM;
        e->name_at = at;
        int64_t *sz = (int64_t *)realloc(e->size, cap * sizeof(int64_t));
        if (!sz) return ENOMEM;
        e->size = sz;
        unsigned char *fl = (unsigned char *)realloc(e->flags, cap);
        if (!fl) return ENOMEM;
        e->flags = fl;
        e->cap = cap;
    }
    if (e->names_len + len > e->names_cap) {
        size_t cap = e->names_cap ? 2 * e->names_cap : 1024;
        while (cap < e->names_len + len) cap *= 2;
        char *nm = (char *)realloc(e->names, cap);
        if (!nm) return ENOMEM;
        e->names = nm;
        e->names_cap = cap;
    }
    memcpy(e->names + e->names_len, name, len);
    e->name_at[e->n] = (int64_t)e->names_len;
    e->size[e->n] = size;
    e->flags[e->n] = flags;
    e->names_len += len;
    e->n++;
    return 0;
}

static int kfmt_ends_with(const char *name, size_t len, const char *suffix, size_t slen) {
    return slen <= len && memcmp(name + len - slen, suffix, slen) == 0;
}

/* The entries of the folder ``path`` appended to ``out``: 0, or the errno of the listing or of a stat (the
 * entries appended so far are then to be dropped by the caller). Each entry's type from the listing (an lstat
 * where it gives none), a symbolic link followed (a dangling one is a file, not a folder, with no size), and a
 * file's size read (following links) when ``all_sized`` or its name ends with one of ``suffixes`` -- such a
 * file that vanishes before its stat is left out; the others get no size. */
static int kfmt_list_entries(const char *path, const char *const *suffixes, const size_t *suffix_lens,
                             int nsuffixes, int all_sized, kfmt_entries *out) {
    void *handle = 0;
    const char *name = 0;
    int kind = 0, got, err, follow_kind = 0, is_dir, is_link, have_size, i, wanted;
    int64_t size = 0;
    size_t len;
    err = kfmt_list_open(path, &handle);
    if (err)
        return err;
    for (;;) {
        got = kfmt_list_next(handle, &name, &kind);
        if (got == 0)
            break;
        if (got < 0) {
            err = -got;
            break;
        }
        have_size = 0;
        if (kind == KFMT_UNKNOWN) {             /* (a file system whose listing gives no types: one lstat) */
            err = kfmt_list_stat(handle, name, 0, &size, &kind);
            if (err == ENOENT)
                kind = KFMT_FILE;               /* vanished: as DirEntry says of it (not a folder, not a link) */
            else if (err)
                break;
            else
                have_size = kind == KFMT_FILE;
            err = 0;
        }
        is_link = kind == KFMT_LINK;
        is_dir = kind == KFMT_DIR;
        if (kind == KFMT_OTHER)
            continue;                           /* a fifo, socket or device: not listed */
        if (is_link) {                          /* a link is what it points to (DirEntry.is_dir follows it) */
            err = kfmt_list_stat(handle, name, 1, &size, &follow_kind);
            if (err == 0) {
                if (follow_kind == KFMT_OTHER)
                    continue;                   /* (a link to one: not listed either) */
                is_dir = follow_kind == KFMT_DIR;
                have_size = 1;
            } else if (err != ENOENT) {
                break;
            }
            err = 0;
        }
        if (is_dir) {
            size = 0;
            have_size = 1;
        } else {
            len = strlen(name);
            wanted = all_sized;
            for (i = 0; !wanted && i < nsuffixes; i++)
                wanted = kfmt_ends_with(name, len, suffixes[i], suffix_lens[i]);
            if (wanted && !have_size) {
                err = kfmt_list_stat(handle, name, 1, &size, &follow_kind);
                if (err == ENOENT) {
                    err = 0;
                    continue;                   /* vanished between the listing and its stat (or a dangling link) */
                }
                if (err)
                    break;
            }
            have_size = wanted;
        }
        err = kfmt_entries_add(out, name, have_size ? size : 0,
                               (unsigned char)((is_dir ? KFMT_HAS_DIR : 0) | (is_link ? KFMT_HAS_LINK : 0)
                                               | (have_size ? KFMT_HAS_SIZE : 0)));
        if (err)
            break;
    }
    kfmt_list_close(handle);
    return err;
}
#endif
