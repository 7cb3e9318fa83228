/* fileio.h — whole-buffer file I/O the object stores share: retried on
 * EINTR and on short transfers; 0 or a negative errno. */
#ifndef TSR_OSTORE_FILEIO_H
#define TSR_OSTORE_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Reads past the end of the file read as zeros (a hole). */
int os_pread_full(int fd, void *buf, size_t n, uint64_t off);
/* A read that reaches the end of the file fails with -ENODATA. */
int os_pread_exact(int fd, void *buf, size_t n, uint64_t off);
int os_pwrite_full(int fd, const void *buf, size_t n, uint64_t off);
/* Consumes iov (advances it over what was written). */
int os_pwritev_full(int fd, struct iovec *iov, int n, uint64_t off);
/* An existing directory with no entries but . and ..? */
int os_dir_is_empty(const char *path);

#endif
