/* test_scrub.c — scrub maps and their comparison (core/osd/scrub.c).
 *
 * Comparing: the authority among the copies (newest version, then the
 * largest group that agree, then the lowest index), what each other copy
 * has wrong, objects a copy lacks, copies not read whole, copies that
 * differ in version or presence only (unsettled, or reported when final),
 * the range's bound, and
 * maps that are refused.
 *
 * Building, on each backend plugin (BACKEND_FILE_PLUGIN and
 * BACKEND_BLOCKDEV_PLUGIN, set by the suite's environment): each digest
 * follows its own part of the object and only it, the version attribute
 * stays out of the attributes' digest, data is read in pieces (deep only),
 * windows after/upto/max come out as a model of the range says with an
 * exact end, objects gone between listing and describing are left out,
 * and objects without a version or that fail to read are flagged.
 */
#include "config/options.h"
#include "osd/scrub.h"
#include "plugin/host.h"
#include "plugin/registry.h"

#include <tessera/crc32c.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static struct tsr_core_host core_host;
static struct tsr_registry *registry;
static char root[] = "/tmp/tsr-test-scrub.XXXXXX";

/* ---- Comparing ------------------------------------------------------------------*/

/* An object as a copy describes it: version 1'ver, every part of it
 * derived from c (copies with the same c agree). */
static struct tsr_scrub_obj
obj(const char *name, uint64_t ver, uint32_t c, uint8_t flags)
{
	struct tsr_scrub_obj o;

	memset(&o, 0, sizeof(o));
	o.oid = (uint8_t *)name;
	o.oid_len = strlen(name);
	o.ev = (struct tsr_ev){ 1, ver };
	o.size = 100 + c;
	o.attr_crc = 200 + c;
	o.omap_crc = 300 + c;
	o.data_crc = 400 + c;
	o.flags = flags;
	return o;
}

#define MAP(v) ((struct tsr_scrub_map){ (v), sizeof(v) / sizeof((v)[0]) })

static size_t
compare(const struct tsr_scrub_map *m, size_t nc, const char *upto, int final,
	struct tsr_scrub_bad **bad, size_t *unsettled)
{
	size_t nbad = 99;

	ck_assert_int_eq(tsr_scrub_compare(m, nc, upto, upto ? strlen(upto) : 0, final, bad,
					   &nbad, unsettled), 0);
	return nbad;
}

static void
assert_bad(const struct tsr_scrub_bad *b, const char *name, int auth, const uint32_t *errs,
	   size_t nc)
{
	char s[64];

	ck_assert_uint_eq(b->oid_len, strlen(name));
	ck_assert_int_eq(memcmp(b->oid, name, b->oid_len), 0);
	ck_assert_int_eq(b->auth, auth);
	for (size_t c = 0; c < nc; c++)
		ck_assert_msg(b->errs[c] == errs[c], "%s copy %zu: %s, not %#x", name, c,
			      tsr_scrub_errs_str(b->errs[c], s, sizeof(s)), errs[c]);
	for (size_t c = nc; c < TSR_OSDMAP_MAX_SIZE; c++)
		ck_assert_uint_eq(b->errs[c], 0);
}

START_TEST(compare_all_agree)
{
	struct tsr_scrub_obj a[] = { obj("a", 1, 0, 0), obj("b", 2, 0, 0), obj("c", 3, 0, 0) };
	struct tsr_scrub_obj b[] = { obj("a", 1, 0, 0), obj("b", 2, 0, 0), obj("c", 3, 0, 0) };
	struct tsr_scrub_map m[] = { MAP(a), MAP(b), MAP(b) };
	struct tsr_scrub_bad *bad;
	size_t unsettled = 99;

	ck_assert_uint_eq(compare(m, 3, NULL, 0, &bad, &unsettled), 0);
	ck_assert_uint_eq(unsettled, 0);
	free(bad);
	/* empty maps agree too */
	struct tsr_scrub_map e[2] = { { NULL, 0 }, { NULL, 0 } };
	ck_assert_uint_eq(compare(e, 2, NULL, 1, &bad, &unsettled), 0);
	free(bad);
}
END_TEST

/* A replica lacks an object; another holds one the primary lacks: the
 * copy that holds it is the authority, the other misses it. */
START_TEST(compare_missing)
{
	struct tsr_scrub_obj p[] = { obj("a", 1, 0, 0), obj("b", 2, 0, 0) };
	struct tsr_scrub_obj r[] = { obj("a", 1, 0, 0), obj("x", 3, 0, 0) };
	struct tsr_scrub_map m[] = { MAP(p), MAP(r) };
	struct tsr_scrub_bad *bad;
	size_t unsettled;

	/* not final: a create or a delete may be under way */
	ck_assert_uint_eq(compare(m, 2, NULL, 0, &bad, &unsettled), 0);
	ck_assert_uint_eq(unsettled, 2);
	free(bad);
	ck_assert_uint_eq(compare(m, 2, NULL, 1, &bad, &unsettled), 2);
	assert_bad(&bad[0], "b", 0, (uint32_t[]){ 0, TSR_SCRUB_ERR_MISSING }, 2);
	ck_assert_uint_eq(bad[0].ev.ver, 2);
	assert_bad(&bad[1], "x", 1, (uint32_t[]){ TSR_SCRUB_ERR_MISSING, 0 }, 2);
	ck_assert_uint_eq(bad[1].ev.ver, 3);
	ck_assert_uint_eq(unsettled, 0);
	free(bad);
}
END_TEST

/* The data differs on one of three copies: the two that agree win,
 * whichever the odd one is, the primary too. */
