/* cmd_backend.h — what the `tessera backend` commands share: the plugin
 * and instance a command works on, the options every command takes, and
 * this group's messages (cmd_backend.c: mkfs and fsck; cmd_backend_bench.c:
 * bench).  Included by those two files only. */
#ifndef TSR_CLI_CMD_BACKEND_H
#define TSR_CLI_CMD_BACKEND_H

#include "cli.h"
#include "config/config.h"

#include <tessera/backend.h>

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

/* This group's messages and argument parsing (cli.h). */
#define usage_err(cmd, ...) cli_usage_err("backend", cmd, __VA_ARGS__)
#define fail(cmd, ...) cli_fail("backend", cmd, __VA_ARGS__)
#define bad_option(cmd, c, argv) cli_bad_option("backend", cmd, c, argv)
#define parse_uint(cmd, opt, s, min, max, out) \
	cli_parse_uint("backend", cmd, opt, s, min, max, out)

/* What every backend command needs: the plugin and one instance of it. */
struct be {
	const char *cmd;          /* "mkfs", for messages */
	const char *name;         /* --plugin */
	const char *dir_opt;      /* --plugin-dir */
	struct tsr_srcval *srcs;  /* -o KEY=VALUE, in command-line order */
	size_t nsrc;
	const char *path;         /* the last -o path=: the options' rule too */
	struct cli_plugin cp;
	bool open;
	struct tsr_instance *inst;
	const struct tsr_backend_ops *ops;
	void *h;
};

enum {
	OPT_PLUGIN = 'p', OPT_DIR = 'd', OPT_OPTION = 'o',
	OPT_FORMAT = 256, OPT_REPAIR, OPT_SECONDS, OPT_OBJECTS, OPT_QD, OPT_DROP,
	OPT_COPY
};
#define COMMON_LONGOPTS                                         \
	{ "plugin", required_argument, NULL, OPT_PLUGIN },      \
	{ "plugin-dir", required_argument, NULL, OPT_DIR },     \
	{ "option", required_argument, NULL, OPT_OPTION },      \
	{ "format", required_argument, NULL, OPT_FORMAT }
#define COMMON_SHORTOPTS ":p:d:o:"

int be_init(struct be *be, const char *cmd, int argc);
/* 1 when c was one of the common options, 0 when it was not, -1 after a
 * usage message. */
int be_common_option(struct be *be, int c, bool *json);
/* --plugin and -o path= given?  0, or CLI_USAGE after a message. */
int be_check_common(struct be *be);
void be_common_help(FILE *f);
/* Find the plugin and make one instance with the user's options; -1
 * after a message. */
int be_open(struct be *be);
void be_close(struct be *be);
/* The plugin's reason, made to name the path when it does not. */
void be_reason_with_path(char *out, size_t outlen, const char *path,
			 const char *err, int rc);

/* `tessera backend bench` (cmd_backend_bench.c). */
int be_bench_run(int argc, char **argv);
void be_bench_help(FILE *f);

#endif
