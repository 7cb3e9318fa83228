/* test_msgr.c — the messenger over real loopback sockets: every message
 * shape round trips; a lossless session delivers 100,000 messages exactly
 * once and in order while its connection is cut again and again; a lossy
 * one reports its failures; a restarted peer resets the session;
 * malicious peers are cut off with the right log line while a good
 * connection keeps working; two processes talk; a connection's own events
 * reach only its owner and stop at close; a full queue pushes back at
 * once on a dispatch thread and a loop's thread. */
#include "auth/auth.h"
#include "config/config.h"
#include "event/loop.h"
#include "log/log.h"
#include "msg/msgr.h"
#include "util/util.h"

#include <tessera/crc32c.h>

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define T_ECHO (TSR_MSG_USER + 1)   /* answered with T_REPLY, same content */
#define T_REPLY (TSR_MSG_USER + 2)
#define T_SEQ (TSR_MSG_USER + 3)    /* front: u64 counter, checked in order */
#define T_SLOW (TSR_MSG_USER + 4)   /* the handler blocks until released */
#define WAIT_MS 20000               /* every wait is bounded */

static char logpath[256];

/* ---- What a receiver saw -------------------------------------------------*/

struct sink {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t n;          /* messages */
	uint64_t next;       /* T_SEQ: the counter expected next */
	int any_start;       /* T_SEQ: the first message sets `next` */
	uint64_t first;      /* T_SEQ: the counter of the first message */
	uint64_t bad;        /* out of order or damaged */
	uint64_t bytes;
	struct tsr_msg *last;
	int faults, resets, accepts;
	int last_fault;
	struct tsr_conn *accepted;
};

static void
sink_init(struct sink *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
}

static void
sink_fini(struct sink *s)
{
	tsr_msg_free(s->last, 0);
	if (s->accepted)
		tsr_conn_put(s->accepted);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
}

/* Wait (WAIT_MS at most) until *v >= want, *v (an int, or a uint64_t
 * with is64) under mu and its changes told on cv; 0 or -ETIMEDOUT. */
static int
wait_until(pthread_mutex_t *mu, pthread_cond_t *cv, const void *v, int is64, uint64_t want)
{
	uint64_t end = tsr_mono_ns() + WAIT_MS * 1000000ull;
	int rc = 0;

	pthread_mutex_lock(mu);
	for (;;) {
		uint64_t cur = is64 ? *(const uint64_t *)v : (uint64_t)*(const int *)v;
		struct timespec ts;

		if (cur >= want)
			break;
		if (tsr_mono_ns() >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(cv, mu, &ts);
	}
	pthread_mutex_unlock(mu);
	return rc;
}

/* Wait until *v >= want (under s->mu); 0 or -ETIMEDOUT. */
static int
sink_wait(struct sink *s, const void *v, int is64, uint64_t want)
{
	return wait_until(&s->mu, &s->cv, v, is64, want);
}

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
on_seq(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct sink *s = arg;

	(void)c;
	pthread_mutex_lock(&s->mu);
	if (s->any_start && s->n == 0 && m->front_len == 8)
		s->next = s->first = get64(m->front);
	if (m->front_len != 8 || get64(m->front) != s->next)
		s->bad++;
	else
		s->next++;
	s->n++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	tsr_msg_free(m, 0);
}

/* Keep the last message for the test to look at. */
static void
on_keep(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct sink *s = arg;

	(void)c;
	pthread_mutex_lock(&s->mu);
	tsr_msg_free(s->last, 0);
	s->last = m;
	s->n++;
	s->bytes += m->front_len + m->data_len;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void
free_buf(void *p, int result)
{
	(void)result;
	free(p);
}

/* Send the message back as T_REPLY (front copied, data handed over). */
static void
on_echo(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct tsr_msg *r = tsr_msg_new(T_REPLY, m->front, m->front_len);

	(void)arg;
	if (r && m->data_len) {
		/* hand the received buffer over: freed by the release */
		struct iovec iov = m->data_iov[0];
		m->owns_data = 0;
		tsr_msg_set_data(r, &iov, 1, free_buf, iov.iov_base);
		m->data_iov = NULL;
		m->data_iovcnt = 0;
	}
	tsr_msg_free(m, 0);
	if (r)
		tsr_conn_send(c, r, TSR_SEND_NOWAIT);
}

static void
ev_accept(struct tsr_conn *c, void *arg)
{
	struct sink *s = arg;

	pthread_mutex_lock(&s->mu);
	s->accepts++;
	if (s->accepted == NULL) {
		tsr_conn_get(c);
		s->accepted = c;
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void
ev_fault(struct tsr_conn *c, int err, void *arg)
{
	struct sink *s = arg;

	(void)c;
	pthread_mutex_lock(&s->mu);
	s->faults++;
	s->last_fault = err;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static void
ev_reset(struct tsr_conn *c, void *arg)
{
	struct sink *s = arg;

	(void)c;
	pthread_mutex_lock(&s->mu);
	s->resets++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* A handler that blocks until the test opens its gate. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open, entered;
};

static struct gate gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };

static void
on_slow(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	uint64_t end = tsr_mono_ns() + WAIT_MS * 1000000ull;

	(void)c;
	(void)arg;
	tsr_msg_free(m, 0);
	pthread_mutex_lock(&gate.mu);
	gate.entered++;
	pthread_cond_broadcast(&gate.cv);
	while (!gate.open && tsr_mono_ns() < end) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&gate.cv, &gate.mu, &ts);
	}
	pthread_mutex_unlock(&gate.mu);
}

/* Wait until at least want handlers entered the gate (under gate.mu). */
static int
gate_wait_entered(int want)
{
	uint64_t end = tsr_mono_ns() + WAIT_MS * 1000000ull;
	int rc = 0;

	pthread_mutex_lock(&gate.mu);
	while (gate.entered < want) {
		struct timespec ts;
		if (tsr_mono_ns() >= end) {
			rc = -ETIMEDOUT;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&gate.cv, &gate.mu, &ts);
	}
	pthread_mutex_unlock(&gate.mu);
	return rc;
}

static int
sink_faults(struct sink *s)
{
	int f;

	pthread_mutex_lock(&s->mu);
	f = s->faults;
	pthread_mutex_unlock(&s->mu);
	return f;
}

static void
gate_set(int open)
{
	pthread_mutex_lock(&gate.mu);
	gate.open = open;
	if (!open)
		gate.entered = 0;
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.mu);
}

/* ---- Messengers --------------------------------------------------------------*/

static const uint8_t FSID[16] = "tessera-test-fs";

static struct tsr_msgr *
mk(uint8_t type, uint64_t id, const char *bind, struct sink *s,
   void (*tweak)(struct tsr_msgr_opts *))
{
	struct tsr_msgr_opts o;
	struct tsr_msgr_events ev = { ev_accept, ev_fault, ev_reset, s };
	struct tsr_msgr *m;
	char err[256];
	int rc;

	memset(&o, 0, sizeof(o));
	memcpy(o.fsid, FSID, 16);
	o.entity_type = type;
	o.entity_id = id;
	o.bind = bind;
	tsr_msgr_opts_default(&o);
	if (tweak)
		tweak(&o);
	rc = tsr_msgr_create(&o, &ev, &m, err, sizeof(err));
	ck_assert_msg(rc == 0, "messenger: %s", err);
	ck_assert_int_eq(tsr_msgr_register(m, T_SEQ, on_seq, s, 0), 0);
	ck_assert_int_eq(tsr_msgr_register(m, T_ECHO, on_echo, s, 0), 0);
	ck_assert_int_eq(tsr_msgr_register(m, T_REPLY, on_keep, s, 0), 0);
	ck_assert_int_eq(tsr_msgr_register(m, T_SLOW, on_slow, s, 0), 0);
	tsr_msgr_start(m);
	return m;
}

/* The end of a test of one session between a client messenger and a
 * server: the session, both messengers and both sinks go. */
static void
pair_fini(struct tsr_conn *c, struct tsr_msgr *cli, struct tsr_msgr *srv,
	  struct sink *ss, struct sink *cs)
{
	tsr_conn_put(c);
	tsr_msgr_destroy(cli);
	tsr_msgr_destroy(srv);
	sink_fini(ss);
	sink_fini(cs);
}

static struct tsr_msg *
seq_msg(uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	return tsr_msg_new(T_SEQ, b, 8);
}

static char *
log_text(void)
{
	FILE *f = fopen(logpath, "r");
	char *buf = calloc(1, 1 << 20);
	size_t n;

	ck_assert_ptr_nonnull(buf);
	if (f) {
		n = fread(buf, 1, (1 << 20) - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

/* Wait until the log holds needle (bounded). */
static int
log_wait(const char *needle)
{
	for (int i = 0; i < WAIT_MS / 20; i++) {
		char *t = log_text();
		int found = strstr(t, needle) != NULL;
		free(t);
		if (found)
			return 1;
		struct timespec ts = { 0, 20 * 1000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* ---- Tests ---------------------------------------------------------------------*/

struct rel {
	pthread_mutex_t mu;
	int calls, last;
};

static void
rel_cb(void *arg, int result)
{
	struct rel *r = arg;

	pthread_mutex_lock(&r->mu);
	r->calls++;
	r->last = result;
	pthread_mutex_unlock(&r->mu);
}

static void
compress_on(struct tsr_msgr_opts *o)
{
	o->compress_min = 4096;
}

/* Every shape: empty, front only, data only, several data iovecs, 4 MiB,
 * compressible data (zstd on both sides), each echoed and compared. */
START_TEST(every_shape)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	size_t big = 4u << 20;
	uint8_t *data = malloc(big), *front = malloc(100000);
	struct {
		size_t front, data;
		int iovs;
	} shapes[] = {
		{ 0, 0, 0 }, { 1, 0, 0 }, { 100000, 0, 0 }, { 0, 1, 1 },
		{ 10, 4096, 1 }, { 10, 70000, 5 }, { 64, big, 1 }, { 64, big, 16 },
	};

	ck_assert(data && front);
	for (size_t i = 0; i < big; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 13);
	for (size_t i = 0; i < 100000; i++)
		front[i] = (uint8_t)(i * 7);
	sink_init(&ss);
	sink_init(&cs);
	for (int z = 0; z < 2; z++) {
		srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, z ? compress_on : NULL);
		cli = mk(TSR_ENTITY_CLIENT, 99, NULL, &cs, z ? compress_on : NULL);
		ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), z, &c), 0);
		for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
			struct tsr_msg *m = tsr_msg_new(T_ECHO, front, shapes[k].front);
			struct iovec iov[16];
			struct rel r = { PTHREAD_MUTEX_INITIALIZER, 0, 1 };
			uint64_t want = cs.n + 1;
			size_t per = shapes[k].iovs ? shapes[k].data / (size_t)shapes[k].iovs : 0;

			/* compressible on the zstd pass: runs of 64 bytes */
			if (z)
				for (size_t i = 0; i < big; i++)
					data[i] = (uint8_t)((i / 64 + k) % 251);
			for (int v = 0; v < shapes[k].iovs; v++) {
				iov[v].iov_base = data + (size_t)v * per;
				iov[v].iov_len = v == shapes[k].iovs - 1
							 ? shapes[k].data - (size_t)v * per
							 : per;
			}
			ck_assert_ptr_nonnull(m);
			ck_assert_int_eq(tsr_msg_set_data(m, iov, shapes[k].iovs, rel_cb, &r), 0);
			if (k % 2) /* the data's CRC given, as an OSD's read does */
				tsr_msg_set_data_crc(m, tsr_crc32c(0, data, shapes[k].data));
			ck_assert_int_eq(tsr_conn_send(c, m, 0), 0);
			ck_assert_msg(sink_wait(&cs, &cs.n, 1, want) == 0,
				      "shape %zu (zstd %d): no reply", k, z);
			pthread_mutex_lock(&cs.mu);
			ck_assert_int_eq(cs.last->front_len, shapes[k].front);
			ck_assert_int_eq(cs.last->data_len, shapes[k].data);
			ck_assert(shapes[k].front == 0 ||
				  memcmp(cs.last->front, front, shapes[k].front) == 0);
			ck_assert(shapes[k].data == 0 ||
				  memcmp(cs.last->data_iov[0].iov_base, data, shapes[k].data) == 0);
			pthread_mutex_unlock(&cs.mu);
			/* the data went back to us: written (lossy) or acked */
			for (int t = 0; t < 500; t++) {
				pthread_mutex_lock(&r.mu);
				int done = r.calls;
				pthread_mutex_unlock(&r.mu);
				if (done)
					break;
				struct timespec ts = { 0, 10 * 1000000 };
				nanosleep(&ts, NULL);
			}
			ck_assert_msg(shapes[k].iovs == 0 || (r.calls == 1 && r.last == 0),
				      "shape %zu: release %d times, result %d", k,
				      r.calls, r.last);
		}
		if (z) {
			struct tsr_msgr_stats st;
			tsr_msgr_stats(cli, &st);
			/* compressed: far fewer bytes than the two 4 MiB
			 * payloads */
			ck_assert_msg(st.bytes_sent < big / 4, "zstd: %llu bytes sent",
				      (unsigned long long)st.bytes_sent);
		}
		tsr_conn_put(c);
		tsr_msgr_destroy(cli);
		tsr_msgr_destroy(srv);
		if (ss.accepted) {
			tsr_conn_put(ss.accepted);
			ss.accepted = NULL;
		}
	}
	sink_fini(&ss);
	sink_fini(&cs);
	free(data);
	free(front);
}
END_TEST

/* A data CRC given with the data (tsr_msg_set_data_crc) is what the frame
 * carries: right, the message arrives; wrong, the peer counts a bad frame
 * and takes nothing. */
START_TEST(given_data_crc)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	struct tsr_msgr_stats st;
	size_t n = 1u << 20;
	uint8_t *data = malloc(n);

	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < n; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 11);
	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	cli = mk(TSR_ENTITY_CLIENT, 99, NULL, &cs, NULL);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c), 0);
	for (int bad = 0; bad < 2; bad++) {
		struct tsr_msg *m = tsr_msg_new(T_ECHO, "x", 1);
		struct iovec iov = { data, n };
		uint64_t want = cs.n + 1;

		ck_assert_ptr_nonnull(m);
		ck_assert_int_eq(tsr_msg_set_data(m, &iov, 1, NULL, NULL), 0);
		tsr_msg_set_data_crc(m, tsr_crc32c(0, data, n) ^ (uint32_t)bad);
		ck_assert_int_eq(tsr_conn_send(c, m, 0), 0);
		if (!bad) {
			ck_assert_msg(sink_wait(&cs, &cs.n, 1, want) == 0, "no echo");
			pthread_mutex_lock(&cs.mu);
			ck_assert(cs.last->data_len == n &&
				  memcmp(cs.last->data_iov[0].iov_base, data, n) == 0);
			pthread_mutex_unlock(&cs.mu);
			continue;
		}
		for (int t = 0; t < 500; t++) {
			tsr_msgr_stats(srv, &st);
			if (st.bad_frames)
				break;
			struct timespec ts = { 0, 10 * 1000000 };
			nanosleep(&ts, NULL);
		}
		ck_assert_uint_ge(st.bad_frames, 1);
		ck_assert_uint_eq(cs.n, want - 1);
	}
	tsr_conn_put(c);
	tsr_msgr_destroy(cli);
	tsr_msgr_destroy(srv);
	sink_fini(&ss); /* puts ss.accepted */
	sink_fini(&cs);
	free(data);
}
END_TEST