START_TEST(compare_majority)
{
	for (int odd = 0; odd < 3; odd++) {
		struct tsr_scrub_obj c[3][2];
		struct tsr_scrub_map m[3];
		struct tsr_scrub_bad *bad;
		uint32_t errs[3] = { 0, 0, 0 };
		size_t unsettled;
		for (int k = 0; k < 3; k++) {
			c[k][0] = obj("a", 1, 0, 0);
			c[k][1] = obj("b", 1, 0, 0);
			m[k] = MAP(c[k]);
		}
		c[odd][1].data_crc ^= 1;
		errs[odd] = TSR_SCRUB_ERR_DATA;
		ck_assert_uint_eq(compare(m, 3, NULL, 1, &bad, &unsettled), 1);
		assert_bad(&bad[0], "b", odd == 0 ? 1 : 0, errs, 3);
		ck_assert_int_eq(bad[0].tie, 0);
		free(bad);
	}
	/* every copy different: the primary's; two groups of two: the one
	 * with the lowest index */
	struct tsr_scrub_obj x[] = { obj("a", 1, 1, 0) }, y[] = { obj("a", 1, 2, 0) },
			     z[] = { obj("a", 1, 3, 0) };
	struct tsr_scrub_map m3[] = { MAP(y), MAP(x), MAP(z) };
	struct tsr_scrub_map m4[] = { MAP(y), MAP(x), MAP(x), MAP(y) };
	struct tsr_scrub_bad *bad;
	size_t unsettled;
	uint32_t all = TSR_SCRUB_ERR_SIZE | TSR_SCRUB_ERR_ATTRS | TSR_SCRUB_ERR_OMAP |
		       TSR_SCRUB_ERR_DATA;
	ck_assert_uint_eq(compare(m3, 3, NULL, 0, &bad, &unsettled), 1);
	assert_bad(&bad[0], "a", 0, (uint32_t[]){ 0, all, all }, 3);
	ck_assert_int_eq(bad[0].tie, 1); /* no majority: flagged */
	free(bad);
	ck_assert_uint_eq(compare(m4, 4, NULL, 0, &bad, &unsettled), 1);
	assert_bad(&bad[0], "a", 0, (uint32_t[]){ 0, all, all, 0 }, 4);
	ck_assert_int_eq(bad[0].tie, 1);
	free(bad);
	/* the two of copies 1 and 2 outnumber the primary's */
	struct tsr_scrub_map m5[] = { MAP(y), MAP(x), MAP(x), MAP(z) };
	ck_assert_uint_eq(compare(m5, 4, NULL, 0, &bad, &unsettled), 1);
	assert_bad(&bad[0], "a", 1, (uint32_t[]){ all, 0, 0, all }, 4);
	ck_assert_int_eq(bad[0].tie, 0);
	free(bad);
}
END_TEST

/* Two copies that differ: the primary is the authority, flagged as a tie;
 * each field that differs is named. */
START_TEST(compare_two_copies)
{
	struct tsr_scrub_obj p[] = { obj("a", 1, 0, 0), obj("b", 1, 0, 0), obj("c", 1, 0, 0) };
	struct tsr_scrub_obj r[] = { obj("a", 1, 0, 0), obj("b", 1, 0, 0), obj("c", 1, 0, 0) };
	struct tsr_scrub_map m[] = { MAP(p), MAP(r) };
	struct tsr_scrub_bad *bad;
	size_t unsettled;
	char s[64];

	r[0].size++;
	r[0].attr_crc++;
	r[1].omap_crc++;
	r[2].data_crc++;
	ck_assert_uint_eq(compare(m, 2, NULL, 0, &bad, &unsettled), 3);
	assert_bad(&bad[0], "a", 0, (uint32_t[]){ 0, TSR_SCRUB_ERR_SIZE | TSR_SCRUB_ERR_ATTRS }, 2);
	assert_bad(&bad[1], "b", 0, (uint32_t[]){ 0, TSR_SCRUB_ERR_OMAP }, 2);
	assert_bad(&bad[2], "c", 0, (uint32_t[]){ 0, TSR_SCRUB_ERR_DATA }, 2);
	ck_assert_str_eq(tsr_scrub_errs_str(bad[0].errs[1], s, sizeof(s)), "size+attributes");
	ck_assert_int_eq(bad[0].tie, 1); /* one against one */
	free(bad);
}
END_TEST

/* A copy not read whole is no authority: a read error on the primary
 * makes the replica the authority; when no copy was read whole there is
 * none. */
START_TEST(compare_read_error)
{
	struct tsr_scrub_obj p[] = { obj("a", 1, 0, TSR_SCRUB_F_READ_ERR) };
	struct tsr_scrub_obj r[] = { obj("a", 1, 0, 0) };
	struct tsr_scrub_obj nv[] = { obj("a", 0, 0, TSR_SCRUB_F_NO_VERSION) };
	struct tsr_scrub_obj both[] = { obj("a", 0, 0, TSR_SCRUB_F_ALL) };
	struct tsr_scrub_map m[] = { MAP(p), MAP(r) };
	struct tsr_scrub_bad *bad;
	size_t unsettled;

	nv[0].ev = (struct tsr_ev){ 0, 0 };
	ck_assert_uint_eq(compare(m, 2, NULL, 0, &bad, &unsettled), 1);
	assert_bad(&bad[0], "a", 1, (uint32_t[]){ TSR_SCRUB_ERR_READ, 0 }, 2);
	ck_assert_uint_eq(bad[0].ev.ver, 1);
	free(bad);
	/* a copy without a version, even with the newest contents, is none */
	struct tsr_scrub_map m2[] = { MAP(r), MAP(nv) };
	ck_assert_uint_eq(compare(m2, 2, NULL, 0, &bad, &unsettled), 1);
	assert_bad(&bad[0], "a", 0, (uint32_t[]){ 0, TSR_SCRUB_ERR_NO_VERSION }, 2);
	free(bad);
	/* a copy not read whole does not count with its version either: the
	 * replica at 1'1 is the authority against the primary's 1'2 */
	struct tsr_scrub_obj p2[] = { obj("a", 2, 0, TSR_SCRUB_F_READ_ERR) };
	struct tsr_scrub_map m4[] = { MAP(p2), MAP(r) };
	ck_assert_uint_eq(compare(m4, 2, NULL, 0, &bad, &unsettled), 1);
	assert_bad(&bad[0], "a", 1, (uint32_t[]){ TSR_SCRUB_ERR_READ, 0 }, 2);
	ck_assert_uint_eq(bad[0].ev.ver, 1);
	free(bad);
	/* no copy read whole: no authority, each copy's trouble said */
	struct tsr_scrub_map m3[] = { MAP(p), MAP(both), { NULL, 0 } };
	ck_assert_uint_eq(compare(m3, 3, NULL, 0, &bad, &unsettled), 1);
	assert_bad(&bad[0], "a", -1,
		   (uint32_t[]){ TSR_SCRUB_ERR_READ,
				 TSR_SCRUB_ERR_READ | TSR_SCRUB_ERR_NO_VERSION,
				 TSR_SCRUB_ERR_MISSING },
		   3);
	free(bad);
}
END_TEST

