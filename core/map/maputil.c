/* maputil.c — helpers the map modules share (maputil.h). */
#include "map/maputil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *
tsr_map_dup(const void *p, size_t n)
{
	void *out = malloc(n ? n : 1);

	if (out && n)
		memcpy(out, p, n);
	return out;
}

void *
tsr_map_alloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

size_t
tsr_map_count(struct tsr_dec *d, size_t max, size_t min_bytes)
{
	uint32_t n = tsr_dec_u32(d);

	if (n > max || (uint64_t)n * min_bytes > tsr_dec_remaining(d)) {
		tsr_dec_fail(d, -EBADMSG);
		return 0;
	}
	return n;
}

int
tsr_map_word_ok(const char *s, size_t cap)
{
	size_t l = strnlen(s, cap);

	if (l >= cap)
		return 0;
	for (size_t i = 0; i < l; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return 0;
	return 1;
}
