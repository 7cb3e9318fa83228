/* mdsmap.c — the MDS map, its encoding and its incrementals (mdsmap.h). */
#include "map/mdsmap.h"
#include "map/maputil.h"
#include "util/util.h"
#include "map/osdmap.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	int holds_rank;
} states[] = {
#define X(e, v, n, r) [v] = { n, r },
	TSR_MDS_STATE_MAP(X)
#undef X
};

const char *
tsr_mds_state_name(uint32_t state)
{
	return state < TSR_MDS_STATE_COUNT ? states[state].name : NULL;
}

void
tsr_mdsmap_init(struct tsr_mdsmap *m)
{
	memset(m, 0, sizeof(*m));
	m->epoch = 1;
	snprintf(m->fs_name, sizeof(m->fs_name), "tessera");
	m->max_mds = 1;
}

void
tsr_mdsmap_free(struct tsr_mdsmap *m)
{
	free(m->mds);
	memset(m, 0, sizeof(*m));
}

int
tsr_mdsmap_copy(struct tsr_mdsmap *dst, const struct tsr_mdsmap *src)
{
	struct tsr_mdsmap m = *src;

	if ((m.mds = tsr_map_dup(src->mds, src->nmds * sizeof(*src->mds))) == NULL)
		return -ENOMEM;
	*dst = m;
	return 0;
}

int
tsr_mdsmap_check(const struct tsr_mdsmap *m, char *err, size_t errlen)
{
	if (m->epoch == 0)
		return tsr_errf(err, errlen, -EINVAL, "MDS map: epoch 0");
	if (!tsr_osdmap_name_ok(m->fs_name))
		return tsr_errf(err, errlen, -EINVAL, "MDS map: bad file "
				    "system name");
	if (m->max_mds < 1 || m->max_mds > TSR_MDSMAP_MAX_RANKS)
		return tsr_errf(err, errlen, -EINVAL, "MDS map: max_mds %u "
				    "out of range 1..%d", m->max_mds,
				    TSR_MDSMAP_MAX_RANKS);
	if (m->nmds > TSR_MDSMAP_MAX_MDS)
		return tsr_errf(err, errlen, -EINVAL, "MDS map: %zu MDSs "
				    "(at most %d)", m->nmds, TSR_MDSMAP_MAX_MDS);
	for (size_t i = 0; i < m->nmds; i++) {
		const struct tsr_mdsmap_mds *d = &m->mds[i];

		if (!tsr_osdmap_name_ok(d->name) ||
		    (i && strcmp(d->name, m->mds[i - 1].name) <= 0))
			return tsr_errf(err, errlen, -EINVAL, "MDS map: names "
					    "invalid or out of order at '%.63s'",
					    d->name);
		if (!tsr_map_word_ok(d->addr, sizeof(d->addr)) ||
		    d->state >= TSR_MDS_STATE_COUNT)
			return tsr_errf(err, errlen, -EINVAL, "MDS map: mds.%s: "
					    "bad address or state", d->name);
		if (states[d->state].holds_rank
			    ? d->rank < 0 || (uint32_t)d->rank >= m->max_mds
			    : d->rank != -1)
			return tsr_errf(err, errlen, -EINVAL, "MDS map: mds.%s: "
					    "rank %" PRId32 " in state %s", d->name,
					    d->rank, states[d->state].name);
		for (size_t j = 0; j < i && d->rank >= 0; j++)
			if (m->mds[j].rank == d->rank)
				return tsr_errf(err, errlen, -EINVAL, "MDS map: "
						    "rank %" PRId32 " held by mds.%s "
						    "and mds.%s", d->rank,
						    m->mds[j].name, d->name);
	}
	return 0;
}

struct tsr_mdsmap_mds *
tsr_mdsmap_find(const struct tsr_mdsmap *m, const char *name)
{
	for (size_t i = 0; i < m->nmds; i++)
		if (strcmp(m->mds[i].name, name) == 0)
			return &m->mds[i];
	return NULL;
}

struct tsr_mdsmap_mds *
tsr_mdsmap_rank(const struct tsr_mdsmap *m, int32_t rank)
{
	for (size_t i = 0; i < m->nmds; i++)
		if (m->mds[i].rank == rank && rank >= 0)
			return &m->mds[i];
	return NULL;
}

static void
mds_encode(struct tsr_enc *e, const struct tsr_mdsmap_mds *d)
{
	size_t mk = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_str(e, d->name);
	tsr_enc_u64(e, d->gid);
	tsr_enc_str(e, d->addr);
	tsr_enc_i32(e, d->rank);
	tsr_enc_u32(e, d->state);
	tsr_enc_end_struct(e, mk);
}

