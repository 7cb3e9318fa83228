/* pglog.c — a placement group's log, info, intervals and missing set, and
 * their encodings (pglog.h). */
#include "osd/pglog.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
fail(struct tsr_dec *d, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen && tsr_dec_error(d) == 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	tsr_dec_fail(d, -EBADMSG);
	return tsr_dec_error(d);
}

static int
done(struct tsr_dec *d, char *err, size_t errlen, const char *what)
{
	int rc = tsr_dec_error(d);

	if (rc < 0 && err && errlen && err[0] == '\0')
		snprintf(err, errlen, "%s: truncated or malformed (%s)", what,
			 rc == -EOPNOTSUPP ? "a newer encoding" : "bad length");
	return rc;
}

uint8_t *
tsr_pglog_dup(const void *p, size_t n)
{
	uint8_t *q = malloc(n ? n : 1);

	if (q && n)
		memcpy(q, p, n);
	return q;
}

const char *
tsr_pglog_op_name(uint8_t op)
{
	switch (op) {
#define TSR_PGLOG_OP_NAME(name, n, label) case (n): return label;
	TSR_PGLOG_OPS(TSR_PGLOG_OP_NAME)
#undef TSR_PGLOG_OP_NAME
	}
	return NULL;
}

int
tsr_oid_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;    /* (an empty name may come as NULL) */

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* ---- the log ------------------------------------------------------------------ */

void
tsr_pglog_init(struct tsr_pglog *l)
{
	memset(l, 0, sizeof(*l));
}

void
tsr_pglog_entry_free(struct tsr_pglog_entry *e)
{
	free(e->oid);
	e->oid = NULL;
	e->oid_len = 0;
}

/* ---- the request-id index (linear probing; rcap a power of two) ------ */

struct tsr_pglog_rix {
	uint64_t client, tid;   /* client 0: a free slot */
	uint64_t no;            /* the entry's number */
};

static size_t
rix_slot(const struct tsr_pglog *l, struct tsr_reqid r)
{
	uint64_t h = r.client * 0x9e3779b97f4a7c15ull ^ r.tid * 0xc2b2ae3d27d4eb4full;

	return (size_t)((h ^ h >> 29) & (l->rcap - 1));
}

static void
rix_drop(struct tsr_pglog *l)
{
	free(l->rix);
	l->rix = NULL;
	l->rcap = l->rn = 0;
}

static void
rix_put(struct tsr_pglog *l, struct tsr_reqid r, uint64_t no)
{
	size_t i = rix_slot(l, r);

	while (l->rix[i].client != 0)
		i = (i + 1) & (l->rcap - 1);
	l->rix[i] = (struct tsr_pglog_rix){ r.client, r.tid, no };
	l->rn++;
}

/* An index of the entries, with room for at least want of them; a log
 * whose index cannot be had is searched entry by entry. */
static void
rix_build(struct tsr_pglog *l, size_t want)
{
	size_t cap = 64;

	rix_drop(l);
	while (cap < want * 2)
		cap *= 2;
	if ((l->rix = calloc(cap, sizeof(*l->rix))) == NULL)
		return;
	l->rcap = cap;
	for (size_t i = 0; i < l->n; i++)
		if (l->e[i].reqid.client != 0)
			rix_put(l, l->e[i].reqid, l->first + i);
}

static void
rix_add(struct tsr_pglog *l, struct tsr_reqid r, uint64_t no)
{
	if (l->rix == NULL || r.client == 0)
		return;
	if ((l->rn + 1) * 2 > l->rcap) {
		rix_build(l, l->n + 1);
		if (l->rix == NULL)
			return;
	}
	rix_put(l, r, no);
}

