/* pgsm.c — a placement group as a state machine (pgsm.h). */
#include "osd/pgsm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- state ---------------------------------------------------------------------- */

/* Another OSD the primary heard from (or asked) in this interval. */
struct peer {
	int32_t osd;
	uint8_t queried;             /* QUERY sent */
	uint8_t answered;            /* NOTIFY in: info and missing hold */
	uint8_t activated;           /* ACTIVATE_ACK in (acting members) */
	uint64_t queried_from;       /* its up_from when asked */
	struct tsr_pg_info info;
	struct tsr_missing missing;
};

/* A write the primary ordered, until every member holds it. */
struct inflight {
	uint64_t handle;
	struct tsr_ev ev;
	int32_t result;
	uint8_t *oid;
	size_t oid_len;
	uint32_t waiting;            /* bit i: acting[i] has not committed */
};

/* A client op that cannot run yet. */
struct queued {
	struct tsr_pgsm_op op;       /* oid owned */
	struct tsr_ev dup_of;        /* waits for this write to complete, or
					(0,0) */
};

/* A pull or push under way. */
struct recovery {
	uint8_t *oid;
	size_t oid_len;
	int32_t osd;                 /* the target of a push, the source of a pull */
	uint64_t up_from;            /* its incarnation then */
	uint8_t pull;
	struct tsr_ev ev;
};

/* What a PERSIST's commit triggers. */
enum pend_kind {
	PEND_NONE,
	PEND_ACTIVATED,             /* primary: its own activation */
	PEND_ACTIVATE_ACK,          /* member: answer ACTIVATE */
	PEND_WRITE,                 /* primary: its own copy of ev */
	PEND_REPOP,                 /* member: answer REPOP ev */
	PEND_PUSHED,                /* an object arrived (ev) */
	PEND_PROGRESS,              /* member: a backfill position (ev.ver:
				       done) */
};

struct pend {
	uint64_t token;
	int kind;
	uint64_t les;                /* the les this persist wrote */
	uint64_t interval;
	int32_t to;
	struct tsr_ev ev;
	uint8_t *oid;
	size_t oid_len;
};

struct tsr_pgsm {
	struct tsr_pgsm_conf conf;
	int state;
	int role;                    /* 0 primary, 1 member, 2 stray */
	int have_map;
	uint64_t told_up_from;       /* a stray: our up_from when we last
					told the primary of our copy */
	struct tsr_pg_mapview cur;
	int my_index;                /* in cur.acting, or -1 */

	struct tsr_pg_info info;
	struct tsr_pg_intervals past;
	struct tsr_pglog log;
	struct tsr_missing missing;

	struct peer *peers;
	size_t npeers;
	int32_t auth;                /* the OSD whose log is authoritative */
	int own_activated;

	struct inflight *fl;
	size_t nfl, capfl;
	struct queued *q;
	size_t nq, capq;
	struct recovery *rec;
	size_t nrec, caprec;
	struct pend *pend;
	size_t npend, cappend;

	uint64_t exec_handle;        /* an EXEC whose exec_done is due */
	struct tsr_reqid exec_reqid;
	struct tsr_ev exec_ev;
	uint8_t *exec_oid;
	size_t exec_oid_len;
	int exec_pending;

	int clean;
	uint64_t les_durable;        /* the newest les a commit has made durable:
					what others are told (one they learned
					from memory could die with us) */
	int unfound;                 /* recovery found no source for an object */

	/* backfill, on the primary: one member at a time, in windows of
	 * objects compared between the two listings */
	int32_t bf_target;           /* the member being backfilled, or -1 */
	int bf_asked, bf_granted;    /* RESERVE sent for it; its answer came */
	int bf_listing, bf_scanning; /* LIST and SCAN answers due */
	struct tsr_pgsm_objver *bf_local, *bf_remote;
	size_t nbf_local, nbf_remote;
	int bf_local_end, bf_remote_end;
	uint8_t *bf_sent;            /* the last_backfill sent to the target */
	size_t bf_sent_len;
	int bf_done_sent;
	int bf_want;                 /* a window waits for writes to drain */
	uint64_t bf_list_token;      /* the LIST whose answer is due */
	struct tsr_ev bf_list_head;  /* the log's head when it was asked */
	int bf_prog_pending, bf_prog_done; /* a window's end, not yet sent */
	uint8_t *bf_prog;
	size_t bf_prog_len;
	int temp_asked;              /* PG_TEMP asked in this interval (asked
					again with every map while it holds) */
	uint32_t ntemp;
	int32_t temp[TSR_OSDMAP_MAX_SIZE];
	/* on a member: the SCAN its LIST answers */
	int32_t scan_for;
	uint64_t scan_token;
	uint64_t next_token;
	struct tsr_ev trim_to;       /* the primary's last trim */
	struct tsr_ev sent_committed;/* the primary's info.committed as last
					sent to the members (this interval) */

	struct tsr_pgsm_action *act;
	size_t nact, capact;
	char why[256];
};

enum { ROLE_PRIMARY, ROLE_MEMBER, ROLE_STRAY };

const char *
tsr_pgsm_state_name(int state)
{
	switch (state) {
#define TSR_PGSM_STATE_NAME(name, n, label) case (n): return label;
	TSR_PGSM_STATES(TSR_PGSM_STATE_NAME)
#undef TSR_PGSM_STATE_NAME
	}
	return "unknown";
}

static void
why(struct tsr_pgsm *sm, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sm->why, sizeof(sm->why), fmt, ap);
	va_end(ap);
}

/* Allocation failures are rare enough that the machine treats them as
 * fatal to the call: every grow() either succeeds or the process has far
 * bigger problems; the callers check and return -ENOMEM. */
static int
grow(void **p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 8;
	void *q = realloc(*p, c * size);
	if (q == NULL)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* ---- actions ------------------------------------------------------------------- */

void
tsr_pgsm_kv_free(struct tsr_pgsm_kv *kv, size_t nkv, struct tsr_pgsm_name *rm, size_t nrm)
{
	for (size_t i = 0; i < nkv; i++) {
		free(kv[i].key);
		free(kv[i].val);
		free(kv[i].key2);
	}
	free(kv);
	for (size_t i = 0; i < nrm; i++)
		free(rm[i].p);
	free(rm);
}

void
tsr_pgsm_action_free(struct tsr_pgsm_action *a)
{
	tsr_pgmsg_free(&a->msg);
	tsr_pgsm_kv_free(a->kv, a->nkv, a->rm, a->nrm);
	memset(a, 0, sizeof(*a));
}

void
tsr_pgsm_actions_clear(struct tsr_pgsm *sm)
{
	for (size_t i = 0; i < sm->nact; i++)
		tsr_pgsm_action_free(&sm->act[i]);
	sm->nact = 0;
}

struct tsr_pgsm_action *
tsr_pgsm_actions(struct tsr_pgsm *sm, size_t *n)
{
	*n = sm->nact;
	return sm->act;
}

static struct tsr_pgsm_action *
action_new(struct tsr_pgsm *sm, int type)
{
	struct tsr_pgsm_action *a;

	if (grow((void **)&sm->act, &sm->capact, sm->nact, sizeof(*a)) < 0)
		return NULL;
	a = &sm->act[sm->nact++];
	memset(a, 0, sizeof(*a));
	a->type = type;
	return a;
}

/* a's message to osd `to`, of this interval; the caller fills the rest */
static void
msg_head(struct tsr_pgsm *sm, struct tsr_pgsm_action *a, int32_t to, int type,
	 uint64_t interval)
{
	a->to = to;
	a->msg.type = (uint8_t)type;
	a->msg.pgid = sm->conf.pgid;
	a->msg.from = sm->conf.whoami;
	a->msg.map_epoch = sm->cur.epoch;
	a->msg.interval = interval;
}

/* A message to osd, of this interval; the caller fills the rest. */
static struct tsr_pgsm_action *
send_new(struct tsr_pgsm *sm, int32_t to, int type, uint64_t interval)
{
	struct tsr_pgsm_action *a = action_new(sm, TSR_PGSM_A_SEND);

	if (a != NULL)
		msg_head(sm, a, to, type, interval);
	return a;
}

static void
reply(struct tsr_pgsm *sm, uint64_t handle, int32_t result, struct tsr_ev ev)
{
	struct tsr_pgsm_action *a = action_new(sm, TSR_PGSM_A_REPLY);

	if (a) {
		a->handle = handle;
		a->result = result;
		a->ev = ev;
	}
}

/* ---- what PERSIST writes ------------------------------------------------------- *
 *
 * The PG's meta object holds, in its omap:
 *   "I"               the info, then the past intervals (two envelopes)
 *   "L" be64 epoch be64 ver   one log entry
 *   "M" oid           one missing object: ev need, ev have
 * Keys sort so that the log comes out in version order.
 */

struct persist {
	struct tsr_pgsm_kv *kv;
	size_t nkv, cap;
	struct tsr_pgsm_name *rm;
	size_t nrm, caprm;
	int err;
};

static void
kv_add(struct persist *p, const void *key, size_t klen, const void *val, size_t vlen,
       const void *key2, size_t k2len, int range)
{
	struct tsr_pgsm_kv *kv;

	if (p->err || grow((void **)&p->kv, &p->cap, p->nkv, sizeof(*kv)) < 0) {
		p->err = -ENOMEM;
		return;
	}
	kv = &p->kv[p->nkv];
	memset(kv, 0, sizeof(*kv));
	kv->key = tsr_pglog_dup(key, klen);
	kv->key_len = klen;
	if (val) {
		kv->val = tsr_pglog_dup(val, vlen);
		kv->val_len = vlen;
	}
	if (range) {
		kv->range = 1;
		kv->key2 = tsr_pglog_dup(key2, k2len);
		kv->key2_len = k2len;
	}
	if (kv->key == NULL || (val && kv->val == NULL) || (range && kv->key2 == NULL)) {
		free(kv->key);
		free(kv->val);
		free(kv->key2);
		p->err = -ENOMEM;
		return;
	}
	p->nkv++;
}

static void
be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

static void
log_key(uint8_t k[17], struct tsr_ev ev)
{
	k[0] = 'L';
	be64(k + 1, ev.epoch);
	be64(k + 9, ev.ver);
}

static void
kv_info(struct tsr_pgsm *sm, struct persist *p)
{
	struct tsr_enc e;
	size_t len;
	uint8_t *b;

	tsr_enc_init(&e);
	tsr_pg_info_encode(&e, &sm->info);
	tsr_pg_intervals_encode(&e, &sm->past);
	if ((b = tsr_enc_take(&e, &len)) == NULL) {
		p->err = -ENOMEM;
		return;
	}
	kv_add(p, "I", 1, b, len, NULL, 0, 0);
	free(b);
}

static void
kv_entry(struct persist *p, const struct tsr_pglog_entry *x)
{
	struct tsr_enc e;
	uint8_t k[17], *b;
	size_t len;

	tsr_enc_init(&e);
	tsr_pglog_entry_encode(&e, x);
	if ((b = tsr_enc_take(&e, &len)) == NULL) {
		p->err = -ENOMEM;
		return;
	}
	log_key(k, x->ev);
	kv_add(p, k, sizeof(k), b, len, NULL, 0, 0);
	free(b);
}

/* The key of the version just after ev: the end of a range that ends
 * with ev's entry. */
static void
log_key_after(uint8_t k[17], struct tsr_ev ev)
{
	if (++ev.ver == 0)
		ev.epoch++;
	log_key(k, ev);
}

/* Remove the log entries above ev (a rewind) or at and below it (with the
 * other, the whole log: a rebase).  A trim is kv_log_trim's. */
static void
kv_log_rm(struct persist *p, struct tsr_ev ev, int above)
{
	uint8_t k[17], lo[17] = { 'L' }, hi[1] = { 'M' };

	/* the ranges are [after ev, "M") and ["L", after ev) */
	log_key_after(k, ev);
	if (above)
		kv_add(p, k, sizeof(k), NULL, 0, hi, 1, 1);
	else
		kv_add(p, lo, sizeof(lo), NULL, 0, k, sizeof(k), 1);
}

/* Remove the entries of log at and below to (a trim, before the log
 * forgets them).  A few, the rule (a write trims one), go key by key; more
 * as one range from the first of them.  Never a range from the start of
 * the log's keys: the store would step over every key trimmed before
 * (LevelDB keeps them as tombstones until a compaction) on every write.
 * (Keys below the tail are ignored at load, so a key left by a crash
 * between two versions of this rule does no harm.) */
#define TRIM_KEYS 16

static void
kv_log_trim(struct persist *p, const struct tsr_pglog *log, struct tsr_ev to)
{
	size_t n = 0;

	while (n < log->n && tsr_ev_cmp(log->e[n].ev, to) <= 0)
		n++;
	if (n == 0)
		return;
	if (n > TRIM_KEYS) {
		uint8_t lo[17], hi[17];
		log_key(lo, log->e[0].ev);
		log_key_after(hi, to);
		kv_add(p, lo, sizeof(lo), NULL, 0, hi, sizeof(hi), 1);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t k[17];
		log_key(k, log->e[i].ev);
		kv_add(p, k, sizeof(k), NULL, 0, NULL, 0, 0);
	}
}

static void
kv_missing(struct persist *p, const void *oid, size_t oid_len, const struct tsr_missing_item *it)
{
	uint8_t *k = malloc(oid_len + 1);

	if (k == NULL) {
		p->err = -ENOMEM;
		return;
	}
	k[0] = 'M';
	memcpy(k + 1, oid, oid_len);
	if (it) {
		struct tsr_enc e;
		uint8_t *b;
		size_t len;

		tsr_enc_init(&e);
		tsr_ev_encode(&e, it->need);
		tsr_ev_encode(&e, it->have);
		if ((b = tsr_enc_take(&e, &len)) == NULL)
			p->err = -ENOMEM;
		else
			kv_add(p, k, oid_len + 1, b, len, NULL, 0, 0);
		free(b);
	} else {
		kv_add(p, k, oid_len + 1, NULL, 0, NULL, 0, 0);
	}
	free(k);
}

static void
rm_obj(struct persist *p, const void *oid, size_t oid_len)
{
	if (p->err || grow((void **)&p->rm, &p->caprm, p->nrm, sizeof(p->rm[0])) < 0) {
		p->err = -ENOMEM;
		return;
	}
	if ((p->rm[p->nrm].p = tsr_pglog_dup(oid, oid_len)) == NULL) {
		p->err = -ENOMEM;
		return;
	}
	p->rm[p->nrm++].n = oid_len;
}

static void
persist_free(struct persist *p)
{
	tsr_pgsm_kv_free(p->kv, p->nkv, p->rm, p->nrm);
	memset(p, 0, sizeof(*p));
}

/* Queue p as one PERSIST; its commit triggers pend (kind PEND_NONE:
 * nothing). */
static int
persist_emit(struct tsr_pgsm *sm, struct persist *p, int obj, uint64_t handle,
	     uint64_t payload, const struct pend *pd)
{
	struct tsr_pgsm_action *a;
	uint64_t token = ++sm->next_token;

	if (p->err) {
		persist_free(p);
		return -ENOMEM;
	}
	if ((a = action_new(sm, TSR_PGSM_A_PERSIST)) == NULL) {
		persist_free(p);
		return -ENOMEM;
	}
	a->kv = p->kv;
	a->nkv = p->nkv;
	a->rm = p->rm;
	a->nrm = p->nrm;
	a->obj = obj;
	a->handle = handle;
	a->payload = payload;
	a->token = token;
	memset(p, 0, sizeof(*p));
	if ((pd && pd->kind != PEND_NONE) || sm->info.les > sm->les_durable) {
		struct pend *n;
		if (grow((void **)&sm->pend, &sm->cappend, sm->npend, sizeof(*n)) < 0)
			return -ENOMEM;
		n = &sm->pend[sm->npend++];
		memset(n, 0, sizeof(*n));
		if (pd)
			*n = *pd;
		n->token = token;
		n->les = sm->info.les;
		n->interval = sm->info.same_interval_since;
		n->oid = NULL;
		if (pd && pd->oid && (n->oid = tsr_pglog_dup(pd->oid, pd->oid_len)) == NULL)
			return -ENOMEM;
	}
	return 0;
}

/* Writes up to ev are known held by every member of the interval that
 * made each: raise info.committed (never above what this copy logged).
 * The clamp compares versions only, which is right because every caller
 * holds the authoritative log when it raises: the primary's own, or a
 * member's just merged with the primary's. */
static void
committed_raise(struct tsr_pgsm *sm, struct tsr_ev ev)
{
	if (tsr_ev_cmp(ev, sm->info.last_update) > 0)
		ev = sm->info.last_update;
	if (tsr_ev_cmp(ev, sm->info.committed) > 0)
		sm->info.committed = ev;
}

/* last_complete: the newest version below which nothing is missing. */
static void
update_last_complete(struct tsr_pgsm *sm)
{
	struct tsr_ev lc = sm->info.last_update;

	for (size_t i = 0; i < sm->missing.n; i++) {
		long k = tsr_pglog_find(&sm->log, sm->missing.m[i].need);
		struct tsr_ev before = k > 0 ? sm->log.e[k - 1].ev : sm->log.tail;
		if (tsr_ev_cmp(before, lc) < 0)
			lc = before;
	}
	sm->info.last_complete = lc;
}

/* ---- create, load, destroy ------------------------------------------------------ */

int
tsr_pgsm_create(const struct tsr_pgsm_conf *conf, struct tsr_pgsm **out)
{
	struct tsr_pgsm *sm = calloc(1, sizeof(*sm));

	if (sm == NULL)
		return -ENOMEM;
	sm->conf = *conf;
	if (sm->conf.log_max == 0)
		sm->conf.log_max = 3000;
	/* a whole log goes in one LOG or ACTIVATE message */
	if (sm->conf.log_max > TSR_PGLOG_MAX_ENTRIES / 2)
		sm->conf.log_max = TSR_PGLOG_MAX_ENTRIES / 2;
	if (sm->conf.recovery_max == 0)
		sm->conf.recovery_max = 8;
	if (sm->conf.queue_max == 0)
		sm->conf.queue_max = 1024;
	if (sm->conf.backfill_window == 0 || sm->conf.backfill_window > TSR_PGMSG_MAX_SCAN)
		sm->conf.backfill_window = 64;
	sm->info.pgid = conf->pgid;
	sm->info.created = conf->created;
	sm->my_index = -1;
	sm->auth = -1;
	sm->bf_target = -1;
	sm->scan_for = -1;
	why(sm, "no map yet");
	*out = sm;
	return 0;
}

int
tsr_pgsm_load(struct tsr_pgsm *sm, const void *key, size_t key_len, const void *val,
	      size_t val_len, char *err, size_t errlen)
{
	const uint8_t *k = key;
	struct tsr_dec d;
	int rc;

	if (key_len == 0)
		goto bad;
	tsr_dec_init(&d, val, val_len);
	switch (k[0]) {
	case 'I': {
		struct tsr_pg_info info;
		struct tsr_pg_intervals past;
		if ((rc = tsr_pg_info_decode(&d, &info, err, errlen)) < 0)
			return rc;
		if ((rc = tsr_pg_intervals_decode(&d, &past, err, errlen)) < 0) {
			tsr_pg_info_free(&info);
			return rc;
		}
		if (info.pgid.pool != sm->conf.pgid.pool || info.pgid.pg != sm->conf.pgid.pg) {
			snprintf(err, errlen, "PG info of %lld.%u in the store of PG %lld.%u",
				 (long long)info.pgid.pool, info.pgid.pg,
				 (long long)sm->conf.pgid.pool, sm->conf.pgid.pg);
			tsr_pg_info_free(&info);
			tsr_pg_intervals_free(&past);
			return -EINVAL;
		}
		tsr_pg_info_free(&sm->info);
		sm->info = info;
		sm->les_durable = info.les;
		tsr_pg_intervals_free(&sm->past);
		sm->past = past;
		sm->log.tail = info.log_tail;
		sm->log.head = info.log_tail;
		return 0;
	}
	case 'L': {
		struct tsr_pglog_entry x;
		if (key_len != 17)
			goto bad;
		if ((rc = tsr_pglog_entry_decode(&d, &x, err, errlen)) < 0)
			return rc;
		if (tsr_ev_cmp(x.ev, sm->log.tail) <= 0) {
			tsr_pglog_entry_free(&x);
			return 0;    /* trimmed while the info said so */
		}
		rc = tsr_pglog_append(&sm->log, &x);
		tsr_pglog_entry_free(&x);
		if (rc < 0)
			snprintf(err, errlen, "PG log entry out of order");
		return rc;
	}
	case 'M': {
		struct tsr_ev need, have;
		need = tsr_ev_decode(&d);
		have = tsr_ev_decode(&d);
		if (tsr_dec_error(&d) || tsr_dec_remaining(&d) || key_len < 2 ||
		    key_len - 1 > TSR_PGLOG_MAX_OID || tsr_ev_none(need) ||
		    tsr_ev_cmp(have, need) >= 0)
			goto bad;
		return tsr_missing_add(&sm->missing, k + 1, key_len - 1, need, have);
	}
	}
bad:
	snprintf(err, errlen, "PG meta key of %zu bytes (first 0x%02x) is not one this "
		 "OSD writes", key_len, key_len ? k[0] : 0);
	return -EINVAL;
}

static void
peers_reset(struct tsr_pgsm *sm)
{
	for (size_t i = 0; i < sm->npeers; i++) {
		tsr_pg_info_free(&sm->peers[i].info);
		tsr_missing_free(&sm->peers[i].missing);
	}
	free(sm->peers);
	sm->peers = NULL;
	sm->npeers = 0;
}

static void
inflight_drop(struct tsr_pgsm *sm, size_t i)
{
	free(sm->fl[i].oid);
	memmove(&sm->fl[i], &sm->fl[i + 1], (sm->nfl - i - 1) * sizeof(sm->fl[0]));
	sm->nfl--;
}

static void
queued_drop(struct tsr_pgsm *sm, size_t i)
{
	free((void *)sm->q[i].op.oid);
	memmove(&sm->q[i], &sm->q[i + 1], (sm->nq - i - 1) * sizeof(sm->q[0]));
	sm->nq--;
}

static void
rec_drop(struct tsr_pgsm *sm, size_t i)
{
	free(sm->rec[i].oid);
	memmove(&sm->rec[i], &sm->rec[i + 1], (sm->nrec - i - 1) * sizeof(sm->rec[0]));
	sm->nrec--;
}

static void backfill_reset(struct tsr_pgsm *sm);

void
tsr_pgsm_destroy(struct tsr_pgsm *sm)
{
	if (sm == NULL)
		return;
	tsr_pgsm_actions_clear(sm);
	free(sm->act);
	peers_reset(sm);
	while (sm->nfl)
		inflight_drop(sm, sm->nfl - 1);
	free(sm->fl);
	while (sm->nq)
		queued_drop(sm, sm->nq - 1);
	free(sm->q);
	while (sm->nrec)
		rec_drop(sm, sm->nrec - 1);
	free(sm->rec);
	for (size_t i = 0; i < sm->npend; i++)
		free(sm->pend[i].oid);
	free(sm->pend);
	free(sm->exec_oid);
	backfill_reset(sm);
	tsr_pg_info_free(&sm->info);
	tsr_pg_intervals_free(&sm->past);
	tsr_pglog_free(&sm->log);
	tsr_missing_free(&sm->missing);
	free(sm);
}

static void
objvers_free(struct tsr_pgsm_objver **v, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*v)[i].oid);
	free(*v);
	*v = NULL;
	*n = 0;
}

