/* osdmap.c — the OSD map, its encoding and its incrementals (osdmap.h). */
#include "map/osdmap.h"
#include "map/maputil.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
tsr_osdmap_init(struct tsr_osdmap *m)
{
	memset(m, 0, sizeof(*m));
	m->epoch = 1;
	m->next_pool_id = 1;
}

void
tsr_osdmap_free(struct tsr_osdmap *m)
{
	free(m->pmap);
	free(m->osds);
	free(m->pools);
	free(m->pg_temp);
	free(m->blocklist);
	memset(m, 0, sizeof(*m));
}

int
tsr_osdmap_copy(struct tsr_osdmap *dst, const struct tsr_osdmap *src)
{
	struct tsr_osdmap m = *src;

	m.pmap = tsr_map_dup(src->pmap, src->pmap_len);
	m.osds = tsr_map_dup(src->osds, src->nosds * sizeof(*src->osds));
	m.pools = tsr_map_dup(src->pools, src->npools * sizeof(*src->pools));
	m.pg_temp = tsr_map_dup(src->pg_temp, src->npg_temp * sizeof(*src->pg_temp));
	m.blocklist = tsr_map_dup(src->blocklist, src->nblocklist * sizeof(*src->blocklist));
	if (m.pmap == NULL || m.osds == NULL || m.pools == NULL || m.pg_temp == NULL ||
	    m.blocklist == NULL) {
		tsr_osdmap_free(&m);
		return -ENOMEM;
	}
	*dst = m;
	return 0;
}

int
tsr_osdmap_name_ok(const char *n)
{
	size_t l = strnlen(n, TSR_OSDMAP_NAME);

	if (l == 0 || l >= TSR_OSDMAP_NAME || n[0] == '-')
		return 0;
	for (size_t i = 0; i < l; i++)
		if (!(n[i] >= 'a' && n[i] <= 'z') && !(n[i] >= 'A' && n[i] <= 'Z') &&
		    !(n[i] >= '0' && n[i] <= '9') && n[i] != '_' && n[i] != '-' &&
		    n[i] != '.')
			return 0;
	return 1;
}

/* ---- Sorted lists ------------------------------------------------------------
 *
 * OSDs, pools and PG temp mappings are arrays sorted by a key that is each
 * record's first member (an i32, an i64, a struct tsr_pgid), so one
 * comparison serves two records, or a record and a bare key of an
 * incremental's removal list. */

typedef int (*cmp_fn)(const void *a, const void *b);

struct kind {
	const char *what;       /* for errors: "OSD", "pool", "PG temp mapping" */
	size_t sz, ksz;         /* a record, a key */
	cmp_fn cmp;
	void (*name)(const void *key, char *buf, size_t len);
};

