/* cmd_placement.c — `tessera placement`: make, convert, check and measure
 * placement maps through a placement plugin (tessera/placement.h).
 *
 * The tool never reads a map itself.  The text and binary forms belong to
 * the plugin, and every figure printed here comes from the same ABI calls a
 * client or daemon makes, so what `placement test` measures is what the
 * cluster will do with that map and that plugin.
 *
 * Conventions: each command prints one line on stderr naming the file or
 * option at fault and returns CLI_USAGE for a malformed command line,
 * CLI_FAIL when the work itself failed.  Blobs and text the plugin returns
 * are released with the host's free (tessera/placement.h). */
#include "cli.h"
#include "config/config.h"
#include "map/osdmap.h"
#include "plugin/registry.h"
#include "util/sbuf.h"

#include <tessera/hash.h>
#include <tessera/placement.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_PLUGIN "crush"
/* The ABI caps nrep at 64 (map() returns -EINVAL above it). */
#define MAX_NREP 64
/* The ABI cannot list a map's rules; validate asks rule_width() about the
 * ids below this, which covers every map written by hand or by generate. */
#define PROBE_RULES 256
/* generate keeps its arrays (and the plugin's) to a few hundred MB. */
/* The topology model's limit (TOPO_MAX_DEVICES in plugins/placebase/topo.h):
 * a larger map would be refused by the plugins only after being built. */
#define GEN_MAX_DEVICES (1u << 20)
/* test maps inputs in chunks: enough to make the clock reads negligible,
 * small enough that a 2^32-input run needs no 2^32-entry array. */
#define CHUNK 4096

/* ---- Shared plumbing ---------------------------------------------------- */

/* This group's messages and argument parsing (cli.h). */
#define usage_err(cmd, ...) cli_usage_err("placement", cmd, __VA_ARGS__)
#define fail(cmd, ...) cli_fail("placement", cmd, __VA_ARGS__)
#define bad_option(cmd, c, argv) cli_bad_option("placement", cmd, c, argv)
#define parse_uint(cmd, opt, s, min, max, out) \
	cli_parse_uint("placement", cmd, opt, s, min, max, out)

/* A weight from text: 16.16 fixed point, rounded to nearest. */
static int
parse_weight(const char *s, double max, uint32_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !(v >= 0) || v > max)
		return -1;
	*out = (uint32_t)(v * TSR_WEIGHT_ONE + 0.5);
	return 0;
}

/* The whole of path ("-": stdin), NUL-terminated (not counted in *len) so
 * that a text map is also a C string. */
static int
read_all(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
	bool std = strcmp(path, "-") == 0;
	FILE *f = std ? stdin : fopen(path, "rb");
	size_t cap = 65536, n = 0;
	char *buf;

	if (f == NULL) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	buf = malloc(cap);
	for (;;) {
		if (buf == NULL) {
			snprintf(err, errlen, "%s: out of memory", path);
			break;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				snprintf(err, errlen, "%s: %s", path, strerror(errno));
				free(buf);
				buf = NULL;
			}
			break;
		}
		if (n + 1 == cap) {
			char *nb = realloc(buf, cap * 2);
			if (nb == NULL)
				free(buf);
			buf = nb;
			cap *= 2;
		}
	}
	if (!std)
		fclose(f);
	if (buf == NULL)
		return -EIO;
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* Write data to path, or to stdout when path is NULL or "-". */
static int
write_all(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	bool std = path == NULL || strcmp(path, "-") == 0;
	FILE *f = std ? stdout : fopen(path, "wb");
	int ok;

	if (f == NULL) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	ok = fwrite(data, 1, len, f) == len;
	ok = (std ? fflush(f) : fclose(f)) == 0 && ok;
	if (!ok) {
		snprintf(err, errlen, "%s: %s", std ? "standard output" : path,
			 strerror(errno));
		return -EIO;
	}
	return 0;
}

/* What every placement command needs: the plugin, an instance per map. */
struct pl {
	const char *name;       /* --plugin */
	const char *dir_opt;    /* --plugin-dir */
	const char *conf;       /* --conf */
	struct cli_plugin cp;
	bool open;
	const struct tsr_placement_ops *ops;
	struct tsr_instance *inst[2];
	void *h[2];
};

/* The options every placement command takes; a long option without a short
 * letter gets a value above 255. */
enum {
	OPT_PLUGIN = 'p', OPT_DIR = 'd', OPT_CONF = 'c', OPT_OUT = 'o',
	OPT_HOSTS = 256, OPT_PER_HOST, OPT_RACKS, OPT_WEIGHT, OPT_RULE,
	OPT_NUM_REP, OPT_MIN_X, OPT_MAX_X, OPT_COMPARE, OPT_WEIGHT2, OPT_FORMAT,
	OPT_POOL, OPT_PG_NUM
};
#define COMMON_LONGOPTS                                        \
	{ "plugin", required_argument, NULL, OPT_PLUGIN },     \
	{ "plugin-dir", required_argument, NULL, OPT_DIR },    \
	{ "conf", required_argument, NULL, OPT_CONF }
#define COMMON_SHORTOPTS ":p:d:c:"

static bool
common_option(struct pl *pl, int c)
{
	switch (c) {
	case OPT_PLUGIN: pl->name = optarg; return true;
	case OPT_DIR: pl->dir_opt = optarg; return true;
	case OPT_CONF: pl->conf = optarg; return true;
	default: return false;
	}
}

static void
common_help(FILE *f)
{
	fprintf(f,
		"  -p, --plugin NAME      placement plugin to use (default " DEFAULT_PLUGIN ");\n"
		"                         `tessera plugins list` shows those installed\n"
		"  -d, --plugin-dir DIR   where to find it (default: $TESSERA_PLUGIN_DIR, then\n"
		"                         plugin_dir from --conf, then\n"
		"                         %s)\n"
		"  -c, --conf FILE        cluster configuration to take plugin_dir from\n",
		tsr_conf_default_plugin_dir());
}

/* Find the plugin and make ninst instances of it (one per map). */
static int
pl_open(struct pl *pl, const char *cmd, int ninst)
{
	char dir[4096], err[2048];

	if (pl->name == NULL)
		pl->name = DEFAULT_PLUGIN;
	if (cli_plugin_dir(pl->dir_opt, pl->conf, dir, sizeof(dir)) < 0)
		return -1;
	if (cli_plugin_open(&pl->cp, dir, TSR_KIND_PLACEMENT, pl->name, err,
			    sizeof(err)) < 0) {
		fail(cmd, "%s", err);
		return -1;
	}
	pl->open = true;
	for (int i = 0; i < ninst; i++) {
		if (cli_plugin_instance(&pl->cp, &pl->inst[i], err, sizeof(err)) < 0) {
			fail(cmd, "%s", err);
			return -1;
		}
		pl->h[i] = tsr_instance_handle(pl->inst[i]);
	}
	if (ninst > 0)
		pl->ops = tsr_instance_ops(pl->inst[0]);
	return 0;
}

