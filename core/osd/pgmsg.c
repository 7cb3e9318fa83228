/* pgmsg.c — the encodings of the messages between a PG's copies (pgsm.h).
 *
 *   pgmsg = envelope v2 (compat 1) { u8 type, i64 pool, u32 pg, i32 from,
 *                         u64 map_epoch, u64 interval, body }
 *   body by type:
 *     QUERY, PURGE    (nothing)
 *     NOTIFY          info, intervals, missing
 *     GETLOG          ev (the asker's head; the whole log comes back)
 *     LOG             info, missing, entries     (tail: info.log_tail)
 *     ACTIVATE        info, intervals, u8 whole, ev tail, entries
 *     ACTIVATE_ACK    info, missing
 *     REPOP           ev trim_to, entries        (exactly one),
 *                     ev committed (envelope v2)
 *     REPOP_REPLY     ev, i32 result
 *     PULL, PUSH_ACK  bytes oid, ev
 *     PUSH            bytes oid, ev, u8 op, u8 backfill
 *     SCAN            bytes after (empty: from the first), u32 max
 *     SCAN_REPLY      u8 done, u32 n, n x { bytes oid, ev }   (in order)
 *     PROGRESS(_ACK)  bytes last_backfill, u8 done
 *     REPAIR          bytes oid, ev
 *     SCRUB, SCRUB_MAP  (scrub.h)
 *     COMMIT          ev (the primary's committed; v2)
 *     BACKFILL_RESERVE, _GRANT, _RELEASE   (nothing: the interval says
 *                     which; the OSDs' reservations, not the machine's)
 * (info, intervals, missing, entries: pglog.h.)
 */
#include "osd/pgsm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
tsr_pgmsg_name(int type)
{
	switch (type) {
#define TSR_PGMSG_NAME(name, n, label) case (n): return label;
	TSR_PGMSG_TYPES(TSR_PGMSG_NAME)
#undef TSR_PGMSG_NAME
	}
	return NULL;
}

void
tsr_pgmsg_free(struct tsr_pgmsg *m)
{
	tsr_pg_info_free(&m->info);
	tsr_pg_intervals_free(&m->past);
	tsr_missing_free(&m->missing);
	tsr_pglog_free(&m->log);
	free(m->oid);
	m->oid = NULL;
	m->oid_len = 0;
	for (size_t i = 0; i < m->nobjs; i++)
		free(m->objs[i].oid);
	free(m->objs);
	m->objs = NULL;
	m->nobjs = 0;
	free(m->oid2);
	m->oid2 = NULL;
	m->oid2_len = 0;
	for (size_t i = 0; i < m->nsobjs; i++)
		free(m->sobjs[i].oid);
	free(m->sobjs);
	m->sobjs = NULL;
	m->nsobjs = 0;
}

