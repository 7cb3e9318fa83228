/* monmsg.c — encodings of the monitor messages (monmsg.h). */
#include "mon/monmsg.h"
#include "map/mdsmap.h"
#include "map/osdmap.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
tsr_monmsg_raft_encode(struct tsr_enc *e, uint32_t fp,
		       const struct tsr_mon_peer_info *info, const struct tsr_raft_msg *m)
{
	size_t mark = tsr_enc_begin_struct(e, 2, 1);

	tsr_enc_u32(e, fp);
	tsr_enc_u32(e, m->type);
	tsr_enc_u64(e, m->from);
	tsr_enc_u64(e, m->to);
	tsr_enc_u64(e, m->term);
	tsr_enc_u64(e, m->log_term);
	tsr_enc_u64(e, m->index);
	tsr_enc_u64(e, m->commit);
	tsr_enc_u8(e, m->reject ? 1 : 0);
	tsr_enc_u64(e, m->match);
	tsr_enc_u64(e, m->ctx);
	tsr_enc_u32(e, (uint32_t)m->nentries);
	for (size_t i = 0; i < m->nentries; i++) {
		tsr_enc_u64(e, m->entries[i].term);
		tsr_enc_u64(e, m->entries[i].index);
		tsr_enc_bytes(e, m->entries[i].data, m->entries[i].len);
	}
	tsr_enc_u64(e, info ? info->features : 0);
	tsr_enc_str(e, info ? info->version : "");
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_monmsg_raft_decode(const void *buf, size_t len, uint32_t *fp,
		       struct tsr_mon_peer_info *info, struct tsr_raft_msg *m,
		       char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	struct tsr_raft_entry *ents = NULL;
	uint8_t ver;
	uint32_t n;

	struct tsr_mon_peer_info pi;

	memset(m, 0, sizeof(*m));
	memset(&pi, 0, sizeof(pi));
	if (info)
		*info = pi;
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 2, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "raft message: bad envelope");
	*fp = tsr_dec_u32(&sub);
	m->type = tsr_dec_u32(&sub);
	m->from = tsr_dec_u64(&sub);
	m->to = tsr_dec_u64(&sub);
	m->term = tsr_dec_u64(&sub);
	m->log_term = tsr_dec_u64(&sub);
	m->index = tsr_dec_u64(&sub);
	m->commit = tsr_dec_u64(&sub);
	m->reject = tsr_dec_u8(&sub) != 0;
	m->match = tsr_dec_u64(&sub);
	m->ctx = tsr_dec_u64(&sub);
	n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) == 0 && n > TSR_MONMSG_MAX_ENTRIES)
		return tsr_errf(err, errlen, -EBADMSG, "raft message: %u entries, "
				"more than %u", n, TSR_MONMSG_MAX_ENTRIES);
	/* each entry takes at least 20 bytes: a count the input cannot hold
	 * is refused before allocating for it */
	if (tsr_dec_error(&sub) == 0 && (uint64_t)n * 20 > tsr_dec_remaining(&sub))
		return tsr_errf(err, errlen, -EBADMSG, "raft message claims %u "
				"entries, more than its bytes can hold", n);
	if (tsr_dec_error(&sub) == 0 && n > 0 &&
	    (ents = calloc(n, sizeof(*ents))) == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n && tsr_dec_error(&sub) == 0; i++) {
		const void *p;
		size_t l;

		ents[i].term = tsr_dec_u64(&sub);
		ents[i].index = tsr_dec_u64(&sub);
		tsr_dec_bytes(&sub, &p, &l, TSR_MONMSG_MAX_ENTRY);
		ents[i].data = (uint8_t *)p;
		ents[i].len = l;
	}
	if (ver >= 2) {
		pi.features = tsr_dec_u64(&sub);
		tsr_dec_str(&sub, pi.version, sizeof(pi.version));
	}
	if (tsr_dec_end_struct(&d, &sub) < 0) {
		free(ents);
		return tsr_errf(err, errlen, -EBADMSG, "raft message: truncated or "
				"malformed");
	}
	m->entries = ents;
	m->nentries = n;
	if (info)
		*info = pi;
	return 0;
}

void
tsr_monmsg_raft_free(struct tsr_raft_msg *m)
{
	free((void *)m->entries);
	m->entries = NULL;
	m->nentries = 0;
}

int
tsr_monmsg_cmd_encode(struct tsr_enc *e, const struct tsr_mon_cmd *c)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, c->client);
	tsr_enc_u64(e, c->tid);
	tsr_enc_u32(e, c->argc);
	for (uint32_t i = 0; i < c->argc; i++)
		tsr_enc_str(e, c->argv[i]);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

void
tsr_monmsg_cmd_free(struct tsr_mon_cmd *c)
{
	if (c->argv)
		for (uint32_t i = 0; i < c->argc; i++)
			free(c->argv[i]);
	free(c->argv);
	c->argv = NULL;
	c->argc = 0;
}

