/* osdmap_epoch.c — immutable, counted OSD map epochs and PG placement
 * under them (osdmap_epoch.h). */
#include "map/osdmap_epoch.h"
#include "plugin/registry.h"
#include "util/util.h"

#include <tessera/hash.h>
#include <tessera/placement.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* One placement plugin instance with one blob loaded, shared by the epochs
 * that carry that blob.  state: 0 not tried yet, 1 loaded, < 0 the error
 * that is kept (why says it).  Once state is 1, inst, ops and h are only
 * read, and the plugin's map() may be called from many threads at once
 * (placement.h). */
struct placer {
	atomic_uint refs;
	atomic_int state;
	pthread_mutex_t lock;         /* serializes the load */
	const struct tsr_registry *reg;
	const struct tsr_host *host;
	struct tsr_instance *inst;
	const struct tsr_placement_ops *ops;
	void *h;
	char why[256];
};

/* The raw sets of every PG of one pool, filled as they are placed.  A
 * PG's entry is written once, under the cache's lock, then published by
 * its done flag (release); readers that see the flag (acquire) read it
 * without the lock. */
struct rawpool {
	int64_t id;
	uint32_t rule, size, pg_num;
	_Atomic(int32_t *) raw;      /* pg_num x size, allocated at first use */
	_Atomic(_Atomic uint8_t *) done; /* pg_num flags */
};

/* Raw sets depend on the placement blob, the weights and each pool's id,
 * rule, size and PG count, not on which OSDs are up or on PG temp: so
 * epochs that differ only in those (OSDs booting, failing, PG temp)
 * share one cache and place each PG once.  Made with the first epoch of
 * a blob, weights and pools; shared by the next epochs while all three
 * stay (tsr_osdmap_epoch_next). */
struct rawcache {
	atomic_uint refs;
	pthread_mutex_t lock;        /* fills */
	size_t npools;
	struct rawpool pools[];      /* the map's pools, in its order */
};

struct tsr_osdmap_epoch {
	atomic_uint refs;
	struct tsr_osdmap map;
	const struct tsr_registry *reg;
	const struct tsr_host *host;
	struct placer *pl;            /* NULL: the map has no placement map */
	struct rawcache *rc;          /* NULL: no placement map, or no memory */
	uint32_t *weights;            /* by OSD id, 16.16 (header) */
	uint32_t nweights;
};

static struct rawcache *
rawcache_new(const struct tsr_osdmap *m)
{
	struct rawcache *c = calloc(1, sizeof(*c) + m->npools * sizeof(c->pools[0]));

	if (c == NULL)
		return NULL;
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c);
		return NULL;
	}
	atomic_init(&c->refs, 1);
	c->npools = m->npools;
	for (size_t i = 0; i < m->npools; i++) {
		c->pools[i].id = m->pools[i].id;
		c->pools[i].rule = m->pools[i].rule;
		c->pools[i].size = m->pools[i].size;
		c->pools[i].pg_num = m->pools[i].pg_num;
		atomic_init(&c->pools[i].raw, NULL);
		atomic_init(&c->pools[i].done, NULL);
	}
	return c;
}