/* Copies that differ in version only: unsettled until final; the newest
 * is the authority even against a majority.  Anything else wrong with
 * the object reports it at once. */
START_TEST(compare_version)
{
	struct tsr_scrub_obj p[] = { obj("a", 5, 0, 0), obj("b", 1, 0, 0) };
	struct tsr_scrub_obj r[] = { obj("a", 6, 1, 0), obj("b", 1, 0, 0) };
	struct tsr_scrub_obj q[] = { obj("a", 5, 0, 0), obj("b", 1, 0, 0) };
	struct tsr_scrub_map m[] = { MAP(p), MAP(r), MAP(q) };
	struct tsr_scrub_bad *bad;
	size_t unsettled = 0;

	ck_assert_uint_eq(compare(m, 3, NULL, 0, &bad, &unsettled), 0);
	ck_assert_uint_eq(unsettled, 1);
	free(bad);
	ck_assert_uint_eq(compare(m, 3, NULL, 1, &bad, &unsettled), 1);
	ck_assert_uint_eq(unsettled, 0);
	assert_bad(&bad[0], "a", 1,
		   (uint32_t[]){ TSR_SCRUB_ERR_VERSION, 0, TSR_SCRUB_ERR_VERSION }, 3);
	ck_assert_uint_eq(bad[0].ev.ver, 6);
	free(bad);
	/* one copy missing besides: still maybe a write under way, until
	 * final */
	m[2].n = 1;
	m[2].objs = &q[1];
	ck_assert_uint_eq(compare(m, 3, NULL, 0, &bad, &unsettled), 0);
	ck_assert_uint_eq(unsettled, 1);
	free(bad);
	ck_assert_uint_eq(compare(m, 3, NULL, 1, &bad, &unsettled), 1);
	ck_assert_uint_eq(unsettled, 0);
	assert_bad(&bad[0], "a", 1,
		   (uint32_t[]){ TSR_SCRUB_ERR_VERSION, 0, TSR_SCRUB_ERR_MISSING }, 3);
	free(bad);
	/* two copies at the newest version that disagree: no write explains
	 * it, reported */
	struct tsr_scrub_obj s[] = { obj("a", 6, 2, 0), obj("b", 1, 0, 0) };
	m[2] = MAP(s);
	ck_assert_uint_eq(compare(m, 3, NULL, 0, &bad, &unsettled), 1);
	ck_assert_uint_eq(unsettled, 0);
	uint32_t all = TSR_SCRUB_ERR_SIZE | TSR_SCRUB_ERR_ATTRS | TSR_SCRUB_ERR_OMAP |
		       TSR_SCRUB_ERR_DATA;
	assert_bad(&bad[0], "a", 1, (uint32_t[]){ TSR_SCRUB_ERR_VERSION, 0, all }, 3);
	free(bad);
}
END_TEST

/* Only names up to upto count: a copy that described less of the range
 * misses nothing beyond it. */
START_TEST(compare_upto)
{
	struct tsr_scrub_obj p[] = { obj("a", 1, 0, 0), obj("b", 1, 0, 0), obj("c", 1, 0, 0),
				     obj("d", 1, 0, 0) };
	struct tsr_scrub_obj r[] = { obj("a", 1, 0, 0), obj("b", 1, 0, 0), obj("bb", 1, 0, 0) };
	struct tsr_scrub_map m[] = { MAP(p), MAP(r) };
	struct tsr_scrub_bad *bad;
	size_t unsettled;

	ck_assert_uint_eq(compare(m, 2, "b", 1, &bad, &unsettled), 0);
	free(bad);
	ck_assert_uint_eq(compare(m, 2, "bb", 1, &bad, &unsettled), 1);
	assert_bad(&bad[0], "bb", 1, (uint32_t[]){ TSR_SCRUB_ERR_MISSING, 0 }, 2);
	free(bad);
	ck_assert_uint_eq(compare(m, 2, NULL, 1, &bad, &unsettled), 3);
	assert_bad(&bad[2], "d", 0, (uint32_t[]){ 0, TSR_SCRUB_ERR_MISSING }, 2);
	free(bad);
}
END_TEST

START_TEST(compare_refuses)
{
	struct tsr_scrub_obj good[] = { obj("a", 1, 0, 0), obj("b", 1, 0, 0) };
	struct tsr_scrub_obj order[] = { obj("b", 1, 0, 0), obj("a", 1, 0, 0) };
	struct tsr_scrub_obj twice[] = { obj("a", 1, 0, 0), obj("a", 1, 0, 0) };
	struct tsr_scrub_obj prefix[] = { obj("ab", 1, 0, 0), obj("a", 1, 0, 0) };
	struct tsr_scrub_map m[TSR_OSDMAP_MAX_SIZE + 1];
	struct tsr_scrub_bad *bad = (void *)1;
	size_t nbad = 1, unsettled = 1;

	for (size_t i = 0; i <= TSR_OSDMAP_MAX_SIZE; i++)
		m[i] = MAP(good);
	ck_assert_int_eq(tsr_scrub_compare(m, TSR_OSDMAP_MAX_SIZE + 1, NULL, 0, 0, &bad, &nbad,
					   &unsettled), -EINVAL);
	ck_assert_ptr_null(bad);
	ck_assert_int_eq(tsr_scrub_compare(m, 0, NULL, 0, 0, &bad, &nbad, &unsettled), -EINVAL);
	ck_assert_int_eq(tsr_scrub_compare(m, TSR_OSDMAP_MAX_SIZE, NULL, 0, 0, &bad, &nbad,
					   &unsettled), 0);
	ck_assert_uint_eq(nbad, 0);
	free(bad);
	m[1] = MAP(order);
	ck_assert_int_eq(tsr_scrub_compare(m, 2, NULL, 0, 0, &bad, &nbad, &unsettled), -EINVAL);
	m[1] = MAP(twice);
	ck_assert_int_eq(tsr_scrub_compare(m, 2, NULL, 0, 0, &bad, &nbad, &unsettled), -EINVAL);
	m[1] = MAP(prefix);
	ck_assert_int_eq(tsr_scrub_compare(m, 2, NULL, 0, 0, &bad, &nbad, &unsettled), -EINVAL);
	ck_assert_ptr_null(bad);
	ck_assert_uint_eq(nbad, 0);
}
END_TEST

