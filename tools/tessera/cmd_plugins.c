/* cmd_plugins.c — `tessera plugins list` and `tessera plugins check`. */
#include "cli.h"
#include "config/config.h"
#include "plugin/host.h"
#include "plugin/registry.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

struct refusals {
	struct tsr_sbuf text;
	int n;
};

static void
on_refused(void *arg, const char *path, const char *reason)
{
	struct refusals *r = arg;

	(void)path; /* the reason starts with the path */
	tsr_sbuf_printf(&r->text, "%s\n", reason);
	r->n++;
}

static void
list_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera plugins list [--plugin-dir DIR] [--conf FILE] [--format plain|json]\n"
		"List every valid plugin in the plugin directory: kind, name, version, file.\n"
		"Files that are not valid plugins are named on stderr with the reason.\n"
		"\n"
		"  -d, --plugin-dir DIR  directory to scan (default: $TESSERA_PLUGIN_DIR, then\n"
		"                        plugin_dir from --conf, then %s)\n"
		"  -c, --conf FILE       cluster configuration to take plugin_dir from\n"
		"      --format FMT      plain (default) or json\n",
		tsr_conf_default_plugin_dir());
}

static int
list_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "plugin-dir", required_argument, NULL, 'd' },
		{ "conf", required_argument, NULL, 'c' },
		{ "format", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 }
	};
	const char *opt_dir = NULL, *conf = NULL;
	char dir[4096], err[1024];
	struct refusals ref = { .n = 0 };
	bool json = false;
	int c, n;

	while ((c = getopt_long(argc, argv, "d:c:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': opt_dir = optarg; break;
		case 'c': conf = optarg; break;
		case 'F':
			if (cli_parse_format(optarg, &json) < 0)
				return CLI_USAGE;
			break;
		default: list_help(stderr); return CLI_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tessera plugins list: unexpected argument '%s'\n",
			argv[optind]);
		return CLI_USAGE;
	}
	if (cli_plugin_dir(opt_dir, conf, dir, sizeof(dir)) < 0)
		return CLI_FAIL;
	struct tsr_registry *reg = tsr_registry_create();
	tsr_sbuf_init(&ref.text);
	n = tsr_registry_load_dir(reg, dir, on_refused, &ref, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "tessera: %s\n", err);
		tsr_registry_destroy(reg);
		tsr_sbuf_release(&ref.text);
		return CLI_FAIL;
	}
	if (json) {
		struct tsr_sbuf o;
		tsr_sbuf_init(&o);
		tsr_sbuf_printf(&o, "{\"plugin_dir\": ");
		tsr_sbuf_json_str(&o, dir);
		tsr_sbuf_printf(&o, ", \"plugins\": [");
		for (size_t i = 0; i < tsr_registry_count(reg); i++) {
			const struct tsr_plugin *p = tsr_registry_at(reg, i);
			const struct tsr_plugin_desc *d = tsr_plugin_desc(p);
			tsr_sbuf_printf(&o, "%s\n  {\"kind\": \"%s\", \"name\": ",
					i ? "," : "", tsr_plugin_kind_name(d->kind));
			tsr_sbuf_json_str(&o, d->name);
			tsr_sbuf_printf(&o, ", \"version\": ");
			tsr_sbuf_json_str(&o, d->version);
			tsr_sbuf_printf(&o, ", \"file\": ");
			tsr_sbuf_json_str(&o, tsr_plugin_path(p));
			tsr_sbuf_printf(&o, "}");
		}
		tsr_sbuf_printf(&o, "\n], \"refused\": %d}\n", ref.n);
		fputs(tsr_sbuf_str(&o), stdout);
		tsr_sbuf_release(&o);
	} else {
		printf("Plugins in %s:\n", dir);
		if (tsr_registry_count(reg) == 0)
			printf("  (none)\n");
		else
			printf("  %-12s %-16s %-10s %s\n", "KIND", "NAME", "VERSION", "FILE");
		for (size_t i = 0; i < tsr_registry_count(reg); i++) {
			const struct tsr_plugin *p = tsr_registry_at(reg, i);
			const struct tsr_plugin_desc *d = tsr_plugin_desc(p);
			printf("  %-12s %-16s %-10s %s\n", tsr_plugin_kind_name(d->kind),
			       d->name, d->version, tsr_plugin_path(p));
		}
	}
	if (ref.n > 0)
		fprintf(stderr, "tessera: %d file(s) in %s are not valid plugins:\n%s",
			ref.n, dir, tsr_sbuf_str(&ref.text));
	tsr_sbuf_release(&ref.text);
	tsr_registry_destroy(reg);
	return CLI_OK;
}

