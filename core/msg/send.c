/* send.c — sending: framing, compression, writes and acknowledgements. */
#include "msg/msgr_int.h"
#include "event/loop.h"
#include "util/util.h"

#include <tessera/crc32c.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

/* ---- Sending ----------------------------------------------------------------*/

/* writev that never raises SIGPIPE: a peer that went away is an error
 * return, not the death of the daemon. */
static ssize_t
send_iov(int fd, struct iovec *iov, int n)
{
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };

	return sendmsg(fd, &mh, MSG_NOSIGNAL);
}

static void
frame_ctl(uint8_t *out, uint32_t type, size_t front_len, uint64_t ack)
{
	struct tsr_frame_hdr h = { .version = TSR_FRAME_VERSION, .type = type,
				   .front_len = (uint32_t)front_len, .ack = ack };
	tsr_frame_hdr_encode(&h, out);
}

/* Append a control frame with front to the handshake bytes (lock held). */
int
msgr_ctl_append(struct tsr_conn *c, uint32_t type, const void *front, size_t len)
{
	uint8_t foot[4];
	uint32_t crc = tsr_crc32c(0, front, len);

	if (c->ctl_len + TSR_FRAME_HDR + len + 4 > CTL_MAX)
		return -ENOSPC;
	frame_ctl(c->ctl + c->ctl_len, type, len, c->in_seq);
	memcpy(c->ctl + c->ctl_len + TSR_FRAME_HDR, front, len);
	tsr_frame_footer_put(foot, crc);
	memcpy(c->ctl + c->ctl_len + TSR_FRAME_HDR + len, foot, 4);
	c->ctl_len += TSR_FRAME_HDR + len + 4;
	return 0;
}

/* Whoever writes a message compresses it (a sender's thread or a
 * worker), each thread with its own context, freed when the thread ends. */
static pthread_key_t cctx_key;
static pthread_once_t cctx_once = PTHREAD_ONCE_INIT;

static void
cctx_free(void *p)
{
	ZSTD_freeCCtx(p);
}

static void
cctx_key_init(void)
{
	pthread_key_create(&cctx_key, cctx_free);
}

static ZSTD_CCtx *
thread_cctx(void)
{
	ZSTD_CCtx *z;

	pthread_once(&cctx_once, cctx_key_init);
	z = pthread_getspecific(cctx_key);
	if (z == NULL && (z = ZSTD_createCCtx()) != NULL &&
	    pthread_setspecific(cctx_key, z) != 0) {
		ZSTD_freeCCtx(z);
		z = NULL;
	}
	return z;
}

/* Header, footer and (maybe) compressed data of a message about to be
 * written (lock held). */
