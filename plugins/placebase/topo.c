/* topo.c — the topology model shared by the placement plugins: validation
 * and canonical order, the generic-topology import and the lookups.  The
 * binary form is in topo_bin.c, the text form in topo_text.c; see topo.h
 * for the formats and the rules.
 *
 * Every constructor (compile, decode, from_generic) fills a struct topo and
 * hands it to topo_finish(), which checks it, puts it in canonical order
 * (or, for decode, insists it already is) and derives bucket weights,
 * max_devices and the bucket index.  The text compiler checks everything
 * itself first, so that its errors can name a line; topo_finish() is then
 * only its safety net. */
#include "topo_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Small helpers --------------------------------------------------------*/

bool
topo_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

bool
topo_name_ok(const char *s, size_t n)
{
	if (s == NULL || n == 0 || n > TOPO_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!topo_name_char((unsigned char)s[i]))
			return false;
	return true;
}

char *
topo_strndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p == NULL)
		return NULL;
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* A C string from a caller (generic topology): NULL or longer than a name
 * may be is reported as not ok without reading past TOPO_NAME_MAX + 1. */
static bool
cname_ok(const char *s)
{
	return s != NULL && topo_name_ok(s, strnlen(s, TOPO_NAME_MAX + 1));
}

/* ---- Bucket index ---------------------------------------------------------*/

uint32_t
topo_slot(const struct topo *t, int32_t id)
{
	if (id >= 0)
		return UINT32_MAX;
	if (t->bucket_slot != NULL) {
		/* -(int64_t)id: INT32_MIN must not overflow. */
		uint64_t i = (uint64_t)(-(int64_t)id) - 1;

		return i < t->nslots ? t->bucket_slot[i] : UINT32_MAX;
	}
	for (uint32_t i = 0; i < t->nbuckets; i++)
		if (t->buckets[i].id == id)
			return i;
	return UINT32_MAX;
}

/* Build t->bucket_slot from t->buckets; ids must already be in range.
 * Fails (naming the bucket) on a duplicate id. */
static int
build_slots(struct topo *t, char *err, size_t errlen)
{
	uint32_t n = 0;

	free(t->bucket_slot);
	t->bucket_slot = NULL;
	t->nslots = 0;
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		uint32_t k = (uint32_t)(-(int64_t)t->buckets[i].id);

		if (k > n)
			n = k;
	}
	if (n == 0)
		return 0;
	t->bucket_slot = malloc((size_t)n * sizeof(*t->bucket_slot));
	if (t->bucket_slot == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	memset(t->bucket_slot, 0xff, (size_t)n * sizeof(*t->bucket_slot));
	t->nslots = n;
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		uint32_t k = (uint32_t)(-(int64_t)t->buckets[i].id) - 1;

		if (t->bucket_slot[k] != UINT32_MAX)
			return errf(err, errlen, -EINVAL,
				    "bucket %d: duplicate id",
				    t->buckets[i].id);
		t->bucket_slot[k] = i;
	}
	return 0;
}

/* ---- Canonical bucket order -----------------------------------------------
 *
 * Children first, and among the buckets that are ready (every bucket they
 * list already placed) the one with the highest id: Kahn's algorithm with a
 * max-heap on the id.  Parents must already resolve through the slot index.
 * O(n log n) whatever the input, so a hostile map cannot make it slow. */

static void
heap_push(uint32_t *heap, uint32_t *n, const struct topo_bucket *b,
	  uint32_t v)
{
	uint32_t i = (*n)++;

	while (i > 0) {
		uint32_t up = (i - 1) / 2;

		if (b[heap[up]].id >= b[v].id)
			break;
		heap[i] = heap[up];
		i = up;
	}
	heap[i] = v;
}

static uint32_t
heap_pop(uint32_t *heap, uint32_t *n, const struct topo_bucket *b)
{
	uint32_t top = heap[0], last = heap[--(*n)], i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && b[heap[c + 1]].id > b[heap[c]].id)
			c++;
		if (b[heap[c]].id <= b[last].id)
			break;
		heap[i] = heap[c];
		i = c;
	}
	if (*n > 0)
		heap[i] = last;
	return top;
}

/* Fill order[0..nbuckets) with slots in canonical order.  Returns how many
 * were placed: fewer than nbuckets when parent chains form a cycle (the
 * buckets left out are exactly those on a cycle), or -ENOMEM. */
