/* mapstore.c — the OSD map epochs an OSD took, kept in its own store
 * (osd.h), so that it restarts at the epoch where it stopped and takes
 * only the epochs after it from the monitors' history: its PGs must see
 * every epoch since their interval began (core/osd/pgsm.h).
 *
 * The epochs are the omap of one object of the OSD's own collection,
 * MAPS_OID: "F" + be64 epoch holds a full map (the first epoch, the
 * first after a gap, every FULL_EVERY-th), "I" + be64 epoch the
 * incremental that made that epoch.  The newest full map and the
 * incrementals after it, in a row, give the newest epoch stored.  Writes
 * go in order through one work queue (a backend's submit may block, so
 * not on the loop); a crash loses at most the last epochs, which the
 * monitors give again.  The oldest FULL_EVERY epochs at a time go once
 * more than `keep` are held.
 *
 * What is read back is hostile input: a map or incremental that does not
 * decode or apply ends the load there, with a warning, and the OSD starts
 * from what came before it (or from the monitors' full map).
 */
#include "osd.h"
#include "event/workq.h"
#include "log/log.h"
#include "util/sbuf.h"
#include "util/util.h"

#include <tessera/encoding.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOGW(...) TSR_LOG_WARN(OSD, __VA_ARGS__)

#define MAPS_OID "osdmaps"
#define MAPS_OID_LEN 7
#define FULL_EVERY 64

struct osd_mapstore {
	struct osd_store *st;
	struct tsr_workq *q;
	size_t keep;
	/* the loop's view: what it has queued */
	uint64_t queued_last;        /* the last epoch queued (0: none) */
	uint64_t *fulls;             /* epochs with a full map, ascending */
	size_t nfulls, capfulls;
	/* the worker's results, read by status under lock */
	pthread_mutex_t lock;
	uint64_t first, last;        /* stored, committed */
	uint64_t writes, errors;
	uint64_t floor;              /* the oldest epoch a PG still needs (the
					loop's): never trimmed */
};

struct write {
	struct osd_mapstore *ms;
	uint8_t key[9];
	uint8_t *val;
	size_t len;
	uint64_t epoch;
	int trim;                    /* and remove the epochs [rm_first,
					new_first), full maps and incrementals */
	uint64_t rm_first, new_first;
};

static void
key_of(uint8_t *k, char kind, uint64_t e)
{
	k[0] = (uint8_t)kind;
	for (int i = 0; i < 8; i++)
		k[1 + i] = (uint8_t)(e >> (56 - 8 * i));
}

static uint64_t
epoch_of_key(const uint8_t *k)
{
	uint64_t e = 0;

	for (int i = 0; i < 8; i++)
		e = e << 8 | k[1 + i];
	return e;
}

/* ---- Loading -------------------------------------------------------------------*/

struct load {
	struct osd_mapstore *ms;
	uint8_t *full;               /* the newest full map's bytes */
	size_t full_len;
	uint64_t full_epoch;
	struct tsr_osdmap *m;        /* the map being brought forward */
	int stop;
	char why[256];
};

