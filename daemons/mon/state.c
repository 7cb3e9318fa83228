/* state.c — the cluster maps and the commands that change and read them
 * (state.h). */
#include "state.h"
#include "mon/monmsg.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
state_init(struct mon_state *s)
{
	memset(s, 0, sizeof(*s));
	tsr_osdmap_init(&s->osdmap);
	tsr_mdsmap_init(&s->mdsmap);
	snprintf(s->osdmap.placement, sizeof(s->osdmap.placement), "crush");
}

static void
incs_free(struct mon_incs *r)
{
	for (size_t i = 0; i < MON_INC_KEEP; i++)
		free(r->data[i]);
	memset(r, 0, sizeof(*r));
}

void
state_free(struct mon_state *s)
{
	for (size_t i = 0; i < s->nsessions; i++)
		free(s->sessions[i].text);
	tsr_osdmap_free(&s->osdmap);
	tsr_mdsmap_free(&s->mdsmap);
	incs_free(&s->osd_incs);
	incs_free(&s->mds_incs);
	memset(s, 0, sizeof(*s));
}

/* ---- Words ---------------------------------------------------------------*/

/* A decimal integer in [min, max], as the log holds them (see num_word). */
static int
parse_i64(const char *w, int64_t min, int64_t max, int64_t *v)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(w, &end, 10);
	if (*w == '\0' || *end || errno || x < min || x > max)
		return -EINVAL;
	*v = x;
	return 0;
}

/* An integer as a user writes one, and as configuration files take it
 * (doc/configuration.md): decimal, or hexadecimal after 0x, never octal
 * ("010" is ten); a leading '-' is the only sign; no blanks, nothing
 * after the digits.  -EINVAL when w is not such a number, -ERANGE when it
 * is one outside [min, max]. */
static int
parse_num(const char *w, int64_t min, int64_t max, int64_t *v)
{
	const char *p = w + (w[0] == '-');
	uint64_t x = 0, lim = w[0] == '-' ? (uint64_t)INT64_MAX + 1 : INT64_MAX;
	unsigned base = 10;
	int64_t y;
	size_t n = 0;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	for (; p[n]; n++) {
		char ch = p[n];
		unsigned d = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0')
			   : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
			   : ch >= 'A' && ch <= 'F' ? (unsigned)(ch - 'A' + 10) : 99;
		if (d >= base)
			return -EINVAL;
		if (x > (lim - d) / base)
			return -ERANGE;
		x = x * base + d;
	}
	if (n == 0)
		return -EINVAL;
	y = w[0] != '-' ? (int64_t)x : x == (uint64_t)INT64_MAX + 1 ? INT64_MIN
	    : -(int64_t)x;
	if (y < min || y > max)
		return -ERANGE;
	*v = y;
	return 0;
}

/* The integer word *w in [min, max] where a command is accepted
 * (state_classify, canon): as parse_num reads it, and rewritten in
 * decimal when written otherwise, so that the log holds decimal numbers
 * only: a monitor of any version applies an entry alike (parse_i64),
 * and entries logged before hexadecimal was accepted replay as they did.
 * Where the log is applied (!canon): decimal only. */
static int
num_word(char **w, int canon, int64_t min, int64_t max, int64_t *v)
{
	char dec[24];

	if (!canon)
		return parse_i64(*w, min, max, v);
	if (parse_num(*w, min, max, v) < 0)
		return -EINVAL;
	snprintf(dec, sizeof(dec), "%" PRId64, *v);
	if (strcmp(dec, *w) != 0) {
		free(*w);
		*w = tsr_xstrdup(dec);
	}
	return 0;
}

static int
parse_dbl(const char *w, double min, double max, double *v)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(w, &end);
	if (*w == '\0' || *end || errno || !isfinite(x) || x < min || x > max)
		return -EINVAL;
	*v = x;
	return 0;
}

#define FAIL(rc, ...) (tsr_sbuf_printf(out, __VA_ARGS__), (rc))

/* Is argv[0..] "w0 w1"? */
static int
is(int argc, char **argv, const char *w0, const char *w1)
{
	return argc >= (w1 ? 2 : 1) && strcmp(argv[0], w0) == 0 &&
	       (w1 == NULL || strcmp(argv[1], w1) == 0);
}

/* The options a command may take (struct change's opts, what parse_opts
 * saw), in the order the table below names them. */
enum {
	O_HOST = 1 << 0, O_RACK = 1 << 1, O_WEIGHT = 1 << 2, O_RULE = 1 << 3,
	O_SIZE = 1 << 4, O_MIN_SIZE = 1 << 5, O_REDUNDANCY = 1 << 6,
	O_REDUNDANCY_OPTS = 1 << 7, O_YES = 1 << 8, O_AUTO = 1 << 9,
	O_FAILED = 1 << 10,
};
static const char *const opt_names[] = {
	"--host", "--rack", "--weight", "--rule", "--size", "--min-size",
	"--redundancy", "--redundancy-opts", "--yes-i-really-mean-it", "--auto",
	"--failed",
};

/* The options after the positional words: --host H, --weight W, --size N,
 * --min-size N, --yes-i-really-mean-it.  Unknown ones are errors. */
struct cmd_opts {
	const char *host, *rack, *redundancy, *redundancy_opts;
	int64_t rule;
	double weight;
	int64_t size, min_size;
	int yes, autom;
	const char *failed;
	unsigned seen;          /* O_* given */
	const char *pos[4];
	int posi[4];            /* where each is in argv */
	int npos;
};

/* canon: integer values as num_word reads them (state_classify). */
static int
parse_opts(int argc, char **argv, int from, int canon, struct cmd_opts *o,
	   struct tsr_sbuf *out)
{
	memset(o, 0, sizeof(*o));
	o->weight = -1;
	o->size = o->min_size = o->rule = -1;
	for (int i = from; i < argc; i++) {
		const char *w = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		for (size_t k = 0; k < sizeof(opt_names) / sizeof(opt_names[0]); k++)
			if (strcmp(w, opt_names[k]) == 0)
				o->seen |= 1u << k;
		if (strcmp(w, "--yes-i-really-mean-it") == 0) {
			o->yes = 1;
		} else if (strcmp(w, "--host") == 0) {
			if (val == NULL || !tsr_osdmap_name_ok(val))
				return FAIL(-EINVAL, "--host needs a host name "
					    "(letters, digits, '-', '_', '.')");
			o->host = val;
			i++;
		} else if (strcmp(w, "--rack") == 0) {
			if (val == NULL || !tsr_osdmap_name_ok(val))
				return FAIL(-EINVAL, "--rack needs a rack name "
					    "(letters, digits, '-', '_', '.')");
			o->rack = val;
			i++;
		} else if (strcmp(w, "--rule") == 0) {
			if (val == NULL || num_word(&argv[i + 1], canon, 0, MON_RULES - 1,
						    &o->rule) < 0)
				return FAIL(-EINVAL, "--rule needs a placement rule: 0 "
					    "(one copy per host), 1 (per rack), 2 (per OSD)");
			i++;
		} else if (strcmp(w, "--redundancy") == 0) {
			if (val == NULL || !tsr_osdmap_name_ok(val))
				return FAIL(-EINVAL, "--redundancy needs a redundancy "
					    "plugin name (e.g. replica)");
			o->redundancy = val;
			i++;
		} else if (strcmp(w, "--redundancy-opts") == 0) {
			if (val == NULL || strlen(val) >= TSR_OSDMAP_OPTS ||
			    strpbrk(val, " \t\n\"") != NULL)
				return FAIL(-EINVAL, "--redundancy-opts needs KEY=VALUE,"
					    "... (no blanks, under %d bytes)",
					    TSR_OSDMAP_OPTS);
			o->redundancy_opts = val;
			i++;
		} else if (strcmp(w, "--weight") == 0) {
			if (val == NULL || parse_dbl(val, 0, 65535, &o->weight) < 0 ||
			    o->weight < 1.0 / 65536)
				return FAIL(-EINVAL, "--weight needs a number in "
					    "0.00002..65535");
			i++;
		} else if (strcmp(w, "--auto") == 0) {
			o->autom = 1;
		} else if (strcmp(w, "--failed") == 0) {
			if (val == NULL)
				return FAIL(-EINVAL, "--failed needs OSD ids (1,2,3)");
			o->failed = val;
			i++;
		} else if (strcmp(w, "--size") == 0 || strcmp(w, "--min-size") == 0) {
			int64_t *v = w[2] == 's' ? &o->size : &o->min_size;
			if (val == NULL || num_word(&argv[i + 1], canon, 1, 16, v) < 0)
				return FAIL(-EINVAL, "%s needs a number in 1..16", w);
			i++;
		} else if (w[0] == '-' && w[1] == '-') {
			return FAIL(-EINVAL, "unknown option '%s'", w);
		} else if (o->npos < 4) {
			o->posi[o->npos] = i;
			o->pos[o->npos++] = w;
		} else {
			return FAIL(-EINVAL, "unexpected word '%s'", w);
		}
	}
	return 0;
}