static void
backfill_reset(struct tsr_pgsm *sm)
{
	sm->bf_target = -1;
	sm->bf_asked = sm->bf_granted = 0;
	sm->bf_listing = sm->bf_scanning = sm->bf_done_sent = 0;
	sm->bf_want = sm->bf_prog_pending = sm->bf_prog_done = 0;
	free(sm->bf_prog);
	sm->bf_prog = NULL;
	sm->bf_prog_len = 0;
	objvers_free(&sm->bf_local, &sm->nbf_local);
	objvers_free(&sm->bf_remote, &sm->nbf_remote);
	free(sm->bf_sent);
	sm->bf_sent = NULL;
	sm->bf_sent_len = 0;
}

/* The backfill ends (done, or its interval): its slots go back. */
static void
backfill_end(struct tsr_pgsm *sm)
{
	struct tsr_pgsm_action *a;

	if (sm->bf_asked && (a = action_new(sm, TSR_PGSM_A_RELEASE)) != NULL)
		a->to = sm->bf_target;
	backfill_reset(sm);
}

/* ---- peers ---------------------------------------------------------------------- */

static struct peer *
peer_find(struct tsr_pgsm *sm, int32_t osd)
{
	for (size_t i = 0; i < sm->npeers; i++)
		if (sm->peers[i].osd == osd)
			return &sm->peers[i];
	return NULL;
}

static struct peer *
peer_get(struct tsr_pgsm *sm, int32_t osd)
{
	struct peer *p = peer_find(sm, osd);
	size_t cap = sm->npeers;

	if (p)
		return p;
	/* exact-size growth: peers are few (members of a few intervals) */
	p = realloc(sm->peers, (cap + 1) * sizeof(*p));
	if (p == NULL)
		return NULL;
	sm->peers = p;
	p = &sm->peers[sm->npeers++];
	memset(p, 0, sizeof(*p));
	p->osd = osd;
	return p;
}

static int
in_set(const int32_t *set, uint32_t n, int32_t osd)
{
	for (uint32_t i = 0; i < n; i++)
		if (set[i] == osd)
			return 1;
	return 0;
}

static int
acting_index(const struct tsr_pgsm *sm, int32_t osd)
{
	for (uint32_t i = 0; i < sm->cur.nacting; i++)
		if (sm->cur.acting[i] == osd)
			return (int)i;
	return -1;
}

static uint64_t
osd_up_from(const struct tsr_pgsm *sm, int32_t osd)
{
	return sm->cur.osd_up_from ? sm->cur.osd_up_from(sm->cur.osd_up_arg, osd) : 0;
}

static int
osd_up(const struct tsr_pgsm *sm, int32_t osd)
{
	if (in_set(sm->cur.up, sm->cur.nup, osd) || in_set(sm->cur.acting, sm->cur.nacting, osd))
		return 1;
	return osd_up_from(sm, osd) != 0;
}

/* ---- merging an authoritative log ----------------------------------------------- */

static int
missing_set(struct tsr_pgsm *sm, struct persist *p, const void *oid, size_t oid_len,
	    struct tsr_ev need, struct tsr_ev have)
{
	struct tsr_missing_item *it;

	tsr_missing_rm(&sm->missing, oid, oid_len);
	if (tsr_missing_add(&sm->missing, oid, oid_len, need, have) < 0)
		return -ENOMEM;
	it = tsr_missing_find(&sm->missing, oid, oid_len);
	kv_missing(p, oid, oid_len, it);
	return 0;
}

static void
missing_clear(struct tsr_pgsm *sm, struct persist *p, const void *oid, size_t oid_len)
{
	if (tsr_missing_find(&sm->missing, oid, oid_len)) {
		tsr_missing_rm(&sm->missing, oid, oid_len);
		kv_missing(p, oid, oid_len, NULL);
	}
}

/* Apply the effect of an authoritative entry this copy did not have: its
 * object becomes missing at the entry's version, or (a delete) goes.
 * stale: this copy's object holds a divergent version (have none). */
static int
absorb_entry(struct tsr_pgsm *sm, struct persist *p, const struct tsr_pglog_entry *x,
	     int stale)
{
	struct tsr_missing_item *it = tsr_missing_find(&sm->missing, x->oid, x->oid_len);
	struct tsr_ev have = it ? it->have : stale ? (struct tsr_ev){ 0, 0 } : x->prior;

	if (x->op == TSR_PGLOG_DELETE) {
		missing_clear(sm, p, x->oid, x->oid_len);
		rm_obj(p, x->oid, x->oid_len);
		return 0;
	}
	return missing_set(sm, p, x->oid, x->oid_len, x->ev, have);
}

/* Whether oid appears in entries [from, n) of l. */
static int
touched_after(const struct tsr_pglog *l, size_t from, const void *oid, size_t oid_len)
{
	for (size_t i = from; i < l->n; i++)
		if (tsr_oid_cmp(l->e[i].oid, l->e[i].oid_len, oid, oid_len) == 0)
			return 1;
	return 0;
}

/* No overlap with the authority's log: this copy must be rebuilt by
 * backfill; until then it holds nothing it can vouch for beyond what the
 * backfill has reached.  It takes the authority's log as its own. */
static int
rebase_backfill(struct tsr_pgsm *sm, struct persist *p, const struct tsr_pglog *a,
		struct tsr_ev a_tail)
{
	int rc = 0;

	kv_log_rm(p, sm->log.tail, 1);
	kv_log_rm(p, sm->log.head, 0);
	tsr_pglog_free(&sm->log);
	for (size_t i = 0; i < sm->missing.n; i++)
		kv_missing(p, sm->missing.m[i].oid, sm->missing.m[i].oid_len, NULL);
	tsr_missing_free(&sm->missing);
	sm->log.tail = sm->log.head = a_tail;
	for (size_t i = 0; i < a->n && rc == 0; i++)
		if ((rc = tsr_pglog_append(&sm->log, &a->e[i])) == 0)
			kv_entry(p, &a->e[i]);
	sm->info.log_tail = a_tail;
	sm->info.last_update = sm->log.head;
	if (!sm->info.backfilling)
		sm->info.backfill_since = sm->info.same_interval_since;
	sm->info.backfilling = 1;
	free(sm->info.last_backfill);
	sm->info.last_backfill = NULL;
	sm->info.last_backfill_len = 0;
	return rc;
}

/* Make this copy's history the authoritative one: a (whole: the
 * authority's whole log; else the entries that follow our head).  The
 * changes go into p. */
static int
merge_log_(struct tsr_pgsm *sm, struct persist *p, const struct tsr_pglog *a, int whole,
	   struct tsr_ev a_tail, struct tsr_ev a_head)
{
	struct tsr_pglog div;
	struct tsr_ev common;
	int rc = 0;