static void
mds_decode(struct tsr_dec *d, struct tsr_mdsmap_mds *o)
{
	struct tsr_dec s;
	uint8_t v;

	memset(o, 0, sizeof(*o));
	if (tsr_dec_begin_struct(d, 1, &v, &s) < 0)
		return;
	tsr_dec_str(&s, o->name, sizeof(o->name));
	o->gid = tsr_dec_u64(&s);
	tsr_dec_str(&s, o->addr, sizeof(o->addr));
	o->rank = tsr_dec_i32(&s);
	o->state = tsr_dec_u32(&s);
	tsr_dec_end_struct(d, &s);
}

#define MDS_MIN (6 + 4 + 8 + 4 + 4 + 4)

int
tsr_mdsmap_encode(struct tsr_enc *e, const struct tsr_mdsmap *m)
{
	size_t mk = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, m->epoch);
	tsr_enc_str(e, m->fs_name);
	tsr_enc_u32(e, m->max_mds);
	tsr_enc_u32(e, (uint32_t)m->nmds);
	for (size_t i = 0; i < m->nmds; i++)
		mds_encode(e, &m->mds[i]);
	tsr_enc_end_struct(e, mk);
	return tsr_enc_error(e);
}

int
tsr_mdsmap_decode(const void *buf, size_t len, struct tsr_mdsmap *out, char *err,
		  size_t errlen)
{
	struct tsr_mdsmap m;
	struct tsr_dec d, s;
	uint8_t v;
	int rc;

	memset(&m, 0, sizeof(m));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &v, &s) < 0)
		return tsr_errf(err, errlen, tsr_dec_error(&d), "MDS map: bad "
				    "envelope");
	m.epoch = tsr_dec_u64(&s);
	tsr_dec_str(&s, m.fs_name, sizeof(m.fs_name));
	m.max_mds = tsr_dec_u32(&s);
	m.nmds = tsr_map_count(&s, TSR_MDSMAP_MAX_MDS, MDS_MIN);
	if ((m.mds = tsr_map_alloc(m.nmds, sizeof(*m.mds))) == NULL)
		tsr_dec_fail(&s, -ENOMEM);
	for (size_t i = 0; i < m.nmds && !tsr_dec_error(&s); i++)
		mds_decode(&s, &m.mds[i]);
	if ((rc = tsr_dec_end_struct(&d, &s)) < 0 || tsr_dec_remaining(&d)) {
		tsr_mdsmap_free(&m);
		return tsr_errf(err, errlen, rc < 0 ? rc : -EBADMSG, "MDS map: %s",
				    rc < 0 ? "truncated or malformed" :
				    "bytes after the map");
	}
	if ((rc = tsr_mdsmap_check(&m, err, errlen)) < 0) {
		tsr_mdsmap_free(&m);
		return rc;
	}
	*out = m;
	return 0;
}

void
tsr_mdsmap_inc_free(struct tsr_mdsmap_inc *inc)
{
	free(inc->mds);
	free(inc->rm);
	memset(inc, 0, sizeof(*inc));
}

int
tsr_mdsmap_diff(const struct tsr_mdsmap *a, const struct tsr_mdsmap *b,
		struct tsr_mdsmap_inc *inc)
{
	size_t i, j;

	memset(inc, 0, sizeof(*inc));
	if (b->epoch != a->epoch + 1)
		return -EINVAL;
	inc->epoch = b->epoch;
	memcpy(inc->fs_name, b->fs_name, sizeof(inc->fs_name));
	inc->max_mds = b->max_mds;
	if ((inc->mds = tsr_map_alloc(b->nmds, sizeof(*inc->mds))) == NULL ||
	    (inc->rm = tsr_map_alloc(a->nmds, sizeof(*inc->rm))) == NULL) {
		tsr_mdsmap_inc_free(inc);
		return -ENOMEM;
	}
	for (i = 0, j = 0; i < a->nmds || j < b->nmds;) {
		int c = i == a->nmds ? 1 : j == b->nmds ? -1 :
			strcmp(a->mds[i].name, b->mds[j].name);
		if (c < 0) {
			memcpy(inc->rm[inc->nrm++], a->mds[i++].name, TSR_MDSMAP_NAME);
		} else if (c > 0) {
			inc->mds[inc->nmds++] = b->mds[j++];
		} else {
			const struct tsr_mdsmap_mds *x = &a->mds[i++], *y = &b->mds[j++];
			if (x->gid != y->gid || strcmp(x->addr, y->addr) != 0 ||
			    x->rank != y->rank || x->state != y->state)
				inc->mds[inc->nmds++] = *y;
		}
	}
	return 0;
}

static int
cmp_mds(const void *x, const void *y)
{
	return strcmp(((const struct tsr_mdsmap_mds *)x)->name,
		      ((const struct tsr_mdsmap_mds *)y)->name);
}