/* The tag of an echoed T_REPLY: its front's first 8 bytes. */
static uint64_t
front_tag(uint32_t type, const uint8_t *front, size_t len)
{
	return type == T_REPLY && len >= 8 ? get64(front) : 0;
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Echo n bytes of data under tag; the answer is left in cs->last. */
static void
echo_tagged(struct sink *cs, struct tsr_conn *c, uint64_t tag, const uint8_t *data,
	    size_t n)
{
	uint8_t front[8];
	struct tsr_msg *m;
	struct iovec iov = { (void *)data, n };
	uint64_t want = cs->n + 1;

	put64(front, tag);
	m = tsr_msg_new(T_ECHO, front, 8);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(tsr_msg_set_data(m, &iov, 1, NULL, NULL), 0);
	ck_assert_int_eq(tsr_conn_send(c, m, 0), 0);
	ck_assert_msg(sink_wait(cs, &cs->n, 1, want) == 0, "tag %llu: no echo",
		      (unsigned long long)tag);
}

/* Data received into a buffer posted under the frame's tag: used once,
 * only when long enough, never after a revoke; a revoke racing the
 * frame leaves the buffer alone either way. */
START_TEST(posted_rx_buffers)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	size_t n = 1u << 20, big = 16u << 20;
	uint8_t *data = malloc(big), *buf = malloc(big);

	ck_assert(data && buf);
	for (size_t i = 0; i < big; i++)
		data[i] = (uint8_t)(i * 2654435761u >> 9);
	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	cli = mk(TSR_ENTITY_CLIENT, 99, NULL, &cs, NULL);
	tsr_msgr_set_rx_tag(cli, front_tag);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c), 0);

	/* posted: the data lands in buf */
	ck_assert_int_eq(tsr_conn_post_rx(c, 7, buf, n), 0);
	echo_tagged(&cs, c, 7, data, n);
	pthread_mutex_lock(&cs.mu);
	ck_assert_ptr_eq(cs.last->data_iov[0].iov_base, buf);
	ck_assert(cs.last->data_len == n && memcmp(buf, data, n) == 0);
	pthread_mutex_unlock(&cs.mu);
	/* used once: the same tag again gets a buffer of the messenger's */
	memset(buf, 0, n);
	echo_tagged(&cs, c, 7, data, n);
	pthread_mutex_lock(&cs.mu);
	ck_assert_ptr_ne(cs.last->data_iov[0].iov_base, buf);
	ck_assert(memcmp(cs.last->data_iov[0].iov_base, data, n) == 0);
	ck_assert_uint_eq(buf[0] | buf[n - 1], 0);
	pthread_mutex_unlock(&cs.mu);
	/* too short, another tag, revoked: all left alone */
	ck_assert_int_eq(tsr_conn_post_rx(c, 8, buf, n - 1), 0);
	ck_assert_int_eq(tsr_conn_post_rx(c, 9, buf, n), 0);
	ck_assert_int_eq(tsr_conn_post_rx(c, 10, buf, n), 0);
	tsr_conn_revoke_rx(c, 10);
	echo_tagged(&cs, c, 8, data, n);
	echo_tagged(&cs, c, 10, data, n);
	ck_assert_uint_eq(buf[0] | buf[n / 2] | buf[n - 1], 0);
	tsr_conn_revoke_rx(c, 8);
	tsr_conn_revoke_rx(c, 9);
	/* a revoke racing a 16 MiB answer, at many moments (some while it
	 * is being received, a few milliseconds of each round trip): after
	 * it returns, buf keeps what we put there (its tail, which the
	 * answer would write last), and the answer is whole */
	for (int round = 0; round < 40; round++) {
		uint8_t front[8];
		struct tsr_msg *m;
		struct iovec iov = { data, big };
		uint64_t want = cs.n + 1;

		put64(front, 100 + (uint64_t)round);
		ck_assert_int_eq(tsr_conn_post_rx(c, 100 + (uint64_t)round, buf, big), 0);
		m = tsr_msg_new(T_ECHO, front, 8);
		ck_assert_ptr_nonnull(m);
		ck_assert_int_eq(tsr_msg_set_data(m, &iov, 1, NULL, NULL), 0);
		ck_assert_int_eq(tsr_conn_send(c, m, 0), 0);
		struct timespec ts = { 0, round * 600 * 1000L };
		nanosleep(&ts, NULL);
		tsr_conn_revoke_rx(c, 100 + (uint64_t)round);
		memset(buf + big - 4096, 0xA5, 4096);
		ck_assert_msg(sink_wait(&cs, &cs.n, 1, want) == 0, "round %d: no echo", round);
		pthread_mutex_lock(&cs.mu);
		/* in buf only if it was whole before the revoke */
		ck_assert_msg(cs.last->data_iov[0].iov_base == buf ||
			      (cs.last->data_len == big &&
			       memcmp(cs.last->data_iov[0].iov_base, data, big) == 0),
			      "round %d: the answer moved off buf is not whole", round);
		pthread_mutex_unlock(&cs.mu);
		for (size_t i = big - 4096; i < big; i++)
			ck_assert_msg(buf[i] == 0xA5, "round %d: buf written at %zu after "
				      "its revoke", round, i);
	}
	pair_fini(c, cli, srv, &ss, &cs);
	free(data);
	free(buf);
}
END_TEST