START_TEST(errs_str)
{
	char s[64], tiny[6];

	ck_assert_str_eq(tsr_scrub_errs_str(0, s, sizeof(s)), "ok");
	ck_assert_str_eq(tsr_scrub_errs_str(TSR_SCRUB_ERR_SIZE | TSR_SCRUB_ERR_DATA, s, sizeof(s)),
			 "size+data");
	ck_assert_str_eq(tsr_scrub_errs_str(TSR_SCRUB_ERR_MISSING, s, sizeof(s)), "missing");
	ck_assert_str_eq(tsr_scrub_errs_str(TSR_SCRUB_ERR_READ | TSR_SCRUB_ERR_NO_VERSION, s,
					    sizeof(s)),
			 "read error+no version");
	ck_assert_str_eq(tsr_scrub_errs_str(1u << 20, s, sizeof(s)), "unknown");
	tsr_scrub_errs_str(0xff, tiny, sizeof(tiny));
	ck_assert_uint_lt(strlen(tiny), sizeof(tiny));
}
END_TEST

/* ---- A store ----------------------------------------------------------------------*/

#include "store_rig.h"

static const struct tsr_coll_id cid = { 1, 0, TSR_SHARD_NONE };

static void
commit(struct rig *r, const struct tsr_txn *t)
{
	ck_assert_int_eq(rig_commit(r, t), 0);
}

/* A new copy of the PG in collection id (its meta object too), bound to ps. */
static void
copy_new(struct rig *r, struct tsr_pgstore *ps, struct tsr_coll_id id)
{
	struct tsr_pgsm_action a;
	struct tsr_pgstore_txn t;

	tsr_pgstore_init(ps, r->ops, r->h, id, 0);
	memset(&a, 0, sizeof(a));
	a.type = TSR_PGSM_A_PERSIST;
	ck_assert_int_eq(tsr_pgstore_persist(ps, &a, NULL, 0, NULL, 0, NULL, &t), 0);
	commit(r, &t.txn);
	tsr_pgstore_txn_free(&t);
}

/* Object name written whole at version 1'ver, as a PERSIST does it; no
 * data: only its version set. */
static void
put(struct rig *r, struct tsr_pgstore *ps, const char *name, const void *data, size_t len,
    uint64_t ver)
{
	struct tsr_pgsm_action a;
	struct tsr_pgstore_txn t;
	struct tsr_txn_op w[2];
	struct tsr_ev ev = { 1, ver };

	memset(&a, 0, sizeof(a));
	memset(w, 0, sizeof(w));
	a.type = TSR_PGSM_A_PERSIST;
	for (int i = 0; i < 2; i++) {
		w[i].type = i ? TSR_TXN_WRITE : TSR_TXN_TRUNCATE;
		w[i].cid = ps->cid;
		w[i].oid = name;
		w[i].oid_len = strlen(name);
	}
	w[1].data = data;
	w[1].len = len;
	ck_assert_int_eq(tsr_pgstore_persist(ps, &a, data ? w : NULL, data ? (len ? 2 : 1) : 0,
					     name, strlen(name), &ev, &t), 0);
	commit(r, &t.txn);
	tsr_pgstore_txn_free(&t);
}

/* One operation on object name (its version unchanged). */
static void
op1(struct rig *r, struct tsr_coll_id id, uint32_t type, const char *name, const char *key,
    const char *val)
{
	struct tsr_txn_op o;
	struct tsr_txn t = { 1, &o };

	memset(&o, 0, sizeof(o));
	o.type = type;
	o.cid = id;
	o.oid = name;
	o.oid_len = strlen(name);
	if (type == TSR_TXN_WRITE) {
		o.data = val;
		o.len = strlen(val);
	} else if (type == TSR_TXN_TRUNCATE) {
		o.off = strlen(val);
	} else {
		o.key = key;
		o.key_len = key ? strlen(key) : 0;
		o.val = val;
		o.val_len = val ? strlen(val) : 0;
	}
	commit(r, &t);
}

static const struct tsr_scrub_obj *
find(const struct tsr_scrub_obj *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].oid_len == strlen(name) && memcmp(v[i].oid, name, v[i].oid_len) == 0)
			return &v[i];
	ck_abort_msg("%s is not in the map", name);
	return NULL;
}

/* What differs between two descriptions of an object, as error bits. */
static uint32_t
diff(const struct tsr_scrub_obj *x, const struct tsr_scrub_obj *y)
{
	return (tsr_ev_cmp(x->ev, y->ev) ? TSR_SCRUB_ERR_VERSION : 0) |
	       (x->size != y->size ? TSR_SCRUB_ERR_SIZE : 0) |
	       (x->attr_crc != y->attr_crc ? TSR_SCRUB_ERR_ATTRS : 0) |
	       (x->omap_crc != y->omap_crc ? TSR_SCRUB_ERR_OMAP : 0) |
	       (x->data_crc != y->data_crc ? TSR_SCRUB_ERR_DATA : 0) |
	       (x->flags != y->flags ? TSR_SCRUB_ERR_READ : 0);
}

/* The digest of pairs as the header has it: each part after its length,
 * a u32 little-endian. */
static uint32_t
pairs_crc(const char *const *kv, size_t n)
{
	uint32_t crc = 0;

	for (size_t i = 0; i < 2 * n; i++) {
		size_t l = strlen(kv[i]);
		uint8_t le[4] = { (uint8_t)l, (uint8_t)(l >> 8), (uint8_t)(l >> 16),
				  (uint8_t)(l >> 24) };
		crc = tsr_crc32c(crc, le, 4);
		crc = tsr_crc32c(crc, kv[i], l);
	}
	return crc;
}

static void
build(struct tsr_pgstore *ps, int deep, struct tsr_scrub_obj **v, size_t *n)
{
	int end = 0;

	ck_assert_int_eq(tsr_scrub_map_build(ps, NULL, 0, NULL, 0, 1000, deep, v, n, &end), 0);
	ck_assert(end);
}

static const struct tsr_backend_ops *real;
static struct tsr_backend_ops faulty;
static uint64_t read_max;            /* the longest read asked of faulty */
static size_t names_listed;          /* names faulty's listings gave */
static void faulty_bind(struct rig *r, struct tsr_pgstore *ps);

/* Each digest follows its part of the object, and only it; data is read
 * a piece (1 MiB) at a time. */