static int
cmp_osd(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

static int
cmp_pool(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int
cmp_pgid(const void *a, const void *b)
{
	const struct tsr_pgid *x = a, *y = b;

	if (x->pool != y->pool)
		return (x->pool > y->pool) - (x->pool < y->pool);
	return (x->pg > y->pg) - (x->pg < y->pg);
}

static void
name_osd(const void *k, char *buf, size_t len)
{
	snprintf(buf, len, "osd.%" PRId32, *(const int32_t *)k);
}

static void
name_pool(const void *k, char *buf, size_t len)
{
	snprintf(buf, len, "pool %" PRId64, *(const int64_t *)k);
}

/* PGs are named as Ceph names them: pool.pg, pg in hexadecimal. */
static void
name_pgid(const void *k, char *buf, size_t len)
{
	const struct tsr_pgid *g = k;
	snprintf(buf, len, "PG %" PRId64 ".%" PRIx32, g->pool, g->pg);
}

static void
name_pg_temp(const void *k, char *buf, size_t len)
{
	const struct tsr_pgid *g = k;
	snprintf(buf, len, "the PG temp mapping of %" PRId64 ".%" PRIx32, g->pool, g->pg);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static void
name_client(const void *k, char *buf, size_t len)
{
	snprintf(buf, len, "client %" PRIx64, *(const uint64_t *)k);
}

static const struct kind K_OSD = { "OSD", sizeof(struct tsr_osdmap_osd),
				   sizeof(int32_t), cmp_osd, name_osd };
static const struct kind K_POOL = { "pool", sizeof(struct tsr_osdmap_pool),
				    sizeof(int64_t), cmp_pool, name_pool };
static const struct kind K_PG_TEMP = { "PG temp mapping",
				       sizeof(struct tsr_osdmap_pg_temp),
				       sizeof(struct tsr_pgid), cmp_pgid, name_pg_temp };
static const struct kind K_BLOCK = { "blocklist", sizeof(struct tsr_osdmap_block),
				     sizeof(uint64_t), cmp_u64, name_client };

/* Where key is in base[n], or would go; *found says which. */
static size_t
find(const struct kind *k, const void *base, size_t n, const void *key, int *found)
{
	const char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = k->cmp(b + mid * k->sz, key);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

/* The record of key in base[n] (records or bare keys of kind k), or NULL. */
static void *
lookup(const struct kind *k, const void *base, size_t n, size_t sz, const void *key)
{
	const char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = k->cmp(b + mid * sz, key);
		if (c == 0)
			return (void *)(b + mid * sz);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Check an incremental's changes to one list of the map: upd[nu] (records)
 * and rm[nr] (keys) each sorted with no key twice, no key in both, every
 * removed key in base[n].  *nnew: the updates whose key base lacks. */
static int
list_check(const struct kind *k, uint64_t epoch, const void *base, size_t n,
	   const void *upd, size_t nu, const void *rm, size_t nr, size_t *nnew,
	   char *err, size_t errlen)
{
	const char *u = upd, *r = rm;
	char name[64];
	int found;

	*nnew = 0;
	for (size_t i = 0; i < nu; i++) {
		if (i && k->cmp(u + (i - 1) * k->sz, u + i * k->sz) >= 0) {
			k->name(u + i * k->sz, name, sizeof(name));
			return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64 ": %s "
					"list out of order or with a key twice, at %s",
					epoch, k->what, name);
		}
		find(k, base, n, u + i * k->sz, &found);
		*nnew += !found;
	}
	for (size_t i = 0, j = 0; i < nr; i++) {
		const char *key = r + i * k->ksz;
		k->name(key, name, sizeof(name));
		if (i && k->cmp(r + (i - 1) * k->ksz, key) >= 0)
			return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64 ": %s "
					"removals out of order or with a key twice, at %s",
					epoch, k->what, name);
		if (lookup(k, base, n, k->sz, key) == NULL)
			return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64
					" removes %s, which the map lacks", epoch, name);
		while (j < nu && k->cmp(u + j * k->sz, key) < 0)
			j++;
		if (j < nu && k->cmp(u + j * k->sz, key) == 0)
			return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64
					" both changes and removes %s", epoch, name);
	}
	return 0;
}

/* Apply checked changes to base[*n], which has room for nnew more records:
 * replace in place, remove by compacting from the first key removed, then
 * merge the new records in from the back.  So the cost is O(log n) per
 * replaced record, plus the records behind the first one removed or added. */
static void
list_apply(const struct kind *k, void *base, size_t *n, const void *upd, size_t nu,
	   size_t nnew, const void *rm, size_t nr)
{
	char *b = base;
	const char *u = upd, *r = rm;
	const size_t sz = k->sz;
	int found;

	if (nnew < nu)
		for (size_t i = 0; i < nu; i++) {
			size_t at = find(k, b, *n, u + i * sz, &found);
			if (found)
				memcpy(b + at * sz, u + i * sz, sz);
		}
	if (nr) {
		size_t w = find(k, b, *n, r, &found), j = 0;
		for (size_t i = w; i < *n; i++) {
			if (j < nr && k->cmp(b + i * sz, r + j * k->ksz) == 0) {
				j++;
				continue;
			}
			if (w != i)
				memcpy(b + w * sz, b + i * sz, sz);
			w++;
		}
		*n = w;
	}
	if (nnew) {
		/* w - at is the number of new records not yet placed, all
		 * among u[0 .. i): below at, everything is already in place */
		size_t at = *n, w = *n + nnew, i = nu;
		while (w > at) {
			const char *x = u + (i - 1) * sz;
			int c = at ? k->cmp(b + (at - 1) * sz, x) : -1;
			if (c > 0) {
				memcpy(b + (w - 1) * sz, b + (at - 1) * sz, sz);
				at--;
				w--;
			} else if (c == 0) {
				i--;    /* replaced above */
			} else {
				memcpy(b + (w - 1) * sz, x, sz);
				w--;
				i--;
			}
		}
		*n += nnew;
	}
}

/* ---- Sanity ------------------------------------------------------------------*/

static int
osd_check(const struct tsr_osdmap_osd *o, uint64_t epoch, char *err, size_t errlen)
{
	if (o->id < 0 || o->id >= TSR_OSDMAP_MAX_OSDS)
		return tsr_errf(err, errlen, -EINVAL, "OSD id %" PRId32 " out of "
				"range 0..%d", o->id, TSR_OSDMAP_MAX_OSDS - 1);
	if (!tsr_osdmap_name_ok(o->host) || (o->rack[0] && !tsr_osdmap_name_ok(o->rack)) ||
	    !tsr_map_word_ok(o->addr, sizeof(o->addr)))
		return tsr_errf(err, errlen, -EINVAL, "osd.%" PRId32 ": bad host, "
				"rack or address", o->id);
	if (!isfinite(o->weight) || o->weight <= 0 || o->weight > 65535 ||
	    !isfinite(o->reweight) || o->reweight < 0 || o->reweight > 1)
		return tsr_errf(err, errlen, -EINVAL, "osd.%" PRId32 ": weight %g or "
				"reweight %g out of range", o->id, o->weight, o->reweight);
	if (o->in > 1 || o->up > 1 || o->auto_out > 1)
		return tsr_errf(err, errlen, -EINVAL, "osd.%" PRId32 ": bad state",
				o->id);
	if (o->up_from > epoch || o->up_thru > epoch)
		return tsr_errf(err, errlen, -EINVAL, "osd.%" PRId32 ": up_from %"
				PRIu64 " or up_thru %" PRIu64 " after epoch %" PRIu64,
				o->id, o->up_from, o->up_thru, epoch);
	return 0;
}

static int
pool_check(const struct tsr_osdmap_pool *p, char *err, size_t errlen)
{
	if (p->id <= 0)
		return tsr_errf(err, errlen, -EINVAL, "pool id %" PRId64 " not "
				"positive", p->id);
	if (!tsr_osdmap_name_ok(p->name))
		return tsr_errf(err, errlen, -EINVAL, "pool %" PRId64 ": bad name", p->id);
	if (p->pg_num < 1 || p->pg_num > TSR_OSDMAP_MAX_PG_NUM ||
	    p->size < 1 || p->size > TSR_OSDMAP_MAX_SIZE ||
	    p->min_size < 1 || p->min_size > p->size)
		return tsr_errf(err, errlen, -EINVAL, "pool '%s': pg_num %u, size "
				"%u, min_size %u out of range", p->name,
				p->pg_num, p->size, p->min_size);
	if (!tsr_osdmap_name_ok(p->redundancy) ||
	    !tsr_map_word_ok(p->redundancy_opts, sizeof(p->redundancy_opts)))
		return tsr_errf(err, errlen, -EINVAL, "pool '%s': bad redundancy "
				"plugin or options", p->name);
	return 0;
}

/* pool: the mapping's pool in the map it is to be part of, or NULL. */
static int
pg_temp_check(const struct tsr_osdmap_pg_temp *t, const struct tsr_osdmap_pool *pool,
	      char *err, size_t errlen)
{
	char name[48];

	name_pgid(&t->pgid, name, sizeof(name));
	if (pool == NULL)
		return tsr_errf(err, errlen, -EINVAL, "PG temp mapping of %s: no "
				"pool %" PRId64, name, t->pgid.pool);
	if (t->pgid.pg >= pool->pg_num)
		return tsr_errf(err, errlen, -EINVAL, "PG temp mapping of %s: pool "
				"'%s' has %u PGs", name, pool->name, pool->pg_num);
	if (t->n < 1 || t->n > TSR_OSDMAP_MAX_SIZE)
		return tsr_errf(err, errlen, -EINVAL, "PG temp mapping of %s: %u "
				"OSDs (1..%d)", name, t->n, TSR_OSDMAP_MAX_SIZE);
	for (uint32_t i = 0; i < t->n; i++) {
		if (t->osds[i] < 0 || t->osds[i] >= TSR_OSDMAP_MAX_OSDS)
			return tsr_errf(err, errlen, -EINVAL, "PG temp mapping of %s: "
					"OSD id %" PRId32 " out of range 0..%d", name,
					t->osds[i], TSR_OSDMAP_MAX_OSDS - 1);
		for (uint32_t j = 0; j < i; j++)
			if (t->osds[j] == t->osds[i])
				return tsr_errf(err, errlen, -EINVAL, "PG temp mapping of "
						"%s: osd.%" PRId32 " given twice", name,
						t->osds[i]);
	}
	return 0;
}

int
tsr_osdmap_check(const struct tsr_osdmap *m, char *err, size_t errlen)
{
	int64_t maxpool = 0;
	int rc;

	if (m->epoch == 0)
		return tsr_errf(err, errlen, -EINVAL, "epoch 0");
	if (m->flags & ~TSR_OSDMAP_FLAGS_KNOWN)
		return tsr_errf(err, errlen, -EINVAL, "unknown flags 0x%x",
			    m->flags & ~TSR_OSDMAP_FLAGS_KNOWN);
	if (m->nosds > TSR_OSDMAP_MAX_OSDS || m->npools > TSR_OSDMAP_MAX_POOLS ||
	    m->npg_temp > TSR_OSDMAP_MAX_PG_TEMP)
		return tsr_errf(err, errlen, -EINVAL, "%zu OSDs, %zu pools and %zu PG "
				"temp mappings (at most %d, %d and %u)", m->nosds,
				m->npools, m->npg_temp, TSR_OSDMAP_MAX_OSDS,
				TSR_OSDMAP_MAX_POOLS, TSR_OSDMAP_MAX_PG_TEMP);
	if (m->pmap_len > TSR_OSDMAP_MAX_PMAP || (m->pmap_len && m->pmap == NULL))
		return tsr_errf(err, errlen, -EINVAL, "placement map of %zu bytes",
			    m->pmap_len);
	if (m->placement[0] && !tsr_osdmap_name_ok(m->placement))
		return tsr_errf(err, errlen, -EINVAL, "placement plugin name is not a name");
	for (size_t i = 0; i < m->nosds; i++) {
		const struct tsr_osdmap_osd *o = &m->osds[i];

		if ((rc = osd_check(o, m->epoch, err, errlen)) < 0)
			return rc;
		if (i && o->id <= m->osds[i - 1].id)
			return tsr_errf(err, errlen, -EINVAL, "OSD ids out of order at "
				    "osd.%" PRId32, o->id);
	}
	for (size_t i = 0; i < m->npools; i++) {
		const struct tsr_osdmap_pool *p = &m->pools[i];

		if ((rc = pool_check(p, err, errlen)) < 0)
			return rc;
		if (i && p->id <= m->pools[i - 1].id)
			return tsr_errf(err, errlen, -EINVAL, "pool ids out of order at "
					"pool %" PRId64, p->id);
		for (size_t j = 0; j < i; j++)
			if (strcmp(m->pools[j].name, p->name) == 0)
				return tsr_errf(err, errlen, -EINVAL, "pool name '%s' "
					    "given twice", p->name);
		maxpool = p->id;
	}
	if (m->next_pool_id <= maxpool)
		return tsr_errf(err, errlen, -EINVAL, "next pool id %" PRId64 " not above "
			    "pool %" PRId64, m->next_pool_id, maxpool);
	for (size_t i = 0; i < m->npg_temp; i++) {
		const struct tsr_osdmap_pg_temp *t = &m->pg_temp[i];
		char name[48];

		if (i && cmp_pgid(&m->pg_temp[i - 1].pgid, &t->pgid) >= 0) {
			name_pgid(&t->pgid, name, sizeof(name));
			return tsr_errf(err, errlen, -EINVAL, "PG temp mappings out of "
					"order at %s", name);
		}
		if ((rc = pg_temp_check(t, tsr_osdmap_pool(m, t->pgid.pool), err,
					errlen)) < 0)
			return rc;
	}
	if (m->nblocklist > TSR_OSDMAP_MAX_BLOCKLIST)
		return tsr_errf(err, errlen, -EINVAL, "%zu clients blocklisted (at most %d)",
				m->nblocklist, TSR_OSDMAP_MAX_BLOCKLIST);
	for (size_t i = 1; i < m->nblocklist; i++)
		if (m->blocklist[i - 1].client >= m->blocklist[i].client)
			return tsr_errf(err, errlen, -EINVAL, "blocklist out of order at "
					"client %" PRIx64, m->blocklist[i].client);
	return 0;
}

int
tsr_osdmap_blocked(const struct tsr_osdmap *m, uint64_t client, uint64_t now_s)
{
	const struct tsr_osdmap_block *b = lookup(&K_BLOCK, m->blocklist, m->nblocklist,
						  K_BLOCK.sz, &client);

	return b != NULL && now_s < b->until;
}

struct tsr_osdmap_osd *
tsr_osdmap_osd(const struct tsr_osdmap *m, int32_t id)
{
	return lookup(&K_OSD, m->osds, m->nosds, K_OSD.sz, &id);
}

struct tsr_osdmap_pool *
tsr_osdmap_pool(const struct tsr_osdmap *m, int64_t id)
{
	return lookup(&K_POOL, m->pools, m->npools, K_POOL.sz, &id);
}

struct tsr_osdmap_pg_temp *
tsr_osdmap_pg_temp(const struct tsr_osdmap *m, int64_t pool, uint32_t pg)
{
	struct tsr_pgid key = { .pool = pool, .pg = pg };

	return lookup(&K_PG_TEMP, m->pg_temp, m->npg_temp, K_PG_TEMP.sz, &key);
}

struct tsr_osdmap_pool *
tsr_osdmap_pool_by_name(const struct tsr_osdmap *m, const char *name)
{
	for (size_t i = 0; i < m->npools; i++)
		if (strcmp(m->pools[i].name, name) == 0)
			return &m->pools[i];
	return NULL;
}

void
tsr_osdmap_counts(const struct tsr_osdmap *m, size_t *up, size_t *in)
{
	*up = *in = 0;
	for (size_t i = 0; i < m->nosds; i++) {
		*up += m->osds[i].up;
		*in += m->osds[i].in;
	}
}

/* ---- Records ---------------------------------------------------------------*/

static void
osd_encode(struct tsr_enc *e, const struct tsr_osdmap_osd *o)
{
	size_t mk = tsr_enc_begin_struct(e, 2, 1);

	tsr_enc_i32(e, o->id);
	tsr_enc_str(e, o->host);
	tsr_enc_str(e, o->rack);
	tsr_enc_str(e, o->addr);
	tsr_enc_double(e, o->weight);
	tsr_enc_double(e, o->reweight);
	tsr_enc_u8(e, o->in);
	tsr_enc_u8(e, o->up);
	tsr_enc_u8(e, o->auto_out);
	tsr_enc_u64(e, o->up_from);
	tsr_enc_u64(e, o->up_thru);
	tsr_enc_end_struct(e, mk);
}

static void
osd_decode(struct tsr_dec *d, struct tsr_osdmap_osd *o)
{
	struct tsr_dec s;
	uint8_t v;

	memset(o, 0, sizeof(*o));
	if (tsr_dec_begin_struct(d, 2, &v, &s) < 0)
		return;
	o->id = tsr_dec_i32(&s);
	tsr_dec_str(&s, o->host, sizeof(o->host));
	tsr_dec_str(&s, o->rack, sizeof(o->rack));
	tsr_dec_str(&s, o->addr, sizeof(o->addr));
	o->weight = tsr_dec_double(&s);
	o->reweight = tsr_dec_double(&s);
	o->in = tsr_dec_u8(&s);
	o->up = tsr_dec_u8(&s);
	o->auto_out = tsr_dec_u8(&s);
	o->up_from = tsr_dec_u64(&s);
	if (v >= 2)
		o->up_thru = tsr_dec_u64(&s);
	tsr_dec_end_struct(d, &s);
}

static void
pool_encode(struct tsr_enc *e, const struct tsr_osdmap_pool *p)
{
	size_t mk = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_i64(e, p->id);
	tsr_enc_str(e, p->name);
	tsr_enc_u32(e, p->pg_num);
	tsr_enc_u32(e, p->size);
	tsr_enc_u32(e, p->min_size);
	tsr_enc_u32(e, p->rule);
	tsr_enc_str(e, p->redundancy);
	tsr_enc_str(e, p->redundancy_opts);
	tsr_enc_end_struct(e, mk);
}

static void
pool_decode(struct tsr_dec *d, struct tsr_osdmap_pool *p)
{
	struct tsr_dec s;
	uint8_t v;

	memset(p, 0, sizeof(*p));
	if (tsr_dec_begin_struct(d, 1, &v, &s) < 0)
		return;
	p->id = tsr_dec_i64(&s);
	tsr_dec_str(&s, p->name, sizeof(p->name));
	p->pg_num = tsr_dec_u32(&s);
	p->size = tsr_dec_u32(&s);
	p->min_size = tsr_dec_u32(&s);
	p->rule = tsr_dec_u32(&s);
	tsr_dec_str(&s, p->redundancy, sizeof(p->redundancy));
	tsr_dec_str(&s, p->redundancy_opts, sizeof(p->redundancy_opts));
	tsr_dec_end_struct(d, &s);
}

static void
pgid_encode(struct tsr_enc *e, const struct tsr_pgid *g)
{
	tsr_enc_i64(e, g->pool);
	tsr_enc_u32(e, g->pg);
}

static void
pgid_decode(struct tsr_dec *d, struct tsr_pgid *g)
{
	memset(g, 0, sizeof(*g));   /* the padding too: keys are compared whole */
	g->pool = tsr_dec_i64(d);
	g->pg = tsr_dec_u32(d);
}

static void
pg_temp_encode(struct tsr_enc *e, const struct tsr_osdmap_pg_temp *t)
{
	pgid_encode(e, &t->pgid);
	tsr_enc_u32(e, t->n);
	for (uint32_t i = 0; i < t->n && i < TSR_OSDMAP_MAX_SIZE; i++)
		tsr_enc_i32(e, t->osds[i]);
}

/* n is bounded before anything is read into the fixed array; n = 0 (no
 * mapping) decodes here and is refused by the checks. */
static void
pg_temp_decode(struct tsr_dec *d, struct tsr_osdmap_pg_temp *t)
{
	memset(t, 0, sizeof(*t));
	pgid_decode(d, &t->pgid);
	t->n = tsr_dec_u32(d);
	if (t->n > TSR_OSDMAP_MAX_SIZE) {
		t->n = 0;
		tsr_dec_fail(d, -EBADMSG);
		return;
	}
	for (uint32_t i = 0; i < t->n; i++)
		t->osds[i] = tsr_dec_i32(d);
}

/* The blob, copied out of the decoder. */
static void
dec_blob(struct tsr_dec *d, void **out, size_t *len)
{
	const void *p;
	size_t n;

	*out = NULL;
	*len = 0;
	tsr_dec_bytes(d, &p, &n, TSR_OSDMAP_MAX_PMAP);
	if (tsr_dec_error(d) || n == 0)
		return;
	if ((*out = tsr_map_dup(p, n)) == NULL) {
		tsr_dec_fail(d, -ENOMEM);
		return;
	}
	*len = n;
}

/* envelope header (6 bytes) + the smallest body of a record (version 1) */
#define OSD_MIN (6 + 4 + 3 * 4 + 16 + 3 + 8)
#define POOL_MIN (6 + 8 + 4 + 16 + 2 * 4)
#define PGID_MIN (8 + 4)
#define PG_TEMP_MIN (PGID_MIN + 4)

/* A list of count records from d, allocated only for a count the input can
 * back (tsr_map_count); NULL with d failed otherwise. */
static void *
dec_list(struct tsr_dec *d, size_t max, size_t min_bytes, size_t sz, size_t *n)
{
	void *p;

	*n = tsr_map_count(d, max, min_bytes);
	if ((p = tsr_map_alloc(*n, sz)) == NULL)
		tsr_dec_fail(d, -ENOMEM);
	return p;
}

#define BLOCK_MIN 16

static void
blocklist_encode(struct tsr_enc *e, const struct tsr_osdmap_block *b, size_t n)
{
	tsr_enc_u32(e, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		tsr_enc_u64(e, b[i].client);
		tsr_enc_u64(e, b[i].until);
	}
}

static struct tsr_osdmap_block *
blocklist_decode(struct tsr_dec *d, size_t *n)
{
	struct tsr_osdmap_block *b = dec_list(d, TSR_OSDMAP_MAX_BLOCKLIST, BLOCK_MIN,
					      sizeof(*b), n);

	for (size_t i = 0; i < *n && !tsr_dec_error(d); i++) {
		b[i].client = tsr_dec_u64(d);
		b[i].until = tsr_dec_u64(d);
	}
	return b;
}

/* ---- The full map ------------------------------------------------------------*/

int
tsr_osdmap_encode(struct tsr_enc *e, const struct tsr_osdmap *m)
{
	size_t mk = tsr_enc_begin_struct(e, 3, 1);

	tsr_enc_u64(e, m->epoch);
	tsr_enc_u32(e, m->flags);
	tsr_enc_i64(e, m->next_pool_id);
	tsr_enc_str(e, m->placement);
	tsr_enc_bytes(e, m->pmap, m->pmap_len);
	tsr_enc_u32(e, (uint32_t)m->nosds);
	for (size_t i = 0; i < m->nosds; i++)
		osd_encode(e, &m->osds[i]);
	tsr_enc_u32(e, (uint32_t)m->npools);
	for (size_t i = 0; i < m->npools; i++)
		pool_encode(e, &m->pools[i]);
	tsr_enc_u32(e, (uint32_t)m->npg_temp);
	for (size_t i = 0; i < m->npg_temp; i++)
		pg_temp_encode(e, &m->pg_temp[i]);
	blocklist_encode(e, m->blocklist, m->nblocklist);
	tsr_enc_end_struct(e, mk);
	return tsr_enc_error(e);
}

int
tsr_osdmap_decode(const void *buf, size_t len, struct tsr_osdmap *out, char *err,
		  size_t errlen)
{
	struct tsr_osdmap m;
	struct tsr_dec d, s;
	uint8_t v;
	int rc;

	tsr_osdmap_init(&m);
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 3, &v, &s) < 0)
		return tsr_errf(err, errlen, tsr_dec_error(&d), "OSD map: bad envelope");
	m.epoch = tsr_dec_u64(&s);
	m.flags = tsr_dec_u32(&s);
	m.next_pool_id = tsr_dec_i64(&s);
	tsr_dec_str(&s, m.placement, sizeof(m.placement));
	dec_blob(&s, &m.pmap, &m.pmap_len);
	m.osds = dec_list(&s, TSR_OSDMAP_MAX_OSDS, OSD_MIN, sizeof(*m.osds), &m.nosds);
	for (size_t i = 0; i < m.nosds && !tsr_dec_error(&s); i++)
		osd_decode(&s, &m.osds[i]);
	m.pools = dec_list(&s, TSR_OSDMAP_MAX_POOLS, POOL_MIN, sizeof(*m.pools),
			   &m.npools);
	for (size_t i = 0; i < m.npools && !tsr_dec_error(&s); i++)
		pool_decode(&s, &m.pools[i]);
	if (v >= 2) {
		m.pg_temp = dec_list(&s, TSR_OSDMAP_MAX_PG_TEMP, PG_TEMP_MIN,
				     sizeof(*m.pg_temp), &m.npg_temp);
		for (size_t i = 0; i < m.npg_temp && !tsr_dec_error(&s); i++)
			pg_temp_decode(&s, &m.pg_temp[i]);
	}
	if (v >= 3)
		m.blocklist = blocklist_decode(&s, &m.nblocklist);
	if ((rc = tsr_dec_end_struct(&d, &s)) < 0 || tsr_dec_remaining(&d)) {
		tsr_osdmap_free(&m);
		return tsr_errf(err, errlen, rc < 0 ? rc : -EBADMSG,
			    "OSD map: %s", rc < 0 ? "truncated or malformed" :
			    "bytes after the map");
	}
	if ((rc = tsr_osdmap_check(&m, err, errlen)) < 0) {
		tsr_osdmap_free(&m);
		return rc;
	}
	*out = m;
	return 0;
}

