/* test_bf_kvov.c — backend-file's overlay of pending key/value changes:
 * lookups and scans through it see every change before them over what
 * the store holds, ranges delete what is under them but not what comes
 * after, and emitting it (ranges, then entries) makes the store what the
 * overlay showed.  A randomized run checks all of it against a model. */
#include "ostore/kvov.h"

#include <tessera/kv.h>

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char root[128];
static char dir[256];
static char err[1024];
static struct tsr_kv *kv;
static struct kvov ov;

static void
setup(void)
{
	char path[400];

	snprintf(dir, sizeof(dir), "%s/t-XXXXXX", root);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/db", dir);
	ck_assert_msg(tsr_kv_open(path, 1, &kv, err, sizeof(err)) == 0, "%s", err);
	kvov_init(&ov, kv);
}

static void
teardown(void)
{
	kvov_reset(&ov);
	tsr_kv_close(kv);
	kv = NULL;
	ck_assert_int_eq(tu_rm_rf(dir), 0);
}

/* ---- Helpers ---------------------------------------------------------------*/

static void
store_put(const char *k, const char *v)
{
	struct tsr_kv_batch *b = tsr_kv_batch_create();

	tsr_kv_batch_put(b, k, strlen(k), v, strlen(v));
	ck_assert_int_eq(tsr_kv_write(kv, b, 0, err, sizeof(err)), 0);
	tsr_kv_batch_destroy(b);
}

/* The store itself has k = v (v NULL: no k). */
static void
store_expect(const char *k, const char *v)
{
	void *val;
	size_t vl;
	int rc = tsr_kv_get(kv, k, strlen(k), &val, &vl, err, sizeof(err));

	if (v == NULL) {
		ck_assert_msg(rc == -ENOENT, "store has %s", k);
		return;
	}
	ck_assert_msg(rc == 0, "store lacks %s", k);
	ck_assert_uint_eq(vl, strlen(v));
	ck_assert(memcmp(val, v, vl) == 0);
	tsr_kv_free(val);
}

/* The overlay shows k = v (v NULL: no k); from_store says which layer the
 * value must come from, so whether the caller owns it. */
static void
ov_expect(const char *k, const char *v, int from_store)
{
	void *val = NULL;
	size_t vl = 0;
	int owned = -1;
	int rc = kvov_get(&ov, k, strlen(k), &val, &vl, &owned, err, sizeof(err));

	if (v == NULL) {
		ck_assert_msg(rc == -ENOENT, "overlay shows %s", k);
		return;
	}
	ck_assert_msg(rc == 0, "overlay lacks %s (%d)", k, rc);
	ck_assert_uint_eq(vl, strlen(v));
	ck_assert_msg(vl == 0 || memcmp(val, v, vl) == 0, "%s: wrong value", k);
	ck_assert_int_eq(owned, from_store);
	if (owned)
		tsr_kv_free(val);
}

static void
put(const char *k, const char *v)
{
	ck_assert_int_eq(kvov_put(&ov, k, strlen(k), v, strlen(v)), 0);
}

static void
del(const char *k)
{
	ck_assert_int_eq(kvov_del(&ov, k, strlen(k)), 0);
}

static void
del_range(const char *a, const char *b)
{
	ck_assert_int_eq(kvov_del_range(&ov, a, strlen(a), b, strlen(b)), 0);
}

/* A scan written out as "k=v k=v ", stopping after stop_after keys. */
struct text {
	char s[4096];
	size_t len;
	int n, stop_after, stop_rc;
};

static int
as_text(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct text *t = arg;
	int w = snprintf(t->s + t->len, sizeof(t->s) - t->len, "%.*s=%.*s ",
			 (int)kl, (const char *)k, (int)vl, (const char *)v);

	ck_assert(w > 0 && (size_t)w < sizeof(t->s) - t->len);
	t->len += (size_t)w;
	t->n++;
	return t->n == t->stop_after ? t->stop_rc : 0;
}

/* kvov_scan of [a, b) (b NULL: to the end) as text. */
static const char *
scan(const char *a, const char *b, int stop_after, int stop_rc, int *rc)
{
	static struct text t;

	memset(&t, 0, sizeof(t));
	t.stop_after = stop_after;
	t.stop_rc = stop_rc;
	*rc = kvov_scan(&ov, a, strlen(a), b, b ? strlen(b) : 0, as_text, &t, err,
			sizeof(err));
	return t.s;
}