static void
drop_often(struct tsr_msgr_opts *o)
{
	o->inject_drop_every = 997;
	o->reconnect_min_ms = 1;
	o->reconnect_max_ms = 20;
}

static void
compress_small_queue(struct tsr_msgr_opts *o)
{
	o->compress_min = 4096;
	o->send_queue_bytes = 1u << 20;
}

/* Bug: a compressed message was counted in its connection's queue at its
 * length before compression and taken off at its compressed length, so
 * the queue's count grew by the bytes saved: after a few compressible
 * messages of a long-lived session the queue looked full while empty, and
 * every send was refused (-EAGAIN) or waited forever.  64 compressible
 * messages of 256 KiB through a 1 MiB queue, each answered before the
 * next, must all be taken. */
START_TEST(compressed_sends_free_their_room)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	size_t len = 256u << 10;
	uint8_t *data = malloc(len);

	ck_assert_ptr_nonnull(data);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i / 64 % 251);
	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, compress_small_queue);
	cli = mk(TSR_ENTITY_CLIENT, 99, NULL, &cs, compress_small_queue);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c), 0);
	for (int k = 0; k < 64; k++) {
		struct tsr_msg *m = tsr_msg_new(T_ECHO, "x", 1);
		struct iovec iov = { data, len };
		struct rel r = { PTHREAD_MUTEX_INITIALIZER, 0, 1 };
		uint64_t want = cs.n + 1;

		ck_assert_int_eq(tsr_msg_set_data(m, &iov, 1, rel_cb, &r), 0);
		ck_assert_msg(tsr_conn_send(c, m, TSR_SEND_NOWAIT) == 0,
			      "message %d refused: the queue counts bytes it does not hold", k);
		ck_assert_msg(sink_wait(&cs, &cs.n, 1, want) == 0, "message %d: no reply", k);
		for (int t = 0; t < 500; t++) {
			pthread_mutex_lock(&r.mu);
			int done = r.calls;
			pthread_mutex_unlock(&r.mu);
			if (done)
				break;
			struct timespec ts = { 0, 10 * 1000000 };
			nanosleep(&ts, NULL);
		}
	}
	pair_fini(c, cli, srv, &ss, &cs);
	free(data);
}
END_TEST

/* 100,000 messages on a lossless session whose connection is cut at
 * random, 1 in 997 frames (by the sender), arrive exactly once and in
 * order. */
START_TEST(lossless_resets)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	struct tsr_msgr_stats st;
	const uint64_t N = 100000;

	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	cli = mk(TSR_ENTITY_OSD, 2, NULL, &cs, drop_often);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c), 0);
	for (uint64_t i = 0; i < N; i++)
		ck_assert_int_eq(tsr_conn_send(c, seq_msg(i), 0), 0);
	ck_assert_msg(sink_wait(&ss, &ss.next, 1, N) == 0,
		      "%llu of %llu arrived in order (%llu bad)",
		      (unsigned long long)ss.next, (unsigned long long)N,
		      (unsigned long long)ss.bad);
	/* nothing more trickles in: exactly once */
	struct timespec ts = { 0, 200 * 1000000 };
	nanosleep(&ts, NULL);
	ck_assert_int_eq(ss.bad, 0);
	ck_assert_int_eq(ss.n, N);
	tsr_msgr_stats(cli, &st);
	ck_assert_msg(st.reconnects >= 50, "only %llu reconnects",
		      (unsigned long long)st.reconnects);
	fprintf(stderr, "lossless_resets: %llu messages, %llu reconnects, "
		"%llu resent\n", (unsigned long long)N,
		(unsigned long long)st.reconnects, (unsigned long long)st.resent);
	tsr_msgr_stats(srv, &st);
	fprintf(stderr, "lossless_resets: receiver dropped %llu duplicates\n",
		(unsigned long long)st.duplicates_dropped);
	pair_fini(c, cli, srv, &ss, &cs);
}
END_TEST

/* A lossy session whose server goes away: the owner hears the fault and
 * every message not sent is released with an error. */
START_TEST(lossy_fault)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	struct rel r = { PTHREAD_MUTEX_INITIALIZER, 0, 0 };
	static uint8_t blob[1 << 20];
	int sent = 0, rc;

	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	cli = mk(TSR_ENTITY_CLIENT, 5, NULL, &cs, NULL);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 0, &c), 0);
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(0), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 1), 0);
	tsr_msgr_destroy(srv);
	/* keep sending until the fault is seen: those fail */
	for (int i = 0; i < 2000 && sink_faults(&cs) == 0; i++) {
		struct tsr_msg *m = tsr_msg_new(T_SEQ, "x", 1);
		struct iovec iov = { blob, sizeof(blob) };
		tsr_msg_set_data(m, &iov, 1, rel_cb, &r);
		rc = tsr_conn_send(c, m, TSR_SEND_NOWAIT);
		sent++;
		if (rc < 0)
			break;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	ck_assert_int_eq(sink_wait(&cs, &cs.faults, 0, 1), 0);
	ck_assert_msg(cs.last_fault < 0, "fault %d", cs.last_fault);
	/* after the fault, a send fails at once */
	rc = tsr_conn_send(c, seq_msg(1), 0);
	ck_assert_msg(rc < 0, "send on a faulted lossy connection: %d", rc);
	/* every data buffer came back exactly once */
	for (int t = 0; t < 500 && r.calls < sent; t++) {
		struct timespec ts = { 0, 10 * 1000000 };
		nanosleep(&ts, NULL);
	}
	ck_assert_int_eq(r.calls, sent);
	ck_assert(log_wait("closing"));
	tsr_conn_put(c);
	tsr_msgr_destroy(cli);
	sink_fini(&ss);
	sink_fini(&cs);
}
END_TEST

/* The server restarts (same address, new instance): the lossless client
 * reconnects, hears `reset`, and what the old server never acknowledged
 * reaches the new one.  The old server received 0..9 but may not have
 * acknowledged all of them before it went: the new one gets a suffix of
 * those again, then 10..19, in order and without a gap. */
START_TEST(peer_restart)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	char addr[64];

	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	snprintf(addr, sizeof(addr), "%s", tsr_msgr_addr(srv));
	cli = mk(TSR_ENTITY_OSD, 2, NULL, &cs, drop_often);
	ck_assert_int_eq(tsr_msgr_connect(cli, addr, 1, &c), 0);
	for (uint64_t i = 0; i < 10; i++)
		ck_assert_int_eq(tsr_conn_send(c, seq_msg(i), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.next, 1, 10), 0);
	if (ss.accepted) {
		tsr_conn_put(ss.accepted);
		ss.accepted = NULL;
	}
	tsr_msgr_destroy(srv);
	/* queued while the server is down */
	for (uint64_t i = 10; i < 20; i++)
		ck_assert_int_eq(tsr_conn_send(c, seq_msg(i), 0), 0);
	{
		struct sink s2;
		sink_init(&s2);
		s2.any_start = 1;
		srv = mk(TSR_ENTITY_OSD, 1, addr, &s2, NULL);
		ck_assert_msg(sink_wait(&s2, &s2.next, 1, 20) == 0,
			      "new server got up to %llu (bad %llu)",
			      (unsigned long long)s2.next, (unsigned long long)s2.bad);
		ck_assert_int_eq(s2.bad, 0);
		ck_assert_msg(s2.first <= 10, "the new server started at %llu: "
			      "messages lost", (unsigned long long)s2.first);
		ck_assert_int_eq(sink_wait(&cs, &cs.resets, 0, 1), 0);
		tsr_msgr_destroy(srv);
		sink_fini(&s2);
	}
	tsr_conn_put(c);
	tsr_msgr_destroy(cli);
	sink_fini(&ss);
	sink_fini(&cs);
}
END_TEST

static int
raw_connect(const char *addr)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	const char *colon = strrchr(addr, ':');
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	a.sin_port = htons((uint16_t)atoi(colon + 1));
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Is fd closed by the other side within the bound? */
static int
closed_by_peer(int fd)
{
	struct timeval tv = { WAIT_MS / 1000, 0 };
	char b[256];

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (;;) {
		ssize_t r = read(fd, b, sizeof(b));
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			return 1;
		if (r < 0)
			return 0;
	}
}

static void
short_idle(struct tsr_msgr_opts *o)
{
	o->idle_timeout_ms = 600;
	o->keepalive_ms = 200;
	o->max_front = 1 << 20;
	o->max_data = 1 << 20;
}

/* Bad peers, one after the other, each cut off with its reason in the
 * log, while a good client keeps its session. */