static void
pl_close(struct pl *pl)
{
	for (int i = 0; i < 2; i++)
		if (pl->inst[i])
			tsr_instance_destroy(pl->inst[i]);
	if (pl->open)
		cli_plugin_close(&pl->cp);
}

static void
pl_free_buf(struct pl *pl, struct tsr_buf *b)
{
	if (b->data)
		pl->cp.host.host.free(pl->cp.host.host.ctx, b->data);
	b->data = NULL;
	b->len = 0;
}

/* The plugin's reason, or the errno's when it gave none. */
static const char *
reason(const char *err, int rc)
{
	return err[0] ? err : strerror(rc < 0 ? -rc : EINVAL);
}

/* rule_width was appended to the ops table; the loader insists on it for
 * ABI 1.0 plugins, but a reader checks the size all the same. */
static int
pl_rule_width(struct pl *pl, int i, uint32_t rule, uint32_t *width)
{
	if (pl->ops->size < offsetof(struct tsr_placement_ops, rule_width) +
			    sizeof(pl->ops->rule_width) || pl->ops->rule_width == NULL)
		return -ENOTSUP;
	return pl->ops->rule_width(pl->h[i], rule, width);
}

/* Make path's bytes instance i's map: as a binary map if load() takes them,
 * else as text through compile().  *form says which. */
static int
pl_load_any(struct pl *pl, int i, const char *path, const char *bytes,
	    size_t len, const char **form, char *err, size_t errlen)
{
	char e1[1024] = "", e2[1024] = "";
	struct tsr_buf blob = { NULL, 0 };
	int rc;

	rc = pl->ops->load(pl->h[i], bytes, len, e1, sizeof(e1));
	if (rc == 0) {
		*form = "binary";
		return 0;
	}
	int rc2 = pl->ops->compile(pl->h[i], bytes, len, &blob, e2, sizeof(e2));
	if (rc2 < 0) {
		snprintf(err, errlen, "%s is not a valid %s map: as binary: %s; as text: %s",
			 path, pl->name, reason(e1, rc), reason(e2, rc2));
		return rc2;
	}
	rc2 = pl->ops->load(pl->h[i], blob.data, blob.len, e2, sizeof(e2));
	pl_free_buf(pl, &blob);
	if (rc2 < 0) {
		/* compile() accepted what load() refuses: a plugin bug, but
		 * the user should hear about it plainly */
		snprintf(err, errlen, "%s: the %s plugin compiled this text but cannot "
			 "load the result: %s", path, pl->name, reason(e2, rc2));
		return rc2;
	}
	*form = "text";
	return 0;
}

/* ---- generate ----------------------------------------------------------- */

static void
generate_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera placement generate --hosts H --per-host N [--racks R]\n"
		"                                  [--weight W] [-o FILE] [--plugin NAME]\n"
		"Make a placement map for a regular cluster: H hosts of N devices each,\n"
		"optionally spread over R racks, and print its text form.  The map is built\n"
		"as a generic topology (struct tsr_topology) and handed to the plugin's\n"
		"encode(); the text is the plugin's decompile() of the result, so it is in\n"
		"the plugin's canonical form, ready to edit and `compile`.\n"
		"\n"
		"The map holds:\n"
		"  types    osd, host, rack (only with --racks), root\n"
		"  buckets  root \"default\" (id -1); racks \"rack0\".. (ids -2, -3, ..) under\n"
		"           it; hosts \"host0\".. under the root, or in the racks in\n"
		"           consecutive blocks (host0..host9 in rack0 for 20 hosts and 2\n"
		"           racks)\n"
		"  devices  osd.0 .. osd.<H*N-1>, N per host in order, all of weight W\n"
		"  rule 0   \"replicated\": take default, chooseleaf host (chooseleaf rack\n"
		"           with --racks): each replica in a different failure domain\n"
		"  rule 1   \"flat\": take default, choose osd: distinct devices anywhere\n"
		"\n"
		"      --hosts H          number of hosts, at least 1\n"
		"      --per-host N       devices in each host, at least 1 (H*N at most %u)\n"
		"      --racks R          put the hosts in R racks (1 <= R <= H) and make\n"
		"                         rule 0 separate replicas by rack\n"
		"      --weight W         capacity weight of every device, > 0 (default 1.0;\n"
		"                         held as 16.16 fixed point)\n"
		"  -o, --output FILE      write the text there instead of standard output\n",
		GEN_MAX_DEVICES);
	common_help(f);
	fprintf(f,
		"\n"
		"Example: a 100-host, 1000-device map in 10 racks, then its binary form\n"
		"  tessera placement generate --hosts 100 --per-host 10 --racks 10 -o map.txt\n"
		"  tessera placement compile map.txt -o map.bin\n"
		"\n"
		"Exit status: 0 on success, 1 if the plugin refused the map or the output\n"
		"could not be written, 2 for a usage error.\n");
}

static int
generate_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "hosts", required_argument, NULL, OPT_HOSTS },
		{ "per-host", required_argument, NULL, OPT_PER_HOST },
		{ "racks", required_argument, NULL, OPT_RACKS },
		{ "weight", required_argument, NULL, OPT_WEIGHT },
		{ "output", required_argument, NULL, OPT_OUT },
		COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = "generate", *outpath = NULL;
	struct pl pl = { .name = NULL };
	uint64_t hosts = 0, per = 0, racks = 0;
	uint32_t weight = TSR_WEIGHT_ONE;
	struct tsr_topo_item *items = NULL;
	char *names = NULL, err[2048] = "";
	struct tsr_buf blob = { NULL, 0 }, text = { NULL, 0 };
	int c, rc = CLI_FAIL;

	opterr = 0;
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS "o:", longopts, NULL)) != -1) {
		if (common_option(&pl, c))
			continue;
		switch (c) {
		case OPT_HOSTS:
			if (parse_uint(cmd, "--hosts", optarg, 1, GEN_MAX_DEVICES, &hosts) < 0)
				return CLI_USAGE;
			break;
		case OPT_PER_HOST:
			if (parse_uint(cmd, "--per-host", optarg, 1, GEN_MAX_DEVICES, &per) < 0)
				return CLI_USAGE;
			break;
		case OPT_RACKS:
			if (parse_uint(cmd, "--racks", optarg, 1, GEN_MAX_DEVICES, &racks) < 0)
				return CLI_USAGE;
			break;
		case OPT_WEIGHT:
			if (parse_weight(optarg, 65535.0, &weight) < 0 || weight == 0)
				return usage_err(cmd, "--weight takes a number in (0, 65535], not '%s'",
						 optarg);
			break;
		case OPT_OUT: outpath = optarg; break;
		default: return bad_option(cmd, c, argv);
		}
	}
	if (optind < argc)
		return usage_err(cmd, "unexpected argument '%s'", argv[optind]);
	if (hosts == 0 || per == 0)
		return usage_err(cmd, "--hosts and --per-host are required");
	if (hosts * per > GEN_MAX_DEVICES)
		return usage_err(cmd, "%" PRIu64 " hosts x %" PRIu64 " devices is more than "
				 "%u devices", hosts, per, GEN_MAX_DEVICES);
	if (racks > hosts)
		return usage_err(cmd, "--racks %" PRIu64 " is more than --hosts %" PRIu64
				 ": a rack would be empty", racks, hosts);
	if (pl_open(&pl, cmd, 1) < 0)
		goto out;

	static const char *const types_flat[] = { "osd", "host", "root" };
	static const char *const types_racks[] = { "osd", "host", "rack", "root" };
	const uint32_t t_host = 1, t_rack = 2, t_root = racks ? 3 : 2;
	uint32_t ndev = (uint32_t)(hosts * per);
	uint32_t nitems = 1 + (uint32_t)racks + (uint32_t)hosts + ndev;
	/* every name fits "host4294967295" plus its NUL */
	enum { NAME_MAX_LEN = 16 };
	items = calloc(nitems, sizeof(*items));
	names = malloc((size_t)nitems * NAME_MAX_LEN);
	if (items == NULL || names == NULL) {
		fail(cmd, "out of memory for %u items", nitems);
		goto out;
	}
	uint32_t k = 0;
	char *nm = names;
