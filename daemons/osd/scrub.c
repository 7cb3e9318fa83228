/* scrub.c — scrub and deep scrub of the PGs this OSD is the primary of,
 * and its part in its peers' scrubs (pgrt.h, core/osd/scrub.h).
 *
 * A run walks the PG in name order, a chunk of osd_scrub_chunk_max
 * objects at a time, on the PG's shard:
 *
 *   1. once the writes under way on the objects left to compare are held
 *      by every copy (waiting a few seconds at most), the primary
 *      describes its next chunk (tsr_scrub_map_build) and asks
 *      every other member of the acting set for its map of the same range
 *      (SCRUB: after the cursor, up to the chunk's last name; to the end
 *      when the primary has no more);
 *   2. the members answer (SCRUB_MAP), each from its own store on its
 *      shard;
 *   3. with every map in, the primary compares them (tsr_scrub_compare).
 *      Copies that differ only in version or presence may be in the
 *      middle of a write: the chunk is asked again a little later, up to
 *      SCRUB_RETRIES times, then they are reported, unless the object is
 *      being written or was written since the ask (skipped).  Each inconsistent object is logged, named
 *      in the answer and in the PG's stats (health PG_DAMAGED); a repair
 *      run hands each bad copy to the PG machine (tsr_pgsm_repair), which
 *      marks it missing there and recovers it from the authoritative copy
 *      as it recovers anything else;
 *   4. the cursor moves to the end of what every copy described, and the
 *      next chunk follows until no copy has more.
 *
 * A run stops when the PG's interval changes (a member goes or comes),
 * when it stops being active, or when a member does not answer within
 * SCRUB_TIMEOUT_S.  The result of the last complete run (its time, the
 * objects still inconsistent) is kept in an attribute of the PG's meta
 * object, so a restart neither forgets damage nor scrubs everything again.
 *
 * The schedule: a PG is scrubbed osd_scrub_interval after its last scrub
 * and deep-scrubbed osd_deep_scrub_interval after its last deep scrub
 * (counted, for a copy never scrubbed, from when it came up here, with a
 * spread per PG so that they do not all come due at once), at most
 * osd_max_scrubs scheduled runs at once per OSD, only when active+clean.
 * `tessera pg scrub|deep-scrub|repair` runs one at once.
 */
#include "pgrt.h"

#include "log/log.h"
#include "util/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOGE(...) TSR_LOG_ERR(OSD, __VA_ARGS__)
#define LOGW(...) TSR_LOG_WARN(OSD, __VA_ARGS__)
#define LOGI(...) TSR_LOG_INFO(OSD, __VA_ARGS__)

#define SCRUB_RETRIES 3              /* asks of a chunk with unsettled objects */
#define SCRUB_RETRY_MS 200
#define SCRUB_WRITE_WAITS 25         /* for writes to land, SCRUB_RETRY_MS each */
#define SCRUB_TIMEOUT_S 60           /* for a member's map */
#define SCRUB_TICK_MS 1000           /* the scheduler looks this often */
#define SCRUB_BACKOFF_S 300          /* after a failed run, none on schedule */
#define SCRUB_MAX_WAITERS 64         /* clients waiting on one PG's scrub */
#define SCRUB_ATTR "\0scrub"         /* on the meta object: the last result */
#define SCRUB_ATTR_LEN 6

struct scrub_named {
	uint8_t *oid;
	size_t oid_len;
	char what[256];
};

static uint64_t
wall_s(void)
{
	return (uint64_t)time(NULL);
}

static const char *
pgname(const struct pgi *g, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRId64 ".%x", g->pgid.pool, g->pgid.pg);
	return buf;
}

/* A name as the stats show it: printable ASCII, others as \xHH, cut with
 * "..." to fit len (NUL included). */
static void
printable(const uint8_t *p, size_t n, char *out, size_t len)
{
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		char tmp[5];
		int k = p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\'
			? snprintf(tmp, sizeof(tmp), "%c", p[i])
			: snprintf(tmp, sizeof(tmp), "\\x%02x", p[i]);
		if (at + (size_t)k + 4 > len) {
			snprintf(out + at, len - at, "...");
			return;
		}
		memcpy(out + at, tmp, (size_t)k);
		at += (size_t)k;
	}
	out[at] = '\0';
}

/* ---- The last result, on the meta object --------------------------------------- */

