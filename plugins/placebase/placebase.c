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

/* Eight draws at a time with the compiler's vector extension (the same
 * operations as pb_strat_draw, lane by lane).  On x86-64 a second copy of
 * the loop is compiled for AVX2 and used where the CPU has it.  Integer
 * arithmetic only, so both copies give the same values. */
typedef uint32_t pb_v8 __attribute__((vector_size(32)));

static inline __attribute__((always_inline)) void
strat_draws(const uint32_t *keys, uint32_t n, const struct pb_strat_in *in,
	    uint32_t *out)
{
	uint32_t i = 0;

	for (; i + 8 <= n; i += 8) {
		pb_v8 a, b, v, u, o;

		memcpy(&a, keys + i, sizeof(a));
		b = a ^ in->kQ;
		a ^= in->kq;
		PB_KEYMIX(a);
		PB_PERM8(v, in->s, a);
		b *= 2 * v + 1;
		PB_KEYMIX(b);
		PB_PERM8(u, in->t, b);
		o = (v << 16) | (u << 8) | (((in->s ^ a) * 0x27d4eb2du) >> 24);
		memcpy(out + i, &o, sizeof(o));
	}
	for (; i < n; i++)
		out[i] = pb_strat_draw(keys[i], in);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) static void
strat_draws_avx2(const uint32_t *keys, uint32_t n, const struct pb_strat_in *in,
		 uint32_t *out)
{
	strat_draws(keys, n, in, out);
}

#define HAVE_AVX2_COPY() __builtin_cpu_supports("avx2")
#else
#define HAVE_AVX2_COPY() 0
#define strat_draws_avx2 strat_draws
#endif

void
pb_strat_draws(const uint32_t *keys, uint32_t n, const struct pb_strat_in *in,
	       uint32_t *out)
{
	if (HAVE_AVX2_COPY())
		strat_draws_avx2(keys, n, in, out);
	else
		strat_draws(keys, n, in, out);
}

int
pb_strat_draws_copy(int copy, const uint32_t *keys, uint32_t n,
		    const struct pb_strat_in *in, uint32_t *out)
{
	if (copy == 0)
		strat_draws(keys, n, in, out);
	else if (copy == 1 && HAVE_AVX2_COPY())
		strat_draws_avx2(keys, n, in, out);
	else
		return -ENOTSUP;
	return 0;
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
	free(r->key);
	free(r->key_rw);
	free(r);
}