#define NAME(...) (snprintf(nm, NAME_MAX_LEN, __VA_ARGS__), nm += NAME_MAX_LEN, nm - NAME_MAX_LEN)
	items[k++] = (struct tsr_topo_item){ .id = -1, .parent = 0, .type = t_root,
					     .name = NAME("default") };
	for (uint32_t j = 0; j < racks; j++)
		items[k++] = (struct tsr_topo_item){ .id = -2 - (int32_t)j, .parent = -1,
						     .type = t_rack,
						     .name = NAME("rack%u", j) };
	const int32_t first_host = -2 - (int32_t)racks;
	for (uint32_t i = 0; i < hosts; i++) {
		/* consecutive blocks, as even as the division allows */
		int32_t parent = racks ? -2 - (int32_t)((uint64_t)i * racks / hosts) : -1;
		items[k++] = (struct tsr_topo_item){ .id = first_host - (int32_t)i,
						     .parent = parent, .type = t_host,
						     .name = NAME("host%u", i) };
	}
	for (uint32_t d = 0; d < ndev; d++)
		items[k++] = (struct tsr_topo_item){ .id = (int32_t)d,
						     .parent = first_host - (int32_t)(d / per),
						     .type = 0, .weight = weight,
						     .name = NAME("osd.%u", d) };
#undef NAME
	const struct tsr_topo_rule rules[] = {
		{ .id = 0, .name = "replicated", .root = -1,
		  .domain_type = racks ? t_rack : t_host, .mode = TSR_RULE_CHOOSELEAF },
		{ .id = 1, .name = "flat", .root = -1, .domain_type = 0,
		  .mode = TSR_RULE_CHOOSE },
	};
	const struct tsr_topology topo = {
		.ntypes = racks ? 4 : 3,
		.types = racks ? types_racks : types_flat,
		.nitems = nitems, .items = items,
		.nrules = 2, .rules = rules,
	};
	int r = pl.ops->encode(pl.h[0], &topo, &blob, err, sizeof(err));
	if (r < 0) {
		fail(cmd, "the %s plugin refused the map: %s", pl.name, reason(err, r));
		goto out;
	}
	/* the text is the plugin's canonical form of exactly those bytes */
	r = pl.ops->decompile(pl.h[0], blob.data, blob.len, &text, err, sizeof(err));
	if (r < 0) {
		fail(cmd, "the %s plugin cannot decompile its own map: %s", pl.name,
		     reason(err, r));
		goto out;
	}
	if (write_all(outpath, text.data, text.len, err, sizeof(err)) < 0) {
		fail(cmd, "%s", err);
		goto out;
	}
	rc = CLI_OK;
out:
	pl_free_buf(&pl, &blob);
	pl_free_buf(&pl, &text);
	pl_close(&pl);
	free(items);
	free(names);
	return rc;
}

/* ---- compile / decompile ------------------------------------------------ */

static void
compile_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera placement compile TEXT -o BIN [--plugin NAME]\n"
		"Turn the text form of a placement map into the binary map that travels in\n"
		"the OSD map, with the plugin's compile().  The plugin checks the whole map;\n"
		"the first problem is printed with its line and the command exits 1.\n"
		"TEXT may be - for standard input.  The text format is the plugin's own:\n"
		"`tessera placement generate` or `decompile` show it.\n"
		"\n"
		"  -o, --output BIN       file to write the binary map to (required)\n");
	common_help(f);
	fprintf(f,
		"\n"
		"Example:\n"
		"  tessera placement compile map.txt -o map.bin\n"
		"\n"
		"Exit status: 0 on success, 1 if the text is not a valid map or a file\n"
		"could not be read or written, 2 for a usage error.\n");
}

static void
decompile_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera placement decompile BIN [-o TEXT] [--plugin NAME]\n"
		"Turn a binary placement map into its text form with the plugin's\n"
		"decompile().  The text is canonical: compiling it gives the same bytes\n"
		"back, so `decompile | compile` is a safe way to edit a map.  BIN may be -\n"
		"for standard input.\n"
		"\n"
		"  -o, --output TEXT      write the text there instead of standard output\n");
	common_help(f);
	fprintf(f,
		"\n"
		"Example: edit a map by hand\n"
		"  tessera placement decompile map.bin -o map.txt\n"
		"  vi map.txt && tessera placement compile map.txt -o map.bin\n"
		"\n"
		"Exit status: 0 on success, 1 if BIN is not a valid binary map or a file\n"
		"could not be read or written, 2 for a usage error.\n");
}

/* compile and decompile differ only in the operation and whether -o is
 * required. */
static int
convert_run(const char *cmd, bool to_binary, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, OPT_OUT },
		COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *outpath = NULL;
	struct pl pl = { .name = NULL };
	struct tsr_buf res = { NULL, 0 };
	char *in = NULL, err[2048] = "";
	size_t inlen;
	int c, rc = CLI_FAIL;

	opterr = 0;
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS "o:", longopts, NULL)) != -1) {
		if (common_option(&pl, c))
			continue;
		if (c == OPT_OUT)
			outpath = optarg;
		else
			return bad_option(cmd, c, argv);
	}
	if (optind + 1 != argc)
		return usage_err(cmd, "give exactly one input map");
	if (to_binary && outpath == NULL)
		return usage_err(cmd, "-o BIN is required: a binary map is not for a terminal");
	const char *inpath = argv[optind];
	if (read_all(inpath, &in, &inlen, err, sizeof(err)) < 0)
		return fail(cmd, "%s", err);
	if (pl_open(&pl, cmd, 1) < 0)
		goto out;
	int r = to_binary ?
		pl.ops->compile(pl.h[0], in, inlen, &res, err, sizeof(err)) :
		pl.ops->decompile(pl.h[0], in, inlen, &res, err, sizeof(err));
	if (r < 0) {
		fail(cmd, "%s: not a valid %s %s map: %s", inpath, pl.name,
		     to_binary ? "text" : "binary", reason(err, r));
		goto out;
	}
	if (write_all(outpath, res.data, res.len, err, sizeof(err)) < 0) {
		fail(cmd, "%s", err);
		goto out;
	}
	rc = CLI_OK;