START_TEST(build_digests)
{
	const size_t big_len = (1u << 20) + 4097; /* two pieces and a bit */
	uint8_t *big = malloc(big_len);
	struct tsr_scrub_obj *d, *s, *x;
	size_t nd, ns, nx;
	struct tsr_pgstore ps;
	struct rig r;

	ck_assert_ptr_nonnull(big);
	for (size_t i = 0; i < big_len; i++)
		big[i] = (uint8_t)(i * 13 + (i >> 12));
	rig_open(&r, _i);
	copy_new(&r, &ps, cid);
	put(&r, &ps, "a", "hello", 5, 1);
	op1(&r, cid, TSR_TXN_SETATTR, "a", "x", "1");
	op1(&r, cid, TSR_TXN_SETATTR, "a", "w", "22");
	op1(&r, cid, TSR_TXN_OMAP_SET, "a", "k", "v");
	put(&r, &ps, "b", big, big_len, 2);
	put(&r, &ps, "c", "", 0, 3);
	op1(&r, cid, TSR_TXN_SETATTR, "c", "ab", "c");
	op1(&r, cid, TSR_TXN_OMAP_SET, "c", "ab", "c");
	put(&r, &ps, "d", NULL, 0, 4);
	op1(&r, cid, TSR_TXN_SETATTR, "d", "a", "bc");
	op1(&r, cid, TSR_TXN_OMAP_SET, "d", "a", "bc");

	faulty_bind(&r, &ps);
	read_max = 0;
	build(&ps, 1, &d, &nd);
	ck_assert_uint_eq(nd, 4);
	ck_assert_uint_eq(read_max, 1u << 20);
	for (size_t i = 0; i < nd; i++) {
		ck_assert_uint_eq(d[i].oid_len, 1);
		ck_assert_int_eq(d[i].oid[0], "abcd"[i]);
		ck_assert_uint_eq(d[i].flags, 0);
		ck_assert_int_eq(tsr_ev_cmp(d[i].ev, (struct tsr_ev){ 1, i + 1 }), 0);
	}
	ck_assert_uint_eq(d[0].size, 5);
	ck_assert_uint_eq(d[1].size, big_len);
	ck_assert_uint_eq(d[2].size, 0);
	ck_assert_uint_eq(d[0].data_crc, tsr_crc32c(0, "hello", 5));
	ck_assert_uint_eq(d[1].data_crc, tsr_crc32c(0, big, big_len));
	ck_assert_uint_eq(d[2].data_crc, 0);
	/* attributes in name order, the version left out */
	ck_assert_uint_eq(d[0].attr_crc, pairs_crc((const char *[]){ "w", "22", "x", "1" }, 2));
	ck_assert_uint_eq(d[0].omap_crc, pairs_crc((const char *[]){ "k", "v" }, 1));
	ck_assert_uint_eq(d[1].attr_crc, 0);
	ck_assert_uint_eq(d[1].omap_crc, 0);
	/* ("ab", "c") and ("a", "bc") differ */
	ck_assert_uint_ne(d[2].attr_crc, d[3].attr_crc);
	ck_assert_uint_ne(d[2].omap_crc, d[3].omap_crc);
	/* shallow: the same but the data */
	build(&ps, 0, &s, &ns);
	ck_assert_uint_eq(ns, nd);
	for (size_t i = 0; i < ns; i++) {
		ck_assert_uint_eq(s[i].data_crc, 0);
		s[i].data_crc = d[i].data_crc;
		ck_assert_uint_eq(diff(&s[i], &d[i]), 0);
	}
	tsr_scrub_objs_free(s, ns);

	/* each change shows in its own part only */
	static const struct {
		uint32_t type;
		const char *key, *val;
		uint32_t shows;
	} change[] = {
		{ TSR_TXN_SETATTR, "y", "2", TSR_SCRUB_ERR_ATTRS },
		{ TSR_TXN_SETATTR, "x", "3", TSR_SCRUB_ERR_ATTRS },
		{ TSR_TXN_RMATTR, "w", NULL, TSR_SCRUB_ERR_ATTRS },
		{ TSR_TXN_OMAP_SET, "k2", "v", TSR_SCRUB_ERR_OMAP },
		{ TSR_TXN_OMAP_SET, "k", "V", TSR_SCRUB_ERR_OMAP },
		{ TSR_TXN_WRITE, NULL, "j", TSR_SCRUB_ERR_DATA },
		{ TSR_TXN_TRUNCATE, NULL, "jel", TSR_SCRUB_ERR_SIZE | TSR_SCRUB_ERR_DATA },
	};
	for (size_t k = 0; k < sizeof(change) / sizeof(change[0]); k++) {
		op1(&r, cid, change[k].type, "a", change[k].key, change[k].val);
		build(&ps, 1, &x, &nx);
		ck_assert_uint_eq(nx, nd);
		ck_assert_msg(diff(find(x, nx, "a"), &d[0]) == change[k].shows,
			      "change %zu: %#x", k, diff(find(x, nx, "a"), &d[0]));
		for (size_t i = 1; i < nx; i++)
			ck_assert_uint_eq(diff(&x[i], &d[i]), 0);
		tsr_scrub_objs_free(d, nd);
		d = x;
	}
	/* a new version alone changes the version alone */
	put(&r, &ps, "a", NULL, 0, 9);
	build(&ps, 1, &x, &nx);
	ck_assert_uint_eq(diff(&x[0], &d[0]), TSR_SCRUB_ERR_VERSION);
	ck_assert_uint_eq(x[0].ev.ver, 9);
	tsr_scrub_objs_free(x, nx);
	tsr_scrub_objs_free(d, nd);
	tsr_pgstore_close(&ps);
	rig_close(&r);
	free(big);
}
END_TEST

/* The names of the map of (after, upto] (NULL: none), at most max, joined
 * by ',' into out; *end. */
static const char *
window(struct tsr_pgstore *ps, const char *after, const char *upto, uint32_t max, int *end,
       char *out, size_t len)
{
	struct tsr_scrub_obj *v;
	size_t n, at = 0;

	*end = -1;
	ck_assert_int_eq(tsr_scrub_map_build(ps, after, after ? strlen(after) : 0, upto,
					     upto ? strlen(upto) : 0, max, 0, &v, &n, end), 0);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int k = snprintf(out + at, len - at, "%s%.*s", i ? "," : "", (int)v[i].oid_len,
				 (const char *)v[i].oid);
		ck_assert(k > 0 && (size_t)k < len - at);
		at += (size_t)k;
	}
	if (n)
		ck_assert_uint_le(n, max);
	tsr_scrub_objs_free(v, n);
	return out;
}