static void
rix_del(struct tsr_pglog *l, struct tsr_reqid r, uint64_t no)
{
	size_t i, j, mask = l->rcap - 1;

	if (l->rix == NULL || r.client == 0)
		return;
	for (i = rix_slot(l, r); l->rix[i].client != 0; i = (i + 1) & mask)
		if (l->rix[i].client == r.client && l->rix[i].tid == r.tid &&
		    l->rix[i].no == no)
			break;
	if (l->rix[i].client == 0)
		return;
	/* close the gap: move up each later slot of the run whose home is
	 * not between the gap and it */
	for (j = (i + 1) & mask; l->rix[j].client != 0; j = (j + 1) & mask) {
		struct tsr_reqid rj = { l->rix[j].client, l->rix[j].tid };
		size_t home = rix_slot(l, rj);
		if (((j - home) & mask) >= ((j - i) & mask)) {
			l->rix[i] = l->rix[j];
			i = j;
		}
	}
	l->rix[i].client = 0;
	l->rn--;
}

void
tsr_pglog_free(struct tsr_pglog *l)
{
	for (size_t i = 0; i < l->n; i++)
		tsr_pglog_entry_free(&l->e[i]);
	free(l->e ? l->e - l->skip : NULL);
	rix_drop(l);
	tsr_pglog_init(l);
}

int
tsr_pglog_entry_copy(struct tsr_pglog_entry *dst, const struct tsr_pglog_entry *src)
{
	uint8_t *oid = tsr_pglog_dup(src->oid, src->oid_len);

	if (oid == NULL)
		return -ENOMEM;
	free(dst->oid);
	*dst = *src;
	dst->oid = oid;
	return 0;
}

int
tsr_pglog_append(struct tsr_pglog *l, const struct tsr_pglog_entry *e)
{
	if (tsr_ev_cmp(e->ev, l->head) <= 0 || tsr_ev_cmp(e->ev, l->tail) <= 0)
		return -EINVAL;
	if (l->n == l->cap && l->skip > 0 && l->skip >= l->n / 4) {
		/* at least a quarter as many trims as entries since the
		 * last move: each trim pays for at most four entries' moves,
		 * and a full log stays in the allocation it grew to (at
		 * log_max 3000: 4096 entries, not 8192) */
		memmove(l->e - l->skip, l->e, l->n * sizeof(l->e[0]));
		l->e -= l->skip;
		l->cap += l->skip;
		l->skip = 0;
	}
	if (l->n == l->cap) {
		size_t all = l->skip + l->cap, cap = all ? all * 2 : 64;
		struct tsr_pglog_entry *n = realloc(l->e ? l->e - l->skip : NULL,
						    cap * sizeof(*n));
		if (n == NULL)
			return -ENOMEM;
		l->e = n + l->skip;
		l->cap = cap - l->skip;
	}
	memset(&l->e[l->n], 0, sizeof(l->e[0]));
	if (tsr_pglog_entry_copy(&l->e[l->n], e) < 0)
		return -ENOMEM;
	rix_add(l, e->reqid, l->first + l->n);
	l->n++;
	l->head = e->ev;
	return 0;
}

size_t
tsr_pglog_after(const struct tsr_pglog *l, struct tsr_ev ev)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tsr_ev_cmp(l->e[mid].ev, ev) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

long
tsr_pglog_find(const struct tsr_pglog *l, struct tsr_ev ev)
{
	size_t i = tsr_pglog_after(l, ev);

	return i > 0 && tsr_ev_cmp(l->e[i - 1].ev, ev) == 0 ? (long)i - 1 : -1;
}

long
tsr_pglog_find_reqid(struct tsr_pglog *l, struct tsr_reqid r)
{
	long best = -1;

	if (r.client == 0)
		return -1;
	if (l->rix == NULL && l->n > 64)
		rix_build(l, l->n);
	if (l->rix == NULL) {
		for (size_t i = l->n; i-- > 0;)
			if (l->e[i].reqid.client == r.client && l->e[i].reqid.tid == r.tid)
				return (long)i;
		return -1;
	}
	/* the newest of its entries (a write redone after a rewind has one
	 * per run) */
	for (size_t i = rix_slot(l, r); l->rix[i].client != 0; i = (i + 1) & (l->rcap - 1))
		if (l->rix[i].client == r.client && l->rix[i].tid == r.tid &&
		    (long)(l->rix[i].no - l->first) > best)
			best = (long)(l->rix[i].no - l->first);
	return best;
}