static void
rawcache_put(struct rawcache *c)
{
	if (c == NULL || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (size_t i = 0; i < c->npools; i++) {
		free(atomic_load_explicit(&c->pools[i].raw, memory_order_relaxed));
		free((void *)atomic_load_explicit(&c->pools[i].done, memory_order_relaxed));
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Does the cache fit m's pools exactly? */
static int
rawcache_fits(const struct rawcache *c, const struct tsr_osdmap *m)
{
	if (c == NULL || c->npools != m->npools)
		return 0;
	for (size_t i = 0; i < m->npools; i++) {
		const struct rawpool *r = &c->pools[i];
		const struct tsr_osdmap_pool *p = &m->pools[i];
		if (r->id != p->id || r->rule != p->rule || r->size != p->size ||
		    r->pg_num != p->pg_num)
			return 0;
	}
	return 1;
}

static struct placer *
placer_new(const struct tsr_registry *reg, const struct tsr_host *host)
{
	struct placer *pl = calloc(1, sizeof(*pl));

	if (pl == NULL)
		return NULL;
	if (pthread_mutex_init(&pl->lock, NULL) != 0) {
		free(pl);
		return NULL;
	}
	atomic_init(&pl->refs, 1);
	atomic_init(&pl->state, 0);
	pl->reg = reg;
	pl->host = host;
	return pl;
}

static void
placer_put(struct placer *pl)
{
	if (pl == NULL || atomic_fetch_sub_explicit(&pl->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (pl->inst != NULL)
		tsr_instance_destroy(pl->inst);
	pthread_mutex_destroy(&pl->lock);
	free(pl);
}

/* Create the instance and load m's blob (called once, under the lock). */
static int
placer_load(struct placer *pl, const struct tsr_osdmap *m)
{
	const struct tsr_plugin *p;
	char why[200] = "";
	int rc;

	if (pl->reg == NULL)
		return tsr_errf(pl->why, sizeof(pl->why), -ENOENT, "OSD map epoch %"
				PRIu64 ": placed without a plugin registry (its "
				"holder did not give one)", m->epoch);
	p = tsr_registry_find(pl->reg, TSR_KIND_PLACEMENT, m->placement);
	if (p == NULL)
		return tsr_errf(pl->why, sizeof(pl->why), -ENOENT, "OSD map epoch %"
				PRIu64 ": no placement plugin '%s' loaded here",
				m->epoch, m->placement);
	rc = tsr_instance_create(p, pl->host, NULL, 0, &pl->inst, why, sizeof(why));
	if (rc < 0)
		return tsr_errf(pl->why, sizeof(pl->why), rc, "OSD map epoch %" PRIu64
				": placement plugin '%s': %s", m->epoch,
				m->placement, why);
	pl->ops = tsr_instance_ops(pl->inst);
	pl->h = tsr_instance_handle(pl->inst);
	rc = pl->ops->load(pl->h, m->pmap, m->pmap_len, why, sizeof(why));
	if (rc < 0) {
		tsr_instance_destroy(pl->inst);
		pl->inst = NULL;
		return tsr_errf(pl->why, sizeof(pl->why), rc, "OSD map epoch %" PRIu64
				": placement plugin '%s' refuses the map: %s",
				m->epoch, m->placement, why);
	}
	return 0;
}

/* 0 once pl holds m's blob loaded (m: any epoch sharing pl, all of which
 * carry the same blob). */
static int
placer_ready(struct placer *pl, const struct tsr_osdmap *m, char *err, size_t errlen)
{
	int st = atomic_load_explicit(&pl->state, memory_order_acquire);

	if (st > 0)
		return 0;
	pthread_mutex_lock(&pl->lock);
	st = atomic_load_explicit(&pl->state, memory_order_relaxed);
	if (st == 0) {
		st = placer_load(pl, m);
		/* out of memory may pass: try again next time */
		if (st != -ENOMEM)
			atomic_store_explicit(&pl->state, st == 0 ? 1 : st,
					      memory_order_release);
	}
	if (st < 0)
		tsr_errf(err, errlen, st, "%s", pl->why);
	pthread_mutex_unlock(&pl->lock);
	return st < 0 ? st : 0;
}

static void
epoch_free(struct tsr_osdmap_epoch *ep)
{
	rawcache_put(ep->rc);
	placer_put(ep->pl);
	tsr_osdmap_free(&ep->map);
	free(ep->weights);
	free(ep);
}

/* An epoch of the sane map *m (whose contents it takes, on success only),
 * placing with prev's placer (a reference is taken) when prev is given
 * (it carries the same blob), or with a placer of its own; and with prev's
 * raw cache too when the weights and pools are also the same. */
static int
epoch_make(struct tsr_osdmap *m, const struct tsr_registry *reg,
	   const struct tsr_host *host, const struct tsr_osdmap_epoch *prev,
	   struct tsr_osdmap_epoch **out, char *err, size_t errlen)
{
	struct placer *shared = prev != NULL ? prev->pl : NULL;
	struct tsr_osdmap_epoch *ep = calloc(1, sizeof(*ep));

	if (ep == NULL)
		goto nomem;
	atomic_init(&ep->refs, 1);
	ep->reg = reg;
	ep->host = host;
	ep->nweights = m->nosds ? (uint32_t)m->osds[m->nosds - 1].id + 1 : 0;
	if ((ep->weights = calloc(ep->nweights ? ep->nweights : 1,
				  sizeof(*ep->weights))) == NULL)
		goto nomem;
	for (size_t i = 0; i < m->nosds; i++) {
		const struct tsr_osdmap_osd *o = &m->osds[i];
		/* rounded as the monitors round capacity weights */
		ep->weights[o->id] = o->in ? (uint32_t)(o->reweight * TSR_WEIGHT_ONE + 0.5) : 0;
	}
	if (m->placement[0] && m->pmap_len) {
		if (shared != NULL) {
			atomic_fetch_add_explicit(&shared->refs, 1, memory_order_relaxed);
			ep->pl = shared;
		} else if ((ep->pl = placer_new(reg, host)) == NULL) {
			goto nomem;
		}
		if (prev != NULL && prev->rc != NULL && prev->nweights == ep->nweights &&
		    memcmp(prev->weights, ep->weights,
			   ep->nweights * sizeof(*ep->weights)) == 0 &&
		    rawcache_fits(prev->rc, m)) {
			atomic_fetch_add_explicit(&prev->rc->refs, 1, memory_order_relaxed);
			ep->rc = prev->rc;
		} else {
			ep->rc = rawcache_new(m); /* NULL: placed every time */
		}
	}
	ep->map = *m;
	memset(m, 0, sizeof(*m));
	*out = ep;
	return 0;
nomem:
	if (ep != NULL) {
		free(ep->weights);
		free(ep);
	}
	return tsr_errf(err, errlen, -ENOMEM, "OSD map epoch %" PRIu64 ": out of "
			"memory", m->epoch);
}

int
tsr_osdmap_epoch_create(struct tsr_osdmap *map, const struct tsr_registry *reg,
			const struct tsr_host *host, struct tsr_osdmap_epoch **out,
			char *err, size_t errlen)
{
	int rc;

	if ((rc = tsr_osdmap_check(map, err, errlen)) < 0)
		return rc;
	return epoch_make(map, reg, host, NULL, out, err, errlen);
}

int
tsr_osdmap_epoch_next(const struct tsr_osdmap_epoch *prev,
		      const struct tsr_osdmap_inc *inc, struct tsr_osdmap_epoch **out,
		      char *err, size_t errlen)
{
	const struct tsr_osdmap *a = &prev->map;
	struct tsr_osdmap m;
	int same, rc;

	if (inc->epoch != a->epoch + 1)   /* before copying anything */
		return tsr_errf(err, errlen, -ESTALE, "incremental for epoch %" PRIu64
				" does not follow epoch %" PRIu64, inc->epoch, a->epoch);
	if (tsr_osdmap_copy(&m, a) < 0)
		return tsr_errf(err, errlen, -ENOMEM, "OSD map epoch %" PRIu64 ": out "
				"of memory", inc->epoch);
	if ((rc = tsr_osdmap_apply(&m, inc, err, errlen)) < 0) {
		tsr_osdmap_free(&m);
		return rc;
	}
	/* the same blob: the same plugin instance serves both epochs */
	same = strcmp(a->placement, m.placement) == 0 && a->pmap_len == m.pmap_len &&
	       (a->pmap_len == 0 || memcmp(a->pmap, m.pmap, a->pmap_len) == 0);
	rc = epoch_make(&m, prev->reg, prev->host, same ? prev : NULL, out, err,
			errlen);
	if (rc < 0)
		tsr_osdmap_free(&m);
	return rc;
}

struct tsr_osdmap_epoch *
tsr_osdmap_epoch_get(struct tsr_osdmap_epoch *ep)
{
	atomic_fetch_add_explicit(&ep->refs, 1, memory_order_relaxed);
	return ep;
}

void
tsr_osdmap_epoch_put(struct tsr_osdmap_epoch *ep)
{
	/* acq_rel: whoever frees sees every other holder's reads done */
	if (ep != NULL && atomic_fetch_sub_explicit(&ep->refs, 1, memory_order_acq_rel) == 1)
		epoch_free(ep);
}

const struct tsr_osdmap *
tsr_osdmap_epoch_map(const struct tsr_osdmap_epoch *ep)
{
	return &ep->map;
}

uint64_t
tsr_osdmap_epoch_number(const struct tsr_osdmap_epoch *ep)
{
	return ep->map.epoch;
}

/* Keep the OSDs of in[n] that the map has and that are up, in order. */
static uint32_t
keep_up(const struct tsr_osdmap *m, const int32_t *in, uint32_t n, int32_t *out)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct tsr_osdmap_osd *o;
		if (in[i] != TSR_PLACEMENT_NONE && (o = tsr_osdmap_osd(m, in[i])) != NULL &&
		    o->up)
			out[k++] = in[i];
	}
	return k;
}

/* The raw set of pool's PG pg: from the cache when it was placed under
 * this blob, weights and pools before, else placed now (and kept). */
static int
raw_set(const struct tsr_osdmap_epoch *ep, const struct tsr_osdmap_pool *pool,
	uint32_t pg, int32_t *raw, char *err, size_t errlen)
{
	const struct tsr_osdmap *m = &ep->map;
	struct rawpool *rp = NULL;
	int32_t *cached;
	_Atomic uint8_t *done;
	int rc;

	if (ep->rc != NULL) {
		size_t i = (size_t)(pool - m->pools); /* the cache is in the map's order */
		rp = &ep->rc->pools[i];
		done = atomic_load_explicit(&rp->done, memory_order_acquire);
		if (done != NULL &&
		    atomic_load_explicit(&done[pg], memory_order_acquire)) {
			cached = atomic_load_explicit(&rp->raw, memory_order_acquire);
			memcpy(raw, cached + (size_t)pg * pool->size,
			       pool->size * sizeof(*raw));
			return 0;
		}
	}
	if ((rc = placer_ready(ep->pl, m, err, errlen)) < 0)
		return rc;
	rc = ep->pl->ops->map(ep->pl->h, pool->rule, tsr_pg_seed((uint64_t)pool->id, pg),
			      pool->size, ep->weights, ep->nweights, raw);
	if (rc < 0)
		return tsr_errf(err, errlen, rc, "PG %" PRId64 ".%" PRIx32 ": placement "
				"plugin '%s' cannot place with rule %u (pool '%s'): "
				"error %d", pool->id, pg, m->placement, pool->rule,
				pool->name, rc);
	if (rp == NULL)
		return 0;
	pthread_mutex_lock(&ep->rc->lock);
	cached = atomic_load_explicit(&rp->raw, memory_order_relaxed);
	done = atomic_load_explicit(&rp->done, memory_order_relaxed);
	if (cached == NULL) {
		cached = malloc((size_t)pool->pg_num * pool->size * sizeof(*cached));
		done = calloc(pool->pg_num, sizeof(*done));
		if (cached == NULL || done == NULL) { /* placed every time */
			free(cached);
			free(done);
			pthread_mutex_unlock(&ep->rc->lock);
			return 0;
		}
		atomic_store_explicit(&rp->raw, cached, memory_order_release);
		atomic_store_explicit(&rp->done, done, memory_order_release);
	}
	if (!atomic_load_explicit(&done[pg], memory_order_relaxed)) {
		memcpy(cached + (size_t)pg * pool->size, raw, pool->size * sizeof(*raw));
		atomic_store_explicit(&done[pg], 1, memory_order_release);
	}
	pthread_mutex_unlock(&ep->rc->lock);
	return 0;
}

int
tsr_osdmap_epoch_map_pg(const struct tsr_osdmap_epoch *ep, int64_t pool_id,
			uint32_t pg, struct tsr_pg_mapping *out, char *err,
			size_t errlen)
{
	const struct tsr_osdmap *m = &ep->map;
	const struct tsr_osdmap_pool *pool = tsr_osdmap_pool(m, pool_id);
	const struct tsr_osdmap_pg_temp *t;
	int32_t raw[TSR_OSDMAP_MAX_SIZE];
	int rc;

	memset(out, 0, sizeof(*out));
	out->epoch = m->epoch;
	out->pgid.pool = pool_id;
	out->pgid.pg = pg;
	out->up_primary = out->acting_primary = -1;
	if (pool == NULL)
		return tsr_errf(err, errlen, -ENOENT, "OSD map epoch %" PRIu64 " has no "
				"pool %" PRId64, m->epoch, pool_id);
	if (pg >= pool->pg_num)
		return tsr_errf(err, errlen, -ERANGE, "PG %" PRId64 ".%" PRIx32 ": pool "
				"'%s' has %u PGs in OSD map epoch %" PRIu64, pool_id,
				pg, pool->name, pool->pg_num, m->epoch);
	if (ep->pl == NULL)
		return tsr_errf(err, errlen, -ENOENT, "OSD map epoch %" PRIu64 " has no "
				"placement map", m->epoch);
	if ((rc = raw_set(ep, pool, pg, raw, err, errlen)) < 0)
		return rc;
	out->nup = keep_up(m, raw, pool->size, out->up);
	if ((t = tsr_osdmap_pg_temp(m, pool_id, pg)) != NULL)
		out->nacting = keep_up(m, t->osds, t->n, out->acting);
	if (out->nacting == 0) {
		memcpy(out->acting, out->up, out->nup * sizeof(out->up[0]));
		out->nacting = out->nup;
	}
	out->up_primary = out->nup ? out->up[0] : -1;
	out->acting_primary = out->nacting ? out->acting[0] : -1;
	return 0;
}

int
tsr_osdmap_epoch_map_object(const struct tsr_osdmap_epoch *ep, int64_t pool_id,
			    const void *name, size_t len, struct tsr_pg_mapping *out,
			    char *err, size_t errlen)
{
	const struct tsr_osdmap_pool *pool = tsr_osdmap_pool(&ep->map, pool_id);

	if (pool == NULL) {
		memset(out, 0, sizeof(*out));
		out->up_primary = out->acting_primary = -1;
		return tsr_errf(err, errlen, -ENOENT, "OSD map epoch %" PRIu64 " has no "
				"pool %" PRId64, ep->map.epoch, pool_id);
	}
	return tsr_osdmap_epoch_map_pg(ep, pool_id, tsr_object_pg(name, len, pool->pg_num),
				       out, err, errlen);
}