#define WINDOW(after, upto, max, want, want_end)                                      \
	do {                                                                          \
		int end_;                                                             \
		window(&ps, after, upto, max, &end_, got, sizeof(got));               \
		ck_assert_msg(strcmp(got, want) == 0 && end_ == (want_end),           \
			      "(%s, %s] max %u: \"%s\" end %d, not \"%s\" end %d",    \
			      after ? after : "-", upto ? upto : "-", (unsigned)(max), \
			      got, end_, want, want_end);                             \
	} while (0)

/* Windows of the range, their end exact; an object removed after it was
 * listed (read ahead) is left out. */
START_TEST(build_windows)
{
	struct tsr_pgstore ps;
	struct rig r;
	char got[256];

	rig_open(&r, _i);
	copy_new(&r, &ps, cid);
	WINDOW(NULL, NULL, 10, "", 1);
	for (const char *n = "abcde"; *n; n++) {
		char name[2] = { *n, 0 };
		put(&r, &ps, name, name, 1, 1);
	}
	WINDOW(NULL, NULL, 2, "a,b", 0);
	WINDOW("b", NULL, 2, "c,d", 0);
	WINDOW("d", NULL, 2, "e", 1);
	WINDOW(NULL, NULL, 5, "a,b,c,d,e", 1);
	WINDOW(NULL, NULL, 4, "a,b,c,d", 0);
	WINDOW("d", NULL, 1, "e", 1);
	WINDOW("e", NULL, 10, "", 1);
	WINDOW(NULL, "c", 10, "a,b,c", 1);
	WINDOW(NULL, "c", 3, "a,b,c", 1);
	WINDOW(NULL, "c", 2, "a,b", 0);
	WINDOW("b", "d", 10, "c,d", 1);
	WINDOW(NULL, "bb", 2, "a,b", 1);
	WINDOW("b", "bb", 10, "", 1);
	WINDOW(NULL, "0", 10, "", 1);
	WINDOW("a", "zz", 10, "b,c,d,e", 1);
	WINDOW(NULL, NULL, 0, "", 0);
	WINDOW("a", "c", 0, "", 0);
	WINDOW("e", NULL, 0, "", 1);
	WINDOW("c", "c", 0, "", 1);
	/* a walk: c is read ahead past the first window's bound, then
	 * removed: the next window leaves it out, its end still exact */
	WINDOW(NULL, "b", 2, "a,b", 1);
	op1(&r, cid, TSR_TXN_REMOVE, "c", NULL, NULL);
	WINDOW("b", "d", 5, "d", 1);
	WINDOW("d", NULL, 5, "e", 1);
	WINDOW(NULL, NULL, 2, "a,b", 0);
	WINDOW("b", NULL, 2, "d,e", 1);
	/* an object made between two windows, after the first one's end
	 * but before what it read ahead, is in the next (a copy that missed
	 * it would be reported missing it) */
	WINDOW(NULL, "b", 1, "a", 0);
	WINDOW("a", "b", 10, "b", 1);
	put(&r, &ps, "bz", "bz", 2, 1);
	WINDOW("b", "e", 10, "bz,d,e", 1);
	WINDOW(NULL, NULL, 2, "a,b", 0);
	put(&r, &ps, "bzz", "bz", 2, 1);
	WINDOW("b", NULL, 2, "bz,bzz", 0);
	tsr_pgstore_close(&ps);

	/* no copy: nothing, and the end */
	struct tsr_coll_id none = { 1, 5, TSR_SHARD_NONE };
	tsr_pgstore_init(&ps, r.ops, r.h, none, 0);
	WINDOW(NULL, NULL, 10, "", 1);
	tsr_pgstore_close(&ps);
	rig_close(&r);
}
END_TEST

/* Windows of random bounds and sizes over 40 objects, against a model:
 * each is the first max names of (after, upto] with the end exact,
 * whether it goes on where the last ended or not. */
START_TEST(build_windows_model)
{
	enum { N = 40 };
	char names[N][8];
	struct tsr_pgstore ps;
	struct rig r;
	uint64_t seed = 88172645463325252ull;
	char got[512], want[512], last[512] = "";

	rig_open(&r, _i);
	copy_new(&r, &ps, cid);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "o%02d", i);
		put(&r, &ps, names[i], "x", 1, 1);
	}
	for (int round = 0; round < 300; round++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		/* after: where the last ended (mostly), none, or any name */
		const char *after = last[0] ? last : NULL;
		if (seed % 7 == 0)
			after = NULL;
		else if (seed % 7 == 1)
			after = names[(seed >> 8) % N];
		int a = -1;
		for (int i = 0; after && i < N; i++)
			if (strcmp(names[i], after) == 0)
				a = i;
		/* upto: none, or a name not before after's */
		const char *upto = NULL;
		int u = N - 1;
		if ((seed >> 16) % 3) {
			u = a + 1 + (int)((seed >> 20) % 12);
			if (u >= N)
				u = N - 1;
			upto = names[u];
		}
		uint32_t max = (uint32_t)((seed >> 28) % 9); /* 0 too */
		size_t at = 0;
		int i, end, want_end;
		want[0] = '\0';
		for (i = a + 1; i <= u && (uint32_t)(i - a - 1) < max; i++)
			at += (size_t)snprintf(want + at, sizeof(want) - at, "%s%s", at ? "," : "",
					       names[i]);
		want_end = i > u;
		window(&ps, after, upto, max, &end, got, sizeof(got));
		ck_assert_msg(strcmp(got, want) == 0 && end == want_end,
			      "round %d (%s, %s] max %u: \"%s\" end %d, not \"%s\" end %d", round,
			      after ? after : "-", upto ? upto : "-", max, got, end, want,
			      want_end);
		/* the next goes on after upto once the range is done (from
		 * the first when it had no bound), else after the last name */
		if (end)
			snprintf(last, sizeof(last), "%s", upto ? upto : "");
		else if (got[0])
			snprintf(last, sizeof(last), "%s",
				 strrchr(got, ',') ? strrchr(got, ',') + 1 : got);
	}
	tsr_pgstore_close(&ps);
	rig_close(&r);
}
END_TEST

