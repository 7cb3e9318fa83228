/* super.h — the superblock of a backend-blockdev device or image file.
 *
 * The first 4 KiB of the device:
 *
 *     offset 0                                              4096
 *     +----------------------------------+--------+---------+
 *     | envelope v1 (core encoding)      | crc32c | zeros   |
 *     |  u64 magic  "TSRBDEV1"           |  u32   |         |
 *     |  u8[16] uuid                     |        |         |
 *     |  u32 block_size  (4K..1M, 2^n)   |        |         |
 *     |  u64 device_bytes at mkfs        |        |         |
 *     |  u64 data_offset (block aligned) |        |         |
 *     |  u64 created_ns                  |        |         |
 *     +----------------------------------+--------+---------+
 *
 * The CRC32C covers the envelope's bytes, so a torn or flipped superblock
 * is told apart from a foreign one (wrong magic) and from one written by
 * a newer version (envelope compat above ours).  A wrong magic alone does
 * not make a device foreign: one a few bits from ours, or whose checksum
 * holds with ours put back, or with the rest laid out as above, is ours
 * and damaged — the advice for a foreign device is mkfs, which would erase
 * it.  Every error names the path and says which of these it is.
 */
#ifndef TSR_BD_SUPER_H
#define TSR_BD_SUPER_H

#include <stddef.h>
#include <stdint.h>

#define BD_SUPER_SIZE 4096u
#define BD_MAGIC 0x3156454442525354ull /* "TSRBDEV1" little-endian */

struct bd_super {
	uint8_t uuid[16];
	uint32_t block_size;
	uint64_t device_bytes;
	uint64_t data_offset;
	uint64_t created_ns;
};

/* Size of what fd opens: a regular file's length or a block device's
 * capacity.  Errors name path. */
int bd_device_size(int fd, const char *path, uint64_t *bytes, char *err,
		   size_t errlen);

/* Write sb at offset 0 and make it durable (fdatasync). */
int bd_super_write(int fd, const char *path, const struct bd_super *sb,
		   char *err, size_t errlen);

/* Read and check the superblock: -ENOTBLK-free wording, errors:
 *   -EINVAL   not a Tessera block device (magic, and nothing else of
 *             ours), or a field out of range
 *   -EIO      checksum mismatch, a damaged magic, short read
 *   -EOPNOTSUPP written by a newer version
 *   -ENOSPC   the device is now smaller than it was formatted */
int bd_super_read(int fd, const char *path, struct bd_super *sb, char *err,
		  size_t errlen);

#endif