out:
	pl_free_buf(&pl, &res);
	pl_close(&pl);
	free(in);
	return rc;
}

static int
compile_run(int argc, char **argv)
{
	return convert_run("compile", true, argc, argv);
}

static int
decompile_run(int argc, char **argv)
{
	return convert_run("decompile", false, argc, argv);
}

/* ---- validate ----------------------------------------------------------- */

static void
validate_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera placement validate MAP [--rule R] [--num-rep N] [--plugin NAME]\n"
		"Check that MAP, in text or binary form, is a map the plugin accepts, and\n"
		"print what it holds.  MAP is first given to the plugin's load() as a\n"
		"binary map; if that fails it is compiled as text (and the result loaded).\n"
		"When both fail, both reasons are printed.  MAP may be - for standard input.\n"
		"\n"
		"A valid map is described by its device id range and, for each rule with an\n"
		"id below %d, how many distinct items (failure domains for chooseleaf,\n"
		"devices for choose) it can ever return.\n"
		"\n"
		"      --rule R           describe only rule R (default 0 with --num-rep)\n"
		"      --num-rep N        also fail unless rule R can place N replicas in\n"
		"                         distinct items, 1 <= N <= %d: a pool of size N on a\n"
		"                         rule narrower than N is never fully placed\n",
		PROBE_RULES, MAX_NREP);
	common_help(f);
	fprintf(f,
		"\n"
		"Example: can a 3-replica pool use rule 0 of this map?\n"
		"  tessera placement validate map.txt --rule 0 --num-rep 3\n"
		"\n"
		"Exit status: 0 if the map is valid (and wide enough), 1 if not, 2 for a\n"
		"usage error.\n");
}

static int
validate_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "rule", required_argument, NULL, OPT_RULE },
		{ "num-rep", required_argument, NULL, OPT_NUM_REP },
		COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = "validate", *form;
	struct pl pl = { .name = NULL };
	uint64_t rule = 0, nrep = 0;
	bool have_rule = false;
	char *in = NULL, err[4096] = "";
	size_t inlen;
	int c, rc = CLI_FAIL;

	opterr = 0;
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (common_option(&pl, c))
			continue;
		switch (c) {
		case OPT_RULE:
			if (parse_uint(cmd, "--rule", optarg, 0, UINT32_MAX, &rule) < 0)
				return CLI_USAGE;
			have_rule = true;
			break;
		case OPT_NUM_REP:
			if (parse_uint(cmd, "--num-rep", optarg, 1, MAX_NREP, &nrep) < 0)
				return CLI_USAGE;
			break;
		default: return bad_option(cmd, c, argv);
		}
	}
	if (optind + 1 != argc)
		return usage_err(cmd, "give exactly one MAP");
	const char *path = argv[optind];
	if (read_all(path, &in, &inlen, err, sizeof(err)) < 0)
		return fail(cmd, "%s", err);
	if (pl_open(&pl, cmd, 1) < 0)
		goto out;
	if (pl_load_any(&pl, 0, path, in, inlen, &form, err, sizeof(err)) < 0) {
		fail(cmd, "%s", err);
		goto out;
	}
	uint32_t maxdev = pl.ops->max_devices(pl.h[0]), width = 0;
	if (have_rule || nrep) {
		int r = pl_rule_width(&pl, 0, (uint32_t)rule, &width);
		if (r == -ENOENT) {
			fail(cmd, "%s: rule %" PRIu64 " is not in the map", path, rule);
			goto out;
		}
		if (r < 0) {
			fail(cmd, "%s: rule_width(%" PRIu64 "): %s", path, rule, strerror(-r));
			goto out;
		}
		if (nrep && width < nrep) {
			fail(cmd, "%s: rule %" PRIu64 " can place at most %u distinct items; "
			     "%" PRIu64 " replicas can never be placed", path, rule, width, nrep);
			goto out;
		}
	}
	printf("%s: valid %s map (%s), device ids below %u\n", path, pl.name, form, maxdev);
	if (have_rule || nrep) {
		printf("  rule %" PRIu64 ": at most %u distinct items", rule, width);
		if (nrep)
			printf("; %" PRIu64 " replicas fit", nrep);
		printf("\n");
	} else {
		int nrules = 0;
		for (uint32_t id = 0; id < PROBE_RULES; id++) {
			if (pl_rule_width(&pl, 0, id, &width) < 0)
				continue;
			printf("  rule %u: at most %u distinct items\n", id, width);
			nrules++;
		}
		if (nrules == 0)
			printf("  no rule with an id below %d\n", PROBE_RULES);
	}
	rc = CLI_OK;
out:
	pl_close(&pl);
	free(in);
	return rc;
}

/* ---- test --------------------------------------------------------------- */

