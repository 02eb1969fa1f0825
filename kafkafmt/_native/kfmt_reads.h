/* Whole small files read into one buffer for kafkafmt._native.reads: an open, preads until the slot is full or
 * the file ends, a close, per file -- without the interpreter between them. Where there is no POSIX pread
 * (Windows) kfmt_read_file fails with ENOSYS and the files are read the Python way. kfmt_advise_file tells the
 * kernel a file will be read (a hint: nothing fails for want of it). */
#ifndef KFMT_READS_H
#define KFMT_READS_H

#include <errno.h>
#include <stdint.h>

#ifdef _WIN32
static int64_t kfmt_read_file(const char *path, uint8_t *out, int64_t want, int64_t from) {
    (void)path; (void)out; (void)want; (void)from; return -ENOSYS; }
static int64_t kfmt_advise_file(const char *path, int64_t max_bytes) {
    (void)path; (void)max_bytes; return -ENOSYS; }
#else
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* a file opened to be read (interrupted opens tried again), or -1 with errno set */
static int kfmt_open_read(const char *path) {
    int fd;
    do {
        fd = open(path, O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/* the bytes read into out from the file's byte ``from`` on (at most want: fewer only when the file is shorter), or
 * -errno */
static int64_t kfmt_read_file(const char *path, uint8_t *out, int64_t want, int64_t from) {
    int fd, err;
    int64_t got = 0;
    ssize_t n;
    fd = kfmt_open_read(path);
    if (fd < 0)
        return -errno;
    while (got < want) {
        n = pread(fd, out + got, (size_t)(want - got), (off_t)(from + got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            err = errno;
            close(fd);
            return -err;
        }
        if (n == 0)             /* the end of the file */
            break;
        got += n;
    }
    close(fd);
    return got;
}

/* The kernel told that a whole file will be read soon (POSIX_FADV_WILLNEED: it starts reading it into the page
 * cache and returns), unless it holds more than max_bytes; its size, or -errno (EFBIG: more than max_bytes, not
 * told; ENOSYS: no posix_fadvise here). */
static int64_t kfmt_advise_file(const char *path, int64_t max_bytes) {
#if defined(POSIX_FADV_WILLNEED)
    int fd, err;
    struct stat st;
    fd = kfmt_open_read(path);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0) {
        err = errno;
        close(fd);
        return -err;
    }
    if ((int64_t)st.st_size > max_bytes) {
        close(fd);
        return -EFBIG;
    }
    err = posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);     /* (returns the error number itself) */
    close(fd);
    return err ? -err : (int64_t)st.st_size;
#else
    (void)path; (void)max_bytes;
    return -ENOSYS;
#endif
}
#endif

#endif