static void
free_map(struct pb_map *m)
{
	if (m == NULL)
		return;
	for (uint32_t i = 0; i < TOPO_MAX_RULES; i++)
		free_rule(m->rules[i]);
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

/* Per bucket (by index in t->buckets), for one rule: whether it lies at
 * or under the rule's root, and its failure domain (the bucket of the
 * rule's domain type on its path up to the root; 0 if none).  One pass
 * over the buckets, parents before children (the reverse of the canonical
 * order), so loading costs O(buckets + devices) per rule however deep the
 * hierarchy. */
static int
classify_buckets(const struct topo *t, const struct topo_rule *tr,
		 uint8_t *in_root, int32_t *dom)
{
	for (uint32_t k = t->nbuckets; k-- > 0;) {
		const struct topo_bucket *b = &t->buckets[k];
		uint8_t in = 0;
		int32_t d = 0;

		if (b->id == tr->root) {
			in = 1;
		} else if (b->parent != 0) {
			const struct topo_bucket *p = topo_bucket(t, b->parent);
			if (p == NULL)
				return -EINVAL;
			uint32_t pi = (uint32_t)(p - t->buckets);
			in = in_root[pi];
			d = dom[pi];
		}
		/* buckets of one type never nest (validated), so the nearest
		 * bucket of the domain type is the only one */
		if (in && b->type == tr->domain_type)
			d = b->id;
		in_root[k] = in;
		dom[k] = in ? d : 0;
	}
	return 0;
}

static int
build_rule(const struct topo *t, const struct topo_rule *tr,
	   uint8_t *in_root, int32_t *domv, struct pb_rule **out)
{
	struct pb_rule *r = calloc(1, sizeof(*r));
	struct devrec *recs = calloc(t->ndevices ? t->ndevices : 1, sizeof(*recs));
	uint32_t n = 0, nd = 0, nc = 0;
	int rc = -ENOMEM;

	if (r == NULL || recs == NULL)
		goto fail;
	r->id = tr->id;
	r->mode = tr->mode;
	if ((rc = classify_buckets(t, tr, in_root, domv)) < 0)
		goto fail;
	rc = -ENOMEM;
	for (uint32_t i = 0; i < t->ndevices; i++) {
		const struct topo_device *d = &t->devices[i];
		const struct topo_bucket *p = d->parent ? topo_bucket(t, d->parent) : NULL;
		if (p == NULL)
			continue; /* unattached devices are under no root */
		uint32_t pi = (uint32_t)(p - t->buckets);
		if (!in_root[pi])
			continue;
		if (tr->mode == TSR_RULE_CHOOSELEAF && domv[pi] == 0)
			continue; /* under the root but in no failure domain */
		recs[n].domain = tr->mode == TSR_RULE_CHOOSE ? d->id : domv[pi];
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
	r->key = malloc((n ? n : 1) * sizeof(*r->key));
	r->key_rw = malloc((n ? n : 1) * sizeof(*r->key_rw));
	r->domains = calloc(nd ? nd : 1, sizeof(*r->domains));
	r->classes = calloc(nc ? nc : 1, sizeof(*r->classes));
	if (!r->dev || !r->key || !r->key_rw || !r->domains || !r->classes)
		goto fail;
	for (uint32_t i = 0; i < n; i++) {
		bool newdom = i == 0 || recs[i].domain != recs[i - 1].domain;
		if (newdom) {
			struct pb_domain *dm = &r->domains[r->ndomains++];
			dm->first_class = r->nclasses;
			dm->id = recs[i].domain;
			dm->key = pb_fmix32((uint32_t)recs[i].domain ^ SEED_DOMAIN);
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
		r->key[i] = pb_fmix32((uint32_t)recs[i].id ^ SEED_DRAW);
		r->key_rw[i] = pb_fmix32((uint32_t)recs[i].id ^ SEED_REWEIGHT);
	}
	for (uint32_t i = 0; i < r->ndomains; i++)
		r->domains[i].inv_w = 65536.0 / (double)r->domains[i].weight;
	r->ndev = n;
	free(recs);
	*out = r;
	return 0;
fail:
	free(recs);
	free_rule(r);
	return rc;
}

int
pb_load(void *inst, const void *map, size_t len, char *err, size_t errlen)
{
	struct pb_inst *p = inst;
	struct pb_map *m = NULL;
	struct topo *t = NULL;
	uint8_t *in_root = NULL;
	int32_t *domv = NULL;
	uint64_t entries = 0;
	int rc;

	rc = topo_decode(map, len, &t, err, errlen);
	if (rc < 0)
		return rc;
	/* every rule's tables hold at most every device once */
	for (uint32_t i = 0; i < t->nrules; i++)
		entries += t->ndevices;
	if (entries > PB_MAX_ENTRIES) {
		snprintf(err, errlen,
			 "map too large: its %u rules over %u devices need %llu table entries (limit %u)",
			 t->nrules, t->ndevices, (unsigned long long)entries,
			 PB_MAX_ENTRIES);
		topo_free(t);
		return -E2BIG;
	}
	m = calloc(1, sizeof(*m));
	in_root = malloc(t->nbuckets ? t->nbuckets : 1);
	domv = malloc((t->nbuckets ? t->nbuckets : 1) * sizeof(*domv));
	if (m == NULL || in_root == NULL || domv == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	m->max_devices = t->max_devices;
	for (uint32_t i = 0; i < t->nrules && rc == 0; i++)
		rc = build_rule(t, &t->rules[i], in_root, domv,
				&m->rules[t->rules[i].id]);
	if (rc == 0) {
		free_map(p->map);
		p->map = m;
		m = NULL;
	}
out:
	if (rc < 0)
		snprintf(err, errlen, "cannot load a map of %u devices: %s",
			 t->ndevices, strerror(-rc));
	free_map(m);
	free(in_root);
	free(domv);
	topo_free(t);
	return rc;
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
