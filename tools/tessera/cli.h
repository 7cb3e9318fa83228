/* cli.h — what the `tessera` tool's subcommands share. */
#ifndef TSR_CLI_H
#define TSR_CLI_H

#include "plugin/host.h"

#include <stdbool.h>
#include <stdio.h>

/* Exit codes: 0 success, 1 the operation failed, 2 usage error; 3 (the
 * cluster commands) a change whose outcome is not known. */
#define CLI_OK 0
#define CLI_FAIL 1
#define CLI_USAGE 2
#define CLI_UNKNOWN 3

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
extern const struct cli_cmd cli_placement_cmds[];
extern const struct cli_cmd cli_backend_cmds[];
extern const struct cli_cmd cli_msgr_cmds[];
extern const struct cli_cmd cli_cluster_cmds[];
extern const struct cli_cmd cli_auth_cmds[];
extern const struct cli_cmd cli_object_cmds[];
extern const struct cli_cmd cli_bench_cmds[];
extern const struct cli_cmd cli_fs_cmds[];

/* Messages of a command "tessera GROUP CMD" (cmd NULL: "tessera GROUP",
 * for one-word commands or a name given whole), each one line on stderr:
 * a usage error (returns CLI_USAGE, points to --help), a failure (returns
 * CLI_FAIL), and what getopt_long's '?' or ':' means (opterr is off so
 * that the message is ours). */
TSR_PRINTF(3, 4) int cli_usage_err(const char *group, const char *cmd,
				   const char *fmt, ...);
TSR_PRINTF(3, 4) int cli_fail(const char *group, const char *cmd,
			      const char *fmt, ...);
int cli_bad_option(const char *group, const char *cmd, int c, char **argv);
/* A change sent to the monitors that none said became of (why: what each
 * said): it may or may not have been applied; `tessera CHECK` shows which.
 * Returns CLI_UNKNOWN. */
int cli_unknown(const char *group, const char *check, const char *why);
/* An integer option in [min, max], written as configuration files write
 * integers: decimal or 0x hexadecimal, never octal, nothing else (no sign,
 * no blanks, no trailing text).  0, or -1 after a usage message. */
int cli_parse_uint(const char *group, const char *cmd, const char *opt,
		   const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Connect to the cluster through the object client library (conf: NULL
 * for the default; who: the client's name) and find the pool named
 * pool_name: 0, or CLI_FAIL after a message of "tessera GROUP CMD"
 * (*c NULL then).  Messenger warnings are quieted: a daemon that is down
 * is part of the answer, not noise. */
struct tsr_client;
int cli_client_pool(const char *group, const char *cmd, const char *conf, const char *who,
		    uint64_t timeout_ms, const char *pool_name, struct tsr_client **c,
		    int64_t *pool);

/* "plain" or "json" from --format; -1 (after a message) otherwise. */
int cli_parse_format(const char *s, bool *json);
/* True when argv holds -h or --help: the command should print its help. */
bool cli_wants_help(int argc, char **argv);

/* The plugin directory a command uses: opt_dir (--plugin-dir), else
 * $TESSERA_PLUGIN_DIR, else plugin_dir from conf_path's client view (when
 * given), else the built-in default.  -1 after a message on stderr. */
int cli_plugin_dir(const char *opt_dir, const char *conf_path, char *out,
		   size_t outlen);

/* One plugin found by kind and name in a plugin directory, with a core host
 * table for its instances.  Instances made by cli_plugin_instance must be
 * destroyed before cli_plugin_close; the struct must not move while they
 * live (they hold &host.host). */
struct tsr_registry;
struct tsr_plugin;
struct tsr_instance;
struct cli_plugin {
	struct tsr_registry *reg;
	const struct tsr_plugin *plugin;
	struct tsr_core_host host;
};

/* Load every plugin in dir and pick (kind, name).  When it is missing the
 * reason names the directory, the plugins of that kind that are there and
 * any files refused.  0 or a negative errno; nothing to close on failure. */
int cli_plugin_open(struct cli_plugin *cp, const char *dir, uint32_t kind,
		    const char *name, char *err, size_t errlen);
/* An instance with no options (every option at its default). */
int cli_plugin_instance(struct cli_plugin *cp, struct tsr_instance **out,
			char *err, size_t errlen);
void cli_plugin_close(struct cli_plugin *cp);

#endif