/* ---- Incrementals ------------------------------------------------------------*/

void
tsr_osdmap_inc_free(struct tsr_osdmap_inc *inc)
{
	free(inc->pmap);
	free(inc->osds);
	free(inc->osd_rm);
	free(inc->pools);
	free(inc->pool_rm);
	free(inc->pg_temp);
	free(inc->pg_temp_rm);
	free(inc->blocklist);
	free(inc->blocklist_rm);
	memset(inc, 0, sizeof(*inc));
}

static int
osd_same(const struct tsr_osdmap_osd *a, const struct tsr_osdmap_osd *b)
{
	return a->id == b->id && strcmp(a->host, b->host) == 0 &&
	       strcmp(a->rack, b->rack) == 0 && strcmp(a->addr, b->addr) == 0 &&
	       a->weight == b->weight && a->reweight == b->reweight &&
	       a->in == b->in && a->up == b->up && a->auto_out == b->auto_out &&
	       a->up_from == b->up_from && a->up_thru == b->up_thru;
}

static int
pool_same(const struct tsr_osdmap_pool *a, const struct tsr_osdmap_pool *b)
{
	return a->id == b->id && strcmp(a->name, b->name) == 0 &&
	       a->pg_num == b->pg_num && a->size == b->size &&
	       a->min_size == b->min_size && a->rule == b->rule &&
	       strcmp(a->redundancy, b->redundancy) == 0 &&
	       strcmp(a->redundancy_opts, b->redundancy_opts) == 0;
}