int
tsr_monmsg_cmd_decode(const void *buf, size_t len, struct tsr_mon_cmd *c,
		      char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;
	uint32_t n;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "command: bad envelope");
	c->client = tsr_dec_u64(&sub);
	c->tid = tsr_dec_u64(&sub);
	n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) == 0 && (n == 0 || n > TSR_MONMSG_MAX_ARGS))
		return tsr_errf(err, errlen, -EBADMSG, "command of %u words; 1 to "
				"%u expected", n, TSR_MONMSG_MAX_ARGS);
	if (tsr_dec_error(&sub) == 0 &&
	    (c->argv = calloc((size_t)n + 1, sizeof(*c->argv))) == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n && tsr_dec_error(&sub) == 0; i++) {
		const void *p;
		size_t l;

		/* no cap here (the length is still checked against the bytes
		 * left), so that a long word is named as such, not as garbage */
		tsr_dec_bytes(&sub, &p, &l, SIZE_MAX);
		if (tsr_dec_error(&sub))
			break;
		if (l >= TSR_MONMSG_MAX_ARG || memchr(p, '\0', l)) {
			tsr_monmsg_cmd_free(c);
			if (l >= TSR_MONMSG_MAX_ARG)
				return tsr_errf(err, errlen, -E2BIG, "command word %u "
						"is %zu bytes long; a word may have at "
						"most %u", i + 1, l, TSR_MONMSG_MAX_ARG - 1);
			return tsr_errf(err, errlen, -EBADMSG, "command word %u "
					"holds a NUL byte", i + 1);
		}
		if ((c->argv[i] = malloc(l + 1)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		memcpy(c->argv[i], p, l);
		c->argv[i][l] = '\0';
		c->argc = i + 1;
	}
	if (rc == 0 && tsr_dec_end_struct(&d, &sub) < 0)
		rc = -EBADMSG;
	if (rc < 0) {
		tsr_monmsg_cmd_free(c);
		return tsr_errf(err, errlen, rc, rc == -ENOMEM ? "out of memory"
				: "command: truncated or malformed");
	}
	return 0;
}

int
tsr_monmsg_reply_encode(struct tsr_enc *e, const struct tsr_mon_reply *r)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, r->tid);
	tsr_enc_i32(e, r->status);
	tsr_enc_str(e, r->text ? r->text : "");
	tsr_enc_str(e, r->leader);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_monmsg_reply_decode(const void *buf, size_t len, struct tsr_mon_reply *r,
			char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	const void *p;
	size_t l;
	uint8_t ver;

	memset(r, 0, sizeof(*r));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "reply: bad envelope");
	r->tid = tsr_dec_u64(&sub);
	r->status = tsr_dec_i32(&sub);
	tsr_dec_bytes(&sub, &p, &l, TSR_MONMSG_MAX_TEXT);
	tsr_dec_str(&sub, r->leader, sizeof(r->leader));
	if (tsr_dec_end_struct(&d, &sub) < 0 || r->status > 0 || r->status < -4095 ||
	    (l && memchr(p, '\0', l)))
		return tsr_errf(err, errlen, -EBADMSG, "reply: truncated or malformed");
	if ((r->text = malloc(l + 1)) == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	memcpy(r->text, p, l);
	r->text[l] = '\0';
	return 0;
}

int
tsr_monmsg_sub_encode(struct tsr_enc *e, const struct tsr_mon_sub *s)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, s->tid);
	tsr_enc_u32(e, s->want);
	for (int i = 0; i < TSR_MON_NMAPS; i++)
		tsr_enc_u64(e, s->have[i]);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_monmsg_sub_decode(const void *buf, size_t len, struct tsr_mon_sub *s,
		      char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(s, 0, sizeof(*s));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "subscription: bad envelope");
	s->tid = tsr_dec_u64(&sub);
	s->want = tsr_dec_u32(&sub);
	for (int i = 0; i < TSR_MON_NMAPS; i++)
		s->have[i] = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d))
		return tsr_errf(err, errlen, -EBADMSG, "subscription: truncated or "
				"malformed");
	if (s->want & ~TSR_MON_SUB_KNOWN)
		return tsr_errf(err, errlen, -EINVAL, "subscription: unknown bits "
				"0x%x", s->want & ~TSR_MON_SUB_KNOWN);
	return 0;
}

int
tsr_monmsg_maps_encode(struct tsr_enc *e, const struct tsr_mon_maps *m)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, m->tid);
	tsr_enc_i32(e, m->status);
	tsr_enc_str(e, m->text ? m->text : "");
	tsr_enc_str(e, m->leader);
	tsr_enc_u8(e, m->which);
	tsr_enc_u64(e, m->epoch);
	tsr_enc_u8(e, m->full);
	tsr_enc_u32(e, m->n);
	for (uint32_t i = 0; i < m->n; i++)
		tsr_enc_u32(e, m->len[i]);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

void
tsr_monmsg_maps_free(struct tsr_mon_maps *m)
{
	free(m->text);
	free(m->len);
	memset(m, 0, sizeof(*m));
}

int
tsr_monmsg_maps_decode(const void *buf, size_t len, size_t data_len,
		       struct tsr_mon_maps *m, char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	const void *p;
	size_t l;
	uint8_t ver;
	uint64_t sum = 0;

	memset(m, 0, sizeof(*m));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "maps: bad envelope");
	m->tid = tsr_dec_u64(&sub);
	m->status = tsr_dec_i32(&sub);
	tsr_dec_bytes(&sub, &p, &l, TSR_MONMSG_MAX_TEXT);
	tsr_dec_str(&sub, m->leader, sizeof(m->leader));
	m->which = tsr_dec_u8(&sub);
	m->epoch = tsr_dec_u64(&sub);
	m->full = tsr_dec_u8(&sub);
	m->n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) || m->n > TSR_MONMSG_MAX_INCS ||
	    (uint64_t)m->n * 4 > tsr_dec_remaining(&sub) ||
	    m->status > 0 || m->status < -4095 || (l && memchr(p, '\0', l)) ||
	    m->which >= TSR_MON_NMAPS || m->full > 1 || (m->full && m->n != 1))
		return tsr_errf(err, errlen, -EBADMSG, "maps: truncated or malformed");
	if ((m->len = calloc(m->n ? m->n : 1, sizeof(*m->len))) == NULL ||
	    (m->text = malloc(l + 1)) == NULL) {
		tsr_monmsg_maps_free(m);
		return tsr_errf(err, errlen, -ENOMEM, "out of memory");
	}
	memcpy(m->text, p, l);
	m->text[l] = '\0';
	for (uint32_t i = 0; i < m->n; i++) {
		m->len[i] = tsr_dec_u32(&sub);
		sum += m->len[i];
	}
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) ||
	    sum != data_len) {
		tsr_monmsg_maps_free(m);
		return tsr_errf(err, errlen, -EBADMSG, "maps: truncated or malformed "
				"(lengths add up to %llu, data holds %zu)",
				(unsigned long long)sum, data_len);
	}
	return 0;
}

