/* u64map.c — a map from 64-bit keys to pointers (u64map.h). */
#include "util/u64map.h"

#include <errno.h>
#include <stdlib.h>

static size_t
slot_of(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

void *
tsr_u64map_get(const struct tsr_u64map *m, uint64_t key)
{
	if (m->cap == 0 || key == 0)
		return NULL;
	for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return m->vals[i];
		if (m->keys[i] == 0)
			return NULL;
	}
}

static int
grow(struct tsr_u64map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	void **vals = calloc(cap, sizeof(*vals));

	if (keys == NULL || vals == NULL) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (m->keys[i] == 0)
			continue;
		size_t j = slot_of(m->keys[i], cap);
		while (keys[j])
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int
tsr_u64map_put(struct tsr_u64map *m, uint64_t key, void *val)
{
	size_t i;

	if (key == 0 || val == NULL)
		return -EINVAL;
	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -ENOMEM;
	for (i = slot_of(key, m->cap); m->keys[i] && m->keys[i] != key;
	     i = (i + 1) & (m->cap - 1))
		;
	if (m->keys[i] == 0)
		m->n++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

void *
tsr_u64map_del(struct tsr_u64map *m, uint64_t key)
{
	size_t i, j;
	void *val;

	if (m->cap == 0 || key == 0)
		return NULL;
	for (i = slot_of(key, m->cap); m->keys[i] != key; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == 0)
			return NULL;
	val = m->vals[i];
	m->keys[i] = 0;
	m->vals[i] = NULL;
	m->n--;
	/* move back the entries of the run after i that may no longer be
	 * found past the hole (backward-shift deletion) */
	for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		size_t home = slot_of(m->keys[j], m->cap);
		/* j's entry stays when its home lies cyclically in (i, j] */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		m->keys[j] = 0;
		m->vals[j] = NULL;
		i = j;
	}
	return val;
}

void
tsr_u64map_free(struct tsr_u64map *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->n = 0;
}

int
tsr_u64map_each(const struct tsr_u64map *m, int (*fn)(void *arg, uint64_t key, void *val),
		void *arg)
{
	int rc;

	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i] && (rc = fn(arg, m->keys[i], m->vals[i])) != 0)
			return rc;
	return 0;
}
