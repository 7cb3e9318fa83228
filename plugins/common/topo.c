/* topo.c — the topology model shared by the placement plugins: validation
 * and canonical order, the generic-topology import, the binary form, the
 * text form and the lookups.  See topo.h for the formats and the rules.
 *
 * Every constructor (compile, decode, from_generic) fills a struct topo and
 * hands it to topo_finish(), which checks it, puts it in canonical order
 * (or, for decode, insists it already is) and derives bucket weights,
 * max_devices and the bucket index.  The text compiler checks everything
 * itself first, so that its errors can name a line; topo_finish() is then
 * only its safety net. */
#include "topo.h"

#include <tessera/crc32c.h>
#include <tessera/encoding.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Smallest encoded record of each kind (every name has at least one byte),
 * used to bound a count by the bytes left before allocating for it. */
#define TYPE_REC_MIN (4 + 1)
#define DEVICE_REC_MIN (4 + 5 + 4 + 4)
#define BUCKET_REC_MIN (4 + 4 + 5 + 4)
#define RULE_REC_MIN (4 + 5 + 4 + 4 + 4)

/* ---- Small helpers --------------------------------------------------------*/

static int topo_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
	TSR_PRINTF(4, 5);

static int
topo_errf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static bool
topo_name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

static bool
topo_name_ok(const char *s, size_t n)
{
	if (s == NULL || n == 0 || n > TOPO_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!topo_name_char((unsigned char)s[i]))
			return false;
	return true;
}

static char *
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