static void
msg_prepare(struct tsr_conn *c, struct tsr_msg *x)
{
	struct tsr_frame_hdr h = { .version = TSR_FRAME_VERSION, .type = x->type,
				   .front_len = (uint32_t)x->front_len,
				   .seq = x->seq, .ack = c->in_seq };
	struct tsr_msgr *m = c->m;

	if (!x->crc_done) {
		ZSTD_CCtx *cctx;
		if (m->o.compress_min && x->data_len >= m->o.compress_min &&
		    (c->peer_features & TSR_FEATURE_ZSTD) && x->zdata == NULL &&
		    (cctx = thread_cctx()) != NULL) {
			size_t cap = ZSTD_compressBound(x->data_len);
			uint8_t *z = malloc(cap), *flat = NULL;
			const void *src = x->data_iovcnt == 1 ? x->data_iov[0].iov_base : NULL;

			if (z && src == NULL && (flat = malloc(x->data_len)) != NULL) {
				size_t o = 0;
				for (int i = 0; i < x->data_iovcnt; i++) {
					memcpy(flat + o, x->data_iov[i].iov_base,
					       x->data_iov[i].iov_len);
					o += x->data_iov[i].iov_len;
				}
				src = flat;
			}
			if (z && src) {
				size_t n = ZSTD_compressCCtx(cctx, z, cap, src,
							     x->data_len, m->o.compress_level);
				if (!ZSTD_isError(n) && n < x->data_len) {
					x->zdata = z;
					x->zlen = n;
					z = NULL;
				}
			}
			free(z);
			free(flat);
		}
		uint32_t crc = tsr_crc32c(0, x->front, x->front_len);
		if (x->zdata)
			crc = tsr_crc32c(crc, x->zdata, x->zlen);
		else if (x->data_crc_known)
			crc = tsr_crc32c_combine(crc, x->data_crc, x->data_len);
		else
			for (int i = 0; i < x->data_iovcnt; i++)
				crc = tsr_crc32c(crc, x->data_iov[i].iov_base,
						 x->data_iov[i].iov_len);
		tsr_frame_footer_put(x->footer, crc);
		x->crc = crc;
		x->crc_done = 1;
		if (x->zdata) {
			/* the compressed copy is what gets (re)sent: the
			 * caller's buffers can go back now */
			size_t raw = x->data_len;
			msgr_msg_release(x, 0);
			x->data_len = raw;
		}
	}
	if (x->zdata) {
		h.flags = TSR_FRAME_F_ZSTD;
		h.data_len = (uint32_t)x->zlen;
	} else {
		h.data_len = (uint32_t)x->data_len;
	}
	h.data_raw_len = (uint32_t)x->data_len;
	tsr_frame_hdr_encode(&h, x->hdr);
	if (c->in_seq > c->ack_sent)
		msgr_conn_ack_sent(c);
}

static size_t
msg_wire_len(const struct tsr_msg *x)
{
	return TSR_FRAME_HDR + x->front_len + (x->zdata ? x->zlen : x->data_len) +
	       TSR_FRAME_FOOTER;
}