static int
pg_temp_same(const struct tsr_osdmap_pg_temp *a, const struct tsr_osdmap_pg_temp *b)
{
	return cmp_pgid(&a->pgid, &b->pgid) == 0 && a->n == b->n &&
	       memcmp(a->osds, b->osds, a->n * sizeof(a->osds[0])) == 0;
}

int
tsr_osdmap_diff(const struct tsr_osdmap *a, const struct tsr_osdmap *b,
		struct tsr_osdmap_inc *inc)
{
	size_t i, j;

	memset(inc, 0, sizeof(*inc));
	if (b->epoch != a->epoch + 1)
		return -EINVAL;
	inc->epoch = b->epoch;
	inc->flags = b->flags;
	inc->next_pool_id = b->next_pool_id;
	if (strcmp(a->placement, b->placement) != 0 || a->pmap_len != b->pmap_len ||
	    (a->pmap_len && memcmp(a->pmap, b->pmap, a->pmap_len) != 0)) {
		inc->has_pmap = 1;
		memcpy(inc->placement, b->placement, sizeof(inc->placement));
		if ((inc->pmap = tsr_map_dup(b->pmap, b->pmap_len)) == NULL)
			goto nomem;
		inc->pmap_len = b->pmap_len;
	}
	/* at most every record of each side changes */
	if ((inc->osds = tsr_map_alloc(b->nosds, sizeof(*inc->osds))) == NULL ||
	    (inc->osd_rm = tsr_map_alloc(a->nosds, sizeof(*inc->osd_rm))) == NULL ||
	    (inc->pools = tsr_map_alloc(b->npools, sizeof(*inc->pools))) == NULL ||
	    (inc->pool_rm = tsr_map_alloc(a->npools, sizeof(*inc->pool_rm))) == NULL ||
	    (inc->pg_temp = tsr_map_alloc(b->npg_temp, sizeof(*inc->pg_temp))) == NULL ||
	    (inc->pg_temp_rm = tsr_map_alloc(a->npg_temp, sizeof(*inc->pg_temp_rm))) == NULL ||
	    (inc->blocklist = tsr_map_alloc(b->nblocklist, sizeof(*inc->blocklist))) == NULL ||
	    (inc->blocklist_rm = tsr_map_alloc(a->nblocklist,
					       sizeof(*inc->blocklist_rm))) == NULL)
		goto nomem;
	/* both sides are sorted by key: merge (so the lists come out sorted,
	 * as apply wants them) */
	for (i = 0, j = 0; i < a->nosds || j < b->nosds;) {
		if (j == b->nosds || (i < a->nosds && a->osds[i].id < b->osds[j].id)) {
			inc->osd_rm[inc->nosd_rm++] = a->osds[i++].id;
		} else if (i == a->nosds || b->osds[j].id < a->osds[i].id) {
			inc->osds[inc->nosds++] = b->osds[j++];
		} else {
			if (!osd_same(&a->osds[i], &b->osds[j]))
				inc->osds[inc->nosds++] = b->osds[j];
			i++;
			j++;
		}
	}
	for (i = 0, j = 0; i < a->npools || j < b->npools;) {
		if (j == b->npools || (i < a->npools && a->pools[i].id < b->pools[j].id)) {
			inc->pool_rm[inc->npool_rm++] = a->pools[i++].id;
		} else if (i == a->npools || b->pools[j].id < a->pools[i].id) {
			inc->pools[inc->npools++] = b->pools[j++];
		} else {
			if (!pool_same(&a->pools[i], &b->pools[j]))
				inc->pools[inc->npools++] = b->pools[j];
			i++;
			j++;
		}
	}
	for (i = 0, j = 0; i < a->npg_temp || j < b->npg_temp;) {
		int c = j == b->npg_temp ? -1 : i == a->npg_temp ? 1 :
			cmp_pgid(&a->pg_temp[i].pgid, &b->pg_temp[j].pgid);
		if (c < 0) {
			inc->pg_temp_rm[inc->npg_temp_rm++] = a->pg_temp[i++].pgid;
		} else if (c > 0) {
			inc->pg_temp[inc->npg_temp++] = b->pg_temp[j++];
		} else {
			if (!pg_temp_same(&a->pg_temp[i], &b->pg_temp[j]))
				inc->pg_temp[inc->npg_temp++] = b->pg_temp[j];
			i++;
			j++;
		}
	}
	for (i = 0, j = 0; i < a->nblocklist || j < b->nblocklist;) {
		int c = j == b->nblocklist ? -1 : i == a->nblocklist ? 1 :
			cmp_u64(&a->blocklist[i].client, &b->blocklist[j].client);
		if (c < 0) {
			inc->blocklist_rm[inc->nblocklist_rm++] = a->blocklist[i++].client;
		} else if (c > 0) {
			inc->blocklist[inc->nblocklist++] = b->blocklist[j++];
		} else {
			if (a->blocklist[i].until != b->blocklist[j].until)
				inc->blocklist[inc->nblocklist++] = b->blocklist[j];
			i++;
			j++;
		}
	}
	return 0;
nomem:
	tsr_osdmap_inc_free(inc);
	return -ENOMEM;
}