	tsr_pglog_init(&div);
	if (!whole) {
		for (size_t i = 0; i < a->n && rc == 0; i++) {
			if (tsr_ev_cmp(a->e[i].ev, sm->log.head) <= 0)
				continue;
			if ((rc = tsr_pglog_append(&sm->log, &a->e[i])) == 0) {
				kv_entry(p, &a->e[i]);
				rc = absorb_entry(sm, p, &a->e[i], 0);
			}
		}
		sm->info.last_update = sm->log.head;
		return rc;
	}
	if (tsr_ev_cmp(sm->info.last_update, a_tail) < 0)
		return rebase_backfill(sm, p, a, a_tail);
	/* the newest of our versions that the authority has too */
	common = sm->info.last_update;
	{
		size_t k = sm->log.n;
		while (k > 0 && tsr_ev_cmp(sm->log.e[k - 1].ev, a_tail) > 0 &&
		       tsr_pglog_find(a, sm->log.e[k - 1].ev) < 0)
			k--;
		if (k < sm->log.n) {
			common = k > 0 ? sm->log.e[k - 1].ev : sm->log.tail;
			/* we diverge at or below the authority's tail: what it
			 * trimmed between our common point and its tail is
			 * unknown to us, so the log cannot bring us up to date */
			if (tsr_ev_cmp(common, a_tail) < 0)
				return rebase_backfill(sm, p, a, a_tail);
		}
		if (tsr_ev_cmp(common, a_tail) < 0)
			common = a_tail;
		/* our divergent entries: never acknowledged; their objects go
		 * back to what the authority says */
		for (size_t i = k; i < sm->log.n && rc == 0; i++)
			rc = tsr_pglog_append(&div, &sm->log.e[i]);
	}
	if (rc == 0 && div.n) {
		kv_log_rm(p, common, 1);
		tsr_pglog_rewind(&sm->log, common);
	}
	if (tsr_ev_cmp(sm->log.tail, common) > 0)
		sm->log.tail = common;     /* only with an empty log */
	for (size_t i = tsr_pglog_after(a, common); i < a->n && rc == 0; i++) {
		const struct tsr_pglog_entry *x = &a->e[i];
		int stale = 0;
		for (size_t d = 0; d < div.n; d++)
			if (tsr_oid_cmp(div.e[d].oid, div.e[d].oid_len, x->oid, x->oid_len) == 0)
				stale = 1;
		if ((rc = tsr_pglog_append(&sm->log, x)) == 0) {
			kv_entry(p, x);
			rc = absorb_entry(sm, p, x, stale);
		}
	}
	/* divergent objects the authority did not touch since: back to the
	 * version before our first divergent entry for each */
	for (size_t d = 0; d < div.n && rc == 0; d++) {
		const struct tsr_pglog_entry *x = &div.e[d];
		int first = 1;
		for (size_t e = 0; e < d; e++)
			if (tsr_oid_cmp(div.e[e].oid, div.e[e].oid_len, x->oid, x->oid_len) == 0)
				first = 0;
		if (!first || touched_after(a, tsr_pglog_after(a, common), x->oid, x->oid_len))
			continue;
		if (tsr_ev_none(x->prior)) {
			missing_clear(sm, p, x->oid, x->oid_len);
			rm_obj(p, x->oid, x->oid_len);
		} else {
			rc = missing_set(sm, p, x->oid, x->oid_len, x->prior, (struct tsr_ev){ 0, 0 });
		}
	}
	tsr_pglog_free(&div);
	if (tsr_ev_cmp(sm->log.head, a_head) < 0 && a->n == 0)
		sm->log.head = a_head;
	sm->info.last_update = sm->log.head;
	sm->info.log_tail = sm->log.tail;
	return rc;
}

static int
merge_log(struct tsr_pgsm *sm, struct persist *p, const struct tsr_pglog *a, int whole,
	  struct tsr_ev a_tail, struct tsr_ev a_head)
{
	int rc = merge_log_(sm, p, a, whole, a_tail, a_head);

	/* (what was committed is in every authority's log, so a rollback
	 * never goes below it; kept within the log all the same) */
	if (tsr_ev_cmp(sm->info.committed, sm->info.last_update) > 0)
		sm->info.committed = sm->info.last_update;
	return rc;
}

/* ---- intervals ------------------------------------------------------------------ */

static int
same_set(const int32_t *a, uint32_t na, const int32_t *b, uint32_t nb)
{
	if (na != nb)
		return 0;
	for (uint32_t i = 0; i < na; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

static int
new_interval(const struct tsr_pg_mapview *o, const struct tsr_pg_mapview *n)
{
	if (!same_set(o->acting, o->nacting, n->acting, n->nacting) ||
	    !same_set(o->up, o->nup, n->up, n->nup) ||
	    o->size != n->size || o->min_size != n->min_size)
		return 1;
	for (uint32_t i = 0; i < n->nacting; i++)
		if (o->acting_up_from[i] != n->acting_up_from[i])
			return 1;
	return 0;
}

/* The past intervals peering must hear from: those that may have written
 * since the newest start known. */
static int
interval_needed(const struct tsr_pgsm *sm, const struct tsr_pg_interval *iv)
{
	return iv->maybe_rw && iv->last >= sm->info.history_les;
}

/* Whether the copy of osd (its info in) answers for interval iv: it holds
 * every write iv acknowledged.  A complete copy does (one being rebuilt
 * when iv ran may have missed some, but its backfill brought it the state
 * after them).  A copy being backfilled since after iv does too (its
 * objects are as iv left them, or as a later backfill made them).  And a
 * primary that was being backfilled when iv began could not start it
 * (pgsm asks for a PG temp instead): iv took no writes. */
static int
interval_covered(const struct tsr_pg_interval *iv, int32_t osd, const struct tsr_pg_info *in)
{
	if (in->created == 0)
		return 0;   /* no copy at all (an OSD whose store is new) */
	if (!in->backfilling || in->backfill_since > iv->last)
		return 1;
	return osd == iv->primary && in->backfill_since <= iv->first;
}

/* ---- peering -------------------------------------------------------------------- */

static int activate(struct tsr_pgsm *sm);
static int answer_info(struct tsr_pgsm *sm, const struct tsr_pgmsg *m, int type);
static void requeue(struct tsr_pgsm *sm);
static void recover_some(struct tsr_pgsm *sm);
static void check_clean(struct tsr_pgsm *sm);

static int
query(struct tsr_pgsm *sm, int32_t osd)
{
	struct peer *p;
	struct tsr_pgsm_action *a;

	if (osd == sm->conf.whoami || osd < 0 || !osd_up(sm, osd))
		return 0;
	if ((p = peer_get(sm, osd)) == NULL)
		return -ENOMEM;
	/* asked already, unless it restarted since (the question and any
	 * answer went with its old sessions; what it holds may have changed) */
	if (p->queried && p->queried_from == osd_up_from(sm, osd))
		return 0;
	p->queried = 1;
	p->answered = 0;
	p->queried_from = osd_up_from(sm, osd);
	if ((a = send_new(sm, osd, TSR_PGMSG_QUERY, sm->info.same_interval_since)) == NULL)
		return -ENOMEM;
	return 0;
}

/* The copy with the newest les, then the newest last_update; ties go to
 * this OSD, then to members of the acting set. */
static int32_t
choose_auth(struct tsr_pgsm *sm)
{
	int32_t best = -1;
	uint64_t bles = 0;
	struct tsr_ev blu = { 0, 0 };
	int bacting = 0;

	if (!sm->info.backfilling) {
		best = sm->conf.whoami;
		bles = sm->info.les;
		blu = sm->info.last_update;
		bacting = 2;
	}
	for (size_t i = 0; i < sm->npeers; i++) {
		const struct peer *p = &sm->peers[i];
		int c, acting = acting_index(sm, p->osd) >= 0;
		if (!p->answered || p->info.backfilling || !osd_up(sm, p->osd))
			continue;
		c = p->info.les != bles ? (p->info.les > bles ? 1 : -1)
					: tsr_ev_cmp(p->info.last_update, blu);
		if (best < 0 || c > 0 || (c == 0 && acting > bacting)) {
			best = p->osd;
			bles = p->info.les;
			blu = p->info.last_update;
			bacting = acting;
		}
	}
	return best;
}

/* Peering's first step, re-run on every answer and map: ask, wait, then
 * choose the authority. */
static int
getinfo_check(struct tsr_pgsm *sm)
{
	int rc;

	/* The start this copy took part in, complete (as merge_history
	 * takes a peer's): a member learns of the interval's start only
	 * from its activation, which carries the history before it, and a
	 * copy left alone after a clean interval would otherwise wait for
	 * an interval before that one whose OSDs are dead or hold nothing
	 * now.  (The search for unfound objects still reaches back to the
	 * last clean epoch.) */
	if (!sm->info.backfilling && sm->les_durable > sm->info.history_les)
		sm->info.history_les = sm->les_durable;
	for (uint32_t i = 0; i < sm->cur.nacting; i++)
		if ((rc = query(sm, sm->cur.acting[i])) < 0)
			return rc;
	for (uint32_t i = 0; i < sm->cur.nup; i++)
		if ((rc = query(sm, sm->cur.up[i])) < 0)
			return rc;
	for (size_t k = 0; k < sm->past.n; k++) {
		const struct tsr_pg_interval *iv = &sm->past.iv[k];
		if (!interval_needed(sm, iv))
			continue;
		for (uint32_t i = 0; i < iv->n; i++)
			if ((rc = query(sm, iv->acting[i])) < 0)
				return rc;
	}
	sm->state = TSR_PGSM_GETINFO;
	for (size_t i = 0; i < sm->npeers; i++)
		if (sm->peers[i].queried && !sm->peers[i].answered &&
		    osd_up(sm, sm->peers[i].osd)) {
			int32_t osd = sm->peers[i].osd;
			/* asked again if it restarted since (query() knows) */
			if ((rc = query(sm, osd)) < 0)
				return rc;
			why(sm, "waiting for the info of osd.%d", osd);
			return 0;
		}
	/* every interval is covered again now that all answered? */
	for (size_t k = 0; k < sm->past.n; k++) {
		const struct tsr_pg_interval *iv = &sm->past.iv[k];
		int heard = 0;
		if (!interval_needed(sm, iv))
			continue;
		for (uint32_t i = 0; i < iv->n; i++) {
			struct peer *p = peer_find(sm, iv->acting[i]);
			const struct tsr_pg_info *in = iv->acting[i] == sm->conf.whoami
							? &sm->info : p && p->answered ? &p->info : NULL;
			if (in && interval_covered(iv, iv->acting[i], in))
				heard = 1;
		}
		if (!heard) {
			/* (its members that are up were asked and answered: so
			 * none is up) */
			sm->state = TSR_PGSM_DOWN;
			why(sm, "epochs %llu-%llu may have taken writes and none of their "
			    "%u OSDs (first osd.%d) is up",
			    (unsigned long long)iv->first, (unsigned long long)iv->last, iv->n,
			    iv->n ? iv->acting[0] : -1);
			return 0;
		}
	}
	/* The newest start any copy knows of (history_les) was made with an
	 * authoritative log every member of that interval then took: only a
	 * copy that took part in it (les >= history_les) can be trusted to
	 * hold every acknowledged write; members of it that had not yet
	 * taken the activation may hold too little. */
	{
		uint64_t best = sm->info.backfilling ? 0 : sm->info.les;
		/* (the candidates choose_auth() takes: complete, and up) */
		for (size_t i = 0; i < sm->npeers; i++)
			if (sm->peers[i].answered && !sm->peers[i].info.backfilling &&
			    osd_up(sm, sm->peers[i].osd) && sm->peers[i].info.les > best)
				best = sm->peers[i].info.les;
		if (best < sm->info.history_les) {
			sm->state = TSR_PGSM_DOWN;
			why(sm, "no copy heard from took part in the start at epoch %llu "
			    "(the newest is of epoch %llu): waiting for one",
			    (unsigned long long)sm->info.history_les, (unsigned long long)best);
			return 0;
		}
	}
	sm->auth = choose_auth(sm);
	if (sm->auth < 0) {
		sm->state = TSR_PGSM_INCOMPLETE;
		why(sm, "no complete copy among the %zu OSDs heard from", sm->npeers + 1);
		return 0;
	}
	if (sm->auth != sm->conf.whoami) {
		struct tsr_pgsm_action *a;
		sm->state = TSR_PGSM_GETLOG;
		why(sm, "fetching the log of osd.%d", sm->auth);
		if ((a = send_new(sm, sm->auth, TSR_PGMSG_GETLOG,
				  sm->info.same_interval_since)) == NULL)
			return -ENOMEM;
		a->msg.ev = sm->info.last_update;
		return 0;
	}
	return activate(sm);
}

/* This copy starts in the interval (primary or member).  A start below
 * min_size takes no writes, so it is no start a later peering must hear
 * from: les stays (an interval of one copy that then died would otherwise
 * hide the intervals that took writes). */
static void
record_start(struct tsr_pgsm *sm)
{
	if (sm->cur.nacting >= sm->cur.min_size)
		sm->info.les = sm->info.same_interval_since;
	update_last_complete(sm);
}

/* The log is authoritative; once up_thru covers the interval, start the
 * members. */
static int
activate(struct tsr_pgsm *sm)
{
	struct persist p;
	struct pend pd;
	int rc;

	if (sm->cur.primary_up_thru < sm->info.same_interval_since) {
		/* asked again with every map until it shows (a request to
		 * the monitors may be lost) */
		struct tsr_pgsm_action *a = action_new(sm, TSR_PGSM_A_UP_THRU);
		if (a == NULL)
			return -ENOMEM;
		a->epoch = sm->info.same_interval_since;
		sm->state = TSR_PGSM_WAIT_UP_THRU;
		why(sm, "waiting for the map to record up_thru %llu",
		    (unsigned long long)sm->info.same_interval_since);
		return 0;
	}
	memset(&p, 0, sizeof(p));
	sm->state = TSR_PGSM_ACTIVATING;
	sm->own_activated = 0;
	/* what any copy heard from knew committed is in this log (an
	 * authority holds every write as good as acknowledged) */
	for (size_t i = 0; i < sm->npeers; i++)
		if (sm->peers[i].answered)
			committed_raise(sm, sm->peers[i].info.committed);
	record_start(sm);
	kv_info(sm, &p);
	memset(&pd, 0, sizeof(pd));
	pd.kind = PEND_ACTIVATED;
	if ((rc = persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, &pd)) < 0)
		return rc;
	for (uint32_t i = 0; i < sm->cur.nacting; i++) {
		int32_t osd = sm->cur.acting[i];
		struct peer *pe;
		struct tsr_pgsm_action *a;
		size_t from;

		if (osd == sm->conf.whoami)
			continue;
		if ((pe = peer_get(sm, osd)) == NULL)
			return -ENOMEM;
		pe->activated = 0;
		if ((a = send_new(sm, osd, TSR_PGMSG_ACTIVATE, sm->info.same_interval_since)) == NULL)
			return -ENOMEM;
		if ((rc = tsr_pg_info_copy(&a->msg.info, &sm->info)) < 0 ||
		    (rc = tsr_pg_intervals_copy(&a->msg.past, &sm->past)) < 0)
			return rc;
		if (tsr_pglog_find(&sm->log, pe->info.last_update) >= 0 ||
		    tsr_ev_cmp(pe->info.last_update, sm->log.tail) == 0) {
			from = tsr_pglog_after(&sm->log, pe->info.last_update);
			a->msg.whole = 0;
		} else {
			from = 0;
			a->msg.whole = 1;
		}
		a->msg.log.tail = from ? sm->log.e[from - 1].ev : sm->log.tail;
		a->msg.log.head = a->msg.log.tail;
		for (size_t k = from; k < sm->log.n; k++)
			if ((rc = tsr_pglog_append(&a->msg.log, &sm->log.e[k])) < 0)
				return rc;
	}
	why(sm, "activating %u members", sm->cur.nacting);
	return 0;
}

static void
activated_check(struct tsr_pgsm *sm)
{
	if (sm->state != TSR_PGSM_ACTIVATING || !sm->own_activated)
		return;
	for (uint32_t i = 0; i < sm->cur.nacting; i++) {
		struct peer *pe;
		if (sm->cur.acting[i] == sm->conf.whoami)
			continue;
		pe = peer_find(sm, sm->cur.acting[i]);
		if (pe == NULL || !pe->activated) {
			why(sm, "waiting for osd.%d to activate", sm->cur.acting[i]);
			return;
		}
	}
	sm->state = TSR_PGSM_ACTIVE;
	why(sm, "active");
	/* every member holds the start: it is history now (raised only here,
	 * so no peering waits for a start that never completed), and so is
	 * the log it started with (min_size members hold all of it) */
	if (sm->info.les == sm->info.same_interval_since &&
	    (sm->info.les > sm->info.history_les ||
	     tsr_ev_cmp(sm->info.last_update, sm->info.committed) > 0)) {
		struct persist p;
		sm->info.history_les = sm->info.les;
		committed_raise(sm, sm->info.last_update);
		memset(&p, 0, sizeof(p));
		kv_info(sm, &p);
		(void)persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, NULL);
	}
	recover_some(sm);
	requeue(sm);
	check_clean(sm);
}