static uint32_t
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
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	memset(t->bucket_slot, 0xff, (size_t)n * sizeof(*t->bucket_slot));
	t->nslots = n;
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		uint32_t k = (uint32_t)(-(int64_t)t->buckets[i].id) - 1;

		if (t->bucket_slot[k] != UINT32_MAX)
			return topo_errf(err, errlen, -EINVAL,
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
		return topo_errf(err, errlen, -EINVAL,
				 "type count %u out of range (1..%u)",
				 t->ntypes, TOPO_MAX_TYPES);
	for (uint32_t i = 0; i < t->ntypes; i++) {
		if (!cname_ok(t->types[i]))
			return topo_errf(err, errlen, -EINVAL,
					 "type %u: bad name", i);
		for (uint32_t j = 0; j < i; j++)
			if (strcmp(t->types[i], t->types[j]) == 0)
				return topo_errf(err, errlen, -EINVAL,
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
		return topo_errf(err, errlen, -EINVAL,
				 "too many devices (%u, limit %u)",
				 t->ndevices, TOPO_MAX_DEVICES);
	for (uint32_t i = 0; i < t->ndevices; i++) {
		const struct topo_device *d = &t->devices[i];

		if (d->id < 0 || (uint32_t)d->id >= TOPO_MAX_DEVICES)
			return topo_errf(err, errlen, -EINVAL,
					 "device %d: id out of range (0..%u)",
					 d->id, TOPO_MAX_DEVICES - 1);
		if (i > 0 && d->id == t->devices[i - 1].id)
			return topo_errf(err, errlen, -EINVAL,
					 "device %d: duplicate id", d->id);
		if (i > 0 && d->id < t->devices[i - 1].id)
			return topo_errf(err, errlen, -EINVAL,
					 "device %d: out of order (after "
					 "device %d)",
					 d->id, t->devices[i - 1].id);
		if (!cname_ok(d->name))
			return topo_errf(err, errlen, -EINVAL,
					 "device %d: bad name", d->id);
		if (d->weight == 0)
			return topo_errf(err, errlen, -EINVAL,
					 "device %d: weight must be > 0",
					 d->id);
	}
	return 0;
}

static int
check_buckets(struct topo *t, char *err, size_t errlen)
{
	if (t->nbuckets > TOPO_MAX_BUCKETS)
		return topo_errf(err, errlen, -EINVAL,
				 "too many buckets (%u, limit %u)",
				 t->nbuckets, TOPO_MAX_BUCKETS);
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		const struct topo_bucket *b = &t->buckets[i];

		if (b->id >= 0 || b->id < -(int32_t)TOPO_MAX_BUCKETS)
			return topo_errf(err, errlen, -EINVAL,
					 "bucket %d: id out of range "
					 "(-1..-%u)",
					 b->id, TOPO_MAX_BUCKETS);
		if (b->type == 0)
			return topo_errf(err, errlen, -EINVAL,
					 "bucket %d: type 0 is the device type",
					 b->id);
		if (b->type >= t->ntypes)
			return topo_errf(err, errlen, -EINVAL,
					 "bucket %d: unknown type %u",
					 b->id, b->type);
		if (!cname_ok(b->name))
			return topo_errf(err, errlen, -EINVAL,
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
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < t->ndevices; i++)
		v[k++] = (struct name_ref){ t->devices[i].name,
					    t->devices[i].id };
	for (uint32_t i = 0; i < t->nbuckets; i++)
		v[k++] = (struct name_ref){ t->buckets[i].name,
					    t->buckets[i].id };
	qsort(v, n, sizeof(*v), cmp_name_ref);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(v[i - 1].name, v[i].name) == 0) {
			rc = topo_errf(err, errlen, -EINVAL,
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
			return topo_errf(err, errlen, -EINVAL,
					 "device %d: parent %d is not a bucket",
					 t->devices[i].id, p);
	}
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		int32_t p = t->buckets[i].parent;

		if (p != 0 && topo_slot(t, p) == UINT32_MAX)
			return topo_errf(err, errlen, -EINVAL,
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
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	placed = canonical_order(t, order);
	if (placed < 0) {
		free(order);
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	}
	if (placed < nb) {
		/* Name the first bucket (in the given order) left on a cycle:
		 * mark the placed ones in a scratch copy of the index. */
		uint8_t *seen = calloc(nb, 1);

		if (seen == NULL) {
			free(order);
			return topo_errf(err, errlen, -ENOMEM,
					 "out of memory");
		}
		for (int64_t k = 0; k < placed; k++)
			seen[order[k]] = 1;
		for (uint32_t i = 0; i < nb; i++) {
			if (!seen[i]) {
				rc = topo_errf(err, errlen, -EINVAL,
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
				rc = topo_errf(err, errlen, -EINVAL,
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
			return topo_errf(err, errlen, -ENOMEM,
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
			return topo_errf(err, errlen, -ENOMEM,
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
			rc = topo_errf(err, errlen, -EINVAL,
				       "bucket %d: no device under it", b->id);
			goto out;
		}
		/* A host inside a host would let "one replica per host"
		 * put two replicas under the outer one. */
		if (below[i] & (1u << b->type)) {
			rc = topo_errf(err, errlen, -EINVAL,
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
		rc = topo_errf(err, errlen, -EINVAL,
			       "too many rules (%u, limit %u)", t->nrules,
			       TOPO_MAX_RULES);
		goto out;
	}
	for (uint32_t i = 0; i < t->nrules; i++) {
		const struct topo_rule *r = &t->rules[i];
		uint32_t s;

		if (r->id >= TOPO_MAX_RULES) {
			rc = topo_errf(err, errlen, -EINVAL,
				       "rule %u: id out of range (0..%u)",
				       r->id, TOPO_MAX_RULES - 1);
			goto out;
		}
		if (i > 0 && r->id <= t->rules[i - 1].id) {
			if (r->id == t->rules[i - 1].id)
				rc = topo_errf(err, errlen, -EINVAL,
					       "rule %u: duplicate id", r->id);
			else
				rc = topo_errf(err, errlen, -EINVAL,
					       "rule %u: out of order (after "
					       "rule %u)",
					       r->id, t->rules[i - 1].id);
			goto out;
		}
		if (!cname_ok(r->name)) {
			rc = topo_errf(err, errlen, -EINVAL,
				       "rule %u: bad name", r->id);
			goto out;
		}
		for (uint32_t j = 0; j < i; j++) {
			if (strcmp(r->name, t->rules[j].name) == 0) {
				rc = topo_errf(err, errlen, -EINVAL,
					       "rule %u: duplicate name '%s' "
					       "(also rule %u)",
					       r->id, r->name, t->rules[j].id);
				goto out;
			}
		}
		s = topo_slot(t, r->root);
		if (s == UINT32_MAX) {
			rc = topo_errf(err, errlen, -EINVAL,
				       "rule %u: root %d is not a bucket",
				       r->id, r->root);
			goto out;
		}
		if (r->mode != TSR_RULE_CHOOSELEAF &&
		    r->mode != TSR_RULE_CHOOSE) {
			rc = topo_errf(err, errlen, -EINVAL,
				       "rule %u: unknown mode %u", r->id,
				       r->mode);
			goto out;
		}
		if (r->domain_type >= t->ntypes) {
			rc = topo_errf(err, errlen, -EINVAL,
				       "rule %u: unknown domain type %u",
				       r->id, r->domain_type);
			goto out;
		}
		if (r->mode == TSR_RULE_CHOOSELEAF && r->domain_type == 0) {
			rc = topo_errf(err, errlen, -EINVAL,
				       "rule %u: chooseleaf needs a failure "
				       "domain type, not the device type",
				       r->id);
			goto out;
		}
		if (r->mode == TSR_RULE_CHOOSE && r->domain_type != 0) {
			rc = topo_errf(err, errlen, -EINVAL,
				       "rule %u: choose picks devices; its "
				       "domain type must be 0, not %u",
				       r->id, r->domain_type);
			goto out;
		}
		if ((below[s] & (1u << r->domain_type)) == 0) {
			rc = topo_errf(err, errlen, -EINVAL,
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

static int
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
		return topo_errf(err, errlen, -EINVAL, "no output");
	*out = NULL;
	if (g == NULL)
		return topo_errf(err, errlen, -EINVAL, "no topology");
	if (g->ntypes == 0 || g->ntypes > TOPO_MAX_TYPES)
		return topo_errf(err, errlen, -EINVAL,
				 "type count %u out of range (1..%u)",
				 g->ntypes, TOPO_MAX_TYPES);
	if (g->types == NULL)
		return topo_errf(err, errlen, -EINVAL, "no type names");
	if (g->nitems > 0 && g->items == NULL)
		return topo_errf(err, errlen, -EINVAL, "no items");
	if (g->nrules > 0 && g->rules == NULL)
		return topo_errf(err, errlen, -EINVAL, "no rules");
	if (g->nrules > TOPO_MAX_RULES)
		return topo_errf(err, errlen, -EINVAL,
				 "too many rules (%u, limit %u)", g->nrules,
				 TOPO_MAX_RULES);
	for (uint32_t i = 0; i < g->nitems; i++) {
		if (g->items[i].id >= 0)
			nd++;
		else
			nb++;
		/* Stop counting (and allocating) once over a limit. */
		if (nd > TOPO_MAX_DEVICES)
			return topo_errf(err, errlen, -EINVAL,
					 "too many devices (limit %u)",
					 TOPO_MAX_DEVICES);
		if (nb > TOPO_MAX_BUCKETS)
			return topo_errf(err, errlen, -EINVAL,
					 "too many buckets (limit %u)",
					 TOPO_MAX_BUCKETS);
	}

	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	t->types = calloc(g->ntypes, sizeof(*t->types));
	t->devices = calloc(nd > 0 ? nd : 1, sizeof(*t->devices));
	t->buckets = calloc(nb > 0 ? nb : 1, sizeof(*t->buckets));
	t->rules = calloc(g->nrules > 0 ? g->nrules : 1, sizeof(*t->rules));
	if (t->types == NULL || t->devices == NULL || t->buckets == NULL ||
	    t->rules == NULL) {
		rc = topo_errf(err, errlen, -ENOMEM, "out of memory");
		goto fail;
	}
	t->ntypes = g->ntypes;
	for (uint32_t i = 0; i < g->ntypes; i++) {
		if (!cname_ok(g->types[i])) {
			rc = topo_errf(err, errlen, -EINVAL,
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
			rc = topo_errf(err, errlen, -EINVAL,
				       "%s %d: bad name", item_kind(it->id),
				       it->id);
			goto fail;
		}
		if (it->id >= 0) {
			struct topo_device *d = &t->devices[t->ndevices++];

			if (it->type != 0) {
				rc = topo_errf(err, errlen, -EINVAL,
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
			rc = topo_errf(err, errlen, -EINVAL,
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
	rc = topo_errf(err, errlen, -ENOMEM, "out of memory");
fail:
	topo_free(t);
	return rc;
}

/* ---- Binary form ----------------------------------------------------------*/

int
topo_encode(const struct topo *t, uint8_t **buf, size_t *len)
{
	struct tsr_enc e;
	size_t mark;
	int rc;

	if (t == NULL || buf == NULL || len == NULL)
		return -EINVAL;
	*buf = NULL;
	*len = 0;
	tsr_enc_init(&e);
	mark = tsr_enc_begin_struct(&e, TOPO_VERSION, TOPO_VERSION);
	tsr_enc_u32(&e, TOPO_MAGIC);
	tsr_enc_u32(&e, t->ntypes);
	for (uint32_t i = 0; i < t->ntypes; i++)
		tsr_enc_str(&e, t->types[i]);
	tsr_enc_u32(&e, t->ndevices);
	for (uint32_t i = 0; i < t->ndevices; i++) {
		const struct topo_device *d = &t->devices[i];

		tsr_enc_i32(&e, d->id);
		tsr_enc_str(&e, d->name);
		tsr_enc_u32(&e, d->weight);
		tsr_enc_i32(&e, d->parent);
	}
	tsr_enc_u32(&e, t->nbuckets);
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		const struct topo_bucket *b = &t->buckets[i];

		tsr_enc_i32(&e, b->id);
		tsr_enc_u32(&e, b->type);
		tsr_enc_str(&e, b->name);
		tsr_enc_i32(&e, b->parent);
	}
	tsr_enc_u32(&e, t->nrules);
	for (uint32_t i = 0; i < t->nrules; i++) {
		const struct topo_rule *r = &t->rules[i];

		tsr_enc_u32(&e, r->id);
		tsr_enc_str(&e, r->name);
		tsr_enc_i32(&e, r->root);
		tsr_enc_u32(&e, r->domain_type);
		tsr_enc_u32(&e, r->mode);
	}
	tsr_enc_end_struct(&e, mark);
	/* the checksum of everything before it (topo.h) */
	if (tsr_enc_error(&e) == 0)
		tsr_enc_u32(&e, tsr_crc32c(0, e.buf, e.len));
	rc = tsr_enc_error(&e);
	if (rc != 0) {
		tsr_enc_release(&e);
		return rc;
	}
	*buf = tsr_enc_take(&e, len);
	return 0;
}

/* A name: length-prefixed, 1..TOPO_NAME_MAX name characters.  NULL with
 * *bad set for a well-formed string that is not a name, NULL with the
 * decoder failed for a short or malformed one, or NULL on ENOMEM. */
static char *
dec_name(struct tsr_dec *d, bool *bad)
{
	const void *p;
	size_t n;

	*bad = false;
	/* No cap here (the length is still checked against the bytes left),
	 * so that a long name is reported as a bad name, not as garbage. */
	tsr_dec_bytes(d, &p, &n, SIZE_MAX);
	if (tsr_dec_error(d) != 0)
		return NULL;
	if (!topo_name_ok(p, n)) {
		*bad = true;
		return NULL;
	}
	return topo_strndup(p, n);
}

/* Read a count and check it against the limit and the bytes left. */
static int
dec_count(struct tsr_dec *d, const char *what, uint32_t limit,
	  size_t recmin, uint32_t *n, char *err, size_t errlen)
{
	*n = tsr_dec_u32(d);
	if (tsr_dec_error(d) != 0)
		return topo_errf(err, errlen, -EBADMSG,
				 "truncated before the %s count", what);
	if (*n > limit)
		return topo_errf(err, errlen, -EBADMSG,
				 "%s count %u exceeds the limit %u", what, *n,
				 limit);
	if (*n > tsr_dec_remaining(d) / recmin)
		return topo_errf(err, errlen, -EBADMSG,
				 "%s count %u exceeds the data (%zu bytes "
				 "left)", what, *n, tsr_dec_remaining(d));
	return 0;
}

/* Shared exits for a record that did not decode. */
static int
dec_record_fail(struct tsr_dec *d, bool bad, const char *what, uint32_t i,
		char *err, size_t errlen)
{
	if (bad)
		return topo_errf(err, errlen, -EBADMSG,
				 "%s record %u: bad name", what, i);
	if (tsr_dec_error(d) != 0)
		return topo_errf(err, errlen, -EBADMSG,
				 "%s record %u: truncated or malformed", what,
				 i);
	return topo_errf(err, errlen, -ENOMEM, "out of memory");
}

static int
decode_body(struct tsr_dec *d, struct topo *t, char *err, size_t errlen)
{
	uint32_t magic, n;
	bool bad;
	int rc;

	magic = tsr_dec_u32(d);
	if (tsr_dec_error(d) != 0)
		return topo_errf(err, errlen, -EBADMSG,
				 "truncated before the magic");
	if (magic != TOPO_MAGIC)
		return topo_errf(err, errlen, -EBADMSG,
				 "bad magic 0x%08x (want 0x%08x)", magic,
				 TOPO_MAGIC);

	if ((rc = dec_count(d, "type", TOPO_MAX_TYPES, TYPE_REC_MIN, &n, err,
			    errlen)) != 0)
		return rc;
	t->types = calloc(n > 0 ? n : 1, sizeof(*t->types));
	if (t->types == NULL)
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	for (; t->ntypes < n; t->ntypes++) {
		t->types[t->ntypes] = dec_name(d, &bad);
		if (t->types[t->ntypes] == NULL)
			return dec_record_fail(d, bad, "type", t->ntypes, err,
					       errlen);
	}

	if ((rc = dec_count(d, "device", TOPO_MAX_DEVICES, DEVICE_REC_MIN, &n,
			    err, errlen)) != 0)
		return rc;
	t->devices = calloc(n > 0 ? n : 1, sizeof(*t->devices));
	if (t->devices == NULL)
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	for (; t->ndevices < n; t->ndevices++) {
		struct topo_device *dv = &t->devices[t->ndevices];

		dv->id = tsr_dec_i32(d);
		dv->name = dec_name(d, &bad);
		dv->weight = tsr_dec_u32(d);
		dv->parent = tsr_dec_i32(d);
		if (dv->name == NULL || tsr_dec_error(d) != 0) {
			/* Count it so topo_free releases the name. */
			t->ndevices++;
			return dec_record_fail(d, bad, "device",
					       t->ndevices - 1, err, errlen);
		}
	}

	if ((rc = dec_count(d, "bucket", TOPO_MAX_BUCKETS, BUCKET_REC_MIN, &n,
			    err, errlen)) != 0)
		return rc;
	t->buckets = calloc(n > 0 ? n : 1, sizeof(*t->buckets));
	if (t->buckets == NULL)
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	for (; t->nbuckets < n; t->nbuckets++) {
		struct topo_bucket *b = &t->buckets[t->nbuckets];

		b->id = tsr_dec_i32(d);
		b->type = tsr_dec_u32(d);
		b->name = dec_name(d, &bad);
		b->parent = tsr_dec_i32(d);
		if (b->name == NULL || tsr_dec_error(d) != 0) {
			t->nbuckets++;
			return dec_record_fail(d, bad, "bucket",
					       t->nbuckets - 1, err, errlen);
		}
	}

	if ((rc = dec_count(d, "rule", TOPO_MAX_RULES, RULE_REC_MIN, &n, err,
			    errlen)) != 0)
		return rc;
	t->rules = calloc(n > 0 ? n : 1, sizeof(*t->rules));
	if (t->rules == NULL)
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	for (; t->nrules < n; t->nrules++) {
		struct topo_rule *r = &t->rules[t->nrules];

		r->id = tsr_dec_u32(d);
		r->name = dec_name(d, &bad);
		r->root = tsr_dec_i32(d);
		r->domain_type = tsr_dec_u32(d);
		r->mode = tsr_dec_u32(d);
		if (r->name == NULL || tsr_dec_error(d) != 0) {
			t->nrules++;
			return dec_record_fail(d, bad, "rule", t->nrules - 1,
					       err, errlen);
		}
	}
	/* Whatever follows in the body was appended by a newer writer; the
	 * envelope's length lets us skip it (tsr_dec_end_struct). */
	return 0;
}

/* A little-endian u32 at p. */
static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

int
topo_decode(const void *buf, size_t len, struct topo **out, char *err,
	    size_t errlen)
{
	const uint8_t *b = buf;
	struct tsr_dec d, sub;
	struct topo *t;
	uint32_t stored, computed;
	uint8_t version;
	int rc;

	if (out == NULL)
		return topo_errf(err, errlen, -EINVAL, "no output");
	*out = NULL;
	/* The checksum first: a damaged map is named as such whatever the
	 * damage hit, before any field of it is believed. */
	if (b == NULL || len < TOPO_ENVELOPE_HDR + TOPO_CRC_LEN)
		return topo_errf(err, errlen, -EBADMSG,
				 "truncated: %zu bytes, less than an envelope "
				 "and its checksum", b == NULL ? 0 : len);
	stored = le32(b + len - TOPO_CRC_LEN);
	computed = tsr_crc32c(0, b, len - TOPO_CRC_LEN);
	if (stored != computed) {
		/* what version 1 wrote: the envelope alone, no checksum */
		if (b[0] == 1 && b[1] == 1 &&
		    le32(b + 2) == len - TOPO_ENVELOPE_HDR)
			return topo_errf(err, errlen, -EBADMSG,
					 "a version 1 map, which carries no "
					 "checksum: compile it again from its "
					 "text form");
		return topo_errf(err, errlen, -EBADMSG,
				 "checksum mismatch (crc32c 0x%08x stored, "
				 "0x%08x computed over %zu bytes): the map is "
				 "damaged or truncated", stored, computed,
				 len - TOPO_CRC_LEN);
	}
	tsr_dec_init(&d, b, len - TOPO_CRC_LEN);
	rc = tsr_dec_begin_struct(&d, TOPO_VERSION, &version, &sub);
	if (rc == -EOPNOTSUPP)
		return topo_errf(err, errlen, rc,
				 "map needs a newer decoder (envelope compat "
				 "above %d)", TOPO_VERSION);
	if (rc != 0)
		return topo_errf(err, errlen, -EBADMSG,
				 "truncated or malformed envelope");
	if (version < TOPO_VERSION)
		return topo_errf(err, errlen, -EBADMSG,
				 "envelope version %u: not a map with a "
				 "checksum (version %d and later)", version,
				 TOPO_VERSION);
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return topo_errf(err, errlen, -ENOMEM, "out of memory");
	rc = decode_body(&sub, t, err, errlen);
	if (rc == 0 && tsr_dec_end_struct(&d, &sub) != 0)
		rc = topo_errf(err, errlen, -EBADMSG, "malformed envelope");
	if (rc == 0 && tsr_dec_remaining(&d) != 0)
		rc = topo_errf(err, errlen, -EBADMSG,
			       "trailing data after the envelope (%zu bytes)",
			       tsr_dec_remaining(&d));
	if (rc == 0)
		rc = topo_finish(t, false, err, errlen);
	if (rc != 0) {
		topo_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

/* ---- Weights in text --------------------------------------------------------
 *
 * Integer arithmetic only, so every host prints and parses alike.  Printing
 * rounds to the nearest 1e-5; a decimal step is smaller than a 16.16 step
 * (1/65536 ~ 1.53e-5), so the printed value lies within 0.5e-5 of the exact
 * one, nearer than half a 16.16 step (0.76e-5), and parsing it back rounds
 * to the weight printed.  Parsing takes any number of decimals and rounds
 * to the nearest 16.16 value, halves up. */

#define WEIGHT_TEXT_MAX 24 /* "%u.%05u" of two u32, and the NUL */

static void
weight_format(uint32_t w, char *buf, size_t n)
{
	/* (w & 0xffff) / 65536 in units of 1e-5, rounded; at most 99998, so
	 * the integer part never needs a carry. */
	uint32_t frac = (uint32_t)(((uint64_t)(w & 0xffffu) * 100000u +
				    0x8000u) >> 16);

	snprintf(buf, n, "%u.%05u", (unsigned)(w >> 16), (unsigned)frac);
}

enum weight_parse_result { WEIGHT_OK, WEIGHT_BAD, WEIGHT_NOT_POSITIVE,
			   WEIGHT_TOO_BIG };

static enum weight_parse_result
weight_parse(const char *s, size_t n, uint32_t *w)
{
	uint64_t ip = 0, half_units = 0, v;
	bool neg = false;
	size_t i = 0, start;

	if (i < n && s[i] == '-') {
		neg = true;
		i++;
	}
	start = i;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
		if (ip <= 65536)	/* beyond that it is too big anyway */
			ip = ip * 10 + (uint64_t)(s[i] - '0');
	if (i == start)
		return WEIGHT_BAD;
	if (i < n) {
		size_t fstart;

		if (s[i] != '.')
			return WEIGHT_BAD;
		fstart = ++i;
		for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == fstart || i != n)
			return WEIGHT_BAD;
		/* floor(fraction * 2^17) exactly: long multiplication of the
		 * decimal digits by 2^17, least significant digit first; the
		 * final carry is the integer part.  It stays below 2^17. */
		for (size_t k = n; k > fstart; k--)
			half_units = ((uint64_t)(s[k - 1] - '0') * 131072u +
				      half_units) / 10;
	}
	/* round(fraction * 2^16) = floor((floor(fraction * 2^17) + 1) / 2),
	 * ties up. */
	v = (ip << 16) + ((half_units + 1) >> 1);
	if (neg || v == 0)
		return WEIGHT_NOT_POSITIVE;
	if (v > UINT32_MAX)
		return WEIGHT_TOO_BIG;
	*w = (uint32_t)v;
	return WEIGHT_OK;
}

/* ---- Decompile ------------------------------------------------------------*/

struct strbuf {
	char *buf;
	size_t len, cap;
	int err;
};

static void sb_printf(struct strbuf *b, const char *fmt, ...) TSR_PRINTF(2, 3);

static void
sb_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err != 0)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->buf != NULL ? b->buf + b->len : NULL, room,
			      fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = b->cap != 0 ? b->cap : 4096;
			char *nb;

			while (cap - b->len <= (size_t)n) {
				if (cap > SIZE_MAX / 2) {
					b->err = -ENOMEM;
					return;
				}
				cap *= 2;
			}
			nb = realloc(b->buf, cap);
			if (nb == NULL) {
				b->err = -ENOMEM;
				return;
			}
			b->buf = nb;
			b->cap = cap;
		}
	}
}

static const char *
mode_word(uint32_t mode)
{
	return mode == TSR_RULE_CHOOSELEAF ? "chooseleaf" : "choose";
}

int
topo_decompile(const struct topo *t, char **text, size_t *len)
{
	struct strbuf sb = { NULL, 0, 0, 0 };
	uint32_t nb, *start = NULL, *fill = NULL;
	const char **kids = NULL;
	size_t nkids = 0;
	int rc = -EINVAL;

	if (t == NULL || text == NULL || len == NULL)
		return -EINVAL;
	*text = NULL;
	*len = 0;
	nb = t->nbuckets;

	/* Each bucket's items, devices by id then buckets in canonical order:
	 * one counting pass, then devices and buckets filled in array order. */
	start = calloc((size_t)nb + 1, sizeof(*start));
	fill = calloc((size_t)nb + 1, sizeof(*fill));
	if (start == NULL || fill == NULL)
		goto nomem;
	for (uint32_t i = 0; i < t->ndevices; i++) {
		if (t->devices[i].parent != 0) {
			uint32_t s = topo_slot(t, t->devices[i].parent);

			if (s >= nb)
				goto out;
			start[s + 1]++;
			nkids++;
		}
	}
	for (uint32_t i = 0; i < nb; i++) {
		if (t->buckets[i].parent != 0) {
			uint32_t s = topo_slot(t, t->buckets[i].parent);

			if (s >= nb)
				goto out;
			start[s + 1]++;
			nkids++;
		}
		if (t->buckets[i].type >= t->ntypes)
			goto out;
	}
	for (uint32_t i = 0; i < nb; i++)
		start[i + 1] += start[i];
	memcpy(fill, start, ((size_t)nb + 1) * sizeof(*fill));
	kids = malloc((nkids > 0 ? nkids : 1) * sizeof(*kids));
	if (kids == NULL)
		goto nomem;
	for (uint32_t i = 0; i < t->ndevices; i++)
		if (t->devices[i].parent != 0)
			kids[fill[topo_slot(t, t->devices[i].parent)]++] =
				t->devices[i].name;
	for (uint32_t i = 0; i < nb; i++)
		if (t->buckets[i].parent != 0)
			kids[fill[topo_slot(t, t->buckets[i].parent)]++] =
				t->buckets[i].name;

	sb_printf(&sb, "types {\n");
	for (uint32_t i = 0; i < t->ntypes; i++)
		sb_printf(&sb, "\t%u %s\n", i, t->types[i]);
	sb_printf(&sb, "}\n");
	for (uint32_t i = 0; i < t->ndevices; i++) {
		char w[WEIGHT_TEXT_MAX];

		weight_format(t->devices[i].weight, w, sizeof(w));
		sb_printf(&sb, "device %d %s weight %s\n", t->devices[i].id,
			  t->devices[i].name, w);
	}
	for (uint32_t i = 0; i < nb; i++) {
		const struct topo_bucket *b = &t->buckets[i];

		sb_printf(&sb, "bucket %s {\n\tid %d\n\ttype %s\n", b->name,
			  b->id, t->types[b->type]);
		for (uint32_t k = start[i]; k < start[i + 1]; k++)
			sb_printf(&sb, "\titem %s\n", kids[k]);
		sb_printf(&sb, "}\n");
	}
	for (uint32_t i = 0; i < t->nrules; i++) {
		const struct topo_rule *r = &t->rules[i];
		uint32_t s = topo_slot(t, r->root);

		if (s >= nb || r->domain_type >= t->ntypes)
			goto out;
		sb_printf(&sb, "rule %s {\n\tid %u\n\ttake %s\n\t%s %s\n}\n",
			  r->name, r->id, t->buckets[s].name,
			  mode_word(r->mode), t->types[r->domain_type]);
	}
	if (sb.err != 0) {
		rc = sb.err;
		goto out;
	}
	*text = sb.buf;
	*len = sb.len;
	sb.buf = NULL;
	rc = 0;
	goto out;
nomem:
	rc = -ENOMEM;
out:
	free(sb.buf);
	free(start);
	free(fill);
	free(kids);
	return rc;
}

/* ---- Compile ----------------------------------------------------------------
 *
 * One pass.  Everything a bucket lists is defined above it, so at a
 * bucket's closing brace its whole subtree is known: its weight and the
 * types under it are computed there, and every error is found where its
 * line is at hand. */

struct tok {
	const char *p;
	size_t n;       /* 0 at the end of the input */
	size_t line;
};

/* At most this much of a token is quoted in a message. */
#define TOKQ 64
#define TOKF(t) (int)((t)->n < TOKQ ? (t)->n : TOKQ), (t)->p

struct pdev {
	int32_t id;
	uint32_t weight;
	uint32_t parent;        /* bucket index + 1; 0 for none */
	char *name;
};

struct pbkt {
	int32_t id;
	uint32_t type;
	uint32_t parent;        /* bucket index + 1; 0 for none */
	uint32_t below;         /* bit k: a type-k item is under it */
	uint64_t weight;
	size_t line;
	char *name;
};

struct prule {
	uint32_t id;
	uint32_t root;          /* bucket index */
	uint32_t domain;
	uint32_t mode;
	char *name;
};

/* Name -> item: ref >= 0 is a device index, ref < 0 bucket index -1 - ref.
 * A text map is written by an administrator, so a plain hash is enough
 * here; decode (hostile input) sorts instead. */
struct hslot {
	const char *name;       /* NULL: empty; borrowed from the item */
	size_t len;
	int64_t ref;
};

struct parser {
	const char *s, *end;
	size_t line;            /* line of s */
	size_t last;            /* line of the last token read */
	char *err;
	size_t errlen;

	bool have_types;
	uint32_t ntypes;
	char *types[TOPO_MAX_TYPES];

	struct pdev *dev;
	uint32_t ndev, capdev;
	struct pbkt *bkt;
	uint32_t nbkt, capbkt;
	struct prule *rule;
	uint32_t nrule, caprule;

	struct hslot *ht;
	size_t htcap, htn;
	uint8_t *dev_ids;       /* bitmaps of ids taken, by id and -1 - id, */
	uint8_t *bkt_ids;       /* grown to the largest seen */
	size_t ndev_ids, nbkt_ids;
	uint8_t rule_ids[TOPO_MAX_RULES / 8];
};

static int perr(struct parser *p, size_t line, const char *fmt, ...)
	TSR_PRINTF(3, 4);

/* "line N: <reason>"; always -EINVAL. */
static int
perr(struct parser *p, size_t line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->err == NULL || p->errlen == 0)
		return -EINVAL;
	n = snprintf(p->err, p->errlen, "line %zu: ", line);
	if (n >= 0 && (size_t)n < p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int
pnomem(struct parser *p)
{
	return topo_errf(p->err, p->errlen, -ENOMEM, "out of memory");
}

static bool
bit_test(const uint8_t *m, size_t n, uint32_t i)
{
	return i / 8 < n && ((m[i / 8] >> (i % 8)) & 1u);
}

/* Set bit i, growing the map (doubling, zero-filled) to hold it. */
static int
bit_set(uint8_t **m, size_t *n, uint32_t i)
{
	if (i / 8 >= *n) {
		size_t want = *n != 0 ? *n : 64;
		uint8_t *nm;

		while (want <= i / 8)
			want *= 2;
		nm = realloc(*m, want);
		if (nm == NULL)
			return -ENOMEM;
		memset(nm + *n, 0, want - *n);
		*m = nm;
		*n = want;
	}
	(*m)[i / 8] |= (uint8_t)(1u << (i % 8));
	return 0;
}

/* Grow *arr (of elements of size el) to hold one more than n. */
static int
grow(void **arr, uint32_t *cap, uint32_t n, size_t el)
{
	uint32_t c;
	void *na;

	if (n < *cap)
		return 0;
	c = *cap != 0 ? *cap * 2 : 16;
	na = realloc(*arr, (size_t)c * el);
	if (na == NULL)
		return -ENOMEM;
	*arr = na;
	*cap = c;
	return 0;
}

static uint64_t
hash_name(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a */

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static struct hslot *
ht_find(const struct parser *p, const char *s, size_t n)
{
	size_t i;

	if (p->htcap == 0)
		return NULL;
	for (i = hash_name(s, n) & (p->htcap - 1); p->ht[i].name != NULL;
	     i = (i + 1) & (p->htcap - 1))
		if (p->ht[i].len == n && memcmp(p->ht[i].name, s, n) == 0)
			return &p->ht[i];
	return NULL;
}

static int
ht_add(struct parser *p, const char *s, size_t n, int64_t ref)
{
	size_t i;

	if ((p->htn + 1) * 2 > p->htcap) {
		size_t cap = p->htcap != 0 ? p->htcap * 2 : 64;
		struct hslot *old = p->ht, *nt = calloc(cap, sizeof(*nt));

		if (nt == NULL)
			return -ENOMEM;
		for (size_t k = 0; k < p->htcap; k++) {
			if (old[k].name == NULL)
				continue;
			for (i = hash_name(old[k].name, old[k].len) & (cap - 1);
			     nt[i].name != NULL; i = (i + 1) & (cap - 1))
				;
			nt[i] = old[k];
		}
		free(old);
		p->ht = nt;
		p->htcap = cap;
	}
	for (i = hash_name(s, n) & (p->htcap - 1); p->ht[i].name != NULL;
	     i = (i + 1) & (p->htcap - 1))
		;
	p->ht[i] = (struct hslot){ s, n, ref };
	p->htn++;
	return 0;
}

/* The next token: a word of name characters, '{' or '}', or n == 0 at the
 * end.  Anything else is an error: so every token quoted in a message is
 * printable ASCII. */
static int
lex(struct parser *p, struct tok *t)
{
	unsigned char c;

	while (p->s < p->end) {
		c = (unsigned char)*p->s;
		if (c == '\n') {
			p->line++;
			p->s++;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' ||
			   c == '\v') {
			p->s++;
		} else if (c == '#') {
			while (p->s < p->end && *p->s != '\n')
				p->s++;
		} else {
			break;
		}
	}
	t->p = p->s;
	t->n = 0;
	t->line = p->line;
	if (p->s == p->end)
		return 0;
	c = (unsigned char)*p->s;
	if (c == '{' || c == '}') {
		p->s++;
	} else if (topo_name_char(c)) {
		while (p->s < p->end && topo_name_char((unsigned char)*p->s))
			p->s++;
	} else if (c > ' ' && c < 0x7f) {
		return perr(p, p->line, "unexpected character '%c'", c);
	} else {
		return perr(p, p->line, "unexpected byte 0x%02x", c);
	}
	t->n = (size_t)(p->s - t->p);
	p->last = t->line;
	return 0;
}

static bool
tok_is(const struct tok *t, const char *word)
{
	size_t n = strlen(word);

	return t->n == n && memcmp(t->p, word, n) == 0;
}

static bool
tok_brace(const struct tok *t)
{
	return t->n == 1 && (t->p[0] == '{' || t->p[0] == '}');
}

/* The next token must be a word; what names it for the error. */
static int
want_word(struct parser *p, struct tok *t, const char *what)
{
	int rc = lex(p, t);

	if (rc != 0)
		return rc;
	if (t->n == 0)
		return perr(p, p->last, "unexpected end of input (expected %s)",
			    what);
	if (tok_brace(t))
		return perr(p, t->line, "expected %s, got '%c'", what,
			    t->p[0]);
	return 0;
}

static int
want_open(struct parser *p)
{
	struct tok t;
	int rc = lex(p, &t);

	if (rc != 0)
		return rc;
	if (t.n == 0)
		return perr(p, p->last, "unexpected end of input "
			    "(expected '{')");
	if (!tok_is(&t, "{"))
		return perr(p, t.line, "expected '{', got '%.*s'", TOKF(&t));
	return 0;
}

/* A word used as a name: its characters are name characters already. */
static int
want_name(struct parser *p, struct tok *t, const char *what)
{
	int rc = want_word(p, t, what);

	if (rc != 0)
		return rc;
	if (t->n > TOPO_NAME_MAX)
		return perr(p, t->line, "name '%.*s...' is longer than %u "
			    "characters", TOKF(t), TOPO_NAME_MAX);
	return 0;
}

/* A decimal integer with an optional '-'.  Magnitudes beyond 10^12 are
 * clamped: they are outside every range anyway. */
static bool
tok_int(const struct tok *t, int64_t *v)
{
	size_t i = 0;
	int64_t x = 0;
	bool neg = false;

	if (t->n > 0 && t->p[0] == '-') {
		neg = true;
		i++;
	}
	if (i == t->n)
		return false;
	for (; i < t->n; i++) {
		if (t->p[i] < '0' || t->p[i] > '9')
			return false;
		if (x < 1000000000000LL)
			x = x * 10 + (t->p[i] - '0');
	}
	*v = neg ? -x : x;
	return true;
}

static int
find_type(const struct parser *p, const struct tok *t)
{
	for (uint32_t i = 0; i < p->ntypes; i++)
		if (tok_is(t, p->types[i]))
			return (int)i;
	return -1;
}

static int
parse_types(struct parser *p, const struct tok *kw)
{
	bool seen[TOPO_MAX_TYPES] = { false };
	uint32_t n = 0;
	struct tok t, name;
	int64_t v;
	int rc;

	if (p->have_types)
		return perr(p, kw->line, "duplicate types block");
	if ((rc = want_open(p)) != 0)
		return rc;
	for (;;) {
		if ((rc = lex(p, &t)) != 0)
			return rc;
		if (t.n == 0)
			return perr(p, p->last,
				    "unexpected end of input in types");
		if (tok_is(&t, "}"))
			break;
		if (!tok_int(&t, &v))
			return perr(p, t.line, "bad type number '%.*s'",
				    TOKF(&t));
		if (v < 0 || v >= TOPO_MAX_TYPES)
			return perr(p, t.line, "type number %lld out of range "
				    "(0..%u)", (long long)v,
				    TOPO_MAX_TYPES - 1);
		if (seen[v])
			return perr(p, t.line, "duplicate type number %lld",
				    (long long)v);
		if ((rc = want_name(p, &name, "a type name")) != 0)
			return rc;
		for (uint32_t i = 0; i < TOPO_MAX_TYPES; i++)
			if (p->types[i] != NULL && tok_is(&name, p->types[i]))
				return perr(p, name.line,
					    "duplicate type name '%.*s'",
					    TOKF(&name));
		p->types[v] = topo_strndup(name.p, name.n);
		if (p->types[v] == NULL)
			return pnomem(p);
		seen[v] = true;
		if ((uint32_t)v + 1 > n)
			n = (uint32_t)v + 1;
	}
	/* types[] is indexed by number, so the numbers leave no gaps. */
	if (n == 0)
		return perr(p, t.line, "type 0 (the device type) is missing");
	for (uint32_t i = 0; i < n; i++)
		if (!seen[i])
			return perr(p, t.line, "type %u is missing (types are "
				    "numbered from 0 without gaps)", i);
	p->ntypes = n;
	p->have_types = true;
	return 0;
}

static int
parse_device(struct parser *p)
{
	struct tok t, name;
	struct pdev *d;
	int64_t v;
	uint32_t w = 0;
	int rc;

	if ((rc = want_word(p, &t, "a device id")) != 0)
		return rc;
	if (!tok_int(&t, &v))
		return perr(p, t.line, "bad device id '%.*s'", TOKF(&t));
	if (v < 0 || v >= TOPO_MAX_DEVICES)
		return perr(p, t.line, "device id %lld out of range (0..%u)",
			    (long long)v, TOPO_MAX_DEVICES - 1);
	if (bit_test(p->dev_ids, p->ndev_ids, (uint32_t)v)) {
		for (uint32_t i = 0; i < p->ndev; i++)
			if (p->dev[i].id == v)
				return perr(p, t.line, "duplicate device id "
					    "%lld (device %s)", (long long)v,
					    p->dev[i].name);
	}
	if ((rc = want_name(p, &name, "a device name")) != 0)
		return rc;
	if (ht_find(p, name.p, name.n) != NULL)
		return perr(p, name.line, "duplicate name '%.*s'",
			    TOKF(&name));
	if ((rc = want_word(p, &t, "'weight'")) != 0)
		return rc;
	if (!tok_is(&t, "weight"))
		return perr(p, t.line, "expected 'weight', got '%.*s'",
			    TOKF(&t));
	if ((rc = want_word(p, &t, "a weight")) != 0)
		return rc;
	switch (weight_parse(t.p, t.n, &w)) {
	case WEIGHT_OK:
		break;
	case WEIGHT_BAD:
		return perr(p, t.line, "device %.*s: bad weight '%.*s'",
			    TOKF(&name), TOKF(&t));
	case WEIGHT_NOT_POSITIVE:
		return perr(p, t.line, "device %.*s: weight must be > 0",
			    TOKF(&name));
	case WEIGHT_TOO_BIG:
		return perr(p, t.line, "device %.*s: weight '%.*s' is too "
			    "large (at most 65535.99998)", TOKF(&name),
			    TOKF(&t));
	}
	if (grow((void **)&p->dev, &p->capdev, p->ndev, sizeof(*p->dev)) != 0)
		return pnomem(p);
	if (bit_set(&p->dev_ids, &p->ndev_ids, (uint32_t)v) != 0)
		return pnomem(p);
	d = &p->dev[p->ndev];
	d->name = topo_strndup(name.p, name.n);
	if (d->name == NULL)
		return pnomem(p);
	d->id = (int32_t)v;
	d->weight = w;
	d->parent = 0;
	p->ndev++;
	if (ht_add(p, d->name, name.n, (int64_t)p->ndev - 1) != 0)
		return pnomem(p);
	return 0;
}

/* item NAME inside bucket j. */
static int
bucket_item(struct parser *p, uint32_t j, const struct tok *name)
{
	struct pbkt *b = &p->bkt[j];
	const struct hslot *h = ht_find(p, name->p, name->n);
	uint32_t *parent;

	if (h == NULL)
		return perr(p, name->line, "unknown item '%.*s' in bucket %s",
			    TOKF(name), b->name);
	parent = h->ref >= 0 ? &p->dev[h->ref].parent
			     : &p->bkt[-1 - h->ref].parent;
	if (*parent == j + 1)
		return perr(p, name->line, "bucket %s lists '%.*s' twice",
			    b->name, TOKF(name));
	if (*parent != 0)
		return perr(p, name->line, "item '%.*s' is already in bucket "
			    "%s", TOKF(name), p->bkt[*parent - 1].name);
	*parent = j + 1;
	if (h->ref >= 0) {
		b->weight += p->dev[h->ref].weight;
		b->below |= 1u;
	} else {
		const struct pbkt *c = &p->bkt[-1 - h->ref];

		b->weight += c->weight;
		b->below |= c->below | (1u << c->type);
	}
	return 0;
}

static int
parse_bucket(struct parser *p, const struct tok *kw)
{
	bool has_id = false, has_type = false;
	struct tok name, t;
	struct pbkt *b;
	uint32_t j;
	int64_t v;
	int rc, ty;

	if ((rc = want_name(p, &name, "a bucket name")) != 0)
		return rc;
	if (ht_find(p, name.p, name.n) != NULL)
		return perr(p, name.line, "duplicate name '%.*s'",
			    TOKF(&name));
	if ((rc = want_open(p)) != 0)
		return rc;
	if (grow((void **)&p->bkt, &p->capbkt, p->nbkt, sizeof(*p->bkt)) != 0)
		return pnomem(p);
	j = p->nbkt;
	b = &p->bkt[j];
	memset(b, 0, sizeof(*b));
	b->line = kw->line;
	b->name = topo_strndup(name.p, name.n);
	if (b->name == NULL)
		return pnomem(p);
	p->nbkt++;
	/* b stays valid: no bucket is added until this one is closed. */
	for (;;) {
		if ((rc = lex(p, &t)) != 0)
			return rc;
		if (t.n == 0)
			return perr(p, p->last, "unexpected end of input in "
				    "bucket %s", b->name);
		if (tok_is(&t, "}"))
			break;
		if (tok_is(&t, "id")) {
			if ((rc = want_word(p, &t, "a bucket id")) != 0)
				return rc;
			if (has_id)
				return perr(p, t.line, "bucket %s: id given "
					    "twice", b->name);
			if (!tok_int(&t, &v))
				return perr(p, t.line, "bucket %s: bad id "
					    "'%.*s'", b->name, TOKF(&t));
			if (v >= 0 || v < -(int64_t)TOPO_MAX_BUCKETS)
				return perr(p, t.line, "bucket %s: id %lld out "
					    "of range (-1..-%u)", b->name,
					    (long long)v, TOPO_MAX_BUCKETS);
			if (bit_test(p->bkt_ids, p->nbkt_ids,
				     (uint32_t)(-v - 1))) {
				for (uint32_t i = 0; i < j; i++)
					if (p->bkt[i].id == v)
						return perr(p, t.line,
							    "duplicate bucket "
							    "id %lld (bucket "
							    "%s)",
							    (long long)v,
							    p->bkt[i].name);
			}
			if (bit_set(&p->bkt_ids, &p->nbkt_ids,
				    (uint32_t)(-v - 1)) != 0)
				return pnomem(p);
			b->id = (int32_t)v;
			has_id = true;
		} else if (tok_is(&t, "type")) {
			if ((rc = want_word(p, &t, "a type name")) != 0)
				return rc;
			if (has_type)
				return perr(p, t.line, "bucket %s: type given "
					    "twice", b->name);
			ty = find_type(p, &t);
			if (ty < 0)
				return perr(p, t.line, "unknown type '%.*s' in "
					    "bucket %s", TOKF(&t), b->name);
			if (ty == 0)
				return perr(p, t.line, "bucket %s: type '%s' is "
					    "the device type", b->name,
					    p->types[0]);
			b->type = (uint32_t)ty;
			has_type = true;
		} else if (tok_is(&t, "item")) {
			if ((rc = want_word(p, &t, "an item name")) != 0)
				return rc;
			if ((rc = bucket_item(p, j, &t)) != 0)
				return rc;
		} else {
			return perr(p, t.line, "unexpected '%.*s' in bucket %s",
				    TOKF(&t), b->name);
		}
	}
	if (!has_id)
		return perr(p, b->line, "bucket %s has no id", b->name);
	if (!has_type)
		return perr(p, b->line, "bucket %s has no type", b->name);
	if (b->weight == 0)
		return perr(p, b->line, "bucket %s has no device under it",
			    b->name);
	/* Only now may later buckets list it (and nothing above can). */
	if (ht_add(p, b->name, name.n, -1 - (int64_t)j) != 0)
		return pnomem(p);
	return 0;
}

static int
parse_rule(struct parser *p, const struct tok *kw)
{
	bool has_id = false, has_take = false, has_step = false;
	size_t step_line = 0;
	const struct hslot *h;
	struct tok name, t;
	struct prule *r;
	int64_t v;
	int rc, ty;

	if ((rc = want_name(p, &name, "a rule name")) != 0)
		return rc;
	for (uint32_t i = 0; i < p->nrule; i++)
		if (tok_is(&name, p->rule[i].name))
			return perr(p, name.line, "duplicate rule name '%.*s'",
				    TOKF(&name));
	if ((rc = want_open(p)) != 0)
		return rc;
	if (grow((void **)&p->rule, &p->caprule, p->nrule,
		 sizeof(*p->rule)) != 0)
		return pnomem(p);
	r = &p->rule[p->nrule];
	memset(r, 0, sizeof(*r));
	r->name = topo_strndup(name.p, name.n);
	if (r->name == NULL)
		return pnomem(p);
	p->nrule++;
	for (;;) {
		if ((rc = lex(p, &t)) != 0)
			return rc;
		if (t.n == 0)
			return perr(p, p->last, "unexpected end of input in "
				    "rule %s", r->name);
		if (tok_is(&t, "}"))
			break;
		if (tok_is(&t, "id")) {
			if ((rc = want_word(p, &t, "a rule id")) != 0)
				return rc;
			if (has_id)
				return perr(p, t.line, "rule %s: id given "
					    "twice", r->name);
			if (!tok_int(&t, &v))
				return perr(p, t.line, "rule %s: bad id '%.*s'",
					    r->name, TOKF(&t));
			if (v < 0 || v >= TOPO_MAX_RULES)
				return perr(p, t.line, "rule %s: id %lld out of "
					    "range (0..%u)", r->name,
					    (long long)v, TOPO_MAX_RULES - 1);
			if (bit_test(p->rule_ids, sizeof(p->rule_ids),
				     (uint32_t)v)) {
				for (uint32_t i = 0; i + 1 < p->nrule; i++)
					if (p->rule[i].id == v)
						return perr(p, t.line,
							    "duplicate rule id "
							    "%lld (rule %s)",
							    (long long)v,
							    p->rule[i].name);
			}
			p->rule_ids[v / 8] |= (uint8_t)(1u << (v % 8));
			r->id = (uint32_t)v;
			has_id = true;
		} else if (tok_is(&t, "take")) {
			if ((rc = want_word(p, &t, "a bucket name")) != 0)
				return rc;
			if (has_take)
				return perr(p, t.line, "rule %s: take given "
					    "twice", r->name);
			h = ht_find(p, t.p, t.n);
			if (h == NULL)
				return perr(p, t.line, "rule %s: unknown "
					    "bucket '%.*s'", r->name, TOKF(&t));
			if (h->ref >= 0)
				return perr(p, t.line, "rule %s: '%.*s' is a "
					    "device, not a bucket", r->name,
					    TOKF(&t));
			r->root = (uint32_t)(-1 - h->ref);
			has_take = true;
		} else if (tok_is(&t, "chooseleaf") || tok_is(&t, "choose")) {
			bool leaf = tok_is(&t, "chooseleaf");

			if ((rc = want_word(p, &t, "a type name")) != 0)
				return rc;
			if (has_step)
				return perr(p, t.line, "rule %s: more than one "
					    "choose or chooseleaf step",
					    r->name);
			ty = find_type(p, &t);
			if (ty < 0)
				return perr(p, t.line, "rule %s: unknown type "
					    "'%.*s'", r->name, TOKF(&t));
			if (leaf && ty == 0)
				return perr(p, t.line, "rule %s: chooseleaf "
					    "needs a failure domain type, not "
					    "the device type '%s'", r->name,
					    p->types[0]);
			if (!leaf && ty != 0)
				return perr(p, t.line, "rule %s: choose picks "
					    "devices; its type must be '%s'",
					    r->name, p->types[0]);
			r->mode = leaf ? TSR_RULE_CHOOSELEAF : TSR_RULE_CHOOSE;
			r->domain = (uint32_t)ty;
			step_line = t.line;
			has_step = true;
		} else {
			return perr(p, t.line, "unexpected '%.*s' in rule %s",
				    TOKF(&t), r->name);
		}
	}
	if (!has_id)
		return perr(p, kw->line, "rule %s has no id", r->name);
	if (!has_take)
		return perr(p, kw->line, "rule %s has no take", r->name);
	if (!has_step)
		return perr(p, kw->line, "rule %s has no choose or chooseleaf "
			    "step", r->name);
	if ((p->bkt[r->root].below & (1u << r->domain)) == 0)
		return perr(p, step_line, "rule %s: bucket %s holds no %s",
			    r->name, p->bkt[r->root].name,
			    p->types[r->domain]);
	return 0;
}

static void
parser_free(struct parser *p)
{
	for (uint32_t i = 0; i < TOPO_MAX_TYPES; i++)
		free(p->types[i]);
	for (uint32_t i = 0; i < p->ndev; i++)
		free(p->dev[i].name);
	for (uint32_t i = 0; i < p->nbkt; i++)
		free(p->bkt[i].name);
	for (uint32_t i = 0; i < p->nrule; i++)
		free(p->rule[i].name);
	free(p->dev);
	free(p->bkt);
	free(p->rule);
	free(p->ht);
	free(p->dev_ids);
	free(p->bkt_ids);
}

/* Move the parsed map into a new topo (names change owner). */
static struct topo *
parser_take(struct parser *p)
{
	struct topo *t = calloc(1, sizeof(*t));

	if (t == NULL)
		return NULL;
	t->types = calloc(p->ntypes, sizeof(*t->types));
	t->devices = calloc(p->ndev > 0 ? p->ndev : 1, sizeof(*t->devices));
	t->buckets = calloc(p->nbkt > 0 ? p->nbkt : 1, sizeof(*t->buckets));
	t->rules = calloc(p->nrule > 0 ? p->nrule : 1, sizeof(*t->rules));
	if (t->types == NULL || t->devices == NULL || t->buckets == NULL ||
	    t->rules == NULL) {
		topo_free(t);
		return NULL;
	}
	t->ntypes = p->ntypes;
	for (uint32_t i = 0; i < p->ntypes; i++) {
		t->types[i] = p->types[i];
		p->types[i] = NULL;
	}
	t->ndevices = p->ndev;
	for (uint32_t i = 0; i < p->ndev; i++) {
		const struct pdev *d = &p->dev[i];

		t->devices[i] = (struct topo_device){
			d->id, d->name, d->weight,
			d->parent != 0 ? p->bkt[d->parent - 1].id : 0
		};
	}
	t->nbuckets = p->nbkt;
	for (uint32_t i = 0; i < p->nbkt; i++) {
		const struct pbkt *b = &p->bkt[i];

		t->buckets[i] = (struct topo_bucket){
			b->id, b->type, b->name,
			b->parent != 0 ? p->bkt[b->parent - 1].id : 0, 0
		};
	}
	t->nrules = p->nrule;
	for (uint32_t i = 0; i < p->nrule; i++) {
		const struct prule *r = &p->rule[i];

		t->rules[i] = (struct topo_rule){
			r->id, r->name, p->bkt[r->root].id, r->domain, r->mode
		};
	}
	/* The topo owns the names now. */
	p->ndev = p->nbkt = p->nrule = 0;
	return t;
}

int
topo_compile(const char *text, size_t len, struct topo **out, char *err,
	     size_t errlen)
{
	struct parser p;
	struct topo *t = NULL;
	struct tok kw;
	int rc = 0;

	if (out == NULL)
		return topo_errf(err, errlen, -EINVAL, "no output");
	*out = NULL;
	if (text == NULL && len > 0)
		return topo_errf(err, errlen, -EINVAL, "no text");
	memset(&p, 0, sizeof(p));
	p.s = text != NULL ? text : "";
	p.end = p.s + len;
	p.line = p.last = 1;
	p.err = err;
	p.errlen = errlen;
	for (;;) {
		if ((rc = lex(&p, &kw)) != 0)
			goto out;
		if (kw.n == 0)
			break;
		if (tok_is(&kw, "types"))
			rc = parse_types(&p, &kw);
		else if (tok_is(&kw, "device"))
			rc = parse_device(&p);
		else if (tok_is(&kw, "bucket"))
			rc = parse_bucket(&p, &kw);
		else if (tok_is(&kw, "rule"))
			rc = parse_rule(&p, &kw);
		else
			rc = perr(&p, kw.line, "unexpected '%.*s'", TOKF(&kw));
		if (rc != 0)
			goto out;
	}
	if (!p.have_types) {
		rc = perr(&p, p.last, "no types block");
		goto out;
	}
	t = parser_take(&p);
	if (t == NULL) {
		rc = pnomem(&p);
		goto out;
	}
	{
		/* Everything was checked above with its line; a failure here
		 * is a bug in this file, reported against the last line. */
		char why[256];

		rc = topo_finish(t, true, why, sizeof(why));
		if (rc != 0) {
			topo_errf(err, errlen, rc, "line %zu: %s", p.last, why);
			topo_free(t);
			t = NULL;
			goto out;
		}
	}
	*out = t;
out:
	parser_free(&p);
	return rc;
}