/* The pool of id in the map inc makes of m (inc's lists checked sorted). */
static const struct tsr_osdmap_pool *
pool_after(const struct tsr_osdmap *m, const struct tsr_osdmap_inc *inc, int64_t id)
{
	const struct tsr_osdmap_pool *p = lookup(&K_POOL, inc->pools, inc->npools,
						 K_POOL.sz, &id);

	if (p != NULL)
		return p;
	if (lookup(&K_POOL, inc->pool_rm, inc->npool_rm, K_POOL.ksz, &id) != NULL)
		return NULL;
	return tsr_osdmap_pool(m, id);
}

/* The PG temp mappings of m in pool from pg up must all be removed by inc
 * (the pool goes, or shrinks to pg PGs). */
static int
pg_temp_left(const struct tsr_osdmap *m, const struct tsr_osdmap_inc *inc,
	     int64_t pool, uint32_t pg, char *err, size_t errlen)
{
	struct tsr_pgid key = { .pool = pool, .pg = pg };
	char name[48];
	int found;

	for (size_t i = find(&K_PG_TEMP, m->pg_temp, m->npg_temp, &key, &found);
	     i < m->npg_temp && m->pg_temp[i].pgid.pool == pool; i++)
		if (lookup(&K_PG_TEMP, inc->pg_temp_rm, inc->npg_temp_rm, K_PG_TEMP.ksz,
			   &m->pg_temp[i].pgid) == NULL) {
			name_pgid(&m->pg_temp[i].pgid, name, sizeof(name));
			return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64
					" leaves the PG temp mapping of %s, which pool %"
					PRId64 " no longer has", inc->epoch, name, pool);
		}
	return 0;
}