/* u64 last_scrub, u64 last_deep, u32 errors, u32 nbad, nbad x bytes name */
static void
result_load(struct pgi *g)
{
	struct pg_scrub *s = &g->scrub;
	const struct tsr_backend_ops *b = g->ps.ops;
	uint8_t buf[1024];
	size_t len = 0;
	struct tsr_dec d;

	s->loaded = 1;
	s->base_s = wall_s();
	if (!g->ps.exists ||
	    b->getattr(g->ps.inst, &g->ps.cid, TSR_PGSTORE_META, TSR_PGSTORE_META_LEN,
		       SCRUB_ATTR, SCRUB_ATTR_LEN, buf, sizeof(buf), &len) < 0)
		return;
	tsr_dec_init(&d, buf, len);
	s->last_scrub = tsr_dec_u64(&d);
	s->last_deep = tsr_dec_u64(&d);
	s->last_errors = tsr_dec_u32(&d);
	s->last_nbad = tsr_dec_u32(&d);
	if (s->last_nbad > SCRUB_MAX_BAD)
		s->last_nbad = 0;
	for (uint32_t i = 0; i < s->last_nbad; i++) {
		const void *p;
		size_t n;
		tsr_dec_bytes(&d, &p, &n, SCRUB_BAD_NAME - 1);
		if (tsr_dec_error(&d))
			break;
		/* as printable() made it: the monitors refuse anything else, and
		 * with it the whole report */
		for (size_t k = 0; k < n; k++)
			if (((const uint8_t *)p)[k] < 0x20 || ((const uint8_t *)p)[k] > 0x7e)
				n = 0;
		if (n == 0) {
			s->last_nbad = i;
			break;
		}
		memcpy(s->last_bad[i], p, n);
		s->last_bad[i][n] = '\0';
	}
	if (s->last_errors < s->last_nbad)
		s->last_errors = s->last_nbad;
	if (tsr_dec_error(&d)) {
		char id[32];
		LOGW("pg %s: the last scrub's result in the store does not decode; "
		     "forgotten", pgname(g, id, sizeof(id)));
		s->last_scrub = s->last_deep = 0;
		s->last_errors = s->last_nbad = 0;
	}
}

static void
result_store(struct pgi *g)
{
	struct pg_scrub *s = &g->scrub;
	struct tsr_txn_op op;
	struct tsr_txn t;
	struct tsr_enc e;
	char id[32];
	int rc;

	tsr_enc_init(&e);
	tsr_enc_u64(&e, s->last_scrub);
	tsr_enc_u64(&e, s->last_deep);
	tsr_enc_u32(&e, s->last_errors);
	tsr_enc_u32(&e, s->last_nbad);
	for (uint32_t i = 0; i < s->last_nbad; i++)
		tsr_enc_bytes(&e, s->last_bad[i], strlen(s->last_bad[i]));
	if (tsr_enc_error(&e)) {
		tsr_enc_release(&e);
		return;
	}
	memset(&op, 0, sizeof(op));
	op.type = TSR_TXN_SETATTR;
	op.cid = g->ps.cid;
	op.oid = TSR_PGSTORE_META;
	op.oid_len = TSR_PGSTORE_META_LEN;
	op.key = SCRUB_ATTR;
	op.key_len = SCRUB_ATTR_LEN;
	op.val = e.buf;
	op.val_len = e.len;
	memset(&t, 0, sizeof(t));
	t.ops = &op;
	t.nops = 1;
	if ((rc = osd_pg_submit_wait(g->rt, &t)) < 0)
		LOGW("pg %s: keeping the scrub's result: %s (the next start scrubs it "
		     "again)", pgname(g, id, sizeof(id)), strerror(-rc));
	tsr_enc_release(&e);
}

/* ---- The run ------------------------------------------------------------------- */

/* What the scheduler sees (after every step). */
static void
publish(struct pgi *g)
{
	struct pg_scrub *s = &g->scrub;
	struct osd_pgrt *rt = g->rt;
	uint64_t spread, light, deep;

	/* a spread of up to a tenth of the interval, the same for a PG every
	 * time, so that PGs made together do not come due together */
	spread = (uint64_t)(g->pgid.pool * 2654435761u + g->pgid.pg * 40503u);
	pthread_mutex_lock(&rt->lock);
	s->pub.running = s->running;
	s->pub.poke_ns = !s->running ? 0
			 : s->retry_wait ? tsr_now_ns() + SCRUB_RETRY_MS * 1000000ull
			 : s->asked_ns + SCRUB_TIMEOUT_S * 1000000000ull;
	light = rt->scrub_interval_s ? (s->last_scrub ? s->last_scrub : s->base_s) +
		rt->scrub_interval_s + spread % (rt->scrub_interval_s / 10 + 1) : 0;
	deep = rt->deep_interval_s ? (s->last_deep ? s->last_deep : s->base_s) +
	       rt->deep_interval_s + spread % (rt->deep_interval_s / 10 + 1) : 0;
	s->pub.due_deep = deep && (light == 0 || deep <= light);
	s->pub.due_s = s->pub.due_deep ? deep : light;
	if (s->pub.due_s && s->pub.due_s < s->retry_after_s)
		s->pub.due_s = s->retry_after_s; /* it failed: the others first */
	pthread_mutex_unlock(&rt->lock);
}