static void
test_help(FILE *f)
{
	fprintf(f,
		"Usage: tessera placement test MAP --rule R --num-rep N [--min-x A] [--max-x B]\n"
		"                              [--pool P --pg-num G]\n"
		"                              [--weight DEV=W]... [--compare MAP2]\n"
		"                              [--weight2 DEV=W]... [--format plain|json]\n"
		"                              [--plugin NAME]\n"
		"Place every input x in [A, B) with rule R and N replicas, as clients and\n"
		"daemons would (the plugin's map()), and report how fast and how evenly.\n"
		"With --pool and --pg-num, place the placement groups 0..G-1 of pool P\n"
		"instead: their inputs as the cluster computes them (tsr_pg_seed).\n"
		"MAP is text or binary, as for `validate`.  With --compare, place the same\n"
		"inputs under a second map or weight vector and report how much data would\n"
		"move, against the least that must.\n"
		"\n"
		"Figures printed:\n"
		"  time          seconds spent in the map() calls alone (monotonic clock),\n"
		"                inputs per second and placements (inputs x N) per second\n"
		"  short inputs  inputs that got fewer than N devices (a position left\n"
		"                empty, or map() filling fewer than N)\n"
		"  utilization   over the devices that received at least one placement and\n"
		"                have a non-zero runtime weight: the largest and smallest\n"
		"                count divided by the mean, and the standard deviation of\n"
		"                count/mean.  These assume every such device should get the\n"
		"                same share, i.e. equal device weights in the map and runtime\n"
		"                weights of 1; on a map with unequal weights compare the\n"
		"                counts with the weights yourself.  Independent draws give\n"
		"                a stddev/mean of about 1/sqrt(mean) (binomial noise), which\n"
		"                is printed too; crush's stratified draws go below it.\n"
		"  changed       (--compare) for each input, the devices in its second set\n"
		"                that were not in its first, summed, as a fraction of the\n"
		"                second run's placements\n"
		"  optimal       (--compare) the least fraction that must move to turn the\n"
		"                first distribution of placements into the second: the total\n"
		"                variation distance sum over devices of\n"
		"                max(0, share2(d) - share1(d)), share(d) = count(d)/placements\n"
		"  ratio         changed / optimal: 1 is perfect, 2 moves twice what it must\n"
		"A placement on a device of runtime weight 0, or a device twice in one\n"
		"input's set, breaks the placement ABI and is reported as an error (exit 1).\n"
		"\n"
		"      --rule R           rule id (required)\n"
		"      --num-rep N        replicas per input, 1 <= N <= %d (required)\n"
		"      --min-x A          first input (default 0)\n"
		"      --max-x B          end of the inputs, exclusive, A < B <= 2^32\n"
		"                         (default 1024)\n"
		"      --pool P           place the groups of pool P instead of a range of\n"
		"                         inputs: its numeric id, as `tessera pool ls`\n"
		"                         shows it; needs --pg-num\n"
		"      --pg-num G         the pool's number of groups, 1..%u\n"
		"      --weight DEV=W     runtime weight of device DEV (a number, or osd.N)\n"
		"                         in [0, 1]: 0 is out or down, 1 (the default for\n"
		"                         every device) is fully in; repeatable\n"
		"      --compare MAP2     also place the inputs under MAP2 (may be MAP itself)\n"
		"                         and report the movement between the two runs\n"
		"      --weight2 DEV=W    runtime weight for the second run; it starts from the\n"
		"                         first run's weights (--weight), so `--compare MAP\n"
		"                         --weight2 17=0` simulates marking osd.17 out\n"
		"      --format FMT       plain (default) or json: one object with the keys\n"
		"                         plugin, map, rule, num_rep, min_x, max_x, pool,\n"
		"                         pg_num (null without --pool; min_x, max_x are then\n"
		"                         the first and end group), inputs,\n"
		"                         seconds, inputs_per_sec, placements_per_sec,\n"
		"                         placements, short_inputs, utilization {max_over_mean,\n"
		"                         min_over_mean, stddev_over_mean, devices, mean,\n"
		"                         max_device, min_device}, and with --compare:\n"
		"                         changed_fraction, optimal_fraction, ratio (null when\n"
		"                         nothing had to move), changed_placements and\n"
		"                         compare {map, seconds, short_inputs, placements,\n"
		"                         utilization}.  Figures that do not exist (no\n"
		"                         device in use) are null.\n",
		MAX_NREP, (unsigned)TSR_OSDMAP_MAX_PG_NUM);
	common_help(f);
	fprintf(f,
		"\n"
		"Examples:\n"
		"  tessera placement test map.bin --rule 0 --num-rep 3 --max-x 100000\n"
		"  tessera placement test map.bin --rule 0 --num-rep 3 --pool 1 --pg-num 4096\n"
		"  tessera placement test map.bin --rule 0 --num-rep 3 --compare map.bin \\\n"
		"      --weight2 17=0 --format json\n"
		"\n"
		"Exit status: 0 when the run completed, 1 if the map, rule or plugin failed,\n"
		"2 for a usage error.  Short inputs alone do not fail the command.\n");
}

/* One run of the inputs through one instance. */
struct run {
	const char *path;
	const char *form;
	uint32_t *weights;      /* runtime weight per device */
	uint32_t nweights;      /* = max_devices() */
	uint64_t *count;        /* placements per device */
	uint64_t placements;
	uint64_t short_inputs;
	uint64_t dup_inputs;    /* a device twice in one input's set */
	uint64_t on_out;        /* placements on devices of weight 0 */
	uint64_t ns;            /* inside map() */
	int32_t *out;           /* CHUNK x nrep results */
};

struct util {
	uint32_t devices;
	double mean, max_over_mean, min_over_mean, stddev_over_mean;
	int32_t max_dev, min_dev;
};

/* The tool links no libm; Newton's method is plenty for a figure printed
 * with four digits. */
static double
sqrt_d(double v)
{
	double x = v > 1 ? v : 1;

	if (v <= 0)
		return 0;
	for (int i = 0; i < 200; i++) {
		double nx = 0.5 * (x + v / x);
		if (nx == x)
			break;
		x = nx;
	}
	return x;
}

static void
utilization(const struct run *r, struct util *u)
{
	uint64_t sum = 0;
	double var = 0;

	memset(u, 0, sizeof(*u));
	u->max_dev = u->min_dev = -1;
	for (uint32_t d = 0; d < r->nweights; d++) {
		if (r->count[d] == 0 || r->weights[d] == 0)
			continue;
		u->devices++;
		sum += r->count[d];
		if (u->max_dev < 0 || r->count[d] > r->count[u->max_dev])
			u->max_dev = (int32_t)d;
		if (u->min_dev < 0 || r->count[d] < r->count[u->min_dev])
			u->min_dev = (int32_t)d;
	}
	if (u->devices == 0)
		return;
	u->mean = (double)sum / u->devices;
	u->max_over_mean = r->count[u->max_dev] / u->mean;
	u->min_over_mean = r->count[u->min_dev] / u->mean;
	for (uint32_t d = 0; d < r->nweights; d++) {
		if (r->count[d] == 0 || r->weights[d] == 0)
			continue;
		double dev = r->count[d] / u->mean - 1;
		var += dev * dev;
	}
	u->stddev_over_mean = sqrt_d(var / u->devices);
}

struct weight_arg {
	uint32_t dev;
	uint32_t w;
	const char *text;
};

/* "17=0.5" or "osd.17=0.5": 0, or -1 after a usage message. */
static int
parse_weight_arg(const char *cmd, const char *opt, const char *s,
		 struct weight_arg *wa)
{
	const char *eq = strchr(s, '=');
	char devtext[64];
	uint64_t dev;
	char *end = NULL;

	if (eq == NULL || eq == s || (size_t)(eq - s) >= sizeof(devtext)) {
		usage_err(cmd, "%s takes DEV=W, not '%s'", opt, s);
		return -1;
	}
	memcpy(devtext, s, (size_t)(eq - s));
	devtext[eq - s] = '\0';
	const char *num = strrchr(devtext, '.');
	num = num ? num + 1 : devtext;
	errno = 0;
	dev = num[0] >= '0' && num[0] <= '9' ? strtoull(num, &end, 10) : UINT64_MAX;
	if (dev == UINT64_MAX || errno != 0 || *end != '\0' || dev > INT32_MAX) {
		usage_err(cmd, "%s: '%s' is not a device id", opt, devtext);
		return -1;
	}
	if (parse_weight(eq + 1, 1.0, &wa->w) < 0) {
		usage_err(cmd, "%s: the weight of device %" PRIu64 " must be in [0, 1], "
			  "not '%s'", opt, dev, eq + 1);
		return -1;
	}
	wa->dev = (uint32_t)dev;
	wa->text = s;
	return 0;
}