/* Would inc make a sane map of m (which is sane)?  Checks only what inc
 * touches: the records it brings, its keys against m, and what a sane map
 * needs across records (unique pool names, the next pool id, PG temp
 * mappings on PGs that exist).  *onew, *pnew, *tnew: the OSDs, pools and
 * PG temp mappings it adds. */
static int
inc_check(const struct tsr_osdmap *m, const struct tsr_osdmap_inc *inc, size_t *onew,
	  size_t *pnew, size_t *tnew, size_t *bnew, char *err, size_t errlen)
{
	const uint64_t e = inc->epoch;
	int64_t maxpool = 0;
	int rc;

	if (inc->flags & ~TSR_OSDMAP_FLAGS_KNOWN)
		return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64 ": unknown "
				"flags 0x%x", e, inc->flags & ~TSR_OSDMAP_FLAGS_KNOWN);
	if (inc->has_pmap &&
	    (inc->pmap_len > TSR_OSDMAP_MAX_PMAP || (inc->pmap_len && inc->pmap == NULL) ||
	     (inc->placement[0] && !tsr_osdmap_name_ok(inc->placement))))
		return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64 ": bad "
				"placement plugin name or map of %zu bytes", e,
				inc->pmap_len);
	if (inc->nosds > TSR_OSDMAP_MAX_OSDS || inc->nosd_rm > TSR_OSDMAP_MAX_OSDS ||
	    inc->npools > TSR_OSDMAP_MAX_POOLS || inc->npool_rm > TSR_OSDMAP_MAX_POOLS ||
	    inc->npg_temp > TSR_OSDMAP_MAX_PG_TEMP ||
	    inc->npg_temp_rm > TSR_OSDMAP_MAX_PG_TEMP ||
	    inc->nblocklist > TSR_OSDMAP_MAX_BLOCKLIST ||
	    inc->nblocklist_rm > TSR_OSDMAP_MAX_BLOCKLIST)
		return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64 " too "
				"large", e);

	/* OSDs */
	for (size_t i = 0; i < inc->nosds; i++)
		if ((rc = osd_check(&inc->osds[i], e, err, errlen)) < 0)
			return rc;
	if ((rc = list_check(&K_OSD, e, m->osds, m->nosds, inc->osds, inc->nosds,
			     inc->osd_rm, inc->nosd_rm, onew, err, errlen)) < 0)
		return rc;
	if (m->nosds - inc->nosd_rm + *onew > TSR_OSDMAP_MAX_OSDS)
		return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64 " makes "
				"%zu OSDs (at most %d)", e,
				m->nosds - inc->nosd_rm + *onew, TSR_OSDMAP_MAX_OSDS);

	/* pools: each sane, the names unique among the pools after */
	for (size_t i = 0; i < inc->npools; i++)
		if ((rc = pool_check(&inc->pools[i], err, errlen)) < 0)
			return rc;
	if ((rc = list_check(&K_POOL, e, m->pools, m->npools, inc->pools, inc->npools,
			     inc->pool_rm, inc->npool_rm, pnew, err, errlen)) < 0)
		return rc;
	if (m->npools - inc->npool_rm + *pnew > TSR_OSDMAP_MAX_POOLS)
		return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64 " makes "
				"%zu pools (at most %d)", e,
				m->npools - inc->npool_rm + *pnew, TSR_OSDMAP_MAX_POOLS);
	for (size_t i = 0; i < inc->npools; i++) {
		const struct tsr_osdmap_pool *p = &inc->pools[i];
		const struct tsr_osdmap_pool *q = tsr_osdmap_pool_by_name(m, p->name);

		for (size_t j = 0; j < i; j++)
			if (strcmp(inc->pools[j].name, p->name) == 0)
				q = &inc->pools[j];
		if (q != NULL && q->id != p->id && pool_after(m, inc, q->id) == q)
			return tsr_errf(err, errlen, -EINVAL, "pool name '%s' given "
					"twice", p->name);
	}
	for (size_t i = m->npools; i > 0; i--)
		if (pool_after(m, inc, m->pools[i - 1].id) != NULL) {
			maxpool = m->pools[i - 1].id;
			break;
		}
	if (inc->npools && inc->pools[inc->npools - 1].id > maxpool)
		maxpool = inc->pools[inc->npools - 1].id;
	if (inc->next_pool_id <= maxpool)
		return tsr_errf(err, errlen, -EINVAL, "next pool id %" PRId64 " not above "
				"pool %" PRId64, inc->next_pool_id, maxpool);

	/* PG temp mappings: on PGs of the pools after; none left on a PG
	 * that goes */
	for (size_t i = 0; i < inc->npg_temp; i++) {
		const struct tsr_osdmap_pg_temp *t = &inc->pg_temp[i];
		if ((rc = pg_temp_check(t, pool_after(m, inc, t->pgid.pool), err,
					errlen)) < 0)
			return rc;
	}
	if ((rc = list_check(&K_PG_TEMP, e, m->pg_temp, m->npg_temp, inc->pg_temp,
			     inc->npg_temp, inc->pg_temp_rm, inc->npg_temp_rm, tnew,
			     err, errlen)) < 0)
		return rc;
	if (m->npg_temp - inc->npg_temp_rm + *tnew > TSR_OSDMAP_MAX_PG_TEMP)
		return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64 " makes "
				"%zu PG temp mappings (at most %u)", e,
				m->npg_temp - inc->npg_temp_rm + *tnew,
				TSR_OSDMAP_MAX_PG_TEMP);
	for (size_t i = 0; i < inc->npool_rm; i++)
		if ((rc = pg_temp_left(m, inc, inc->pool_rm[i], 0, err, errlen)) < 0)
			return rc;
	for (size_t i = 0; i < inc->npools; i++) {
		const struct tsr_osdmap_pool *p = &inc->pools[i], *q = tsr_osdmap_pool(m, p->id);
		if (q != NULL && p->pg_num < q->pg_num &&
		    (rc = pg_temp_left(m, inc, p->id, p->pg_num, err, errlen)) < 0)
			return rc;
	}
	if ((rc = list_check(&K_BLOCK, e, m->blocklist, m->nblocklist, inc->blocklist,
			     inc->nblocklist, inc->blocklist_rm, inc->nblocklist_rm, bnew,
			     err, errlen)) < 0)
		return rc;
	if (m->nblocklist - inc->nblocklist_rm + *bnew > TSR_OSDMAP_MAX_BLOCKLIST)
		return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64 " makes "
				"%zu blocklist entries (at most %d)", e,
				m->nblocklist - inc->nblocklist_rm + *bnew,
				TSR_OSDMAP_MAX_BLOCKLIST);
	return 0;
}