static void
maps_free(struct pg_scrub *s)
{
	for (uint32_t i = 0; i < TSR_OSDMAP_MAX_SIZE; i++) {
		tsr_scrub_objs_free(s->maps[i].objs, s->maps[i].n);
		s->maps[i].objs = NULL;
		s->maps[i].n = 0;
		s->got[i] = s->ended[i] = 0;
	}
}

static void
run_free(struct pg_scrub *s)
{
	maps_free(s);
	free(s->cursor);
	s->cursor = NULL;
	s->cursor_len = 0;
	free(s->upto);
	s->upto = NULL;
	s->upto_len = 0;
	for (size_t i = 0; i < s->nnamed; i++)
		free(s->named[i].oid);
	free(s->named);
	s->named = NULL;
	s->nnamed = 0;
	s->more_named = 0;
}

/* The answer to PG_SCRUB (objop.h). */
static void
answer(struct pgi *g, struct cop *list, int rc)
{
	struct pg_scrub *s = &g->scrub;
	uint64_t epoch = g->ep ? tsr_osdmap_epoch_number(g->ep) : 0;
	struct tsr_enc e;

	tsr_enc_init(&e);
	if (rc == 0) {
		size_t mark;
		tsr_enc_u64(&e, s->objects);
		tsr_enc_u32(&e, (uint32_t)s->errors);
		tsr_enc_u32(&e, (uint32_t)s->repaired);
		tsr_enc_u8(&e, (uint8_t)s->more_named);
		mark = tsr_objop_list_begin(&e);
		for (size_t i = 0; i < s->nnamed; i++)
			tsr_objop_list_put(&e, s->named[i].oid, s->named[i].oid_len,
					   s->named[i].what, strlen(s->named[i].what));
		tsr_objop_list_end(&e, mark, (uint32_t)s->nnamed);
		if (tsr_enc_error(&e))
			rc = -ENOMEM;
	}
	while (list) {
		struct cop *op = list;
		list = op->next;
		op->next = NULL;
		osd_op_answer(op, rc, epoch, e.buf, rc == 0 ? e.len : 0);
	}
	tsr_enc_release(&e);
}

/* A run ended: its slot among the OSD's scrubs is free. */
static void
slot_release(struct osd_pgrt *rt)
{
	pthread_mutex_lock(&rt->lock);
	if (rt->scrubs)
		rt->scrubs--;
	pthread_mutex_unlock(&rt->lock);
}

static int start(struct pgi *g, unsigned flags, const char **why);
static void next_chunk(struct pgi *g);
static void compare(struct pgi *g);

/* The run is over (rc 0: complete). */
static void
finish(struct pgi *g, int rc, const char *why)
{
	struct pg_scrub *s = &g->scrub;
	struct cop *waiters = s->waiters;
	const char *kind = s->flags & TSR_OBJOP_SCRUB_REPAIR ? "repair"
			   : s->flags & TSR_OBJOP_SCRUB_DEEP ? "deep scrub" : "scrub";
	char id[32];

	pgname(g, id, sizeof(id));
	if (rc == 0) {
		s->last_scrub = wall_s();
		if (s->flags & TSR_OBJOP_SCRUB_DEEP)
			s->last_deep = s->last_scrub;
		s->last_errors = (uint32_t)s->errors;
		s->last_nbad = s->nbad;
		memcpy(s->last_bad, s->bad, sizeof(s->bad));
		result_store(g);
		tsr_log(TSR_SUB_OSD, s->errors ? TSR_LOG_ERROR : TSR_LOG_INFO,
			"pg %s: %s done in %" PRIu64 " s: %" PRIu64 " objects, %" PRIu64
			" inconsistent%s, %" PRIu64 " repaired, %" PRIu64 " skipped (being "
			"written)", id, kind, wall_s() - s->started_s, s->objects, s->errors,
			s->errors && !(s->flags & TSR_OBJOP_SCRUB_REPAIR)
			? " (`tessera pg repair` repairs them)" : "", s->repaired, s->busy);
	} else {
		LOGW("pg %s: %s stopped: %s", id, kind, why);
	}
	s->waiters = NULL;
	answer(g, waiters, rc);
	run_free(s);
	s->running = 0;
	s->retry_wait = 0;
	slot_release(g->rt);
	s->nwaiters = 0;
	if (rc < 0)
		s->retry_after_s = wall_s() + SCRUB_BACKOFF_S;
	if (s->next_asked) {
		/* asked during the run for what it did not do: a run of its
		 * own, or (this one failed) the same answer, which the client
		 * acts on (-EAGAIN: again, at the new primary) */
		struct cop *next = s->next_waiters;
		unsigned flags = s->next_flags;
		const char *no = NULL;
		int src;
		s->next_waiters = NULL;
		s->next_asked = 0;
		s->next_flags = 0;
		s->waiters = next;
		if (rc < 0 || (src = start(g, flags, &no)) < 0) {
			s->waiters = NULL;
			if (rc >= 0)
				LOGW("pg %s: the scrub asked for cannot start: %s", id, no);
			answer(g, next, rc < 0 ? rc : src);
		}
	}
	publish(g);
}

