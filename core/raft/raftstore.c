/* raftstore.c — a Raft node's hard state and log in the kv store. */
#include "raft/raftstore.h"

#include <tessera/encoding.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HS_KEY "raft/hs"
#define SNAP_KEY "raft/snap"
#define LOG_PREFIX "raft/log/"
#define LOG_PREFIX_LEN 9

static size_t
log_key(uint8_t *k, uint64_t index)
{
	memcpy(k, LOG_PREFIX, LOG_PREFIX_LEN);
	for (int i = 0; i < 8; i++)
		k[LOG_PREFIX_LEN + i] = (uint8_t)(index >> (56 - 8 * i));
	return LOG_PREFIX_LEN + 8;
}

struct loader {
	struct tsr_raftstore *s;
	struct tsr_raft_entry *log;
	size_t n, cap;
	char *err;
	size_t errlen;
};

static int
load_one(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct loader *l = arg;
	const uint8_t *k = key;
	uint64_t index = 0, term = 0;
	struct tsr_dec d, sub;
	const void *data = NULL;
	size_t len = 0;
	uint8_t v;

	if (klen != LOG_PREFIX_LEN + 8)
		goto bad_key;
	for (int i = 0; i < 8; i++)
		index = index << 8 | k[LOG_PREFIX_LEN + i];
	if (index <= l->s->snap_index)
		return 0; /* covered by the snapshot (never left by save) */
	if (index != l->s->snap_index + l->n + 1) {
		snprintf(l->err, l->errlen, "%s: raft log entry %llu missing (next "
			 "stored is %llu)", l->s->path,
			 (unsigned long long)(l->s->snap_index + l->n + 1),
			 (unsigned long long)index);
		return -EIO;
	}
	tsr_dec_init(&d, val, vlen);
	if (tsr_dec_begin_struct(&d, 1, &v, &sub) == 0) {
		term = tsr_dec_u64(&sub);
		tsr_dec_bytes(&sub, &data, &len, 64u << 20);
		tsr_dec_end_struct(&d, &sub);
	}
	if (tsr_dec_error(&d) || tsr_dec_remaining(&d) || term == 0 ||
	    term < (l->n ? l->log[l->n - 1].term : l->s->snap_term)) {
		snprintf(l->err, l->errlen, "%s: raft log entry %llu is damaged "
			 "(undecodable, or its term goes down)", l->s->path,
			 (unsigned long long)index);
		return -EIO;
	}
	if (l->n == l->cap) {
		size_t c = l->cap ? l->cap * 2 : 64;
		struct tsr_raft_entry *nl = realloc(l->log, c * sizeof(*nl));
		if (nl == NULL)
			return -ENOMEM;
		l->log = nl;
		l->cap = c;
	}
	l->log[l->n] = (struct tsr_raft_entry){ term, index, NULL, len };
	if (len && (l->log[l->n].data = malloc(len)) == NULL)
		return -ENOMEM;
	if (len)
		memcpy(l->log[l->n].data, data, len);
	l->n++;
	return 0;
bad_key:
	snprintf(l->err, l->errlen, "%s: a raft log key of %zu bytes (want %d)",
		 l->s->path, klen, LOG_PREFIX_LEN + 8);
	return -EIO;
}

