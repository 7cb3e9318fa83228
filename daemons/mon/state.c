/* state.c — the cluster maps and the commands that change and read them
 * (state.h). */
#include "state.h"
#include "mon/monmsg.h"
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
state_init(struct mon_state *s)
{
	memset(s, 0, sizeof(*s));
	tsr_osdmap_init(&s->osdmap);
	tsr_mdsmap_init(&s->mdsmap);
	s->keep_incs = 1;
	s->osd_hist.keep = MON_HIST_DEFAULT;
	snprintf(s->osdmap.placement, sizeof(s->osdmap.placement), "crush");
}

static void
incs_free(struct mon_incs *r)
{
	for (size_t i = 0; i < MON_INC_KEEP; i++)
		free(r->data[i]);
	memset(r, 0, sizeof(*r));
}

/* ---- The OSD map's history ----------------------------------------------------*/

static void
hist_clear(struct mon_hist *h)
{
	size_t keep = h->keep;

	for (size_t i = 0; i < h->n; i++)
		free(h->data[h->head + i]);
	free(h->data);
	free(h->len);
	memset(h, 0, sizeof(*h));
	h->keep = keep;
}

/* Drop the oldest while there are more than keep, or too many bytes. */
static void
hist_trim(struct mon_hist *h)
{
	while (h->n && (h->n > h->keep || h->bytes > MON_HIST_MAX_BYTES)) {
		free(h->data[h->head]);
		h->bytes -= h->len[h->head];
		h->head++;
		h->n--;
		h->first++;
	}
}

/* Keep the incremental that made epoch e (a copy); one that does not
 * follow the last starts the history anew.  On no memory the history
 * starts again at the next epoch (subscribers behind get the full map). */
static void
hist_add(struct mon_hist *h, uint64_t e, const void *p, size_t len)
{
	uint8_t *copy;

	if (h->n && e != h->first + h->n)
		hist_clear(h);
	if (h->keep == 0)
		return;
	if (h->head + h->n == h->cap) {
		if (h->head > 0) {
			memmove(h->data, h->data + h->head, h->n * sizeof(*h->data));
			memmove(h->len, h->len + h->head, h->n * sizeof(*h->len));
			h->head = 0;
		}
		if (h->n == h->cap) {
			size_t cap = h->cap ? 2 * h->cap : 64;
			uint8_t **d = realloc(h->data, cap * sizeof(*d));
			size_t *l;
			if (d == NULL) {
				hist_clear(h);
				return;
			}
			h->data = d;
			if ((l = realloc(h->len, cap * sizeof(*l))) == NULL) {
				hist_clear(h);
				return;
			}
			h->len = l;
			h->cap = cap;
		}
	}
	if ((copy = malloc(len ? len : 1)) == NULL) {
		hist_clear(h);
		return;
	}
	memcpy(copy, p, len);
	if (h->n == 0)
		h->first = e;
	h->data[h->head + h->n] = copy;
	h->len[h->head + h->n] = len;
	h->n++;
	h->bytes += len;
	hist_trim(h);
}

void
state_hist_keep(struct mon_state *s, size_t keep)
{
	s->osd_hist.keep = keep;
	hist_trim(&s->osd_hist);
}

uint64_t
state_hist_first(const struct mon_state *s)
{
	return s->osd_hist.n ? s->osd_hist.first : 0;
}

void
state_free(struct mon_state *s)
{
	for (size_t i = 0; i < s->nsessions; i++)
		free(s->sessions[i].text);
	tsr_osdmap_free(&s->osdmap);
	tsr_mdsmap_free(&s->mdsmap);
	hist_clear(&s->osd_hist);
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
	O_FAILED = 1 << 10, O_PER_HOST = 1 << 11,
};
static const char *const opt_names[] = {
	"--host", "--rack", "--weight", "--rule", "--size", "--min-size",
	"--redundancy", "--redundancy-opts", "--yes-i-really-mean-it", "--auto",
	"--failed", "--per-host",
};

/* The options after the positional words: --host H, --weight W, --size N,
 * --min-size N, --yes-i-really-mean-it.  Unknown ones are errors. */
struct cmd_opts {
	const char *host, *rack, *redundancy, *redundancy_opts;
	int64_t rule;
	double weight;
	int64_t size, min_size;
	int64_t per_host;       /* osd add FIRST-LAST: OSDs per host (0: all on one) */
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
		} else if (strcmp(w, "--per-host") == 0) {
			if (val == NULL || num_word(&argv[i + 1], canon, 1, MON_MAX_ADD,
						    &o->per_host) < 0)
				return FAIL(-EINVAL, "--per-host needs a number in 1..%d",
					    MON_MAX_ADD);
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

/* ---- Changes -------------------------------------------------------------*/

/* FIRST-LAST: OSD ids, first <= last, at most MON_MAX_ADD of them. */
static int
osd_range(const char *w, int32_t *first, int32_t *last, struct tsr_sbuf *out)
{
	const char *dash = strchr(w, '-');
	char a[16];
	int64_t f, l;

	if (dash == NULL || (size_t)(dash - w) >= sizeof(a))
		return FAIL(-EINVAL, "'%s' is not FIRST-LAST", w);
	memcpy(a, w, (size_t)(dash - w));
	a[dash - w] = '\0';
	if (parse_i64(a, 0, MON_MAX_OSDS - 1, &f) < 0 ||
	    parse_i64(dash + 1, 0, MON_MAX_OSDS - 1, &l) < 0 || l < f)
		return FAIL(-EINVAL, "'%s' is not FIRST-LAST, OSD ids in 0..%d", w,
			    MON_MAX_OSDS - 1);
	if (l - f + 1 > MON_MAX_ADD)
		return FAIL(-EINVAL, "'%s' adds %lld OSDs, more than %d in one change",
			    w, (long long)(l - f + 1), MON_MAX_ADD);
	*first = (int32_t)f;
	*last = (int32_t)l;
	return 0;
}

/* The boots of `osd boots ID@IP:PORT,...`, the leader's batch of the OSDs
 * that booted since its last one: 0, or -EINVAL naming the item. */
struct boot_item {
	int32_t id;
	char addr[TSR_OSDMAP_NAME];
};

static int addr_ok(const char *w);

static int
boot_items(const char *list, struct boot_item *items, size_t *n, struct tsr_sbuf *out)
{
	*n = 0;
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ","), at = strcspn(p, "@");
		char id[16];
		int64_t v;

		if (*n == MON_MAX_MARKS)
			return FAIL(-EINVAL, "osd boots: more than %d", MON_MAX_MARKS);
		if (at >= len || at >= sizeof(id) || len - at - 1 >= TSR_OSDMAP_NAME)
			return FAIL(-EINVAL, "osd boots: '%.*s' is not ID@IP:PORT", (int)len, p);
		memcpy(id, p, at);
		id[at] = '\0';
		memcpy(items[*n].addr, p + at + 1, len - at - 1);
		items[*n].addr[len - at - 1] = '\0';
		if (parse_i64(id, 0, MON_MAX_OSDS - 1, &v) < 0 || !addr_ok(items[*n].addr))
			return FAIL(-EINVAL, "osd boots: '%.*s' is not ID@IP:PORT", (int)len, p);
		items[(*n)++].id = (int32_t)v;
		p += len + (p[len] == ',');
	}
	return *n ? 0 : FAIL(-EINVAL, "osd boots: no OSD");
}

/* ---- What OSDs ask of the map for their PGs ----------------------------------
 *
 * `osd alives LIST`, the leader's batch of the MON_OSD_ALIVE messages
 * (monmsg.h) that came since its last one: per OSD, separated by '|',
 * "ID@UP_FROM:WANT" (raise up_thru to WANT; 0: not asked), then per PG temp
 * request ";POOL.PG=ID,ID" (PG in hex; no ids: remove the mapping).
 * state_alive_word() writes one OSD's part, alive_walk() reads them. */

struct alive_req {
	int32_t id;
	uint64_t up_from, want;
	uint32_t npg_temp;
	struct tsr_mon_pg_temp_req pg_temp[TSR_MONMSG_MAX_PG_TEMP];
};

void
state_alive_word(const struct tsr_mon_osd_alive *a, struct tsr_sbuf *out)
{
	tsr_sbuf_printf(out, "%d@%" PRIu64 ":%" PRIu64, a->osd, a->up_from,
			a->want_up_thru);
	for (uint32_t i = 0; i < a->npg_temp && i < TSR_MONMSG_MAX_PG_TEMP; i++) {
		const struct tsr_mon_pg_temp_req *r = &a->pg_temp[i];
		tsr_sbuf_printf(out, ";%" PRId64 ".%x=", r->pool, r->pg);
		for (uint32_t j = 0; j < r->n && j < TSR_OSDMAP_MAX_SIZE; j++)
			tsr_sbuf_printf(out, "%s%d", j ? "," : "", r->osds[j]);
	}
}

int
state_alive_holds(const struct tsr_osdmap *m, const struct tsr_mon_osd_alive *a,
		  struct tsr_sbuf *out)
{
	const struct tsr_osdmap_osd *o = tsr_osdmap_osd(m, a->osd);
	uint64_t want = a->want_up_thru < m->epoch ? a->want_up_thru : m->epoch;

	if (o == NULL || !o->up || o->up_from != a->up_from)
		return FAIL(-ESTALE, "osd.%d is not up from epoch %" PRIu64 " in OSD map "
			    "epoch %" PRIu64 " (%s)", a->osd, a->up_from, m->epoch,
			    o == NULL ? "not in the map" : !o->up ? "down"
			    : "another incarnation");
	if (o->up_thru < want)
		return 0;
	for (uint32_t i = 0; i < a->npg_temp; i++) {
		const struct tsr_mon_pg_temp_req *r = &a->pg_temp[i];
		const struct tsr_osdmap_pool *p = tsr_osdmap_pool(m, r->pool);
		const struct tsr_osdmap_pg_temp *t = tsr_osdmap_pg_temp(m, r->pool, r->pg);
		if (p == NULL || r->pg >= p->pg_num)
			continue; /* nothing it could change */
		if (r->n == 0 ? t != NULL
			      : t == NULL || t->n != r->n ||
				memcmp(t->osds, r->osds, r->n * sizeof(r->osds[0])) != 0)
			return 0;
	}
	return 1;
}

/* An unsigned decimal (or, hex, a PG number) of p[0..n) in [0, max]. */
static int
span_u64(const char *p, size_t n, int hex, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	unsigned base = hex ? 16 : 10;

	if (n == 0 || n > 20)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			   : hex && c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 99;
		if (d >= base || x > (max - d) / base)
			return -EINVAL;
		x = x * base + d;
	}
	*v = x;
	return 0;
}