static int
fulls_add(struct osd_mapstore *ms, uint64_t e)
{
	if (ms->nfulls == ms->capfulls) {
		size_t cap = ms->capfulls ? 2 * ms->capfulls : 16;
		uint64_t *v = realloc(ms->fulls, cap * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		ms->fulls = v;
		ms->capfulls = cap;
	}
	ms->fulls[ms->nfulls++] = e;
	return 0;
}

static int
load_full(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct load *l = arg;
	const uint8_t *k = key;

	if (key_len != 9 || k[0] != 'F')
		return 1; /* past the full maps */
	free(l->full);
	if ((l->full = malloc(val_len ? val_len : 1)) == NULL)
		return -ENOMEM;
	memcpy(l->full, val, val_len);
	l->full_len = val_len;
	l->full_epoch = epoch_of_key(k);
	return fulls_add(l->ms, l->full_epoch);
}

static int
load_inc(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct load *l = arg;
	const uint8_t *k = key;
	struct tsr_osdmap_inc inc;

	if (key_len != 9 || k[0] != 'I' || epoch_of_key(k) != l->m->epoch + 1)
		return 1; /* the end, or a gap: what follows cannot be used */
	if (tsr_osdmap_inc_decode(val, val_len, &inc, l->why, sizeof(l->why)) < 0)
		return 1;
	int rc = tsr_osdmap_apply(l->m, &inc, l->why, sizeof(l->why));
	tsr_osdmap_inc_free(&inc);
	return rc < 0 ? 1 : 0;
}

int
osd_mapstore_open(struct osd_store *st, size_t keep, struct osd_mapstore **out,
		  struct tsr_osdmap *loaded, char *err, size_t errlen)
{
	struct osd_mapstore *ms = tsr_xcalloc(1, sizeof(*ms));
	struct load l;
	uint8_t start[9];
	int rc;

	tsr_osdmap_init(loaded);
	loaded->epoch = 0;
	ms->st = st;
	ms->keep = keep < FULL_EVERY ? FULL_EVERY : keep;
	pthread_mutex_init(&ms->lock, NULL);
	if ((rc = tsr_workq_create("tsr-osd-maps", &ms->q)) < 0) {
		pthread_mutex_destroy(&ms->lock);
		free(ms);
		return tsr_errf(err, errlen, rc, "the map store's worker: %s", strerror(-rc));
	}
	memset(&l, 0, sizeof(l));
	l.ms = ms;
	key_of(start, 'F', 0);
	rc = st->ops->omap_iter(st->h, &osd_meta_coll, MAPS_OID, MAPS_OID_LEN, start, 9,
				load_full, &l);
	if (rc < 0 && rc != -ENOENT && rc != 1) {
		free(l.full);
		osd_mapstore_close(ms);
		return tsr_errf(err, errlen, rc, "reading the stored OSD maps: %s",
				strerror(-rc));
	}
	if (l.full) {
		struct tsr_osdmap m;
		rc = tsr_osdmap_decode(l.full, l.full_len, &m, l.why, sizeof(l.why));
		if (rc == 0 && m.epoch != l.full_epoch) {
			snprintf(l.why, sizeof(l.why), "it holds epoch %" PRIu64, m.epoch);
			tsr_osdmap_free(&m);
			rc = -EINVAL;
		}
		if (rc < 0) {
			LOGW("osd.%d: the stored OSD map of epoch %" PRIu64 " does not decode "
			     "(%s): starting from the monitors' map", st->sb.whoami,
			     l.full_epoch, l.why);
		} else {
			uint8_t from[9];
			l.m = &m;
			l.why[0] = '\0';
			key_of(from, 'I', m.epoch + 1);
			st->ops->omap_iter(st->h, &osd_meta_coll, MAPS_OID, MAPS_OID_LEN, from, 9,
					   load_inc, &l);
			if (l.why[0])
				LOGW("osd.%d: a stored OSD map incremental after epoch %" PRIu64
				     " does not apply (%s): starting from epoch %" PRIu64,
				     st->sb.whoami, m.epoch, l.why, m.epoch);
			tsr_osdmap_free(loaded);
			*loaded = m;
			ms->first = ms->fulls[0];
			ms->last = ms->queued_last = m.epoch;
		}
	}
	free(l.full);
	*out = ms;
	return 0;
}

/* ---- Writing ---------------------------------------------------------------------*/

static void
committed(void *arg, int rc)
{
	struct write *w = arg;
	struct osd_mapstore *ms = w->ms;

	pthread_mutex_lock(&ms->lock);
	if (rc < 0) {
		ms->errors++;
	} else {
		ms->writes++;
		if (w->epoch > ms->last)
			ms->last = w->epoch;
		if (ms->first == 0)
			ms->first = w->epoch;
		if (w->trim)
			ms->first = w->new_first;
	}
	pthread_mutex_unlock(&ms->lock);
	free(w->val);
	free(w);
}

static void
write_run(void *arg)
{
	struct write *w = arg;
	struct osd_mapstore *ms = w->ms;
	struct tsr_txn_op ops[4];
	struct tsr_txn t = { 2, ops };
	uint8_t from[2][9], to[2][9];
	int rc;

	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < 4; i++) {
		ops[i].cid = osd_meta_coll;
		ops[i].oid = MAPS_OID;
		ops[i].oid_len = MAPS_OID_LEN;
	}
	ops[0].type = TSR_TXN_TOUCH;
	ops[1].type = TSR_TXN_OMAP_SET;
	ops[1].key = w->key;
	ops[1].key_len = 9;
	ops[1].val = w->val;
	ops[1].val_len = w->len;
	if (w->trim) {
		/* the oldest full map and its incrementals: [first, new_first) */
		for (int i = 0; i < 2; i++) {
			key_of(from[i], i ? 'I' : 'F', w->rm_first);
			key_of(to[i], i ? 'I' : 'F', w->new_first);
			ops[2 + i].type = TSR_TXN_OMAP_RMRANGE;
			ops[2 + i].key = from[i];
			ops[2 + i].key_len = 9;
			ops[2 + i].val = to[i];
			ops[2 + i].val_len = 9;
		}
		t.nops = 4;
	}
	rc = ms->st->ops->submit(ms->st->h, &t, committed, w);
	if (rc < 0)
		committed(w, rc);
}