int
state_osd_list(const char *list, int32_t *ids, size_t max, size_t *n,
	       struct tsr_sbuf *out)
{
	const char *p = list;

	*n = 0;
	for (size_t k = 1;; k++) {
		size_t len = strcspn(p, ",");
		char w[24];
		int64_t id = 0;
		int bad = len == 0 || len >= sizeof(w);

		if (!bad) {
			memcpy(w, p, len);
			w[len] = '\0';
			bad = parse_num(w + (strncmp(w, "osd.", 4) == 0 ? 4 : 0), 0,
					MON_MAX_OSDS - 1, &id) < 0;
		}
		if (bad)
			return FAIL(-EINVAL, "--failed: element %zu ('%.*s%s') is not an "
				    "OSD id (0..%d, or osd.N)", k, (int)(len < 32 ? len : 32),
				    p, len > 32 ? "..." : "", MON_MAX_OSDS - 1);
		if (*n >= max)
			return FAIL(-EINVAL, "--failed: more than %zu OSD ids", max);
		ids[(*n)++] = (int32_t)id;
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* ---- Lookups -------------------------------------------------------------*/

/* Ids come here parsed within 0 .. MON_MAX_OSDS - 1. */
static struct tsr_osdmap_osd *
find_osd(const struct mon_state *s, int64_t id)
{
	return tsr_osdmap_osd(&s->osdmap, (int32_t)id);
}

/* An OSD id word ("3" or "osd.3"); canon as num_word (a rewritten one
 * loses its "osd." prefix, which osd_arg takes or leaves alike). */
static int
osd_id_word(char **w, int canon, int64_t *id)
{
	const char *num = *w + (strncmp(*w, "osd.", 4) == 0 ? 4 : 0);
	char dec[24];

	if (!canon)
		return parse_i64(num, 0, MON_MAX_OSDS - 1, id);
	if (parse_num(num, 0, MON_MAX_OSDS - 1, id) < 0)
		return -EINVAL;
	snprintf(dec, sizeof(dec), "%" PRId64, *id);
	if (strcmp(dec, num) != 0) {
		free(*w);
		*w = tsr_xstrdup(dec);
	}
	return 0;
}

static int
osd_arg(const struct mon_state *s, const char *w, struct tsr_osdmap_osd **o,
	struct tsr_sbuf *out)
{
	int64_t id;

	if (strncmp(w, "osd.", 4) == 0)
		w += 4;
	if (parse_i64(w, 0, MON_MAX_OSDS - 1, &id) < 0)
		return FAIL(-EINVAL, "'%s' is not an OSD id (0..%d)", w, MON_MAX_OSDS - 1);
	if ((*o = find_osd(s, id)) == NULL)
		return FAIL(-ENOENT, "osd.%" PRId64 " does not exist", id);
	return 0;
}

/* ---- Changes -------------------------------------------------------------*/

enum chg {
	C_OSD_ADD, C_OSD_RM, C_OSD_IN, C_OSD_OUT, C_OSD_REWEIGHT, C_OSD_SET,
	C_OSD_UNSET, C_OSD_DOWN, C_OSD_BOOT, C_POOL_CREATE, C_POOL_SET, C_POOL_RM,
	C_MDS_BOOT, C_MDS_ASSIGN, C_MDS_ACTIVE, C_MDS_FAIL, C_FS_SET,
};

struct change {
	const char *w0, *w1;
	int npos;               /* positional words after w0 w1: min */
	int maxpos;
	unsigned opts;          /* the options it takes (O_*) */
	const char *usage;
};

static const struct change changes[] = {
	[C_OSD_ADD] = { "osd", "add", 0, 1, O_HOST | O_RACK | O_WEIGHT,
			"osd add [ID] --host HOST [--rack RACK] [--weight W]" },
	[C_OSD_RM] = { "osd", "rm", 1, 1, 0, "osd rm ID" },
	[C_OSD_IN] = { "osd", "in", 1, 1, 0, "osd in ID" },
	[C_OSD_OUT] = { "osd", "out", 1, 1, O_AUTO, "osd out ID" },
	[C_OSD_REWEIGHT] = { "osd", "reweight", 2, 2, 0, "osd reweight ID R (0..1)" },
	[C_OSD_SET] = { "osd", "set", 1, 1, 0, "osd set noout" },
	[C_OSD_UNSET] = { "osd", "unset", 1, 1, 0, "osd unset noout" },
	[C_OSD_DOWN] = { "osd", "down", 1, 1, 0, "osd down ID" },
	[C_OSD_BOOT] = { "osd", "boot", 2, 2, 0, "osd boot ID IP:PORT (an OSD starting)" },
	[C_POOL_CREATE] = { "pool", "create", 1, 2, O_SIZE | O_MIN_SIZE | O_RULE |
			    O_REDUNDANCY | O_REDUNDANCY_OPTS,
			    "pool create NAME [PG_NUM] [--size N] [--min-size N] [--rule ID] "
			    "[--redundancy PLUGIN [--redundancy-opts K=V,...]]" },
	[C_POOL_SET] = { "pool", "set", 3, 3, 0, "pool set NAME pg_num|size|min_size|rule VALUE" },
	[C_POOL_RM] = { "pool", "rm", 1, 1, O_YES, "pool rm NAME --yes-i-really-mean-it" },
	[C_MDS_BOOT] = { "mds", "boot", 3, 3, 0, "mds boot NAME GID IP:PORT (an MDS starting)" },
	[C_MDS_ASSIGN] = { "mds", "assign", 2, 2, 0,
			   "mds assign NAME RANK (the leader: a standby takes a rank)" },
	[C_MDS_ACTIVE] = { "mds", "active", 2, 2, 0,
			   "mds active NAME GID (an MDS finished replaying its rank)" },
	[C_MDS_FAIL] = { "mds", "fail", 1, 2, 0, "mds fail NAME [GID]" },
	[C_FS_SET] = { "fs", "set", 2, 2, 0, "fs set max_mds N" },
};

static const char *const reads[][2] = {
	{ "status", NULL }, { "health", NULL }, { "osd", "tree" }, { "osd", "dump" },
	{ "pool", "ls" }, { "mds", "stat" }, { "mon", "stat" },
};

/* Positional word k of o as an integer (num_word) or an OSD id
 * (osd_id_word), rewritten in decimal in argv, and o->pos[k] with it:
 * the word it pointed to may be freed. */
static int
pos_num(char **argv, struct cmd_opts *o, int k, int64_t min, int64_t max,
	int64_t *v)
{
	int rc = num_word(&argv[o->posi[k]], 1, min, max, v);

	o->pos[k] = argv[o->posi[k]];
	return rc;
}

static int
pos_osd(char **argv, struct cmd_opts *o, int k, int64_t *id)
{
	int rc = osd_id_word(&argv[o->posi[k]], 1, id);

	o->pos[k] = argv[o->posi[k]];
	return rc;
}

/* An IP:PORT word (what boots carry). */
static int
addr_ok(const char *w)
{
	return strlen(w) < TSR_OSDMAP_NAME && strchr(w, ':') != NULL &&
	       strpbrk(w, " \t\n\"") == NULL;
}

/* Everything about a change's words that does not depend on the maps,
 * checked where the command is accepted, so that a wrong command is a
 * usage error (-EINVAL) there and never goes into the log; its integers
 * are rewritten in decimal (num_word).  What depends on the maps is
 * checked where the log is applied (change()), with statuses other than
 * -EINVAL. */
static int
check_change(enum chg k, char **argv, struct cmd_opts *o, struct tsr_sbuf *out)
{
	const struct change *c = &changes[k];
	int64_t v, size, min_size;
	double r;

	for (size_t i = 0; i < sizeof(opt_names) / sizeof(opt_names[0]); i++)
		if (o->seen & ~c->opts & (1u << i))
			return FAIL(-EINVAL, "%s %s takes no %s (usage: %s)", c->w0,
				    c->w1, opt_names[i], c->usage);
	switch (k) {
	case C_OSD_ADD:
		if (o->host == NULL)
			return FAIL(-EINVAL, "osd add needs --host HOST (usage: %s)",
				    c->usage);
		if (strcmp(o->host, "default") == 0 ||
		    (o->rack && strcmp(o->rack, "default") == 0))
			return FAIL(-EINVAL, "'default' names the root: a %s may "
				    "not have that name", strcmp(o->host, "default") == 0
				    ? "host" : "rack");
		if (o->rack && strcmp(o->host, o->rack) == 0)
			return FAIL(-EINVAL, "host and rack '%s' may not share a name "
				    "(hosts, racks and the root share one namespace)",
				    o->host);
		if (o->npos == 1 && pos_osd(argv, o, 0, &v) < 0)
			return FAIL(-EINVAL, "'%s' is not an OSD id (0..%d)",
				    o->pos[0], MON_MAX_OSDS - 1);
		return 0;
	case C_OSD_RM: case C_OSD_IN: case C_OSD_OUT: case C_OSD_REWEIGHT:
	case C_OSD_DOWN: case C_OSD_BOOT:
		if (pos_osd(argv, o, 0, &v) < 0)
			return FAIL(-EINVAL, "'%s' is not an OSD id (0..%d)",
				    o->pos[0], MON_MAX_OSDS - 1);
		if (k == C_OSD_REWEIGHT && parse_dbl(o->pos[1], 0, 1, &r) < 0)
			return FAIL(-EINVAL, "reweight '%s': a number in 0..1", o->pos[1]);
		if (k == C_OSD_BOOT && !addr_ok(o->pos[1]))
			return FAIL(-EINVAL, "osd boot: '%s' is not IP:PORT", o->pos[1]);
		return 0;
	case C_OSD_SET: case C_OSD_UNSET:
		if (strcmp(o->pos[0], "noout") != 0)
			return FAIL(-EINVAL, "unknown flag '%s' (noout)", o->pos[0]);
		return 0;
	case C_POOL_CREATE:
		if (!tsr_osdmap_name_ok(o->pos[0]))
			return FAIL(-EINVAL, "pool name '%s': 1 to 63 of letters, "
				    "digits, '-', '_', '.'", o->pos[0]);
		if (o->npos == 2 &&
		    pos_num(argv, o, 1, 1, TSR_OSDMAP_MAX_PG_NUM, &v) < 0)
			return FAIL(-EINVAL, "PG_NUM '%s': a number in 1..%d",
				    o->pos[1], TSR_OSDMAP_MAX_PG_NUM);
		size = o->size > 0 ? o->size : 3;
		min_size = o->min_size > 0 ? o->min_size : size - size / 2;
		if (min_size > size)
			return FAIL(-EINVAL, "min_size %" PRId64 " is above size %"
				    PRId64, min_size, size);
		if (o->redundancy_opts && o->redundancy_opts[0]) {
			/* K=V,K=V: names and printable values, as the map
			 * holds them */
			for (const char *p = o->redundancy_opts; *p;) {
				size_t n = strcspn(p, ","), eq = strcspn(p, "=");
				int bad = eq == 0 || eq >= n;
				for (size_t i = 0; i < n && !bad; i++)
					bad = p[i] < 0x21 || p[i] > 0x7e;
				if (bad)
					return FAIL(-EINVAL, "--redundancy-opts '%s': "
						    "'%.*s' is not KEY=VALUE (printable "
						    "ASCII, no blanks)", o->redundancy_opts,
						    (int)n, p);
				p += n + (p[n] == ',');
				if (p[-1] == ',' && *p == '\0')
					return FAIL(-EINVAL, "--redundancy-opts '%s': "
						    "ends with ','", o->redundancy_opts);
			}
		}
		return 0;
	case C_POOL_SET:
		if (strcmp(o->pos[1], "pg_num") == 0) {
			if (pos_num(argv, o, 2, 1, TSR_OSDMAP_MAX_PG_NUM, &v) < 0)
				return FAIL(-EINVAL, "pg_num: a number in 1..%d",
					    TSR_OSDMAP_MAX_PG_NUM);
		} else if (strcmp(o->pos[1], "size") == 0 ||
			   strcmp(o->pos[1], "min_size") == 0) {
			if (pos_num(argv, o, 2, 1, 16, &v) < 0)
				return FAIL(-EINVAL, "%s: a number in 1..16", o->pos[1]);
		} else if (strcmp(o->pos[1], "rule") == 0) {
			if (pos_num(argv, o, 2, 0, MON_RULES - 1, &v) < 0)
				return FAIL(-EINVAL, "rule: 0 (one copy per host), 1 (per "
					    "rack), 2 (per OSD)");
		} else {
			return FAIL(-EINVAL, "pool set: unknown key '%s' (pg_num, size, "
				    "min_size, rule)", o->pos[1]);
		}
		return 0;
	case C_POOL_RM:
		if (!o->yes)
			return FAIL(-EINVAL, "removing pool '%s' destroys its data: "
				    "add --yes-i-really-mean-it", o->pos[0]);
		return 0;
	case C_MDS_BOOT: case C_MDS_ASSIGN: case C_MDS_ACTIVE: case C_MDS_FAIL:
		if (!tsr_osdmap_name_ok(o->pos[0]))
			return FAIL(-EINVAL, "'%s' is not an MDS name", o->pos[0]);
		if (k == C_MDS_ASSIGN &&
		    pos_num(argv, o, 1, 0, TSR_MDSMAP_MAX_RANKS - 1, &v) < 0)
			return FAIL(-EINVAL, "rank '%s': a number in 0..%d", o->pos[1],
				    TSR_MDSMAP_MAX_RANKS - 1);
		if (k != C_MDS_ASSIGN && o->npos >= 2 &&
		    pos_num(argv, o, 1, 1, INT64_MAX, &v) < 0)
			return FAIL(-EINVAL, "GID '%s': a number above 0", o->pos[1]);
		if (k == C_MDS_BOOT && !addr_ok(o->pos[2]))
			return FAIL(-EINVAL, "mds boot: '%s' is not IP:PORT", o->pos[2]);
		return 0;
	case C_FS_SET:
		if (strcmp(o->pos[0], "max_mds") != 0)
			return FAIL(-EINVAL, "fs set: unknown key '%s' (max_mds)", o->pos[0]);
		if (pos_num(argv, o, 1, 1, TSR_MDSMAP_MAX_RANKS, &v) < 0)
			return FAIL(-EINVAL, "max_mds: a number in 1..%d",
				    TSR_MDSMAP_MAX_RANKS);
		return 0;
	}
	return 0;
}

int
state_classify(int argc, char **argv, struct tsr_sbuf *out)
{
	struct cmd_opts o;
	int32_t failed[MON_MAX_FAILED];
	size_t nfailed;

	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
		if (is(argc, argv, reads[i][0], reads[i][1])) {
			if (argc > (reads[i][1] ? 2 : 1))
				return FAIL(-EINVAL, "unexpected word '%s' after '%s%s%s'",
					    argv[reads[i][1] ? 2 : 1], reads[i][0],
					    reads[i][1] ? " " : "",
					    reads[i][1] ? reads[i][1] : "");
			return 0;
		}
	if (is(argc, argv, "osd", "beacon")) {
		int64_t id;
		const char *usage = "usage: osd beacon ID [--failed ID,ID...]";
		if (parse_opts(argc, argv, 2, 1, &o, out) < 0)
			return -EINVAL;
		if (o.seen & ~(unsigned)O_FAILED)
			return FAIL(-EINVAL, "osd beacon takes no option but --failed (%s)",
				    usage);
		if (o.npos != 1)
			return FAIL(-EINVAL, "%s", usage);
		if (pos_osd(argv, &o, 0, &id) < 0)
			return FAIL(-EINVAL, "'%s' is not an OSD id (0..%d) (%s)", o.pos[0],
				    MON_MAX_OSDS - 1, usage);
		if (o.failed && state_osd_list(o.failed, failed, MON_MAX_FAILED,
					       &nfailed, out) < 0)
			return -EINVAL;
		return 2;
	}
	if (is(argc, argv, "mds", "beacon")) {
		struct mds_beacon b;
		return state_mds_beacon(argc, argv, &b, out) < 0 ? -EINVAL : 3;
	}
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		const struct change *c = &changes[i];
		if (!is(argc, argv, c->w0, c->w1))
			continue;
		if (parse_opts(argc, argv, 2, 1, &o, out) < 0)
			return -EINVAL;
		if (o.npos < c->npos || o.npos > c->maxpos)
			return FAIL(-EINVAL, "usage: %s", c->usage);
		if (check_change((enum chg)i, argv, &o, out) < 0)
			return -EINVAL;
		return 1;
	}
	tsr_sbuf_printf(out, "unknown command '");
	for (int i = 0; i < argc && i < 3; i++)
		tsr_sbuf_printf(out, "%s%s", i ? " " : "", argv[i]);
	tsr_sbuf_printf(out, "'");
	return -EINVAL;
}

int
state_pool_redundancy(int argc, char **argv, const char **plugin, const char **opts)
{
	struct cmd_opts o;
	struct tsr_sbuf none;
	int rc;

	if (!is(argc, argv, "pool", "create"))
		return 0;
	tsr_sbuf_init(&none);
	rc = parse_opts(argc, argv, 2, 0, &o, &none);
	tsr_sbuf_release(&none);
	if (rc < 0)
		return 0;
	*plugin = o.redundancy ? o.redundancy : MON_DEFAULT_REDUNDANCY;
	*opts = o.redundancy_opts ? o.redundancy_opts : "";
	return 1;
}

static int
osd_add(struct mon_state *s, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	int64_t id = -1;
	size_t at;

	if (o->host == NULL)
		return FAIL(-EINVAL, "osd add needs --host HOST");
	if (o->npos == 1) {
		const char *w = o->pos[0];
		if (strncmp(w, "osd.", 4) == 0)
			w += 4;
		if (parse_i64(w, 0, MON_MAX_OSDS - 1, &id) < 0)
			return FAIL(-EINVAL, "'%s' is not an OSD id (0..%d)", o->pos[0],
				    MON_MAX_OSDS - 1);
		if (find_osd(s, id))
			return FAIL(-EEXIST, "osd.%" PRId64 " exists already", id);
	} else {
		for (id = 0; id < MON_MAX_OSDS && find_osd(s, id); id++)
			;
	}
	if (s->osdmap.nosds >= MON_MAX_OSDS)
		return FAIL(-ENOSPC, "the cluster has %d OSDs, the most it may", MON_MAX_OSDS);
	struct tsr_osdmap_osd *v = realloc(s->osdmap.osds, (s->osdmap.nosds + 1) * sizeof(*v));
	if (v == NULL)
		return FAIL(-ENOMEM, "out of memory");
	s->osdmap.osds = v;
	for (at = 0; at < s->osdmap.nosds && s->osdmap.osds[at].id < id; at++)
		;
	memmove(&s->osdmap.osds[at + 1], &s->osdmap.osds[at], (s->osdmap.nosds - at) * sizeof(*v));
	memset(&s->osdmap.osds[at], 0, sizeof(*v));
	s->osdmap.osds[at].id = (int32_t)id;
	snprintf(s->osdmap.osds[at].host, sizeof(s->osdmap.osds[at].host), "%s", o->host);
	if (o->rack)
		snprintf(s->osdmap.osds[at].rack, sizeof(s->osdmap.osds[at].rack), "%s",
			 o->rack);
	s->osdmap.osds[at].weight = o->weight > 0 ? o->weight : 1.0;
	s->osdmap.osds[at].reweight = 1.0;
	s->osdmap.osds[at].in = 1;
	s->osdmap.nosds++;
	s->osdmap.epoch++;
	tsr_sbuf_printf(out, "{\"osd\": %" PRId64 ", \"osdmap_epoch\": %" PRIu64 "}",
			id, s->osdmap.epoch);
	return 0;
}

static int
pool_create(struct mon_state *s, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	int64_t pg_num = 32;
	int64_t size = o->size > 0 ? o->size : 3;
	int64_t min_size = o->min_size > 0 ? o->min_size : size - size / 2;

	if (!tsr_osdmap_name_ok(o->pos[0]))
		return FAIL(-EINVAL, "pool name '%s': 1 to 63 of letters, digits, "
			    "'-', '_', '.'", o->pos[0]);
	if (o->npos == 2 && parse_i64(o->pos[1], 1, 65536, &pg_num) < 0)
		return FAIL(-EINVAL, "PG_NUM '%s': a number in 1..65536", o->pos[1]);
	if (min_size > size)
		return FAIL(-EINVAL, "min_size %" PRId64 " is above size %" PRId64,
			    min_size, size);
	if (tsr_osdmap_pool_by_name(&s->osdmap, o->pos[0]))
		return FAIL(-EEXIST, "pool '%s' exists already", o->pos[0]);
	if (s->osdmap.npools >= TSR_OSDMAP_MAX_POOLS)
		return FAIL(-ENOSPC, "the cluster has %d pools, the most it may",
			    TSR_OSDMAP_MAX_POOLS);
	struct tsr_osdmap_pool *v = realloc(s->osdmap.pools, (s->osdmap.npools + 1) * sizeof(*v));
	if (v == NULL)
		return FAIL(-ENOMEM, "out of memory");
	s->osdmap.pools = v;
	struct tsr_osdmap_pool *p = &s->osdmap.pools[s->osdmap.npools++];
	memset(p, 0, sizeof(*p));
	p->id = s->osdmap.next_pool_id++;
	snprintf(p->name, sizeof(p->name), "%s", o->pos[0]);
	p->pg_num = (uint32_t)pg_num;
	p->size = (uint32_t)size;
	p->min_size = (uint32_t)min_size;
	p->rule = o->rule >= 0 ? (uint32_t)o->rule : 0;
	snprintf(p->redundancy, sizeof(p->redundancy), "%s",
		 o->redundancy ? o->redundancy : MON_DEFAULT_REDUNDANCY);
	snprintf(p->redundancy_opts, sizeof(p->redundancy_opts), "%s",
		 o->redundancy_opts ? o->redundancy_opts : "");
	s->osdmap.epoch++;
	tsr_sbuf_printf(out, "{\"pool\": ");
	tsr_sbuf_json_str(out, p->name);
	tsr_sbuf_printf(out, ", \"id\": %" PRId64 ", \"osdmap_epoch\": %" PRIu64 "}",
			p->id, s->osdmap.epoch);
	return 0;
}

static int
pool_set(struct mon_state *s, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	struct tsr_osdmap_pool *p = tsr_osdmap_pool_by_name(&s->osdmap, o->pos[0]);
	const char *key = o->pos[1];
	int64_t v;

	if (p == NULL)
		return FAIL(-ENOENT, "pool '%s' does not exist", o->pos[0]);
	if (strcmp(key, "pg_num") == 0) {
		if (parse_i64(o->pos[2], 1, 65536, &v) < 0)
			return FAIL(-EINVAL, "pg_num: a number in 1..65536");
		if (v < p->pg_num)
			return FAIL(-EPERM, "pg_num may only grow (PGs split; "
				    "merging is not supported): %u now", p->pg_num);
		p->pg_num = (uint32_t)v;
	} else if (strcmp(key, "size") == 0 || strcmp(key, "min_size") == 0) {
		if (parse_i64(o->pos[2], 1, 16, &v) < 0)
			return FAIL(-EINVAL, "%s: a number in 1..16", key);
		if (key[0] == 's' && v < p->min_size)
			return FAIL(-ERANGE, "size %" PRId64 " is below min_size %u",
				    v, p->min_size);
		if (key[0] == 'm' && v > p->size)
			return FAIL(-ERANGE, "min_size %" PRId64 " is above size %u",
				    v, p->size);
		*(key[0] == 's' ? &p->size : &p->min_size) = (uint32_t)v;
	} else if (strcmp(key, "rule") == 0) {
		if (parse_i64(o->pos[2], 0, MON_RULES - 1, &v) < 0)
			return FAIL(-EINVAL, "rule: 0 (one copy per host), 1 (per "
				    "rack), 2 (per OSD)");
		p->rule = (uint32_t)v;
	} else {
		return FAIL(-EINVAL, "pool set: unknown key '%s' (pg_num, size, "
			    "min_size, rule)", key);
	}
	s->osdmap.epoch++;
	tsr_sbuf_printf(out, "{\"pool\": ");
	tsr_sbuf_json_str(out, p->name);
	tsr_sbuf_printf(out, ", \"%s\": %" PRId64 ", \"osdmap_epoch\": %" PRIu64 "}",
			key, v, s->osdmap.epoch);
	return 0;
}

/* ---- The MDS map ----------------------------------------------------------*/

int
state_mds_beacon(int argc, char **argv, struct mds_beacon *b, struct tsr_sbuf *out)
{
	int64_t gid;

	memset(b, 0, sizeof(*b));
	if (argc != 6 || !tsr_osdmap_name_ok(argv[2]) ||
	    parse_i64(argv[3], 1, INT64_MAX, &gid) < 0 ||
	    strlen(argv[4]) >= sizeof(b->addr) || strchr(argv[4], ':') == NULL)
		return FAIL(-EINVAL, "usage: mds beacon NAME GID IP:PORT "
			    "standby|replay|active");
	for (uint32_t st = 0; st < TSR_MDS_STATE_COUNT; st++)
		if (strcmp(argv[5], tsr_mds_state_name(st)) == 0)
			b->state = (int)st + 1;
	if (b->state-- == 0)
		return FAIL(-EINVAL, "mds beacon: unknown state '%s'", argv[5]);
	snprintf(b->name, sizeof(b->name), "%s", argv[2]);
	snprintf(b->addr, sizeof(b->addr), "%s", argv[4]);
	b->gid = (uint64_t)gid;
	return 0;
}

static int
cmp_mds_name(const void *a, const void *b)
{
	return strcmp(((const struct tsr_mdsmap_mds *)a)->name,
		      ((const struct tsr_mdsmap_mds *)b)->name);
}

static void
mds_json(const struct tsr_mdsmap *m, const struct tsr_mdsmap_mds *d,
	 struct tsr_sbuf *out)
{
	tsr_sbuf_printf(out, "{\"mds\": ");
	tsr_sbuf_json_str(out, d ? d->name : "");
	tsr_sbuf_printf(out, ", \"gid\": %" PRIu64 ", \"rank\": %d, \"state\": \"%s\", "
			"\"mdsmap_epoch\": %" PRIu64 "}", d ? d->gid : 0, d ? d->rank : -1,
			d ? tsr_mds_state_name(d->state) : "gone", m->epoch);
}

/* The MDS map's changes.  Boot: NAME's new incarnation (GID) stands by;
 * an older one is replaced, and the rank it held is vacant.  Assign: a
 * standby takes a vacant rank and replays it.  Active: it finished.
 * Fail: NAME (that GID, when given: a stale report about an older
 * incarnation is ignored) leaves the map; its rank is vacant. */
static int
mds_change(struct mon_state *s, const struct cmd_opts *o, const char *verb,
	   struct tsr_sbuf *out)
{
	struct tsr_mdsmap *m = &s->mdsmap;
	struct tsr_mdsmap_mds *d;
	int64_t gid = 0, rank;

