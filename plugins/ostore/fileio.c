/* fileio.c — whole-buffer file I/O for the object stores (see fileio.h). */
#include "fileio.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

/* The one pread loop: 0 with all n bytes read, -ENODATA at the end of the
 * file with *done bytes read, or -errno. */
static int
pread_loop(int fd, uint8_t *b, size_t n, uint64_t off, size_t *done)
{
	*done = 0;
	while (*done < n) {
		ssize_t r = pread(fd, b + *done, n - *done, (off_t)(off + *done));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -ENODATA;
		*done += (size_t)r;
	}
	return 0;
}

int
os_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done;
	int rc = pread_loop(fd, buf, n, off, &done);

	if (rc == -ENODATA) { /* past the end of the file: a hole */
		memset((uint8_t *)buf + done, 0, n - done);
		return 0;
	}
	return rc;
}

int
os_pread_exact(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done;

	return pread_loop(fd, buf, n, off, &done);
}

int
os_pwrite_full(int fd, const void *buf, size_t n, uint64_t off)
{
	const uint8_t *b = buf;

	while (n > 0) {
		ssize_t w = pwrite(fd, b, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int
os_pwritev_full(int fd, struct iovec *iov, int n, uint64_t off)
{
	while (n > 0) {
		ssize_t w = pwritev(fd, iov, n, (off_t)off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (uint64_t)w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

int
os_dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int empty = 1;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}
