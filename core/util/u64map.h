/* u64map.h — a map from non-zero 64-bit keys to pointers: open addressing,
 * linear probing, grown at half full and never shrunk.  Not thread-safe:
 * one owner (a daemon's state on one thread). */
#ifndef TSR_UTIL_U64MAP_H
#define TSR_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct tsr_u64map {
	uint64_t *keys;              /* 0: empty slot */
	void **vals;
	size_t cap;                  /* a power of two, or 0 */
	size_t n;
};

/* The value of key, or NULL. */
void *tsr_u64map_get(const struct tsr_u64map *m, uint64_t key);
/* Set key (non-zero) to val (non-NULL): 0 or -ENOMEM. */
int tsr_u64map_put(struct tsr_u64map *m, uint64_t key, void *val);
/* Remove key: its value, or NULL when it was absent. */
void *tsr_u64map_del(struct tsr_u64map *m, uint64_t key);
void tsr_u64map_free(struct tsr_u64map *m);
/* Visit every pair (no changes to m meanwhile): fn's non-zero stops. */
int tsr_u64map_each(const struct tsr_u64map *m, int (*fn)(void *arg, uint64_t key, void *val),
		    void *arg);

#endif