	if (strcmp(verb, "set") == 0) { /* fs set max_mds N */
		if (strcmp(o->pos[0], "max_mds") != 0)
			return FAIL(-EINVAL, "fs set: unknown key '%s' (max_mds)", o->pos[0]);
		if (parse_i64(o->pos[1], 1, TSR_MDSMAP_MAX_RANKS, &rank) < 0)
			return FAIL(-EINVAL, "max_mds: a number in 1..%d",
				    TSR_MDSMAP_MAX_RANKS);
		/* ranks beyond the new count: their holders stand by */
		for (size_t i = 0; i < m->nmds; i++)
			if (m->mds[i].rank >= rank) {
				m->mds[i].rank = -1;
				m->mds[i].state = TSR_MDS_STANDBY;
			}
		m->max_mds = (uint32_t)rank;
		m->epoch++;
		tsr_sbuf_printf(out, "{\"max_mds\": %" PRId64 ", \"mdsmap_epoch\": %"
				PRIu64 "}", rank, m->epoch);
		return 0;
	}
	if (!tsr_osdmap_name_ok(o->pos[0]))
		return FAIL(-EINVAL, "'%s' is not an MDS name", o->pos[0]);
	d = tsr_mdsmap_find(m, o->pos[0]);
	if (strcmp(verb, "boot") == 0) {
		if (parse_i64(o->pos[1], 1, INT64_MAX, &gid) < 0 ||
		    strlen(o->pos[2]) >= TSR_MDSMAP_NAME || strchr(o->pos[2], ':') == NULL)
			return FAIL(-EINVAL, "mds boot NAME GID IP:PORT");
		if (d && d->gid == (uint64_t)gid) {
			mds_json(m, d, out);
			return 0;
		}
		if (d == NULL) {
			if (m->nmds >= TSR_MDSMAP_MAX_MDS)
				return FAIL(-ENOSPC, "the MDS map holds %d MDSs, the most "
					    "it may", TSR_MDSMAP_MAX_MDS);
			struct tsr_mdsmap_mds *v = realloc(m->mds, (m->nmds + 1) * sizeof(*v));
			if (v == NULL)
				return FAIL(-ENOMEM, "out of memory");
			m->mds = v;
			d = &m->mds[m->nmds++];
		}
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s", o->pos[0]);
		snprintf(d->addr, sizeof(d->addr), "%s", o->pos[2]);
		d->gid = (uint64_t)gid;
		d->rank = -1;
		d->state = TSR_MDS_STANDBY;
		qsort(m->mds, m->nmds, sizeof(*m->mds), cmp_mds_name);
		m->epoch++;
		mds_json(m, tsr_mdsmap_find(m, o->pos[0]), out);
		return 0;
	}
	if (d == NULL)
		return FAIL(-ENOENT, "mds.%s is not in the MDS map", o->pos[0]);
	if (strcmp(verb, "fail") == 0) {
		if (o->npos == 2 && (parse_i64(o->pos[1], 1, INT64_MAX, &gid) < 0 ||
				     (uint64_t)gid != d->gid))
			return FAIL(-ESTALE, "mds.%s is another incarnation now (gid %"
				    PRIu64 ")", d->name, d->gid);
		size_t at = (size_t)(d - m->mds);
		int32_t r = d->rank;
		memmove(d, d + 1, (m->nmds - at - 1) * sizeof(*d));
		m->nmds--;
		m->epoch++;
		tsr_sbuf_printf(out, "{\"failed\": ");
		tsr_sbuf_json_str(out, o->pos[0]);
		tsr_sbuf_printf(out, ", \"vacant_rank\": %d, \"mdsmap_epoch\": %" PRIu64 "}",
				r, m->epoch);
		return 0;
	}
	if (strcmp(verb, "assign") == 0) {
		if (parse_i64(o->pos[1], 0, TSR_MDSMAP_MAX_RANKS - 1, &rank) < 0)
			return FAIL(-EINVAL, "rank '%s': a number in 0..%d", o->pos[1],
				    TSR_MDSMAP_MAX_RANKS - 1);
		if (rank >= m->max_mds)
			return FAIL(-ERANGE, "rank %" PRId64 ": max_mds is %u", rank,
				    m->max_mds);
		if (d->state != TSR_MDS_STANDBY)
			return FAIL(-EBUSY, "mds.%s holds rank %d already", d->name, d->rank);
		if (tsr_mdsmap_rank(m, (int32_t)rank))
			return FAIL(-EBUSY, "rank %" PRId64 " is held by mds.%s", rank,
				    tsr_mdsmap_rank(m, (int32_t)rank)->name);
		d->rank = (int32_t)rank;
		d->state = TSR_MDS_REPLAY;
		m->epoch++;
		mds_json(m, d, out);
		return 0;
	}
	/* active */
	if (parse_i64(o->pos[1], 1, INT64_MAX, &gid) < 0 || (uint64_t)gid != d->gid)
		return FAIL(-ESTALE, "mds.%s is another incarnation now (gid %" PRIu64 ")",
			    d->name, d->gid);
	if (d->state != TSR_MDS_REPLAY) {
		if (d->state == TSR_MDS_ACTIVE) {
			mds_json(m, d, out);
			return 0;
		}
		return FAIL(-ESTALE, "mds.%s holds no rank to be active in", d->name);
	}
	d->state = TSR_MDS_ACTIVE;
	m->epoch++;
	mds_json(m, d, out);
	return 0;
}

static int
change(struct mon_state *s, int argc, char **argv, struct tsr_sbuf *out)
{
	struct cmd_opts o;
	struct tsr_osdmap_osd *osd;
	int rc;

	if ((rc = parse_opts(argc, argv, 2, 0, &o, out)) < 0)
		return rc;
	if (is(argc, argv, "osd", "add"))
		return osd_add(s, &o, out);
	if (is(argc, argv, "pool", "create"))
		return pool_create(s, &o, out);
	if (is(argc, argv, "pool", "set"))
		return pool_set(s, &o, out);
	if (strcmp(argv[0], "mds") == 0 || strcmp(argv[0], "fs") == 0)
		return mds_change(s, &o, argv[1], out);
	if (is(argc, argv, "pool", "rm")) {
		struct tsr_osdmap_pool *p = tsr_osdmap_pool_by_name(&s->osdmap, o.pos[0]);
		if (!o.yes)
			return FAIL(-EINVAL, "removing pool '%s' destroys its data: "
				    "add --yes-i-really-mean-it", o.pos[0]);
		if (p == NULL)
			return FAIL(-ENOENT, "pool '%s' does not exist", o.pos[0]);
		size_t at = (size_t)(p - s->osdmap.pools);
		memmove(p, p + 1, (s->osdmap.npools - at - 1) * sizeof(*p));
		s->osdmap.npools--;
		s->osdmap.epoch++;
		tsr_sbuf_printf(out, "{\"removed\": ");
		tsr_sbuf_json_str(out, o.pos[0]);
		tsr_sbuf_printf(out, ", \"osdmap_epoch\": %" PRIu64 "}", s->osdmap.epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "set") || is(argc, argv, "osd", "unset")) {
		if (strcmp(o.pos[0], "noout") != 0)
			return FAIL(-EINVAL, "unknown flag '%s' (noout)", o.pos[0]);
		if (argv[1][0] == 's')
			s->osdmap.flags |= TSR_OSDMAP_NOOUT;
		else
			s->osdmap.flags &= ~TSR_OSDMAP_NOOUT;
		s->osdmap.epoch++;
		tsr_sbuf_printf(out, "{\"noout\": %s, \"osdmap_epoch\": %" PRIu64 "}",
				s->osdmap.flags & TSR_OSDMAP_NOOUT ? "true" : "false", s->osdmap.epoch);
		return 0;
	}
	if ((rc = osd_arg(s, o.pos[0], &osd, out)) < 0)
		return rc;
	if (is(argc, argv, "osd", "rm")) {
		if (osd->up)
			return FAIL(-EBUSY, "osd.%d is up: stop it first", osd->id);
		int32_t id = osd->id;
		size_t at = (size_t)(osd - s->osdmap.osds);
		memmove(osd, osd + 1, (s->osdmap.nosds - at - 1) * sizeof(*osd));
		s->osdmap.nosds--;
		s->osdmap.epoch++;
		tsr_sbuf_printf(out, "{\"removed\": %d, \"osdmap_epoch\": %" PRIu64 "}",
				id, s->osdmap.epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "boot")) {
		if (strlen(o.pos[1]) >= sizeof(osd->addr) || strchr(o.pos[1], ':') == NULL)
			return FAIL(-EINVAL, "osd boot: '%s' is not IP:PORT", o.pos[1]);
		if (osd->up && strcmp(osd->addr, o.pos[1]) == 0) {
			tsr_sbuf_printf(out, "{\"osd\": %d, \"up\": true, \"osdmap_epoch\": %"
					PRIu64 "}", osd->id, s->osdmap.epoch);
			return 0;
		}
		osd->up = 1;
		snprintf(osd->addr, sizeof(osd->addr), "%s", o.pos[1]);
		if (osd->auto_out) {
			/* the monitors took it out; back it comes */
			osd->in = 1;
			osd->auto_out = 0;
		}
		osd->up_from = ++s->osdmap.epoch;
		tsr_sbuf_printf(out, "{\"osd\": %d, \"up\": true, \"osdmap_epoch\": %"
				PRIu64 "}", osd->id, s->osdmap.epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "down")) {
		if (osd->up) {
			osd->up = 0;
			s->osdmap.epoch++;
		}
		tsr_sbuf_printf(out, "{\"osd\": %d, \"up\": false, \"osdmap_epoch\": %"
				PRIu64 "}", osd->id, s->osdmap.epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "in") || is(argc, argv, "osd", "out")) {
		osd->in = argv[1][0] == 'i';
		osd->auto_out = !osd->in && o.autom;
	} else { /* reweight */
		double r;
		if (parse_dbl(o.pos[1], 0, 1, &r) < 0)
			return FAIL(-EINVAL, "reweight '%s': a number in 0..1", o.pos[1]);
		osd->reweight = r;
	}
	s->osdmap.epoch++;
	tsr_sbuf_printf(out, "{\"osd\": %d, \"in\": %s, \"reweight\": %g, "
			"\"osdmap_epoch\": %" PRIu64 "}", osd->id,
			osd->in ? "true" : "false", osd->reweight, s->osdmap.epoch);
	return 0;
}

/* Keep the encoded incremental that made epoch e. */
static void
incs_put(struct mon_incs *r, uint64_t e, struct tsr_enc *enc)
{
	size_t at = e % MON_INC_KEEP;

	free(r->data[at]);
	r->data[at] = NULL;
	r->epoch[at] = 0;
	if (tsr_enc_error(enc)) {
		tsr_enc_release(enc);
		return; /* out of memory: subscribers get the full map */
	}
	r->data[at] = tsr_enc_take(enc, &r->len[at]);
	r->epoch[at] = e;
}

const uint8_t *
state_inc(const struct mon_state *s, int which, uint64_t e, size_t *len)
{
	const struct mon_incs *r = which ? &s->mds_incs : &s->osd_incs;
	size_t at = e % MON_INC_KEEP;

	if (r->epoch[at] != e || r->data[at] == NULL)
		return NULL;
	*len = r->len[at];
	return r->data[at];
}

/* ---- The placement map ----------------------------------------------------
 *
 * The OSD map carries the placement plugin's binary map, made from the
 * OSDs' hosts and racks whenever they change: a root "default" (bucket
 * -1); the racks, by name (-2, -3, ...); the hosts, by name, each under
 * its rack or the root; each OSD under its host with its weight in 16.16
 * fixed point.  Rules: 0 "host" (one copy per host), 1 "rack" (one per
 * rack; only while some OSD is in a rack), 2 "osd" (one per OSD).  The
 * plugin's encoding is deterministic (placement.h), so every monitor
 * makes the same bytes.  Up/down, in/out and reweight are not in it: they
 * go to map() as weights. */

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct non-empty names of the OSDs' racks (rack) or hosts, sorted
 * (malloc'd array of pointers into the map). */
static const char **
distinct(const struct tsr_osdmap *m, int rack, size_t *n)
{
	const char **v = tsr_xcalloc(m->nosds ? m->nosds : 1, sizeof(*v));
	size_t k = 0;

	for (size_t i = 0; i < m->nosds; i++) {
		const char *x = rack ? m->osds[i].rack : m->osds[i].host;
		if (*x)
			v[k++] = x;
	}
	qsort(v, k, sizeof(*v), cmp_str);
	*n = 0;
	for (size_t i = 0; i < k; i++)
		if (*n == 0 || strcmp(v[*n - 1], v[i]) != 0)
			v[(*n)++] = v[i];
	return v;
}

static int32_t
index_of(const char **v, size_t n, const char *x)
{
	const char **p = bsearch(&x, v, n, sizeof(*v), cmp_str);

	return p ? (int32_t)(p - v) : -1;
}

/* Did the OSDs' ids, hosts, racks or weights change from a to b? */
static int
topology_changed(const struct tsr_osdmap *a, const struct tsr_osdmap *b)
{
	if (a->nosds != b->nosds || strcmp(a->placement, b->placement) != 0)
		return 1;
	for (size_t i = 0; i < a->nosds; i++)
		if (a->osds[i].id != b->osds[i].id ||
		    strcmp(a->osds[i].host, b->osds[i].host) != 0 ||
		    strcmp(a->osds[i].rack, b->osds[i].rack) != 0 ||
		    a->osds[i].weight != b->osds[i].weight)
			return 1;
	return 0;
}

static int
placement_refresh(struct mon_state *s, struct tsr_sbuf *out)
{
	static const char *const types[] = { "osd", "host", "rack", "root" };
	struct tsr_osdmap *m = &s->osdmap;
	size_t nr, nh, ni = 0, nrules = 0;
	const char **racks, **hosts;
	struct tsr_topo_item *items;
	struct tsr_topo_rule rules[MON_RULES];
	char (*names)[TSR_OSDMAP_NAME + 8];
	int32_t *host_rack;
	char err[512] = "";
	int rc = 0;

	if (s->placer.encode == NULL)
		return 0;
	if (m->nosds == 0) {
		free(m->pmap);
		m->pmap = NULL;
		m->pmap_len = 0;
		return 0;
	}
	racks = distinct(m, 1, &nr);
	hosts = distinct(m, 0, &nh);
	items = tsr_xcalloc(1 + nr + nh + m->nosds, sizeof(*items));
	names = tsr_xcalloc(m->nosds, sizeof(*names));
	host_rack = tsr_xcalloc(nh, sizeof(*host_rack));
	/* a host is in one rack: its OSDs must agree */
	for (size_t h = 0; h < nh; h++)
		host_rack[h] = -1;
	for (size_t i = 0; i < m->nosds && rc == 0; i++) {
		const struct tsr_osdmap_osd *o = &m->osds[i];
		int32_t h = index_of(hosts, nh, o->host);
		int32_t r = o->rack[0] ? index_of(racks, nr, o->rack) : -1;
		if (host_rack[h] == -1)
			host_rack[h] = r == -1 ? -2 : r;
		else if (host_rack[h] != (r == -1 ? -2 : r))
			rc = FAIL(-EEXIST, "host '%s' would be in two racks: osd.%d "
				  "says '%s'", o->host, o->id, o->rack[0] ? o->rack
				  : "(none)");
	}
	/* one namespace for buckets: say so before the plugin does */
	for (size_t h = 0; h < nh && rc == 0; h++)
		if (index_of(racks, nr, hosts[h]) >= 0 || strcmp(hosts[h], "default") == 0)
			rc = FAIL(-EEXIST, "host '%s' has the name of a %s; hosts, "
				  "racks and the root share one namespace", hosts[h],
				  strcmp(hosts[h], "default") == 0 ? "root" : "rack");
	for (size_t r = 0; r < nr && rc == 0; r++)
		if (strcmp(racks[r], "default") == 0)
			rc = FAIL(-EEXIST, "rack 'default' has the name of the root");
	if (rc == 0) {
		items[ni++] = (struct tsr_topo_item){ -1, 0, 3, 0, "default" };
		for (size_t r = 0; r < nr; r++)
			items[ni++] = (struct tsr_topo_item){ -2 - (int32_t)r, -1, 2, 0,
							      racks[r] };
		for (size_t h = 0; h < nh; h++)
			items[ni++] = (struct tsr_topo_item){
				-2 - (int32_t)nr - (int32_t)h,
				host_rack[h] >= 0 ? -2 - host_rack[h] : -1, 1, 0, hosts[h] };
		for (size_t i = 0; i < m->nosds; i++) {
			const struct tsr_osdmap_osd *o = &m->osds[i];
			double w = o->weight * TSR_WEIGHT_ONE + 0.5;
			snprintf(names[i], sizeof(names[i]), "osd.%d", o->id);
			items[ni++] = (struct tsr_topo_item){
				o->id, -2 - (int32_t)nr - index_of(hosts, nh, o->host), 0,
				w < 1 ? 1 : (uint32_t)w, names[i] };
		}
		rules[nrules++] = (struct tsr_topo_rule){ MON_RULE_HOST, "host", -1, 1,
							  TSR_RULE_CHOOSELEAF };
		if (nr)
			rules[nrules++] = (struct tsr_topo_rule){ MON_RULE_RACK, "rack",
								  -1, 2,
								  TSR_RULE_CHOOSELEAF };
		rules[nrules++] = (struct tsr_topo_rule){ MON_RULE_OSD, "osd", -1, 0,
							  TSR_RULE_CHOOSE };
		struct tsr_topology t = { 4, types, (uint32_t)ni, items,
					  (uint32_t)nrules, rules };
		void *blob = NULL;
		size_t len = 0;
		rc = s->placer.encode(s->placer.arg, m->placement, &t, &blob, &len, err,
				      sizeof(err));
		if (rc == 0) {
			free(m->pmap);
			m->pmap = blob;
			m->pmap_len = len;
		} else if (rc == -EINVAL) {
			rc = FAIL(-EOPNOTSUPP, "the placement plugin '%s' refuses the "
				  "topology: %s", m->placement, err);
		} else {
			s->fatal = 1;
			rc = FAIL(-EIO, "this monitor cannot make the placement map: "
				  "%s", err);
		}
	}
	free(racks);
	free(hosts);
	free(items);
	free(names);
	free(host_rack);
	return rc;
}

/* Run a change and keep what it changed as the incremental of each map
 * whose epoch it moved.  A change moves an epoch by one at most. */
static int
apply_change(struct mon_state *s, int argc, char **argv, struct tsr_sbuf *out)
{
	struct tsr_osdmap oprev;
	struct tsr_mdsmap mprev;
	int rc, have_o, have_m, rolled_o = 0, rolled_m = 0;

	have_o = tsr_osdmap_copy(&oprev, &s->osdmap) == 0;
	have_m = tsr_mdsmap_copy(&mprev, &s->mdsmap) == 0;
	rc = change(s, argc, argv, out);
	if (rc == 0 && have_o && have_m) {
		/* Whatever a command let through, the maps it leaves must be
		 * ones every holder accepts (an address with a blank, an
		 * option with a control byte would make every subscriber
		 * refuse every map from here on): the same check on every
		 * monitor, so a refusal is the log's outcome everywhere. */
		char why[256];
		if (tsr_osdmap_check(&s->osdmap, why, sizeof(why)) < 0 ||
		    tsr_mdsmap_check(&s->mdsmap, why, sizeof(why)) < 0) {
			tsr_osdmap_free(&s->osdmap);
			tsr_mdsmap_free(&s->mdsmap);
			s->osdmap = oprev;
			s->mdsmap = mprev;
			rolled_o = rolled_m = 1;
			tsr_sbuf_reset(out);
			rc = FAIL(-EBADMSG, "refused: the map would not be valid: %s", why);
		}
	}
	if (rc == 0 && (!have_o || topology_changed(&oprev, &s->osdmap))) {
		struct tsr_sbuf why;
		tsr_sbuf_init(&why);
		if ((rc = placement_refresh(s, &why)) < 0 && have_o) {
			/* the change cannot be placed: it never happened */
			tsr_osdmap_free(&s->osdmap);
			s->osdmap = oprev;
			rolled_o = 1;
			tsr_sbuf_reset(out);
			tsr_sbuf_printf(out, "%s", tsr_sbuf_str(&why));
		} else if (rc < 0) {
			s->fatal = 1; /* out of memory: cannot undo it */
		}
		tsr_sbuf_release(&why);
	}
	/* without the copy (out of memory) the incremental is lost, not
	 * wrong: a subscriber gets the full map instead */
	if (!rolled_o && (!have_o || s->osdmap.epoch != oprev.epoch)) {
		struct tsr_osdmap_inc inc;
		struct tsr_enc e;

		tsr_enc_init(&e);
		if (have_o && tsr_osdmap_diff(&oprev, &s->osdmap, &inc) == 0) {
			tsr_osdmap_inc_encode(&e, &inc);
			tsr_osdmap_inc_free(&inc);
		} else {
			e.err = -ENOMEM;
		}
		incs_put(&s->osd_incs, s->osdmap.epoch, &e);
	}
	if (!rolled_m && (!have_m || s->mdsmap.epoch != mprev.epoch)) {
		struct tsr_mdsmap_inc inc;
		struct tsr_enc e;

		tsr_enc_init(&e);
		if (have_m && tsr_mdsmap_diff(&mprev, &s->mdsmap, &inc) == 0) {
			tsr_mdsmap_inc_encode(&e, &inc);
			tsr_mdsmap_inc_free(&inc);
		} else {
			e.err = -ENOMEM;
		}
		incs_put(&s->mds_incs, s->mdsmap.epoch, &e);
	}
	if (have_o && !rolled_o)
		tsr_osdmap_free(&oprev);
	if (have_m && !rolled_m)
		tsr_mdsmap_free(&mprev);
	return rc;
}

int
state_apply(struct mon_state *s, uint64_t client, uint64_t tid, int argc,
	    char **argv, struct tsr_sbuf *out)
{
	struct mon_session *ses = NULL;
	int rc;

	s->applied++;
	for (size_t i = 0; i < s->nsessions; i++)
		if (s->sessions[i].client == client)
			ses = &s->sessions[i];
	if (ses && tid <= ses->tid) {
		if (tid < ses->tid)
			return FAIL(-ESTALE, "an older request of this client, "
				    "superseded");
		tsr_sbuf_printf(out, "%s", ses->text ? ses->text : "");
		return ses->status;
	}
	rc = apply_change(s, argc, argv, out);
	if (ses == NULL) {
		/* the oldest session gives way: a client silent for 1024
		 * other clients' changes gets no dedup any more */
		ses = &s->sessions[s->next_session];
		s->next_session = (s->next_session + 1) % MON_SESSIONS;
		if (s->nsessions < MON_SESSIONS)
			s->nsessions++;
	}
	free(ses->text);
	ses->client = client;
	ses->tid = tid;
	ses->status = rc;
	ses->text = strdup(tsr_sbuf_str(out));
	return rc;
}

/* ---- Reads ---------------------------------------------------------------*/

int
state_health(const struct mon_state *s, struct tsr_sbuf *out)
{
	size_t down = 0, out_n = 0, in = 0;
	int level = 0, first = 1;

	for (size_t i = 0; i < s->osdmap.nosds; i++) {
		down += !s->osdmap.osds[i].up;
		out_n += !s->osdmap.osds[i].in;
		in += s->osdmap.osds[i].in;
	}
#define REASON(lvl, ...)                                                       \
	do {                                                                   \
		char r_[160];                                                  \
		snprintf(r_, sizeof(r_), __VA_ARGS__);                         \
		tsr_sbuf_printf(out, "%s", first ? "" : ", ");                 \
		tsr_sbuf_json_str(out, r_);                                    \
		first = 0;                                                     \
		if ((lvl) > level)                                             \
			level = (lvl);                                         \
	} while (0)
	if (s->osdmap.nosds == 0)
		REASON(1, "no OSDs in the cluster");
	if (down)
		REASON(1, "%zu of %zu OSDs down", down, s->osdmap.nosds);
	if (out_n)
		REASON(1, "%zu of %zu OSDs out", out_n, s->osdmap.nosds);
	if (s->osdmap.flags & TSR_OSDMAP_NOOUT)
		REASON(1, "noout flag set");
	/* ranks without an MDS, once MDSs exist: that share of the
	 * namespace does not answer */
	for (uint32_t r = 0; s->mdsmap.nmds && r < s->mdsmap.max_mds; r++)
		if (tsr_mdsmap_rank(&s->mdsmap, (int32_t)r) == NULL)
			REASON(1, "rank %u of file system '%s' has no MDS", r,
			       s->mdsmap.fs_name);
	for (size_t i = 0; i < s->osdmap.npools; i++)
		if (s->osdmap.nosds && s->osdmap.pools[i].min_size > in)
			REASON(2, "pool '%s' needs %u OSDs in (min_size), %zu are",
			       s->osdmap.pools[i].name, s->osdmap.pools[i].min_size, in);
#undef REASON
	return level;
}

static void
osd_json(const struct tsr_osdmap_osd *o, struct tsr_sbuf *out)
{
	tsr_sbuf_printf(out, "{\"id\": %d, \"host\": ", o->id);
	tsr_sbuf_json_str(out, o->host);
	tsr_sbuf_printf(out, ", \"rack\": ");
	tsr_sbuf_json_str(out, o->rack);
	tsr_sbuf_printf(out, ", \"addr\": ");
	tsr_sbuf_json_str(out, o->addr);
	tsr_sbuf_printf(out, ", \"weight\": %g, \"reweight\": %g, \"up\": %s, "
			"\"in\": %s}", o->weight, o->reweight, o->up ? "true" : "false",
			o->in ? "true" : "false");
}

int
state_read(const struct mon_state *s, int argc, char **argv, struct tsr_sbuf *out)
{
	if (is(argc, argv, "osd", "tree") || is(argc, argv, "osd", "dump")) {
		/* hosts in order of first appearance by OSD id */
		tsr_sbuf_printf(out, "{\"osdmap_epoch\": %" PRIu64 ", \"noout\": %s, "
				"\"hosts\": [", s->osdmap.epoch,
				s->osdmap.flags & TSR_OSDMAP_NOOUT ? "true" : "false");
		int firsth = 1;
		for (size_t i = 0; i < s->osdmap.nosds; i++) {
			int seen = 0;
			for (size_t j = 0; j < i && !seen; j++)
				seen = strcmp(s->osdmap.osds[j].host, s->osdmap.osds[i].host) == 0;
			if (seen)
				continue;
			double w = 0;
			for (size_t j = i; j < s->osdmap.nosds; j++)
				if (strcmp(s->osdmap.osds[j].host, s->osdmap.osds[i].host) == 0)
					w += s->osdmap.osds[j].weight;
			tsr_sbuf_printf(out, "%s\n  {\"host\": ", firsth ? "" : ",");
			tsr_sbuf_json_str(out, s->osdmap.osds[i].host);
			tsr_sbuf_printf(out, ", \"rack\": ");
			tsr_sbuf_json_str(out, s->osdmap.osds[i].rack);
			tsr_sbuf_printf(out, ", \"weight\": %g, \"osds\": [", w);
			int firsto = 1;
			for (size_t j = i; j < s->osdmap.nosds; j++)
				if (strcmp(s->osdmap.osds[j].host, s->osdmap.osds[i].host) == 0) {
					tsr_sbuf_printf(out, "%s", firsto ? "" : ", ");
					osd_json(&s->osdmap.osds[j], out);
					firsto = 0;
				}
			tsr_sbuf_printf(out, "]}");
			firsth = 0;
		}
		tsr_sbuf_printf(out, "]}");
		return 0;
	}
	if (is(argc, argv, "pool", "ls")) {
		tsr_sbuf_printf(out, "{\"osdmap_epoch\": %" PRIu64 ", \"pools\": [",
				s->osdmap.epoch);
		for (size_t i = 0; i < s->osdmap.npools; i++) {
			const struct tsr_osdmap_pool *p = &s->osdmap.pools[i];
			tsr_sbuf_printf(out, "%s\n  {\"id\": %" PRId64 ", \"name\": ",
					i ? "," : "", p->id);
			tsr_sbuf_json_str(out, p->name);
			tsr_sbuf_printf(out, ", \"pg_num\": %u, \"size\": %u, "
					"\"min_size\": %u, \"rule\": %u, \"redundancy\": ",
					p->pg_num, p->size, p->min_size, p->rule);
			tsr_sbuf_json_str(out, p->redundancy);
			tsr_sbuf_printf(out, ", \"redundancy_opts\": ");
			tsr_sbuf_json_str(out, p->redundancy_opts);
			tsr_sbuf_printf(out, "}");
		}
		tsr_sbuf_printf(out, "]}");
		return 0;
	}
	if (is(argc, argv, "mds", "stat")) {
		const struct tsr_mdsmap *m = &s->mdsmap;
		tsr_sbuf_printf(out, "{\"mdsmap_epoch\": %" PRIu64 ", \"fs_name\": ",
				m->epoch);
		tsr_sbuf_json_str(out, m->fs_name);
		tsr_sbuf_printf(out, ", \"max_mds\": %u, \"ranks\": [", m->max_mds);
		for (uint32_t r = 0; r < m->max_mds; r++) {
			const struct tsr_mdsmap_mds *d = tsr_mdsmap_rank(m, (int32_t)r);
			tsr_sbuf_printf(out, "%s{\"rank\": %u, \"state\": ", r ? ", " : "", r);
			tsr_sbuf_json_str(out, d ? tsr_mds_state_name(d->state) : "vacant");
			tsr_sbuf_printf(out, ", \"mds\": ");
			tsr_sbuf_json_str(out, d ? d->name : "");
			tsr_sbuf_printf(out, ", \"addr\": ");
			tsr_sbuf_json_str(out, d ? d->addr : "");
			tsr_sbuf_printf(out, "}");
		}
		tsr_sbuf_printf(out, "], \"standbys\": [");
		int first = 1;
		for (size_t i = 0; i < m->nmds; i++)
			if (m->mds[i].rank < 0) {
				tsr_sbuf_printf(out, "%s{\"mds\": ", first ? "" : ", ");
				tsr_sbuf_json_str(out, m->mds[i].name);
				tsr_sbuf_printf(out, ", \"addr\": ");
				tsr_sbuf_json_str(out, m->mds[i].addr);
				tsr_sbuf_printf(out, "}");
				first = 0;
			}
		tsr_sbuf_printf(out, "]}");
		return 0;
	}
	return FAIL(-EINVAL, "not a read: '%s'", argc ? argv[0] : "");
}

uint8_t *
state_entry_encode(uint64_t client, uint64_t tid, int argc, char **argv,
		   size_t *len)
{
	struct tsr_mon_cmd c = { .client = client, .tid = tid,
				 .argc = (uint32_t)argc, .argv = argv };
	struct tsr_enc e;

	tsr_enc_init(&e);
	if (tsr_monmsg_cmd_encode(&e, &c) < 0) {
		tsr_enc_release(&e);
		return NULL;
	}
	return tsr_enc_take(&e, len);
}

int
state_entry_decode(const void *p, size_t len, struct tsr_mon_cmd *cmd)
{
	char err[128];

	return tsr_monmsg_cmd_decode(p, len, cmd, err, sizeof(err)) < 0 ? -EBADMSG : 0;
}

/* ---- Snapshots -----------------------------------------------------------
 *
 *   envelope v2 { u64 applied,
 *                 osdmap (osdmap.h), mdsmap (mdsmap.h),
 *                 u32 n, n x { u64 client, u64 tid, i32 status,
 *                              bytes text },
 *                 u32 next_session }
 *
 * Version 1 (maps of the monitor's own) is not read: compat is 2.
 */

uint8_t *
state_encode(const struct mon_state *s, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 2, 2);
	tsr_enc_u64(&e, s->applied);
	tsr_osdmap_encode(&e, &s->osdmap);
	tsr_mdsmap_encode(&e, &s->mdsmap);
	tsr_enc_u32(&e, (uint32_t)s->nsessions);
	for (size_t i = 0; i < s->nsessions; i++) {
		const struct mon_session *ss = &s->sessions[i];
		tsr_enc_u64(&e, ss->client);
		tsr_enc_u64(&e, ss->tid);
		tsr_enc_i32(&e, ss->status);
		tsr_enc_bytes(&e, ss->text, ss->text ? strlen(ss->text) : 0);
	}
	tsr_enc_u32(&e, (uint32_t)s->next_session);
	tsr_enc_end_struct(&e, m);
	if (tsr_enc_error(&e)) {
		tsr_enc_release(&e);
		return NULL;
	}
	return tsr_enc_take(&e, len);
}

/* Decode the map (OSD: which = 0, MDS: 1) that comes next in d and step
 * over it: a map is one envelope, so its header gives its extent. */
static void
decode_map(struct tsr_dec *d, int which, struct mon_state *s)
{
	struct tsr_dec probe = *d, sub;
	uint8_t v;
	size_t before = tsr_dec_remaining(d);
	char err[160];

	if (tsr_dec_begin_struct(&probe, 255, &v, &sub) < 0) {
		tsr_dec_fail(d, -EBADMSG);
		return;
	}
	size_t n = before - tsr_dec_remaining(&probe);
	int rc = which ? tsr_mdsmap_decode(d->p, n, &s->mdsmap, err, sizeof(err))
		       : tsr_osdmap_decode(d->p, n, &s->osdmap, err, sizeof(err));
	if (rc < 0) {
		tsr_dec_fail(d, -EBADMSG);
		return;
	}
	*d = probe;
}

int
state_decode(struct mon_state *out, const void *p, size_t len)
{
	struct mon_state s;
	struct tsr_dec d, sub;
	uint8_t ver;
	uint32_t n;

	memset(&s, 0, sizeof(s));
	tsr_dec_init(&d, p, len);
	if (tsr_dec_begin_struct(&d, 2, &ver, &sub) < 0)
		return -EBADMSG;
	s.applied = tsr_dec_u64(&sub);
	decode_map(&sub, 0, &s);
	decode_map(&sub, 1, &s);
	if (tsr_dec_error(&sub))
		goto bad;
	n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) || n > MON_SESSIONS)
		goto bad;
	for (uint32_t i = 0; i < n && !tsr_dec_error(&sub); i++) {
		struct mon_session *ss = &s.sessions[i];
		const void *t;
		size_t tl;

		ss->client = tsr_dec_u64(&sub);
		ss->tid = tsr_dec_u64(&sub);
		ss->status = tsr_dec_i32(&sub);
		tsr_dec_bytes(&sub, &t, &tl, TSR_MONMSG_MAX_TEXT);
		if (tsr_dec_error(&sub) || (tl && memchr(t, '\0', tl)) ||
		    (ss->text = malloc(tl + 1)) == NULL)
			goto bad;
		memcpy(ss->text, t, tl);
		ss->text[tl] = '\0';
		s.nsessions = i + 1;
	}
	s.next_session = tsr_dec_u32(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) ||
	    s.next_session >= MON_SESSIONS)
		goto bad;
	s.placer = out->placer;
	state_free(out);
	*out = s;
	return 0;
bad:
	state_free(&s);
	return -EBADMSG;
}