void
osd_mapstore_add(struct osd_mapstore *ms, const struct tsr_osdmap *prev,
		 const struct tsr_osdmap *cur)
{
	struct write *w;
	struct tsr_enc e;
	int full = prev == NULL || prev->epoch + 1 != cur->epoch ||
		   ms->queued_last + 1 != cur->epoch || cur->epoch % FULL_EVERY == 0;

	if (cur->epoch <= ms->queued_last)
		return;
	w = tsr_xcalloc(1, sizeof(*w));
	w->ms = ms;
	w->epoch = cur->epoch;
	tsr_enc_init(&e);
	if (full) {
		tsr_osdmap_encode(&e, cur);
	} else {
		struct tsr_osdmap_inc inc;
		if (tsr_osdmap_diff(prev, cur, &inc) < 0) {
			tsr_enc_release(&e);
			free(w);
			return; /* no memory: the next epoch is stored whole */
		}
		tsr_osdmap_inc_encode(&e, &inc);
		tsr_osdmap_inc_free(&inc);
	}
	if (tsr_enc_error(&e) || (w->val = tsr_enc_take(&e, &w->len)) == NULL) {
		tsr_enc_release(&e);
		free(w);
		return;
	}
	key_of(w->key, full ? 'F' : 'I', cur->epoch);
	if (full && fulls_add(ms, cur->epoch) < 0) {
		free(w->val);
		free(w);
		return;
	}
	/* the oldest run goes once the rest hold more than keep */
	if (ms->nfulls >= 2 && cur->epoch - ms->fulls[1] >= ms->keep &&
	    (ms->floor == 0 || ms->fulls[1] <= ms->floor)) {
		w->trim = 1;
		w->rm_first = ms->fulls[0];
		w->new_first = ms->fulls[1];
		memmove(ms->fulls, ms->fulls + 1, (ms->nfulls - 1) * sizeof(*ms->fulls));
		ms->nfulls--;
	}
	if (tsr_workq_post(ms->q, write_run, w) < 0) {
		free(w->val);
		free(w);
		return;
	}
	ms->queued_last = cur->epoch;
}

void
osd_mapstore_floor(struct osd_mapstore *ms, uint64_t epoch)
{
	ms->floor = epoch;
}

void
osd_mapstore_status(struct osd_mapstore *ms, struct tsr_sbuf *out)
{
	pthread_mutex_lock(&ms->lock);
	tsr_sbuf_printf(out, "{\"first\": %" PRIu64 ", \"last\": %" PRIu64 ", \"full_maps\": %zu, "
			"\"writes\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"queued\": %zu}",
			ms->first, ms->last, ms->nfulls, ms->writes, ms->errors,
			tsr_workq_pending(ms->q));
	pthread_mutex_unlock(&ms->lock);
}

void
osd_mapstore_close(struct osd_mapstore *ms)
{
	if (ms == NULL)
		return;
	tsr_workq_destroy(ms->q); /* what was queued is submitted */
	if (ms->st->ops->flush)
		ms->st->ops->flush(ms->st->h);
	pthread_mutex_destroy(&ms->lock);
	free(ms->fulls);
	free(ms);
}

/* ---- Replaying --------------------------------------------------------------------*/

struct replay {
	struct osd_store *st;
	uint64_t from, full;         /* the newest full map at or below from */
	uint64_t want;               /* replay_full: the epoch asked for */
	struct tsr_osdmap_epoch *ep; /* the last made */
	const struct tsr_registry *reg;
	const struct tsr_host *host;
	void (*fn)(void *, struct tsr_osdmap_epoch *);
	void *arg;
	int n;
	int stop;
};

static int
find_full(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct replay *r = arg;
	const uint8_t *k = key;

	(void)val;
	(void)val_len;
	if (key_len != 9 || k[0] != 'F' || epoch_of_key(k) > r->from)
		return 1;
	r->full = epoch_of_key(k);
	return 0;
}

