/* tc_check.h — the main() of an integration test on the cluster harness:
 * one Check test case per test, so CK_RUN_CASE=name runs one, each with a
 * 300 s timeout, inside a scratch root (tc_root_init) removed at the end
 * whatever the tests left.
 *
 *     const struct tc_case cases[] = { { "maps", maps }, ... };
 *     int main(void) { return tc_check_main("mon", cases, TC_NCASES(cases)); }
 *
 * A case that runs long (many seconds of faults, kills or load) carries
 * the tag "long": `make distcheck` from dev.sh sets CK_EXCLUDE_TAGS=long,
 * since the plain and sanitizer runs before it ran every case.
 */
#ifndef TSR_TEST_TC_CHECK_H
#define TSR_TEST_TC_CHECK_H

#include "cluster/cluster.h"

#include <check.h>
#include <stdlib.h>

struct tc_case {
	const char *name;
	const TTest *test;
	const char *tags; /* Check tags, NULL for none; see TC_LONG */
};

#define TC_LONG "long"

#define TC_NCASES(a) (sizeof(a) / sizeof((a)[0]))

static inline int
tc_check_main(const char *suite, const struct tc_case *cases, size_t n)
{
	Suite *s = suite_create(suite);
	SRunner *sr;
	int failed;

	for (size_t i = 0; i < n; i++) {
		TCase *tc = tcase_create(cases[i].name);
		tcase_set_timeout(tc, 300);
		if (cases[i].tags)
			tcase_set_tags(tc, cases[i].tags);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	if (tc_root_init() < 0)
		return 99;
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tc_root_remove();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
