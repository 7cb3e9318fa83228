/* pgsim.c — a seeded, deterministic simulation of placement groups on many
 * OSDs: the PG machines of core/osd/pgsm.h driven by a simulated network,
 * stores, monitor and client, with crashes, restarts, OSDs marked down and
 * out and back, and every seed checked for the invariants the thrash test
 * checks on real daemons:
 *
 *   - every read answers what the last acknowledged write left, or what
 *     the write under way on its object leaves; and once a read has
 *     shown that write, no later read shows the object without it;
 *   - after the faults stop and everything is back, every PG becomes
 *     active+clean within a bounded time, and every member of its acting
 *     set holds exactly what the acknowledged writes left, at the same
 *     versions;
 *   - every client operation completes (writes are sent again across
 *     map changes and crashes, and applied once).
 *
 * The world.  Time is an integer; events (a message arriving, a store
 * committing, a map reaching an OSD, a client tick, a fault) run in time
 * order, ties in the order they were made, so one seed is one history.
 * Messages between two OSD incarnations arrive in order (a lossless
 * session); a crash or a restart drops what was in flight to or from it,
 * as the messenger's sessions do; a message to an OSD goes to the
 * incarnation the sender's map names, and the OSD refuses it otherwise
 * (the address nonce).  A store commits one PG's transactions in order
 * (per-collection order, tessera/backend.h); a crash loses what has not
 * committed.  The monitor marks a crashed OSD down after a delay, out
 * after a longer one, up again when it restarts (a new up_from), and
 * records up_thru when asked.  The client keeps a few operations in flight
 * (one write per object, and a read beside it), sends each to the primary of its newest map, and sends
 * it again (the same request id) when no answer comes.
 *
 * Usage: pgsim [--seeds N] [--first S] [--steps N] [--verbose]
 *              [--dump-corpus DIR]  (a few messages of each type, as sent:
 *                                    the fuzz target's seeds)
 * Exit 0 when every seed holds; else the first failing seed is printed
 * with the way to replay it.
 */
#include "osd/pgsm.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXO 8
#define NPG 6
#define NOBJ 6
#define SIZE 3
#define MIN_SIZE 2

static int verbose;
static uint32_t log_max = 100000;   /* per seed: short logs make backfills */
static uint32_t bf_window = 64;     /* per seed: small windows, many steps */
static int reserve;                 /* per seed: backfills wait for slots,
				       granted a random time later */

/* Every log entry any copy ever held at or below its info.committed, per
 * PG: no copy may lack one in the span its log covers, or hold another
 * there (check_committed).  And the versions reads below min_size showed:
 * each must be one of them by the end.  And the reservations each copy
 * asked for and did not release. */
struct cent {
	struct tsr_ev ev;
	uint64_t client, tid;
	uint8_t op;
};
static struct cent *cents[NPG];
static size_t ncents[NPG], capcents[NPG];
static struct tsr_ev low_reads[NPG][4096];
static size_t nlow_reads[NPG];
static int resv_out[MAXO][NPG];
static void check_committed(int o, int pg);

/* ---- random ----------------------------------------------------------------------- */

static uint64_t rng;

static uint64_t
rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static uint64_t
rndn(uint64_t n)
{
	return n ? rnd() % n : 0;
}

/* ---- failures --------------------------------------------------------------------- */

static char failure[512];
static uint64_t now;

static void
fail(const char *fmt, ...)
{
	va_list ap;

	if (failure[0])
		return;
	va_start(ap, fmt);
	vsnprintf(failure, sizeof(failure), fmt, ap);
	va_end(ap);
}

/* ---- maps ------------------------------------------------------------------------- */

struct simmap {
	uint64_t epoch;
	uint8_t up[MAXO], in[MAXO];
	uint64_t up_from[MAXO], up_thru[MAXO];
	uint32_t ntemp[NPG];          /* PG temp: the acting set asked for */
	int32_t temp[NPG][MAXO];
};

static struct simmap **maps;   /* maps[e - 1] is epoch e (each stays put:
				  the machines keep a pointer to theirs) */
static size_t nmaps, capmaps;
static int nosd;

static const struct simmap *
map_at(uint64_t e)
{
	return maps[e - 1];
}

static uint64_t
up_from_cb(const void *arg, int32_t osd)
{
	const struct simmap *m = arg;

	if (osd < 0 || osd >= nosd || !m->up[osd])
		return 0;
	return m->up_from[osd];
}

static uint64_t
hrw(int pg, int osd)
{
	uint64_t x = (uint64_t)pg * 0x9E3779B97F4A7C15ull ^ (uint64_t)(osd + 1) * 0xC2B2AE3D27D4EB4Full;

	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return x;
}

/* up = acting: the SIZE in OSDs of highest hash, those of them up. */
static void
mapview(const struct simmap *m, int pg, struct tsr_pg_mapview *mv)
{
	int chosen[MAXO], n = 0;

	memset(mv, 0, sizeof(*mv));
	mv->epoch = m->epoch;
	mv->size = SIZE;
	mv->min_size = MIN_SIZE;
	for (int k = 0; k < SIZE; k++) {
		int best = -1;
		for (int o = 0; o < nosd; o++) {
			int taken = 0;
			for (int j = 0; j < n; j++)
				taken |= chosen[j] == o;
			if (!m->in[o] || taken)
				continue;
			if (best < 0 || hrw(pg, o) > hrw(pg, best))
				best = o;
		}
		if (best < 0)
			break;
		chosen[n++] = best;
	}
	for (int j = 0; j < n; j++)
		if (m->up[chosen[j]])
			mv->up[mv->nup++] = chosen[j];
	for (uint32_t j = 0; j < m->ntemp[pg]; j++)
		if (m->up[m->temp[pg][j]]) {
			mv->acting[mv->nacting] = m->temp[pg][j];
			mv->acting_up_from[mv->nacting] = m->up_from[m->temp[pg][j]];
			mv->nacting++;
		}
	if (mv->nacting == 0)
		for (uint32_t j = 0; j < mv->nup; j++) {
			mv->acting[mv->nacting] = mv->up[j];
			mv->acting_up_from[mv->nacting] = m->up_from[mv->up[j]];
			mv->nacting++;
		}
	mv->primary_up_thru = mv->nacting ? m->up_thru[mv->acting[0]] : 0;
	mv->osd_up_from = up_from_cb;
	mv->osd_up_arg = m;
}

/* ---- events ----------------------------------------------------------------------- */

enum { EV_MSG, EV_COMMIT, EV_MAP, EV_CLIENT, EV_REPLY, EV_MON, EV_FAULT, EV_OP, EV_LIST,
       EV_TICK, EV_GRANT, EV_HEARD };

struct txn;

struct payload {
	int has;
	int obj;
	int exists;
	uint64_t val;
	struct tsr_ev ev;
};

struct event {
	uint64_t at, seq;
	int type;
	int osd;                      /* MSG, COMMIT, MAP, OP: the receiver */
	int from;
	uint64_t from_inc, to_from;   /* MSG, OP: sender incarnation, the
					 receiver's up_from it was sent to */
	int pg;
	uint8_t *buf;                 /* MSG: the encoded pgmsg */
	size_t len;
	struct payload pl;
	uint64_t epoch;               /* MAP */
	uint64_t tid;                 /* OP, REPLY */
	int32_t result;               /* REPLY */
	int rexists;                  /* REPLY of a read */
	uint64_t rval;
	uint64_t inc;                 /* COMMIT: the store incarnation */
	uint64_t map_epoch;           /* OP: the client's */
	uint32_t ntemp;               /* MON (tid 3): a PG temp asked for */
	int32_t temp[MAXO];
	struct txn *txn;              /* HEARD: a commit the machine hears of */
};

static struct event *heap;
static size_t nheap, capheap;
static uint64_t seqno;

static int
ev_less(const struct event *a, const struct event *b)
{
	return a->at != b->at ? a->at < b->at : a->seq < b->seq;
}