/* 0 when the PG may be scrubbed now, or what the client is answered
 * (why not, in *why): -ESTALE not its primary here (it places the scrub
 * again), -EAGAIN not active yet (it asks again), -EBUSY not clean. */
static int
may_scrub(struct pgi *g, const char **why)
{
	const struct tsr_pg_mapview *mv = tsr_pgsm_mapview(g->sm);

	if (mv->nacting == 0 || mv->acting[0] != g->rt->whoami) {
		*why = "this OSD is not its primary";
		return -ESTALE;
	}
	if (tsr_pgsm_state(g->sm) != TSR_PGSM_ACTIVE) {
		*why = "not active yet";
		return -EAGAIN;
	}
	if (!tsr_pgsm_is_clean(g->sm)) {
		*why = "not clean (recovering, degraded or remapped): scrub it once it is";
		return -EBUSY;
	}
	return 0;
}

static int
start(struct pgi *g, unsigned flags, const char **why)
{
	struct pg_scrub *s = &g->scrub;
	const struct tsr_pg_mapview *mv = tsr_pgsm_mapview(g->sm);
	char id[32];

	int rc;

	if (!s->loaded)
		result_load(g);
	if ((rc = may_scrub(g, why)) < 0)
		return rc;
	run_free(s);
	s->running = 1;
	s->flags = flags;
	s->interval = tsr_pgsm_info(g->sm)->same_interval_since;
	s->ncopies = mv->nacting;
	memcpy(s->osds, mv->acting, mv->nacting * sizeof(mv->acting[0]));
	s->retries = 0;
	s->retry_wait = 0;
	s->write_waits = 0;
	s->objects = s->errors = s->repaired = s->busy = 0;
	s->nbad = 0;
	memset(s->bad, 0, sizeof(s->bad));
	s->started_s = wall_s();
	pthread_mutex_lock(&g->rt->lock);
	g->rt->scrubs++;
	s->token = ++g->rt->scrub_tokens;
	pthread_mutex_unlock(&g->rt->lock);
	LOGI("pg %s: %s starts on %u copies", pgname(g, id, sizeof(id)),
	     flags & TSR_OBJOP_SCRUB_REPAIR ? "repair" : flags & TSR_OBJOP_SCRUB_DEEP
	     ? "deep scrub" : "scrub", s->ncopies);
	next_chunk(g);
	return 0;
}

/* Ask every copy for its map of the next chunk. */
static void
next_chunk(struct pgi *g)
{
	struct pg_scrub *s = &g->scrub;
	uint32_t chunk = g->rt->scrub_chunk ? g->rt->scrub_chunk : 64;
	int deep = (s->flags & TSR_OBJOP_SCRUB_DEEP) != 0, end = 1, rc;
	struct tsr_scrub_obj *objs = NULL;
	size_t n = 0;

	/* the copies are described once the writes under way on what is left
	 * to compare are held by all (a few seconds at most: then on, and
	 * the objects still being written are left out) */
	if (tsr_pgsm_writes_after(g->sm, s->cursor, s->cursor_len) &&
	    s->write_waits < SCRUB_WRITE_WAITS) {
		s->write_waits++;
		s->retry_wait = 1;
		publish(g);
		return;
	}
	s->write_waits = 0;
	maps_free(s);
	free(s->upto);
	s->upto = NULL;
	s->upto_len = 0;
	s->retry_wait = 0;
	rc = tsr_scrub_map_build(&g->ps, s->cursor, s->cursor_len, NULL, 0, chunk, deep, &objs,
				 &n, &end);
	if (rc < 0) {
		char why[128];
		snprintf(why, sizeof(why), "reading this OSD's copy: %s", strerror(-rc));
		finish(g, rc, why);
		return;
	}
	s->maps[0].objs = objs;
	s->maps[0].n = n;
	s->got[0] = 1;
	s->ended[0] = (uint8_t)end;
	if (!end && n) {
		s->upto = tsr_pglog_dup(objs[n - 1].oid, objs[n - 1].oid_len);
		s->upto_len = s->upto ? objs[n - 1].oid_len : 0;
	}
	s->asked_ns = tsr_now_ns();
	s->asked_head = tsr_pgsm_info(g->sm)->last_update;
	for (uint32_t k = 1; k < s->ncopies; k++) {
		struct tsr_pgmsg m;
		memset(&m, 0, sizeof(m));
		m.type = TSR_PGMSG_SCRUB;
		m.pgid = g->pgid;
		m.from = g->rt->whoami;
		m.map_epoch = g->ep ? tsr_osdmap_epoch_number(g->ep) : 0;
		m.interval = s->interval;
		m.token = s->token;
		m.oid = s->cursor;
		m.oid_len = s->cursor_len;
		m.oid2 = s->upto;
		m.oid2_len = s->upto_len;
		/* a member may hold objects the primary lacks: room for them */
		m.max = 2 * chunk < TSR_PGMSG_MAX_SCRUB ? 2 * chunk : TSR_PGMSG_MAX_SCRUB;
		m.deep = (uint8_t)deep;
		osd_pg_send(g, s->osds[k], &m);
	}
	if (s->ncopies == 1) {
		compare(g); /* a pool of one copy: nothing to wait for */
		return;
	}
	publish(g);
}

