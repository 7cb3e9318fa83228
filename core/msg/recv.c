/* recv.c — reading frames off a socket, and what each frame does. */
#include "msg/msgr_int.h"
#include "util/util.h"

#include <tessera/crc32c.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* ---- Reading frames -------------------------------------------------------*/

static uint64_t
get_le64(const uint8_t *p)
{
	return (uint64_t)tsr_frame_footer_get(p) |
	       (uint64_t)tsr_frame_footer_get(p + 4) << 32;
}

/* A whole frame is in c->rmsg / c->rh (worker, lock held). */
static void
frame_done(struct tsr_conn *c, struct after *a)
{
	struct tsr_msgr *m = c->m;
	struct tsr_frame_hdr h = c->rh;
	struct tsr_msg *x = c->rmsg;
	uint32_t crc;

	c->rmsg = NULL;
	c->have_hdr = 0;
	c->rgot = 0;
	c->rx_user = NULL; /* complete: nothing more is written into it */
	crc = tsr_crc32c(0, x->front, x->front_len);
	if (c->rzdata)
		crc = tsr_crc32c(crc, c->rzdata, h.data_len);
	else if (x->data_len)
		crc = tsr_crc32c(crc, x->data_iov[0].iov_base, x->data_len);
	if (crc != tsr_frame_footer_get(c->rfooter)) {
		tsr_msg_free(x, 0);
		pthread_mutex_lock(&m->lock);
		m->st.bad_frames++;
		pthread_mutex_unlock(&m->lock);
		msgr_conn_fault(c, -EBADMSG, "bad frame from peer: payload checksum "
			   "mismatch (type %u, %u + %u bytes)", h.type,
			   h.front_len, h.data_len);
		return;
	}
	if (c->rzdata) {
		size_t n = ZSTD_decompressDCtx(m->dctx[c->w->idx],
					       x->data_iov[0].iov_base, x->data_len,
					       c->rzdata, h.data_len);
		free(c->rzdata);
		c->rzdata = NULL;
		if (ZSTD_isError(n) || n != x->data_len) {
			tsr_msg_free(x, 0);
			msgr_conn_fault(c, -EBADMSG, "bad frame from peer: compressed "
				   "data does not decompress to its stated length");
			return;
		}
	}
	c->last_rx = tsr_mono_ns();
	pthread_mutex_lock(&m->lock);
	m->st.bytes_received += TSR_FRAME_HDR + h.front_len + h.data_len + 4;
	pthread_mutex_unlock(&m->lock);
	if (c->state == C_OPEN)
		msgr_conn_acked(c, h.ack);

	switch (h.type) {
	case TSR_MSG_HELLO: {
		struct tsr_hello hello;
		const char *why;

		if (c->state != C_HELLO) {
			tsr_msg_free(x, 0);
			msgr_conn_fault(c, -EPROTO, "protocol error: hello on an open "
				   "connection");
			return;
		}
		if (tsr_hello_decode(x->front, x->front_len, &hello, &why) < 0) {
			tsr_msg_free(x, 0);
			if (c->connector)
				msgr_conn_fault(c, -EPROTO, "bad hello: %s", why);
			else
				msgr_conn_refuse(c, why);
			return;
		}
		tsr_msg_free(x, 0);
		if (c->connector) {
			a->reset_ev = msgr_connector_hello(c, &hello);
			msgr_conn_flush(c);
		} else {
			/* a connector's hello carries no proof: only ours,
			 * once its proof is checked, sets has_proof */
			hello.has_proof = 0;
			if (c->m->o.auth)
				msgr_acceptor_challenge(c, &hello);
			else
				msgr_acceptor_open(c, &hello, a);
		}
		return;
	}
	case TSR_MSG_CHALLENGE:
		msgr_connector_prove(c, x);
		tsr_msg_free(x, 0);
		return;
	case TSR_MSG_AUTH:
		msgr_acceptor_check(c, x, a);
		tsr_msg_free(x, 0);
		return;
	case TSR_MSG_REFUSE: {
		/* the peer's own words, perhaps an impostor's: quoted, cut
		 * short, printable only, and at a rate */
		char why[97];
		size_t n = x->front_len < sizeof(why) - 1 ? x->front_len : sizeof(why) - 1;
		int auth = c->auth_state == AS_PROVED;

		for (size_t i = 0; i < n; i++)
			why[i] = x->front[i] >= 0x20 && x->front[i] < 0x7f &&
				 x->front[i] != '"' ? (char)x->front[i] : '?';
		why[n] = '\0';
		tsr_log_rated(&msgr_own_lines, TSR_SUB_MSG, TSR_LOG_WARN,
			      "%s: the peer refused us%s: \"%s%s\"", c->name,
			      auth ? " after our proof" : "", why,
			      x->front_len > n ? "..." : "");
		tsr_msg_free(x, 0);
		msgr_conn_end(c, auth ? -EACCES : -ECONNREFUSED);
		return;
	}
	case TSR_MSG_ACK:
	case TSR_MSG_KEEPALIVE_ACK:
		tsr_msg_free(x, 0);
		return;
	case TSR_MSG_KEEPALIVE:
		c->want_keepalive_ack = 1;
		c->ka_stamp = x->front_len == 8 ? get_le64(x->front) : 0;
		tsr_msg_free(x, 0);
		return;
	}
	if (h.type < TSR_MSG_USER || c->state != C_OPEN) {
		tsr_msg_free(x, 0);
		msgr_conn_fault(c, -EPROTO, "protocol error: message type %u %s", h.type,
			   h.type < TSR_MSG_USER ? "is not a known control type"
						 : "before the handshake");
		return;
	}
	if (h.seq <= c->in_seq) {
		tsr_msg_free(x, 0);
		pthread_mutex_lock(&m->lock);
		m->st.duplicates_dropped++;
		pthread_mutex_unlock(&m->lock);
		return;
	}
	if (h.seq != c->in_seq + 1) {
		tsr_msg_free(x, 0);
		msgr_conn_fault(c, -EPROTO, "protocol error: message %" PRIu64 " after %"
			   PRIu64 " (a gap)", h.seq, c->in_seq);
		return;
	}
	c->in_seq = h.seq;
	c->rx_unacked += x->front_len + x->data_len;
	c->rx_unacked_msgs++;
	x->seq = h.seq;
	pthread_mutex_lock(&m->lock);
	m->st.msgs_received++;
	pthread_mutex_unlock(&m->lock);
	struct handler hd = msgr_handler_for(c, x->type);
	if (hd.fn && !m->o.inject_delay_ms &&
	    ((hd.flags & TSR_MSGR_INLINE) ||
	     ((hd.flags & TSR_MSGR_INLINE_SMALL) && x->data_len <= TSR_MSGR_INLINE_SMALL_MAX))) {
		x->next = NULL;
		if (a->inl_tail)
			a->inl_tail->next = x;
		else
			a->inl_head = x;
		a->inl_tail = x;
	} else {
		msgr_dispatch_queue(c, x);
	}
}

