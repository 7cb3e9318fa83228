/* test_topo.c — the placement topology model (plugins/placebase/topo.h): text
 * and binary round trips, canonical order, every validation error with its
 * message, weight printing and parsing, and hostile blobs. */
#include "placebase/topo.h"

#include <tessera/crc32c.h>
#include <tessera/encoding.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* For hot loops: every passing ck_assert records a mark point (a message
 * to the parent process in fork mode), which costs more than the check. */
#define REQUIRE(c)                                                        \
	do {                                                              \
		if (!(c))                                                 \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #c); \
	} while (0)

/* xorshift64*: fixed seed, libc-independent, so failures reproduce. */
static uint64_t rng_state;

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

/* An exactly-sized heap copy, so ASan flags any read past the end. */
static uint8_t *
dup_exact(const void *src, size_t n)
{
	uint8_t *p = malloc(n != 0 ? n : 1);

	REQUIRE(p != NULL);
	if (n != 0)
		memcpy(p, src, n);
	return p;
}

/* ---- Wrappers that assert success -----------------------------------------*/

static struct topo *
compile_ok(const char *text)
{
	char err[256] = "";
	struct topo *t = NULL;
	int rc = topo_compile(text, strlen(text), &t, err, sizeof(err));

	ck_assert_msg(rc == 0, "compile failed (%d): %s", rc, err);
	ck_assert_ptr_nonnull(t);
	return t;
}

static char *
decompile_ok(const struct topo *t)
{
	char *text = NULL;
	size_t len = 0;

	ck_assert_int_eq(topo_decompile(t, &text, &len), 0);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(strlen(text), len);
	return text;
}

static uint8_t *
encode_ok(const struct topo *t, size_t *len)
{
	uint8_t *buf = NULL;

	ck_assert_int_eq(topo_encode(t, &buf, len), 0);
	ck_assert_ptr_nonnull(buf);
	return buf;
}

static struct topo *
decode_ok(const uint8_t *buf, size_t len)
{
	char err[256] = "";
	struct topo *t = NULL;
	uint8_t *copy = dup_exact(buf, len);
	int rc = topo_decode(copy, len, &t, err, sizeof(err));

	free(copy);
	ck_assert_msg(rc == 0, "decode failed (%d): %s", rc, err);
	ck_assert_ptr_nonnull(t);
	return t;
}

static void
assert_same_blob(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	ck_assert_uint_eq(alen, blen);
	ck_assert_msg(memcmp(a, b, alen) == 0, "blobs differ");
}

static void
assert_same_text(const char *got, const char *want)
{
	if (strcmp(got, want) != 0) {
		size_t i = 0;

		while (got[i] != '\0' && got[i] == want[i])
			i++;
		ck_abort_msg("text differs at byte %zu:\n--- got:\n%s\n"
			     "--- want:\n%s", i, got, want);
	}
}

/* The invariants of a constructed topo: canonical order, derived weights,
 * max_devices, and lookups that find every item and nothing else. */
static void
check_invariants(const struct topo *t)
{
	uint64_t *sum = calloc(t->nbuckets + 1, sizeof(*sum));

	REQUIRE(sum != NULL);
	for (uint32_t i = 0; i < t->ndevices; i++) {
		const struct topo_device *d = &t->devices[i];

		REQUIRE(i == 0 || t->devices[i - 1].id < d->id);
		REQUIRE(topo_device(t, d->id) == d);
		REQUIRE(d->weight > 0);
		/* Walk the parent chain (bounded by the bucket count). */
		for (int32_t p = d->parent, hops = 0; p != 0; hops++) {
			const struct topo_bucket *b = topo_bucket(t, p);

			REQUIRE(b != NULL);
			REQUIRE(hops <= (int)t->nbuckets);
			sum[b - t->buckets] += d->weight;
			p = b->parent;
		}
	}
	REQUIRE(t->max_devices == (t->ndevices > 0
		? (uint32_t)t->devices[t->ndevices - 1].id + 1 : 0));
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		const struct topo_bucket *b = &t->buckets[i];

		REQUIRE(topo_bucket(t, b->id) == b);
		REQUIRE(b->weight == sum[i]);
		REQUIRE(b->weight > 0);
		/* Children first. */
		REQUIRE(b->parent == 0 || topo_bucket(t, b->parent) > b);
	}
	for (uint32_t i = 0; i < t->nrules; i++) {
		REQUIRE(i == 0 || t->rules[i - 1].id < t->rules[i].id);
		REQUIRE(topo_rule(t, t->rules[i].id) == &t->rules[i]);
	}
	REQUIRE(topo_device(t, -1) == NULL);
	REQUIRE(topo_device(t, (int32_t)t->max_devices) == NULL);
	REQUIRE(topo_bucket(t, 0) == NULL);
	REQUIRE(topo_bucket(t, 5) == NULL);
	REQUIRE(topo_bucket(t, INT32_MIN) == NULL);
	REQUIRE(topo_bucket(t, -(int32_t)TOPO_MAX_BUCKETS) == NULL);
	REQUIRE(topo_rule(t, TOPO_MAX_RULES) == NULL);
	free(sum);
}

/* Every round trip topo.h promises, on one model; returns its canonical
 * text (caller frees). */
static char *
check_roundtrips(const struct topo *t)
{
	uint8_t *b1, *b2, *b3;
	size_t l1, l2, l3;
	struct topo *t2, *t3;
	char *text, *text2, *text3;

	check_invariants(t);
	b1 = encode_ok(t, &l1);
	text = decompile_ok(t);

	/* compile(decompile(m)) == m, byte for byte once encoded. */
	t2 = compile_ok(text);
	check_invariants(t2);
	b2 = encode_ok(t2, &l2);
	assert_same_blob(b1, l1, b2, l2);
	/* decompile(compile(canonical)) == canonical. */
	text2 = decompile_ok(t2);
	assert_same_text(text2, text);

	/* encode(decode(b)) == b, and the text agrees. */
	t3 = decode_ok(b1, l1);
	check_invariants(t3);
	b3 = encode_ok(t3, &l3);
	assert_same_blob(b1, l1, b3, l3);
	text3 = decompile_ok(t3);
	assert_same_text(text3, text);

	free(b1);
	free(b2);
	free(b3);
	free(text2);
	free(text3);
	topo_free(t2);
	topo_free(t3);
	return text;
}

/* ---- A hand-written map ---------------------------------------------------*/

static const char hand_text[] =
	"types {\n"
	"\t0 osd\n"
	"\t1 host\n"
	"\t2 rack\n"
	"\t3 root\n"
	"}\n"
	"device 0 osd.0 weight 1.00000\n"
	"device 1 osd.1 weight 2.50000\n"
	"device 2 osd.2 weight 0.50000\n"
	"device 3 osd.3 weight 1.25000\n"
	"device 5 osd.5 weight 3.00000\n"
	"device 7 spare weight 1.00000\n"
	"bucket host-a {\n"
	"\tid -3\n"
	"\ttype host\n"
	"\titem osd.0\n"
	"\titem osd.1\n"
	"}\n"
	"bucket host-b {\n"
	"\tid -4\n"
	"\ttype host\n"
	"\titem osd.2\n"
	"\titem osd.3\n"
	"}\n"
	"bucket rack-1 {\n"
	"\tid -2\n"
	"\ttype rack\n"
	"\titem host-a\n"
	"\titem host-b\n"
	"}\n"
	"bucket host-c {\n"
	"\tid -5\n"
	"\ttype host\n"
	"\titem osd.5\n"
	"}\n"
	"bucket default {\n"
	"\tid -1\n"
	"\ttype root\n"
	"\titem rack-1\n"
	"\titem host-c\n"
	"}\n"
	"rule replicated {\n"
	"\tid 0\n"
	"\ttake default\n"
	"\tchooseleaf host\n"
	"}\n"
	"rule flat {\n"
	"\tid 1\n"
	"\ttake default\n"
	"\tchoose osd\n"
	"}\n"
	"rule by-rack {\n"
	"\tid 5\n"
	"\ttake default\n"
	"\tchooseleaf rack\n"
	"}\n";

static uint8_t *
hand_blob(size_t *len)
{
	struct topo *t = compile_ok(hand_text);
	uint8_t *b = encode_ok(t, len);

	topo_free(t);
	return b;
}

START_TEST(test_hand_written_map)
{
	struct topo *t = compile_ok(hand_text);
	char *text = check_roundtrips(t);
	const struct topo_bucket *b;
	const struct topo_device *d;
	const struct topo_rule *r;

	/* It is written canonically, so it decompiles to itself. */
	assert_same_text(text, hand_text);
	free(text);

	ck_assert_uint_eq(t->ntypes, 4);
	ck_assert_str_eq(t->types[2], "rack");
	ck_assert_uint_eq(t->ndevices, 6);
	ck_assert_uint_eq(t->max_devices, 8);
	d = topo_device(t, 1);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(d->name, "osd.1");
	ck_assert_uint_eq(d->weight, 0x28000);
	ck_assert_int_eq(d->parent, -3);
	ck_assert_int_eq(topo_device(t, 7)->parent, 0);
	ck_assert_ptr_null(topo_device(t, 4));
	ck_assert_ptr_null(topo_device(t, 6));

	/* Canonical bucket order and derived weights. */
	ck_assert_uint_eq(t->nbuckets, 5);
	ck_assert_int_eq(t->buckets[0].id, -3);
	ck_assert_int_eq(t->buckets[1].id, -4);
	ck_assert_int_eq(t->buckets[2].id, -2);
	ck_assert_int_eq(t->buckets[3].id, -5);
	ck_assert_int_eq(t->buckets[4].id, -1);
	ck_assert_uint_eq(topo_bucket(t, -3)->weight, 0x38000);
	ck_assert_uint_eq(topo_bucket(t, -4)->weight, 0x1c000);
	ck_assert_uint_eq(topo_bucket(t, -2)->weight, 0x54000);
	ck_assert_uint_eq(topo_bucket(t, -5)->weight, 0x30000);
	b = topo_bucket(t, -1);
	ck_assert_str_eq(b->name, "default");
	ck_assert_uint_eq(b->weight, 0x84000);
	ck_assert_uint_eq(b->type, 3);
	ck_assert_int_eq(b->parent, 0);
	ck_assert_int_eq(topo_bucket(t, -2)->parent, -1);
	ck_assert_ptr_null(topo_bucket(t, -6));

	r = topo_rule(t, 5);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->name, "by-rack");
	ck_assert_int_eq(r->root, -1);
	ck_assert_uint_eq(r->domain_type, 2);
	ck_assert_uint_eq(r->mode, TSR_RULE_CHOOSELEAF);
	r = topo_rule(t, 1);
	ck_assert_uint_eq(r->mode, TSR_RULE_CHOOSE);
	ck_assert_uint_eq(r->domain_type, 0);
	ck_assert_ptr_null(topo_rule(t, 2));
	topo_free(t);
}
END_TEST