/* A stray tells the primary, unasked, that it holds a copy: a primary
 * whose peering does not reach back to an interval this copy served in (a
 * second change after an OSD joined) would never learn of it, and it
 * would stay for ever.  The primary removes it only while its map shows
 * us up, so we tell again each time we come up (advance_map). */
static int
tell_primary(struct tsr_pgsm *sm)
{
	struct tsr_pgmsg q;

	sm->told_up_from = osd_up_from(sm, sm->conf.whoami);
	if (sm->cur.nacting == 0)
		return 0;
	memset(&q, 0, sizeof(q));
	q.from = sm->cur.acting[0];
	q.interval = sm->info.same_interval_since;
	return answer_info(sm, &q, TSR_PGMSG_NOTIFY);
}

static int
start_interval(struct tsr_pgsm *sm)
{
	struct persist p;

	peers_reset(sm);
	/* writes in flight and ops waiting belong to the interval that ended:
	 * their clients send them again under the new map (and a write that
	 * was applied is found in the log then) */
	while (sm->nfl) {
		reply(sm, sm->fl[0].handle, -ESTALE, sm->fl[0].ev);
		inflight_drop(sm, 0);
	}
	while (sm->nq) {
		reply(sm, sm->q[0].op.handle, -ESTALE, (struct tsr_ev){ 0, 0 });
		queued_drop(sm, 0);
	}
	while (sm->nrec)
		rec_drop(sm, 0);
	if (sm->exec_pending) {
		sm->exec_pending = 0;
		reply(sm, sm->exec_handle, -ESTALE, (struct tsr_ev){ 0, 0 });
	}
	sm->auth = -1;
	sm->clean = 0;
	sm->own_activated = 0;
	sm->temp_asked = 0;
	sm->scan_for = -1;
	sm->sent_committed = (struct tsr_ev){ 0, 0 };
	backfill_end(sm);
	sm->my_index = acting_index(sm, sm->conf.whoami);
	sm->role = sm->my_index == 0 ? ROLE_PRIMARY
		   : sm->my_index > 0 ? ROLE_MEMBER : ROLE_STRAY;
	memset(&p, 0, sizeof(p));
	kv_info(sm, &p);
	if (persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, NULL) < 0)
		return -ENOMEM;
	if (sm->role == ROLE_PRIMARY) {
		sm->state = TSR_PGSM_GETINFO;
		return getinfo_check(sm);
	}
	sm->state = sm->role == ROLE_MEMBER ? TSR_PGSM_GETINFO : TSR_PGSM_STRAY;
	why(sm, sm->role == ROLE_MEMBER ? "waiting for the primary osd.%d"
		: "not in the acting set (primary osd.%d)",
	    sm->cur.nacting ? sm->cur.acting[0] : -1);
	if (sm->role == ROLE_STRAY)
		return tell_primary(sm);
	return 0;
}

int
tsr_pgsm_advance_map(struct tsr_pgsm *sm, const struct tsr_pg_mapview *mv)
{
	if (sm->state == TSR_PGSM_DELETED)
		return 0;
	if (!sm->have_map) {
		/* a loaded PG resumes at its interval's first epoch: the epochs
		 * after it make the intervals peering relies on, and none may
		 * be skipped */
		if (sm->info.same_interval_since && sm->info.same_interval_since != mv->epoch)
			return -EINVAL;
		sm->have_map = 1;
		sm->cur = *mv;
		sm->info.same_interval_since = mv->epoch;
		return start_interval(sm);
	}
	if (mv->epoch <= sm->cur.epoch)
		return 0;
	if (new_interval(&sm->cur, mv)) {
		struct tsr_pg_interval iv;

		memset(&iv, 0, sizeof(iv));
		iv.first = sm->info.same_interval_since;
		iv.last = mv->epoch - 1;
		iv.primary = sm->cur.nacting ? sm->cur.acting[0] : -1;
		iv.n = sm->cur.nacting;
		memcpy(iv.acting, sm->cur.acting, sizeof(iv.acting));
		/* (the first interval of a copy that started late began, for
		 * the others, before the copy's first epoch: whether its
		 * primary's up_thru reached that start is not known here, so
		 * it may have written) */
		iv.maybe_rw = sm->cur.nacting > 0 && sm->cur.nacting >= sm->cur.min_size &&
			      (sm->cur.primary_up_thru >= iv.first || iv.first == sm->conf.created);
		if (iv.n && tsr_pg_intervals_add(&sm->past, &iv) < 0)
			return -ENOMEM;
		/* kept back to the last clean epoch: peering needs those since
		 * history_les, a search for unfound objects all of them */
		tsr_pg_intervals_trim(&sm->past, sm->info.lec);
		sm->cur = *mv;
		sm->info.same_interval_since = mv->epoch;
		return start_interval(sm);
	}
	sm->cur = *mv;
	/* the same interval: an OSD we wait on may have gone down or come up;
	 * up_thru may have reached us */
	if (sm->role == ROLE_STRAY) {
		/* up again with the PG unchanged (an OSD out, restarted): the
		 * primary heard our copy while its map had us down, when it
		 * could not remove it (tsr_pgsm_recv answers only epochs it
		 * has, so this notify meets a map that shows us up) */
		uint64_t up = osd_up_from(sm, sm->conf.whoami);
		if (up && up != sm->told_up_from)
			return tell_primary(sm);
		return 0;
	}
	if (sm->role != ROLE_PRIMARY)
		return 0;
	if (sm->temp_asked) {
		/* the PG temp asked for has not come (a request to the
		 * monitors may be lost): again */
		struct tsr_pgsm_action *a = action_new(sm, TSR_PGSM_A_PG_TEMP);
		if (a == NULL)
			return -ENOMEM;
		a->ntemp = sm->ntemp;
		memcpy(a->temp, sm->temp, sizeof(a->temp));
		if (sm->state == TSR_PGSM_INCOMPLETE)
			return 0;     /* (not peering again for it) */
	}
	switch (sm->state) {
	case TSR_PGSM_GETINFO:
	case TSR_PGSM_DOWN:
	case TSR_PGSM_INCOMPLETE:
		return getinfo_check(sm);
	case TSR_PGSM_GETLOG: {
		/* the authority went down or restarted: its answer is lost */
		struct peer *a = peer_find(sm, sm->auth);
		if (a == NULL || a->queried_from != osd_up_from(sm, sm->auth)) {
			if (a)
				a->answered = 0;
			return getinfo_check(sm);
		}
		return 0;
	}
	case TSR_PGSM_WAIT_UP_THRU:
		return activate(sm);
	case TSR_PGSM_ACTIVE:
		/* pulls from OSDs that went down or restarted are tried again */
		for (size_t i = sm->nrec; i-- > 0;)
			if (sm->rec[i].up_from != osd_up_from(sm, sm->rec[i].osd))
				rec_drop(sm, i);
		recover_some(sm);
		return 0;
	}
	return 0;
}

static int rec_find(const struct tsr_pgsm *sm, const void *oid, size_t oid_len, int32_t osd);
static int above_sent(const struct tsr_pgsm *sm, const void *oid, size_t oid_len);

/* ---- client operations ------------------------------------------------------------ */

static int
write_in_flight(const struct tsr_pgsm *sm, const void *oid, size_t oid_len)
{
	for (size_t i = 0; i < sm->nfl; i++)
		if (tsr_oid_cmp(sm->fl[i].oid, sm->fl[i].oid_len, oid, oid_len) == 0)
			return 1;
	return 0;
}

/* Whether any member of the acting set lacks oid (or it is moving). */
static int
object_degraded(const struct tsr_pgsm *sm, const void *oid, size_t oid_len)
{
	if (tsr_missing_find(&sm->missing, oid, oid_len))
		return 1;
	/* a backfill window being listed: what is above the last position
	 * sent waits until its pushes are out */
	if (sm->bf_target >= 0 && (sm->bf_want || sm->bf_listing || sm->bf_scanning ||
				   sm->bf_prog_pending) && above_sent(sm, oid, oid_len))
		return 1;
	if (rec_find(sm, oid, oid_len, -1) >= 0)
		return 1;
	for (size_t i = 0; i < sm->npeers; i++)
		if (acting_index(sm, sm->peers[i].osd) >= 0 &&
		    tsr_missing_find(&sm->peers[i].missing, oid, oid_len))
			return 1;
	return 0;
}

static int
enqueue(struct tsr_pgsm *sm, const struct tsr_pgsm_op *op, struct tsr_ev dup_of)
{
	struct queued *q;

	if (sm->nq >= sm->conf.queue_max) {
		reply(sm, op->handle, -EAGAIN, (struct tsr_ev){ 0, 0 });
		return 0;
	}
	if (grow((void **)&sm->q, &sm->capq, sm->nq, sizeof(*q)) < 0)
		return -ENOMEM;
	q = &sm->q[sm->nq];
	q->op = *op;
	q->dup_of = dup_of;
	if ((q->op.oid = tsr_pglog_dup(op->oid, op->oid_len)) == NULL)
		return -ENOMEM;
	sm->nq++;
	return 0;
}

/* The newest entry of l on oid, or NULL. */
static const struct tsr_pglog_entry *
log_newest(const struct tsr_pglog *l, const void *oid, size_t oid_len)
{
	for (size_t i = l->n; i-- > 0;)
		if (tsr_oid_cmp(l->e[i].oid, l->e[i].oid_len, oid, oid_len) == 0)
			return &l->e[i];
	return NULL;
}

/* Try to run op now: 1 ran (or was answered), 0 must wait. */
static int
try_op(struct tsr_pgsm *sm, const struct tsr_pgsm_op *op)
{
	struct tsr_pgsm_action *a;
	long k;

	if (sm->state != TSR_PGSM_ACTIVE || sm->exec_pending)
		return 0;
	if (object_degraded(sm, op->oid, op->oid_len))
		return 0;
	/* below min_size the PG takes no writes: they wait for the map to
	 * bring members back.  It serves a read of an object whose last
	 * write is known committed; not one the last primary may have
	 * logged alone and never acknowledged, which a later peering may
	 * drop (the read would show what then never happened). */
	if (sm->cur.nacting < sm->cur.min_size) {
		const struct tsr_pglog_entry *x;
		if (op->kind != TSR_PGSM_OP_READ) {
			/* a write sent again whose first run is committed: its
			 * answer stands (the client lost it) */
			if ((k = tsr_pglog_find_reqid(&sm->log, op->reqid)) < 0 ||
			    tsr_ev_cmp(sm->log.e[k].ev, sm->info.committed) > 0)
				return 0;
			reply(sm, op->handle, sm->log.e[k].result, sm->log.e[k].ev);
			return 1;
		}
		x = log_newest(&sm->log, op->oid, op->oid_len);
		if (x && tsr_ev_cmp(x->ev, sm->info.committed) > 0)
			return 0;
	}
	if (op->kind == TSR_PGSM_OP_WRITE && (k = tsr_pglog_find_reqid(&sm->log, op->reqid)) >= 0) {
		/* sent again: answer as the first time, once it is complete.
		 * An entry in an active PG's log is on every member (activation
		 * gave it to them), and with the object recovered everywhere
		 * (above) and min_size members (above) the write is as safe as
		 * any acknowledged one; not before: an entry the old primary
		 * logged alone is not yet a write anyone may rely on */
		for (size_t i = 0; i < sm->nfl; i++)
			if (tsr_ev_cmp(sm->fl[i].ev, sm->log.e[k].ev) == 0)
				return 0;
		reply(sm, op->handle, sm->log.e[k].result, sm->log.e[k].ev);
		return 1;
	}
	if (op->kind == TSR_PGSM_OP_READ) {
		/* a read sees only what every member holds */
		if (write_in_flight(sm, op->oid, op->oid_len))
			return 0;
		if ((a = action_new(sm, TSR_PGSM_A_EXEC)) == NULL)
			return -ENOMEM;
		a->handle = op->handle;
		a->ev = sm->info.last_update;
		return 1;
	}
	free(sm->exec_oid);
	if ((sm->exec_oid = tsr_pglog_dup(op->oid, op->oid_len)) == NULL ||
	    (a = action_new(sm, TSR_PGSM_A_EXEC)) == NULL)
		return -ENOMEM;
	a->handle = op->handle;
	a->ev.epoch = sm->cur.epoch;
	a->ev.ver = sm->info.last_update.ver + 1;
	sm->exec_pending = 1;
	sm->exec_handle = op->handle;
	sm->exec_ev = a->ev;
	sm->exec_oid_len = op->oid_len;
	sm->exec_reqid = op->reqid;
	return 1;
}

int
tsr_pgsm_op(struct tsr_pgsm *sm, const struct tsr_pgsm_op *op)
{
	int rc;

	if (op->oid_len == 0 || op->oid_len > TSR_PGLOG_MAX_OID ||
	    (op->kind != TSR_PGSM_OP_READ && op->kind != TSR_PGSM_OP_WRITE)) {
		reply(sm, op->handle, -EINVAL, (struct tsr_ev){ 0, 0 });
		return 0;
	}
	if (!sm->have_map || sm->role != ROLE_PRIMARY || sm->state == TSR_PGSM_DELETED) {
		reply(sm, op->handle, -ESTALE, (struct tsr_ev){ 0, 0 });
		return 0;
	}
	/* keep the order of ops on one object: behind any that wait */
	for (size_t i = 0; i < sm->nq; i++)
		if (tsr_oid_cmp(sm->q[i].op.oid, sm->q[i].op.oid_len, op->oid, op->oid_len) == 0)
			return enqueue(sm, op, (struct tsr_ev){ 0, 0 });
	rc = try_op(sm, op);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		rc = enqueue(sm, op, (struct tsr_ev){ 0, 0 });
		if (sm->state == TSR_PGSM_ACTIVE)
			recover_some(sm);    /* the object it waits on first */
	}
	return rc < 0 ? rc : 0;
}

