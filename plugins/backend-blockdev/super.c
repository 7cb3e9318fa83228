/* super.c — reading, checking and writing the backend-blockdev superblock. */
#include "super.h"

#include <tessera/crc32c.h>
#include <tessera/encoding.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int
errf(char *err, size_t errlen, int rc, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int
errf(char *err, size_t errlen, int rc, const char *path, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "%s: ", path);

	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

int
bd_device_size(int fd, const char *path, uint64_t *bytes, char *err,
	       size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return errf(err, errlen, -errno, path, "cannot stat: %s", strerror(errno));
	if (S_ISREG(st.st_mode)) {
		*bytes = (uint64_t)st.st_size;
		return 0;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, bytes) < 0)
			return errf(err, errlen, -errno, path,
				    "cannot read the device's size: %s", strerror(errno));
		return 0;
	}
	return errf(err, errlen, -EINVAL, path,
		    "neither a block device nor a regular (image) file");
}

static bool
valid_fields(const struct bd_super *sb)
{
	return sb->block_size >= 4096 && sb->block_size <= (1u << 20) &&
	       (sb->block_size & (sb->block_size - 1)) == 0 &&
	       sb->data_offset >= BD_SUPER_SIZE &&
	       sb->data_offset % sb->block_size == 0 &&
	       sb->data_offset < sb->device_bytes;
}

int
bd_super_write(int fd, const char *path, const struct bd_super *sb, char *err,
	       size_t errlen)
{
	uint8_t block[BD_SUPER_SIZE];
	struct tsr_enc e;
	size_t len;

	if (!valid_fields(sb))
		return errf(err, errlen, -EINVAL, path,
			    "refusing to write a superblock with block size %u, data offset %llu, size %llu",
			    sb->block_size, (unsigned long long)sb->data_offset,
			    (unsigned long long)sb->device_bytes);
	tsr_enc_init(&e);
	size_t mark = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u64(&e, BD_MAGIC);
	tsr_enc_raw(&e, sb->uuid, sizeof(sb->uuid));
	tsr_enc_u32(&e, sb->block_size);
	tsr_enc_u64(&e, sb->device_bytes);
	tsr_enc_u64(&e, sb->data_offset);
	tsr_enc_u64(&e, sb->created_ns);
	tsr_enc_end_struct(&e, mark);
	uint32_t crc = tsr_crc32c(0, e.buf, e.len);
	tsr_enc_u32(&e, crc);
	if (tsr_enc_error(&e) < 0) {
		tsr_enc_release(&e);
		return errf(err, errlen, -ENOMEM, path, "out of memory");
	}
	uint8_t *buf = tsr_enc_take(&e, &len);
	memset(block, 0, sizeof(block));
	memcpy(block, buf, len);
	free(buf);
	if (pwrite(fd, block, sizeof(block), 0) != (ssize_t)sizeof(block))
		return errf(err, errlen, errno ? -errno : -EIO, path,
			    "cannot write the superblock: %s", strerror(errno ? errno : EIO));
	if (fdatasync(fd) < 0)
		return errf(err, errlen, -errno, path, "cannot sync the superblock: %s",
			    strerror(errno));
	return 0;
}

int
bd_super_read(int fd, const char *path, struct bd_super *sb, char *err,
	      size_t errlen)
{
	uint8_t block[BD_SUPER_SIZE];
	struct tsr_dec d, sub;
	uint64_t size, magic;
	uint8_t version;
	int rc;

	if ((rc = bd_device_size(fd, path, &size, err, errlen)) < 0)
		return rc;
	if (size < BD_SUPER_SIZE)
		return errf(err, errlen, -EINVAL, path,
			    "%llu bytes: too small to hold a superblock (%u bytes)",
			    (unsigned long long)size, BD_SUPER_SIZE);
	ssize_t got = pread(fd, block, sizeof(block), 0);
	if (got != (ssize_t)sizeof(block))
		return errf(err, errlen, -EIO, path, "cannot read the superblock: %s",
			    got < 0 ? strerror(errno) : "short read");
	/* the magic sits right after the 6-byte envelope header: check it
	 * first so a foreign device is called foreign, not corrupt */
	tsr_dec_init(&d, block + 6, 8);
	magic = tsr_dec_u64(&d);
	if (magic != BD_MAGIC)
		return errf(err, errlen, -EINVAL, path,
			    "not a Tessera block device (magic %016llx, expected %016llx); run mkfs first",
			    (unsigned long long)magic, (unsigned long long)BD_MAGIC);
	tsr_dec_init(&d, block, sizeof(block));
	rc = tsr_dec_begin_struct(&d, 1, &version, &sub);
	if (rc == -EOPNOTSUPP)
		return errf(err, errlen, rc, path,
			    "superblock written by a newer Tessera (format version %u)",
			    block[0]);
	if (rc < 0)
		return errf(err, errlen, -EIO, path, "superblock is damaged (bad envelope)");
	size_t body = (size_t)(d.p - block);
	uint32_t want = tsr_crc32c(0, block, body);
	uint32_t have = tsr_dec_u32(&d);
	if (tsr_dec_error(&d) != 0 || want != have)
		return errf(err, errlen, -EIO, path,
			    "superblock checksum mismatch (stored %08x, computed %08x): damaged",
			    have, want);
	(void)tsr_dec_u64(&sub); /* the magic, checked above */
	tsr_dec_raw(&sub, sb->uuid, sizeof(sb->uuid));
	sb->block_size = tsr_dec_u32(&sub);
	sb->device_bytes = tsr_dec_u64(&sub);
	sb->data_offset = tsr_dec_u64(&sub);
	sb->created_ns = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || !valid_fields(sb))
		return errf(err, errlen, -EINVAL, path,
			    "superblock fields out of range (block size %u, data offset %llu, size %llu)",
			    sb->block_size, (unsigned long long)sb->data_offset,
			    (unsigned long long)sb->device_bytes);
	if (size < sb->device_bytes)
		return errf(err, errlen, -ENOSPC, path,
			    "the device is %llu bytes, smaller than the %llu it was formatted with",
			    (unsigned long long)size, (unsigned long long)sb->device_bytes);
	return 0;
}