START_TEST(malicious_peers)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	const char *addr;
	uint64_t sent = 0;

	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, short_idle);
	addr = tsr_msgr_addr(srv);
	cli = mk(TSR_ENTITY_OSD, 2, NULL, &cs, short_idle);
	ck_assert_int_eq(tsr_msgr_connect(cli, addr, 1, &c), 0);

	/* 1: garbage bytes */
	{
		int fd = raw_connect(addr);
		char g[100];
		memset(g, 'Z', sizeof(g));
		ck_assert_int_eq(write(fd, g, sizeof(g)), (ssize_t)sizeof(g));
		ck_assert(closed_by_peer(fd));
		close(fd);
		ck_assert(log_wait("bad frame from peer: bad magic"));
	}
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(sent++), 0), 0);
	/* 2: a well-formed header announcing a 2 GiB front */
	{
		int fd = raw_connect(addr);
		struct tsr_frame_hdr h = { .version = TSR_FRAME_VERSION,
					   .type = TSR_MSG_HELLO,
					   .front_len = 0x7fffffff };
		uint8_t b[TSR_FRAME_HDR];
		tsr_frame_hdr_encode(&h, b);
		ck_assert_int_eq(write(fd, b, sizeof(b)), (ssize_t)sizeof(b));
		ck_assert(closed_by_peer(fd));
		close(fd);
		ck_assert(log_wait("front longer than the maximum"));
	}
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(sent++), 0), 0);
	/* 3: half a frame, then silence: the idle timeout cuts it */
	{
		int fd = raw_connect(addr);
		struct tsr_frame_hdr h = { .version = TSR_FRAME_VERSION,
					   .type = TSR_MSG_HELLO, .front_len = 100 };
		uint8_t b[TSR_FRAME_HDR];
		tsr_frame_hdr_encode(&h, b);
		ck_assert_int_eq(write(fd, b, sizeof(b)), (ssize_t)sizeof(b));
		ck_assert(closed_by_peer(fd));
		close(fd);
		ck_assert(log_wait("nothing heard for 600 ms"));
	}
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(sent++), 0), 0);
	/* 4: a hello from another cluster: refused, both sides say why */
	{
		struct sink xs;
		struct tsr_msgr_opts o;
		struct tsr_msgr_events ev = { ev_accept, ev_fault, ev_reset, &xs };
		struct tsr_msgr *other;
		struct tsr_conn *oc;
		char err[256];

		sink_init(&xs);
		memset(&o, 0, sizeof(o));
		memcpy(o.fsid, "another-cluster", 16);
		o.entity_type = TSR_ENTITY_CLIENT;
		o.entity_id = 4;
		tsr_msgr_opts_default(&o);
		ck_assert_int_eq(tsr_msgr_create(&o, &ev, &other, err, sizeof(err)), 0);
		ck_assert_int_eq(tsr_msgr_connect(other, addr, 0, &oc), 0);
		/* the refusal may beat the send: then the send fails with it */
		int src = tsr_conn_send(oc, seq_msg(0), 0);
		ck_assert_msg(src == 0 || src == -ECONNREFUSED, "send: %d", src);
		ck_assert_int_eq(sink_wait(&xs, &xs.faults, 0, 1), 0);
		ck_assert(log_wait("refused: peer belongs to another cluster"));
		ck_assert(log_wait("the peer refused us: \"peer belongs to another "
				   "cluster (fsid differs)\""));
		tsr_conn_put(oc);
		tsr_msgr_destroy(other);
		sink_fini(&xs);
	}
	/* 5: a header with a bad checksum */
	{
		int fd = raw_connect(addr);
		struct tsr_frame_hdr h = { .version = TSR_FRAME_VERSION,
					   .type = TSR_MSG_HELLO, .front_len = 4 };
		uint8_t b[TSR_FRAME_HDR];
		tsr_frame_hdr_encode(&h, b);
		b[12] ^= 1;
		ck_assert_int_eq(write(fd, b, sizeof(b)), (ssize_t)sizeof(b));
		ck_assert(closed_by_peer(fd));
		close(fd);
		ck_assert(log_wait("header checksum mismatch"));
	}
	/* the good session went on through all of it */
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(sent++), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.next, 1, sent), 0);
	ck_assert_int_eq(ss.bad, 0);
	{
		struct tsr_msgr_stats st;
		tsr_msgr_stats(srv, &st);
		ck_assert_int_ge(st.bad_frames, 3);
		ck_assert_int_ge(st.refused, 1);
	}
	pair_fini(c, cli, srv, &ss, &cs);
}
END_TEST


/* ---- Authentication (auth/auth.h) -----------------------------------------*/

static uint8_t secret_a[32], secret_b[32];
static struct tsr_auth *auth_srv, *auth_cli, *auth_wrong;

static void with_srv_auth(struct tsr_msgr_opts *o) { o->auth = auth_srv; }
static void with_cli_auth(struct tsr_msgr_opts *o) { o->auth = auth_cli; }
static void with_wrong_auth(struct tsr_msgr_opts *o) { o->auth = auth_wrong; }

static void
auth_setup(void)
{
	uint8_t k[32];

	tsr_auth_secret_new(secret_a);
	tsr_auth_secret_new(secret_b);
	ck_assert_int_eq(tsr_auth_from_secret(secret_a, "mon.a", &auth_srv), 0);
	tsr_auth_derive(secret_a, "osd.3", k);
	ck_assert_int_eq(tsr_auth_from_key("osd.3", k, &auth_cli), 0);
	tsr_auth_derive(secret_b, "osd.3", k);  /* another cluster's secret */
	ck_assert_int_eq(tsr_auth_from_key("osd.3", k, &auth_wrong), 0);
}

static void
auth_teardown(void)
{
	tsr_auth_destroy(auth_srv);
	tsr_auth_destroy(auth_cli);
	tsr_auth_destroy(auth_wrong);
}

/* One client of srv with tweak: 0 when a message got through, or the
 * fault its session ended with. */
static int
auth_try(const char *addr, const char *target,
	 void (*tweak)(struct tsr_msgr_opts *), struct sink *srv_sink)
{
	struct sink xs;
	struct tsr_msgr *m;
	struct tsr_conn *c;
	uint64_t before;
	int rc;

	sink_init(&xs);
	m = mk(TSR_ENTITY_CLIENT, 9, NULL, &xs, tweak);
	pthread_mutex_lock(&srv_sink->mu);
	before = srv_sink->n;
	pthread_mutex_unlock(&srv_sink->mu);
	ck_assert_int_eq(tsr_msgr_connect_to(m, addr, target, 0, &c), 0);
	/* the refusal may beat the send: then the send fails with it */
	rc = tsr_conn_send(c, seq_msg(srv_sink->next), 0);
	for (int i = 0; rc == 0 && i < WAIT_MS / 10; i++) {
		struct timespec ts = { 0, 10 * 1000000 };
		pthread_mutex_lock(&xs.mu);
		if (xs.faults)
			rc = xs.last_fault;
		pthread_mutex_unlock(&xs.mu);
		pthread_mutex_lock(&srv_sink->mu);
		if (srv_sink->n > before)
			rc = 1;
		pthread_mutex_unlock(&srv_sink->mu);
		nanosleep(&ts, NULL);
	}
	rc = rc == 1 ? 0 : rc == 0 ? -ETIMEDOUT : rc;
	tsr_conn_put(c);
	tsr_msgr_destroy(m);
	sink_fini(&xs);
	return rc;
}

/* The handshake proves both sides: the right key gets through with its
 * name known to the acceptor; a wrong key, no key, and an acceptor that
 * cannot prove it holds our key are each refused, with the reason in the
 * log, and the cluster's good sessions are not disturbed. */
START_TEST(auth_handshake)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli, *plain;
	struct tsr_conn *c;
	const char *addr;

	auth_setup();
	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_MON, 1, "127.0.0.1:0", &ss, with_srv_auth);
	addr = tsr_msgr_addr(srv);
	cli = mk(TSR_ENTITY_OSD, 3, NULL, &cs, with_cli_auth);
	/* a messenger with a key says whom it dials */
	ck_assert_int_eq(tsr_msgr_connect(cli, addr, 1, &c), -EINVAL);
	ck_assert_int_eq(tsr_msgr_connect_to(cli, addr, "mon.a", 1, &c), 0);
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(0), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.next, 1, 1), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.accepts, 0, 1), 0);
	ck_assert_ptr_nonnull(ss.accepted);
	ck_assert_str_eq(tsr_conn_peer_auth(ss.accepted), "osd.3");
	ck_assert_ptr_null(tsr_conn_peer_auth(c)); /* a connector's peer: a
						     * holder of our key */

	/* a key of another secret */
	ck_assert_int_eq(auth_try(addr, "mon.a", with_wrong_auth, &ss), -EACCES);
	ck_assert(log_wait("authentication failed for osd.3: wrong key"));
	/* no key at all */
	ck_assert_int_eq(auth_try(addr, NULL, NULL, &ss), -ECONNREFUSED);
	ck_assert(log_wait("authentication required"));
	/* a handshake meant for another monitor (one relayed by whoever
	 * squats an address we dial) */
	ck_assert_int_eq(auth_try(addr, "mon.b", with_cli_auth, &ss), -ECONNREFUSED);
	ck_assert(log_wait("the peer meant to reach mon.b, not mon.a"));
	/* an acceptor that asks for no proof cannot prove it holds ours */
	{
		struct sink ps;
		sink_init(&ps);
		plain = mk(TSR_ENTITY_MON, 2, "127.0.0.1:0", &ps, NULL);
		ck_assert_int_eq(auth_try(tsr_msgr_addr(plain), "mon.b", with_cli_auth, &ps),
				 -EACCES);
		ck_assert(log_wait("did not prove it holds the key of osd.3"));
		ck_assert_int_eq(ps.n, 0);
		tsr_msgr_destroy(plain);
		sink_fini(&ps);
	}
	/* the good session went on */
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(1), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.next, 1, 2), 0);
	ck_assert_int_eq(ss.bad, 0);
	pair_fini(c, cli, srv, &ss, &cs);
	auth_teardown();
}
END_TEST

/* Regression (issue 16, "memory can be pinned before the handshake"): a
 * peer announcing a 1 MiB front and 64 MiB of data before any handshake
 * was held for the idle timeout with the buffers allocated.  Now the
 * frame is refused at its header, at once. */
