/* runner.h — the suites' shared runner helpers (runner.c); internal to
 * tests/conformance, where conformance.h is the suites' interface. */
#ifndef TSR_CF_RUNNER_H
#define TSR_CF_RUNNER_H

#include "conformance.h"

#include <check.h>
#include <stdint.h>

struct tsr_registry;
struct tsr_plugin;

/* Load path into reg as a plugin of kind, into *plugin; a refused file, or
 * a plugin of another kind, leaves *plugin NULL and the reason, naming the
 * file, in err.  label (the test case's name) gets the plugin's name, or
 * the file's when it did not load. */
void cf_load(struct tsr_registry *reg, const char *path, uint32_t kind,
	     const struct tsr_plugin **plugin, char *err, size_t errlen,
	     char *label, size_t labellen);

/* Mark in selected[i] the tests of tests[0..ntests) that run asks for
 * (all, or those run->only names).  tab is the kind's name table, which
 * must list the same tests in the same order.  0, or -1 with the reason
 * on stderr (a name the suite does not know). */
int cf_select(const struct cf_test_info *tab, const TTest *const *tests,
	      size_t ntests, const struct cf_run *run, int *selected);

#endif
