/* state.c — the cluster maps and the commands that change and read them
 * (state.h). */
#include "state.h"
#include "mon/monmsg.h"

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
	s->osd_epoch = 1;
	s->mds_epoch = 1;
	s->next_pool_id = 1;
}

void
state_free(struct mon_state *s)
{
	for (size_t i = 0; i < s->nsessions; i++)
		free(s->sessions[i].text);
	free(s->osds);
	free(s->pools);
	memset(s, 0, sizeof(*s));
}

/* ---- Words ---------------------------------------------------------------*/

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

static int
name_ok(const char *n)
{
	size_t l = strlen(n);

	if (l == 0 || l >= 64 || n[0] == '-')
		return 0;
	for (size_t i = 0; i < l; i++)
		if (!(n[i] >= 'a' && n[i] <= 'z') && !(n[i] >= 'A' && n[i] <= 'Z') &&
		    !(n[i] >= '0' && n[i] <= '9') && n[i] != '_' && n[i] != '-' &&
		    n[i] != '.')
			return 0;
	return 1;
}

#define FAIL(rc, ...) (tsr_sbuf_printf(out, __VA_ARGS__), (rc))

/* Is argv[0..] "w0 w1"? */
static int
is(int argc, char **argv, const char *w0, const char *w1)
{
	return argc >= (w1 ? 2 : 1) && strcmp(argv[0], w0) == 0 &&
	       (w1 == NULL || strcmp(argv[1], w1) == 0);
}

/* The options after the positional words: --host H, --weight W, --size N,
 * --min-size N, --yes-i-really-mean-it.  Unknown ones are errors. */
struct cmd_opts {
	const char *host;
	double weight;
	int64_t size, min_size;
	int yes, autom;
	const char *failed;
	const char *pos[4];
	int npos;
};

static int
parse_opts(int argc, char **argv, int from, struct cmd_opts *o,
	   struct tsr_sbuf *out)
{
	memset(o, 0, sizeof(*o));
	o->weight = -1;
	o->size = o->min_size = -1;
	for (int i = from; i < argc; i++) {
		const char *w = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(w, "--yes-i-really-mean-it") == 0) {
			o->yes = 1;
		} else if (strcmp(w, "--host") == 0) {
			if (val == NULL || !name_ok(val))
				return FAIL(-EINVAL, "--host needs a host name "
					    "(letters, digits, '-', '_', '.')");
			o->host = val;
			i++;
		} else if (strcmp(w, "--weight") == 0) {
			if (val == NULL || parse_dbl(val, 0, 1e6, &o->weight) < 0 ||
			    o->weight <= 0)
				return FAIL(-EINVAL, "--weight needs a number above 0");
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
			if (val == NULL || parse_i64(val, 1, 16, v) < 0)
				return FAIL(-EINVAL, "%s needs a number in 1..16", w);
			i++;
		} else if (w[0] == '-' && w[1] == '-') {
			return FAIL(-EINVAL, "unknown option '%s'", w);
		} else if (o->npos < 4) {
			o->pos[o->npos++] = w;
		} else {
			return FAIL(-EINVAL, "unexpected word '%s'", w);
		}
	}
	return 0;
}

/* ---- Lookups -------------------------------------------------------------*/

static struct mon_osd *
find_osd(const struct mon_state *s, int64_t id)
{
	for (size_t i = 0; i < s->nosds; i++)
		if (s->osds[i].id == id)
			return &s->osds[i];
	return NULL;
}

struct mon_osd *
state_osd(const struct mon_state *s, int64_t id)
{
	return find_osd(s, id);
}

static struct mon_pool *
find_pool(const struct mon_state *s, const char *name)
{
	for (size_t i = 0; i < s->npools; i++)
		if (strcmp(s->pools[i].name, name) == 0)
			return &s->pools[i];
	return NULL;
}

