/* topo_int.h — what topo.c, topo_bin.c and topo_text.c share inside the
 * topology module; hidden (-fvisibility=hidden), not part of topo.h. */
#ifndef TSR_TOPO_INT_H
#define TSR_TOPO_INT_H

#include "topo.h"
#include "errf.h" /* errf(), the plugins' error-message helper */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Name characters: [A-Za-z0-9_.-]; a name is 1..TOPO_NAME_MAX of them. */
bool topo_name_char(unsigned char c);
bool topo_name_ok(const char *s, size_t n);

/* A NUL-terminated copy of s[0..n), or NULL on ENOMEM. */
char *topo_strndup(const char *s, size_t n);

/* The slot in t->buckets of bucket id, or UINT32_MAX. */
uint32_t topo_slot(const struct topo *t, int32_t id);

/* Check t, put it in canonical order (reorder) or insist it already is,
 * and derive bucket weights, max_devices and the bucket index. */
int topo_finish(struct topo *t, bool reorder, char *err, size_t errlen);

#endif