/* The binary layout is the one drawn in topo.h: written here field by
 * field, independently of topo_encode. */
static void
write_fields(struct tsr_enc *e, const struct topo *t)
{
	tsr_enc_u32(e, TOPO_MAGIC);
	tsr_enc_u32(e, t->ntypes);
	for (uint32_t i = 0; i < t->ntypes; i++)
		tsr_enc_str(e, t->types[i]);
	tsr_enc_u32(e, t->ndevices);
	for (uint32_t i = 0; i < t->ndevices; i++) {
		tsr_enc_i32(e, t->devices[i].id);
		tsr_enc_str(e, t->devices[i].name);
		tsr_enc_u32(e, t->devices[i].weight);
		tsr_enc_i32(e, t->devices[i].parent);
	}
	tsr_enc_u32(e, t->nbuckets);
	for (uint32_t i = 0; i < t->nbuckets; i++) {
		tsr_enc_i32(e, t->buckets[i].id);
		tsr_enc_u32(e, t->buckets[i].type);
		tsr_enc_str(e, t->buckets[i].name);
		tsr_enc_i32(e, t->buckets[i].parent);
	}
	tsr_enc_u32(e, t->nrules);
	for (uint32_t i = 0; i < t->nrules; i++) {
		tsr_enc_u32(e, t->rules[i].id);
		tsr_enc_str(e, t->rules[i].name);
		tsr_enc_i32(e, t->rules[i].root);
		tsr_enc_u32(e, t->rules[i].domain_type);
		tsr_enc_u32(e, t->rules[i].mode);
	}
}

static uint8_t *
take_ok(struct tsr_enc *e, size_t *len)
{
	uint8_t *buf;

	ck_assert_int_eq(tsr_enc_error(e), 0);
	buf = tsr_enc_take(e, len);
	ck_assert_ptr_nonnull(buf);
	return buf;
}

/* The checksum after an envelope: e holds the envelope. */
static void
seal(struct tsr_enc *e)
{
	ck_assert_int_eq(tsr_enc_error(e), 0);
	tsr_enc_u32(e, tsr_crc32c(0, e->buf, e->len));
}

/* The same on a finished blob whose last 4 bytes are the checksum. */
static void
reseal(uint8_t *b, size_t len)
{
	uint32_t crc = tsr_crc32c(0, b, len - 4);

	for (int i = 0; i < 4; i++)
		b[len - 4 + (size_t)i] = (uint8_t)(crc >> (8 * i));
}

START_TEST(test_binary_layout)
{
	struct topo *t = compile_ok(hand_text);
	struct tsr_enc e;
	uint8_t *mine, *theirs;
	size_t ml, tl, mark;

	tsr_enc_init(&e);
	mark = tsr_enc_begin_struct(&e, 2, 2);
	write_fields(&e, t);
	tsr_enc_end_struct(&e, mark);
	seal(&e);
	mine = take_ok(&e, &ml);
	theirs = encode_ok(t, &tl);
	assert_same_blob(theirs, tl, mine, ml);
	/* envelope v2 compat 2, then "TPM1"; the CRC32C of the rest last */
	ck_assert_uint_eq(theirs[0], 2);
	ck_assert_uint_eq(theirs[1], 2);
	ck_assert_int_eq(memcmp(theirs + 6, "TPM1", 4), 0);
	ck_assert_uint_eq(theirs[2] | theirs[3] << 8 | theirs[4] << 16 |
			  (uint32_t)theirs[5] << 24, tl - 10);
	{
		uint32_t crc = tsr_crc32c(0, theirs, tl - 4);
		ck_assert_int_eq(memcmp(theirs + tl - 4, &crc, 4), 0);
	}
	free(mine);
	free(theirs);
	topo_free(t);
}
END_TEST

/* ---- Canonical text of an out-of-order input ------------------------------*/

START_TEST(test_canonical_text)
{
	static const char in[] =
		"# everything out of order that may be\n"
		"types { 2 root\n"
		"  0 osd 1 host }   # types by number later\n"
		"device 3 osd.3 weight 1\n"
		"device 1 osd.1 weight 2.5\n"
		"bucket host-b{id -3 type host item osd.3 item osd.1}\n"
		"device 0 osd.0 weight 0.333333\n"
		"\tdevice 2 osd.2 weight 001.000000000\r\n"
		"bucket host-a {\n"
		"    type host\n"
		"    item osd.2  # devices listed out of order\n"
		"    item osd.0\n"
		"    id -2\n"
		"}\n"
		"device 4 osd.4 weight 3   # not in any bucket\n"
		"bucket default { id -1 type root item host-b item host-a }\n"
		"rule flat { take default choose osd id 1 }\n"
		"rule replicated {\n"
		"\tid 0\n"
		"\ttake default\n"
		"\tchooseleaf host\n"
		"}  # no newline at the end";
	static const char want[] =
		"types {\n"
		"\t0 osd\n"
		"\t1 host\n"
		"\t2 root\n"
		"}\n"
		"device 0 osd.0 weight 0.33333\n"
		"device 1 osd.1 weight 2.50000\n"
		"device 2 osd.2 weight 1.00000\n"
		"device 3 osd.3 weight 1.00000\n"
		"device 4 osd.4 weight 3.00000\n"
		"bucket host-a {\n"
		"\tid -2\n"
		"\ttype host\n"
		"\titem osd.0\n"
		"\titem osd.2\n"
		"}\n"
		"bucket host-b {\n"
		"\tid -3\n"
		"\ttype host\n"
		"\titem osd.1\n"
		"\titem osd.3\n"
		"}\n"
		"bucket default {\n"
		"\tid -1\n"
		"\ttype root\n"
		"\titem host-a\n"
		"\titem host-b\n"
		"}\n"
		"rule replicated {\n"
		"\tid 0\n"
		"\ttake default\n"
		"\tchooseleaf host\n"
		"}\n"
		"rule flat {\n"
		"\tid 1\n"
		"\ttake default\n"
		"\tchoose osd\n"
		"}\n";
	struct topo *t = compile_ok(in);
	char *text = check_roundtrips(t);

	assert_same_text(text, want);
	ck_assert_uint_eq(topo_device(t, 0)->weight, 21845);
	free(text);
	topo_free(t);
}
END_TEST

/* Buckets that become ready together go highest id first; a parent goes
 * as soon as its last listed bucket is out. */
START_TEST(test_canonical_bucket_order)
{
	static const char in[] =
		"types { 0 osd 1 host 2 rack 3 root }\n"
		"device 0 a weight 1\n"
		"device 1 b weight 1\n"
		"device 2 c weight 1\n"
		"device 3 d weight 1\n"
		"bucket h9 { id -9 type host item a }\n"
		"bucket h4 { id -4 type host item b }\n"
		"bucket h7 { id -7 type host item c }\n"
		"bucket h2 { id -2 type host item d }\n"
		"bucket r5 { id -5 type rack item h9 item h4 }\n"
		"bucket r3 { id -3 type rack item h7 }\n"
		"bucket top { id -8 type root item r3 item h2 item r5 }\n"
		"rule x { id 0 take top chooseleaf rack }\n";
	/* ready: h2 h4 h7 h9 -> h2; h4; h7 (r3 ready) -> r3; h9 -> r5; top */
	static const int32_t want[] = { -2, -4, -7, -3, -9, -5, -8 };
	struct topo *t = compile_ok(in);
	char *text;

	ck_assert_uint_eq(t->nbuckets, 7);
	for (uint32_t i = 0; i < 7; i++)
		ck_assert_int_eq(t->buckets[i].id, want[i]);
	text = check_roundtrips(t);
	/* items of top: buckets in canonical order */
	ck_assert_ptr_nonnull(strstr(text, "bucket top {\n\tid -8\n\ttype root\n"
				     "\titem h2\n\titem r3\n\titem r5\n}\n"));
	free(text);
	topo_free(t);
}
END_TEST

/* ---- Generated maps -------------------------------------------------------*/

/* hosts x osds under a root, optionally grouped into racks of
 * hosts_per_rack; items handed to topo_from_generic in shuffled order.
 * Ids: root -1, racks -2.., hosts after the racks; osds by host. */
struct gen {
	struct tsr_topo_item *items;
	uint32_t nitems;
	char (*names)[24];
	struct tsr_topo_rule rules[4];
	const char *types[4];
	struct tsr_topology g;
	uint32_t nracks, nhosts, per_host;
};

static void
gen_build(struct gen *m, uint32_t nhosts, uint32_t per_host,
	  uint32_t hosts_per_rack)
{
	uint32_t nracks = hosts_per_rack ? nhosts / hosts_per_rack : 0;
	uint32_t n = 1 + nracks + nhosts + nhosts * per_host, k = 0;
	int32_t host0 = -2 - (int32_t)nracks;

	memset(m, 0, sizeof(*m));
	m->nracks = nracks;
	m->nhosts = nhosts;
	m->per_host = per_host;
	m->items = calloc(n, sizeof(*m->items));
	m->names = calloc(n, sizeof(*m->names));
	ck_assert_ptr_nonnull(m->items);
	ck_assert_ptr_nonnull(m->names);
	m->types[0] = "osd";
	m->types[1] = "host";
	m->types[2] = "rack";
	m->types[3] = "root";
	snprintf(m->names[k], sizeof(m->names[k]), "default");
	m->items[k] = (struct tsr_topo_item){ -1, 0, 3, 0, m->names[k] };
	k++;
	for (uint32_t r = 0; r < nracks; r++, k++) {
		snprintf(m->names[k], sizeof(m->names[k]), "rack-%u", r);
		m->items[k] = (struct tsr_topo_item){ -2 - (int32_t)r, -1, 2,
						      0, m->names[k] };
	}
	for (uint32_t h = 0; h < nhosts; h++, k++) {
		int32_t parent = nracks ? -2 - (int32_t)(h / hosts_per_rack)
					: -1;

		snprintf(m->names[k], sizeof(m->names[k]), "host-%u", h);
		m->items[k] = (struct tsr_topo_item){ host0 - (int32_t)h,
						      parent, 1, 0,
						      m->names[k] };
	}
	for (uint32_t h = 0; h < nhosts; h++) {
		for (uint32_t o = 0; o < per_host; o++, k++) {
			uint32_t id = h * per_host + o;
			/* Varied weights, some with awkward fractions. */
			uint32_t w = (uint32_t)(rng() % (8u << 16)) + 1;

			snprintf(m->names[k], sizeof(m->names[k]), "osd.%u",
				 id);
			m->items[k] = (struct tsr_topo_item){
				(int32_t)id, host0 - (int32_t)h, 0, w,
				m->names[k]
			};
		}
	}
	ck_assert_uint_eq(k, n);
	m->nitems = n;
	/* Shuffle: from_generic must not care about item order. */
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(rng() % (i + 1));
		struct tsr_topo_item tmp = m->items[i];

		m->items[i] = m->items[j];
		m->items[j] = tmp;
	}
	m->rules[0] = (struct tsr_topo_rule){ 0, "replicated", -1, 1,
					      TSR_RULE_CHOOSELEAF };
	m->rules[1] = (struct tsr_topo_rule){ 1, "flat", -1, 0,
					      TSR_RULE_CHOOSE };
	m->rules[2] = (struct tsr_topo_rule){ 2, "by-rack", -1, 2,
					      TSR_RULE_CHOOSELEAF };
	m->g = (struct tsr_topology){ 4, m->types, n, m->items,
				      nracks ? 3 : 2, m->rules };
}