int
tsr_osdmap_apply(struct tsr_osdmap *m, const struct tsr_osdmap_inc *inc,
		 char *err, size_t errlen)
{
	size_t onew, pnew, tnew, bnew;
	void *pmap = NULL, *p;
	int rc;

	/* a map at the last epoch has no next one: epoch + 1 would wrap to
	 * 0, which no sane map holds */
	if (m->epoch == UINT64_MAX || inc->epoch != m->epoch + 1)
		return tsr_errf(err, errlen, -ESTALE, "incremental for epoch %" PRIu64
			    " does not follow epoch %" PRIu64, inc->epoch, m->epoch);
	if ((rc = inc_check(m, inc, &onew, &pnew, &tnew, &bnew, err, errlen)) < 0)
		return rc;
	/* everything that can fail comes first: growing an array keeps its
	 * records, so m is still the same map if a later step fails */
	if (inc->has_pmap && inc->pmap_len &&
	    (pmap = tsr_map_dup(inc->pmap, inc->pmap_len)) == NULL)
		goto nomem;
	if (onew) {
		if ((p = realloc(m->osds, (m->nosds + onew) * sizeof(*m->osds))) == NULL)
			goto nomem;
		m->osds = p;
	}
	if (pnew) {
		if ((p = realloc(m->pools, (m->npools + pnew) * sizeof(*m->pools))) == NULL)
			goto nomem;
		m->pools = p;
	}
	if (tnew) {
		if ((p = realloc(m->pg_temp, (m->npg_temp + tnew) *
				 sizeof(*m->pg_temp))) == NULL)
			goto nomem;
		m->pg_temp = p;
	}
	if (bnew) {
		if ((p = realloc(m->blocklist, (m->nblocklist + bnew) *
				 sizeof(*m->blocklist))) == NULL)
			goto nomem;
		m->blocklist = p;
	}

	m->epoch = inc->epoch;
	m->flags = inc->flags;
	m->next_pool_id = inc->next_pool_id;
	if (inc->has_pmap) {
		memcpy(m->placement, inc->placement, sizeof(m->placement));
		m->placement[sizeof(m->placement) - 1] = '\0';
		free(m->pmap);
		m->pmap = pmap;
		m->pmap_len = inc->pmap_len;
	}
	list_apply(&K_OSD, m->osds, &m->nosds, inc->osds, inc->nosds, onew,
		   inc->osd_rm, inc->nosd_rm);
	list_apply(&K_POOL, m->pools, &m->npools, inc->pools, inc->npools, pnew,
		   inc->pool_rm, inc->npool_rm);
	list_apply(&K_PG_TEMP, m->pg_temp, &m->npg_temp, inc->pg_temp, inc->npg_temp,
		   tnew, inc->pg_temp_rm, inc->npg_temp_rm);
	list_apply(&K_BLOCK, m->blocklist, &m->nblocklist, inc->blocklist,
		   inc->nblocklist, bnew, inc->blocklist_rm, inc->nblocklist_rm);
	return 0;
nomem:
	free(pmap);
	return tsr_errf(err, errlen, -ENOMEM, "incremental %" PRIu64 ": out of "
			"memory", inc->epoch);
}