/* One inconsistent object: logged, counted, named, and (a repair)
 * handed to the machine. */
static void
take_bad(struct pgi *g, const struct tsr_scrub_bad *b)
{
	struct pg_scrub *s = &g->scrub;
	char what[256], name[SCRUB_BAD_NAME], id[32], errs[64];
	size_t at = 0;
	int fixed = 0, tried = 0;

	printable(b->oid, b->oid_len, name, sizeof(name));
	for (uint32_t k = 0; k < s->ncopies; k++) {
		int n;
		if (b->errs[k] == 0)
			continue;
		n = snprintf(what + at, sizeof(what) - at, "%sosd.%d: %s", at ? "; " : "",
			     s->osds[k], tsr_scrub_errs_str(b->errs[k], errs, sizeof(errs)));
		if (n > 0 && (size_t)n < sizeof(what) - at)
			at += (size_t)n;
	}
	if (b->auth >= 0)
		snprintf(what + at, sizeof(what) - at, "%s(authoritative: osd.%d, version "
			 "%" PRIu64 "'%" PRIu64 ")", at ? " " : "", s->osds[b->auth],
			 b->ev.epoch, b->ev.ver);
	else
		snprintf(what + at, sizeof(what) - at, "%s(no copy could be read whole)",
			 at ? " " : "");
	if ((s->flags & TSR_OBJOP_SCRUB_REPAIR) && b->auth >= 0) {
		int32_t bad[TSR_OSDMAP_MAX_SIZE];
		struct tsr_ev stored;
		size_t nbadc = 0;
		const char *no = NULL;
		int rc;
		for (uint32_t k = 0; k < s->ncopies; k++)
			if (b->errs[k])
				bad[nbadc++] = s->osds[k];
		tried = 1;
		if (b->tie) {
			no = "no majority of the copies agrees: which is right is not known "
			     "(restore the object from elsewhere, or rewrite it)";
		} else if (tsr_pgstore_version(&g->ps, b->oid, b->oid_len, &stored) == 0 &&
			   tsr_ev_cmp(stored, b->ev) != 0) {
			no = "written since the scrub saw it";
		} else if ((rc = tsr_pgsm_repair(g->sm, b->oid, b->oid_len, bad, nbadc,
						 b->ev)) == 0) {
			fixed = 1;
		} else {
			no = rc == -EBUSY ? "a write or recovery of it is under way"
			     : rc == -ESTALE ? "written since the scrub saw it" : strerror(-rc);
		}
		if (no)
			LOGW("pg %s: object %s not repaired: %s", pgname(g, id, sizeof(id)), name,
			     no);
	}
	tsr_log(TSR_SUB_OSD, TSR_LOG_ERROR, "pg %s: object %s is inconsistent: %s%s",
		pgname(g, id, sizeof(id)), name, what,
		tried == 0 ? "" : fixed ? "; repairing" : "; not repaired");
	if (fixed) {
		s->repaired++;
		size_t l = strlen(what);
		snprintf(what + l, sizeof(what) - l, "; repairing");
	} else {
		s->errors++;
		if (s->nbad < SCRUB_MAX_BAD)
			snprintf(s->bad[s->nbad++], SCRUB_BAD_NAME, "%s", name);
	}
	if (s->nnamed >= TSR_OBJOP_SCRUB_MAX_NAMED) {
		s->more_named = 1;
		return;
	}
	struct scrub_named *v = realloc(s->named, (s->nnamed + 1) * sizeof(*v));
	if (v == NULL) {
		s->more_named = 1;
		return;
	}
	s->named = v;
	v = &s->named[s->nnamed];
	if ((v->oid = tsr_pglog_dup(b->oid, b->oid_len)) == NULL) {
		s->more_named = 1;
		return;
	}
	v->oid_len = b->oid_len;
	snprintf(v->what, sizeof(v->what), "%s", what);
	s->nnamed++;
}

