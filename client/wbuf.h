/* wbuf.h — one file's writes held back: the file client's write-back
 * cache (client/fs.c), kept while the MDS lets the client buffer (the BUF
 * capability, mdsmsg.h).
 *
 * Per object of the file, two lists of ranges in object offsets:
 *   dirty    written here and not yet sent; sorted, disjoint, and ranges
 *            that touch are merged, so a run of contiguous writes is one
 *            range (grown in place, its buffer doubled as it grows);
 *   sending  taken out of dirty to be written to the OSDs, kept until
 *            every operation carrying them is answered.
 * An object has one send in flight at most: a later one could otherwise
 * land before it and be overwritten by older bytes.  Writes meanwhile go
 * to dirty, which is newer than sending.
 *
 * A read of a range inside one dirty range is answered from it
 * (WB_COVERED); a read that meets buffered bytes otherwise (WB_PARTIAL)
 * must wait until the object is sent and read it from the OSDs.
 *
 * Not thread-safe: fs.c calls it under its write-back lock.
 */
#ifndef TSR_CLIENT_WBUF_H
#define TSR_CLIENT_WBUF_H

#include "util/u64map.h"

#include <stddef.h>
#include <stdint.h>

struct wb_ext {
	uint64_t off;                /* in the object */
	size_t len, cap;
	uint8_t *data;
};

struct wb_obj {
	uint64_t objno;
	struct wb_ext *dirty;        /* sorted by off */
	size_t ndirty, capdirty;
	struct wb_ext *sending;
	size_t nsending;
	unsigned inflight;           /* operations carrying sending */
	uint64_t dirty_gen;          /* the oldest write in dirty (its number) */
	uint64_t sending_gen;        /* and in sending */
};

struct wbuf {
	int64_t pool;
	uint64_t ino;
	struct tsr_u64map objs;      /* objno + 1 -> struct wb_obj */
	uint64_t bytes;              /* dirty and sending */
	uint64_t dirty_bytes;
	uint64_t dirty_since;        /* when the oldest dirty byte came (0: none) */
	uint64_t gen;                /* writes put so far: each one's number */
	int err;                     /* the last send that failed */
	uint32_t err_seq;            /* sends that failed: a file handle tells
					those it has not seen (fs.c) */
	uint32_t err_told;           /* err_seq as a handle last told it */
	int tell_wanted;             /* a closed handle's size waits for these
					bytes: each answered send posts the
					client's tell job (fs.c) */
};

enum { WB_NONE, WB_COVERED, WB_PARTIAL };

void wb_init(struct wbuf *wb, int64_t pool, uint64_t ino);
/* Everything goes, sending too (nothing may be in flight). */
void wb_free(struct wbuf *wb);

/* Hold len bytes of data at off in object objno, at time now (mono ns):
 * the number of bytes wb->bytes grew by. */
uint64_t wb_put(struct wbuf *wb, uint64_t objno, uint64_t off, const void *data, size_t len,
		uint64_t now);
/* [off, off+len) of object objno: WB_COVERED (copied to out), WB_PARTIAL
 * or WB_NONE (nothing of it is held). */
int wb_get(const struct wbuf *wb, uint64_t objno, uint64_t off, size_t len, void *out);

/* Up to max objects with dirty ranges and no send in flight (all when
 * objno is 0, else objno - 1 alone): their numbers in out. */
size_t wb_ready(const struct wbuf *wb, uint64_t only, uint64_t *out, size_t max);
/* Move objno's dirty ranges to sending: the object, or NULL when it has
 * none or a send is in flight.  The caller sets o->inflight to the
 * number of operations it sends them in. */
struct wb_obj *wb_take(struct wbuf *wb, uint64_t objno);
/* One of o's operations was answered (result: 0 or an error, kept in
 * wb->err): the bytes wb->bytes shrank by (the sending ranges go with the
 * last; the object too when nothing is left of it). */
uint64_t wb_sent(struct wbuf *wb, struct wb_obj *o, int result);
/* 1 when objno (objno - 1; 0: any object) has a send in flight. */
int wb_in_flight(const struct wbuf *wb, uint64_t only);
/* 1 while a write numbered upto or lower is held, dirty or sending, in
 * object only - 1 (0: in any): what an fsync, or a read that met it,
 * waits for — later writes do not hold it up. */
int wb_pending(const struct wbuf *wb, uint64_t only, uint64_t upto);

#endif
