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
	memset(m, 0, sizeof(*m));
}

int
tsr_osdmap_copy(struct tsr_osdmap *dst, const struct tsr_osdmap *src)
{
	struct tsr_osdmap m = *src;

	m.pmap = tsr_map_dup(src->pmap, src->pmap_len);
	m.osds = tsr_map_dup(src->osds, src->nosds * sizeof(*src->osds));
	m.pools = tsr_map_dup(src->pools, src->npools * sizeof(*src->pools));
	if (m.pmap == NULL || m.osds == NULL || m.pools == NULL) {
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

int
tsr_osdmap_check(const struct tsr_osdmap *m, char *err, size_t errlen)
{
	int64_t maxpool = 0;

	if (m->epoch == 0)
		return tsr_errf(err, errlen, -EINVAL, "epoch 0");
	if (m->flags & ~TSR_OSDMAP_FLAGS_KNOWN)
		return tsr_errf(err, errlen, -EINVAL, "unknown flags 0x%x",
			    m->flags & ~TSR_OSDMAP_FLAGS_KNOWN);
	if (m->nosds > TSR_OSDMAP_MAX_OSDS || m->npools > TSR_OSDMAP_MAX_POOLS)
		return tsr_errf(err, errlen, -EINVAL, "%zu OSDs and %zu pools (at most "
			    "%d and %d)", m->nosds, m->npools, TSR_OSDMAP_MAX_OSDS,
			    TSR_OSDMAP_MAX_POOLS);
	if (m->pmap_len > TSR_OSDMAP_MAX_PMAP || (m->pmap_len && m->pmap == NULL))
		return tsr_errf(err, errlen, -EINVAL, "placement map of %zu bytes",
			    m->pmap_len);
	if (m->placement[0] && !tsr_osdmap_name_ok(m->placement))
		return tsr_errf(err, errlen, -EINVAL, "placement plugin name is not a name");
	for (size_t i = 0; i < m->nosds; i++) {
		const struct tsr_osdmap_osd *o = &m->osds[i];

		if (o->id < 0 || o->id >= TSR_OSDMAP_MAX_OSDS)
			return tsr_errf(err, errlen, -EINVAL, "OSD id %" PRId32 " out of "
				    "range 0..%d", o->id, TSR_OSDMAP_MAX_OSDS - 1);
		if (i && o->id <= m->osds[i - 1].id)
			return tsr_errf(err, errlen, -EINVAL, "OSD ids out of order at "
				    "osd.%" PRId32, o->id);
		if (!tsr_osdmap_name_ok(o->host) ||
		    (o->rack[0] && !tsr_osdmap_name_ok(o->rack)) ||
		    !tsr_map_word_ok(o->addr, sizeof(o->addr)))
			return tsr_errf(err, errlen, -EINVAL, "osd.%" PRId32 ": bad host, "
				    "rack or address", o->id);
		if (!isfinite(o->weight) || o->weight <= 0 || o->weight > 65535 ||
		    !isfinite(o->reweight) || o->reweight < 0 || o->reweight > 1)
			return tsr_errf(err, errlen, -EINVAL, "osd.%" PRId32 ": weight %g or "
				    "reweight %g out of range", o->id, o->weight,
				    o->reweight);
		if (o->in > 1 || o->up > 1 || o->auto_out > 1 || o->up_from > m->epoch)
			return tsr_errf(err, errlen, -EINVAL, "osd.%" PRId32 ": bad state",
				    o->id);
	}
	for (size_t i = 0; i < m->npools; i++) {
		const struct tsr_osdmap_pool *p = &m->pools[i];

		if (p->id <= 0 || (i && p->id <= m->pools[i - 1].id))
			return tsr_errf(err, errlen, -EINVAL, "pool id %" PRId64 " out of "
				    "order or not positive", p->id);
		if (!tsr_osdmap_name_ok(p->name))
			return tsr_errf(err, errlen, -EINVAL, "pool %" PRId64 ": bad name", p->id);
		for (size_t j = 0; j < i; j++)
			if (strcmp(m->pools[j].name, p->name) == 0)
				return tsr_errf(err, errlen, -EINVAL, "pool name '%s' "
					    "given twice", p->name);
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
		maxpool = p->id;
	}
	if (m->next_pool_id <= maxpool)
		return tsr_errf(err, errlen, -EINVAL, "next pool id %" PRId64 " not above "
			    "pool %" PRId64, m->next_pool_id, maxpool);
	return 0;
}

struct tsr_osdmap_osd *
tsr_osdmap_osd(const struct tsr_osdmap *m, int32_t id)
{
	size_t lo = 0, hi = m->nosds;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->osds[mid].id == id)
			return &m->osds[mid];
		if (m->osds[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct tsr_osdmap_pool *
tsr_osdmap_pool(const struct tsr_osdmap *m, int64_t id)
{
	for (size_t i = 0; i < m->npools; i++)
		if (m->pools[i].id == id)
			return &m->pools[i];
	return NULL;
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
	size_t mk = tsr_enc_begin_struct(e, 1, 1);

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
	tsr_enc_end_struct(e, mk);
}

static void
osd_decode(struct tsr_dec *d, struct tsr_osdmap_osd *o)
{
	struct tsr_dec s;
	uint8_t v;

	memset(o, 0, sizeof(*o));
	if (tsr_dec_begin_struct(d, 1, &v, &s) < 0)
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

/* ---- The full map ------------------------------------------------------------*/

int
tsr_osdmap_encode(struct tsr_enc *e, const struct tsr_osdmap *m)
{
	size_t mk = tsr_enc_begin_struct(e, 1, 1);

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
	tsr_enc_end_struct(e, mk);
	return tsr_enc_error(e);
}

/* envelope header (6 bytes) + the smallest body of a record */
#define OSD_MIN (6 + 4 + 3 * 4 + 16 + 3 + 8)
#define POOL_MIN (6 + 8 + 4 + 16 + 2 * 4)

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
	if (tsr_dec_begin_struct(&d, 1, &v, &s) < 0)
		return tsr_errf(err, errlen, tsr_dec_error(&d), "OSD map: bad envelope");
	m.epoch = tsr_dec_u64(&s);
	m.flags = tsr_dec_u32(&s);
	m.next_pool_id = tsr_dec_i64(&s);
	tsr_dec_str(&s, m.placement, sizeof(m.placement));
	dec_blob(&s, &m.pmap, &m.pmap_len);
	m.nosds = tsr_map_count(&s, TSR_OSDMAP_MAX_OSDS, OSD_MIN);
	if ((m.osds = tsr_map_alloc(m.nosds, sizeof(*m.osds))) == NULL)
		tsr_dec_fail(&s, -ENOMEM);
	for (size_t i = 0; i < m.nosds && !tsr_dec_error(&s); i++)
		osd_decode(&s, &m.osds[i]);
	m.npools = tsr_map_count(&s, TSR_OSDMAP_MAX_POOLS, POOL_MIN);
	if ((m.pools = tsr_map_alloc(m.npools, sizeof(*m.pools))) == NULL)
		tsr_dec_fail(&s, -ENOMEM);
	for (size_t i = 0; i < m.npools && !tsr_dec_error(&s); i++)
		pool_decode(&s, &m.pools[i]);
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
	memset(inc, 0, sizeof(*inc));
}

static int
osd_same(const struct tsr_osdmap_osd *a, const struct tsr_osdmap_osd *b)
{
	return a->id == b->id && strcmp(a->host, b->host) == 0 &&
	       strcmp(a->rack, b->rack) == 0 && strcmp(a->addr, b->addr) == 0 &&
	       a->weight == b->weight && a->reweight == b->reweight &&
	       a->in == b->in && a->up == b->up && a->auto_out == b->auto_out &&
	       a->up_from == b->up_from;
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
	    (inc->pool_rm = tsr_map_alloc(a->npools, sizeof(*inc->pool_rm))) == NULL)
		goto nomem;
	/* both sides are sorted by id: merge */
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
	return 0;
nomem:
	tsr_osdmap_inc_free(inc);
	return -ENOMEM;
}

static int
cmp_osd(const void *x, const void *y)
{
	const struct tsr_osdmap_osd *a = x, *b = y;
	return (a->id > b->id) - (a->id < b->id);
}

static int
cmp_pool(const void *x, const void *y)
{
	const struct tsr_osdmap_pool *a = x, *b = y;
	return (a->id > b->id) - (a->id < b->id);
}

int
tsr_osdmap_apply(struct tsr_osdmap *m, const struct tsr_osdmap_inc *inc,
		 char *err, size_t errlen)
{
	struct tsr_osdmap n;
	size_t no = 0, np = 0;
	int rc;

	if (inc->epoch != m->epoch + 1)
		return tsr_errf(err, errlen, -ESTALE, "incremental for epoch %" PRIu64
			    " does not follow epoch %" PRIu64, inc->epoch, m->epoch);
	if (m->nosds + inc->nosds > 2 * TSR_OSDMAP_MAX_OSDS ||
	    m->npools + inc->npools > 2 * TSR_OSDMAP_MAX_POOLS)
		return tsr_errf(err, errlen, -EINVAL, "incremental too large");
	memset(&n, 0, sizeof(n));
	n.epoch = inc->epoch;
	n.flags = inc->flags;
	n.next_pool_id = inc->next_pool_id;
	if (inc->has_pmap) {
		memcpy(n.placement, inc->placement, sizeof(n.placement));
		n.pmap = tsr_map_dup(inc->pmap, inc->pmap_len);
		n.pmap_len = inc->pmap_len;
	} else {
		memcpy(n.placement, m->placement, sizeof(n.placement));
		n.pmap = tsr_map_dup(m->pmap, m->pmap_len);
		n.pmap_len = m->pmap_len;
	}
	if (n.pmap == NULL ||
	    (n.osds = tsr_map_alloc(m->nosds + inc->nosds, sizeof(*n.osds))) == NULL ||
	    (n.pools = tsr_map_alloc(m->npools + inc->npools, sizeof(*n.pools))) == NULL) {
		tsr_osdmap_free(&n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < inc->nosd_rm; i++)
		if (tsr_osdmap_osd(m, inc->osd_rm[i]) == NULL) {
			tsr_osdmap_free(&n);
			return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64
				    " removes osd.%" PRId32 ", which the map lacks",
				    inc->epoch, inc->osd_rm[i]);
		}
	for (size_t i = 0; i < inc->npool_rm; i++)
		if (tsr_osdmap_pool(m, inc->pool_rm[i]) == NULL) {
			tsr_osdmap_free(&n);
			return tsr_errf(err, errlen, -EINVAL, "incremental %" PRIu64
				    " removes pool %" PRId64 ", which the map lacks",
				    inc->epoch, inc->pool_rm[i]);
		}
	/* keep what is neither removed nor replaced, then add the new
	 * records and sort (a duplicate id fails the check below) */
	for (size_t i = 0; i < m->nosds; i++) {
		int gone = 0;
		for (size_t k = 0; k < inc->nosd_rm && !gone; k++)
			gone = inc->osd_rm[k] == m->osds[i].id;
		for (size_t k = 0; k < inc->nosds && !gone; k++)
			gone = inc->osds[k].id == m->osds[i].id;
		if (!gone)
			n.osds[no++] = m->osds[i];
	}
	for (size_t k = 0; k < inc->nosds; k++)
		n.osds[no++] = inc->osds[k];
	for (size_t i = 0; i < m->npools; i++) {
		int gone = 0;
		for (size_t k = 0; k < inc->npool_rm && !gone; k++)
			gone = inc->pool_rm[k] == m->pools[i].id;
		for (size_t k = 0; k < inc->npools && !gone; k++)
			gone = inc->pools[k].id == m->pools[i].id;
		if (!gone)
			n.pools[np++] = m->pools[i];
	}
	for (size_t k = 0; k < inc->npools; k++)
		n.pools[np++] = inc->pools[k];
	n.nosds = no;
	n.npools = np;
	if (no)
		qsort(n.osds, no, sizeof(*n.osds), cmp_osd);
	if (np)
		qsort(n.pools, np, sizeof(*n.pools), cmp_pool);
	if ((rc = tsr_osdmap_check(&n, err, errlen)) < 0) {
		tsr_osdmap_free(&n);
		return rc;
	}
	tsr_osdmap_free(m);
	*m = n;
	return 0;
}

int
tsr_osdmap_inc_encode(struct tsr_enc *e, const struct tsr_osdmap_inc *inc)
{
	size_t mk = tsr_enc_begin_struct(e, 1, 1);

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
	if (tsr_dec_begin_struct(&d, 1, &v, &s) < 0)
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
	inc.nosds = tsr_map_count(&s, TSR_OSDMAP_MAX_OSDS, OSD_MIN);
	if ((inc.osds = tsr_map_alloc(inc.nosds, sizeof(*inc.osds))) == NULL)
		tsr_dec_fail(&s, -ENOMEM);
	for (size_t i = 0; i < inc.nosds && !tsr_dec_error(&s); i++)
		osd_decode(&s, &inc.osds[i]);
	inc.nosd_rm = tsr_map_count(&s, TSR_OSDMAP_MAX_OSDS, 4);
	if ((inc.osd_rm = tsr_map_alloc(inc.nosd_rm, sizeof(*inc.osd_rm))) == NULL)
		tsr_dec_fail(&s, -ENOMEM);
	for (size_t i = 0; i < inc.nosd_rm && !tsr_dec_error(&s); i++)
		inc.osd_rm[i] = tsr_dec_i32(&s);
	inc.npools = tsr_map_count(&s, TSR_OSDMAP_MAX_POOLS, POOL_MIN);
	if ((inc.pools = tsr_map_alloc(inc.npools, sizeof(*inc.pools))) == NULL)
		tsr_dec_fail(&s, -ENOMEM);
	for (size_t i = 0; i < inc.npools && !tsr_dec_error(&s); i++)
		pool_decode(&s, &inc.pools[i]);
	inc.npool_rm = tsr_map_count(&s, TSR_OSDMAP_MAX_POOLS, 8);
	if ((inc.pool_rm = tsr_map_alloc(inc.npool_rm, sizeof(*inc.pool_rm))) == NULL)
		tsr_dec_fail(&s, -ENOMEM);
	for (size_t i = 0; i < inc.npool_rm && !tsr_dec_error(&s); i++)
		inc.pool_rm[i] = tsr_dec_i64(&s);
	if ((rc = tsr_dec_end_struct(&d, &s)) < 0 || tsr_dec_remaining(&d)) {
		tsr_osdmap_inc_free(&inc);
		return tsr_errf(err, errlen, rc < 0 ? rc : -EBADMSG, "OSD map incremental: "
			    "%s", rc < 0 ? "truncated or malformed" :
			    "bytes after it");
	}
	*out = inc;
	return 0;
}
