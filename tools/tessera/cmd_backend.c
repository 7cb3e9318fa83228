/* cmd_backend.c — `tessera backend`: make, check and measure object stores
 * through a backend plugin (tessera/backend.h).  This file holds what the
 * commands share, mkfs and fsck; the bench is cmd_backend_bench.c.
 *
 * Like `tessera placement`, the tool never touches a store itself: mkfs,
 * fsck and every write and read of the benchmark go through the plugin's
 * ops table, so what `backend bench` measures is what an OSD gets from that
 * plugin with those options.  The benchmark's baseline ("raw") is the same
 * work done with plain system calls on the same file system, so the ratio
 * says what the backend costs over the disk, not how fast the disk is.
 *
 * Conventions: each command prints one line on stderr naming the path or
 * option at fault and returns CLI_USAGE for a malformed command line,
 * CLI_FAIL when the work itself failed. */
#include "cmd_backend.h"
#include "config/config.h"
#include "config/options.h"
#include "plugin/registry.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <tessera/backend.h>

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- Shared plumbing ---------------------------------------------------- */

int
be_init(struct be *be, const char *cmd, int argc)
{
	memset(be, 0, sizeof(*be));
	be->cmd = cmd;
	/* never more -o than arguments */
	be->srcs = calloc((size_t)argc + 1, sizeof(*be->srcs));
	if (be->srcs == NULL)
		return fail(cmd, "out of memory");
	return 0;
}

/* 1 when c was one of the common options, 0 when it was not, -1 after a
 * usage message. */
int
be_common_option(struct be *be, int c, bool *json)
{
	switch (c) {
	case OPT_PLUGIN: be->name = optarg; return 1;
	case OPT_DIR: be->dir_opt = optarg; return 1;
	case OPT_FORMAT: return cli_parse_format(optarg, json) < 0 ? -1 : 1;
	case OPT_OPTION: {
		/* the same KEY=VALUE form as `tessera plugins check -o` */
		char *eq = strchr(optarg, '=');
		if (eq == NULL || eq == optarg) {
			usage_err(be->cmd, "-o takes KEY=VALUE, not '%s'", optarg);
			return -1;
		}
		*eq = '\0';
		be->srcs[be->nsrc++] = (struct tsr_srcval){ .name = optarg,
			.kind = TSR_SRC_TEXT, .s = eq + 1, .where = "command line" };
		if (strcmp(optarg, "path") == 0)
			be->path = eq + 1;
		return 1;
	}
	default: return 0;
	}
}

int
be_check_common(struct be *be)
{
	if (be->name == NULL)
		return usage_err(be->cmd, "--plugin NAME is required "
				 "(`tessera plugins list` shows the backends installed)");
	if (be->path == NULL || be->path[0] == '\0')
		return usage_err(be->cmd, "-o path=PATH is required: where the store lives");
	return 0;
}

void
be_common_help(FILE *f)
{
	fprintf(f,
		"  -p, --plugin NAME       backend plugin (`tessera plugins list` shows them)\n"
		"  -o, --option KEY=VALUE  a plugin option (repeatable); every backend takes\n"
		"                          path=, `tessera plugins check FILE.so` lists the\n"
		"                          others\n"
		"  -d, --plugin-dir DIR    where to find the plugin (default: $TESSERA_PLUGIN_DIR,\n"
		"                          then %s)\n"
		"      --format FMT        plain (default) or json\n",
		tsr_conf_default_plugin_dir());
}

/* Find the plugin and make one instance with the user's options. */
int
be_open(struct be *be)
{
	char dir[4096], err[2048] = "";

	if (cli_plugin_dir(be->dir_opt, NULL, dir, sizeof(dir)) < 0)
		return -1;
	if (cli_plugin_open(&be->cp, dir, TSR_KIND_BACKEND, be->name, err,
			    sizeof(err)) < 0) {
		fail(be->cmd, "%s", err);
		return -1;
	}
	be->open = true;
	if (tsr_instance_create(be->cp.plugin, &be->cp.host.host, be->srcs, be->nsrc,
				&be->inst, err, sizeof(err)) < 0) {
		fail(be->cmd, "%s", err);
		return -1;
	}
	be->ops = tsr_instance_ops(be->inst);
	be->h = tsr_instance_handle(be->inst);
	/* the loader checks the table against the ABI; a short table here
	 * would be a loader bug, but reading past it would be worse */
	if (be->ops->size < offsetof(struct tsr_backend_ops, fsck) + sizeof(be->ops->fsck)) {
		fail(be->cmd, "backend plugin '%s': operations table of %u bytes is "
		     "shorter than ABI 1.0's", be->name, be->ops->size);
		return -1;
	}
	return 0;
}

