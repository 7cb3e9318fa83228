/* cli.h — what the `tessera` tool's subcommands share. */
#ifndef TSR_CLI_H
#define TSR_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* Exit codes: 0 success, 1 the operation failed, 2 usage error. */
#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2

struct cli_cmd {
	const char *name;       /* "plugins list" */
	const char *args;       /* synopsis after the name */
	const char *summary;    /* one line */
	int (*run)(int argc, char **argv); /* argv[0] is the last name word */
	void (*help)(FILE *f);  /* full help for `tessera NAME --help` */
};

extern const struct cli_cmd cli_plugins_cmds[];
extern const struct cli_cmd cli_admin_cmds[];
extern const struct cli_cmd cli_config_cmds[];

/* "plain" or "json" from --format; -1 (after a message) otherwise. */
int cli_parse_format(const char *s, bool *json);
/* True when argv holds -h or --help: the command should print its help. */
bool cli_wants_help(int argc, char **argv);

#endif
