/* mkfs.h — formatting a device or image file for backend-blockdev. */
#ifndef TSR_BD_MKFS_H
#define TSR_BD_MKFS_H

#include <stddef.h>
#include <stdint.h>

#include "super.h"

/* Data starts 1 MiB in: room for the superblock and for what may join it.
 * The smallest device mkfs accepts holds that plus 16 blocks. */
#define BD_DATA_OFFSET (1u << 20)

struct bd_mkfs_opts {
	uint64_t size;        /* image files: create or grow to this many bytes
				 (0: use the current size); devices: must be 0 */
	uint32_t block_size;  /* 4096 .. 1 MiB, power of two */
	int force;            /* overwrite an existing Tessera superblock */
	int zero_fill;        /* image files: write zeros over the data area,
				 so later writes find allocated, written
				 blocks (no extent conversion to commit on
				 every sync); slow for large images */
};

/* Format path: an existing block device, or an image file (created if
 * missing, preallocated to opts->size so a full device is found at mkfs
 * time, not at the first write).  Refuses to overwrite a Tessera
 * superblock without force.  On success *out holds what was written. */
int bd_mkfs(const char *path, const struct bd_mkfs_opts *opts,
	    struct bd_super *out, char *err, size_t errlen);

#endif