/* Answer, in version order, the writes every member now holds. */
static void
complete_writes(struct tsr_pgsm *sm)
{
	int any = 0;

	while (sm->nfl && sm->fl[0].waiting == 0) {
		/* every member holds it: each is a source for it now (a repair
		 * of this copy pulls it: tsr_pgsm_repair) */
		for (uint32_t i = 1; i < sm->cur.nacting; i++) {
			struct peer *pe = peer_find(sm, sm->cur.acting[i]);
			if (pe && tsr_ev_cmp(pe->info.last_update, sm->fl[0].ev) < 0)
				pe->info.last_update = sm->fl[0].ev;
		}
		committed_raise(sm, sm->fl[0].ev);
		reply(sm, sm->fl[0].handle, sm->fl[0].result, sm->fl[0].ev);
		inflight_drop(sm, 0);
		any = 1;
	}
	if (any) {
		requeue(sm);
		recover_some(sm);    /* a backfill window waiting on a write */
		check_clean(sm);
	}
}

int
tsr_pgsm_exec_done(struct tsr_pgsm *sm, uint64_t handle, struct tsr_ev prior, uint8_t op,
		   int32_t result)
{
	struct tsr_pglog_entry x;
	struct persist p;
	struct pend pd;
	struct inflight *f;
	struct tsr_ev done_to;
	int rc;

	if (!sm->exec_pending || handle != sm->exec_handle)
		return -EINVAL;
	sm->exec_pending = 0;
	if (result < 0) {
		reply(sm, handle, result, (struct tsr_ev){ 0, 0 });
		requeue(sm);
		return 0;
	}
	if ((op != TSR_PGLOG_MODIFY && op != TSR_PGLOG_DELETE) ||
	    tsr_ev_cmp(prior, sm->exec_ev) >= 0) {
		reply(sm, handle, -EINVAL, (struct tsr_ev){ 0, 0 });
		requeue(sm);
		return -EINVAL;
	}
	if (tsr_ev_cmp(sm->exec_ev, sm->log.head) <= 0) {
		reply(sm, handle, -EIO, (struct tsr_ev){ 0, 0 });
		requeue(sm);
		return -EINVAL;
	}
	memset(&x, 0, sizeof(x));
	x.ev = sm->exec_ev;
	x.prior = prior;
	x.op = op;
	x.result = 0;
	x.reqid = sm->exec_reqid;
	x.oid = sm->exec_oid;
	x.oid_len = sm->exec_oid_len;
	memset(&p, 0, sizeof(p));
	/* trim what every member holds, beyond log_max entries */
	done_to = sm->nfl ? sm->log.tail : sm->info.last_update;
	if (sm->nfl) {
		long k = tsr_pglog_find(&sm->log, sm->fl[0].ev);
		done_to = k > 0 ? sm->log.e[k - 1].ev : sm->log.tail;
	}
	if (sm->log.n >= sm->conf.log_max) {
		struct tsr_ev to = sm->log.e[sm->log.n - sm->conf.log_max].ev;
		if (tsr_ev_cmp(to, done_to) > 0)
			to = done_to;
		if (tsr_ev_cmp(to, sm->log.tail) > 0) {
			kv_log_trim(&p, &sm->log, to);
			tsr_pglog_trim(&sm->log, to);
			sm->info.log_tail = to;
			sm->trim_to = to;
		}
	}
	if ((rc = tsr_pglog_append(&sm->log, &x)) < 0) {
		persist_free(&p);
		return rc;
	}
	sm->info.last_update = x.ev;
	if (sm->missing.n == 0)
		sm->info.last_complete = x.ev;
	kv_entry(&p, &x);
	kv_info(sm, &p);
	if (grow((void **)&sm->fl, &sm->capfl, sm->nfl, sizeof(*f)) < 0) {
		persist_free(&p);
		return -ENOMEM;
	}
	f = &sm->fl[sm->nfl++];
	memset(f, 0, sizeof(*f));
	f->handle = handle;
	f->ev = x.ev;
	f->oid = sm->exec_oid;
	f->oid_len = sm->exec_oid_len;
	sm->exec_oid = NULL;
	for (uint32_t i = 0; i < sm->cur.nacting; i++)
		f->waiting |= 1u << i;
	memset(&pd, 0, sizeof(pd));
	pd.kind = PEND_WRITE;
	pd.ev = x.ev;
	if ((rc = persist_emit(sm, &p, TSR_PGSM_OBJ_OP, handle, 0, &pd)) < 0)
		return rc;
	for (uint32_t i = 1; i < sm->cur.nacting; i++) {
		struct tsr_pgsm_action *a = send_new(sm, sm->cur.acting[i], TSR_PGMSG_REPOP,
						     sm->info.same_interval_since);
		if (a == NULL)
			return -ENOMEM;
		a->attach = TSR_PGSM_ATTACH_OP;
		a->handle = handle;
		a->msg.trim_to = sm->trim_to;
		a->msg.committed = sm->info.committed;
		if ((rc = tsr_pglog_append(&a->msg.log, &x)) < 0)
			return rc;
	}
	sm->sent_committed = sm->info.committed;
	requeue(sm);
	return 0;
}

/* ---- recovery ------------------------------------------------------------------- */

static int
rec_find(const struct tsr_pgsm *sm, const void *oid, size_t oid_len, int32_t osd)
{
	for (size_t i = 0; i < sm->nrec; i++)
		if ((osd < 0 || sm->rec[i].osd == osd) &&
		    tsr_oid_cmp(sm->rec[i].oid, sm->rec[i].oid_len, oid, oid_len) == 0)
			return (int)i;
	return -1;
}

static int
rec_add(struct tsr_pgsm *sm, const void *oid, size_t oid_len, int32_t osd, int pull,
	struct tsr_ev ev)
{
	struct recovery *r;

	if (grow((void **)&sm->rec, &sm->caprec, sm->nrec, sizeof(*r)) < 0)
		return -ENOMEM;
	r = &sm->rec[sm->nrec];
	if ((r->oid = tsr_pglog_dup(oid, oid_len)) == NULL)
		return -ENOMEM;
	r->oid_len = oid_len;
	r->osd = osd;
	r->up_from = osd_up_from(sm, osd);
	r->pull = (uint8_t)pull;
	r->ev = ev;
	sm->nrec++;
	return 0;
}

/* Start what oid needs: a pull when this copy lacks it, else pushes to the
 * members that lack it.  0, or 1 when the budget is spent. */
