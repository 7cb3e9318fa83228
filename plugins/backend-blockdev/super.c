/* super.c — reading, checking and writing the backend-blockdev superblock. */
#include "super.h"
#include "errf.h"

#include <tessera/crc32c.h>
#include <tessera/encoding.h>

#include <errno.h>
#include <stdbool.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

int
bd_device_size(int fd, const char *path, uint64_t *bytes, char *err,
	       size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return errf(err, errlen, -errno, "%s: cannot stat: %s", path, strerror(errno));
	if (S_ISREG(st.st_mode)) {
		*bytes = (uint64_t)st.st_size;
		return 0;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, bytes) < 0)
			return errf(err, errlen, -errno,
				    "%s: cannot read the device's size: %s", path, strerror(errno));
		return 0;
	}
	return errf(err, errlen, -EINVAL,
		    "%s: neither a block device nor a regular (image) file", path);
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
		return errf(err, errlen, -EINVAL,
			    "%s: refusing to write a superblock with block size %u, data offset %llu, size %llu", path,
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
		return errf(err, errlen, -ENOMEM, "%s: out of memory", path);
	}
	uint8_t *buf = tsr_enc_take(&e, &len);
	memset(block, 0, sizeof(block));
	memcpy(block, buf, len);
	free(buf);
	if (pwrite(fd, block, sizeof(block), 0) != (ssize_t)sizeof(block))
		return errf(err, errlen, errno ? -errno : -EIO,
			    "%s: cannot write the superblock: %s", path, strerror(errno ? errno : EIO));
	if (fdatasync(fd) < 0)
		return errf(err, errlen, -errno, "%s: cannot sync the superblock: %s", path,
			    strerror(errno));
	return 0;
}

/* The envelope's body as version 1 writes it: magic, uuid, block size,
 * device size, data offset, creation time. */
#define BD_BODY_V1 (8u + 16u + 4u + 8u + 8u + 8u)

static uint64_t
get_le(const uint8_t *b, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/* The magic is not ours: is this a superblock of ours that was damaged,
 * rather than a foreign device?  The advice for a foreign device is mkfs,
 * which destroys what a damaged one holds, so "foreign" takes all of the
 * evidence: the magic far from ours, the checksum not holding with ours
 * put in its place, and the envelope and fields not where ours put them
 * with values ours can have.  1 (why says which evidence) or 0. */
static int
damaged_not_foreign(const uint8_t block[BD_SUPER_SIZE], uint64_t magic,
		    char *why, size_t whylen)
{
	int bits = __builtin_popcountll(magic ^ BD_MAGIC);
	uint8_t fixed[6 + BD_BODY_V1 + 4];
	struct bd_super f;

	/* the checksum, with our magic where it belongs */
	memcpy(fixed, block, sizeof(fixed));
	for (int i = 0; i < 8; i++)
		fixed[6 + i] = (uint8_t)(BD_MAGIC >> (8 * i));
	int crc_holds = get_le(block + 2, 4) == BD_BODY_V1 &&
			tsr_crc32c(0, fixed, 6 + BD_BODY_V1) ==
			get_le(block + 6 + BD_BODY_V1, 4);
	/* the layout: our envelope header, and fields where ours are */
	f.block_size = (uint32_t)get_le(block + 6 + 8 + 16, 4);
	f.device_bytes = get_le(block + 6 + 8 + 16 + 4, 8);
	f.data_offset = get_le(block + 6 + 8 + 16 + 4 + 8, 8);
	int layout = block[0] == 1 && block[1] == 1 &&
		     get_le(block + 2, 4) == BD_BODY_V1 && valid_fields(&f);

	if (bits > 8 && !crc_holds && !layout)
		return 0;
	snprintf(why, whylen, "it differs from ours in %d bit%s%s", bits, bits == 1 ? "" : "s",
		 crc_holds ? ", and with ours in its place the checksum holds"
		 : layout ? ", and the rest is laid out as ours is" : "");
	return 1;
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
		return errf(err, errlen, -EINVAL,
			    "%s: %llu bytes: too small to hold a superblock (%u bytes)", path,
			    (unsigned long long)size, BD_SUPER_SIZE);
	ssize_t got = pread(fd, block, sizeof(block), 0);
	if (got != (ssize_t)sizeof(block))
		return errf(err, errlen, -EIO, "%s: cannot read the superblock: %s", path,
			    got < 0 ? strerror(errno) : "short read");
	/* the magic sits right after the 6-byte envelope header: check it
	 * first so a foreign device is called foreign, not corrupt; but one
	 * of ours with a damaged magic must not be sent to mkfs */
	tsr_dec_init(&d, block + 6, 8);
	magic = tsr_dec_u64(&d);
	if (magic != BD_MAGIC) {
		char why[128];
		if (damaged_not_foreign(block, magic, why, sizeof(why)))
			return errf(err, errlen, -EIO,
				    "%s: superblock is damaged: its magic is %016llx, not "
				    "%016llx, but %s: a damaged Tessera block device, "
				    "not a foreign one (mkfs would erase the objects it "
				    "holds)", path, (unsigned long long)magic,
				    (unsigned long long)BD_MAGIC, why);
		return errf(err, errlen, -EINVAL,
			    "%s: not a Tessera block device (magic %016llx, expected %016llx); run mkfs first", path,
			    (unsigned long long)magic, (unsigned long long)BD_MAGIC);
	}
	tsr_dec_init(&d, block, sizeof(block));
	rc = tsr_dec_begin_struct(&d, 1, &version, &sub);
	if (rc == -EOPNOTSUPP)
		return errf(err, errlen, rc,
			    "%s: superblock written by a newer Tessera (format version %u)", path,
			    block[0]);
	if (rc < 0)
		return errf(err, errlen, -EIO, "%s: superblock is damaged (bad envelope)", path);
	size_t body = (size_t)(d.p - block);
	uint32_t want = tsr_crc32c(0, block, body);
	uint32_t have = tsr_dec_u32(&d);
	if (tsr_dec_error(&d) != 0 || want != have)
		return errf(err, errlen, -EIO,
			    "%s: superblock checksum mismatch (stored %08x, computed %08x): damaged", path,
			    have, want);
	(void)tsr_dec_u64(&sub); /* the magic, checked above */
	tsr_dec_raw(&sub, sb->uuid, sizeof(sb->uuid));
	sb->block_size = tsr_dec_u32(&sub);
	sb->device_bytes = tsr_dec_u64(&sub);
	sb->data_offset = tsr_dec_u64(&sub);
	sb->created_ns = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || !valid_fields(sb))
		return errf(err, errlen, -EINVAL,
			    "%s: superblock fields out of range (block size %u, data offset %llu, size %llu)", path,
			    sb->block_size, (unsigned long long)sb->data_offset,
			    (unsigned long long)sb->device_bytes);
	if (size < sb->device_bytes)
		return errf(err, errlen, -ENOSPC,
			    "%s: the device is %llu bytes, smaller than the %llu it was formatted with", path,
			    (unsigned long long)size, (unsigned long long)sb->device_bytes);
	return 0;
}