/* Every map of the chunk is in: compare, then on. */
static void
compare(struct pgi *g)
{
	struct pg_scrub *s = &g->scrub;
	const uint8_t *bound = s->upto;
	size_t bound_len = s->upto_len, nbad = 0, unsettled = 0, counted = 0;
	struct tsr_scrub_bad *bad = NULL;
	int final = s->retries >= SCRUB_RETRIES, all_ended = 1, rc;
	char why[160];

	/* only as far as every copy described */
	for (uint32_t k = 0; k < s->ncopies; k++) {
		const struct tsr_scrub_map *m = &s->maps[k];
		if (s->ended[k])
			continue;
		all_ended = 0;
		if (m->n == 0)
			continue;
		if (bound == NULL || tsr_oid_cmp(m->objs[m->n - 1].oid, m->objs[m->n - 1].oid_len,
						 bound, bound_len) < 0) {
			bound = m->objs[m->n - 1].oid;
			bound_len = m->objs[m->n - 1].oid_len;
		}
	}
	if (!all_ended && bound == NULL) {
		/* a copy whose listed objects all went before it described
		 * them: ask again, within bounds */
		if (s->retries < SCRUB_RETRIES) {
			s->retries++;
			s->retry_wait = 1;
			publish(g);
			return;
		}
		for (uint32_t k = 0; k < s->ncopies; k++)
			if (!s->ended[k] && s->maps[k].n == 0) {
				snprintf(why, sizeof(why), "osd.%d said it had more objects and "
					 "listed none, %u times", s->osds[k], SCRUB_RETRIES + 1);
				break;
			}
		finish(g, -EPROTO, why);
		return;
	}
	rc = tsr_scrub_compare(s->maps, s->ncopies, bound, bound ? bound_len : 0, final, &bad,
			       &nbad, &unsettled);
	if (rc < 0) {
		snprintf(why, sizeof(why), "comparing the copies: %s", strerror(-rc));
		finish(g, rc, why);
		return;
	}
	if (unsettled && !final) {
		/* writes under way, maybe: the same chunk again shortly */
		free(bad);
		s->retries++;
		s->retry_wait = 1;
		publish(g);
		return;
	}
	for (size_t i = 0; i < nbad; i++) {
		struct tsr_ev last;
		/* a write of it under way now, or made since the maps were
		 * asked (its copies differ for that), or its recovery: the next
		 * scrub sees it settled */
		if (tsr_pgsm_object_busy(g->sm, bad[i].oid, bad[i].oid_len) ||
		    (tsr_pgsm_last_write(g->sm, bad[i].oid, bad[i].oid_len, &last) &&
		     tsr_ev_cmp(last, s->asked_head) > 0)) {
			s->busy++;
			continue;
		}
		take_bad(g, &bad[i]);
	}
	free(bad);
	for (size_t i = 0; i < s->maps[0].n; i++)
		if (bound == NULL || tsr_oid_cmp(s->maps[0].objs[i].oid, s->maps[0].objs[i].oid_len,
						 bound, bound_len) <= 0)
			counted++;
	s->objects += counted;
	if (bound == NULL) {
		finish(g, 0, NULL);
		return;
	}
	uint8_t *c = tsr_pglog_dup(bound, bound_len);
	if (c == NULL) {
		finish(g, -ENOMEM, "out of memory");
		return;
	}
	free(s->cursor);
	s->cursor = c;
	s->cursor_len = bound_len;
	s->retries = 0;
	next_chunk(g);
}

static int
all_got(const struct pg_scrub *s)
{
	for (uint32_t k = 0; k < s->ncopies; k++)
		if (!s->got[k])
			return 0;
	return 1;
}

/* ---- Entry points --------------------------------------------------------------- */