static int
recover_object(struct tsr_pgsm *sm, const void *oid, size_t oid_len)
{
	const struct tsr_missing_item *mine = tsr_missing_find(&sm->missing, oid, oid_len);

	if (sm->nrec >= sm->conf.recovery_max)
		return 1;
	if (mine) {
		struct peer *src = NULL;
		struct tsr_pgsm_action *a;

		if (rec_find(sm, oid, oid_len, -1) >= 0)
			return 0;
		/* a copy being backfilled is tried last: its object may be
		 * stale, but a push carries the version it holds, checked
		 * against need (on_push), so a stale one is never taken */
		for (size_t i = 0; i < sm->npeers; i++) {
			struct peer *p = &sm->peers[i];
			int rank, srank;
			if (!p->answered || !osd_up(sm, p->osd) ||
			    tsr_ev_cmp(p->info.last_update, mine->need) < 0 ||
			    tsr_missing_find(&p->missing, oid, oid_len))
				continue;
			rank = (tsr_pg_info_has_backfilled(&p->info, oid, oid_len) ? 2 : 0) +
			       (acting_index(sm, p->osd) >= 0);
			srank = src == NULL ? -1 :
				(tsr_pg_info_has_backfilled(&src->info, oid, oid_len) ? 2 : 0) +
				(acting_index(sm, src->osd) >= 0);
			if (rank > srank)
				src = p;
		}
		if (src == NULL) {
			why(sm, "active: an object at %llu'%llu is on no OSD that is up "
			    "(unfound)", (unsigned long long)mine->need.epoch,
			    (unsigned long long)mine->need.ver);
			sm->unfound = 1;
			return 0;
		}
		if ((a = send_new(sm, src->osd, TSR_PGMSG_PULL, sm->info.same_interval_since)) == NULL ||
		    (a->msg.oid = tsr_pglog_dup(oid, oid_len)) == NULL)
			return -ENOMEM;
		a->msg.oid_len = oid_len;
		a->msg.ev = mine->need;
		return rec_add(sm, oid, oid_len, src->osd, 1, mine->need);
	}
	for (uint32_t i = 1; i < sm->cur.nacting; i++) {
		struct peer *p = peer_find(sm, sm->cur.acting[i]);
		const struct tsr_missing_item *it;
		struct tsr_pgsm_action *a;

		if (p == NULL || (it = tsr_missing_find(&p->missing, oid, oid_len)) == NULL ||
		    rec_find(sm, oid, oid_len, p->osd) >= 0)
			continue;
		if (sm->nrec >= sm->conf.recovery_max)
			return 1;
		if ((a = send_new(sm, p->osd, TSR_PGMSG_PUSH, sm->info.same_interval_since)) == NULL ||
		    (a->msg.oid = tsr_pglog_dup(oid, oid_len)) == NULL)
			return -ENOMEM;
		a->msg.oid_len = oid_len;
		a->msg.ev = it->need;
		a->msg.op = TSR_PGLOG_MODIFY;
		a->attach = TSR_PGSM_ATTACH_OBJECT;
		if (rec_add(sm, oid, oid_len, p->osd, 0, it->need) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void recover_some_(struct tsr_pgsm *sm);
static void backfill_step(struct tsr_pgsm *sm);

/* Recover what can be; for objects no OSD heard from holds, ask every OSD
 * up now that was in an interval since the PG was last clean (one that
 * restarted is asked again): their answers may name a source. */
static void
recover_some(struct tsr_pgsm *sm)
{
	if (sm->state != TSR_PGSM_ACTIVE)
		return;
	sm->unfound = 0;
	recover_some_(sm);
	if (sm->nrec == 0 && sm->missing.n == 0)
		backfill_step(sm);
	if (!sm->unfound)
		return;
	for (size_t k = 0; k < sm->past.n; k++)
		for (uint32_t i = 0; i < sm->past.iv[k].n; i++)
			(void)query(sm, sm->past.iv[k].acting[i]);
}

static void
recover_some_(struct tsr_pgsm *sm)
{
	/* what clients wait on first */
	for (size_t i = 0; i < sm->nq; i++)
		if (recover_object(sm, sm->q[i].op.oid, sm->q[i].op.oid_len))
			return;
	for (size_t i = 0; i < sm->missing.n; i++)
		if (recover_object(sm, sm->missing.m[i].oid, sm->missing.m[i].oid_len))
			return;
	for (uint32_t k = 1; k < sm->cur.nacting; k++) {
		struct peer *p = peer_find(sm, sm->cur.acting[k]);
		for (size_t i = 0; p && i < p->missing.n; i++)
			if (!tsr_missing_find(&sm->missing, p->missing.m[i].oid,
					      p->missing.m[i].oid_len) &&
			    recover_object(sm, p->missing.m[i].oid, p->missing.m[i].oid_len))
				return;
	}
}

/* May a stray with this info be deleted, now that this copy is clean?
 * Every write it holds was made before our interval began (it is not in
 * our acting set, and an interval's writes go to its acting set only), so
 * the peering that started our interval weighed it: what the stray holds
 * beyond our history (a write its primary made and never replicated
 * before it died) was never acknowledged, and goes.  So this holds for
 * every stray; the test only guards against a copy that claims a write
 * of our interval or later, which would mean a broken peering: that one
 * stays, for an operator to look at. */
static int
purgeable(const struct tsr_pgsm *sm, const struct tsr_pg_info *in)
{
	return in->last_update.epoch < sm->info.same_interval_since;
}

static void
check_clean(struct tsr_pgsm *sm)
{
	struct persist p;

	if (sm->state != TSR_PGSM_ACTIVE || sm->clean)
		return;
	if (!sm->temp_asked && sm->cur.nup &&
	    !same_set(sm->cur.acting, sm->cur.nacting, sm->cur.up, sm->cur.nup)) {
		/* a temporary acting set that leaves out a member of the up set
		 * (it was down when the set was asked for): take it in, to be
		 * backfilled like the others */
		struct tsr_pgsm_action *a = NULL;
		for (uint32_t i = 0; i < sm->cur.nup; i++) {
			if (in_set(sm->cur.acting, sm->cur.nacting, sm->cur.up[i]))
				continue;
			if (a == NULL) {
				if ((a = action_new(sm, TSR_PGSM_A_PG_TEMP)) == NULL)
					return;
				sm->temp_asked = 1;
				for (uint32_t k = 0; k < sm->cur.nacting; k++)
					a->temp[a->ntemp++] = sm->cur.acting[k];
			}
			if (a->ntemp < TSR_OSDMAP_MAX_SIZE)
				a->temp[a->ntemp++] = sm->cur.up[i];
		}
		if (a) {
			sm->ntemp = a->ntemp;
			memcpy(sm->temp, a->temp, sizeof(sm->temp));
		}
	}
	if (sm->nrec || sm->missing.n || sm->bf_target >= 0)
		return;
	for (uint32_t i = 1; i < sm->cur.nacting; i++) {
		struct peer *pe = peer_find(sm, sm->cur.acting[i]);
		if (pe == NULL || pe->missing.n || pe->info.backfilling)
			return;
	}
	if (!same_set(sm->cur.acting, sm->cur.nacting, sm->cur.up, sm->cur.nup)) {
		/* a temporary acting set whose members are all whole again:
		 * back to the up set (its primary holds a full copy now) */
		int whole = 1;
		for (uint32_t i = 0; i < sm->cur.nup; i++)
			if (!in_set(sm->cur.acting, sm->cur.nacting, sm->cur.up[i]))
				whole = 0;
		if (whole && !sm->temp_asked) {
			struct tsr_pgsm_action *a = action_new(sm, TSR_PGSM_A_PG_TEMP);
			if (a) {
				sm->temp_asked = 1;
				sm->ntemp = 0;
				why(sm, "active: backfilled; the up set takes over (PG temp "
				    "removal asked)");
			}
		}
		return;
	}
	if (sm->cur.nacting != sm->cur.size)
		return;
	sm->clean = 1;
	sm->info.lec = sm->info.same_interval_since;
	tsr_pg_intervals_trim(&sm->past, sm->info.lec);
	memset(&p, 0, sizeof(p));
	kv_info(sm, &p);
	(void)persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, NULL);
	why(sm, "active+clean");
	/* copies elsewhere are no longer needed */
	for (size_t i = 0; i < sm->npeers; i++)
		if (sm->peers[i].answered && acting_index(sm, sm->peers[i].osd) < 0 &&
		    osd_up(sm, sm->peers[i].osd) && purgeable(sm, &sm->peers[i].info))
			(void)send_new(sm, sm->peers[i].osd, TSR_PGMSG_PURGE,
				       sm->info.same_interval_since);
}

/* Run the queued ops that can run now, in order (per object). */
static void
requeue(struct tsr_pgsm *sm)
{
	for (size_t i = 0; i < sm->nq && !sm->exec_pending;) {
		int blocked = 0, rc;

		for (size_t k = 0; k < i && !blocked; k++)
			if (tsr_oid_cmp(sm->q[k].op.oid, sm->q[k].op.oid_len, sm->q[i].op.oid,
					sm->q[i].op.oid_len) == 0)
				blocked = 1;
		if (blocked || (rc = try_op(sm, &sm->q[i].op)) == 0) {
			i++;
			continue;
		}
		if (rc < 0)
			return;
		if (sm->exec_pending) {
			/* the exec holds the queued op's oid; the op leaves the
			 * queue (its handle goes on in the EXEC) */
			queued_drop(sm, i);
			return;
		}
		queued_drop(sm, i);
	}
}

/* ---- backfill --------------------------------------------------------------------- *
 *
 * A member whose copy is older than the log (info.backfilling) is rebuilt
 * by comparing listings: in windows of objects in name order, the primary
 * lists its own (LIST) and asks the member for its (SCAN), pushes every
 * object the member lacks or holds at another version, tells it to remove
 * what the primary does not hold, then sends the window's end as the
 * member's last_backfill (PROGRESS).  Sessions deliver in order and a
 * member persists in order, so a write after the PROGRESS applies on top
 * of the pushes.  Writes to objects above the last position sent reach
 * the member as log entries only (the backfill brings those objects as
 * they are when it reaches them); writes into a window wait while it is
 * listed, and each pushed object until its push is acknowledged.
 */

#define BF_WINDOW 64u

static int
objvers_copy(struct tsr_pgsm_objver **dst, size_t *ndst, const struct tsr_pgsm_objver *src,
	     size_t n)
{
	*dst = n ? calloc(n, sizeof(**dst)) : NULL;
	*ndst = 0;
	if (n && *dst == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (((*dst)[i].oid = tsr_pglog_dup(src[i].oid, src[i].oid_len)) == NULL)
			return -ENOMEM;
		(*dst)[i].oid_len = src[i].oid_len;
		(*dst)[i].ev = src[i].ev;
		(*ndst)++;
	}
	return 0;
}

/* Send the window's end once its pushes are acknowledged: the member
 * then holds them durably before it records the position. */
static int
backfill_progress(struct tsr_pgsm *sm)
{
	struct tsr_pgsm_action *a;

	if (!sm->bf_prog_pending || sm->nrec)
		return 0;
	if ((a = send_new(sm, sm->bf_target, TSR_PGMSG_PROGRESS, sm->info.same_interval_since)) == NULL)
		return -ENOMEM;
	sm->bf_prog_pending = 0;
	a->msg.done = (uint8_t)sm->bf_prog_done;
	if (sm->bf_prog_done) {
		sm->bf_done_sent = 1;
		free(sm->bf_prog);
		sm->bf_prog = NULL;
		sm->bf_prog_len = 0;
	} else {
		if ((a->msg.oid = tsr_pglog_dup(sm->bf_prog, sm->bf_prog_len)) == NULL)
			return -ENOMEM;
		a->msg.oid_len = sm->bf_prog_len;
		free(sm->bf_sent);
		sm->bf_sent = sm->bf_prog;        /* writes up to it apply there now */
		sm->bf_sent_len = sm->bf_prog_len;
		sm->bf_prog = NULL;
		sm->bf_prog_len = 0;
	}
	requeue(sm);
	return 0;
}

static int
above_sent(const struct tsr_pgsm *sm, const void *oid, size_t oid_len)
{
	return sm->bf_sent == NULL || tsr_oid_cmp(oid, oid_len, sm->bf_sent, sm->bf_sent_len) > 0;
}

static void
backfill_step(struct tsr_pgsm *sm)
{
	struct tsr_pgsm_action *a;
	struct peer *pe;
	uint32_t window = sm->conf.backfill_window;

	if (sm->state != TSR_PGSM_ACTIVE || sm->bf_listing || sm->bf_scanning ||
	    sm->bf_done_sent || sm->nrec)
		return;
	if (sm->bf_prog_pending) {
		(void)backfill_progress(sm);
		if (sm->bf_done_sent)
			return;
	}
	if (sm->bf_target < 0) {
		for (uint32_t i = 1; i < sm->cur.nacting && sm->bf_target < 0; i++) {
			pe = peer_find(sm, sm->cur.acting[i]);
			if (pe && pe->activated && pe->info.backfilling) {
				sm->bf_target = pe->osd;
				free(sm->bf_sent);
				sm->bf_sent = pe->info.last_backfill_len
					      ? tsr_pglog_dup(pe->info.last_backfill, pe->info.last_backfill_len)
					      : NULL;
				sm->bf_sent_len = sm->bf_sent ? pe->info.last_backfill_len : 0;
			}
		}
		if (sm->bf_target < 0)
			return;
	}
	if (sm->conf.reserve_backfill && !sm->bf_granted) {
		if (!sm->bf_asked) {
			if ((a = action_new(sm, TSR_PGSM_A_RESERVE)) == NULL)
				return;
			a->to = sm->bf_target;
			sm->bf_asked = 1;
		}
		why(sm, "active+backfill_wait: waiting for slots to backfill osd.%d",
		    sm->bf_target);
		return;
	}
	why(sm, "active+backfilling osd.%d", sm->bf_target);
	/* The listing reads what is committed: a write in flight above the
	 * last position would be listed as it was before it.  New writes
	 * there wait (bf_want, object_degraded) while those drain, so a busy
	 * client cannot hold the backfill off. */
	sm->bf_want = 1;
	if (sm->exec_pending && above_sent(sm, sm->exec_oid, sm->exec_oid_len))
		return;
	for (size_t k = 0; k < sm->nfl; k++)
		if (above_sent(sm, sm->fl[k].oid, sm->fl[k].oid_len))
			return;
	if ((a = action_new(sm, TSR_PGSM_A_LIST)) == NULL)
		return;
	a->msg.max = window;
	a->token = sm->bf_list_token = ++sm->next_token;
	if (sm->bf_sent && (a->msg.oid = tsr_pglog_dup(sm->bf_sent, sm->bf_sent_len)) != NULL)
		a->msg.oid_len = sm->bf_sent_len;
	sm->bf_listing = 1;
	sm->bf_list_head = sm->log.head;
	if ((a = send_new(sm, sm->bf_target, TSR_PGMSG_SCAN, sm->info.same_interval_since)) == NULL)
		return;
	a->msg.max = window;
	if (sm->bf_sent && (a->msg.oid = tsr_pglog_dup(sm->bf_sent, sm->bf_sent_len)) != NULL)
		a->msg.oid_len = sm->bf_sent_len;
	sm->bf_scanning = 1;
}

/* Both listings are in: compare the window and push. */
static int
backfill_window(struct tsr_pgsm *sm)
{
	const struct tsr_pgsm_objver *end = NULL, *l = sm->bf_local, *r = sm->bf_remote;
	size_t i = 0, j = 0;
	int done;
	struct tsr_pgsm_action *a;

	if (sm->bf_listing || sm->bf_scanning)
		return 0;
	/* the window ends at the first listing's last name when it has more */
	if (!sm->bf_local_end && sm->nbf_local)
		end = &l[sm->nbf_local - 1];
	if (!sm->bf_remote_end && sm->nbf_remote &&
	    (end == NULL || tsr_oid_cmp(r[sm->nbf_remote - 1].oid, r[sm->nbf_remote - 1].oid_len,
					end->oid, end->oid_len) < 0))
		end = &r[sm->nbf_remote - 1];
	done = end == NULL;
	/* a write ordered since the listing began touches the window: the
	 * listings may be stale, list again */
	for (size_t k = tsr_pglog_after(&sm->log, sm->bf_list_head); k < sm->log.n; k++) {
		const struct tsr_pglog_entry *x = &sm->log.e[k];
		if (above_sent(sm, x->oid, x->oid_len) &&
		    (end == NULL || tsr_oid_cmp(x->oid, x->oid_len, end->oid, end->oid_len) <= 0)) {
			objvers_free(&sm->bf_local, &sm->nbf_local);
			objvers_free(&sm->bf_remote, &sm->nbf_remote);
			backfill_step(sm);
			return 0;
		}
	}
	sm->bf_want = 0;
	while (i < sm->nbf_local || j < sm->nbf_remote) {
		int c;
		if (i < sm->nbf_local && j < sm->nbf_remote)
			c = tsr_oid_cmp(l[i].oid, l[i].oid_len, r[j].oid, r[j].oid_len);
		else
			c = i < sm->nbf_local ? -1 : 1;
		const struct tsr_pgsm_objver *o = c <= 0 ? &l[i] : &r[j];
		if (end && tsr_oid_cmp(o->oid, o->oid_len, end->oid, end->oid_len) > 0)
			break;
		if (c != 0 || tsr_ev_cmp(l[i].ev, r[j].ev) != 0) {
			/* absent here (c > 0): the member removes its copy */
			if ((a = send_new(sm, sm->bf_target, TSR_PGMSG_PUSH,
					  sm->info.same_interval_since)) == NULL ||
			    (a->msg.oid = tsr_pglog_dup(o->oid, o->oid_len)) == NULL)
				return -ENOMEM;
			a->msg.oid_len = o->oid_len;
			a->msg.backfill = 1;
			a->msg.op = c > 0 ? TSR_PGLOG_DELETE : TSR_PGLOG_MODIFY;
			a->msg.ev = c > 0 ? (struct tsr_ev){ 0, 0 } : o->ev;
			a->attach = c > 0 ? TSR_PGSM_ATTACH_NONE : TSR_PGSM_ATTACH_OBJECT;
			if (rec_add(sm, o->oid, o->oid_len, sm->bf_target, 0, a->msg.ev) < 0)
				return -ENOMEM;
		}
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	/* the window's end goes out once its pushes are in (writes into the
	 * window wait until then: above bf_sent, bf_prog_pending) */
	free(sm->bf_prog);
	sm->bf_prog = NULL;
	sm->bf_prog_len = 0;
	if (!done) {
		if ((sm->bf_prog = tsr_pglog_dup(end->oid, end->oid_len)) == NULL)
			return -ENOMEM;
		sm->bf_prog_len = end->oid_len;
	}
	sm->bf_prog_done = done;
	sm->bf_prog_pending = 1;
	objvers_free(&sm->bf_local, &sm->nbf_local);
	objvers_free(&sm->bf_remote, &sm->nbf_remote);
	backfill_step(sm);      /* the progress and next window, once pushes are in */
	return 0;
}

int
tsr_pgsm_list_done(struct tsr_pgsm *sm, uint64_t token, const struct tsr_pgsm_objver *objs,
		   size_t n, int end)
{
	int rc;

	if (sm->role == ROLE_PRIMARY && sm->bf_listing && token == sm->bf_list_token) {
		objvers_free(&sm->bf_local, &sm->nbf_local);
		if ((rc = objvers_copy(&sm->bf_local, &sm->nbf_local, objs, n)) < 0) {
			objvers_free(&sm->bf_local, &sm->nbf_local);
			return rc;
		}
		sm->bf_listing = 0;
		sm->bf_local_end = end || n == 0;
		return backfill_window(sm);
	}
	if (sm->scan_for >= 0 && token == sm->scan_token) {
		struct tsr_pgsm_action *a;
		if (n > TSR_PGMSG_MAX_SCAN) {
			n = TSR_PGMSG_MAX_SCAN;
			end = 0;
		}
		if ((a = send_new(sm, sm->scan_for, TSR_PGMSG_SCAN_REPLY,
				  sm->info.same_interval_since)) == NULL ||
		    (rc = objvers_copy(&a->msg.objs, &a->msg.nobjs, objs, n)) < 0)
			return -ENOMEM;
		a->msg.done = (uint8_t)(end || n == 0);
		sm->scan_for = -1;
	}
	/* an answer to a LIST of an interval that ended: dropped */
	return 0;
}

static int
on_backfill_msg(struct tsr_pgsm *sm, const struct tsr_pgmsg *m)
{
	struct tsr_pgsm_action *a;
	struct persist p;
	struct pend pd;
	int rc;

	switch (m->type) {
	case TSR_PGMSG_SCAN:             /* member: list, then answer */
		if (sm->state != TSR_PGSM_REPLICA || m->from != sm->cur.acting[0])
			return 0;
		if ((a = action_new(sm, TSR_PGSM_A_LIST)) == NULL)
			return -ENOMEM;
		a->token = sm->scan_token = ++sm->next_token;
		a->msg.max = m->max;
		if (m->oid_len && (a->msg.oid = tsr_pglog_dup(m->oid, m->oid_len)) == NULL)
			return -ENOMEM;
		a->msg.oid_len = m->oid_len;
		sm->scan_for = m->from;
		return 0;
	case TSR_PGMSG_SCAN_REPLY:       /* primary */
		if (!sm->bf_scanning || m->from != sm->bf_target)
			return 0;
		/* the window asked for starts after the last position */
		if (m->nobjs && !above_sent(sm, m->objs[0].oid, m->objs[0].oid_len))
			return 0;
		sm->bf_scanning = 0;
		objvers_free(&sm->bf_remote, &sm->nbf_remote);
		if ((rc = objvers_copy(&sm->bf_remote, &sm->nbf_remote, m->objs, m->nobjs)) < 0)
			return rc;
		sm->bf_remote_end = m->done || m->nobjs == 0;
		return backfill_window(sm);
	case TSR_PGMSG_PROGRESS:         /* member: record how far it is whole */
		if (sm->state != TSR_PGSM_REPLICA || m->from != sm->cur.acting[0] ||
		    !sm->info.backfilling)
			return 0;
		free(sm->info.last_backfill);
		sm->info.last_backfill = NULL;
		sm->info.last_backfill_len = 0;
		if (m->done) {
			sm->info.backfilling = 0;
			sm->info.backfill_since = 0;
		} else {
			if ((sm->info.last_backfill = tsr_pglog_dup(m->oid, m->oid_len)) == NULL)
				return -ENOMEM;
			sm->info.last_backfill_len = m->oid_len;
		}
		memset(&p, 0, sizeof(p));
		kv_info(sm, &p);
		memset(&pd, 0, sizeof(pd));
		pd.kind = PEND_PROGRESS;
		pd.to = m->from;
		pd.ev.ver = m->done;
		pd.oid = m->oid;
		pd.oid_len = m->oid_len;
		return persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, &pd);
	case TSR_PGMSG_PROGRESS_ACK: {   /* primary */
		struct peer *pe = peer_find(sm, m->from);
		if (sm->state != TSR_PGSM_ACTIVE || pe == NULL)
			return 0;
		free(pe->info.last_backfill);
		pe->info.last_backfill = m->oid_len ? tsr_pglog_dup(m->oid, m->oid_len) : NULL;
		pe->info.last_backfill_len = pe->info.last_backfill ? m->oid_len : 0;
		if (m->done) {
			pe->info.backfilling = 0;
			if (sm->bf_target == m->from)
				backfill_end(sm);
		}
		recover_some(sm);
		requeue(sm);
		check_clean(sm);
		return 0;
	}
	}
	return 0;
}

/* ---- messages -------------------------------------------------------------------- */

static int
copy_missing(struct tsr_missing *dst, const struct tsr_missing *src)
{
	tsr_missing_init(dst);
	return tsr_missing_copy(dst, src);
}

static int
answer_info(struct tsr_pgsm *sm, const struct tsr_pgmsg *m, int type)
{
	struct tsr_pgsm_action *a = send_new(sm, m->from, type, m->interval);
	int rc;

	if (a == NULL)
		return -ENOMEM;
	if ((rc = tsr_pg_info_copy(&a->msg.info, &sm->info)) < 0 ||
	    (rc = copy_missing(&a->msg.missing, &sm->missing)) < 0)
		return rc;
	a->msg.info.les = sm->les_durable;
	if (type == TSR_PGMSG_NOTIFY)
		return tsr_pg_intervals_copy(&a->msg.past, &sm->past);
	a->msg.log.tail = a->msg.log.head = sm->log.tail;
	for (size_t i = 0; i < sm->log.n; i++)
		if ((rc = tsr_pglog_append(&a->msg.log, &sm->log.e[i])) < 0)
			return rc;
	return 0;
}

/* Take what another copy knows of the PG's history.  with_les: also the
 * start it took part in (its durable les, from a NOTIFY or LOG); not from
 * an ACTIVATE, whose les is the start in progress. */
static void
merge_history(struct tsr_pgsm *sm, const struct tsr_pg_info *o, int with_les)
{
	if (o->history_les > sm->info.history_les)
		sm->info.history_les = o->history_les;
	/* the start a complete copy took part in (one being backfilled
	 * vouches for no history: an authority could not be chosen from it) */
	if (with_les && !o->backfilling && o->les > sm->info.history_les)
		sm->info.history_les = o->les;
	if (o->lec > sm->info.lec)
		sm->info.lec = o->lec;
	if (sm->info.created == 0)
		sm->info.created = o->created;
}

/* Take the past intervals another copy knows of, those that ended before
 * our interval and since the PG was last clean: a copy that was not fed
 * the epochs of some (it started later, on an OSD new to the PG) learns
 * from the others which OSDs those intervals involved, and asks them
 * too.  (Intervals are made from the same maps everywhere, so a peer's
 * are facts, not opinions.) */
static int
merge_past(struct tsr_pgsm *sm, const struct tsr_pg_intervals *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->iv[i].last < sm->info.same_interval_since &&
		    o->iv[i].last >= sm->info.lec &&
		    tsr_pg_intervals_add(&sm->past, &o->iv[i]) < 0)
			return -ENOMEM;
	return 0;
}

static int
on_notify(struct tsr_pgsm *sm, const struct tsr_pgmsg *m)
{
	struct peer *p;
	int rc;

	if (sm->role != ROLE_PRIMARY)
		return 0;
	if ((p = peer_get(sm, m->from)) == NULL)
		return -ENOMEM;
	if ((rc = tsr_pg_info_copy(&p->info, &m->info)) < 0)
		return rc;
	tsr_missing_free(&p->missing);
	if ((rc = tsr_missing_copy(&p->missing, &m->missing)) < 0)
		return rc;
	p->answered = 1;
	merge_history(sm, &m->info, 1);
	if ((rc = merge_past(sm, &m->past)) < 0)
		return rc;
	switch (sm->state) {
	case TSR_PGSM_GETINFO:
	case TSR_PGSM_DOWN:
	case TSR_PGSM_INCOMPLETE:
		return getinfo_check(sm);
	case TSR_PGSM_ACTIVE:
		recover_some(sm);    /* it may hold an unfound object */
		/* a stray that spoke up once the PG was clean: no longer needed
		 * (check_clean tells those heard from before) */
		if (sm->clean && acting_index(sm, m->from) < 0 &&
		    !in_set(sm->cur.up, sm->cur.nup, m->from) && osd_up(sm, m->from) &&
		    purgeable(sm, &m->info) &&
		    send_new(sm, m->from, TSR_PGMSG_PURGE, sm->info.same_interval_since) == NULL)
			return -ENOMEM;
		break;
	}
	return 0;
}

/* This OSD's copy is too old to catch up by the log: another copy (auth)
 * leads while it is rebuilt.  Ask for an acting set with auth first, the
 * other members, and this OSD last (a member being backfilled). */
static int
ask_temp(struct tsr_pgsm *sm, int32_t auth)
{
	struct tsr_pgsm_action *a;

	sm->state = TSR_PGSM_INCOMPLETE;
	why(sm, "this copy is older than osd.%d's log: osd.%d leads while it is "
	    "rebuilt (PG temp asked)", auth, auth);
	if (sm->temp_asked)
		return 0;
	if ((a = action_new(sm, TSR_PGSM_A_PG_TEMP)) == NULL)
		return -ENOMEM;
	sm->temp_asked = 1;
	a->temp[a->ntemp++] = auth;
	for (uint32_t i = 0; i < sm->cur.nacting && a->ntemp < TSR_OSDMAP_MAX_SIZE - 1; i++)
		if (sm->cur.acting[i] != auth && sm->cur.acting[i] != sm->conf.whoami)
			a->temp[a->ntemp++] = sm->cur.acting[i];
	a->temp[a->ntemp++] = sm->conf.whoami;
	sm->ntemp = a->ntemp;
	memcpy(sm->temp, a->temp, sizeof(sm->temp));
	return 0;
}

static int
on_log(struct tsr_pgsm *sm, const struct tsr_pgmsg *m)
{
	struct persist p;
	struct peer *pe;
	int rc;

	if (sm->role != ROLE_PRIMARY || sm->state != TSR_PGSM_GETLOG || m->from != sm->auth)
		return 0;
	if ((pe = peer_get(sm, m->from)) == NULL)
		return -ENOMEM;
	if ((rc = tsr_pg_info_copy(&pe->info, &m->info)) < 0)
		return rc;
	tsr_missing_free(&pe->missing);
	if ((rc = tsr_missing_copy(&pe->missing, &m->missing)) < 0)
		return rc;
	merge_history(sm, &m->info, 1);
	memset(&p, 0, sizeof(p));
	if ((rc = merge_log(sm, &p, &m->log, 1, m->info.log_tail, m->info.last_update)) < 0) {
		persist_free(&p);
		return rc;
	}
	update_last_complete(sm);
	kv_info(sm, &p);
	if ((rc = persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, NULL)) < 0)
		return rc;
	if (sm->info.backfilling)
		return ask_temp(sm, m->from);
	return activate(sm);
}