/* One OSD's part "ID@UP_FROM:WANT;..." of p[0..n) into r: 0, or -EINVAL. */
static int
alive_req_parse(const char *p, size_t n, struct alive_req *r)
{
	size_t at = 0, colon, head;
	uint64_t v;

	memset(r, 0, sizeof(*r));
	head = 0;
	while (head < n && p[head] != ';')
		head++;
	while (at < head && p[at] != '@')
		at++;
	colon = at;
	while (colon < head && p[colon] != ':')
		colon++;
	if (at >= head || colon >= head ||
	    span_u64(p, at, 0, MON_MAX_OSDS - 1, &v) < 0)
		return -EINVAL;
	r->id = (int32_t)v;
	if (span_u64(p + at + 1, colon - at - 1, 0, INT64_MAX, &r->up_from) < 0 ||
	    span_u64(p + colon + 1, head - colon - 1, 0, INT64_MAX, &r->want) < 0 ||
	    r->up_from == 0 || (r->want && r->want < r->up_from))
		return -EINVAL;
	for (size_t i = head; i < n;) {
		size_t j = i + 1, dot, eq;
		struct tsr_mon_pg_temp_req *t;

		while (j < n && p[j] != ';')
			j++;
		/* p[i] is ';'; the item is p[i+1 .. j) */
		for (dot = i + 1; dot < j && p[dot] != '.'; dot++)
			;
		for (eq = dot; eq < j && p[eq] != '='; eq++)
			;
		if (r->npg_temp == TSR_MONMSG_MAX_PG_TEMP || dot >= j || eq >= j)
			return -EINVAL;
		t = &r->pg_temp[r->npg_temp++];
		if (span_u64(p + i + 1, dot - i - 1, 0, INT64_MAX, &v) < 0 || v == 0)
			return -EINVAL;
		t->pool = (int64_t)v;
		if (span_u64(p + dot + 1, eq - dot - 1, 1, TSR_OSDMAP_MAX_PG_NUM - 1, &v) < 0)
			return -EINVAL;
		t->pg = (uint32_t)v;
		for (size_t k = eq + 1; k < j;) {
			size_t e = k;
			while (e < j && p[e] != ',')
				e++;
			if (t->n == TSR_OSDMAP_MAX_SIZE ||
			    span_u64(p + k, e - k, 0, MON_MAX_OSDS - 1, &v) < 0)
				return -EINVAL;
			for (uint32_t q = 0; q < t->n; q++)
				if (t->osds[q] == (int32_t)v)
					return -EINVAL;
			t->osds[t->n++] = (int32_t)v;
			k = e + (e < j);
			if (e + 1 == j && p[e] == ',')
				return -EINVAL;
		}
		i = j;
	}
	return 0;
}

/* Each OSD's part of an `osd alives` list, in turn, to fn (which may be
 * NULL: only checked).  0, or -EINVAL naming the part in out, or what fn
 * returns when it fails. */
static int
alive_walk(const char *list, int (*fn)(void *arg, const struct alive_req *r),
	   void *arg, struct tsr_sbuf *out)
{
	struct alive_req *r = tsr_xcalloc(1, sizeof(*r));
	size_t count = 0;
	int rc = 0;

	for (const char *p = list; *p && rc == 0;) {
		size_t len = strcspn(p, "|");
		if (++count > MON_MAX_MARKS)
			rc = FAIL(-EINVAL, "osd alives: more than %d OSDs", MON_MAX_MARKS);
		else if (alive_req_parse(p, len, r) < 0)
			rc = FAIL(-EINVAL, "osd alives: '%.*s' is not "
				  "ID@UP_FROM:WANT[;POOL.PG=ID,...]", (int)(len < 200 ? len : 200),
				  p);
		else if (fn)
			rc = fn(arg, r);
		p += len + (p[len] == '|');
	}
	if (rc == 0 && count == 0)
		rc = FAIL(-EINVAL, "osd alives: no OSD");
	free(r);
	return rc;
}


/* How long a blocklist entry may last: a year. */
#define BLOCK_MAX_S 31536000
#define BLOCK_MAX_S_STR "31536000"

/* A client id word: hexadecimal, not 0. */
static int
client_word(const char *w, uint64_t *id)
{
	char *end;

	if (w[0] == '\0' || w[0] == '-' || w[0] == '+' || strlen(w) > 16)
		return -EINVAL;
	errno = 0;
	*id = strtoull(w, &end, 16);
	return *end || errno || *id == 0 ? -EINVAL : 0;
}

enum chg {
	C_OSD_ADD, C_OSD_RM, C_OSD_IN, C_OSD_OUT, C_OSD_REWEIGHT, C_OSD_SET,
	C_OSD_UNSET, C_OSD_DOWN, C_OSD_BOOT, C_POOL_CREATE, C_POOL_SET, C_POOL_RM,
	C_MDS_BOOT, C_MDS_ASSIGN, C_MDS_ACTIVE, C_MDS_FAIL, C_FS_SET, C_OSD_BOOTS,
	C_OSD_ALIVES, C_OSD_PLACEMENT, C_OSD_BLOCKLIST,
};

struct change {
	const char *w0, *w1;
	int npos;               /* positional words after w0 w1: min */
	int maxpos;
	unsigned opts;          /* the options it takes (O_*) */
	const char *usage;
};

static const struct change changes[] = {
	[C_OSD_ADD] = { "osd", "add", 0, 1, O_HOST | O_RACK | O_WEIGHT | O_PER_HOST,
			"osd add [ID | FIRST-LAST [--per-host N]] --host HOST [--rack RACK] "
			"[--weight W]" },
	[C_OSD_RM] = { "osd", "rm", 1, 1, 0, "osd rm ID" },
	[C_OSD_IN] = { "osd", "in", 1, 1, 0, "osd in ID" },
	[C_OSD_OUT] = { "osd", "out", 1, 1, O_AUTO, "osd out ID[,ID...]" },
	[C_OSD_REWEIGHT] = { "osd", "reweight", 2, 2, 0, "osd reweight ID R (0..1)" },
	[C_OSD_SET] = { "osd", "set", 1, 1, 0, "osd set noout" },
	[C_OSD_PLACEMENT] = { "osd", "placement", 2, 2, O_YES,
			      "osd placement set PLUGIN [--yes-i-really-mean-it] (crush, hrw; "
			      "with OSDs in the map, without the flag: how much data would "
			      "move)" },
	[C_OSD_UNSET] = { "osd", "unset", 1, 1, 0, "osd unset noout" },
	[C_OSD_DOWN] = { "osd", "down", 1, 1, 0, "osd down ID[,ID...]" },
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
	[C_OSD_ALIVES] = { "osd", "alives", 1, 1, 0,
			   "osd alives ID@UP_FROM:WANT[;POOL.PG=[ID,...]]...|... (the "
			   "leader: what OSDs asked of the map for their PGs)" },
	[C_OSD_BLOCKLIST] = { "osd", "blocklist", 2, 3, 0,
			      "osd blocklist add CLIENT [SECONDS] | osd blocklist rm CLIENT "
			      "(CLIENT: a client's id in hexadecimal, as `tessera-mds` "
			      "logs it; SECONDS: 1.." BLOCK_MAX_S_STR ", default 3600)" },
	[C_OSD_BOOTS] = { "osd", "boots", 1, 1, 0,
			  "osd boots ID@IP:PORT[,...] (the leader: OSDs that booted)" },
};