static int
osd_arg(const struct mon_state *s, const char *w, struct mon_osd **o,
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

struct change {
	const char *w0, *w1;
	int npos;               /* positional words after w0 w1: min */
	int maxpos;
	const char *usage;
};

static const struct change changes[] = {
	{ "osd", "add", 0, 1, "osd add [ID] --host HOST [--weight W]" },
	{ "osd", "rm", 1, 1, "osd rm ID" },
	{ "osd", "in", 1, 1, "osd in ID" },
	{ "osd", "out", 1, 1, "osd out ID" },
	{ "osd", "reweight", 2, 2, "osd reweight ID R (0..1)" },
	{ "osd", "set", 1, 1, "osd set noout" },
	{ "osd", "unset", 1, 1, "osd unset noout" },
	{ "osd", "down", 1, 1, "osd down ID" },
	{ "osd", "boot", 2, 2, "osd boot ID IP:PORT (an OSD starting)" },
	{ "pool", "create", 1, 2, "pool create NAME [PG_NUM] [--size N] [--min-size N]" },
	{ "pool", "set", 3, 3, "pool set NAME pg_num|size|min_size VALUE" },
	{ "pool", "rm", 1, 1, "pool rm NAME --yes-i-really-mean-it" },
};

static const char *const reads[][2] = {
	{ "status", NULL }, { "health", NULL }, { "osd", "tree" }, { "osd", "dump" },
	{ "pool", "ls" }, { "mds", "stat" }, { "mon", "stat" },
};

int
state_classify(int argc, char **argv, struct tsr_sbuf *out)
{
	struct cmd_opts o;

	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++)
		if (is(argc, argv, reads[i][0], reads[i][1]))
			return 0;
	if (is(argc, argv, "osd", "beacon")) {
		int64_t id;
		if (parse_opts(argc, argv, 2, &o, out) < 0)
			return -EINVAL;
		if (o.npos < 1 || parse_i64(o.pos[0], 0, MON_MAX_OSDS - 1, &id) < 0)
			return FAIL(-EINVAL, "usage: osd beacon ID [--failed ID,ID...]");
		return 2;
	}
	for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		const struct change *c = &changes[i];
		if (!is(argc, argv, c->w0, c->w1))
			continue;
		if (parse_opts(argc, argv, 2, &o, out) < 0)
			return -EINVAL;
		if (o.npos < c->npos || o.npos > c->maxpos)
			return FAIL(-EINVAL, "usage: %s", c->usage);
		return 1;
	}
	tsr_sbuf_printf(out, "unknown command '");
	for (int i = 0; i < argc && i < 3; i++)
		tsr_sbuf_printf(out, "%s%s", i ? " " : "", argv[i]);
	tsr_sbuf_printf(out, "'");
	return -EINVAL;
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
	if (s->nosds >= MON_MAX_OSDS)
		return FAIL(-ENOSPC, "the cluster has %d OSDs, the most it may", MON_MAX_OSDS);
	struct mon_osd *v = realloc(s->osds, (s->nosds + 1) * sizeof(*v));
	if (v == NULL)
		return FAIL(-ENOMEM, "out of memory");
	s->osds = v;
	for (at = 0; at < s->nosds && s->osds[at].id < id; at++)
		;
	memmove(&s->osds[at + 1], &s->osds[at], (s->nosds - at) * sizeof(*v));
	memset(&s->osds[at], 0, sizeof(*v));
	s->osds[at].id = (int32_t)id;
	snprintf(s->osds[at].host, sizeof(s->osds[at].host), "%s", o->host);
	s->osds[at].weight = o->weight > 0 ? o->weight : 1.0;
	s->osds[at].reweight = 1.0;
	s->osds[at].in = 1;
	s->nosds++;
	s->osd_epoch++;
	tsr_sbuf_printf(out, "{\"osd\": %" PRId64 ", \"osdmap_epoch\": %" PRIu64 "}",
			id, s->osd_epoch);
	return 0;
}

