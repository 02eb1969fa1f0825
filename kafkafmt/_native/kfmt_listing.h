/* A folder's entries for kafkafmt._native.listing: POSIX directory streams, each entry's type from the listing
 * itself (d_type) and a stat only where asked (a file's size, a symlink's target, a type the listing does not
 * give). Where there are no POSIX directory streams (Windows) kfmt_list_open fails with ENOSYS and the Python
 * listing is used. */
#ifndef KFMT_LISTING_H
#define KFMT_LISTING_H

#include <errno.h>
#include <stdint.h>

enum { KFMT_FILE = 0, KFMT_DIR = 1, KFMT_LINK = 2, KFMT_UNKNOWN = 3 };

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
        *kind = e->d_type == DT_DIR ? KFMT_DIR : e->d_type == DT_LNK ? KFMT_LINK
              : e->d_type == DT_UNKNOWN ? KFMT_UNKNOWN : KFMT_FILE;
#else
        *kind = KFMT_UNKNOWN;
#endif
        return 1;
    }
}

/* 0 with the size and kind (KFMT_DIR, KFMT_LINK -- not followed --, else KFMT_FILE) of an entry, or the errno */
static int kfmt_list_stat(void *handle, const char *name, int follow, int64_t *size, int *kind) {
    struct stat st;
    if (fstatat(dirfd((DIR *)handle), name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) != 0)
        return errno;
    *size = (int64_t)st.st_size;
    *kind = S_ISDIR(st.st_mode) ? KFMT_DIR : S_ISLNK(st.st_mode) ? KFMT_LINK : KFMT_FILE;
    return 0;
}

static void kfmt_list_close(void *handle) {
    if (handle)
        closedir((DIR *)handle);
}
#endif
#endif
