/* msg.c — messages, and the pool of large receive buffers (msgr.h). */
#include "msg/msgr_int.h"

#include <tessera/encoding.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- Large buffers ------------------------------------------------------------*/

/* Data buffers of 64 KiB and up -- received ones, and those a sender took
 * with tsr_msg_buf_get -- are kept for the next message of their size
 * class (a power of two), up to BUFC_BYTES in all: faulting in fresh pages
 * for every 4 MiB message costs more than everything else on its path (a
 * VM makes page faults dear; an OSD's 4 MiB read answers ran at a third
 * of their speed on fresh pages).  They are page-aligned, so that a
 * backend can read into them from the device directly.  Process-wide,
 * since a message may outlive its messenger. */
#define BUFC_MIN (64u << 10)
#define BUFC_SLOTS 32
#define BUFC_BYTES (64u << 20)

static pthread_mutex_t bufc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t cap;
} bufc[BUFC_SLOTS];
static size_t bufc_n, bufc_bytes;

void *
msgr_buf_get(size_t n, size_t *cap)
{
	size_t c = BUFC_MIN;
	void *p = NULL;

	if (n < BUFC_MIN) {
		*cap = n;
		return malloc(n ? n : 1);
	}
	while (c < n)
		c *= 2;
	pthread_mutex_lock(&bufc_lock);
	for (size_t i = 0; i < bufc_n; i++)
		if (bufc[i].cap == c) {
			p = bufc[i].p;
			bufc_bytes -= c;
			bufc[i] = bufc[--bufc_n];
			break;
		}
	pthread_mutex_unlock(&bufc_lock);
	*cap = c;
	if (p == NULL && posix_memalign(&p, 4096, c) != 0)
		p = NULL;
	return p;
}

static void
buf_put(void *p, size_t cap)
{
	if (p == NULL)
		return;
	if (cap >= BUFC_MIN) {
		pthread_mutex_lock(&bufc_lock);
		if (bufc_n < BUFC_SLOTS && bufc_bytes + cap <= BUFC_BYTES) {
			bufc[bufc_n].p = p;
			bufc[bufc_n++].cap = cap;
			bufc_bytes += cap;
			p = NULL;
		}
		pthread_mutex_unlock(&bufc_lock);
	}
	free(p);
}

/* At exit the kept buffers go (leak checkers see nothing left). */
__attribute__((destructor)) static void
bufc_drain(void)
{
	pthread_mutex_lock(&bufc_lock);
	while (bufc_n > 0)
		free(bufc[--bufc_n].p);
	bufc_bytes = 0;
	pthread_mutex_unlock(&bufc_lock);
}

/* ---- Messages ---------------------------------------------------------------*/

struct tsr_msg *
tsr_msg_new(uint32_t type, const void *front, size_t len)
{
	struct tsr_msg *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	m->type = type;
	if (len) {
		m->front = malloc(len);
		if (m->front == NULL) {
			free(m);
			return NULL;
		}
		memcpy(m->front, front, len);
	}
	m->front_len = len;
	return m;
}

struct tsr_msg *
tsr_msg_from_enc(uint32_t type, struct tsr_enc *e)
{
	size_t len;
	uint8_t *buf = tsr_enc_error(e) ? NULL : tsr_enc_take(e, &len);
	struct tsr_msg *m;

	tsr_enc_release(e);
	if (buf == NULL)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		free(buf);
		return NULL;
	}
	m->type = type;
	m->front = buf;
	m->front_len = len;
	return m;
}

struct tsr_rbuf *
tsr_rbuf_new(uint8_t *p, size_t len)
{
	struct tsr_rbuf *b = malloc(sizeof(*b));

	if (b == NULL) {
		free(p);
		return NULL;
	}
	b->refs = 1;
	b->len = len;
	b->p = p;
	return b;
}

struct tsr_rbuf *
tsr_rbuf_get(struct tsr_rbuf *b)
{
	__atomic_add_fetch(&b->refs, 1, __ATOMIC_ACQ_REL);
	return b;
}

void
tsr_rbuf_put(struct tsr_rbuf *b)
{
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(b->p);
		free(b);
	}
}

static void
release_rbuf(void *arg, int result)
{
	(void)result;
	tsr_rbuf_put(arg);
}

int
tsr_msg_set_data(struct tsr_msg *m, const struct iovec *iov, int iovcnt,
		 tsr_msg_release_cb release, void *arg)
{
	size_t len = 0;

	if (iovcnt < 0 || m->data_iovcnt || m->owns_data)
		return -EINVAL;
	/* the frame is written in batches of IOV_BATCH iovecs, the header,
	 * the front and the footer among them */
	if (iovcnt > TSR_MSG_MAX_IOV)
		return -E2BIG;
	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (iovcnt == 1) {
		m->one = iov[0];
		m->data_iov = &m->one;
	} else if (iovcnt > 1) {
		m->data_iov = malloc((size_t)iovcnt * sizeof(*iov));
		if (m->data_iov == NULL)
			return -ENOMEM;
		memcpy(m->data_iov, iov, (size_t)iovcnt * sizeof(*iov));
	}
	m->data_iovcnt = iovcnt;
	m->data_len = len;
	m->release = release;
	m->release_arg = arg;
	return 0;
}

/* Give borrowed data back (once). */
void
msgr_msg_release(struct tsr_msg *m, int result)
{
	if (m->release) {
		tsr_msg_release_cb cb = m->release;
		m->release = NULL;
		cb(m->release_arg, result);
	}
	if (m->owns_data)
		buf_put(m->data_iov[0].iov_base, m->data_cap ? m->data_cap
							      : m->data_iov[0].iov_len);
	if (m->data_iov != &m->one)
		free(m->data_iov);
	m->data_iov = NULL;
	m->data_iovcnt = 0;
	m->owns_data = 0;
}

void
tsr_msg_free(struct tsr_msg *m, int result)
{
	if (m == NULL)
		return;
	msgr_msg_release(m, result);
	free(m->zdata);
	free(m->front);
	free(m);
}


void *
tsr_msg_buf_get(size_t n, size_t *cap)
{
	return msgr_buf_get(n, cap);
}

void
tsr_msg_buf_put(void *p, size_t cap)
{
	buf_put(p, cap);
}

int
tsr_msg_give_data(struct tsr_msg *m, void *p, size_t len, size_t cap)
{
	if (m->data_iovcnt || m->owns_data || len > cap)
		return -EINVAL;
	m->one = (struct iovec){ p, len };
	m->data_iov = &m->one;
	m->data_iovcnt = 1;
	m->data_len = len;
	m->owns_data = 1;
	m->data_cap = cap;
	return 0;
}

void
tsr_msg_set_data_crc(struct tsr_msg *m, uint32_t crc)
{
	m->data_crc = crc;
	m->data_crc_known = 1;
}

int
tsr_msg_set_rbuf(struct tsr_msg *m, struct tsr_rbuf *b)
{
	struct iovec iov = { b->p, b->len };
	int rc = tsr_msg_set_data(m, &iov, 1, release_rbuf, tsr_rbuf_get(b));

	if (rc < 0)
		tsr_rbuf_put(b);
	return rc;
}