void
be_close(struct be *be)
{
	if (be->inst)
		tsr_instance_destroy(be->inst);
	be->inst = NULL;
	if (be->open)
		cli_plugin_close(&be->cp);
	be->open = false;
	free(be->srcs);
	be->srcs = NULL;
}

/* The plugin's reason, made to name the path when it does not. */
void
be_reason_with_path(char *out, size_t outlen, const char *path, const char *err,
		 int rc)
{
	const char *why = err[0] ? err : strerror(rc < 0 ? -rc : EIO);

	if (strstr(why, path))
		snprintf(out, outlen, "%s", why);
	else
		snprintf(out, outlen, "%s: %s", path, why);
}


/* ---- mkfs --------------------------------------------------------------- */

static void
mkfs_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera backend mkfs --plugin NAME -o path=PATH [-o KEY=VALUE]...\n"
		"                            [--plugin-dir DIR] [--format plain|json]\n"
		"Create an empty object store at PATH with a backend plugin, as an OSD's\n"
		"first start would.  PATH must not hold a store or other data.  Options\n"
		"fixed at mkfs (journal_size for the file backend) are taken from -o; give\n"
		"the same options to fsck and to the OSD.\n"
		"\n");
	be_common_help(f);
	fprintf(f,
		"\n"
		"Example:\n"
		"  tessera backend mkfs --plugin file -o path=/srv/osd0 -o journal_size=1G\n"
		"\n"
		"Exit status: 0 when the store was created, 1 when the plugin refused (the\n"
		"reason names the path), 2 for a usage error.\n");
}

static int
mkfs_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct be be;
	bool json = false;
	char err[2048] = "", msg[2560];
	int c, rc;

	if (be_init(&be, "mkfs", argc) != 0)
		return CLI_FAIL;
	opterr = 0;
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		int k = be_common_option(&be, c, &json);
		if (k == 1)
			continue;
		rc = k < 0 ? CLI_USAGE : bad_option(be.cmd, c, argv);
		goto out;
	}
	rc = CLI_USAGE;
	if (optind < argc) {
		usage_err(be.cmd, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (be_check_common(&be) != 0)
		goto out;
	rc = CLI_FAIL;
	if (be_open(&be) < 0)
		goto out;
	int mrc = be.ops->mkfs(be.h, err, sizeof(err));
	if (mrc < 0)
		be_reason_with_path(msg, sizeof(msg), be.path, err, mrc);
	if (json) {
		struct tsr_sbuf o;
		tsr_sbuf_init(&o);
		tsr_sbuf_printf(&o, "{\"plugin\": ");
		tsr_sbuf_json_str(&o, be.name);
		tsr_sbuf_printf(&o, ", \"path\": ");
		tsr_sbuf_json_str(&o, be.path);
		tsr_sbuf_printf(&o, ", \"created\": %s, \"error\": ", mrc < 0 ? "false" : "true");
		if (mrc < 0)
			tsr_sbuf_json_str(&o, msg);
		else
			tsr_sbuf_printf(&o, "null");
		tsr_sbuf_printf(&o, "}\n");
		fputs(tsr_sbuf_str(&o), stdout);
		tsr_sbuf_release(&o);
	} else if (mrc == 0) {
		printf("created %s store at %s\n", be.name, be.path);
	}
	if (mrc < 0) {
		fail(be.cmd, "%s", msg);
		goto out;
	}
	rc = CLI_OK;
out:
	be_close(&be);
	return rc;
}

/* ---- fsck --------------------------------------------------------------- */

static void
fsck_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera backend fsck --plugin NAME -o path=PATH [-o KEY=VALUE]...\n"
		"                            [--repair] [--plugin-dir DIR] [--format plain|json]\n"
		"Check an unmounted object store with its plugin's fsck: metadata that\n"
		"points nowhere, data that fails its checksum, counters that disagree.  Each\n"
		"problem is printed as found (with \"(repaired)\" when --repair fixed it),\n"
		"then a summary: \"N problems, M left unrepaired\".  The store must not be\n"
		"in use by an OSD.\n"
		"\n"
		"      --repair            fix what can be fixed; what cannot (data whose\n"
		"                          checksum fails) is left for the OSD to recover\n"
		"                          from a replica\n");
	be_common_help(f);
	fprintf(f,
		"\n"
		"Opening the store replays its journal.  A last record that fails its\n"
		"checksum is dropped there, as a write a crash cut short, and reported as\n"
		"a problem repaired (with or without --repair): if the disk damaged it\n"
		"after it was acknowledged, that transaction is lost on this store.\n"
		"\n"
		"Exit status: 0 when the store was clean (no problem found), 1 when problems\n"
		"are left (or the store could not be checked), 2 for a usage error, 3 when\n"
		"problems were found and all of them are repaired now.\n");
}