/* ---- The daemons' messages ---------------------------------------------- */

/* Printable bytes without blanks (an address, a version); an address
 * also has a ':'. */
static int
word_ok(const char *w, int addr)
{
	for (const char *p = w; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			return 0;
	return !addr || strchr(w, ':') != NULL;
}

int
tsr_monmsg_osd_boot_encode(struct tsr_enc *e, const struct tsr_mon_osd_boot *b)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, b->client);
	tsr_enc_u64(e, b->tid);
	tsr_enc_i32(e, b->osd);
	tsr_enc_str(e, b->addr);
	tsr_enc_str(e, b->version);
	tsr_enc_u64(e, b->features);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_monmsg_osd_boot_decode(const void *buf, size_t len, struct tsr_mon_osd_boot *b,
			   char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(b, 0, sizeof(*b));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "osd boot: bad envelope");
	b->client = tsr_dec_u64(&sub);
	b->tid = tsr_dec_u64(&sub);
	b->osd = tsr_dec_i32(&sub);
	tsr_dec_str(&sub, b->addr, sizeof(b->addr));
	tsr_dec_str(&sub, b->version, sizeof(b->version));
	b->features = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d))
		return tsr_errf(err, errlen, -EBADMSG, "osd boot: truncated or malformed");
	if (b->osd < 0 || b->osd >= TSR_OSDMAP_MAX_OSDS)
		return tsr_errf(err, errlen, -EINVAL, "osd boot: OSD id %d is not in "
				"0..%d", b->osd, TSR_OSDMAP_MAX_OSDS - 1);
	if (!word_ok(b->addr, 1))
		return tsr_errf(err, errlen, -EINVAL, "osd boot: the address is not "
				"IP:PORT");
	if (!word_ok(b->version, 0))
		return tsr_errf(err, errlen, -EINVAL, "osd boot: the version is not "
				"printable without blanks");
	return 0;
}

int
tsr_monmsg_osd_beacon_encode(struct tsr_enc *e, const struct tsr_mon_osd_beacon *b)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, b->client);
	tsr_enc_u64(e, b->tid);
	tsr_enc_i32(e, b->osd);
	tsr_enc_u64(e, b->osdmap_epoch);
	tsr_enc_u32(e, b->nfailed);
	for (uint32_t i = 0; i < b->nfailed && i < TSR_MONMSG_MAX_FAILED; i++)
		tsr_enc_i32(e, b->failed[i]);
	tsr_enc_str(e, b->version);
	tsr_enc_end_struct(e, mark);
	if (b->nfailed > TSR_MONMSG_MAX_FAILED)
		return -EINVAL;
	return tsr_enc_error(e);
}

int
tsr_monmsg_osd_beacon_decode(const void *buf, size_t len, struct tsr_mon_osd_beacon *b,
			     char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(b, 0, sizeof(*b));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "osd beacon: bad envelope");
	b->client = tsr_dec_u64(&sub);
	b->tid = tsr_dec_u64(&sub);
	b->osd = tsr_dec_i32(&sub);
	b->osdmap_epoch = tsr_dec_u64(&sub);
	b->nfailed = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) == 0 && b->nfailed > TSR_MONMSG_MAX_FAILED) {
		uint32_t n = b->nfailed;
		b->nfailed = 0;
		return tsr_errf(err, errlen, -EINVAL, "osd beacon: %u silent peers, "
				"more than %d", n, TSR_MONMSG_MAX_FAILED);
	}
	for (uint32_t i = 0; i < b->nfailed; i++)
		b->failed[i] = tsr_dec_i32(&sub);
	tsr_dec_str(&sub, b->version, sizeof(b->version));
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d))
		return tsr_errf(err, errlen, -EBADMSG, "osd beacon: truncated or "
				"malformed");
	if (b->osd < 0 || b->osd >= TSR_OSDMAP_MAX_OSDS)
		return tsr_errf(err, errlen, -EINVAL, "osd beacon: OSD id %d is not "
				"in 0..%d", b->osd, TSR_OSDMAP_MAX_OSDS - 1);
	for (uint32_t i = 0; i < b->nfailed; i++)
		if (b->failed[i] < 0 || b->failed[i] >= TSR_OSDMAP_MAX_OSDS)
			return tsr_errf(err, errlen, -EINVAL, "osd beacon: silent "
					"peer %u is %d, not an OSD id", i, b->failed[i]);
	if (!word_ok(b->version, 0))
		return tsr_errf(err, errlen, -EINVAL, "osd beacon: the version is "
				"not printable without blanks");
	return 0;
}