static int64_t
canonical_order(const struct topo *t, uint32_t *order)
{
	uint32_t nb = t->nbuckets, nheap = 0, k = 0;
	uint32_t *pending, *heap;

	if (nb == 0)
		return 0;
	pending = calloc(nb, sizeof(*pending));
	heap = malloc((size_t)nb * sizeof(*heap));
	if (pending == NULL || heap == NULL) {
		free(pending);
		free(heap);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nb; i++)
		if (t->buckets[i].parent != 0)
			pending[topo_slot(t, t->buckets[i].parent)]++;
	for (uint32_t i = 0; i < nb; i++)
		if (pending[i] == 0)
			heap_push(heap, &nheap, t->buckets, i);
	while (nheap > 0) {
		uint32_t s = heap_pop(heap, &nheap, t->buckets);

		order[k++] = s;
		if (t->buckets[s].parent != 0) {
			uint32_t p = topo_slot(t, t->buckets[s].parent);

			if (--pending[p] == 0)
				heap_push(heap, &nheap, t->buckets, p);
		}
	}
	free(pending);
	free(heap);
	return k;
}

/* ---- Validation -----------------------------------------------------------*/

static int
cmp_device(const void *a, const void *b)
{
	int32_t x = ((const struct topo_device *)a)->id;
	int32_t y = ((const struct topo_device *)b)->id;

	return (x > y) - (x < y);
}

static int
cmp_rule(const void *a, const void *b)
{
	uint32_t x = ((const struct topo_rule *)a)->id;
	uint32_t y = ((const struct topo_rule *)b)->id;

	return (x > y) - (x < y);
}

struct name_ref {
	const char *name;
	int32_t id;
};

static int
cmp_name_ref(const void *a, const void *b)
{
	const struct name_ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return (x->id > y->id) - (x->id < y->id);
}

static const char *
item_kind(int32_t id)
{
	return id >= 0 ? "device" : "bucket";
}

static int
check_types(const struct topo *t, char *err, size_t errlen)
{
	if (t->ntypes == 0 || t->ntypes > TOPO_MAX_TYPES)
		return errf(err, errlen, -EINVAL,
			    "type count %u out of range (1..%u)",
			    t->ntypes, TOPO_MAX_TYPES);
	for (uint32_t i = 0; i < t->ntypes; i++) {
		if (!cname_ok(t->types[i]))
			return errf(err, errlen, -EINVAL,
				    "type %u: bad name", i);
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(t->types[i], t->types[j]) == 0)
				return errf(err, errlen, -EINVAL,
					    "type %u: duplicate name '%s' "
					    "(also type %u)",
					    i, t->types[i], j);
	}
	return 0;
}

static int
check_devices(const struct topo *t, char *err, size_t errlen)
{
	if (t->ndevices > TOPO_MAX_DEVICES)
		return errf(err, errlen, -EINVAL,
			    "too many devices (%u, limit %u)",
			    t->ndevices, TOPO_MAX_DEVICES);
	for (uint32_t i = 0; i < t->ndevices; i++) {
		const struct topo_device *d = &t->devices[i];

		if (d->id < 0 || (uint32_t)d->id >= TOPO_MAX_DEVICES)
			return errf(err, errlen, -EINVAL,
				    "device %d: id out of range (0..%u)",
				    d->id, TOPO_MAX_DEVICES - 1);
		if (i > 0 && d->id == t->devices[i - 1].id)
			return errf(err, errlen, -EINVAL,
				    "device %d: duplicate id", d->id);
		if (i > 0 && d->id < t->devices[i - 1].id)
			return errf(err, errlen, -EINVAL,
				    "device %d: out of order (after "
				    "device %d)",
				    d->id, t->devices[i - 1].id);
		if (!cname_ok(d->name))
			return errf(err, errlen, -EINVAL,
				    "device %d: bad name", d->id);
		if (d->weight == 0)
			return errf(err, errlen, -EINVAL,
				    "device %d: weight must be > 0",
				    d->id);
	}
	return 0;
}

