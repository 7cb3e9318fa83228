/* mkfs.c — formatting a device or image file for backend-blockdev. */
#include "mkfs.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Write zeros over [from, to), 1 MiB at a time, and sync. */
static int
zero_fill(int fd, const char *path, uint64_t from, uint64_t to, char *err,
	  size_t errlen)
{
	static const uint8_t zeros[1 << 16];
	uint64_t off = from;

	while (off < to) {
		size_t n = to - off < sizeof(zeros) ? (size_t)(to - off) : sizeof(zeros);
		ssize_t w = pwrite(fd, zeros, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(err, errlen, "%s: writing zeros at %llu: %s", path,
				 (unsigned long long)off, w < 0 ? strerror(errno) : "short write");
			return w < 0 ? -errno : -EIO;
		}
		off += (uint64_t)w;
	}
	if (fdatasync(fd) < 0) {
		snprintf(err, errlen, "%s: sync: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

int
bd_mkfs(const char *path, const struct bd_mkfs_opts *o, struct bd_super *out,
	char *err, size_t errlen)
{
	struct bd_super sb, old;
	struct stat st;
	struct timespec ts;
	uint64_t size;
	char why[256];
	int fd, rc;

	bool is_new = stat(path, &st) != 0;
	if (!is_new && S_ISBLK(st.st_mode) && o->size != 0) {
		snprintf(err, errlen, "%s: a block device has its own size; do not give one", path);
		return -EINVAL;
	}
	fd = open(path, O_RDWR | O_CLOEXEC | (is_new ? O_CREAT | O_EXCL : 0), 0600);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot open for formatting: %s", path, strerror(errno));
		return rc;
	}
	/* never format over a Tessera device by accident */
	if (!is_new && !o->force && bd_super_read(fd, path, &old, why, sizeof(why)) != -EINVAL) {
		close(fd);
		snprintf(err, errlen,
			 "%s: already holds a Tessera superblock (or a damaged one); pass force to overwrite it",
			 path);
		return -EEXIST;
	}
	if (o->size != 0 && S_ISREG(is_new ? S_IFREG : st.st_mode)) {
		rc = posix_fallocate(fd, 0, (off_t)o->size);
		if (rc != 0) {
			close(fd);
			if (is_new)
				unlink(path);
			snprintf(err, errlen, "%s: cannot reserve %llu bytes: %s", path,
				 (unsigned long long)o->size, strerror(rc));
			return -rc;
		}
	}
	if ((rc = bd_device_size(fd, path, &size, err, errlen)) < 0)
		goto fail;
	if (size < (uint64_t)BD_DATA_OFFSET + 16ull * o->block_size) {
		snprintf(err, errlen, "%s: %llu bytes is too small (at least %llu)", path,
			 (unsigned long long)size,
			 (unsigned long long)BD_DATA_OFFSET + 16ull * o->block_size);
		rc = -ENOSPC;
		goto fail;
	}
	memset(&sb, 0, sizeof(sb));
	if (getrandom(sb.uuid, sizeof(sb.uuid), 0) != (ssize_t)sizeof(sb.uuid)) {
		rc = -errno;
		snprintf(err, errlen, "%s: no random bytes for a uuid: %s", path, strerror(errno));
		goto fail;
	}
	sb.uuid[6] = (uint8_t)((sb.uuid[6] & 0x0f) | 0x40); /* RFC 4122 version 4 */
	sb.uuid[8] = (uint8_t)((sb.uuid[8] & 0x3f) | 0x80);
	sb.block_size = o->block_size;
	/* whole blocks only: a partial block at the end is never used */
	sb.device_bytes = size - size % o->block_size;
	sb.data_offset = BD_DATA_OFFSET;
	clock_gettime(CLOCK_REALTIME, &ts);
	sb.created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (o->zero_fill && S_ISREG(is_new ? S_IFREG : st.st_mode) &&
	    (rc = zero_fill(fd, path, sb.data_offset, sb.device_bytes, err,
			    errlen)) < 0)
		goto fail;
	if ((rc = bd_super_write(fd, path, &sb, err, errlen)) < 0)
		goto fail;
	close(fd);
	if (out)
		*out = sb;
	return 0;
fail:
	close(fd);
	if (is_new)
		unlink(path);
	return rc;
}