int
tsr_monmsg_mds_beacon_encode(struct tsr_enc *e, const struct tsr_mon_mds_beacon *b)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, b->client);
	tsr_enc_u64(e, b->tid);
	tsr_enc_str(e, b->name);
	tsr_enc_u64(e, b->gid);
	tsr_enc_str(e, b->addr);
	tsr_enc_u32(e, b->state);
	tsr_enc_str(e, b->version);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_monmsg_mds_beacon_decode(const void *buf, size_t len, struct tsr_mon_mds_beacon *b,
			     char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(b, 0, sizeof(*b));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "mds beacon: bad envelope");
	b->client = tsr_dec_u64(&sub);
	b->tid = tsr_dec_u64(&sub);
	tsr_dec_str(&sub, b->name, sizeof(b->name));
	b->gid = tsr_dec_u64(&sub);
	tsr_dec_str(&sub, b->addr, sizeof(b->addr));
	b->state = tsr_dec_u32(&sub);
	tsr_dec_str(&sub, b->version, sizeof(b->version));
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d))
		return tsr_errf(err, errlen, -EBADMSG, "mds beacon: truncated or "
				"malformed");
	if (!tsr_osdmap_name_ok(b->name))
		return tsr_errf(err, errlen, -EINVAL, "mds beacon: the name is not "
				"1 to 63 of letters, digits, '-', '_', '.'");
	if (b->gid == 0 || b->gid > INT64_MAX)
		return tsr_errf(err, errlen, -EINVAL, "mds beacon: gid %llu is not in "
				"1..2^63-1", (unsigned long long)b->gid);
	if (!word_ok(b->addr, 1))
		return tsr_errf(err, errlen, -EINVAL, "mds beacon: the address is "
				"not IP:PORT");
	if (b->state >= TSR_MDS_STATE_COUNT)
		return tsr_errf(err, errlen, -EINVAL, "mds beacon: unknown state %u",
				b->state);
	if (!word_ok(b->version, 0))
		return tsr_errf(err, errlen, -EINVAL, "mds beacon: the version is "
				"not printable without blanks");
	return 0;
}

/* ---- The registry ----------------------------------------------------------
 *
 * Each check decodes, encodes what it decoded and decodes that again:
 * the same values, or -EPROTO (monmsg.h). */

#define ROUND_TRIP(what)                                                       \
	do {                                                                   \
		if (tsr_enc_error(&e) || (rc = (what)) != 0) {                 \
			tsr_enc_release(&e);                                   \
			return tsr_errf(err, errlen, -EPROTO, "%s: its "       \
					"encoding does not decode (%d)",      \
					__func__, rc);                         \
		}                                                              \
		tsr_enc_release(&e);                                           \
	} while (0)

static int
check_raft(const void *p, size_t n, size_t data_len, char *err, size_t errlen)
{
	struct tsr_raft_msg m, m2;
	struct tsr_mon_peer_info i, i2;
	struct tsr_enc e;
	uint32_t fp, fp2;
	int rc, same;

	(void)data_len;
	if ((rc = tsr_monmsg_raft_decode(p, n, &fp, &i, &m, err, errlen)) < 0)
		return rc;
	tsr_enc_init(&e);
	tsr_monmsg_raft_encode(&e, fp, &i, &m);
	if (tsr_enc_error(&e) ||
	    tsr_monmsg_raft_decode(e.buf, e.len, &fp2, &i2, &m2, err, errlen) != 0) {
		tsr_enc_release(&e);
		tsr_monmsg_raft_free(&m);
		return tsr_errf(err, errlen, -EPROTO, "raft: its encoding does not "
				"decode");
	}
	same = fp2 == fp && memcmp(&i, &i2, sizeof(i)) == 0 &&
	       m2.nentries == m.nentries && m2.term == m.term && m2.type == m.type;
	for (size_t k = 0; same && k < m.nentries; k++)
		same = m2.entries[k].len == m.entries[k].len &&
		       (m.entries[k].len == 0 ||
			memcmp(m2.entries[k].data, m.entries[k].data, m.entries[k].len) == 0);
	tsr_monmsg_raft_free(&m2);
	tsr_monmsg_raft_free(&m);
	tsr_enc_release(&e);
	return same ? 0 : tsr_errf(err, errlen, -EPROTO, "raft: the round trip differs");
}

static int
check_cmd(const void *p, size_t n, size_t data_len, char *err, size_t errlen)
{
	struct tsr_mon_cmd c, c2;
	struct tsr_enc e;
	int rc, same;

	(void)data_len;
	if ((rc = tsr_monmsg_cmd_decode(p, n, &c, err, errlen)) < 0)
		return rc;
	tsr_enc_init(&e);
	tsr_monmsg_cmd_encode(&e, &c);
	rc = tsr_enc_error(&e) ? tsr_enc_error(&e)
			       : tsr_monmsg_cmd_decode(e.buf, e.len, &c2, err, errlen);
	tsr_enc_release(&e);
	if (rc != 0) {
		tsr_monmsg_cmd_free(&c);
		return tsr_errf(err, errlen, -EPROTO, "command: its encoding does not "
				"decode");
	}
	same = c2.argc == c.argc && c2.client == c.client && c2.tid == c.tid;
	for (uint32_t k = 0; same && k < c.argc; k++)
		same = strcmp(c.argv[k], c2.argv[k]) == 0;
	tsr_monmsg_cmd_free(&c);
	tsr_monmsg_cmd_free(&c2);
	return same ? 0 : tsr_errf(err, errlen, -EPROTO, "command: the round trip "
				   "differs");
}

static int
check_reply(const void *p, size_t n, size_t data_len, char *err, size_t errlen)
{
	struct tsr_mon_reply r, r2;
	struct tsr_enc e;
	int rc, same;

	(void)data_len;
	if ((rc = tsr_monmsg_reply_decode(p, n, &r, err, errlen)) < 0) {
		free(r.text);
		return rc;
	}
	tsr_enc_init(&e);
	tsr_monmsg_reply_encode(&e, &r);
	rc = tsr_enc_error(&e) ? tsr_enc_error(&e)
			       : tsr_monmsg_reply_decode(e.buf, e.len, &r2, err, errlen);
	tsr_enc_release(&e);
	same = rc == 0 && r2.tid == r.tid && r2.status == r.status &&
	       strcmp(r2.text, r.text) == 0 && strcmp(r2.leader, r.leader) == 0;
	free(r.text);
	free(r2.text);
	return same ? 0 : tsr_errf(err, errlen, -EPROTO, "reply: the round trip differs");
}