static int
on_activate(struct tsr_pgsm *sm, const struct tsr_pgmsg *m)
{
	struct persist p;
	struct pend pd;
	int rc;

	if (sm->role != ROLE_MEMBER || m->from != sm->cur.acting[0])
		return 0;
	if (!m->whole && tsr_ev_cmp(sm->log.head, m->log.tail) != 0) {
		why(sm, "an activation from osd.%d follows %llu'%llu, our log ends at "
		    "%llu'%llu", m->from, (unsigned long long)m->log.tail.epoch,
		    (unsigned long long)m->log.tail.ver, (unsigned long long)sm->log.head.epoch,
		    (unsigned long long)sm->log.head.ver);
		return 0;
	}
	memset(&p, 0, sizeof(p));
	if ((rc = merge_log(sm, &p, &m->log, m->whole, m->log.tail, m->info.last_update)) < 0) {
		persist_free(&p);
		return rc;
	}
	merge_history(sm, &m->info, 0);
	committed_raise(sm, m->info.committed);
	if ((rc = merge_past(sm, &m->past)) < 0) {
		persist_free(&p);
		return rc;
	}
	record_start(sm);
	kv_info(sm, &p);
	memset(&pd, 0, sizeof(pd));
	pd.kind = PEND_ACTIVATE_ACK;
	pd.to = m->from;
	sm->state = TSR_PGSM_REPLICA;
	why(sm, "a member of the acting set of osd.%d", m->from);
	return persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, &pd);
}

static int
on_repop(struct tsr_pgsm *sm, const struct tsr_pgmsg *m, uint64_t payload)
{
	const struct tsr_pglog_entry *x;
	struct persist p;
	struct pend pd;
	int obj = TSR_PGSM_OBJ_PAYLOAD, rc;

	if (sm->state != TSR_PGSM_REPLICA || m->from != sm->cur.acting[0] || m->log.n != 1)
		return 0;
	x = &m->log.e[0];
	if (tsr_ev_cmp(x->ev, sm->log.head) <= 0)
		return 0;
	memset(&p, 0, sizeof(p));
	if (tsr_ev_cmp(m->trim_to, sm->log.tail) > 0 && tsr_ev_cmp(m->trim_to, sm->log.head) <= 0) {
		kv_log_trim(&p, &sm->log, m->trim_to);
		tsr_pglog_trim(&sm->log, m->trim_to);
		sm->info.log_tail = m->trim_to;
	}
	if ((rc = tsr_pglog_append(&sm->log, x)) < 0) {
		persist_free(&p);
		return rc;
	}
	kv_entry(&p, x);
	if (!tsr_pg_info_has_backfilled(&sm->info, x->oid, x->oid_len)) {
		/* not reached by the backfill yet: it brings the object as it
		 * is then; the entry is all we keep */
		obj = TSR_PGSM_OBJ_NONE;
	} else if (tsr_missing_find(&sm->missing, x->oid, x->oid_len)) {
		/* not recovered here yet: the write cannot apply to a copy we
		 * lack; the object stays missing at the new version */
		obj = TSR_PGSM_OBJ_NONE;
		if (x->op == TSR_PGLOG_DELETE) {
			missing_clear(sm, &p, x->oid, x->oid_len);
			rm_obj(&p, x->oid, x->oid_len);
		} else if ((rc = missing_set(sm, &p, x->oid, x->oid_len, x->ev,
					     tsr_missing_find(&sm->missing, x->oid, x->oid_len)->have)) < 0) {
			persist_free(&p);
			return rc;
		}
	}
	sm->info.last_update = x->ev;
	committed_raise(sm, m->committed);
	update_last_complete(sm);
	kv_info(sm, &p);
	memset(&pd, 0, sizeof(pd));
	pd.kind = PEND_REPOP;
	pd.to = m->from;
	pd.ev = x->ev;
	if ((rc = persist_emit(sm, &p, obj, 0, payload, &pd)) < 0)
		return rc;
	/* the answer goes as soon as the change is durable, without a turn
	 * through the machine (the commit's thread sends it); one that comes
	 * after the interval ended is dropped by the primary, and a member
	 * that committed just before a new map would have sent it too */
	struct tsr_pgsm_action *a = &sm->act[sm->nact - 1];
	a->answer = 1;
	msg_head(sm, a, m->from, TSR_PGMSG_REPOP_REPLY, sm->info.same_interval_since);
	a->msg.ev = x->ev;
	return 0;
}

/* Persist a pushed object (p holds the omap side); its commit answers. */
static int
take_push(struct tsr_pgsm *sm, struct persist *p, const struct tsr_pgmsg *m, int obj,
	  uint64_t payload)
{
	struct pend pd;

	memset(&pd, 0, sizeof(pd));
	pd.kind = PEND_PUSHED;
	pd.to = m->from;
	pd.ev = m->ev;
	pd.oid = m->oid;
	pd.oid_len = m->oid_len;
	return persist_emit(sm, p, obj, 0, payload, &pd);
}

static int
on_push(struct tsr_pgsm *sm, const struct tsr_pgmsg *m, uint64_t payload)
{
	const struct tsr_missing_item *it = tsr_missing_find(&sm->missing, m->oid, m->oid_len);
	struct persist p;

	if (sm->state != TSR_PGSM_ACTIVE && sm->state != TSR_PGSM_REPLICA)
		return 0;
	if (m->backfill) {
		/* the primary's copy as it is (or its absence): applies
		 * whatever we hold */
		if (sm->role != ROLE_MEMBER || !sm->info.backfilling)
			return 0;
		memset(&p, 0, sizeof(p));
		if (it) {
			kv_missing(&p, m->oid, m->oid_len, NULL);
			tsr_missing_rm(&sm->missing, m->oid, m->oid_len);
		}
		if (m->op == TSR_PGLOG_DELETE)
			rm_obj(&p, m->oid, m->oid_len);
		return take_push(sm, &p, m, m->op == TSR_PGLOG_DELETE ? TSR_PGSM_OBJ_NONE
				 : TSR_PGSM_OBJ_PAYLOAD, payload);
	}
	if (it == NULL || m->op != TSR_PGLOG_MODIFY || tsr_ev_cmp(m->ev, it->need) != 0) {
		if (sm->role == ROLE_PRIMARY) {
			/* the source lacks it after all: another one */
			int k = rec_find(sm, m->oid, m->oid_len, m->from);
			struct peer *pe = peer_find(sm, m->from);
			if (k >= 0)
				rec_drop(sm, (size_t)k);
			if (it && pe && tsr_missing_add(&pe->missing, m->oid, m->oid_len, it->need,
							(struct tsr_ev){ 0, 0 }) < 0)
				return -ENOMEM;
			recover_some(sm);
		} else if (it == NULL) {
			/* already have it (a push sent twice) */
			struct tsr_pgsm_action *a = send_new(sm, m->from, TSR_PGMSG_PUSH_ACK,
							     m->interval);
			if (a == NULL || (a->msg.oid = tsr_pglog_dup(m->oid, m->oid_len)) == NULL)
				return -ENOMEM;
			a->msg.oid_len = m->oid_len;
			a->msg.ev = m->ev;
		}
		return 0;
	}
	memset(&p, 0, sizeof(p));
	kv_missing(&p, m->oid, m->oid_len, NULL);
	return take_push(sm, &p, m, TSR_PGSM_OBJ_PAYLOAD, payload);
}

static int
on_push_ack(struct tsr_pgsm *sm, const struct tsr_pgmsg *m)
{
	struct peer *pe = peer_find(sm, m->from);
	const struct tsr_missing_item *it;
	int k;

	if (sm->state != TSR_PGSM_ACTIVE || pe == NULL)
		return 0;
	if ((k = rec_find(sm, m->oid, m->oid_len, m->from)) >= 0)
		rec_drop(sm, (size_t)k);
	it = tsr_missing_find(&pe->missing, m->oid, m->oid_len);
	if (it && tsr_ev_cmp(it->need, m->ev) <= 0)
		tsr_missing_rm(&pe->missing, m->oid, m->oid_len);
	recover_some(sm);
	requeue(sm);
	check_clean(sm);
	return 0;
}

/* ---- scrub repairs ------------------------------------------------------------ */


/* This copy's oid is bad: it misses it at need (have none), durably. */
static int
mark_bad(struct tsr_pgsm *sm, const void *oid, size_t oid_len, struct tsr_ev need)
{
	struct persist p;

	memset(&p, 0, sizeof(p));
	if (missing_set(sm, &p, oid, oid_len, need, (struct tsr_ev){ 0, 0 }) < 0) {
		persist_free(&p);
		return -ENOMEM;
	}
	update_last_complete(sm);
	kv_info(sm, &p);
	return persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, NULL);
}

size_t
tsr_pgsm_writes_after(const struct tsr_pgsm *sm, const void *after, size_t after_len)
{
	size_t n = 0;

	for (size_t i = 0; i < sm->nfl; i++)
		n += after_len == 0 ||
		     tsr_oid_cmp(sm->fl[i].oid, sm->fl[i].oid_len, after, after_len) > 0;
	return n;
}