START_TEST(prehandshake_frame_pins_no_memory)
{
	struct sink ss;
	struct tsr_msgr *srv;
	const char *addr;

	sink_init(&ss);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL); /* 30 s idle */
	addr = tsr_msgr_addr(srv);
	for (int i = 0; i < 2; i++) {
		int fd = raw_connect(addr);
		struct tsr_frame_hdr h = { .version = TSR_FRAME_VERSION,
					   .type = TSR_MSG_HELLO,
					   .front_len = i ? 4096 : 1u << 20,
					   .data_len = i ? 64u << 20 : 0,
					   .data_raw_len = i ? 64u << 20 : 0 };
		uint8_t b[TSR_FRAME_HDR];
		uint64_t t0 = tsr_mono_ns();
		tsr_frame_hdr_encode(&h, b);
		ck_assert_int_eq(write(fd, b, sizeof(b)), (ssize_t)sizeof(b));
		ck_assert(closed_by_peer(fd));
		ck_assert_msg(tsr_mono_ns() - t0 < 5000000000ull,
			      "closed only after %.1f s", (tsr_mono_ns() - t0) / 1e9);
		close(fd);
	}
	ck_assert(log_wait("longer than the maximum"));
	tsr_msgr_destroy(srv);
	sink_fini(&ss);
}
END_TEST

static void
small_budget(struct tsr_msgr_opts *o)
{
	o->recv_budget = 1u << 20;
}

/* The messenger-wide budget: with every handler blocked, two clients
 * streaming 64 KiB messages fill no more than the budget (and a message
 * per connection) before reading pauses; all arrive once handlers go on. */
START_TEST(recv_budget_pauses_reading)
{
	struct sink ss, c1s, c2s;
	struct tsr_msgr *srv, *c1, *c2;
	struct tsr_conn *a, *b;
	struct tsr_msgr_stats st;
	static uint8_t blob[64 << 10];
	const int per = 40;

	gate_set(0);
	sink_init(&ss);
	sink_init(&c1s);
	sink_init(&c2s);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, small_budget);
	c1 = mk(TSR_ENTITY_OSD, 2, NULL, &c1s, NULL);
	c2 = mk(TSR_ENTITY_OSD, 3, NULL, &c2s, NULL);
	ck_assert_int_eq(tsr_msgr_connect(c1, tsr_msgr_addr(srv), 1, &a), 0);
	ck_assert_int_eq(tsr_msgr_connect(c2, tsr_msgr_addr(srv), 1, &b), 0);
	for (int i = 0; i < per; i++) {
		struct iovec iov = { blob, sizeof(blob) };
		struct tsr_msg *m1 = tsr_msg_new(T_SLOW, NULL, 0);
		struct tsr_msg *m2 = tsr_msg_new(T_SLOW, NULL, 0);
		tsr_msg_set_data(m1, &iov, 1, NULL, NULL);
		tsr_msg_set_data(m2, &iov, 1, NULL, NULL);
		ck_assert_int_eq(tsr_conn_send(a, m1, 0), 0);
		ck_assert_int_eq(tsr_conn_send(b, m2, 0), 0);
	}
	ck_assert_int_eq(gate_wait_entered(2), 0);
	struct timespec ts = { 1, 0 };
	nanosleep(&ts, NULL); /* let everything that may arrive, arrive */
	tsr_msgr_stats(srv, &st);
	ck_assert_msg(st.recv_queued <= (1u << 20) + 2 * sizeof(blob),
		      "%llu bytes wait for handlers, budget 1 MiB",
		      (unsigned long long)st.recv_queued);
	ck_assert_uint_ge(st.recv_queued, 512u << 10);
	gate_set(1);
	ck_assert_int_eq(gate_wait_entered(2 * per), 0);
	tsr_msgr_stats(srv, &st);
	ck_assert_uint_eq(st.recv_queued, 0);
	tsr_conn_put(a);
	tsr_conn_put(b);
	tsr_msgr_destroy(c1);
	tsr_msgr_destroy(c2);
	tsr_msgr_destroy(srv);
	sink_fini(&ss);
	sink_fini(&c1s);
	sink_fini(&c2s);
}
END_TEST

static long
count_lines(const char *needle)
{
	char *t = log_text();
	long n = 0;

	for (char *p = t; (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(t);
	return n;
}

/* CPU seconds pid has used (utime + stime from /proc). */
static double
cpu_seconds(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), f) != NULL) {
		char *p = strrchr(buf, ')');
		/* after ") S": ppid pgrp session tty tpgid flags minflt
		 * cminflt majflt cmajflt utime stime */
		if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u "
					"%*u %*u %*u %lu %lu", &ut, &st) != 2)
			ut = st = 0;
	}
	fclose(f);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Regression (issue 16, "out of file descriptors, the monitor spins and
 * floods its log"): under a low descriptor limit, 100 connections made a
 * listener spend all its CPU on accept and write millions of lines.  Now
 * it sheds one connection at a time, pauses, and logs at a rate. */
START_TEST(out_of_descriptors_no_spin)
{
	int pfd[2], conns[100], nconn = 0;
	char addr[64] = "";
	pid_t pid;

	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sink ss;
		struct tsr_msgr *srv;
		struct rlimit rl;
		int top = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(pfd[0]);
		sink_init(&ss);
		srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
		/* a few descriptors free, no more: fill the holes below the
		 * highest open one, then set the limit just above it */
		for (int fd = 0; fd < 4096; fd++)
			if (fcntl(fd, F_GETFD) >= 0)
				top = fd;
		for (int fd = 0; fd >= 0 && fd < top;)
			fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = (rlim_t)top + 6;
		setrlimit(RLIMIT_NOFILE, &rl);
		if (write(pfd[1], tsr_msgr_addr(srv), strlen(tsr_msgr_addr(srv)) + 1) < 0)
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ck_assert_int_gt(read(pfd[0], addr, sizeof(addr) - 1), 0);
	close(pfd[0]);
	double cpu0 = cpu_seconds(pid);
	ck_assert(cpu0 >= 0);
	for (int i = 0; i < 100; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET };
		ck_assert_int_ge(fd, 0);
		sa.sin_port = htons((uint16_t)atoi(strrchr(addr, ':') + 1));
		inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
		connect(fd, (struct sockaddr *)&sa, sizeof(sa)); /* in progress */
		conns[nconn++] = fd;
	}
	struct timespec ts = { 2, 0 };
	nanosleep(&ts, NULL);
	double cpu = cpu_seconds(pid);
	ck_assert_msg(cpu >= 0, "the listener died");
	cpu -= cpu0;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < nconn; i++)
		close(conns[i]);
	ck_assert_msg(cpu < 0.5, "the listener used %.2f s of CPU in 2 s", cpu);
	ck_assert_msg(count_lines("Too many open files") <= 3,
		      "%ld log lines about it", count_lines("Too many open files"));
	ck_assert_int_ge(count_lines("Too many open files"), 1);
}
END_TEST

/* Keepalives keep an idle session open past the idle timeout. */
START_TEST(keepalive)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	struct tsr_msgr_stats st;

	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, short_idle);
	cli = mk(TSR_ENTITY_CLIENT, 2, NULL, &cs, short_idle);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 0, &c), 0);
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(0), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 1), 0);
	struct timespec ts = { 2, 0 }; /* > 3 idle timeouts */
	nanosleep(&ts, NULL);
	ck_assert_int_eq(sink_faults(&cs), 0);
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(1), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 2), 0);
	tsr_msgr_stats(cli, &st);
	ck_assert_int_eq(st.faults, 0);
	pair_fini(c, cli, srv, &ss, &cs);
}
END_TEST

/* srv's count of ack frames of their own, once it is past before or
 * after ms milliseconds. */
static uint64_t
acks_past(struct tsr_msgr *srv, uint64_t before, unsigned ms)
{
	uint64_t t0 = tsr_mono_ns();
	struct tsr_msgr_stats st;

	do {
		struct timespec ts = { 0, 2 * 1000000 };
		nanosleep(&ts, NULL);
		tsr_msgr_stats(srv, &st);
	} while (st.acks_sent == before && tsr_mono_ns() - t0 < (uint64_t)ms * 1000000u);
	return st.acks_sent;
}

/* A lossless session's acks ride on the frames going back: 200 echoes,
 * one at a time, need almost no ack frames of their own (each would be a
 * write and a wake-up of the peer); messages nothing answers are acked
 * by the receiver's ack timer, once for many. */
START_TEST(acks_ride_replies)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	struct tsr_msgr_stats st;
	uint64_t before, now;

	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	cli = mk(TSR_ENTITY_OSD, 2, NULL, &cs, NULL);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c), 0);
	for (int i = 0; i < 200; i++) {
		uint8_t b[8] = { (uint8_t)i };
		ck_assert_int_eq(tsr_conn_send(c, tsr_msg_new(T_ECHO, b, sizeof(b)), 0), 0);
		ck_assert_msg(sink_wait(&cs, &cs.n, 1, (uint64_t)i + 1) == 0, "no echo %d", i);
	}
	tsr_msgr_stats(srv, &st);
	fprintf(stderr, "acks_ride_replies: 200 echoes, %llu ack frames from the "
		"echoing side\n", (unsigned long long)st.acks_sent);
	ck_assert_msg(st.acks_sent <= 20, "%llu ack frames for 200 echoes",
		      (unsigned long long)st.acks_sent);
	/* one way: the timer acks them, with one frame or a few */
	before = st.acks_sent;
	for (uint64_t i = 0; i < 10; i++)
		ck_assert_int_eq(tsr_conn_send(c, seq_msg(i), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 10), 0);
	now = acks_past(srv, before, 2000);
	ck_assert_msg(now > before, "10 messages never acked");
	ck_assert_msg(now - before <= 3, "%llu ack frames for 10 messages",
		      (unsigned long long)(now - before));
	pair_fini(c, cli, srv, &ss, &cs);
}
END_TEST

static void
slow_acks(struct tsr_msgr_opts *o)
{
	o->ack_delay_ms = 60000;
}