void
tsr_pglog_trim(struct tsr_pglog *l, struct tsr_ev to)
{
	size_t k = tsr_pglog_after(l, to);

	if (tsr_ev_cmp(to, l->tail) <= 0)
		return;
	for (size_t i = 0; i < k; i++) {
		rix_del(l, l->e[i].reqid, l->first + i);
		tsr_pglog_entry_free(&l->e[i]);
	}
	l->first += k;
	if (k) {
		l->e += k;
		l->cap -= k;
		l->skip += k;
	}
	l->n -= k;
	l->tail = to;
	if (tsr_ev_cmp(l->head, to) < 0)
		l->head = to;
}

void
tsr_pglog_rewind(struct tsr_pglog *l, struct tsr_ev to)
{
	size_t k = tsr_pglog_after(l, to);

	for (size_t i = k; i < l->n; i++) {
		rix_del(l, l->e[i].reqid, l->first + i);
		tsr_pglog_entry_free(&l->e[i]);
	}
	l->n = k;
	l->head = to;
}

int
tsr_pglog_covers(const struct tsr_pglog *l, struct tsr_ev ev)
{
	return tsr_ev_cmp(l->tail, ev) <= 0 && tsr_ev_cmp(ev, l->head) <= 0;
}

/* ---- missing ------------------------------------------------------------------ */

void
tsr_missing_init(struct tsr_missing *ms)
{
	memset(ms, 0, sizeof(*ms));
}

void
tsr_missing_free(struct tsr_missing *ms)
{
	for (size_t i = 0; i < ms->n; i++)
		free(ms->m[i].oid);
	free(ms->m);
	tsr_missing_init(ms);
}