/* Set the runtime weights given on the command line: 0, or -1 after a
 * message when a device is not in the map. */
static int
apply_weights(const char *cmd, const struct run *r, const struct weight_arg *wa,
	      size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (wa[i].dev >= r->nweights) {
			fail(cmd, "%s: device %u is not in %s (its device ids are below %u)",
			     wa[i].text, wa[i].dev, r->path, r->nweights);
			return -1;
		}
		r->weights[wa[i].dev] = wa[i].w;
	}
	return 0;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Which inputs a test places: x itself, or the input of group x of a
 * pool.  describe_input() names input number x for a message. */
struct inputs {
	bool pool_mode;
	uint64_t pool;
};

static inline uint32_t
input_of(const struct inputs *in, uint64_t x)
{
	return in->pool_mode ? tsr_pg_seed(in->pool, (uint32_t)x) : (uint32_t)x;
}

static const char *
describe_input(const struct inputs *in, uint64_t x, char *buf, size_t len)
{
	if (in->pool_mode)
		snprintf(buf, len, "group %" PRIu64 " (input %" PRIu32 ")", x,
			 input_of(in, x));
	else
		snprintf(buf, len, "input %" PRIu64, x);
	return buf;
}

/* Map inputs [x0, x0 + n) (after input_of) into r->out, then tally them:
 * 0, or -1 after a message.  Only the map() loop is timed. */
static int
run_chunk(const char *cmd, struct pl *pl, int i, struct run *r, uint32_t rule,
	  uint32_t nrep, const struct inputs *in, uint64_t x0, uint32_t n)
{
	int32_t *out = r->out;
	int rc = 0;
	uint32_t k;

	uint64_t t0 = mono_ns();
	for (k = 0; k < n; k++) {
		rc = pl->ops->map(pl->h[i], rule, input_of(in, x0 + k), nrep, r->weights,
				  r->nweights, out + (size_t)k * nrep);
		if (rc < 0)
			break;
	}
	r->ns += mono_ns() - t0;
	if (rc < 0) {
		char what[64];
		fail(cmd, "%s: map(rule %u, %s, %u replicas) failed: %s", r->path,
		     rule, describe_input(in, x0 + k, what, sizeof(what)), nrep,
		     strerror(-rc));
		return -1;
	}
	for (k = 0; k < n; k++) {
		const int32_t *o = out + (size_t)k * nrep;
		bool is_short = false, dup = false;
		for (uint32_t j = 0; j < nrep; j++) {
			if (o[j] == TSR_PLACEMENT_NONE) {
				is_short = true;
				continue;
			}
			if (o[j] < 0 || (uint32_t)o[j] >= r->nweights) {
				char what[64];
				fail(cmd, "%s: the %s plugin placed %s on device %d, "
				     "outside the map's ids 0..%u", r->path, pl->name,
				     describe_input(in, x0 + k, what, sizeof(what)),
				     o[j], r->nweights - 1);
				return -1;
			}
			for (uint32_t m = 0; m < j; m++)
				dup |= o[m] == o[j];
			r->count[o[j]]++;
			r->placements++;
			r->on_out += r->weights[o[j]] == 0;
		}
		r->short_inputs += is_short;
		r->dup_inputs += dup;
	}
	return 0;
}

/* For each input, the devices of the second set not in the first. */
static uint64_t
changed_in_chunk(const struct run *a, const struct run *b, uint32_t nrep, uint32_t n)
{
	uint64_t changed = 0;

	for (uint32_t k = 0; k < n; k++) {
		const int32_t *oa = a->out + (size_t)k * nrep, *ob = b->out + (size_t)k * nrep;
		for (uint32_t j = 0; j < nrep; j++) {
			if (ob[j] == TSR_PLACEMENT_NONE)
				continue;
			bool had = false;
			for (uint32_t m = 0; m < nrep && !had; m++)
				had = oa[m] == ob[j];
			changed += !had;
		}
	}
	return changed;
}

static void
json_num(struct tsr_sbuf *o, const char *key, bool valid, double v)
{
	if (valid)
		tsr_sbuf_printf(o, "\"%s\": %.6g", key, v);
	else
		tsr_sbuf_printf(o, "\"%s\": null", key);
}

static void
json_util(struct tsr_sbuf *o, const struct util *u)
{
	bool ok = u->devices > 0;

	tsr_sbuf_printf(o, "{");
	json_num(o, "max_over_mean", ok, u->max_over_mean);
	tsr_sbuf_printf(o, ", ");
	json_num(o, "min_over_mean", ok, u->min_over_mean);
	tsr_sbuf_printf(o, ", ");
	json_num(o, "stddev_over_mean", ok, u->stddev_over_mean);
	tsr_sbuf_printf(o, ", \"devices\": %u, ", u->devices);
	json_num(o, "mean", ok, u->mean);
	if (ok)
		tsr_sbuf_printf(o, ", \"max_device\": %d, \"min_device\": %d}",
				u->max_dev, u->min_dev);
	else
		tsr_sbuf_printf(o, ", \"max_device\": null, \"min_device\": null}");
}

static void
plain_run(const struct run *r, const struct util *u, uint64_t inputs,
	  uint32_t nrep, const char *indent)
{
	double s = r->ns / 1e9;

	if (r->ns > 0)
		printf("%stime:         %.6f s in map(): %.0f inputs/s, %.0f placements/s\n",
		       indent, s, inputs / s, inputs * (double)nrep / s);
	else
		printf("%stime:         too short to measure\n", indent);
	printf("%sshort inputs: %" PRIu64 " got fewer than %u devices\n", indent,
	       r->short_inputs, nrep);
	if (u->devices == 0) {
		printf("%sutilization:  no device received a placement\n", indent);
		return;
	}
	printf("%sutilization:  %" PRIu64 " placements on %u devices, %.1f each on average\n"
	       "%s  max/mean    %.4f (device %d)\n"
	       "%s  min/mean    %.4f (device %d)\n"
	       "%s  stddev/mean %.4f (independent draws: about %.4f)\n",
	       indent, r->placements, u->devices, u->mean,
	       indent, u->max_over_mean, u->max_dev,
	       indent, u->min_over_mean, u->min_dev,
	       indent, u->stddev_over_mean, 1 / sqrt_d(u->mean));
}

