/* maputil.h — helpers the map modules share (not exported): copies and
 * counts read from hostile input (error text: tsr_errf in util/util.h). */
#ifndef TSR_MAP_MAPUTIL_H
#define TSR_MAP_MAPUTIL_H

#include <tessera/encoding.h>

/* A malloc'd copy of p[n] (at least one byte is allocated, so NULL always
 * means out of memory). */
void *tsr_map_dup(const void *p, size_t n);
/* calloc(n, size), at least one element (NULL: out of memory). */
void *tsr_map_alloc(size_t n, size_t size);
/* A u32 count from d, failing d when above max or when n records of at
 * least min_bytes each cannot fit in what is left: nothing is allocated
 * for a count the input cannot back. */
size_t tsr_map_count(struct tsr_dec *d, size_t max, size_t min_bytes);
/* Printable ASCII without blanks, shorter than cap (NUL within cap). */
int tsr_map_word_ok(const char *s, size_t cap);

#endif