/* (a longer form before its prefix: the first that matches is taken) */
static const char *const reads[][2] = {
	{ "status", NULL }, { "health", "detail" }, { "health", NULL }, { "osd", "tree" },
	{ "osd", "dump" }, { "pool", "ls" }, { "mds", "stat" }, { "mon", "stat" },
	{ "versions", NULL }, { "pg", "stat" }, { "pg", "dump" }, { "osd", "df" },
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
		if (o->npos == 1 && strchr(o->pos[0], '-')) {
			int32_t first, last;
			if (osd_range(o->pos[0], &first, &last, out) < 0)
				return -EINVAL;
			return 0;
		}
		if (o->seen & O_PER_HOST)
			return FAIL(-EINVAL, "--per-host goes with a range of OSDs "
				    "(osd add FIRST-LAST --host H --per-host N)");
		if (o->npos == 1 && pos_osd(argv, o, 0, &v) < 0)
			return FAIL(-EINVAL, "'%s' is not an OSD id (0..%d)",
				    o->pos[0], MON_MAX_OSDS - 1);
		return 0;
	case C_OSD_RM: case C_OSD_IN: case C_OSD_OUT: case C_OSD_REWEIGHT:
	case C_OSD_DOWN: case C_OSD_BOOT:
		if ((k == C_OSD_DOWN || k == C_OSD_OUT) && strchr(o->pos[0], ',')) {
			int32_t ids[MON_MAX_MARKS];
			size_t n;
			return state_osd_list(o->pos[0], ids, MON_MAX_MARKS, &n, out);
		}
		if (pos_osd(argv, o, 0, &v) < 0)
			return FAIL(-EINVAL, "'%s' is not an OSD id (0..%d)",
				    o->pos[0], MON_MAX_OSDS - 1);
		if (k == C_OSD_REWEIGHT && parse_dbl(o->pos[1], 0, 1, &r) < 0)
			return FAIL(-EINVAL, "reweight '%s': a number in 0..1", o->pos[1]);
		if (k == C_OSD_BOOT && !addr_ok(o->pos[1]))
			return FAIL(-EINVAL, "osd boot: '%s' is not IP:PORT", o->pos[1]);
		return 0;
	case C_OSD_PLACEMENT:
		if (strcmp(o->pos[0], "set") != 0 || !tsr_osdmap_name_ok(o->pos[1]))
			return FAIL(-EINVAL, "usage: %s", c->usage);
		return 0;
	case C_OSD_BLOCKLIST: {
		uint64_t id;
		int add = strcmp(o->pos[0], "add") == 0;
		if (!add && strcmp(o->pos[0], "rm") != 0)
			return FAIL(-EINVAL, "osd blocklist: '%s' is neither add nor rm "
				    "(usage: %s)", o->pos[0], c->usage);
		if (!add && o->npos != 2)
			return FAIL(-EINVAL, "usage: %s", c->usage);
		if (client_word(o->pos[1], &id) < 0)
			return FAIL(-EINVAL, "osd blocklist: '%s' is not a client id (1 to "
				    "16 hexadecimal digits, not 0)", o->pos[1]);
		if (o->npos == 3 && pos_num(argv, o, 2, 1, BLOCK_MAX_S, &v) < 0)
			return FAIL(-EINVAL, "osd blocklist: SECONDS '%s': a number in "
				    "1..%d", o->pos[2], BLOCK_MAX_S);
		return 0;
	}
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
	case C_OSD_BOOTS: {
		struct boot_item items[MON_MAX_MARKS];
		size_t n;
		return boot_items(o->pos[0], items, &n, out);
	}
	case C_OSD_ALIVES:
		return alive_walk(o->pos[0], NULL, NULL, out);
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
	if (is(argc, argv, "pg", "query")) {
		if (argc != 3)
			return FAIL(-EINVAL, "usage: pg query POOL.PG (the PG in hexadecimal)");
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
state_needs_decisions(int argc, char **argv)
{
	/* the leader's clock says when a blocklist entry ends */
	if (is(argc, argv, "osd", "boots") || is(argc, argv, "osd", "blocklist"))
		return 1;
	if (argc < 3 || strcmp(argv[0], "osd") != 0)
		return 0;
	if (strcmp(argv[1], "add") == 0)
		return strchr(argv[2], '-') != NULL && argv[2][0] != '-';
	if (strcmp(argv[1], "down") == 0 || strcmp(argv[1], "out") == 0)
		return strchr(argv[2], ',') != NULL;
	if (strcmp(argv[1], "placement") == 0) {
		const char *plugin;
		int yes = 0;
		return state_placement_set(argc, argv, &plugin, &yes) && yes;
	}
	return 0;
}

int
state_placement_set(int argc, char **argv, const char **plugin, int *yes)
{
	struct cmd_opts o;
	struct tsr_sbuf none;
	int rc;

	if (!is(argc, argv, "osd", "placement"))
		return 0;
	tsr_sbuf_init(&none);
	rc = parse_opts(argc, argv, 2, 0, &o, &none);
	tsr_sbuf_release(&none);
	if (rc < 0 || o.npos != 2 || strcmp(o.pos[0], "set") != 0)
		return 0;
	*plugin = o.pos[1];
	*yes = o.yes;
	return 1;
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

/* ---- Drafts ---------------------------------------------------------------
 *
 * A change is decided against the state it meets without touching it:
 * what it would change goes into a draft.  For the OSD map that is the
 * incremental itself (records new or changed, whole; ids removed), so a
 * change costs what it changes.  For the MDS map it is a changed copy
 * (the map holds at most TSR_MDSMAP_MAX_MDS small records), diffed into
 * an incremental when the draft is sealed.  draft_seal() adds the
 * placement map when the topology moved, checks the incrementals the
 * way every holder of the maps checks them, and applies them; their
 * encodings are what the log carries (state.h). */
struct draft {
	const struct tsr_osdmap *om;    /* the maps the change meets */
	const struct tsr_mdsmap *mm;
	struct tsr_osdmap_inc inc;      /* inc.epoch 0: no OSD map change */
	struct tsr_mdsmap mds;          /* the changed MDS map, when mds_copied */
	int mds_copied;
};

static void
draft_init(struct draft *d, const struct mon_state *s)
{
	memset(d, 0, sizeof(*d));
	d->om = &s->osdmap;
	d->mm = &s->mdsmap;
	d->inc.flags = s->osdmap.flags;
	d->inc.next_pool_id = s->osdmap.next_pool_id;
}

static void
draft_free(struct draft *d)
{
	tsr_osdmap_inc_free(&d->inc);
	if (d->mds_copied)
		tsr_mdsmap_free(&d->mds);
	d->mds_copied = 0;
}

/* The OSD map changes: the epoch it changes to. */
static uint64_t
draft_osd_epoch(struct draft *d)
{
	d->inc.epoch = d->om->epoch + 1;
	return d->inc.epoch;
}

static int
draft_removes_osd(const struct draft *d, int32_t id)
{
	for (size_t i = 0; i < d->inc.nosd_rm; i++)
		if (d->inc.osd_rm[i] == id)
			return 1;
	return 0;
}

/* OSD id as the draft leaves it, or NULL. */
static const struct tsr_osdmap_osd *
draft_find_osd(const struct draft *d, int64_t id)
{
	for (size_t i = 0; i < d->inc.nosds; i++)
		if (d->inc.osds[i].id == id)
			return &d->inc.osds[i];
	if (draft_removes_osd(d, (int32_t)id))
		return NULL;
	return tsr_osdmap_osd(d->om, (int32_t)id);
}

/* A record of OSD id to change, held by the draft: a copy of the one the
 * map has, or (fresh) a new zeroed one.  Valid until the next call. */
static struct tsr_osdmap_osd *
draft_osd(struct draft *d, int32_t id, int fresh)
{
	const struct tsr_osdmap_osd *cur = fresh ? NULL : draft_find_osd(d, id);
	struct tsr_osdmap_osd *v;

	for (size_t i = 0; i < d->inc.nosds; i++)
		if (d->inc.osds[i].id == id)
			return &d->inc.osds[i];
	if ((v = realloc(d->inc.osds, (d->inc.nosds + 1) * sizeof(*v))) == NULL)
		return NULL;
	d->inc.osds = v;
	v = &d->inc.osds[d->inc.nosds++];
	if (cur)
		*v = *cur;
	else
		memset(v, 0, sizeof(*v));
	v->id = id;
	draft_osd_epoch(d);
	return v;
}

static int
draft_rm_osd(struct draft *d, int32_t id)
{
	int32_t *v = realloc(d->inc.osd_rm, (d->inc.nosd_rm + 1) * sizeof(*v));

	if (v == NULL)
		return -ENOMEM;
	d->inc.osd_rm = v;
	v[d->inc.nosd_rm++] = id;
	draft_osd_epoch(d);
	return 0;
}

static const struct tsr_osdmap_pool *
draft_find_pool(const struct draft *d, const char *name)
{
	for (size_t i = 0; i < d->inc.npools; i++)
		if (strcmp(d->inc.pools[i].name, name) == 0)
			return &d->inc.pools[i];
	const struct tsr_osdmap_pool *p = tsr_osdmap_pool_by_name(d->om, name);
	for (size_t i = 0; p && i < d->inc.npool_rm; i++)
		if (d->inc.pool_rm[i] == p->id)
			return NULL;
	return p;
}

/* Pool id as the draft leaves it, or NULL. */
static const struct tsr_osdmap_pool *
draft_pool_by_id(const struct draft *d, int64_t id)
{
	for (size_t i = 0; i < d->inc.npool_rm; i++)
		if (d->inc.pool_rm[i] == id)
			return NULL;
	for (size_t i = 0; i < d->inc.npools; i++)
		if (d->inc.pools[i].id == id)
			return &d->inc.pools[i];
	return tsr_osdmap_pool(d->om, id);
}

/* A pool record to change (a copy of cur, or a new zeroed one). */
static struct tsr_osdmap_pool *
draft_pool(struct draft *d, const struct tsr_osdmap_pool *cur)
{
	struct tsr_osdmap_pool *v;

	if (cur >= d->inc.pools && cur < d->inc.pools + d->inc.npools)
		return (struct tsr_osdmap_pool *)cur;
	if ((v = realloc(d->inc.pools, (d->inc.npools + 1) * sizeof(*v))) == NULL)
		return NULL;
	d->inc.pools = v;
	v = &d->inc.pools[d->inc.npools++];
	if (cur)
		*v = *cur;
	else
		memset(v, 0, sizeof(*v));
	draft_osd_epoch(d);
	return v;
}

static int
draft_rm_pool(struct draft *d, int64_t id)
{
	int64_t *v = realloc(d->inc.pool_rm, (d->inc.npool_rm + 1) * sizeof(*v));

	if (v == NULL)
		return -ENOMEM;
	d->inc.pool_rm = v;
	v[d->inc.npool_rm++] = id;
	draft_osd_epoch(d);
	return 0;
}

/* The PG temp mapping of pgid as the draft leaves it, or NULL. */
static const struct tsr_osdmap_pg_temp *
draft_find_pg_temp(const struct draft *d, struct tsr_pgid pgid)
{
	for (size_t i = 0; i < d->inc.npg_temp; i++)
		if (d->inc.pg_temp[i].pgid.pool == pgid.pool &&
		    d->inc.pg_temp[i].pgid.pg == pgid.pg)
			return &d->inc.pg_temp[i];
	for (size_t i = 0; i < d->inc.npg_temp_rm; i++)
		if (d->inc.pg_temp_rm[i].pool == pgid.pool && d->inc.pg_temp_rm[i].pg == pgid.pg)
			return NULL;
	return tsr_osdmap_pg_temp(d->om, pgid.pool, pgid.pg);
}

/* Set pgid's PG temp mapping to osds[0..n), or (n 0) remove it: 1 when
 * that changes the draft, 0 when it is so already, -ENOMEM. */
static int
draft_pg_temp(struct draft *d, struct tsr_pgid pgid, const int32_t *osds, uint32_t n)
{
	const struct tsr_osdmap_pg_temp *cur = draft_find_pg_temp(d, pgid);
	const struct tsr_osdmap_pg_temp *base = tsr_osdmap_pg_temp(d->om, pgid.pool, pgid.pg);
	struct tsr_osdmap_inc *i = &d->inc;

	if (n == 0 ? cur == NULL
		   : cur && cur->n == n && memcmp(cur->osds, osds, n * sizeof(*osds)) == 0)
		return 0;
	/* out of both lists, then into the one that says it */
	for (size_t k = 0; k < i->npg_temp; k++)
		if (i->pg_temp[k].pgid.pool == pgid.pool && i->pg_temp[k].pgid.pg == pgid.pg) {
			i->pg_temp[k] = i->pg_temp[--i->npg_temp];
			break;
		}
	for (size_t k = 0; k < i->npg_temp_rm; k++)
		if (i->pg_temp_rm[k].pool == pgid.pool && i->pg_temp_rm[k].pg == pgid.pg) {
			i->pg_temp_rm[k] = i->pg_temp_rm[--i->npg_temp_rm];
			break;
		}
	if (n == 0) {
		struct tsr_pgid *v;
		if (base == NULL)
			return 1; /* only the draft had it */
		if ((v = realloc(i->pg_temp_rm, (i->npg_temp_rm + 1) * sizeof(*v))) == NULL)
			return -ENOMEM;
		i->pg_temp_rm = v;
		v[i->npg_temp_rm++] = pgid;
	} else if (base == NULL || base->n != n ||
		   memcmp(base->osds, osds, n * sizeof(*osds)) != 0) {
		struct tsr_osdmap_pg_temp *v = realloc(i->pg_temp,
						       (i->npg_temp + 1) * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		i->pg_temp = v;
		v = &i->pg_temp[i->npg_temp++];
		memset(v, 0, sizeof(*v));
		v->pgid = pgid;
		v->n = n;
		memcpy(v->osds, osds, n * sizeof(*osds));
	}
	draft_osd_epoch(d);
	return 1;
}

/* The MDS map to change (copied on first use); NULL on no memory. */
static struct tsr_mdsmap *
draft_mds(struct draft *d)
{
	if (!d->mds_copied) {
		if (tsr_mdsmap_copy(&d->mds, d->mm) < 0)
			return NULL;
		d->mds_copied = 1;
	}
	return &d->mds;
}

/* Mark an OSD up at addr (it booted); 1 if that changed the draft. */
static int
boot_one(struct draft *d, int32_t id, const char *addr)
{
	const struct tsr_osdmap_osd *cur = draft_find_osd(d, id);
	struct tsr_osdmap_osd *osd;

	if (cur == NULL || (cur->up && strcmp(cur->addr, addr) == 0))
		return 0;
	if ((osd = draft_osd(d, id, 0)) == NULL)
		return -ENOMEM;
	osd->up = 1;
	snprintf(osd->addr, sizeof(osd->addr), "%s", addr);
	if (osd->auto_out) {
		/* the monitors took it out; back it comes */
		osd->in = 1;
		osd->auto_out = 0;
	}
	osd->up_from = d->inc.epoch;
	return 1;
}

static int osd_add_range(struct draft *d, const struct cmd_opts *o,
			 struct tsr_sbuf *out);

static int
osd_add(struct draft *d, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	struct tsr_osdmap_osd *v;
	int64_t id = -1;

	if (o->host == NULL)
		return FAIL(-EINVAL, "osd add needs --host HOST");
	if (o->npos == 1 && strchr(o->pos[0], '-'))
		return osd_add_range(d, o, out);
	if (o->npos == 1) {
		const char *w = o->pos[0];
		if (strncmp(w, "osd.", 4) == 0)
			w += 4;
		if (parse_i64(w, 0, MON_MAX_OSDS - 1, &id) < 0)
			return FAIL(-EINVAL, "'%s' is not an OSD id (0..%d)", o->pos[0],
				    MON_MAX_OSDS - 1);
		if (draft_find_osd(d, id))
			return FAIL(-EEXIST, "osd.%" PRId64 " exists already", id);
	} else {
		/* the lowest free id: the map's ids are sorted */
		id = 0;
		for (size_t i = 0; i < d->om->nosds && d->om->osds[i].id == id; i++)
			id++;
		while (id < MON_MAX_OSDS && draft_find_osd(d, id))
			id++;
	}
	if (d->om->nosds >= MON_MAX_OSDS || id >= MON_MAX_OSDS)
		return FAIL(-ENOSPC, "the cluster has %d OSDs, the most it may", MON_MAX_OSDS);
	if ((v = draft_osd(d, (int32_t)id, 1)) == NULL)
		return FAIL(-ENOMEM, "out of memory");
	snprintf(v->host, sizeof(v->host), "%s", o->host);
	if (o->rack)
		snprintf(v->rack, sizeof(v->rack), "%s", o->rack);
	v->weight = o->weight > 0 ? o->weight : 1.0;
	v->reweight = 1.0;
	v->in = 1;
	tsr_sbuf_printf(out, "{\"osd\": %" PRId64 ", \"osdmap_epoch\": %" PRIu64 "}",
			id, d->inc.epoch);
	return 0;
}

/* osd add FIRST-LAST --host H [--per-host N]: new OSDs, all on H or N to
 * a host named H-0, H-1, ...; none of them may exist. */
static int
osd_add_range(struct draft *d, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	int32_t first, last;

	if (osd_range(o->pos[0], &first, &last, out) < 0)
		return -EINVAL;
	for (int32_t id = first; id <= last; id++)
		if (draft_find_osd(d, id))
			return FAIL(-EEXIST, "osd.%d exists already", id);
	if (d->om->nosds + (size_t)(last - first + 1) > MON_MAX_OSDS)
		return FAIL(-ENOSPC, "the cluster may have %d OSDs", MON_MAX_OSDS);
	for (int32_t id = first; id <= last; id++) {
		struct tsr_osdmap_osd *v = draft_osd(d, id, 1);
		if (v == NULL)
			return FAIL(-ENOMEM, "out of memory");
		if (o->per_host > 0) {
			int n = snprintf(v->host, sizeof(v->host), "%s-%lld", o->host,
					 (long long)((id - first) / o->per_host));
			if (n < 0 || (size_t)n >= sizeof(v->host))
				return FAIL(-EINVAL, "host '%s-N' is too long", o->host);
		} else {
			snprintf(v->host, sizeof(v->host), "%s", o->host);
		}
		if (o->rack)
			snprintf(v->rack, sizeof(v->rack), "%s", o->rack);
		v->weight = o->weight > 0 ? o->weight : 1.0;
		v->reweight = 1.0;
		v->in = 1;
	}
	tsr_sbuf_printf(out, "{\"osds\": \"%d-%d\", \"added\": %d, \"osdmap_epoch\": %"
			PRIu64 "}", first, last, last - first + 1, d->inc.epoch);
	return 0;
}

static int
pool_create(struct draft *d, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	int64_t pg_num = 32;
	int64_t size = o->size > 0 ? o->size : 3;
	int64_t min_size = o->min_size > 0 ? o->min_size : size - size / 2;
	struct tsr_osdmap_pool *p;

	if (!tsr_osdmap_name_ok(o->pos[0]))
		return FAIL(-EINVAL, "pool name '%s': 1 to 63 of letters, digits, "
			    "'-', '_', '.'", o->pos[0]);
	if (o->npos == 2 && parse_i64(o->pos[1], 1, 65536, &pg_num) < 0)
		return FAIL(-EINVAL, "PG_NUM '%s': a number in 1..65536", o->pos[1]);
	if (min_size > size)
		return FAIL(-EINVAL, "min_size %" PRId64 " is above size %" PRId64,
			    min_size, size);
	if (draft_find_pool(d, o->pos[0]))
		return FAIL(-EEXIST, "pool '%s' exists already", o->pos[0]);
	if (d->om->npools >= TSR_OSDMAP_MAX_POOLS)
		return FAIL(-ENOSPC, "the cluster has %d pools, the most it may",
			    TSR_OSDMAP_MAX_POOLS);
	if ((p = draft_pool(d, NULL)) == NULL)
		return FAIL(-ENOMEM, "out of memory");
	p->id = d->inc.next_pool_id++;
	snprintf(p->name, sizeof(p->name), "%s", o->pos[0]);
	p->pg_num = (uint32_t)pg_num;
	p->size = (uint32_t)size;
	p->min_size = (uint32_t)min_size;
	p->rule = o->rule >= 0 ? (uint32_t)o->rule : 0;
	snprintf(p->redundancy, sizeof(p->redundancy), "%s",
		 o->redundancy ? o->redundancy : MON_DEFAULT_REDUNDANCY);
	snprintf(p->redundancy_opts, sizeof(p->redundancy_opts), "%s",
		 o->redundancy_opts ? o->redundancy_opts : "");
	tsr_sbuf_printf(out, "{\"pool\": ");
	tsr_sbuf_json_str(out, p->name);
	tsr_sbuf_printf(out, ", \"id\": %" PRId64 ", \"osdmap_epoch\": %" PRIu64 "}",
			p->id, d->inc.epoch);
	return 0;
}

static int
pool_set(struct draft *d, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	const struct tsr_osdmap_pool *cur = draft_find_pool(d, o->pos[0]);
	const char *key = o->pos[1];
	struct tsr_osdmap_pool *p;
	int64_t v;

	if (cur == NULL)
		return FAIL(-ENOENT, "pool '%s' does not exist", o->pos[0]);
	if (strcmp(key, "pg_num") == 0) {
		if (parse_i64(o->pos[2], 1, 65536, &v) < 0)
			return FAIL(-EINVAL, "pg_num: a number in 1..65536");
		if (v < cur->pg_num)
			return FAIL(-EPERM, "pg_num may only grow (PGs split; "
				    "merging is not supported): %u now", cur->pg_num);
	} else if (strcmp(key, "size") == 0 || strcmp(key, "min_size") == 0) {
		if (parse_i64(o->pos[2], 1, 16, &v) < 0)
			return FAIL(-EINVAL, "%s: a number in 1..16", key);
		if (key[0] == 's' && v < cur->min_size)
			return FAIL(-ERANGE, "size %" PRId64 " is below min_size %u",
				    v, cur->min_size);
		if (key[0] == 'm' && v > cur->size)
			return FAIL(-ERANGE, "min_size %" PRId64 " is above size %u",
				    v, cur->size);
	} else if (strcmp(key, "rule") == 0) {
		if (parse_i64(o->pos[2], 0, MON_RULES - 1, &v) < 0)
			return FAIL(-EINVAL, "rule: 0 (one copy per host), 1 (per "
				    "rack), 2 (per OSD)");
	} else {
		return FAIL(-EINVAL, "pool set: unknown key '%s' (pg_num, size, "
			    "min_size, rule)", key);
	}
	if ((p = draft_pool(d, cur)) == NULL)
		return FAIL(-ENOMEM, "out of memory");
	if (key[0] == 'p')
		p->pg_num = (uint32_t)v;
	else if (key[0] == 'r')
		p->rule = (uint32_t)v;
	else
		*(key[0] == 's' ? &p->size : &p->min_size) = (uint32_t)v;
	tsr_sbuf_printf(out, "{\"pool\": ");
	tsr_sbuf_json_str(out, p->name);
	tsr_sbuf_printf(out, ", \"%s\": %" PRId64 ", \"osdmap_epoch\": %" PRIu64 "}",
			key, v, d->inc.epoch);
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
mds_change(struct draft *dr, const struct cmd_opts *o, const char *verb,
	   struct tsr_sbuf *out)
{
	struct tsr_mdsmap *m = draft_mds(dr);
	struct tsr_mdsmap_mds *d;
	int64_t gid = 0, rank;

	if (m == NULL)
		return FAIL(-ENOMEM, "out of memory");

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

/* One OSD's asks in `osd alives`: only from the incarnation the map has
 * up (an earlier one's come too late); up_thru raised to at most the
 * map's epoch; PG temp only on a PG of the map. */
struct alive_apply {
	struct draft *d;
	size_t osds, refused, up_thru, pg_temp;
};

static int
alive_one(void *arg, const struct alive_req *r)
{
	struct alive_apply *a = arg;
	struct draft *d = a->d;
	const struct tsr_osdmap_osd *cur = draft_find_osd(d, r->id);
	uint64_t want = r->want < d->om->epoch ? r->want : d->om->epoch;
	int rc;

	a->osds++;
	if (cur == NULL || !cur->up || cur->up_from != r->up_from) {
		a->refused++;
		return 0;
	}
	if (want > cur->up_thru) {
		struct tsr_osdmap_osd *osd = draft_osd(d, r->id, 0);
		if (osd == NULL)
			return -ENOMEM;
		osd->up_thru = want;
		a->up_thru++;
	}
	for (uint32_t i = 0; i < r->npg_temp; i++) {
		const struct tsr_mon_pg_temp_req *t = &r->pg_temp[i];
		const struct tsr_osdmap_pool *p = draft_pool_by_id(d, t->pool);
		struct tsr_pgid pgid = { t->pool, t->pg };
		if (p == NULL || t->pg >= p->pg_num)
			continue;
		if ((rc = draft_pg_temp(d, pgid, t->osds, t->n)) < 0)
			return rc;
		a->pg_temp += (size_t)rc;
	}
	return 0;
}

/* The OSDs a mark names: one id word, or (osd down / osd out, which the
 * leader batches) a list "1,2,osd.3". */
static int
mark_ids(const char *w, int32_t *ids, size_t *n, struct tsr_sbuf *out)
{
	return state_osd_list(w, ids, MON_MAX_MARKS, n, out);
}

/* osd blocklist add|rm: decided by the leader (state_needs_decisions),
 * whose clock sets the end; an add also drops the entries that ended. */
static int
blocklist_change(struct draft *d, const struct cmd_opts *o, struct tsr_sbuf *out)
{
	const struct tsr_osdmap *m = d->om;
	uint64_t id, now = (uint64_t)time(NULL), until;
	int64_t secs = 3600;
	int found = 0;

	client_word(o->pos[1], &id);
	for (size_t i = 0; i < m->nblocklist; i++)
		found |= m->blocklist[i].client == id;
	if (strcmp(o->pos[0], "rm") == 0) {
		if (!found)
			return FAIL(-ENOENT, "client %" PRIx64 " is not blocklisted", id);
		d->inc.blocklist_rm = tsr_xcalloc(1, sizeof(uint64_t));
		d->inc.blocklist_rm[d->inc.nblocklist_rm++] = id;
		tsr_sbuf_printf(out, "{\"client\": \"%" PRIx64 "\", \"blocklisted\": "
				"false, \"osdmap_epoch\": %" PRIu64 "}", id,
				draft_osd_epoch(d));
		return 0;
	}
	if (o->npos == 3)
		secs = strtoll(o->pos[2], NULL, 10); /* checked: 1..BLOCK_MAX_S */
	until = now + (uint64_t)secs;
	d->inc.blocklist_rm = tsr_xcalloc(m->nblocklist + 1, sizeof(uint64_t));
	for (size_t i = 0; i < m->nblocklist; i++) {
		if (m->blocklist[i].client == id && m->blocklist[i].until > until)
			until = m->blocklist[i].until; /* an add never shortens one */
		if (m->blocklist[i].until <= now && m->blocklist[i].client != id)
			d->inc.blocklist_rm[d->inc.nblocklist_rm++] = m->blocklist[i].client;
	}
	if (!found && m->nblocklist - d->inc.nblocklist_rm >= TSR_OSDMAP_MAX_BLOCKLIST)
		return FAIL(-ENOSPC, "the blocklist holds %d clients already",
			    TSR_OSDMAP_MAX_BLOCKLIST);
	d->inc.blocklist = tsr_xcalloc(1, sizeof(*d->inc.blocklist));
	d->inc.blocklist[0].client = id;
	d->inc.blocklist[0].until = until;
	d->inc.nblocklist = 1;
	tsr_sbuf_printf(out, "{\"client\": \"%" PRIx64 "\", \"blocklisted\": true, "
			"\"until\": %" PRIu64 ", \"expired_removed\": %zu, \"osdmap_epoch\": %"
			PRIu64 "}", id, until, d->inc.nblocklist_rm, draft_osd_epoch(d));
	return 0;
}

static int
change(struct mon_state *s, struct draft *d, int argc, char **argv,
       struct tsr_sbuf *out)
{
	struct cmd_opts o;
	const struct tsr_osdmap_osd *cur;
	struct tsr_osdmap_osd *osd;
	int rc;

	(void)s;
	if ((rc = parse_opts(argc, argv, 2, 0, &o, out)) < 0)
		return rc;
	if (is(argc, argv, "osd", "add"))
		return osd_add(d, &o, out);
	if (is(argc, argv, "pool", "create"))
		return pool_create(d, &o, out);
	if (is(argc, argv, "pool", "set"))
		return pool_set(d, &o, out);
	if (strcmp(argv[0], "mds") == 0 || strcmp(argv[0], "fs") == 0)
		return mds_change(d, &o, argv[1], out);
	if (is(argc, argv, "pool", "rm")) {
		const struct tsr_osdmap_pool *p = draft_find_pool(d, o.pos[0]);
		if (!o.yes)
			return FAIL(-EINVAL, "removing pool '%s' destroys its data: "
				    "add --yes-i-really-mean-it", o.pos[0]);
		if (p == NULL)
			return FAIL(-ENOENT, "pool '%s' does not exist", o.pos[0]);
		if (draft_rm_pool(d, p->id) < 0)
			return FAIL(-ENOMEM, "out of memory");
		tsr_sbuf_printf(out, "{\"removed\": ");
		tsr_sbuf_json_str(out, o.pos[0]);
		tsr_sbuf_printf(out, ", \"osdmap_epoch\": %" PRIu64 "}", d->inc.epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "placement")) {
		/* the cluster's placement plugin.  With OSDs in the map a new
		 * plugin moves data: the leader answers the change without
		 * --yes-i-really-mean-it with how much (placemove.c) and does
		 * not log it; this refuses one that met OSDs the leader did
		 * not see then */
		if (strcmp(o.pos[1], d->om->placement) != 0) {
			if ((d->om->nosds || d->inc.nosds) && !o.yes)
				return FAIL(-ECANCELED, "the OSD map holds %zu OSDs: a new "
					    "placement plugin (%s, now %s) moves their data; "
					    "`osd placement set %s` says how much, and with "
					    "--yes-i-really-mean-it changes it",
					    d->om->nosds, o.pos[1], d->om->placement, o.pos[1]);
			d->inc.has_pmap = 1;
			tsr_strlcpy(d->inc.placement, o.pos[1], sizeof(d->inc.placement));
			draft_osd_epoch(d);
		}
		tsr_sbuf_printf(out, "{\"placement\": ");
		tsr_sbuf_json_str(out, o.pos[1]);
		tsr_sbuf_printf(out, ", \"was\": ");
		tsr_sbuf_json_str(out, d->om->placement);
		tsr_sbuf_printf(out, ", \"changed\": %s, \"osds\": %zu, \"osdmap_epoch\": %"
				PRIu64 "}", d->inc.epoch ? "true" : "false", d->om->nosds,
				d->inc.epoch ? d->inc.epoch : d->om->epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "blocklist"))
		return blocklist_change(d, &o, out);
	if (is(argc, argv, "osd", "set") || is(argc, argv, "osd", "unset")) {
		if (strcmp(o.pos[0], "noout") != 0)
			return FAIL(-EINVAL, "unknown flag '%s' (noout)", o.pos[0]);
		if (argv[1][0] == 's')
			d->inc.flags |= TSR_OSDMAP_NOOUT;
		else
			d->inc.flags &= ~TSR_OSDMAP_NOOUT;
		if (d->inc.flags != d->om->flags)
			draft_osd_epoch(d);
		tsr_sbuf_printf(out, "{\"noout\": %s, \"osdmap_epoch\": %" PRIu64 "}",
				d->inc.flags & TSR_OSDMAP_NOOUT ? "true" : "false",
				d->inc.epoch ? d->inc.epoch : d->om->epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "boots")) {
		/* OSDs gone from the map meanwhile are left out; the leader
		 * answers each from the map this makes */
		struct boot_item items[MON_MAX_MARKS];
		size_t n, booted = 0;
		if (boot_items(o.pos[0], items, &n, out) < 0)
			return -EINVAL;
		for (size_t i = 0; i < n; i++) {
			int r = boot_one(d, items[i].id, items[i].addr);
			if (r < 0)
				return FAIL(-ENOMEM, "out of memory");
			booted += (size_t)r;
		}
		tsr_sbuf_printf(out, "{\"osds\": %zu, \"booted\": %zu, \"osdmap_epoch\": %"
				PRIu64 "}", n, booted, d->inc.epoch ? d->inc.epoch : d->om->epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "alives")) {
		struct alive_apply a = { .d = d };
		if ((rc = alive_walk(o.pos[0], alive_one, &a, out)) < 0)
			return rc;
		tsr_sbuf_printf(out, "{\"osds\": %zu, \"refused\": %zu, \"up_thru\": %zu, "
				"\"pg_temp\": %zu, \"osdmap_epoch\": %" PRIu64 "}", a.osds,
				a.refused, a.up_thru, a.pg_temp,
				d->inc.epoch ? d->inc.epoch : d->om->epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "down") ||
	    (is(argc, argv, "osd", "out") && strchr(o.pos[0], ','))) {
		/* a list: every OSD named must exist; the ones already so
		 * are left as they are */
		int32_t ids[MON_MAX_MARKS];
		size_t n = 0, changed = 0;
		int down = argv[1][0] == 'd';

		if (mark_ids(o.pos[0], ids, &n, out) < 0)
			return -EINVAL;
		for (size_t i = 0; i < n; i++)
			if (draft_find_osd(d, ids[i]) == NULL)
				return FAIL(-ENOENT, "osd.%d does not exist", ids[i]);
		for (size_t i = 0; i < n; i++) {
			cur = draft_find_osd(d, ids[i]);
			if (down ? !cur->up : !cur->in)
				continue;
			if ((osd = draft_osd(d, ids[i], 0)) == NULL)
				return FAIL(-ENOMEM, "out of memory");
			if (down) {
				osd->up = 0;
			} else {
				osd->in = 0;
				osd->auto_out = o.autom;
			}
			changed++;
		}
		uint64_t e = d->inc.epoch ? d->inc.epoch : d->om->epoch;
		if (n == 1)
			tsr_sbuf_printf(out, "{\"osd\": %d, \"%s\": false, "
					"\"osdmap_epoch\": %" PRIu64 "}", ids[0],
					down ? "up" : "in", e);
		else
			tsr_sbuf_printf(out, "{\"osds\": %zu, \"marked_%s\": %zu, "
					"\"osdmap_epoch\": %" PRIu64 "}", n,
					down ? "down" : "out", changed, e);
		return 0;
	}
	if (strncmp(o.pos[0], "osd.", 4) == 0)
		o.pos[0] += 4;
	int64_t id;
	if (parse_i64(o.pos[0], 0, MON_MAX_OSDS - 1, &id) < 0)
		return FAIL(-EINVAL, "'%s' is not an OSD id (0..%d)", o.pos[0],
			    MON_MAX_OSDS - 1);
	if ((cur = draft_find_osd(d, id)) == NULL)
		return FAIL(-ENOENT, "osd.%" PRId64 " does not exist", id);
	if (is(argc, argv, "osd", "rm")) {
		if (cur->up)
			return FAIL(-EBUSY, "osd.%d is up: stop it first", cur->id);
		if (draft_rm_osd(d, cur->id) < 0)
			return FAIL(-ENOMEM, "out of memory");
		tsr_sbuf_printf(out, "{\"removed\": %" PRId64 ", \"osdmap_epoch\": %"
				PRIu64 "}", id, d->inc.epoch);
		return 0;
	}
	if (is(argc, argv, "osd", "boot")) {
		if (strlen(o.pos[1]) >= sizeof(cur->addr) || strchr(o.pos[1], ':') == NULL)
			return FAIL(-EINVAL, "osd boot: '%s' is not IP:PORT", o.pos[1]);
		if (cur->up && strcmp(cur->addr, o.pos[1]) == 0) {
			tsr_sbuf_printf(out, "{\"osd\": %d, \"up\": true, \"osdmap_epoch\": %"
					PRIu64 "}", cur->id, d->om->epoch);
			return 0;
		}
		if (boot_one(d, (int32_t)id, o.pos[1]) < 0)
			return FAIL(-ENOMEM, "out of memory");
		tsr_sbuf_printf(out, "{\"osd\": %d, \"up\": true, \"osdmap_epoch\": %"
				PRIu64 "}", cur->id, d->inc.epoch);
		return 0;
	}
	double r = cur->reweight;
	if (is(argc, argv, "osd", "reweight") && parse_dbl(o.pos[1], 0, 1, &r) < 0)
		return FAIL(-EINVAL, "reweight '%s': a number in 0..1", o.pos[1]);
	if ((osd = draft_osd(d, (int32_t)id, 0)) == NULL)
		return FAIL(-ENOMEM, "out of memory");
	if (is(argc, argv, "osd", "in") || is(argc, argv, "osd", "out")) {
		osd->in = argv[1][0] == 'i';
		osd->auto_out = !osd->in && o.autom;
	} else {
		osd->reweight = r;
	}
	tsr_sbuf_printf(out, "{\"osd\": %d, \"in\": %s, \"reweight\": %g, "
			"\"osdmap_epoch\": %" PRIu64 "}", osd->id,
			osd->in ? "true" : "false", osd->reweight, d->inc.epoch);
	return 0;
}

const uint8_t *
state_inc(const struct mon_state *s, int which, uint64_t e, size_t *len)
{
	const struct mon_incs *r = &s->mds_incs;
	size_t at = e % MON_INC_KEEP;

	if (which == TSR_MON_MAP_OSD) {
		const struct mon_hist *h = &s->osd_hist;
		if (h->n == 0 || e < h->first || e - h->first >= h->n)
			return NULL;
		*len = h->len[h->head + (e - h->first)];
		return h->data[h->head + (e - h->first)];
	}
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
 * go to map() as weights.  It is made anew when the topology moves and
 * when the plugin changes (`osd placement set`); the leader's estimate of
 * what a new plugin would move (placemove.c) makes the other plugin's
 * map here too, so both come from the same code. */

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

int
state_placement_map(const struct mon_placer *pl, const struct tsr_osdmap *m,
		    void **blob_out, size_t *len_out, int *cannot, struct tsr_sbuf *out)
{
	static const char *const types[] = { "osd", "host", "rack", "root" };
	size_t nr, nh, ni = 0, nrules = 0;
	const char **racks, **hosts;
	struct tsr_topo_item *items;
	struct tsr_topo_rule rules[MON_RULES];
	char (*names)[TSR_OSDMAP_NAME + 8];
	int32_t *host_rack;
	char err[512] = "";
	int rc = 0;

	*blob_out = NULL;
	*len_out = 0;
	*cannot = 0;
	if (m->nosds == 0)
		return 0;
	if (pl->encode == NULL) {
		*cannot = 1;
		return FAIL(-EIO, "this monitor has no placement plugins to make the "
			    "placement map with");
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
		rc = pl->encode(pl->arg, m->placement, &t, &blob, &len, err, sizeof(err));
		if (rc == 0) {
			*blob_out = blob;
			*len_out = len;
		} else if (rc == -EINVAL) {
			rc = FAIL(-EOPNOTSUPP, "the placement plugin '%s' refuses the "
				  "topology: %s", m->placement, err);
		} else {
			*cannot = 1;
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

/* Did the draft change the topology: OSDs added or removed, or an OSD's
 * host, rack or weight? */
static int
draft_topology(const struct draft *d)
{
	if (d->inc.nosd_rm)
		return 1;
	for (size_t i = 0; i < d->inc.nosds; i++) {
		const struct tsr_osdmap_osd *n = &d->inc.osds[i];
		const struct tsr_osdmap_osd *was = tsr_osdmap_osd(d->om, n->id);
		if (was == NULL || strcmp(was->host, n->host) != 0 ||
		    strcmp(was->rack, n->rack) != 0 || was->weight != n->weight)
			return 1;
	}
	return 0;
}

static int
cmp_osd_id(const void *a, const void *b)
{
	int32_t x = ((const struct tsr_osdmap_osd *)a)->id;
	int32_t y = ((const struct tsr_osdmap_osd *)b)->id;

	return (x > y) - (x < y);
}

static int
cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

static int
cmp_pool_id(const void *a, const void *b)
{
	int64_t x = ((const struct tsr_osdmap_pool *)a)->id;
	int64_t y = ((const struct tsr_osdmap_pool *)b)->id;

	return (x > y) - (x < y);
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The incremental's lists as every holder takes them (osdmap.h): each
 * sorted by id, no id twice (a draft never holds one twice: draft_osd
 * and draft_pool reuse a record), and a record changed then removed only
 * removed. */
/* (a PG temp record begins with its pgid) */
static int
cmp_pgid(const void *a, const void *b)
{
	const struct tsr_pgid *x = a, *y = b;

	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	return x->pg < y->pg ? -1 : x->pg > y->pg;
}

static int
draft_sort(struct draft *d)
{
	struct tsr_osdmap_inc *i = &d->inc;
	size_t k = 0;

	for (size_t j = 0; j < i->nosds; j++)
		if (!draft_removes_osd(d, i->osds[j].id))
			i->osds[k++] = i->osds[j];
	i->nosds = k;
	k = 0;
	for (size_t j = 0; j < i->npools; j++) {
		int gone = 0;
		for (size_t r = 0; r < i->npool_rm && !gone; r++)
			gone = i->pool_rm[r] == i->pools[j].id;
		if (!gone)
			i->pools[k++] = i->pools[j];
	}
	i->npools = k;
	/* PG temp mappings left pointing at no PG (a pool removed) go; the
	 * map's own among them are removed */
	k = 0;
	for (size_t j = 0; j < i->npg_temp; j++) {
		const struct tsr_osdmap_pool *p = draft_pool_by_id(d, i->pg_temp[j].pgid.pool);
		if (p && i->pg_temp[j].pgid.pg < p->pg_num)
			i->pg_temp[k++] = i->pg_temp[j];
	}
	i->npg_temp = k;
	for (size_t j = 0; j < d->om->npg_temp; j++) {
		const struct tsr_osdmap_pg_temp *t = &d->om->pg_temp[j];
		const struct tsr_osdmap_pool *p = draft_pool_by_id(d, t->pgid.pool);
		int listed = 0;
		struct tsr_pgid *v;

		if (p && t->pgid.pg < p->pg_num)
			continue;
		for (size_t r = 0; r < i->npg_temp_rm && !listed; r++)
			listed = i->pg_temp_rm[r].pool == t->pgid.pool &&
				 i->pg_temp_rm[r].pg == t->pgid.pg;
		if (listed)
			continue;
		if ((v = realloc(i->pg_temp_rm, (i->npg_temp_rm + 1) * sizeof(*v))) == NULL)
			return -ENOMEM;
		i->pg_temp_rm = v;
		v[i->npg_temp_rm++] = t->pgid;
	}
	if (i->npg_temp)
		qsort(i->pg_temp, i->npg_temp, sizeof(*i->pg_temp), cmp_pgid);
	if (i->npg_temp_rm)
		qsort(i->pg_temp_rm, i->npg_temp_rm, sizeof(*i->pg_temp_rm), cmp_pgid);
	if (i->nosds)
		qsort(i->osds, i->nosds, sizeof(*i->osds), cmp_osd_id);
	if (i->nosd_rm)
		qsort(i->osd_rm, i->nosd_rm, sizeof(*i->osd_rm), cmp_i32);
	if (i->npools)
		qsort(i->pools, i->npools, sizeof(*i->pools), cmp_pool_id);
	if (i->npool_rm)
		qsort(i->pool_rm, i->npool_rm, sizeof(*i->pool_rm), cmp_i64);
	return 0;
}

/* The OSDs as the draft leaves them, sorted by id (malloc'd; NULL on no
 * memory). */
static struct tsr_osdmap_osd *
draft_osds(struct draft *d, size_t *n)
{
	const struct tsr_osdmap *m = d->om;
	struct tsr_osdmap_osd *v = malloc((m->nosds + d->inc.nosds + 1) * sizeof(*v));
	size_t i = 0, j = 0, k = 0;

	if (v == NULL || draft_sort(d) < 0) {
		free(v);
		return NULL;
	}
	while (i < m->nosds || j < d->inc.nosds) {
		if (j == d->inc.nosds || (i < m->nosds && m->osds[i].id < d->inc.osds[j].id)) {
			if (!draft_removes_osd(d, m->osds[i].id))
				v[k++] = m->osds[i];
			i++;
		} else {
			if (i < m->nosds && m->osds[i].id == d->inc.osds[j].id)
				i++;
			v[k++] = d->inc.osds[j++];
		}
	}
	*n = k;
	return v;
}

/* Keep the encoded incremental that made epoch e of map which. */
static void
keep_inc(struct mon_state *s, int which, uint64_t e, const void *p, size_t len)
{
	struct mon_incs *r = &s->mds_incs;
	size_t at = e % MON_INC_KEEP;

	if (!s->keep_incs)
		return;
	if (which == TSR_MON_MAP_OSD) {
		hist_add(&s->osd_hist, e, p, len);
		return;
	}
	free(r->data[at]);
	r->epoch[at] = 0;
	/* out of memory: subscribers that far behind get the full map */
	if ((r->data[at] = malloc(len ? len : 1)) == NULL)
		return;
	memcpy(r->data[at], p, len);
	r->len[at] = len;
	r->epoch[at] = e;
}

/* Encoded incrementals (malloc'd; NULL, 0 for a map not changed). */
struct sealed {
	uint8_t *inc[TSR_MON_NMAPS];
	size_t len[TSR_MON_NMAPS];
};

static void
sealed_free(struct sealed *z)
{
	for (int w = 0; w < TSR_MON_NMAPS; w++)
		free(z->inc[w]);
	memset(z, 0, sizeof(*z));
}

static uint8_t *
take_enc(struct tsr_enc *e, size_t *len)
{
	if (tsr_enc_error(e)) {
		tsr_enc_release(e);
		return NULL;
	}
	return tsr_enc_take(e, len);
}

/* Apply encoded incrementals to s, as every monitor applies a decision's:
 * both decoded first, each checked by its map's apply (s unchanged on
 * error, but for an MDS map refused after the OSD map took its part:
 * then s->fatal, which no change makes as both maps are never changed
 * by one). */
static int
apply_incs(struct mon_state *s, const struct sealed *z, char *why, size_t whylen)
{
	struct tsr_osdmap_inc oi;
	struct tsr_mdsmap_inc mi;
	int rc = 0;

	memset(&oi, 0, sizeof(oi));
	memset(&mi, 0, sizeof(mi));
	if (z->inc[0] && (rc = tsr_osdmap_inc_decode(z->inc[0], z->len[0], &oi, why,
						     whylen)) < 0)
		return rc;
	if (z->inc[1] && (rc = tsr_mdsmap_inc_decode(z->inc[1], z->len[1], &mi, why,
						     whylen)) < 0)
		goto out;
	if (z->inc[0]) {
		if ((rc = tsr_osdmap_apply(&s->osdmap, &oi, why, whylen)) < 0)
			goto out;
		keep_inc(s, 0, oi.epoch, z->inc[0], z->len[0]);
	}
	if (z->inc[1]) {
		if ((rc = tsr_mdsmap_apply(&s->mdsmap, &mi, why, whylen)) < 0) {
			s->fatal |= z->inc[0] != NULL;
			goto out;
		}
		keep_inc(s, 1, mi.epoch, z->inc[1], z->len[1]);
	}
out:
	if (z->inc[0])
		tsr_osdmap_inc_free(&oi);
	if (z->inc[1])
		tsr_mdsmap_inc_free(&mi);
	return rc;
}

/* Finish the draft: the placement map when the topology moved, then the
 * check every holder makes (tsr_osdmap_apply, tsr_mdsmap_apply), made
 * here by applying the incrementals to s.  0 with s changed and the
 * encodings in z; a negative errno with the reason in out and s as it
 * was (s->fatal set when this monitor cannot compute what others can). */
static int
draft_seal(struct mon_state *s, struct draft *d, struct sealed *z,
	   struct tsr_sbuf *out)
{
	struct tsr_mdsmap_inc minc;
	char why[256];
	struct tsr_enc e;
	int rc;

	memset(z, 0, sizeof(*z));
	if (d->inc.epoch && s->placer.encode &&
	    (draft_topology(d) || (d->inc.has_pmap && d->inc.placement[0] &&
				   strcmp(d->inc.placement, d->om->placement) != 0))) {
		struct tsr_osdmap view = *d->om;
		void *blob = NULL;
		size_t len = 0;
		int cannot;

		/* (the plugin this change chose, or the map's) */
		if (d->inc.has_pmap && d->inc.placement[0])
			memcpy(view.placement, d->inc.placement, sizeof(view.placement));
		if ((view.osds = draft_osds(d, &view.nosds)) == NULL)
			return FAIL(-ENOMEM, "out of memory");
		rc = state_placement_map(&s->placer, &view, &blob, &len, &cannot, out);
		free(view.osds);
		s->fatal |= cannot;
		if (rc < 0)
			return rc;
		free(d->inc.pmap);
		d->inc.has_pmap = 1;
		memcpy(d->inc.placement, view.placement, sizeof(d->inc.placement));
		d->inc.pmap = blob;
		d->inc.pmap_len = len;
	}
	if (d->inc.epoch) {
		if (draft_sort(d) < 0)
			return FAIL(-ENOMEM, "out of memory");
		tsr_enc_init(&e);
		tsr_osdmap_inc_encode(&e, &d->inc);
		if ((z->inc[0] = take_enc(&e, &z->len[0])) == NULL)
			return FAIL(-ENOMEM, "out of memory");
	}
	if (d->mds_copied && d->mds.epoch != d->mm->epoch) {
		if (tsr_mdsmap_diff(d->mm, &d->mds, &minc) < 0) {
			sealed_free(z);
			return FAIL(-ENOMEM, "out of memory");
		}
		tsr_enc_init(&e);
		tsr_mdsmap_inc_encode(&e, &minc);
		tsr_mdsmap_inc_free(&minc);
		if ((z->inc[1] = take_enc(&e, &z->len[1])) == NULL) {
			sealed_free(z);
			return FAIL(-ENOMEM, "out of memory");
		}
	}
	/* Whatever a command let through, the maps it leaves must be ones
	 * every holder accepts (an address with a blank, an option with a
	 * control byte would make every subscriber refuse every map from
	 * here on): applied here as every holder will apply them. */
	rc = apply_incs(s, z, why, sizeof(why));
	if (rc < 0) {
		sealed_free(z);
		return FAIL(rc == -ENOMEM ? -ENOMEM : -EBADMSG, "refused: the map "
			    "would not be valid: %s", why);
	}
	return 0;
}


/* The session (latest change) of client, or NULL. */
static struct mon_session *
session_of(struct mon_state *s, uint64_t client)
{
	for (size_t i = 0; i < s->nsessions; i++)
		if (s->sessions[i].client == client)
			return &s->sessions[i];
	return NULL;
}

/* A change (client, tid) seen before: 1 with its first result in out and
 * *status (or -ESTALE for an older one); 0 for a new one. */
static int
session_seen(struct mon_state *s, uint64_t client, uint64_t tid, int *status,
	     struct tsr_sbuf *out)
{
	struct mon_session *ses = session_of(s, client);

	if (ses == NULL || tid > ses->tid)
		return 0;
	if (tid < ses->tid)
		*status = FAIL(-ESTALE, "an older request of this client, superseded");
	else
		*status = (tsr_sbuf_printf(out, "%s", ses->text ? ses->text : ""),
			   ses->status);
	return 1;
}

static void
session_put(struct mon_state *s, uint64_t client, uint64_t tid, int status,
	    const char *text)
{
	struct mon_session *ses = session_of(s, client);

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
	ses->status = status;
	ses->text = strdup(text);
}

/* Decide argv against s and apply what it changes: 0 or the change's
 * status, with the result or the reason in out; z gets the encoded
 * incrementals (none when it failed or changed nothing). */
static int
decide(struct mon_state *s, int argc, char **argv, struct sealed *z,
       struct tsr_sbuf *out)
{
	struct draft d;
	int rc;

	memset(z, 0, sizeof(*z));
	draft_init(&d, s);
	rc = change(s, &d, argc, argv, out);
	if (rc == 0) {
		struct tsr_sbuf why;
		tsr_sbuf_init(&why);
		if ((rc = draft_seal(s, &d, z, &why)) < 0) {
			/* it cannot be: it never happened */
			tsr_sbuf_reset(out);
			tsr_sbuf_printf(out, "%s", tsr_sbuf_str(&why));
		}
		tsr_sbuf_release(&why);
	}
	draft_free(&d);
	return rc;
}

int
state_apply(struct mon_state *s, uint64_t client, uint64_t tid, int argc,
	    char **argv, struct tsr_sbuf *out)
{
	struct sealed z;
	int rc;

	s->applied++;
	if (session_seen(s, client, tid, &rc, out))
		return rc;
	/* the words passed this check where the command was accepted; a log
	 * entry is checked again, as the change code takes them as checked */
	if ((rc = state_classify(argc, argv, out)) != 1) {
		tsr_sbuf_reset(out);
		return FAIL(-EINVAL, "not a change: '%s%s%s'", argc ? argv[0] : "",
			    argc > 1 ? " " : "", argc > 1 ? argv[1] : "");
	}
	rc = decide(s, argc, argv, &z, out);
	sealed_free(&z);
	session_put(s, client, tid, rc, tsr_sbuf_str(out));
	return rc;
}

/* ---- Log entries ----------------------------------------------------------
 *
 *   v1 (a command: monmsg.h MON_CMD's encoding)
 *       envelope v1 { u64 client, u64 tid, u32 argc, argc x string }
 *   v2 (a decision)
 *       envelope v2, compat 2 {
 *         u64 client, u64 tid, string what,  the change, for logs
 *         i32 status, string text,           its result
 *         bytes osd_inc, bytes mds_inc       the incrementals ("": none)
 *       }
 */

#define WHAT_MAX 96

static void
what_of(int argc, char **argv, char *what, size_t len)
{
	size_t at = 0;

	what[0] = '\0';
	for (int i = 0; i < argc && i < 4 && at + 1 < len; i++)
		at += (size_t)snprintf(what + at, len - at, "%s%.40s", i ? " " : "",
				       argv[i]);
}

uint8_t *
state_decide(struct mon_state *s, uint64_t client, uint64_t tid, int argc,
	     char **argv, int *status, struct tsr_sbuf *out, size_t *len)
{
	struct sealed z;
	char what[WHAT_MAX];
	struct tsr_enc e;
	size_t m;
	int rc;

	memset(&z, 0, sizeof(z));
	s->applied++;
	if (!session_seen(s, client, tid, &rc, out)) {
		/* the caller checked the words (state_classify) */
		rc = decide(s, argc, argv, &z, out);
		session_put(s, client, tid, rc, tsr_sbuf_str(out));
	}
	*status = rc;
	what_of(argc, argv, what, sizeof(what));
	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 2, 2);
	tsr_enc_u64(&e, client);
	tsr_enc_u64(&e, tid);
	tsr_enc_str(&e, what);
	tsr_enc_i32(&e, rc);
	tsr_enc_str(&e, tsr_sbuf_str(out));
	tsr_enc_bytes(&e, z.inc[0], z.len[0]);
	tsr_enc_bytes(&e, z.inc[1], z.len[1]);
	tsr_enc_end_struct(&e, m);
	sealed_free(&z);
	return take_enc(&e, len);
}

int
state_apply_entry(struct mon_state *s, const void *p, size_t len,
		  struct mon_entry *en, struct tsr_sbuf *out)
{
	struct tsr_dec d, sub;
	struct sealed z;
	const void *b;
	size_t bl;
	uint8_t ver;
	char why[256];
	int rc;

	memset(en, 0, sizeof(*en));
	tsr_dec_init(&d, p, len);
	if (tsr_dec_begin_struct(&d, 2, &ver, &sub) < 0)
		return FAIL(-EBADMSG, "a log entry that does not decode");
	if (ver == 1) {
		struct tsr_mon_cmd cmd;
		if (state_entry_decode(p, len, &cmd) < 0)
			return FAIL(-EBADMSG, "a log entry (a command) that does "
				    "not decode");
		en->client = cmd.client;
		en->tid = cmd.tid;
		en->version = 1;
		what_of((int)cmd.argc, cmd.argv, en->what, sizeof(en->what));
		rc = state_apply(s, cmd.client, cmd.tid, (int)cmd.argc, cmd.argv, out);
		tsr_monmsg_cmd_free(&cmd);
		return rc;
	}
	en->version = 2;
	en->client = tsr_dec_u64(&sub);
	en->tid = tsr_dec_u64(&sub);
	tsr_dec_str(&sub, en->what, sizeof(en->what));
	en->status = tsr_dec_i32(&sub);
	tsr_dec_bytes(&sub, &b, &bl, TSR_MONMSG_MAX_TEXT);
	en->text = b;
	en->text_len = bl;
	memset(&z, 0, sizeof(z));
	for (int w = 0; w < TSR_MON_NMAPS; w++)
		tsr_dec_bytes(&sub, (const void **)&z.inc[w], &z.len[w], TSR_MONMSG_MAX_ENTRY);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d))
		return FAIL(-EBADMSG, "a log entry (a decision) that does not decode");
	for (int w = 0; w < TSR_MON_NMAPS; w++)
		if (z.len[w] == 0)
			z.inc[w] = NULL;
	s->applied++;
	if (session_seen(s, en->client, en->tid, &rc, out))
		return rc;
	if ((rc = apply_incs(s, &z, why, sizeof(why))) < 0) {
		/* the leader applied these very bytes before proposing them:
		 * this monitor's maps are not the leader's */
		s->fatal = 1;
		return FAIL(-EIO, "the change's incrementals do not apply here: %s", why);
	}
	tsr_sbuf_printf(out, "%.*s", (int)bl, (const char *)b);
	session_put(s, en->client, en->tid, en->status, tsr_sbuf_str(out));
	return en->status;
}

int
state_copy(struct mon_state *dst, const struct mon_state *src)
{
	struct mon_state s;

	memset(&s, 0, sizeof(s));
	if (tsr_osdmap_copy(&s.osdmap, &src->osdmap) < 0)
		return -ENOMEM;
	if (tsr_mdsmap_copy(&s.mdsmap, &src->mdsmap) < 0) {
		tsr_osdmap_free(&s.osdmap);
		return -ENOMEM;
	}
	for (size_t i = 0; i < src->nsessions; i++) {
		s.sessions[i] = src->sessions[i];
		s.sessions[i].text = src->sessions[i].text ? strdup(src->sessions[i].text)
							   : NULL;
		s.nsessions = i + 1;
		if (src->sessions[i].text && s.sessions[i].text == NULL) {
			state_free(&s);
			return -ENOMEM;
		}
	}
	s.next_session = src->next_session;
	s.applied = src->applied;
	s.placer = src->placer;
	s.keep_incs = 0;
	*dst = s;
	return 0;
}

/* ---- Reads ---------------------------------------------------------------*/

static const struct {
	const char *code;
	int level;
	const char *meaning;
} health_checks[] = {
#define MON_HEALTH_ROW(code, sev, meaning) { #code, HEALTH_##sev, meaning },
#define HEALTH_WARN 1
#define HEALTH_ERR 2
	MON_HEALTH_CHECKS(MON_HEALTH_ROW)
#undef HEALTH_WARN
#undef HEALTH_ERR
#undef MON_HEALTH_ROW
};

const char *
state_health_name(int level)
{
	return level == 0 ? "HEALTH_OK" : level == 1 ? "HEALTH_WARN" : "HEALTH_ERR";
}

const char *
state_health_code(int code)
{
	return code >= 0 && code < MON_HEALTH_COUNT ? health_checks[code].code : NULL;
}

void
state_health_init(struct mon_health *h)
{
	h->level = 0;
	tsr_sbuf_init(&h->checks);
	tsr_sbuf_init(&h->reasons);
}

void
state_health_release(struct mon_health *h)
{
	tsr_sbuf_release(&h->checks);
	tsr_sbuf_release(&h->reasons);
}

void
state_health_raise(struct mon_health *h, enum mon_health_code code, const char *detail,
		   const char *fmt, ...)
{
	char summary[200];
	va_list ap;
	int first = h->checks.len == 0;

	va_start(ap, fmt);
	vsnprintf(summary, sizeof(summary), fmt, ap);
	va_end(ap);
	if (health_checks[code].level > h->level)
		h->level = health_checks[code].level;
	tsr_sbuf_printf(&h->checks, "%s{\"code\": \"%s\", \"severity\": \"%s\", "
			"\"summary\": ", first ? "" : ", ", health_checks[code].code,
			state_health_name(health_checks[code].level));
	tsr_sbuf_json_str(&h->checks, summary);
	tsr_sbuf_printf(&h->checks, ", \"meaning\": ");
	tsr_sbuf_json_str(&h->checks, health_checks[code].meaning);
	tsr_sbuf_printf(&h->checks, ", \"detail\": [%s]}", detail ? detail : "");
	tsr_sbuf_printf(&h->reasons, "%s", first ? "" : ", ");
	tsr_sbuf_json_str(&h->reasons, summary);
}

/* A detail line per OSD for which pick() holds, at most 32 then a count. */
static void
osd_detail(const struct tsr_osdmap *m, int (*pick)(const struct tsr_osdmap_osd *),
	   const char *what, struct tsr_sbuf *out)
{
	size_t n = 0;
	char line[160];

	for (size_t i = 0; i < m->nosds; i++) {
		const struct tsr_osdmap_osd *o = &m->osds[i];
		if (!pick(o))
			continue;
		if (n < 32) {
			snprintf(line, sizeof(line), "osd.%d (host %s) is %s", o->id,
				 o->host, what);
			tsr_sbuf_printf(out, "%s", n ? ", " : "");
			tsr_sbuf_json_str(out, line);
		}
		n++;
	}
	if (n > 32) {
		snprintf(line, sizeof(line), "and %zu more", n - 32);
		tsr_sbuf_printf(out, ", ");
		tsr_sbuf_json_str(out, line);
	}
}

static int
osd_is_down(const struct tsr_osdmap_osd *o)
{
	return !o->up;
}

static int
osd_is_out(const struct tsr_osdmap_osd *o)
{
	return !o->in;
}

void
state_health(const struct mon_state *s, struct mon_health *h)
{
	const struct tsr_osdmap *m = &s->osdmap;
	size_t down = 0, out_n = 0, in = 0;
	struct tsr_sbuf d;

	for (size_t i = 0; i < m->nosds; i++) {
		down += !m->osds[i].up;
		out_n += !m->osds[i].in;
		in += m->osds[i].in;
	}
	tsr_sbuf_init(&d);
	if (m->nosds == 0)
		state_health_raise(h, MON_HEALTH_OSD_NONE, "", "no OSDs in the cluster");
	if (down) {
		osd_detail(m, osd_is_down, "down", &d);
		state_health_raise(h, MON_HEALTH_OSD_DOWN, tsr_sbuf_str(&d),
				   "%zu of %zu OSDs down", down, m->nosds);
		tsr_sbuf_reset(&d);
	}
	if (out_n) {
		osd_detail(m, osd_is_out, "out", &d);
		state_health_raise(h, MON_HEALTH_OSD_OUT, tsr_sbuf_str(&d),
				   "%zu of %zu OSDs out", out_n, m->nosds);
		tsr_sbuf_reset(&d);
	}
	if (m->flags & TSR_OSDMAP_NOOUT)
		state_health_raise(h, MON_HEALTH_OSDMAP_NOOUT, "", "noout flag set");
	/* ranks without an MDS, once MDSs exist: that share of the
	 * namespace does not answer */
	for (uint32_t r = 0; s->mdsmap.nmds && r < s->mdsmap.max_mds; r++)
		if (tsr_mdsmap_rank(&s->mdsmap, (int32_t)r) == NULL)
			state_health_raise(h, MON_HEALTH_MDS_RANK_VACANT, "",
					   "rank %u of file system '%s' has no MDS", r,
					   s->mdsmap.fs_name);
	for (size_t i = 0; i < m->npools; i++)
		if (m->nosds && m->pools[i].min_size > in)
			state_health_raise(h, MON_HEALTH_POOL_MIN_SIZE, "",
					   "pool '%s' needs %u OSDs in (min_size), %zu are",
					   m->pools[i].name, m->pools[i].min_size, in);
	/* a pool whose rule cannot place all its copies: fewer distinct
	 * failure domains (hosts, racks, OSDs) with OSDs in than its size */
	for (size_t i = 0; m->nosds && i < m->npools; i++) {
		const struct tsr_osdmap_pool *p = &m->pools[i];
		static const char *const dom[] = { "hosts", "racks", "OSDs" };
		size_t n = 0;
		for (size_t a = 0; a < m->nosds; a++) {
			const struct tsr_osdmap_osd *o = &m->osds[a];
			int first = o->in;
			if (p->rule == MON_RULE_RACK && o->rack[0] == '\0')
				first = 0;
			for (size_t b = 0; b < a && first; b++) {
				const struct tsr_osdmap_osd *x = &m->osds[b];
				if (!x->in)
					continue;
				if ((p->rule == MON_RULE_HOST && strcmp(x->host, o->host) == 0) ||
				    (p->rule == MON_RULE_RACK && strcmp(x->rack, o->rack) == 0))
					first = 0;
			}
			n += first;
		}
		if (p->rule < MON_RULES && n < p->size)
			state_health_raise(h, MON_HEALTH_POOL_RULE, "",
					   "pool '%s' (rule %u: one copy per %.*s) can place %zu of "
					   "its %u copies: the map has %zu %s with OSDs in",
					   p->name, p->rule, (int)strlen(dom[p->rule]) - 1,
					   dom[p->rule], n, p->size, n, dom[p->rule]);
	}
	tsr_sbuf_release(&d);
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
	if (is(argc, argv, "osd", "dump")) {
		const struct tsr_osdmap *m = &s->osdmap;
		tsr_sbuf_printf(out, "{\"osdmap_epoch\": %" PRIu64 ", \"placement\": ",
				m->epoch);
		tsr_sbuf_json_str(out, m->placement);
		tsr_sbuf_printf(out, ", \"noout\": %s, \"osds\": [",
				m->flags & TSR_OSDMAP_NOOUT ? "true" : "false");
		for (size_t i = 0; i < m->nosds; i++) {
			const struct tsr_osdmap_osd *o = &m->osds[i];
			tsr_sbuf_printf(out, "%s\n  {\"id\": %d, \"up\": %s, \"in\": %s, "
					"\"up_from\": %" PRIu64 ", \"up_thru\": %" PRIu64
					", \"addr\": ", i ? "," : "", o->id,
					o->up ? "true" : "false", o->in ? "true" : "false",
					o->up_from, o->up_thru);
			tsr_sbuf_json_str(out, o->addr);
			tsr_sbuf_printf(out, "}");
		}
		tsr_sbuf_printf(out, "],\n \"pg_temp\": [");
		for (size_t i = 0; i < m->npg_temp; i++) {
			const struct tsr_osdmap_pg_temp *t = &m->pg_temp[i];
			tsr_sbuf_printf(out, "%s{\"pgid\": \"%" PRId64 ".%x\", \"osds\": [",
					i ? ", " : "", t->pgid.pool, t->pgid.pg);
			for (uint32_t j = 0; j < t->n; j++)
				tsr_sbuf_printf(out, "%s%d", j ? ", " : "", t->osds[j]);
			tsr_sbuf_printf(out, "]}");
		}
		tsr_sbuf_printf(out, "],\n \"blocklist\": [");
		for (size_t i = 0; i < m->nblocklist; i++)
			tsr_sbuf_printf(out, "%s{\"client\": \"%" PRIx64 "\", \"until\": %"
					PRIu64 "}", i ? ", " : "", m->blocklist[i].client,
					m->blocklist[i].until);
		tsr_sbuf_printf(out, "]}");
		return 0;
	}
	if (is(argc, argv, "osd", "tree")) {
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
 *   envelope v3 (compat 2) { u64 applied,
 *                 osdmap (osdmap.h), mdsmap (mdsmap.h),
 *                 u32 n, n x { u64 client, u64 tid, i32 status,
 *                              bytes text },
 *                 u32 next_session,
 *                 u64 first, u32 n, n x bytes inc }     v3: the OSD map's
 *                                                       history (state.h)
 *
 * Version 1 (maps of the monitor's own) is not read: compat is 2.  A
 * version 2 snapshot (no history) starts the history at the next epoch;
 * a version 2 reader skips it.
 */

uint8_t *
state_encode(const struct mon_state *s, size_t *len)
{
	struct tsr_enc e;
	size_t m;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 3, 2);
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
	tsr_enc_u64(&e, s->osd_hist.first);
	tsr_enc_u32(&e, (uint32_t)s->osd_hist.n);
	for (size_t i = 0; i < s->osd_hist.n; i++)
		tsr_enc_bytes(&e, s->osd_hist.data[s->osd_hist.head + i],
			      s->osd_hist.len[s->osd_hist.head + i]);
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
	s.osd_hist.keep = out->osd_hist.keep;
	if (ver >= 3) {
		uint64_t first = tsr_dec_u64(&sub);
		n = tsr_dec_u32(&sub);
		/* each entry takes 4 bytes at least: the count is bounded by
		 * what is left before anything is allocated */
		if (tsr_dec_error(&sub) || n > tsr_dec_remaining(&sub) / 4 ||
		    (n && first == 0) || first > UINT64_MAX - n)
			goto bad;
		for (uint32_t i = 0; i < n && !tsr_dec_error(&sub); i++) {
			const void *b;
			size_t bl;
			tsr_dec_bytes(&sub, &b, &bl, 64u << 20);
			if (!tsr_dec_error(&sub))
				hist_add(&s.osd_hist, first + i, b, bl);
		}
		/* an entry it could not keep (no memory) leaves a shorter
		 * history: the epochs before go to subscribers as a full map */
	}
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) ||
	    s.next_session >= MON_SESSIONS)
		goto bad;
	s.placer = out->placer;
	s.keep_incs = out->keep_incs;
	state_free(out);
	*out = s;
	return 0;
bad:
	state_free(&s);
	return -EBADMSG;
}
