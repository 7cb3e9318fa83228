/* cli_plugin.c — finding plugins for the `tessera` tool's subcommands: the
 * plugin directory rule shared by `plugins list` and `placement`, and
 * opening one plugin of a kind by name. */
#include "cli.h"
#include "config/config.h"
#include "plugin/registry.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
cli_plugin_dir(const char *opt_dir, const char *conf_path, char *out, size_t outlen)
{
	const char *env = getenv("TESSERA_PLUGIN_DIR");
	char err[1024];

	if (opt_dir) {
		tsr_strlcpy(out, opt_dir, outlen);
	} else if (env && env[0]) {
		tsr_strlcpy(out, env, outlen);
	} else if (conf_path) {
		struct tsr_conf *conf = NULL;
		if (tsr_conf_load(conf_path, &conf, err, sizeof(err)) < 0 ||
		    tsr_conf_resolve(conf, "client", NULL, NULL, err, sizeof(err)) < 0) {
			fprintf(stderr, "tessera: %s\n", err);
			tsr_conf_destroy(conf);
			return -1;
		}
		tsr_strlcpy(out, tsr_conf_str(conf, "plugin_dir"), outlen);
		tsr_conf_destroy(conf);
	} else {
		tsr_strlcpy(out, tsr_conf_default_plugin_dir(), outlen);
	}
	return 0;
}

struct refusals {
	struct tsr_sbuf text;
	int n;
};

static void
on_refused(void *arg, const char *path, const char *reason)
{
	struct refusals *r = arg;

	(void)path; /* the reason starts with the path */
	tsr_sbuf_printf(&r->text, "\n  %s", reason);
	r->n++;
}

int
cli_plugin_open(struct cli_plugin *cp, const char *dir, uint32_t kind,
		const char *name, char *err, size_t errlen)
{
	struct refusals ref = { .n = 0 };
	char why[1024];
	int rc;

	memset(cp, 0, sizeof(*cp));
	cp->reg = tsr_registry_create();
	if (cp->reg == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	tsr_sbuf_init(&ref.text);
	/* Refusals are collected, not printed: a broken plugin of another
	 * kind in the directory is no business of this command, unless the
	 * one asked for is missing — then it may be the reason. */
	rc = tsr_registry_load_dir(cp->reg, dir, on_refused, &ref, why, sizeof(why));
	if (rc < 0) {
		tsr_errf(err, errlen, rc, "%s", why);
		goto fail;
	}
	cp->plugin = tsr_registry_find(cp->reg, kind, name);
	if (cp->plugin == NULL) {
		struct tsr_sbuf found;
		tsr_sbuf_init(&found);
		for (size_t i = 0; i < tsr_registry_count(cp->reg); i++) {
			const struct tsr_plugin_desc *d =
				tsr_plugin_desc(tsr_registry_at(cp->reg, i));
			if (d->kind == kind)
				tsr_sbuf_printf(&found, "%s%s", found.len ? ", " : "",
						d->name);
		}
		tsr_errf(err, errlen, -ENOENT, "no %s plugin '%s' in %s (found: %s)%s%s",
			 tsr_plugin_kind_name(kind), name, dir,
			 found.len ? tsr_sbuf_str(&found) : "none",
			 ref.n ? "; files refused:" : "", tsr_sbuf_str(&ref.text));
		tsr_sbuf_release(&found);
		rc = -ENOENT;
		goto fail;
	}
	snprintf(why, sizeof(why), "tessera/%s/%s", tsr_plugin_kind_name(kind), name);
	tsr_core_host_init(&cp->host, why, NULL, NULL);
	tsr_sbuf_release(&ref.text);
	return 0;
fail:
	tsr_sbuf_release(&ref.text);
	tsr_registry_destroy(cp->reg);
	cp->reg = NULL;
	return rc;
}

int
cli_plugin_instance(struct cli_plugin *cp, struct tsr_instance **out, char *err,
		    size_t errlen)
{
	return tsr_instance_create(cp->plugin, &cp->host.host, NULL, 0, out, err,
				   errlen);
}

void
cli_plugin_close(struct cli_plugin *cp)
{
	if (cp->reg)
		tsr_registry_destroy(cp->reg);
	cp->reg = NULL;
	cp->plugin = NULL;
}