static int
check_buckets(struct topo *t, char *err, size_t errlen)
{
	if (t->nbuckets > TOPO_MAX_BUCKETS)
		return errf(err, errlen, -EINVAL,
			    "too many buckets (%u, limit %u)",
			    t->nbuckets, TOPO_MAX_BUCKETS);
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		const struct topo_bucket *b = &t->buckets[i];

		if (b->id >= 0 || b->id < -(int32_t)TOPO_MAX_BUCKETS)
			return errf(err, errlen, -EINVAL,
				    "bucket %d: id out of range "
				    "(-1..-%u)",
				    b->id, TOPO_MAX_BUCKETS);
		if (b->type == 0)
			return errf(err, errlen, -EINVAL,
				    "bucket %d: type 0 is the device type",
				    b->id);
		if (b->type >= t->ntypes)
			return errf(err, errlen, -EINVAL,
				    "bucket %d: unknown type %u",
				    b->id, b->type);
		if (!cname_ok(b->name))
			return errf(err, errlen, -EINVAL,
				    "bucket %d: bad name", b->id);
	}
	return build_slots(t, err, errlen);
}

/* Names are unique across devices and buckets.  Sorting rather than
 * hashing: a hostile blob cannot pick names that collide. */
static int
check_names(const struct topo *t, char *err, size_t errlen)
{
	size_t n = (size_t)t->ndevices + t->nbuckets, k = 0;
	struct name_ref *v;
	int rc = 0;

	if (n < 2)
		return 0;
	v = malloc(n * sizeof(*v));
	if (v == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < t->ndevices; i++)
		v[k++] = (struct name_ref){ t->devices[i].name,
					    t->devices[i].id };
	for (uint32_t i = 0; i < t->nbuckets; i++)
		v[k++] = (struct name_ref){ t->buckets[i].name,
					    t->buckets[i].id };
	qsort(v, n, sizeof(*v), cmp_name_ref);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(v[i - 1].name, v[i].name) == 0) {
			rc = errf(err, errlen, -EINVAL,
				  "%s %d: duplicate name '%s' (also %s %d)",
				  item_kind(v[i].id), v[i].id, v[i].name,
				  item_kind(v[i - 1].id), v[i - 1].id);
			break;
		}
	}
	free(v);
	return rc;
}

static int
check_parents(const struct topo *t, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < t->ndevices; i++) {
		int32_t p = t->devices[i].parent;

		if (p != 0 && topo_slot(t, p) == UINT32_MAX)
			return errf(err, errlen, -EINVAL,
				    "device %d: parent %d is not a bucket",
				    t->devices[i].id, p);
	}
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		int32_t p = t->buckets[i].parent;

		if (p != 0 && topo_slot(t, p) == UINT32_MAX)
			return errf(err, errlen, -EINVAL,
				    "bucket %d: parent %d is not a bucket",
				    t->buckets[i].id, p);
	}
	return 0;
}