static int
check_sub(const void *p, size_t n, size_t data_len, char *err, size_t errlen)
{
	struct tsr_mon_sub s, s2;
	struct tsr_enc e;
	int rc;

	(void)data_len;
	if ((rc = tsr_monmsg_sub_decode(p, n, &s, err, errlen)) < 0)
		return rc;
	tsr_enc_init(&e);
	tsr_monmsg_sub_encode(&e, &s);
	ROUND_TRIP(tsr_monmsg_sub_decode(e.buf, e.len, &s2, err, errlen) ||
		   memcmp(&s, &s2, sizeof(s)) != 0);
	return 0;
}

static int
check_maps(const void *p, size_t n, size_t data_len, char *err, size_t errlen)
{
	struct tsr_mon_maps m, m2;
	struct tsr_enc e;
	int rc, same;

	if ((rc = tsr_monmsg_maps_decode(p, n, data_len, &m, err, errlen)) < 0)
		return rc;
	tsr_enc_init(&e);
	tsr_monmsg_maps_encode(&e, &m);
	rc = tsr_enc_error(&e) ? tsr_enc_error(&e)
			       : tsr_monmsg_maps_decode(e.buf, e.len, data_len, &m2, err,
							errlen);
	tsr_enc_release(&e);
	same = rc == 0 && m2.n == m.n && m2.epoch == m.epoch && m2.which == m.which &&
	       strcmp(m2.text, m.text) == 0 &&
	       memcmp(m2.len, m.len, m.n * sizeof(*m.len)) == 0;
	tsr_monmsg_maps_free(&m);
	if (rc == 0)
		tsr_monmsg_maps_free(&m2);
	return same ? 0 : tsr_errf(err, errlen, -EPROTO, "maps: the round trip differs");
}

/* The daemons' messages are flat structs, zeroed before decoding: a round
 * trip gives the same bytes. */
#define CHECK_FLAT(fn, type)                                                   \
	static int                                                             \
	check_##fn(const void *p, size_t n, size_t data_len, char *err,        \
		   size_t errlen)                                              \
	{                                                                      \
		struct type a, b;                                              \
		struct tsr_enc e;                                              \
		int rc;                                                        \
									       \
		(void)data_len;                                                \
		if ((rc = tsr_monmsg_##fn##_decode(p, n, &a, err, errlen)) < 0) \
			return rc;                                             \
		tsr_enc_init(&e);                                              \
		tsr_monmsg_##fn##_encode(&e, &a);                              \
		ROUND_TRIP(tsr_monmsg_##fn##_decode(e.buf, e.len, &b, err,     \
						    errlen) ||                 \
			   memcmp(&a, &b, sizeof(a)) != 0);                    \
		return 0;                                                      \
	}
int
tsr_monmsg_svc_keys_encode(struct tsr_enc *e, const struct tsr_mon_svc_keys *k)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_u64(e, k->client);
	tsr_enc_u64(e, k->tid);
	tsr_enc_i32(e, k->osd);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_monmsg_svc_keys_decode(const void *buf, size_t len, struct tsr_mon_svc_keys *k,
			   char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(k, 0, sizeof(*k));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "service keys: bad envelope");
	k->client = tsr_dec_u64(&sub);
	k->tid = tsr_dec_u64(&sub);
	k->osd = tsr_dec_i32(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d))
		return tsr_errf(err, errlen, -EBADMSG, "service keys: truncated or "
				"malformed");
	if (k->osd < -1 || k->osd >= TSR_OSDMAP_MAX_OSDS)
		return tsr_errf(err, errlen, -EINVAL, "service keys: OSD id %d is not "
				"-1 (a client's or an MDS's own) or in 0..%d", k->osd,
				TSR_OSDMAP_MAX_OSDS - 1);
	return 0;
}

int
tsr_monmsg_osd_alive_encode(struct tsr_enc *e, const struct tsr_mon_osd_alive *a)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);
	uint32_t n = a->npg_temp < TSR_MONMSG_MAX_PG_TEMP ? a->npg_temp
							 : TSR_MONMSG_MAX_PG_TEMP;

	tsr_enc_u64(e, a->client);
	tsr_enc_u64(e, a->tid);
	tsr_enc_i32(e, a->osd);
	tsr_enc_u64(e, a->up_from);
	tsr_enc_u64(e, a->want_up_thru);
	tsr_enc_u32(e, n);
	for (uint32_t i = 0; i < n; i++) {
		const struct tsr_mon_pg_temp_req *r = &a->pg_temp[i];
		uint32_t k = r->n < TSR_OSDMAP_MAX_SIZE ? r->n : TSR_OSDMAP_MAX_SIZE;
		tsr_enc_i64(e, r->pool);
		tsr_enc_u32(e, r->pg);
		tsr_enc_u32(e, k);
		for (uint32_t j = 0; j < k; j++)
			tsr_enc_i32(e, r->osds[j]);
	}
	tsr_enc_end_struct(e, mark);
	if (a->npg_temp > TSR_MONMSG_MAX_PG_TEMP)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		if (a->pg_temp[i].n > TSR_OSDMAP_MAX_SIZE)
			return -EINVAL;
	return tsr_enc_error(e);
}