int
tsr_pgmsg_encode(struct tsr_enc *e, const struct tsr_pgmsg *m)
{
	size_t mark = tsr_enc_begin_struct(e, 2, 1);

	tsr_enc_u8(e, m->type);
	tsr_enc_i64(e, m->pgid.pool);
	tsr_enc_u32(e, m->pgid.pg);
	tsr_enc_i32(e, m->from);
	tsr_enc_u64(e, m->map_epoch);
	tsr_enc_u64(e, m->interval);
	switch (m->type) {
	case TSR_PGMSG_NOTIFY:
		tsr_pg_info_encode(e, &m->info);
		tsr_pg_intervals_encode(e, &m->past);
		tsr_missing_encode(e, &m->missing);
		break;
	case TSR_PGMSG_GETLOG:
		tsr_ev_encode(e, m->ev);
		break;
	case TSR_PGMSG_LOG:
		tsr_pg_info_encode(e, &m->info);
		tsr_missing_encode(e, &m->missing);
		tsr_pglog_entries_encode(e, &m->log, 0, m->log.n);
		break;
	case TSR_PGMSG_ACTIVATE:
		tsr_pg_info_encode(e, &m->info);
		tsr_pg_intervals_encode(e, &m->past);
		tsr_enc_u8(e, m->whole);
		tsr_ev_encode(e, m->log.tail);
		tsr_pglog_entries_encode(e, &m->log, 0, m->log.n);
		break;
	case TSR_PGMSG_ACTIVATE_ACK:
		tsr_pg_info_encode(e, &m->info);
		tsr_missing_encode(e, &m->missing);
		break;
	case TSR_PGMSG_REPOP:
		tsr_ev_encode(e, m->trim_to);
		tsr_pglog_entries_encode(e, &m->log, 0, m->log.n);
		tsr_ev_encode(e, m->committed);
		break;
	case TSR_PGMSG_COMMIT:
		tsr_ev_encode(e, m->ev);
		break;
	case TSR_PGMSG_REPOP_REPLY:
		tsr_ev_encode(e, m->ev);
		tsr_enc_i32(e, m->result);
		break;
	case TSR_PGMSG_PULL:
	case TSR_PGMSG_PUSH_ACK:
	case TSR_PGMSG_PUSH:
		tsr_enc_bytes(e, m->oid, m->oid_len);
		tsr_ev_encode(e, m->ev);
		if (m->type == TSR_PGMSG_PUSH) {
			tsr_enc_u8(e, m->op);
			tsr_enc_u8(e, m->backfill);
		}
		break;
	case TSR_PGMSG_SCAN:
		tsr_enc_bytes(e, m->oid, m->oid_len);
		tsr_enc_u32(e, m->max);
		break;
	case TSR_PGMSG_SCAN_REPLY:
		tsr_enc_u8(e, m->done);
		tsr_enc_u32(e, (uint32_t)m->nobjs);
		for (size_t i = 0; i < m->nobjs; i++) {
			tsr_enc_bytes(e, m->objs[i].oid, m->objs[i].oid_len);
			tsr_ev_encode(e, m->objs[i].ev);
		}
		break;
	case TSR_PGMSG_PROGRESS:
	case TSR_PGMSG_PROGRESS_ACK:
		tsr_enc_bytes(e, m->oid, m->oid_len);
		tsr_enc_u8(e, m->done);
		break;
	case TSR_PGMSG_REPAIR:
		tsr_enc_bytes(e, m->oid, m->oid_len);
		tsr_ev_encode(e, m->ev);
		break;
	case TSR_PGMSG_SCRUB:
		tsr_enc_u64(e, m->token);
		tsr_enc_bytes(e, m->oid, m->oid_len);
		tsr_enc_bytes(e, m->oid2, m->oid2_len);
		tsr_enc_u32(e, m->max);
		tsr_enc_u8(e, m->deep);
		break;
	case TSR_PGMSG_SCRUB_MAP:
		tsr_enc_u64(e, m->token);
		tsr_enc_u8(e, m->done);
		tsr_enc_u32(e, (uint32_t)m->nsobjs);
		for (size_t i = 0; i < m->nsobjs; i++) {
			const struct tsr_scrub_obj *o = &m->sobjs[i];
			tsr_enc_bytes(e, o->oid, o->oid_len);
			tsr_ev_encode(e, o->ev);
			tsr_enc_u64(e, o->size);
			tsr_enc_u32(e, o->attr_crc);
			tsr_enc_u32(e, o->omap_crc);
			tsr_enc_u32(e, o->data_crc);
			tsr_enc_u8(e, o->flags);
		}
		break;
	}
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

static int
dup_oid(struct tsr_pgmsg *m, const void *oid, size_t oid_len)
{
	if ((m->oid = tsr_pglog_dup(oid, oid_len)) == NULL) {
		tsr_pgmsg_free(m);
		return -ENOMEM;
	}
	m->oid_len = oid_len;
	return 0;
}

static int
bad(struct tsr_pgmsg *m, char *err, size_t errlen, const char *what)
{
	if (err && errlen && err[0] == '\0')
		snprintf(err, errlen, "%s: %s", tsr_pgmsg_name(m->type) ? tsr_pgmsg_name(m->type)
			 : "PG message", what);
	tsr_pgmsg_free(m);
	return -EBADMSG;
}

/* The entries of a log message, placed after tail; they must end at head
 * when head is given. */
static int
dec_entries(struct tsr_dec *d, struct tsr_pgmsg *m, struct tsr_ev tail, int check_head,
	    struct tsr_ev head, char *err, size_t errlen)
{
	struct tsr_pglog l;
	int rc = tsr_pglog_entries_decode(d, &l, err, errlen);

	if (rc < 0)
		return rc;
	if (l.n && tsr_ev_cmp(l.e[0].ev, tail) <= 0) {
		tsr_pglog_free(&l);
		return -EPROTO;
	}
	l.tail = tail;
	if (l.n == 0)
		l.head = tail;
	if (check_head && tsr_ev_cmp(l.head, head) != 0) {
		tsr_pglog_free(&l);
		return -EPROTO;
	}
	m->log = l;
	return 0;
}

int
tsr_pgmsg_decode(const void *buf, size_t len, struct tsr_pgmsg *m, char *err, size_t errlen)
{
	struct tsr_dec d, s;
	uint8_t v;
	const void *oid;
	size_t oid_len;
	int rc = 0;

	memset(m, 0, sizeof(*m));
	if (err && errlen)
		err[0] = '\0';
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &v, &s) < 0)
		return bad(m, err, errlen, "truncated or malformed envelope");
	m->type = tsr_dec_u8(&s);
	m->pgid.pool = tsr_dec_i64(&s);
	m->pgid.pg = tsr_dec_u32(&s);
	m->from = tsr_dec_i32(&s);
	m->map_epoch = tsr_dec_u64(&s);
	m->interval = tsr_dec_u64(&s);
	if (tsr_dec_error(&s))
		return bad(m, err, errlen, "truncated header");
	if (tsr_pgmsg_name(m->type) == NULL) {
		snprintf(err, errlen, "PG message of unknown type %u", m->type);
		return bad(m, err, errlen, "");
	}
	if (m->pgid.pool < 0 || m->from < 0 || m->from >= TSR_OSDMAP_MAX_OSDS)
		return bad(m, err, errlen, "pool or sender out of range");
	switch (m->type) {
	case TSR_PGMSG_NOTIFY:
		if ((rc = tsr_pg_info_decode(&s, &m->info, err, errlen)) < 0 ||
		    (rc = tsr_pg_intervals_decode(&s, &m->past, err, errlen)) < 0 ||
		    (rc = tsr_missing_decode(&s, &m->missing, err, errlen)) < 0)
			return bad(m, err, errlen, "bad body");
		break;
	case TSR_PGMSG_GETLOG:
		m->ev = tsr_ev_decode(&s);
		break;
	case TSR_PGMSG_LOG:
		if ((rc = tsr_pg_info_decode(&s, &m->info, err, errlen)) < 0 ||
		    (rc = tsr_missing_decode(&s, &m->missing, err, errlen)) < 0 ||
		    (rc = dec_entries(&s, m, m->info.log_tail, 1, m->info.last_update, err,
				      errlen)) < 0)
			return bad(m, err, errlen, "the entries do not run from the log's "
				   "tail to its last update");
		break;
	case TSR_PGMSG_ACTIVATE: {
		struct tsr_ev tail;
		if ((rc = tsr_pg_info_decode(&s, &m->info, err, errlen)) < 0 ||
		    (rc = tsr_pg_intervals_decode(&s, &m->past, err, errlen)) < 0)
			return bad(m, err, errlen, "bad body");
		m->whole = tsr_dec_u8(&s);
		tail = tsr_ev_decode(&s);
		if (tsr_dec_error(&s) || m->whole > 1 ||
		    dec_entries(&s, m, tail, 1, m->info.last_update, err, errlen) < 0)
			return bad(m, err, errlen, "the entries do not end at the last update");
		break;
	}
	case TSR_PGMSG_ACTIVATE_ACK:
		if ((rc = tsr_pg_info_decode(&s, &m->info, err, errlen)) < 0 ||
		    (rc = tsr_missing_decode(&s, &m->missing, err, errlen)) < 0)
			return bad(m, err, errlen, "bad info or missing set");
		break;
	case TSR_PGMSG_REPOP:
		m->trim_to = tsr_ev_decode(&s);
		if (dec_entries(&s, m, (struct tsr_ev){ 0, 0 }, 0, (struct tsr_ev){ 0, 0 }, err,
				errlen) < 0 || m->log.n != 1)
			return bad(m, err, errlen, "not exactly one entry");
		if (v >= 2)
			m->committed = tsr_ev_decode(&s);
		if (tsr_ev_cmp(m->committed, m->log.e[0].ev) >= 0)
			return bad(m, err, errlen, "committed at or above its own entry");
		break;
	case TSR_PGMSG_COMMIT:
		m->ev = tsr_ev_decode(&s);
		break;
	case TSR_PGMSG_REPOP_REPLY:
		m->ev = tsr_ev_decode(&s);
		m->result = tsr_dec_i32(&s);
		break;
	case TSR_PGMSG_PULL:
	case TSR_PGMSG_PUSH_ACK:
	case TSR_PGMSG_PUSH:
		tsr_dec_bytes(&s, &oid, &oid_len, TSR_PGLOG_MAX_OID);
		m->ev = tsr_ev_decode(&s);
		if (m->type == TSR_PGMSG_PUSH) {
			m->op = tsr_dec_u8(&s);
			m->backfill = tsr_dec_u8(&s);
		}
		if (tsr_dec_error(&s) || oid_len == 0)
			return bad(m, err, errlen, "bad object name");
		if (m->type == TSR_PGMSG_PUSH && ((m->op != TSR_PGLOG_MODIFY &&
						   m->op != TSR_PGLOG_DELETE) || m->backfill > 1))
			return bad(m, err, errlen, "unknown push kind");
		if ((rc = dup_oid(m, oid, oid_len)) < 0)
			return rc;
		break;
	case TSR_PGMSG_SCAN:
	case TSR_PGMSG_PROGRESS:
	case TSR_PGMSG_PROGRESS_ACK:
		/* a name, or none: before the first object */
		tsr_dec_bytes(&s, &oid, &oid_len, TSR_PGLOG_MAX_OID);
		if (m->type == TSR_PGMSG_SCAN)
			m->max = tsr_dec_u32(&s);
		else
			m->done = tsr_dec_u8(&s);
		if (tsr_dec_error(&s) || m->done > 1 ||
		    (m->type == TSR_PGMSG_SCAN && (m->max == 0 || m->max > TSR_PGMSG_MAX_SCAN)))
			return bad(m, err, errlen, "bad name, count or flag");
		if (oid_len && (rc = dup_oid(m, oid, oid_len)) < 0)
			return rc;
		break;
	case TSR_PGMSG_REPAIR:
		tsr_dec_bytes(&s, &oid, &oid_len, TSR_PGLOG_MAX_OID);
		m->ev = tsr_ev_decode(&s);
		if (tsr_dec_error(&s) || oid_len == 0 || tsr_ev_none(m->ev))
			return bad(m, err, errlen, "bad object name or version");
		if ((rc = dup_oid(m, oid, oid_len)) < 0)
			return rc;
		break;
	case TSR_PGMSG_SCRUB: {
		const void *upto;
		size_t upto_len;
		m->token = tsr_dec_u64(&s);
		tsr_dec_bytes(&s, &oid, &oid_len, TSR_PGLOG_MAX_OID);
		tsr_dec_bytes(&s, &upto, &upto_len, TSR_PGLOG_MAX_OID);
		m->max = tsr_dec_u32(&s);
		m->deep = tsr_dec_u8(&s);
		if (tsr_dec_error(&s) || m->deep > 1 || m->max == 0 ||
		    m->max > TSR_PGMSG_MAX_SCRUB ||
		    (oid_len && upto_len && tsr_oid_cmp(oid, oid_len, upto, upto_len) >= 0))
			return bad(m, err, errlen, "bad range, count or flag");
		if (oid_len && (rc = dup_oid(m, oid, oid_len)) < 0)
			return rc;
		if (upto_len) {
			if ((m->oid2 = tsr_pglog_dup(upto, upto_len)) == NULL) {
				tsr_pgmsg_free(m);
				return -ENOMEM;
			}
			m->oid2_len = upto_len;
		}
		break;
	}
	case TSR_PGMSG_SCRUB_MAP: {
		uint32_t n;
		m->token = tsr_dec_u64(&s);
		m->done = tsr_dec_u8(&s);
		n = tsr_dec_u32(&s);
		/* an entry is at least 4 + 16 + 8 + 12 + 1 bytes */
		if (tsr_dec_error(&s) || m->done > 1 || n > TSR_PGMSG_MAX_SCRUB ||
		    n > tsr_dec_remaining(&s) / 41)
			return bad(m, err, errlen, "bad count or flag");
		if (n && (m->sobjs = calloc(n, sizeof(*m->sobjs))) == NULL) {
			tsr_pgmsg_free(m);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < n; i++) {
			struct tsr_scrub_obj *o = &m->sobjs[i];
			tsr_dec_bytes(&s, &oid, &oid_len, TSR_PGLOG_MAX_OID);
			o->ev = tsr_ev_decode(&s);
			o->size = tsr_dec_u64(&s);
			o->attr_crc = tsr_dec_u32(&s);
			o->omap_crc = tsr_dec_u32(&s);
			o->data_crc = tsr_dec_u32(&s);
			o->flags = tsr_dec_u8(&s);
			if (tsr_dec_error(&s) || oid_len == 0 || (o->flags & ~TSR_SCRUB_F_ALL) ||
			    (i > 0 && tsr_oid_cmp(m->sobjs[i - 1].oid, m->sobjs[i - 1].oid_len,
						  oid, oid_len) >= 0))
				return bad(m, err, errlen, "objects empty, flagged unknown or "
					   "out of order");
			if ((o->oid = tsr_pglog_dup(oid, oid_len)) == NULL) {
				tsr_pgmsg_free(m);
				return -ENOMEM;
			}
			o->oid_len = oid_len;
			m->nsobjs++;
		}
		break;
	}
	case TSR_PGMSG_SCAN_REPLY: {
		uint32_t n;
		m->done = tsr_dec_u8(&s);
		n = tsr_dec_u32(&s);
		if (tsr_dec_error(&s) || m->done > 1 || n > TSR_PGMSG_MAX_SCAN ||
		    n > tsr_dec_remaining(&s) / 20)
			return bad(m, err, errlen, "bad count or flag");
		if (n && (m->objs = calloc(n, sizeof(*m->objs))) == NULL) {
			tsr_pgmsg_free(m);
			return -ENOMEM;
		}
		for (uint32_t i = 0; i < n; i++) {
			struct tsr_pgsm_objver *o = &m->objs[i];
			tsr_dec_bytes(&s, &oid, &oid_len, TSR_PGLOG_MAX_OID);
			o->ev = tsr_ev_decode(&s);
			if (tsr_dec_error(&s) || oid_len == 0 || tsr_ev_none(o->ev) ||
			    (i > 0 && tsr_oid_cmp(m->objs[i - 1].oid, m->objs[i - 1].oid_len,
						  oid, oid_len) >= 0))
				return bad(m, err, errlen, "objects empty, unversioned or out of order");
			if ((o->oid = tsr_pglog_dup(oid, oid_len)) == NULL) {
				tsr_pgmsg_free(m);
				return -ENOMEM;
			}
			o->oid_len = oid_len;
			m->nobjs++;
		}
		break;
	}
	}
	if (tsr_dec_end_struct(&d, &s) < 0)
		return bad(m, err, errlen, "truncated body");
	/* a version is handed out under the map its primary holds, and a copy
	 * takes entries only once its map has caught up: none is newer than
	 * the sender's map */
	if (m->log.n && m->log.e[m->log.n - 1].ev.epoch > m->map_epoch)
		return bad(m, err, errlen, "a log entry newer than the sender's map");
	if (tsr_dec_remaining(&d))
		return bad(m, err, errlen, "bytes after the message");
	return 0;
}