static int
pool_create(struct mon_state *s, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	int64_t pg_num = 32;
	int64_t size = o->size > 0 ? o->size : 3;
	int64_t min_size = o->min_size > 0 ? o->min_size : size - size / 2;

	if (!name_ok(o->pos[0]))
		return FAIL(-EINVAL, "pool name '%s': 1 to 63 of letters, digits, "
			    "'-', '_', '.'", o->pos[0]);
	if (o->npos == 2 && parse_i64(o->pos[1], 1, 65536, &pg_num) < 0)
		return FAIL(-EINVAL, "PG_NUM '%s': a number in 1..65536", o->pos[1]);
	if (min_size > size)
		return FAIL(-EINVAL, "min_size %" PRId64 " is above size %" PRId64,
			    min_size, size);
	if (find_pool(s, o->pos[0]))
		return FAIL(-EEXIST, "pool '%s' exists already", o->pos[0]);
	if (s->npools >= MON_MAX_POOLS)
		return FAIL(-ENOSPC, "the cluster has %d pools, the most it may",
			    MON_MAX_POOLS);
	struct mon_pool *v = realloc(s->pools, (s->npools + 1) * sizeof(*v));
	if (v == NULL)
		return FAIL(-ENOMEM, "out of memory");
	s->pools = v;
	struct mon_pool *p = &s->pools[s->npools++];
	memset(p, 0, sizeof(*p));
	p->id = s->next_pool_id++;
	snprintf(p->name, sizeof(p->name), "%s", o->pos[0]);
	p->pg_num = (uint32_t)pg_num;
	p->size = (uint32_t)size;
	p->min_size = (uint32_t)min_size;
	s->osd_epoch++;
	tsr_sbuf_printf(out, "{\"pool\": ");
	tsr_sbuf_json_str(out, p->name);
	tsr_sbuf_printf(out, ", \"id\": %" PRId64 ", \"osdmap_epoch\": %" PRIu64 "}",
			p->id, s->osd_epoch);
	return 0;
}

static int
pool_set(struct mon_state *s, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	struct mon_pool *p = find_pool(s, o->pos[0]);
	const char *key = o->pos[1];
	int64_t v;

	if (p == NULL)
		return FAIL(-ENOENT, "pool '%s' does not exist", o->pos[0]);
	if (strcmp(key, "pg_num") == 0) {
		if (parse_i64(o->pos[2], 1, 65536, &v) < 0)
			return FAIL(-EINVAL, "pg_num: a number in 1..65536");
		if (v < p->pg_num)
			return FAIL(-EINVAL, "pg_num may only grow (PGs split; "
				    "merging is not supported): %u now", p->pg_num);
		p->pg_num = (uint32_t)v;
	} else if (strcmp(key, "size") == 0 || strcmp(key, "min_size") == 0) {
		if (parse_i64(o->pos[2], 1, 16, &v) < 0)
			return FAIL(-EINVAL, "%s: a number in 1..16", key);
		if (key[0] == 's' && v < p->min_size)
			return FAIL(-EINVAL, "size %" PRId64 " is below min_size %u",
				    v, p->min_size);
		if (key[0] == 'm' && v > p->size)
			return FAIL(-EINVAL, "min_size %" PRId64 " is above size %u",
				    v, p->size);
		*(key[0] == 's' ? &p->size : &p->min_size) = (uint32_t)v;
	} else {
		return FAIL(-EINVAL, "pool set: unknown key '%s' (pg_num, size, "
			    "min_size)", key);
	}
	s->osd_epoch++;
	tsr_sbuf_printf(out, "{\"pool\": ");
	tsr_sbuf_json_str(out, p->name);
	tsr_sbuf_printf(out, ", \"%s\": %" PRId64 ", \"osdmap_epoch\": %" PRIu64 "}",
			key, v, s->osd_epoch);
	return 0;
}