int
tsr_monmsg_osd_alive_decode(const void *buf, size_t len, struct tsr_mon_osd_alive *a,
			    char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(a, 0, sizeof(*a));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "osd alive: bad envelope");
	a->client = tsr_dec_u64(&sub);
	a->tid = tsr_dec_u64(&sub);
	a->osd = tsr_dec_i32(&sub);
	a->up_from = tsr_dec_u64(&sub);
	a->want_up_thru = tsr_dec_u64(&sub);
	uint32_t n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub) == 0 && n > TSR_MONMSG_MAX_PG_TEMP)
		return tsr_errf(err, errlen, -EINVAL, "osd alive: %u PG temp requests, "
				"more than %d", n, TSR_MONMSG_MAX_PG_TEMP);
	for (uint32_t i = 0; i < n && tsr_dec_error(&sub) == 0; i++) {
		struct tsr_mon_pg_temp_req *r = &a->pg_temp[i];
		r->pool = tsr_dec_i64(&sub);
		r->pg = tsr_dec_u32(&sub);
		uint32_t k = tsr_dec_u32(&sub);
		if (tsr_dec_error(&sub) == 0 && k > TSR_OSDMAP_MAX_SIZE)
			return tsr_errf(err, errlen, -EINVAL, "osd alive: PG temp %u "
					"has %u OSDs, more than %d", i, k,
					TSR_OSDMAP_MAX_SIZE);
		for (uint32_t j = 0; j < k; j++)
			r->osds[j] = tsr_dec_i32(&sub);
		r->n = k;
		a->npg_temp = i + 1;
	}
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d))
		return tsr_errf(err, errlen, -EBADMSG, "osd alive: truncated or "
				"malformed");
	if (a->osd < 0 || a->osd >= TSR_OSDMAP_MAX_OSDS)
		return tsr_errf(err, errlen, -EINVAL, "osd alive: OSD id %d is not in "
				"0..%d", a->osd, TSR_OSDMAP_MAX_OSDS - 1);
	if (a->up_from == 0 || (a->want_up_thru && a->want_up_thru < a->up_from))
		return tsr_errf(err, errlen, -EINVAL, "osd alive: up_thru %llu asked "
				"by the incarnation up from epoch %llu",
				(unsigned long long)a->want_up_thru,
				(unsigned long long)a->up_from);
	for (uint32_t i = 0; i < a->npg_temp; i++) {
		const struct tsr_mon_pg_temp_req *r = &a->pg_temp[i];
		if (r->pool <= 0 || r->pg >= TSR_OSDMAP_MAX_PG_NUM)
			return tsr_errf(err, errlen, -EINVAL, "osd alive: PG temp %u names "
					"PG %lld.%x, not a PG", i, (long long)r->pool,
					r->pg);
		for (uint32_t j = 0; j < r->n; j++) {
			if (r->osds[j] < 0 || r->osds[j] >= TSR_OSDMAP_MAX_OSDS)
				return tsr_errf(err, errlen, -EINVAL, "osd alive: PG "
						"temp of %lld.%x: %d is not an OSD id",
						(long long)r->pool, r->pg, r->osds[j]);
			for (uint32_t k = 0; k < j; k++)
				if (r->osds[k] == r->osds[j])
					return tsr_errf(err, errlen, -EINVAL, "osd alive: "
							"PG temp of %lld.%x names "
							"osd.%d twice", (long long)r->pool,
							r->pg, r->osds[j]);
		}
		for (uint32_t k = 0; k < i; k++)
			if (a->pg_temp[k].pool == r->pool && a->pg_temp[k].pg == r->pg)
				return tsr_errf(err, errlen, -EINVAL, "osd alive: PG "
						"%lld.%x asked for twice",
						(long long)r->pool, r->pg);
	}
	return 0;
}

char *
tsr_pg_state_str(uint32_t state, char *out, size_t len)
{
	static const char *const names[] = {
#define TSR_PG_STATE_NAME(name, n, label) [n] = label,
		TSR_PG_STATES(TSR_PG_STATE_NAME)
#undef TSR_PG_STATE_NAME
	};
	size_t at = 0;

	if (len == 0)
		return out;
	out[0] = '\0';
	for (unsigned b = 0; b < sizeof(names) / sizeof(names[0]); b++)
		if (state & (1u << b)) {
			int n = snprintf(out + at, len - at, "%s%s", at ? "+" : "", names[b]);
			if (n < 0 || (size_t)n >= len - at)
				break;
			at += (size_t)n;
		}
	if (at == 0)
		snprintf(out, len, "unknown");
	return out;
}

/* An inconsistent object's name, b[0..n): 1..TSR_PG_STAT_BAD_NAME - 1
 * printable ASCII bytes (no NUL); 0, or -EINVAL naming entry i, its PG
 * and the name's place j. */
static int
pg_bad_name_check(const struct tsr_mon_pg_stat *p, uint32_t i, uint32_t j, const char *b,
		  size_t n, char *err, size_t errlen)
{
	if (n == 0 || n >= TSR_PG_STAT_BAD_NAME)
		return tsr_errf(err, errlen, -EINVAL, "pg stats: entry %u: PG %lld.%x: the "
				"name of inconsistent object %u has %zu bytes, not 1..%d", i,
				(long long)p->pool, p->pg, j, n, TSR_PG_STAT_BAD_NAME - 1);
	for (size_t k = 0; k < n; k++)
		if (b[k] < 0x20 || b[k] > 0x7e)
			return tsr_errf(err, errlen, -EINVAL, "pg stats: entry %u: PG %lld.%x: "
					"the name of inconsistent object %u has byte 0x%02x at "
					"%zu, not printable ASCII", i, (long long)p->pool, p->pg,
					j, (unsigned)(unsigned char)b[k], k);
	return 0;
}

/* What a PG's scrub fields may hold (monmsg.h): 0, or -EINVAL with the
 * reason naming entry i and its PG. */
static int
pg_scrub_check(const struct tsr_mon_pg_stat *p, uint32_t i, char *err, size_t errlen)
{
	int rc;

	if (p->nbad > TSR_PG_STAT_MAX_BAD)
		return tsr_errf(err, errlen, -EINVAL, "pg stats: entry %u: PG %lld.%x names "
				"%u inconsistent objects, more than %d", i, (long long)p->pool,
				p->pg, p->nbad, TSR_PG_STAT_MAX_BAD);
	if (p->scrub_errors < p->nbad)
		return tsr_errf(err, errlen, -EINVAL, "pg stats: entry %u: PG %lld.%x names "
				"%u inconsistent objects but counts %u scrub errors", i,
				(long long)p->pool, p->pg, p->nbad, p->scrub_errors);
	for (uint32_t j = 0; j < p->nbad; j++)
		if ((rc = pg_bad_name_check(p, i, j, p->bad[j],
					    strnlen(p->bad[j], TSR_PG_STAT_BAD_NAME), err,
					    errlen)) < 0)
			return rc;
	return 0;
}