/* Put the buckets in canonical order (reorder) or require that they are. */
static int
order_buckets(struct topo *t, bool reorder, char *err, size_t errlen)
{
	uint32_t nb = t->nbuckets;
	uint32_t *order;
	int64_t placed;
	int rc = 0;

	if (nb == 0)
		return 0;
	order = malloc((size_t)nb * sizeof(*order));
	if (order == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	placed = canonical_order(t, order);
	if (placed < 0) {
		free(order);
		return errf(err, errlen, -ENOMEM, "out of memory");
	}
	if (placed < nb) {
		/* Name the first bucket (in the given order) left on a cycle:
		 * mark the placed ones in a scratch copy of the index. */
		uint8_t *seen = calloc(nb, 1);

		if (seen == NULL) {
			free(order);
			return errf(err, errlen, -ENOMEM,
				    "out of memory");
		}
		for (int64_t k = 0; k < placed; k++)
			seen[order[k]] = 1;
		for (uint32_t i = 0; i < nb; i++) {
			if (!seen[i]) {
				rc = errf(err, errlen, -EINVAL,
					  "bucket %d: parent chain forms "
					  "a cycle", t->buckets[i].id);
				break;
			}
		}
		free(seen);
		free(order);
		return rc;
	}
	if (!reorder) {
		for (uint32_t k = 0; k < nb; k++) {
			if (order[k] != k) {
				rc = errf(err, errlen, -EINVAL,
					  "bucket %d: out of canonical "
					  "order (bucket %d comes first)",
					  t->buckets[k].id,
					  t->buckets[order[k]].id);
				break;
			}
		}
		free(order);
		return rc;
	}
	{
		struct topo_bucket *nbk = malloc((size_t)nb * sizeof(*nbk));

		if (nbk == NULL) {
			free(order);
			return errf(err, errlen, -ENOMEM,
				    "out of memory");
		}
		for (uint32_t k = 0; k < nb; k++)
			nbk[k] = t->buckets[order[k]];
		free(t->buckets);
		t->buckets = nbk;
	}
	free(order);
	return build_slots(t, err, errlen);
}

/* Derive bucket weights, check that each holds a device, and check the
 * rules (which need to know what types sit under each bucket). */
static int
derive_and_check_rules(struct topo *t, char *err, size_t errlen)
{
	uint32_t nb = t->nbuckets;
	/* below[s]: bit k set when some item strictly under bucket s has
	 * type k (TOPO_MAX_TYPES is 32, so one word holds every type). */
	uint32_t *below = NULL;
	int rc = 0;

	_Static_assert(TOPO_MAX_TYPES <= 32, "type mask is one uint32_t");
	if (nb > 0) {
		below = calloc(nb, sizeof(*below));
		if (below == NULL)
			return errf(err, errlen, -ENOMEM,
				    "out of memory");
	}
	for (uint32_t i = 0; i < nb; i++)
		t->buckets[i].weight = 0;
	for (uint32_t i = 0; i < t->ndevices; i++) {
		const struct topo_device *d = &t->devices[i];

		if (d->parent != 0) {
			uint32_t s = topo_slot(t, d->parent);

			t->buckets[s].weight += d->weight;
			below[s] |= 1u;
		}
	}
	/* Children first, so a bucket is complete when its turn comes. */
	for (uint32_t i = 0; i < nb; i++) {
		struct topo_bucket *b = &t->buckets[i];

		if (b->weight == 0) {
			rc = errf(err, errlen, -EINVAL,
				  "bucket %d: no device under it", b->id);
			goto out;
		}
		/* A host inside a host would let "one replica per host"
		 * put two replicas under the outer one. */
		if (below[i] & (1u << b->type)) {
			rc = errf(err, errlen, -EINVAL,
				  "bucket %d (%s): holds a bucket of its own "
				  "type '%s'; buckets of one type must not nest",
				  b->id, b->name, t->types[b->type]);
			goto out;
		}
		if (b->parent != 0) {
			uint32_t s = topo_slot(t, b->parent);

			t->buckets[s].weight += b->weight;
			below[s] |= below[i] | (1u << b->type);
		}
	}

	if (t->nrules > TOPO_MAX_RULES) {
		rc = errf(err, errlen, -EINVAL,
			  "too many rules (%u, limit %u)", t->nrules,
			  TOPO_MAX_RULES);
		goto out;
	}
	for (uint32_t i = 0; i < t->nrules; i++) {
		const struct topo_rule *r = &t->rules[i];
		uint32_t s;

		if (r->id >= TOPO_MAX_RULES) {
			rc = errf(err, errlen, -EINVAL,
				  "rule %u: id out of range (0..%u)",
				  r->id, TOPO_MAX_RULES - 1);
			goto out;
		}
		if (i > 0 && r->id <= t->rules[i - 1].id) {
			if (r->id == t->rules[i - 1].id)
				rc = errf(err, errlen, -EINVAL,
					  "rule %u: duplicate id", r->id);
			else
				rc = errf(err, errlen, -EINVAL,
					  "rule %u: out of order (after "
					  "rule %u)",
					  r->id, t->rules[i - 1].id);
			goto out;
		}
		if (!cname_ok(r->name)) {
			rc = errf(err, errlen, -EINVAL,
				  "rule %u: bad name", r->id);
			goto out;
		}
		for (uint32_t j = 0; j < i; j++) {
			if (strcmp(r->name, t->rules[j].name) == 0) {
				rc = errf(err, errlen, -EINVAL,
					  "rule %u: duplicate name '%s' "
					  "(also rule %u)",
					  r->id, r->name, t->rules[j].id);
				goto out;
			}
		}
		s = topo_slot(t, r->root);
		if (s == UINT32_MAX) {
			rc = errf(err, errlen, -EINVAL,
				  "rule %u: root %d is not a bucket",
				  r->id, r->root);
			goto out;
		}
		if (r->mode != TSR_RULE_CHOOSELEAF &&
		    r->mode != TSR_RULE_CHOOSE) {
			rc = errf(err, errlen, -EINVAL,
				  "rule %u: unknown mode %u", r->id,
				  r->mode);
			goto out;
		}
		if (r->domain_type >= t->ntypes) {
			rc = errf(err, errlen, -EINVAL,
				  "rule %u: unknown domain type %u",
				  r->id, r->domain_type);
			goto out;
		}
		if (r->mode == TSR_RULE_CHOOSELEAF && r->domain_type == 0) {
			rc = errf(err, errlen, -EINVAL,
				  "rule %u: chooseleaf needs a failure "
				  "domain type, not the device type",
				  r->id);
			goto out;
		}
		if (r->mode == TSR_RULE_CHOOSE && r->domain_type != 0) {
			rc = errf(err, errlen, -EINVAL,
				  "rule %u: choose picks devices; its "
				  "domain type must be 0, not %u",
				  r->id, r->domain_type);
			goto out;
		}
		if ((below[s] & (1u << r->domain_type)) == 0) {
			rc = errf(err, errlen, -EINVAL,
				  "rule %u: bucket %d holds no %s",
				  r->id, r->root,
				  t->types[r->domain_type]);
			goto out;
		}
	}
out:
	free(below);
	return rc;
}

int
topo_finish(struct topo *t, bool reorder, char *err, size_t errlen)
{
	int rc;

	if ((rc = check_types(t, err, errlen)) != 0)
		return rc;
	if (reorder) {
		if (t->ndevices > 1)
			qsort(t->devices, t->ndevices, sizeof(*t->devices),
			      cmp_device);
		if (t->nrules > 1)
			qsort(t->rules, t->nrules, sizeof(*t->rules),
			      cmp_rule);
	}
	if ((rc = check_devices(t, err, errlen)) != 0 ||
	    (rc = check_buckets(t, err, errlen)) != 0 ||
	    (rc = check_names(t, err, errlen)) != 0 ||
	    (rc = check_parents(t, err, errlen)) != 0 ||
	    (rc = order_buckets(t, reorder, err, errlen)) != 0 ||
	    (rc = derive_and_check_rules(t, err, errlen)) != 0)
		return rc;
	t->max_devices = t->ndevices > 0
		? (uint32_t)t->devices[t->ndevices - 1].id + 1 : 0;
	return 0;
}

/* ---- Lifetime and lookups -------------------------------------------------*/

void
topo_free(struct topo *t)
{
	if (t == NULL)
		return;
	if (t->types != NULL)
		for (uint32_t i = 0; i < t->ntypes; i++)
			free(t->types[i]);
	if (t->devices != NULL)
		for (uint32_t i = 0; i < t->ndevices; i++)
			free(t->devices[i].name);
	if (t->buckets != NULL)
		for (uint32_t i = 0; i < t->nbuckets; i++)
			free(t->buckets[i].name);
	if (t->rules != NULL)
		for (uint32_t i = 0; i < t->nrules; i++)
			free(t->rules[i].name);
	free(t->types);
	free(t->devices);
	free(t->buckets);
	free(t->rules);
	free(t->bucket_slot);
	free(t);
}

const struct topo_device *
topo_device(const struct topo *t, int32_t id)
{
	uint32_t lo = 0, hi;

	if (t == NULL)
		return NULL;
	hi = t->ndevices;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->devices[mid].id < id)
			lo = mid + 1;
		else if (t->devices[mid].id > id)
			hi = mid;
		else
			return &t->devices[mid];
	}
	return NULL;
}