static int
change(struct mon_state *s, int argc, char **argv, struct tsr_sbuf *out)
{
	struct cmd_opts o;
	struct mon_osd *osd;
	int rc;

	if ((rc = parse_opts(argc, argv, 2, &o, out)) < 0)
		return rc;
	if (is(argc, argv, "osd", "add"))
		return osd_add(s, &o, out);
	if (is(argc, argv, "pool", "create"))
		return pool_create(s, &o, out);
	if (is(argc, argv, "pool", "set"))
		return pool_set(s, &o, out);
	if (is(argc, argv, "pool", "rm")) {
		struct mon_pool *p = find_pool(s, o.pos[0]);
		if (!o.yes)
			return FAIL(-EPERM, "removing pool '%s' destroys its data: "
				    "add --yes-i-really-mean-it", o.pos[0]);
		if (p == NULL)
			return FAIL(-ENOENT, "pool '%s' does not exist", o.pos[0]);
		size_t at = (size_t)(p - s->pools);
		memmove(p, p + 1, (s->npools - at - 1) * sizeof(*p));
		s->npools--;
		s->osd_epoch++;
		tsr_sbuf_printf(out, "{\"removed\": ");
		tsr_sbuf_json_str(out, o.pos[0]);
		tsr_sbuf_printf(out, ", \"osdmap_epoch\": %" PRIu64 "}", s->osd_epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "set") || is(argc, argv, "osd", "unset")) {
		if (strcmp(o.pos[0], "noout") != 0)
			return FAIL(-EINVAL, "unknown flag '%s' (noout)", o.pos[0]);
		if (argv[1][0] == 's')
			s->flags |= MON_FLAG_NOOUT;
		else
			s->flags &= ~MON_FLAG_NOOUT;
		s->osd_epoch++;
		tsr_sbuf_printf(out, "{\"noout\": %s, \"osdmap_epoch\": %" PRIu64 "}",
				s->flags & MON_FLAG_NOOUT ? "true" : "false", s->osd_epoch);
		return 0;
	}
	if ((rc = osd_arg(s, o.pos[0], &osd, out)) < 0)
		return rc;
	if (is(argc, argv, "osd", "rm")) {
		if (osd->up)
			return FAIL(-EBUSY, "osd.%d is up: stop it first", osd->id);
		int32_t id = osd->id;
		size_t at = (size_t)(osd - s->osds);
		memmove(osd, osd + 1, (s->nosds - at - 1) * sizeof(*osd));
		s->nosds--;
		s->osd_epoch++;
		tsr_sbuf_printf(out, "{\"removed\": %d, \"osdmap_epoch\": %" PRIu64 "}",
				id, s->osd_epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "boot")) {
		if (strlen(o.pos[1]) >= sizeof(osd->addr) || strchr(o.pos[1], ':') == NULL)
			return FAIL(-EINVAL, "osd boot: '%s' is not IP:PORT", o.pos[1]);
		if (osd->up && strcmp(osd->addr, o.pos[1]) == 0) {
			tsr_sbuf_printf(out, "{\"osd\": %d, \"up\": true, \"osdmap_epoch\": %"
					PRIu64 "}", osd->id, s->osd_epoch);
			return 0;
		}
		osd->up = 1;
		snprintf(osd->addr, sizeof(osd->addr), "%s", o.pos[1]);
		if (osd->auto_out) {
			/* the monitors took it out; back it comes */
			osd->in = 1;
			osd->auto_out = 0;
		}
		osd->up_from = ++s->osd_epoch;
		tsr_sbuf_printf(out, "{\"osd\": %d, \"up\": true, \"osdmap_epoch\": %"
				PRIu64 "}", osd->id, s->osd_epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "down")) {
		if (osd->up) {
			osd->up = 0;
			s->osd_epoch++;
		}
		tsr_sbuf_printf(out, "{\"osd\": %d, \"up\": false, \"osdmap_epoch\": %"
				PRIu64 "}", osd->id, s->osd_epoch);
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
	s->osd_epoch++;
	tsr_sbuf_printf(out, "{\"osd\": %d, \"in\": %s, \"reweight\": %g, "
			"\"osdmap_epoch\": %" PRIu64 "}", osd->id,
			osd->in ? "true" : "false", osd->reweight, s->osd_epoch);
	return 0;
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
	rc = change(s, argc, argv, out);
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

	for (size_t i = 0; i < s->nosds; i++) {
		down += !s->osds[i].up;
		out_n += !s->osds[i].in;
		in += s->osds[i].in;
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
	if (s->nosds == 0)
		REASON(1, "no OSDs in the cluster");
	if (down)
		REASON(1, "%zu of %zu OSDs down", down, s->nosds);
	if (out_n)
		REASON(1, "%zu of %zu OSDs out", out_n, s->nosds);
	if (s->flags & MON_FLAG_NOOUT)
		REASON(1, "noout flag set");
	for (size_t i = 0; i < s->npools; i++)
		if (s->nosds && s->pools[i].min_size > in)
			REASON(2, "pool '%s' needs %u OSDs in (min_size), %zu are",
			       s->pools[i].name, s->pools[i].min_size, in);
#undef REASON
	return level;
}

static void
osd_json(const struct mon_osd *o, struct tsr_sbuf *out)
{
	tsr_sbuf_printf(out, "{\"id\": %d, \"host\": ", o->id);
	tsr_sbuf_json_str(out, o->host);
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
				"\"hosts\": [", s->osd_epoch,
				s->flags & MON_FLAG_NOOUT ? "true" : "false");
		int firsth = 1;
		for (size_t i = 0; i < s->nosds; i++) {
			int seen = 0;
			for (size_t j = 0; j < i && !seen; j++)
				seen = strcmp(s->osds[j].host, s->osds[i].host) == 0;
			if (seen)
				continue;
			double w = 0;
			for (size_t j = i; j < s->nosds; j++)
				if (strcmp(s->osds[j].host, s->osds[i].host) == 0)
					w += s->osds[j].weight;
			tsr_sbuf_printf(out, "%s\n  {\"host\": ", firsth ? "" : ",");
			tsr_sbuf_json_str(out, s->osds[i].host);
			tsr_sbuf_printf(out, ", \"weight\": %g, \"osds\": [", w);
			int firsto = 1;
			for (size_t j = i; j < s->nosds; j++)
				if (strcmp(s->osds[j].host, s->osds[i].host) == 0) {
					tsr_sbuf_printf(out, "%s", firsto ? "" : ", ");
					osd_json(&s->osds[j], out);
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
				s->osd_epoch);
		for (size_t i = 0; i < s->npools; i++) {
			const struct mon_pool *p = &s->pools[i];
			tsr_sbuf_printf(out, "%s\n  {\"id\": %" PRId64 ", \"name\": ",
					i ? "," : "", p->id);
			tsr_sbuf_json_str(out, p->name);
			tsr_sbuf_printf(out, ", \"pg_num\": %u, \"size\": %u, "
					"\"min_size\": %u, \"redundancy\": \"replica\"}",
					p->pg_num, p->size, p->min_size);
		}
		tsr_sbuf_printf(out, "]}");
		return 0;
	}
	if (is(argc, argv, "mds", "stat")) {
		tsr_sbuf_printf(out, "{\"mdsmap_epoch\": %" PRIu64 ", \"ranks\": [], "
				"\"standbys\": []}", s->mds_epoch);
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
 *   envelope v1 { u64 osd_epoch, u64 mds_epoch, u32 flags, i64 next_pool_id,
 *                 u64 applied,
 *                 u32 n, n x { i32 id, string host, f64 weight,
 *                              f64 reweight, u8 in, u8 up, string addr,
 *                              u8 auto_out, u64 up_from },
 *                 u32 n, n x { i64 id, string name, u32 pg_num, u32 size,
 *                              u32 min_size },
 *                 u32 n, n x { u64 client, u64 tid, i32 status,
 *                              bytes text },
 *                 u32 next_session }
 */

uint8_t *
state_encode(const struct mon_state *s, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u64(&e, s->osd_epoch);
	tsr_enc_u64(&e, s->mds_epoch);
	tsr_enc_u32(&e, s->flags);
	tsr_enc_i64(&e, s->next_pool_id);
	tsr_enc_u64(&e, s->applied);
	tsr_enc_u32(&e, (uint32_t)s->nosds);
	for (size_t i = 0; i < s->nosds; i++) {
		const struct mon_osd *o = &s->osds[i];
		tsr_enc_i32(&e, o->id);
		tsr_enc_str(&e, o->host);
		tsr_enc_double(&e, o->weight);
		tsr_enc_double(&e, o->reweight);
		tsr_enc_u8(&e, (uint8_t)o->in);
		tsr_enc_u8(&e, (uint8_t)o->up);
		tsr_enc_str(&e, o->addr);
		tsr_enc_u8(&e, (uint8_t)o->auto_out);
		tsr_enc_u64(&e, o->up_from);
	}
	tsr_enc_u32(&e, (uint32_t)s->npools);
	for (size_t i = 0; i < s->npools; i++) {
		const struct mon_pool *p = &s->pools[i];
		tsr_enc_i64(&e, p->id);
		tsr_enc_str(&e, p->name);
		tsr_enc_u32(&e, p->pg_num);
		tsr_enc_u32(&e, p->size);
		tsr_enc_u32(&e, p->min_size);
	}
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

int
state_decode(struct mon_state *out, const void *p, size_t len)
{
	struct mon_state s;
	struct tsr_dec d, sub;
	uint8_t ver;
	uint32_t n;

	state_init(&s);
	tsr_dec_init(&d, p, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return -EBADMSG;
	s.osd_epoch = tsr_dec_u64(&sub);
	s.mds_epoch = tsr_dec_u64(&sub);
	s.flags = tsr_dec_u32(&sub);
	s.next_pool_id = tsr_dec_i64(&sub);
	s.applied = tsr_dec_u64(&sub);
	n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) || n > MON_MAX_OSDS)
		goto bad;
	if (n && (s.osds = calloc(n, sizeof(*s.osds))) == NULL)
		goto bad;
	for (uint32_t i = 0; i < n && !tsr_dec_error(&sub); i++) {
		struct mon_osd *o = &s.osds[i];
		o->id = tsr_dec_i32(&sub);
		tsr_dec_str(&sub, o->host, sizeof(o->host));
		o->weight = tsr_dec_double(&sub);
		o->reweight = tsr_dec_double(&sub);
		o->in = tsr_dec_u8(&sub) != 0;
		o->up = tsr_dec_u8(&sub) != 0;
		tsr_dec_str(&sub, o->addr, sizeof(o->addr));
		o->auto_out = tsr_dec_u8(&sub) != 0;
		o->up_from = tsr_dec_u64(&sub);
		if (o->id < 0 || o->id >= MON_MAX_OSDS || (i && o->id <= s.osds[i - 1].id))
			goto bad;
		s.nosds = i + 1;
	}
	n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) || n > MON_MAX_POOLS)
		goto bad;
	if (n && (s.pools = calloc(n, sizeof(*s.pools))) == NULL)
		goto bad;
	for (uint32_t i = 0; i < n && !tsr_dec_error(&sub); i++) {
		struct mon_pool *pl = &s.pools[i];
		pl->id = tsr_dec_i64(&sub);
		tsr_dec_str(&sub, pl->name, sizeof(pl->name));
		pl->pg_num = tsr_dec_u32(&sub);
		pl->size = tsr_dec_u32(&sub);
		pl->min_size = tsr_dec_u32(&sub);
		s.npools = i + 1;
	}
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
	state_free(out);
	*out = s;
	return 0;
bad:
	state_free(&s);
	return -EBADMSG;
}
