/* fstore.h — the internals of backend-file shared by its source files.
 *
 * On-disk layout of a store at PATH:
 *
 *     PATH/meta/      LevelDB: everything but object data (keys below)
 *     PATH/journal    write-ahead journal (journal.h)
 *     PATH/data/XX/YY/OOOOOOOOOOOOOOOO
 *                     object data, one file per object, named by the
 *                     object's 64-bit id in hex; XX and YY are bits 20-27
 *                     and 12-19 of the id, so 4096 consecutive ids share
 *                     a directory (new objects seldom need a new one) and
 *                     no directory holds more than 4096 files per 2^28
 *                     ids handed out
 *
 * LevelDB keys (integers big-endian, so keys sort numerically):
 *
 *     'S'                          superblock: uuid, next object id,
 *                                  object count, logical bytes
 *     'L' cid                      a collection (value: empty envelope)
 *     'O' cid name                 onode: object id, size, mtime
 *     'A' id key                   attribute
 *     'M' id key                   omap entry
 *     'C' id chunk(u32)            chunk map: how the chunk's 64 KiB are
 *                                  stored and their checksums
 *
 *     cid = u64 pool, u32 pg, u32 (shard ^ 0x80000000): 16 bytes
 *
 * Object names sort as unsigned bytes after the 17-byte prefix, which is
 * the enumeration order the ABI promises.  Attributes, omap and chunk maps
 * are keyed by the object id, never by name, so a removed object's keys
 * can be dropped with one range and ids are never reused.
 *
 * Data is kept in 64 KiB chunks of 16 blocks of 4 KiB.  A chunk's map is
 * either raw (a bit per block saying "all zeros, nothing on disk" and a
 * CRC32C per other block) or zstd (the chunk compressed, stored at the
 * start of its slot in the file, with one CRC32C over the stored bytes).
 * A chunk without a map reads as zeros and its slot's bytes mean nothing.
 */
#ifndef TSR_FILE_FSTORE_H
#define TSR_FILE_FSTORE_H

#include <stdint.h>

#define FS_BLOCK 4096u
#define FS_CHUNK 65536u
#define FS_BPC (FS_CHUNK / FS_BLOCK) /* blocks per chunk */

#define FS_CHUNK_RAW 0
#define FS_CHUNK_ZSTD 1

/* A chunk map, decoded. */
struct fs_cmeta {
	int present;          /* 0: no map, the chunk reads as zeros */
	uint8_t kind;         /* FS_CHUNK_RAW or FS_CHUNK_ZSTD */
	uint16_t zero;        /* raw: bit b set = block b is zeros */
	uint32_t stored;      /* zstd: bytes stored */
	uint32_t crc[FS_BPC]; /* raw: per block; zstd: crc[0] over stored */
};

#endif
