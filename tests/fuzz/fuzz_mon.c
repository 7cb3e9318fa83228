/* fuzz_mon.c — libFuzzer target for what a monitor decodes from its
 * peers and clients: Raft messages, commands, replies, snapshots of the
 * maps (which a leader sends a lagging monitor); and what every map
 * holder decodes from a monitor: OSD and MDS maps and incrementals, and
 * the subscription messages; and the log entries every monitor applies
 * (commands and decisions, daemons/mon/state.h).
 *
 * The first input byte picks the decoder, the rest is the input: first
 * every message type of the registry (monmsg.h, TSR_MON_MESSAGES, in its
 * order), then snapshots, OSD maps and incrementals, MDS maps and
 * incrementals, log entries, then every OSD message type (osd/osdmsg.h,
 * TSR_OSD_MESSAGES) (modulo their count).  Whatever decodes must encode again and decode to the same
 * thing; nothing may read out of bounds, leak or trip UBSan.  Seeds in
 * tests/fuzz/corpus/mon/ hold one valid input of each kind (a new
 * message type shifts the kinds after the registry: their seeds' first
 * bytes with it).
 */
#include "map/mdsmap.h"
#include "map/osdmap.h"
#include "mon/monmsg.h"
#include "osd/osdmsg.h"
#include "state.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Words that decode as a command go to the monitor's parser, which takes
 * any words. */
static void
classify(const uint8_t *p, size_t n)
{
	struct tsr_mon_cmd c;
	struct tsr_sbuf out;
	char err[256];

	if (tsr_monmsg_cmd_decode(p, n, &c, err, sizeof(err)) < 0)
		return;
	tsr_sbuf_init(&out);
	(void)state_classify((int)c.argc, c.argv, &out);
	tsr_sbuf_release(&out);
	tsr_monmsg_cmd_free(&c);
}

static void
snapshot(const uint8_t *p, size_t n)
{
	struct mon_state s, s2;
	size_t len;
	uint8_t *b;

	state_init(&s);
	if (state_decode(&s, p, n) < 0) {
		state_free(&s);
		return;
	}
	b = state_encode(&s, &len);
	state_init(&s2);
	if (b == NULL || state_decode(&s2, b, len) != 0 ||
	    s2.osdmap.nosds != s.osdmap.nosds || s2.osdmap.npools != s.osdmap.npools ||
	    s2.osdmap.epoch != s.osdmap.epoch || s2.mdsmap.nmds != s.mdsmap.nmds)
		abort();
	/* and the reads over what was decoded */
	struct tsr_sbuf out;
	char *tree[] = { "osd", "tree", NULL }, *ls[] = { "pool", "ls", NULL };
	tsr_sbuf_init(&out);
	state_read(&s2, 2, tree, &out);
	state_read(&s2, 2, ls, &out);
	char *mds[] = { "mds", "stat", NULL };
	state_read(&s2, 2, mds, &out);
	struct mon_health h;
	state_health_init(&h);
	state_health(&s2, &h);
	state_health_release(&h);
	tsr_sbuf_release(&out);
	free(b);
	state_free(&s);
	state_free(&s2);
}

/* A subscription, and the maps header (with data of any length claimed). */
/* Decode what was encoded and encode it again: the same bytes. */
static void
again_osdmap(const struct tsr_enc *e, int inc)
{
	struct tsr_osdmap m;
	struct tsr_osdmap_inc i;
	struct tsr_enc e2;
	char err[256];

	tsr_enc_init(&e2);
	if (!inc) {
		if (tsr_osdmap_decode(e->buf, e->len, &m, err, sizeof(err)) != 0)
			abort();
		tsr_osdmap_encode(&e2, &m);
		tsr_osdmap_free(&m);
	} else {
		if (tsr_osdmap_inc_decode(e->buf, e->len, &i, err, sizeof(err)) != 0)
			abort();
		tsr_osdmap_inc_encode(&e2, &i);
		tsr_osdmap_inc_free(&i);
	}
	if (e2.len != e->len || memcmp(e2.buf, e->buf, e->len) != 0)
		abort();
	tsr_enc_release(&e2);
}

static void
again_mdsmap(const struct tsr_enc *e, int inc)
{
	struct tsr_mdsmap m;
	struct tsr_mdsmap_inc i;
	struct tsr_enc e2;
	char err[256];

	tsr_enc_init(&e2);
	if (!inc) {
		if (tsr_mdsmap_decode(e->buf, e->len, &m, err, sizeof(err)) != 0)
			abort();
		tsr_mdsmap_encode(&e2, &m);
		tsr_mdsmap_free(&m);
	} else {
		if (tsr_mdsmap_inc_decode(e->buf, e->len, &i, err, sizeof(err)) != 0)
			abort();
		tsr_mdsmap_inc_encode(&e2, &i);
		tsr_mdsmap_inc_free(&i);
	}
	if (e2.len != e->len || memcmp(e2.buf, e->buf, e->len) != 0)
		abort();
	tsr_enc_release(&e2);
}

/* A map or an incremental that decodes encodes to a fixed point; an
 * incremental is applied to an empty map (refused or a sane map). */