void
osd_scrub_request(struct pgi *g, struct cop *op)
{
	struct pg_scrub *s = &g->scrub;
	unsigned flags = op->op.ops[0].flags;
	const char *why = NULL;
	char id[32];
	int rc;

	if (!s->loaded)
		result_load(g);
	if (flags & TSR_OBJOP_SCRUB_REPAIR)
		flags |= TSR_OBJOP_SCRUB_DEEP; /* a repair compares the data too */
	if (s->running && s->nwaiters >= SCRUB_MAX_WAITERS) {
		answer(g, op, -EBUSY);
		return;
	}
	if (s->running) {
		s->nwaiters++;
		if ((s->flags & flags) == flags) {
			op->next = s->waiters; /* this run does it */
			s->waiters = op;
		} else {
			op->next = s->next_waiters;
			s->next_waiters = op;
			s->next_flags |= flags;
			s->next_asked = 1;
		}
		return;
	}
	op->next = NULL;
	s->waiters = op;
	s->nwaiters = 1;
	if ((rc = start(g, flags, &why)) < 0) {
		s->waiters = NULL;
		s->nwaiters = 0;
		LOGI("pg %s: scrub asked for by %s refused: %s", pgname(g, id, sizeof(id)),
		     op->conn ? tsr_conn_peer(op->conn) : "a client", why);
		answer(g, op, rc);
	}
}

void
osd_scrub_event(struct pgi *g, int kind)
{
	struct pg_scrub *s = &g->scrub;
	const char *why = NULL;

	if (!s->loaded) {
		result_load(g);
		publish(g);
	}
	if (kind == SCRUB_EV_SCHED) {
		int deep;
		if (s->running)
			return;
		pthread_mutex_lock(&g->rt->lock);
		deep = s->pub.due_deep;
		pthread_mutex_unlock(&g->rt->lock);
		if (start(g, (deep ? TSR_OBJOP_SCRUB_DEEP : 0) |
			  (g->rt->scrub_auto_repair ? TSR_OBJOP_SCRUB_REPAIR |
			   TSR_OBJOP_SCRUB_DEEP : 0), &why) < 0)
			publish(g);
		return;
	}
	if (!s->running)
		return;
	if (s->retry_wait) {
		next_chunk(g);
		return;
	}
	if (!all_got(s) && tsr_now_ns() - s->asked_ns > SCRUB_TIMEOUT_S * 1000000000ull) {
		char what[96] = "";
		for (uint32_t k = 1; k < s->ncopies; k++)
			if (!s->got[k]) {
				snprintf(what, sizeof(what), "osd.%d sent no scrub map in %d s",
					 s->osds[k], SCRUB_TIMEOUT_S);
				break;
			}
		finish(g, -ETIMEDOUT, what);
	}
}

int
osd_scrub_msg(struct pgi *g, struct tsr_pgmsg *m)
{
	struct pg_scrub *s = &g->scrub;
	const struct tsr_pg_mapview *mv = tsr_pgsm_mapview(g->sm);
	uint64_t epoch = g->ep ? tsr_osdmap_epoch_number(g->ep) : 0;

	if (m->map_epoch > epoch)
		return -EAGAIN;
	if (m->type == TSR_PGMSG_SCRUB) {
		struct tsr_scrub_obj *objs = NULL;
		struct tsr_pgmsg r;
		size_t n = 0;
		int end = 1, rc;
		char id[32];

		/* a member, asked by its primary in this interval */
		if (tsr_pgsm_state(g->sm) != TSR_PGSM_REPLICA || mv->nacting == 0 ||
		    mv->acting[0] != m->from ||
		    m->interval != tsr_pgsm_info(g->sm)->same_interval_since)
			return 0;
		rc = tsr_scrub_map_build(&g->ps, m->oid, m->oid_len, m->oid2, m->oid2_len, m->max,
					 m->deep, &objs, &n, &end);
		if (rc < 0) {
			LOGE("pg %s: a scrub map for osd.%d: reading the store: %s",
			     pgname(g, id, sizeof(id)), m->from, strerror(-rc));
			return 0; /* the primary's run times out */
		}
		/* within three quarters of a message front (ms_max_front),
		 * however long the names: the primary compares up to the last
		 * sent */
		size_t bytes = 0, keep = 0, cap = (size_t)g->rt->max_front / 4 * 3;
		while (keep < n && (keep == 0 || bytes + 64 + objs[keep].oid_len <= cap))
			bytes += 64 + objs[keep++].oid_len;
		if (keep < n) {
			for (size_t i = keep; i < n; i++)
				free(objs[i].oid);
			n = keep;
			end = 0;
		}
		memset(&r, 0, sizeof(r));
		r.type = TSR_PGMSG_SCRUB_MAP;
		r.pgid = g->pgid;
		r.from = g->rt->whoami;
		r.map_epoch = epoch;
		r.interval = m->interval;
		r.token = m->token;
		r.done = (uint8_t)end;
		r.sobjs = objs;
		r.nsobjs = n;
		osd_pg_send(g, m->from, &r);
		tsr_scrub_objs_free(objs, n);
		return 0;
	}
	if (m->type == TSR_PGMSG_SCRUB_MAP) {
		if (!s->running || m->token != s->token || m->interval != s->interval)
			return 0;
		for (uint32_t k = 1; k < s->ncopies; k++) {
			if (s->osds[k] != m->from || s->got[k])
				continue;
			s->maps[k].objs = m->sobjs;
			s->maps[k].n = m->nsobjs;
			m->sobjs = NULL;
			m->nsobjs = 0;
			s->got[k] = 1;
			s->ended[k] = m->done;
			if (all_got(s))
				compare(g);
			break;
		}
	}
	return 0;
}