/* TSR_SEND_MORE queues without writing: tsr_conn_flush writes what was
 * queued, in order, in one write.  A sender that forgets the flush
 * delays its messages but loses none: the worker's next tick writes
 * them. */
START_TEST(more_then_flush)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	struct tsr_msgr_stats st;
	uint64_t writes;

	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	cli = mk(TSR_ENTITY_OSD, 2, NULL, &cs, NULL);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c), 0);
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(0), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 1), 0); /* (open) */
	tsr_msgr_stats(cli, &st);
	writes = st.writes;
	for (uint64_t i = 1; i <= 5; i++)
		ck_assert_int_eq(tsr_conn_send(c, seq_msg(i), TSR_SEND_MORE), 0);
	tsr_conn_flush(c);
	/* one write for the five (or two: a worker's tick may have written
	 * some in between) */
	tsr_msgr_stats(cli, &st);
	ck_assert_msg(st.writes - writes >= 1 && st.writes - writes <= 2,
		      "%llu writes for five messages and a flush",
		      (unsigned long long)(st.writes - writes));
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 6), 0);
	/* no flush: they go all the same */
	for (uint64_t i = 6; i <= 8; i++)
		ck_assert_int_eq(tsr_conn_send(c, seq_msg(i), TSR_SEND_MORE), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 9), 0);
	pthread_mutex_lock(&ss.mu);
	ck_assert_uint_eq(ss.bad, 0);
	ck_assert_uint_eq(ss.next, 9);
	pthread_mutex_unlock(&ss.mu);
	pair_fini(c, cli, srv, &ss, &cs);
}
END_TEST

static void
note_release(void *arg, int result)
{
	(void)result;
	__atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
}

/* Acks the sender needs soon go at once, whatever the delay: a message
 * of 64 KiB or more (its sender is given its buffer back), and the 64th
 * small one. */
START_TEST(acks_at_once_past_limits)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	struct tsr_msgr_stats st;
	static uint8_t big[100 << 10];
	static int released;
	struct tsr_msg *x;
	struct iovec iov = { big, sizeof(big) };
	uint64_t t0, now;

	sink_init(&ss);
	sink_init(&cs);
	released = 0;
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, slow_acks);
	cli = mk(TSR_ENTITY_OSD, 2, NULL, &cs, NULL);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c), 0);
	x = tsr_msg_new(T_REPLY, "b", 1);
	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(tsr_msg_set_data(x, &iov, 1, note_release, &released), 0);
	ck_assert_int_eq(tsr_conn_send(c, x, 0), 0);
	t0 = tsr_mono_ns();
	while (!__atomic_load_n(&released, __ATOMIC_ACQUIRE) &&
	       tsr_mono_ns() - t0 < 5000000000ull) {
		struct timespec ts = { 0, 2 * 1000000 };
		nanosleep(&ts, NULL);
	}
	ck_assert_msg(__atomic_load_n(&released, __ATOMIC_ACQUIRE),
		      "a 100 KiB message not acked within 5 s (the delay is 60 s)");
	tsr_msgr_stats(srv, &st);
	ck_assert_uint_eq(st.acks_sent, 1);
	for (uint64_t i = 0; i < 63; i++)
		ck_assert_int_eq(tsr_conn_send(c, seq_msg(i), 0), 0);
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 63), 0);
	tsr_msgr_stats(srv, &st);
	ck_assert_uint_eq(st.acks_sent, 1); /* 63 wait for the timer */
	ck_assert_int_eq(tsr_conn_send(c, seq_msg(63), 0), 0);
	now = acks_past(srv, 1, 5000);
	ck_assert_msg(now == 2, "64 messages: %llu ack frames", (unsigned long long)now);
	pair_fini(c, cli, srv, &ss, &cs);
}
END_TEST

/* Two processes: a child echoes, the parent checks. */
START_TEST(two_processes)
{
	int p[2];
	pid_t pid;
	char addr[64] = "";

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sink s;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		struct tsr_msgr *srv;

		close(p[0]);
		sink_init(&s);
		srv = mk(TSR_ENTITY_OSD, 7, "127.0.0.1:0", &s, NULL);
		char a[64] = "";
		snprintf(a, sizeof(a), "%s", tsr_msgr_addr(srv));
		if (write(p[1], a, sizeof(a)) != (ssize_t)sizeof(a))
			_exit(1);
		/* serve until the parent kills us (or dies: PDEATHSIG), and
		 * never longer than the wait bound */
		sleep(WAIT_MS / 1000 + 10);
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], addr, sizeof(addr)), (ssize_t)sizeof(addr));
	{
		struct sink cs;
		struct tsr_msgr *cli;
		struct tsr_conn *c;

		sink_init(&cs);
		cli = mk(TSR_ENTITY_CLIENT, 8, NULL, &cs, NULL);
		ck_assert_int_eq(tsr_msgr_connect(cli, addr, 0, &c), 0);
		for (int i = 0; i < 1000; i++) {
			char f[32];
			int n = snprintf(f, sizeof(f), "ping %d", i);
			ck_assert_int_eq(tsr_conn_send(c, tsr_msg_new(T_ECHO, f, (size_t)n), 0), 0);
			ck_assert_msg(sink_wait(&cs, &cs.n, 1, (uint64_t)i + 1) == 0,
				      "no reply to ping %d", i);
			pthread_mutex_lock(&cs.mu);
			ck_assert_int_eq(cs.last->front_len, (size_t)n);
			ck_assert_int_eq(memcmp(cs.last->front, f, (size_t)n), 0);
			pthread_mutex_unlock(&cs.mu);
		}
		tsr_conn_put(c);
		tsr_msgr_destroy(cli);
		sink_fini(&cs);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[0]);
}
END_TEST

/* The ms_* keys and fsid of a cluster file reach the options; a bad fsid
 * is refused naming the file, the line and the key. */
START_TEST(options_from_config)
{
	struct tsr_conf *conf;
	struct tsr_msgr_opts o;
	char err[512];

	ck_assert_int_eq(tsr_conf_load_string(
		"global = { fsid = \"0123abcd-4567-89ab-cdef-0123456789AB\"; };\n"
		"osd = { ms_inject_drop_every = 7; ms_keepalive = \"2s\";\n"
		"        ms_max_data = \"8M\"; ms_compress_min = \"64K\"; };\n",
		"t.conf", &conf, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_conf_resolve(conf, "osd", "1", NULL, err, sizeof(err)), 0);
	memset(&o, 0, sizeof(o));
	ck_assert_msg(tsr_msgr_opts_from_conf(conf, &o, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(o.fsid[0], 0x01);
	ck_assert_int_eq(o.fsid[15], 0xab);
	ck_assert_int_eq(o.inject_drop_every, 7);
	ck_assert_int_eq(o.keepalive_ms, 2000);
	ck_assert_int_eq(o.max_data, 8u << 20);
	ck_assert_int_eq(o.compress_min, 64u << 10);
	ck_assert_int_eq(o.workers, 2);           /* defaults */
	ck_assert_int_eq(o.idle_timeout_ms, 30000);
	tsr_conf_destroy(conf);

	ck_assert_int_eq(tsr_conf_load_string("global = { fsid = \"not-a-uuid\"; };\n",
					      "bad.conf", &conf, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_conf_resolve(conf, "osd", "1", NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(tsr_msgr_opts_from_conf(conf, &o, err, sizeof(err)), -EINVAL);
	ck_assert_contains(err, "bad.conf:1: option 'fsid': expected a UUID");
	tsr_conf_destroy(conf);
}
END_TEST


/* A handler that blocks holds up its own connection only: another
 * client's messages are handled meanwhile. */
START_TEST(slow_handler_isolated)
{
	struct sink ss, c1s, c2s;
	struct tsr_msgr *srv, *c1, *c2;
	struct tsr_conn *a, *b;

	sink_init(&ss);
	sink_init(&c1s);
	sink_init(&c2s);
	gate_set(0);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	c1 = mk(TSR_ENTITY_CLIENT, 11, NULL, &c1s, NULL);
	c2 = mk(TSR_ENTITY_CLIENT, 12, NULL, &c2s, NULL);
	ck_assert_int_eq(tsr_msgr_connect(c1, tsr_msgr_addr(srv), 0, &a), 0);
	ck_assert_int_eq(tsr_msgr_connect(c2, tsr_msgr_addr(srv), 0, &b), 0);
	ck_assert_int_eq(tsr_conn_send(a, tsr_msg_new(T_SLOW, "s", 1), 0), 0);
	ck_assert_int_eq(tsr_conn_send(a, seq_msg(0), 0), 0); /* waits behind it */
	ck_assert_int_eq(gate_wait_entered(1), 0);
	for (uint64_t i = 0; i < 100; i++)
		ck_assert_int_eq(tsr_conn_send(b, seq_msg(i), 0), 0);
	ck_assert_msg(sink_wait(&ss, &ss.n, 1, 100) == 0,
		      "other connection stalled: %llu of 100", (unsigned long long)ss.n);
	ck_assert_int_eq(ss.n, 100); /* a's T_SEQ is still behind the gate */
	gate_set(1);
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 101), 0);
	tsr_conn_put(a);
	tsr_conn_put(b);
	tsr_msgr_destroy(c1);
	tsr_msgr_destroy(c2);
	tsr_msgr_destroy(srv);
	sink_fini(&ss);
	sink_fini(&c1s);
	sink_fini(&c2s);
}
END_TEST

static void
small_queues(struct tsr_msgr_opts *o)
{
	o->send_queue_bytes = 1u << 20;
	o->recv_queue_bytes = 1u << 20;
}

/* A receiver that stops handling: its queue of unhandled messages stays
 * near its limit (reading pauses), and the sender's queue fills to its own
 * limit and then refuses (NOWAIT) instead of growing; once the receiver
 * goes on, everything arrives. */
START_TEST(backpressure)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	static uint8_t blob[64 << 10];
	uint64_t queued = 0;
	int refused = 0;

	sink_init(&ss);
	sink_init(&cs);
	gate_set(0);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, small_queues);
	cli = mk(TSR_ENTITY_OSD, 2, NULL, &cs, small_queues);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c), 0);
	ck_assert_int_eq(tsr_conn_send(c, tsr_msg_new(T_SLOW, "s", 1), 0), 0);
	ck_assert_int_eq(gate_wait_entered(1), 0);
	/* 64 KiB messages until the sender says no: bounded by the two
	 * queues and the socket buffers, never by memory */
	for (int i = 0; i < 100000 && refused < 50; i++) {
		struct tsr_msg *m = tsr_msg_new(T_SEQ, (uint8_t[8]){ 0 }, 8);
		struct iovec iov = { blob, sizeof(blob) };
		tsr_msg_set_data(m, &iov, 1, NULL, NULL);
		m->front[0] = (uint8_t)queued; /* the counter, little-endian */
		for (int k = 1; k < 8; k++)
			m->front[k] = (uint8_t)(queued >> (8 * k));
		if (tsr_conn_send(c, m, TSR_SEND_NOWAIT) == -EAGAIN) {
			refused++;
			struct timespec ts = { 0, 2 * 1000000 };
			nanosleep(&ts, NULL);
		} else {
			queued++;
		}
	}
	ck_assert_msg(refused >= 50, "the sender never pushed back");
	/* sender queue 1 MiB + receiver 1 MiB + socket buffers: far below
	 * what 100,000 messages would be */
	ck_assert_msg(queued * sizeof(blob) < (64u << 20),
		      "%llu messages queued before push-back",
		      (unsigned long long)queued);
	fprintf(stderr, "backpressure: %llu messages of 64 KiB queued before the "
		"sender refused\n", (unsigned long long)queued);
	gate_set(1);
	ck_assert_msg(sink_wait(&ss, &ss.next, 1, queued) == 0,
		      "%llu of %llu arrived after the receiver went on",
		      (unsigned long long)ss.next, (unsigned long long)queued);
	ck_assert_int_eq(ss.bad, 0);
	pair_fini(c, cli, srv, &ss, &cs);
}
END_TEST

