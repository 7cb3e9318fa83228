/* placebase.c — the operations every Tessera placement plugin shares:
 * instances, map text and binary forms, loading a map into the per-rule
 * tables that the mapping loops walk. */
#include "placebase.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

/* log2(1 + i/256) in 0.32 fixed point, i = 0..256; generated once with
 * round(log2(1 + i / 256) * 2**32) and frozen here: part of the mapping
 * function, so it never changes. */
const uint64_t pb_log2_table[257] = {
#include "log2_table.inc"
};

struct pb_inst {
	const struct tsr_host *host;
	struct pb_map *map;
};

/* Seeds that separate the three uses of a device id as hash key. */
#define SEED_DRAW 0x6d2b79f5u
#define SEED_REWEIGHT 0x1b873593u
#define SEED_DOMAIN 0xcc9e2d51u

/* murmur3's 32-bit finaliser: a bijection, so distinct ids get distinct
 * keys. */
static uint32_t
fmix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

int
pb_create(const struct tsr_host *host, const struct tsr_opts *opts,
	  void **instance, char *err, size_t errlen)
{
	struct pb_inst *p = calloc(1, sizeof(*p));

	(void)opts;
	if (p == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	p->host = host;
	*instance = p;
	return 0;
}

static void
free_rule(struct pb_rule *r)
{
	if (r == NULL)
		return;
	free(r->domains);
	free(r->classes);
	free(r->dev);
	free(r);
}

static void
free_map(struct pb_map *m)
{
	if (m == NULL)
		return;
	for (uint32_t i = 0; i < TOPO_MAX_RULES; i++)
		free_rule(m->rules[i]);
	topo_free(m->topo);
	free(m->blob);
	free(m->key);
	free(m->key_rw);
	free(m);
}

void
pb_destroy(void *instance)
{
	struct pb_inst *p = instance;

	free_map(p->map);
	free(p);
}

/* Hand a malloc'd buffer to the caller as host-allocated memory. */
static int
give(const struct pb_inst *p, const void *data, size_t len, struct tsr_buf *out,
     char *err, size_t errlen)
{
	void *b = p->host->alloc(p->host->ctx, len ? len : 1);

	if (b == NULL) {
		snprintf(err, errlen, "out of memory (%zu bytes)", len);
		return -ENOMEM;
	}
	memcpy(b, data, len);
	out->data = b;
	out->len = len;
	return 0;
}

static int
encode_topo(const struct pb_inst *p, struct topo *t, struct tsr_buf *out,
	    char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	int rc = topo_encode(t, &buf, &len);

	if (rc < 0) {
		snprintf(err, errlen, "cannot encode the map: %s", strerror(-rc));
		return rc;
	}
	rc = give(p, buf, len, out, err, errlen);
	free(buf);
	return rc;
}

int
pb_encode(void *inst, const struct tsr_topology *g, struct tsr_buf *out,
	  char *err, size_t errlen)
{
	struct topo *t;
	int rc = topo_from_generic(g, &t, err, errlen);

	if (rc < 0)
		return rc;
	rc = encode_topo(inst, t, out, err, errlen);
	topo_free(t);
	return rc;
}

int
pb_compile(void *inst, const char *text, size_t len, struct tsr_buf *out,
	   char *err, size_t errlen)
{
	struct topo *t;
	int rc = topo_compile(text, len, &t, err, errlen);

	if (rc < 0)
		return rc;
	rc = encode_topo(inst, t, out, err, errlen);
	topo_free(t);
	return rc;
}

int
pb_decompile(void *inst, const void *map, size_t len, struct tsr_buf *out,
	     char *err, size_t errlen)
{
	struct topo *t;
	char *text;
	size_t tlen;
	int rc = topo_decode(map, len, &t, err, errlen);

	if (rc < 0)
		return rc;
	rc = topo_decompile(t, &text, &tlen);
	topo_free(t);
	if (rc < 0) {
		snprintf(err, errlen, "cannot write the map as text: %s", strerror(-rc));
		return rc;
	}
	rc = give(inst, text, tlen, out, err, errlen);
	free(text);
	return rc;
}

/* ---- Per-rule tables ----------------------------------------------------*/

struct devrec {
	int32_t domain;    /* domain id: bucket id, or the device id (CHOOSE) */
	uint32_t weight;
	int32_t id;
};

static int
cmp_devrec(const void *a, const void *b)
{
	const struct devrec *x = a, *y = b;

	if (x->domain != y->domain)
		return x->domain < y->domain ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight < y->weight ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Whether device d lies under root; *dom gets its nearest ancestor of
 * type `type` (0 if none before the root). */
static int
under_root(const struct topo *t, const struct topo_device *d, int32_t root,
	   uint32_t type, int32_t *dom)
{
	int32_t b = d->parent;

	*dom = 0;
	/* the chain is acyclic (validated), so at most nbuckets steps */
	for (uint32_t steps = 0; b != 0 && steps <= t->nbuckets; steps++) {
		const struct topo_bucket *bk = topo_bucket(t, b);
		if (bk == NULL)
			return 0;
		if (*dom == 0 && bk->type == type)
			*dom = bk->id;
		if (bk->id == root)
			return 1;
		b = bk->parent;
	}
	return 0;
}

static int
build_rule(const struct topo *t, const struct topo_rule *tr, struct pb_rule **out)
{
	struct pb_rule *r = calloc(1, sizeof(*r));
	struct devrec *recs = calloc(t->ndevices ? t->ndevices : 1, sizeof(*recs));
	uint32_t n = 0, nd = 0, nc = 0;

	if (r == NULL || recs == NULL)
		goto nomem;
	r->id = tr->id;
	r->mode = tr->mode;
	for (uint32_t i = 0; i < t->ndevices; i++) {
		const struct topo_device *d = &t->devices[i];
		int32_t dom;
		if (!under_root(t, d, tr->root, tr->domain_type, &dom))
			continue;
		if (tr->mode == TSR_RULE_CHOOSELEAF && dom == 0)
			continue; /* under the root but in no failure domain */
		recs[n].domain = tr->mode == TSR_RULE_CHOOSE ? d->id : dom;
		recs[n].weight = d->weight;
		recs[n].id = d->id;
		n++;
	}
	qsort(recs, n, sizeof(*recs), cmp_devrec);
	for (uint32_t i = 0; i < n; i++) {
		bool newdom = i == 0 || recs[i].domain != recs[i - 1].domain;
		nd += newdom;
		nc += newdom || recs[i].weight != recs[i - 1].weight;
	}
	r->dev = malloc((n ? n : 1) * sizeof(*r->dev));
	r->domains = calloc(nd ? nd : 1, sizeof(*r->domains));
	r->classes = calloc(nc ? nc : 1, sizeof(*r->classes));
	if (r->dev == NULL || r->domains == NULL || r->classes == NULL)
		goto nomem;
	for (uint32_t i = 0; i < n; i++) {
		bool newdom = i == 0 || recs[i].domain != recs[i - 1].domain;
		if (newdom) {
			struct pb_domain *dm = &r->domains[r->ndomains++];
			dm->first_class = r->nclasses;
			dm->id = recs[i].domain;
			dm->key = fmix32((uint32_t)recs[i].domain ^ SEED_DOMAIN);
		}
		struct pb_domain *dm = &r->domains[r->ndomains - 1];
		if (newdom || recs[i].weight != recs[i - 1].weight) {
			struct pb_class *c = &r->classes[r->nclasses++];
			c->first = i;
			c->weight = recs[i].weight;
			c->inv_w = 65536.0 / (double)recs[i].weight;
			dm->nclasses++;
		}
		r->classes[r->nclasses - 1].count++;
		dm->weight += recs[i].weight;
		r->dev[i] = recs[i].id;
	}
	for (uint32_t i = 0; i < r->ndomains; i++)
		r->domains[i].inv_w = 65536.0 / (double)r->domains[i].weight;
	r->ndev = n;
	free(recs);
	*out = r;
	return 0;
nomem:
	free(recs);
	free_rule(r);
	return -ENOMEM;
}

int
pb_load(void *inst, const void *map, size_t len, char *err, size_t errlen)
{
	struct pb_inst *p = inst;
	struct pb_map *m = calloc(1, sizeof(*m));
	int rc;

	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = topo_decode(map, len, &m->topo, err, errlen);
	if (rc < 0) {
		free(m);
		return rc;
	}
	const struct topo *t = m->topo;
	m->max_devices = t->max_devices;
	m->key = calloc(t->max_devices ? t->max_devices : 1, sizeof(*m->key));
	m->key_rw = calloc(t->max_devices ? t->max_devices : 1, sizeof(*m->key_rw));
	m->blob = malloc(len ? len : 1);
	if (m->key == NULL || m->key_rw == NULL || m->blob == NULL)
		goto nomem;
	memcpy(m->blob, map, len);
	m->bloblen = len;
	for (uint32_t d = 0; d < t->max_devices; d++) {
		m->key[d] = fmix32(d ^ SEED_DRAW);
		m->key_rw[d] = fmix32(d ^ SEED_REWEIGHT);
	}
	for (uint32_t i = 0; i < t->nrules; i++)
		if (build_rule(t, &t->rules[i], &m->rules[t->rules[i].id]) < 0)
			goto nomem;
	free_map(p->map);
	p->map = m;
	return 0;
nomem:
	free_map(m);
	snprintf(err, errlen, "out of memory loading a map of %u devices",
		 t->max_devices);
	return -ENOMEM;
}

uint32_t
pb_max_devices(void *inst)
{
	struct pb_inst *p = inst;

	return p->map ? p->map->max_devices : 0;
}

int
pb_rule_width(void *inst, uint32_t rule, uint32_t *width)
{
	struct pb_inst *p = inst;

	if (p->map == NULL || rule >= TOPO_MAX_RULES || p->map->rules[rule] == NULL)
		return -ENOENT;
	*width = p->map->rules[rule]->ndomains;
	return 0;
}

int
pb_map(void *inst, pb_map_fn fn, uint32_t rule, uint32_t x, uint32_t nrep,
       const uint32_t *weights, uint32_t nweights, int32_t *out)
{
	struct pb_inst *p = inst;
	int filled = 0;

	if (p->map == NULL || nrep > PB_MAX_REP)
		return -EINVAL;
	if (rule >= TOPO_MAX_RULES || p->map->rules[rule] == NULL)
		return -ENOENT;
	for (uint32_t i = 0; i < nrep; i++)
		out[i] = TSR_PLACEMENT_NONE;
	if (nrep == 0)
		return 0;
	int rc = fn(p->map, p->map->rules[rule], x, nrep, weights, nweights, out);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < nrep; i++)
		filled += out[i] != TSR_PLACEMENT_NONE;
	return filled;
}