/* fsck's own exit status, past cli.h's: every problem found is repaired
 * (e2fsck's "errors corrected") */
#define FSCK_REPAIRED 3

struct fsck_out {
	bool json;
	struct tsr_sbuf items;  /* JSON: the problems so far */
	int n, repaired;
};

static void
on_problem(void *arg, const char *problem, int repaired)
{
	struct fsck_out *fo = arg;

	if (fo->json) {
		tsr_sbuf_printf(&fo->items, "%s\n  {\"problem\": ", fo->n ? "," : "");
		tsr_sbuf_json_str(&fo->items, problem);
		tsr_sbuf_printf(&fo->items, ", \"repaired\": %s}", repaired ? "true" : "false");
	} else {
		/* as found, so that a long check is not silent */
		printf("problem: %s%s\n", problem, repaired ? " (repaired)" : "");
		fflush(stdout);
	}
	fo->n++;
	fo->repaired += repaired != 0;
}

static int
fsck_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		COMMON_LONGOPTS,
		{ "repair", no_argument, NULL, OPT_REPAIR },
		{ NULL, 0, NULL, 0 }
	};
	struct fsck_out fo = { .json = false };
	struct be be;
	bool repair = false;
	int c, rc;

	if (be_init(&be, "fsck", argc) != 0)
		return CLI_FAIL;
	tsr_sbuf_init(&fo.items);
	opterr = 0;
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		int k = be_common_option(&be, c, &fo.json);
		if (k == 1)
			continue;
		if (k == 0 && c == OPT_REPAIR) {
			repair = true;
			continue;
		}
		rc = k < 0 ? CLI_USAGE : bad_option(be.cmd, c, argv);
		goto out;
	}
	rc = CLI_USAGE;
	if (optind < argc) {
		usage_err(be.cmd, "unexpected argument '%s'", argv[optind]);
		goto out;
	}
	if (be_check_common(&be) != 0)
		goto out;
	rc = CLI_FAIL;
	if (be_open(&be) < 0)
		goto out;
	int left = be.ops->fsck(be.h, repair, on_problem, &fo);
	char msg[512] = "";
	if (left < 0)
		snprintf(msg, sizeof(msg), "could not check the store at %s: %s", be.path,
			 strerror(-left));
	if (fo.json) {
		struct tsr_sbuf o;
		tsr_sbuf_init(&o);
		tsr_sbuf_printf(&o, "{\"plugin\": ");
		tsr_sbuf_json_str(&o, be.name);
		tsr_sbuf_printf(&o, ", \"path\": ");
		tsr_sbuf_json_str(&o, be.path);
		tsr_sbuf_printf(&o, ", \"repair\": %s, \"problems\": [%s%s], \"found\": %d, "
				"\"repaired\": %d, \"unrepaired\": ", repair ? "true" : "false",
				tsr_sbuf_str(&fo.items), fo.n ? "\n" : "", fo.n, fo.repaired);
		if (left < 0)
			tsr_sbuf_printf(&o, "null, \"error\": ");
		else
			tsr_sbuf_printf(&o, "%d, \"error\": ", left);
		if (left < 0)
			tsr_sbuf_json_str(&o, msg);
		else
			tsr_sbuf_printf(&o, "null");
		tsr_sbuf_printf(&o, "}\n");
		if (tsr_sbuf_error(&o) < 0) {
			tsr_sbuf_release(&o);
			fail(be.cmd, "out of memory");
			goto out;
		}
		fputs(tsr_sbuf_str(&o), stdout);
		tsr_sbuf_release(&o);
	} else if (left >= 0) {
		printf("%d problem%s, %d left unrepaired\n", fo.n, fo.n == 1 ? "" : "s", left);
	}
	if (left < 0) {
		fail(be.cmd, "%s", msg);
		goto out;
	}
	/* found and fixed is not clean: the store was changed (a journal
	 * record dropped, orphans removed), which a script must not miss */
	rc = left > 0 ? CLI_FAIL : fo.n > 0 ? FSCK_REPAIRED : CLI_OK;
out:
	tsr_sbuf_release(&fo.items);
	be_close(&be);
	return rc;
}


const struct cli_cmd cli_backend_cmds[] = {
	{ "backend mkfs", "--plugin NAME -o path=PATH [...]",
	  "create an empty object store", mkfs_run, mkfs_help },
	{ "backend fsck", "--plugin NAME -o path=PATH [--repair]",
	  "check (and repair) an object store", fsck_run, fsck_help },
	{ "backend bench", "--plugin NAME -o path=DIR [...]",
	  "measure a backend against the raw file system", be_bench_run, be_bench_help },
	{ NULL, NULL, NULL, NULL, NULL }
};