static void
gen_free(struct gen *m)
{
	free(m->items);
	free(m->names);
}

static struct topo *
generic_ok(const struct tsr_topology *g)
{
	char err[256] = "";
	struct topo *t = NULL;
	int rc = topo_from_generic(g, &t, err, sizeof(err));

	ck_assert_msg(rc == 0, "from_generic failed (%d): %s", rc, err);
	ck_assert_ptr_nonnull(t);
	return t;
}

static void
sb_cat(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 1 > *cap) {
		*cap = (*len + n + 1) * 2;
		*buf = realloc(*buf, *cap);
		REQUIRE(*buf != NULL);
	}
	memcpy(*buf + *len, s, n + 1);
	*len += n;
}

/* The canonical text of a generated map, written out by hand from the
 * rules in topo.h: a rack's hosts, then the rack; the root last. */
static char *
gen_expected_text(const struct gen *m, const struct topo *t)
{
	int32_t host0 = -2 - (int32_t)m->nracks;
	size_t len = 0, cap = 0;
	char *buf = NULL, line[128];

	sb_cat(&buf, &len, &cap, "types {\n\t0 osd\n\t1 host\n\t2 rack\n"
	       "\t3 root\n}\n");
	for (uint32_t i = 0; i < m->nhosts * m->per_host; i++) {
		uint32_t w = topo_device(t, (int32_t)i)->weight;

		snprintf(line, sizeof(line), "device %u osd.%u weight %u.%05u\n",
			 i, i, w >> 16,
			 (unsigned)(((uint64_t)(w & 0xffff) * 100000 + 32768)
				    >> 16));
		sb_cat(&buf, &len, &cap, line);
	}
	for (uint32_t h = 0; h < m->nhosts; h++) {
		snprintf(line, sizeof(line), "bucket host-%u {\n\tid %d\n"
			 "\ttype host\n", h, host0 - (int32_t)h);
		sb_cat(&buf, &len, &cap, line);
		for (uint32_t o = 0; o < m->per_host; o++) {
			snprintf(line, sizeof(line), "\titem osd.%u\n",
				 h * m->per_host + o);
			sb_cat(&buf, &len, &cap, line);
		}
		sb_cat(&buf, &len, &cap, "}\n");
		if (m->nracks && (h + 1) % (m->nhosts / m->nracks) == 0) {
			uint32_t r = h / (m->nhosts / m->nracks);

			snprintf(line, sizeof(line), "bucket rack-%u {\n"
				 "\tid %d\n\ttype rack\n", r, -2 - (int32_t)r);
			sb_cat(&buf, &len, &cap, line);
			for (uint32_t k = 0; k < m->nhosts / m->nracks; k++) {
				snprintf(line, sizeof(line), "\titem host-%u\n",
					 r * (m->nhosts / m->nracks) + k);
				sb_cat(&buf, &len, &cap, line);
			}
			sb_cat(&buf, &len, &cap, "}\n");
		}
	}
	sb_cat(&buf, &len, &cap, "bucket default {\n\tid -1\n\ttype root\n");
	for (uint32_t k = 0; k < (m->nracks ? m->nracks : m->nhosts); k++) {
		snprintf(line, sizeof(line), "\titem %s-%u\n",
			 m->nracks ? "rack" : "host", k);
		sb_cat(&buf, &len, &cap, line);
	}
	sb_cat(&buf, &len, &cap, "}\n");
	sb_cat(&buf, &len, &cap, "rule replicated {\n\tid 0\n\ttake default\n"
	       "\tchooseleaf host\n}\nrule flat {\n\tid 1\n\ttake default\n"
	       "\tchoose osd\n}\n");
	if (m->nracks)
		sb_cat(&buf, &len, &cap, "rule by-rack {\n\tid 2\n"
		       "\ttake default\n\tchooseleaf rack\n}\n");
	return buf;
}

static void
check_generated(uint32_t nhosts, uint32_t per_host, uint32_t hosts_per_rack)
{
	struct gen m;
	struct topo *t;
	char *text, *want;
	uint64_t total = 0;

	gen_build(&m, nhosts, per_host, hosts_per_rack);
	t = generic_ok(&m.g);
	ck_assert_uint_eq(t->ndevices, nhosts * per_host);
	ck_assert_uint_eq(t->nbuckets, 1 + m.nracks + nhosts);
	ck_assert_uint_eq(t->max_devices, nhosts * per_host);
	for (uint32_t i = 0; i < m.nitems; i++) {
		const struct tsr_topo_item *it = &m.items[i];

		if (it->id >= 0) {
			REQUIRE(topo_device(t, it->id)->weight == it->weight);
			REQUIRE(topo_device(t, it->id)->parent == it->parent);
			total += it->weight;
		} else {
			REQUIRE(strcmp(topo_bucket(t, it->id)->name,
				       it->name) == 0);
		}
	}
	ck_assert_uint_eq(topo_bucket(t, -1)->weight, total);
	text = check_roundtrips(t);
	want = gen_expected_text(&m, t);
	assert_same_text(text, want);
	free(text);
	free(want);
	topo_free(t);
	gen_free(&m);
}

START_TEST(test_generated_three_levels)
{
	rng_state = 0x9E3779B97F4A7C15ull;
	check_generated(100, 10, 0);
}
END_TEST

START_TEST(test_generated_four_levels)
{
	rng_state = 0xD1B54A32D192ED03ull;
	check_generated(100, 10, 10);
}
END_TEST

/* ---- Weights --------------------------------------------------------------*/

/* A flat map of n unattached devices with these weights: decompile it,
 * check every weight is written with exactly five decimals and is the
 * nearest such decimal, compile it back and compare. */
static void
check_weights(const uint32_t *w, uint32_t n)
{
	static const char *const types[] = { "osd" };
	struct tsr_topo_item *items = calloc(n, sizeof(*items));
	char (*names)[16] = calloc(n, sizeof(*names));
	struct tsr_topology g;
	struct topo *t, *t2;
	const char *p;
	char *text;
	uint32_t seen = 0;

	ck_assert_ptr_nonnull(items);
	ck_assert_ptr_nonnull(names);
	for (uint32_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "d%u", i);
		items[i] = (struct tsr_topo_item){ (int32_t)i, 0, 0, w[i],
						   names[i] };
	}
	g = (struct tsr_topology){ 1, types, n, items, 0, NULL };
	t = generic_ok(&g);
	text = decompile_ok(t);
	/* Line by line: strstr over the whole text would be quadratic under
	 * ASan, whose interceptor measures the haystack on every call. */
	for (p = text; *p != '\0'; p = strchr(p, '\n') + 1) {
		uint64_t ip = 0, frac = 0, exact;
		const char *nl = strchr(p, '\n');
		int k;

		REQUIRE(nl != NULL);
		if (strncmp(p, "device ", 7) != 0)
			continue;
		p = memrchr(p, ' ', (size_t)(nl - p));
		REQUIRE(p != NULL && p - 7 > text &&
			strncmp(p - 7, " weight ", 8) == 0);
		p++;
		while (*p >= '0' && *p <= '9')
			ip = ip * 10 + (uint64_t)(*p++ - '0');
		REQUIRE(*p++ == '.');
		for (k = 0; k < 5; k++) {
			REQUIRE(p[k] >= '0' && p[k] <= '9');
			frac = frac * 10 + (uint64_t)(p[k] - '0');
		}
		REQUIRE(p[5] == '\n');
		/* |printed - w| <= half a decimal step, in units of
		 * 1/(65536 * 100000). */
		exact = (uint64_t)w[seen] * 100000;
		{
			uint64_t printed = (ip * 100000 + frac) * 65536;
			uint64_t diff = printed > exact ? printed - exact
							: exact - printed;

			REQUIRE(diff <= 32768);
		}
		seen++;
	}
	ck_assert_uint_eq(seen, n);
	t2 = compile_ok(text);
	ck_assert_uint_eq(t2->ndevices, n);
	for (uint32_t i = 0; i < n; i++)
		if (t2->devices[i].weight != w[i])
			ck_abort_msg("weight 0x%x came back as 0x%x", w[i],
				     t2->devices[i].weight);
	free(text);
	topo_free(t);
	topo_free(t2);
	free(items);
	free(names);
}

/* The text of one weight, as decompile writes it. */
static void
weight_text(uint32_t w, char *out, size_t outlen)
{
	static const char *const types[] = { "osd" };
	struct tsr_topo_item it = { 0, 0, 0, w, "d" };
	struct tsr_topology g = { 1, types, 1, &it, 0, NULL };
	struct topo *t = generic_ok(&g);
	char *text = decompile_ok(t);
	const char *p = strstr(text, " weight ");
	size_t n;

	ck_assert_ptr_nonnull(p);
	p += 8;
	n = strcspn(p, "\n");
	ck_assert_uint_lt(n, outlen);
	memcpy(out, p, n);
	out[n] = '\0';
	free(text);
	topo_free(t);
}

/* Parse one weight through compile: its value, or 0 with err set. */
static uint32_t
weight_of(const char *s, char *err, size_t errlen)
{
	char text[256];
	struct topo *t = NULL;
	uint32_t w;

	snprintf(text, sizeof(text), "types { 0 osd }\ndevice 3 osd.3 weight %s\n",
		 s);
	err[0] = '\0';
	if (topo_compile(text, strlen(text), &t, err, errlen) != 0) {
		ck_assert_ptr_null(t);
		return 0;
	}
	w = t->devices[0].weight;
	topo_free(t);
	return w;
}