void
tsr_pgmsg_empty_notify(const struct tsr_pgmsg *query, int32_t whoami, uint64_t map_epoch,
		       struct tsr_pgmsg *out)
{
	memset(out, 0, sizeof(*out));
	out->type = TSR_PGMSG_NOTIFY;
	out->pgid = query->pgid;
	out->from = whoami;
	out->map_epoch = map_epoch;
	out->interval = query->interval;
	out->info.pgid = query->pgid;
}

int
tsr_pgmsg_clone(const struct tsr_pgmsg *m, struct tsr_pgmsg *out)
{
	struct tsr_enc e;
	char err[64];
	int rc;

	tsr_enc_init(&e);
	rc = tsr_pgmsg_encode(&e, m) < 0 ||
	     tsr_pgmsg_decode(e.buf, e.len, out, err, sizeof(err)) < 0 ? -ENOMEM : 0;
	tsr_enc_release(&e);
	if (rc < 0)
		memset(out, 0, sizeof(*out));
	return rc;
}

int
tsr_pgmsg_check(const void *buf, size_t len, char *err, size_t errlen)
{
	struct tsr_pgmsg m;
	struct tsr_enc a, b;
	int rc;

	if ((rc = tsr_pgmsg_decode(buf, len, &m, err, errlen)) < 0)
		return rc == -ENOMEM ? rc : -EBADMSG;
	tsr_enc_init(&a);
	tsr_enc_init(&b);
	rc = tsr_pgmsg_encode(&a, &m);
	tsr_pgmsg_free(&m);
	if (rc == 0 && (rc = tsr_pgmsg_decode(a.buf, a.len, &m, err, errlen)) == 0) {
		rc = tsr_pgmsg_encode(&b, &m);
		tsr_pgmsg_free(&m);
		if (rc == 0 && (a.len != b.len || memcmp(a.buf, b.buf, a.len) != 0)) {
			snprintf(err, errlen, "a decoded message does not encode the same twice");
			rc = -EPROTO;
		}
	} else if (rc == -EBADMSG) {
		rc = -EPROTO;  /* our own encoding refused: a bug */
	}
	tsr_enc_release(&a);
	tsr_enc_release(&b);
	return rc;
}