/* The iovecs of x from byte off on. */
static int
msg_iov(struct tsr_msg *x, size_t off, struct iovec *iov, int max)
{
	struct iovec seg[3 + IOV_BATCH];
	int n = 0, out = 0;

	seg[n++] = (struct iovec){ x->hdr, TSR_FRAME_HDR };
	if (x->front_len)
		seg[n++] = (struct iovec){ x->front, x->front_len };
	if (x->zdata)
		seg[n++] = (struct iovec){ x->zdata, x->zlen };
	else
		for (int i = 0; i < x->data_iovcnt && n < IOV_BATCH; i++)
			if (x->data_iov[i].iov_len)
				seg[n++] = x->data_iov[i];
	seg[n++] = (struct iovec){ x->footer, TSR_FRAME_FOOTER };
	for (int i = 0; i < n && out < max; i++) {
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

/* A message was written whole (lock held). */
static void
msg_sent(struct tsr_conn *c, struct tsr_msg *x)
{
	struct tsr_msgr *m = c->m;
	int drop = 0;

	c->out_next = x->next;
	c->out_off = 0;
	if (x->seq > c->sent_seq)
		c->sent_seq = x->seq;
	pthread_mutex_lock(&m->lock);
	m->st.msgs_sent++;
	m->st.bytes_sent += msg_wire_len(x);
	/* a random 1 in N, so cuts land at every point of the protocol
	 * (mid-handshake, mid-batch, right after an ack) */
	m->drop_rng ^= m->drop_rng << 13;
	m->drop_rng ^= m->drop_rng >> 7;
	m->drop_rng ^= m->drop_rng << 17;
	m->frames_sent++;
	if (m->o.inject_drop_every && m->drop_rng % m->o.inject_drop_every == 0)
		drop = 1;
	pthread_mutex_unlock(&m->lock);
	if (!c->lossless) {
		/* lossy: written is done; it is always the head */
		c->out_head = x->next;
		if (c->out_tail == x)
			c->out_tail = NULL;
		c->out_bytes -= x->queued_len;
		tsr_msg_free(x, 0);
		pthread_cond_broadcast(&c->room);
	}
	if (drop && c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR); /* injected: the reader sees the reset */
}

/* A frame carries everything received so far (lock held). */
void
msgr_conn_ack_sent(struct tsr_conn *c)
{
	c->ack_sent = c->in_seq;
	c->rx_unacked = 0;
	c->rx_unacked_msgs = 0;
}

/* Write what the socket takes (lock held). */
void
msgr_conn_flush(struct tsr_conn *c)
{
	while (c->fd >= 0 && c->state != C_CONNECTING && c->state != C_CLOSED) {
		struct iovec iov[IOV_BATCH];
		int n = 0;
		ssize_t w;

		if (c->ctl_off < c->ctl_len) {
			iov[n++] = (struct iovec){ c->ctl + c->ctl_off, c->ctl_len - c->ctl_off };
		} else if (c->extra_off < c->extra_len) {
			iov[n++] = (struct iovec){ (void *)(c->extra + c->extra_off),
						   c->extra_len - c->extra_off };
		} else if (c->close_after_ctl) {
			msgr_conn_end(c, -ECONNREFUSED);
			return;
		} else if (c->state == C_OPEN && c->out_next) {
			struct tsr_msg *x = c->out_next;
			size_t off = c->out_off;
			while (x && n < IOV_BATCH - 2) {
				if (off == 0)
					msg_prepare(c, x);
				n += msg_iov(x, off, iov + n, IOV_BATCH - n);
				off = 0;
				x = x->next;
			}
		} else if (c->state == C_OPEN &&
			   (c->want_keepalive_ack || c->want_keepalive)) {
			/* keepalive (ack) frames carry a stamp in their front */
			uint8_t st[8];
			uint32_t crc;
			uint32_t type = c->want_keepalive_ack ? TSR_MSG_KEEPALIVE_ACK
							      : TSR_MSG_KEEPALIVE;
			for (int i = 0; i < 8; i++)
				st[i] = (uint8_t)(c->ka_stamp >> (8 * i));
			frame_ctl(c->ka_frame, type, 8, c->in_seq);
			memcpy(c->ka_frame + TSR_FRAME_HDR, st, 8);
			crc = tsr_crc32c(0, st, 8);
			tsr_frame_footer_put(c->ka_frame + TSR_FRAME_HDR + 8, crc);
			if (c->want_keepalive_ack)
				c->want_keepalive_ack = 0;
			else
				c->want_keepalive = 0;
			if (c->in_seq > c->ack_sent)
				msgr_conn_ack_sent(c);
			c->extra = c->ka_frame;
			c->extra_len = sizeof(c->ka_frame);
			c->extra_off = 0;
			continue;
		} else if (c->state == C_OPEN && c->in_seq > c->ack_sent &&
			   (c->ack_force || c->rx_unacked >= ACK_NOW_BYTES ||
			    c->rx_unacked_msgs >= ACK_NOW_MSGS)) {
			/* an empty body: the footer is the CRC of nothing */
			frame_ctl(c->ack_frame, TSR_MSG_ACK, 0, c->in_seq);
			tsr_frame_footer_put(c->ack_frame + TSR_FRAME_HDR,
					     tsr_crc32c(0, NULL, 0));
			msgr_conn_ack_sent(c);
			pthread_mutex_lock(&c->m->lock);
			c->m->st.acks_sent++;
			pthread_mutex_unlock(&c->m->lock);
			c->extra = c->ack_frame;
			c->extra_len = sizeof(c->ack_frame);
			c->extra_off = 0;
			continue;
		} else {
			return;
		}
		w = send_iov(c->fd, iov, n);
		if (w > 0)
			atomic_fetch_add_explicit(&c->m->writes, 1, memory_order_relaxed);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR)
				continue;
			msgr_conn_fault(c, -errno, "write: %s", strerror(errno));
			return;
		}
		size_t left = (size_t)w;
		if (c->ctl_off < c->ctl_len) {
			c->ctl_off += left;
			if (c->ctl_off == c->ctl_len)
				c->ctl_off = c->ctl_len = 0;
			continue;
		}
		if (c->extra_off < c->extra_len) {
			c->extra_off += left;
			if (c->extra_off == c->extra_len)
				c->extra_off = c->extra_len = 0;
			continue;
		}
		while (left > 0 && c->out_next) {
			struct tsr_msg *x = c->out_next;
			size_t rest = msg_wire_len(x) - c->out_off;
			if (left < rest) {
				c->out_off += left;
				left = 0;
				break;
			}
			left -= rest;
			msg_sent(c, x);
			if (c->fd < 0)
				return;
		}
	}
}

