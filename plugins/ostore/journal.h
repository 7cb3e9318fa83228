/* journal.h — the object stores' write-ahead journal: a preallocated file of
 * checksummed records, written in order, replayed after a crash.
 *
 * A transaction is durable once its record is in the journal; the store
 * applies it to the object files and LevelDB afterwards, without syncing,
 * and a checkpoint (everything applied is synced, then the header says so)
 * makes the records before it obsolete.  Replay applies the records after
 * the last checkpoint again, so every record must be idempotent: the store
 * journals physical operations (write these bytes at this offset, delete
 * this key) never logical ones that read state (see fstore.c).
 *
 *     offset 0        2048        4096                              size
 *     +-----------+-----------+---------+---------+-- ... --+---------+
 *     | header A  | header B  | record  | record  |         | (stale) |
 *     +-----------+-----------+---------+---------+-- ... --+---------+
 *
 *     header (in a core envelope v1, then its crc32c):
 *         u64 magic "TSRJRNL1", u8[16] store uuid, u64 size,
 *         u64 generation    (the copy with the higher one is current)
 *         u64 cp_seq        (records <= cp_seq are applied and synced)
 *         u64 nonce         (random, new at every checkpoint)
 *
 *     record (packed, little-endian), padded with zeros to a multiple
 *     of 4096 bytes so that every record starts aligned:
 *         u32 magic 0x4a524543 ("JREC"), u32 payload length,
 *         u64 seq, u32 crc32c(nonce, magic .. seq, payload), u32 zero,
 *         payload
 *
 * The checksum is seeded with the lap's nonce, so neither a record left
 * from an earlier lap nor record-shaped bytes inside a payload (object data
 * is journaled, and clients choose it) can pass for a record.
 *
 * The two header copies are written alternately, so a torn header write
 * leaves the previous one intact.  Records after a checkpoint start at
 * 4096 with seq cp_seq + 1 and follow each other with consecutive seqs;
 * replay stops at the first record that is torn (bad crc), has the wrong
 * seq (a stale one from an earlier lap) or does not fit — that is where
 * the crash interrupted the writer, and nothing after it was acknowledged.
 * A record there that was written but fails its checksum (or whose
 * header has one damaged field) is dropped, but never silently: the disk
 * may have damaged it after it was acknowledged, so jr_dropped says so
 * and the stores log it at mount and report it in fsck.
 *
 * The file is filled with zeros when it is created, so that appending
 * never allocates blocks and a synced write is data, not file-system
 * metadata.  jr_append writes a record with O_DIRECT | O_DSYNC where the
 * file system allows it: one write, durable when it returns.  jr_write
 * leaves the flush to the caller (see there).
 *
 * Not thread-safe: the store's seal owns it (one at a time; see
 * ostore.h), and mount and fsck before any commit thread runs.
 */
#ifndef TSR_OSTORE_JOURNAL_H
#define TSR_OSTORE_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#define JR_HEADER_SIZE 4096u
#define JR_REC_HEADER 24u
#define JR_MIN_SIZE (1u << 20)

struct jr;

/* Create path (which must not exist) with size bytes of zeros and an empty
 * header; synced, directory entry included.  dirfd is the directory
 * holding it. */
int jr_create(int dirfd, const char *name, const char *path, uint64_t size,
	      const uint8_t uuid[16], char *err, size_t errlen);

/* Open and check the header (magic, checksum, uuid, size against the
 * file's).  Every error names path. */
int jr_open(const char *path, const uint8_t uuid[16], struct jr **out,
	    char *err, size_t errlen);
void jr_close(struct jr *j);

/* Hand every record after the checkpoint to cb, in order, last saying
 * whether it is the last one; a non-zero return from cb stops and is
 * returned.  Afterwards appends continue after the last valid record.
 * *nrec gets the number replayed.
 *
 * cb may return JR_DROP for the last record (only): it is not counted,
 * and appends go over it.  A caller that wrote it with jr_write does so
 * when the data the record depends on did not reach the disk. */
#define JR_DROP 1
typedef int (*jr_record_cb)(void *arg, uint64_t seq, const void *p, size_t n,
			    int last);
int jr_replay(struct jr *j, jr_record_cb cb, void *arg, uint64_t *nrec,
	      char *err, size_t errlen);

/* After jr_replay: 1 when it dropped a last record that was written but
 * does not check out (read as a torn write), with a sentence naming the
 * journal, the record's offset and seq and what is wrong in msg; else 0.
 * (A record the callback dropped with JR_DROP is the caller's to report.) */
int jr_dropped(const struct jr *j, char *msg, size_t msglen);

/* Append one record and fdatasync it: when this returns 0 the record
 * survives a crash.  -ENOSPC when it does not fit in what is left before
 * the end (checkpoint, then append again); -E2BIG when it could never fit.
 * *seq gets the record's sequence number. */
int jr_append(struct jr *j, const void *p, size_t n, uint64_t *seq,
	      char *err, size_t errlen);

/* Like jr_append, but the record is only written to the device, not made
 * durable: the caller's next device cache flush makes it durable with the
 * caller's data, saving the journal's own flush.  That holds only where
 * the caller's fdatasync is known to flush the cache of the device that
 * holds the journal, and an O_DIRECT overwrite of the journal's
 * preallocated blocks needs no file-system metadata of its own (ext4 and
 * XFS on one device; not btrfs or ZFS, which copy on write, nor network or
 * FUSE file systems): the caller decides (backend-file: one_flush_ok).
 * Until then a crash may leave the record durable and the caller's data
 * not, or the other way round; the caller must not let another record follow before
 * that flush, and at replay must check the last record's data and return
 * JR_DROP when it is not all there. */
int jr_write(struct jr *j, const void *p, size_t n, uint64_t *seq,
	     char *err, size_t errlen);

/* Everything appended so far has been applied and synced by the caller:
 * record that in the header, and write the next record at the start. */
int jr_checkpoint(struct jr *j, char *err, size_t errlen);

/* Bytes of records since the last checkpoint, and the usable size. */
uint64_t jr_used(const struct jr *j);
uint64_t jr_capacity(const struct jr *j);
/* Largest payload jr_append can ever take. */
uint64_t jr_max_payload(const struct jr *j);

#endif