static void
scan_expect(const char *a, const char *b, const char *want)
{
	int rc;

	ck_assert_str_eq(scan(a, b, 0, 0, &rc), want);
	ck_assert_int_eq(rc, 0);
}

/* The store's whole contents as text. */
static const char *
store_text(void)
{
	static struct text t;

	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(tsr_kv_scan(kv, NULL, 0, NULL, 0, as_text, &t, err,
				     sizeof(err)), 0);
	return t.s;
}

static int
add_del(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	(void)v;
	(void)vl;
	tsr_kv_batch_del(arg, k, kl);
	return 0;
}

/* Write the overlay to the store as kvov.h says: every range first (as
 * deletes of the keys the store has in it), then every entry; then empty
 * the overlay. */
static void
emit(void)
{
	struct tsr_kv_batch *b = tsr_kv_batch_create();

	for (size_t i = 0; i < ov.nranges; i++) {
		const struct kvov_range *r = &ov.ranges[i];
		ck_assert_int_eq(tsr_kv_scan(kv, r->start, r->slen, r->end, r->elen,
					     add_del, b, err, sizeof(err)), 0);
	}
	for (size_t i = 0; i < ov.nents; i++) {
		const struct kvov_ent *e = &ov.ents[i];
		if (e->val != NULL)
			tsr_kv_batch_put(b, e->key, e->klen, e->val, e->vlen);
		else
			tsr_kv_batch_del(b, e->key, e->klen);
	}
	ck_assert_msg(tsr_kv_write(kv, b, 0, err, sizeof(err)) == 0, "%s", err);
	tsr_kv_batch_destroy(b);
	kvov_reset(&ov);
}

/* ---- Point operations ------------------------------------------------------*/

