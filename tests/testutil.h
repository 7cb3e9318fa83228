/* testutil.h — small helpers the Check test programs share: an assertion
 * on substrings, removal of a test's scratch directory, random numbers.
 * Header-only (static inline), so a test that uses part of it warns about
 * nothing. */
#ifndef TSR_TESTUTIL_H
#define TSR_TESTUTIL_H

#include <check.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* hay must contain needle; on failure both are printed. */
#define ck_assert_contains(hay, needle)                                      \
	ck_assert_msg(strstr((hay), (needle)) != NULL,                       \
		      "expected \"%s\" in \"%s\"", (needle), (hay))

static inline int
tu_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* rm -rf dir, without a shell: 0, or -1 if something could not go. */
static inline int
tu_rm_rf(const char *dir)
{
	return nftw(dir, tu_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* xorshift64: a test's reproducible random numbers (*state never 0). */
static inline uint64_t
tu_rnd(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