static void
refuse_every_2(struct tsr_msgr_opts *o)
{
	o->inject_refuse_every = 2;
	o->inject_delay_ms = 300;
}

static void
fast_reconnect(struct tsr_msgr_opts *o)
{
	o->reconnect_min_ms = 1;
	o->reconnect_max_ms = 20;
}

/* Injected refusals and delays: a lossless client gets through on a
 * later attempt, and delivery waits the configured delay. */
START_TEST(inject_refuse_and_delay)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c[2];
	uint64_t t0;

	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, refuse_every_2);
	cli = mk(TSR_ENTITY_OSD, 2, NULL, &cs, fast_reconnect);
	t0 = tsr_mono_ns();
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 1, &c[i]), 0);
		ck_assert_int_eq(tsr_conn_send(c[i], seq_msg(0), 0), 0);
	}
	ck_assert_int_eq(sink_wait(&ss, &ss.n, 1, 2), 0);
	ck_assert_msg(tsr_mono_ns() - t0 >= 300 * 1000000ull, "delivered before "
		      "the injected delay");
	ck_assert(log_wait("connection refused (fault injection)"));
	for (int i = 0; i < 2; i++)
		tsr_conn_put(c[i]);
	tsr_msgr_destroy(cli);
	tsr_msgr_destroy(srv);
	sink_fini(&ss);
	sink_fini(&cs);
}
END_TEST

/* One log file per run of this program, made and removed by main() (which
 * outlives every forked test, also one that fails or times out);
 * emptied before each test, so a test finds only its own lines. */
static void
setup(void)
{
	char err[256];

	ck_assert_int_eq(truncate(logpath, 0), 0);
	ck_assert_int_eq(tsr_log_open(logpath, err, sizeof(err)), 0);
	tsr_log_set_level(-1, TSR_LOG_INFO);
}

static void
teardown(void)
{
	tsr_log_close();
}

/* ---- One messenger, several owners ----------------------------------------*/

#define T_FILL (TSR_MSG_USER + 5)   /* the handler fills a queue (below) */

/* A socket that listens and never accepts: a connection to it gets
 * through TCP (the backlog) and never past the handshake, so what is sent
 * on it stays queued. */
static int
silent_listener(char *addr, size_t n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(addr, n, "127.0.0.1:%u", ntohs(sa.sin_port));
	return fd;
}

/* What a sender that must not wait saw. */
struct filler {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct tsr_msgr *m;
	char addr[64];
	int done, result, queued;
	uint64_t took_ns;            /* from the first refusal's send */
};

/* Send 64 KiB messages on a connection that never drains, without
 * NOWAIT, until one is refused; the result and how long that send took. */
static void
fill_queue(struct filler *f)
{
	static uint8_t blob[64 << 10];
	struct tsr_conn *c;
	int rc = 0, queued = 0;
	uint64_t t = 0;

	if (tsr_msgr_connect(f->m, f->addr, 1, &c) < 0) {
		rc = -EINVAL;
	} else {
		for (int i = 0; i < 1000 && rc == 0; i++) {
			struct tsr_msg *x = tsr_msg_new(T_SEQ, "x", 1);
			struct iovec iov = { blob, sizeof(blob) };
			tsr_msg_set_data(x, &iov, 1, NULL, NULL);
			t = tsr_mono_ns();
			rc = tsr_conn_send(c, x, 0);   /* a wait here would hang */
			t = tsr_mono_ns() - t;
			queued += rc == 0;
		}
		tsr_conn_close(c);
		tsr_conn_put(c);
	}
	pthread_mutex_lock(&f->mu);
	f->result = rc;
	f->queued = queued;
	f->took_ns = t;
	f->done = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

static void
on_fill(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	(void)c;
	tsr_msg_free(m, 0);
	fill_queue(arg);
}

static void
fill_post(void *arg)
{
	fill_queue(arg);
}

static int
filler_wait(struct filler *f, int ms)
{
	uint64_t end = tsr_mono_ns() + (uint64_t)ms * 1000000u;
	int done;

	pthread_mutex_lock(&f->mu);
	while (!f->done && tsr_mono_ns() < end) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	done = f->done;
	pthread_mutex_unlock(&f->mu);
	return done;
}

/* Bug (issue 17): tsr_conn_send waited for room on a dispatch thread (only
 * I/O threads were refused), so one slow peer stopped a handler — and with
 * it every connection that handler's thread served — for as long as the
 * peer did not read; a daemon's loop thread likewise.  Now a full queue
 * is -EAGAIN at once there, without TSR_SEND_NOWAIT; the program's own
 * threads still wait (backpressure). */
START_TEST(full_queue_never_blocks_dispatch_or_loop)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *c;
	struct filler f = { .mu = PTHREAD_MUTEX_INITIALIZER,
			    .cv = PTHREAD_COND_INITIALIZER };
	struct tsr_loop *loop;
	struct tsr_loop_thread *thr;
	int lfd;

	sink_init(&ss);
	sink_init(&cs);
	lfd = silent_listener(f.addr, sizeof(f.addr));
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, small_queues);
	cli = mk(TSR_ENTITY_CLIENT, 2, NULL, &cs, NULL);
	f.m = srv;
	/* on a dispatch thread: a handler of srv fills a queue */
	ck_assert_int_eq(tsr_msgr_register(srv, T_FILL, on_fill, &f, 0), 0);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 0, &c), 0);
	ck_assert_int_eq(tsr_conn_send(c, tsr_msg_new(T_FILL, "f", 1), 0), 0);
	ck_assert_msg(filler_wait(&f, 5000), "a handler waited for room on a full "
		      "send queue (a dispatch thread blocked)");
	ck_assert_int_eq(f.result, -EAGAIN);
	ck_assert_int_gt(f.queued, 0);
	ck_assert_msg(f.took_ns < 1000000000ull, "the refusal took %llu ms",
		      (unsigned long long)(f.took_ns / 1000000));
	/* on a loop's thread (a daemon's main loop, a module's) */
	f.done = 0;
	ck_assert_int_eq(tsr_loop_create(&loop), 0);
	ck_assert_int_eq(tsr_loop_thread_start(loop, &thr), 0);
	ck_assert_int_eq(tsr_loop_post(loop, fill_post, &f), 0);
	ck_assert_msg(filler_wait(&f, 5000), "a loop callback waited for room on a "
		      "full send queue");
	ck_assert_int_eq(f.result, -EAGAIN);
	tsr_loop_thread_stop(thr);
	tsr_loop_destroy(loop);
	tsr_conn_put(c);
	tsr_msgr_destroy(cli);
	tsr_msgr_destroy(srv);
	close(lfd);
	sink_fini(&ss);
	sink_fini(&cs);
}
END_TEST

/* What a connection's own events saw. */
struct owner {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int msgs, faults, last_fault, in_msg, slow_ms;
};

static void
own_msg(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct owner *o = arg;
	int slow;

	(void)c;
	tsr_msg_free(m, 0);
	pthread_mutex_lock(&o->mu);
	o->in_msg = 1;
	o->msgs++;
	slow = o->slow_ms;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	if (slow) {
		struct timespec ts = { 0, slow * 1000000L };
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&o->mu);
	o->in_msg = 0;
	pthread_mutex_unlock(&o->mu);
}

static void
own_fault(struct tsr_conn *c, int err, void *arg)
{
	struct owner *o = arg;

	(void)c;
	pthread_mutex_lock(&o->mu);
	o->faults++;
	o->last_fault = err;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
}

static int
owner_wait(struct owner *o, const int *v, int want)
{
	return wait_until(&o->mu, &o->cv, v, 0, (uint64_t)want) == 0;
}

/* Several modules share one messenger: each connection opened with events
 * of its own sends its messages (whatever their type, and though the
 * messenger has a handler for it) and its fault to its owner alone, and
 * the messenger's events hear nothing of it; a connection without keeps
 * the messenger's.  tsr_conn_close returns only once an own callback
 * running on another thread has returned, and none runs after. */