int
tsr_pgsm_object_busy(const struct tsr_pgsm *sm, const void *oid, size_t oid_len)
{
	if (write_in_flight(sm, oid, oid_len) || object_degraded(sm, oid, oid_len))
		return 1;
	for (size_t i = 0; i < sm->nq; i++)
		if (tsr_oid_cmp(sm->q[i].op.oid, sm->q[i].op.oid_len, oid, oid_len) == 0)
			return 1;
	return 0;
}

int
tsr_pgsm_last_write(const struct tsr_pgsm *sm, const void *oid, size_t oid_len,
		    struct tsr_ev *ev)
{
	const struct tsr_pglog_entry *x = log_newest(&sm->log, oid, oid_len);

	if (x)
		*ev = x->ev;
	return x != NULL;
}

int
tsr_pgsm_repair(struct tsr_pgsm *sm, const void *oid, size_t oid_len,
		const int32_t *osds, size_t n, struct tsr_ev ev)
{
	const struct tsr_pglog_entry *x;
	int rc;

	if (sm->state != TSR_PGSM_ACTIVE || sm->role != ROLE_PRIMARY)
		return -EAGAIN;
	if (n == 0 || n >= sm->cur.nacting || oid_len == 0 || tsr_ev_none(ev))
		return -EINVAL; /* (a good copy must be left to copy from) */
	for (size_t i = 0; i < n; i++)
		if (acting_index(sm, osds[i]) < 0 ||
		    (osds[i] != sm->conf.whoami && peer_find(sm, osds[i]) == NULL))
			return -EINVAL;
	if (tsr_pgsm_object_busy(sm, oid, oid_len))
		return -EBUSY;
	/* the scrub saw the object at ev: a write since makes that stale */
	x = log_newest(&sm->log, oid, oid_len);
	if ((x && (x->op != TSR_PGLOG_MODIFY || tsr_ev_cmp(x->ev, ev) != 0)) ||
	    tsr_ev_cmp(ev, sm->info.last_update) > 0)
		return -ESTALE;
	/* every bad copy marked before recovery picks a source */
	for (size_t i = 0; i < n; i++) {
		if (osds[i] == sm->conf.whoami) {
			if ((rc = mark_bad(sm, oid, oid_len, ev)) < 0)
				return rc;
			continue;
		}
		struct peer *pe = peer_find(sm, osds[i]);
		struct tsr_pgsm_action *a;
		/* the member records it before the push that follows on the
		 * same session, so it takes the push */
		if ((a = send_new(sm, osds[i], TSR_PGMSG_REPAIR,
				  sm->info.same_interval_since)) == NULL ||
		    (a->msg.oid = tsr_pglog_dup(oid, oid_len)) == NULL)
			return -ENOMEM;
		a->msg.oid_len = oid_len;
		a->msg.ev = ev;
		if (tsr_missing_add(&pe->missing, oid, oid_len, ev, (struct tsr_ev){ 0, 0 }) < 0)
			return -ENOMEM;
	}
	sm->clean = 0;
	why(sm, "active: repairing %zu copies of an object at %llu'%llu", n,
	    (unsigned long long)ev.epoch, (unsigned long long)ev.ver);
	recover_some(sm);
	return 0;
}

/* The primary found our copy of an object bad. */
static int
on_repair(struct tsr_pgsm *sm, const struct tsr_pgmsg *m)
{
	const struct tsr_pglog_entry *x;

	if (sm->state != TSR_PGSM_REPLICA || m->from != sm->cur.acting[0])
		return 0;
	/* a write since: what we hold is newer than what the scrub saw (the
	 * primary's push then finds us holding it, and is acknowledged) */
	x = log_newest(&sm->log, m->oid, m->oid_len);
	if (x && tsr_ev_cmp(x->ev, m->ev) > 0)
		return 0;
	return mark_bad(sm, m->oid, m->oid_len, m->ev);
}

int
tsr_pgsm_recv(struct tsr_pgsm *sm, const struct tsr_pgmsg *m, uint64_t payload)
{
	int current;

	if (!sm->have_map || m->map_epoch > sm->cur.epoch)
		return -EAGAIN;
	if (m->pgid.pool != sm->conf.pgid.pool || m->pgid.pg != sm->conf.pgid.pg)
		return -EINVAL;
	if (sm->state == TSR_PGSM_DELETED)
		return 0;
	current = m->interval == sm->info.same_interval_since;
	switch (m->type) {
	case TSR_PGMSG_QUERY:
		return answer_info(sm, m, TSR_PGMSG_NOTIFY);
	case TSR_PGMSG_GETLOG:
		return answer_info(sm, m, TSR_PGMSG_LOG);
	case TSR_PGMSG_PULL: {
		struct tsr_pgsm_action *a = send_new(sm, m->from, TSR_PGMSG_PUSH, m->interval);
		if (a == NULL || (a->msg.oid = tsr_pglog_dup(m->oid, m->oid_len)) == NULL)
			return -ENOMEM;
		a->msg.oid_len = m->oid_len;
		a->msg.ev = m->ev;
		a->msg.op = TSR_PGLOG_MODIFY;
		a->attach = TSR_PGSM_ATTACH_OBJECT;
		/* a copy we miss ourselves is no source (one a backfill has not
		 * reached may be: the push says which version it is) */
		if (tsr_missing_find(&sm->missing, m->oid, m->oid_len)) {
			a->attach = TSR_PGSM_ATTACH_NONE;
			a->msg.op = TSR_PGLOG_DELETE;
		}
		return 0;
	}
	}
	if (!current)
		return 0;
	switch (m->type) {
	case TSR_PGMSG_NOTIFY:
		return on_notify(sm, m);
	case TSR_PGMSG_LOG:
		return on_log(sm, m);
	case TSR_PGMSG_ACTIVATE:
		return on_activate(sm, m);
	case TSR_PGMSG_ACTIVATE_ACK: {
		struct peer *pe = peer_find(sm, m->from);
		int rc;
		if (sm->state != TSR_PGSM_ACTIVATING || pe == NULL || acting_index(sm, m->from) < 0)
			return 0;
		tsr_missing_free(&pe->missing);
		if ((rc = tsr_missing_copy(&pe->missing, &m->missing)) < 0)
			return rc;
		if ((rc = tsr_pg_info_copy(&pe->info, &m->info)) < 0)
			return rc;
		pe->activated = 1;
		pe->info.last_update = sm->info.last_update;
		if (sm->cur.nacting >= sm->cur.min_size)
			pe->info.les = sm->info.same_interval_since;
		activated_check(sm);
		return 0;
	}
	case TSR_PGMSG_REPOP:
		return on_repop(sm, m, payload);
	case TSR_PGMSG_REPOP_REPLY: {
		int k = acting_index(sm, m->from);
		if (sm->state != TSR_PGSM_ACTIVE || k <= 0 || m->result < 0)
			return 0;
		for (size_t i = 0; i < sm->nfl; i++)
			if (tsr_ev_cmp(sm->fl[i].ev, m->ev) == 0)
				sm->fl[i].waiting &= ~(1u << k);
		complete_writes(sm);
		return 0;
	}
	case TSR_PGMSG_PUSH:
		return on_push(sm, m, payload);
	case TSR_PGMSG_PUSH_ACK:
		return on_push_ack(sm, m);
	case TSR_PGMSG_SCAN:
	case TSR_PGMSG_SCAN_REPLY:
	case TSR_PGMSG_PROGRESS:
	case TSR_PGMSG_PROGRESS_ACK:
		return on_backfill_msg(sm, m);
	case TSR_PGMSG_REPAIR:
		return on_repair(sm, m);
	case TSR_PGMSG_COMMIT: {
		struct persist p;
		if (sm->state != TSR_PGSM_REPLICA || m->from != sm->cur.acting[0] ||
		    tsr_ev_cmp(m->ev, sm->info.committed) <= 0)
			return 0;
		committed_raise(sm, m->ev);
		memset(&p, 0, sizeof(p));
		kv_info(sm, &p);
		return persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, NULL);
	}
	case TSR_PGMSG_SCRUB:
	case TSR_PGMSG_SCRUB_MAP:
		return 0; /* the OSD's (daemons/osd/scrub.c), never handed in */
	case TSR_PGMSG_PURGE:
		if (sm->role == ROLE_STRAY && !in_set(sm->cur.up, sm->cur.nup, sm->conf.whoami)) {
			action_new(sm, TSR_PGSM_A_DELETE);
			sm->state = TSR_PGSM_DELETED;
			why(sm, "deleted: clean on osd.%d without this copy", m->from);
		}
		return 0;
	}
	return -EINVAL;
}

int
tsr_pgsm_committed(struct tsr_pgsm *sm, uint64_t token)
{
	struct pend pd;
	size_t i;
	int current, rc = 0;

	for (i = 0; i < sm->npend && sm->pend[i].token != token; i++)
		;
	if (i == sm->npend)
		return 0;
	pd = sm->pend[i];
	memmove(&sm->pend[i], &sm->pend[i + 1], (sm->npend - i - 1) * sizeof(pd));
	sm->npend--;
	if (pd.les > sm->les_durable)
		sm->les_durable = pd.les;
	current = pd.interval == sm->info.same_interval_since && sm->state != TSR_PGSM_DELETED;
	switch (pd.kind) {
	case PEND_ACTIVATED:
		if (current && sm->state == TSR_PGSM_ACTIVATING) {
			sm->own_activated = 1;
			activated_check(sm);
		}
		break;
	case PEND_ACTIVATE_ACK:
		if (current && sm->state == TSR_PGSM_REPLICA) {
			struct tsr_pgsm_action *a = send_new(sm, pd.to, TSR_PGMSG_ACTIVATE_ACK,
							     pd.interval);
			if (a == NULL || copy_missing(&a->msg.missing, &sm->missing) < 0 ||
			    tsr_pg_info_copy(&a->msg.info, &sm->info) < 0)
				rc = -ENOMEM;
		}
		break;
	case PEND_WRITE:
		if (current)
			for (size_t k = 0; k < sm->nfl; k++)
				if (tsr_ev_cmp(sm->fl[k].ev, pd.ev) == 0)
					sm->fl[k].waiting &= ~1u;
		complete_writes(sm);
		break;
	case PEND_REPOP:
		break; /* answered with the commit (the PERSIST's msg) */
	case PEND_PROGRESS:
		if (current && sm->state == TSR_PGSM_REPLICA) {
			struct tsr_pgsm_action *a = send_new(sm, pd.to, TSR_PGMSG_PROGRESS_ACK,
							     pd.interval);
			if (a == NULL || (pd.oid_len && (a->msg.oid = tsr_pglog_dup(pd.oid, pd.oid_len)) == NULL))
				rc = -ENOMEM;
			else {
				a->msg.oid_len = pd.oid_len;
				a->msg.done = (uint8_t)pd.ev.ver;
			}
		}
		break;
	case PEND_PUSHED: {
		const struct tsr_missing_item *it = tsr_missing_find(&sm->missing, pd.oid, pd.oid_len);
		if (it && tsr_ev_cmp(it->need, pd.ev) == 0) {
			tsr_missing_rm(&sm->missing, pd.oid, pd.oid_len);
			update_last_complete(sm);
		}
		if (!current)
			break;
		if (sm->role == ROLE_PRIMARY) {
			int k = rec_find(sm, pd.oid, pd.oid_len, pd.to);
			if (k >= 0)
				rec_drop(sm, (size_t)k);
			recover_some(sm);
			requeue(sm);
			check_clean(sm);
		} else {
			struct tsr_pgsm_action *a = send_new(sm, pd.to, TSR_PGMSG_PUSH_ACK,
							     pd.interval);
			if (a == NULL || (a->msg.oid = tsr_pglog_dup(pd.oid, pd.oid_len)) == NULL)
				rc = -ENOMEM;
			else {
				a->msg.oid_len = pd.oid_len;
				a->msg.ev = pd.ev;
			}
		}
		break;
	}
	}
	free(pd.oid);
	return rc;
}

/* ---- status --------------------------------------------------------------------- */

int
tsr_pgsm_commit_due(const struct tsr_pgsm *sm)
{
	return sm->role == ROLE_PRIMARY && sm->state == TSR_PGSM_ACTIVE &&
	       sm->cur.nacting > 1 && tsr_ev_cmp(sm->info.committed, sm->sent_committed) > 0;
}

int
tsr_pgsm_tick(struct tsr_pgsm *sm)
{
	struct persist p;
	int rc;

	if (!tsr_pgsm_commit_due(sm))
		return 0;
	/* the writes went quiet: the members learn how far they are
	 * committed (reads below min_size serve no further), and so does
	 * this copy's store */
	memset(&p, 0, sizeof(p));
	kv_info(sm, &p);
	if ((rc = persist_emit(sm, &p, TSR_PGSM_OBJ_NONE, 0, 0, NULL)) < 0)
		return rc;
	for (uint32_t i = 1; i < sm->cur.nacting; i++) {
		struct tsr_pgsm_action *a = send_new(sm, sm->cur.acting[i], TSR_PGMSG_COMMIT,
						     sm->info.same_interval_since);
		if (a == NULL)
			return -ENOMEM;
		a->msg.ev = sm->info.committed;
	}
	sm->sent_committed = sm->info.committed;
	return 0;
}

int
tsr_pgsm_reserved(struct tsr_pgsm *sm, int32_t osd, uint64_t interval)
{
	if (interval != sm->info.same_interval_since || osd != sm->bf_target ||
	    !sm->bf_asked || sm->bf_granted)
		return 0;
	sm->bf_granted = 1;
	recover_some(sm);    /* (what is missing first, then the backfill) */
	return 0;
}

int
tsr_pgsm_backfill_waiting(const struct tsr_pgsm *sm)
{
	return sm->bf_target >= 0 && sm->conf.reserve_backfill && !sm->bf_granted;
}

int
tsr_pgsm_state(const struct tsr_pgsm *sm)
{
	return sm->state;
}

int
tsr_pgsm_is_clean(const struct tsr_pgsm *sm)
{
	return sm->clean;
}

const struct tsr_pg_info *
tsr_pgsm_info(const struct tsr_pgsm *sm)
{
	return &sm->info;
}

const struct tsr_pglog *
tsr_pgsm_log(const struct tsr_pgsm *sm)
{
	return &sm->log;
}

const struct tsr_missing *
tsr_pgsm_missing(const struct tsr_pgsm *sm)
{
	return &sm->missing;
}

size_t
tsr_pgsm_degraded(const struct tsr_pgsm *sm)
{
	size_t n = sm->missing.n;

	for (uint32_t i = 1; i < sm->cur.nacting; i++) {
		const struct peer *p = NULL;
		for (size_t k = 0; k < sm->npeers; k++)
			if (sm->peers[k].osd == sm->cur.acting[i])
				p = &sm->peers[k];
		if (p)
			n += p->missing.n;
	}
	return n;
}

int
tsr_pgsm_backfilling(const struct tsr_pgsm *sm)
{
	return sm->bf_target >= 0;
}

const struct tsr_pg_mapview *
tsr_pgsm_mapview(const struct tsr_pgsm *sm)
{
	return &sm->cur;
}

const char *
tsr_pgsm_why(const struct tsr_pgsm *sm)
{
	return sm->why;
}