int
tsr_monmsg_pg_stats_encode(struct tsr_enc *e, const struct tsr_mon_pg_stats *s)
{
	size_t mark;

	if (s->n > TSR_MONMSG_MAX_PG_STATS)
		return -EINVAL;
	for (uint32_t i = 0; i < s->n; i++)
		if (pg_scrub_check(&s->pgs[i], i, NULL, 0) < 0)
			return -EINVAL;
	/* v2, compat 1: the scrub fields come as a section of their own
	 * after the v1 entries, which a v1 decoder skips (monmsg.h). */
	mark = tsr_enc_begin_struct(e, 2, 1);
	tsr_enc_u64(e, s->client);
	tsr_enc_u64(e, s->tid);
	tsr_enc_i32(e, s->osd);
	tsr_enc_u64(e, s->epoch);
	tsr_enc_u64(e, s->total);
	tsr_enc_u64(e, s->used);
	tsr_enc_u64(e, s->avail);
	tsr_enc_u64(e, s->objects);
	tsr_enc_u32(e, s->n);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct tsr_mon_pg_stat *p = &s->pgs[i];
		uint32_t k = p->nacting < TSR_OSDMAP_MAX_SIZE ? p->nacting : TSR_OSDMAP_MAX_SIZE;
		tsr_enc_i64(e, p->pool);
		tsr_enc_u32(e, p->pg);
		tsr_enc_u32(e, p->state & TSR_PG_ST_V1);
		tsr_enc_u64(e, p->epoch);
		tsr_enc_u64(e, p->les);
		tsr_enc_u64(e, p->lec);
		tsr_enc_u64(e, p->sis);
		tsr_enc_u64(e, p->lu_epoch);
		tsr_enc_u64(e, p->lu_ver);
		tsr_enc_u64(e, p->degraded);
		tsr_enc_u64(e, p->missing);
		tsr_enc_u32(e, k);
		for (uint32_t j = 0; j < k; j++)
			tsr_enc_i32(e, p->acting[j]);
	}
	for (uint32_t i = 0; i < s->n; i++) {
		const struct tsr_mon_pg_stat *p = &s->pgs[i];
		tsr_enc_u32(e, p->state & ~(uint32_t)TSR_PG_ST_V1);
		tsr_enc_u64(e, p->last_scrub);
		tsr_enc_u64(e, p->last_deep_scrub);
		tsr_enc_u32(e, p->scrub_errors);
		tsr_enc_u32(e, p->nbad);
		for (uint32_t j = 0; j < p->nbad; j++)
			tsr_enc_str(e, p->bad[j]);
	}
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

void
tsr_monmsg_pg_stats_free(struct tsr_mon_pg_stats *s)
{
	free(s->pgs);
	s->pgs = NULL;
	s->n = 0;
}

/* The bytes of one stat with no acting set: what n entries need at least. */
#define PG_STAT_MIN (8 + 4 + 4 + 8 * 8 + 4)

