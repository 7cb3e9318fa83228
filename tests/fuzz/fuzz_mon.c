/* fuzz_mon.c — libFuzzer target for what a monitor decodes from its
 * peers and clients: Raft messages, commands, replies, snapshots of the
 * maps (which a leader sends a lagging monitor); and what every map
 * holder decodes from a monitor: OSD and MDS maps and incrementals, and
 * the subscription messages; and the log entries every monitor applies
 * (commands and decisions, daemons/mon/state.h).
 *
 * The first input byte picks the decoder (modulo 11), the rest is the
 * input.  Whatever decodes must encode again and decode to the same
 * thing; nothing may read out of bounds, leak or trip UBSan.  Seeds in
 * tests/fuzz/corpus/mon/ hold one valid input of each kind.
 */
#include "map/mdsmap.h"
#include "map/osdmap.h"
#include "mon/monmsg.h"
#include "state.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
raft(const uint8_t *p, size_t n)
{
	struct tsr_raft_msg m, m2;
	struct tsr_enc e;
	uint32_t fp, fp2;
	uint64_t feat, feat2;
	char err[256];

	if (tsr_monmsg_raft_decode(p, n, &fp, &feat, &m, err, sizeof(err)) < 0)
		return;
	tsr_enc_init(&e);
	if (tsr_monmsg_raft_encode(&e, fp, feat, &m) == 0) {
		if (tsr_monmsg_raft_decode(e.buf, e.len, &fp2, &feat2, &m2, err,
					   sizeof(err)) != 0 ||
		    fp2 != fp || feat2 != feat || m2.nentries != m.nentries ||
		    m2.term != m.term)
			abort();
		for (size_t i = 0; i < m.nentries; i++)
			if (m2.entries[i].len != m.entries[i].len ||
			    (m.entries[i].len &&
			     memcmp(m2.entries[i].data, m.entries[i].data, m.entries[i].len)))
				abort();
		tsr_monmsg_raft_free(&m2);
	}
	tsr_enc_release(&e);
	tsr_monmsg_raft_free(&m);
}

static void
cmd(const uint8_t *p, size_t n)
{
	struct tsr_mon_cmd c, c2;
	struct tsr_enc e;
	char err[256];

	if (tsr_monmsg_cmd_decode(p, n, &c, err, sizeof(err)) < 0)
		return;
	tsr_enc_init(&e);
	if (tsr_monmsg_cmd_encode(&e, &c) == 0) {
		if (tsr_monmsg_cmd_decode(e.buf, e.len, &c2, err, sizeof(err)) != 0 ||
		    c2.argc != c.argc)
			abort();
		for (uint32_t i = 0; i < c.argc; i++)
			if (strcmp(c.argv[i], c2.argv[i]) != 0)
				abort();
		tsr_monmsg_cmd_free(&c2);
	}
	tsr_enc_release(&e);
	/* the monitor's parser takes any words */
	struct tsr_sbuf out;
	tsr_sbuf_init(&out);
	(void)state_classify((int)c.argc, c.argv, &out);
	tsr_sbuf_release(&out);
	tsr_monmsg_cmd_free(&c);
}

static void
reply(const uint8_t *p, size_t n)
{
	struct tsr_mon_reply r;
	char err[256];

	if (tsr_monmsg_reply_decode(p, n, &r, err, sizeof(err)) < 0)
		return;
	free(r.text);
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
static void
sub_and_maps(const uint8_t *p, size_t n, int maps)
{
	struct tsr_enc e;
	char err[256];

	tsr_enc_init(&e);
	if (!maps) {
		struct tsr_mon_sub s, s2;
		if (tsr_monmsg_sub_decode(p, n, &s, err, sizeof(err)) < 0)
			return;
		tsr_monmsg_sub_encode(&e, &s);
		if (tsr_monmsg_sub_decode(e.buf, e.len, &s2, err, sizeof(err)) != 0 ||
		    memcmp(&s, &s2, sizeof(s)) != 0)
			abort();
	} else {
		struct tsr_mon_maps m, m2;
		size_t data = n ? p[0] * 977u : 0;
		if (tsr_monmsg_maps_decode(p, n, data, &m, err, sizeof(err)) < 0)
			return;
		tsr_monmsg_maps_encode(&e, &m);
		if (tsr_monmsg_maps_decode(e.buf, e.len, data, &m2, err, sizeof(err)) != 0 ||
		    m2.n != m.n || m2.epoch != m.epoch || strcmp(m2.text, m.text) != 0)
			abort();
		tsr_monmsg_maps_free(&m);
		tsr_monmsg_maps_free(&m2);
	}
	tsr_enc_release(&e);
}

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
	if (size == 0)
		return 0;
	switch (data[0] % 11) {
	case 0: raft(data + 1, size - 1); break;
	case 1: cmd(data + 1, size - 1); break;
	case 2: reply(data + 1, size - 1); break;
	case 3: snapshot(data + 1, size - 1); break;
	case 4: osdmap(data + 1, size - 1, 0); break;
	case 5: osdmap(data + 1, size - 1, 1); break;
	case 6: mdsmap(data + 1, size - 1, 0); break;
	case 7: mdsmap(data + 1, size - 1, 1); break;
	case 8: sub_and_maps(data + 1, size - 1, 0); break;
	case 9: sub_and_maps(data + 1, size - 1, 1); break;
	default: entry(data + 1, size - 1);
	}
	return 0;
}
