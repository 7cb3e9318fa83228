/* alloc.c — bitmap allocator for backend-blockdev (see alloc.h). */
#include "alloc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

struct bd_alloc {
	uint64_t nblocks;
	uint64_t nfree;
	uint64_t hint;       /* where the next search starts */
	uint64_t *bits;      /* 1 = in use; bits past nblocks are set */
	uint64_t nwords;
};

/* Set or clear [start, start+count), a word at a time where possible. */
static void
set_range(struct bd_alloc *a, uint64_t start, uint64_t count, bool v)
{
	uint64_t b = start, end = start + count;

	while (b < end) {
		uint64_t w = b >> 6, off = b & 63;
		uint64_t n = end - b < 64 - off ? end - b : 64 - off;
		uint64_t mask = (n == 64 ? ~0ull : ((1ull << n) - 1)) << off;
		if (v)
			a->bits[w] |= mask;
		else
			a->bits[w] &= ~mask;
		b += n;
	}
}

/* Whether every block of the range is in use (want_used) or free. */
static bool
all_are(const struct bd_alloc *a, uint64_t start, uint64_t count, bool want_used)
{
	uint64_t b = start, end = start + count;

	while (b < end) {
		uint64_t w = b >> 6, off = b & 63;
		uint64_t n = end - b < 64 - off ? end - b : 64 - off;
		uint64_t mask = (n == 64 ? ~0ull : ((1ull << n) - 1)) << off;
		uint64_t got = a->bits[w] & mask;
		if (want_used ? got != mask : got != 0)
			return false;
		b += n;
	}
	return true;
}

int
bd_alloc_create(uint64_t nblocks, struct bd_alloc **out)
{
	struct bd_alloc *a;

	if (nblocks == 0 || nblocks > (UINT64_MAX >> 1))
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	a->nblocks = nblocks;
	a->nfree = nblocks;
	a->nwords = (nblocks + 63) / 64;
	a->bits = calloc(a->nwords, sizeof(uint64_t));
	if (a->bits == NULL) {
		free(a);
		return -ENOMEM;
	}
	/* the tail of the last word is "in use", so searches never hand it out */
	if (nblocks & 63)
		a->bits[a->nwords - 1] = ~0ull << (nblocks & 63);
	*out = a;
	return 0;
}

void
bd_alloc_destroy(struct bd_alloc *a)
{
	if (a == NULL)
		return;
	free(a->bits);
	free(a);
}

static int
check_range(const struct bd_alloc *a, uint64_t start, uint64_t count)
{
	if (count == 0 || start >= a->nblocks || count > a->nblocks - start)
		return -ERANGE;
	return 0;
}

int
bd_alloc_mark_used(struct bd_alloc *a, uint64_t start, uint64_t count)
{
	int rc = check_range(a, start, count);

	if (rc < 0)
		return rc;
	if (!all_are(a, start, count, false))
		return -EEXIST;
	set_range(a, start, count, true);
	a->nfree -= count;
	return 0;
}

int
bd_alloc_release(struct bd_alloc *a, uint64_t start, uint64_t count)
{
	int rc = check_range(a, start, count);

	if (rc < 0)
		return rc;
	if (!all_are(a, start, count, true))
		return -EINVAL;
	set_range(a, start, count, false);
	a->nfree += count;
	return 0;
}

/* The free run starting at or after b (wrapping never): *start and its
 * length, bounded by limit; false when none is left before the end. */
static bool
next_run(const struct bd_alloc *a, uint64_t b, uint64_t limit, uint64_t *start,
	 uint64_t *len)
{
	/* skip used blocks: whole words of ones at a time */
	while (b < a->nblocks) {
		uint64_t w = b >> 6;
		uint64_t free_bits = ~a->bits[w] & (~0ull << (b & 63));
		if (free_bits) {
			b = (w << 6) + (uint64_t)__builtin_ctzll(free_bits);
			break;
		}
		b = (w + 1) << 6;
	}
	if (b >= a->nblocks)
		return false;
	*start = b;
	/* measure the run: whole words of zeros at a time */
	uint64_t e = b;
	while (e < a->nblocks && e - b < limit) {
		uint64_t w = e >> 6;
		uint64_t used_bits = a->bits[w] & (~0ull << (e & 63));
		if (used_bits) {
			e = (w << 6) + (uint64_t)__builtin_ctzll(used_bits);
			break;
		}
		e = (w + 1) << 6;
	}
	if (e > a->nblocks)
		e = a->nblocks;
	*len = e - b < limit ? e - b : limit;
	return true;
}

int
bd_alloc_take(struct bd_alloc *a, uint64_t want, struct bd_extent *ext,
	      uint32_t max_ext, uint32_t *next)
{
	uint64_t s, l, got = 0;
	uint32_t n = 0;

	*next = 0;
	if (want == 0)
		return 0;
	if (max_ext == 0 || want > a->nfree)
		return -ENOSPC;
	/* 1. one run of want blocks, next-fit from the hint, wrapping once */
	for (int pass = 0; pass < 2; pass++) {
		uint64_t b = pass == 0 ? a->hint : 0;
		uint64_t stop = pass == 0 ? a->nblocks : a->hint;
		while (b < stop && next_run(a, b, want, &s, &l) && s < stop) {
			if (l == want) {
				set_range(a, s, want, true);
				a->nfree -= want;
				a->hint = s + want < a->nblocks ? s + want : 0;
				ext[0] = (struct bd_extent){ s, want };
				*next = 1;
				return 0;
			}
			b = s + l;
		}
	}
	/* 2. no single run: the runs met from the hint, as few as one pass
	 * finds, within max_ext; give everything back if they fall short */
	for (int pass = 0; pass < 2 && got < want && n < max_ext; pass++) {
		uint64_t b = pass == 0 ? a->hint : 0;
		uint64_t stop = pass == 0 ? a->nblocks : a->hint;
		while (got < want && n < max_ext && b < stop &&
		       next_run(a, b, want - got, &s, &l) && s < stop) {
			if (s + l > stop)
				l = stop - s;
			ext[n++] = (struct bd_extent){ s, l };
			set_range(a, s, l, true);
			got += l;
			b = s + l;
		}
	}
	if (got < want) {
		for (uint32_t i = 0; i < n; i++)
			set_range(a, ext[i].start, ext[i].count, false);
		return -ENOSPC;
	}
	a->nfree -= want;
	a->hint = ext[n - 1].start + ext[n - 1].count;
	if (a->hint >= a->nblocks)
		a->hint = 0;
	*next = n;
	return 0;
}

uint64_t
bd_alloc_free_blocks(const struct bd_alloc *a)
{
	return a->nfree;
}

uint64_t
bd_alloc_total_blocks(const struct bd_alloc *a)
{
	return a->nblocks;
}
