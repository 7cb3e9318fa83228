/* kvov.h — pending key/value changes layered over a tsr_kv store.
 *
 * While the store prepares a transaction, its changes to LevelDB (onodes,
 * attributes, omap, chunk checksums) are collected here rather than
 * written, and every lookup the preparation makes goes through this layer,
 * so each operation sees the ones before it.  At the end the changes are
 * emitted in an order whose effect equals the order they were made in:
 * range deletions first (a later put or delete inside a deleted range
 * replaced the range's effect on that key, and is kept as an entry), then
 * puts and deletes.
 *
 * Keys and values are copied in; key bounds are never NULL (an empty key
 * is the smallest).  Scan callbacks must not change the overlay.  Values returned by lookups are borrowed
 * (valid until the next change to the overlay) or, from the store
 * underneath, the caller's (freed with tsr_kv_free): *owned says which.
 */
#ifndef TSR_OSTORE_KVOV_H
#define TSR_OSTORE_KVOV_H

#include <stddef.h>
#include <stdint.h>

struct tsr_kv;

struct kvov_ent {
	uint8_t *key;
	size_t klen;
	uint8_t *val;  /* NULL: deleted */
	size_t vlen;
};

struct kvov_range {
	uint8_t *start, *end;  /* [start, end) */
	size_t slen, elen;
};

struct kvov {
	struct tsr_kv *kv;
	struct kvov_ent *ents;   /* sorted by key */
	size_t nents, cap;
	struct kvov_range *ranges;
	size_t nranges, rcap;
};

void kvov_init(struct kvov *o, struct tsr_kv *kv);
/* Drop every pending change. */
void kvov_reset(struct kvov *o);

int kvov_put(struct kvov *o, const void *k, size_t kl, const void *v,
	     size_t vl);
int kvov_del(struct kvov *o, const void *k, size_t kl);
/* Delete every key in [start, end). */
int kvov_del_range(struct kvov *o, const void *start, size_t sl,
		   const void *end, size_t el);
/* The same for keys the store cannot hold (those of an object this
 * overlay made: ids are never reused): only the pending changes go, and
 * the commit has no range to look up in the store. */
void kvov_forget_range(struct kvov *o, const void *start, size_t sl,
		       const void *end, size_t el);

/* 0 with *v (*owned: 1 if from the store, free with tsr_kv_free), -ENOENT,
 * or -EIO with the store's reason in err. */
int kvov_get(struct kvov *o, const void *k, size_t kl, void **v, size_t *vl,
	     int *owned, char *err, size_t errlen);
/* The same, for a key the store cannot hold (kvov_forget_range): the
 * pending changes alone. */
int kvov_get_pending(struct kvov *o, const void *k, size_t kl, void **v, size_t *vl,
		     int *owned);

/* Visit the merged view of [start, end) in key order; cb's non-zero return
 * stops and is returned. */
typedef int (*kvov_cb)(void *arg, const void *k, size_t kl, const void *v,
		       size_t vl);
int kvov_scan(struct kvov *o, const void *start, size_t sl, const void *end,
	      size_t el, kvov_cb cb, void *arg, char *err, size_t errlen);

#endif
