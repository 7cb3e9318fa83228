/* osdmsg.c — encodings of the OSD messages (osdmsg.h). */
#include "osd/osdmsg.h"
#include "map/osdmap.h"
#include "osd/objop.h"
#include "osd/pgsm.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int
tsr_osdmsg_ping_encode(struct tsr_enc *e, const struct tsr_osd_ping *p)
{
	size_t mark = tsr_enc_begin_struct(e, 1, 1);

	tsr_enc_i32(e, p->from);
	tsr_enc_u64(e, p->epoch);
	tsr_enc_u64(e, p->stamp);
	tsr_enc_end_struct(e, mark);
	return tsr_enc_error(e);
}

int
tsr_osdmsg_ping_decode(const void *buf, size_t len, struct tsr_osd_ping *p,
		       char *err, size_t errlen)
{
	struct tsr_dec d, sub;
	uint8_t ver;

	memset(p, 0, sizeof(*p));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, 1, &ver, &sub) < 0)
		return tsr_errf(err, errlen, -EBADMSG, "ping: bad envelope");
	p->from = tsr_dec_i32(&sub);
	p->epoch = tsr_dec_u64(&sub);
	p->stamp = tsr_dec_u64(&sub);
	if (tsr_dec_end_struct(&d, &sub) < 0 || tsr_dec_remaining(&d) != 0)
		return tsr_errf(err, errlen, -EBADMSG, "ping: truncated or trailing "
				"bytes");
	if (p->from < 0 || p->from >= TSR_OSDMAP_MAX_OSDS)
		return tsr_errf(err, errlen, -EBADMSG, "ping: from osd.%d, out of range",
				p->from);
	return 0;
}

const char *
tsr_osdmsg_name(uint32_t type)
{
	switch (type) {
#define NAME(name, n, label, fn) case TSR_MSG_OSD_##name: return label;
	TSR_OSD_MESSAGES(NAME)
#undef NAME
	default: return NULL;
	}
}

/* Decode, encode, decode again, compare (per encoding). */
#define ROUND_TRIP(fn, type_)                                                  \
	static int                                                             \
	check_##fn##_##type_(const void *buf, size_t len, char *err, size_t errlen) \
	{                                                                      \
		struct tsr_osd_##fn a, b;                                      \
		struct tsr_enc e;                                              \
		int rc;                                                        \
		if (tsr_osdmsg_##fn##_decode(buf, len, &a, err, errlen) < 0)   \
			return -EBADMSG;                                       \
		tsr_enc_init(&e);                                              \
		rc = tsr_osdmsg_##fn##_encode(&e, &a) < 0 ||                   \
		     tsr_osdmsg_##fn##_decode(e.buf, e.len, &b, err, errlen) < 0 || \
		     memcmp(&a, &b, sizeof(a)) != 0 ? -EPROTO : 0;             \
		tsr_enc_release(&e);                                           \
		return rc;                                                     \
	}
ROUND_TRIP(ping, any)

/* a PG message: its own codec's check (pgmsg.c) */
static int
check_pg_any(const void *buf, size_t len, char *err, size_t errlen)
{
	char why[256] = "";
	int rc = tsr_pgmsg_check(buf, len, why, sizeof(why));

	if (rc < 0 && err && errlen)
		snprintf(err, errlen, "%s", why);
	return rc;
}

/* a client's operation and its reply: buf is a u32 (little-endian) front
 * length, the front, then the data (objop.c's checks) */
static int
check_objop_any(const void *buf, size_t len, char *err, size_t errlen)
{
	return tsr_objop_check(buf, len, err, errlen);
}

static int
check_objop_reply_any(const void *buf, size_t len, char *err, size_t errlen)
{
	return tsr_objop_reply_check(buf, len, err, errlen);
}

int
tsr_osdmsg_check(uint32_t type, const void *buf, size_t len, char *err,
		 size_t errlen)
{
	switch (type) {
#define CHECK(name, n, label, fn) case TSR_MSG_OSD_##name: \
		return check_##fn##_any(buf, len, err, errlen);
	TSR_OSD_MESSAGES(CHECK)
#undef CHECK
	default: return -ENOENT;
	}
}