int
tsr_raftstore_load(struct tsr_raftstore *s, struct tsr_raft_hardstate *hs,
		   struct tsr_raft_entry **log, size_t *nlog, char *err,
		   size_t errlen)
{
	struct loader l = { .s = s, .err = err, .errlen = errlen };
	uint8_t end[LOG_PREFIX_LEN];
	void *v = NULL;
	size_t vl;
	int rc;

	memset(hs, 0, sizeof(*hs));
	rc = tsr_kv_get(s->kv, HS_KEY, strlen(HS_KEY), &v, &vl, err, errlen);
	if (rc == 0) {
		struct tsr_dec d, sub;
		uint8_t ver;

		tsr_dec_init(&d, v, vl);
		if (tsr_dec_begin_struct(&d, 1, &ver, &sub) == 0) {
			hs->term = tsr_dec_u64(&sub);
			hs->vote = tsr_dec_u64(&sub);
			hs->commit = tsr_dec_u64(&sub);
			/* stores written before the rejoin flag end here */
			if (tsr_dec_remaining(&sub))
				hs->rejoin = tsr_dec_u64(&sub);
			tsr_dec_end_struct(&d, &sub);
		}
		rc = tsr_dec_error(&d) || tsr_dec_remaining(&d) ? -EIO : 0;
		tsr_kv_free(v);
		if (rc < 0) {
			snprintf(err, errlen, "%s: the raft hard state is damaged", s->path);
			return rc;
		}
	} else if (rc != -ENOENT) {
		return rc;
	}
	tsr_raftstore_close(s);
	rc = tsr_kv_get(s->kv, SNAP_KEY, strlen(SNAP_KEY), &v, &vl, err, errlen);
	if (rc == 0) {
		struct tsr_dec d, sub;
		const void *data = NULL;
		size_t len = 0;
		uint8_t ver;

		tsr_dec_init(&d, v, vl);
		if (tsr_dec_begin_struct(&d, 1, &ver, &sub) == 0) {
			s->snap_index = tsr_dec_u64(&sub);
			s->snap_term = tsr_dec_u64(&sub);
			tsr_dec_bytes(&sub, &data, &len, 1u << 30);
			tsr_dec_end_struct(&d, &sub);
		}
		rc = tsr_dec_error(&d) || tsr_dec_remaining(&d) || s->snap_index == 0 ||
		     s->snap_term == 0 || s->snap_term > hs->term ? -EIO : 0;
		if (rc == 0 && len && (s->snap = malloc(len)) == NULL)
			rc = -ENOMEM;
		if (rc == 0) {
			if (len)
				memcpy(s->snap, data, len);
			s->snap_len = len;
		}
		tsr_kv_free(v);
		if (rc < 0) {
			s->snap_index = s->snap_term = 0;
			snprintf(err, errlen, "%s: the raft snapshot is damaged", s->path);
			return rc;
		}
	} else if (rc != -ENOENT) {
		return rc;
	}
	memcpy(end, LOG_PREFIX, LOG_PREFIX_LEN);
	end[LOG_PREFIX_LEN - 1]++; /* "raft/log0": just past the prefix */
	rc = tsr_kv_scan(s->kv, LOG_PREFIX, LOG_PREFIX_LEN, end, LOG_PREFIX_LEN,
			 load_one, &l, err, errlen);
	if (rc == 0 && hs->commit > s->snap_index + l.n) {
		snprintf(err, errlen, "%s: the raft hard state commits %llu entries, "
			 "the snapshot and log hold %llu", s->path,
			 (unsigned long long)hs->commit,
			 (unsigned long long)(s->snap_index + l.n));
		rc = -EIO;
	}
	if (rc == 0 && l.n && l.log[l.n - 1].term > hs->term) {
		snprintf(err, errlen, "%s: raft log entry %llu is of term %llu, after "
			 "the stored term %llu", s->path,
			 (unsigned long long)(s->snap_index + l.n),
			 (unsigned long long)l.log[l.n - 1].term,
			 (unsigned long long)hs->term);
		rc = -EIO;
	}
	if (rc < 0) {
		tsr_raftstore_free_log(l.log, l.n);
		tsr_raftstore_close(s);
		return rc;
	}
	s->first = s->snap_index + 1;
	s->last = s->snap_index + l.n;
	*log = l.log;
	*nlog = l.n;
	return 0;
}

void
tsr_raftstore_free_log(struct tsr_raft_entry *log, size_t nlog)
{
	for (size_t i = 0; i < nlog; i++)
		free(log[i].data);
	free(log);
}

/* Put the snapshot and delete the entries it covers (into b); *first
 * gets the new first index. */
static int
put_snap(struct tsr_kv_batch *b, struct tsr_raftstore *s, uint64_t index,
	 uint64_t term, const void *data, size_t len, uint64_t *first)
{
	struct tsr_enc e;
	size_t m;
	int rc;

	tsr_enc_init(&e);
	m = tsr_enc_begin_struct(&e, 1, 1);
	tsr_enc_u64(&e, index);
	tsr_enc_u64(&e, term);
	tsr_enc_bytes(&e, data, len);
	tsr_enc_end_struct(&e, m);
	if ((rc = tsr_enc_error(&e)) == 0)
		tsr_kv_batch_put(b, SNAP_KEY, strlen(SNAP_KEY), e.buf, e.len);
	tsr_enc_release(&e);
	if (rc < 0)
		return rc;
	for (uint64_t i = s->first ? s->first : 1; i <= index && i <= s->last; i++) {
		uint8_t k[LOG_PREFIX_LEN + 8];
		tsr_kv_batch_del(b, k, log_key(k, i));
	}
	*first = index + 1;
	return 0;
}