static int
replay_full(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct replay *r = arg;
	struct tsr_osdmap m;
	char err[256];

	/* only the full map asked for (the iteration starts at its key and
	 * may find a later one) */
	if (key_len != 9 || ((const uint8_t *)key)[0] != 'F' ||
	    epoch_of_key(key) != r->want)
		return 1;
	if (tsr_osdmap_decode(val, val_len, &m, err, sizeof(err)) < 0)
		return 1;
	if (tsr_osdmap_epoch_create(&m, r->reg, r->host, &r->ep, err, sizeof(err)) < 0) {
		tsr_osdmap_free(&m);
		return 1;
	}
	tsr_osdmap_free(&m);
	if (tsr_osdmap_epoch_number(r->ep) >= r->from) {
		r->fn(r->arg, r->ep);
		r->n++;
	}
	return 1; /* one */
}

static int
replay_inc(void *arg, const void *key, size_t key_len, const void *val, size_t val_len)
{
	struct replay *r = arg;
	const uint8_t *k = key;
	struct tsr_osdmap_inc inc;
	struct tsr_osdmap_epoch *next;
	char err[256];

	if (key_len != 9 || k[0] != 'I' || epoch_of_key(k) != tsr_osdmap_epoch_number(r->ep) + 1)
		return 1;
	if (tsr_osdmap_inc_decode(val, val_len, &inc, err, sizeof(err)) < 0)
		return 1;
	int rc = tsr_osdmap_epoch_next(r->ep, &inc, &next, err, sizeof(err));
	tsr_osdmap_inc_free(&inc);
	if (rc < 0)
		return 1;
	tsr_osdmap_epoch_put(r->ep);
	r->ep = next;
	if (tsr_osdmap_epoch_number(next) >= r->from) {
		r->fn(r->arg, next);
		r->n++;
	}
	return 0;
}

int
osd_mapstore_replay(struct osd_mapstore *ms, uint64_t from, const struct tsr_registry *reg,
		    const struct tsr_host *host,
		    void (*fn)(void *arg, struct tsr_osdmap_epoch *ep), void *arg)
{
	struct replay r = { .st = ms->st, .from = from, .reg = reg, .host = host, .fn = fn,
			    .arg = arg };
	struct osd_store *st = ms->st;
	uint8_t k[9];
	int rc;

	key_of(k, 'F', 0);
	rc = st->ops->omap_iter(st->h, &osd_meta_coll, MAPS_OID, MAPS_OID_LEN, k, 9, find_full,
				&r);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (r.full == 0) {
		/* nothing stored at or below from: from the oldest full map
		 * (copies that needed earlier epochs cannot be fed; they say so) */
		if (ms->nfulls == 0)
			return 0;
		r.full = ms->fulls[0];
	}
	r.want = r.full;
	key_of(k, 'F', r.full);
	st->ops->omap_iter(st->h, &osd_meta_coll, MAPS_OID, MAPS_OID_LEN, k, 9, replay_full, &r);
	if (r.ep == NULL)
		return 0;
	/* the incrementals after it, and a full map where the run has one */
	for (int rounds = 0; rounds < 1 << 20; rounds++) {
		uint64_t at = tsr_osdmap_epoch_number(r.ep);
		key_of(k, 'I', at + 1);
		st->ops->omap_iter(st->h, &osd_meta_coll, MAPS_OID, MAPS_OID_LEN, k, 9,
				   replay_inc, &r);
		if (tsr_osdmap_epoch_number(r.ep) != at)
			continue;
		/* no incremental for at + 1: a full map of it? */
		struct tsr_osdmap_epoch *before = r.ep;
		key_of(k, 'F', at + 1);
		tsr_osdmap_epoch_get(before);
		r.ep = NULL;
		struct replay probe = r;
		probe.ep = NULL;
		probe.want = at + 1;
		st->ops->omap_iter(st->h, &osd_meta_coll, MAPS_OID, MAPS_OID_LEN, k, 9,
				   replay_full, &probe);
		if (probe.ep == NULL || tsr_osdmap_epoch_number(probe.ep) != at + 1) {
			tsr_osdmap_epoch_put(probe.ep);
			r.ep = before;
			tsr_osdmap_epoch_put(before);
			break;
		}
		r.n = probe.n;
		tsr_osdmap_epoch_put(before);
		tsr_osdmap_epoch_put(before);
		r.ep = probe.ep;
	}
	tsr_osdmap_epoch_put(r.ep);
	return r.n;
}
