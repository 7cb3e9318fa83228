/* main.c — the `tessera` tool: dispatch to subcommands. */
#include "cli.h"
#include "log/log.h"

#include <tessera/plugin.h>

#include <stdio.h>
#include <string.h>

static const struct cli_cmd *const groups[] = {
	cli_plugins_cmds,
	cli_config_cmds,
	cli_admin_cmds,
	cli_placement_cmds,
	cli_backend_cmds,
	cli_msgr_cmds,
	cli_cluster_cmds,
	cli_auth_cmds,
	cli_object_cmds,
	cli_fs_cmds,
	cli_bench_cmds,
};

static int
count_words(const char *s)
{
	int n = 1;

	for (; *s; s++)
		n += *s == ' ';
	return n;
}

static bool
matches(const struct cli_cmd *c, int argc, char **argv)
{
	char buf[128];
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", c->name);
	for (char *save = NULL, *w = strtok_r(buf, " ", &save); w;
	     w = strtok_r(NULL, " ", &save), n++)
		if (n >= argc || strcmp(w, argv[n]) != 0)
			return false;
	return true;
}

static void
usage(FILE *f)
{
	int w = (int)strlen("version");

	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (const struct cli_cmd *c = groups[g]; c->name; c++)
			if ((int)strlen(c->name) > w)
				w = (int)strlen(c->name);
	fprintf(f,
		"Usage: tessera COMMAND [ARGS...]\n"
		"Tessera's command-line tool: the cluster (through its monitors), plugins,\n"
		"configuration, daemons, placement, object stores, the messenger.\n"
		"\n"
		"Commands:\n");
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (const struct cli_cmd *c = groups[g]; c->name; c++)
			fprintf(f, "  %-*s %-30s %s\n", w, c->name, c->args,
				c->summary);
	fprintf(f,
		"  %-*s %-30s %s\n"
		"\n"
		"`tessera COMMAND --help` explains a command.  Exit status: 0 on\n"
		"success, 1 when the operation failed, 2 for a usage error; a few\n"
		"commands say in their help what 3 means for them (a cluster change:\n"
		"its outcome is unknown).\n",
		w, "version", "", "print the version and plugin ABI");
}

int
main(int argc, char **argv)
{
	tsr_log_set_ident("tessera");
	tsr_log_set_level(-1, TSR_LOG_WARN);
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0 ||
	    strcmp(argv[1], "-V") == 0) {
		printf("tessera %s (plugin ABI %d.%d)\n", TSR_VERSION,
		       TSR_PLUGIN_ABI_MAJOR, TSR_PLUGIN_ABI_MINOR);
		return CLI_OK;
	}
	/* the longest command name matching the arguments wins */
	const struct cli_cmd *best = NULL;
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (const struct cli_cmd *c = groups[g]; c->name; c++)
			if (matches(c, argc - 1, argv + 1) &&
			    (!best || count_words(c->name) > count_words(best->name)))
				best = c;
	if (best == NULL) {
		/* a group word alone ("tessera plugins"): list its commands */
		for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
			size_t l = strlen(argv[1]);
			if (strncmp(groups[g][0].name, argv[1], l) == 0 &&
			    groups[g][0].name[l] == ' ') {
				fprintf(stderr, "tessera %s: which one?\n", argv[1]);
				for (const struct cli_cmd *c = groups[g]; c->name; c++)
					fprintf(stderr, "  tessera %s %s\n", c->name, c->args);
				return CLI_USAGE;
			}
		}
		fprintf(stderr, "tessera: unknown command '%s' (see tessera --help)\n",
			argv[1]);
		return CLI_USAGE;
	}
	int skip = count_words(best->name);
	if (cli_wants_help(argc - skip, argv + skip)) {
		best->help(stdout);
		return CLI_OK;
	}
	return best->run(argc - skip, argv + skip);
}

int
cli_parse_format(const char *s, bool *json)
{
	if (strcmp(s, "json") == 0) {
		*json = true;
		return 0;
	}
	if (strcmp(s, "plain") == 0) {
		*json = false;
		return 0;
	}
	fprintf(stderr, "tessera: --format takes plain or json, not '%s'\n", s);
	return -1;
}

bool
cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return false;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	}
	return false;
}