/* ---- A store that fails ---------------------------------------------------------------*/

/* The real store's operations, but reads of "rerr" fail (-EIO), reads of
 * "short" come one byte short, the omap of "oerr" fails to read (-EIO)
 * stat of "zperm" fails (-EPERM), and "gone" is removed once listed
 * (stat: -ENOENT). */
static int
is(const void *oid, size_t len, const char *name)
{
	return len == strlen(name) && memcmp(oid, name, len) == 0;
}

static int
faulty_read(void *inst, const struct tsr_coll_id *c, const void *oid, size_t oid_len,
	    uint64_t off, uint64_t len, void *buf, uint64_t *out_len)
{
	if (len > read_max)
		read_max = len;
	if (is(oid, oid_len, "rerr"))
		return -EIO;
	int rc = real->read(inst, c, oid, oid_len, off, len, buf, out_len);
	if (rc == 0 && is(oid, oid_len, "short") && *out_len)
		--*out_len;
	return rc;
}

static int
faulty_stat(void *inst, const struct tsr_coll_id *c, const void *oid, size_t oid_len,
	    struct tsr_obj_stat *st)
{
	if (is(oid, oid_len, "zperm"))
		return -EPERM;
	if (is(oid, oid_len, "gone"))
		return -ENOENT;
	return real->stat(inst, c, oid, oid_len, st);
}

static int
faulty_omap_iter(void *inst, const struct tsr_coll_id *c, const void *oid, size_t oid_len,
		 const void *start, size_t start_len, tsr_kv_cb cb, void *arg)
{
	if (is(oid, oid_len, "oerr"))
		return -EIO;
	return real->omap_iter(inst, c, oid, oid_len, start, start_len, cb, arg);
}

/* Attributes in reverse name order: a backend may give them in any. */
struct attr_rev {
	char k[8][16], v[8][16];
	size_t kl[8], vl[8], n;
};

static int
attr_keep(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct attr_rev *a = arg;

	ck_assert(a->n < 8 && key_len <= 16 && val_len <= 16);
	memcpy(a->k[a->n], key, key_len);
	memcpy(a->v[a->n], val, val_len);
	a->kl[a->n] = key_len;
	a->vl[a->n++] = val_len;
	return 0;
}

static int
faulty_getattrs(void *inst, const struct tsr_coll_id *c, const void *oid, size_t oid_len,
		tsr_kv_cb cb, void *arg)
{
	struct attr_rev a = { .n = 0 };
	int rc = real->getattrs(inst, c, oid, oid_len, attr_keep, &a);

	size_t order[8];

	for (size_t i = 0; i < a.n; i++) { /* by name, last first */
		size_t j = i;
		for (; j > 0 && tsr_oid_cmp(a.k[order[j - 1]], a.kl[order[j - 1]], a.k[i],
					    a.kl[i]) < 0; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (size_t i = 0; rc == 0 && i < a.n; i++)
		rc = cb(arg, a.k[order[i]], a.kl[order[i]], a.v[order[i]], a.vl[order[i]]);
	return rc;
}

struct counted {
	tsr_name_cb cb;
	void *arg;
};

static int
count_name(void *arg, const void *oid, size_t oid_len)
{
	struct counted *c = arg;

	names_listed++;
	return c->cb(c->arg, oid, oid_len);
}

static int
faulty_list_objects(void *inst, const struct tsr_coll_id *c, struct tsr_cursor *cursor,
		    uint32_t max, tsr_name_cb cb, void *arg)
{
	struct counted x = { cb, arg };

	return real->list_objects(inst, c, cursor, max, count_name, &x);
}

static void
faulty_bind(struct rig *r, struct tsr_pgstore *ps)
{
	real = r->ops;
	faulty = *r->ops;
	faulty.read = faulty_read;
	faulty.stat = faulty_stat;
	faulty.omap_iter = faulty_omap_iter;
	faulty.list_objects = faulty_list_objects;
	faulty.getattrs = faulty_getattrs;
	ps->ops = &faulty;
}

/* A scrub walks a copy window by window in time linear in its objects,
 * not walking from the first name each time: windows that go on after
 * the last name (a primary's), and windows that go on after their bound,
 * the listing having read past it (a member's, asked for twice the
 * primary's window, the bound perhaps no name it holds). */
START_TEST(build_walk_linear)
{
	enum { N = 200 };
	char names[N][8];
	struct tsr_pgstore ps;
	struct tsr_scrub_obj *v;
	struct rig r;
	size_t n, seen = 0;
	int end = 0, w;

	rig_open(&r, _i);
	copy_new(&r, &ps, cid);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "w%03d", i);
		put(&r, &ps, names[i], "x", 1, 1);
	}
	faulty_bind(&r, &ps);
	names_listed = 0;
	for (w = 0; w < 2 * N && !end; w++) {
		const char *after = seen ? names[seen - 1] : NULL;
		ck_assert_int_eq(tsr_scrub_map_build(&ps, after, after ? 4 : 0, NULL, 0, 4, 0, &v,
						     &n, &end), 0);
		for (size_t i = 0; i < n; i++)
			ck_assert_int_eq(memcmp(v[i].oid, names[seen + i], 4), 0);
		seen += n;
		tsr_scrub_objs_free(v, n);
	}
	ck_assert(end);
	ck_assert_uint_eq(seen, N);
	/* each name once, and one read ahead a window (walking from the
	 * first each time: some N * N / 8) */
	ck_assert_msg(names_listed <= N + N / 4 + 2, "%zu names listed for %d", names_listed, N);

	/* the bounds: names of objects, and (odd windows) names between
	 * them, as when this copy lacks the primary's last object */
	char bound[8] = "", prev[8];
	names_listed = 0;
	seen = 0;
	for (w = 0; w < 2 * N && seen < N; w++) {
		const char *after = bound[0] ? memcpy(prev, bound, sizeof(prev)) : NULL;
		size_t upto = seen + 4 < N ? seen + 4 : N - 1;
		snprintf(bound, sizeof(bound), "%s%s", names[upto], w % 2 ? "~" : "");
		ck_assert_int_eq(tsr_scrub_map_build(&ps, after, after ? strlen(after) : 0, bound,
						     strlen(bound), 10, 0, &v, &n, &end), 0);
		ck_assert(end);
		ck_assert_uint_eq(n, upto + 1 - seen);
		for (size_t i = 0; i < n; i++)
			ck_assert_int_eq(memcmp(v[i].oid, names[seen + i], 4), 0);
		seen += n;
		tsr_scrub_objs_free(v, n);
	}
	ck_assert_uint_eq(seen, N);
	/* at most an answer (max names) read again a window */
	ck_assert_msg(names_listed <= 4 * N, "%zu names listed for %d", names_listed, N);
	tsr_pgstore_close(&ps);
	rig_close(&r);
}
END_TEST