void
osd_scrub_check(struct pgi *g)
{
	struct pg_scrub *s = &g->scrub;

	if (!s->running)
		return;
	if (tsr_pgsm_state(g->sm) != TSR_PGSM_ACTIVE ||
	    tsr_pgsm_info(g->sm)->same_interval_since != s->interval)
		finish(g, -EAGAIN, "the acting set changed");
}

void
osd_scrub_stat(struct pgi *g, struct tsr_mon_pg_stat *st)
{
	struct pg_scrub *s = &g->scrub;

	if (!s->loaded) {
		result_load(g);
		publish(g);
	}
	if (s->running) {
		st->state |= TSR_PG_ST_SCRUBBING;
		if (s->flags & TSR_OBJOP_SCRUB_DEEP)
			st->state |= TSR_PG_ST_DEEP;
		if (s->flags & TSR_OBJOP_SCRUB_REPAIR)
			st->state |= TSR_PG_ST_REPAIR;
	}
	if (s->last_errors)
		st->state |= TSR_PG_ST_INCONSISTENT;
	st->last_scrub = s->last_scrub;
	st->last_deep_scrub = s->last_deep;
	st->scrub_errors = s->last_errors;
	st->nbad = s->last_nbad;
	memcpy(st->bad, s->last_bad, sizeof(st->bad));
}

void
osd_scrub_drop(struct pgi *g)
{
	struct pg_scrub *s = &g->scrub;
	struct cop *w = s->waiters, *n = s->next_waiters;

	s->waiters = s->next_waiters = NULL;
	answer(g, w, -EAGAIN);
	answer(g, n, -EAGAIN);
	if (s->running)
		slot_release(g->rt);
	s->running = 0;
	run_free(s);
}

void
osd_scrub_tick(struct osd_pgrt *rt)
{
	uint64_t now = tsr_now_ns(), now_s = wall_s();
	struct pgi *post[64];
	int kinds[64];
	size_t n = 0;

	if (now - rt->scrub_tick_ns < SCRUB_TICK_MS * 1000000ull / 5)
		return;
	rt->scrub_tick_ns = now;
	pthread_mutex_lock(&rt->lock);
	uint32_t running = rt->scrubs;
	for (struct pgi *g = rt->pgs; g && n < 64; g = g->next) {
		struct pg_scrub *s = &g->scrub;
		if (g->gone || g->damaged || !g->primary || !s->pub.running)
			continue;
		if (s->pub.poke_ns && now >= s->pub.poke_ns) {
			s->pub.poke_ns = now + SCRUB_TICK_MS * 1000000ull;
			post[n] = g;
			kinds[n++] = SCRUB_EV_TICK;
		}
	}
	/* the most overdue first: one scrubbed again soon must not starve
	 * those never scrubbed */
	while (running < rt->max_scrubs && n < 64) {
		struct pgi *best = NULL;
		for (struct pgi *g = rt->pgs; g; g = g->next) {
			struct pg_scrub *s = &g->scrub;
			if (g->gone || g->damaged || !g->primary || !g->clean || s->pub.running ||
			    s->pub.due_s == 0 || now_s < s->pub.due_s)
				continue;
			if (best == NULL || s->pub.due_s < best->scrub.pub.due_s)
				best = g;
		}
		if (best == NULL)
			break;
		best->scrub.pub.due_s = now_s + 60; /* not again until it answers */
		best->scrub.pub.running = 1;
		running++;
		post[n] = best;
		kinds[n++] = SCRUB_EV_SCHED;
	}
	for (size_t i = 0; i < n; i++) {
		struct ev *e = calloc(1, sizeof(*e));
		if (e == NULL)
			break;
		e->type = EV_SCRUB;
		e->rc = kinds[i];
		e->g = post[i];
		osd_pg_post(post[i], e);
	}
	pthread_mutex_unlock(&rt->lock);
}
