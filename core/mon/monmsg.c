/* monmsg.c — encodings of the monitor messages (monmsg.h). */
#include "mon/monmsg.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int
tsr_monmsg_raft_encode(struct tsr_enc *e, uint32_t fp, uint64_t features,
		       const struct tsr_raft_msg *m)
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
	tsr_enc_u64(e, features);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_monmsg_raft_decode(const void *buf, size_t len, uint32_t *fp,
		       uint64_t *features, struct tsr_raft_msg *m, char *err,
		       size_t errlen)
{
	struct tsr_dec d, sub;
	struct tsr_raft_entry *ents = NULL;
	uint8_t ver;
	uint32_t n;

	memset(m, 0, sizeof(*m));
	if (features)
		*features = 0;
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
	uint64_t feat = ver >= 2 ? tsr_dec_u64(&sub) : 0;
	if (tsr_dec_end_struct(&d, &sub) < 0) {
		free(ents);
		return tsr_errf(err, errlen, -EBADMSG, "raft message: truncated or "
				"malformed");
	}
	m->entries = ents;
	m->nentries = n;
	if (features)
		*features = feat;
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
