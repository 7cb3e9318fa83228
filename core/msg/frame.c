/* frame.c — encoding and checking frame headers and handshakes. */
#include "msg/frame.h"
#include "auth/auth.h"

#include <tessera/crc32c.h>

#include <errno.h>
#include <string.h>

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t
get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void
tsr_frame_footer_put(uint8_t out[TSR_FRAME_FOOTER], uint32_t crc)
{
	put32(out, crc);
}

uint32_t
tsr_frame_footer_get(const uint8_t in[TSR_FRAME_FOOTER])
{
	return get32(in);
}

void
tsr_frame_hdr_encode(const struct tsr_frame_hdr *h, uint8_t out[TSR_FRAME_HDR])
{
	memcpy(out, TSR_FRAME_MAGIC, 4);
	put16(out + 4, h->version);
	put16(out + 6, h->flags);
	put32(out + 8, h->type);
	put32(out + 12, h->front_len);
	put32(out + 16, h->data_len);
	put32(out + 20, h->data_raw_len);
	put64(out + 24, h->seq);
	put64(out + 32, h->ack);
	put32(out + 40, 0);
	put32(out + 44, tsr_crc32c(0, out, 44));
}

int
tsr_frame_hdr_decode(const uint8_t in[TSR_FRAME_HDR], uint32_t max_front,
		     uint32_t max_data, struct tsr_frame_hdr *h, const char **why)
{
	const char *w = NULL;

	memset(h, 0, sizeof(*h));
	/* the magic first: a peer speaking another protocol (or plain text)
	 * is named as such, not as a checksum error */
	if (memcmp(in, TSR_FRAME_MAGIC, 4) != 0)
		w = "bad magic (not a Tessera peer)";
	else if (get32(in + 44) != tsr_crc32c(0, in, 44))
		w = "header checksum mismatch";
	else if (get16(in + 4) != TSR_FRAME_VERSION)
		w = "unsupported frame version";
	else if (get16(in + 6) & ~TSR_FRAME_F_KNOWN)
		w = "unknown frame flags";
	else if (get32(in + 40) != 0)
		w = "reserved header word not zero";
	if (w == NULL) {
		h->version = get16(in + 4);
		h->flags = get16(in + 6);
		h->type = get32(in + 8);
		h->front_len = get32(in + 12);
		h->data_len = get32(in + 16);
		h->data_raw_len = get32(in + 20);
		h->seq = get64(in + 24);
		h->ack = get64(in + 32);
		if (h->front_len > max_front)
			w = "message front longer than the maximum";
		else if (h->data_len > max_data || h->data_raw_len > max_data)
			w = "message data longer than the maximum";
		else if (!(h->flags & TSR_FRAME_F_ZSTD) &&
			 h->data_raw_len != h->data_len)
			w = "data lengths disagree on an uncompressed frame";
		else if ((h->flags & TSR_FRAME_F_ZSTD) && h->data_len == 0)
			w = "compressed frame without data";
		else if (h->type == 0)
			w = "message type 0";
		else if (h->type < TSR_MSG_USER && h->seq != 0)
			w = "control frame with a sequence number";
		else if (h->type >= TSR_MSG_USER && h->seq == 0)
			w = "message without a sequence number";
	}
	if (why)
		*why = w;
	if (w != NULL) {
		memset(h, 0, sizeof(*h));
		return -EBADMSG;
	}
	return 0;
}

/* ---- The handshake ---------------------------------------------------------*/

#define HELLO_VERSION 2

void
tsr_hello_encode(const struct tsr_hello *h, struct tsr_enc *e)
{
	size_t m = tsr_enc_begin_struct(e, HELLO_VERSION, 1);

	tsr_enc_raw(e, h->fsid, sizeof(h->fsid));
	tsr_enc_u8(e, h->entity_type);
	tsr_enc_u64(e, h->entity_id);
	tsr_enc_u64(e, h->nonce);
	tsr_enc_u16(e, h->proto_min);
	tsr_enc_u16(e, h->proto_max);
	tsr_enc_u64(e, h->features);
	tsr_enc_u8(e, h->lossless);
	tsr_enc_u64(e, h->session);
	tsr_enc_u64(e, h->in_seq);
	tsr_enc_str(e, h->addr);
	/* version 2 */
	tsr_enc_str(e, h->auth_name);
	tsr_enc_str(e, h->auth_target);
	tsr_enc_raw(e, h->auth_nonce, sizeof(h->auth_nonce));
	tsr_enc_u8(e, h->has_proof);
	tsr_enc_raw(e, h->auth_proof, sizeof(h->auth_proof));
	tsr_enc_end_struct(e, m);
}

int
tsr_hello_decode(const void *buf, size_t len, struct tsr_hello *h,
		 const char **why)
{
	struct tsr_dec d, sub;
	uint8_t v;
	const char *w = NULL;

	memset(h, 0, sizeof(*h));
	tsr_dec_init(&d, buf, len);
	if (tsr_dec_begin_struct(&d, HELLO_VERSION, &v, &sub) < 0) {
		w = tsr_dec_error(&d) == -EOPNOTSUPP ? "hello from a newer, "
			"incompatible protocol" : "malformed hello";
	} else {
		tsr_dec_raw(&sub, h->fsid, sizeof(h->fsid));
		h->entity_type = tsr_dec_u8(&sub);
		h->entity_id = tsr_dec_u64(&sub);
		h->nonce = tsr_dec_u64(&sub);
		h->proto_min = tsr_dec_u16(&sub);
		h->proto_max = tsr_dec_u16(&sub);
		h->features = tsr_dec_u64(&sub);
		h->lossless = tsr_dec_u8(&sub);
		h->session = tsr_dec_u64(&sub);
		h->in_seq = tsr_dec_u64(&sub);
		tsr_dec_str(&sub, h->addr, sizeof(h->addr));
		if (v >= 2) {
			tsr_dec_str(&sub, h->auth_name, sizeof(h->auth_name));
			tsr_dec_str(&sub, h->auth_target, sizeof(h->auth_target));
			tsr_dec_raw(&sub, h->auth_nonce, sizeof(h->auth_nonce));
			h->has_proof = tsr_dec_u8(&sub);
			tsr_dec_raw(&sub, h->auth_proof, sizeof(h->auth_proof));
		}
		if (tsr_dec_end_struct(&d, &sub) < 0)
			w = "malformed hello";
		else if (tsr_dec_remaining(&d) != 0)
			w = "bytes after the hello";
		else if (tsr_entity_type_name(h->entity_type) == NULL)
			w = "unknown entity type";
		else if (h->proto_min == 0 || h->proto_min > h->proto_max)
			w = "empty protocol version range";
		else if (h->lossless > 1)
			w = "bad policy";
		else if (h->has_proof > 1)
			w = "bad proof flag";
		else if ((h->auth_name[0] && !tsr_auth_name_valid(h->auth_name, NULL)) ||
			 (h->auth_target[0] && !tsr_auth_name_valid(h->auth_target, NULL)))
			w = "malformed entity name";
	}
	if (why)
		*why = w;
	if (w != NULL) {
		memset(h, 0, sizeof(*h));
		return -EBADMSG;
	}
	return 0;
}

const char *
tsr_entity_type_name(unsigned type)
{
	switch (type) {
#define X(up, low, val) case val: return #low;
		TSR_ENTITY_MAP(X)
#undef X
	}
	return NULL;
}

const char *
tsr_msg_control_name(unsigned type)
{
	switch (type) {
#define X(up, low, val) case val: return #low;
		TSR_MSG_CONTROL_MAP(X)
#undef X
	}
	return NULL;
}
