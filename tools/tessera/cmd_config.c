/* cmd_config.c — `tessera config check` and `tessera config options`. */
#include "cli.h"
#include "config/config.h"
#include "mon/members.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <errno.h>
#include <string.h>
#include <sys/un.h>

static void
check_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera config check FILE\n"
		"Check a cluster configuration file as every daemon would read it at start:\n"
		"syntax, section names, unknown keys, types and ranges, $variables, and\n"
		"what the daemons check beyond them (mon_members, fsid, that each monitor\n"
		"is a member, the admin socket path), for every daemon type and every\n"
		"TYPE-ID section.  Prints the first problem with its file and line and\n"
		"exits 1, or says the file is valid.\n");
}

static int daemon_check(void *arg, struct tsr_conf *conf, const char *type,
			const char *id, char *err, size_t errlen);

/* Where key was set, "FILE:LINE"; for a default, which says nothing to the
 * reader of an error, the file. */
static const char *
where_set(struct tsr_conf *conf, const char *key)
{
	const char *w = tsr_conf_where(conf, key);

	return strcmp(w, "default") == 0 ? tsr_conf_path(conf) : w;
}

/* Each monitor of mon_members as `tessera-mon --id NAME` would see the
 * file (one with a mon-NAME section is checked as that section's view). */
static int
check_members(struct tsr_conf *conf, const struct tsr_mon_members *mem,
	      char *err, size_t errlen)
{
	struct tsr_mon_members copy = *mem; /* resolving replaces the view */
	int rc;

	for (size_t i = 0; i < copy.n; i++) {
		rc = tsr_conf_resolve(conf, "mon", copy.m[i].name, NULL, err, errlen);
		if (rc == 0)
			rc = daemon_check(NULL, conf, "mon", copy.m[i].name, err, errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* What a daemon checks of its configuration at start beyond the options'
 * types and ranges, by the calls the daemons make, so that the two cannot
 * drift apart:
 *   - every daemon and cluster command parses mon_members
 *     (tsr_mon_members_parse) and the messenger settings, fsid among them
 *     (tsr_msgr_opts_from_conf): tsr_monc_conf, and the monitor's
 *     mon_start, make these two calls;
 *   - a monitor refuses an id that is not a member (mon_start);
 *   - the admin socket's path must fit a unix socket address
 *     (tsr_asok_create refuses a longer one). */
static int
daemon_check(void *arg, struct tsr_conf *conf, const char *type,
	     const char *id, char *err, size_t errlen)
{
	struct tsr_mon_members mem;
	struct tsr_msgr_opts o;
	char view[64], where[4200];
	const char *asok;
	int rc;

	(void)arg;
	if (id != NULL)
		snprintf(view, sizeof(view), "%s-%s", type, id);
	else
		snprintf(view, sizeof(view), "%s", type);
	snprintf(where, sizeof(where), "%s: %s", where_set(conf, "mon_members"),
		 view);
	if ((rc = tsr_mon_members_parse(tsr_conf_str(conf, "mon_members"), where,
					&mem, err, errlen)) < 0)
		return rc;
	memset(&o, 0, sizeof(o));
	tsr_msgr_opts_default(&o);
	if ((rc = tsr_msgr_opts_from_conf(conf, &o, err, errlen)) < 0)
		return rc;
	if (strcmp(type, "mon") == 0 && id != NULL &&
	    tsr_mon_members_find(&mem, id) == NULL)
		return tsr_errf(err, errlen, -EINVAL,
				"%s: mon_members has no monitor '%s' (it lists %s)",
				where, id, mem.canon);
	asok = tsr_conf_str(conf, "admin_socket");
	if (strlen(asok) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return tsr_errf(err, errlen, -ENAMETOOLONG,
				"%s: %s: admin socket path %s is longer than %zu bytes",
				where_set(conf, "admin_socket"), view, asok,
				sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
	if (strcmp(type, "mon") == 0 && id == NULL)
		return check_members(conf, &mem, err, errlen);
	return 0;
}

static int
check_run(int argc, char **argv)
{
	struct tsr_conf *conf = NULL;
	char err[2048], shown[4 * sizeof(err)];

	if (argc != 2) {
		check_help(stderr);
		return CLI_USAGE;
	}
	if (tsr_conf_load(argv[1], &conf, err, sizeof(err)) < 0 ||
	    tsr_conf_check_all(conf, daemon_check, NULL, err, sizeof(err)) < 0) {
		/* the reason may quote the file's bytes: never raw */
		fprintf(stderr, "tessera config check: %s\n",
			tsr_opt_quote(err, shown, sizeof(shown)));
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