const struct topo_bucket *
topo_bucket(const struct topo *t, int32_t id)
{
	uint32_t s;

	if (t == NULL)
		return NULL;
	s = topo_slot(t, id);
	return s < t->nbuckets ? &t->buckets[s] : NULL;
}

const struct topo_rule *
topo_rule(const struct topo *t, uint32_t id)
{
	uint32_t lo = 0, hi;

	if (t == NULL)
		return NULL;
	hi = t->nrules;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (t->rules[mid].id < id)
			lo = mid + 1;
		else if (t->rules[mid].id > id)
			hi = mid;
		else
			return &t->rules[mid];
	}
	return NULL;
}

/* ---- Generic topology -----------------------------------------------------*/

int
topo_from_generic(const struct tsr_topology *g, struct topo **out,
		  char *err, size_t errlen)
{
	struct topo *t;
	uint32_t nd = 0, nb = 0;
	int rc;

	if (out == NULL)
		return errf(err, errlen, -EINVAL, "no output");
	*out = NULL;
	if (g == NULL)
		return errf(err, errlen, -EINVAL, "no topology");
	if (g->ntypes == 0 || g->ntypes > TOPO_MAX_TYPES)
		return errf(err, errlen, -EINVAL,
			    "type count %u out of range (1..%u)",
			    g->ntypes, TOPO_MAX_TYPES);
	if (g->types == NULL)
		return errf(err, errlen, -EINVAL, "no type names");
	if (g->nitems > 0 && g->items == NULL)
		return errf(err, errlen, -EINVAL, "no items");
	if (g->nrules > 0 && g->rules == NULL)
		return errf(err, errlen, -EINVAL, "no rules");
	if (g->nrules > TOPO_MAX_RULES)
		return errf(err, errlen, -EINVAL,
			    "too many rules (%u, limit %u)", g->nrules,
			    TOPO_MAX_RULES);
	for (uint32_t i = 0; i < g->nitems; i++) {
		if (g->items[i].id >= 0)
			nd++;
		else
			nb++;
		/* Stop counting (and allocating) once over a limit. */
		if (nd > TOPO_MAX_DEVICES)
			return errf(err, errlen, -EINVAL,
				    "too many devices (limit %u)",
				    TOPO_MAX_DEVICES);
		if (nb > TOPO_MAX_BUCKETS)
			return errf(err, errlen, -EINVAL,
				    "too many buckets (limit %u)",
				    TOPO_MAX_BUCKETS);
	}

	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return errf(err, errlen, -ENOMEM, "out of memory");
	t->types = calloc(g->ntypes, sizeof(*t->types));
	t->devices = calloc(nd > 0 ? nd : 1, sizeof(*t->devices));
	t->buckets = calloc(nb > 0 ? nb : 1, sizeof(*t->buckets));
	t->rules = calloc(g->nrules > 0 ? g->nrules : 1, sizeof(*t->rules));
	if (t->types == NULL || t->devices == NULL || t->buckets == NULL ||
	    t->rules == NULL) {
		rc = errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	t->ntypes = g->ntypes;
	for (uint32_t i = 0; i < g->ntypes; i++) {
		if (!cname_ok(g->types[i])) {
			rc = errf(err, errlen, -EINVAL,
				  "type %u: bad name", i);
			goto fail;
		}
		t->types[i] = topo_strndup(g->types[i], strlen(g->types[i]));
		if (t->types[i] == NULL)
			goto nomem;
	}
	for (uint32_t i = 0; i < g->nitems; i++) {
		const struct tsr_topo_item *it = &g->items[i];
		char **name;

		if (!cname_ok(it->name)) {
			rc = errf(err, errlen, -EINVAL,
				  "%s %d: bad name", item_kind(it->id),
				  it->id);
			goto fail;
		}
		if (it->id >= 0) {
			struct topo_device *d = &t->devices[t->ndevices++];

			if (it->type != 0) {
				rc = errf(err, errlen, -EINVAL,
					  "device %d: type %u is not the "
					  "device type", it->id, it->type);
				goto fail;
			}
			d->id = it->id;
			d->weight = it->weight;
			d->parent = it->parent;
			name = &d->name;
		} else {
			struct topo_bucket *b = &t->buckets[t->nbuckets++];

			b->id = it->id;
			b->type = it->type;
			b->parent = it->parent;
			name = &b->name;
		}
		*name = topo_strndup(it->name, strlen(it->name));
		if (*name == NULL)
			goto nomem;
	}
	for (uint32_t i = 0; i < g->nrules; i++) {
		const struct tsr_topo_rule *gr = &g->rules[i];
		struct topo_rule *r = &t->rules[t->nrules++];

		if (!cname_ok(gr->name)) {
			rc = errf(err, errlen, -EINVAL,
				  "rule %u: bad name", gr->id);
			goto fail;
		}
		r->id = gr->id;
		r->root = gr->root;
		r->mode = gr->mode;
		/* placement.h gives domain_type meaning for CHOOSELEAF only;
		 * CHOOSE picks devices, written as the device type. */
		r->domain_type = gr->mode == TSR_RULE_CHOOSE ? 0
							     : gr->domain_type;
		r->name = topo_strndup(gr->name, strlen(gr->name));
		if (r->name == NULL)
			goto nomem;
	}
	rc = topo_finish(t, true, err, errlen);
	if (rc != 0)
		goto fail;
	*out = t;
	return 0;
nomem:
	rc = errf(err, errlen, -ENOMEM, "out of memory");
fail:
	topo_free(t);
	return rc;
}