START_TEST(get_sees_store_then_overlay)
{
	store_put("a", "1");
	store_put("b", "2");
	/* nothing pending: the store's values, the caller's to free */
	ov_expect("a", "1", 1);
	ov_expect("b", "2", 1);
	ov_expect("c", NULL, 0);
	/* a put over a stored key and one over an absent key */
	put("a", "10");
	put("c", "3");
	ov_expect("a", "10", 0);
	ov_expect("c", "3", 0);
	/* the store is untouched */
	store_expect("a", "1");
	store_expect("c", NULL);
	/* the last put wins */
	put("a", "100");
	ov_expect("a", "100", 0);
	/* deletes hide a stored key, an overlay key, an absent key */
	del("b");
	del("c");
	del("d");
	ov_expect("b", NULL, 0);
	ov_expect("c", NULL, 0);
	ov_expect("d", NULL, 0);
	store_expect("b", "2");
	/* and a put after a delete brings it back */
	put("b", "22");
	ov_expect("b", "22", 0);
	/* an empty value is a value */
	put("e", "");
	ov_expect("e", "", 0);
	/* binary keys: a NUL inside, and the empty key */
	ck_assert_int_eq(kvov_put(&ov, "k\0x", 3, "v\0v", 3), 0);
	ck_assert_int_eq(kvov_put(&ov, "", 0, "empty", 5), 0);
	void *v;
	size_t vl;
	int owned;
	ck_assert_int_eq(kvov_get(&ov, "k\0x", 3, &v, &vl, &owned, err, sizeof(err)), 0);
	ck_assert_uint_eq(vl, 3);
	ck_assert(memcmp(v, "v\0v", 3) == 0);
	ck_assert_int_eq(kvov_get(&ov, "k", 1, &v, &vl, &owned, err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(kvov_get(&ov, "", 0, &v, &vl, &owned, err, sizeof(err)), 0);
	ck_assert_uint_eq(vl, 5);
	/* keys and values were copied in */
	char k[2] = "z", val[3] = "zz";
	ck_assert_int_eq(kvov_put(&ov, k, 1, val, 2), 0);
	k[0] = 'y';
	val[0] = 'y';
	ov_expect("z", "zz", 0);
	ov_expect("y", NULL, 0);
}
END_TEST

/* For keys the store cannot hold (an object the overlay made): forgetting
 * a range drops only what is pending, records no range, and leaves the
 * store alone; a pending-only get never reads the store. */
START_TEST(forget_range_and_pending_get)
{
	void *v;
	size_t vl;
	int owned;

	store_put("n1", "stored");
	put("n1", "1");
	put("n2", "2");
	put("p", "3");
	kvov_forget_range(&ov, "n", 1, "o", 1);
	ck_assert_uint_eq(ov.nranges, 0);
	ck_assert_uint_eq(ov.nents, 1);
	ov_expect("p", "3", 0);
	/* (the store's key shows again: the caller promised there is none) */
	ov_expect("n1", "stored", 1);
	ck_assert_int_eq(kvov_get_pending(&ov, "n1", 2, &v, &vl, &owned), -ENOENT);
	ck_assert_int_eq(kvov_get_pending(&ov, "p", 1, &v, &vl, &owned), 0);
	ck_assert_int_eq(owned, 0);
	ck_assert_uint_eq(vl, 1);
	ck_assert(memcmp(v, "3", 1) == 0);
	del("p");
	ck_assert_int_eq(kvov_get_pending(&ov, "p", 1, &v, &vl, &owned), -ENOENT);
	/* an empty or reversed range forgets nothing */
	put("q", "4");
	kvov_forget_range(&ov, "r", 1, "q", 1);
	kvov_forget_range(&ov, "q", 1, "q", 1);
	ov_expect("q", "4", 0);
	emit();
	store_expect("n1", "stored");
	store_expect("n2", NULL);
	store_expect("q", "4");
}
END_TEST

START_TEST(many_entries_stay_sorted)
{
	char k[16];

	/* more than the initial capacity, inserted out of order */
	for (int i = 0; i < 500; i++) {
		snprintf(k, sizeof(k), "k%03d", (i * 7919) % 500);
		put(k, k);
	}
	ck_assert_uint_eq(ov.nents, 500);
	for (size_t i = 1; i < ov.nents; i++) {
		size_t n = ov.ents[i - 1].klen < ov.ents[i].klen ? ov.ents[i - 1].klen
								 : ov.ents[i].klen;
		int c = memcmp(ov.ents[i - 1].key, ov.ents[i].key, n);
		ck_assert(c < 0 || (c == 0 && ov.ents[i - 1].klen < ov.ents[i].klen));
	}
	for (int i = 0; i < 500; i += 37) {
		snprintf(k, sizeof(k), "k%03d", i);
		ov_expect(k, k, 0);
	}
	del_range("k100", "k400");
	ck_assert_uint_eq(ov.nents, 200);
	ov_expect("k099", "k099", 0);
	ov_expect("k100", NULL, 0);
	ov_expect("k399", NULL, 0);
	ov_expect("k400", "k400", 0);
}
END_TEST

/* ---- Ranges ----------------------------------------------------------------*/

START_TEST(del_range_then_later_put_wins)
{
	const char *stored[] = { "a", "b", "ba", "bz", "c", "d" };

	for (size_t i = 0; i < 6; i++)
		store_put(stored[i], stored[i]);
	put("bb", "x");
	put("e", "y");
	put("b", "over");
	del_range("b", "c");
	/* [b, c): the store's keys and the earlier overlay entries in it */
	ov_expect("a", "a", 1);
	ov_expect("b", NULL, 0);
	ov_expect("ba", NULL, 0);
	ov_expect("bb", NULL, 0);
	ov_expect("bz", NULL, 0);
	/* the end is excluded; entries outside stay */
	ov_expect("c", "c", 1);
	ov_expect("e", "y", 0);
	/* the store is untouched */
	store_expect("ba", "ba");
	/* a put after the range, inside it, wins */
	put("bm", "z");
	put("ba", "again");
	ov_expect("bm", "z", 0);
	ov_expect("ba", "again", 0);
	scan_expect("", NULL, "a=a ba=again bm=z c=c d=d e=y ");
	/* a delete inside it stays deleted */
	del("bz");
	ov_expect("bz", NULL, 0);
	/* a second range over it takes the later puts too */
	del_range("ba", "bn");
	ov_expect("ba", NULL, 0);
	ov_expect("bm", NULL, 0);
	scan_expect("", NULL, "a=a c=c d=d e=y ");
	/* an empty or inverted range deletes nothing */
	del_range("c", "c");
	del_range("d", "a");
	ov_expect("c", "c", 1);
	ov_expect("a", "a", 1);
	scan_expect("", NULL, "a=a c=c d=d e=y ");
	/* a range from the empty key */
	del_range("", "c");
	scan_expect("", NULL, "c=c d=d e=y ");
}
END_TEST

/* Bug: kvov_del_range on an overlay that has never held an entry (ents
 * NULL) calls memmove(NULL, NULL, 0) — undefined, and fatal under the
 * sanitizer build.  A transaction whose first key/value change is a range
 * (a truncate, an omap clear) does this. */
START_TEST(del_range_on_empty_overlay)
{
	store_put("a", "1");
	store_put("b", "2");
	ck_assert_ptr_null(ov.ents);
	del_range("a", "b");
	ov_expect("a", NULL, 0);
	ov_expect("b", "2", 1);
	scan_expect("", NULL, "b=2 ");
}
END_TEST

/* ---- Scans -----------------------------------------------------------------*/

static void
scan_fixture(void)
{
	store_put("a", "1");
	store_put("c", "3");
	store_put("e", "5");
	store_put("g", "7");
	store_put("i", "9");
	put("b", "B");      /* only in the overlay, between stored keys */
	put("c", "C");      /* replaces a stored value */
	del("e");           /* hides a stored key */
	del("f");           /* a delete of nothing */
	del_range("g", "h");
	put("gz", "GZ");    /* inside the range, after it */
	put("j", "J");      /* after every stored key */
	put("0", "zero");   /* before every stored key */
}

START_TEST(scan_merges_in_key_order)
{
	scan_fixture();
	scan_expect("", NULL, "0=zero a=1 b=B c=C gz=GZ i=9 j=J ");
	scan_expect("", "\xff", "0=zero a=1 b=B c=C gz=GZ i=9 j=J ");
	/* [start, end): start included, end excluded, from either layer */
	scan_expect("b", "i", "b=B c=C gz=GZ ");
	scan_expect("a", "b", "a=1 ");
	scan_expect("bb", "gz", "c=C ");
	scan_expect("c", "j", "c=C gz=GZ i=9 ");
	scan_expect("d", "g", "");
	scan_expect("g", "h", "gz=GZ ");
	scan_expect("i", NULL, "i=9 j=J ");
	scan_expect("j", "k", "j=J ");
	scan_expect("k", NULL, "");
	scan_expect("c", "c", "");
	scan_expect("e", "a", "");
	/* the store alone is untouched */
	ck_assert_str_eq(store_text(), "a=1 c=3 e=5 g=7 i=9 ");
}
END_TEST

START_TEST(scan_stops_on_callback)
{
	int rc;

	scan_fixture();
	/* the stopping key from the overlay (b), from the store (a, i),
	 * replaced (c), after the last stored key (j), before the first (0) */
	ck_assert_str_eq(scan("", NULL, 1, 9, &rc), "0=zero ");
	ck_assert_int_eq(rc, 9);
	ck_assert_str_eq(scan("", NULL, 2, 9, &rc), "0=zero a=1 ");
	ck_assert_int_eq(rc, 9);
	ck_assert_str_eq(scan("", NULL, 3, -5, &rc), "0=zero a=1 b=B ");
	ck_assert_int_eq(rc, -5);
	ck_assert_str_eq(scan("", NULL, 4, 1, &rc), "0=zero a=1 b=B c=C ");
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(scan("", NULL, 6, 1, &rc), "0=zero a=1 b=B c=C gz=GZ i=9 ");
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(scan("", NULL, 7, 1, &rc), "0=zero a=1 b=B c=C gz=GZ i=9 j=J ");
	ck_assert_int_eq(rc, 1);
	ck_assert_str_eq(scan("b", "z", 2, 3, &rc), "b=B c=C ");
	ck_assert_int_eq(rc, 3);
}
END_TEST

START_TEST(scan_empty_store_and_overlay)
{
	scan_expect("", NULL, "");
	put("x", "1");
	del("y");
	scan_expect("", NULL, "x=1 ");
	scan_expect("y", NULL, "");
}
END_TEST

/* ---- Reset and emit --------------------------------------------------------*/

START_TEST(reset_drops_everything)
{
	store_put("a", "1");
	store_put("b", "2");
	put("a", "10");
	put("c", "3");
	del("b");
	del_range("0", "1");
	del_range("a", "b");
	kvov_reset(&ov);
	ck_assert_uint_eq(ov.nents, 0);
	ck_assert_uint_eq(ov.nranges, 0);
	ck_assert_ptr_eq(ov.kv, kv);
	ov_expect("a", "1", 1);
	ov_expect("b", "2", 1);
	ov_expect("c", NULL, 0);
	scan_expect("", NULL, "a=1 b=2 ");
	/* and it is usable again; a second reset of an empty one is fine */
	put("d", "4");
	del_range("a", "b");
	scan_expect("", NULL, "b=2 d=4 ");
	kvov_reset(&ov);
	kvov_reset(&ov);
	scan_expect("", NULL, "a=1 b=2 ");
}
END_TEST

START_TEST(emit_ranges_then_entries)
{
	store_put("a", "1");
	store_put("b", "2");
	store_put("c", "3");
	store_put("x", "24");
	put("b", "20");          /* superseded by the range */
	del_range("a", "d");
	put("c", "30");          /* after the range: kept */
	del("a");                /* inside it, after it: a delete entry */
	put("d", "40");
	del("x");
	scan_expect("", NULL, "c=30 d=40 ");
	ck_assert_uint_eq(ov.nranges, 1);
	emit();
	ck_assert_str_eq(store_text(), "c=30 d=40 ");
	ck_assert_uint_eq(ov.nents, 0);
	scan_expect("", NULL, "c=30 d=40 ");
}
END_TEST

/* ---- A randomized run against a model --------------------------------------
 *
 * Keys: every string over {a, b, c} of length 0 to 2 (13 of them, the
 * empty key included), range ends also of length 3.  The model keeps the
 * store's contents and the overlay's view; emitting makes the store the
 * view, resetting makes the view the store. */

#define NKEYS 13
#define NOPS 2000

struct model {
	char val[NKEYS][16];
	int present[NKEYS];
};

static char keys[NKEYS][4];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* keys[] in byte order: "", a, aa, ab, ac, b, ba, ... */
static void
make_keys(void)
{
	int n = 0;

	keys[n++][0] = '\0';
	for (int i = 0; i < 3; i++) {
		keys[n][0] = (char)('a' + i);
		keys[n++][1] = '\0';
		for (int j = 0; j < 3; j++) {
			keys[n][0] = (char)('a' + i);
			keys[n][1] = (char)('a' + j);
			keys[n++][2] = '\0';
		}
	}
}

/* A random range end: one of the keys, or a key with a letter appended. */
static void
rnd_bound(char out[5])
{
	snprintf(out, 5, "%s", keys[rnd(NKEYS)]);
	if (rnd(3) == 0) {
		size_t l = strlen(out);
		out[l] = (char)('a' + rnd(4)); /* 'd' sorts after every key */
		out[l + 1] = '\0';
	}
}

static int
in(const char *k, const char *a, const char *b)
{
	return strcmp(k, a) >= 0 && (b == NULL || strcmp(k, b) < 0);
}

/* What the model has in [a, b), as scan text, up to stop keys (0: all). */
static const char *
model_text(const struct model *m, const char *a, const char *b, int stop)
{
	static char s[4096];
	size_t len = 0;
	int n = 0;

	s[0] = '\0';
	for (int i = 0; i < NKEYS && (stop == 0 || n < stop); i++)
		if (m->present[i] && in(keys[i], a, b)) {
			len += (size_t)snprintf(s + len, sizeof(s) - len, "%s=%s ",
						keys[i], m->val[i]);
			n++;
		}
	return s;
}

static int
model_count(const struct model *m, const char *a, const char *b)
{
	int n = 0;

	for (int i = 0; i < NKEYS; i++)
		n += m->present[i] && in(keys[i], a, b);
	return n;
}

static void
check_sorted(void)
{
	for (size_t i = 1; i < ov.nents; i++) {
		const struct kvov_ent *x = &ov.ents[i - 1], *y = &ov.ents[i];
		size_t n = x->klen < y->klen ? x->klen : y->klen;
		int c = memcmp(x->key, y->key, n);
		ck_assert(c < 0 || (c == 0 && x->klen < y->klen));
	}
}

START_TEST(random_ops_match_model)
{
	struct model store = { 0 }, view;
	int ent[NKEYS] = { 0 };   /* the overlay holds an entry for the key */
	int emits = 0, resets = 0, scans = 0, stops = 0;

	make_keys();
	for (int i = 0; i < NKEYS; i++)
		if (rnd(2)) {
			snprintf(store.val[i], sizeof(store.val[i]), "s%d", i);
			store.present[i] = 1;
			store_put(keys[i], store.val[i]);
		}
	view = store;
	for (int op = 0; op < NOPS; op++) {
		uint32_t r = rnd(100);
		int i = (int)rnd(NKEYS);
		char a[5], b[5];

		if (r < 30) {
			/* values of several lengths, the empty one included */
			if (rnd(4) == 0)
				view.val[i][0] = '\0';
			else
				snprintf(view.val[i], sizeof(view.val[i]), "v%d", op);
			view.present[i] = 1;
			ent[i] = 1;
			put(keys[i], view.val[i]);
		} else if (r < 45) {
			view.present[i] = 0;
			ent[i] = 1;
			del(keys[i]);
		} else if (r < 55) {
			rnd_bound(a);
			rnd_bound(b);
			for (int k = 0; k < NKEYS; k++)
				if (in(keys[k], a, b)) {
					view.present[k] = 0;
					ent[k] = 0;
				}
			del_range(a, b);
		} else if (r < 75) {
			/* a stored value comes back owned, an overlay one borrowed */
			ov_expect(keys[i], view.present[i] ? view.val[i] : NULL,
				  view.present[i] && !ent[i]);
		} else if (r < 97) {
			/* a random range, sometimes open at either end, sometimes
			 * stopped after a few keys */
			int rc, stop = rnd(4) == 0 ? (int)rnd(5) + 1 : 0;
			const char *lo = a, *hi = b, *got;

			rnd_bound(a);
			rnd_bound(b);
			if (rnd(5) == 0)
				lo = "";
			if (rnd(4) == 0)
				hi = NULL;
			got = scan(lo, hi, stop, 77, &rc);
			ck_assert_str_eq(got, model_text(&view, lo, hi, stop));
			if (stop && model_count(&view, lo, hi) >= stop) {
				ck_assert_int_eq(rc, 77);
				stops++;
			} else {
				ck_assert_int_eq(rc, 0);
			}
			scans++;
		} else if (r < 99) {
			emit();
			ck_assert_str_eq(store_text(), model_text(&view, "", NULL, 0));
			store = view;
			memset(ent, 0, sizeof(ent));
			emits++;
		} else {
			kvov_reset(&ov);
			view = store;
			memset(ent, 0, sizeof(ent));
			resets++;
		}
		check_sorted();
	}
	/* the last changes reach the store too */
	emit();
	ck_assert_str_eq(store_text(), model_text(&view, "", NULL, 0));
	ck_assert_int_gt(emits, 5);
	ck_assert_int_gt(resets, 2);
	ck_assert_int_gt(scans, 100);
	ck_assert_int_gt(stops, 10);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bf_kvov");
	TCase *tc = tcase_create("kvov");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, get_sees_store_then_overlay);
	tcase_add_test(tc, forget_range_and_pending_get);
	tcase_add_test(tc, many_entries_stay_sorted);
	tcase_add_test(tc, del_range_then_later_put_wins);
	tcase_add_test(tc, del_range_on_empty_overlay);
	tcase_add_test(tc, scan_merges_in_key_order);
	tcase_add_test(tc, scan_stops_on_callback);
	tcase_add_test(tc, scan_empty_store_and_overlay);
	tcase_add_test(tc, reset_drops_everything);
	tcase_add_test(tc, emit_ranges_then_entries);
	tcase_add_test(tc, random_ops_match_model);
	suite_add_tcase(s, tc);
	/* every test's files live under one root, removed here even when a
	 * test failed before its teardown could run */
	snprintf(root, sizeof(root), "/tmp/tsr-test-bf-kvov-XXXXXX");
	if (mkdtemp(root) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	tu_rm_rf(root);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