static void
check_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera plugins check FILE.so [-o KEY=VALUE]... [--create] [--format plain|json]\n"
		"Load one shared object and say whether it is a valid Tessera plugin: its\n"
		"descriptor, ABI version, kind, name, operations table and option schema.\n"
		"If it is not, print exactly why and exit with status 1.\n"
		"\n"
		"  -o, --option KEY=VALUE  check a value against the plugin's option schema\n"
		"                          (repeatable); a bad key or value fails the check\n"
		"      --create            also create and destroy one instance with those\n"
		"                          options, as a daemon would (the plugin's required\n"
		"                          options must then be given)\n"
		"      --format FMT        plain (default) or json\n");
}

static void
print_schema(const struct tsr_plugin_desc *d, bool json, struct tsr_sbuf *o)
{
	const struct tsr_opt_def *defs = d->options;

	for (size_t i = 0; defs && defs[i].name; i++) {
		const struct tsr_opt_def *od = &defs[i];
		if (json) {
			tsr_sbuf_printf(o, "%s\n    {\"name\": ", i ? "," : "");
			tsr_sbuf_json_str(o, od->name);
			tsr_sbuf_printf(o, ", \"type\": \"%s\", \"required\": %s, \"default\": ",
					tsr_opt_type_name(od->type),
					od->flags & TSR_OPT_REQUIRED ? "true" : "false");
			if (od->def)
				tsr_sbuf_json_str(o, od->def);
			else
				tsr_sbuf_printf(o, "null");
			tsr_sbuf_printf(o, ", \"help\": ");
			tsr_sbuf_json_str(o, od->help ? od->help : "");
			tsr_sbuf_printf(o, "}");
			continue;
		}
		char range[96] = "";
		if (od->min || od->max)
			snprintf(range, sizeof(range), " [%s, %s]",
				 od->min ? od->min : "-inf", od->max ? od->max : "+inf");
		tsr_sbuf_printf(o, "    %-20s %-8s %s%s%s\n", od->name,
				tsr_opt_type_name(od->type),
				od->def ? "default " : "required",
				od->def ? od->def : "", range);
		if (od->help)
			tsr_sbuf_printf(o, "      %s\n", od->help);
	}
}

