/* cmd_config.c — `tessera config check` and `tessera config options`. */
#include "cli.h"
#include "config/config.h"
#include "util/util.h"

#include <string.h>

static void
check_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera config check FILE\n"
		"Check a cluster configuration file as every daemon would read it: syntax,\n"
		"section names, unknown keys, types and ranges.  Prints the first problem\n"
		"with its file and line and exits 1, or says the file is valid.\n");
}

static int
check_run(int argc, char **argv)
{
	struct tsr_conf *conf = NULL;
	char err[1024];

	if (argc != 2) {
		check_help(stderr);
		return CLI_USAGE;
	}
	if (tsr_conf_load(argv[1], &conf, err, sizeof(err)) < 0 ||
	    tsr_conf_check_all(conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "tessera config check: %s\n", err);
		if (conf)
			tsr_conf_destroy(conf);
		return CLI_FAIL;
	}
	tsr_conf_destroy(conf);
	printf("%s: valid\n", argv[1]);
	return CLI_OK;
}

static void
options_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera config options [--format plain|md]\n"
		"Print the reference of every configuration option the core knows:\n"
		"name, type, default, range, sections, meaning.  --format md prints the\n"
		"Markdown table kept in doc/configuration.md.\n");
}

static int
options_run(int argc, char **argv)
{
	bool md = false;

	if (argc == 3 && strcmp(argv[1], "--format") == 0 &&
	    (strcmp(argv[2], "md") == 0 || strcmp(argv[2], "plain") == 0))
		md = strcmp(argv[2], "md") == 0;
	else if (argc != 1) {
		options_help(stderr);
		return CLI_USAGE;
	}
	if (md)
		printf("| key | type | default | range or choices | sections | meaning |\n"
		       "|---|---|---|---|---|---|\n");
	for (const struct tsr_conf_opt *o = tsr_conf_core_options(); o->def.name; o++) {
		const struct tsr_opt_def *d = &o->def;
		char range[256] = "", secs[64];
		if (d->choices) {
			size_t n = 0;
			for (size_t i = 0; d->choices[i]; i++) {
				int w = snprintf(range + n, sizeof(range) - n, "%s%s",
						 i ? ", " : "", d->choices[i]);
				if (w > 0 && (size_t)w < sizeof(range) - n)
					n += (size_t)w;
			}
		} else if (d->min || d->max) {
			snprintf(range, sizeof(range), "%s .. %s", d->min ? d->min : "",
				 d->max ? d->max : "");
		}
		tsr_conf_section_names(o->sections, secs, sizeof(secs));
		/* the reference must not depend on where this copy was built */
		const char *def = d->def ? d->def : "(required)";
		char shown[128];
		if (strcmp(def, tsr_conf_default_plugin_dir()) == 0)
			snprintf(shown, sizeof(shown), "LIBDIR/tessera/plugins");
		else
			snprintf(shown, sizeof(shown), "%s", def);
		if (md)
			printf("| `%s` | %s | %s%s%s | %s | %s | %s |\n", d->name,
			       tsr_opt_type_name(d->type), shown[0] ? "`" : "",
			       shown[0] ? shown : "(empty)", shown[0] ? "`" : "",
			       range, secs, d->help);
		else
			printf("%-14s %-8s default \"%s\"%s%s%s\n    sections: %s\n    %s\n",
			       d->name, tsr_opt_type_name(d->type),
			       d->def ? d->def : "(required)", range[0] ? " (" : "",
			       range, range[0] ? ")" : "", secs, d->help);
	}
	return CLI_OK;
}

const struct cli_cmd cli_config_cmds[] = {
	{ "config check", "FILE", "check a configuration file",
	  check_run, check_help },
	{ "config options", "[--format plain|md]", "print the configuration reference",
	  options_run, options_help },
	{ NULL, NULL, NULL, NULL, NULL }
};