/* A sender's thread writes what the socket takes now; the worker the
 * rest, once there is room (lock held). */
static void
write_now(struct tsr_conn *c)
{
	if (c->state == C_OPEN && c->fd >= 0) {
		msgr_conn_flush(c);
		if (c->state == C_OPEN && c->fd >= 0 && c->out_next != NULL)
			msgr_conn_kick(c, ACT_FLUSH);
	}
}

int
tsr_conn_send(struct tsr_conn *c, struct tsr_msg *x, unsigned flags)
{
	size_t len;

	if (x == NULL)
		return -EINVAL;
	if (x->type < TSR_MSG_USER || x->front_len > c->m->o.max_front ||
	    x->data_len > c->m->o.max_data) {
		tsr_msg_free(x, -EINVAL);
		return -EINVAL;
	}
	len = msg_wire_len(x);
	/* a thread that runs a loop or handlers must never wait for a peer
	 * to read: every other connection it serves would wait too */
	if (msgr_cur_worker != NULL || msgr_on_dispatch || tsr_loop_current() != NULL)
		flags |= TSR_SEND_NOWAIT;
	pthread_mutex_lock(&c->lock);
	while (c->state != C_CLOSED && c->out_bytes > 0 &&
	       c->out_bytes + len > c->m->o.send_queue_bytes) {
		if (flags & TSR_SEND_NOWAIT) {
			pthread_mutex_unlock(&c->lock);
			tsr_msg_free(x, -EAGAIN);
			return -EAGAIN;
		}
		pthread_cond_wait(&c->room, &c->lock);
	}
	if (c->state == C_CLOSED) {
		int err = c->close_err ? c->close_err : -ENOTCONN;
		pthread_mutex_unlock(&c->lock);
		tsr_msg_free(x, err);
		return err;
	}
	x->seq = ++c->out_seq;
	x->next = NULL;
	x->crc_done = 0;
	if (c->out_tail)
		c->out_tail->next = x;
	else
		c->out_head = x;
	c->out_tail = x;
	if (c->out_next == NULL && c->out_off == 0)
		c->out_next = x;
	x->queued_len = len;
	c->out_bytes += len;
	if (!(flags & TSR_SEND_MORE))
		write_now(c);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void
tsr_conn_flush(struct tsr_conn *c)
{
	pthread_mutex_lock(&c->lock);
	write_now(c);
	pthread_mutex_unlock(&c->lock);
}

/* The peer has everything up to ack: forget it (lock held).  With
 * written_only, only messages written on this socket go (a frame's ack
 * cannot cover more); a handshake's in_seq may cover messages written on
 * an earlier socket, which a reconnect had put back in line. */
void
msgr_conn_drop_acked(struct tsr_conn *c, uint64_t ack, int written_only)
{
	while (c->out_head && c->out_head->seq <= ack &&
	       (!written_only || c->out_head != c->out_next)) {
		struct tsr_msg *x = c->out_head;
		if (c->out_next == x) {
			c->out_next = x->next;
			c->out_off = 0;
		}
		c->out_head = x->next;
		if (c->out_tail == x)
			c->out_tail = NULL;
		c->out_bytes -= x->queued_len;
		tsr_msg_free(x, 0);
	}
	pthread_cond_broadcast(&c->room);
}

void
msgr_conn_acked(struct tsr_conn *c, uint64_t ack)
{
	msgr_conn_drop_acked(c, ack, 1);
}

