/* runner.c — what the two conformance suites share around their tests:
 * loading the plugins under test, choosing tests by name, and the suite's
 * own runs with everything from the environment (conformance.h). */
#include "conformance.h"
#include "runner.h"
#include "plugin/registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
cf_load(struct tsr_registry *reg, const char *path, uint32_t kind,
	const struct tsr_plugin **plugin, char *err, size_t errlen,
	char *label, size_t labellen)
{
	const char *base = strrchr(path, '/');

	*plugin = NULL;
	if (strlen(path) >= 4096) {
		snprintf(err, errlen, "%.900s...: path too long", path);
	} else if (tsr_registry_load_file(reg, path, plugin, err, errlen) < 0) {
		*plugin = NULL;
	} else if (tsr_plugin_desc(*plugin)->kind != kind) {
		snprintf(err, errlen, "%.900s: a %s plugin, not a %s plugin",
			 path, tsr_plugin_kind_name(tsr_plugin_desc(*plugin)->kind),
			 tsr_plugin_kind_name(kind));
		*plugin = NULL;
	}
	snprintf(label, labellen, "%.63s",
		 *plugin ? tsr_plugin_desc(*plugin)->name
			 : base ? base + 1 : path);
}

int
cf_select(const struct cf_test_info *tab, const TTest *const *tests,
	  size_t ntests, const struct cf_run *run, int *selected)
{
	for (size_t i = 0; i < ntests; i++) {
		/* the table and the functions are kept side by side by hand:
		 * a slip would run one test under another's name */
		if (tab[i].name == NULL || strcmp(tab[i].name, tests[i]->name) != 0) {
			fprintf(stderr, "conformance: test %zu is %s in the "
				"table, %s in the suite\n", i,
				tab[i].name ? tab[i].name : "(end)",
				tests[i]->name);
			return -1;
		}
		selected[i] = run->only == NULL;
	}
	if (tab[ntests].name != NULL) {
		fprintf(stderr, "conformance: the table lists %s, the suite "
			"has no such test\n", tab[ntests].name);
		return -1;
	}
	for (size_t k = 0; run->only != NULL && k < run->nonly; k++) {
		size_t i;

		for (i = 0; i < ntests; i++)
			if (strcmp(run->only[k], tab[i].name) == 0)
				break;
		if (i == ntests) {
			fprintf(stderr, "conformance: no test named '%s' (the "
				"list: --list)\n", run->only[k]);
			return -1;
		}
		selected[i] = 1;
	}
	return 0;
}

int
cf_env_main(int (*run)(const struct cf_run *), const char *var)
{
	struct cf_plugin plugins[64];
	const char *s = getenv(var);
	struct cf_run r = { .plugins = plugins, .envvar = var };
	char *copy = strdup(s ? s : ""), *save = NULL;
	int rc;

	if (copy == NULL) {
		fprintf(stderr, "%s: out of memory\n", var);
		return EXIT_FAILURE;
	}
	memset(plugins, 0, sizeof(plugins));
	for (char *p = strtok_r(copy, ":", &save); p != NULL;
	     p = strtok_r(NULL, ":", &save)) {
		if (r.nplugins == sizeof(plugins) / sizeof(plugins[0])) {
			/* a plugin that is named must be tested */
			fprintf(stderr, "%s names more than %zu plugins\n", var,
				r.nplugins);
			free(copy);
			return EXIT_FAILURE;
		}
		plugins[r.nplugins++].path = p;
	}
	rc = run(&r);
	free(copy);
	return rc == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