START_TEST(own_events_reach_only_their_owner)
{
	struct sink ss, cs, ss2;
	struct tsr_msgr *srv, *srv2, *cli;
	struct tsr_conn *a, *b, *d;
	struct owner o = { .mu = PTHREAD_MUTEX_INITIALIZER,
			   .cv = PTHREAD_COND_INITIALIZER };
	struct tsr_conn_events ev = { .fault = own_fault, .msg = own_msg,
				      .flags = TSR_MSGR_INLINE, .arg = &o };
	int msgs;

	sink_init(&ss);
	sink_init(&ss2);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	srv2 = mk(TSR_ENTITY_OSD, 3, "127.0.0.1:0", &ss2, NULL);
	cli = mk(TSR_ENTITY_CLIENT, 2, NULL, &cs, NULL);
	ck_assert_int_eq(tsr_msgr_connect_ev(cli, tsr_msgr_addr(srv), NULL, 0, &ev, &a), 0);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 0, &b), 0);
	/* T_REPLY has a handler (on_keep, into cs): a's go to o, b's there */
	ck_assert_int_eq(tsr_conn_send(a, tsr_msg_new(T_ECHO, "a", 1), 0), 0);
	ck_assert_int_eq(tsr_conn_send(b, tsr_msg_new(T_ECHO, "b", 1), 0), 0);
	ck_assert(owner_wait(&o, &o.msgs, 1));
	ck_assert_int_eq(sink_wait(&cs, &cs.n, 1, 1), 0);
	pthread_mutex_lock(&cs.mu);
	ck_assert_uint_eq(cs.n, 1);
	ck_assert_int_eq(cs.last->front[0], 'b');
	pthread_mutex_unlock(&cs.mu);
	/* a's session ends: its owner hears it, the messenger does not (b,
	 * to the same server, ends too: the messenger hears that one) */
	tsr_msgr_destroy(srv);
	ck_assert(owner_wait(&o, &o.faults, 1));
	ck_assert_int_lt(o.last_fault, 0);
	ck_assert_int_eq(sink_wait(&cs, &cs.faults, 0, 1), 0);
	ck_assert_int_eq(sink_faults(&cs), 1);
	tsr_conn_put(a);
	tsr_conn_put(b);

	/* close waits for a handler running on a dispatch thread, and no
	 * message of the connection reaches its owner after */
	ev.flags = 0;
	o.slow_ms = 300;
	ck_assert_int_eq(tsr_msgr_connect_ev(cli, tsr_msgr_addr(srv2), NULL, 0, &ev, &d), 0);
	msgs = o.msgs;
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(tsr_conn_send(d, tsr_msg_new(T_ECHO, "d", 1), 0), 0);
	ck_assert(owner_wait(&o, &o.msgs, msgs + 1));
	tsr_conn_close(d);
	pthread_mutex_lock(&o.mu);
	ck_assert_msg(o.in_msg == 0, "tsr_conn_close returned while the "
		      "connection's handler was running");
	msgs = o.msgs;
	pthread_mutex_unlock(&o.mu);
	{
		struct timespec ts = { 0, 700 * 1000000L };
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&o.mu);
	ck_assert_int_eq(o.msgs, msgs);
	ck_assert_int_eq(o.faults, 1);
	pthread_mutex_unlock(&o.mu);
	tsr_conn_put(d);
	tsr_msgr_destroy(cli);
	tsr_msgr_destroy(srv2);
	sink_fini(&ss);
	sink_fini(&ss2);
	sink_fini(&cs);
}
END_TEST

/* Where a connection's handler ran, by the size of the message's data. */
struct where {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n, small_io, small, large_io, large;
};

static void
on_where(struct tsr_conn *c, struct tsr_msg *m, void *arg)
{
	struct where *w = arg;
	char name[16] = "";
	int io;

	(void)c;
	pthread_getname_np(pthread_self(), name, sizeof(name));
	io = strcmp(name, "tsr-ms-io") == 0;
	pthread_mutex_lock(&w->mu);
	if (m->data_len > TSR_MSGR_INLINE_SMALL_MAX) {
		w->large++;
		w->large_io += io;
	} else {
		w->small++;
		w->small_io += io;
	}
	w->n++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	tsr_msg_free(m, 0);
}

/* Sends one message of type with data of each of sizes[0..n) on c. */
static void
send_sized(struct tsr_conn *c, uint32_t type, const size_t *sizes, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		struct tsr_msg *m = tsr_msg_new(type, "w", 1);
		ck_assert_ptr_nonnull(m);
		if (sizes[k]) {
			struct iovec iov = { .iov_base = calloc(1, sizes[k]), .iov_len = sizes[k] };
			ck_assert_ptr_nonnull(iov.iov_base);
			ck_assert_int_eq(tsr_msg_set_data(m, &iov, 1, free_buf, iov.iov_base), 0);
		}
		ck_assert_int_eq(tsr_conn_send(c, m, 0), 0);
	}
}

/* Waits (bounded) for n messages at w, then checks where they ran: the
 * small ones on the I/O thread, the large ones not. */
static void
where_check(struct where *w, int n, int small)
{
	wait_until(&w->mu, &w->cv, &w->n, 0, (uint64_t)n);
	pthread_mutex_lock(&w->mu);
	ck_assert_int_eq(w->n, n);
	ck_assert_int_eq(w->small, small);
	ck_assert_int_eq(w->small_io, small);
	ck_assert_int_eq(w->large, n - small);
	ck_assert_int_eq(w->large_io, 0);
	pthread_mutex_unlock(&w->mu);
}

/* TSR_MSGR_INLINE_SMALL: a message whose data is at most
 * TSR_MSGR_INLINE_SMALL_MAX bytes is handled on the I/O thread, a larger
 * one on a dispatch thread: a connection's own events so (as the object
 * client's OSD sessions), and a handler registered by type. */
START_TEST(inline_small_by_size)
{
	struct sink ss, cs;
	struct tsr_msgr *srv, *cli;
	struct tsr_conn *a;
	struct where w = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	struct tsr_conn_events ev = { .msg = on_where, .flags = TSR_MSGR_INLINE_SMALL,
				      .arg = &w };
	struct where w2 = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	const size_t sizes[] = { 0, 4096, TSR_MSGR_INLINE_SMALL_MAX,
				 TSR_MSGR_INLINE_SMALL_MAX + 1, 1u << 20 };
	struct tsr_conn *b;

	sink_init(&ss);
	sink_init(&cs);
	srv = mk(TSR_ENTITY_OSD, 1, "127.0.0.1:0", &ss, NULL);
	cli = mk(TSR_ENTITY_CLIENT, 2, NULL, &cs, NULL);
	ck_assert_int_eq(tsr_msgr_register(cli, TSR_MSG_USER + 40, on_where, &w, 0x4u),
			 -EINVAL);
	ck_assert_int_eq(tsr_msgr_connect_ev(cli, tsr_msgr_addr(srv), NULL, 0, &ev, &a), 0);
	send_sized(a, T_ECHO, sizes, 5); /* (answered as T_REPLY: to on_where) */
	where_check(&w, 5, 3);
	/* by type, at the server: a plain connection's messages */
	ck_assert_int_eq(tsr_msgr_register(srv, TSR_MSG_USER + 41, on_where, &w2,
					   TSR_MSGR_INLINE_SMALL), 0);
	ck_assert_int_eq(tsr_msgr_connect(cli, tsr_msgr_addr(srv), 0, &b), 0);
	send_sized(b, TSR_MSG_USER + 41, sizes, 5);
	where_check(&w2, 5, 3);
	tsr_conn_close(a);
	tsr_conn_put(a);
	tsr_conn_put(b);
	tsr_msgr_destroy(cli);
	tsr_msgr_destroy(srv);
	sink_fini(&ss);
	sink_fini(&cs);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("msgr");
	TCase *tc = tcase_create("loopback");
	SRunner *sr;
	int failed, fd;

	signal(SIGPIPE, SIG_IGN);
	if (getenv("TSR_TEST_LOG")) { /* kept there, for a post-mortem */
		snprintf(logpath, sizeof(logpath), "%s", getenv("TSR_TEST_LOG"));
		if ((fd = open(logpath, O_CREAT | O_WRONLY, 0600)) >= 0)
			close(fd);
	} else {
		char tmpl[] = "/tmp/tsr-test-msgr-XXXXXX";
		if ((fd = mkstemp(tmpl)) < 0)
			return EXIT_FAILURE;
		close(fd);
		snprintf(logpath, sizeof(logpath), "%s", tmpl);
	}
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, every_shape);
	tcase_add_test(tc, given_data_crc);
	tcase_add_test(tc, posted_rx_buffers);
	tcase_add_test(tc, compressed_sends_free_their_room);
	tcase_add_test(tc, lossless_resets);
	tcase_add_test(tc, lossy_fault);
	tcase_add_test(tc, peer_restart);
	tcase_add_test(tc, malicious_peers);
	tcase_add_test(tc, keepalive);
	tcase_add_test(tc, acks_ride_replies);
	tcase_add_test(tc, more_then_flush);
	tcase_add_test(tc, acks_at_once_past_limits);
	tcase_add_test(tc, two_processes);
	tcase_add_test(tc, options_from_config);
	tcase_add_test(tc, slow_handler_isolated);
	tcase_add_test(tc, backpressure);
	tcase_add_test(tc, inject_refuse_and_delay);
	tcase_add_test(tc, auth_handshake);
	tcase_add_test(tc, prehandshake_frame_pins_no_memory);
	tcase_add_test(tc, recv_budget_pauses_reading);
	tcase_add_test(tc, out_of_descriptors_no_spin);
	tcase_add_test(tc, full_queue_never_blocks_dispatch_or_loop);
	tcase_add_test(tc, own_events_reach_only_their_owner);
	tcase_add_test(tc, inline_small_by_size);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (getenv("TSR_TEST_LOG") == NULL)
		unlink(logpath);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