/* Index of the first item whose name is >= oid. */
static size_t
missing_lower(const struct tsr_missing *ms, const void *oid, size_t oid_len)
{
	size_t lo = 0, hi = ms->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (tsr_oid_cmp(ms->m[mid].oid, ms->m[mid].oid_len, oid, oid_len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct tsr_missing_item *
tsr_missing_find(const struct tsr_missing *ms, const void *oid, size_t oid_len)
{
	size_t i = missing_lower(ms, oid, oid_len);

	if (i < ms->n && tsr_oid_cmp(ms->m[i].oid, ms->m[i].oid_len, oid, oid_len) == 0)
		return &ms->m[i];
	return NULL;
}

int
tsr_missing_add(struct tsr_missing *ms, const void *oid, size_t oid_len,
		struct tsr_ev need, struct tsr_ev have)
{
	size_t i = missing_lower(ms, oid, oid_len);
	struct tsr_missing_item *it;

	if (i < ms->n && tsr_oid_cmp(ms->m[i].oid, ms->m[i].oid_len, oid, oid_len) == 0) {
		if (tsr_ev_cmp(need, ms->m[i].need) > 0)
			ms->m[i].need = need;
		return 0;
	}
	if (ms->n == ms->cap) {
		size_t cap = ms->cap ? ms->cap * 2 : 16;
		struct tsr_missing_item *n = realloc(ms->m, cap * sizeof(*n));
		if (n == NULL)
			return -ENOMEM;
		ms->m = n;
		ms->cap = cap;
	}
	it = &ms->m[i];
	memmove(it + 1, it, (ms->n - i) * sizeof(*it));
	it->oid = tsr_pglog_dup(oid, oid_len);
	if (it->oid == NULL) {
		memmove(it, it + 1, (ms->n - i) * sizeof(*it));
		return -ENOMEM;
	}
	it->oid_len = oid_len;
	it->need = need;
	it->have = have;
	ms->n++;
	return 0;
}

void
tsr_missing_rm(struct tsr_missing *ms, const void *oid, size_t oid_len)
{
	size_t i = missing_lower(ms, oid, oid_len);

	if (i < ms->n && tsr_oid_cmp(ms->m[i].oid, ms->m[i].oid_len, oid, oid_len) == 0) {
		free(ms->m[i].oid);
		memmove(&ms->m[i], &ms->m[i + 1], (ms->n - i - 1) * sizeof(ms->m[0]));
		ms->n--;
	}
}

int
tsr_missing_copy(struct tsr_missing *dst, const struct tsr_missing *src)
{
	tsr_missing_free(dst);
	for (size_t i = 0; i < src->n; i++)
		if (tsr_missing_add(dst, src->m[i].oid, src->m[i].oid_len,
				    src->m[i].need, src->m[i].have) < 0)
			return -ENOMEM;
	return 0;
}

/* ---- info and intervals ---------------------------------------------------- */

void
tsr_pg_info_free(struct tsr_pg_info *i)
{
	free(i->last_backfill);
	i->last_backfill = NULL;
	i->last_backfill_len = 0;
}

int
tsr_pg_info_copy(struct tsr_pg_info *dst, const struct tsr_pg_info *src)
{
	uint8_t *lb = NULL;

	if (src->last_backfill_len &&
	    (lb = tsr_pglog_dup(src->last_backfill, src->last_backfill_len)) == NULL)
		return -ENOMEM;
	tsr_pg_info_free(dst);
	*dst = *src;
	dst->last_backfill = lb;
	return 0;
}

int
tsr_pg_info_has_backfilled(const struct tsr_pg_info *i, const void *oid, size_t oid_len)
{
	if (!i->backfilling)
		return 1;
	return i->last_backfill_len &&
	       tsr_oid_cmp(oid, oid_len, i->last_backfill, i->last_backfill_len) <= 0;
}

void
tsr_pg_intervals_free(struct tsr_pg_intervals *p)
{
	free(p->iv);
	memset(p, 0, sizeof(*p));
}

/* Intervals are made from the same maps everywhere, so two never overlap
 * but for where one is a partial view: a copy that started late (an OSD
 * new to the PG) dates its first interval from when it started, inside
 * an interval that others saw begin earlier.  The view that begins
 * earlier holds for the epochs both cover; the other keeps what lies
 * beyond.  So intervals stay in order without overlap, as their decoder
 * requires of what peers send. */
int
tsr_pg_intervals_add(struct tsr_pg_intervals *p, const struct tsr_pg_interval *in)
{
	struct tsr_pg_interval one = *in;
	const struct tsr_pg_interval *iv = &one;
	size_t i;

	for (size_t k = 0; k < p->n; k++) {
		const struct tsr_pg_interval *e = &p->iv[k];
		if (e->first < one.first && e->last >= one.first) {
			if (e->last >= one.last)
				return 0; /* all of it seen by a fuller view */
			one.first = e->last + 1;
		}
	}
	for (size_t k = 0; k < p->n;) {
		struct tsr_pg_interval *e = &p->iv[k];
		if (e->first > one.first && e->first <= one.last) {
			if (e->last <= one.last) {
				memmove(e, e + 1, (p->n - k - 1) * sizeof(*e));
				p->n--;
				continue;
			}
			e->first = one.last + 1;
		}
		k++;
	}
	i = p->n;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		struct tsr_pg_interval *n = realloc(p->iv, cap * sizeof(*n));
		if (n == NULL)
			return -ENOMEM;
		p->iv = n;
		p->cap = cap;
	}
	while (i > 0 && p->iv[i - 1].first > iv->first)
		i--;
	if (i > 0 && p->iv[i - 1].first == iv->first) {
		/* the same interval seen again: keep the longer view of it */
		if (iv->last > p->iv[i - 1].last)
			p->iv[i - 1] = *iv;
		return 0;
	}
	memmove(&p->iv[i + 1], &p->iv[i], (p->n - i) * sizeof(p->iv[0]));
	p->iv[i] = *iv;
	p->n++;
	return 0;
}

int
tsr_pg_intervals_copy(struct tsr_pg_intervals *dst, const struct tsr_pg_intervals *src)
{
	tsr_pg_intervals_free(dst);
	for (size_t i = 0; i < src->n; i++)
		if (tsr_pg_intervals_add(dst, &src->iv[i]) < 0)
			return -ENOMEM;
	return 0;
}

int
tsr_pg_intervals_merge(struct tsr_pg_intervals *p, const struct tsr_pg_intervals *src)
{
	for (size_t i = 0; i < src->n; i++)
		if (tsr_pg_intervals_add(p, &src->iv[i]) < 0)
			return -ENOMEM;
	return 0;
}

void
tsr_pg_intervals_trim(struct tsr_pg_intervals *p, uint64_t epoch)
{
	size_t k = 0;

	while (k < p->n && p->iv[k].last < epoch)
		k++;
	if (k == 0)
		return;
	memmove(p->iv, p->iv + k, (p->n - k) * sizeof(p->iv[0]));
	p->n -= k;
}

/* ---- encodings ------------------------------------------------------------------ */

void
tsr_ev_encode(struct tsr_enc *e, struct tsr_ev v)
{
	tsr_enc_u64(e, v.epoch);
	tsr_enc_u64(e, v.ver);
}

struct tsr_ev
tsr_ev_decode(struct tsr_dec *d)
{
	struct tsr_ev v;

	v.epoch = tsr_dec_u64(d);
	v.ver = tsr_dec_u64(d);
	return v;
}

void
tsr_pglog_entry_encode(struct tsr_enc *e, const struct tsr_pglog_entry *x)
{
	size_t m = tsr_enc_begin_struct(e, 1, 1);

	tsr_ev_encode(e, x->ev);
	tsr_ev_encode(e, x->prior);
	tsr_enc_u8(e, x->op);
	tsr_enc_i32(e, x->result);
	tsr_enc_u64(e, x->reqid.client);
	tsr_enc_u64(e, x->reqid.tid);
	tsr_enc_bytes(e, x->oid, x->oid_len);
	tsr_enc_end_struct(e, m);
}

int
tsr_pglog_entry_decode(struct tsr_dec *d, struct tsr_pglog_entry *x, char *err,
		       size_t errlen)
{
	struct tsr_dec s;
	uint8_t v;
	const void *oid;
	size_t oid_len;

	memset(x, 0, sizeof(*x));
	if (tsr_dec_begin_struct(d, 1, &v, &s) < 0)
		return done(d, err, errlen, "PG log entry");
	x->ev = tsr_ev_decode(&s);
	x->prior = tsr_ev_decode(&s);
	x->op = tsr_dec_u8(&s);
	x->result = tsr_dec_i32(&s);
	x->reqid.client = tsr_dec_u64(&s);
	x->reqid.tid = tsr_dec_u64(&s);
	tsr_dec_bytes(&s, &oid, &oid_len, TSR_PGLOG_MAX_OID);
	if (tsr_dec_end_struct(d, &s) < 0)
		return done(d, err, errlen, "PG log entry");
	if (tsr_pglog_op_name(x->op) == NULL)
		return fail(d, err, errlen, "PG log entry: unknown operation %u", x->op);
	if (tsr_ev_none(x->ev) || tsr_ev_cmp(x->prior, x->ev) >= 0)
		return fail(d, err, errlen, "PG log entry: version %llu'%llu does not follow "
			    "the object's prior %llu'%llu",
			    (unsigned long long)x->ev.epoch, (unsigned long long)x->ev.ver,
			    (unsigned long long)x->prior.epoch,
			    (unsigned long long)x->prior.ver);
	if (oid_len == 0)
		return fail(d, err, errlen, "PG log entry: an empty object name");
	if ((x->oid = tsr_pglog_dup(oid, oid_len)) == NULL) {
		tsr_dec_fail(d, -ENOMEM);
		return -ENOMEM;
	}
	x->oid_len = oid_len;
	return 0;
}

void
tsr_pglog_entries_encode(struct tsr_enc *e, const struct tsr_pglog *l, size_t from,
			 size_t to)
{
	size_t m = tsr_enc_begin_struct(e, 1, 1);

	if (to > l->n)
		to = l->n;
	if (from > to)
		from = to;
	tsr_enc_u32(e, (uint32_t)(to - from));
	for (size_t i = from; i < to; i++)
		tsr_pglog_entry_encode(e, &l->e[i]);
	tsr_enc_end_struct(e, m);
}

int
tsr_pglog_entries_decode(struct tsr_dec *d, struct tsr_pglog *out, char *err,
			 size_t errlen)
{
	struct tsr_dec s;
	uint8_t v;
	uint32_t n;

	tsr_pglog_init(out);
	if (tsr_dec_begin_struct(d, 1, &v, &s) < 0)
		return done(d, err, errlen, "PG log entries");
	n = tsr_dec_u32(&s);
	if (n > TSR_PGLOG_MAX_ENTRIES || n > tsr_dec_remaining(&s) / 16)
		return fail(d, err, errlen, "PG log entries: %u entries in %zu bytes", n,
			    tsr_dec_remaining(&s));
	for (uint32_t i = 0; i < n; i++) {
		struct tsr_pglog_entry x;
		int rc = tsr_pglog_entry_decode(&s, &x, err, errlen);

		if (rc < 0) {
			tsr_pglog_free(out);
			tsr_dec_fail(d, rc);
			return rc;
		}
		if (i == 0)
			out->tail = out->head = (struct tsr_ev){ 0, 0 };
		rc = tsr_pglog_append(out, &x);
		tsr_pglog_entry_free(&x);
		if (rc < 0) {
			tsr_pglog_free(out);
			return fail(d, err, errlen, "PG log entries: entry %u (%llu'%llu) "
				    "does not follow the one before", i,
				    (unsigned long long)x.ev.epoch,
				    (unsigned long long)x.ev.ver);
		}
	}
	if (tsr_dec_end_struct(d, &s) < 0) {
		tsr_pglog_free(out);
		return done(d, err, errlen, "PG log entries");
	}
	return 0;
}

void
tsr_pg_info_encode(struct tsr_enc *e, const struct tsr_pg_info *i)
{
	size_t m = tsr_enc_begin_struct(e, 2, 1);

	tsr_enc_i64(e, i->pgid.pool);
	tsr_enc_u32(e, i->pgid.pg);
	tsr_ev_encode(e, i->last_update);
	tsr_ev_encode(e, i->last_complete);
	tsr_ev_encode(e, i->log_tail);
	tsr_enc_u64(e, i->les);
	tsr_enc_u64(e, i->created);
	tsr_enc_u64(e, i->history_les);
	tsr_enc_u64(e, i->lec);
	tsr_enc_u64(e, i->same_interval_since);
	tsr_enc_u8(e, i->backfilling);
	tsr_enc_bytes(e, i->last_backfill, i->last_backfill_len);
	tsr_enc_u64(e, i->backfill_since);
	tsr_ev_encode(e, i->committed);          /* v2 */
	tsr_enc_end_struct(e, m);
}

int
tsr_pg_info_decode(struct tsr_dec *d, struct tsr_pg_info *i, char *err, size_t errlen)
{
	struct tsr_dec s;
	uint8_t v;
	const void *lb;
	size_t lb_len;

	memset(i, 0, sizeof(*i));
	if (tsr_dec_begin_struct(d, 1, &v, &s) < 0)
		return done(d, err, errlen, "PG info");
	i->pgid.pool = tsr_dec_i64(&s);
	i->pgid.pg = tsr_dec_u32(&s);
	i->last_update = tsr_ev_decode(&s);
	i->last_complete = tsr_ev_decode(&s);
	i->log_tail = tsr_ev_decode(&s);
	i->les = tsr_dec_u64(&s);
	i->created = tsr_dec_u64(&s);
	i->history_les = tsr_dec_u64(&s);
	i->lec = tsr_dec_u64(&s);
	i->same_interval_since = tsr_dec_u64(&s);
	i->backfilling = tsr_dec_u8(&s);
	tsr_dec_bytes(&s, &lb, &lb_len, TSR_PGLOG_MAX_OID);
	i->backfill_since = tsr_dec_u64(&s);
	if (v >= 2)
		i->committed = tsr_ev_decode(&s);
	if (tsr_dec_end_struct(d, &s) < 0)
		return done(d, err, errlen, "PG info");
	if (i->pgid.pool < 0)
		return fail(d, err, errlen, "PG info: pool %lld", (long long)i->pgid.pool);
	if (tsr_ev_cmp(i->log_tail, i->last_update) > 0 ||
	    tsr_ev_cmp(i->last_complete, i->last_update) > 0)
		return fail(d, err, errlen, "PG info: log tail %llu'%llu or last complete "
			    "%llu'%llu above last update %llu'%llu",
			    (unsigned long long)i->log_tail.epoch,
			    (unsigned long long)i->log_tail.ver,
			    (unsigned long long)i->last_complete.epoch,
			    (unsigned long long)i->last_complete.ver,
			    (unsigned long long)i->last_update.epoch,
			    (unsigned long long)i->last_update.ver);
	if (tsr_ev_cmp(i->committed, i->last_update) > 0)
		return fail(d, err, errlen, "PG info: committed %llu'%llu above last update "
			    "%llu'%llu", (unsigned long long)i->committed.epoch,
			    (unsigned long long)i->committed.ver,
			    (unsigned long long)i->last_update.epoch,
			    (unsigned long long)i->last_update.ver);
	if (i->backfilling > 1)
		return fail(d, err, errlen, "PG info: backfilling %u", i->backfilling);
	if (lb_len && (i->last_backfill = tsr_pglog_dup(lb, lb_len)) == NULL) {
		tsr_dec_fail(d, -ENOMEM);
		return -ENOMEM;
	}
	i->last_backfill_len = lb_len;
	return 0;
}

void
tsr_pg_intervals_encode(struct tsr_enc *e, const struct tsr_pg_intervals *p)
{
	size_t m = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u32(e, (uint32_t)p->n);
	for (size_t i = 0; i < p->n; i++) {
		const struct tsr_pg_interval *iv = &p->iv[i];
		tsr_enc_u64(e, iv->first);
		tsr_enc_u64(e, iv->last);
		tsr_enc_i32(e, iv->primary);
		tsr_enc_u8(e, iv->maybe_rw);
		tsr_enc_u32(e, iv->n);
		for (uint32_t k = 0; k < iv->n; k++)
			tsr_enc_i32(e, iv->acting[k]);
	}
	tsr_enc_end_struct(e, m);
}

int
tsr_pg_intervals_decode(struct tsr_dec *d, struct tsr_pg_intervals *p, char *err,
			size_t errlen)
{
	struct tsr_dec s;
	uint8_t v;
	uint32_t n;

	memset(p, 0, sizeof(*p));
	if (tsr_dec_begin_struct(d, 1, &v, &s) < 0)
		return done(d, err, errlen, "PG intervals");
	n = tsr_dec_u32(&s);
	if (n > TSR_PGLOG_MAX_INTERVALS || n > tsr_dec_remaining(&s) / 25)
		return fail(d, err, errlen, "PG intervals: %u in %zu bytes", n,
			    tsr_dec_remaining(&s));
	for (uint32_t i = 0; i < n && tsr_dec_error(&s) == 0; i++) {
		struct tsr_pg_interval iv;

		memset(&iv, 0, sizeof(iv));
		iv.first = tsr_dec_u64(&s);
		iv.last = tsr_dec_u64(&s);
		iv.primary = tsr_dec_i32(&s);
		iv.maybe_rw = tsr_dec_u8(&s);
		iv.n = tsr_dec_u32(&s);
		if (tsr_dec_error(&s) == 0 &&
		    (iv.n > TSR_OSDMAP_MAX_SIZE || iv.first > iv.last || iv.maybe_rw > 1 ||
		     (i > 0 && iv.first <= p->iv[p->n - 1].last))) {
			tsr_pg_intervals_free(p);
			return fail(d, err, errlen, "PG intervals: interval %u (epochs %llu-%llu, "
				    "%u OSDs) out of order or range", i,
				    (unsigned long long)iv.first,
				    (unsigned long long)iv.last, iv.n);
		}
		for (uint32_t k = 0; k < iv.n; k++)
			iv.acting[k] = tsr_dec_i32(&s);
		if (tsr_dec_error(&s) == 0 && tsr_pg_intervals_add(p, &iv) < 0) {
			tsr_pg_intervals_free(p);
			tsr_dec_fail(d, -ENOMEM);
			return -ENOMEM;
		}
	}
	if (tsr_dec_end_struct(d, &s) < 0) {
		tsr_pg_intervals_free(p);
		return done(d, err, errlen, "PG intervals");
	}
	return 0;
}

void
tsr_missing_encode(struct tsr_enc *e, const struct tsr_missing *ms)
{
	size_t m = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u32(e, (uint32_t)ms->n);
	for (size_t i = 0; i < ms->n; i++) {
		tsr_enc_bytes(e, ms->m[i].oid, ms->m[i].oid_len);
		tsr_ev_encode(e, ms->m[i].need);
		tsr_ev_encode(e, ms->m[i].have);
	}
	tsr_enc_end_struct(e, m);
}

int
tsr_missing_decode(struct tsr_dec *d, struct tsr_missing *ms, char *err, size_t errlen)
{
	struct tsr_dec s;
	uint8_t v;
	uint32_t n;

	tsr_missing_init(ms);
	if (tsr_dec_begin_struct(d, 1, &v, &s) < 0)
		return done(d, err, errlen, "PG missing set");
	n = tsr_dec_u32(&s);
	if (n > TSR_PGLOG_MAX_MISSING || n > tsr_dec_remaining(&s) / 36)
		return fail(d, err, errlen, "PG missing set: %u objects in %zu bytes", n,
			    tsr_dec_remaining(&s));
	for (uint32_t i = 0; i < n && tsr_dec_error(&s) == 0; i++) {
		const void *oid;
		size_t oid_len;
		struct tsr_ev need, have;

		tsr_dec_bytes(&s, &oid, &oid_len, TSR_PGLOG_MAX_OID);
		need = tsr_ev_decode(&s);
		have = tsr_ev_decode(&s);
		if (tsr_dec_error(&s))
			break;
		if (oid_len == 0 || tsr_ev_none(need) || tsr_ev_cmp(have, need) >= 0 ||
		    (ms->n && tsr_oid_cmp(ms->m[ms->n - 1].oid, ms->m[ms->n - 1].oid_len,
					  oid, oid_len) >= 0)) {
			tsr_missing_free(ms);
			return fail(d, err, errlen, "PG missing set: item %u is empty, out of "
				    "order, or has what it needs", i);
		}
		if (tsr_missing_add(ms, oid, oid_len, need, have) < 0) {
			tsr_missing_free(ms);
			tsr_dec_fail(d, -ENOMEM);
			return -ENOMEM;
		}
	}
	if (tsr_dec_end_struct(d, &s) < 0) {
		tsr_missing_free(ms);
		return done(d, err, errlen, "PG missing set");
	}
	return 0;
}