int
tsr_osdmap_inc_encode(struct tsr_enc *e, const struct tsr_osdmap_inc *inc)
{
	size_t mk = tsr_enc_begin_struct(e, 3, 1);

	tsr_enc_u64(e, inc->epoch);
	tsr_enc_u32(e, inc->flags);
	tsr_enc_i64(e, inc->next_pool_id);
	tsr_enc_u8(e, inc->has_pmap ? 1 : 0);
	if (inc->has_pmap) {
		tsr_enc_str(e, inc->placement);
		tsr_enc_bytes(e, inc->pmap, inc->pmap_len);
	}
	tsr_enc_u32(e, (uint32_t)inc->nosds);
	for (size_t i = 0; i < inc->nosds; i++)
		osd_encode(e, &inc->osds[i]);
	tsr_enc_u32(e, (uint32_t)inc->nosd_rm);
	for (size_t i = 0; i < inc->nosd_rm; i++)
		tsr_enc_i32(e, inc->osd_rm[i]);
	tsr_enc_u32(e, (uint32_t)inc->npools);
	for (size_t i = 0; i < inc->npools; i++)
		pool_encode(e, &inc->pools[i]);
	tsr_enc_u32(e, (uint32_t)inc->npool_rm);
	for (size_t i = 0; i < inc->npool_rm; i++)
		tsr_enc_i64(e, inc->pool_rm[i]);
	tsr_enc_u32(e, (uint32_t)inc->npg_temp);
	for (size_t i = 0; i < inc->npg_temp; i++)
		pg_temp_encode(e, &inc->pg_temp[i]);
	tsr_enc_u32(e, (uint32_t)inc->npg_temp_rm);
	for (size_t i = 0; i < inc->npg_temp_rm; i++)
		pgid_encode(e, &inc->pg_temp_rm[i]);
	blocklist_encode(e, inc->blocklist, inc->nblocklist);
	tsr_enc_u32(e, (uint32_t)inc->nblocklist_rm);
	for (size_t i = 0; i < inc->nblocklist_rm; i++)
		tsr_enc_u64(e, inc->blocklist_rm[i]);
	tsr_enc_end_struct(e, mk);
	return tsr_enc_error(e);
}

int
tsr_osdmap_inc_decode(const void *buf, size_t len, struct tsr_osdmap_inc *out,
		      char *err, size_t errlen)
{
	struct tsr_osdmap_inc inc;
	struct tsr_dec d, s;
	uint8_t v, has;
	int rc;

	memset(&inc, 0, sizeof(inc));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 3, &v, &s) < 0)
		return tsr_errf(err, errlen, tsr_dec_error(&d), "OSD map incremental: "
			    "bad envelope");
	inc.epoch = tsr_dec_u64(&s);
	inc.flags = tsr_dec_u32(&s);
	inc.next_pool_id = tsr_dec_i64(&s);
	has = tsr_dec_u8(&s);
	if (has > 1)
		tsr_dec_fail(&s, -EBADMSG);
	inc.has_pmap = has;
	if (has) {
		tsr_dec_str(&s, inc.placement, sizeof(inc.placement));
		dec_blob(&s, &inc.pmap, &inc.pmap_len);
	}
	inc.osds = dec_list(&s, TSR_OSDMAP_MAX_OSDS, OSD_MIN, sizeof(*inc.osds),
			    &inc.nosds);
	for (size_t i = 0; i < inc.nosds && !tsr_dec_error(&s); i++)
		osd_decode(&s, &inc.osds[i]);
	inc.osd_rm = dec_list(&s, TSR_OSDMAP_MAX_OSDS, 4, sizeof(*inc.osd_rm),
			      &inc.nosd_rm);
	for (size_t i = 0; i < inc.nosd_rm && !tsr_dec_error(&s); i++)
		inc.osd_rm[i] = tsr_dec_i32(&s);
	inc.pools = dec_list(&s, TSR_OSDMAP_MAX_POOLS, POOL_MIN, sizeof(*inc.pools),
			     &inc.npools);
	for (size_t i = 0; i < inc.npools && !tsr_dec_error(&s); i++)
		pool_decode(&s, &inc.pools[i]);
	inc.pool_rm = dec_list(&s, TSR_OSDMAP_MAX_POOLS, 8, sizeof(*inc.pool_rm),
			       &inc.npool_rm);
	for (size_t i = 0; i < inc.npool_rm && !tsr_dec_error(&s); i++)
		inc.pool_rm[i] = tsr_dec_i64(&s);
	if (v >= 2) {
		inc.pg_temp = dec_list(&s, TSR_OSDMAP_MAX_PG_TEMP, PG_TEMP_MIN,
				       sizeof(*inc.pg_temp), &inc.npg_temp);
		for (size_t i = 0; i < inc.npg_temp && !tsr_dec_error(&s); i++)
			pg_temp_decode(&s, &inc.pg_temp[i]);
		inc.pg_temp_rm = dec_list(&s, TSR_OSDMAP_MAX_PG_TEMP, PGID_MIN,
					  sizeof(*inc.pg_temp_rm), &inc.npg_temp_rm);
		for (size_t i = 0; i < inc.npg_temp_rm && !tsr_dec_error(&s); i++)
			pgid_decode(&s, &inc.pg_temp_rm[i]);
	}
	if (v >= 3) {
		inc.blocklist = blocklist_decode(&s, &inc.nblocklist);
		inc.blocklist_rm = dec_list(&s, TSR_OSDMAP_MAX_BLOCKLIST, 8,
					    sizeof(*inc.blocklist_rm), &inc.nblocklist_rm);
		for (size_t i = 0; i < inc.nblocklist_rm && !tsr_dec_error(&s); i++)
			inc.blocklist_rm[i] = tsr_dec_u64(&s);
	}
	if ((rc = tsr_dec_end_struct(&d, &s)) < 0 || tsr_dec_remaining(&d)) {
		tsr_osdmap_inc_free(&inc);
		return tsr_errf(err, errlen, rc < 0 ? rc : -EBADMSG, "OSD map incremental: "
			    "%s", rc < 0 ? "truncated or malformed" :
			    "bytes after it");
	}
	*out = inc;
	return 0;
}