static int
test_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "rule", required_argument, NULL, OPT_RULE },
		{ "num-rep", required_argument, NULL, OPT_NUM_REP },
		{ "min-x", required_argument, NULL, OPT_MIN_X },
		{ "max-x", required_argument, NULL, OPT_MAX_X },
		{ "pool", required_argument, NULL, OPT_POOL },
		{ "pg-num", required_argument, NULL, OPT_PG_NUM },
		{ "weight", required_argument, NULL, OPT_WEIGHT },
		{ "compare", required_argument, NULL, OPT_COMPARE },
		{ "weight2", required_argument, NULL, OPT_WEIGHT2 },
		{ "format", required_argument, NULL, OPT_FORMAT },
		COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *cmd = "test";
	struct pl pl = { .name = NULL };
	struct run runs[2];
	struct util util[2];
	struct weight_arg *wargs[2];
	size_t nwargs[2] = { 0, 0 };
	uint64_t rule = 0, nrep = 0, minx = 0, maxx = 1024, changed = 0;
	uint64_t pg_num = 0;
	struct inputs inp = { .pool_mode = false };
	bool have_rule = false, json = false, have_x = false;
	char *in[2] = { NULL, NULL }, err[4096] = "";
	size_t inlen[2];
	int c, rc = CLI_FAIL;

	memset(runs, 0, sizeof(runs));
	wargs[0] = calloc((size_t)argc, sizeof(*wargs[0]));
	wargs[1] = calloc((size_t)argc, sizeof(*wargs[1]));
	if (wargs[0] == NULL || wargs[1] == NULL) {
		rc = fail(cmd, "out of memory");
		goto out;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, COMMON_SHORTOPTS, longopts, NULL)) != -1) {
		if (common_option(&pl, c))
			continue;
		rc = CLI_USAGE;
		switch (c) {
		case OPT_RULE:
			if (parse_uint(cmd, "--rule", optarg, 0, UINT32_MAX, &rule) < 0)
				goto out;
			have_rule = true;
			break;
		case OPT_NUM_REP:
			if (parse_uint(cmd, "--num-rep", optarg, 1, MAX_NREP, &nrep) < 0)
				goto out;
			break;
		case OPT_MIN_X:
			if (parse_uint(cmd, "--min-x", optarg, 0, UINT32_MAX, &minx) < 0)
				goto out;
			have_x = true;
			break;
		case OPT_MAX_X:
			if (parse_uint(cmd, "--max-x", optarg, 1, (uint64_t)UINT32_MAX + 1,
				       &maxx) < 0)
				goto out;
			have_x = true;
			break;
		case OPT_POOL:
			if (parse_uint(cmd, "--pool", optarg, 0, INT64_MAX, &inp.pool) < 0)
				goto out;
			inp.pool_mode = true;
			break;
		case OPT_PG_NUM:
			if (parse_uint(cmd, "--pg-num", optarg, 1, TSR_OSDMAP_MAX_PG_NUM,
				       &pg_num) < 0)
				goto out;
			break;
		case OPT_WEIGHT:
		case OPT_WEIGHT2: {
			int w = c == OPT_WEIGHT2;
			if (parse_weight_arg(cmd, w ? "--weight2" : "--weight", optarg,
					     &wargs[w][nwargs[w]]) < 0)
				goto out;
			nwargs[w]++;
			break;
		}
		case OPT_COMPARE: runs[1].path = optarg; break;
		case OPT_FORMAT:
			if (cli_parse_format(optarg, &json) < 0)
				goto out;
			break;
		default:
			bad_option(cmd, c, argv);
			goto out;
		}
		rc = CLI_FAIL;
	}
	rc = CLI_USAGE;
	if (optind + 1 != argc) {
		usage_err(cmd, "give exactly one MAP");
		goto out;
	}
	if (!have_rule || nrep == 0) {
		usage_err(cmd, "--rule and --num-rep are required");
		goto out;
	}
	if (inp.pool_mode != (pg_num != 0)) {
		usage_err(cmd, "--pool and --pg-num go together");
		goto out;
	}
	if (inp.pool_mode && have_x) {
		usage_err(cmd, "--pool places a pool's groups: no --min-x or --max-x with it");
		goto out;
	}
	if (inp.pool_mode) {
		minx = 0;
		maxx = pg_num;
	}
	if (minx >= maxx) {
		usage_err(cmd, "--min-x %" PRIu64 " is not below --max-x %" PRIu64 ": no inputs",
			  minx, maxx);
		goto out;
	}
	if (nwargs[1] && runs[1].path == NULL) {
		usage_err(cmd, "--weight2 needs --compare");
		goto out;
	}
	rc = CLI_FAIL;
	runs[0].path = argv[optind];
	int nruns = runs[1].path ? 2 : 1;
	for (int i = 0; i < nruns; i++) {
		/* the same file twice is read twice: cheap, and simpler than
		 * sharing a buffer */
		if (read_all(runs[i].path, &in[i], &inlen[i], err, sizeof(err)) < 0) {
			fail(cmd, "%s", err);
			goto out;
		}
	}
	if (pl_open(&pl, cmd, nruns) < 0)
		goto out;
	for (int i = 0; i < nruns; i++) {
		struct run *r = &runs[i];
		uint32_t width;
		if (pl_load_any(&pl, i, r->path, in[i], inlen[i], &r->form, err,
				sizeof(err)) < 0) {
			fail(cmd, "%s", err);
			goto out;
		}
		int wr = pl_rule_width(&pl, i, (uint32_t)rule, &width);
		if (wr == -ENOENT) {
			fail(cmd, "%s: rule %" PRIu64 " is not in the map", r->path, rule);
			goto out;
		}
		r->nweights = pl.ops->max_devices(pl.h[i]);
		/* never zero-sized, so that a map without devices still has
		 * valid pointers to hand to map() */
		size_t cap = r->nweights ? r->nweights : 1;
		r->weights = malloc(cap * sizeof(*r->weights));
		r->count = calloc(cap, sizeof(*r->count));
		r->out = malloc((size_t)CHUNK * nrep * sizeof(*r->out));
		if (r->weights == NULL || r->count == NULL || r->out == NULL) {
			fail(cmd, "out of memory for %u devices", r->nweights);
			goto out;
		}
		/* the second run starts from the first run's weights */
		for (uint32_t d = 0; d < r->nweights; d++)
			r->weights[d] = i == 0 || d >= runs[0].nweights ?
					TSR_WEIGHT_ONE : runs[0].weights[d];
		if (apply_weights(cmd, r, wargs[i], nwargs[i]) < 0)
			goto out;
	}
	for (uint64_t x = minx; x < maxx; x += CHUNK) {
		uint32_t n = maxx - x < CHUNK ? (uint32_t)(maxx - x) : CHUNK;
		for (int i = 0; i < nruns; i++)
			if (run_chunk(cmd, &pl, i, &runs[i], (uint32_t)rule, (uint32_t)nrep,
				      &inp, x, n) < 0)
				goto out;
		if (nruns == 2)
			changed += changed_in_chunk(&runs[0], &runs[1], (uint32_t)nrep, n);
	}
	for (int i = 0; i < nruns; i++) {
		if (runs[i].dup_inputs || runs[i].on_out) {
			fail(cmd, "%s: the %s plugin broke the placement ABI: %" PRIu64
			     " input(s) got a device twice, %" PRIu64 " placement(s) "
			     "landed on devices of runtime weight 0", runs[i].path,
			     pl.name, runs[i].dup_inputs, runs[i].on_out);
			goto out;
		}
		utilization(&runs[i], &util[i]);
	}

	/* movement: the optimum is the total-variation distance between the
	 * two runs' device shares */
	double changed_frac = 0, optimal = 0;
	if (nruns == 2) {
		uint32_t nd = runs[0].nweights > runs[1].nweights ? runs[0].nweights :
								    runs[1].nweights;
		for (uint32_t d = 0; d < nd; d++) {
			double s0 = d < runs[0].nweights && runs[0].placements ?
				    (double)runs[0].count[d] / runs[0].placements : 0;
			double s1 = d < runs[1].nweights && runs[1].placements ?
				    (double)runs[1].count[d] / runs[1].placements : 0;
			if (s1 > s0)
				optimal += s1 - s0;
		}
		if (runs[1].placements)
			changed_frac = (double)changed / runs[1].placements;
	}
	/* below one placement in a billion, call it nothing: the sum of shares
	 * carries rounding error of that order */
	bool have_ratio = optimal > 1e-9;
	uint64_t inputs = maxx - minx;
	double sec = runs[0].ns / 1e9;

	if (json) {
		struct tsr_sbuf o;
		tsr_sbuf_init(&o);
		tsr_sbuf_printf(&o, "{\"plugin\": ");
		tsr_sbuf_json_str(&o, pl.name);
		tsr_sbuf_printf(&o, ", \"map\": ");
		tsr_sbuf_json_str(&o, runs[0].path);
		tsr_sbuf_printf(&o, ", \"rule\": %" PRIu64 ", \"num_rep\": %" PRIu64
				", \"min_x\": %" PRIu64 ", \"max_x\": %" PRIu64 ", ",
				rule, nrep, minx, maxx);
		if (inp.pool_mode)
			tsr_sbuf_printf(&o, "\"pool\": %" PRIu64 ", \"pg_num\": %" PRIu64
					", ", inp.pool, pg_num);
		else
			tsr_sbuf_printf(&o, "\"pool\": null, \"pg_num\": null, ");
		tsr_sbuf_printf(&o, "\"inputs\": %" PRIu64 ", \"seconds\": %.9f, ",
				inputs, sec);
		json_num(&o, "inputs_per_sec", sec > 0, inputs / sec);
		tsr_sbuf_printf(&o, ", ");
		json_num(&o, "placements_per_sec", sec > 0, inputs * (double)nrep / sec);
		tsr_sbuf_printf(&o, ", \"placements\": %" PRIu64 ", \"short_inputs\": %"
				PRIu64 ", \"utilization\": ", runs[0].placements,
				runs[0].short_inputs);
		json_util(&o, &util[0]);
		if (nruns == 2) {
			tsr_sbuf_printf(&o, ", \"changed_placements\": %" PRIu64 ", ", changed);
			json_num(&o, "changed_fraction", true, changed_frac);
			tsr_sbuf_printf(&o, ", ");
			json_num(&o, "optimal_fraction", true, optimal);
			tsr_sbuf_printf(&o, ", ");
			json_num(&o, "ratio", have_ratio, changed_frac / optimal);
			tsr_sbuf_printf(&o, ", \"compare\": {\"map\": ");
			tsr_sbuf_json_str(&o, runs[1].path);
			tsr_sbuf_printf(&o, ", \"seconds\": %.9f, \"placements\": %" PRIu64
					", \"short_inputs\": %" PRIu64 ", \"utilization\": ",
					runs[1].ns / 1e9, runs[1].placements,
					runs[1].short_inputs);
			json_util(&o, &util[1]);
			tsr_sbuf_printf(&o, "}");
		}
		tsr_sbuf_printf(&o, "}\n");
		if (tsr_sbuf_error(&o) < 0) {
			tsr_sbuf_release(&o);
			fail(cmd, "out of memory");
			goto out;
		}
		fputs(tsr_sbuf_str(&o), stdout);
		tsr_sbuf_release(&o);
	} else {
		printf("map:          %s (%s), %s plugin, rule %" PRIu64 ", %" PRIu64
		       " replicas\n", runs[0].path, runs[0].form, pl.name, rule, nrep);
		if (inp.pool_mode)
			printf("inputs:       %" PRIu64 " (groups 0 to %" PRIu64
			       " of pool %" PRIu64 ")\n", inputs, maxx - 1, inp.pool);
		else
			printf("inputs:       %" PRIu64 " (x from %" PRIu64 " to %" PRIu64
			       ")\n", inputs, minx, maxx - 1);
		plain_run(&runs[0], &util[0], inputs, (uint32_t)nrep, "");
		if (nruns == 2) {
			printf("compared with %s (%s)", runs[1].path, runs[1].form);
			if (nwargs[1])
				printf(", %zu runtime weight(s) changed", nwargs[1]);
			printf(":\n");
			plain_run(&runs[1], &util[1], inputs, (uint32_t)nrep, "  ");
			printf("  changed:      %.6f (%" PRIu64 " of %" PRIu64 " placements)\n"
			       "  optimal:      %.6f (total-variation distance of the device shares)\n",
			       changed_frac, changed, runs[1].placements, optimal);
			if (have_ratio)
				printf("  ratio:        %.4f (changed / optimal)\n",
				       changed_frac / optimal);
			else
				printf("  ratio:        n/a (nothing had to move)\n");
		}
	}
	if (fflush(stdout) != 0) {
		fail(cmd, "standard output: %s", strerror(errno));
		goto out;
	}
	rc = CLI_OK;
out:
	pl_close(&pl);
	for (int i = 0; i < 2; i++) {
		free(runs[i].weights);
		free(runs[i].count);
		free(runs[i].out);
		free(in[i]);
		free(wargs[i]);
	}
	return rc;
}

const struct cli_cmd cli_placement_cmds[] = {
	{ "placement generate", "--hosts H --per-host N [...]",
	  "make a placement map of H hosts x N devices", generate_run, generate_help },
	{ "placement compile", "TEXT -o BIN", "turn a map's text into its binary form",
	  compile_run, compile_help },
	{ "placement decompile", "BIN [-o TEXT]", "turn a binary map into text",
	  decompile_run, decompile_help },
	{ "placement validate", "MAP [--rule R --num-rep N]",
	  "check a map, text or binary", validate_run, validate_help },
	{ "placement test", "MAP --rule R --num-rep N [...]",
	  "place many inputs: speed, balance, movement", test_run, test_help },
	{ NULL, NULL, NULL, NULL, NULL }
};