/* Objects without a version, or whose version is damaged, or that fail
 * to read are flagged, not errors; one removed between listing and
 * describing is left out; other errors of the store are the map's. */
START_TEST(build_flags)
{
	struct tsr_pgstore ps;
	struct tsr_scrub_obj *v;
	struct rig r;
	size_t n;
	int end;

	rig_open(&r, _i);
	copy_new(&r, &ps, cid);
	put(&r, &ps, "good", "data", 4, 1);
	put(&r, &ps, "oerr", "data", 4, 2);
	put(&r, &ps, "rerr", "data", 4, 3);
	put(&r, &ps, "short", "data", 4, 4);
	op1(&r, cid, TSR_TXN_WRITE, "nover", NULL, "data");
	op1(&r, cid, TSR_TXN_SETATTR, "nover", "x", "1");
	put(&r, &ps, "damaged", "data", 4, 5);
	struct tsr_txn_op dv = { .type = TSR_TXN_SETATTR, .cid = cid, .oid = "damaged",
				 .oid_len = 7, .key = TSR_PGSTORE_VER,
				 .key_len = TSR_PGSTORE_VER_LEN, .val = "short", .val_len = 5 };
	commit(&r, &(struct tsr_txn){ 1, &dv });
	op1(&r, cid, TSR_TXN_TOUCH, "zperm", NULL, NULL);
	put(&r, &ps, "gone", "data", 4, 6);
	faulty_bind(&r, &ps);

	ck_assert_int_eq(tsr_scrub_map_build(&ps, NULL, 0, "rerr", 4, 100, 1, &v, &n, &end), 0);
	ck_assert(end);
	ck_assert_uint_eq(n, 5); /* damaged good nover oerr rerr: gone is left out */
	for (size_t i = 0; i < n; i++)
		ck_assert(!is(v[i].oid, v[i].oid_len, "gone"));
	const struct tsr_scrub_obj *o = find(v, n, "good");
	ck_assert_uint_eq(o->flags, 0);
	ck_assert_uint_eq(o->data_crc, tsr_crc32c(0, "data", 4));
	uint32_t good_attr = o->attr_crc;
	o = find(v, n, "nover");
	ck_assert_uint_eq(o->flags, TSR_SCRUB_F_NO_VERSION);
	ck_assert(tsr_ev_none(o->ev));
	ck_assert_uint_eq(o->size, 4);
	ck_assert_uint_eq(o->data_crc, tsr_crc32c(0, "data", 4));
	ck_assert_uint_eq(o->attr_crc, pairs_crc((const char *[]){ "x", "1" }, 1));
	o = find(v, n, "damaged");
	ck_assert_uint_eq(o->flags, TSR_SCRUB_F_NO_VERSION);
	ck_assert(tsr_ev_none(o->ev));
	ck_assert_uint_eq(o->data_crc, tsr_crc32c(0, "data", 4));
	ck_assert_uint_eq(o->attr_crc, good_attr);
	o = find(v, n, "rerr");
	ck_assert_uint_eq(o->flags, TSR_SCRUB_F_READ_ERR);
	ck_assert_uint_eq(o->ev.ver, 3);
	ck_assert_uint_eq(o->size, 4);
	o = find(v, n, "oerr");
	ck_assert_uint_eq(o->flags, TSR_SCRUB_F_READ_ERR);
	ck_assert_uint_eq(o->ev.ver, 2);
	tsr_scrub_objs_free(v, n);

	/* a short read is a read error; shallow, no data is read */
	ck_assert_int_eq(tsr_scrub_map_build(&ps, "rerr", 4, NULL, 0, 1, 1, &v, &n, &end), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(end, 0);
	ck_assert_uint_eq(find(v, n, "short")->flags, TSR_SCRUB_F_READ_ERR);
	tsr_scrub_objs_free(v, n);
	ck_assert_int_eq(tsr_scrub_map_build(&ps, "oerr", 4, NULL, 0, 2, 0, &v, &n, &end), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(end, 0);
	ck_assert_uint_eq(find(v, n, "rerr")->flags, 0);
	ck_assert_uint_eq(find(v, n, "short")->flags, 0);
	tsr_scrub_objs_free(v, n);

	/* and an error of the store that is no read error is the map's */
	ck_assert_int_eq(tsr_scrub_map_build(&ps, "oerr", 4, NULL, 0, 100, 0, &v, &n, &end),
			 -EPERM);
	ck_assert_ptr_null(v);
	ck_assert_uint_eq(n, 0);
	tsr_pgstore_close(&ps);
	rig_close(&r);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("scrub");
	TCase *tc = tcase_create("compare"), *ts = tcase_create("build");
	SRunner *sr;
	int failed;

	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	tsr_core_host_init(&core_host, "test/scrub", NULL, NULL);
	registry = tsr_registry_create();
	tcase_add_test(tc, compare_all_agree);
	tcase_add_test(tc, compare_missing);
	tcase_add_test(tc, compare_majority);
	tcase_add_test(tc, compare_two_copies);
	tcase_add_test(tc, compare_read_error);
	tcase_add_test(tc, compare_version);
	tcase_add_test(tc, compare_upto);
	tcase_add_test(tc, compare_refuses);
	tcase_add_test(tc, errs_str);
	suite_add_tcase(s, tc);
	tcase_set_timeout(ts, 120);
	tcase_add_loop_test(ts, build_digests, 0, 2);
	tcase_add_loop_test(ts, build_windows, 0, 2);
	tcase_add_loop_test(ts, build_windows_model, 0, 2);
	tcase_add_loop_test(ts, build_flags, 0, 2);
	tcase_add_loop_test(ts, build_walk_linear, 0, 2);
	suite_add_tcase(s, ts);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tsr_registry_destroy(registry);
	if (getenv("SCRUB_KEEP") == NULL) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", root);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
