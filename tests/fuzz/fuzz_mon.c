/* fuzz_mon.c — libFuzzer target for what a monitor decodes from its
 * peers and clients: Raft messages, commands, replies, and snapshots of
 * the maps (which a leader sends a lagging monitor).
 *
 * The first input byte picks the decoder (modulo 4), the rest is the
 * input.  Whatever decodes must encode again and decode to the same
 * thing; nothing may read out of bounds, leak or trip UBSan.  Seeds in
 * tests/fuzz/corpus/mon/ hold one valid input of each kind.
 */
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
	char err[256];

	if (tsr_monmsg_raft_decode(p, n, &fp, &m, err, sizeof(err)) < 0)
		return;
	tsr_enc_init(&e);
	if (tsr_monmsg_raft_encode(&e, fp, &m) == 0) {
		if (tsr_monmsg_raft_decode(e.buf, e.len, &fp2, &m2, err, sizeof(err)) != 0 ||
		    fp2 != fp || m2.nentries != m.nentries || m2.term != m.term)
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
	if (b == NULL || state_decode(&s2, b, len) != 0 || s2.nosds != s.nosds ||
	    s2.npools != s.npools || s2.osd_epoch != s.osd_epoch)
		abort();
	/* and the reads over what was decoded */
	struct tsr_sbuf out;
	char *tree[] = { "osd", "tree", NULL }, *ls[] = { "pool", "ls", NULL };
	tsr_sbuf_init(&out);
	state_read(&s2, 2, tree, &out);
	state_read(&s2, 2, ls, &out);
	state_health(&s2, &out);
	tsr_sbuf_release(&out);
	free(b);
	state_free(&s);
	state_free(&s2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 4) {
	case 0: raft(data + 1, size - 1); break;
	case 1: cmd(data + 1, size - 1); break;
	case 2: reply(data + 1, size - 1); break;
	default: snapshot(data + 1, size - 1);
	}
	return 0;
}