START_TEST(test_weight_print_parse)
{
	static const uint32_t special[] = {
		1, 2, 3, 0xFFFF, 0x10000, 0x10001, 0x18000, 0x1FFFF,
		0x20000, 0x28000, 1024, 0x400, 0xC00, 0x7FFFFFFF, 0x80000000,
		0x80000001, 0xFFFEFFFF, 0xFFFF0000, 0xFFFFFFFE, 0xFFFFFFFF,
	};
	static const struct { uint32_t w; const char *text; } printed[] = {
		{ 1, "0.00002" },
		{ 0xFFFF, "0.99998" },
		{ 0x10000, "1.00000" },
		{ 0x18000, "1.50000" },
		{ 0x4000, "0.25000" },
		{ 0x400, "0.01563" },   /* 0.015625, half up */
		{ 0xFFFFFFFF, "65535.99998" },
	};
	static const struct { const char *text; uint32_t w; } parsed[] = {
		{ "1", 0x10000 },
		{ "1.5", 0x18000 },
		{ "2.50000", 0x28000 },
		{ "0001.000", 0x10000 },
		{ "0.00001", 1 },               /* 0.655 rounds up */
		{ "0.00002", 1 },               /* 1.31 rounds down */
		{ "0.99999", 0xFFFF },          /* 65535.34 rounds down */
		{ "65535.99999", 0xFFFFFFFF },
		{ "0.00000762939453125", 1 },   /* exactly half: up */
		{ "0.000007629394531251", 1 },
		{ "0.0000228881835937", 1 },    /* just under 1.5 */
		{ "0.00002288818359375", 2 },   /* exactly 1.5: up */
		{ "0.333333", 21845 },
	};
	static const struct { const char *text, *err; } bad[] = {
		{ "0", "line 2: device osd.3: weight must be > 0" },
		{ "0.00000", "line 2: device osd.3: weight must be > 0" },
		{ "-1", "line 2: device osd.3: weight must be > 0" },
		{ "-0.5", "line 2: device osd.3: weight must be > 0" },
		{ "0.0000076293945312",
		  "line 2: device osd.3: weight must be > 0" },
		{ "65536", "line 2: device osd.3: weight '65536' is too large "
			   "(at most 65535.99998)" },
		{ "65535.999993", "line 2: device osd.3: weight "
				  "'65535.999993' is too large (at most "
				  "65535.99998)" },
		{ "99999999999999999999", "line 2: device osd.3: weight "
		  "'99999999999999999999' is too large (at most 65535.99998)" },
		{ ".5", "line 2: device osd.3: bad weight '.5'" },
		{ "1.", "line 2: device osd.3: bad weight '1.'" },
		{ "1e3", "line 2: device osd.3: bad weight '1e3'" },
		{ "1.2.3", "line 2: device osd.3: bad weight '1.2.3'" },
		{ "-", "line 2: device osd.3: bad weight '-'" },
		{ "--1", "line 2: device osd.3: bad weight '--1'" },
		{ "x", "line 2: device osd.3: bad weight 'x'" },
	};
	uint32_t *w = malloc(65536 * sizeof(*w));
	char buf[64], err[256];

	ck_assert_ptr_nonnull(w);
	for (size_t i = 0; i < sizeof(printed) / sizeof(printed[0]); i++) {
		weight_text(printed[i].w, buf, sizeof(buf));
		ck_assert_str_eq(buf, printed[i].text);
	}
	for (size_t i = 0; i < sizeof(parsed) / sizeof(parsed[0]); i++) {
		uint32_t v = weight_of(parsed[i].text, err, sizeof(err));

		ck_assert_msg(v == parsed[i].w, "'%s' -> 0x%x (%s), want 0x%x",
			      parsed[i].text, v, err, parsed[i].w);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_uint_eq(weight_of(bad[i].text, err, sizeof(err)), 0);
		ck_assert_str_eq(err, bad[i].err);
	}

	check_weights(special, sizeof(special) / sizeof(special[0]));
	/* Every fraction, with the smallest and the largest integer part. */
	for (uint32_t i = 0; i < 65536; i++)
		w[i] = i + 1;
	check_weights(w, 65536);
	for (uint32_t i = 0; i < 65536; i++)
		w[i] = 0xFFFF0000u + i;
	check_weights(w, 65536);
	/* And random ones. */
	rng_state = 0x2545F4914F6CDD1Dull;
	for (uint32_t i = 0; i < 65536; i++) {
		w[i] = (uint32_t)rng();
		if (w[i] == 0)
			w[i] = 1;
	}
	check_weights(w, 65536);
	free(w);
}
END_TEST

/* ---- Text errors ----------------------------------------------------------*/

#define T "types {\n\t0 osd\n\t1 host\n\t2 root\n}\n" /* lines 1-5 */
#define D0 "device 0 osd.0 weight 1\n"
#define D1 "device 1 osd.1 weight 1\n"
#define HA "bucket host-a {\n\tid -2\n\ttype host\n\titem osd.0\n}\n"
#define LONG64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

struct text_case {
	const char *text;
	const char *err;
};

static const struct text_case text_cases[] = {
	/* lexing and top level */
	{ "", "line 1: no types block" },
	{ "# nothing\n\n", "line 1: no types block" },
	{ D0, "line 1: no types block" },
	{ T "foo\n", "line 6: unexpected 'foo'" },
	{ T "}\n", "line 6: unexpected '}'" },
	{ T "device 0 osd@0 weight 1\n", "line 6: unexpected character '@'" },
	{ T "device 0 osd.0\x01 weight 1\n", "line 6: unexpected byte 0x01" },
	{ T "\n\n\xc3\xa9\n", "line 8: unexpected byte 0xc3" },
	/* types */
	{ T "types { 0 osd }\n", "line 6: duplicate types block" },
	{ "types { 0 osd 2 root }\n", "line 1: type 1 is missing (types are "
	  "numbered from 0 without gaps)" },
	{ "types {\n\t1 host\n}\n", "line 3: type 0 is missing (types are "
	  "numbered from 0 without gaps)" },
	{ "types { }\n", "line 1: type 0 (the device type) is missing" },
	{ "types {\n0 osd\n0 disk\n}\n", "line 3: duplicate type number 0" },
	{ "types {\n0 osd\n1 osd\n}\n", "line 3: duplicate type name 'osd'" },
	{ "types {\n0 osd\n32 x\n}\n",
	  "line 3: type number 32 out of range (0..31)" },
	{ "types {\n0 osd\n-1 x\n}\n",
	  "line 3: type number -1 out of range (0..31)" },
	{ "types {\n0 osd\nhost 1\n}\n", "line 3: bad type number 'host'" },
	{ "types {\n0 osd\n1\n}\n", "line 4: expected a type name, got '}'" },
	{ "types\n0 osd\n", "line 2: expected '{', got '0'" },
	{ "types {\n0 osd\n", "line 2: unexpected end of input in types" },
	{ "types {\n0 " LONG64 "\n}\n", "line 2: name '" LONG64 "...' is "
	  "longer than 63 characters" },
	/* devices */
	{ T "device 0 osd.0 weight 0\n",
	  "line 6: device osd.0: weight must be > 0" },
	{ T "device 3 osd.3 weight 0.00000\n",
	  "line 6: device osd.3: weight must be > 0" },
	{ T "device 3 osd.3 weight -2.5\n",
	  "line 6: device osd.3: weight must be > 0" },
	{ T "device 0 osd.0 weight abc\n",
	  "line 6: device osd.0: bad weight 'abc'" },
	{ T D0 "device 0 osd.1 weight 1\n",
	  "line 7: duplicate device id 0 (device osd.0)" },
	{ T D0 "device 1 osd.0 weight 1\n", "line 7: duplicate name 'osd.0'" },
	{ T "device 1048576 osd.0 weight 1\n",
	  "line 6: device id 1048576 out of range (0..1048575)" },
	{ T "device -1 osd.0 weight 1\n",
	  "line 6: device id -1 out of range (0..1048575)" },
	{ T "device x osd.0 weight 1\n", "line 6: bad device id 'x'" },
	{ T "device 0 osd.0 wait 1\n",
	  "line 6: expected 'weight', got 'wait'" },
	{ T "device 0 osd.0 weight\n",
	  "line 6: unexpected end of input (expected a weight)" },
	{ T "device 0 osd.0 weight {\n",
	  "line 6: expected a weight, got '{'" },
	{ T "device 0 " LONG64 " weight 1\n", "line 6: name '" LONG64 "...' "
	  "is longer than 63 characters" },
	/* buckets */
	{ T D0 "bucket host-a {\n\tid -2\n\ttype host\n\titem osd.9\n}\n",
	  "line 10: unknown item 'osd.9' in bucket host-a" },
	{ T D0 "bucket host-a {\n\tid -2\n\ttype host\n\titem osd.0\n"
	  "\titem osd.0\n}\n", "line 11: bucket host-a lists 'osd.0' twice" },
	{ T D0 HA "bucket host-b {\n\tid -3\n\ttype host\n\titem osd.0\n}\n",
	  "line 15: item 'osd.0' is already in bucket host-a" },
	{ T D0 D1 HA "bucket host-b {\n\tid -3\n\ttype host\n\titem osd.1\n}\n"
	  "bucket r1 { id -4 type root item host-a }\n"
	  "bucket r2 { id -5 type root item host-b item host-a }\n",
	  "line 19: item 'host-a' is already in bucket r1" },
	{ T D0 "bucket host-a {\n\tid -2\n\ttype rack\n\titem osd.0\n}\n",
	  "line 9: unknown type 'rack' in bucket host-a" },
	{ T D0 "bucket host-a {\n\tid -2\n\ttype osd\n\titem osd.0\n}\n",
	  "line 9: bucket host-a: type 'osd' is the device type" },
	{ T D0 "bucket host-a {\n\ttype host\n\titem osd.0\n}\n",
	  "line 7: bucket host-a has no id" },
	{ T D0 "bucket host-a {\n\tid -2\n\titem osd.0\n}\n",
	  "line 7: bucket host-a has no type" },
	{ T D0 "bucket host-a {\n\tid -2\n\tid -3\n}\n",
	  "line 9: bucket host-a: id given twice" },
	{ T D0 "bucket host-a {\n\ttype host\n\ttype root\n}\n",
	  "line 9: bucket host-a: type given twice" },
	{ T D0 "bucket host-a {\n\tid 0\n}\n",
	  "line 8: bucket host-a: id 0 out of range (-1..-262144)" },
	{ T D0 "bucket host-a {\n\tid -262145\n}\n",
	  "line 8: bucket host-a: id -262145 out of range (-1..-262144)" },
	{ T D0 "bucket host-a {\n\tid minus2\n}\n",
	  "line 8: bucket host-a: bad id 'minus2'" },
	{ T D0 D1 HA "bucket host-b {\n\tid -2\n}\n",
	  "line 14: duplicate bucket id -2 (bucket host-a)" },
	{ T D0 "bucket osd.0 {\n\tid -2\n}\n",
	  "line 7: duplicate name 'osd.0'" },
	{ T D0 HA "device 1 host-a weight 1\n",
	  "line 12: duplicate name 'host-a'" },
	{ T D0 "bucket host-a {\n\tid -2\n\ttype host\n}\n",
	  "line 7: bucket host-a has no device under it" },
	/* failure domains never nest: a host inside a host */
	{ T D0 HA "bucket host-b {\n\tid -3\n\ttype host\n\titem host-a\n}\n",
	  "line 16: bucket -3 (host-b): holds a bucket of its own type 'host'; buckets of one type must not nest" },
	{ T D0 "bucket host-a {\n\tid -2\n\ttype host\n\titem host-a\n}\n",
	  "line 10: unknown item 'host-a' in bucket host-a" },
	{ T D0 "bucket root {\n\tid -1\n\ttype root\n\titem host-a\n}\n" HA,
	  "line 10: unknown item 'host-a' in bucket root" },
	{ T D0 "bucket host-a {\n\tid -2\n\tweight 1\n}\n",
	  "line 9: unexpected 'weight' in bucket host-a" },
	{ T D0 "bucket host-a {\n\tid -2\n\t{\n}\n",
	  "line 9: unexpected '{' in bucket host-a" },
	{ T D0 "bucket host-a {\n\tid -2\n",
	  "line 8: unexpected end of input in bucket host-a" },
	{ T D0 "bucket host-a {\n\tid",
	  "line 8: unexpected end of input (expected a bucket id)" },
	{ T D0 "bucket host-a\n\tid -2\n", "line 8: expected '{', got 'id'" },
	{ T D0 "bucket {\n", "line 7: expected a bucket name, got '{'" },
	/* rules */
	{ T D0 HA "rule r {\n\tid 0\n\ttake nowhere\n\tchooseleaf host\n}\n",
	  "line 14: rule r: unknown bucket 'nowhere'" },
	{ T D0 HA "rule r {\n\tid 0\n\ttake osd.0\n\tchooseleaf host\n}\n",
	  "line 14: rule r: 'osd.0' is a device, not a bucket" },
	{ T D0 HA "rule r {\n\tid 0\n\ttake host-a\n\tchooseleaf rack\n}\n",
	  "line 15: rule r: unknown type 'rack'" },
	{ T D0 HA "rule r {\n\tid 0\n\ttake host-a\n\tchooseleaf osd\n}\n",
	  "line 15: rule r: chooseleaf needs a failure domain type, not the "
	  "device type 'osd'" },
	{ T D0 HA "rule r {\n\tid 0\n\ttake host-a\n\tchoose host\n}\n",
	  "line 15: rule r: choose picks devices; its type must be 'osd'" },
	{ T D0 HA "rule r {\n\tid 0\n\ttake host-a\n\tchoose osd\n"
	  "\tchoose osd\n}\n",
	  "line 16: rule r: more than one choose or chooseleaf step" },
	{ T D0 HA "rule r {\n\ttake host-a\n\tchoose osd\n}\n",
	  "line 12: rule r has no id" },
	{ T D0 HA "rule r {\n\tid 0\n\tchoose osd\n}\n",
	  "line 12: rule r has no take" },
	{ T D0 HA "rule r {\n\tid 0\n\ttake host-a\n}\n",
	  "line 12: rule r has no choose or chooseleaf step" },
	{ T D0 HA "rule r {\n\tid 256\n}\n",
	  "line 13: rule r: id 256 out of range (0..255)" },
	{ T D0 HA "rule r {\n\tid -1\n}\n",
	  "line 13: rule r: id -1 out of range (0..255)" },
	{ T D0 HA "rule r {\n\tid 0\n\tid 1\n}\n",
	  "line 14: rule r: id given twice" },
	{ T D0 HA "rule r {\n\tid one\n}\n", "line 13: rule r: bad id 'one'" },
	{ T D0 HA "rule r {\n\ttake host-a\n\ttake host-a\n}\n",
	  "line 14: rule r: take given twice" },
	{ T D0 HA "rule r { id 0 take host-a choose osd }\n"
	  "rule s { id 0 take host-a choose osd }\n",
	  "line 13: duplicate rule id 0 (rule r)" },
	{ T D0 HA "rule r { id 0 take host-a choose osd }\n"
	  "rule r { id 1 take host-a choose osd }\n",
	  "line 13: duplicate rule name 'r'" },
	{ T D0 HA "rule r {\n\tid 0\n\ttake host-a\n\tchooseleaf host\n}\n",
	  "line 15: rule r: bucket host-a holds no host" },
	{ T D0 HA "bucket default {\n\tid -1\n\ttype root\n\titem host-a\n}\n"
	  "rule r {\n\tid 0\n\ttake default\n\tchooseleaf root\n}\n",
	  "line 20: rule r: bucket default holds no root" },
	{ T D0 HA "rule r {\n\tid 0\n\tstep x\n}\n",
	  "line 14: unexpected 'step' in rule r" },
	{ T D0 HA "rule r {\n\tid 0\n",
	  "line 13: unexpected end of input in rule r" },
	{ D0 "bucket b {\n\tid -1\n\ttype host\n}\n",
	  "line 4: unknown type 'host' in bucket b" },
};