/* A header was decoded into c->rh: set up the body's buffers (worker,
 * lock held).  0, or a fault was raised. */
static int
body_start(struct tsr_conn *c)
{
	struct tsr_msg *x = calloc(1, sizeof(*x));
	const struct tsr_frame_hdr *h = &c->rh;

	if (x == NULL)
		goto nomem;
	x->type = h->type;
	x->front_len = h->front_len;
	if (h->front_len && (x->front = malloc(h->front_len)) == NULL)
		goto nomem;
	if (h->data_raw_len && c->m->rx_tag && h->front_len &&
	    !(h->flags & TSR_FRAME_F_ZSTD) && c->state == C_OPEN) {
		c->rdata_pending = 1; /* rx_data_start, once the front is in */
	} else if (h->data_raw_len) {
		size_t cap;
		void *d = msgr_buf_get(h->data_raw_len, &cap);
		if (d == NULL)
			goto nomem;
		tsr_msg_give_data(x, d, h->data_raw_len, cap);
	}
	if ((h->flags & TSR_FRAME_F_ZSTD) && (c->rzdata = malloc(h->data_len)) == NULL)
		goto nomem;
	c->rmsg = x;
	c->rgot = 0;
	return 0;
nomem:
	tsr_msg_free(x, 0);
	msgr_conn_fault(c, -ENOMEM, "out of memory for a %u + %u byte message",
		   h->front_len, h->data_len);
	return -ENOMEM;
}

/* Is the front in, with the data's buffer still to choose? */
static int
rx_data_due(const struct tsr_conn *c)
{
	return c->rdata_pending && c->rgot == c->rh.front_len;
}

/* The front is in: the data goes into a buffer posted under the frame's
 * tag, or one of ours (worker, lock held).  0, or a fault was raised. */
static int
rx_data_start(struct tsr_conn *c)
{
	struct tsr_msg *x = c->rmsg;
	size_t len = c->rh.data_raw_len, cap;
	uint64_t tag = c->m->rx_tag(x->type, x->front, x->front_len);
	void *d;

	c->rdata_pending = 0;
	for (size_t i = 0; tag && i < c->nrxp; i++)
		if (c->rxp[i].tag == tag && c->rxp[i].cap >= len) {
			x->one = (struct iovec){ c->rxp[i].buf, len };
			x->data_iov = &x->one;
			x->data_iovcnt = 1;
			x->data_len = len;
			c->rx_user = c->rxp[i].buf;
			c->rx_user_tag = tag;
			c->rxp[i] = c->rxp[--c->nrxp]; /* used once */
			return 0;
		}
	if ((d = msgr_buf_get(len, &cap)) == NULL) {
		msgr_conn_fault(c, -ENOMEM, "out of memory for a %u + %u byte message",
				c->rh.front_len, c->rh.data_len);
		return -ENOMEM;
	}
	tsr_msg_give_data(x, d, len, cap);
	return 0;
}

/* The body's iovecs from byte rgot on (only the front's while the data's
 * buffer waits for it). */