static void
push_event(struct event ev)
{
	size_t i;

	if (nheap == capheap) {
		capheap = capheap ? capheap * 2 : 1024;
		heap = realloc(heap, capheap * sizeof(*heap));
		if (heap == NULL)
			abort();
	}
	ev.seq = ++seqno;
	i = nheap++;
	heap[i] = ev;
	while (i > 0 && ev_less(&heap[i], &heap[(i - 1) / 2])) {
		struct event t = heap[i];
		heap[i] = heap[(i - 1) / 2];
		heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct event
pop_event(void)
{
	struct event top = heap[0];
	size_t i = 0;

	heap[0] = heap[--nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < nheap && ev_less(&heap[l], &heap[m]))
			m = l;
		if (r < nheap && ev_less(&heap[r], &heap[m]))
			m = r;
		if (m == i)
			break;
		struct event t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
	return top;
}

/* ---- stores ----------------------------------------------------------------------- */

struct kvp {
	uint8_t *k, *v;
	size_t kl, vl;
};

struct obj {
	int exists;
	uint64_t val;
	struct tsr_ev ev;
};

struct pgstore {
	int exists;
	struct kvp *kv;
	size_t nkv;
	struct obj objs[NOBJ];
};

/* A transaction waiting to commit. */
struct txn {
	uint64_t token;
	struct tsr_pgsm_kv *kv;
	size_t nkv;
	int answer;                   /* send answer.msg once committed */
	struct tsr_pgsm_action answer_act;
	int rm[NOBJ];
	struct payload obj;
	struct txn *next;
};

struct osd {
	int alive;
	uint64_t inc;                 /* incarnation: bumps at crash and start */
	uint64_t registered;          /* the up_from the map gave this
					 incarnation, once it has that map */
	uint64_t addr;                /* that up_from, as soon as the monitor
					 gave it (its address: messages sent
					 to another incarnation are refused) */
	uint64_t epoch;               /* newest map it has */
	uint64_t down_at;             /* when it crashed (monitor's timer) */
	struct pgstore st[NPG];
	struct txn *pend[NPG], *pend_tail[NPG];
	int commit_scheduled[NPG];
	struct tsr_pgsm *sm[NPG];
	struct event *parked;         /* messages and ops from newer maps */
	size_t nparked, capparked;
};

static struct osd osds[MAXO];

static int
kv_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	return tsr_oid_cmp(a, al, b, bl);
}

static void
kv_set(struct pgstore *s, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
	size_t i = 0;

	while (i < s->nkv && kv_cmp(s->kv[i].k, s->kv[i].kl, k, kl) < 0)
		i++;
	if (i < s->nkv && kv_cmp(s->kv[i].k, s->kv[i].kl, k, kl) == 0) {
		free(s->kv[i].v);
	} else {
		s->kv = realloc(s->kv, (s->nkv + 1) * sizeof(*s->kv));
		memmove(&s->kv[i + 1], &s->kv[i], (s->nkv - i) * sizeof(*s->kv));
		s->nkv++;
		s->kv[i].k = malloc(kl ? kl : 1);
		memcpy(s->kv[i].k, k, kl);
		s->kv[i].kl = kl;
	}
	s->kv[i].v = malloc(vl ? vl : 1);
	memcpy(s->kv[i].v, v, vl);
	s->kv[i].vl = vl;
}

static void
kv_rm(struct pgstore *s, const uint8_t *lo, size_t lol, const uint8_t *hi, size_t hil, int range)
{
	for (size_t i = 0; i < s->nkv;) {
		int c = kv_cmp(s->kv[i].k, s->kv[i].kl, lo, lol);
		int in = range ? c >= 0 && kv_cmp(s->kv[i].k, s->kv[i].kl, hi, hil) < 0 : c == 0;
		if (in) {
			free(s->kv[i].k);
			free(s->kv[i].v);
			memmove(&s->kv[i], &s->kv[i + 1], (s->nkv - i - 1) * sizeof(*s->kv));
			s->nkv--;
		} else {
			i++;
		}
	}
}

static void
store_wipe(struct pgstore *s)
{
	for (size_t i = 0; i < s->nkv; i++) {
		free(s->kv[i].k);
		free(s->kv[i].v);
	}
	free(s->kv);
	memset(s, 0, sizeof(*s));
}

static void
txn_free(struct txn *t)
{
	tsr_pgsm_kv_free(t->kv, t->nkv, NULL, 0);
	tsr_pgmsg_free(&t->answer_act.msg);
	free(t);
}

static int
obj_index(const void *oid, size_t len)
{
	const char *p = oid;

	if (len != 2 || p[0] != 'o' || p[1] < '0' || p[1] >= '0' + NOBJ)
		return -1;
	return p[1] - '0';
}

/* ---- the client ------------------------------------------------------------------- */

#define INFLIGHT 4

static int read_pct = 20;          /* per seed: of the client's ops */

enum { OP_READ, OP_WRITE, OP_DELETE };

struct cop {
	int active;
	uint64_t tid;
	int pg, obj, kind;
	uint64_t val;
	uint64_t sent_at;
	uint64_t acked_at;
};

struct model {
	int exists;
	uint64_t val;
	uint64_t seen;                /* a read showed what the write of this
					 tid, not yet acknowledged, leaves:
					 no later read may show less */
};

static struct cop cops[INFLIGHT];
static struct model model[NPG][NOBJ];
static uint64_t next_tid, next_val, ops_done, writes_acked, reads_checked;
static uint64_t reads_low;          /* answered while the newest map has the
				       PG below min_size */
static int client_stop;             /* no new ops (the end) */

/* Client op handles as the PG machine sees them: per OSD, per tid. */
struct handle {
	uint64_t handle;
	int osd, pg;
	uint64_t tid;
	int kind, obj;
	uint64_t val;
	struct tsr_ev ev;               /* the version EXEC gave it */
};

static struct handle *handles;
static size_t nhandles, caphandles;
static uint64_t next_handle;

static struct handle *
handle_find(uint64_t h)
{
	for (size_t i = 0; i < nhandles; i++)
		if (handles[i].handle == h)
			return &handles[i];
	return NULL;
}

/* ---- the monitor ------------------------------------------------------------------ */

static void
new_epoch(struct simmap *m)
{
	if (nmaps == capmaps) {
		capmaps = capmaps ? capmaps * 2 : 64;
		maps = realloc(maps, capmaps * sizeof(*maps));
	}
	m->epoch = nmaps + 1;
	/* a PG temp lasts while the up set it was asked under does: a new up
	 * set has its own primary decide again */
	for (int pg = 0; nmaps && pg < NPG; pg++) {
		struct tsr_pg_mapview a, b;
		if (m->ntemp[pg] == 0)
			continue;
		mapview(maps[nmaps - 1], pg, &a);
		mapview(m, pg, &b);
		if (a.nup != b.nup || memcmp(a.up, b.up, sizeof(a.up[0]) * a.nup) != 0)
			m->ntemp[pg] = 0;
	}
	maps[nmaps] = malloc(sizeof(*m));
	*maps[nmaps++] = *m;
	if (verbose)
		fprintf(stderr, "t=%" PRIu64 " epoch %" PRIu64 ":", now, m->epoch);
	for (int o = 0; o < nosd && verbose; o++)
		fprintf(stderr, " %d%s%s", o, m->up[o] ? "u" : "d", m->in[o] ? "i" : "o");
	if (verbose)
		fprintf(stderr, "\n");
	for (int pg = 0; pg < NPG && verbose > 2; pg++) {
		struct tsr_pg_mapview mv;
		mapview(m, pg, &mv);
		fprintf(stderr, "   pg%d acting", pg);
		for (uint32_t i = 0; i < mv.nacting; i++)
			fprintf(stderr, " %d(from %" PRIu64 ")", mv.acting[i], mv.acting_up_from[i]);
		fprintf(stderr, " up_thru %" PRIu64 "\n", mv.primary_up_thru);
	}
	for (int o = 0; o < nosd; o++)
		if (osds[o].alive && osds[o].epoch == m->epoch - 1)
			push_event((struct event){ .at = now + 1 + rndn(5), .type = EV_MAP, .osd = o,
						   .epoch = m->epoch });
}

static struct simmap
latest(void)
{
	return *maps[nmaps - 1];
}

/* ---- carrying out a machine's actions --------------------------------------------- */

/* What travelled with the message being handled (tsr_pgsm_recv's
 * payload). */
static struct payload cur_payload;

/* --dump-corpus DIR: the first messages of each type, as sent, for the
 * fuzz target's seed corpus (tests/fuzz/corpus/osd). */
static const char *dump_dir;
static unsigned dumped[64];

static void
dump(const struct tsr_pgmsg *m, const uint8_t *buf, size_t len)
{
	char path[512];
	FILE *f;

	if (dump_dir == NULL || m->type >= 64 || dumped[m->type] >= 2 ||
	    (m->type == TSR_PGMSG_LOG && m->log.n == 0))
		return;
	snprintf(path, sizeof(path), "%s/%s-%u", dump_dir, tsr_pgmsg_name(m->type),
		 dumped[m->type]++);
	for (char *p = path + strlen(dump_dir) + 1; *p; p++)
		if (*p == ' ')
			*p = '-';
	if ((f = fopen(path, "wb")) != NULL) {
		fwrite(buf, 1, len, f);
		fclose(f);
	}
}

/* FIFO per pair: the pair's last arrival time. */
static uint64_t pair_last[MAXO][MAXO];
static uint64_t heard_last[MAXO][NPG]; /* a PG's commits are heard in order */

static void carry_out_(int o, int pg);
static void
carry_out(int o, int pg)
{
	carry_out_(o, pg);
	check_committed(o, pg);
}

/* Send x's message from osd o (its attachment read now). */
static void
sim_send(int o, int pg, struct tsr_pgsm_action *x)
{
	struct payload pl;
	struct event ev;
	struct tsr_enc e;
	const struct simmap *mm = map_at(osds[o].epoch);
	memset(&pl, 0, sizeof(pl));
	if (x->attach == TSR_PGSM_ATTACH_OP) {
		struct handle *h = handle_find(x->handle);
		if (h == NULL) {
			fail("osd.%d pg %d: REPOP of unknown handle", o, pg);
			return;
		}
		pl.has = 1;
		pl.obj = h->obj;
		pl.exists = h->kind == OP_WRITE;
		pl.val = h->val;
		pl.ev = x->msg.log.n ? x->msg.log.e[0].ev : h->ev;
	} else if (x->attach == TSR_PGSM_ATTACH_OBJECT) {
		int k = obj_index(x->msg.oid, x->msg.oid_len);
		const struct obj *ob;
		if (k < 0) {
			fail("osd.%d: push of an unknown object", o);
			return;
		}
		ob = &osds[o].st[pg].objs[k];
		pl.has = 1;
		pl.obj = k;
		pl.exists = ob->exists;
		pl.val = ob->val;
		pl.ev = ob->ev;
		x->msg.ev = ob->ev;
		x->msg.op = ob->exists ? TSR_PGLOG_MODIFY : TSR_PGLOG_DELETE;
	}
	memset(&ev, 0, sizeof(ev));
	tsr_enc_init(&e);
	if (tsr_pgmsg_encode(&e, &x->msg) < 0) {
		fail("osd.%d: encoding failed", o);
		tsr_enc_release(&e);
		return;
	}
	ev.buf = tsr_enc_take(&e, &ev.len);
	dump(&x->msg, ev.buf, ev.len);
	ev.type = EV_MSG;
	ev.from = o;
	ev.from_inc = osds[o].inc;
	ev.osd = x->to;
	ev.pg = pg;
	ev.pl = pl;
	ev.to_from = x->to >= 0 && x->to < nosd && mm->up[x->to] ? mm->up_from[x->to] : 0;
	ev.at = now + 1 + rndn(rndn(8) == 0 ? 60 : 6);
	if (x->to >= 0 && x->to < nosd) {
		if (ev.at <= pair_last[o][x->to])
			ev.at = pair_last[o][x->to] + 1;
		pair_last[o][x->to] = ev.at;
	}
	if (verbose > 1)
		fprintf(stderr, "t=%" PRIu64 " osd.%d pg%d -> osd.%d %s\n", now, o, pg,
			x->to, tsr_pgmsg_name(x->msg.type));
	push_event(ev);
}

static void
carry_out_(int o, int pg)
{
	struct tsr_pgsm *sm = osds[o].sm[pg];
	size_t n;
	struct tsr_pgsm_action *a;

	for (int round = 0; round < 1000; round++) {
		a = tsr_pgsm_actions(sm, &n);
		if (n == 0) {
			if (tsr_pgsm_state(sm) == TSR_PGSM_DELETED) {
				/* gone; mapped here again later, it starts afresh */
				tsr_pgsm_destroy(sm);
				osds[o].sm[pg] = NULL;
			}
			return;
		}
		/* copy out: handling an action may call the machine again */
		struct tsr_pgsm_action *acts = malloc(n * sizeof(*acts));
		memcpy(acts, a, n * sizeof(*acts));
		/* take ownership from the machine without freeing */
		{
			struct tsr_pgsm_action *orig = tsr_pgsm_actions(sm, &n);
			for (size_t i = 0; i < n; i++)
				memset(&orig[i], 0, sizeof(orig[i]));
			tsr_pgsm_actions_clear(sm);
		}
		for (size_t i = 0; i < n; i++) {
			struct tsr_pgsm_action *x = &acts[i];
			switch (x->type) {
			case TSR_PGSM_A_SEND:
				sim_send(o, pg, x);
				break;
			case TSR_PGSM_A_PERSIST: {
				struct txn *t = calloc(1, sizeof(*t));
				t->token = x->token;
				t->kv = x->kv;
				t->nkv = x->nkv;
				x->kv = NULL;
				x->nkv = 0;
				if (x->answer) {
					/* the message moves to the transaction */
					t->answer = 1;
					t->answer_act.type = TSR_PGSM_A_SEND;
					t->answer_act.to = x->to;
					t->answer_act.msg = x->msg;
					memset(&x->msg, 0, sizeof(x->msg));
				}
				for (size_t r = 0; r < x->nrm; r++) {
					int k = obj_index(x->rm[r].p, x->rm[r].n);
					if (k < 0)
						fail("osd.%d: removal of an unknown object", o);
					else
						t->rm[k] = 1;
				}
				if (x->obj == TSR_PGSM_OBJ_OP) {
					struct handle *h = handle_find(x->handle);
					if (h == NULL) {
						fail("osd.%d: persist of an unknown handle", o);
					} else {
						t->obj.has = 1;
						t->obj.obj = h->obj;
						t->obj.exists = h->kind == OP_WRITE;
						t->obj.val = h->val;
						t->obj.ev = h->ev;
					}
				} else if (x->obj == TSR_PGSM_OBJ_PAYLOAD) {
					/* the payload of the message being handled */
					if (!cur_payload.has)
						fail("osd.%d pg %d: a payload persist without a payload", o, pg);
					t->obj = cur_payload;
				}
				if (osds[o].pend_tail[pg])
					osds[o].pend_tail[pg]->next = t;
				else
					osds[o].pend[pg] = t;
				osds[o].pend_tail[pg] = t;
				osds[o].st[pg].exists = 1;
				if (!osds[o].commit_scheduled[pg]) {
					osds[o].commit_scheduled[pg] = 1;
					push_event((struct event){ .at = now + 1 + rndn(8), .type = EV_COMMIT,
								   .osd = o, .pg = pg, .inc = osds[o].inc });
				}
				break;
			}
			case TSR_PGSM_A_EXEC: {
				struct handle *h = handle_find(x->handle);
				if (h == NULL) {
					fail("osd.%d: exec of an unknown handle", o);
					break;
				}
				if (h->kind == OP_READ) {
					const struct obj *ob = &osds[o].st[pg].objs[h->obj];
					if (ob->exists && tsr_pgsm_mapview(sm)->nacting < MIN_SIZE && nlow_reads[pg] < 4096)
						low_reads[pg][nlow_reads[pg]++] = ob->ev;
					push_event((struct event){ .at = now + 1 + rndn(5), .type = EV_REPLY,
								   .tid = h->tid, .result = ob->exists ? 0 : -ENOENT,
								   .rexists = ob->exists, .rval = ob->val });
					break;
				}
				/* the object as the writes before leave it */
				struct obj proj = osds[o].st[pg].objs[h->obj];
				for (struct txn *t = osds[o].pend[pg]; t; t = t->next) {
					if (t->rm[h->obj])
						proj.exists = 0, proj.ev = (struct tsr_ev){ 0, 0 };
					if (t->obj.has && t->obj.obj == h->obj) {
						proj.exists = t->obj.exists;
						proj.ev = t->obj.exists ? t->obj.ev : (struct tsr_ev){ 0, 0 };
					}
				}
				h->ev = x->ev;
				if (verbose > 1)
					fprintf(stderr, "t=%" PRIu64 " osd.%d pg%d exec op %" PRIu64 " at %"
						PRIu64 "'%" PRIu64 " (object %s at %" PRIu64 "'%" PRIu64 ")\n",
						now, o, pg, h->tid, x->ev.epoch, x->ev.ver,
						proj.exists ? "exists" : "absent", proj.ev.epoch, proj.ev.ver);
				if (h->kind == OP_DELETE && !proj.exists) {
					tsr_pgsm_exec_done(sm, x->handle, proj.ev, TSR_PGLOG_DELETE, -ENOENT);
					break;
				}
				if (tsr_pgsm_exec_done(sm, x->handle, proj.exists ? proj.ev : (struct tsr_ev){ 0, 0 },
						       h->kind == OP_WRITE ? TSR_PGLOG_MODIFY : TSR_PGLOG_DELETE,
						       0) < 0)
					fail("osd.%d: exec_done refused", o);
				break;
			}
			case TSR_PGSM_A_REPLY: {
				struct handle *h = handle_find(x->handle);
				if (h == NULL) {
					fail("osd.%d: reply to an unknown handle", o);
					break;
				}
				push_event((struct event){ .at = now + 1 + rndn(5), .type = EV_REPLY,
							   .tid = h->tid, .result = x->result });
				break;
			}
			case TSR_PGSM_A_UP_THRU: {
				struct simmap m = latest();
				if (m.up[o] && m.up_from[o] == osds[o].registered && m.up_thru[o] < x->epoch) {
					m.up_thru[o] = m.epoch + 1;
					push_event((struct event){ .at = now + 2 + rndn(5), .type = EV_MON,
								   .osd = o, .epoch = m.epoch + 1 });
				}
				break;
			}
			case TSR_PGSM_A_LIST: {
				/* answered later, from the store as it is then (a
				 * real OSD lists on a worker thread) */
				int start = 0;
				if (x->msg.oid_len) {
					start = obj_index(x->msg.oid, x->msg.oid_len) + 1;
					if (start <= 0) {
						fail("osd.%d: LIST after an unknown name", o);
						break;
					}
				}
				push_event((struct event){ .at = now + rndn(12), .type = EV_LIST, .osd = o,
							   .pg = pg, .inc = osds[o].inc, .tid = x->token,
							   .epoch = (uint64_t)start, .ntemp = x->msg.max });
				break;
			}
			case TSR_PGSM_A_PG_TEMP: {
				struct event ev = { .at = now + 2 + rndn(5), .type = EV_MON, .osd = o,
						    .pg = pg, .tid = 3, .ntemp = x->ntemp };
				memcpy(ev.temp, x->temp, sizeof(ev.temp[0]) * (x->ntemp < MAXO ? x->ntemp : MAXO));
				if (x->ntemp > MAXO)
					ev.ntemp = MAXO;
				push_event(ev);
				break;
			}
			case TSR_PGSM_A_RESERVE:
				if (resv_out[o][pg])
					fail("osd.%d pg %d: RESERVE twice", o, pg);
				resv_out[o][pg] = 1;
				/* (the slots come a while later; an answer from
				 * an interval gone by is ignored) */
				push_event((struct event){ .at = now + rndn(80), .type = EV_GRANT,
							   .osd = o, .pg = pg, .inc = osds[o].inc,
							   .from = x->to, .epoch = tsr_pgsm_info(
							   osds[o].sm[pg])->same_interval_since });
				break;
			case TSR_PGSM_A_RELEASE:
				if (!resv_out[o][pg])
					fail("osd.%d pg %d: RELEASE without RESERVE", o, pg);
				resv_out[o][pg] = 0;
				break;
			case TSR_PGSM_A_DELETE: {
				store_wipe(&osds[o].st[pg]);
				while (osds[o].pend[pg]) {
					struct txn *t = osds[o].pend[pg];
					osds[o].pend[pg] = t->next;
					txn_free(t);
				}
				osds[o].pend_tail[pg] = NULL;
				break;
			}
			}
		}
		for (size_t i = 0; i < n; i++)
			tsr_pgsm_action_free(&acts[i]);
		free(acts);
		if (failure[0])
			return;
	}
	fail("osd.%d pg %d: actions did not settle", o, pg);
}

/* ---- OSD life ---------------------------------------------------------------------- */

static void
osd_feed(int o, int pg, uint64_t from, uint64_t to)
{
	for (uint64_t e = from; e <= to && !failure[0]; e++) {
		struct tsr_pg_mapview mv;
		mapview(map_at(e), pg, &mv);
		if (tsr_pgsm_advance_map(osds[o].sm[pg], &mv) < 0)
			fail("osd.%d pg %d: advance_map failed", o, pg);
		carry_out(o, pg);
	}
}

static int
mapped(int o, int pg, uint64_t e)
{
	struct tsr_pg_mapview mv;

	mapview(map_at(e), pg, &mv);
	for (uint32_t i = 0; i < mv.nacting; i++)
		if (mv.acting[i] == o)
			return 1;
	return 0;
}

static void
sm_new(int o, int pg)
{
	struct tsr_pgsm_conf c;

	memset(&c, 0, sizeof(c));
	c.pgid.pool = 1;
	c.pgid.pg = (uint32_t)pg;
	c.whoami = o;
	c.created = 1;
	c.log_max = log_max;
	c.backfill_window = bf_window;
	c.reserve_backfill = reserve;
	if (tsr_pgsm_create(&c, &osds[o].sm[pg]) < 0)
		fail("create failed");
}

/* The OSD has map e now (its incarnation is in the map). */
static void osd_retry_parked(int o);

static void
osd_map(int o, uint64_t e)
{
	struct osd *d = &osds[o];
	const struct simmap *m = map_at(e);

	d->epoch = e;
	if (!d->registered) {
		if (m->up[o] && m->up_from[o] > d->down_at) {
			/* booted: load what the store holds, and catch up */
			d->registered = m->up_from[o];
			for (int pg = 0; pg < NPG; pg++) {
				if (d->st[pg].exists) {
					char err[200] = "";
					sm_new(o, pg);
					for (size_t i = 0; i < d->st[pg].nkv; i++)
						if (tsr_pgsm_load(d->sm[pg], d->st[pg].kv[i].k, d->st[pg].kv[i].kl,
								  d->st[pg].kv[i].v, d->st[pg].kv[i].vl, err,
								  sizeof(err)) < 0)
							fail("osd.%d pg %d: load: %s", o, pg, err);
					uint64_t sis = tsr_pgsm_info(d->sm[pg])->same_interval_since;
					osd_feed(o, pg, sis ? sis : 1, e);
				}
			}
		}
	} else if (m->up_from[o] != d->registered || !m->up[o]) {
		/* marked down while running: this incarnation ends (the real
		 * OSD restarts its sessions and boots again) */
		return;
	}
	if (!d->registered)
		return;
	for (int pg = 0; pg < NPG && !failure[0]; pg++) {
		if (d->sm[pg]) {
			struct tsr_pg_mapview mv;
			mapview(m, pg, &mv);
			if (tsr_pgsm_advance_map(d->sm[pg], &mv) < 0)
				fail("osd.%d pg %d: advance_map failed", o, pg);
			if (verbose > 1)
				fprintf(stderr, "t=%" PRIu64 " osd.%d pg%d at epoch %" PRIu64 ": %s, %s "
					"(interval %" PRIu64 ")\n", now, o, pg, e,
					tsr_pgsm_state_name(tsr_pgsm_state(d->sm[pg])), tsr_pgsm_why(d->sm[pg]),
					tsr_pgsm_info(d->sm[pg])->same_interval_since);
			carry_out(o, pg);
		} else if (mapped(o, pg, e)) {
			sm_new(o, pg);
			osd_feed(o, pg, 1, e);
		}
	}
	osd_retry_parked(o);
}

static void
osd_crash(int o)
{
	struct osd *d = &osds[o];

	d->alive = 0;
	d->inc++;
	for (int q = 0; q < NPG; q++)
		resv_out[o][q] = 0;    /* (its slots die with it) */
	d->registered = 0;
	d->addr = 0;
	d->down_at = nmaps;
	for (int pg = 0; pg < NPG; pg++) {
		tsr_pgsm_destroy(d->sm[pg]);
		d->sm[pg] = NULL;
		while (d->pend[pg]) {
			struct txn *t = d->pend[pg];
			d->pend[pg] = t->next;
			txn_free(t);
		}
		d->pend_tail[pg] = NULL;
		d->commit_scheduled[pg] = 0;
	}
	for (size_t i = 0; i < d->nparked; i++)
		free(d->parked[i].buf);
	d->nparked = 0;
}

static void handle_msg(struct event *ev);
static void handle_op(struct event *ev);

static void
osd_retry_parked(int o)
{
	struct osd *d = &osds[o];
	size_t n = d->nparked;
	struct event *p = d->parked;

	d->parked = NULL;
	d->nparked = d->capparked = 0;
	for (size_t i = 0; i < n && !failure[0]; i++) {
		if (p[i].type == EV_MSG)
			handle_msg(&p[i]);
		else
			handle_op(&p[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(p[i].buf);
	free(p);
}

static void
park(int o, struct event *ev)
{
	struct osd *d = &osds[o];

	if (d->nparked == d->capparked) {
		d->capparked = d->capparked ? d->capparked * 2 : 16;
		d->parked = realloc(d->parked, d->capparked * sizeof(*d->parked));
	}
	d->parked[d->nparked] = *ev;
	if (ev->buf) {
		d->parked[d->nparked].buf = malloc(ev->len);
		memcpy(d->parked[d->nparked].buf, ev->buf, ev->len);
	}
	d->nparked++;
}

static void
handle_msg(struct event *ev)
{
	struct osd *d = &osds[ev->osd];
	struct tsr_pgmsg m;
	char err[256];
	int rc;

	if (!d->alive || d->addr == 0 || d->addr != ev->to_from ||
	    !osds[ev->from].alive || osds[ev->from].inc != ev->from_inc)
		return;   /* a session that no longer exists */
	if (d->registered == 0) {
		park(ev->osd, ev);    /* it has not read the map that boots it */
		return;
	}
	if (tsr_pgmsg_decode(ev->buf, ev->len, &m, err, sizeof(err)) < 0) {
		fail("osd.%d: a message from osd.%d does not decode: %s", ev->osd, ev->from, err);
		return;
	}
	if (m.map_epoch > d->epoch) {
		park(ev->osd, ev);
		tsr_pgmsg_free(&m);
		return;
	}
	if (d->sm[ev->pg] == NULL) {
		if (m.type == TSR_PGMSG_QUERY || m.type == TSR_PGMSG_PULL) {
			struct tsr_pgmsg r;
			struct payload none;
			struct event out;
			struct tsr_enc e;

			memset(&none, 0, sizeof(none));
			if (m.type == TSR_PGMSG_QUERY) {
				tsr_pgmsg_empty_notify(&m, ev->osd, d->epoch, &r);
			} else {
				memset(&r, 0, sizeof(r));
				r.type = TSR_PGMSG_PUSH;
				r.pgid = m.pgid;
				r.from = ev->osd;
				r.map_epoch = d->epoch;
				r.interval = m.interval;
				r.oid = malloc(m.oid_len);
				memcpy(r.oid, m.oid, m.oid_len);
				r.oid_len = m.oid_len;
				r.op = TSR_PGLOG_DELETE;
			}
			memset(&out, 0, sizeof(out));
			tsr_enc_init(&e);
			tsr_pgmsg_encode(&e, &r);
			out.buf = tsr_enc_take(&e, &out.len);
			out.type = EV_MSG;
			out.from = ev->osd;
			out.from_inc = d->inc;
			out.osd = ev->from;
			out.pg = ev->pg;
			out.to_from = map_at(d->epoch)->up[ev->from] ? map_at(d->epoch)->up_from[ev->from] : 0;
			out.at = now + 1 + rndn(6);
			if (out.at <= pair_last[ev->osd][ev->from])
				out.at = pair_last[ev->osd][ev->from] + 1;
			pair_last[ev->osd][ev->from] = out.at;
			push_event(out);
			tsr_pgmsg_free(&r);
		}
		tsr_pgmsg_free(&m);
		return;
	}
	cur_payload = ev->pl;
	if (verbose > 1)
		fprintf(stderr, "t=%" PRIu64 " osd.%d pg%d <- osd.%d %s (interval %" PRIu64
			", epoch %" PRIu64 "; here %s, %s)\n", now, ev->osd, ev->pg, ev->from,
			tsr_pgmsg_name(m.type), m.interval, m.map_epoch,
			tsr_pgsm_state_name(tsr_pgsm_state(d->sm[ev->pg])), tsr_pgsm_why(d->sm[ev->pg]));
	if (verbose > 2 && (m.type == TSR_PGMSG_NOTIFY || m.type == TSR_PGMSG_LOG))
		fprintf(stderr, "     info: les %" PRIu64 " history_les %" PRIu64 " head %" PRIu64
			"'%" PRIu64 " tail %" PRIu64 "'%" PRIu64 "%s\n", m.info.les, m.info.history_les,
			m.info.last_update.epoch, m.info.last_update.ver, m.info.log_tail.epoch,
			m.info.log_tail.ver, m.info.backfilling ? " backfilling" : "");
	rc = tsr_pgsm_recv(d->sm[ev->pg], &m, 1);
	if (rc == -EAGAIN)
		park(ev->osd, ev);
	else if (rc < 0)
		fail("osd.%d pg %d: recv of %s from osd.%d: %s", ev->osd, ev->pg,
		     tsr_pgmsg_name(m.type), ev->from, strerror(-rc));
	else
		carry_out(ev->osd, ev->pg);
	memset(&cur_payload, 0, sizeof(cur_payload));
	tsr_pgmsg_free(&m);
}

static void
handle_op(struct event *ev)
{
	struct osd *d = &osds[ev->osd];
	struct handle *h;
	struct tsr_pgsm_op op;
	char oid[2];
	struct cop *c = NULL;

	if (!d->alive || d->addr == 0 || d->addr != ev->to_from)
		return;
	if (d->registered == 0 || ev->map_epoch > d->epoch) {
		park(ev->osd, ev);
		return;
	}
	for (int i = 0; i < INFLIGHT; i++)
		if (cops[i].active && cops[i].tid == ev->tid)
			c = &cops[i];
	if (c == NULL)
		return;
	if (d->sm[ev->pg] == NULL) {
		push_event((struct event){ .at = now + 1, .type = EV_REPLY, .tid = ev->tid,
					   .result = -ESTALE });
		return;
	}
	if (nhandles == caphandles) {
		caphandles = caphandles ? caphandles * 2 : 256;
		handles = realloc(handles, caphandles * sizeof(*handles));
	}
	h = &handles[nhandles++];
	memset(h, 0, sizeof(*h));
	h->handle = ++next_handle;
	h->osd = ev->osd;
	h->pg = ev->pg;
	h->tid = ev->tid;
	h->kind = c->kind;
	h->obj = c->obj;
	h->val = c->val;
	oid[0] = 'o';
	oid[1] = (char)('0' + c->obj);
	memset(&op, 0, sizeof(op));
	op.handle = h->handle;
	op.reqid.client = 1;
	op.reqid.tid = ev->tid;
	op.kind = c->kind == OP_READ ? TSR_PGSM_OP_READ : TSR_PGSM_OP_WRITE;
	op.oid = oid;
	op.oid_len = 2;
	if (tsr_pgsm_op(d->sm[ev->pg], &op) < 0)
		fail("osd.%d: op refused", ev->osd);
	carry_out(ev->osd, ev->pg);
}

/* May osd o still answer with a's message: its machine is in the
 * message's interval (the runtime's published interval)? */
static int
answer_current(int o, int pg, const struct tsr_pgsm_action *a)
{
	const struct tsr_pgsm *sm = osds[o].sm[pg];

	return sm != NULL && tsr_pgsm_state(sm) != TSR_PGSM_DELETED &&
	       tsr_pgsm_info(sm)->same_interval_since == a->msg.interval;
}

static void
handle_commit(struct event *ev)
{
	struct osd *d = &osds[ev->osd];
	struct txn *t;
	struct pgstore *s;
	int pg = ev->pg;

	if (!d->alive || d->inc != ev->inc)
		return;
	d->commit_scheduled[pg] = 0;
	if ((t = d->pend[pg]) == NULL)
		return;
	d->pend[pg] = t->next;
	if (d->pend[pg] == NULL)
		d->pend_tail[pg] = NULL;
	s = &d->st[pg];
	s->exists = 1;
	for (int k = 0; k < NOBJ; k++)
		if (t->rm[k])
			memset(&s->objs[k], 0, sizeof(s->objs[k]));
	for (size_t i = 0; i < t->nkv; i++) {
		const struct tsr_pgsm_kv *kv = &t->kv[i];
		if (kv->range)
			kv_rm(s, kv->key, kv->key_len, kv->key2, kv->key2_len, 1);
		else if (kv->val)
			kv_set(s, kv->key, kv->key_len, kv->val, kv->val_len);
		else
			kv_rm(s, kv->key, kv->key_len, NULL, 0, 0);
	}
	if (t->obj.has) {
		struct obj *ob = &s->objs[t->obj.obj];
		ob->exists = t->obj.exists;
		ob->val = t->obj.exists ? t->obj.val : 0;
		ob->ev = t->obj.exists ? t->obj.ev : (struct tsr_ev){ 0, 0 };
	}
	if (d->pend[pg]) {
		d->commit_scheduled[pg] = 1;
		push_event((struct event){ .at = now + 1 + rndn(8), .type = EV_COMMIT, .osd = ev->osd,
					   .pg = pg, .inc = d->inc });
	}
	/* Durable now.  The machine hears of it later, in commit order (the
	 * PG's queue: other events may come first), and the answer it
	 * carries goes now, from the commit's thread, or (when the session
	 * had no room) just before the machine hears of it; either only
	 * while the machine is still in the write's interval. */
	if (t->answer && rndn(4) != 0) {
		if (answer_current(ev->osd, pg, &t->answer_act))
			sim_send(ev->osd, pg, &t->answer_act);
		t->answer = 0;
	}
	uint64_t at = now + rndn(6);
	if (at <= heard_last[ev->osd][pg])
		at = heard_last[ev->osd][pg] + 1;
	heard_last[ev->osd][pg] = at;
	push_event((struct event){ .at = at, .type = EV_HEARD, .osd = ev->osd, .pg = pg,
				   .inc = d->inc, .txn = t });
}

/* The machine hears of a commit (and a deferred answer goes first). */
static void
handle_heard(struct event *ev)
{
	struct osd *d = &osds[ev->osd];
	struct txn *t = ev->txn;
	int pg = ev->pg;

	if (d->alive && d->inc == ev->inc) {
		if (t->answer && answer_current(ev->osd, pg, &t->answer_act))
			sim_send(ev->osd, pg, &t->answer_act);
		if (d->sm[pg] && d->registered) {
			if (tsr_pgsm_committed(d->sm[pg], t->token) < 0)
				fail("osd.%d: committed failed", ev->osd);
			carry_out(ev->osd, pg);
		}
	}
	txn_free(t);
}

/* A LIST's answer: the objects after the start (ev->epoch: an index),
 * at most ev->ntemp, from the committed store. */
static void
handle_list(struct event *ev)
{
	struct osd *d = &osds[ev->osd];
	struct tsr_pgsm_objver objs[NOBJ];
	char names[NOBJ][2];
	size_t n = 0;
	int end = 1;

	if (!d->alive || d->inc != ev->inc || d->sm[ev->pg] == NULL)
		return;
	for (int k = (int)ev->epoch; k < NOBJ; k++) {
		const struct obj *ob = &d->st[ev->pg].objs[k];
		if (!ob->exists)
			continue;
		if (n == ev->ntemp) {
			end = 0;
			break;
		}
		names[n][0] = 'o';
		names[n][1] = (char)('0' + k);
		objs[n].oid = (uint8_t *)names[n];
		objs[n].oid_len = 2;
		objs[n].ev = ob->ev;
		n++;
	}
	if (tsr_pgsm_list_done(d->sm[ev->pg], ev->tid, objs, n, end) < 0)
		fail("osd.%d: list_done failed", ev->osd);
	carry_out(ev->osd, ev->pg);
}

/* ---- the client ------------------------------------------------------------------- */

static void
client_send(struct cop *c)
{
	struct simmap m = latest();
	struct tsr_pg_mapview mv;

	c->sent_at = now;
	mapview(&m, c->pg, &mv);
	if (mv.nacting == 0)
		return;
	push_event((struct event){ .at = now + 1 + rndn(5), .type = EV_OP, .osd = mv.acting[0],
				   .pg = c->pg, .tid = c->tid, .map_epoch = m.epoch,
				   .to_from = m.up_from[mv.acting[0]] });
}

static void
client_tick(void)
{
	for (int i = 0; i < INFLIGHT; i++) {
		struct cop *c = &cops[i];
		if (c->active) {
			if (now - c->sent_at > 150)
				client_send(c);     /* no answer: again, same id */
			continue;
		}
		if (client_stop)
			continue;
		int pg = (int)rndn(NPG), obj = (int)rndn(NOBJ), busy = 0;
		int kind = (int)rndn(100) < read_pct ? OP_READ : rndn(10) < 1 ? OP_DELETE : OP_WRITE;
		/* one write per object at a time, and one read beside it: the
		 * read may see the write before it is acknowledged, but never
		 * lose it again (a read of what a lone copy logged and a later
		 * peering dropped) */
		for (int k = 0; k < INFLIGHT; k++)
			busy |= cops[k].active && cops[k].pg == pg && cops[k].obj == obj &&
				(kind != OP_READ || cops[k].kind == OP_READ);
		if (busy)
			continue;
		memset(c, 0, sizeof(*c));
		c->active = 1;
		c->tid = ++next_tid;
		c->pg = pg;
		c->obj = obj;
		c->kind = kind;
		c->val = ++next_val;
		client_send(c);
	}
	push_event((struct event){ .at = now + 10, .type = EV_CLIENT });
}

static void
client_reply(struct event *ev)
{
	struct cop *c = NULL;

	for (int i = 0; i < INFLIGHT; i++)
		if (cops[i].active && cops[i].tid == ev->tid)
			c = &cops[i];
	if (c == NULL)
		return;       /* answered already (a duplicate) */
	if (ev->result == -ESTALE || ev->result == -EAGAIN) {
		c->sent_at = now - 140;   /* again soon, under a newer map */
		return;
	}
	struct model *md = &model[c->pg][c->obj];
	if (verbose > 1)
		fprintf(stderr, "t=%" PRIu64 " client: op %" PRIu64 " %s pg %d o%d val %" PRIu64
			" -> %d\n", now, c->tid, c->kind == OP_READ ? "read" : c->kind == OP_WRITE ?
			"write" : "delete", c->pg, c->obj, c->val, ev->result);
	switch (c->kind) {
	case OP_READ: {
		const struct cop *w = NULL;
		int as_acked, as_pending = 0;
		if (ev->result != 0 && ev->result != -ENOENT) {
			fail("read of pg %d o%d: error %d", c->pg, c->obj, ev->result);
			break;
		}
		for (int k = 0; k < INFLIGHT; k++)
			if (cops[k].active && cops[k].kind != OP_READ && cops[k].pg == c->pg &&
			    cops[k].obj == c->obj)
				w = &cops[k];
		as_acked = (ev->result == 0) == md->exists && (!md->exists || ev->rval == md->val);
		if (w)
			as_pending = w->kind == OP_WRITE ? ev->result == 0 && ev->rval == w->val
							 : ev->result == -ENOENT;
		if (!as_acked && !as_pending)
			fail("read of pg %d o%d: %s %" PRIu64 ", but the last acknowledged write "
			     "left %s %" PRIu64 "%s", c->pg, c->obj, ev->result == 0 ? "value" : "absent",
			     ev->rval, md->exists ? "value" : "absent", md->val,
			     w ? " (and the one under way another)" : "");
		else if (as_pending && !as_acked)
			md->seen = w->tid;
		else if (!as_pending && w && md->seen == w->tid)
			fail("read of pg %d o%d: %s %" PRIu64 " as the last acknowledged write left "
			     "it, but an earlier read saw the write under way (op %" PRIu64 "): it "
			     "was lost", c->pg, c->obj, ev->result == 0 ? "value" : "absent",
			     ev->rval, w->tid);
		reads_checked++;
		{
			struct simmap m = latest();
			struct tsr_pg_mapview mv;
			mapview(&m, c->pg, &mv);
			reads_low += mv.nacting < MIN_SIZE;
		}
		break;
	}
	case OP_WRITE:
		if (ev->result != 0) {
			fail("write of pg %d o%d: error %d", c->pg, c->obj, ev->result);
			break;
		}
		md->exists = 1;
		md->val = c->val;
		writes_acked++;
		break;
	case OP_DELETE:
		if (ev->result != 0 && ev->result != -ENOENT) {
			fail("delete of pg %d o%d: error %d", c->pg, c->obj, ev->result);
			break;
		}
		if ((ev->result == -ENOENT) == md->exists)
			fail("delete of pg %d o%d answered %d, but the object %s", c->pg, c->obj,
			     ev->result, md->exists ? "exists" : "does not exist");
		md->exists = 0;
		writes_acked++;
		break;
	}
	c->active = 0;
	ops_done++;
}

/* ---- faults ---------------------------------------------------------------------- */

static int max_down = 1;

static int
count_down(void)
{
	struct simmap m = latest();
	int n = 0;

	for (int o = 0; o < nosd; o++)
		n += !osds[o].alive || !m.up[o] || !m.in[o];
	return n;
}

static void
fault(void)
{
	struct simmap m = latest();
	int o = (int)rndn((uint64_t)nosd);
	int k = (int)rndn(10);

	if (k < 3) {                   /* crash */
		if (osds[o].alive && count_down() < max_down) {
			if (verbose)
				fprintf(stderr, "t=%" PRIu64 " crash osd.%d\n", now, o);
			osd_crash(o);
			push_event((struct event){ .at = now + 20 + rndn(40), .type = EV_MON,
						   .osd = o, .epoch = 0, .tid = 1 });
		}
	} else if (k < 6) {            /* restart a dead one */
		if (!osds[o].alive) {
			if (verbose)
				fprintf(stderr, "t=%" PRIu64 " start osd.%d\n", now, o);
			osds[o].alive = 1;
			osds[o].inc++;
			osds[o].epoch = 0;
			push_event((struct event){ .at = now + 5 + rndn(20), .type = EV_MON,
						   .osd = o, .tid = 2, .inc = osds[o].inc });
		}
	} else if (k < 7) {            /* mark out */
		if (m.in[o] && count_down() < max_down) {
			m.in[o] = 0;
			new_epoch(&m);
		}
	} else if (k < 9) {            /* mark in */
		if (!m.in[o]) {
			m.in[o] = 1;
			new_epoch(&m);
		}
	} else {                       /* wrongly marked down: it boots again */
		if (m.up[o] && osds[o].alive && osds[o].registered && count_down() < max_down) {
			if (verbose)
				fprintf(stderr, "t=%" PRIu64 " osd.%d marked down while alive\n", now, o);
			osd_crash(o);     /* its sessions and unpersisted work go */
			osds[o].alive = 1;
			osds[o].inc++;
			osds[o].epoch = 0;
			m.up[o] = 0;
			new_epoch(&m);
			push_event((struct event){ .at = now + 5 + rndn(20), .type = EV_MON,
						   .osd = o, .tid = 2, .inc = osds[o].inc });
		}
	}
}

/* The monitor's delayed decisions: tid 1 mark down, 2 boot, else up_thru. */
static void
mon_event(struct event *ev)
{
	struct simmap m = latest();
	int o = ev->osd;

	if (ev->tid == 1) {
		if (!osds[o].alive && m.up[o]) {
			m.up[o] = 0;
			new_epoch(&m);
		}
	} else if (ev->tid == 2) {
		if (osds[o].alive && osds[o].inc == ev->inc && osds[o].addr == 0) {
			m.up[o] = 1;
			m.up_from[o] = m.epoch + 1;
			m.up_thru[o] = 0;
			osds[o].addr = m.up_from[o];
			new_epoch(&m);
			/* the booting OSD gets the map up to now */
			osds[o].epoch = 0;
			push_event((struct event){ .at = now + 1, .type = EV_MAP, .osd = o,
						   .epoch = 1 });
		}
	} else if (ev->tid == 3) {
		m.ntemp[ev->pg] = ev->ntemp;
		memcpy(m.temp[ev->pg], ev->temp, sizeof(ev->temp));
		new_epoch(&m);
	} else {
		if (m.up[o] && m.up_from[o] == osds[o].registered && m.up_thru[o] < ev->epoch) {
			m.up_thru[o] = m.epoch + 1;
			new_epoch(&m);
		}
	}
}

/* ---- one seed ---------------------------------------------------------------------- */

static void
world_free(void)
{
	for (int o = 0; o < MAXO; o++) {
		osd_crash(o);
		for (int pg = 0; pg < NPG; pg++)
			store_wipe(&osds[o].st[pg]);
		free(osds[o].parked);
	}
	memset(osds, 0, sizeof(osds));
	for (size_t i = 0; i < nheap; i++) {
		free(heap[i].buf);
		if (heap[i].type == EV_HEARD)
			txn_free(heap[i].txn);
	}
	free(heap);
	heap = NULL;
	nheap = capheap = 0;
	for (size_t i = 0; i < nmaps; i++)
		free(maps[i]);
	free(maps);
	maps = NULL;
	nmaps = capmaps = 0;
	free(handles);
	handles = NULL;
	nhandles = caphandles = 0;
	for (int pg = 0; pg < NPG; pg++) {
		free(cents[pg]);
		cents[pg] = NULL;
		ncents[pg] = capcents[pg] = 0;
	}
}

static int
all_clean(char *why, size_t wl)
{
	struct simmap m = latest();

	for (int pg = 0; pg < NPG; pg++) {
		struct tsr_pg_mapview mv;
		mapview(&m, pg, &mv);
		if (mv.nacting == 0) {
			snprintf(why, wl, "pg %d has no acting set", pg);
			return 0;
		}
		struct osd *d = &osds[mv.acting[0]];
		if (d->sm[pg] == NULL || !tsr_pgsm_is_clean(d->sm[pg]) || d->epoch != m.epoch) {
			snprintf(why, wl, "pg %d on osd.%d: %s (%s), map %" PRIu64 " of %" PRIu64, pg,
				 mv.acting[0], d->sm[pg] ? tsr_pgsm_state_name(tsr_pgsm_state(d->sm[pg])) : "none",
				 d->sm[pg] ? tsr_pgsm_why(d->sm[pg]) : "", d->epoch, m.epoch);
			return 0;
		}
	}
	/* and the copies no longer needed are gone: a live OSD (every one
	 * is up in the map by now) holds no PG it is not in the acting set
	 * of */
	for (int o = 0; o < nosd; o++)
		for (int pg = 0; pg < NPG; pg++) {
			struct tsr_pg_mapview mv;
			int member = 0;
			if (!osds[o].alive || osds[o].sm[pg] == NULL)
				continue;
			mapview(&m, pg, &mv);
			for (uint32_t i = 0; i < mv.nacting; i++)
				member |= mv.acting[i] == o;
			if (!member) {
				snprintf(why, wl, "pg %d: osd.%d still holds a copy (%s: %s)", pg, o,
					 tsr_pgsm_state_name(tsr_pgsm_state(osds[o].sm[pg])),
					 tsr_pgsm_why(osds[o].sm[pg]));
				return 0;
			}
			/* its stored log is its log: every trim removed its keys */
			const struct tsr_pglog *l = tsr_pgsm_log(osds[o].sm[pg]);
			size_t nlog = 0;
			for (size_t i = 0; i < osds[o].st[pg].nkv; i++)
				nlog += osds[o].st[pg].kv[i].kl == 17 && osds[o].st[pg].kv[i].k[0] == 'L';
			if (nlog != l->n) {
				snprintf(why, wl, "pg %d: osd.%d stores %zu log entries, its log has %zu",
					 pg, o, nlog, l->n);
				return 0;
			}
		}
	for (int i = 0; i < INFLIGHT; i++)
		if (cops[i].active) {
			snprintf(why, wl, "client op %" PRIu64 " (pg %d o%d) unanswered", cops[i].tid,
				 cops[i].pg, cops[i].obj);
			return 0;
		}
	return 1;
}

static void
check_copies(void)
{
	struct simmap m = latest();

	for (int pg = 0; pg < NPG && !failure[0]; pg++) {
		struct tsr_pg_mapview mv;
		mapview(&m, pg, &mv);
		for (uint32_t i = 0; i < mv.nacting; i++) {
			struct osd *d = &osds[mv.acting[i]];
			for (int k = 0; k < NOBJ; k++) {
				const struct obj *ob = &d->st[pg].objs[k];
				const struct obj *pr = &osds[mv.acting[0]].st[pg].objs[k];
				if (ob->exists != model[pg][k].exists ||
				    (ob->exists && ob->val != model[pg][k].val)) {
					fail("pg %d o%d on osd.%d: %s %" PRIu64 ", acknowledged: %s %" PRIu64,
					     pg, k, mv.acting[i], ob->exists ? "value" : "absent", ob->val,
					     model[pg][k].exists ? "value" : "absent", model[pg][k].val);
					return;
				}
				if (ob->exists && tsr_ev_cmp(ob->ev, pr->ev) != 0)
					fail("pg %d o%d: osd.%d holds version %" PRIu64 "'%" PRIu64
					     ", the primary %" PRIu64 "'%" PRIu64, pg, k, mv.acting[i],
					     ob->ev.epoch, ob->ev.ver, pr->ev.epoch, pr->ev.ver);
			}
		}
	}
}


/* After every step of copy (o, pg): what it holds committed is recorded,
 * and it holds all that was ever committed in its log's span. */
static void
check_committed(int o, int pg)
{
	struct tsr_pgsm *sm = osds[o].sm[pg];
	if (sm == NULL || !osds[o].alive)
		return;
	const struct tsr_pg_info *in = tsr_pgsm_info(sm);
	const struct tsr_pglog *l = tsr_pgsm_log(sm);
	for (size_t i = 0; i < l->n; i++) {
		const struct tsr_pglog_entry *x = &l->e[i];
		if (tsr_ev_cmp(x->ev, in->committed) > 0)
			break;
		size_t k;
		for (k = 0; k < ncents[pg]; k++)
			if (tsr_ev_cmp(cents[pg][k].ev, x->ev) == 0)
				break;
		if (k < ncents[pg]) {
			if (cents[pg][k].tid != x->reqid.tid || cents[pg][k].client != x->reqid.client ||
			    cents[pg][k].op != x->op)
				fail("osd.%d pg %d: committed %llu'%llu differs from one recorded",
				     o, pg, (unsigned long long)x->ev.epoch, (unsigned long long)x->ev.ver);
			continue;
		}
		if (ncents[pg] == capcents[pg]) {
			struct cent *v;
			size_t cap = capcents[pg] ? 2 * capcents[pg] : 64;
			if ((v = realloc(cents[pg], cap * sizeof(*v))) == NULL) {
				fail("out of memory");
				return;
			}
			cents[pg] = v;
			capcents[pg] = cap;
		}
		cents[pg][ncents[pg]++] = (struct cent){ x->ev, x->reqid.client, x->reqid.tid, x->op };
	}
	if (in->backfilling)
		return;
	for (size_t k = 0; k < ncents[pg]; k++) {
		const struct cent *c = &cents[pg][k];
		if (tsr_ev_cmp(c->ev, l->tail) <= 0 || tsr_ev_cmp(c->ev, l->head) > 0)
			continue;
		int found = 0;
		for (size_t i = 0; i < l->n && !found; i++)
			found = tsr_ev_cmp(l->e[i].ev, c->ev) == 0 && l->e[i].reqid.tid == c->tid;
		if (!found)
			fail("osd.%d pg %d (state %s): committed %llu'%llu (tid %llu) is not in "
			     "its log (%llu'%llu, %llu'%llu]", o, pg,
			     tsr_pgsm_state_name(tsr_pgsm_state(sm)),
			     (unsigned long long)c->ev.epoch, (unsigned long long)c->ev.ver,
			     (unsigned long long)c->tid,
			     (unsigned long long)l->tail.epoch, (unsigned long long)l->tail.ver,
			     (unsigned long long)l->head.epoch, (unsigned long long)l->head.ver);
	}
	if (tsr_pgsm_state(sm) == TSR_PGSM_ACTIVE)
		for (size_t k = 0; k < ncents[pg]; k++)
			if (tsr_ev_cmp(cents[pg][k].ev, l->head) > 0)
				fail("osd.%d pg %d active with head %llu'%llu below committed %llu'%llu",
				     o, pg, (unsigned long long)l->head.epoch, (unsigned long long)l->head.ver,
				     (unsigned long long)cents[pg][k].ev.epoch,
				     (unsigned long long)cents[pg][k].ev.ver);
}

static int
run_seed(uint64_t seed, uint64_t steps)
{
	struct simmap m;
	uint64_t fault_until;
	char why[512] = "";

	rng = seed * 0x9E3779B97F4A7C15ull + 1;
	failure[0] = '\0';
	now = 0;
	seqno = 0;
	memset(cops, 0, sizeof(cops));
	memset(model, 0, sizeof(model));
	memset(pair_last, 0, sizeof(pair_last));
	memset(heard_last, 0, sizeof(heard_last));
	next_tid = next_val = ops_done = writes_acked = reads_checked = reads_low = 0;
	client_stop = 0;
	nosd = 4 + (int)rndn(MAXO - 3);
	max_down = 1 + (int)rndn(3);
	read_pct = rndn(3) == 0 ? 60 : 20;
	log_max = rndn(3) == 0 ? 100000 : rndn(2) ? 8 : 40;
	bf_window = rndn(2) ? 1 + (uint32_t)rndn(3) : 64;
	reserve = (int)rndn(2);
	for (int q = 0; q < NPG; q++) ncents[q] = 0;
	memset(resv_out, 0, sizeof(resv_out));
	memset(nlow_reads, 0, sizeof(nlow_reads));
	memset(&m, 0, sizeof(m));
	for (int o = 0; o < nosd; o++) {
		osds[o].alive = 1;
		osds[o].inc = 1;
		m.up[o] = m.in[o] = 1;
		m.up_from[o] = 1;
	}
	for (int o = 0; o < nosd; o++)
		osds[o].registered = osds[o].addr = 1;
	new_epoch(&m);
	push_event((struct event){ .at = 1, .type = EV_CLIENT });
	push_event((struct event){ .at = 1 + rndn(100), .type = EV_TICK });
	fault_until = steps;
	/* some seeds calm, some storms: faults every 5 to 80 time units */
	uint64_t gap = 5 + rndn(60);
	for (uint64_t t = 30; t < fault_until; t += gap / 2 + rndn(gap))
		push_event((struct event){ .at = t, .type = EV_FAULT });

	uint64_t end = fault_until + 20000;
	int healed = 0;
	while (nheap && !failure[0]) {
		struct event ev = pop_event();
		now = ev.at;
		if (now > end) {
			free(ev.buf);
			break;
		}
		if (!healed && now >= fault_until) {
			/* the end: everything comes back, in and up */
			struct simmap x = latest();
			int change = 0;
			healed = 1;
			for (int o = 0; o < nosd; o++) {
				if (!osds[o].alive) {
					osds[o].alive = 1;
					osds[o].inc++;
					osds[o].epoch = 0;
					push_event((struct event){ .at = now + 5, .type = EV_MON, .osd = o,
								   .tid = 2, .inc = osds[o].inc });
				}
				if (!x.in[o]) {
					x.in[o] = 1;
					change = 1;
				}
			}
			if (change)
				new_epoch(&x);
		}
		if (healed && now > fault_until + 3000)
			client_stop = 1;
		switch (ev.type) {
		case EV_MSG:
			if (ev.osd >= 0 && ev.osd < nosd)
				handle_msg(&ev);
			break;
		case EV_OP:
			handle_op(&ev);
			break;
		case EV_LIST:
			handle_list(&ev);
			break;
		case EV_COMMIT:
			handle_commit(&ev);
			break;
		case EV_HEARD:
			handle_heard(&ev);
			break;
		case EV_MAP:
			if (osds[ev.osd].alive && ev.epoch == osds[ev.osd].epoch + 1) {
				osd_map(ev.osd, ev.epoch);
				if (ev.epoch < nmaps)
					push_event((struct event){ .at = now + 1 + rndn(3), .type = EV_MAP,
								   .osd = ev.osd, .epoch = ev.epoch + 1 });
			}
			break;
		case EV_CLIENT:
			client_tick();
			break;
		case EV_GRANT: {
			struct osd *d = &osds[ev.osd];
			if (d->alive && d->inc == ev.inc && d->sm[ev.pg]) {
				if (tsr_pgsm_reserved(d->sm[ev.pg], ev.from, ev.epoch) < 0)
					fail("osd.%d: reserved failed", ev.osd);
				carry_out(ev.osd, ev.pg);
			}
			break;
		}
		case EV_TICK:
			/* the OSDs' timer: each live one ticks the PGs that ask */
			for (int o = 0; o < nosd; o++)
				for (int pg = 0; pg < NPG; pg++) {
					struct osd *d = &osds[o];
					if (!d->alive || !d->registered || d->sm[pg] == NULL ||
					    !tsr_pgsm_commit_due(d->sm[pg]))
						continue;
					if (tsr_pgsm_tick(d->sm[pg]) < 0)
						fail("osd.%d: tick failed", o);
					carry_out(o, pg);
				}
			push_event((struct event){ .at = now + 100, .type = EV_TICK });
			break;
		case EV_REPLY:
			client_reply(&ev);
			break;
		case EV_MON:
			mon_event(&ev);
			break;
		case EV_FAULT:
			fault();
			break;
		}
		free(ev.buf);
		if (client_stop && all_clean(why, sizeof(why)))
			break;
	}
	if (!failure[0] && !all_clean(why, sizeof(why)))
		fail("not clean %" PRIu64 " time units after the faults stopped: %s",
		     now - fault_until, why);
	for (int o = 0; o < nosd && failure[0] && verbose; o++)
		for (int pg = 0; pg < NPG; pg++) {
			const struct tsr_pg_info *in;
			if (osds[o].sm[pg] == NULL)
				continue;
			in = tsr_pgsm_info(osds[o].sm[pg]);
			fprintf(stderr, "  osd.%d pg%d: %s; les %" PRIu64 " history_les %" PRIu64
				" lec %" PRIu64 " head %" PRIu64 "'%" PRIu64 " tail %" PRIu64 "'%" PRIu64
				"%s, %zu missing\n", o, pg,
				tsr_pgsm_state_name(tsr_pgsm_state(osds[o].sm[pg])), in->les,
				in->history_les, in->lec, in->last_update.epoch, in->last_update.ver,
				in->log_tail.epoch, in->log_tail.ver,
				in->backfilling ? " backfilling" : "",
				tsr_pgsm_missing(osds[o].sm[pg])->n);
		}
	for (int q = 0; q < NPG && !failure[0]; q++)
		for (size_t i = 0; i < nlow_reads[q]; i++) {
			int f = 0;
			for (size_t k = 0; k < ncents[q] && !f; k++)
				f = tsr_ev_cmp(cents[q][k].ev, low_reads[q][i]) == 0;
			if (!f && !failure[0])
				fail("pg %d: a read below min_size showed %llu'%llu, never committed",
				     q, (unsigned long long)low_reads[q][i].epoch,
				     (unsigned long long)low_reads[q][i].ver);
		}
	for (int o = 0; o < nosd && !failure[0]; o++)
		for (int q = 0; q < NPG; q++)
			if (resv_out[o][q])
				fail("osd.%d pg %d: a reservation outstanding at the end", o, q);
	if (!failure[0])
		check_copies();
	if (verbose)
		fprintf(stderr, "seed %" PRIu64 ": %d OSDs, %" PRIu64 " epochs, %" PRIu64
			" writes acknowledged, %" PRIu64 " reads checked\n", seed, nosd,
			(uint64_t)nmaps, writes_acked, reads_checked);
	world_free();
	return failure[0] ? -1 : 0;
}

int
main(int argc, char **argv)
{
	uint64_t seeds = 200, first = 1, steps = 3000;
	uint64_t total_writes = 0, total_reads = 0, total_low = 0;
	clock_t t0 = clock();

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
			seeds = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--first") == 0 && i + 1 < argc)
			first = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--verbose") == 0)
			verbose++;
		else if (strcmp(argv[i], "--dump-corpus") == 0 && i + 1 < argc)
			dump_dir = argv[++i];
		else {
			fprintf(stderr, "usage: pgsim [--seeds N] [--first S] [--steps T] [--verbose]\n"
				"             [--dump-corpus DIR]\n"
				"Runs seeds S .. S+N-1 of the PG simulation; each is one deterministic\n"
				"history of faults, checked for lost or wrong acknowledged writes and for\n"
				"PGs that do not come back clean.\n");
			return strcmp(argv[i], "--help") == 0 ? 0 : 2;
		}
	}
	for (uint64_t s = first; s < first + seeds; s++) {
		if (run_seed(s, steps) < 0) {
			fprintf(stderr, "pgsim: seed %" PRIu64 " failed: %s\n"
				"replay: pgsim --first %" PRIu64 " --seeds 1 --steps %" PRIu64 " --verbose\n",
				s, failure, s, steps);
			return 1;
		}
		total_writes += writes_acked;
		total_reads += reads_checked;
		total_low += reads_low;
	}
	printf("pgsim: %" PRIu64 " seeds (%" PRIu64 "..%" PRIu64 "), %" PRIu64
	       " acknowledged writes and %" PRIu64 " reads checked (%" PRIu64 " below "
	       "min_size), %.1f s\n", seeds, first, first + seeds - 1, total_writes, total_reads,
	       total_low,
	       (double)(clock() - t0) / CLOCKS_PER_SEC);
	return 0;
}