int
tsr_monmsg_pg_stats_decode(const void *buf, size_t len, struct tsr_mon_pg_stats *s,
			   char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;
	uint32_t n;
	int rc = 0;

	memset(s, 0, sizeof(*s));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 2, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "pg stats: bad envelope");
	s->client = tsr_dec_u64(&sub);
	s->tid = tsr_dec_u64(&sub);
	s->osd = tsr_dec_i32(&sub);
	s->epoch = tsr_dec_u64(&sub);
	s->total = tsr_dec_u64(&sub);
	s->used = tsr_dec_u64(&sub);
	s->avail = tsr_dec_u64(&sub);
	s->objects = tsr_dec_u64(&sub);
	n = tsr_dec_u32(&sub);
	if (tsr_dec_error(&sub))
		return tsr_errf(err, errlen, -EBADMSG, "pg stats: truncated");
	if (n > TSR_MONMSG_MAX_PG_STATS || (uint64_t)n * PG_STAT_MIN > tsr_dec_remaining(&sub))
		return tsr_errf(err, errlen, -EINVAL, "pg stats: %u PGs, more than %d or than "
				"the message holds", n, TSR_MONMSG_MAX_PG_STATS);
	if (n && (s->pgs = calloc(n, sizeof(*s->pgs))) == NULL)
		return tsr_errf(err, errlen, -ENOMEM, "pg stats: out of memory");
	for (uint32_t i = 0; i < n && tsr_dec_error(&sub) == 0; i++) {
		struct tsr_mon_pg_stat *p = &s->pgs[i];
		p->pool = tsr_dec_i64(&sub);
		p->pg = tsr_dec_u32(&sub);
		p->state = tsr_dec_u32(&sub);
		p->epoch = tsr_dec_u64(&sub);
		p->les = tsr_dec_u64(&sub);
		p->lec = tsr_dec_u64(&sub);
		p->sis = tsr_dec_u64(&sub);
		p->lu_epoch = tsr_dec_u64(&sub);
		p->lu_ver = tsr_dec_u64(&sub);
		p->degraded = tsr_dec_u64(&sub);
		p->missing = tsr_dec_u64(&sub);
		p->nacting = tsr_dec_u32(&sub);
		if (tsr_dec_error(&sub) == 0 && p->nacting > TSR_OSDMAP_MAX_SIZE) {
			rc = tsr_errf(err, errlen, -EINVAL, "pg stats: PG %u has %u OSDs "
				      "acting, more than %d", i, p->nacting, TSR_OSDMAP_MAX_SIZE);
			break;
		}
		for (uint32_t j = 0; j < p->nacting; j++) {
			p->acting[j] = tsr_dec_i32(&sub);
			if (p->acting[j] < 0 || p->acting[j] >= TSR_OSDMAP_MAX_OSDS)
				rc = tsr_errf(err, errlen, -EINVAL, "pg stats: PG %u names "
					      "OSD %d", i, p->acting[j]);
		}
		if (rc == 0 && (p->pool <= 0 || p->pg >= TSR_OSDMAP_MAX_PG_NUM ||
				(p->state & ~(uint32_t)TSR_PG_ST_V1)))
			rc = tsr_errf(err, errlen, -EINVAL, "pg stats: entry %u: PG %lld.%x, "
				      "state 0x%x: not a PG or not a state", i,
				      (long long)p->pool, p->pg, p->state);
		if (rc)
			break;
		s->n = i + 1;
	}
	/* v2: the scrub section, entry by entry as above (v1: all 0) */
	for (uint32_t i = 0; rc == 0 && ver >= 2 && i < s->n && tsr_dec_error(&sub) == 0;
	     i++) {
		struct tsr_mon_pg_stat *p = &s->pgs[i];
		uint32_t st2 = tsr_dec_u32(&sub);
		p->last_scrub = tsr_dec_u64(&sub);
		p->last_deep_scrub = tsr_dec_u64(&sub);
		p->scrub_errors = tsr_dec_u32(&sub);
		p->nbad = tsr_dec_u32(&sub);
		if (tsr_dec_error(&sub))
			break;
		if (st2 & (TSR_PG_ST_V1 | ~(uint32_t)TSR_PG_ST_ALL)) {
			rc = tsr_errf(err, errlen, -EINVAL, "pg stats: entry %u: PG %lld.%x, "
				      "v2 state 0x%x: not a state from scrubbing on", i,
				      (long long)p->pool, p->pg, st2);
			break;
		}
		p->state |= st2;
		if (p->nbad > TSR_PG_STAT_MAX_BAD) {
			rc = pg_scrub_check(p, i, err, errlen);
			break;
		}
		for (uint32_t j = 0; j < p->nbad && rc == 0; j++) {
			const void *b;
			size_t blen;
			/* any length the input holds: checked below, with a reason */
			tsr_dec_bytes(&sub, &b, &blen, SIZE_MAX);
			if (b == NULL)
				break;
			if ((rc = pg_bad_name_check(p, i, j, b, blen, err, errlen)) == 0)
				memcpy(p->bad[j], b, blen);
		}
		if (rc == 0 && tsr_dec_error(&sub) == 0)
			rc = pg_scrub_check(p, i, err, errlen);
	}
	if (rc == 0 && (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) ||
			s->n != n))
		rc = tsr_errf(err, errlen, -EBADMSG, "pg stats: truncated or malformed");
	if (rc == 0 && (s->used > s->total || s->avail > s->total))
		rc = tsr_errf(err, errlen, -EINVAL, "pg stats: a store of %llu bytes with "
			      "%llu used and %llu free", (unsigned long long)s->total,
			      (unsigned long long)s->used, (unsigned long long)s->avail);
	if (rc == 0 && (s->osd < 0 || s->osd >= TSR_OSDMAP_MAX_OSDS))
		rc = tsr_errf(err, errlen, -EINVAL, "pg stats: OSD id %d is not in 0..%d",
			      s->osd, TSR_OSDMAP_MAX_OSDS - 1);
	if (rc < 0)
		tsr_monmsg_pg_stats_free(s);
	return rc;
}

static int
check_pg_stats(const void *p, size_t n, size_t data_len, char *err, size_t errlen)
{
	struct tsr_mon_pg_stats a, b;
	struct tsr_enc e;
	int rc, same;

	(void)data_len;
	if ((rc = tsr_monmsg_pg_stats_decode(p, n, &a, err, errlen)) < 0)
		return rc;
	tsr_enc_init(&e);
	tsr_monmsg_pg_stats_encode(&e, &a);
	rc = tsr_monmsg_pg_stats_decode(e.buf, e.len, &b, err, errlen);
	tsr_enc_release(&e);
	same = rc == 0 && a.client == b.client && a.tid == b.tid && a.osd == b.osd &&
	       a.epoch == b.epoch && a.n == b.n && a.total == b.total && a.used == b.used &&
	       a.avail == b.avail && a.objects == b.objects &&
	       (a.n == 0 || memcmp(a.pgs, b.pgs, a.n * sizeof(*a.pgs)) == 0);
	tsr_monmsg_pg_stats_free(&a);
	if (rc == 0)
		tsr_monmsg_pg_stats_free(&b);
	return same ? 0 : tsr_errf(err, errlen, -EPROTO, "pg stats: the round trip differs");
}

CHECK_FLAT(osd_boot, tsr_mon_osd_boot)
CHECK_FLAT(osd_alive, tsr_mon_osd_alive)
CHECK_FLAT(osd_beacon, tsr_mon_osd_beacon)
CHECK_FLAT(mds_beacon, tsr_mon_mds_beacon)
CHECK_FLAT(svc_keys, tsr_mon_svc_keys)

static const struct tsr_monmsg_type types[] = {
#define TSR_MON_MSG_ROW(name, n, label, fn) { TSR_MSG_MON_##name, label, check_##fn },
	TSR_MON_MESSAGES(TSR_MON_MSG_ROW)
#undef TSR_MON_MSG_ROW
};

const struct tsr_monmsg_type *
tsr_monmsg_type_at(size_t i)
{
	return i < sizeof(types) / sizeof(types[0]) ? &types[i] : NULL;
}

const struct tsr_monmsg_type *
tsr_monmsg_type(uint32_t type)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == type)
			return &types[i];
	return NULL;
}