START_TEST(test_text_errors)
{
	int failed = 0;

	for (size_t i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]);
	     i++) {
		const struct text_case *c = &text_cases[i];
		char err[512] = "";
		struct topo *t = (struct topo *)&failed; /* must be reset */
		int rc = topo_compile(c->text, strlen(c->text), &t, err,
				      sizeof(err));

		if (rc >= 0 || t != NULL || strcmp(err, c->err) != 0) {
			fprintf(stderr, "text case %zu: rc %d\n  got  '%s'\n"
				"  want '%s'\n", i, rc, err, c->err);
			failed++;
			if (rc == 0)
				topo_free(t);
		} else {
			ck_assert_int_eq(rc, -EINVAL);
		}
	}
	ck_assert_int_eq(failed, 0);
}
END_TEST

START_TEST(test_text_nul_byte)
{
	static const char text[] = T "device 0 osd.0 weight 1\0\n";
	char err[256] = "";
	struct topo *t = NULL;

	ck_assert_int_eq(topo_compile(text, sizeof(text) - 1, &t, err,
				      sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "line 6: unexpected byte 0x00");
	/* No buffer for the reason is fine too. */
	ck_assert_int_eq(topo_compile(text, sizeof(text) - 1, &t, NULL, 0),
			 -EINVAL);
	ck_assert_int_eq(topo_compile(NULL, 5, &t, err, sizeof(err)),
			 -EINVAL);
	/* Only the first len bytes count. */
	t = compile_ok(T);
	ck_assert_uint_eq(t->ndevices, 0);
	topo_free(t);
	ck_assert_int_eq(topo_compile(T D0, strlen(T) + 9, &t, err,
				      sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "line 6: unexpected end of input (expected "
			 "a device name)");
}
END_TEST

/* ---- Binary errors --------------------------------------------------------*/

/* A hand-built topo (not from a constructor, no index), valid until a
 * test breaks it; topo_encode writes whatever it holds. */
struct hand {
	char *types[4];
	struct topo_device dev[3];
	struct topo_bucket bkt[3];
	struct topo_rule rule[2];
	struct topo t;
};

static void
hand_init(struct hand *h)
{
	memset(h, 0, sizeof(*h));
	h->types[0] = "osd";
	h->types[1] = "host";
	h->types[2] = "root";
	h->dev[0] = (struct topo_device){ 0, "osd.0", 0x10000, -2 };
	h->dev[1] = (struct topo_device){ 1, "osd.1", 0x28000, -2 };
	h->dev[2] = (struct topo_device){ 2, "osd.2", 0x10000, -3 };
	h->bkt[0] = (struct topo_bucket){ -2, 1, "host-a", -1, 0 };
	h->bkt[1] = (struct topo_bucket){ -3, 1, "host-b", -1, 0 };
	h->bkt[2] = (struct topo_bucket){ -1, 2, "default", 0, 0 };
	h->rule[0] = (struct topo_rule){ 0, "replicated", -1, 1,
					 TSR_RULE_CHOOSELEAF };
	h->rule[1] = (struct topo_rule){ 1, "flat", -1, 0, TSR_RULE_CHOOSE };
	h->t.ntypes = 3;
	h->t.types = h->types;
	h->t.ndevices = 3;
	h->t.devices = h->dev;
	h->t.nbuckets = 3;
	h->t.buckets = h->bkt;
	h->t.nrules = 2;
	h->t.rules = h->rule;
}

/* Encode h, decode it; the decode's rc, its reason in err. */
static int
hand_decode(const struct hand *h, char *err, size_t errlen)
{
	uint8_t *buf;
	size_t len;
	struct topo *t = (struct topo *)&len;
	int rc;

	buf = encode_ok(&h->t, &len);
	err[0] = '\0';
	rc = topo_decode(buf, len, &t, err, errlen);
	if (rc == 0) {
		/* A blob that decodes re-encodes to itself. */
		uint8_t *again;
		size_t alen;

		ck_assert_ptr_nonnull(t);
		check_invariants(t);
		again = encode_ok(t, &alen);
		assert_same_blob(buf, len, again, alen);
		free(again);
		topo_free(t);
	} else {
		ck_assert_ptr_null(t);
	}
	free(buf);
	return rc;
}

static void
swap_dev(struct hand *h, int a, int b)
{
	struct topo_device x = h->dev[a];

	h->dev[a] = h->dev[b];
	h->dev[b] = x;
}

static void
swap_bkt(struct hand *h, int a, int b)
{
	struct topo_bucket x = h->bkt[a];

	h->bkt[a] = h->bkt[b];
	h->bkt[b] = x;
}

enum mut {
	M_NONE, M_DEV_PARENT, M_BKT_PARENT, M_BKT_PARENT_POS, M_CYCLE,
	M_SELF_CYCLE, M_BKT_ORDER, M_ROOT_FIRST, M_DEV_ORDER, M_DEV_DUP,
	M_BKT_DUP, M_NAME_DUP, M_TYPE_DUP, M_WEIGHT0, M_BKT_TYPE0,
	M_BKT_TYPE_UNKNOWN, M_EMPTY, M_DEV_ID_BIG, M_DEV_ID_NEG, M_BKT_ID_0,
	M_BKT_ID_MIN, M_RULE_ROOT, M_RULE_ROOT_DEV, M_RULE_MODE, M_RULE_DOMAIN,
	M_RULE_LEAF_OSD, M_RULE_CHOOSE_HOST, M_RULE_HOLDS_NONE, M_RULE_ORDER,
	M_RULE_DUP, M_RULE_NAME_DUP, M_RULE_ID_BIG, M_DEV_NAME_SPACE,
	M_DEV_NAME_EMPTY, M_DEV_NAME_LONG, M_TYPE_NAME_EMPTY, M_NO_TYPES,
	M_RULE_NAME_BAD, M_BKT_NAME_BAD, M_UNATTACHED, M_NO_RULES,
};

static const struct { enum mut m; const char *err; } hand_cases[] = {
	{ M_NONE, NULL },
	{ M_UNATTACHED, NULL },
	{ M_NO_RULES, NULL },
	{ M_DEV_PARENT, "device 2: parent -9 is not a bucket" },
	{ M_BKT_PARENT, "bucket -3: parent -9 is not a bucket" },
	{ M_BKT_PARENT_POS, "bucket -3: parent 5 is not a bucket" },
	{ M_CYCLE, "bucket -2: parent chain forms a cycle" },
	{ M_SELF_CYCLE, "bucket -3: parent chain forms a cycle" },
	{ M_BKT_ORDER, "bucket -3: out of canonical order (bucket -2 comes "
		       "first)" },
	{ M_ROOT_FIRST, "bucket -1: out of canonical order (bucket -2 comes "
			"first)" },
	{ M_DEV_ORDER, "device 0: out of order (after device 1)" },
	{ M_DEV_DUP, "device 0: duplicate id" },
	{ M_BKT_DUP, "bucket -2: duplicate id" },
	{ M_NAME_DUP, "device 2: duplicate name 'host-a' (also bucket -2)" },
	{ M_TYPE_DUP, "type 2: duplicate name 'host' (also type 1)" },
	{ M_WEIGHT0, "device 1: weight must be > 0" },
	{ M_BKT_TYPE0, "bucket -2: type 0 is the device type" },
	{ M_BKT_TYPE_UNKNOWN, "bucket -2: unknown type 3" },
	{ M_EMPTY, "bucket -3: no device under it" },
	{ M_DEV_ID_BIG, "device 1048576: id out of range (0..1048575)" },
	{ M_DEV_ID_NEG, "device -5: id out of range (0..1048575)" },
	{ M_BKT_ID_0, "bucket 0: id out of range (-1..-262144)" },
	{ M_BKT_ID_MIN, "bucket -2147483648: id out of range (-1..-262144)" },
	{ M_RULE_ROOT, "rule 0: root -9 is not a bucket" },
	{ M_RULE_ROOT_DEV, "rule 0: root 1 is not a bucket" },
	{ M_RULE_MODE, "rule 0: unknown mode 0" },
	{ M_RULE_DOMAIN, "rule 0: unknown domain type 5" },
	{ M_RULE_LEAF_OSD, "rule 0: chooseleaf needs a failure domain type, "
			   "not the device type" },
	{ M_RULE_CHOOSE_HOST, "rule 1: choose picks devices; its domain type "
			      "must be 0, not 1" },
	{ M_RULE_HOLDS_NONE, "rule 0: bucket -2 holds no host" },
	{ M_RULE_ORDER, "rule 0: out of order (after rule 1)" },
	{ M_RULE_DUP, "rule 0: duplicate id" },
	{ M_RULE_NAME_DUP, "rule 1: duplicate name 'replicated' (also rule 0)" },
	{ M_RULE_ID_BIG, "rule 300: id out of range (0..255)" },
	{ M_DEV_NAME_SPACE, "device record 0: bad name" },
	{ M_DEV_NAME_EMPTY, "device record 0: bad name" },
	{ M_DEV_NAME_LONG, "device record 0: bad name" },
	{ M_TYPE_NAME_EMPTY, "type record 1: bad name" },
	{ M_NO_TYPES, "type count 0 out of range (1..32)" },
	{ M_RULE_NAME_BAD, "rule record 1: bad name" },
	{ M_BKT_NAME_BAD, "bucket record 2: bad name" },
};

static void
hand_mutate(struct hand *h, enum mut m)
{
	switch (m) {
	case M_NONE:
		break;
	case M_UNATTACHED:
		h->dev[1].parent = 0;
		break;
	case M_NO_RULES:
		h->t.nrules = 0;
		break;
	case M_DEV_PARENT:
		h->dev[2].parent = -9;
		break;
	case M_BKT_PARENT:
		h->bkt[1].parent = -9;
		break;
	case M_BKT_PARENT_POS:
		h->bkt[1].parent = 5;
		break;
	case M_CYCLE:
		h->bkt[0].parent = -3;
		h->bkt[1].parent = -2;
		break;
	case M_SELF_CYCLE:
		h->bkt[1].parent = -3;
		break;
	case M_BKT_ORDER:
		swap_bkt(h, 0, 1);
		break;
	case M_ROOT_FIRST:
		swap_bkt(h, 0, 2);      /* -1 -3 -2 */
		break;
	case M_DEV_ORDER:
		swap_dev(h, 0, 1);
		break;
	case M_DEV_DUP:
		h->dev[1].id = 0;
		break;
	case M_BKT_DUP:
		h->bkt[1].id = -2;
		break;
	case M_NAME_DUP:
		h->dev[2].name = "host-a";
		break;
	case M_TYPE_DUP:
		h->types[2] = "host";
		break;
	case M_WEIGHT0:
		h->dev[1].weight = 0;
		break;
	case M_BKT_TYPE0:
		h->bkt[0].type = 0;
		break;
	case M_BKT_TYPE_UNKNOWN:
		h->bkt[0].type = 3;
		break;
	case M_EMPTY:
		h->dev[2].parent = -2;
		break;
	case M_DEV_ID_BIG:
		h->dev[2].id = 1 << 20;
		break;
	case M_DEV_ID_NEG:
		h->dev[0].id = -5;
		break;
	case M_BKT_ID_0:
		h->bkt[2].id = 0;
		break;
	case M_BKT_ID_MIN:
		h->bkt[2].id = INT32_MIN;
		break;
	case M_RULE_ROOT:
		h->rule[0].root = -9;
		break;
	case M_RULE_ROOT_DEV:
		h->rule[0].root = 1;
		break;
	case M_RULE_MODE:
		h->rule[0].mode = 0;
		break;
	case M_RULE_DOMAIN:
		h->rule[0].domain_type = 5;
		break;
	case M_RULE_LEAF_OSD:
		h->rule[0].domain_type = 0;
		break;
	case M_RULE_CHOOSE_HOST:
		h->rule[1].domain_type = 1;
		break;
	case M_RULE_HOLDS_NONE:
		h->rule[0].root = -2;
		break;
	case M_RULE_ORDER:
		h->rule[0].id = 1;
		h->rule[1].id = 0;
		break;
	case M_RULE_DUP:
		h->rule[1].id = 0;
		break;
	case M_RULE_NAME_DUP:
		h->rule[1].name = "replicated";
		break;
	case M_RULE_ID_BIG:
		h->rule[1].id = 300;
		break;
	case M_DEV_NAME_SPACE:
		h->dev[0].name = "osd 0";
		break;
	case M_DEV_NAME_EMPTY:
		h->dev[0].name = "";
		break;
	case M_DEV_NAME_LONG:
		h->dev[0].name = LONG64;
		break;
	case M_TYPE_NAME_EMPTY:
		h->types[1] = "";
		break;
	case M_NO_TYPES:
		h->t.ntypes = 0;
		break;
	case M_RULE_NAME_BAD:
		h->rule[1].name = "fl/at";
		break;
	case M_BKT_NAME_BAD:
		h->bkt[2].name = "déjà";
		break;
	}
}

START_TEST(test_decode_validation)
{
	int failed = 0;

	for (size_t i = 0; i < sizeof(hand_cases) / sizeof(hand_cases[0]);
	     i++) {
		struct hand h;
		char err[256];
		int rc;

		hand_init(&h);
		hand_mutate(&h, hand_cases[i].m);
		rc = hand_decode(&h, err, sizeof(err));
		if (hand_cases[i].err == NULL) {
			if (rc != 0) {
				fprintf(stderr, "decode case %zu: rc %d '%s'\n",
					i, rc, err);
				failed++;
			}
		} else if (rc >= 0 || strcmp(err, hand_cases[i].err) != 0) {
			fprintf(stderr, "decode case %zu: rc %d\n  got  '%s'\n"
				"  want '%s'\n", i, rc, err, hand_cases[i].err);
			failed++;
		}
	}
	ck_assert_int_eq(failed, 0);
}
END_TEST

/* The same model from the generic form, the hand-built topo and text. */
START_TEST(test_models_agree)
{
	struct hand h;
	struct topo *t1, *t2;
	uint8_t *b0, *b1, *b2;
	size_t l0, l1, l2;
	char *text;

	hand_init(&h);
	b0 = encode_ok(&h.t, &l0);
	/* decompile works on a hand-built topo (no index) too */
	text = decompile_ok(&h.t);
	t1 = compile_ok(text);
	b1 = encode_ok(t1, &l1);
	assert_same_blob(b0, l0, b1, l1);
	t2 = decode_ok(b0, l0);
	b2 = encode_ok(t2, &l2);
	assert_same_blob(b0, l0, b2, l2);
	ck_assert_ptr_eq(topo_bucket(&h.t, -3), &h.bkt[1]);
	ck_assert_ptr_null(topo_bucket(&h.t, -4));
	free(text);
	free(b0);
	free(b1);
	free(b2);
	topo_free(t1);
	topo_free(t2);
}
END_TEST

/* Raw blobs: an envelope around what body writes, and its checksum. */
static uint8_t *
raw_blob(uint8_t version, uint8_t compat,
	 void (*body)(struct tsr_enc *, uint32_t), uint32_t arg, size_t *len)
{
	struct tsr_enc e;
	size_t mark;

	tsr_enc_init(&e);
	mark = tsr_enc_begin_struct(&e, version, compat);
	if (body != NULL)
		body(&e, arg);
	tsr_enc_end_struct(&e, mark);
	seal(&e);
	return take_ok(&e, len);
}

static void
body_magic(struct tsr_enc *e, uint32_t magic)
{
	tsr_enc_u32(e, magic);
	tsr_enc_u32(e, 1);
	tsr_enc_str(e, "osd");
	tsr_enc_u32(e, 0);
	tsr_enc_u32(e, 0);
	tsr_enc_u32(e, 0);
}

static void
body_types(struct tsr_enc *e, uint32_t n)
{
	tsr_enc_u32(e, TOPO_MAGIC);
	tsr_enc_u32(e, n);
	for (uint32_t i = 0; i < 3; i++)
		tsr_enc_str(e, "t");
}

static void
body_devices(struct tsr_enc *e, uint32_t n)
{
	tsr_enc_u32(e, TOPO_MAGIC);
	tsr_enc_u32(e, 1);
	tsr_enc_str(e, "osd");
	tsr_enc_u32(e, n);
	tsr_enc_i32(e, 0);
	tsr_enc_str(e, "osd.0");
	tsr_enc_u32(e, 0x10000);
	tsr_enc_i32(e, 0);
}

static void
body_buckets(struct tsr_enc *e, uint32_t n)
{
	tsr_enc_u32(e, TOPO_MAGIC);
	tsr_enc_u32(e, 1);
	tsr_enc_str(e, "osd");
	tsr_enc_u32(e, 0);
	tsr_enc_u32(e, n);
}

static void
body_rules(struct tsr_enc *e, uint32_t n)
{
	body_buckets(e, 0);
	tsr_enc_u32(e, n);
}

static void
body_hand(struct tsr_enc *e, uint32_t extra)
{
	struct hand h;

	hand_init(&h);
	write_fields(e, &h.t);
	/* A newer writer's fields, which this reader must skip. */
	for (uint32_t i = 0; i < extra; i++)
		tsr_enc_u32(e, 0xA5A50000u + i);
}

static void
expect_decode_err(const uint8_t *buf, size_t len, int want_rc,
		  const char *want)
{
	char err[256] = "";
	struct topo *t = (struct topo *)&err;
	uint8_t *copy = dup_exact(buf, len);
	int rc = topo_decode(copy, len, &t, err, sizeof(err));

	free(copy);
	ck_assert_ptr_null(t);
	ck_assert_int_eq(rc, want_rc);
	if (want == NULL) /* damage: the checksum says so */
		ck_assert_msg(strncmp(err, "checksum mismatch (crc32c 0x", 28) == 0 &&
			      strstr(err, "the map is damaged or truncated"), "%s", err);
	else
		ck_assert_str_eq(err, want);
}

START_TEST(test_decode_limits)
{
	uint8_t *b;
	size_t len;
	struct topo *t;

	/* The minimal map (one type, nothing else) is valid. */
	b = raw_blob(2, 2, body_magic, TOPO_MAGIC, &len);
	t = decode_ok(b, len);
	ck_assert_uint_eq(t->ntypes, 1);
	ck_assert_uint_eq(t->ndevices, 0);
	ck_assert_uint_eq(t->max_devices, 0);
	topo_free(t);
	free(b);

	b = raw_blob(2, 2, body_magic, 0x12345678u, &len);
	expect_decode_err(b, len, -EBADMSG,
			  "bad magic 0x12345678 (want 0x314d5054)");
	free(b);
	b = raw_blob(2, 2, NULL, 0, &len);
	expect_decode_err(b, len, -EBADMSG, "truncated before the magic");
	free(b);
	b = raw_blob(2, 2, body_types, 33, &len);
	expect_decode_err(b, len, -EBADMSG,
			  "type count 33 exceeds the limit 32");
	free(b);
	b = raw_blob(2, 2, body_types, 4, &len);
	expect_decode_err(b, len, -EBADMSG,
			  "type count 4 exceeds the data (15 bytes left)");
	free(b);
	b = raw_blob(2, 2, body_devices, 0xFFFFFFFFu, &len);
	expect_decode_err(b, len, -EBADMSG,
			  "device count 4294967295 exceeds the limit 1048576");
	free(b);
	b = raw_blob(2, 2, body_devices, TOPO_MAX_DEVICES, &len);
	expect_decode_err(b, len, -EBADMSG,
			  "device count 1048576 exceeds the data (21 bytes "
			  "left)");
	free(b);
	b = raw_blob(2, 2, body_devices, 2, &len);
	expect_decode_err(b, len, -EBADMSG,
			  "device count 2 exceeds the data (21 bytes left)");
	free(b);
	b = raw_blob(2, 2, body_buckets, TOPO_MAX_BUCKETS + 1, &len);
	expect_decode_err(b, len, -EBADMSG,
			  "bucket count 262145 exceeds the limit 262144");
	free(b);
	b = raw_blob(2, 2, body_buckets, 1, &len);
	expect_decode_err(b, len, -EBADMSG,
			  "bucket count 1 exceeds the data (0 bytes left)");
	free(b);
	b = raw_blob(2, 2, body_rules, 257, &len);
	expect_decode_err(b, len, -EBADMSG,
			  "rule count 257 exceeds the limit 256");
	free(b);
	/* no rule count */
	b = raw_blob(2, 2, body_buckets, 0, &len);
	expect_decode_err(b, len, -EBADMSG, "truncated before the rule count");
	free(b);
	expect_decode_err(NULL, 0, -EBADMSG, "truncated: 0 bytes, less than an "
			  "envelope and its checksum");
	expect_decode_err((const uint8_t *)"", 0, -EBADMSG, "truncated: 0 bytes, "
			  "less than an envelope and its checksum");
	expect_decode_err((const uint8_t *)"\2\2\0\0\0\0\0\0\0", 9, -EBADMSG,
			  "truncated: 9 bytes, less than an envelope and its "
			  "checksum");
}
END_TEST

START_TEST(test_envelope_versions)
{
	uint8_t *ref, *b, *again, *longer;
	size_t rl, len, al;
	struct topo *t;
	struct hand h;

	hand_init(&h);
	ref = encode_ok(&h.t, &rl);

	/* A newer writer (v3, still compat 2) appended fields. */
	b = raw_blob(3, 2, body_hand, 3, &len);
	ck_assert_uint_eq(len, rl + 12);
	t = decode_ok(b, len);
	again = encode_ok(t, &al);
	assert_same_blob(ref, rl, again, al);
	free(again);
	topo_free(t);
	free(b);
	/* ... and the same in a v2 envelope. */
	b = raw_blob(2, 2, body_hand, 5, &len);
	t = decode_ok(b, len);
	topo_free(t);
	free(b);
	/* A body shorter by even one byte of a field is not skippable. */
	b = raw_blob(2, 2, body_hand, 0, &len);
	assert_same_blob(ref, rl, b, len);
	free(b);

	/* A compat this reader does not know. */
	b = raw_blob(3, 3, body_hand, 0, &len);
	expect_decode_err(b, len, -EOPNOTSUPP, "map needs a newer decoder "
			  "(envelope compat above 2)");
	free(b);
	/* compat above version is malformed */
	b = raw_blob(2, 3, body_hand, 0, &len);
	expect_decode_err(b, len, -EBADMSG, "truncated or malformed envelope");
	free(b);
	/* a version 1 envelope, checksummed all the same: not a map any
	 * version wrote */
	b = raw_blob(1, 1, body_hand, 0, &len);
	expect_decode_err(b, len, -EBADMSG, "envelope version 1: not a map with "
			  "a checksum (version 2 and later)");
	free(b);

	/* Bytes between the envelope and the checksum are an error, and so
	 * are bytes after the checksum. */
	longer = malloc(rl + 4);
	ck_assert_ptr_nonnull(longer);
	memcpy(longer, ref, rl - 4);
	memset(longer + rl - 4, 0, 4);
	reseal(longer, rl + 1);
	expect_decode_err(longer, rl + 1, -EBADMSG,
			  "trailing data after the envelope (1 bytes)");
	reseal(longer, rl + 4);
	expect_decode_err(longer, rl + 4, -EBADMSG,
			  "trailing data after the envelope (4 bytes)");
	memcpy(longer, ref, rl);
	longer[rl] = 0;
	expect_decode_err(longer, rl + 1, -EBADMSG, NULL);
	free(longer);
	free(ref);
}
END_TEST

/* ---- Hostile blobs --------------------------------------------------------*/

/* Re-wrap body[0..n) in a well-formed v2 envelope with its checksum:
 * truncation inside the fields, which the envelope's own length check
 * (and the checksum) would otherwise hide. */
static uint8_t *
rewrap(const uint8_t *body, size_t n, size_t *len)
{
	uint8_t *b = malloc(n + 10);

	ck_assert_ptr_nonnull(b);
	b[0] = 2;
	b[1] = 2;
	for (int i = 0; i < 4; i++)
		b[2 + i] = (uint8_t)(n >> (8 * i));
	if (n > 0)
		memcpy(b + 6, body, n);
	*len = n + 10;
	reseal(b, *len);
	return b;
}

static void
check_truncations(const uint8_t *blob, size_t len)
{
	for (size_t n = 0; n < len; n++) {
		char err[256] = "";
		struct topo *t = NULL;
		uint8_t *copy = dup_exact(blob, n);
		int rc = topo_decode(copy, n, &t, err, sizeof(err));

		free(copy);
		if (rc >= 0)
			ck_abort_msg("prefix of %zu bytes decoded", n);
		REQUIRE(t == NULL);
		REQUIRE(strncmp(err, "truncated: ", 11) == 0 ||
			strncmp(err, "checksum mismatch", 17) == 0);
	}
	for (size_t n = 0; n < len - 10; n++) {
		char err[256] = "";
		struct topo *t = NULL;
		size_t wl;
		uint8_t *w = rewrap(blob + 6, n, &wl);
		int rc = topo_decode(w, wl, &t, err, sizeof(err));

		free(w);
		if (rc >= 0)
			ck_abort_msg("body prefix of %zu bytes decoded", n);
		REQUIRE(t == NULL);
		REQUIRE(err[0] != '\0');
	}
}

START_TEST(test_every_truncation_fails)
{
	struct topo *t;
	uint8_t *b;
	size_t len;
	struct gen m;

	b = hand_blob(&len);
	check_truncations(b, len);
	free(b);

	rng_state = 7;
	gen_build(&m, 6, 3, 2);
	t = generic_ok(&m.g);
	b = encode_ok(t, &len);
	check_truncations(b, len);
	free(b);
	topo_free(t);
	gen_free(&m);
}
END_TEST

/* A corrupted blob either fails or decodes to a valid model that encodes
 * back to (a prefix of) the same body. */
static void
corrupt_loop(const uint8_t *blob, size_t len, uint32_t iters,
	     uint32_t *decoded)
{
	uint8_t *copy = malloc(len);

	ck_assert_ptr_nonnull(copy);
	for (uint32_t it = 0; it < iters; it++) {
		char err[256] = "";
		struct topo *t = NULL;
		uint32_t flips = 1 + (uint32_t)(rng() % 4);
		int rc;

		memcpy(copy, blob, len);
		for (uint32_t f = 0; f < flips; f++) {
			size_t at = (size_t)(rng() % len);

			switch (rng() % 4) {
			case 0:
				copy[at] ^= (uint8_t)(1u << (rng() % 8));
				break;
			case 1:
				copy[at] = (uint8_t)rng();
				break;
			case 2:
				copy[at] = 0;
				break;
			default:
				copy[at] = 0xff;
				break;
			}
		}
		/* past the checksum, to the fields (the checksum's own test
		 * is test_unchecked_placement_map_refused) */
		reseal(copy, len);
		rc = topo_decode(copy, len, &t, err, sizeof(err));
		if (rc != 0) {
			REQUIRE(t == NULL);
			REQUIRE(err[0] != '\0');
			continue;
		}
		(*decoded)++;
		check_invariants(t);
		{
			uint8_t *again;
			size_t al;
			char *text;
			struct topo *t2;

			/* What it decoded is a prefix of the body: a count
			 * that shrank leaves records that read as a newer
			 * writer's fields, skipped as they must be. */
			again = encode_ok(t, &al);
			REQUIRE(al <= len);
			REQUIRE(memcmp(again + 6, copy + 6, al - 10) == 0);
			text = decompile_ok(t);
			t2 = compile_ok(text);
			free(text);
			topo_free(t2);
			free(again);
		}
		topo_free(t);
	}
	free(copy);
}

/* Bug: binary maps carried no checksum, so a flipped bit in a name (or a
 * weight, an id) decoded as another valid map.  Every single-bit flip
 * anywhere in a map is now refused as damage, and a name flipped into
 * another valid name is among them. */
START_TEST(test_unchecked_placement_map_refused)
{
	uint8_t *b, *copy;
	size_t len, at;
	struct topo *t;
	char err[256];
	const char *name = "osd.1";

	b = hand_blob(&len);
	copy = malloc(len);
	ck_assert_ptr_nonnull(copy);
	for (size_t i = 0; i < len; i++)
		for (int bit = 0; bit < 8; bit++) {
			memcpy(copy, b, len);
			copy[i] ^= (uint8_t)(1u << bit);
			t = NULL;
			err[0] = '\0';
			int rc = topo_decode(copy, len, &t, err, sizeof(err));
			if (rc != -EBADMSG || t != NULL ||
			    strncmp(err, "checksum mismatch", 17) != 0)
				ck_abort_msg("bit %d of byte %zu flipped: rc %d, '%s'",
					     bit, i, rc, err);
		}
	/* "osd.1" -> "osd.9", one bit: the map it would be is valid
	 * (resealed, it decodes), so only the checksum tells */
	for (at = 0; at + 5 <= len && memcmp(b + at, name, 5) != 0; at++)
		;
	ck_assert_uint_lt(at + 5, len);
	memcpy(copy, b, len);
	copy[at + 4] ^= 8;
	expect_decode_err(copy, len, -EBADMSG, NULL);
	reseal(copy, len);
	t = decode_ok(copy, len);
	topo_free(t);
	free(copy);
	free(b);
}
END_TEST

START_TEST(test_random_corruption)
{
	uint32_t decoded = 0;
	uint8_t *b;
	size_t len;

	rng_state = 0x1234567887654321ull;
	b = hand_blob(&len);
	corrupt_loop(b, len, 20000, &decoded);
	free(b);
	/* Some flips (a weight, the version byte) leave a valid map. */
	ck_assert_uint_gt(decoded, 0);
	ck_assert_uint_lt(decoded, 20000);
}
END_TEST

/* Random bodies behind a valid envelope and magic. */
START_TEST(test_random_bodies)
{
	uint8_t body[256];

	rng_state = 99;
	for (uint32_t it = 0; it < 5000; it++) {
		size_t n = 4 + (size_t)(rng() % (sizeof(body) - 4)), wl;
		uint8_t *w;
		struct topo *t = NULL;
		char err[256];

		for (size_t i = 0; i < n; i++)
			body[i] = (uint8_t)rng();
		/* Small counts, so the records get read. */
		memcpy(body, "TPM1", 4);
		if (n > 8) {
			body[4] = (uint8_t)(rng() % 4);
			body[5] = body[6] = body[7] = 0;
		}
		w = rewrap(body, n, &wl);
		if (topo_decode(w, wl, &t, err, sizeof(err)) == 0)
			topo_free(t);
		free(w);
	}
}
END_TEST

/* ---- Generic topology -----------------------------------------------------*/

struct gcase {
	struct tsr_topo_item items[7];
	struct tsr_topo_rule rules[2];
	const char *types[4];
	struct tsr_topology g;
};

static void
gcase_init(struct gcase *c)
{
	memset(c, 0, sizeof(*c));
	c->types[0] = "osd";
	c->types[1] = "host";
	c->types[2] = "root";
	/* shuffled on purpose */
	c->items[0] = (struct tsr_topo_item){ -1, 0, 2, 0, "default" };
	c->items[1] = (struct tsr_topo_item){ 2, -3, 0, 0x10000, "osd.2" };
	c->items[2] = (struct tsr_topo_item){ -3, -1, 1, 0, "host-b" };
	c->items[3] = (struct tsr_topo_item){ 0, -2, 0, 0x10000, "osd.0" };
	c->items[4] = (struct tsr_topo_item){ -2, -1, 1, 12345, "host-a" };
	c->items[5] = (struct tsr_topo_item){ 1, -2, 0, 0x28000, "osd.1" };
	c->items[6] = (struct tsr_topo_item){ -4, -1, 1, 0, "host-c" };
	/* CHOOSE's domain type is ignored */
	c->rules[0] = (struct tsr_topo_rule){ 1, "flat", -1, 2,
					      TSR_RULE_CHOOSE };
	c->rules[1] = (struct tsr_topo_rule){ 0, "replicated", -1, 1,
					      TSR_RULE_CHOOSELEAF };
	c->g = (struct tsr_topology){ 3, c->types, 6, c->items, 2, c->rules };
}

START_TEST(test_generic_matches_hand)
{
	struct gcase c;
	struct hand h;
	struct topo *t;
	uint8_t *a, *b;
	size_t al, bl;
	char *text;

	gcase_init(&c);
	t = generic_ok(&c.g);
	ck_assert_uint_eq(topo_rule(t, 1)->domain_type, 0);
	text = check_roundtrips(t);
	free(text);
	hand_init(&h);
	a = encode_ok(&h.t, &al);
	b = encode_ok(t, &bl);
	assert_same_blob(a, al, b, bl);
	free(a);
	free(b);
	topo_free(t);
}
END_TEST

START_TEST(test_generic_errors)
{
	static const char *const long_name = LONG64;
	static const struct {
		int which;
		const char *err;
	} cases[] = {
		{ 0, "device 0: type 1 is not the device type" },
		{ 1, "bucket -2: type 0 is the device type" },
		{ 2, "bucket -2: unknown type 7" },
		{ 3, "device 0: duplicate id" },
		{ 4, "bucket -3: duplicate id" },
		{ 5, "device 0: duplicate name 'osd.0' (also bucket -2)" },
		{ 6, "bucket -3: parent chain forms a cycle" },
		{ 7, "device 2: parent 5 is not a bucket" },
		{ 8, "bucket -3: parent -9 is not a bucket" },
		{ 9, "device 1: weight must be > 0" },
		{ 10, "bucket -4: no device under it" },
		{ 11, "rule 0: root -9 is not a bucket" },
		{ 12, "rule 0: root 1 is not a bucket" },
		{ 13, "rule 0: unknown mode 7" },
		{ 14, "rule 0: chooseleaf needs a failure domain type, not the "
		      "device type" },
		{ 15, "rule 0: unknown domain type 9" },
		{ 16, "rule 0: bucket -2 holds no host" },
		{ 17, "rule 0: duplicate id" },
		{ 18, "rule 1: duplicate name 'replicated' (also rule 0)" },
		{ 19, "rule 256: id out of range (0..255)" },
		{ 20, "device 0: bad name" },
		{ 21, "device 0: bad name" },
		{ 22, "device 0: bad name" },
		{ 23, "bucket -2: bad name" },
		{ 24, "rule 1: bad name" },
		{ 25, "type 1: bad name" },
		{ 26, "type 2: duplicate name 'host' (also type 1)" },
		{ 27, "type count 0 out of range (1..32)" },
		{ 28, "type count 33 out of range (1..32)" },
		{ 29, "device 1048576: id out of range (0..1048575)" },
		{ 30, "bucket -262145: id out of range (-1..-262144)" },
		{ 31, "too many rules (257, limit 256)" },
		{ 32, "no items" },
		{ 33, "bucket -2: parent chain forms a cycle" },
	};
	int failed = 0;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gcase c;
		char err[256] = "";
		struct topo *t = (struct topo *)&c;
		int rc;

		gcase_init(&c);
		switch (cases[i].which) {
		case 0: c.items[3].type = 1; break;
		case 1: c.items[4].type = 0; break;
		case 2: c.items[4].type = 7; break;
		case 3: c.items[5].id = 0; break;
		case 4: c.items[4].id = -3; break;
		case 5: c.items[4].name = "osd.0"; break;
		case 6: c.items[2].parent = -2; c.items[4].parent = -3; break;
		case 7: c.items[1].parent = 5; break;
		case 8: c.items[2].parent = -9; break;
		case 9: c.items[5].weight = 0; break;
		case 10: c.g.nitems = 7; break;
		case 11: c.rules[1].root = -9; break;
		case 12: c.rules[1].root = 1; break;
		case 13: c.rules[1].mode = 7; break;
		case 14: c.rules[1].domain_type = 0; break;
		case 15: c.rules[1].domain_type = 9; break;
		case 16: c.rules[1].root = -2; break;
		case 17: c.rules[0].id = 0; break;
		case 18: c.rules[0].name = "replicated"; break;
		case 19: c.rules[0].id = 256; break;
		case 20: c.items[3].name = NULL; break;
		case 21: c.items[3].name = "bad name"; break;
		case 22: c.items[3].name = long_name; break;
		case 23: c.items[4].name = NULL; break;
		case 24: c.rules[0].name = NULL; break;
		case 25: c.types[1] = NULL; break;
		case 26: c.types[2] = "host"; break;
		case 27: c.g.ntypes = 0; break;
		case 28: c.g.ntypes = 33; break;
		case 29: c.items[3].id = 1 << 20; break;
		case 30: c.items[4].id = -(1 << 18) - 1; break;
		case 31: c.g.nrules = 257; break;
		case 32: c.g.items = NULL; break;
		case 33: c.items[4].parent = -2; break;
		}
		rc = topo_from_generic(&c.g, &t, err, sizeof(err));
		if (rc >= 0 || t != NULL || strcmp(err, cases[i].err) != 0) {
			fprintf(stderr, "generic case %zu: rc %d\n  got  '%s'\n"
				"  want '%s'\n", i, rc, err, cases[i].err);
			failed++;
			if (rc == 0)
				topo_free(t);
		}
	}
	ck_assert_int_eq(failed, 0);
	{
		char err[64] = "";
		struct topo *t = NULL;

		ck_assert_int_eq(topo_from_generic(NULL, &t, err, sizeof(err)),
				 -EINVAL);
		ck_assert_str_eq(err, "no topology");
	}
}
END_TEST

static Suite *
topo_suite(void)
{
	Suite *s = suite_create("topo");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hand_written_map);
	tcase_add_test(tc, test_binary_layout);
	tcase_add_test(tc, test_canonical_text);
	tcase_add_test(tc, test_canonical_bucket_order);
	tcase_add_test(tc, test_generated_three_levels);
	tcase_add_test(tc, test_generated_four_levels);
	tcase_add_test(tc, test_weight_print_parse);
	tcase_add_test(tc, test_text_errors);
	tcase_add_test(tc, test_text_nul_byte);
	tcase_add_test(tc, test_decode_validation);
	tcase_add_test(tc, test_models_agree);
	tcase_add_test(tc, test_decode_limits);
	tcase_add_test(tc, test_unchecked_placement_map_refused);
	tcase_add_test(tc, test_envelope_versions);
	tcase_add_test(tc, test_every_truncation_fails);
	tcase_add_test(tc, test_random_corruption);
	tcase_add_test(tc, test_random_bodies);
	tcase_add_test(tc, test_generic_matches_hand);
	tcase_add_test(tc, test_generic_errors);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(topo_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