static int
check_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "option", required_argument, NULL, 'o' },
		{ "create", no_argument, NULL, 'C' },
		{ "format", required_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 }
	};
	struct tsr_srcval *srcs = NULL;
	size_t nsrc = 0;
	bool json = false, create = false;
	char err[2048];
	int c, rc = CLI_FAIL;

	srcs = calloc((size_t)argc, sizeof(*srcs));
	while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': {
			char *eq = strchr(optarg, '=');
			if (eq == NULL) {
				fprintf(stderr, "tessera plugins check: -o takes KEY=VALUE, not '%s'\n",
					optarg);
				free(srcs);
				return CLI_USAGE;
			}
			*eq = '\0';
			srcs[nsrc++] = (struct tsr_srcval){ .name = optarg,
				.kind = TSR_SRC_TEXT, .s = eq + 1, .where = "command line" };
			break;
		}
		case 'C': create = true; break;
		case 'F':
			if (cli_parse_format(optarg, &json) < 0) {
				free(srcs);
				return CLI_USAGE;
			}
			break;
		default:
			check_help(stderr);
			free(srcs);
			return CLI_USAGE;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "tessera plugins check: give exactly one FILE.so (see --help)\n");
		free(srcs);
		return CLI_USAGE;
	}
	const char *file = argv[optind];
	struct tsr_registry *reg = tsr_registry_create();
	const struct tsr_plugin *p;
	/* dlopen searches the library path for a bare name; a plugin file is
	 * always meant as a path */
	char path[4096];
	snprintf(path, sizeof(path), "%s%s", strchr(file, '/') ? "" : "./", file);
	if (tsr_registry_load_file(reg, path, &p, err, sizeof(err)) < 0) {
		if (json) {
			struct tsr_sbuf o;
			tsr_sbuf_init(&o);
			tsr_sbuf_printf(&o, "{\"file\": ");
			tsr_sbuf_json_str(&o, file);
			tsr_sbuf_printf(&o, ", \"valid\": false, \"reason\": ");
			tsr_sbuf_json_str(&o, err);
			tsr_sbuf_printf(&o, "}\n");
			fputs(tsr_sbuf_str(&o), stdout);
			tsr_sbuf_release(&o);
		}
		fprintf(stderr, "invalid plugin: %s\n", err);
		goto out;
	}
	const struct tsr_plugin_desc *d = tsr_plugin_desc(p);
	struct tsr_optset *set = NULL;
	char what[96];
	snprintf(what, sizeof(what), "%s plugin '%s'", tsr_plugin_kind_name(d->kind),
		 d->name);
	/* a required option need be given only to create an instance */
	if (create ? tsr_optset_build(d->options, srcs, nsrc, what, &set, err, sizeof(err))
		   : tsr_optset_check(d->options, srcs, nsrc, what, err, sizeof(err))) {
		fprintf(stderr, "%s: options refused: %s\n", path, err);
		goto out;
	}
	tsr_optset_destroy(set);
	if (create) {
		struct tsr_core_host host;
		struct tsr_instance *inst;
		tsr_core_host_init(&host, what, NULL, NULL);
		if (tsr_instance_create(p, &host.host, srcs, nsrc, &inst, err,
					sizeof(err)) < 0) {
			fprintf(stderr, "%s: %s\n", path, err);
			goto out;
		}
		tsr_instance_destroy(inst);
	}
	struct tsr_sbuf o;
	tsr_sbuf_init(&o);
	if (json) {
		tsr_sbuf_printf(&o, "{\"file\": ");
		tsr_sbuf_json_str(&o, file);
		tsr_sbuf_printf(&o, ", \"valid\": true, \"kind\": \"%s\", \"name\": ",
				tsr_plugin_kind_name(d->kind));
		tsr_sbuf_json_str(&o, d->name);
		tsr_sbuf_printf(&o, ", \"version\": ");
		tsr_sbuf_json_str(&o, d->version);
		tsr_sbuf_printf(&o, ", \"abi\": \"%u.%u\", \"summary\": ", d->abi_major,
				d->abi_minor);
		tsr_sbuf_json_str(&o, d->summary ? d->summary : "");
		tsr_sbuf_printf(&o, ", \"options\": [");
		print_schema(d, true, &o);
		tsr_sbuf_printf(&o, "\n  ]}\n");
	} else {
		tsr_sbuf_printf(&o, "%s: valid %s plugin '%s' version %s (plugin ABI %u.%u)\n",
				file, tsr_plugin_kind_name(d->kind), d->name, d->version,
				d->abi_major, d->abi_minor);
		if (d->summary)
			tsr_sbuf_printf(&o, "  %s\n", d->summary);
		if (tsr_plugin_kind_provisional(d->kind))
			tsr_sbuf_printf(&o, "  %s ABI version %u: provisional, "
					"it changes until a daemon uses the %s "
					"kind (rebuild the plugin for each "
					"release)\n", tsr_plugin_kind_name(d->kind),
					tsr_plugin_kind_provisional(d->kind),
					tsr_plugin_kind_name(d->kind));
		tsr_sbuf_printf(&o, "  options:%s\n", d->options && d->options[0].name ? "" : " none");
		print_schema(d, false, &o);
		if (nsrc)
			tsr_sbuf_printf(&o, "  the %zu option value(s) given are valid\n", nsrc);
		if (create)
			tsr_sbuf_printf(&o, "  an instance was created and destroyed\n");
	}
	fputs(tsr_sbuf_str(&o), stdout);
	tsr_sbuf_release(&o);
	rc = CLI_OK;
out:
	tsr_registry_destroy(reg);
	free(srcs);
	return rc;
}

const struct cli_cmd cli_plugins_cmds[] = {
	{ "plugins list", "[--plugin-dir DIR]", "list the plugins found, with kind and version",
	  list_run, list_help },
	{ "plugins check", "FILE.so [-o KEY=VALUE]...", "say whether a file is a valid plugin, and why not",
	  check_run, check_help },
	{ NULL, NULL, NULL, NULL, NULL }
};
