/* Whole small files read into one buffer for kafkafmt._native.reads: an open, preads until the slot is full or
 * the file ends, a close, per file -- without the interpreter between them. Where there is no POSIX pread
 * (Windows) kfmt_read_file fails with ENOSYS and the files are read the Python way. */
#ifndef KFMT_READS_H
#define KFMT_READS_H

#include <errno.h>
#include <stdint.h>

#ifdef _WIN32
static int64_t kfmt_read_file(const char *path, uint8_t *out, int64_t want) {
    (void)path; (void)out; (void)want; return -ENOSYS; }
#else
#include <fcntl.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* the bytes read into out (at most want: fewer only when the file is shorter), or -errno */
static int64_t kfmt_read_file(const char *path, uint8_t *out, int64_t want) {
    int fd, err;
    int64_t got = 0;
    ssize_t n;
    do {
        fd = open(path, O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -errno;
    while (got < want) {
        n = pread(fd, out + got, (size_t)(want - got), (off_t)got);
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
#endif

#endif
