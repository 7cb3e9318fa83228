/* conformance.h — the conformance suites as functions, so the suite's own
 * test programs (tests/conformance/test_backend and test_placement, which
 * take their plugins from the environment under `make check`) and the
 * installed tessera-conformance program (which takes one plugin from its
 * command line, for authors of out-of-tree plugins) run the same tests.
 *
 * A run is one Check suite with one test case per plugin, named after the
 * plugin; every test of the kind runs against every plugin, each in a
 * forked process (CK_FORK=no runs them in one, for a debugger).
 */
#ifndef TSR_CONFORMANCE_H
#define TSR_CONFORMANCE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One plugin under test. */
struct cf_plugin {
	const char *path;        /* its .so */
	/* backend: options beyond "path", "k=v;k=v"; NULL: from
	 * BACKEND_OPTIONS_<name> in the environment, if set */
	const char *options;
	/* backend: the store keeps no data block as written (compressed,
	 * encrypted), so the checksum test cannot find one to flip; also
	 * set by BACKEND_NO_RAW_SCAN_<name> */
	int no_raw_scan;
	/* placement: the golden digest this plugin must reproduce; without
	 * one, a plugin the suite has none for fails the determinism test */
	int has_digest;
	uint64_t digest;
};

struct cf_run {
	const struct cf_plugin *plugins;
	size_t nplugins;             /* 0: the suite fails, naming envvar */
	const char *envvar;          /* where plugins came from, for messages */
	const char *const *only;     /* run only these tests; NULL: all */
	size_t nonly;
	/* backend */
	unsigned long crash_rounds;  /* 0: BACKEND_CRASH_ROUNDS, or 200 */
	const char *tmpdir;          /* for the scratch directory; NULL:
					$TMPDIR, or /tmp */
};

/* The test names of a kind, in the order they run, each with one line of
 * what it checks; a NULL name ends the table. */
struct cf_test_info {
	const char *name;
	const char *what;
};
extern const struct cf_test_info cf_backend_tests[];
extern const struct cf_test_info cf_placement_tests[];

/* Run a suite.  Returns the number of failed tests (a plugin that cannot
 * be loaded fails its "plugin_loads" test), or -1 when the run could not
 * start (a test name unknown to the suite, no scratch directory), with
 * the reason on stderr. */
int cf_backend_run(const struct cf_run *run);
int cf_placement_run(const struct cf_run *run);

/* The suite's own runs: the plugins named in the colon-separated list in
 * environment variable var (BACKEND_PLUGINS, PLACEMENT_PLUGINS), every
 * other setting from the environment.  Returns main()'s exit status. */
int cf_env_main(int (*run)(const struct cf_run *), const char *var);

#endif