static void
osdmap(const uint8_t *p, size_t n, int inc)
{
	struct tsr_osdmap m;
	struct tsr_osdmap_inc i;
	struct tsr_enc e;
	char err[256];
	int rc;

	tsr_enc_init(&e);
	if (!inc) {
		if (tsr_osdmap_decode(p, n, &m, err, sizeof(err)) < 0)
			return;
		rc = tsr_osdmap_encode(&e, &m);
		tsr_osdmap_free(&m);
	} else {
		if (tsr_osdmap_inc_decode(p, n, &i, err, sizeof(err)) < 0)
			return;
		rc = tsr_osdmap_inc_encode(&e, &i);
		tsr_osdmap_init(&m);
		m.epoch = i.epoch - 1;
		if (tsr_osdmap_apply(&m, &i, err, sizeof(err)) == 0 &&
		    tsr_osdmap_check(&m, err, sizeof(err)) != 0)
			abort();
		tsr_osdmap_free(&m);
		tsr_osdmap_inc_free(&i);
	}
	/* not byte for byte the input (a newer writer's fields are
	 * skipped), but a fixed point from the first encoding on */
	if (rc != 0)
		abort();
	again_osdmap(&e, inc);
	tsr_enc_release(&e);
}

static void
mdsmap(const uint8_t *p, size_t n, int inc)
{
	struct tsr_mdsmap m;
	struct tsr_mdsmap_inc i;
	struct tsr_enc e;
	char err[256];
	int rc;

	tsr_enc_init(&e);
	if (!inc) {
		if (tsr_mdsmap_decode(p, n, &m, err, sizeof(err)) < 0)
			return;
		rc = tsr_mdsmap_encode(&e, &m);
		tsr_mdsmap_free(&m);
	} else {
		if (tsr_mdsmap_inc_decode(p, n, &i, err, sizeof(err)) < 0)
			return;
		rc = tsr_mdsmap_inc_encode(&e, &i);
		tsr_mdsmap_init(&m);
		m.epoch = i.epoch - 1;
		if (tsr_mdsmap_apply(&m, &i, err, sizeof(err)) == 0 &&
		    tsr_mdsmap_check(&m, err, sizeof(err)) != 0)
			abort();
		tsr_mdsmap_free(&m);
		tsr_mdsmap_inc_free(&i);
	}
	/* not byte for byte the input (a newer writer's fields are
	 * skipped), but a fixed point from the first encoding on */
	if (rc != 0)
		abort();
	again_mdsmap(&e, inc);
	tsr_enc_release(&e);
}

/* A log entry applied to a state holding an OSD: refused or applied,
 * never a crash, and the state it leaves still encodes and decodes. */
static void
entry(const uint8_t *p, size_t n)
{
	char *add[] = { "osd", "add", "0", "--host", "h0", NULL };
	struct mon_state s, s2;
	struct mon_entry en;
	struct tsr_sbuf out;
	size_t len;
	uint8_t *b;

	state_init(&s);
	tsr_sbuf_init(&out);
	if (state_apply(&s, 1, 1, 5, add, &out) != 0)
		abort();
	tsr_sbuf_reset(&out);
	(void)state_apply_entry(&s, p, n, &en, &out);
	tsr_sbuf_release(&out);
	b = state_encode(&s, &len);
	state_init(&s2);
	if (b == NULL || state_decode(&s2, b, len) != 0)
		abort();
	free(b);
	state_free(&s);
	state_free(&s2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t ntypes = 0;
	char err[256];

	if (size == 0)
		return 0;
	while (tsr_monmsg_type_at(ntypes))
		ntypes++;
	/* the OSD's messages, after the monitors' kinds */
	static const uint32_t osd_types[] = {
#define OSD_TYPE(name, n, label, fn) TSR_MSG_OSD_##name,
		TSR_OSD_MESSAGES(OSD_TYPE)
#undef OSD_TYPE
	};
	const size_t nosd = sizeof(osd_types) / sizeof(osd_types[0]);
	size_t k = data[0] % (ntypes + 6 + nosd);
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	if (k < ntypes) {
		/* every message type of the registry (monmsg.h): its check
		 * decodes, encodes and decodes again; a round trip that
		 * differs is a bug.  Data of any length is claimed. */
		const struct tsr_monmsg_type *t = tsr_monmsg_type_at(k);
		if (t->check(p, n, n ? p[0] * 977u : 0, err, sizeof(err)) == -EPROTO)
			abort();
		if (t->type == TSR_MSG_MON_CMD)
			classify(p, n);
		return 0;
	}
	switch (k - ntypes) {
	case 0: snapshot(p, n); break;
	case 1: osdmap(p, n, 0); break;
	case 2: osdmap(p, n, 1); break;
	case 3: mdsmap(p, n, 0); break;
	case 4: mdsmap(p, n, 1); break;
	case 5: entry(p, n); break;
	default:
		if (tsr_osdmsg_check(osd_types[k - ntypes - 6], p, n, err,
				     sizeof(err)) == -EPROTO)
			abort();
	}
	return 0;
}