int
tsr_raftstore_compact(struct tsr_raftstore *s, uint64_t index, uint64_t term,
		      const void *data, size_t len, char *err, size_t errlen)
{
	struct tsr_kv_batch *b = tsr_kv_batch_create();
	uint64_t first = s->first;
	int rc;

	if (b == NULL)
		return -ENOMEM;
	rc = put_snap(b, s, index, term, data, len, &first);
	if (rc == 0)
		rc = tsr_kv_write(s->kv, b, 1, err, errlen);
	if (rc == 0) {
		s->first = first;
		if (s->last < index)
			s->last = index;
	}
	tsr_kv_batch_destroy(b);
	return rc;
}

void
tsr_raftstore_close(struct tsr_raftstore *s)
{
	free(s->snap);
	s->snap = NULL;
	s->snap_len = 0;
}

int
tsr_raftstore_save(struct tsr_raftstore *s, const struct tsr_raft_ready *rd,
		   char *err, size_t errlen)
{
	struct tsr_kv_batch *b;
	uint64_t last = s->last;
	int rc;

	if (!rd->hs_changed && rd->nentries == 0 && rd->snapshot_index == 0 &&
	    rd->last_index >= s->last)
		return 0;
	if ((b = tsr_kv_batch_create()) == NULL)
		return -ENOMEM;
	if (rd->hs_changed) {
		struct tsr_enc e;
		size_t m;

		tsr_enc_init(&e);
		m = tsr_enc_begin_struct(&e, 1, 1);
		tsr_enc_u64(&e, rd->hs.term);
		tsr_enc_u64(&e, rd->hs.vote);
		tsr_enc_u64(&e, rd->hs.commit);
		tsr_enc_u64(&e, rd->hs.rejoin);
		tsr_enc_end_struct(&e, m);
		if (tsr_enc_error(&e) == 0)
			tsr_kv_batch_put(b, HS_KEY, strlen(HS_KEY), e.buf, e.len);
		rc = tsr_enc_error(&e);
		tsr_enc_release(&e);
		if (rc < 0)
			goto out;
	}
	for (size_t i = 0; i < rd->nentries; i++) {
		const struct tsr_raft_entry *en = &rd->entries[i];
		uint8_t k[LOG_PREFIX_LEN + 8];
		struct tsr_enc e;
		size_t m;

		tsr_enc_init(&e);
		m = tsr_enc_begin_struct(&e, 1, 1);
		tsr_enc_u64(&e, en->term);
		tsr_enc_bytes(&e, en->data, en->len);
		tsr_enc_end_struct(&e, m);
		if (tsr_enc_error(&e) == 0)
			tsr_kv_batch_put(b, k, log_key(k, en->index), e.buf, e.len);
		rc = tsr_enc_error(&e);
		tsr_enc_release(&e);
		if (rc < 0)
			goto out;
	}
	/* the log now ends at rd->last_index: what was stored after it (a
	 * truncated tail) goes in the same batch */
	for (uint64_t i = rd->last_index + 1; i <= s->last; i++) {
		uint8_t k[LOG_PREFIX_LEN + 8];
		tsr_kv_batch_del(b, k, log_key(k, i));
	}
	last = rd->last_index;
	uint64_t first = s->first;
	if (rd->snapshot_index) {
		rc = put_snap(b, s, rd->snapshot_index, rd->snapshot_term, rd->snapshot,
			      rd->snapshot_len, &first);
		if (rc < 0)
			goto out;
	}
	rc = tsr_kv_write(s->kv, b, 1, err, errlen);
	if (rc == 0) {
		s->last = last;
		s->first = first;
	}
out:
	tsr_kv_batch_destroy(b);
	return rc;
}