int
tsr_mdsmap_apply(struct tsr_mdsmap *m, const struct tsr_mdsmap_inc *inc,
		 char *err, size_t errlen)
{
	struct tsr_mdsmap n;
	int rc;

	if (inc->epoch != m->epoch + 1)
		return tsr_errf(err, errlen, -ESTALE, "MDS map incremental for "
				    "epoch %" PRIu64 " does not follow epoch %"
				    PRIu64, inc->epoch, m->epoch);
	if (inc->nmds > TSR_MDSMAP_MAX_MDS || inc->nrm > TSR_MDSMAP_MAX_MDS)
		return tsr_errf(err, errlen, -EINVAL, "MDS map incremental "
				    "too large");
	for (size_t k = 0; k < inc->nrm; k++)
		if (tsr_mdsmap_find(m, inc->rm[k]) == NULL)
			return tsr_errf(err, errlen, -EINVAL, "MDS map "
					    "incremental %" PRIu64 " removes mds.%.63s, "
					    "which the map lacks", inc->epoch,
					    inc->rm[k]);
	memset(&n, 0, sizeof(n));
	n.epoch = inc->epoch;
	memcpy(n.fs_name, inc->fs_name, sizeof(n.fs_name));
	n.max_mds = inc->max_mds;
	if ((n.mds = tsr_map_alloc(m->nmds + inc->nmds, sizeof(*n.mds))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->nmds; i++) {
		int gone = 0;
		for (size_t k = 0; k < inc->nrm && !gone; k++)
			gone = strcmp(inc->rm[k], m->mds[i].name) == 0;
		for (size_t k = 0; k < inc->nmds && !gone; k++)
			gone = strcmp(inc->mds[k].name, m->mds[i].name) == 0;
		if (!gone)
			n.mds[n.nmds++] = m->mds[i];
	}
	for (size_t k = 0; k < inc->nmds; k++)
		n.mds[n.nmds++] = inc->mds[k];
	qsort(n.mds, n.nmds, sizeof(*n.mds), cmp_mds);
	if ((rc = tsr_mdsmap_check(&n, err, errlen)) < 0) {
		tsr_mdsmap_free(&n);
		return rc;
	}
	tsr_mdsmap_free(m);
	*m = n;
	return 0;
}

int
tsr_mdsmap_inc_encode(struct tsr_enc *e, const struct tsr_mdsmap_inc *inc)
{
	size_t mk = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, inc->epoch);
	tsr_enc_str(e, inc->fs_name);
	tsr_enc_u32(e, inc->max_mds);
	tsr_enc_u32(e, (uint32_t)inc->nmds);
	for (size_t i = 0; i < inc->nmds; i++)
		mds_encode(e, &inc->mds[i]);
	tsr_enc_u32(e, (uint32_t)inc->nrm);
	for (size_t i = 0; i < inc->nrm; i++)
		tsr_enc_str(e, inc->rm[i]);
	tsr_enc_end_struct(e, mk);
	return tsr_enc_error(e);
}

int
tsr_mdsmap_inc_decode(const void *buf, size_t len, struct tsr_mdsmap_inc *out,
		      char *err, size_t errlen)
{
	struct tsr_mdsmap_inc inc;
	struct tsr_dec d, s;
	uint8_t v;
	int rc;

	memset(&inc, 0, sizeof(inc));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &v, &s) < 0)
		return tsr_errf(err, errlen, tsr_dec_error(&d), "MDS map "
				    "incremental: bad envelope");
	inc.epoch = tsr_dec_u64(&s);
	tsr_dec_str(&s, inc.fs_name, sizeof(inc.fs_name));
	inc.max_mds = tsr_dec_u32(&s);
	inc.nmds = tsr_map_count(&s, TSR_MDSMAP_MAX_MDS, MDS_MIN);
	if ((inc.mds = tsr_map_alloc(inc.nmds, sizeof(*inc.mds))) == NULL)
		tsr_dec_fail(&s, -ENOMEM);
	for (size_t i = 0; i < inc.nmds && !tsr_dec_error(&s); i++)
		mds_decode(&s, &inc.mds[i]);
	inc.nrm = tsr_map_count(&s, TSR_MDSMAP_MAX_MDS, 4);
	if ((inc.rm = tsr_map_alloc(inc.nrm, sizeof(*inc.rm))) == NULL)
		tsr_dec_fail(&s, -ENOMEM);
	for (size_t i = 0; i < inc.nrm && !tsr_dec_error(&s); i++)
		tsr_dec_str(&s, inc.rm[i], sizeof(inc.rm[i]));
	if ((rc = tsr_dec_end_struct(&d, &s)) < 0 || tsr_dec_remaining(&d)) {
		tsr_mdsmap_inc_free(&inc);
		return tsr_errf(err, errlen, rc < 0 ? rc : -EBADMSG, "MDS map "
				    "incremental: %s", rc < 0 ? "truncated or "
				    "malformed" : "bytes after it");
	}
	*out = inc;
	return 0;
}