static int
body_iov(struct tsr_conn *c, struct iovec *iov)
{
	struct tsr_msg *x = c->rmsg;
	struct iovec seg[3];
	size_t off = c->rgot;
	int n = 0, out = 0;

	seg[n++] = (struct iovec){ x->front, x->front_len };
	if (c->rdata_pending)
		; /* the front alone */
	else if (c->rzdata)
		seg[n++] = (struct iovec){ c->rzdata, c->rh.data_len };
	else
		seg[n++] = (struct iovec){ x->data_len ? x->data_iov[0].iov_base : NULL,
					   x->data_len };
	if (!c->rdata_pending)
		seg[n++] = (struct iovec){ c->rfooter, TSR_FRAME_FOOTER };
	for (int i = 0; i < n; i++) {
		if (off >= seg[i].iov_len) {
			off -= seg[i].iov_len;
			continue;
		}
		iov[out].iov_base = (uint8_t *)seg[i].iov_base + off;
		iov[out].iov_len = seg[i].iov_len - off;
		off = 0;
		out++;
	}
	return out;
}

static size_t
body_len(const struct tsr_conn *c)
{
	return (size_t)c->rh.front_len + c->rh.data_len + TSR_FRAME_FOOTER;
}

/* Take bytes of the body from the staging buffer. */
static void
body_take(struct tsr_conn *c, size_t *pos)
{
	struct iovec iov[3];
	int n = body_iov(c, iov);
	size_t avail = c->rlen - *pos;

	for (int i = 0; i < n && avail; i++) {
		size_t k = iov[i].iov_len < avail ? iov[i].iov_len : avail;
		memcpy(iov[i].iov_base, c->rbuf + *pos, k);
		*pos += k;
		avail -= k;
		c->rgot += k;
	}
}

/* Parse what the staging buffer holds (worker, lock held). */
static void
parse_staged(struct tsr_conn *c, struct after *a)
{
	size_t pos = 0;

	while (c->fd >= 0 && c->state != C_CLOSED) {
		if (c->rmsg == NULL) {
			const char *why;

			if (c->rlen - pos < TSR_FRAME_HDR)
				break;
			/* before the session opens, only what a handshake
			 * needs: an unknown peer pins no memory */
			int open = c->state == C_OPEN;
			if (tsr_frame_hdr_decode(c->rbuf + pos,
						 open ? c->m->o.max_front : TSR_FRAME_HANDSHAKE_MAX,
						 open ? c->m->o.max_data : 0, &c->rh, &why) < 0) {
				pthread_mutex_lock(&c->m->lock);
				c->m->st.bad_frames++;
				pthread_mutex_unlock(&c->m->lock);
				msgr_conn_fault(c, -EBADMSG, "bad frame from peer: %s", why);
				return;
			}
			pos += TSR_FRAME_HDR;
			if (body_start(c) < 0)
				return;
		}
		body_take(c, &pos);
		if (rx_data_due(c)) {
			if (rx_data_start(c) < 0)
				return;
			body_take(c, &pos);
		}
		if (c->rgot < body_len(c))
			break;
		frame_done(c, a);
		if (a->moved_to)
			return;
	}
	if (c->fd < 0)
		return;
	memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
	c->rlen -= pos;
}

/* Read what the socket has (worker, lock held). */
void
msgr_conn_read(struct tsr_conn *c, struct after *a)
{
	if (c->rx_abandon) {
		msgr_conn_fault(c, -ENOMEM, "out of memory moving a message off a "
				"revoked buffer");
		return;
	}
	for (int round = 0; round < 32 && c->fd >= 0 && !c->read_paused &&
			    c->state != C_CLOSED && a->moved_to == NULL; round++) {
		ssize_t r;

		if (c->rmsg != NULL && c->rlen == 0 &&
		    body_len(c) - c->rgot >= RBUF_SIZE / 2) {
			/* a large body: straight into its buffers */
			struct iovec iov[3];
			int n = body_iov(c, iov);
			size_t want = 0;
			for (int i = 0; i < n; i++)
				want += iov[i].iov_len;
			r = readv(c->fd, iov, n);
			if (r > 0) {
				c->rgot += (size_t)r;
				if (rx_data_due(c) && rx_data_start(c) < 0)
					return;
				if (c->rgot == body_len(c))
					frame_done(c, a);
				if ((size_t)r < want)
					return; /* drained (see below) */
				continue;
			}
		} else {
			size_t want = RBUF_SIZE - c->rlen;
			r = read(c->fd, c->rbuf + c->rlen, want);
			if (r > 0) {
				c->rlen += (size_t)r;
				parse_staged(c, a);
				/* a short read took all the socket had: the loop
				 * watches the socket level-triggered and calls again
				 * when more comes, so no read is spent on EAGAIN */
				if ((size_t)r < want)
					return;
				continue;
			}
		}
		if (r == 0) {
			msgr_conn_fault(c, -ECONNRESET, "connection closed by the peer");
			return;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		if (errno == EINTR)
			continue;
		msgr_conn_fault(c, -errno, "read: %s", strerror(errno));
		return;
	}
}

